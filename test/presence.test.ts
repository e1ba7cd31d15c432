// API-level tests of presence: POST /users/me/presence (both of Zulip's reply
// formats, the last_update_id protocol, history_limit_days), GET
// /realm/presence, GET /users/{user_id_or_email}/presence, the `presence`
// event in its three forms and when it is (not) sent, `presences` in POST
// /register, presence_enabled (invisible mode), the organization's
// presence_disabled, guests limited by can_access_all_users_group, and the
// cost of a ping (queries per request).
//
// Time: the app's clock (services.now) is a variable the tests move. Each
// test starts a month after the previous one, so every earlier report is
// older than the 14 days presence lists cover and every user is offline.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, mock, test } from "node:test";
import { applyPresenceWrites, MAX_BATCH, reportPresenceInBatch, writeReportBatch, type PresenceReportResult } from "../src/actions/presence-writes.ts";
import { presenceReportRows, type PresenceReportRow } from "../src/queries/presence.ts";
import { getUserById } from "../src/queries/users.ts";
import { reportPresence } from "../src/actions/presence.ts";
import { planPresenceUpdate, type PresencePlan, type PresenceTimes } from "../src/domain/presence.ts";
import { insertUser } from "../src/actions/users.ts";
import { Role } from "../src/domain/roles.ts";
import type { ClientEvent } from "../src/events/notifier.ts";
import { assertError, assertSuccess, jobsSettled, startTestApp, type Params, type TestApp, type TestUser } from "./helpers.ts";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from "kysely";
import { statementsRun, warmRowCache } from "./statement-log.ts";

let t: TestApp;
let clock: number;

before(async () => {
  t = await startTestApp();
  clock = Math.floor(Date.now() / 1000);
  t.services.now = () => clock;
});
after(() => t?.close());

beforeEach(() => {
  clock += 30 * 86400;
  t.clearEvents();
});

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
const db = () => t.services.storage.db;

let counter = 0;
async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function report(user: TestUser, params: Params = {}): Promise<any> {
  return assertSuccess(await t.api(user, "POST", "/users/me/presence", { status: "active", ...params }));
}

/** The user's API email (a fake user{id}@… address: real emails are hidden by default). */
async function apiEmail(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("email").where("id", "=", user.id).executeTakeFirstOrThrow()).email;
}

async function dateJoined(user: TestUser): Promise<number> {
  return (await db().selectFrom("users").select("date_joined").where("id", "=", user.id).executeTakeFirstOrThrow()).date_joined;
}

async function row(user: TestUser) {
  return db().selectFrom("user_presence").selectAll().where("user_id", "=", user.id).executeTakeFirst();
}

/** Sets a user's stored times directly (they are `seconds` old, or null). */
async function setTimes(user: TestUser, connectedAgo: number | null, activeAgo: number | null): Promise<void> {
  const values = { last_connected_time: connectedAgo === null ? null : clock - connectedAgo, last_active_time: activeAgo === null ? null : clock - activeAgo };
  const updated = await db().updateTable("user_presence").set(values).where("user_id", "=", user.id).executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 0) {
    await db()
      .insertInto("user_presence")
      .values({ user_id: user.id, realm_id: t.realm.id, last_update_id: 0, ...values })
      .execute();
  }
}

/** The presence events notified, in their legacy form (one per change), with their recipients. */
function presenceNotifications(): { event: ClientEvent; userIds: readonly number[] }[] {
  return t.events.filter((n) => n.event.type === "presence" && "email" in n.event);
}

async function withStoredRealmSetting(key: string, value: unknown, body: () => Promise<void>): Promise<void> {
  const original = (await db().selectFrom("realms").select("settings").where("id", "=", t.realm.id).executeTakeFirstOrThrow()).settings;
  const changed = JSON.stringify({ ...(JSON.parse(original) as Record<string, unknown>), [key]: value });
  await db().updateTable("realms").set({ settings: changed }).where("id", "=", t.realm.id).execute();
  try {
    await body();
  } finally {
    await db().updateTable("realms").set({ settings: original }).where("id", "=", t.realm.id).execute();
  }
}

async function systemGroupId(name: string): Promise<number> {
  return (await t.systemGroupIds())[name]!;
}

async function newChannel(members: TestUser[]): Promise<void> {
  counter += 1;
  assertSuccess(
    await t.api(u().admin, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name: `presence channel ${counter}` }],
      principals: members.map((m) => m.id),
      send_new_subscription_messages: false,
    }),
  );
}

const legacyEntry = (status: string, timestamp: number) => ({
  aggregated: { client: "website", status, timestamp },
  website: { client: "website", status, timestamp, pushable: false },
});

// ---------------------------------------------------------------------------

