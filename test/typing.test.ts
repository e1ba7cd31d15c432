// API-level tests of POST /typing: direct-message and channel typing
// notifications, their validation, the privacy settings that stop them, and
// who receives them, checked through real event queues (POST /register and
// GET /events) as well as at the notifier; and of POST
// /messages/{message_id}/typing (typing_edit_message events while editing).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;

before(async () => {
  t = await startTestApp();
  sys = await t.systemGroupIds();
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
const db = () => t.services.storage.db;

const STREAM_TYPING = { stream_typing_notifications: true };

/** The address events show for a user: the API email (user{id}@… when the real one is hidden). */
async function person(user: TestUser): Promise<{ user_id: number; email: string }> {
  const row = await db().selectFrom("users").select(["id", "email"]).where("id", "=", user.id).executeTakeFirstOrThrow();
  return { user_id: row.id, email: row.email };
}

/** A queue for typing events only, with the given client capabilities. */
async function typingQueue(user: TestUser, capabilities: Record<string, boolean> = {}): Promise<string> {
  const reply = await t.register(user, { event_types: ["typing"], client_capabilities: capabilities });
  assert.equal(typeof reply.queue_id, "string");
  assert.equal(reply.last_event_id, -1);
  return reply.queue_id as string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function eventsOf(user: TestUser, queueId: string): Promise<any[]> {
  return t.queuedEvents(user, queueId);
}

function typing(user: TestUser, params: Params): Promise<ApiResponse> {
  return t.api(user, "POST", "/typing", params);
}

function assertPlainSuccess(response: ApiResponse): void {
  assertSuccess(response);
  assert.deepEqual(response.body, { result: "success", msg: "" });
}

function assertBad(response: ApiResponse, msg: string): void {
  assertError(response, 400, "BAD_REQUEST", msg);
  assert.equal(response.body.var_name, undefined, JSON.stringify(response.body));
}

/** Asserts that a failed request told no one anything. */
async function assertFailsSilently(request: () => Promise<ApiResponse>, msg: string): Promise<void> {
  t.clearEvents();
  assertBad(await request(), msg);
  assert.deepEqual(t.events.filter((n) => n.event.type === "typing"), []);
}

let counter = 0;
async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

async function setSetting(user: TestUser, name: string, value: boolean): Promise<void> {
  assertSuccess(await t.api(user, "PATCH", "/settings", { [name]: value }));
}

async function channelId(viewer: TestUser, name: string): Promise<number> {
  return assertSuccess(await t.api(viewer, "GET", "/get_stream_id", { stream: name })).stream_id as number;
}

/** Creates a channel with `actor` subscribed (plus `subscribers`), returning its ID. */
async function newChannel(actor: TestUser, subscribers: TestUser[] = [], params: Params = {}): Promise<{ id: number; name: string }> {
  const name = uniqueName("typing channel");
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [actor.id, ...subscribers.map((s) => s.id)],
      ...params,
    }),
  );
  return { id: await channelId(actor, name), name };
}

/** 100 members, made once: enough to push a channel past the typing size limit. */
let crowdUsers: TestUser[] | undefined;
async function crowd(): Promise<TestUser[]> {
  if (!crowdUsers) {
    crowdUsers = [];
    for (let i = 0; i < 100; i++) crowdUsers.push(await t.createUser(`Crowd ${i}`));
  }
  return crowdUsers;
}

async function subscribe(actor: TestUser, name: string, userIds: number[]): Promise<void> {
  assertSuccess(await t.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: userIds }));
}

// ---------------------------------------------------------------------------
// Direct messages

