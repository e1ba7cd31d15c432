// Reading presence: one user's stored times, an organization's presence in
// Zulip's two formats (POST /users/me/presence, GET /realm/presence and
// POST /register share it), and who may see whose presence.
import type { Kysely } from "kysely";
import {
  DEFAULT_PRESENCE_HISTORY_DAYS,
  legacyPresence,
  modernPresence,
  type LegacyPresence,
  type ModernPresence,
  type PresenceTimes,
} from "../domain/presence.ts";
import { canAccessAllUsers, type RealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { isGuest, Role } from "../domain/roles.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import { preparedQuery } from "../storage/compiled.ts";
import type { Database, User } from "../storage/schema.ts";
import { groupIdsOfUser, systemGroupIdsByName } from "./user-groups.ts";
import { listActiveUsers, usersSharingAConversation } from "./users.ts";

type Db = Kysely<Database>;

/**
 * The `server_timestamp` of presence replies: now, with the milliseconds
 * Zulip's time.time() has, unless `now` (the services' clock, which tests
 * move) is not the real second.
 */
export function presenceServerTimestamp(now: number): number {
  const ms = Date.now();
  return Math.floor(ms / 1000) === now ? ms / 1000 : now;
}

const presenceRow = preparedQuery((db, a: { userId: number }) =>
  db.selectFrom("user_presence").select(["last_connected_time", "last_active_time"]).where("user_id", "=", a.userId),
);

/** A user's stored presence, or undefined if they never reported any. */
export async function presenceTimesOf(db: Db, userId: number): Promise<PresenceTimes | undefined> {
  const row = await presenceRow.executeTakeFirst(db, { userId });
  return row && { lastConnectedTime: row.last_connected_time, lastActiveTime: row.last_active_time };
}

/** What a batch of presence reports plans from: the user's stored presence (undefined: none yet) and whether they have presence_enabled. */
export interface PresenceReportRow {
  times: PresenceTimes | undefined;
  presenceEnabled: boolean;
}

const reportRowsQuery = (db: Db) =>
  db
    .selectFrom("users")
    .leftJoin("user_presence", "user_presence.user_id", "users.id")
    .select(["users.id as user_id", "users.settings", "user_presence.user_id as presence_user_id", "user_presence.last_connected_time", "user_presence.last_active_time"]);

const reportRowOfUser = preparedQuery((db, a: { userId: number }) => reportRowsQuery(db).where("users.id", "=", a.userId));

/**
 * The presence row and presence_enabled of each of `userIds` (absent: no such
 * user), in one statement (prepared for one user, the common batch): the
 * setting is read with the times, not from a cache, since it may have been
 * turned off a moment ago in any process.
 */
export async function presenceReportRows(db: Db, userIds: readonly number[]): Promise<Map<number, PresenceReportRow>> {
  const rows =
    userIds.length === 0
      ? []
      : userIds.length === 1
        ? await reportRowOfUser.execute(db, { userId: userIds[0]! })
        : await reportRowsQuery(db).where("users.id", "in", userIds).execute();
  return new Map(
    rows.map((row) => [
      Number(row.user_id),
      {
        times: row.presence_user_id === null ? undefined : { lastConnectedTime: row.last_connected_time, lastActiveTime: row.last_active_time },
        presenceEnabled: parseUserSettings(row.settings).presence_enabled,
      },
    ]),
  );
}

/**
 * Whose presence `viewer` may see: undefined for everyone, or the users a
 * guest outside can_access_all_users_group shares a conversation with, and
 * themselves. (Zulip limits presence so only with
 * CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE; Parley always does.)
 */
export async function presenceVisibleTo(db: Db, settings: Readonly<RealmSettings>, viewer: Pick<User, "id" | "role">): Promise<ReadonlySet<number> | undefined> {
  if (!isGuest(viewer.role)) return undefined;
  if (canAccessAllUsers(settings, { id: viewer.id, role: viewer.role, groupIds: await groupIdsOfUser(db, viewer.id) })) return undefined;
  const visible = await usersSharingAConversation(db, viewer.id);
  visible.add(viewer.id);
  return visible;
}

export interface RealmPresenceRequest {
  /** Modern format keyed by user ID (true), or legacy keyed by API email. */
  slim: boolean;
  /** The newest last_update_id the client has: only later changes are returned. */
  lastUpdateId?: number | undefined;
  /** Only users connected in the last N days (default 14; 0: nobody). */
  historyLimitDays?: number | undefined;
  now: number;
  /** Only these users (undefined: everyone), see presenceVisibleTo. */
  visible?: ReadonlySet<number> | undefined;
}

export interface RealmPresence {
  presences: Record<string, ModernPresence | LegacyPresence>;
  /** The newest last_update_id returned, else the client's own, else -1. */
  lastUpdateId: number;
}

/** Zulip's get_presences_for_realm: active human users' presence, as one client asked for it. */
export async function realmPresence(db: Db, realmId: number, settings: Readonly<RealmSettings>, request: RealmPresenceRequest): Promise<RealmPresence> {
  if (settings.presence_disabled) return { presences: {}, lastUpdateId: -1 };
  const { lastUpdateId, historyLimitDays } = request;
  const presences: Record<string, ModernPresence | LegacyPresence> = {};
  let newest = -1;
  // history_limit_days=0: the client wants no presence data at all.
  if (historyLimitDays !== 0) {
    let query = db
      .selectFrom("user_presence as p")
      .innerJoin("users as u", "u.id", "p.user_id")
      .select(["p.user_id", "u.email", "u.date_joined", "p.last_connected_time", "p.last_active_time", "p.last_update_id"])
      .where("p.realm_id", "=", realmId)
      .where("u.is_active", "=", true)
      .where("u.is_bot", "=", false);
    if (lastUpdateId !== undefined) query = query.where("p.last_update_id", ">", lastUpdateId);
    // A client that has data already gets every change since, however old.
    if (lastUpdateId === undefined || lastUpdateId <= 0) {
      // "Never connected" (NULL) is older than any limit.
      query = query.where("p.last_connected_time", ">=", request.now - (historyLimitDays ?? DEFAULT_PRESENCE_HISTORY_DAYS) * 86400);
    }
    // By user: the order of the snapshot's replies (presence-snapshot.ts), which serve the API.
    for (const row of await query.orderBy("p.user_id").execute()) {
      if (request.visible !== undefined && !request.visible.has(row.user_id)) continue;
      const times = { lastConnectedTime: row.last_connected_time, lastActiveTime: row.last_active_time };
      if (request.slim) presences[String(row.user_id)] = modernPresence(times, row.date_joined);
      else presences[row.email] = legacyPresence(times, row.date_joined);
      if (row.last_update_id > newest) newest = row.last_update_id;
    }
  }
  // Nothing new: the client's own number is still the newest it has.
  if (newest === -1 && lastUpdateId !== undefined) newest = lastUpdateId;
  return { presences, lastUpdateId: newest };
}

/**
 * Who hears that `subject`'s presence changed: every active user (bots
 * included, as Zulip's active_user_ids), except guests outside
 * can_access_all_users_group who share no conversation with them.
 */
export async function presenceAudience(db: Db, realmId: number, settings: Readonly<RealmSettings>, subject: Pick<User, "id">): Promise<number[]> {
  const everyone = await listActiveUsers(db, realmId);
  const guests = everyone.filter((u) => isGuest(u.role) && u.id !== subject.id).map((u) => u.id);
  if (guests.length === 0 || !(await guestsLimited(db, realmId, settings))) return everyone.map((u) => u.id);
  const sharing = await usersSharingAConversation(db, subject.id, guests);
  return everyone.filter((u) => !isGuest(u.role) || u.id === subject.id || sharing.has(u.id)).map((u) => u.id);
}

/**
 * Whether the audience of a presence change is surely larger than `limit`
 * (every active user but guests is in it), counted rather than listed: a
 * ping that brings a user back online in a big organization sends no event
 * and need not list its 10,000 users to find that out.
 */
export async function presenceAudienceSurelyAbove(db: Db, realmId: number, limit: number): Promise<boolean> {
  const row = await db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .where("role", "!=", Role.GUEST)
    .executeTakeFirstOrThrow();
  return Number(row.n) > limit;
}

/** Whether can_access_all_users_group leaves guests out (it may only name role:everyone or role:members). */
async function guestsLimited(db: Db, realmId: number, settings: Readonly<RealmSettings>): Promise<boolean> {
  const everyoneGroup = (await systemGroupIdsByName(db, realmId)).get(SystemGroup.EVERYONE);
  return settings.can_access_all_users_group !== everyoneGroup;
}