describe("POST /users/me/presence: reply formats", () => {
  test("without last_update_id: the legacy format, keyed by API email, per client and aggregated", async () => {
    const user = await newUser("Legacy");
    const reply = await report(user);
    assert.deepEqual(Object.keys(reply).sort(), ["msg", "presence_last_update_id", "presences", "result", "server_timestamp"]);
    assert.deepEqual(reply.presences, { [await apiEmail(user)]: legacyEntry("active", clock) });
    // The services' clock is not the real one here, so server_timestamp is that clock.
    assert.equal(reply.server_timestamp, clock);
    assert.equal(reply.presence_last_update_id, (await row(user))!.last_update_id);
  });

  test("a first report of idle: connected now, never active (shown as the date joined)", async () => {
    const user = await newUser("Idle");
    // Joined more than 70 s before: "never active" (the date joined) is then too old to count as active.
    clock += 100;
    const reply = await report(user, { status: "idle" });
    assert.deepEqual(reply.presences[await apiEmail(user)], legacyEntry("idle", clock));
    const modern = await report(user, { status: "idle", slim_presence: true });
    assert.deepEqual(modern.presences[String(user.id)], { active_timestamp: await dateJoined(user), idle_timestamp: clock });
  });

  test("with last_update_id: the modern format, keyed by user ID, and presence_last_update_id", async () => {
    const a = await newUser("Modern A");
    const b = await newUser("Modern B");
    await report(a);
    clock += 5;
    const reply = await report(b, { status: "idle", last_update_id: -1 });
    assert.deepEqual(reply.presences, {
      [String(a.id)]: { active_timestamp: clock - 5, idle_timestamp: clock - 5 },
      [String(b.id)]: { active_timestamp: await dateJoined(b), idle_timestamp: clock },
    });
    assert.equal(reply.presence_last_update_id, (await row(b))!.last_update_id);
    assert.equal((await row(b))!.last_update_id, (await row(a))!.last_update_id + 1);
  });

  test("slim_presence=true alone also gives the modern format", async () => {
    const user = await newUser("Slim");
    const reply = await report(user, { slim_presence: true });
    assert.deepEqual(reply.presences, { [String(user.id)]: { active_timestamp: clock, idle_timestamp: clock } });
  });

  test("ping_only: the report is stored and the reply carries nothing else", async () => {
    const user = await newUser("Pinger");
    const reply = await report(user, { ping_only: true });
    assert.deepEqual(reply, { result: "success", msg: "" });
    assert.equal((await row(user))!.last_connected_time, clock);
  });

  test("last_update_id returns only what changed since; nothing new echoes the client's number", async () => {
    const a = await newUser("Delta A");
    const b = await newUser("Delta B");
    const first = await report(a, { last_update_id: -1 });
    const seen = first.presence_last_update_id as number;
    // Within a minute a report changes nothing: no new data.
    clock += 10;
    const again = await report(a, { last_update_id: seen });
    assert.deepEqual(again.presences, {});
    assert.equal(again.presence_last_update_id, seen);
    await report(b);
    const delta = await report(a, { last_update_id: seen });
    assert.deepEqual(Object.keys(delta.presences), [String(b.id)]);
    assert.equal(delta.presence_last_update_id, seen + 1);
  });

  test("history_limit_days: users connected in the last N days; 0: none; by default 14 days", async () => {
    const recent = await newUser("Recent");
    const old = await newUser("Old");
    const ancient = await newUser("Ancient");
    const viewer = await newUser("Viewer");
    await report(recent);
    await report(old);
    await report(ancient);
    await setTimes(old, 10 * 86400, 10 * 86400);
    await setTimes(ancient, 20 * 86400, 20 * 86400);
    const keys = async (params: Params) => Object.keys((await report(viewer, { last_update_id: -1, ...params })).presences).sort();
    const ids = (...users: TestUser[]) => users.map((x) => String(x.id)).sort();
    assert.deepEqual(await keys({}), ids(recent, old, viewer));
    assert.deepEqual(await keys({ history_limit_days: 5 }), ids(recent, viewer));
    assert.deepEqual(await keys({ history_limit_days: 25 }), ids(recent, old, ancient, viewer));
    const none = await report(viewer, { last_update_id: -1, history_limit_days: 0 });
    assert.deepEqual(none.presences, {});
    assert.equal(none.presence_last_update_id, -1);
    // A client that has data already (last_update_id > 0) gets every later change, however old.
    const base = (await row(recent))!.last_update_id - 1;
    assert.ok(Object.keys((await report(viewer, { last_update_id: base, history_limit_days: 1 })).presences).includes(String(ancient.id)));
  });

  test("users never connected (NULL times) are left out of lists; deactivated users too", async () => {
    const never = await newUser("Never");
    const gone = await newUser("Gone");
    const viewer = await newUser("Looker");
    await report(gone);
    await setTimes(never, null, null);
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${gone.id}`));
    const reply = await report(viewer, { last_update_id: -1 });
    assert.deepEqual(Object.keys(reply.presences), [String(viewer.id)]);
  });

  test("new_user_input is accepted; unknown parameters are listed as ignored", async () => {
    const user = await newUser("Typer");
    const reply = await report(user, { new_user_input: true, ping_only: true, frobnicate: 1 });
    assert.deepEqual(reply.ignored_parameters_unsupported, ["frobnicate"]);
  });
});

describe("POST /users/me/presence: what a report writes", () => {
  test("one row per user, moved in place only when a time is more than 55 s newer", async () => {
    const user = await newUser("Writer");
    await report(user);
    const created = (await row(user))!;
    assert.deepEqual({ ...created }, { user_id: user.id, realm_id: t.realm.id, last_connected_time: clock, last_active_time: clock, last_update_id: created.last_update_id });
    // 55 s later nothing is written: not even a new last_update_id.
    clock += 55;
    await report(user);
    assert.deepEqual(await row(user), created);
    // 56 s: both times move, with a new number.
    clock += 1;
    await report(user);
    const moved = (await row(user))!;
    assert.equal(moved.last_connected_time, clock);
    assert.equal(moved.last_active_time, clock);
    assert.ok(moved.last_update_id > created.last_update_id);
    // Idle moves only the connection time.
    clock += 60;
    await report(user, { status: "idle" });
    assert.deepEqual({ connected: (await row(user))!.last_connected_time, active: (await row(user))!.last_active_time }, { connected: clock, active: clock - 60 });
    const rows = await db().selectFrom("user_presence").select("user_id").where("user_id", "=", user.id).execute();
    assert.equal(rows.length, 1);
  });

  test("the legacy status: active while the last activity is within 70 s of the last connection", async () => {
    const user = await newUser("Status");
    const viewer = await newUser("Status viewer");
    const email = await apiEmail(user);
    await report(user);
    clock += 60;
    await report(user, { status: "idle" });
    // Active 60 s before the last connection: still active, at the activity's time.
    assert.deepEqual((await report(viewer)).presences[email], legacyEntry("active", clock - 60));
    clock += 60;
    await report(user, { status: "idle" });
    // 120 s: idle, at the connection's time.
    assert.deepEqual((await report(viewer)).presences[email], legacyEntry("idle", clock));
  });

  test("reports are read back by every reader: GET /realm/presence, GET /users/{id}/presence, POST /register", async () => {
    const user = await newUser("Persisted");
    clock += 100;
    await report(user, { status: "idle" });
    const email = await apiEmail(user);
    const realm = assertSuccess(await t.api(u().owner, "GET", "/realm/presence"));
    assert.deepEqual(realm.presences[email], legacyEntry("idle", clock));
    const single = assertSuccess(await t.api(u().owner, "GET", `/users/${user.id}/presence`, { slim_presence: true }));
    assert.deepEqual(single.presence, { active_timestamp: await dateJoined(user), idle_timestamp: clock });
    const state = await t.register(u().owner, { fetch_event_types: ["presence"], slim_presence: true });
    assert.deepEqual(state.presences[String(user.id)], { active_timestamp: await dateJoined(user), idle_timestamp: clock });
  });
});

describe("POST /users/me/presence: errors", () => {
  test("status is required and must be active or idle", async () => {
    assertError(await t.api(u().member, "POST", "/users/me/presence", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'status' argument", { var_name: "status" });
    assertError(await t.api(u().member, "POST", "/users/me/presence", { status: "foo" }), 400, "BAD_REQUEST", "Invalid status: foo");
    assertError(await t.api(u().member, "POST", "/users/me/presence", { status: "offline" }), 400, "BAD_REQUEST", "Invalid status: offline");
    assertError(await t.api(u().member, "POST", "/users/me/presence", { status: "Active" }), 400, "BAD_REQUEST", "Invalid status: Active");
  });

  test("wrong types", async () => {
    const bad = async (params: Params, msg: string) => assertError(await t.api(u().member, "POST", "/users/me/presence", { status: "active", ...params }), 400, "BAD_REQUEST", msg);
    await bad({ ping_only: "yes" }, 'Argument "ping_only" is not valid JSON.');
    await bad({ ping_only: 1 }, "ping_only is not a boolean");
    await bad({ slim_presence: "[]" }, "slim_presence is not a boolean");
    await bad({ new_user_input: "null" }, "new_user_input is not a boolean");
    await bad({ last_update_id: "abc" }, "last_update_id is not an integer");
    await bad({ last_update_id: "1.5" }, "last_update_id is not an integer");
    await bad({ history_limit_days: "true" }, "history_limit_days is not an integer");
  });

  test("bots have no presence: 400, even with a wrong status", async () => {
    assertError(await t.api(u().bot, "POST", "/users/me/presence", { status: "active" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await t.api(u().bot, "POST", "/users/me/presence", { status: "nope" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assert.equal(await row(u().bot), undefined);
  });

  test("credentials are required", async () => {
    assertError(await t.api(null, "POST", "/users/me/presence", { status: "active" }), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "GET", "/realm/presence"), 401, "UNAUTHORIZED");
  });
});

describe("GET /realm/presence", () => {
  test("the legacy format without presence_last_update_id; bots may read it", async () => {
    const user = await newUser("Realm reader");
    await report(user);
    const reply = assertSuccess(await t.api(u().bot, "GET", "/realm/presence"));
    assert.deepEqual(Object.keys(reply).sort(), ["msg", "presences", "result", "server_timestamp"]);
    assert.deepEqual(reply.presences, { [await apiEmail(user)]: legacyEntry("active", clock) });
  });
});

describe("GET /users/{user_id_or_email}/presence", () => {
  test("by ID or API email: the legacy format without client and pushable; slim_presence: the modern one", async () => {
    const user = await newUser("Single");
    await report(user);
    const expected = { aggregated: { status: "active", timestamp: clock }, website: { status: "active", timestamp: clock } };
    assert.deepEqual(assertSuccess(await t.api(u().guest, "GET", `/users/${user.id}/presence`)).presence, expected);
    assert.deepEqual(assertSuccess(await t.api(u().bot, "GET", `/users/${encodeURIComponent(await apiEmail(user))}/presence`)).presence, expected);
    const upper = (await apiEmail(user)).toUpperCase();
    assert.deepEqual(assertSuccess(await t.api(u().member, "GET", `/users/${encodeURIComponent(upper)}/presence`)).presence, expected);
    assert.deepEqual(assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`, { slim_presence: true })).presence, {
      active_timestamp: clock,
      idle_timestamp: clock,
    });
  });

  test("aggregated turns offline once older than the offline threshold (200 s)", async () => {
    const user = await newUser("Fading");
    clock += 100;
    await report(user, { status: "idle" });
    clock += 200;
    assert.equal(assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`)).presence.aggregated.status, "idle");
    clock += 1;
    const presence = assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`)).presence;
    assert.deepEqual(presence, { aggregated: { status: "offline", timestamp: clock - 201 }, website: { status: "idle", timestamp: clock - 201 } });
  });

  test("never-set times fall back to the date joined", async () => {
    const user = await newUser("Nulls");
    await setTimes(user, null, null);
    const joined = await dateJoined(user);
    assert.deepEqual(assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`, { slim_presence: true })).presence, {
      active_timestamp: joined,
      idle_timestamp: joined,
    });
  });

  test("errors: no such user, deactivated, bots, no data, real emails", async () => {
    const get = (who: string | number) => t.api(u().member, "GET", `/users/${encodeURIComponent(String(who))}/presence`);
    assertError(await get(999999), 400, "BAD_REQUEST", "No such user");
    assertError(await get("nobody@example.com"), 400, "BAD_REQUEST", "No such user");
    assertError(await get("abc"), 400, "BAD_REQUEST", "No such user");
    assertError(await get(-3), 400, "BAD_REQUEST", "No such user");
    assertError(await get(u().bot.id), 400, "BAD_REQUEST", "Presence is not supported for bot users.");
    const systemBot = await db().selectFrom("users").select("id").where("is_system_bot", "=", true).executeTakeFirstOrThrow();
    assertError(await get(systemBot.id), 400, "BAD_REQUEST", "No such user");
    const silent = await newUser("Silent");
    assertError(await get(silent.id), 400, "BAD_REQUEST", `No presence data for ${silent.id}`);
    const email = await apiEmail(silent);
    assertError(await get(email), 400, "BAD_REQUEST", `No presence data for ${email}`);
    // The real address finds nobody (only API emails do, as in Zulip), even for an administrator.
    await report(silent);
    assertError(await t.api(u().owner, "GET", `/users/${encodeURIComponent(silent.email)}/presence`), 400, "BAD_REQUEST", "No such user");
    assertSuccess(await get(silent.id));
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${silent.id}`));
    assertError(await get(silent.id), 400, "BAD_REQUEST", "No such user");
    assertError(await get(email), 400, "BAD_REQUEST", "No such user");
  });
});