describe("POST /typing: direct messages", () => {
  test("the event goes to every recipient and the sender, in request order with the sender last", async () => {
    const { member, admin, moderator, owner, guest } = u();
    const queues = new Map<TestUser, string>();
    for (const user of [member, admin, moderator, owner, guest]) queues.set(user, await typingQueue(user));

    assertPlainSuccess(await typing(member, { op: "start", to: [moderator.id, admin.id] }));

    const expected = {
      type: "typing",
      op: "start",
      message_type: "direct",
      sender: await person(member),
      recipients: [await person(moderator), await person(admin), await person(member)],
      id: 0,
    };
    for (const user of [member, admin, moderator]) assert.deepEqual(await eventsOf(user, queues.get(user)!), [expected], `user ${user.email}`);
    // Users outside the conversation hear nothing.
    for (const user of [owner, guest]) assert.deepEqual(await eventsOf(user, queues.get(user)!), [], `user ${user.email}`);
  });

  test("at the notifier: one event, addressed to the participants only", async () => {
    const { member, admin } = u();
    t.clearEvents();
    assertPlainSuccess(await typing(member, { op: "start", to: [admin.id] }));
    const sent = t.events.filter((n) => n.event.type === "typing");
    assert.equal(sent.length, 1);
    assert.deepEqual([...sent[0]!.userIds].sort((a, b) => a - b), [member.id, admin.id].sort((a, b) => a - b));
    assert.deepEqual(sent[0]!.event, {
      type: "typing",
      op: "start",
      message_type: "direct",
      sender: await person(member),
      recipients: [await person(admin), await person(member)],
    });
  });

  test("a sender listed in 'to' keeps its place and is not appended again", async () => {
    const { member, admin, moderator } = u();
    const queue = await typingQueue(admin);
    assertPlainSuccess(await typing(member, { op: "start", to: [admin.id, member.id, moderator.id] }));
    assert.deepEqual(await eventsOf(admin, queue), [
      {
        type: "typing",
        op: "start",
        message_type: "direct",
        sender: await person(member),
        recipients: [await person(admin), await person(member), await person(moderator)],
        id: 0,
      },
    ]);
  });

  test("op stop, and type=direct given explicitly", async () => {
    const { member, admin } = u();
    const queue = await typingQueue(admin);
    assertPlainSuccess(await typing(member, { type: "direct", op: "stop", to: [admin.id] }));
    assert.deepEqual(await eventsOf(admin, queue), [
      {
        type: "typing",
        op: "stop",
        message_type: "direct",
        sender: await person(member),
        recipients: [await person(admin), await person(member)],
        id: 0,
      },
    ]);
  });

  test("typing to oneself reaches one's own queues", async () => {
    const { member } = u();
    const queue = await typingQueue(member);
    assertPlainSuccess(await typing(member, { op: "start", to: [member.id] }));
    const self = await person(member);
    assert.deepEqual(await eventsOf(member, queue), [
      { type: "typing", op: "start", message_type: "direct", sender: self, recipients: [self], id: 0 },
    ]);
  });

  test("direct typing events reach queues with and without the stream_typing_notifications capability", async () => {
    const { member, admin } = u();
    const plain = await typingQueue(admin);
    const capable = await typingQueue(admin, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { op: "start", to: [admin.id] }));
    assert.equal((await eventsOf(admin, plain)).length, 1);
    assert.equal((await eventsOf(admin, capable)).length, 1);
  });

  test("a deactivated recipient is accepted and listed, but hears nothing", async () => {
    const { member, admin } = u();
    const gone = await newUser("Gone");
    const gonePerson = await person(gone);
    assertSuccess(await t.api(admin, "DELETE", `/users/${gone.id}`));

    const queue = await typingQueue(member);
    t.clearEvents();
    assertPlainSuccess(await typing(member, { op: "start", to: [gone.id] }));
    const expected = {
      type: "typing",
      op: "start",
      message_type: "direct",
      sender: await person(member),
      recipients: [gonePerson, await person(member)],
    };
    assert.deepEqual(await eventsOf(member, queue), [{ ...expected, id: 0 }]);
    const sent = t.events.filter((n) => n.event.type === "typing");
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0]!.event, expected);
    assert.deepEqual(sent[0]!.userIds, [member.id]);
    assert.deepEqual(t.eventsFor(gone.id, "typing"), []);
  });

  test("an unknown user ID fails the whole request, naming the first one", async () => {
    const { member, admin } = u();
    const queue = await typingQueue(admin);
    await assertFailsSilently(() => typing(member, { op: "start", to: [admin.id, 999999, 888888] }), "Invalid user ID 999999");
    await assertFailsSilently(() => typing(member, { op: "start", to: [0] }), "Invalid user ID 0");
    await assertFailsSilently(() => typing(member, { op: "start", to: [-3] }), "Invalid user ID -3");
    await assertFailsSilently(() => typing(member, { op: "start", to: [2 ** 40] }), `Invalid user ID ${2 ** 40}`);
    assert.deepEqual(await eventsOf(admin, queue), []);
  });

  test("'to' is required for direct typing and may not be empty", async () => {
    const { member } = u();
    await assertFailsSilently(() => typing(member, { op: "start" }), "Missing 'to' argument");
    await assertFailsSilently(() => typing(member, { type: "direct", op: "start" }), "Missing 'to' argument");
    await assertFailsSilently(() => typing(member, { op: "start", to: [] }), "Empty 'to' list");
  });

  test("'to' must be a JSON list of integers", async () => {
    const { member, admin } = u();
    await assertFailsSilently(() => typing(member, { op: "start", to: "abc" }), 'Argument "to" is not valid JSON.');
    await assertFailsSilently(() => typing(member, { op: "start", to: admin.email }), 'Argument "to" is not valid JSON.');
    await assertFailsSilently(() => typing(member, { op: "start", to: admin.id }), "to is not a list");
    await assertFailsSilently(() => typing(member, { op: "start", to: { a: 1 } }), "to is not a list");
    await assertFailsSilently(() => typing(member, { op: "start", to: ["a"] }), "to[0] is not an integer");
    await assertFailsSilently(() => typing(member, { op: "start", to: [admin.id, 1.5] }), "to[1] is not an integer");
    // The old form with email addresses is gone.
    await assertFailsSilently(() => typing(member, { op: "start", to: [admin.email] }), "to[0] is not an integer");
  });

  test("type must be direct, stream or channel; 'private' is no longer accepted", async () => {
    const { member, admin } = u();
    await assertFailsSilently(() => typing(member, { type: "private", op: "start", to: [admin.id] }), "Invalid type");
    await assertFailsSilently(() => typing(member, { type: "huddle", op: "start", to: [admin.id] }), "Invalid type");
    await assertFailsSilently(() => typing(member, { type: "", op: "start", to: [admin.id] }), "Invalid type");
  });

  test("op must be start or stop, and is required", async () => {
    const { member, admin } = u();
    await assertFailsSilently(() => typing(member, { op: "begin", to: [admin.id] }), "Invalid op");
    await assertFailsSilently(() => typing(member, { op: "START", to: [admin.id] }), "Invalid op");
    const missing = await typing(member, { to: [admin.id] });
    assertError(missing, 400, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument", { var_name: "op" });
  });

  test("requires authentication", async () => {
    const response = await t.api(null, "POST", "/typing", { op: "start", to: [u().admin.id] });
    assert.equal(response.status, 401);
    assert.equal(response.body.result, "error");
  });

  test("a sender who turned off send_private_typing_notifications cannot send direct typing", async () => {
    const quiet = await newUser("Quiet");
    const { admin } = u();
    await setSetting(quiet, "send_private_typing_notifications", false);
    const queue = await typingQueue(admin);
    await assertFailsSilently(
      () => typing(quiet, { op: "start", to: [admin.id] }),
      "User has disabled typing notifications for direct messages",
    );
    assert.deepEqual(await eventsOf(admin, queue), []);
    // The check comes after the 'to' checks…
    await assertFailsSilently(() => typing(quiet, { op: "start" }), "Missing 'to' argument");
    await assertFailsSilently(() => typing(quiet, { op: "start", to: [] }), "Empty 'to' list");
    // …and before the recipients are looked up.
    await assertFailsSilently(() => typing(quiet, { op: "start", to: [999999] }), "User has disabled typing notifications for direct messages");
    // Channel typing is a separate setting.
    const channel = await newChannel(quiet);
    assertPlainSuccess(await typing(quiet, { type: "stream", op: "start", stream_id: channel.id, topic: "t" }));
    // Turned back on, typing works again.
    await setSetting(quiet, "send_private_typing_notifications", true);
    assertPlainSuccess(await typing(quiet, { op: "start", to: [admin.id] }));
    assert.equal((await eventsOf(admin, queue)).length, 1);
  });

  test("a recipient who turned off receives_typing_notifications gets nothing; the others still do", async () => {
    const { member, admin } = u();
    const deaf = await newUser("Deaf");
    await setSetting(deaf, "receives_typing_notifications", false);
    const deafQueue = await typingQueue(deaf);
    const adminQueue = await typingQueue(admin);
    const memberQueue = await typingQueue(member);
    assertPlainSuccess(await typing(member, { op: "start", to: [deaf.id, admin.id] }));
    const expected = {
      type: "typing",
      op: "start",
      message_type: "direct",
      sender: await person(member),
      recipients: [await person(deaf), await person(admin), await person(member)],
      id: 0,
    };
    assert.deepEqual(await eventsOf(deaf, deafQueue), []);
    assert.deepEqual(await eventsOf(admin, adminQueue), [expected]);
    assert.deepEqual(await eventsOf(member, memberQueue), [expected]);

    // Such a user may still send: only their own queues stay silent.
    assertPlainSuccess(await typing(deaf, { op: "start", to: [admin.id] }));
    assert.deepEqual(await eventsOf(deaf, deafQueue), []);
    assert.equal((await eventsOf(admin, adminQueue)).length, 2);
  });
});

