// Invitations and signing up with them (Zulip's zerver/views/invite.py,
// zerver/actions/invites.py and the invitation part of do_create_user):
// permission checks, the writes in one transaction, the invites_changed
// events, then the emails (after the commit, never failing the request).
import { canSubscribeOthers } from "../domain/channels.ts";
import { hasPermission } from "../domain/group-settings.ts";
import {
  checkInviteRole,
  customWelcomeText,
  DAILY_LIMIT_MESSAGE,
  exceedsDailyLimit,
  expiryFor,
  generateConfirmationKey,
  invitationEmail,
  invitationError,
  invitationUrl,
  InvitationKind,
  InvitationStatus,
  INVITES_MIN_USER_AGE_DAYS,
  inviteeEmailError,
  inviteRoleNeedsAdmin,
  isExpired,
  referrerNotice,
  welcomeMessage,
} from "../domain/invitations.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES, type RealmGroupSettingName } from "../domain/realm-settings.ts";
import { isAdmin, requireNonGuest } from "../domain/roles.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { ApiError, badRequest, humansOnly, insufficientPermission, missingArgument, realmDeactivated } from "../errors.ts";
import { sendEmails, type EmailMessage } from "../mail.ts";
import { accessChannel, channelFacts, defaultChannelIds } from "../queries/channels.ts";
import { invitationById, invitationByKey, invitationsSentSince, invitesControlledBy } from "../queries/invitations.ts";
import { getUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Invitation, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { realmForRequest } from "./auth.ts";
import { notificationBot, sendMessage, sendNotificationBotMessage } from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { groupForAddingMembers } from "./user-groups.ts";
import { createUser } from "./users.ts";

export interface InvitationOptions {
  /** Minutes until the link expires; null: never. */
  expiresInMinutes: number | null;
  invitedAs: number;
  channelIds: readonly number[];
  groupIds: readonly number[];
  includeRealmDefaultSubscriptions: boolean;
  /** null: the organization's default text; "": none. */
  welcomeMessageCustomText: string | null;
}

export interface EmailInvitationInput extends InvitationOptions {
  /** The invitee_emails string as sent. */
  emails: string[];
  notifyReferrerOnJoin: boolean;
}

const noSuchInvitation = () => badRequest("No such invitation");

/** Zulip's @require_member_or_admin. */
function requireMemberOrAdmin(user: User): void {
  requireNonGuest(user);
  if (user.is_bot) throw humansOnly();
}

async function requireRealmPermission(trx: Trx, realm: Realm, user: User, setting: RealmGroupSettingName): Promise<void> {
  const settings = parseRealmSettings(realm.settings);
  if (!hasPermission(settings[setting], REALM_GROUP_SETTING_RULES[setting], await actorFor(trx, user))) throw insufficientPermission();
}

/**
 * Zulip's access_streams_for_invite: each channel must be one the inviter can
 * read (else "Invalid channel ID"), and each must be a default channel or one
 * the inviter may add subscribers to.
 */
async function checkInvitationChannels(trx: Trx, realm: Realm, user: User, channelIds: readonly number[]): Promise<number[]> {
  const actor = await actorFor(trx, user);
  const settings = parseRealmSettings(realm.settings);
  const defaults = new Set(await defaultChannelIds(trx, realm.id));
  const channels = [];
  for (const channelId of channelIds) {
    const invalid = () => badRequest(`Invalid channel ID ${channelId}. No invites were sent.`);
    let found;
    try {
      found = await accessChannel(trx, realm.id, actor, channelId, "content");
    } catch (error) {
      if (error instanceof ApiError) throw invalid();
      throw error;
    }
    if (found.channel.is_archived) throw invalid();
    channels.push(found.channel);
  }
  for (const channel of channels) {
    if (defaults.has(channel.id)) continue;
    if (!canSubscribeOthers(actor, channelFacts(channel), settings)) throw badRequest("You do not have permission to subscribe other users to channels.");
  }
  return [...new Set(channels.map((c) => c.id))];
}

/** Zulip's access_user_groups_for_invite: groups the inviter may add members to. */
async function checkInvitationGroups(trx: Trx, realm: Realm, user: User, groupIds: readonly number[]): Promise<number[]> {
  const ids: number[] = [];
  for (const groupId of groupIds) ids.push((await groupForAddingMembers(trx, realm, user, groupId)).id);
  return [...new Set(ids)];
}

/** The checks POST /invites and POST /invites/multiuse share, in Zulip's order. */
async function checkInvitationOptions(
  trx: Trx,
  realm: Realm,
  user: User,
  options: InvitationOptions,
  beforeChannels: () => void = () => {},
): Promise<{ channelIds: number[]; groupIds: number[] }> {
  checkInviteRole(options.invitedAs, user, inviteRoleNeedsAdmin(options.invitedAs));
  beforeChannels();
  const channelIds = await checkInvitationChannels(trx, realm, user, options.channelIds);
  const groupIds = await checkInvitationGroups(trx, realm, user, options.groupIds);
  if (options.welcomeMessageCustomText !== null && !isAdmin(user.role)) throw badRequest("Must be an organization administrator");
  return { channelIds, groupIds };
}

/** Admins (and bots with an admin role) and the referrer hear that the invitation list changed (Zulip's notify_invites_changed). */
async function queueInvitesChanged(trx: Trx, realmId: number, pending: PendingEvents, referrerId: number | null): Promise<void> {
  const admins = await trx
    .selectFrom("users")
    .select("id")
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .where("role", "<=", 200)
    .execute();
  const recipients = admins.map((a) => a.id);
  if (referrerId !== null && !recipients.includes(referrerId)) recipients.push(referrerId);
  pending.add(realmId, { type: "invites_changed" }, recipients);
}

async function checkDailyLimit(trx: Trx, services: Services, realmId: number, count: number): Promise<void> {
  const sent = await invitationsSentSince(trx, realmId, services.now() - 24 * 3600);
  if (exceedsDailyLimit(count, sent, services.config.invitesDailyMax)) {
    throw invitationError(DAILY_LIMIT_MESSAGE, [], false, { dailyLimitReached: true });
  }
}

function emailFor(services: Services, realm: Realm, referrer: User, invitation: Invitation): EmailMessage {
  const { subject, text } = invitationEmail({
    referrerName: referrer.full_name,
    referrerEmail: referrer.delivery_email,
    realmName: realm.name,
    realmUrl: services.config.externalUrl,
    url: invitationUrl(services.config.externalUrl, invitation.confirmation_key),
    expiresAt: invitation.expires_at,
  });
  return { to: invitation.email!, subject, text, kind: "invitation" };
}

/**
 * Existing accounts among the addresses (Zulip's get_existing_user_errors):
 * email → [message, deactivated].
 */
async function existingUserErrors(trx: Trx, realmId: number, emails: readonly string[]): Promise<Map<string, [string, boolean]>> {
  const errors = new Map<string, [string, boolean]>();
  if (emails.length === 0) return errors;
  const rows = await trx
    .selectFrom("users")
    .select(["delivery_email_key", "is_active"])
    .where("realm_id", "=", realmId)
    .where("delivery_email_key", "in", emails.map((e) => e.toLowerCase()))
    .execute();
  const byKey = new Map(rows.map((r) => [r.delivery_email_key, r.is_active]));
  for (const email of emails) {
    const active = byKey.get(email.toLowerCase());
    if (active === undefined) continue;
    errors.set(email, active ? ["Already has an account.", false] : ["Account has been deactivated.", true]);
  }
  return errors;
}

async function insertInvitation(
  trx: Trx,
  services: Services,
  realm: Realm,
  referrer: User,
  kind: string,
  email: string | null,
  options: InvitationOptions,
  checked: { channelIds: number[]; groupIds: number[] },
  notifyReferrerOnJoin: boolean,
): Promise<Invitation> {
  const now = services.now();
  const { id } = await trx
    .insertInto("invitations")
    .values({
      realm_id: realm.id,
      kind,
      email,
      email_key: email?.toLowerCase() ?? null,
      confirmation_key: generateConfirmationKey(),
      referrer_id: referrer.id,
      invited_as: options.invitedAs,
      channel_ids: JSON.stringify(checked.channelIds),
      group_ids: JSON.stringify(checked.groupIds),
      include_realm_default_subscriptions: options.includeRealmDefaultSubscriptions,
      notify_referrer_on_join: notifyReferrerOnJoin,
      welcome_message_custom_text: options.welcomeMessageCustomText,
      created_at: now,
      expires_at: expiryFor(now, options.expiresInMinutes),
      status: InvitationStatus.PENDING,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return (await invitationById(trx, realm.id, id))!;
}

/** POST /invites (Zulip's invite_users_backend and do_invite_users). */
export async function inviteUsers(services: Services, realm: Realm, user: User, input: EmailInvitationInput): Promise<void> {
  requireMemberOrAdmin(user);
  const result = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const current = await trx.selectFrom("realms").selectAll().where("id", "=", realm.id).executeTakeFirstOrThrow();
    await requireRealmPermission(trx, current, user, "can_invite_users_group");
    const checked = await checkInvitationOptions(trx, current, user, input, () => {
      if (input.emails.length === 0) throw badRequest("You must specify at least one email address.");
    });

    // do_invite_users, in its order: the daily limit, the account's age, then the addresses.
    await checkDailyLimit(trx, services, realm.id, input.emails.length);
    const settings = parseRealmSettings(current.settings);
    if (!settings.invite_required && !isAdmin(user.role) && user.date_joined > services.now() - INVITES_MIN_USER_AGE_DAYS * 86400) {
      throw invitationError("Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.", [], false);
    }
    const errors: [string, string, boolean][] = [];
    const good: string[] = [];
    for (const email of input.emails) {
      const error = inviteeEmailError(email);
      if (error !== null) errors.push([email, error, false]);
      else good.push(email);
    }
    const existing = await existingUserErrors(trx, realm.id, good);
    const skipped: [string, string, boolean][] = [...existing].map(([email, [msg, deactivated]]) => [email, msg, deactivated]);
    const toInvite = good.filter((email) => !existing.has(email));
    if (errors.length > 0) throw invitationError("Some emails did not validate, so we didn't send any invitations.", [...errors, ...skipped], false);
    if (skipped.length > 0 && skipped.length === input.emails.length) throw invitationError("We weren't able to invite anyone.", skipped, false);

    const emails: EmailMessage[] = [];
    for (const email of toInvite) {
      const invitation = await insertInvitation(trx, services, current, user, InvitationKind.EMAIL, email, input, checked, input.notifyReferrerOnJoin);
      await trx.insertInto("invitation_sends").values({ realm_id: realm.id, invitation_id: invitation.id, sent_at: services.now() }).execute();
      emails.push(emailFor(services, current, user, invitation));
    }
    await queueInvitesChanged(trx, realm.id, pending, user.id);
    return { emails, skipped };
  });
  await sendEmails(services.config, result.emails);
  if (result.skipped.length > 0) {
    throw invitationError(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      result.skipped,
      true,
    );
  }
}

/** POST /invites/multiuse (Zulip's generate_multiuse_invite_backend): returns the link. */
export async function createMultiuseInvite(services: Services, realm: Realm, user: User, options: InvitationOptions): Promise<string> {
  requireMemberOrAdmin(user);
  const invitation = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const current = await trx.selectFrom("realms").selectAll().where("id", "=", realm.id).executeTakeFirstOrThrow();
    await requireRealmPermission(trx, current, user, "create_multiuse_invite_group");
    const checked = await checkInvitationOptions(trx, current, user, options);
    const row = await insertInvitation(trx, services, current, user, InvitationKind.MULTIUSE, null, options, checked, false);
    await queueInvitesChanged(trx, realm.id, pending, user.id);
    return row;
  });
  return invitationUrl(services.config.externalUrl, invitation.confirmation_key);
}

