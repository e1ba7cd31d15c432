// Event delivery through real queues: for every kind of change, exactly the
// right users receive exactly the right events, and everyone else nothing.
// Each test creates what it needs, registers a fresh queue (POST /register,
// every event type, a modern client's capabilities) for one user of every
// role, the bot and an extra member, makes the change over HTTP, and then
// reads every queue (GET /events).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertSuccess, sortedIds, startTestApp, uniqueName, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Queues

const CAPABILITIES = {
  notification_settings_null: true,
  archived_channels: true,
  include_deactivated_groups: true,
  user_settings_object: true,
};

/** Who listens: the six standing users, and usually the test's extra member. */
type Listener = "owner" | "admin" | "moderator" | "member" | "guest" | "bot" | "extra";
const STANDING = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;

// Events are read as clients read them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Event = any;
type Received = Record<Listener, Event[]>;

interface Queues {
  users: Partial<Record<Listener, TestUser>>;
  /** Every event each queue holds. */
  read(): Promise<Received>;
  close(): Promise<void>;
}

/** Registers a fresh queue for each standing user and for `extra` (if given and able to log in). */
async function listen(extra: TestUser | null): Promise<Queues> {
  const users: Partial<Record<Listener, TestUser>> = { ...t.users };
  if (extra) users.extra = extra;
  const ids = new Map<Listener, string>();
  for (const [name, user] of Object.entries(users) as [Listener, TestUser][]) {
    const body = await t.register(user, { event_types: null, client_capabilities: CAPABILITIES });
    assert.equal(body.last_event_id, -1);
    ids.set(name, body.queue_id);
  }
  return {
    users,
    read: async () => {
      const received = {} as Received;
      for (const [name, queueId] of ids) received[name] = await t.queuedEvents(users[name]!, queueId);
      return received;
    },
    close: async () => {
      for (const [name, queueId] of ids) await t.api(users[name]!, "DELETE", "/events", { queue_id: queueId });
    },
  };
}

/** "type/op" (or just "type") of each event, in order. */
const kinds = (events: Event[]): string[] => events.map((e) => (e.op === undefined ? e.type : `${e.type}/${e.op}`));

/**
 * Asserts, for every listener, the exact list of event kinds received;
 * listeners not named in `expected` must have received nothing.
 */
function assertKinds(received: Received, expected: Partial<Record<Listener, string[]>>, options: { anyOrder?: boolean; except?: Listener[] } = {}): void {
  for (const name of Object.keys(received) as Listener[]) {
    if (options.except?.includes(name)) continue;
    let got = kinds(received[name]);
    let want = expected[name] ?? [];
    if (options.anyOrder) {
      got = [...got].sort();
      want = [...want].sort();
    }
    assert.deepEqual(got, want, `events of ${name}: ${JSON.stringify(received[name])}`);
  }
}

/** The one event of `kind` a listener received (asserting there is exactly one). */
function one(received: Received, name: Listener, kind: string): Event {
  const matching = received[name].filter((e) => kinds([e])[0] === kind);
  assert.equal(matching.length, 1, `${name} should have exactly one ${kind}: ${JSON.stringify(received[name])}`);
  return matching[0];
}

function all(received: Received, name: Listener, kind: string): Event[] {
  return received[name].filter((e) => kinds([e])[0] === kind);
}

const EVERYONE: readonly Listener[] = [...STANDING, "extra"];
const NON_GUESTS: readonly Listener[] = EVERYONE.filter((n) => n !== "guest");

/** The same list of kinds for each of `names`. */
function each(names: readonly Listener[], list: string[]): Partial<Record<Listener, string[]>> {
  return Object.fromEntries(names.map((n) => [n, list]));
}

// ---------------------------------------------------------------------------
// Fixtures

const FAKE_DOMAIN = "parley.test";

async function extraMember(role: number = Role.MEMBER): Promise<TestUser> {
  return t.createUser(uniqueName("Extra"), role);
}

async function channelId(name: string): Promise<number> {
  const row = await t.services.storage.db
    .selectFrom("channels")
    .select("id")
    .where("realm_id", "=", t.realm.id)
    .where("name", "=", name)
    .executeTakeFirstOrThrow();
  return row.id;
}

interface ChannelRef {
  id: number;
  name: string;
}

/** Creates a channel as `actor` through POST /users/me/subscriptions (subscribing `principals`, else the actor). */
async function createChannel(actor: TestUser, options: { private?: boolean; principals?: number[]; params?: Params } = {}): Promise<ChannelRef> {
  const name = uniqueName("delivery channel");
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      invite_only: options.private ?? false,
      // The Notification Bot's "subscribed you" messages are tested in notification-bot.test.ts.
      send_new_subscription_messages: false,
      ...(options.principals ? { principals: options.principals } : {}),
      ...options.params,
    }),
  );
  return { id: await channelId(name), name };
}

async function subscribeUsers(actor: TestUser, channel: ChannelRef, principals: number[]): Promise<void> {
  assertSuccess(await t.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals, send_new_subscription_messages: false }));
}

async function createGroup(actor: TestUser, members: number[]): Promise<{ id: number; name: string }> {
  const name = uniqueName("delivery group");
  const body = assertSuccess(await t.api(actor, "POST", "/user_groups/create", { name, description: "for event delivery", members }));
  return { id: body.group_id, name };
}

// ---------------------------------------------------------------------------
// Users

