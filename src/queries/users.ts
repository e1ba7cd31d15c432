// Reading users, and the one serializer that turns a user row into the API
// user object (REST replies, register's initial state and events all use it).
import { sql, type Kysely } from "kysely";
import type { Config } from "../config.ts";
import { avatarUrl as avatarUrlFor, type AvatarFields } from "../domain/avatar.ts";
import { Flag } from "../domain/message-flags.ts";
import { isAdmin, isGuest, isOwner, Role } from "../domain/roles.ts";
import { seesDeliveryEmail } from "../domain/users.ts";
import { inChunks, isStorableId, isStorableText, type Storage } from "../storage/database.ts";
import { preparedQuery } from "../storage/compiled.ts";
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

/** A user's avatar_url (or avatar_url_medium): see domain/avatar.ts. */
export function avatarUrl(config: Config, user: AvatarFields, medium = false): string {
  return avatarUrlFor(config.externalUrl, user, medium);
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
    // Default avatars are drawn by this server, not an external provider
    // (Gravatar), so there is never a URL for the client to compute itself: never null.
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

// Authentication's statements (every request): compiled once.
const realmByStringId = preparedQuery((db, a: { stringId: string }) => db.selectFrom("realms").selectAll().where("string_id", "=", a.stringId));
const userById = preparedQuery((db, a: { realmId: number; id: number }) => db.selectFrom("users").selectAll().where("realm_id", "=", a.realmId).where("id", "=", a.id));
const userByDeliveryEmailKey = preparedQuery((db, a: { realmId: number; key: string }) =>
  db.selectFrom("users").selectAll().where("realm_id", "=", a.realmId).where("delivery_email_key", "=", a.key),
);
const userByEmailKey = preparedQuery((db, a: { realmId: number; key: string }) => db.selectFrom("users").selectAll().where("realm_id", "=", a.realmId).where("email_key", "=", a.key));

/** The organization served at the server's root (the only one, for now). */
export async function getDefaultRealm(db: Kysely<Database>): Promise<Realm | undefined> {
  return realmByStringId.executeTakeFirst(db, { stringId: "" });
}

export async function getUserById(db: Kysely<Database>, realmId: number, userId: number): Promise<User | undefined> {
  if (!isStorableId(userId)) return undefined;
  return userById.executeTakeFirst(db, { realmId, id: userId });
}

export async function getUserByDeliveryEmail(db: Kysely<Database>, realmId: number, email: string): Promise<User | undefined> {
  if (!isStorableText(email)) return undefined;
  return userByDeliveryEmailKey.executeTakeFirst(db, { realmId, key: email.trim().toLowerCase() });
}

/** A user by API email (the fake user{id}@… one where real emails are hidden), case-insensitively. */
export async function getUserByApiEmail(db: Kysely<Database>, realmId: number, email: string): Promise<User | undefined> {
  return db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("email_key", "=", email.trim().toLowerCase()).executeTakeFirst();
}

/** A user by the address an API client would know: the real one, or the API (possibly fake) one. */
export async function getUserByLoginEmail(db: Kysely<Database>, realmId: number, email: string): Promise<User | undefined> {
  // An HTTP Basic address with NUL names nobody: the same 401 on both databases.
  if (!isStorableText(email)) return undefined;
  // Two indexed lookups rather than one OR, which the planners answer with a
  // scan of the organization's users. The real address is the common case.
  return (
    (await getUserByDeliveryEmail(db, realmId, email)) ??
    (await userByEmailKey.executeTakeFirst(db, { realmId, key: email.trim().toLowerCase() }))
  );
}

// Authentication's look-ups, from the process's row cache (storage/row-cache.ts):
// a warm request reads neither row. Outside transactions only: a transaction
// must see its own writes, and the cache must never hold them uncommitted.

/** getDefaultRealm, cached. */
export function cachedDefaultRealm(storage: Storage): Promise<Realm | undefined> {
  return storage.rows.read("realm", ["realms"], () => getDefaultRealm(storage.db));
}

/** getUserByLoginEmail, cached (the key is the address as looked up: trimmed, lowercased). */
export function cachedUserByLoginEmail(storage: Storage, realmId: number, email: string): Promise<User | undefined> {
  return storage.rows.read(`user-email ${realmId} ${email.trim().toLowerCase()}`, ["users"], () => getUserByLoginEmail(storage.db, realmId, email));
}

/** getUserById, cached. */
export function cachedUserById(storage: Storage, realmId: number, userId: number): Promise<User | undefined> {
  return storage.rows.read(`user-id ${realmId} ${userId}`, ["users"], () => getUserById(storage.db, realmId, userId));
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
  if (!isStorableText(email)) return undefined;
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

/** Users of the organization by ID (any state), looked up in chunks. */
export async function usersByIds(db: Kysely<Database>, realmId: number, userIds: readonly number[]): Promise<Map<number, User>> {
  const found = new Map<number, User>();
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    for (const user of await db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("id", "in", chunk).execute()) found.set(user.id, user);
  }
  return found;
}

/**
 * lookUpUserForViewer for many addresses at once, in chunks: each address
 * (as given) → the user it names for `viewer`, if any.
 */
export async function usersByEmailsForViewer(db: Kysely<Database>, realmId: number, emails: readonly string[], viewer: Viewer): Promise<Map<string, User>> {
  const keyOf = (email: string) => email.trim().toLowerCase();
  const keys = [...new Set(emails.filter(isStorableText).map(keyOf))];
  const byApiEmail = new Map<string, User>();
  for (const chunk of inChunks(keys)) {
    for (const user of await db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("email_key", "in", chunk).execute()) byApiEmail.set(user.email_key, user);
  }
  const byRealEmail = new Map<string, User>();
  for (const chunk of inChunks(keys.filter((k) => !byApiEmail.has(k)))) {
    for (const user of await db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("delivery_email_key", "in", chunk).execute()) {
      if (seesDeliveryEmail(user, viewer)) byRealEmail.set(user.delivery_email_key, user);
    }
  }
  const found = new Map<string, User>();
  for (const email of emails) {
    const user = byApiEmail.get(keyOf(email)) ?? byRealEmail.get(keyOf(email));
    if (user) found.set(email, user);
  }
  return found;
}

/** Throws unless every ID is an active user of the organization (direct members of a group setting); the first bad one in request order is named. */
export async function checkSettingMembers(db: Kysely<Database>, realmId: number, userIds: readonly number[]): Promise<void> {
  const valid = new Set<number>();
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    const rows = await db
      .selectFrom("users")
      .select("id")
      .where("realm_id", "=", realmId)
      .where("id", "in", chunk)
      .where("is_active", "=", true)
      .where("is_system_bot", "=", false)
      .execute();
    for (const row of rows) valid.add(row.id);
  }
  const invalid = userIds.find((id) => !valid.has(id));
  if (invalid !== undefined) throw badRequest(`Invalid user ID: ${invalid}`);
}