// ---------------------------------------------------------------------------
// Channels

describe("POST /typing: channels", () => {
  test("type=stream: subscribers with the capability get the event; non-subscribers and older clients do not", async () => {
    const { member, admin, guest, moderator, owner } = u();
    const channel = await newChannel(member, [admin, guest]);
    const capable = new Map<TestUser, string>();
    for (const user of [member, admin, guest, moderator, owner]) capable.set(user, await typingQueue(user, STREAM_TYPING));
    const oldClient = await typingQueue(admin);

    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "castle" }));

    const expected = {
      type: "typing",
      op: "start",
      message_type: "stream",
      sender: await person(member),
      stream_id: channel.id,
      topic: "castle",
      id: 0,
    };
    for (const user of [member, admin, guest]) assert.deepEqual(await eventsOf(user, capable.get(user)!), [expected], `user ${user.email}`);
    for (const user of [moderator, owner]) assert.deepEqual(await eventsOf(user, capable.get(user)!), [], `user ${user.email}`);
    assert.deepEqual(await eventsOf(admin, oldClient), []);
  });

  test("type=channel is the same, and the event still says message_type stream", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const queue = await typingQueue(admin, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "channel", op: "stop", stream_id: channel.id, topic: "castle" }));
    assert.deepEqual(await eventsOf(admin, queue), [
      { type: "typing", op: "stop", message_type: "stream", sender: await person(member), stream_id: channel.id, topic: "castle", id: 0 },
    ]);
  });

  test("at the notifier: addressed to the channel's subscribers", async () => {
    const { member, admin, guest } = u();
    const channel = await newChannel(member, [admin, guest]);
    t.clearEvents();
    assertPlainSuccess(await typing(member, { type: "channel", op: "start", stream_id: channel.id, topic: "castle" }));
    const sent = t.events.filter((n) => n.event.type === "typing");
    assert.equal(sent.length, 1);
    assert.deepEqual([...sent[0]!.userIds].sort((a, b) => a - b), [member.id, admin.id, guest.id].sort((a, b) => a - b));
  });

  test("a subscriber who is not typing-capable in one queue still gets it in another; unsubscribed users do not", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(member, [admin, moderator]);
    assertSuccess(await t.api(moderator, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
    const modQueue = await typingQueue(moderator, STREAM_TYPING);
    const adminQueue = await typingQueue(admin, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(await eventsOf(moderator, modQueue), []);
    assert.equal((await eventsOf(admin, adminQueue)).length, 1);
  });

  test("stream_id is required, as a plain BAD_REQUEST", async () => {
    const { member } = u();
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", topic: "castle" }), "Missing 'stream_id' argument");
    await assertFailsSilently(() => typing(member, { type: "channel", op: "start", topic: "castle" }), "Missing 'stream_id' argument");
    // 'to' does not stand in for it.
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", to: [u().admin.id], topic: "castle" }), "Missing 'stream_id' argument");
  });

  test("topic is required", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: channel.id }), "Missing topic");
  });

  test("stream_id must be an integer", async () => {
    const { member } = u();
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: "abc", topic: "x" }), "stream_id is not an integer");
  });

  test("an unknown channel is an invalid channel ID", async () => {
    const { member } = u();
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: 999999, topic: "x" }), "Invalid channel ID");
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: 0, topic: "x" }), "Invalid channel ID");
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: 2 ** 40, topic: "x" }), "Invalid channel ID");
  });

  test("a private channel the sender cannot access looks like an unknown one", async () => {
    const { member, admin } = u();
    const secret = await newChannel(admin, [], { invite_only: true });
    const queue = await typingQueue(admin, STREAM_TYPING);
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: secret.id, topic: "x" }), "Invalid channel ID");
    assert.deepEqual(await eventsOf(admin, queue), []);
    // Access is checked before the posting permission, so nothing about the channel leaks.
    const locked = await newChannel(admin, [], { invite_only: true, can_send_message_group: sys["role:nobody"] });
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: locked.id, topic: "x" }), "Invalid channel ID");
    // Once subscribed, the member may type there.
    await subscribe(admin, secret.name, [member.id]);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: secret.id, topic: "x" }));
    assert.equal((await eventsOf(admin, queue)).length, 1);
  });

  test("an organization administrator without a subscription cannot type in a private channel either", async () => {
    const { member, admin } = u();
    const secret = await newChannel(member, [], { invite_only: true });
    await assertFailsSilently(() => typing(admin, { type: "stream", op: "start", stream_id: secret.id, topic: "x" }), "Invalid channel ID");
  });

  test("can_send_message_group restricts typing like posting", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(admin, [member, moderator], { can_send_message_group: sys["role:administrators"] });
    const queue = await typingQueue(moderator, STREAM_TYPING);
    await assertFailsSilently(
      () => typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }),
      "You do not have permission to post in this channel.",
    );
    await assertFailsSilently(
      () => typing(moderator, { type: "channel", op: "start", stream_id: channel.id, topic: "x" }),
      "You do not have permission to post in this channel.",
    );
    assert.deepEqual(await eventsOf(moderator, queue), []);
    assertPlainSuccess(await typing(admin, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(await eventsOf(moderator, queue), [
      { type: "typing", op: "start", message_type: "stream", sender: await person(admin), stream_id: channel.id, topic: "x", id: 0 },
    ]);
  });

  test("can_send_message_group role:nobody stops everyone, administrators included", async () => {
    const { admin } = u();
    const channel = await newChannel(admin, [], { can_send_message_group: sys["role:nobody"] });
    await assertFailsSilently(
      () => typing(admin, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }),
      "You do not have permission to post in this channel.",
    );
  });

  test("an archived channel refuses typing", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${channel.id}`));
    const queue = await typingQueue(admin, STREAM_TYPING);
    await assertFailsSilently(() => typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }), "Invalid channel ID");
    await assertFailsSilently(() => typing(admin, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }), "Invalid channel ID");
    assert.deepEqual(await eventsOf(admin, queue), []);
  });

  test("a sender who turned off send_stream_typing_notifications cannot send channel typing", async () => {
    const quiet = await newUser("Hushed");
    const { admin } = u();
    const channel = await newChannel(quiet, [admin]);
    await setSetting(quiet, "send_stream_typing_notifications", false);
    const queue = await typingQueue(admin, STREAM_TYPING);
    await assertFailsSilently(
      () => typing(quiet, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }),
      "User has disabled typing notifications for channel messages",
    );
    // Checked after stream_id and topic, before the channel is looked up.
    await assertFailsSilently(() => typing(quiet, { type: "stream", op: "start", topic: "x" }), "Missing 'stream_id' argument");
    await assertFailsSilently(() => typing(quiet, { type: "stream", op: "start", stream_id: channel.id }), "Missing topic");
    await assertFailsSilently(
      () => typing(quiet, { type: "stream", op: "start", stream_id: 999999, topic: "x" }),
      "User has disabled typing notifications for channel messages",
    );
    // Direct typing is unaffected.
    assertPlainSuccess(await typing(quiet, { op: "start", to: [admin.id] }));
    assert.deepEqual(
      (await eventsOf(admin, queue)).map((e) => e.message_type),
      ["direct"],
    );
  });

  test("a subscriber who turned off receives_typing_notifications gets nothing", async () => {
    const { member, admin } = u();
    const deaf = await newUser("Unhearing");
    await setSetting(deaf, "receives_typing_notifications", false);
    const channel = await newChannel(member, [admin, deaf]);
    const deafQueue = await typingQueue(deaf, STREAM_TYPING);
    const adminQueue = await typingQueue(admin, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(await eventsOf(deaf, deafQueue), []);
    assert.equal((await eventsOf(admin, adminQueue)).length, 1);
  });

  test("the empty topic: '(no topic)', 'general chat' and '' become '' for empty_topic_name clients, 'general chat' for others", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const modern = await typingQueue(admin, { ...STREAM_TYPING, empty_topic_name: true });
    const older = await typingQueue(admin, STREAM_TYPING);
    const sender = await person(member);
    const base = { type: "typing", op: "start", message_type: "stream", sender, stream_id: channel.id };

    for (const topic of ["(no topic)", "general chat", ""]) {
      assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic }));
    }
    assert.deepEqual(await eventsOf(admin, modern), [
      { ...base, topic: "", id: 0 },
      { ...base, topic: "", id: 1 },
      { ...base, topic: "", id: 2 },
    ]);
    assert.deepEqual(await eventsOf(admin, older), [
      { ...base, topic: "general chat", id: 0 },
      { ...base, topic: "general chat", id: 1 },
      { ...base, topic: "general chat", id: 2 },
    ]);
  });

  test("an ordinary topic is the same for every client", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const modern = await typingQueue(admin, { ...STREAM_TYPING, empty_topic_name: true });
    const older = await typingQueue(admin, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "general chat room" }));
    assert.equal((await eventsOf(admin, modern))[0]?.topic, "general chat room");
    assert.equal((await eventsOf(admin, older))[0]?.topic, "general chat room");
  });

  test("a channel with more than 100 subscribers gets no typing events, though the request succeeds", async () => {
    const { member } = u();
    const fillers = await crowd();
    // member + 99 others: exactly 100 subscribers, still within the limit.
    const channel = await newChannel(member, fillers.slice(0, 99));
    const listener = fillers[0]!;
    const queue = await typingQueue(listener, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(await eventsOf(listener, queue), [
      { type: "typing", op: "start", message_type: "stream", sender: await person(member), stream_id: channel.id, topic: "x", id: 0 },
    ]);

    // The 101st subscriber tips it over.
    await subscribe(member, channel.name, [fillers[99]!.id]);
    t.clearEvents();
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(t.events.filter((n) => n.event.type === "typing"), []);
    assert.deepEqual(await eventsOf(listener, queue), [
      { type: "typing", op: "start", message_type: "stream", sender: await person(member), stream_id: channel.id, topic: "x", id: 0 },
    ]);

    // Deactivated subscribers do not count.
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${fillers[98]!.id}`));
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "y" }));
    const events = await eventsOf(listener, queue);
    assert.equal(events.length, 2);
    assert.equal(events[1].topic, "y");
  });
});

