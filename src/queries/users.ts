// Reading users, and the one serializer that turns a user row into the API
// user object (REST replies, register's initial state and events all use it).
import type { Kysely } from "kysely";
import type { Config } from "../config.ts";
import { isAdmin, isGuest, isOwner, Role } from "../domain/roles.ts";
import { seesDeliveryEmail } from "../domain/users.ts";
import { isStorableId } from "../storage/database.ts";
import { badRequest } from "../errors.ts";
import type { Database, Realm, User } from "../storage/schema.ts";

/** Who is looking: decides whether real email addresses are shown. */
export interface Viewer {
  id: number;
  role: number;
}

export interface ApiUser {
  user_id: number;
  email: string;
  delivery_email: string | null;
  full_name: string;
  date_joined: string;
  is_active: boolean;
  is_owner: boolean;
  is_admin: boolean;
  is_guest: boolean;
  is_bot: boolean;
  bot_type: number | null;
  bot_owner_id?: number | null;
  is_system_bot?: boolean;
  role: number;
  timezone: string;
  avatar_url: string | null;
  avatar_version: number;
  profile_data?: Record<string, { value: string; rendered_value?: string }>;
}

export interface FormatOptions {
  /** Custom profile field values by field ID; given only when the caller asked for them. */
  profileData?: Record<string, { value: string; rendered_value?: string }>;
}

/** ISO 8601 in UTC with an explicit offset, as Python's isoformat() writes it. */
export function isoTimestamp(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "+00:00");
}

export function avatarUrl(config: Config, user: Pick<User, "id" | "avatar_version">): string {
  return `${config.externalUrl}/avatar/${user.id}?v=${user.avatar_version}`;
}

export function formatUser(config: Config, user: User, viewer: Viewer, options: FormatOptions = {}): ApiUser {
  const seesEmail = seesDeliveryEmail(user, viewer);
  const result: ApiUser = {
    user_id: user.id,
    email: user.email,
    delivery_email: seesEmail ? user.delivery_email : null,
    full_name: user.full_name,
    date_joined: isoTimestamp(user.date_joined),
    is_active: user.is_active,
    is_owner: isOwner(user.role),
    is_admin: isAdmin(user.role),
    is_guest: isGuest(user.role),
    is_bot: user.is_bot,
    bot_type: user.is_bot ? user.bot_type : null,
    role: user.role,
    timezone: user.timezone,
    // Default avatars are served by this server, not an external provider, so
    // there is never a URL for the client to compute itself: never null.
    avatar_url: avatarUrl(config, user),
    avatar_version: user.avatar_version,
  };
  if (user.is_bot) {
    result.bot_owner_id = user.bot_owner_id;
    if (user.is_system_bot) result.is_system_bot = true;
  } else if (options.profileData !== undefined) {
    result.profile_data = options.profileData;
  }
  return result;
}

export async function getRealm(db: Kysely<Database>, realmId: number): Promise<Realm | undefined> {
  return db.selectFrom("realms").selectAll().where("id", "=", realmId).executeTakeFirst();
}

/** The organization served at the server's root (the only one, for now). */
export async function getDefaultRealm(db: Kysely<Database>): Promise<Realm | undefined> {
  return db.selectFrom("realms").selectAll().where("string_id", "=", "").executeTakeFirst();
}

export async function getUserById(db: Kysely<Database>, realmId: number, userId: number): Promise<User | undefined> {
  if (!isStorableId(userId)) return undefined;
  return db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("id", "=", userId).executeTakeFirst();
}

/**
 * No address holds a NUL, and PostgreSQL cannot even compare text with one:
 * such a lookup (an email decoded from an HTTP Basic header, say) finds nobody
 * without asking the database.
 */
function impossibleEmail(email: string): boolean {
  return email.includes("\0");
}

export async function getUserByDeliveryEmail(db: Kysely<Database>, realmId: number, email: string): Promise<User | undefined> {
  if (impossibleEmail(email)) return undefined;
  return db
    .selectFrom("users")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where("delivery_email_key", "=", email.trim().toLowerCase())
    .executeTakeFirst();
}

/** A user by the address an API client would know: the real one, or the API (possibly fake) one. */
export async function getUserByLoginEmail(db: Kysely<Database>, realmId: number, email: string): Promise<User | undefined> {
  // Two indexed lookups rather than one OR, which the planners answer with a
  // scan of the organization's users. The real address is the common case.
  if (impossibleEmail(email)) return undefined;
  return (
    (await getUserByDeliveryEmail(db, realmId, email)) ??
    (await db
      .selectFrom("users")
      .selectAll()
      .where("realm_id", "=", realmId)
      .where("email_key", "=", email.trim().toLowerCase())
      .executeTakeFirst())
  );
}

/** Every user of the organization that GET /users lists: humans and bots, active or not, but not system bots. */
export async function listRealmUsers(db: Kysely<Database>, realmId: number): Promise<User[]> {
  return db
    .selectFrom("users")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where("is_system_bot", "=", false)
    .orderBy("id")
    .execute();
}

export async function listActiveUsers(db: Kysely<Database>, realmId: number): Promise<Pick<User, "id" | "role">[]> {
  return db
    .selectFrom("users")
    .select(["id", "role"])
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .execute();
}

export async function countActiveHumanOwners(db: Kysely<Database>, realmId: number): Promise<number> {
  const row = await db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("realm_id", "=", realmId)
    .where("role", "=", Role.OWNER)
    .where("is_active", "=", true)
    .where("is_bot", "=", false)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function countActiveHumans(db: Kysely<Database>, realmId: number): Promise<number> {
  const row = await db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_bot", "=", false)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Active human users, by email: the accounts the development login lists. */
export async function listDevLoginUsers(db: Kysely<Database>, realmId: number): Promise<Pick<User, "delivery_email" | "role">[]> {
  return db
    .selectFrom("users")
    .select(["delivery_email", "role"])
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_bot", "=", false)
    .orderBy("delivery_email")
    .execute();
}

/**
 * A user by email as `viewer` may name them: the API address (real or fake)
 * finds anyone; a real address finds only users whose real address the viewer
 * may see.
 */
export async function lookUpUserForViewer(db: Kysely<Database>, realmId: number, email: string, viewer: Viewer): Promise<User | undefined> {
  const byApiEmail = await db
    .selectFrom("users")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where("email_key", "=", email.trim().toLowerCase())
    .executeTakeFirst();
  if (byApiEmail) return byApiEmail;
  const user = await getUserByDeliveryEmail(db, realmId, email);
  return user && seesDeliveryEmail(user, viewer) ? user : undefined;
}

/** Throws unless every ID is an active user of the organization (direct members of a group setting). */
export async function checkSettingMembers(db: Kysely<Database>, realmId: number, userIds: readonly number[]): Promise<void> {
  for (const id of userIds) {
    const user = await getUserById(db, realmId, id);
    if (!user || !user.is_active || user.is_system_bot) throw badRequest(`Invalid user ID: ${id}`);
  }
}
