// Pure rules of invitations (Zulip's zerver/views/invite.py and
// zerver/actions/invites.py): parsing the invitee list, who may invite to
// which role, the daily limit, the errors' wording, and the texts of the
// invitation email and of the messages sent when someone joins.
import crypto from "node:crypto";
import { ApiError, badRequest, mustBeOwner } from "../errors.ts";
import { isAdmin, isOwner, Role } from "./roles.ts";
import { isValidEmail } from "./users.ts";

/** Zulip's MAX_REALM_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH. */
export const MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH = 8000;

/** PreregistrationUser.INVITE_AS values. */
export const INVITE_AS_VALUES: readonly number[] = [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST];

/** Zulip's INVITES_MIN_USER_AGE_DAYS: in organizations anyone may join, newer accounts may not invite. */
export const INVITES_MIN_USER_AGE_DAYS = 3;

export const InvitationKind = { EMAIL: "email", MULTIUSE: "multiuse" } as const;
export const InvitationStatus = { PENDING: "pending", USED: "used", REVOKED: "revoked" } as const;

/**
 * Zulip's get_invitee_emails_set: split on commas and newlines, take the
 * address out of "Name <address>", strip; duplicates collapse. Empty items
 * stay (and are then refused as invalid addresses, as in Zulip).
 */
export function parseInviteeEmails(raw: string): string[] {
  const out = new Set<string>();
  for (const item of raw.split(/[,\n]/)) {
    const named = /<(.*)>/.exec(item);
    out.add((named ? named[1]! : item).trim());
  }
  return [...out];
}

/** Zulip's check_role_based_permissions: owners only by owners; owners, administrators and moderators only by administrators. */
export function checkInviteRole(invitedAs: number, inviter: { role: number }, requireAdmin: boolean): void {
  if (invitedAs === Role.OWNER && !isOwner(inviter.role)) throw mustBeOwner();
  // A plain JsonableError in Zulip (code BAD_REQUEST), unlike @require_realm_admin.
  if (requireAdmin && !isAdmin(inviter.role)) throw badRequest("Must be an organization administrator");
}

/** Whether inviting to this role needs an administrator. */
export function inviteRoleNeedsAdmin(invitedAs: number): boolean {
  return invitedAs === Role.OWNER || invitedAs === Role.ADMINISTRATOR || invitedAs === Role.MODERATOR;
}

/** Zulip's validate_email_is_valid for an invitee: a message, or null when the address is fine. */
export function inviteeEmailError(email: string): string | null {
  return isValidEmail(email) ? null : "Invalid address.";
}

/** Zulip's InvitationError: HTTP 400, code INVITATION_FAILED, with its four data fields. */
export function invitationError(
  msg: string,
  errors: [string, string, boolean][],
  sentInvitations: boolean,
  flags: { dailyLimitReached?: boolean; licenseLimitReached?: boolean } = {},
): ApiError {
  return new ApiError(400, "INVITATION_FAILED", msg, {
    errors,
    sent_invitations: sentInvitations,
    license_limit_reached: flags.licenseLimitReached ?? false,
    daily_limit_reached: flags.dailyLimitReached ?? false,
  });
}

export const DAILY_LIMIT_MESSAGE =
  "To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.";

/** Zulip's too_many_recent_realm_invites, first rule: more than the daily maximum within the last 24 hours. */
export function exceedsDailyLimit(newInvites: number, sentInLastDay: number, dailyMax: number): boolean {
  return newInvites + sentInLastDay > dailyMax;
}

/** Zulip's generate_key: 24 characters of lower-case base32 from 15 random bytes. */
export function generateConfirmationKey(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  const bytes = crypto.randomBytes(15);
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

/** The link in invitations: where the invitee signs up. */
export function invitationUrl(externalUrl: string, key: string): string {
  return `${externalUrl}/join/${key}/`;
}

/** Expiry time in UNIX seconds, or null for never. */
export function expiryFor(now: number, minutes: number | null): number | null {
  return minutes === null ? null : now + minutes * 60;
}

export function isExpired(expiresAt: number | null, now: number): boolean {
  return expiresAt !== null && expiresAt < now;
}

export interface InvitationEmailContext {
  referrerName: string;
  referrerEmail: string;
  realmName: string;
  realmUrl: string;
  url: string;
  expiresAt: number | null;
}

/** The invitation email (after Zulip's templates/zerver/emails/invitation.*). */
export function invitationEmail(context: InvitationEmailContext): { subject: string; text: string } {
  const expiry =
    context.expiresAt === null ? "This invitation does not expire." : `This invitation expires on ${new Date(context.expiresAt * 1000).toUTCString()}.`;
  return {
    subject: `${context.referrerName} invited you to join ${context.realmName}`,
    text: [
      "Hi there,",
      "",
      `${context.referrerName} (${context.referrerEmail}) wants you to join them on ${context.realmName}, a Zulip-compatible chat organization at ${context.realmUrl}.`,
      "",
      "To get started, choose your name and password at:",
      context.url,
      "",
      expiry,
      "",
      "If you were not expecting this invitation, you can ignore this email.",
      "",
    ].join("\n"),
  };
}

/** Zulip's silent_mention_syntax_for_user. */
export function silentMention(user: { full_name: string; id: number }): string {
  return `@_**${user.full_name}|${user.id}**`;
}

/** What the Notification Bot tells the referrer (zerver/actions/create_user.py). */
export function referrerNotice(newUser: { full_name: string; id: number }): string {
  return `${silentMention(newUser)} accepted your invitation to join Zulip!`;
}

/** The Welcome Bot's first direct message to a new user (after Zulip's send_initial_direct_message). */
export function welcomeMessage(realmName: string): string {
  return [
    "Hello, and welcome to Zulip!👋 This is a direct message from me, Welcome Bot.",
    "",
    `You have joined **${realmName}**. To learn more, check out our [getting started guide](/help/getting-started-with-zulip)!`,
  ].join("\n");
}

/**
 * The custom welcome text a new user gets: the invitation's, or the
 * organization's when the invitation has none (null). Empty: no message.
 */
export function customWelcomeText(invitationText: string | null, realmDefault: string): string {
  return (invitationText ?? realmDefault).trim();
}
