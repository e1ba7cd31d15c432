// The organization's presence served from its snapshot
// (src/queries/presence-snapshot.ts): replies byte for byte what
// JSON.stringify makes of realmPresence's answer after writes, in both
// formats and as last_update_id deltas; a limited guest's filtered view;
// deactivation and reactivation; another process's change in the next reply
// (test/helpers.ts startPeer: same database, and with REDIS_URL the same
// Redis); and what a reply costs in statements and rows read, whatever the
// organization's size.
//
// Time: the app's clock (services.now) is a variable the tests move; each
// test starts a month after the previous one, so earlier reports are older
// than the 14 days presence lists cover.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from "kysely";
import { applyPresenceWrites } from "../src/actions/presence-writes.ts";
import { insertUser } from "../src/actions/users.ts";
import { parseRealmSettings } from "../src/domain/realm-settings.ts";
import { Role } from "../src/domain/roles.ts";
import { SystemGroup } from "../src/domain/system-groups.ts";
import { presenceVisibleTo, realmPresence, type RealmPresenceRequest } from "../src/queries/presence.ts";
import { assertSuccess, basicAuth, jobsSettled, startTestApp, type Params, type PeerServer, type TestApp, type TestUser } from "./helpers.ts";
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
});

const db = () => t.services.storage.db;

let counter = 0;
async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