/** GET /invites. */
export async function listInvites(services: Services, user: User): Promise<unknown[]> {
  requireMemberOrAdmin(user);
  return invitesControlledBy(services.storage.db, services.config.externalUrl, user, services.now());
}

/**
 * Zulip's access_invite_by_id / access_multiuse_invite_by_id: an invitation
 * of the organization, which the caller made or, as an administrator (owner
 * for invitations to owner), controls.
 */
async function accessInvitation(trx: Trx, realm: Realm, user: User, id: number, kind: string): Promise<Invitation> {
  const invitation = isStorableId(id) ? await invitationById(trx, realm.id, id) : undefined;
  if (!invitation || invitation.kind !== kind) throw noSuchInvitation();
  // A used email invitation has no link left to revoke or resend.
  if (kind === InvitationKind.EMAIL && invitation.status !== InvitationStatus.PENDING) throw noSuchInvitation();
  if (invitation.referrer_id !== user.id) checkInviteRole(invitation.invited_as, user, true);
  if (invitation.status === InvitationStatus.REVOKED) throw badRequest("Invitation has already been revoked");
  return invitation;
}

/** DELETE /invites/{invite_id} and DELETE /invites/multiuse/{invite_id}. */
export async function revokeInvitation(services: Services, realm: Realm, user: User, id: number, kind: "email" | "multiuse"): Promise<void> {
  requireMemberOrAdmin(user);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const invitation = await accessInvitation(trx, realm, user, id, kind);
    await trx.updateTable("invitations").set({ status: InvitationStatus.REVOKED }).where("id", "=", invitation.id).execute();
    await queueInvitesChanged(trx, realm.id, pending, invitation.referrer_id);
  });
}

