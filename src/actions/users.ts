// Every change to user accounts: permission checks, the writes in one
// transaction, then the events the change causes (Zulip's do_* functions).
// Rules that read before they write (the last owner, the groups of a role)
// lock the organization first and re-read their target inside the
// transaction, so concurrent requests cannot both pass a check.
import { queueExportConsentEvent } from "./realm-export.ts";
import type { Kysely, Transaction } from "kysely";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { isAdmin, isOwner, Role } from "../domain/roles.ts";
import { directSystemGroupsForRole, isFullMember } from "../domain/system-groups.ts";
import { checkUserSetting, LANGUAGES, legacyEventOf, parseUserSettings, type UserSettingName } from "../domain/user-settings.ts";
import {
  apiEmailFor,
  checkEmailVisibility,
  checkFullName,
  EmailVisibility,
  checkPassword,
  isAcceptablePassword,
  isInFakeDomain,
  isValidEmail,
  isValidTimezone,
  seesDeliveryEmail,
} from "../domain/users.ts";
import { PendingEvents, type ClientEvent } from "../events/notifier.ts";
import { ApiError, badRequest, humansOnly, mustBeAdmin, mustBeOwner, noSuchUser } from "../errors.ts";
import { systemGroupIdsByName } from "../queries/user-groups.ts";
import {
  countActiveHumanOwners,
  countActiveHumans,
  formatUser,
  getUserByDeliveryEmail,
  getUserById,
  listActiveUsers,
  type ApiUser,
} from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Database, Realm, User, UserUpdate } from "../storage/schema.ts";
import { generateApiKey, hashPassword, verifyPassword } from "./credentials.ts";
import { afterPasswordChange, endUserSessions } from "./sessions.ts";
import { announceAudienceChanges } from "./channels.ts";
import { subscribeNewUser, subscribeToDefaultChannels } from "./subscriptions.ts";
import { getChannel, metadataAudiences, usersWithMetadataAccess } from "../queries/channels.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { applyAdminProfileData } from "./custom-profile-fields.ts";
import { discardAllDrafts } from "./drafts.ts";
import { presenceEnabledChanged } from "./presence.ts";
import { renumberPresence } from "./presence-writes.ts";
import type { ProfileValue } from "../domain/custom-profile-fields.ts";
import { botWatchers, formatBot } from "../queries/bots.ts";
import { checkBotReactivation } from "./bots.ts";
import { notifyAvatarChange } from "./avatars.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface NewUserInput {
  email: string;
  fullName: string;
  /** Already hashed; null for accounts that cannot log in with a password. */
  passwordHash: string | null;
  role: number;
  isBot?: boolean;
  botType?: number | null;
  botOwnerId?: number | null;
  isSystemBot?: boolean;
  timezone?: string;
}

/** The system groups a user of this role is directly in, as group IDs. */
async function systemGroupsFor(db: Db, realm: Realm, role: number, dateJoined: number, now: number): Promise<number[]> {
  const settings = parseRealmSettings(realm.settings);
  const ids = await systemGroupIdsByName(db, realm.id);
  return directSystemGroupsForRole(role, isFullMember(dateJoined, settings.waiting_period_threshold, now)).map((name) => {
    const id = ids.get(name);
    if (id === undefined) throw new Error(`system group ${name} missing`);
    return id;
  });
}

