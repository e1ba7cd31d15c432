// Pure rules about user accounts: names, emails, time zones, who may see a
// real email address.
import { badRequest } from "../errors.ts";
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

export const MAX_PASSWORD_LENGTH = 100;

/** Whether a password is acceptable (Zulip's PASSWORD_MIN_LENGTH / PASSWORD_MAX_LENGTH). */
export function isAcceptablePassword(password: string): boolean {
  const length = [...password].length;
  return length >= MIN_PASSWORD_LENGTH && length <= MAX_PASSWORD_LENGTH;
}

export function checkPassword(password: string): void {
  if (!isAcceptablePassword(password)) throw badRequest("The password is too weak.");
}

/**
 * An IANA time zone name as Zulip accepts it: exactly a known name (aliases
 * such as "US/Eastern" too), not a differently capitalized one.
 */
export function isValidTimezone(timezone: string): boolean {
  if (timezone === "") return true;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return false;
  }
  // The engine canonicalizes aliases (a different name) and capitalization (the same name, other case).
  return resolved === timezone || resolved.toLowerCase() !== timezone.toLowerCase();
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

/** An email_address_visibility value (a user's own or the organization's default for new users), or the error Zulip gives. */
export function checkEmailVisibility(value: unknown): number {
  if (typeof value !== "number" || !EMAIL_VISIBILITY_VALUES.includes(value)) throw badRequest("Invalid email_address_visibility: Value error, Not in the list of possible values");
  return value;
}

/** Whether `viewer` may see the real email address of `subject`: always their own and bots'. */
export function seesDeliveryEmail(
  subject: { id: number; is_bot: boolean; email_address_visibility: number },
  viewer: { id: number; role: number },
): boolean {
  return subject.is_bot || subject.id === viewer.id || canSeeDeliveryEmail(subject.email_address_visibility, viewer.role);
}

/** Whether a viewer with `viewerRole` may see the real email of a user with the given setting. */
function canSeeDeliveryEmail(visibility: number, viewerRole: number): boolean {
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

/** Addresses in the fake-email domain are the server's; no account may take one. */
export function isInFakeDomain(email: string, fakeDomain: string): boolean {
  return email.toLowerCase().endsWith(`@${fakeDomain.toLowerCase()}`);
}