/** POST /invites/{invite_id}/resend (Zulip's do_send_user_invite_email again; counts towards the daily limit). */
export async function resendInvitation(services: Services, realm: Realm, user: User, id: number): Promise<void> {
  requireMemberOrAdmin(user);
  const email = await inRealmTransaction(services, realm.id, async (trx) => {
    const invitation = await accessInvitation(trx, realm, user, id, InvitationKind.EMAIL);
    await checkDailyLimit(trx, services, realm.id, 1);
    await trx.insertInto("invitation_sends").values({ realm_id: realm.id, invitation_id: invitation.id, sent_at: services.now() }).execute();
    const referrer = (await getUserById(trx, realm.id, invitation.referrer_id))!;
    return emailFor(services, realm, referrer, invitation);
  });
  await sendEmails(services.config, [email]);
}

// ---------------------------------------------------------------------------
// Signing up with an invitation

const linkNotFound = () => new ApiError(404, "BAD_REQUEST", "Whoops. We couldn't find your confirmation link in the system.");
const linkDead = () => badRequest("The confirmation link has expired or been deactivated.");

/** Refuses a link that was revoked, used (email invitations) or has expired. */
function checkUsable(invitation: Invitation, now: number): void {
  if (invitation.status !== InvitationStatus.PENDING || isExpired(invitation.expires_at, now)) throw linkDead();
}