/** Inserts a user and its system-group memberships. Call inside a transaction. */
export async function insertUser(trx: Db, services: Services, realm: Realm, input: NewUserInput): Promise<User> {
  // Read in the transaction: the caller's copy of the organization may predate a settings change.
  const stored = await trx.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
  const settings = parseRealmSettings(stored.settings);
  const now = services.now();
  const visibility = settings.default_email_address_visibility;
  const inserted = await trx
    .insertInto("users")
    .values({
      realm_id: realm.id,
      email: input.email,
      delivery_email: input.email,
      email_key: input.email.toLowerCase(),
      delivery_email_key: input.email.toLowerCase(),
      full_name: input.fullName,
      password_hash: input.passwordHash,
      api_key: generateApiKey(),
      role: input.role,
      is_bot: input.isBot ?? false,
      bot_type: input.botType ?? null,
      bot_owner_id: input.botOwnerId ?? null,
      is_system_bot: input.isSystemBot ?? false,
      timezone: input.timezone ?? "",
      avatar_source: "G",
      avatar_version: 1,
      email_address_visibility: visibility,
      date_joined: now,
      // The organization's defaults, fixed at sign-up as in Zulip.
      settings: JSON.stringify(settings.user_settings_defaults),
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  // The fake API email embeds the ID, so it can only be written once the ID exists.
  // Bots' addresses are never hidden, as in Zulip.
  const apiEmail = input.isBot ? input.email : apiEmailFor(inserted.id, input.email, visibility, services.config.fakeEmailDomain);
  if (apiEmail !== input.email) {
    await trx.updateTable("users").set({ email: apiEmail, email_key: apiEmail.toLowerCase() }).where("id", "=", inserted.id).execute();
  }
  // System bots belong to the server, not to the organization's role groups.
  if (!input.isSystemBot) {
    const groups = await systemGroupsFor(trx, realm, input.role, now, now);
    await trx.insertInto("user_group_members").values(groups.map((groupId) => ({ group_id: groupId, user_id: inserted.id }))).execute();
  }
  const user = await getUserById(trx, realm.id, inserted.id);
  if (!user) throw new Error("inserted user vanished");
  return user;
}

/**
 * Queues an event about `subject` for every active user of the organization,
 * built per viewer so that the real email address reaches only those who may
 * see it.
 */
export async function queueForRealmUsers(
  db: Db,
  services: Services,
  pending: PendingEvents,
  realmId: number,
  subject: User,
  build: (person: ApiUser) => ClientEvent,
): Promise<void> {
  const recipients = await listActiveUsers(db, realmId);
  const withEmail: number[] = [];
  const withoutEmail: number[] = [];
  for (const r of recipients) (seesDeliveryEmail(subject, r) ? withEmail : withoutEmail).push(r.id);
  const asSeenBy = (viewer: { id: number; role: number }) => build(formatUser(services.config, subject, viewer));
  // Any viewer of a class gives the same object, except the subject itself, which sees its own.
  pending.add(realmId, asSeenBy({ id: subject.id, role: Role.OWNER }), withEmail);
  pending.add(realmId, asSeenBy({ id: -1, role: Role.GUEST }), withoutEmail);
}

/** Queues a realm_user update carrying only the changed fields (which never include emails). */
async function queueUserUpdate(db: Db, pending: PendingEvents, realmId: number, person: Record<string, unknown>): Promise<void> {
  const recipients = await listActiveUsers(db, realmId);
  pending.add(realmId, { type: "realm_user", op: "update", person }, recipients.map((r) => r.id));
}

export interface CreateUserInput {
  email: string;
  password: string | null;
  fullName: string;
  role?: number;
  isBot?: boolean;
  botType?: number;
  botOwnerId?: number | null;
  /** Channels to join instead of the organization's default channels (an invitation's). */
  channelIds?: readonly number[];
  /** More of the sign-up in the creating transaction, once the account exists (an invitation's groups and status). */
  alsoInTransaction?: (trx: Trx, pending: PendingEvents, user: User) => Promise<void>;
}

/**
 * Creates an account. `actor` is the administrator doing it over the API, or
 * null for an operator at the command line.
 */
export async function createUser(services: Services, realm: Realm, actor: User | null, input: CreateUserInput): Promise<User> {
  if (actor && !isAdmin(actor.role)) throw mustBeAdmin();
  const fullName = checkFullName(input.fullName);
  const email = input.email.trim();
  if (!isValidEmail(email)) throw badRequest("Bad name or username");
  if (isInFakeDomain(email, services.config.fakeEmailDomain)) throw badRequest(`Email '${email}' not allowed in this organization`);
  if (input.password !== null) checkPassword(input.password);
  const role = input.role ?? Role.MEMBER;
  if (actor && isOwner(role) && !isOwner(actor.role)) throw mustBeOwner();
  const db = services.storage.db;
  const alreadyInUse = () => badRequest(`Email '${email}' already in use`);
  if (await getUserByDeliveryEmail(db, realm.id, email)) throw alreadyInUse();
  const passwordHash = input.password === null ? null : await hashPassword(input.password);
  try {
    return await inRealmTransaction(services, realm.id, async (trx, pending) => {
      const user = await insertUser(trx, services, realm, {
        email,
        fullName,
        passwordHash,
        role,
        isBot: input.isBot ?? false,
        botType: input.isBot ? (input.botType ?? 1) : null,
        botOwnerId: input.isBot ? (input.botOwnerId ?? actor?.id ?? null) : null,
      });
      await announceNewUser(trx, services, pending, realm, user);
      if (input.channelIds === undefined) await subscribeToDefaultChannels(trx, services, realm, user, pending);
      else await subscribeNewUser(trx, services, realm, user, input.channelIds, pending);
      await input.alsoInTransaction?.(trx, pending, user);
      return user;
    });
  } catch (error) {
    // Two requests for one address at once: the unique index decides.
    if (await getUserByDeliveryEmail(db, realm.id, email)) throw alreadyInUse();
    throw error;
  }
}

/**
 * A new account's events: realm_user add (per viewer, for email visibility),
 * then the system groups it joined, so clients' member lists stay true.
 */
export async function announceNewUser(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, user: User): Promise<void> {
  await queueForRealmUsers(trx, services, pending, realm.id, user, (person) => ({ type: "realm_user", op: "add", person }));
  const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
  const groups = await trx.selectFrom("user_group_members").select("group_id").where("user_id", "=", user.id).orderBy("group_id").execute();
  for (const { group_id } of groups) pending.add(realm.id, { type: "user_group", op: "add_members", group_id, user_ids: [user.id] }, everyone);
}

/** Re-reads the target inside the transaction; checks it may be administered by `actor`. */
async function targetForAdmin(trx: Trx, realm: Realm, actor: User, targetId: number, allowBots: boolean): Promise<User> {
  const target = await getUserById(trx, realm.id, targetId);
  if (!target || target.is_system_bot || (target.is_bot && !allowBots)) throw noSuchUser();
  // A bot's owner administers it; other accounts need an organization administrator.
  const ownsBot = target.is_bot && target.bot_owner_id === actor.id;
  if (!isAdmin(actor.role) && !ownsBot) throw badRequest("Insufficient permission");
  return target;
}

/** Whether `user` is the organization's only active human owner (read inside the locked transaction). */
async function isLastOwner(trx: Trx, user: User): Promise<boolean> {
  return isOwner(user.role) && !user.is_bot && user.is_active && (await countActiveHumanOwners(trx, user.realm_id)) <= 1;
}

/** Moves a user to the system groups of a new role: all system memberships are replaced. */
async function changeRole(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, target: User, newRole: number): Promise<void> {
  const now = services.now();
  const systemIds = [...(await systemGroupIdsByName(trx, realm.id)).values()];
  const current = await trx
    .selectFrom("user_group_members")
    .select("group_id")
    .where("user_id", "=", target.id)
    .where("group_id", "in", systemIds)
    .execute();
  const before = current.map((r) => r.group_id);
  const after = await systemGroupsFor(trx, realm, newRole, target.date_joined, now);
  await trx.updateTable("users").set({ role: newRole }).where("id", "=", target.id).execute();
  await trx.deleteFrom("user_group_members").where("user_id", "=", target.id).where("group_id", "in", systemIds).execute();
  await trx.insertInto("user_group_members").values(after.map((g) => ({ group_id: g, user_id: target.id }))).execute();

  await queueUserUpdate(trx, pending, realm.id, { user_id: target.id, role: newRole });
  const recipients = (await listActiveUsers(trx, realm.id)).map((r) => r.id);
  for (const groupId of before.filter((g) => !after.includes(g))) {
    pending.add(realm.id, { type: "user_group", op: "remove_members", group_id: groupId, user_ids: [target.id] }, recipients);
  }
  for (const groupId of after.filter((g) => !before.includes(g))) {
    pending.add(realm.id, { type: "user_group", op: "add_members", group_id: groupId, user_ids: [target.id] }, recipients);
  }
}

/**
 * A role change requested by `actor` (PATCH /users/{id}, PATCH /bots/{id}),
 * with Zulip's checks; the same role changes nothing.
 */
export async function changeRoleAsActor(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, actor: User, target: User, role: number): Promise<void> {
  if (role === target.role) return;
  if ((isOwner(role) || isOwner(target.role)) && !isOwner(actor.role)) throw mustBeOwner();
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  if (await isLastOwner(trx, target)) throw badRequest("The owner permission cannot be removed from the only organization owner.");
  // A role decides which channels one may see (administrators: private ones; guests: fewer public ones).
  const audiences = await metadataAudiences(trx, realm.id);
  await changeRole(trx, services, pending, realm, target, role);
  await announceAudienceChanges(trx, realm, audiences, services.now(), pending);
}

async function changeFullName(trx: Trx, pending: PendingEvents, realmId: number, target: User, fullName: string): Promise<void> {
  await trx.updateTable("users").set({ full_name: fullName }).where("id", "=", target.id).execute();
  await queueUserUpdate(trx, pending, realmId, { user_id: target.id, full_name: fullName });
}

export interface UpdateUserInput {
  fullName?: string | undefined;
  role?: number | undefined;
  /** Custom profile field values to set (null, "" or [] removes one). */
  profileData?: readonly { id: number; value: ProfileValue | null }[] | undefined;
}

/** PATCH /users/{user_id}: an administrator (or a bot's owner) changes another account. */
export async function updateUser(services: Services, realm: Realm, actor: User, targetId: number, input: UpdateUserInput): Promise<void> {
  const fullName = input.fullName !== undefined && input.fullName.trim() !== "" ? checkFullName(input.fullName) : undefined;
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const target = await targetForAdmin(trx, realm, actor, targetId, true);
    if (input.role !== undefined) await changeRoleAsActor(trx, services, pending, realm, actor, target, input.role);
    if (fullName !== undefined && fullName !== target.full_name) await changeFullName(trx, pending, realm.id, target, fullName);
    if (input.profileData !== undefined) await applyAdminProfileData(trx, services, pending, realm, actor, target, input.profileData);
  });
}