describe("presence events", () => {
  test("a first report, and coming back after missed pings, reach every active user in three forms", async () => {
    const { owner, admin, moderator } = u();
    const user = await newUser("Eventful");
    const legacy = (await t.register(owner, { event_types: ["presence"] })).queue_id;
    const slim = (await t.register(admin, { event_types: ["presence"], slim_presence: true })).queue_id;
    const modern = (await t.register(moderator, { event_types: ["presence"], slim_presence: true, client_capabilities: { simplified_presence_events: true } })).queue_id;
    const other = (await t.register(admin, { event_types: ["message"] })).queue_id;
    clock += 100;
    await report(user, { status: "idle" });
    const email = await apiEmail(user);
    const website = { client: "website", status: "idle", timestamp: clock, pushable: false };
    assert.deepEqual(await t.queuedEvents(owner, legacy), [{ type: "presence", user_id: user.id, email, server_timestamp: clock, presence: { website }, id: 0 }]);
    assert.deepEqual(await t.queuedEvents(admin, slim), [{ type: "presence", user_id: user.id, server_timestamp: clock, presence: { website }, id: 0 }]);
    assert.deepEqual(await t.queuedEvents(moderator, modern), [
      { type: "presence", presences: { [String(user.id)]: { active_timestamp: await dateJoined(user), idle_timestamp: clock } }, id: 0 },
    ]);
    assert.deepEqual(await t.queuedEvents(admin, other), []);
    const [notification, ...more] = presenceNotifications();
    assert.equal(more.length, 0);
    assert.deepEqual([...notification!.userIds].sort((a, b) => a - b), await t.activeUserIds());
  });

  test("no event while the user stays online (writes or not); one when active after 130 s away", async () => {
    const user = await newUser("Steady");
    await report(user);
    t.clearEvents();
    // Pings every minute for five minutes: rows move, no events.
    for (let i = 0; i < 5; i++) {
      clock += 60;
      await report(user, { status: i % 2 === 0 ? "idle" : "active" });
    }
    assert.equal((await row(user))!.last_connected_time, clock);
    assert.deepEqual(presenceNotifications(), []);
    // Last active 130 s ago: not yet worth an event.
    await setTimes(user, 130, 130);
    await report(user);
    assert.deepEqual(presenceNotifications(), []);
    // 131 s: back online.
    await setTimes(user, 131, 131);
    await report(user);
    const events = presenceNotifications();
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.event.presence, { website: { client: "website", status: "active", timestamp: clock, pushable: false } });
  });

  test("coming back idle after a long absence is written but sends no event", async () => {
    const user = await newUser("Quiet");
    await report(user);
    clock += 3600;
    t.clearEvents();
    await report(user, { status: "idle" });
    assert.equal((await row(user))!.last_connected_time, clock);
    assert.deepEqual(presenceNotifications(), []);
  });

  test("the organization's presence_disabled: reports are stored, no event is sent", async () => {
    const user = await newUser("Unannounced");
    await withStoredRealmSetting("presence_disabled", true, async () => {
      await report(user);
      assert.equal((await row(user))!.last_active_time, clock);
      assert.deepEqual(presenceNotifications(), []);
    });
  });
});

