// API-level tests of personal message flags: POST /messages/flags, POST
// /messages/flags/narrow, POST /mark_all_as_read, /mark_stream_as_read and
// /mark_topic_as_read, their update_message_flags events and what register's
// unread_msgs and starred_messages show afterwards. Expected behaviour is
// Zulip's, as researched in docs/zulip-behaviour/message-flags.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Flag } from "../src/domain/message-flags.ts";
import { Role } from "../src/domain/roles.ts";
import { clampUpdateRange, MAX_MESSAGES_PER_UPDATE } from "../src/routes/message-flags.ts";
import { assertError, assertSuccess, startTestApp, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const db = () => t.services.storage.db;

let counter = 0;
function unique(prefix: string): string {
  counter += 1;
  return `${prefix} ${counter}`;
}

async function newUser(prefix = "Flagger", role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

async function fullName(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("full_name").where("id", "=", user.id).executeTakeFirstOrThrow()).full_name;
}

interface Channel {
  id: number;
  name: string;
}

/** A channel created by `creator` with `others` subscribed, without Notification Bot messages. */
async function newChannel(creator: TestUser, others: TestUser[] = [], options: Params = {}): Promise<Channel> {
  const name = unique("flags channel");
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...others.map((o) => o.id)],
      send_new_subscription_messages: false,
      ...options,
    }),
  );
  const row = await db().selectFrom("channels").select("id").where("realm_id", "=", t.realm.id).where("name", "=", name).executeTakeFirstOrThrow();
  return { id: row.id, name };
}

async function subscribe(adder: TestUser, channel: Channel, users: TestUser[]): Promise<void> {
  assertSuccess(
    await t.api(adder, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channel.name }],
      principals: users.map((u) => u.id),
      send_new_subscription_messages: false,
    }),
  );
}

async function unsubscribe(user: TestUser, channel: Channel): Promise<void> {
  assertSuccess(await t.api(user, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
}

async function send(sender: TestUser, channel: Channel, topic: string, content = unique("message")): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.name, topic, content })).id as number;
}

async function sendDm(sender: TestUser, to: TestUser[], content = unique("dm")): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((u) => u.id), content })).id as number;
}

function postFlags(user: TestUser, messages: unknown, op: string, flag: string, extra: Params = {}): Promise<ApiResponse> {
  return t.api(user, "POST", "/messages/flags", { messages, op, flag, ...extra });
}

function postNarrow(user: TestUser, params: Params): Promise<ApiResponse> {
  return t.api(user, "POST", "/messages/flags/narrow", params);
}

/** The flags GET /messages/{id} shows the user. */
async function flagsOf(user: TestUser, messageId: number): Promise<string[]> {
  return assertSuccess(await t.api(user, "GET", `/messages/${messageId}`)).message.flags as string[];
}

/** The user's stored flags row, or undefined when there is none. */
async function rowFlags(userId: number, messageId: number): Promise<number | undefined> {
  const row = await db().selectFrom("user_messages").select("flags").where("user_id", "=", userId).where("message_id", "=", messageId).executeTakeFirst();
  return row?.flags;
}

async function isUnread(user: TestUser, messageId: number): Promise<boolean> {
  return !(await flagsOf(user, messageId)).includes("read");
}

/** register's unread_msgs for the user. */
async function unreadMsgs(user: TestUser, capabilities: Params = {}): Promise<Json> {
  return (await t.register(user, { fetch_event_types: ["message", "update_message_flags"], client_capabilities: capabilities })).unread_msgs;
}

/** All unread message IDs register lists for the user, ascending. */
async function allUnreadIds(user: TestUser): Promise<number[]> {
  const u = await unreadMsgs(user);
  const ids = [...u.pms, ...u.streams, ...u.huddles].flatMap((x: Json) => x.unread_message_ids as number[]);
  return ids.sort((a, b) => a - b);
}

/** A queue taking only update_message_flags events. */
async function flagQueue(user: TestUser, capabilities: Params = {}): Promise<string> {
  return (await t.register(user, { event_types: ["update_message_flags"], client_capabilities: capabilities })).queue_id as string;
}

/** The update_message_flags notifications since the last clearEvents. */
function flagNotifications() {
  return t.events.filter((n) => n.event.type === "update_message_flags");
}

/** Asserts every flag event since clearEvents went to `user` alone, and returns the events. */
function ownFlagEvents(user: TestUser): Json[] {
  const notes = flagNotifications();
  for (const n of notes) assert.deepEqual(n.userIds, [user.id], JSON.stringify(n.event));
  return notes.map((n) => n.event);
}

const addEvent = (flag: string, messages: number[]) => ({ type: "update_message_flags", op: "add", operation: "add", flag, messages, all: false });
const removeEvent = (flag: string, messages: number[]) => ({ type: "update_message_flags", op: "remove", operation: "remove", flag, messages, all: false });

