// Writing presence (Zulip's zerver/actions/presence.py). Every client of
// every user reports once a minute, so this is the hottest write there is:
// one read of the user's row, and a write only when a stored time moves (by
// more than PRESENCE_UPDATE_MIN_FREQ_SECONDS); no organization lock, no
// group transaction. A write takes the next number of the organization's
// presence sequence (a row lock held until it commits, so numbers become
// visible in order to every process) and stores it with the row. Events go
// out only when the user comes online after missing pings, or when their
// presence_enabled setting changes; clients learn the rest at their next ping.
import { sql, type Kysely } from "kysely";
import {
  backdatedForInvisibility,
  legacyClientPresence,
  modernPresence,
  planPresenceUpdate,
  USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS,
  type PresenceStatus,
  type PresenceTimes,
} from "../domain/presence.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { humansOnly } from "../errors.ts";
import { PendingEvents } from "../events/notifier.ts";
import { presenceAudience, presenceServerTimestamp, presenceTimesOf } from "../queries/presence.ts";
import type { Services } from "../services.ts";
import type { Dialect } from "../storage/database.ts";
import type { Database, Realm, User } from "../storage/schema.ts";

type Db = Kysely<Database>;

/**
 * POST /users/me/presence's write (Zulip's update_user_presence): nothing at
 * all for a user who turned presence_enabled off.
 */
export async function reportPresence(services: Services, realm: Realm, user: User, status: PresenceStatus): Promise<void> {
  if (user.is_bot) throw humansOnly();
  if (!parseUserSettings(user.settings).presence_enabled) return;
  const pending = new PendingEvents();
  await updatePresence(services.storage.db, services, pending, realm, user, status, { force: false });
  pending.sendTo(services.notifier);
}

/**
 * The user turned presence_enabled on or off (inside PATCH /settings's
 * transaction): on, they are active now; off, their times move back so that
 * everyone sees them offline at once. Either way everyone who may see them
 * is told, whatever the organization's size (Zulip's force_send_update).
 */
export async function presenceEnabledChanged(trx: Db, services: Services, pending: PendingEvents, realm: Realm, user: User, enabled: boolean): Promise<void> {
  if (enabled) {
    await updatePresence(trx, services, pending, realm, user, "active", { force: true });
    return;
  }
  const current = await presenceTimesOf(trx, user.id);
  // No presence reported yet: nothing to hide.
  if (current === undefined) return;
  const times = backdatedForInvisibility(current, services.now());
  if (times === undefined || !(await writeTimes(trx, services.storage.dialect, user, current, times))) return;
  await queuePresenceEvents(trx, services, pending, realm, user, times, { force: true });
}

/** Zulip's do_update_user_presence: `db` is the database, or a transaction to write in. */
async function updatePresence(db: Db, services: Services, pending: PendingEvents, realm: Realm, user: User, status: PresenceStatus, options: { force: boolean }): Promise<void> {
  const current = await presenceTimesOf(db, user.id);
  const plan = planPresenceUpdate(current, status, services.now());
  let times = current;
  if (plan.kind === "create") {
    // Another request created the row in the meantime: theirs stands, and so does their event.
    if (!(await insertTimes(db, services.storage.dialect, user, plan.times))) return;
    times = plan.times;
  } else if (plan.kind === "update") {
    // Another request moved the row since it was read: it did this report's work.
    if (!(await writeTimes(db, services.storage.dialect, user, current!, plan.times))) return;
    times = plan.times;
  }
  const presenceDisabled = parseRealmSettings(realm.settings).presence_disabled;
  if (times !== undefined && (options.force || (!presenceDisabled && plan.becameOnline))) {
    await queuePresenceEvents(db, services, pending, realm, user, times, options);
  }
}

/**
 * Bumps the organization's presence sequence and returns the new number.
 * Call inside a transaction: the sequence row stays locked until it commits.
 */
async function nextUpdateId(trx: Db, realmId: number): Promise<number> {
  const row = await trx
    .insertInto("presence_sequences")
    .values({ realm_id: realmId, last_update_id: 1 })
    .onConflict((oc) => oc.column("realm_id").doUpdateSet({ last_update_id: sql<number>`presence_sequences.last_update_id + 1` }))
    .returning("last_update_id")
    .executeTakeFirstOrThrow();
  return Number(row.last_update_id);
}

/** Runs `body` in a transaction, or in the one `db` already is. */
function inTransaction<T>(db: Db, body: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? body(db) : db.transaction().execute(body);
}