describe("presence_enabled (invisible mode)", () => {
  test("turning it off moves the user's times back 265 s, so everyone sees them offline at once", async () => {
    const user = await newUser("Invisible");
    const watcher = (await t.register(u().owner, { event_types: ["presence"] })).queue_id;
    await report(user);
    const before = (await row(user))!;
    clock += 10;
    t.clearEvents();
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: false }));
    const after = (await row(user))!;
    assert.equal(after.last_connected_time, clock - 265);
    assert.equal(after.last_active_time, clock - 265);
    assert.ok(after.last_update_id > before.last_update_id);
    // Everyone is told, in an organization of any size.
    const [notification] = presenceNotifications();
    assert.deepEqual([...notification!.userIds].sort((a, b) => a - b), await t.activeUserIds());
    const events = await t.queuedEvents(u().owner, watcher);
    assert.deepEqual(events.at(-1).presence, { website: { client: "website", status: "active", timestamp: clock - 265, pushable: false } });
    const single = assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`)).presence;
    assert.equal(single.aggregated.status, "offline");

    // While it is off, reports change nothing; the reply still has the others.
    const other = await newUser("Visible");
    await report(other);
    clock += 120;
    t.clearEvents();
    const reply = await report(user, { last_update_id: -1 });
    assert.deepEqual(await row(user), after);
    assert.deepEqual(presenceNotifications(), []);
    assert.ok(String(other.id) in reply.presences);
    assert.deepEqual(reply.presences[String(user.id)], { active_timestamp: clock - 120 - 265, idle_timestamp: clock - 120 - 265 });

    // Back on: active now, and everyone is told.
    t.clearEvents();
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: true }));
    assert.equal((await row(user))!.last_active_time, clock);
    assert.equal(presenceNotifications().length, 1);
    assert.equal(presenceNotifications()[0]!.event.presence && (presenceNotifications()[0]!.event.presence as { website: { status: string } }).website.status, "active");
  });

  test("off without any presence yet, or with times already old: nothing written, no event", async () => {
    const fresh = await newUser("Never seen");
    assertSuccess(await t.api(fresh, "PATCH", "/settings", { presence_enabled: false }));
    assert.equal(await row(fresh), undefined);
    const old = await newUser("Long gone");
    await report(old);
    await setTimes(old, 100 * 86400, 100 * 86400);
    const stored = await row(old);
    t.clearEvents();
    assertSuccess(await t.api(old, "PATCH", "/settings", { presence_enabled: false }));
    assert.deepEqual(await row(old), stored);
    assert.deepEqual(presenceNotifications(), []);
    // An old activity with a recent connection: only the connection moves back.
    const mixed = await newUser("Mixed");
    await report(mixed);
    await setTimes(mixed, 1, 100 * 86400);
    assertSuccess(await t.api(mixed, "PATCH", "/settings", { presence_enabled: false }));
    const moved = (await row(mixed))!;
    assert.deepEqual([moved.last_connected_time, moved.last_active_time], [clock - 265, clock - 100 * 86400]);
  });

  test("turned off while a report waits for its batch: the batch stores nothing for it", async () => {
    const user = await newUser("Off meanwhile");
    await report(user);
    clock += 120;
    // The report was accepted with the user as they were (presence on); the setting changed before its batch ran.
    const accepted = await getUserById(db(), t.realm.id, user.id);
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: false }));
    const hidden = (await row(user))!;
    t.clearEvents();
    await reportPresence(t.services, t.realm, accepted!, "active");
    assert.deepEqual(await row(user), hidden);
    assert.deepEqual(presenceNotifications(), []);
  });

  test("a setting that does not change sends no presence event", async () => {
    const user = await newUser("Unchanged");
    await report(user);
    t.clearEvents();
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: true }));
    assert.deepEqual(presenceNotifications(), []);
  });
});

describe("the organization's presence_disabled", () => {
  test("every presence list is empty, with presence_last_update_id -1; single-user reads still answer", async () => {
    const user = await newUser("Hidden org");
    await report(user);
    await withStoredRealmSetting("presence_disabled", true, async () => {
      const modern = await report(u().member, { last_update_id: 5 });
      assert.deepEqual(modern.presences, {});
      assert.equal(modern.presence_last_update_id, -1);
      assert.deepEqual((await report(u().member)).presences, {});
      assert.deepEqual(assertSuccess(await t.api(u().member, "GET", "/realm/presence")).presences, {});
      const state = await t.register(u().member, { fetch_event_types: ["presence", "realm"] });
      assert.deepEqual(state.presences, {});
      assert.equal(state.presence_last_update_id, -1);
      assert.equal(state.realm_presence_disabled, true);
      // As in Zulip, the single-user endpoint does not look at the setting.
      assertSuccess(await t.api(u().member, "GET", `/users/${user.id}/presence`));
    });
  });
});

describe("POST /register: presences", () => {
  test("legacy by default, modern with slim_presence or simplified_presence_events; presence_last_update_id", async () => {
    const user = await newUser("Registered");
    await report(user);
    const email = await apiEmail(user);
    const legacy = await t.register(u().member, { fetch_event_types: ["presence"] });
    assert.deepEqual(legacy.presences, { [email]: legacyEntry("active", clock) });
    assert.equal(legacy.presence_last_update_id, (await row(user))!.last_update_id);
    assert.equal(legacy.server_timestamp, clock);
    const modern = { [String(user.id)]: { active_timestamp: clock, idle_timestamp: clock } };
    assert.deepEqual((await t.register(u().member, { fetch_event_types: ["presence"], slim_presence: true })).presences, modern);
    assert.deepEqual((await t.register(u().member, { fetch_event_types: ["presence"], client_capabilities: { simplified_presence_events: true } })).presences, modern);
  });

  test("presence_history_limit_days; -1 when nothing is returned", async () => {
    const user = await newUser("Week old");
    await report(user);
    await setTimes(user, 7 * 86400, 7 * 86400);
    const keys = async (params: Params) => Object.keys((await t.register(u().member, { fetch_event_types: ["presence"], slim_presence: true, ...params })).presences);
    assert.deepEqual(await keys({}), [String(user.id)]);
    assert.deepEqual(await keys({ presence_history_limit_days: 3 }), []);
    assert.deepEqual(await keys({ presence_history_limit_days: 8 }), [String(user.id)]);
    const none = await t.register(u().member, { fetch_event_types: ["presence"], presence_history_limit_days: 0 });
    assert.deepEqual(none.presences, {});
    assert.equal(none.presence_last_update_id, -1);
  });

  test("bots are never listed", async () => {
    const { bot } = u();
    await setTimes(bot, 0, 0);
    const state = await t.register(u().member, { fetch_event_types: ["presence"], slim_presence: true });
    assert.equal(String(bot.id) in state.presences, false);
    await db().deleteFrom("user_presence").where("user_id", "=", bot.id).execute();
  });
});

describe("guests outside can_access_all_users_group", () => {
  test("see and hear of only the people they share a conversation with", async () => {
    const guest = await newUser("Limited guest", Role.GUEST);
    const neighbour = await newUser("Neighbour");
    const stranger = await newUser("Stranger");
    await newChannel([guest, neighbour]);
    const everyone = await systemGroupId("role:everyone");
    const members = await systemGroupId("role:members");
    assertSuccess(await t.api(u().owner, "PATCH", "/realm", { can_access_all_users_group: { new: members } }));
    try {
      await report(neighbour);
      await report(stranger);
      const ids = (presences: Record<string, unknown>) => Object.keys(presences).sort();
      const reply = await report(guest, { last_update_id: -1 });
      assert.deepEqual(ids(reply.presences), [neighbour.id, guest.id].map(String).sort());
      const legacy = assertSuccess(await t.api(guest, "GET", "/realm/presence")).presences;
      assert.deepEqual(ids(legacy), [await apiEmail(neighbour), await apiEmail(guest)].sort());
      const state = await t.register(guest, { fetch_event_types: ["presence"], slim_presence: true });
      assert.deepEqual(ids(state.presences), [neighbour.id, guest.id].map(String).sort());
      assertSuccess(await t.api(guest, "GET", `/users/${neighbour.id}/presence`));
      assertError(await t.api(guest, "GET", `/users/${stranger.id}/presence`), 400, "BAD_REQUEST", "Insufficient permission");
      // Other guests (u().guest shares nothing with the stranger either) do not hear of the stranger coming back.
      clock += 3600;
      t.clearEvents();
      await report(stranger);
      await report(neighbour);
      const [strangerEvent, neighbourEvent] = presenceNotifications();
      assert.equal(strangerEvent!.event.user_id, stranger.id);
      assert.ok(!strangerEvent!.userIds.includes(guest.id));
      assert.ok(strangerEvent!.userIds.includes(u().member.id));
      assert.ok(neighbourEvent!.userIds.includes(guest.id));
      // A direct message makes them acquainted.
      assertSuccess(await t.api(stranger, "POST", "/messages", { type: "direct", to: JSON.stringify([guest.id]), content: "hello" }));
      assertSuccess(await t.api(guest, "GET", `/users/${stranger.id}/presence`));
    } finally {
      assertSuccess(await t.api(u().owner, "PATCH", "/realm", { can_access_all_users_group: { new: everyone } }));
    }
    // Within can_access_all_users_group, a guest sees everyone.
    assertSuccess(await t.api(guest, "GET", `/users/${stranger.id}/presence`));
  });
});

/**
 * The statements a report ran, without those of background work running meanwhile through the same
 * database object (a report may wait up to the batch window, presence-writes.ts): the delivery worker
 * looking for due scheduled messages, and the job runner.
 */
/**
 * statementsRun once the background jobs due are done: each test moves the
 * clock 30 days, which makes the daily digest check due, and its statements
 * would otherwise land among the counted ones whenever the job runner polls.
 */
async function statementsRunQuietly(...args: Parameters<typeof statementsRun>): ReturnType<typeof statementsRun> {
  await jobsSettled(t.services);
  return statementsRun(...args);
}

function ownStatements(run: readonly { query: unknown }[]): { query: unknown }[] {
  return run.filter((query) => !/\b(scheduled_messages|jobs)\b/.test(JSON.stringify(query.query)));
}

describe("the cost of a ping", () => {
  /**
   * Counts the queries Kysely runs (BEGIN and COMMIT are not queries), but not
   * those of the delivery worker, which looks for due scheduled messages every
   * second through the same database object.
   */
  async function queriesFor(user: TestUser, params: Params): Promise<number> {
    const run = await statementsRunQuietly(t.services.storage, () => report(user, params));
    return ownStatements(run).length;
  }

  test("authentication, the row read, and a write only when the row moves", async () => {
    const user = await newUser("Counted");
    await warmRowCache(t.services.storage, () => report(user));
    // Authentication's organization and user come from the process's row cache; the user's presence row is read.
    clock += 30;
    assert.equal(await queriesFor(user, { ping_only: true }), 1);
    // The write: the sequence bump and the update, in one transaction.
    clock += 30;
    assert.equal(await queriesFor(user, { ping_only: true }), 3);
    // The reply's presence list is one more query.
    clock += 30;
    assert.equal(await queriesFor(user, { last_update_id: -1 }), 2);
  });

  test("a warm ping, with or without its write, builds no query: every statement is prepared", async () => {
    /** Sees a statement only when its query tree is built and compiled (storage/compiled.ts skips that once prepared). */
    class Compiled implements KyselyPlugin {
      readonly tables: string[] = [];
      transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
        this.tables.push(/"kind":"IdentifierNode","name":"(\w+)"/.exec(JSON.stringify(args.node))?.[1] ?? "?");
        return args.node;
      }
      async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
        return args.result;
      }
    }
    const user = await newUser("Prepared");
    const other = await newUser("Prepared too");
    // Warm: each statement has run once, the write included.
    await report(other);
    clock += 60;
    await report(other, { ping_only: true });
    await warmRowCache(t.services.storage, () => report(user));
    for (const moves of [false, true]) {
      clock += moves ? 60 : 1;
      const plugin = new Compiled();
      const run = await statementsRunQuietly(t.services.storage, () => report(user, { ping_only: true }), plugin);
      const own = ownStatements(run);
      assert.equal(own.length, moves ? 3 : 1);
      assert.deepEqual(plugin.tables.filter((table) => table !== "scheduled_messages" && table !== "jobs"), [], `built for a ping${moves ? " that writes" : ""}`);
    }
  });
});

describe("batched reports", () => {
  const storage = () => t.services.storage;
  /** A report that moves the row to `times`, whatever it read. */
  const moveTo =
    (times: PresenceTimes) =>
    (current: PresenceTimes | undefined): PresencePlan =>
      current === undefined ? { kind: "create", times, becameOnline: true } : { kind: "update", times, becameOnline: false };
  const stay = (): PresencePlan => ({ kind: "none", becameOnline: false });
  const inBatch = (user: TestUser, plan: (current: PresenceTimes | undefined) => PresencePlan) => reportPresenceInBatch(storage(), { userId: user.id, realmId: t.realm.id, plan });
  const timesOf = (r: { last_connected_time: number | null; last_active_time: number | null }): PresenceTimes => ({ lastConnectedTime: r.last_connected_time, lastActiveTime: r.last_active_time });

  test("reports arriving together share one read, one transaction and one last_update_id; a user's second report in a batch is planned from the first's times and makes the write", async () => {
    const [a, b, c] = [await newUser("Batch A"), await newUser("Batch B"), await newUser("Batch C")];
    await report(a);
    await report(b);
    const [rowA, rowB] = [(await row(a))!, (await row(b))!];
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };
    let results: PresenceReportResult[] = [];
    const run = await statementsRunQuietly(storage(), async () => {
      results = await Promise.all([inBatch(a, moveTo(times)), inBatch(b, moveTo(times)), inBatch(c, moveTo(times)), inBatch(a, moveTo(times)), inBatch(b, stay)]);
    });
    assert.deepEqual(
      results.map((r) => r.written),
      [false, true, true, true, false],
    );
    // Each report saw the row as it was before the batch (C had none), but A's second saw what A's first planned, and B's last what B's first did.
    assert.deepEqual(results.map((r) => r.current), [timesOf(rowA), timesOf(rowB), undefined, times, times]);
    assert.deepEqual(results.map((r) => r.plan.kind), ["update", "update", "create", "update", "none"]);
    // One read of the three users' rows, the sequence bump, one INSERT (C) and one UPDATE (A and B).
    const own = ownStatements(run);
    assert.equal(own.length, 4);
    const after = await Promise.all([a, b, c].map(async (x) => (await row(x))!));
    assert.deepEqual(new Set(after.map((r) => r.last_update_id)).size, 1);
    assert.equal(after[0]!.last_update_id, Math.max(rowA.last_update_id, rowB.last_update_id) + 1);
    for (const r of after) assert.deepEqual([r.last_connected_time, r.last_active_time], [clock + 60, clock + 60]);
    // Reports that move nothing read and write nothing more.
    const quiet = await statementsRunQuietly(storage(), async () => {
      assert.deepEqual((await Promise.all([inBatch(a, stay), inBatch(b, stay)])).map((r) => r.written), [false, false]);
    });
    assert.equal(ownStatements(quiet).length, 1);
  });

  test("one client idle and another active in one batch: the row gets both, as if written one after the other", async () => {
    const [known, unknown, reversed] = [await newUser("Two clients"), await newUser("Two first clients"), await newUser("Two clients, active first")];
    await setTimes(known, 60, 60);
    await setTimes(reversed, 60, 60);
    const now = clock;
    const plan = (status: "idle" | "active") => (current: PresenceTimes | undefined) => planPresenceUpdate(current, status, now);
    const results = await Promise.all([
      inBatch(known, plan("idle")),
      inBatch(known, plan("active")),
      inBatch(unknown, plan("idle")),
      inBatch(unknown, plan("active")),
      inBatch(reversed, plan("active")),
      // Planned from the active report's times: it moves nothing more.
      inBatch(reversed, plan("idle")),
    ]);
    assert.deepEqual(
      results.map((r) => r.written),
      [false, true, false, true, true, false],
    );
    assert.equal(results[5]!.plan.kind, "none");
    for (const user of [known, unknown, reversed]) assert.deepEqual(timesOf((await row(user))!), { lastConnectedTime: now, lastActiveTime: now });
  });

  test("a write is guarded by the times read: a row another writer moved or created first is left as it is", async () => {
    const [one, fresh, two, three] = [await newUser("Guarded"), await newUser("Guarded fresh"), await newUser("Guarded stale"), await newUser("Guarded created")];
    for (const user of [one, fresh, two, three]) await report(user);
    const before = await Promise.all([one, fresh, two, three].map(async (user) => (await row(user))!));
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };
    const stale = { lastConnectedTime: 1, lastActiveTime: null };
    const apply = (writes: { userId: number; expected: PresenceTimes | undefined }[]) =>
      storage()
        .db.transaction()
        .execute((trx) => applyPresenceWrites(trx, t.realm.id, writes.map((w) => ({ ...w, realmId: t.realm.id, times }))));
    // One row: the prepared UPDATE.
    assert.deepEqual([...(await apply([{ userId: one.id, expected: stale }]))], []);
    assert.deepEqual(await row(one), before[0]);
    // Several: the multi-row UPDATE writes the fresh one only; an INSERT for a user who has a row writes nothing.
    assert.deepEqual(
      [...(await apply([
        { userId: fresh.id, expected: timesOf(before[1]!) },
        { userId: two.id, expected: stale },
        { userId: three.id, expected: undefined },
      ]))],
      [fresh.id],
    );
    assert.deepEqual(timesOf((await row(fresh))!), times);
    assert.deepEqual(await row(two), before[2]);
    assert.deepEqual(timesOf((await row(three))!), timesOf(before[3]!));
  });

  /** The rows as read by a batch that read them before another process wrote (`changes`: user ID → the times it had then). */
  async function staleRows(userIds: number[], changes: Map<number, PresenceTimes | undefined>): Promise<{ actual: Map<number, PresenceReportRow>; stale: Map<number, PresenceReportRow> }> {
    const actual = await presenceReportRows(db(), userIds);
    const stale = new Map([...actual].map(([userId, r]) => [userId, changes.has(userId) ? { presenceEnabled: true, times: changes.get(userId) } : r]));
    return { actual, stale };
  }
  const longAgo = () => ({ lastConnectedTime: clock - 3600, lastActiveTime: clock - 3600 });

  test("a row another process moved or created between the read and the write: its reports are planned again from the row as it is now", async () => {
    const [moved, created, steady] = [await newUser("Moved meanwhile"), await newUser("Created meanwhile"), await newUser("Not moved")];
    for (const user of [moved, created, steady]) await setTimes(user, 120, 120);
    const { actual, stale } = await staleRows(
      [moved.id, created.id, steady.id],
      new Map([
        [moved.id, longAgo()],
        [created.id, undefined],
      ]),
    );
    const reads: number[][] = [];
    const read = async (userIds: number[]) => {
      reads.push([...userIds].sort((a, b) => a - b));
      return reads.length === 1 ? stale : presenceReportRows(db(), userIds);
    };
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };
    const seen = new Map<number, (PresenceTimes | undefined)[]>();
    const recorded = (user: TestUser) => ({
      userId: user.id,
      realmId: t.realm.id,
      plan: (current: PresenceTimes | undefined) => {
        seen.set(user.id, [...(seen.get(user.id) ?? []), current]);
        return moveTo(times)(current);
      },
    });
    const results = await writeReportBatch(t.services.storage, t.realm.id, [recorded(moved), recorded(created), recorded(steady), recorded(moved)], read);
    assert.deepEqual(results.map((r) => r.written), [false, true, true, true]);
    // The second read is of the two users whose guard missed; their reports saw the rows as they are, in order.
    assert.deepEqual(reads[1], [moved.id, created.id].sort((a, b) => a - b));
    assert.deepEqual(seen.get(moved.id), [stale.get(moved.id)!.times, times, actual.get(moved.id)!.times, times]);
    assert.deepEqual(seen.get(created.id), [undefined, actual.get(created.id)!.times]);
    assert.deepEqual(seen.get(steady.id), [actual.get(steady.id)!.times]);
    assert.deepEqual(results.map((r) => r.plan.kind), ["update", "update", "update", "update"]);
    for (const user of [moved, created, steady]) assert.deepEqual(timesOf((await row(user))!), times);
  });

  test("a row moved again after the second read is left to that other writer; so is one whose second round fails", async () => {
    const [twice, failing, fine] = [await newUser("Moved twice"), await newUser("Second round fails"), await newUser("First round fine")];
    for (const user of [twice, failing, fine]) await setTimes(user, 120, 120);
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };

    const before = (await row(twice))!;
    const { stale } = await staleRows([twice.id], new Map([[twice.id, longAgo()]]));
    let reads = 0;
    let plans = 0;
    const [result] = await writeReportBatch(
      t.services.storage,
      t.realm.id,
      [{ userId: twice.id, realmId: t.realm.id, plan: (current) => (plans++, moveTo(times)(current)) }],
      async () => (reads++, stale),
    );
    assert.equal(result!.written, false);
    assert.deepEqual([reads, plans], [2, 2]);
    assert.deepEqual(await row(twice), before);

    // The first round committed the others' rows: they are answered as written, whatever befalls the second.
    const failingBefore = (await row(failing))!;
    const first = await staleRows([failing.id, fine.id], new Map([[failing.id, longAgo()]]));
    let failingReads = 0;
    const results = await writeReportBatch(
      t.services.storage,
      t.realm.id,
      [failing, fine].map((user) => ({ userId: user.id, realmId: t.realm.id, plan: moveTo(times) })),
      async () => {
        if (failingReads++ > 0) throw new Error("connection lost");
        return first.stale;
      },
    );
    assert.deepEqual(results.map((r) => r.written), [false, true]);
    assert.deepEqual(await row(failing), failingBefore);
    assert.deepEqual(timesOf((await row(fine))!), times);
  });

  test("presence_enabled turned off before the batch's read, or between its read and its write (the guard misses): nothing stored", async () => {
    const [off, between, on] = [await newUser("Off before"), await newUser("Off between"), await newUser("Still on")];
    for (const user of [off, between, on]) await setTimes(user, 120, 120);
    const { stale } = await staleRows([between.id], new Map([[between.id, longAgo()]]));
    for (const user of [off, between]) assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: false }));
    const hidden = await Promise.all([off, between].map(async (user) => (await row(user))!));
    let reads = 0;
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };
    const results = await writeReportBatch(
      t.services.storage,
      t.realm.id,
      [off, between, on].map((user) => ({ userId: user.id, realmId: t.realm.id, plan: moveTo(times) })),
      async (userIds) => {
        const rows = await presenceReportRows(db(), userIds);
        // The first read: `between` as it was before the setting changed.
        if (reads++ === 0) rows.set(between.id, stale.get(between.id)!);
        return rows;
      },
    );
    assert.deepEqual(results.map((r) => [r.plan.kind, r.written]), [["none", false], ["none", false], ["update", true]]);
    assert.equal(reads, 2);
    assert.deepEqual(await Promise.all([off, between].map(async (user) => (await row(user))!)), hidden);
    assert.deepEqual(timesOf((await row(on))!), times);
  });

  test("a whole batch waiting goes at once, without waiting for its window's end", { timeout: 20_000 }, async () => {
    const user = await newUser("Burst");
    await inBatch(user, stay);
    // Its batch has ended (the writer is idle) and the window after it is open: no timer is let fire from here on.
    await new Promise((resolve) => setImmediate(resolve));
    mock.timers.enable({ apis: ["setTimeout"] });
    try {
      const burst = Array.from({ length: MAX_BATCH + 1 }, () => inBatch(user, stay));
      // The first MAX_BATCH go at once; the one left over has waited its window already and follows them.
      assert.equal((await Promise.all(burst)).length, MAX_BATCH + 1);
    } finally {
      mock.timers.reset();
    }
  });

  test("reports arriving one by one just after a batch wait for the rest of its window and share the next transaction", async () => {
    const [a, b, c] = [await newUser("Window A"), await newUser("Window B"), await newUser("Window C")];
    const times = { lastConnectedTime: clock + 60, lastActiveTime: clock + 60 };
    assert.equal((await inBatch(a, moveTo(times))).written, true);
    // A's batch has just committed: B comes at once, C a turn of the event loop later (at a steady pace each would be alone).
    const first = inBatch(b, moveTo(times));
    await new Promise((resolve) => setImmediate(resolve));
    const second = inBatch(c, moveTo(times));
    assert.deepEqual((await Promise.all([first, second])).map((r) => r.written), [true, true]);
    const [rowA, rowB, rowC] = await Promise.all([a, b, c].map(async (x) => (await row(x))!));
    assert.equal(rowB!.last_update_id, rowA!.last_update_id + 1);
    assert.equal(rowC!.last_update_id, rowB!.last_update_id);
  });
});

describe("big organizations", () => {
  test("above 100 recipients, coming online sends no event; presence_enabled changes still do", async () => {
    const active = (await t.activeUserIds()).length;
    await db()
      .transaction()
      .execute(async (trx) => {
        for (let i = active; i <= 100; i++) {
          await insertUser(trx, t.services, t.realm, { email: `crowd${i}@example.com`, fullName: `Crowd ${i}`, passwordHash: null, role: Role.MEMBER });
        }
      });
    assert.equal((await t.activeUserIds()).length, 101);
    const user = await newUser("Crowded");
    await report(user);
    assert.ok((await row(user)) !== undefined);
    assert.deepEqual(presenceNotifications(), []);
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: false }));
    assert.equal(presenceNotifications()[0]!.userIds.length, 102);
  });
});