/** Copies a message `count` times, with a flags row (flags 0, unread) for each of `userIds`; the new IDs ascending. */
async function cloneMessage(templateId: number, count: number, userIds: number[]): Promise<number[]> {
  const template = (await db().selectFrom("messages").selectAll().where("id", "=", templateId).executeTakeFirstOrThrow()) as Record<string, unknown>;
  delete template.id;
  delete template.search_tsv;
  const ids: number[] = [];
  for (let done = 0; done < count; done += 500) {
    const n = Math.min(500, count - done);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const rows = await db().insertInto("messages").values(Array.from({ length: n }, () => ({ ...template }) as any)).returning("id").execute();
    const newIds = rows.map((r) => r.id);
    ids.push(...newIds);
    await db()
      .insertInto("user_messages")
      .values(userIds.flatMap((userId) => newIds.map((messageId) => ({ user_id: userId, message_id: messageId, flags: 0 }))))
      .execute();
  }
  return ids.sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------

describe("POST /messages/flags", () => {
  test("starring and unstarring: the reply echoes the IDs sent; the event lists what changed, in request order, to the user's queues only", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const [m1, m2, m3] = [await send(bob, channel, "t"), await send(bob, channel, "t"), await send(bob, channel, "t")];
    const aliceQueue = await flagQueue(alice);
    const bobQueue = await flagQueue(bob);
    t.clearEvents();

    const reply = await postFlags(alice, [m2, m1], "add", "starred");
    assert.deepEqual(reply.body, { result: "success", msg: "", messages: [m2, m1] });
    assert.equal(reply.status, 200);
    // Starring again and more: only m3 changes; the reply still echoes everything sent.
    assert.deepEqual(assertSuccess(await postFlags(alice, [m1, m3], "add", "starred")).messages, [m1, m3]);
    assert.deepEqual(assertSuccess(await postFlags(alice, [m3, m2], "remove", "starred")).messages, [m3, m2]);

    assert.deepEqual(await t.queuedEvents(alice, aliceQueue), [
      { id: 0, ...addEvent("starred", [m2, m1]) },
      { id: 1, ...addEvent("starred", [m3]) },
      { id: 2, ...removeEvent("starred", [m3, m2]) },
    ]);
    assert.deepEqual(await t.queuedEvents(bob, bobQueue), []);
    assert.equal(ownFlagEvents(alice).length, 3);

    assert.deepEqual(await flagsOf(alice, m1), ["starred"]);
    assert.deepEqual(await flagsOf(alice, m2), []);
    assert.deepEqual(await flagsOf(bob, m1), []);
    assert.deepEqual((await t.register(alice, { fetch_event_types: ["starred_messages"] })).starred_messages, [m1]);
  });

  test("collapsed is set and cleared like starred", async () => {
    const alice = await newUser();
    const m = await sendDm(await newUser(), [alice]);
    t.clearEvents();
    assertSuccess(await postFlags(alice, [m], "add", "collapsed"));
    assert.deepEqual(await flagsOf(alice, m), ["collapsed"]);
    assertSuccess(await postFlags(alice, [m], "remove", "collapsed"));
    assert.deepEqual(await flagsOf(alice, m), []);
    assert.deepEqual(ownFlagEvents(alice), [addEvent("collapsed", [m]), removeEvent("collapsed", [m])]);
  });

  test("marking read and unread: unread_msgs follows, and the unread event carries message_details", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const carol = await newUser();
    const channel = await newChannel(bob, [alice, carol]);
    const plain = await send(bob, channel, "Plans");
    const mention = await send(bob, channel, "plans", `hi @**${await fullName(alice)}**`);
    const wildcard = await send(bob, channel, "Quiet", "@**all** look");
    const dm = await sendDm(bob, [alice]);
    const group = await sendDm(bob, [alice, carol]);
    const self = await sendDm(alice, [alice]);
    // Muting the topic: its messages stay unread but are not counted, and @all there is no mention.
    assertSuccess(await t.api(alice, "POST", "/user_topics", { stream_id: channel.id, topic: "Quiet", visibility_policy: 1 }));
    const all = [plain, mention, wildcard, dm, group, self];
    assert.deepEqual(await allUnreadIds(alice), all);

    const queue = await flagQueue(alice);
    t.clearEvents();
    const read = await postFlags(alice, all, "add", "read");
    assert.deepEqual(read.body, { result: "success", msg: "", messages: all });
    assert.deepEqual(await allUnreadIds(alice), []);
    assert.equal((await unreadMsgs(alice)).count, 0);
    // Bob's own messages are his to read; Alice reading them changes nothing for him or Carol.
    assert.ok(await isUnread(carol, plain));

    const unread = await postFlags(alice, [self, group, dm, wildcard, mention, plain], "remove", "read");
    assert.deepEqual(unread.body, { result: "success", msg: "", messages: [self, group, dm, wildcard, mention, plain], ignored_because_not_subscribed_channels: [] });
    const events = await t.queuedEvents(alice, queue);
    assert.deepEqual(events, [
      { id: 0, ...addEvent("read", all) },
      {
        id: 1,
        ...removeEvent("read", [self, group, dm, wildcard, mention, plain]),
        message_details: {
          [plain]: { type: "stream", stream_id: channel.id, topic: "Plans", unmuted_stream_msg: true },
          [mention]: { type: "stream", stream_id: channel.id, topic: "plans", unmuted_stream_msg: true, mentioned: true },
          [wildcard]: { type: "stream", stream_id: channel.id, topic: "Quiet", unmuted_stream_msg: false },
          [dm]: { type: "private", user_ids: [bob.id] },
          [group]: { type: "private", user_ids: [bob.id, carol.id].sort((a, b) => a - b) },
          [self]: { type: "private", user_ids: [] },
        },
      },
    ]);
    ownFlagEvents(alice);

    const state = await unreadMsgs(alice);
    assert.deepEqual(await allUnreadIds(alice), all);
    assert.deepEqual(state.mentions, [mention]);
    // The muted topic's message is listed but not counted.
    assert.equal(state.count, 5);
  });

  test("a message already in the asked state is not in the event, and an event is sent even when nothing changed", async () => {
    const alice = await newUser();
    const m = await sendDm(await newUser(), [alice]);
    assertSuccess(await postFlags(alice, [m], "add", "read"));
    t.clearEvents();
    assert.deepEqual(assertSuccess(await postFlags(alice, [m, m], "add", "read")).messages, [m, m]);
    assert.deepEqual(ownFlagEvents(alice), [addEvent("read", [])]);
  });

  test("read removed: messages in channels the user is not subscribed to are skipped and their channels named", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const kept = await newChannel(bob, [alice]);
    const left = await newChannel(bob, [alice]);
    const k = await send(bob, kept, "t");
    const l1 = await send(bob, left, "t");
    const l2 = await send(bob, left, "u");
    const dm = await sendDm(bob, [alice]);
    assertSuccess(await postFlags(alice, [k, l1, l2, dm], "add", "read"));
    await unsubscribe(alice, left);
    t.clearEvents();

    const reply = assertSuccess(await postFlags(alice, [l1, k, l2, dm], "remove", "read"));
    assert.deepEqual(reply.ignored_because_not_subscribed_channels, [left.id]);
    assert.deepEqual(reply.messages, [l1, k, l2, dm]);
    const [event] = ownFlagEvents(alice);
    assert.deepEqual(event.messages, [k, dm]);
    assert.deepEqual(Object.keys(event.message_details).map(Number).sort(), [k, dm].sort());
    assert.equal(await rowFlags(alice.id, l1), Flag.READ);
    assert.equal((await rowFlags(alice.id, k))! & Flag.READ, 0);

    // Adding read is not restricted to subscribed channels; other flags never carry the field.
    assertSuccess(await postFlags(alice, [l1], "remove", "starred"));
    const starred = assertSuccess(await postFlags(alice, [l1], "add", "starred"));
    assert.equal("ignored_because_not_subscribed_channels" in starred, false);
    assert.deepEqual(await flagsOf(alice, l1), ["read", "starred"]);
  });

  test("read removed: a message of a private channel the user cannot read is skipped without naming its channel", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const secret = await newChannel(bob, [], { invite_only: true });
    const hidden = await send(bob, secret, "t");
    t.clearEvents();
    const reply = assertSuccess(await postFlags(alice, [hidden], "remove", "read"));
    assert.deepEqual(reply.ignored_because_not_subscribed_channels, []);
    assert.deepEqual(ownFlagEvents(alice), [{ ...removeEvent("read", []), message_details: {} }]);
    assert.equal(await rowFlags(alice.id, hidden), undefined);
  });

  test("a public-history message without a flags row gets a historical row when starred, collapsed or marked unread", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob);
    const before = await send(bob, channel, "history");
    const other = await send(bob, channel, "history");
    // Not subscribed: public history is readable, and read through it counts as read and historical.
    assert.deepEqual(await flagsOf(alice, before), ["read", "historical"]);
    assert.equal(await rowFlags(alice.id, before), undefined);
    t.clearEvents();

    assertSuccess(await postFlags(alice, [before], "add", "starred"));
    assert.equal(await rowFlags(alice.id, before), Flag.READ | Flag.STARRED | Flag.HISTORICAL);
    assert.deepEqual(await flagsOf(alice, before), ["read", "starred", "historical"]);
    assertSuccess(await postFlags(alice, [before], "remove", "starred"));
    assert.equal(await rowFlags(alice.id, before), Flag.READ | Flag.HISTORICAL);

    assertSuccess(await postFlags(alice, [other], "add", "collapsed"));
    assert.equal(await rowFlags(alice.id, other), Flag.READ | Flag.COLLAPSED | Flag.HISTORICAL);

    // Marking read, or unstarring, what has no row changes nothing and creates no row.
    const third = await send(bob, channel, "history");
    assertSuccess(await postFlags(alice, [third], "add", "read"));
    assertSuccess(await postFlags(alice, [third], "remove", "starred"));
    assert.equal(await rowFlags(alice.id, third), undefined);
    assert.deepEqual(ownFlagEvents(alice), [
      addEvent("starred", [before]),
      removeEvent("starred", [before]),
      addEvent("collapsed", [other]),
      addEvent("read", []),
      removeEvent("starred", []),
    ]);

    // Once subscribed, history from before can be marked unread: a historical row without read.
    await subscribe(bob, channel, [alice]);
    t.clearEvents();
    assertSuccess(await postFlags(alice, [third], "remove", "read"));
    assert.equal(await rowFlags(alice.id, third), Flag.HISTORICAL);
    assert.deepEqual(await flagsOf(alice, third), ["historical"]);
    assert.deepEqual(ownFlagEvents(alice), [
      { ...removeEvent("read", [third]), message_details: { [third]: { type: "stream", stream_id: channel.id, topic: "history", unmuted_stream_msg: true } } },
    ]);
    assert.ok((await allUnreadIds(alice)).includes(third));
  });

  test("Invalid message(s): unknown IDs, others' direct messages, private channels, protected history — and nothing else changes", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const carol = await newUser();
    const mine = await sendDm(bob, [alice]);
    const theirs = await sendDm(bob, [carol]);
    const secret = await newChannel(bob, [], { invite_only: true });
    const hidden = await send(bob, secret, "t");
    const protectedChannel = await newChannel(bob, [], { invite_only: true, history_public_to_subscribers: false });
    const earlier = await send(bob, protectedChannel, "t");
    await subscribe(bob, protectedChannel, [alice]);
    const later = await send(bob, protectedChannel, "t");
    t.clearEvents();

    for (const id of [999999999, theirs, hidden, earlier, 0, -5, 2 ** 40]) {
      for (const [op, flag] of [
        ["add", "starred"],
        ["add", "collapsed"],
        ["remove", "read"],
      ] as const) {
        // Marking unread skips channels one is not subscribed to before anything else (see below).
        if (id === hidden && flag === "read") continue;
        assertError(await postFlags(alice, [mine, id], op, flag), 400, "BAD_REQUEST", "Invalid message(s)");
      }
    }
    // The whole request failed: the valid message is untouched and no event went out.
    assert.deepEqual(await flagsOf(alice, mine), []);
    assert.deepEqual(flagNotifications(), []);
    // Received after subscribing: hers to flag.
    assertSuccess(await postFlags(alice, [later], "add", "starred"));
    assert.deepEqual(await flagsOf(alice, later), ["starred"]);
  });

  test("as in Zulip, unknown or inaccessible IDs are ignored where their absent row already has the asked state", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const theirs = await sendDm(bob, [await newUser()]);
    t.clearEvents();
    // No row counts as read and not starred: marking read or unstarring such IDs is a no-op.
    assert.deepEqual(assertSuccess(await postFlags(alice, [999999999, theirs], "add", "read")).messages, [999999999, theirs]);
    assertSuccess(await postFlags(alice, [999999999, theirs], "remove", "starred"));
    assertSuccess(await postFlags(alice, [theirs], "remove", "collapsed"));
    assert.deepEqual(ownFlagEvents(alice), [addEvent("read", []), removeEvent("starred", []), removeEvent("collapsed", [])]);
    assert.equal(await rowFlags(alice.id, theirs), undefined);
  });

  test("flags users may not change, unknown flags and operations", async () => {
    const alice = await newUser();
    const m = await sendDm(await newUser(), [alice]);
    for (const flag of ["mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "group_mentioned", "has_alert_word", "historical", "force_expand", "force_collapse"]) {
      assertError(await postFlags(alice, [m], "add", flag), 400, "BAD_REQUEST", `Flag not editable: '${flag}'`);
      assertError(await postFlags(alice, [m], "remove", flag), 400, "BAD_REQUEST", `Flag not editable: '${flag}'`);
    }
    for (const flag of ["wildcard_mentioned", "is_private", "active_mobile_push_notification", "unread", "Read", "", "constructor"]) {
      assertError(await postFlags(alice, [m], "add", flag), 400, "BAD_REQUEST", `Invalid flag: '${flag}'`);
    }
    assertError(await postFlags(alice, [m], "toggle", "starred"), 400, "BAD_REQUEST", "Invalid message flag operation: 'toggle'");
    assertError(await postFlags(alice, [m], "ADD", "read"), 400, "BAD_REQUEST", "Invalid message flag operation: 'ADD'");
    // The flag is checked before the operation.
    assertError(await postFlags(alice, [m], "toggle", "mentioned"), 400, "BAD_REQUEST", "Flag not editable: 'mentioned'");
    // An unknown message does not hide a bad flag.
    assertError(await postFlags(alice, [999999999], "add", "bogus"), 400, "BAD_REQUEST", "Invalid flag: 'bogus'");
    assert.deepEqual(await flagsOf(alice, m), []);
  });

  test("parameters: missing, wrong types, unknown ones", async () => {
    const alice = await newUser();
    const m = await sendDm(await newUser(), [alice]);
    assertError(await t.api(alice, "POST", "/messages/flags", { op: "add", flag: "read" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'messages' argument", { var_name: "messages" });
    assertError(await t.api(alice, "POST", "/messages/flags", { messages: [m], flag: "read" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument", { var_name: "op" });
    assertError(await t.api(alice, "POST", "/messages/flags", { messages: [m], op: "add" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'flag' argument", { var_name: "flag" });
    assertError(await postFlags(alice, "[1,", "add", "read"), 400, "BAD_REQUEST", 'Argument "messages" is not valid JSON.');
    assertError(await postFlags(alice, m, "add", "read"), 400, "BAD_REQUEST", "messages is not a list");
    assertError(await postFlags(alice, [m, "7"], "add", "read"), 400, "BAD_REQUEST", "messages[1] is not an integer");
    assertError(await postFlags(alice, [1.5], "add", "read"), 400, "BAD_REQUEST", "messages[0] is not an integer");
    const extra = assertSuccess(await postFlags(alice, [m], "add", "read", { all: true, client: "x" }));
    assert.deepEqual(extra.ignored_parameters_unsupported, ["all", "client"]);
    // An empty list is fine and still tells the user's clients.
    t.clearEvents();
    assert.deepEqual(assertSuccess(await postFlags(alice, [], "add", "starred")).messages, []);
    assert.deepEqual(ownFlagEvents(alice), [addEvent("starred", [])]);
    // JSON bodies work too.
    assertSuccess(await t.api(alice, "POST", "/messages/flags", { messages: [m], op: "add", flag: "starred" }, { encoding: "json" }));
    assert.deepEqual(await flagsOf(alice, m), ["read", "starred"]);
  });

  test("authentication is required", async () => {
    assertError(await t.api(null, "POST", "/messages/flags", { messages: [1], op: "add", flag: "read" }), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "POST", "/messages/flags/narrow", {}), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "POST", "/mark_all_as_read"), 401, "UNAUTHORIZED");
  });

  test("guests flag what they can read, and not public channels they are not in", async () => {
    const guest = await newUser("Guest", Role.GUEST);
    const bob = await newUser();
    const open = await newChannel(bob);
    const outside = await send(bob, open, "t");
    assertError(await postFlags(guest, [outside], "add", "starred"), 400, "BAD_REQUEST", "Invalid message(s)");
    await subscribe(bob, open, [guest]);
    const inside = await send(bob, open, "t");
    assertSuccess(await postFlags(guest, [inside], "add", "starred"));
    assert.deepEqual(await flagsOf(guest, inside), ["starred"]);
    // Public history is open to the guest once subscribed.
    assertSuccess(await postFlags(guest, [outside], "add", "starred"));
    assert.equal(await rowFlags(guest.id, outside), Flag.READ | Flag.STARRED | Flag.HISTORICAL);
  });

  test("bots flag their own messages like anyone", async () => {
    const bot = t.users.bot;
    const m = await sendDm(await newUser(), [bot]);
    t.clearEvents();
    assertSuccess(await postFlags(bot, [m], "add", "read"));
    assertSuccess(await postFlags(bot, [m], "add", "starred"));
    assert.equal(await rowFlags(bot.id, m), Flag.IS_PRIVATE | Flag.READ | Flag.STARRED);
    assert.deepEqual(ownFlagEvents(bot), [addEvent("read", [m]), addEvent("starred", [m])]);
  });

  test("the empty topic: message_details name it per client capability, as unread_msgs does", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const m = await send(bob, channel, "");
    assertSuccess(await postFlags(alice, [m], "add", "read"));
    const modern = await flagQueue(alice, { empty_topic_name: true });
    const legacy = await flagQueue(alice);
    assertSuccess(await postFlags(alice, [m], "remove", "read"));
    const detail = (topic: string) => ({ [m]: { type: "stream", stream_id: channel.id, topic, unmuted_stream_msg: true } });
    assert.deepEqual(await t.queuedEvents(alice, modern), [{ id: 0, ...removeEvent("read", [m]), message_details: detail("") }]);
    assert.deepEqual(await t.queuedEvents(alice, legacy), [{ id: 0, ...removeEvent("read", [m]), message_details: detail("general chat") }]);
    assert.deepEqual((await unreadMsgs(alice, { empty_topic_name: true })).streams, [{ stream_id: channel.id, topic: "", unread_message_ids: [m] }]);
    assert.deepEqual((await unreadMsgs(alice)).streams, [{ stream_id: channel.id, topic: "general chat", unread_message_ids: [m] }]);
  });
});

// ---------------------------------------------------------------------------

describe("POST /messages/flags/narrow", () => {
  /** Alice and Bob in a new channel with six messages from Bob, unread for Alice. */
  async function sixMessages() {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const ids: number[] = [];
    for (let i = 0; i < 6; i++) ids.push(await send(bob, channel, i < 3 ? "first" : "second"));
    return { alice, bob, channel, ids, narrow: [{ operator: "channel", operand: channel.id }] };
  }

  test("marks a range read: the reply's counts, ends and found flags, and the event", async () => {
    const { alice, bob, ids, narrow } = await sixMessages();
    const queue = await flagQueue(alice);
    t.clearEvents();
    const reply = await postNarrow(alice, { anchor: "oldest", num_before: 0, num_after: 2, narrow, op: "add", flag: "read" });
    assert.deepEqual(reply.body, {
      result: "success",
      msg: "",
      processed_count: 2,
      updated_count: 2,
      first_processed_id: ids[0],
      last_processed_id: ids[1],
      found_oldest: true,
      found_newest: false,
    });
    assert.deepEqual(await t.queuedEvents(alice, queue), [{ id: 0, ...addEvent("read", [ids[0]!, ids[1]!]) }]);
    ownFlagEvents(alice);
    assert.deepEqual(await allUnreadIds(alice), ids.slice(2));
    // Bob's flags are his own.
    assert.ok(await isUnread(bob, ids[0]!));
  });

  test("anchors: an ID with and without include_anchor, before and after, newest, first_unread", async () => {
    const { alice, ids, narrow } = await sixMessages();
    const flag = { narrow, op: "add", flag: "starred" };
    // After the anchor, excluding it.
    let body = assertSuccess(await postNarrow(alice, { anchor: String(ids[2]), include_anchor: false, num_before: 0, num_after: 2, ...flag }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.processed_count, body.updated_count], [ids[3], ids[4], 2, 2]);
    assert.deepEqual([body.found_oldest, body.found_newest], [false, false]);
    // Before and at the anchor: ids[2] is new, ids[3] was starred already.
    body = assertSuccess(await postNarrow(alice, { anchor: ids[3], num_before: 1, num_after: 0, ...flag }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.processed_count, body.updated_count], [ids[2], ids[3], 2, 1]);
    // Before the anchor, excluding it, reaching the oldest.
    body = assertSuccess(await postNarrow(alice, { anchor: ids[2], include_anchor: false, num_before: 5, num_after: 0, ...flag }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.processed_count, body.found_oldest, body.found_newest], [ids[0], ids[1], 2, true, false]);
    // newest with room to spare: everything, both ends found.
    body = assertSuccess(await postNarrow(alice, { anchor: "newest", num_before: 10, num_after: 0, ...flag }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.processed_count, body.updated_count], [ids[0], ids[5], 6, 1]);
    assert.deepEqual([body.found_oldest, body.found_newest], [true, true]);
    assert.deepEqual((await t.register(alice, { fetch_event_types: ["starred_messages"] })).starred_messages, ids);

    // first_unread: the oldest unread message of the narrow.
    assertSuccess(await postFlags(alice, ids.slice(0, 4), "add", "read"));
    body = assertSuccess(await postNarrow(alice, { anchor: "first_unread", num_before: 0, num_after: 0, narrow, op: "add", flag: "read" }));
    assert.deepEqual([body.first_processed_id, body.processed_count, body.updated_count], [ids[4], 1, 1]);
    // With nothing unread left but ids[5], then nothing: first_unread is the newest message.
    assertSuccess(await postFlags(alice, [ids[5]!], "add", "read"));
    body = assertSuccess(await postNarrow(alice, { anchor: "first_unread", num_before: 2, num_after: 0, narrow, op: "remove", flag: "starred" }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.updated_count], [ids[4], ids[5], 2]);
  });

  test("empty ranges: null ends, zero counts, and an event listing nothing", async () => {
    const { alice, ids, channel } = await sixMessages();
    const nowhere = [
      { operator: "channel", operand: channel.id },
      { operator: "topic", operand: "no such topic" },
    ];
    t.clearEvents();
    const empty = await postNarrow(alice, { anchor: "newest", num_before: 100, num_after: 0, narrow: nowhere, op: "add", flag: "read" });
    assert.deepEqual(empty.body, {
      result: "success",
      msg: "",
      processed_count: 0,
      updated_count: 0,
      first_processed_id: null,
      last_processed_id: null,
      found_oldest: true,
      found_newest: true,
    });
    assert.deepEqual(ownFlagEvents(alice), [addEvent("read", [])]);
    // Past the newest message.
    const beyond = assertSuccess(await postNarrow(alice, { anchor: ids[5]! + 1000, num_before: 0, num_after: 5, narrow: [], op: "add", flag: "read" }));
    assert.deepEqual([beyond.processed_count, beyond.first_processed_id, beyond.last_processed_id, beyond.found_newest], [0, null, null, true]);
    // Nothing asked for around a missing anchor.
    const nothing = assertSuccess(await postNarrow(alice, { anchor: ids[0], include_anchor: false, num_before: 0, num_after: 0, narrow: [], op: "add", flag: "read" }));
    assert.deepEqual([nothing.processed_count, nothing.first_processed_id, nothing.found_oldest, nothing.found_newest], [0, null, false, false]);
    assert.equal(await allUnreadIds(alice).then((x) => x.length), 6);
  });

  test("narrows: is:unread, topic, direct messages, none (all the user's messages), null", async () => {
    const { alice, bob, ids, channel } = await sixMessages();
    const dm = await sendDm(bob, [alice]);
    assertSuccess(await postFlags(alice, [ids[0]!], "add", "read"));
    const unreadInTopic = [
      { operator: "stream", operand: channel.name },
      { operator: "topic", operand: "FIRST" },
      { operator: "is", operand: "unread" },
    ];
    let body = assertSuccess(await postNarrow(alice, { anchor: "oldest", num_before: 0, num_after: 100, narrow: unreadInTopic, op: "add", flag: "read" }));
    assert.deepEqual([body.first_processed_id, body.last_processed_id, body.processed_count, body.updated_count], [ids[1], ids[2], 2, 2]);
    body = assertSuccess(await postNarrow(alice, { anchor: "newest", num_before: 100, num_after: 0, narrow: [["dm", String(bob.id)]], op: "add", flag: "starred" }));
    assert.deepEqual([body.first_processed_id, body.processed_count], [dm, 1]);
    body = assertSuccess(await postNarrow(alice, { anchor: "newest", num_before: 100, num_after: 0, narrow: [], op: "add", flag: "read" }));
    assert.deepEqual([body.last_processed_id, body.updated_count], [dm, 4]);
    body = assertSuccess(await postNarrow(alice, { anchor: "oldest", num_before: 0, num_after: 100, narrow: null, op: "remove", flag: "read" }));
    assert.deepEqual([body.processed_count, body.updated_count, body.ignored_because_not_subscribed_channels], [7, 7, []]);
    assert.deepEqual(await allUnreadIds(alice), [...ids, dm]);
  });

  test("a public channel's history is in the range; starring it creates historical rows", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob);
    const [a, b] = [await send(bob, channel, "t"), await send(bob, channel, "t")];
    const body = assertSuccess(
      await postNarrow(alice, { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "channel", operand: channel.id }], op: "add", flag: "starred" }),
    );
    assert.deepEqual([body.processed_count, body.updated_count, body.first_processed_id, body.last_processed_id], [2, 2, a, b]);
    assert.equal(await rowFlags(alice.id, a), Flag.READ | Flag.STARRED | Flag.HISTORICAL);
    // Read already, as history is: nothing to update.
    const read = assertSuccess(
      await postNarrow(alice, { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "channel", operand: channel.id }], op: "add", flag: "read" }),
    );
    assert.deepEqual([read.processed_count, read.updated_count], [2, 0]);
  });

  test("read removed over a narrow skips channels the user left and names them", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const stay = await newChannel(bob, [alice]);
    const leave = await newChannel(bob, [alice]);
    const s = await send(bob, stay, "t");
    const l = await send(bob, leave, "t");
    assertSuccess(await postFlags(alice, [s, l], "add", "read"));
    await unsubscribe(alice, leave);
    t.clearEvents();
    const body = assertSuccess(await postNarrow(alice, { anchor: "newest", num_before: 10, num_after: 0, narrow: [], op: "remove", flag: "read" }));
    assert.deepEqual(
      [body.processed_count, body.updated_count, body.first_processed_id, body.last_processed_id, body.ignored_because_not_subscribed_channels],
      [2, 1, s, l, [leave.id]],
    );
    assert.deepEqual(ownFlagEvents(alice), [
      { ...removeEvent("read", [s]), message_details: { [s]: { type: "stream", stream_id: stay.id, topic: "t", unmuted_stream_msg: true } } },
    ]);
    assert.deepEqual(await allUnreadIds(alice), [s]);
  });

  test("a channel the user cannot read gives an empty range, not an error", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const secret = await newChannel(bob, [], { invite_only: true });
    await send(bob, secret, "t");
    const body = assertSuccess(await postNarrow(alice, { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "channel", operand: secret.id }], op: "add", flag: "starred" }));
    assert.deepEqual([body.processed_count, body.first_processed_id, body.found_oldest, body.found_newest], [0, null, true, true]);
  });

  test("errors: bad parameters, bad narrows, bad flags — narrow errors first", async () => {
    const alice = await newUser();
    const ok = { anchor: "newest", num_before: 1, num_after: 0, narrow: [], op: "add", flag: "read" };
    for (const name of ["anchor", "num_before", "num_after", "narrow", "op", "flag"]) {
      const params: Params = { ...ok };
      delete params[name];
      assertError(await postNarrow(alice, params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, { var_name: name });
    }
    assertError(await postNarrow(alice, { ...ok, anchor: "latest" }), 400, "BAD_REQUEST", "Invalid anchor");
    assertError(await postNarrow(alice, { ...ok, num_before: "x" }), 400, "BAD_REQUEST", "num_before is not an integer");
    assertError(await postNarrow(alice, { ...ok, num_before: -1 }), 400, "BAD_REQUEST", "num_before is too small");
    assertError(await postNarrow(alice, { ...ok, num_after: -1 }), 400, "BAD_REQUEST", "num_after is too small");
    assertError(await postNarrow(alice, { ...ok, include_anchor: "yes" }), 400, "BAD_REQUEST", 'Argument "include_anchor" is not valid JSON.');
    assertError(await postNarrow(alice, { ...ok, include_anchor: 1 }), 400, "BAD_REQUEST", "include_anchor is not a boolean");
    assertError(await postNarrow(alice, { ...ok, anchor: "5", include_anchor: false, num_before: 1, num_after: 1 }), 400, "BAD_REQUEST", "The anchor can only be excluded at an end of the range");
    assertError(await postNarrow(alice, { ...ok, narrow: "channel" }), 400, "BAD_REQUEST", 'Argument "narrow" is not valid JSON.');
    assertError(await postNarrow(alice, { ...ok, narrow: { operator: "is" } }), 400, "BAD_REQUEST", "narrow is not a list");
    assertError(await postNarrow(alice, { ...ok, narrow: [["bogus", "x"]] }), 400, "BAD_NARROW", "Invalid narrow operator: unknown operator bogus", { desc: "unknown operator bogus" });
    assertError(await postNarrow(alice, { ...ok, narrow: [["channel", "no such channel 🐙"]] }), 400, "BAD_NARROW", /unknown channel/);
    assertError(await postNarrow(alice, { ...ok, flag: "mentioned" }), 400, "BAD_REQUEST", "Flag not editable: 'mentioned'");
    assertError(await postNarrow(alice, { ...ok, flag: "nope" }), 400, "BAD_REQUEST", "Invalid flag: 'nope'");
    assertError(await postNarrow(alice, { ...ok, op: "set" }), 400, "BAD_REQUEST", "Invalid message flag operation: 'set'");
    assertError(await postNarrow(alice, { ...ok, narrow: [["bogus", "x"]], flag: "nope" }), 400, "BAD_NARROW");
    // Unknown parameters are listed on success.
    assert.deepEqual(assertSuccess(await postNarrow(alice, { ...ok, client_gravatar: true })).ignored_parameters_unsupported, ["client_gravatar"]);
  });

  test("the update range is capped at 5,000 messages besides the anchor, as Zulip clamps it", async () => {
    assert.equal(MAX_MESSAGES_PER_UPDATE, 5000);
    assert.deepEqual(clampUpdateRange(100, 200), { numBefore: 100, numAfter: 200 });
    assert.deepEqual(clampUpdateRange(6000, 0), { numBefore: 5000, numAfter: 0 });
    assert.deepEqual(clampUpdateRange(0, 6000), { numBefore: 0, numAfter: 5000 });
    assert.deepEqual(clampUpdateRange(6000, 6000), { numBefore: 2500, numAfter: 2500 });
    assert.deepEqual(clampUpdateRange(4000, 3000), { numBefore: 2500, numAfter: 2500 });
    assert.deepEqual(clampUpdateRange(1000, 7000), { numBefore: 1000, numAfter: 4000 });
    assert.deepEqual(clampUpdateRange(3000, 1000), { numBefore: 3000, numAfter: 1000 });

    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const first = await send(bob, channel, "bulk");
    const ids = [first, ...(await cloneMessage(first, 5100, [alice.id, bob.id]))];
    const narrow = [{ operator: "channel", operand: channel.id }];
    t.clearEvents();

    let body = assertSuccess(await postNarrow(alice, { anchor: "oldest", num_before: 0, num_after: 100000, narrow, op: "add", flag: "read" }));
    assert.deepEqual(
      [body.processed_count, body.updated_count, body.first_processed_id, body.last_processed_id, body.found_oldest, body.found_newest],
      [5000, 5000, ids[0], ids[4999], true, false],
    );
    // Continue from where it stopped, as clients do.
    body = assertSuccess(await postNarrow(alice, { anchor: body.last_processed_id, include_anchor: false, num_before: 0, num_after: 100000, narrow, op: "add", flag: "read" }));
    assert.deepEqual([body.processed_count, body.updated_count, body.first_processed_id, body.last_processed_id, body.found_newest], [101, 101, ids[5000], ids[5100], true]);
    assert.deepEqual(await allUnreadIds(alice), []);
    const events = ownFlagEvents(alice);
    assert.deepEqual(
      events.map((e) => e.messages.length),
      [5000, 101],
    );
    assert.deepEqual(events[0].messages, ids.slice(0, 5000));

    // Both directions asked for in full: 2,500 each side plus the anchor.
    body = assertSuccess(await postNarrow(alice, { anchor: ids[2600], num_before: 6000, num_after: 6000, narrow, op: "remove", flag: "read" }));
    assert.deepEqual(
      [body.processed_count, body.updated_count, body.first_processed_id, body.last_processed_id, body.found_oldest, body.found_newest],
      [5001, 5001, ids[100], ids[5100], false, false],
    );
    assert.equal((await unreadMsgs(alice)).count, 5001);
    assert.ok(await isUnread(bob, ids[0]!));

    // And mark_all_as_read clears thousands at once.
    assert.deepEqual((await t.api(alice, "POST", "/mark_all_as_read")).body, { result: "success", msg: "", complete: true });
    assert.equal((await unreadMsgs(alice)).count, 0);
  });
});