/**
 * The user's first row. Returns false if it exists already (created by a
 * concurrent request). On PostgreSQL one statement bumps the sequence and
 * inserts (no transaction round trips); on SQLite, two in a transaction.
 */
async function insertTimes(db: Db, dialect: Dialect, user: User, times: PresenceTimes): Promise<boolean> {
  const values = { user_id: user.id, realm_id: user.realm_id, last_connected_time: times.lastConnectedTime, last_active_time: times.lastActiveTime };
  if (dialect === "postgres") {
    const result = await db
      .with("seq", (qb) => sequenceBump(qb, user.realm_id))
      .insertInto("user_presence")
      .values({ ...values, last_update_id: (eb) => eb.selectFrom("seq").select("seq.last_update_id") })
      .onConflict((oc) => oc.column("user_id").doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }
  return inTransaction(db, async (trx) => {
    const lastUpdateId = await nextUpdateId(trx, user.realm_id);
    const result = await trx
      .insertInto("user_presence")
      .values({ ...values, last_update_id: lastUpdateId })
      .onConflict((oc) => oc.column("user_id").doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  });
}

/**
 * Stores new times with a new sequence number, if the row still holds
 * `expected` (else a concurrent request changed it first: returns false).
 */
async function writeTimes(db: Db, dialect: Dialect, user: User, expected: PresenceTimes, times: PresenceTimes): Promise<boolean> {
  if (dialect === "postgres") {
    const result = await db
      .with("seq", (qb) => sequenceBump(qb, user.realm_id))
      .updateTable("user_presence")
      .set({
        last_connected_time: times.lastConnectedTime,
        last_active_time: times.lastActiveTime,
        last_update_id: (eb) => eb.selectFrom("seq").select("seq.last_update_id"),
      })
      .where("user_id", "=", user.id)
      .where(sql<boolean>`last_connected_time IS NOT DISTINCT FROM ${expected.lastConnectedTime}`)
      .where(sql<boolean>`last_active_time IS NOT DISTINCT FROM ${expected.lastActiveTime}`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }
  return inTransaction(db, async (trx) => {
    const lastUpdateId = await nextUpdateId(trx, user.realm_id);
    const result = await trx
      .updateTable("user_presence")
      .set({ last_connected_time: times.lastConnectedTime, last_active_time: times.lastActiveTime, last_update_id: lastUpdateId })
      .where("user_id", "=", user.id)
      .where(sql<boolean>`last_connected_time IS ${expected.lastConnectedTime}`)
      .where(sql<boolean>`last_active_time IS ${expected.lastActiveTime}`)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  });
}

/** The sequence bump as a PostgreSQL CTE: the row lock lasts until the statement commits. */
function sequenceBump(qb: Parameters<Parameters<Db["with"]>[1]>[0], realmId: number) {
  return qb
    .insertInto("presence_sequences")
    .values({ realm_id: realmId, last_update_id: 1 })
    .onConflict((oc) => oc.column("realm_id").doUpdateSet({ last_update_id: sql<number>`presence_sequences.last_update_id + 1` }))
    .returning("last_update_id");
}

/**
 * Zulip's send_presence_changed, in the three forms clients registered for:
 * the modern one (simplified_presence_events), and the legacy one with
 * (default) or without (slim_presence) the user's email. In organizations
 * of more than 100 recipients only forced updates are sent.
 */
async function queuePresenceEvents(
  db: Db,
  services: Services,
  pending: PendingEvents,
  realm: Realm,
  user: User,
  times: PresenceTimes,
  options: { force: boolean },
): Promise<void> {
  const audience = await presenceAudience(db, realm.id, parseRealmSettings(realm.settings), user);
  if (audience.length > USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS && !options.force) return;
  const serverTimestamp = presenceServerTimestamp(services.now());
  const legacy = { website: legacyClientPresence(times, user.date_joined) };
  const modern = { type: "presence", presences: { [String(user.id)]: modernPresence(times, user.date_joined) } };
  const plain = { name: "simplified_presence_events", present: false } as const;
  pending.add(realm.id, modern, audience, { name: "simplified_presence_events", present: true });
  pending.add(realm.id, { type: "presence", user_id: user.id, server_timestamp: serverTimestamp, presence: legacy }, audience, [plain, { name: "slim_presence", present: true }]);
  pending.add(realm.id, { type: "presence", user_id: user.id, email: user.email, server_timestamp: serverTimestamp, presence: legacy }, audience, [
    plain,
    { name: "slim_presence", present: false },
  ]);
}