describe("users", () => {
  test("POST /users: realm_user add to every active user, the real email only to administrators; system-group add_members to all", async () => {
    const q = await listen(await extraMember());
    const fullName = uniqueName("Created");
    const email = `${fullName.toLowerCase().replace(/[^a-z0-9]+/g, "-")}@example.com`;
    const id = assertSuccess(await t.api(t.users.admin, "POST", "/users", { email, password: "created-password", full_name: fullName })).user_id;
    const got = await q.read();
    const sys = await t.systemGroupIds();

    for (const name of EVERYONE) {
      const { person } = one(got, name, "realm_user/add");
      assert.equal(person.user_id, id);
      assert.equal(person.full_name, fullName);
      assert.equal(person.email, `user${id}@${FAKE_DOMAIN}`, `${name}: API email`);
      assert.equal(person.is_active, true);
      assert.equal(person.role, Role.MEMBER);
      // The default email_address_visibility is "administrators".
      const seesRealEmail = name === "owner" || name === "admin";
      assert.equal(person.delivery_email, seesRealEmail ? email : null, `${name}: delivery_email`);
    }
    // As Zulip's do_create_user: the new member joins role:members and role:fullmembers (waiting period 0).
    for (const name of EVERYONE) {
      const adds = all(got, name, "user_group/add_members");
      assert.deepEqual(
        adds.map((e) => e.group_id).sort((a: number, b: number) => a - b),
        sortedIds([sys["role:members"]!, sys["role:fullmembers"]!]),
        `${name}: add_members events ${JSON.stringify(got[name])}`,
      );
      for (const e of adds) assert.deepEqual(e.user_ids, [id]);
    }
    assertKinds(got, each(EVERYONE, ["realm_user/add", "user_group/add_members", "user_group/add_members"]));
    await q.close();
  });

  test("PATCH /users/{id} full_name: realm_user update to every active user", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    const fullName = uniqueName("Renamed");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${extra.id}`, { full_name: fullName }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["realm_user/update"]));
    for (const name of EVERYONE) assert.deepEqual(got[name][0].person, { user_id: extra.id, full_name: fullName });
    await q.close();
  });

  test("PATCH /users/{id} role member → moderator: realm_user update and system-group membership changes to all", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${extra.id}`, { role: Role.MODERATOR }));
    const got = await q.read();
    const sys = await t.systemGroupIds();
    for (const name of EVERYONE) {
      assert.deepEqual(one(got, name, "realm_user/update").person, { user_id: extra.id, role: Role.MODERATOR }, name);
      const removed = all(got, name, "user_group/remove_members");
      const added = all(got, name, "user_group/add_members");
      assert.deepEqual(removed.map((e) => e.group_id).sort((a: number, b: number) => a - b), sortedIds([sys["role:members"]!, sys["role:fullmembers"]!]), name);
      assert.deepEqual(added.map((e) => e.group_id), [sys["role:moderators"]], name);
      for (const e of [...removed, ...added]) assert.deepEqual(e.user_ids, [extra.id]);
    }
    assertKinds(got, each(EVERYONE, ["realm_user/update", "user_group/remove_members", "user_group/remove_members", "user_group/add_members"]), { anyOrder: true });
    await q.close();
  });

  test("PATCH /users/{id} role guest → member: group changes to all, and the promoted user learns of every public channel", async () => {
    // At least one public channel the guest cannot see yet.
    const channel = await createChannel(t.users.member);
    const extra = await extraMember(Role.GUEST);
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${extra.id}`, { role: Role.MEMBER }));
    const got = await q.read();
    const sys = await t.systemGroupIds();

    const groupKinds = ["realm_user/update", "user_group/remove_members", "user_group/add_members", "user_group/add_members"];
    for (const name of EVERYONE) {
      assert.deepEqual(one(got, name, "realm_user/update").person, { user_id: extra.id, role: Role.MEMBER }, name);
      assert.deepEqual(all(got, name, "user_group/remove_members").map((e) => e.group_id), [sys["role:everyone"]], name);
      assert.deepEqual(
        all(got, name, "user_group/add_members").map((e) => e.group_id).sort((a: number, b: number) => a - b),
        sortedIds([sys["role:members"]!, sys["role:fullmembers"]!]),
        name,
      );
    }
    assertKinds(got, each(STANDING, groupKinds), { anyOrder: true, except: ["extra"] });

    // The promoted user: every non-archived public channel, then its subscribers.
    const publicChannels = await t.services.storage.db
      .selectFrom("channels")
      .select("id")
      .where("realm_id", "=", t.realm.id)
      .where("is_archived", "=", false)
      .where("invite_only", "=", false)
      .where("is_web_public", "=", false)
      .execute();
    const expectedIds = sortedIds(publicChannels.map((c) => c.id));
    assert.ok(expectedIds.includes(channel.id));
    const created = all(got, "extra", "stream/create").flatMap((e) => e.streams.map((s: { stream_id: number }) => s.stream_id));
    assert.deepEqual(sortedIds(created), expectedIds);
    const peerAdds = all(got, "extra", "subscription/peer_add");
    assert.deepEqual(sortedIds(peerAdds.flatMap((e) => e.stream_ids)), expectedIds);
    const forChannel = peerAdds.find((e) => e.stream_ids.includes(channel.id));
    assert.deepEqual(forChannel.user_ids, [t.users.member.id]);
    const other = got.extra.filter((e) => !["stream/create", "subscription/peer_add"].includes(kinds([e])[0]!));
    assert.deepEqual(kinds(other).sort(), [...groupKinds].sort());
    // Each channel is created before its subscribers are announced.
    const firstPeer = kinds(got.extra).indexOf("subscription/peer_add");
    assert.ok(kinds(got.extra).indexOf("stream/create") < firstPeer);
    await q.close();
  });

  test("PATCH /users/{id} role member → guest: group changes to all, and the demoted user loses the public channels it is not in", async () => {
    const kept = await createChannel(t.users.member);
    const extra = await extraMember();
    await subscribeUsers(t.users.member, kept, [extra.id]);
    const lostChannel = await createChannel(t.users.member);
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${extra.id}`, { role: Role.GUEST }));
    const got = await q.read();
    const sys = await t.systemGroupIds();
    const groupKinds = ["realm_user/update", "user_group/remove_members", "user_group/remove_members", "user_group/add_members"];
    for (const name of EVERYONE) {
      assert.deepEqual(one(got, name, "realm_user/update").person, { user_id: extra.id, role: Role.GUEST }, name);
      assert.deepEqual(all(got, name, "user_group/add_members").map((e) => e.group_id), [sys["role:everyone"]], name);
    }
    assertKinds(got, each(STANDING, groupKinds), { anyOrder: true, except: ["extra"] });
    const deleted = all(got, "extra", "stream/delete").flatMap((e) => e.stream_ids);
    assert.ok(deleted.includes(lostChannel.id), "a public channel the guest is not in disappears");
    assert.ok(!deleted.includes(kept.id), "a channel the guest is subscribed to stays");
    const publicUnsubscribed = await t.services.storage.db
      .selectFrom("channels")
      .select("id")
      .where("realm_id", "=", t.realm.id)
      .where("is_archived", "=", false)
      .where("invite_only", "=", false)
      .where("is_web_public", "=", false)
      .where("id", "not in", (eb) => eb.selectFrom("subscriptions").select("channel_id").where("user_id", "=", extra.id).where("active", "=", true))
      .execute();
    assert.deepEqual(sortedIds(deleted), sortedIds(publicUnsubscribed.map((c) => c.id)));
    const other = got.extra.filter((e) => kinds([e])[0] !== "stream/delete");
    assert.deepEqual(kinds(other).sort(), [...groupKinds].sort());
    await q.close();
  });

  test("DELETE /users/{id}: realm_user update to the remaining users, peer_remove for the channels the user was in", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { principals: [t.users.member.id, extra.id] });
    const q = await listen(null);
    // The deactivated user can no longer poll; its queue is inspected in-process.
    const extraQueue = (await t.register(extra, { event_types: null, client_capabilities: CAPABILITIES })).queue_id;
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${extra.id}`));
    const got = await q.read();
    assert.deepEqual(await t.services.queues.peek(extraQueue), [], "the deactivated user hears nothing");
    for (const name of STANDING) assert.deepEqual(one(got, name, "realm_user/update").person, { user_id: extra.id, is_active: false }, name);
    // Zulip's send_events_for_user_deactivation: subscriber lists drop the user.
    for (const name of STANDING.filter((n) => n !== "guest")) {
      const peer = one(got, name, "subscription/peer_remove");
      assert.deepEqual(peer.stream_ids, [channel.id], name);
      assert.deepEqual(peer.user_ids, [extra.id], name);
    }
    assertKinds(got, { ...each(STANDING, ["realm_user/update", "subscription/peer_remove"]), guest: ["realm_user/update"] }, { anyOrder: true });
    await q.close();
  });

  test("DELETE /users/{id} of a bot owner: the owned bots are deactivated too, each with its realm_user update and realm_bot remove", async () => {
    const extra = await extraMember();
    const bot = await t.createUser(uniqueName("Owned bot"), Role.MEMBER, { bot: true, botOwnerId: extra.id });
    const q = await listen(null);
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${extra.id}`));
    const got = await q.read();
    // The administrators see every bot in realm_bots: it is removed there (Zulip's realm_bot remove).
    assertKinds(
      got,
      {
        ...each(STANDING, ["realm_user/update", "realm_user/update"]),
        owner: ["realm_user/update", "realm_user/update", "realm_bot/remove"],
        admin: ["realm_user/update", "realm_user/update", "realm_bot/remove"],
      },
      { anyOrder: true },
    );
    for (const name of ["owner", "admin"] as const) assert.deepEqual(one(got, name, "realm_bot/remove").bot, { user_id: bot.id, full_name: (await t.api(t.users.owner, "GET", `/users/${bot.id}`)).body.user.full_name });
    for (const name of STANDING) {
      assert.deepEqual(
        all(got, name, "realm_user/update").map((e) => e.person).sort((a: { user_id: number }, b: { user_id: number }) => a.user_id - b.user_id),
        [
          { user_id: extra.id, is_active: false },
          { user_id: bot.id, is_active: false },
        ],
        name,
      );
    }
    await q.close();
  });

  test("DELETE /users/me: the same realm_user update to the remaining users", async () => {
    const extra = await extraMember();
    const q = await listen(null);
    assertSuccess(await t.api(extra, "DELETE", "/users/me"));
    const got = await q.read();
    assertKinds(got, each(STANDING, ["realm_user/update"]));
    for (const name of STANDING) assert.deepEqual(got[name][0].person, { user_id: extra.id, is_active: false });
    await q.close();
  });

  test("POST /users/{id}/reactivate: realm_user update to every active user, peer_add for the channels the user is in", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { principals: [t.users.member.id, extra.id] });
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${extra.id}`));
    const q = await listen(null); // a deactivated user cannot register
    assertSuccess(await t.api(t.users.admin, "POST", `/users/${extra.id}/reactivate`));
    const got = await q.read();
    for (const name of STANDING) assert.deepEqual(one(got, name, "realm_user/update").person, { user_id: extra.id, is_active: true }, name);
    // Zulip's do_reactivate_user: the user reappears in subscriber lists.
    for (const name of STANDING.filter((n) => n !== "guest")) {
      const peer = one(got, name, "subscription/peer_add");
      assert.deepEqual(peer.stream_ids, [channel.id], name);
      assert.deepEqual(peer.user_ids, [extra.id], name);
    }
    assertKinds(got, { ...each(STANDING, ["realm_user/update", "subscription/peer_add"]), guest: ["realm_user/update"] });
    await q.close();
  });

  test("PATCH /settings full_name: realm_user update to every active user, nothing else", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    const fullName = uniqueName("Self renamed");
    assertSuccess(await t.api(extra, "PATCH", "/settings", { full_name: fullName }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["realm_user/update"]));
    for (const name of EVERYONE) assert.deepEqual(got[name][0].person, { user_id: extra.id, full_name: fullName });
    await q.close();
  });

  test("PATCH /settings timezone: user_settings update only to the user, realm_user update to everyone", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    assertSuccess(await t.api(extra, "PATCH", "/settings", { timezone: "Europe/Paris" }));
    const got = await q.read();
    assertKinds(got, { ...each(STANDING, ["realm_user/update"]), extra: ["user_settings/update", "realm_user/update"] }, { anyOrder: true });
    const setting = one(got, "extra", "user_settings/update");
    assert.equal(setting.property, "timezone");
    assert.equal(setting.value, "Europe/Paris");
    for (const name of EVERYONE) {
      const { person } = one(got, name, "realm_user/update");
      assert.equal(person.user_id, extra.id);
      assert.equal(person.timezone, "Europe/Paris");
      assert.equal(person.email, `user${extra.id}@${FAKE_DOMAIN}`);
      assert.equal(person.delivery_email, undefined, "an update never carries the real email");
    }
    await q.close();
  });

  test("PATCH /settings with a personal setting: user_settings update only to the user", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    assertSuccess(await t.api(extra, "PATCH", "/settings", { enter_sends: true }));
    const got = await q.read();
    assertKinds(got, { extra: ["user_settings/update"] });
    assert.equal(got.extra[0].property, "enter_sends");
    assert.equal(got.extra[0].value, true);
    await q.close();
  });
});

// ---------------------------------------------------------------------------
// Channels and subscriptions

describe("channels", () => {
  test("creating a public channel: stream create to every non-guest; subscription add only to the subscriber; peer_add to the others", async () => {
    const q = await listen(await extraMember());
    const name = uniqueName("new public");
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name, description: "hello" }] }));
    const id = await channelId(name);
    const got = await q.read();
    const others = NON_GUESTS.filter((n) => n !== "member");
    assertKinds(got, { member: ["stream/create", "subscription/add"], ...each(others, ["stream/create", "subscription/peer_add"]) });
    for (const n of NON_GUESTS) {
      const [stream] = one(got, n, "stream/create").streams;
      assert.equal(stream.stream_id, id);
      assert.equal(stream.name, name);
      assert.equal(stream.invite_only, false);
      assert.equal(stream.description, "hello");
    }
    const [sub] = one(got, "member", "subscription/add").subscriptions;
    assert.equal(sub.stream_id, id);
    assert.deepEqual(sub.subscribers, [t.users.member.id]);
    for (const n of others) {
      const peer = one(got, n, "subscription/peer_add");
      assert.deepEqual([peer.stream_ids, peer.user_ids], [[id], [t.users.member.id]], n);
    }
    await q.close();
  });

  test("creating a private channel: only the subscribers and the administrators hear of it", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    const name = uniqueName("new private");
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], invite_only: true, principals: [t.users.member.id, extra.id], send_new_subscription_messages: false }));
    const id = await channelId(name);
    const got = await q.read();
    assertKinds(got, {
      member: ["stream/create", "subscription/add"],
      extra: ["stream/create", "subscription/add"],
      owner: ["stream/create", "subscription/peer_add"],
      admin: ["stream/create", "subscription/peer_add"],
    });
    for (const n of ["member", "extra", "owner", "admin"] as const) {
      const [stream] = one(got, n, "stream/create").streams;
      assert.equal(stream.stream_id, id);
      assert.equal(stream.invite_only, true);
    }
    for (const n of ["member", "extra"] as const) assert.deepEqual(one(got, n, "subscription/add").subscriptions[0].subscribers, sortedIds([t.users.member.id, extra.id]));
    for (const n of ["owner", "admin"] as const) assert.deepEqual(one(got, n, "subscription/peer_add").user_ids, sortedIds([t.users.member.id, extra.id]));
    await q.close();
  });

  test("subscribing another user to a public channel: subscription add to the target, peer_add to the other non-guests", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member);
    const q = await listen(extra);
    await subscribeUsers(t.users.member, channel, [extra.id]);
    const got = await q.read();
    const peers = NON_GUESTS.filter((n) => n !== "extra");
    assertKinds(got, { extra: ["subscription/add"], ...each(peers, ["subscription/peer_add"]) });
    const [sub] = got.extra[0].subscriptions;
    assert.equal(sub.stream_id, channel.id);
    assert.deepEqual(sub.subscribers, sortedIds([t.users.member.id, extra.id]));
    for (const n of peers) {
      assert.deepEqual(got[n][0].stream_ids, [channel.id]);
      assert.deepEqual(got[n][0].user_ids, [extra.id]);
    }
    await q.close();
  });

  test("subscribing a guest to a public channel: the guest learns of the channel first, everyone else gets peer_add", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    await subscribeUsers(t.users.admin, channel, [t.users.guest.id]);
    const got = await q.read();
    assertKinds(got, { guest: ["stream/create", "subscription/add"], ...each(NON_GUESTS, ["subscription/peer_add"]) });
    assert.equal(got.guest[0].streams[0].stream_id, channel.id);
    assert.deepEqual(got.guest[1].subscriptions[0].subscribers, sortedIds([t.users.member.id, t.users.guest.id]));
    for (const n of NON_GUESTS) assert.deepEqual(got[n][0].user_ids, [t.users.guest.id]);
    // Once subscribed, the guest hears of the channel's changes too.
    const q2 = await listen(null);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channel.id}`, { description: "guests welcome" }));
    const got2 = await q2.read();
    assertKinds(got2, each(STANDING, ["stream/update"]));
    await q.close();
    await q2.close();
  });

  test("subscribing another user to a private channel: stream create and subscription add to the target, peer_add to subscribers and administrators", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { private: true });
    const q = await listen(extra);
    await subscribeUsers(t.users.member, channel, [extra.id]);
    const got = await q.read();
    assertKinds(got, {
      extra: ["stream/create", "subscription/add"],
      member: ["subscription/peer_add"],
      owner: ["subscription/peer_add"],
      admin: ["subscription/peer_add"],
    });
    assert.equal(got.extra[0].streams[0].stream_id, channel.id);
    for (const n of ["member", "owner", "admin"] as const) assert.deepEqual(got[n][0].user_ids, [extra.id]);
    await q.close();
  });

  test("subscribing and unsubscribing an administrator on a private channel: no stream create or delete, as administrators see it anyway", async () => {
    const channel = await createChannel(t.users.member, { private: true });
    const q = await listen(await extraMember());
    await subscribeUsers(t.users.member, channel, [t.users.admin.id]);
    assertSuccess(await t.api(t.users.admin, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
    const got = await q.read();
    assertKinds(got, {
      admin: ["subscription/add", "subscription/remove"],
      member: ["subscription/peer_add", "subscription/peer_remove"],
      owner: ["subscription/peer_add", "subscription/peer_remove"],
    });
    for (const n of ["member", "owner"] as const) for (const e of got[n]) assert.deepEqual(e.user_ids, [t.users.admin.id]);
    await q.close();
  });

  test("unsubscribing from a public channel: subscription remove to the user, peer_remove to the other non-guests", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { principals: [t.users.member.id, extra.id] });
    const q = await listen(extra);
    assertSuccess(await t.api(extra, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
    const got = await q.read();
    const peers = NON_GUESTS.filter((n) => n !== "extra");
    assertKinds(got, { extra: ["subscription/remove"], ...each(peers, ["subscription/peer_remove"]) });
    assert.deepEqual(got.extra[0].subscriptions, [{ name: channel.name, stream_id: channel.id }]);
    for (const n of peers) {
      assert.deepEqual(got[n][0].stream_ids, [channel.id]);
      assert.deepEqual(got[n][0].user_ids, [extra.id]);
    }
    await q.close();
  });

  test("leaving a private channel: subscription remove and stream delete to the user, peer_remove to subscribers and administrators", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { private: true, principals: [t.users.member.id, extra.id] });
    const q = await listen(extra);
    assertSuccess(await t.api(extra, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
    const got = await q.read();
    assertKinds(got, {
      extra: ["subscription/remove", "stream/delete"],
      member: ["subscription/peer_remove"],
      owner: ["subscription/peer_remove"],
      admin: ["subscription/peer_remove"],
    });
    assert.deepEqual(got.extra[1].stream_ids, [channel.id]);
    for (const n of ["member", "owner", "admin"] as const) assert.deepEqual(got[n][0].user_ids, [extra.id]);
    await q.close();
  });

  test("PATCH /users/me/subscriptions (add and delete at once): the events of both halves", async () => {
    const extra = await extraMember();
    const leave = await createChannel(t.users.member, { principals: [t.users.member.id, extra.id] });
    const join = await createChannel(t.users.member);
    const q = await listen(extra);
    assertSuccess(await t.api(extra, "PATCH", "/users/me/subscriptions", { add: [{ name: join.name }], delete: [leave.name] }));
    const got = await q.read();
    const peers = NON_GUESTS.filter((n) => n !== "extra");
    assertKinds(got, { extra: ["subscription/add", "subscription/remove"], ...each(peers, ["subscription/peer_add", "subscription/peer_remove"]) });
    for (const n of peers) {
      assert.deepEqual(got[n][0].stream_ids, [join.id]);
      assert.deepEqual(got[n][1].stream_ids, [leave.id]);
    }
    await q.close();
  });

  test("PATCH /streams/{id} description and rename of a public channel: stream update to every non-guest", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    const newName = uniqueName("renamed channel");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channel.id}`, { description: "now described" }));
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channel.id}`, { new_name: newName }));
    const got = await q.read();
    assertKinds(got, each(NON_GUESTS, ["stream/update", "stream/update"]));
    for (const n of NON_GUESTS) {
      const [description, rename] = got[n];
      assert.equal(description.stream_id, channel.id);
      assert.equal(description.property, "description");
      assert.equal(description.value, "now described");
      assert.equal(description.rendered_description, "<p>now described</p>");
      assert.equal(rename.property, "name");
      assert.equal(rename.value, newName);
      assert.equal(rename.name, channel.name, "a rename event names the channel by its old name");
    }
    await q.close();
  });

  test("PATCH /streams/{id} rename of a private channel: only subscribers and administrators", async () => {
    const channel = await createChannel(t.users.member, { private: true });
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.member, "PATCH", `/streams/${channel.id}`, { new_name: uniqueName("renamed private") }));
    const got = await q.read();
    assertKinds(got, each(["owner", "admin", "member"], ["stream/update"]));
    await q.close();
  });

  test("PATCH /streams/{id} making a public channel private: stream delete to those who lose sight of it, update to the rest", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channel.id}`, { is_private: true }));
    const got = await q.read();
    const stay = ["owner", "admin", "member"] as const;
    const lose = ["moderator", "bot", "extra"] as const;
    assertKinds(got, { ...each(stay, ["stream/update"]), ...each(lose, ["stream/delete"]) });
    for (const n of stay) {
      const e = got[n][0];
      assert.equal(e.property, "invite_only");
      assert.equal(e.value, true);
      assert.equal(e.history_public_to_subscribers, false);
      assert.equal(e.is_web_public, false);
    }
    for (const n of lose) {
      assert.deepEqual(got[n][0].stream_ids, [channel.id]);
      assert.equal(got[n][0].for_archiving, false);
    }
    await q.close();
  });

  test("PATCH /streams/{id} making a private channel public: stream create and peer_add to those who gain sight of it", async () => {
    const channel = await createChannel(t.users.member, { private: true });
    const q = await listen(await extraMember());
    // The creator administers the channel and can read it; an organization administrator could not.
    assertSuccess(await t.api(t.users.member, "PATCH", `/streams/${channel.id}`, { is_private: false }));
    const got = await q.read();
    const stay = ["owner", "admin", "member"] as const;
    const gain = ["moderator", "bot", "extra"] as const;
    assertKinds(got, { ...each(stay, ["stream/update"]), ...each(gain, ["stream/create", "subscription/peer_add"]) });
    for (const n of stay) assert.equal(got[n][0].value, false);
    for (const n of gain) {
      assert.equal(got[n][0].streams[0].stream_id, channel.id);
      assert.equal(got[n][0].streams[0].invite_only, false);
      assert.deepEqual(got[n][1].user_ids, [t.users.member.id]);
    }
    await q.close();
  });

  test("PATCH /streams/{id} group setting granting metadata access: stream create and peer_add to the new audience, update to the rest", async () => {
    const extra = await extraMember();
    const group = await createGroup(t.users.admin, [extra.id]);
    const channel = await createChannel(t.users.owner, { private: true });
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.owner, "PATCH", `/streams/${channel.id}`, { can_add_subscribers_group: { new: group.id } }));
    const got = await q.read();
    assertKinds(got, { owner: ["stream/update"], admin: ["stream/update"], extra: ["stream/create", "subscription/peer_add"] });
    for (const n of ["owner", "admin"] as const) assert.deepEqual([got[n][0].property, got[n][0].value], ["can_add_subscribers_group", group.id]);
    assert.equal(got.extra[0].streams[0].can_add_subscribers_group, group.id);
    assert.deepEqual(got.extra[1].user_ids, [t.users.owner.id]);
    await q.close();
  });

  test("archiving a private channel: only its subscribers and the administrators hear of it", async () => {
    const channel = await createChannel(t.users.member, { private: true });
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.member, "DELETE", `/streams/${channel.id}`));
    const got = await q.read();
    assertKinds(got, each(["owner", "admin", "member"], ["stream/update"]));
    await q.close();
  });

  test("DELETE /streams/{id} (archive): is_archived update to everyone who could see the channel", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${channel.id}`));
    const got = await q.read();
    assertKinds(got, each(NON_GUESTS, ["stream/update"]));
    for (const n of NON_GUESTS) {
      assert.equal(got[n][0].property, "is_archived");
      assert.equal(got[n][0].value, true);
      assert.equal(got[n][0].stream_id, channel.id);
    }
    // Unarchiving: the same audience hears of it.
    const q2 = await listen(null);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channel.id}`, { is_archived: false }));
    const got2 = await q2.read();
    assertKinds(got2, each(NON_GUESTS.filter((n) => n !== "extra"), ["stream/update"]));
    for (const n of ["owner", "member"] as const) assert.equal(got2[n][0].value, false);
    await q.close();
    await q2.close();
  });

  test("archiving a default channel: is_archived update, and default_streams to every non-guest", async () => {
    const channel = await createChannel(t.users.admin);
    assertSuccess(await t.api(t.users.admin, "POST", "/default_streams", { stream_id: channel.id }));
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${channel.id}`));
    const got = await q.read();
    assertKinds(got, each(NON_GUESTS, ["stream/update", "default_streams"]));
    for (const n of NON_GUESTS) assert.ok(!got[n][1].default_streams.includes(channel.id));
    await q.close();
  });

  test("POST /users/me/subscriptions/properties: subscription update events only to the user (is_muted as in_home_view and is_muted)", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    assertSuccess(
      await t.api(t.users.member, "POST", "/users/me/subscriptions/properties", {
        subscription_data: [
          { stream_id: channel.id, property: "color", value: "#abcdef" },
          { stream_id: channel.id, property: "is_muted", value: true },
        ],
      }),
    );
    const got = await q.read();
    assertKinds(got, { member: ["subscription/update", "subscription/update", "subscription/update"] });
    assert.deepEqual(
      got.member.map((e: Event) => [e.stream_id, e.property, e.value]),
      [
        [channel.id, "color", "#abcdef"],
        [channel.id, "in_home_view", false],
        [channel.id, "is_muted", true],
      ],
    );
    await q.close();
  });

  test("POST and DELETE /default_streams: default_streams to every non-guest", async () => {
    const channel = await createChannel(t.users.member);
    const q = await listen(await extraMember());
    try {
      assertSuccess(await t.api(t.users.admin, "POST", "/default_streams", { stream_id: channel.id }));
      const added = await q.read();
      assertKinds(added, each(NON_GUESTS, ["default_streams"]));
      for (const n of NON_GUESTS) assert.ok(added[n][0].default_streams.includes(channel.id), n);
    } finally {
      // Later tests create users, who would join default channels.
      assertSuccess(await t.api(t.users.admin, "DELETE", "/default_streams", { stream_id: channel.id }));
    }
    const got = await q.read();
    assertKinds(got, each(NON_GUESTS, ["default_streams", "default_streams"]));
    for (const n of NON_GUESTS) assert.ok(!got[n][1].default_streams.includes(channel.id), n);
    await q.close();
  });

  test("a new account joining a default channel: its subscription add only to it, peer_add to the channel's audience", async () => {
    const channel = await createChannel(t.users.member);
    assertSuccess(await t.api(t.users.admin, "POST", "/default_streams", { stream_id: channel.id }));
    const q = await listen(null);
    let id: number;
    try {
      const fullName = uniqueName("Joiner");
      id = assertSuccess(
        await t.api(t.users.admin, "POST", "/users", { email: `${fullName.toLowerCase().replace(/[^a-z0-9]+/g, "-")}@example.com`, password: "joiner-password", full_name: fullName }),
      ).user_id;
    } finally {
      assertSuccess(await t.api(t.users.admin, "DELETE", "/default_streams", { stream_id: channel.id }));
    }
    const got = await q.read();
    for (const n of STANDING.filter((x) => x !== "guest")) {
      const peer = one(got, n, "subscription/peer_add");
      assert.deepEqual(peer.stream_ids, [channel.id]);
      assert.deepEqual(peer.user_ids, [id]);
    }
    // The guest sees the new user but not the channel.
    assert.deepEqual(all(got, "guest", "subscription/peer_add"), []);
    assert.equal(one(got, "guest", "realm_user/add").person.user_id, id);
    await q.close();
  });

  test("group-based access: joining a group that administers a private channel: add_members to all, then stream create and peer_add to the new member", async () => {
    const group = await createGroup(t.users.admin, []);
    const channel = await createChannel(t.users.owner, { private: true, params: { can_administer_channel_group: group.id } });
    const extra = await extraMember();
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group.id}/members`, { add: [extra.id] }));
    const got = await q.read();
    assert.equal(one(got, "extra", "stream/create").streams[0].stream_id, channel.id);
    assert.deepEqual(one(got, "extra", "subscription/peer_add").user_ids, [t.users.owner.id]);
    // Zulip's bulk_add_members_to_user_groups: the membership event first, then what it grants.
    assertKinds(got, { ...each(STANDING, ["user_group/add_members"]), extra: ["user_group/add_members", "stream/create", "subscription/peer_add"] });
    await q.close();
  });

  test("group-based access: leaving that group: remove_members to all, then stream delete to the former member", async () => {
    const extra = await extraMember();
    const group = await createGroup(t.users.admin, [extra.id]);
    const channel = await createChannel(t.users.owner, { private: true, params: { can_administer_channel_group: group.id } });
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group.id}/members`, { delete: [extra.id] }));
    const got = await q.read();
    assert.deepEqual(one(got, "extra", "stream/delete").stream_ids, [channel.id]);
    // Zulip's bulk_remove_members_from_user_groups: the membership event first, then the loss.
    assertKinds(got, { ...each(STANDING, ["user_group/remove_members"]), extra: ["user_group/remove_members", "stream/delete"] });
    await q.close();
  });
});