/**
 * Deactivates an account and the bots it owns (as Zulip does). Each bot
 * deactivated is removed from its watchers' realm_bots (realm_bot remove).
 */
export async function deactivateWithBots(trx: Trx, pending: PendingEvents, realm: Realm, user: User): Promise<void> {
  await trx.updateTable("users").set({ is_active: false }).where("id", "=", user.id).execute();
  // Out of the organization's presence in every process (bots report none).
  await renumberPresence(trx, realm.id, user.id);
  const owned = await trx
    .selectFrom("users")
    .select("id")
    .where("realm_id", "=", realm.id)
    .where("bot_owner_id", "=", user.id)
    .where("is_active", "=", true)
    .execute();
  if (owned.length > 0) await trx.updateTable("users").set({ is_active: false }).where("id", "in", owned.map((b) => b.id)).execute();
  const ids = [user.id, ...owned.map((b) => b.id)];
  // Signed-in browsers are signed out (a reactivated account signs in anew).
  await endUserSessions(trx, ids);
  for (const id of ids) await queueUserUpdate(trx, pending, realm.id, { user_id: id, is_active: false });
  for (const id of ids) {
    const bot = (await getUserById(trx, realm.id, id))!;
    if (!bot.is_bot || bot.is_system_bot) continue;
    pending.add(realm.id, { type: "realm_bot", op: "remove", bot: { user_id: bot.id, full_name: bot.full_name } }, await botWatchers(trx, bot));
  }
  await queueSubscriberChanges(trx, pending, realm, ids, "peer_remove");
}