/** POST /users/me/presence's raw reply body, from the main app or `base`'s. */
async function rawReport(user: TestUser, params: Params = {}, base: string = t.url): Promise<string> {
  const body = new URLSearchParams(Object.entries({ status: "active", ...params }).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
  const response = await fetch(`${base}/api/v1/users/me/presence`, {
    method: "POST",
    headers: { authorization: basicAuth(user.email, user.apiKey), "content-type": "application/x-www-form-urlencoded" },
    body: body.toString(),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
  return text;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function report(user: TestUser, params: Params = {}): Promise<any> {
  return JSON.parse(await rawReport(user, params));
}

/** The reply body realmPresence's answer makes, as the route built it before the snapshot. */
async function expectedBody(viewer: TestUser, asked: Omit<RealmPresenceRequest, "now" | "visible">): Promise<string> {
  const realm = await db().selectFrom("realms").selectAll().where("id", "=", t.realm.id).executeTakeFirstOrThrow();
  const settings = parseRealmSettings(realm.settings);
  const viewerRow = await db().selectFrom("users").select(["id", "role"]).where("id", "=", viewer.id).executeTakeFirstOrThrow();
  const visible = await presenceVisibleTo(db(), settings, viewerRow);
  const { presences, lastUpdateId } = await realmPresence(db(), t.realm.id, settings, { ...asked, now: clock, visible });
  return JSON.stringify({ result: "success", msg: "", presences, server_timestamp: clock, presence_last_update_id: lastUpdateId });
}

async function updateIdOf(user: TestUser): Promise<number> {
  return (await db().selectFrom("user_presence").select("last_update_id").where("user_id", "=", user.id).executeTakeFirstOrThrow()).last_update_id;
}

describe("replies from the snapshot", () => {
  test("byte for byte realmPresence's answer after writes: legacy, slim, deltas", async () => {
    const people = [await newUser("Snap"), await newUser("Snap"), await newUser("Snap"), await newUser("Snap")];
    const viewer = await newUser("Snap viewer");
    for (const person of people) await report(person, { ping_only: true });
    // Idle, and later active again: the two formats differ for an idle user.
    clock += 100;
    await report(people[1]!, { status: "idle", ping_only: true });
    await report(people[2]!, { ping_only: true });
    const check = async (params: Params, asked: Omit<RealmPresenceRequest, "now" | "visible">) => {
      // The reply's own report comes first: the expectation is read after it, each time from the database.
      const body = await rawReport(viewer, params);
      assert.equal(body, await expectedBody(viewer, asked));
      return body;
    };
    await check({}, { slim: false });
    await check({ slim_presence: true }, { slim: true });
    await check({ history_limit_days: 1 }, { slim: false, historyLimitDays: 1 });
    const base = await updateIdOf(people[0]!);
    await check({ last_update_id: base }, { slim: true, lastUpdateId: base });
    // Written after the lists were cached: the next lists have it.
    clock += 60;
    await report(people[3]!, { status: "idle", ping_only: true });
    await check({}, { slim: false });
    await check({ slim_presence: true }, { slim: true });
    await check({ last_update_id: base }, { slim: true, lastUpdateId: base });
    // A cached list is served again while nothing changes (the viewer's own report moves nothing within 55 s).
    clock += 1;
    const again = await check({}, { slim: false });
    assert.equal(await rawReport(viewer), again);
    // GET /realm/presence: the legacy list without presence_last_update_id.
    const realmReply = assertSuccess(await t.api(viewer, "GET", "/realm/presence"));
    const expected = JSON.parse(await expectedBody(viewer, { slim: false }));
    assert.deepEqual(realmReply, { result: "success", msg: "", presences: expected.presences, server_timestamp: clock });
  });

  test("last_update_id: only the changes after it, and the newest number among them (else the client's own)", async () => {
    const a = await newUser("Delta");
    const b = await newUser("Delta");
    const viewer = await newUser("Delta viewer");
    await report(viewer, { ping_only: true });
    await report(a, { ping_only: true });
    const afterA = await updateIdOf(a);
    await report(b, { ping_only: true });
    const afterB = await updateIdOf(b);
    const delta = await report(viewer, { last_update_id: afterA });
    assert.deepEqual(delta.presences, { [String(b.id)]: { active_timestamp: clock, idle_timestamp: clock } });
    assert.equal(delta.presence_last_update_id, afterB);
    const nothing = await report(viewer, { last_update_id: afterB });
    assert.deepEqual(nothing.presences, {});
    assert.equal(nothing.presence_last_update_id, afterB);
    // A change after the history limit is still sent to a client that has data.
    clock += 20 * 86400;
    const old = await report(viewer, { last_update_id: afterA, history_limit_days: 1 });
    assert.ok(String(b.id) in old.presences);
  });

  test("a guest outside can_access_all_users_group gets only the people they share a conversation with", async () => {
    const guest = await newUser("Snap guest", Role.GUEST);
    const neighbour = await newUser("Snap neighbour");
    const stranger = await newUser("Snap stranger");
    counter += 1;
    assertSuccess(
      await t.api(t.users.admin, "POST", "/users/me/subscriptions", {
        subscriptions: [{ name: `snapshot channel ${counter}` }],
        principals: [guest.id, neighbour.id],
        send_new_subscription_messages: false,
      }),
    );
    const groups = await t.systemGroupIds();
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_access_all_users_group: { new: groups[SystemGroup.MEMBERS] } }));
    try {
      for (const person of [neighbour, stranger, guest]) await report(person, { ping_only: true });
      const legacy = await rawReport(guest);
      assert.equal(legacy, await expectedBody(guest, { slim: false }));
      const modern = JSON.parse(await rawReport(guest, { slim_presence: true }));
      assert.deepEqual(Object.keys(modern.presences), [String(guest.id), String(neighbour.id)].sort((x, y) => Number(x) - Number(y)));
      const delta = JSON.parse(await rawReport(guest, { last_update_id: (await updateIdOf(neighbour)) - 1 }));
      assert.equal(String(stranger.id) in delta.presences, false);
      assert.ok(String(neighbour.id) in delta.presences);
      // The members' lists, from the same snapshot, still have everyone.
      assert.ok(String(stranger.id) in (await report(neighbour, { slim_presence: true })).presences);
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_access_all_users_group: { new: groups[SystemGroup.EVERYONE] } }));
    }
  });

  test("a deactivated user leaves the lists at once; reactivated, they are back", async () => {
    const leaving = await newUser("Leaving");
    const viewer = await newUser("Leave viewer");
    await report(leaving, { ping_only: true });
    const before = await report(viewer, { slim_presence: true });
    assert.ok(String(leaving.id) in before.presences);
    const since = before.presence_last_update_id as number;
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${leaving.id}`));
    assert.equal(String(leaving.id) in (await report(viewer, { slim_presence: true })).presences, false);
    assert.equal(await rawReport(viewer), await expectedBody(viewer, { slim: false }));
    assertSuccess(await t.api(t.users.admin, "POST", `/users/${leaving.id}/reactivate`));
    assert.ok(String(leaving.id) in (await report(viewer, { slim_presence: true })).presences);
    // Renumbered: a client with data hears of the reactivated user.
    assert.ok(String(leaving.id) in (await report(viewer, { last_update_id: since })).presences);
    assert.equal(await rawReport(viewer), await expectedBody(viewer, { slim: false }));
  });

  test("a user whose API email changes (email visibility to and from everyone) is listed under the new one at once", async () => {
    const renamed = await newUser("Renamed");
    const viewer = await newUser("Rename viewer");
    await report(renamed, { ping_only: true });
    const emailOf = async () => (await db().selectFrom("users").select("email").where("id", "=", renamed.id).executeTakeFirstOrThrow()).email;
    const hidden = await emailOf();
    assert.ok(hidden in (await report(viewer)).presences);
    assertSuccess(await t.api(renamed, "PATCH", "/settings", { email_address_visibility: 1 }));
    const shown = await emailOf();
    assert.notEqual(shown, hidden);
    const legacy = (await report(viewer)).presences;
    assert.ok(shown in legacy && !(hidden in legacy), Object.keys(legacy).join(" "));
    assert.equal(await rawReport(viewer), await expectedBody(viewer, { slim: false }));
    assertSuccess(await t.api(renamed, "PATCH", "/settings", { email_address_visibility: 3 }));
    assert.ok(hidden in (await report(viewer)).presences);
    assert.equal(await rawReport(viewer), await expectedBody(viewer, { slim: false }));
  });

  test("a row changed behind the server's back (an operator's SQL) is read again within the ping interval", async () => {
    const user = await newUser("Edited");
    const viewer = await newUser("Edit viewer");
    await report(user, { ping_only: true });
    await report(viewer, { slim_presence: true });
    await db().updateTable("user_presence").set({ last_active_time: clock - 30, last_connected_time: clock - 30 }).where("user_id", "=", user.id).execute();
    clock += 60;
    const reply = await report(viewer, { slim_presence: true });
    assert.deepEqual(reply.presences[String(user.id)], { active_timestamp: clock - 90, idle_timestamp: clock - 90 });
  });
});

describe("several processes on one database", () => {
  let peer: PeerServer;
  before(async () => {
    peer = await t.startPeer();
    peer.services.now = () => clock;
  });
  after(() => peer?.close());

  test("a report another process wrote is in this process's next reply: lists and deltas", async () => {
    const here = await newUser("Here");
    const there = await newUser("There");
    await report(here, { ping_only: true });
    // Both processes hold a snapshot (and a cached list).
    const first = await report(here);
    JSON.parse(await rawReport(there, {}, peer.url));
    const since = first.presence_last_update_id as number;
    clock += 100;
    // Written through the peer: idle.
    await rawReport(there, { status: "idle", ping_only: true }, peer.url);
    const list = await report(here, { slim_presence: true });
    assert.deepEqual(list.presences[String(there.id)], { active_timestamp: clock - 100, idle_timestamp: clock });
    // The peer's write, and this report's own.
    const delta = await report(here, { last_update_id: since });
    assert.deepEqual(Object.keys(delta.presences), [here.id, there.id].sort((x, y) => x - y).map(String));
    assert.equal(await rawReport(here), await expectedBody(here, { slim: false }));
    // And the other way round; and a deactivation done by the peer.
    clock += 100;
    await report(here, { ping_only: true });
    const peerView = JSON.parse(await rawReport(there, { slim_presence: true }, peer.url));
    assert.deepEqual(peerView.presences[String(here.id)], { active_timestamp: clock, idle_timestamp: clock });
    assertSuccess(await peer.api(t.users.admin, "DELETE", `/users/${there.id}`));
    assert.equal(String(there.id) in (await report(here, { slim_presence: true })).presences, false);
  });
});

describe("an organization of several blocks (256 users each)", () => {
  test("whole blocks and users picked from the others make the same bytes as the query", async () => {
    // 700 users in batches of 50 (one number each), connected from 0 to 20 days ago, some idle.
    const ids: number[] = [];
    await db()
      .transaction()
      .execute(async (trx) => {
        for (let i = 0; i < 700; i++) {
          const user = await insertUser(trx, t.services, t.realm, { email: `block${i}@example.com`, fullName: `Block ${i}`, passwordHash: null, role: Role.MEMBER });
          ids.push(user.id);
        }
      });
    const numbers: number[] = [];
    for (let batch = 0; batch < 14; batch++) {
      const writes = ids.slice(batch * 50, batch * 50 + 50).map((userId, k) => {
        const connected = clock - ((batch * 50 + k) % 7) * 3 * 86400;
        return { userId, realmId: t.realm.id, expected: undefined, times: { lastConnectedTime: connected, lastActiveTime: k % 3 === 0 ? connected - 3600 : connected } };
      });
      await db().transaction().execute((trx) => applyPresenceWrites(trx, t.realm.id, writes));
      numbers.push(Number((await db().selectFrom("presence_sequences").select("last_update_id").where("realm_id", "=", t.realm.id).executeTakeFirstOrThrow()).last_update_id));
    }
    const viewer = await newUser("Block viewer");
    const compare = async (params: Params, asked: Omit<RealmPresenceRequest, "now" | "visible">) => assert.equal(await rawReport(viewer, params), await expectedBody(viewer, asked));
    await compare({}, { slim: false });
    await compare({ slim_presence: true }, { slim: true });
    await compare({ history_limit_days: 10 }, { slim: false, historyLimitDays: 10 });
    await compare({ slim_presence: true, history_limit_days: 30 }, { slim: true, historyLimitDays: 30 });
    for (const number of [numbers[0]!, numbers[4]!, numbers[6]! - 1, numbers[13]!]) await compare({ last_update_id: number }, { slim: true, lastUpdateId: number });
    // Changes to users in two blocks, one deactivated: those blocks are made again, the others kept.
    clock += 60;
    const stored = async (userId: number) => {
      const r = await db().selectFrom("user_presence").select(["last_connected_time", "last_active_time"]).where("user_id", "=", userId).executeTakeFirstOrThrow();
      return { lastConnectedTime: r.last_connected_time, lastActiveTime: r.last_active_time };
    };
    const moves = [
      { userId: ids[3]!, realmId: t.realm.id, expected: await stored(ids[3]!), times: { lastConnectedTime: clock, lastActiveTime: clock } },
      { userId: ids[600]!, realmId: t.realm.id, expected: await stored(ids[600]!), times: { lastConnectedTime: clock, lastActiveTime: clock - 60 } },
    ];
    const written = await db().transaction().execute((trx) => applyPresenceWrites(trx, t.realm.id, moves));
    assert.equal(written.size, 2);
    assert.equal((await report(viewer, { slim_presence: true })).presences[String(ids[3])].idle_timestamp, clock);
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${ids[300]}`));
    await compare({}, { slim: false });
    await compare({ slim_presence: true }, { slim: true });
    await compare({ last_update_id: numbers[6]! }, { slim: true, lastUpdateId: numbers[6]! });
  });
});