// ---------------------------------------------------------------------------

describe("POST /mark_all_as_read", () => {
  test("marks every unread message read, answers complete: true and sends all: true with no IDs", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const left = await newChannel(bob, [alice]);
    const ids = [await send(bob, channel, "t"), await sendDm(bob, [alice]), await sendDm(bob, [alice, await newUser()]), await send(bob, left, "t")];
    await unsubscribe(alice, left);
    const queue = await flagQueue(alice);
    const bobQueue = await flagQueue(bob);
    assert.equal((await allUnreadIds(alice)).length, 3);

    const reply = await t.api(alice, "POST", "/mark_all_as_read");
    assert.deepEqual(reply.body, { result: "success", msg: "", complete: true });
    assert.deepEqual(await allUnreadIds(alice), []);
    // Every row, those of channels left included.
    for (const id of ids) assert.equal(await isUnread(alice, id), false);
    assert.deepEqual(await t.queuedEvents(alice, queue), [{ id: 0, type: "update_message_flags", op: "add", operation: "add", flag: "read", messages: [], all: true }]);
    assert.deepEqual(await t.queuedEvents(bob, bobQueue), []);
    assert.ok(await isUnread(bob, ids[0]!));

    // Nothing left unread: still complete, still an event.
    t.clearEvents();
    assert.equal(assertSuccess(await t.api(alice, "POST", "/mark_all_as_read", { extra: 1 })).complete, true);
    assert.deepEqual(ownFlagEvents(alice), [{ type: "update_message_flags", op: "add", operation: "add", flag: "read", messages: [], all: true }]);
  });

  test("unknown parameters are listed", async () => {
    const body = assertSuccess(await t.api(await newUser(), "POST", "/mark_all_as_read", { stream_id: 1 }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["stream_id"]);
  });
});