/**
 * After accounts were deactivated or reactivated: their channels' observers
 * hear that they left or rejoined the subscriber lists (deactivated users are
 * not listed as subscribers).
 */
async function queueSubscriberChanges(trx: Trx, pending: PendingEvents, realm: Realm, userIds: number[], op: "peer_add" | "peer_remove"): Promise<void> {
  const subs = await trx
    .selectFrom("subscriptions")
    .innerJoin("channels", "channels.id", "subscriptions.channel_id")
    .select(["subscriptions.channel_id", "subscriptions.user_id"])
    .where("subscriptions.user_id", "in", userIds)
    .where("subscriptions.active", "=", true)
    .where("channels.realm_id", "=", realm.id)
    .orderBy("subscriptions.channel_id")
    .execute();
  const byChannel = new Map<number, number[]>();
  for (const s of subs) byChannel.set(s.channel_id, [...(byChannel.get(s.channel_id) ?? []), s.user_id]);
  for (const [channelId, members] of byChannel) {
    const channel = (await getChannel(trx, realm.id, channelId))!;
    const audience = (await usersWithMetadataAccess(trx, realm.id, channel)).filter((id) => !members.includes(id));
    pending.add(realm.id, { type: "subscription", op, stream_ids: [channelId], user_ids: members }, audience);
  }
}