/**
 * The users who share a conversation with `userId`: an active subscription to
 * a common channel, or a direct message (Zulip's get_accessible_user_ids, what
 * a guest outside can_access_all_users_group may know of). With `among`, only
 * those users are looked at.
 */
export async function usersSharingAConversation(db: Kysely<Database>, userId: number, among?: readonly number[]): Promise<Set<number>> {
  const found = new Set<number>();
  for (const chunk of among === undefined ? [undefined] : inChunks(among)) {
    if (chunk?.length === 0) continue;
    let viaChannels = db
      .selectFrom("subscriptions as mine")
      .innerJoin("subscriptions as theirs", "theirs.channel_id", "mine.channel_id")
      .select("theirs.user_id")
      .distinct()
      .where("mine.user_id", "=", userId)
      .where("mine.active", "=", true)
      .where("theirs.active", "=", true);
    let viaMessages = db
      .selectFrom("user_messages as mine")
      .innerJoin("user_messages as theirs", "theirs.message_id", "mine.message_id")
      .select("theirs.user_id")
      .distinct()
      .where("mine.user_id", "=", userId)
      .where(sql<boolean>`(mine.flags & ${sql.lit(Flag.IS_PRIVATE)}) <> 0`);
    if (chunk !== undefined) {
      viaChannels = viaChannels.where("theirs.user_id", "in", chunk);
      viaMessages = viaMessages.where("theirs.user_id", "in", chunk);
    }
    for (const row of [...(await viaChannels.execute()), ...(await viaMessages.execute())]) found.add(row.user_id);
  }
  return found;
}