describe("POST /mark_stream_as_read and /mark_topic_as_read", () => {
  async function twoTopics() {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const other = await newChannel(bob, [alice]);
    const lunch = [await send(bob, channel, "Lunch"), await send(bob, channel, "lunch")];
    const work = [await send(bob, channel, "work")];
    const elsewhere = await send(bob, other, "Lunch");
    const dm = await sendDm(bob, [alice]);
    return { alice, bob, channel, other, lunch, work, elsewhere, dm };
  }

  test("a channel: only its unread messages; the event lists them ascending; nothing unread sends nothing", async () => {
    const { alice, bob, channel, lunch, work, elsewhere, dm } = await twoTopics();
    assertSuccess(await postFlags(alice, [lunch[1]!], "add", "read"));
    const queue = await flagQueue(alice);
    t.clearEvents();
    const reply = await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: channel.id });
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    assert.deepEqual(await allUnreadIds(alice), [elsewhere, dm].sort((a, b) => a - b));
    assert.deepEqual(await t.queuedEvents(alice, queue), [{ id: 0, ...addEvent("read", [lunch[0]!, work[0]!]) }]);
    ownFlagEvents(alice);
    assert.ok(await isUnread(bob, lunch[0]!));

    t.clearEvents();
    assertSuccess(await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: channel.id }));
    assert.deepEqual(flagNotifications(), []);
  });

  test("a topic: matched without regard to case; other topics and channels stay unread", async () => {
    const { alice, channel, lunch, work, elsewhere, dm } = await twoTopics();
    t.clearEvents();
    assert.deepEqual((await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id, topic_name: "LUNCH" })).body, { result: "success", msg: "" });
    assert.deepEqual(await allUnreadIds(alice), [work[0]!, elsewhere, dm].sort((a, b) => a - b));
    assert.deepEqual(ownFlagEvents(alice), [addEvent("read", lunch)]);
    t.clearEvents();
    assertSuccess(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id, topic_name: "lunch" }));
    assert.deepEqual(flagNotifications(), []);
  });

  test("the empty topic by its display name marks that topic only", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const empty = await send(bob, channel, "");
    const named = await send(bob, channel, "named");
    for (const name of ["general chat", "(no topic)", ""]) {
      assertSuccess(await postFlags(alice, [empty], "remove", "read"));
      t.clearEvents();
      assertSuccess(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id, topic_name: name }));
      assert.deepEqual(ownFlagEvents(alice), [addEvent("read", [empty])], name);
      assert.ok(await isUnread(alice, named), name);
    }
  });

  test("errors: missing or bad stream_id, channels one cannot read, unknown topics", async () => {
    const { alice, bob, channel } = await twoTopics();
    assertError(await t.api(alice, "POST", "/mark_stream_as_read", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream_id' argument", { var_name: "stream_id" });
    assertError(await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: "general" }), 400, "BAD_REQUEST", "stream_id is not an integer");
    assertError(await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: 999999999 }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic_name' argument", {
      var_name: "topic_name",
    });
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { topic_name: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream_id' argument");
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: 999999999, topic_name: "x" }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id, topic_name: "dinner" }), 400, "BAD_REQUEST", "No such topic 'dinner'");

    const secret = await newChannel(bob, [], { invite_only: true });
    await send(bob, secret, "plans");
    assertError(await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: secret.id }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: secret.id, topic_name: "plans" }), 400, "BAD_REQUEST", "Invalid channel ID");

    // A topic whose messages the user only reads through history was never received: no such topic for them.
    const open = await newChannel(bob);
    await send(bob, open, "history");
    assertError(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: open.id, topic_name: "history" }), 400, "BAD_REQUEST", "No such topic 'history'");
    // But the public channel itself may be marked read (nothing to do).
    assertSuccess(await t.api(alice, "POST", "/mark_stream_as_read", { stream_id: open.id }));

    // Guests cannot reach public channels they are not in.
    const guest = await newUser("Guest", Role.GUEST);
    assertError(await t.api(guest, "POST", "/mark_stream_as_read", { stream_id: open.id }), 400, "BAD_REQUEST", "Invalid channel ID");
  });

  test("a channel the user left: its old unread messages can still be marked read", async () => {
    const alice = await newUser();
    const bob = await newUser();
    const channel = await newChannel(bob, [alice]);
    const m = await send(bob, channel, "t");
    await unsubscribe(alice, channel);
    t.clearEvents();
    assertSuccess(await t.api(alice, "POST", "/mark_topic_as_read", { stream_id: channel.id, topic_name: "t" }));
    assert.deepEqual(ownFlagEvents(alice), [addEvent("read", [m])]);
    assert.equal(await isUnread(alice, m), false);
  });
});