/** DELETE /users/{user_id}. */
export async function deactivateUser(services: Services, realm: Realm, actor: User, targetId: number): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const target = await targetForAdmin(trx, realm, actor, targetId, false);
    if (!target.is_active) throw badRequest("User is deactivated");
    if (isOwner(target.role) && !isOwner(actor.role)) throw mustBeOwner();
    if (await isLastOwner(trx, target)) throw badRequest("Cannot deactivate the only organization owner");
    await deactivateWithBots(trx, pending, realm, target);
  });
}

/** DELETE /users/me. */
export async function deactivateOwnAccount(services: Services, realm: Realm, actor: User): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const self = (await getUserById(trx, realm.id, actor.id))!;
    if ((await countActiveHumans(trx, realm.id)) <= 1) {
      throw new ApiError(400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only user.", { is_last_owner: false, entity: "user" });
    }
    if (await isLastOwner(trx, self)) {
      throw new ApiError(400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only organization owner.", {
        is_last_owner: true,
        entity: "organization owner",
      });
    }
    await deactivateWithBots(trx, pending, realm, self);
  });
}

/** POST /users/{user_id}/reactivate. */
export async function reactivateUser(services: Services, realm: Realm, actor: User, targetId: number): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const target = await targetForAdmin(trx, realm, actor, targetId, true);
    if (target.is_active) throw badRequest("User is already active");
    // A bot comes back only where its creation would be allowed, and without taking an active account's name.
    if (target.is_bot) await checkBotReactivation(trx, realm, actor, target);
    await trx.updateTable("users").set({ is_active: true }).where("id", "=", target.id).execute();
    // Back in the organization's presence in every process.
    await renumberPresence(trx, realm.id, target.id);
    // Queued after the write, so the reactivated user is among the recipients.
    await queueUserUpdate(trx, pending, realm.id, { user_id: target.id, is_active: true });
    await queueSubscriberChanges(trx, pending, realm, [target.id], "peer_add");
    if (target.is_bot) {
      const bot = (await getUserById(trx, realm.id, target.id))!;
      pending.add(realm.id, { type: "realm_bot", op: "add", bot: await formatBot(trx, services.config.externalUrl, bot) }, await botWatchers(trx, bot));
    }
  });
}

export interface OwnSettingsInput {
  fullName?: string | undefined;
  oldPassword?: string | undefined;
  newPassword?: string | undefined;
  /** The browser session that asks (its token hash): it stays signed in when the password changes; every other session ends. */
  keepSession?: string | undefined;
  timezone?: string | undefined;
  /** Who may see the real email address (an EmailVisibility value), already decoded (checked here). */
  emailAddressVisibility?: unknown;
  /** Personal settings to change, already decoded (checked here). */
  settings?: Partial<Record<UserSettingName, unknown>>;
}