// ---------------------------------------------------------------------------
// User groups

describe("user groups", () => {
  test("creating a group: user_group add to every active user", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    const group = await createGroup(t.users.admin, [t.users.member.id, extra.id]);
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["user_group/add"]));
    for (const n of EVERYONE) {
      const g = got[n][0].group;
      assert.equal(g.id, group.id);
      assert.equal(g.name, group.name);
      assert.deepEqual(g.members, sortedIds([t.users.member.id, extra.id]));
      assert.equal(g.creator_id, t.users.admin.id);
      assert.equal(g.deactivated, false);
      assert.deepEqual(g.direct_subgroup_ids, []);
    }
    await q.close();
  });

  test("adding and removing members: add_members and remove_members to every active user", async () => {
    const extra = await extraMember();
    const group = await createGroup(t.users.admin, [t.users.member.id]);
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group.id}/members`, { add: [extra.id] }));
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group.id}/members`, { delete: [t.users.member.id] }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["user_group/add_members", "user_group/remove_members"]));
    for (const n of EVERYONE) {
      assert.deepEqual(got[n][0], { type: "user_group", op: "add_members", group_id: group.id, user_ids: [extra.id], id: got[n][0].id });
      assert.deepEqual(got[n][1], { type: "user_group", op: "remove_members", group_id: group.id, user_ids: [t.users.member.id], id: got[n][1].id });
    }
    await q.close();
  });

  test("adding a subgroup: add_subgroups to every active user", async () => {
    const outer = await createGroup(t.users.admin, []);
    const inner = await createGroup(t.users.admin, []);
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${outer.id}/subgroups`, { add: [inner.id] }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["user_group/add_subgroups"]));
    for (const n of EVERYONE) assert.deepEqual(got[n][0].direct_subgroup_ids, [inner.id]);
    await q.close();
  });

  test("renaming and describing a group: one update event each, to every active user", async () => {
    const group = await createGroup(t.users.admin, []);
    const q = await listen(await extraMember());
    const newName = uniqueName("renamed group");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/user_groups/${group.id}`, { name: newName }));
    assertSuccess(await t.api(t.users.admin, "PATCH", `/user_groups/${group.id}`, { description: "new words" }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["user_group/update", "user_group/update"]));
    for (const n of EVERYONE) {
      assert.deepEqual([got[n][0].group_id, got[n][0].data], [group.id, { name: newName }]);
      assert.deepEqual([got[n][1].group_id, got[n][1].data], [group.id, { description: "new words" }]);
    }
    await q.close();
  });

  test("deactivating a group: update {deactivated: true} to every active user (clients with include_deactivated_groups)", async () => {
    const group = await createGroup(t.users.admin, []);
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group.id}/deactivate`));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["user_group/update"]));
    for (const n of EVERYONE) assert.deepEqual([got[n][0].group_id, got[n][0].data], [group.id, { deactivated: true }]);
    await q.close();
  });
});

// ---------------------------------------------------------------------------
// Channel folders

describe("channel folders", () => {
  test("create, update and reorder: channel_folder events to every active user, guests included", async () => {
    const q = await listen(await extraMember());
    const name = uniqueName("folder");
    const id = assertSuccess(await t.api(t.users.admin, "POST", "/channel_folders/create", { name, description: "first" })).channel_folder_id;
    const newName = uniqueName("folder renamed");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { name: newName, description: "second words" }));
    const folders = assertSuccess(await t.api(t.users.admin, "GET", "/channel_folders", { include_archived: true })).channel_folders;
    const order = folders.map((f: { id: number }) => f.id).reverse();
    assertSuccess(await t.api(t.users.admin, "PATCH", "/channel_folders", { order }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["channel_folder/add", "channel_folder/update", "channel_folder/update", "channel_folder/reorder"]));
    for (const n of EVERYONE) {
      const [add, rename, redescribe, reorder] = got[n];
      assert.equal(add.channel_folder.id, id);
      assert.equal(add.channel_folder.name, name);
      assert.deepEqual([rename.channel_folder_id, rename.data], [id, { name: newName }]);
      assert.deepEqual([redescribe.channel_folder_id, redescribe.data], [id, { description: "second words", rendered_description: "<p>second words</p>" }]);
      assert.deepEqual(reorder.order, order);
    }
    await q.close();
  });
});

// ---------------------------------------------------------------------------
// Typing and the organization

describe("typing and organization", () => {
  test("a direct typing start reaches only the two participants", async () => {
    const extra = await extraMember();
    const q = await listen(extra);
    assertSuccess(await t.api(t.users.member, "POST", "/typing", { op: "start", to: [extra.id] }));
    const got = await q.read();
    assertKinds(got, { member: ["typing/start"], extra: ["typing/start"] });
    for (const n of ["member", "extra"] as const) {
      const e = got[n][0];
      assert.equal(e.message_type, "direct");
      assert.equal(e.sender.user_id, t.users.member.id);
      assert.deepEqual(sortedIds(e.recipients.map((r: { user_id: number }) => r.user_id)), sortedIds([t.users.member.id, extra.id]));
    }
    await q.close();
  });

  test("a channel typing start reaches only subscribed queues that declared stream_typing_notifications", async () => {
    const extra = await extraMember();
    const channel = await createChannel(t.users.member, { principals: [t.users.member.id, extra.id] });
    const q = await listen(extra);
    const capable = (await t.register(extra, { event_types: null, client_capabilities: { ...CAPABILITIES, stream_typing_notifications: true } })).queue_id;
    assertSuccess(await t.api(t.users.member, "POST", "/typing", { type: "channel", op: "start", stream_id: channel.id, topic: "lunch" }));
    const got = await q.read();
    assertKinds(got, {});
    const events = await t.queuedEvents(extra, capable);
    assert.deepEqual(kinds(events), ["typing/start"]);
    assert.equal(events[0].stream_id, channel.id);
    assert.equal(events[0].topic, "lunch");
    assert.equal(events[0].sender.user_id, t.users.member.id);
    await q.close();
  });

  test("PATCH /realm name: realm update to every active user", async () => {
    const q = await listen(await extraMember());
    const name = uniqueName("Org");
    assertSuccess(await t.api(t.users.admin, "PATCH", "/realm", { name }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["realm/update"]));
    for (const n of EVERYONE) assert.deepEqual([got[n][0].property, got[n][0].value], ["name", name]);
    await q.close();
  });

  test("PATCH /realm/user_settings_defaults: realm_user_settings_defaults update to every active user", async () => {
    const q = await listen(await extraMember());
    assertSuccess(await t.api(t.users.admin, "PATCH", "/realm/user_settings_defaults", { enter_sends: true }));
    const got = await q.read();
    assertKinds(got, each(EVERYONE, ["realm_user_settings_defaults/update"]));
    for (const n of EVERYONE) assert.deepEqual([got[n][0].property, got[n][0].value], ["enter_sends", true]);
    await q.close();
  });
});
