// Pure rules about user accounts: names, emails, time zones, who may see a
// real email address.
import { badRequest } from "../http/errors.ts";
import { isAdmin, isModerator, isGuest } from "./roles.ts";

export const MAX_NAME_LENGTH = 100;
export const MIN_NAME_LENGTH = 2;
export const MIN_PASSWORD_LENGTH = 6;
/** Characters Zulip refuses in full names: they break mention and quote syntax. */
const NAME_INVALID_CHARS = new Set(["*", "`", "\\", ">", '"', "@"]);

/** Returns the stored form of a full name, or throws the error Zulip gives. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  if (name.length > MAX_NAME_LENGTH) throw badRequest("Name too long!");
  if (name.length < MIN_NAME_LENGTH) throw badRequest("Name too short!");
  for (const ch of name) {
    if (NAME_INVALID_CHARS.has(ch) || /\p{Cc}/u.test(ch)) throw badRequest("Invalid characters in name!");
  }
  // "Name|15" would be read as the silent-mention syntax for user 15.
  if (/\|\d+$/.test(name)) throw badRequest("Invalid format!");
  return name;
}

const EMAIL_PATTERN = /^[^\s@<>()[\]\\,;:"]+@[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/i;

export function isValidEmail(email: string): boolean {
  return email.length <= 254 && EMAIL_PATTERN.test(email);
}

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw badRequest("The password is too weak.");
}

export function isValidTimezone(timezone: string): boolean {
  if (timezone === "") return true;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/** Who may see a user's real email address (Zulip's email_address_visibility values). */
export const EmailVisibility = {
  EVERYONE: 1,
  MEMBERS: 2,
  ADMINS: 3,
  NOBODY: 4,
  MODERATORS: 5,
} as const;

export const EMAIL_VISIBILITY_VALUES: readonly number[] = Object.values(EmailVisibility);

/** Whether a viewer with `viewerRole` may see the real email of a user with the given setting. */
export function canSeeDeliveryEmail(visibility: number, viewerRole: number): boolean {
  switch (visibility) {
    case EmailVisibility.EVERYONE:
      return true;
    case EmailVisibility.MEMBERS:
      return !isGuest(viewerRole);
    case EmailVisibility.MODERATORS:
      return isModerator(viewerRole);
    case EmailVisibility.ADMINS:
      return isAdmin(viewerRole);
    default:
      return false;
  }
}

/** The API email of a user: the real one when everyone may see it, else a stable fake. */
export function apiEmailFor(userId: number, deliveryEmail: string, visibility: number, fakeDomain: string): string {
  return visibility === EmailVisibility.EVERYONE ? deliveryEmail : `user${userId}@${fakeDomain}`;
}