// ---------------------------------------------------------------------------
// Guests and bots

describe("POST /typing: guests and bots", () => {
  test("a guest can send direct typing", async () => {
    const { guest, member } = u();
    const queue = await typingQueue(member);
    assertPlainSuccess(await typing(guest, { op: "start", to: [member.id] }));
    assert.deepEqual(await eventsOf(member, queue), [
      {
        type: "typing",
        op: "start",
        message_type: "direct",
        sender: await person(guest),
        recipients: [await person(member), await person(guest)],
        id: 0,
      },
    ]);
  });

  test("a guest can type in a channel they are subscribed to, but not in a public channel they are not in", async () => {
    const { guest, member } = u();
    const joined = await newChannel(member, [guest]);
    const other = await newChannel(member);
    const queue = await typingQueue(member, STREAM_TYPING);
    assertPlainSuccess(await typing(guest, { type: "stream", op: "start", stream_id: joined.id, topic: "hi" }));
    assert.deepEqual(await eventsOf(member, queue), [
      { type: "typing", op: "start", message_type: "stream", sender: await person(guest), stream_id: joined.id, topic: "hi", id: 0 },
    ]);
    await assertFailsSilently(() => typing(guest, { type: "stream", op: "start", stream_id: other.id, topic: "hi" }), "Invalid channel ID");
  });

  test("a member can type in a public channel without subscribing", async () => {
    const { member, admin } = u();
    const channel = await newChannel(admin);
    const queue = await typingQueue(admin, STREAM_TYPING);
    const memberQueue = await typingQueue(member, STREAM_TYPING);
    assertPlainSuccess(await typing(member, { type: "stream", op: "start", stream_id: channel.id, topic: "hi" }));
    assert.equal((await eventsOf(admin, queue)).length, 1);
    // Not a subscriber: the sender's own queues stay quiet.
    assert.deepEqual(await eventsOf(member, memberQueue), []);
  });

  test("a bot can send direct typing", async () => {
    const { bot, member } = u();
    const queue = await typingQueue(member);
    const botQueue = await typingQueue(bot);
    assertPlainSuccess(await typing(bot, { op: "start", to: [member.id] }));
    const expected = {
      type: "typing",
      op: "start",
      message_type: "direct",
      sender: await person(bot),
      recipients: [await person(member), await person(bot)],
      id: 0,
    };
    assert.deepEqual(await eventsOf(member, queue), [expected]);
    assert.deepEqual(await eventsOf(bot, botQueue), [expected]);
  });

  test("a bot can type in a channel it is subscribed to, and receives channel typing there", async () => {
    const { bot, member } = u();
    const channel = await newChannel(member, [bot]);
    const queue = await typingQueue(member, STREAM_TYPING);
    const botQueue = await typingQueue(bot, STREAM_TYPING);
    assertPlainSuccess(await typing(bot, { type: "channel", op: "start", stream_id: channel.id, topic: "beep" }));
    const expected = { type: "typing", op: "start", message_type: "stream", sender: await person(bot), stream_id: channel.id, topic: "beep", id: 0 };
    assert.deepEqual(await eventsOf(member, queue), [expected]);
    assert.deepEqual(await eventsOf(bot, botQueue), [expected]);
  });

  test("a bot may type where its owner may post", async () => {
    const { admin, member, bot } = u();
    counter += 1;
    const adminsBot = await t.createUser(`Helper Bot ${counter}`, Role.MEMBER, { bot: true, botOwnerId: admin.id });
    const channel = await newChannel(admin, [member, bot, adminsBot], { can_send_message_group: sys["role:administrators"] });
    const queue = await typingQueue(member, STREAM_TYPING);
    assertPlainSuccess(await typing(adminsBot, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }));
    assert.deepEqual(await eventsOf(member, queue), [
      { type: "typing", op: "start", message_type: "stream", sender: await person(adminsBot), stream_id: channel.id, topic: "x", id: 0 },
    ]);
    // The member's bot may not: its owner may not post there either.
    await assertFailsSilently(
      () => typing(bot, { type: "stream", op: "start", stream_id: channel.id, topic: "x" }),
      "You do not have permission to post in this channel.",
    );
  });

  test("a bot cannot type in a private channel it is not in", async () => {
    const { bot, admin } = u();
    const secret = await newChannel(admin, [], { invite_only: true });
    await assertFailsSilently(() => typing(bot, { type: "stream", op: "start", stream_id: secret.id, topic: "x" }), "Invalid channel ID");
  });
});

