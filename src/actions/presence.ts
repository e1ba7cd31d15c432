// Writing presence (Zulip's zerver/actions/presence.py). Every client of
// every user reports once a minute, so this is the hottest write there is:
// a read of the user's row, and a write only when a stored time moves (by
// more than PRESENCE_UPDATE_MIN_FREQ_SECONDS), both shared with the other
// reports of the moment (presence-writes.ts); no organization lock. Events go
// out only when the user comes online after missing pings, or when their
// presence_enabled setting changes; clients learn the rest at their next ping.
import type { Kysely } from "kysely";
import {
  backdatedForInvisibility,
  legacyClientPresence,
  modernPresence,
  planPresenceUpdate,
  USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS,
  type PresencePlan,
  type PresenceStatus,
  type PresenceTimes,
} from "../domain/presence.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { humansOnly } from "../errors.ts";
import { PendingEvents } from "../events/notifier.ts";
import { presenceAudience, presenceAudienceSurelyAbove, presenceServerTimestamp, presenceTimesOf } from "../queries/presence.ts";
import type { Services } from "../services.ts";
import { applyPresenceWrites, reportPresenceInBatch } from "./presence-writes.ts";
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
  if (times === undefined || !(await writeTimesIn(trx, user, current, times))) return;
  await queuePresenceEvents(trx, services, pending, realm, user, times, { force: true });
}

/**
 * Zulip's do_update_user_presence: `db` is the database (the report joins the
 * next batch, which reads and writes it: presence-writes.ts), or a
 * transaction to read and write in.
 */
async function updatePresence(db: Db, services: Services, pending: PendingEvents, realm: Realm, user: User, status: PresenceStatus, options: { force: boolean }): Promise<void> {
  let current: PresenceTimes | undefined;
  let plan: PresencePlan;
  let written: boolean;
  if (db.isTransaction) {
    current = await presenceTimesOf(db, user.id);
    plan = planPresenceUpdate(current, status, services.now());
    written = plan.kind !== "none" && (await writeTimesIn(db, user, current, plan.times));
  } else {
    const now = services.now();
    ({ current, plan, written } = await reportPresenceInBatch(services.storage, {
      userId: user.id,
      realmId: user.realm_id,
      plan: (read) => planPresenceUpdate(read, status, now),
    }));
  }
  let times = current;
  if (plan.kind !== "none") {
    // A later report of this user in the batch wrote the row with this one's plan in it (and sends the event), or another
    // request moved the row each time it was read (in a transaction: once), or the batch's second round failed: the
    // client reports again within a minute.
    if (!written) return;
    times = plan.times;
  }
  const presenceDisabled = parseRealmSettings(realm.settings).presence_disabled;
  if (times !== undefined && (options.force || (!presenceDisabled && plan.becameOnline))) {
    await queuePresenceEvents(db, services, pending, realm, user, times, options);
  }
}

/** In a transaction (a settings change): new times if the row still holds `expected` (undefined: no row yet); false when a concurrent request changed it first. */
async function writeTimesIn(trx: Db, user: User, expected: PresenceTimes | undefined, times: PresenceTimes): Promise<boolean> {
  return (await applyPresenceWrites(trx, user.realm_id, [{ userId: user.id, realmId: user.realm_id, expected, times }])).has(user.id);
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
  if (!options.force && (await presenceAudienceSurelyAbove(db, realm.id, USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS))) return;
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