async function usableInvitation(services: Services, key: string): Promise<{ realm: Realm; invitation: Invitation }> {
  const realm = await realmForRequest(services);
  if (realm.deactivated) throw realmDeactivated();
  const invitation = /^[a-z0-9]{1,64}$/.test(key) ? await invitationByKey(services.storage.db, realm.id, key) : undefined;
  if (!invitation) throw linkNotFound();
  checkUsable(invitation, services.now());
  return { realm, invitation };
}

export interface InvitationDescription {
  realm_name: string;
  realm_url: string;
  is_multiuse: boolean;
  /** The invited address (email invitations); null for reusable links, where the person gives theirs. */
  email: string | null;
  invited_as: number;
  invited_by: string;
  expiry_date: number | null;
}

/** GET /invites/join/{key}: what the link invites to, for a sign-up form. */
export async function describeInvitation(services: Services, key: string): Promise<InvitationDescription> {
  const { realm, invitation } = await usableInvitation(services, key);
  const referrer = await getUserById(services.storage.db, realm.id, invitation.referrer_id);
  return {
    realm_name: realm.name,
    realm_url: services.config.externalUrl,
    is_multiuse: invitation.kind === InvitationKind.MULTIUSE,
    email: invitation.email,
    invited_as: invitation.invited_as,
    invited_by: referrer?.full_name ?? "",
    expiry_date: invitation.expires_at,
  };
}

export interface SignUpInput {
  fullName: string;
  password: string;
  /** Required for reusable links; ignored for email invitations (the invited address is used). */
  email: string | undefined;
}