// ---------------------------------------------------------------------------
// Editing a message: POST /messages/{message_id}/typing

describe("POST /messages/{message_id}/typing", () => {
  const editTyping = (user: TestUser, messageId: number, params: Params = { op: "start" }) => t.api(user, "POST", `/messages/${messageId}/typing`, params);

  async function editQueue(user: TestUser, capabilities: Record<string, boolean> = {}): Promise<string> {
    return (await t.register(user, { event_types: ["typing_edit_message"], client_capabilities: capabilities })).queue_id as string;
  }

  async function sendToChannel(sender: TestUser, channelName: string, topic = "castle"): Promise<number> {
    return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channelName, topic, content: "hello" })).id as number;
  }

  async function sendDirect(sender: TestUser, to: TestUser[]): Promise<number> {
    return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((x) => x.id), content: "hello" })).id as number;
  }

  async function realmSettings(params: Params): Promise<void> {
    assertSuccess(await t.api(u().owner, "PATCH", "/realm", params));
  }

  const editEvents = () => t.events.filter((n) => n.event.type === "typing_edit_message");

  test("a channel message: start and stop go to the subscribers, the editor included; Zulip's shape", async () => {
    const { member, admin, guest, owner } = u();
    const channel = await newChannel(member, [admin, guest]);
    const id = await sendToChannel(member, channel.name);
    const queues = new Map<TestUser, string>();
    for (const user of [member, admin, guest, owner]) queues.set(user, await editQueue(user));
    t.clearEvents();
    assertPlainSuccess(await editTyping(member, id, { op: "start" }));
    assertPlainSuccess(await editTyping(member, id, { op: "stop" }));
    const recipient = { type: "channel", channel_id: channel.id, topic: "castle" };
    for (const user of [member, admin, guest]) {
      assert.deepEqual(await eventsOf(user, queues.get(user)!), [
        { type: "typing_edit_message", op: "start", sender_id: member.id, message_id: id, recipient, id: 0 },
        { type: "typing_edit_message", op: "stop", sender_id: member.id, message_id: id, recipient, id: 1 },
      ]);
    }
    assert.deepEqual(await eventsOf(owner, queues.get(owner)!), []);
    const sent = editEvents();
    assert.equal(sent.length, 2);
    assert.deepEqual([...sent[0]!.userIds].sort((a, b) => a - b), [member.id, admin.id, guest.id].sort((a, b) => a - b));
    // No typing events, and no capability needed.
    assert.equal(t.events.filter((n) => n.event.type === "typing").length, 0);
  });

  test("a direct message: recipient lists the participants who receive typing notifications", async () => {
    const { member, admin, moderator } = u();
    const id = await sendDirect(member, [admin, moderator]);
    const queue = await editQueue(moderator);
    t.clearEvents();
    assertPlainSuccess(await editTyping(member, id));
    const ids = [member.id, admin.id, moderator.id].sort((a, b) => a - b);
    assert.deepEqual(await eventsOf(moderator, queue), [
      { type: "typing_edit_message", op: "start", sender_id: member.id, message_id: id, recipient: { type: "direct", user_ids: ids }, id: 0 },
    ]);
    assert.deepEqual([...editEvents()[0]!.userIds].sort((a, b) => a - b), ids);

    // One-to-one, and to oneself.
    const oneToOne = await sendDirect(member, [admin]);
    t.clearEvents();
    assertPlainSuccess(await editTyping(member, oneToOne));
    assert.deepEqual(editEvents()[0]!.event.recipient, { type: "direct", user_ids: [member.id, admin.id].sort((a, b) => a - b) });
    const self = await sendDirect(member, [member]);
    t.clearEvents();
    assertPlainSuccess(await editTyping(member, self));
    assert.deepEqual(editEvents()[0]!.event.recipient, { type: "direct", user_ids: [member.id] });
    assert.deepEqual(editEvents()[0]!.userIds, [member.id]);
  });

  test("receives_typing_notifications off: left out of the channel audience and of a direct message's user_ids", async () => {
    const editor = await newUser("Editor");
    const quiet = await newUser("Quiet");
    const loud = await newUser("Loud");
    await setSetting(quiet, "receives_typing_notifications", false);
    const channel = await newChannel(editor, [quiet, loud]);
    const channelMessage = await sendToChannel(editor, channel.name);
    t.clearEvents();
    assertPlainSuccess(await editTyping(editor, channelMessage));
    assert.deepEqual([...editEvents()[0]!.userIds].sort((a, b) => a - b), [editor.id, loud.id].sort((a, b) => a - b));
    const dm = await sendDirect(editor, [quiet, loud]);
    t.clearEvents();
    assertPlainSuccess(await editTyping(editor, dm));
    const ids = [editor.id, loud.id].sort((a, b) => a - b);
    assert.deepEqual(editEvents()[0]!.event.recipient, { type: "direct", user_ids: ids });
    assert.deepEqual([...editEvents()[0]!.userIds].sort((a, b) => a - b), ids);
  });

  test("only the sender may: someone else's message, a bot's owner included", async () => {
    const { member, admin, bot } = u();
    const channel = await newChannel(member, [admin, bot]);
    const id = await sendToChannel(member, channel.name);
    t.clearEvents();
    assertBad(await editTyping(admin, id), "You don't have permission to edit this message");
    const botMessage = await sendToChannel(bot, channel.name);
    assertBad(await editTyping(member, botMessage), "You don't have permission to edit this message");
    assert.deepEqual(editEvents(), []);
    // The bot itself may.
    assertPlainSuccess(await editTyping(bot, botMessage));
  });

  test("every role may announce editing its own message", async () => {
    const channel = await newChannel(u().owner, [u().admin, u().moderator, u().member, u().guest]);
    for (const role of ["owner", "admin", "moderator", "member", "guest"] as const) {
      const id = await sendToChannel(u()[role], channel.name);
      assertPlainSuccess(await editTyping(u()[role], id));
    }
  });

  test("messages one cannot read, unknown IDs and archived channels: Invalid message(s)", async () => {
    const { member, admin } = u();
    const secret = await newChannel(admin, [], { invite_only: true });
    const hidden = await sendToChannel(admin, secret.name);
    assertBad(await editTyping(member, hidden), "Invalid message(s)");
    assertBad(await editTyping(member, 99999999), "Invalid message(s)");
    const doomed = await newChannel(member, [admin]);
    const id = await sendToChannel(member, doomed.name);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${doomed.id}`));
    t.clearEvents();
    assertBad(await editTyping(member, id), "Invalid message(s)");
    assert.deepEqual(editEvents(), []);
  });

  test("editing turned off, or past the limit (without the 20 s grace edits get)", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const id = await sendToChannel(member, channel.name);
    await realmSettings({ allow_message_editing: false });
    try {
      assertBad(await editTyping(member, id), "Your organization has turned off message editing");
    } finally {
      await realmSettings({ allow_message_editing: true });
    }
    const realNow = t.services.now;
    await realmSettings({ message_content_edit_limit_seconds: 60 });
    try {
      const sentAt = (await db().selectFrom("messages").select("date_sent").where("id", "=", id).executeTakeFirstOrThrow()).date_sent;
      t.services.now = () => sentAt + 70;
      assertBad(await editTyping(member, id), "The time limit for editing this message has passed");
      // An edit at the same moment is still allowed (limit + 20 s).
      assertSuccess(await t.api(member, "PATCH", `/messages/${id}`, { content: "edited" }));
      t.services.now = () => sentAt + 60;
      assertPlainSuccess(await editTyping(member, id));
    } finally {
      t.services.now = realNow;
      await realmSettings({ message_content_edit_limit_seconds: "unlimited" });
    }
  });

  test("the editor's send_*_typing_notifications settings", async () => {
    const editor = await newUser("Private");
    const { admin } = u();
    const channel = await newChannel(editor, [admin]);
    const channelMessage = await sendToChannel(editor, channel.name);
    const dm = await sendDirect(editor, [admin]);
    await setSetting(editor, "send_stream_typing_notifications", false);
    assertBad(await editTyping(editor, channelMessage), "User has disabled typing notifications for channel messages");
    assertPlainSuccess(await editTyping(editor, dm));
    await setSetting(editor, "send_private_typing_notifications", false);
    assertBad(await editTyping(editor, dm), "User has disabled typing notifications for direct messages");
    await setSetting(editor, "send_stream_typing_notifications", true);
    assertPlainSuccess(await editTyping(editor, channelMessage));
  });

  test("the empty topic: its display name for clients without empty_topic_name", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const id = assertSuccess(await t.api(member, "POST", "/messages", { type: "stream", to: channel.name, topic: "", content: "x" })).id as number;
    const modern = await editQueue(admin, { empty_topic_name: true });
    const older = await editQueue(admin);
    assertPlainSuccess(await editTyping(member, id));
    const displayName = (await t.register(admin, { fetch_event_types: ["realm"] })).realm_empty_topic_display_name;
    assert.equal((await eventsOf(admin, modern))[0]?.recipient.topic, "");
    assert.equal((await eventsOf(admin, older))[0]?.recipient.topic, displayName);
  });

  test("bad input: op missing or unknown", async () => {
    const { member, admin } = u();
    const id = await sendDirect(member, [admin]);
    assertError(await editTyping(member, id, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument", { var_name: "op" });
    assertBad(await editTyping(member, id, { op: "typing" }), "Invalid op");
    assertError(await t.api(null, "POST", `/messages/${id}/typing`, { op: "start" }), 401, "UNAUTHORIZED");
  });

  test("a channel with more than 100 subscribers: success, no event", async () => {
    const { member, admin, moderator } = u();
    // An earlier test deactivates one of the crowd.
    const active = new Set((await db().selectFrom("users").select("id").where("is_active", "=", true).execute()).map((r) => r.id));
    const fillers = (await crowd()).filter((f) => active.has(f.id));
    const channel = await newChannel(member, [...fillers, admin, moderator]);
    assert.ok(fillers.length + 3 > 100);
    const id = await sendToChannel(member, channel.name);
    t.clearEvents();
    assertPlainSuccess(await editTyping(member, id));
    assert.deepEqual(editEvents(), []);
  });
});