/** PATCH /settings: a human changes their own account. Every value is checked before anything is written. */
export async function changeOwnSettings(services: Services, realm: Realm, actor: User, input: OwnSettingsInput): Promise<void> {
  if (actor.is_bot) throw humansOnly();
  // Where name changes are disabled, only administrators may rename themselves;
  // Zulip ignores the request from others rather than failing it.
  const nameLocked = parseRealmSettings(realm.settings).name_changes_disabled && !isAdmin(actor.role);
  const fullName = input.fullName !== undefined && !nameLocked ? checkFullName(input.fullName) : undefined;
  if (input.timezone !== undefined && !isValidTimezone(input.timezone)) throw badRequest("timezone is not a recognized time zone");
  const visibility = input.emailAddressVisibility !== undefined ? checkEmailVisibility(input.emailAddressVisibility) : undefined;
  const requested = Object.entries(input.settings ?? {}).filter(([, v]) => v !== undefined) as [UserSettingName, unknown][];
  const settingValues = requested.map(([name, value]) => [name, checkUserSetting(name, value)] as const);
  let newHash: string | undefined;
  if (input.newPassword !== undefined) {
    // A missing old password counts as an empty, wrong one, as in Zulip.
    if (!(await verifyPassword(actor.password_hash, input.oldPassword ?? ""))) throw badRequest("Wrong password!");
    if (!isAcceptablePassword(input.newPassword)) throw badRequest("New password is too weak!");
    newHash = await hashPassword(input.newPassword);
  }
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const changes: UserUpdate = {};
    if (newHash !== undefined) changes.password_hash = newHash;
    if (fullName !== undefined && fullName !== actor.full_name) changes.full_name = fullName;
    if (input.timezone !== undefined && input.timezone !== actor.timezone) changes.timezone = input.timezone;
    // Re-read: the row passed in may predate a concurrent change of other settings.
    const stored = await trx.selectFrom("users").select(["settings", "email_address_visibility"]).where("id", "=", actor.id).executeTakeFirstOrThrow();
    const storedSettings = stored.settings;
    const current = parseUserSettings(storedSettings);
    const oldVisibility = stored.email_address_visibility;
    if (visibility !== undefined && visibility !== oldVisibility) {
      changes.email_address_visibility = visibility;
      const email = apiEmailFor(actor.id, actor.delivery_email, visibility, services.config.fakeEmailDomain);
      if (email !== actor.email) Object.assign(changes, { email, email_key: email.toLowerCase() });
    }
    const changed = settingValues.filter(([name, value]) => current[name] !== value);
    if (changed.length > 0) changes.settings = JSON.stringify({ ...JSON.parse(storedSettings), ...Object.fromEntries(changed) });
    if (Object.keys(changes).length === 0) return;
    await trx.updateTable("users").set(changes).where("id", "=", actor.id).execute();
    if (changes.password_hash !== undefined) await afterPasswordChange(trx, actor.id, input.keepSession);
    if (changes.full_name !== undefined) await queueUserUpdate(trx, pending, realm.id, { user_id: actor.id, full_name: changes.full_name });
    for (const [name, value] of changed) {
      await settingSideEffects(trx, services, pending, realm, actor, name, value);
      queueSettingEvents(pending, realm.id, actor, name, value, legacyEventOf(name));
    }
    if (changes.timezone !== undefined) {
      queueSettingEvents(pending, realm.id, actor, "timezone", changes.timezone, "display");
      await queueUserUpdate(trx, pending, realm.id, { email: changes.email ?? actor.email, user_id: actor.id, timezone: changes.timezone });
    }
    if (changes.email_address_visibility !== undefined) {
      await emailVisibilityChanged(trx, services, pending, realm.id, { ...actor, ...changes } as User, oldVisibility);
    }
  });
}

/**
 * Zulip's do_change_user_setting for email_address_visibility: the
 * user_settings event to the user's own clients; the real address to those
 * who may now see it and `delivery_email: null` to those who no longer may;
 * and when the public API email switches between the fake user{id}@… address
 * and the real one (to or from "everyone"), the new email and (as Zulip does,
 * for Gravatar) the avatar fields to everyone.
 */