describe("what a reply costs", () => {
  /** Counts the statements run and the rows they return, but not the delivery worker's (scheduled messages). */
  class Counter implements KyselyPlugin {
    rows = 0;
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      return args.node;
    }
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (!JSON.stringify(args.result.rows).includes('"scheduled_at"')) this.rows += args.result.rows.length;
      return args.result;
    }
  }

  async function costOf(user: TestUser, params: Params): Promise<{ statements: number; rows: number }> {
    // The background jobs due first (the clock moves in these tests): a job run by the runner's poll would land among the counted statements.
    await jobsSettled(t.services);
    const counter = new Counter();
    const run = await statementsRun(t.services.storage, () => rawReport(user, params), counter);
    return { statements: run.filter((query) => !JSON.stringify(query.query).includes('"scheduled_messages"')).length, rows: counter.rows };
  }

  test("the user's row and the rows changed since the snapshot: never the organization, nor (warm) authentication's rows", async () => {
    const crowd: TestUser[] = [];
    for (let i = 0; i < 12; i++) crowd.push(await newUser("Crowd"));
    const viewer = await newUser("Cost viewer");
    for (const person of crowd) await report(person, { ping_only: true });
    await report(viewer, { ping_only: true });
    // Brings the snapshot up to date (and caches the list), and leaves authentication's rows in the row cache.
    await warmRowCache(t.services.storage, () => report(viewer));
    // Authentication from the row cache (no statement), the viewer's row (1), the changes since (none).
    clock += 1;
    assert.deepEqual(await costOf(viewer, {}), { statements: 2, rows: 1 });
    assert.deepEqual(await costOf(viewer, { slim_presence: true }), { statements: 2, rows: 1 });
    assert.deepEqual(await costOf(viewer, { last_update_id: await updateIdOf(crowd[0]!) }), { statements: 2, rows: 1 });
    // Two users' rows written since (the viewer's and one other): two more rows, whatever the organization's size.
    // (56 s: the reports write; the snapshot, 57 s old, is not yet read anew.)
    clock += 56;
    await report(viewer, { ping_only: true });
    await report(crowd[5]!, { ping_only: true });
    assert.deepEqual(await costOf(viewer, {}), { statements: 2, rows: 1 + 2 });
    // ping_only builds no reply: the row read (the write above: the sequence and the row).
    clock += 1;
    assert.deepEqual(await costOf(viewer, { ping_only: true }), { statements: 1, rows: 1 });
  });
});