/** Adds the new account to the invitation's groups (those still active), with the events group changes send. */
async function joinInvitationGroups(trx: Trx, realmId: number, user: User, groupIds: readonly number[], pending: PendingEvents): Promise<void> {
  if (groupIds.length === 0) return;
  const groups = await trx
    .selectFrom("user_groups")
    .select("id")
    .where("realm_id", "=", realmId)
    .where("id", "in", [...groupIds])
    .where("deactivated", "=", false)
    .where("is_system_group", "=", false)
    .orderBy("id")
    .execute();
  if (groups.length === 0) return;
  await trx.insertInto("user_group_members").values(groups.map((g) => ({ group_id: g.id, user_id: user.id }))).execute();
  const everyone = await trx.selectFrom("users").select("id").where("realm_id", "=", realmId).where("is_active", "=", true).where("is_system_bot", "=", false).execute();
  for (const g of groups) pending.add(realmId, { type: "user_group", op: "add_members", group_id: g.id, user_ids: [user.id] }, everyone.map((u) => u.id));
}

/**
 * POST /invites/join/{key}: creates the account an invitation offers, with
 * its role, channels (plus the default channels when asked), groups, and the
 * Welcome Bot's and Notification Bot's messages. Returns what a client needs
 * to log in.
 */
export async function signUpWithInvitation(services: Services, key: string, input: SignUpInput): Promise<{ user_id: number; email: string; api_key: string }> {
  const { realm, invitation } = await usableInvitation(services, key);
  let email: string;
  if (invitation.kind === InvitationKind.EMAIL) {
    email = invitation.email!;
  } else {
    if (input.email === undefined) throw missingArgument("email");
    email = input.email.trim();
    if (inviteeEmailError(email) !== null) throw badRequest("Please enter a valid email address.");
  }
  const channelIds: number[] = JSON.parse(invitation.channel_ids);
  if (invitation.include_realm_default_subscriptions) channelIds.push(...(await defaultChannelIds(services.storage.db, realm.id)));
  const groupIds: number[] = JSON.parse(invitation.group_ids);

  const user = await createUser(services, realm, null, {
    email,
    password: input.password,
    fullName: input.fullName,
    role: invitation.invited_as,
    channelIds,
    alsoInTransaction: async (trx, pending, created) => {
      // Re-read under the organization's lock: two sign-ups with one email invitation cannot both pass.
      const current = (await invitationById(trx, realm.id, invitation.id))!;
      checkUsable(current, services.now());
      await joinInvitationGroups(trx, realm.id, created, groupIds, pending);
      if (current.kind === InvitationKind.EMAIL) {
        await trx.updateTable("invitations").set({ status: InvitationStatus.USED, created_user_id: created.id }).where("id", "=", current.id).execute();
      }
      // Other invitations of the same address are spent too (Zulip revokes them).
      await trx
        .updateTable("invitations")
        .set({ status: InvitationStatus.REVOKED })
        .where("realm_id", "=", realm.id)
        .where("kind", "=", InvitationKind.EMAIL)
        .where("email_key", "=", email.toLowerCase())
        .where("status", "=", InvitationStatus.PENDING)
        .where("id", "!=", current.id)
        .execute();
      await queueInvitesChanged(trx, realm.id, pending, current.kind === InvitationKind.EMAIL ? current.referrer_id : null);
    },
  });

  if (invitation.kind === InvitationKind.EMAIL && invitation.notify_referrer_on_join) {
    const referrer = await getUserById(services.storage.db, realm.id, invitation.referrer_id);
    if (referrer?.is_active) await sendNotificationBotMessage(services, realm, { userIds: [referrer.id] }, referrerNotice(user));
  }
  await sendWelcomeMessages(services, realm, user, invitation.welcome_message_custom_text);
  return { user_id: user.id, email: user.email, api_key: user.api_key };
}

/** The Welcome Bot's direct messages to a new user: the welcome, then the custom text if there is one. */
async function sendWelcomeMessages(services: Services, realm: Realm, user: User, invitationText: string | null): Promise<void> {
  const db = services.storage.db;
  const bot =
    (await db
      .selectFrom("users")
      .selectAll()
      .where("realm_id", "=", realm.id)
      .where("is_system_bot", "=", true)
      .where("email_key", "=", "welcome-bot@zulip.com")
      .executeTakeFirst()) ?? (await notificationBot(db, realm.id));
  const current = await db.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
  const custom = customWelcomeText(invitationText, parseRealmSettings(current.settings).welcome_message_custom_text);
  const send = (content: string) =>
    sendMessage(services, realm, bot, { kind: "direct", to: JSON.stringify([user.id]), content, topic: undefined, clientName: "Internal", internal: true });
  await send(welcomeMessage(realm.name));
  if (custom !== "") await send(custom);
}