async function emailVisibilityChanged(trx: Trx, services: Services, pending: PendingEvents, realmId: number, user: User, oldVisibility: number): Promise<void> {
  queueSettingEvents(pending, realmId, user, "email_address_visibility", user.email_address_visibility, null);
  const active = await listActiveUsers(trx, realmId);
  const before = { ...user, email_address_visibility: oldVisibility };
  const nowVisible: number[] = [];
  const nowHidden: number[] = [];
  for (const viewer of active) {
    const could = seesDeliveryEmail(before, viewer);
    if (could !== seesDeliveryEmail(user, viewer)) (could ? nowHidden : nowVisible).push(viewer.id);
  }
  if (nowVisible.length > 0) pending.add(realmId, { type: "realm_user", op: "update", person: { user_id: user.id, delivery_email: user.delivery_email } }, nowVisible);
  if (nowHidden.length > 0) pending.add(realmId, { type: "realm_user", op: "update", person: { user_id: user.id, delivery_email: null } }, nowHidden);
  if (oldVisibility !== EmailVisibility.EVERYONE && user.email_address_visibility !== EmailVisibility.EVERYONE) return;
  pending.add(realmId, { type: "realm_user", op: "update", person: { user_id: user.id, new_email: user.email } }, active.map((u) => u.id));
  await notifyAvatarChange(trx, services, pending, user);
  // Legacy presence is keyed by the API email: every process's presence snapshot rereads the row.
  await renumberPresence(trx, realmId, user.id);
}

/**
 * What changing a personal setting does beyond storing it. Turning draft
 * synchronization off deletes the user's drafts on the server, without
 * `drafts` events: the clients keep their local copies (Zulip's
 * do_change_user_setting).
 */
async function settingSideEffects(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, user: User, name: UserSettingName, value: unknown): Promise<void> {
  if (name === "enable_drafts_synchronization" && value === false) await discardAllDrafts(trx, user.id);
  // Invisible mode on or off: everyone who may see the user sees the change at once.
  if (name === "presence_enabled") await presenceEnabledChanged(trx, services, pending, realm, user, value === true);
  // Administrators' consent list (GET /export/realm/consents) follows the change.
  if (name === "allow_private_data_export") await queueExportConsentEvent(trx, pending, realm.id, user.id, value === true);
}

/**
 * One personal setting changed inside the caller's transaction, with its side
 * effects and events as PATCH /settings makes them: POST /users/me/status's
 * legacy `away` is the inverse of presence_enabled. Setting the current value
 * changes nothing and sends nothing.
 */
export async function changePersonalSetting(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, user: User, name: UserSettingName, value: unknown): Promise<void> {
  const checked = checkUserSetting(name, value);
  const stored = (await trx.selectFrom("users").select("settings").where("id", "=", user.id).executeTakeFirstOrThrow()).settings;
  if (parseUserSettings(stored)[name] === checked) return;
  await trx
    .updateTable("users")
    .set({ settings: JSON.stringify({ ...JSON.parse(stored), [name]: checked }) })
    .where("id", "=", user.id)
    .execute();
  await settingSideEffects(trx, services, pending, realm, user, name, checked);
  queueSettingEvents(pending, realm.id, user, name, checked, legacyEventOf(name));
}

/**
 * A personal setting's events, to the user's own clients: user_settings, and
 * for clients that predate it (no user_settings_object capability) the legacy
 * event of the setting's group.
 */
function queueSettingEvents(pending: PendingEvents, realmId: number, user: User, name: string, value: unknown, legacy: "display" | "notifications" | null): void {
  const languageName = name === "default_language" ? { language_name: LANGUAGES[value as string] } : {};
  pending.add(realmId, { type: "user_settings", op: "update", property: name, value, ...languageName }, [user.id]);
  const withoutObject = { name: "user_settings_object", present: false } as const;
  if (legacy === "display") {
    pending.add(realmId, { type: "update_display_settings", user: user.email, setting_name: name, setting: value, ...languageName }, [user.id], withoutObject);
  } else if (legacy === "notifications") {
    pending.add(realmId, { type: "update_global_notifications", user: user.email, notification_name: name, setting: value }, [user.id], withoutObject);
  }
}
