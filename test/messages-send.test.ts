// API-level tests of sending messages (POST /messages) and of everything a
// send writes and tells: the flag rows, the `message` events each queue gets
// in its own form, the sender's automatic topic visibility, POST /user_topics,
// and the message parts of POST /register's state. Where the contract is
// silent, Zulip's behaviour (docs/zulip-behaviour/messages.md) decides.
//
// The Markdown renderer is being replaced, so rendered HTML is only checked
// loosely; mention flags are checked exactly.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import {
  assertError,
  assertSuccess,
  sortedIds,
  startTestApp,
  uniqueName,
  type ApiResponse,
  type Params,
  type RequestOptions,
  type TestApp,
  type TestUser,
} from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;
/** 15 extra members: with one more person a channel or topic is over Zulip's wildcard threshold (15). */
let crowd: TestUser[];
/** A channel made before all others, so its ID has fewer digits than later ones (for ordering checks). */
let earlyChannel: Channel;

before(async () => {
  t = await startTestApp();
  sys = await t.systemGroupIds();
  earlyChannel = await newChannel(t.users.admin);
  crowd = [];
  for (let i = 0; i < 15; i++) crowd.push(await t.createUser(`Crowd Person ${i}`));
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

// Tests read arbitrary fields of replies and events.
/* eslint-disable @typescript-eslint/no-explicit-any */

const u = () => t.users;
const db = () => t.services.storage.db;

/** Zulip's UserMessage flag bits, as stored. */
const BIT = { READ: 1, STARRED: 2, MENTIONED: 8, STREAM_WILDCARD: 16, TOPIC_WILDCARD: 32, GROUP_MENTIONED: 64, HAS_ALERT_WORD: 512, IS_PRIVATE: 2048 } as const;

/** Flags the API lists for a channel wildcard mention (the deprecated alias is appended). */
const STREAM_WILDCARD_FLAGS = ["stream_wildcard_mentioned", "wildcard_mentioned"];
const TOPIC_WILDCARD_FLAGS = ["topic_wildcard_mentioned", "wildcard_mentioned"];

/** Zulip's visibility policies and automatic-policy setting values. */
const POLICY = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;
const AUTO = { ON_PARTICIPATION: 1, ON_SEND: 2, ON_INITIATION: 3, NEVER: 4 } as const;

const MOBILE = { headers: { "user-agent": "ZulipMobile/1.0 (Android 14)" } };

interface Channel {
  id: number;
  name: string;
}

let counter = 0;
/** A fresh user with a unique full name, so tests may change their settings freely. */
async function newUser(prefix = "Sender", role: number = Role.MEMBER, options: { bot?: boolean; botOwnerId?: number } = {}): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${counter}`, role, options);
}

async function userRow(user: TestUser): Promise<{ email: string; full_name: string }> {
  return db().selectFrom("users").select(["email", "full_name"]).where("id", "=", user.id).executeTakeFirstOrThrow();
}

/** The API email: what DM `to` lists and error messages use. */
async function apiEmail(user: TestUser): Promise<string> {
  return (await userRow(user)).email;
}

/** `@**Full Name**` (or the silent `@_**Full Name**`). */
async function mention(user: TestUser, silent = false): Promise<string> {
  return `@${silent ? "_" : ""}**${(await userRow(user)).full_name}**`;
}

function send(user: TestUser, params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
  return t.api(user, "POST", "/messages", params, options);
}

async function sendOk(user: TestUser, params: Params, options: RequestOptions = {}): Promise<any> {
  return assertSuccess(await send(user, params, options));
}

/** Sends a channel message by channel ID; returns its ID. */
async function post(user: TestUser, channel: Channel, topic: string, content = "hello", extra: Params = {}, options: RequestOptions = {}): Promise<number> {
  return (await sendOk(user, { type: "channel", to: channel.id, topic, content, ...extra }, options)).id as number;
}

/** Sends a direct message to user IDs; returns its ID. */
async function dm(user: TestUser, to: TestUser[], content = "hi there", extra: Params = {}, options: RequestOptions = {}): Promise<number> {
  return (await sendOk(user, { type: "direct", to: to.map((r) => r.id), content, ...extra }, options)).id as number;
}

/** Creates a public (or, with params, other) channel with `actor` and `subscribers` subscribed. */
async function newChannel(actor: TestUser, subscribers: TestUser[] = [], params: Params = {}): Promise<Channel> {
  const name = uniqueName("send channel");
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [actor.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
      ...params,
    }),
  );
  const id = assertSuccess(await t.api(actor, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function subscribe(actor: TestUser, channel: Channel, users: TestUser[]): Promise<void> {
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channel.name }],
      principals: users.map((x) => x.id),
      send_new_subscription_messages: false,
    }),
  );
}

async function unsubscribeSelf(user: TestUser, channel: Channel): Promise<void> {
  assertSuccess(await t.api(user, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
}

async function muteChannel(user: TestUser, channel: Channel): Promise<void> {
  assertSuccess(
    await t.api(user, "POST", "/users/me/subscriptions/properties", {
      subscription_data: [{ stream_id: channel.id, property: "is_muted", value: true }],
    }),
  );
}

async function patchChannel(actor: TestUser, channel: Channel, params: Params): Promise<void> {
  assertSuccess(await t.api(actor, "PATCH", `/streams/${channel.id}`, params));
}

async function patchRealm(params: Params): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", params));
}

async function setSettings(user: TestUser, params: Params): Promise<void> {
  assertSuccess(await t.api(user, "PATCH", "/settings", params));
}

/** The user's flag bits for a message, or undefined when they have no row. */
async function rowFlags(user: TestUser, messageId: number): Promise<number | undefined> {
  const row = await db()
    .selectFrom("user_messages")
    .select("flags")
    .where("user_id", "=", user.id)
    .where("message_id", "=", messageId)
    .executeTakeFirst();
  return row?.flags;
}

/** The message as GET /messages (message_ids) shows it to `viewer`, or undefined. */
async function fetchMessage(viewer: TestUser, id: number, params: Params = {}): Promise<any> {
  const body = assertSuccess(await t.api(viewer, "GET", "/messages", { message_ids: [id], ...params }));
  return body.messages.find((m: any) => m.id === id);
}

async function flagsOf(viewer: TestUser, id: number): Promise<string[] | undefined> {
  return (await fetchMessage(viewer, id))?.flags;
}

/** The stored Markdown of a message. */
async function rawContent(viewer: TestUser, id: number): Promise<string> {
  return assertSuccess(await t.api(viewer, "GET", `/messages/${id}`)).raw_content as string;
}

/** The stored topic of a message. */
async function storedTopic(id: number): Promise<string> {
  return (await db().selectFrom("messages").select("topic").where("id", "=", id).executeTakeFirstOrThrow()).topic;
}

/** A queue for message events only (unless params say otherwise). */
async function messageQueue(user: TestUser, params: Params = {}): Promise<string> {
  return (await t.register(user, { event_types: ["message"], ...params })).queue_id as string;
}

async function eventsOfType(user: TestUser, queueId: string, type: string): Promise<any[]> {
  return (await t.queuedEvents(user, queueId)).filter((e) => e.type === type);
}

function messageEvents(user: TestUser, queueId: string): Promise<any[]> {
  return eventsOfType(user, queueId, "message");
}

/** An error whose code Zulip's sources leave unclear: status and message only. */
function assertErrorMsg(response: ApiResponse, status: number, msg: string): void {
  const context = JSON.stringify(response.body);
  assert.equal(response.status, status, context);
  assert.equal(response.body.result, "error", context);
  assert.equal(response.body.msg, msg, context);
}

function assertBad(response: ApiResponse, msg: string | RegExp): void {
  assertError(response, 400, "BAD_REQUEST", msg);
}

/** Runs `body`, then restores the organization settings whatever happened. */
async function withRealm(change: Params, restore: Params, body: () => Promise<void>): Promise<void> {
  await patchRealm(change);
  try {
    await body();
  } finally {
    await patchRealm(restore);
  }
}

/** Changes the organization's stored settings directly (for settings the API does not expose). */
async function withStoredRealmSetting(key: string, value: unknown, body: () => Promise<void>): Promise<void> {
  const row = await db().selectFrom("realms").select("settings").where("id", "=", t.realm.id).executeTakeFirstOrThrow();
  const original = row.settings;
  const parsed = JSON.parse(original || "{}") as Record<string, unknown>;
  await db()
    .updateTable("realms")
    .set({ settings: JSON.stringify({ ...parsed, [key]: value }) })
    .where("id", "=", t.realm.id)
    .execute();
  try {
    await body();
  } finally {
    await db().updateTable("realms").set({ settings: original }).where("id", "=", t.realm.id).execute();
  }
}

const groupSetting = (groupId: number) => ({ new: groupId });

// ---------------------------------------------------------------------------
// 1. Sending: addressing and the response

describe("POST /messages: channel addressing", () => {
  test("to=<name> sends to the channel with that name, case-insensitively", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const { id } = await sendOk(member, { type: "channel", to: channel.name, topic: "by name", content: "hello" });
    const upper = await sendOk(member, { type: "channel", to: channel.name.toUpperCase(), topic: "by name", content: "again" });
    for (const messageId of [id, upper.id]) {
      const message = await fetchMessage(member, messageId);
      assert.equal(message.type, "stream");
      assert.equal(message.stream_id, channel.id);
      assert.equal(message.display_recipient, channel.name);
      assert.equal(message.subject, "by name");
      assert.equal(message.topic, "by name");
    }
  });

  test("to=<ID> as a JSON integer sends to the channel with that ID", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const id = await post(member, channel, "by id");
    const message = await fetchMessage(member, id);
    assert.equal(message.stream_id, channel.id);
    assert.equal(message.display_recipient, channel.name);
  });

  test("to as a one-item JSON list takes the ID or name in it", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const byId = await sendOk(member, { type: "stream", to: [channel.id], topic: "listed", content: "a" });
    const byName = await sendOk(member, { type: "stream", to: [channel.name], topic: "listed", content: "b" });
    assert.equal((await fetchMessage(member, byId.id)).stream_id, channel.id);
    assert.equal((await fetchMessage(member, byName.id)).stream_id, channel.id);
    assertBad(await send(member, { type: "stream", to: [channel.id, channel.id], topic: "listed", content: "c" }), "Expected exactly one channel");
  });

  test('to="123" (a JSON string) is a channel name, while to=123 is an ID', async () => {
    const { member } = u();
    counter += 1;
    const digits = String(770000 + counter);
    assertSuccess(
      await t.api(member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: digits }], send_new_subscription_messages: false }),
    );
    const channelId = assertSuccess(await t.api(member, "GET", "/get_stream_id", { stream: digits })).stream_id as number;
    assert.notEqual(channelId, Number(digits));

    const { id } = await sendOk(member, { type: "channel", to: JSON.stringify(digits), topic: "digits", content: "by quoted name" });
    assert.equal((await fetchMessage(member, id)).stream_id, channelId);

    // The bare digits are an ID, and no channel has that one.
    assertError(await send(member, { type: "channel", to: digits, topic: "digits", content: "x" }), 400, "STREAM_DOES_NOT_EXIST", `Channel with ID '${digits}' does not exist`, {
      stream_id: Number(digits),
    });
  });

  test("type=stream and type=channel both send channel messages", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    for (const type of ["stream", "channel"]) {
      const { id } = await sendOk(member, { type, to: channel.id, topic: "types", content: `as ${type}` });
      const message = await fetchMessage(member, id);
      assert.equal(message.type, "stream", type);
      assert.equal(message.stream_id, channel.id, type);
    }
  });

  test("subject is an alias of topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const { id } = await sendOk(member, { type: "channel", to: channel.id, subject: "legacy name", content: "hi" });
    const message = await fetchMessage(member, id);
    assert.equal(message.subject, "legacy name");
    assert.equal(message.topic, "legacy name");
  });

  test("topic and subject together are REQUEST_CONFUSING_VAR", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const response = await send(member, { type: "channel", to: channel.id, topic: "a", subject: "b", content: "hi" });
    assertError(response, 400, "REQUEST_CONFUSING_VAR", "Can't decide between 'topic' and 'subject' arguments", {
      var_name1: "topic",
      var_name2: "subject",
    });
  });
});

describe("POST /messages: direct-message addressing", () => {
  test("to as a JSON list of user IDs; the sender is a participant", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin]);
    const message = await fetchMessage(member, id);
    assert.equal(message.type, "private");
    assert.equal(message.stream_id, undefined);
    assert.equal(message.subject, "");
    assert.deepEqual(sortedIds(message.display_recipient.map((r: any) => r.id)), sortedIds([member.id, admin.id]));
    // The recipient sees the same message.
    assert.equal((await fetchMessage(admin, id))?.id, id);
  });

  test("to as a JSON list of emails reaches the same conversation as the IDs", async () => {
    const { member, admin, moderator } = u();
    const byIds = await dm(member, [admin, moderator], "by ids");
    const byEmails = await sendOk(member, { type: "direct", to: [await apiEmail(admin), await apiEmail(moderator)], content: "by emails" });
    const a = await fetchMessage(member, byIds);
    const b = await fetchMessage(member, byEmails.id);
    assert.deepEqual(sortedIds(b.display_recipient.map((r: any) => r.id)), sortedIds([member.id, admin.id, moderator.id]));
    assert.equal(b.recipient_id, a.recipient_id);
  });

  test("to as bare comma-separated emails", async () => {
    const { member, admin, moderator } = u();
    const to = `${await apiEmail(admin)}, ${await apiEmail(moderator)}`;
    const { id } = await sendOk(member, { type: "private", to, content: "bare emails" });
    const message = await fetchMessage(member, id);
    assert.equal(message.type, "private");
    assert.deepEqual(sortedIds(message.display_recipient.map((r: any) => r.id)), sortedIds([member.id, admin.id, moderator.id]));
    // A single bare email is a 1:1 conversation.
    const single = await sendOk(member, { type: "private", to: await apiEmail(admin), content: "one email" });
    assert.deepEqual(sortedIds((await fetchMessage(member, single.id)).display_recipient.map((r: any) => r.id)), sortedIds([member.id, admin.id]));
  });

  test("type=private and type=direct both send direct messages", async () => {
    const { member, admin } = u();
    for (const type of ["private", "direct"]) {
      const { id } = await sendOk(member, { type, to: [admin.id], content: `as ${type}` });
      assert.equal((await fetchMessage(admin, id)).type, "private", type);
    }
  });

  test("a message to oneself is a self-DM with one participant", async () => {
    const { member } = u();
    const id = await dm(member, [member], "note to self");
    const message = await fetchMessage(member, id);
    assert.deepEqual(message.display_recipient.map((r: any) => r.id), [member.id]);
  });
});

describe("POST /messages: the response", () => {
  test("is {id}, plus automatic_new_visibility_policy only when the send changed the sender's policy", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    // Starting a topic follows it (automatically_follow_topics_policy defaults to ON_INITIATION).
    const first = await sendOk(sender, { type: "channel", to: channel.id, topic: "fresh", content: "one" });
    assert.deepEqual(first, { result: "success", msg: "", id: first.id, automatic_new_visibility_policy: POLICY.FOLLOWED });
    assert.ok(Number.isSafeInteger(first.id));
    const second = await sendOk(sender, { type: "channel", to: channel.id, topic: "fresh", content: "two" });
    assert.deepEqual(second, { result: "success", msg: "", id: second.id });
    const direct = await sendOk(sender, { type: "direct", to: [u().admin.id], content: "three" });
    assert.deepEqual(direct, { result: "success", msg: "", id: direct.id });
  });

  test("message IDs increase with every send", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member);
    const ids = [await post(member, channel, "order"), await dm(member, [admin]), await post(admin, channel, "order"), await dm(admin, [member])];
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i]! > ids[i - 1]!, `${ids[i]} > ${ids[i - 1]}`);
  });
});

// ---------------------------------------------------------------------------
// 2. Validation and errors

describe("POST /messages: required parameters", () => {
  test("type and content are required (REQUEST_VARIABLE_MISSING with var_name)", async () => {
    const { member, admin } = u();
    assertError(await send(member, { to: [admin.id], content: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'type' argument", { var_name: "type" });
    assertError(await send(member, { type: "direct", to: [admin.id] }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument", { var_name: "content" });
  });

  test("an unknown type is 'Invalid type'", async () => {
    const { member, admin } = u();
    for (const type of ["huddle", "Stream", "pm", ""]) {
      assertBad(await send(member, { type, to: [admin.id], content: "x" }), "Invalid type");
    }
  });

  test("a channel message without a topic is 'Missing topic'", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    assertBad(await send(member, { type: "channel", to: channel.id, content: "x" }), "Missing topic");
  });

  test("a channel message without 'to' is 'Missing channel'", async () => {
    const { member } = u();
    assertBad(await send(member, { type: "channel", topic: "t", content: "x" }), "Missing channel");
  });

  test("requires authentication", async () => {
    const response = await t.api(null, "POST", "/messages", { type: "direct", to: [u().admin.id], content: "x" });
    assert.equal(response.status, 401);
    assert.equal(response.body.result, "error");
  });
});

describe("POST /messages: unknown channels", () => {
  test("an unknown name is STREAM_DOES_NOT_EXIST with the HTML-escaped name in msg and 'stream'", async () => {
    const { member } = u();
    const name = '<b>no "such" & channel</b>';
    const escaped = "&lt;b&gt;no &quot;such&quot; &amp; channel&lt;/b&gt;";
    assertError(await send(member, { type: "channel", to: name, topic: "t", content: "x" }), 400, "STREAM_DOES_NOT_EXIST", `Channel '${escaped}' does not exist`, {
      stream: escaped,
    });
  });

  test("an unknown ID is STREAM_DOES_NOT_EXIST with 'stream_id'", async () => {
    const { member } = u();
    const response = await send(member, { type: "channel", to: 999999, topic: "t", content: "x" });
    assertError(response, 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '999999' does not exist", { stream_id: 999999 });
    assert.equal(response.body.stream, undefined);
  });
});

describe("POST /messages: content", () => {
  test("empty or whitespace-only content is 'Message must not be empty'", async () => {
    const { member, admin } = u();
    for (const content of ["", "   ", "\n\n \t\n"]) {
      assertBad(await send(member, { type: "direct", to: [admin.id], content }), "Message must not be empty");
    }
  });

  test("trailing whitespace and leading newlines are dropped", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "\n\n  indented line  \n\t\n");
    assert.equal(await rawContent(member, id), "  indented line");
  });

  test("content longer than 10000 characters is truncated with '\\n[message truncated]'", async () => {
    const { member, admin } = u();
    const suffix = "\n[message truncated]";
    const long = await dm(member, [admin], "a".repeat(10001));
    const stored = await rawContent(member, long);
    assert.equal(stored.length, 10000);
    assert.equal(stored, "a".repeat(10000 - suffix.length) + suffix);
    // Exactly at the limit nothing is cut.
    const exact = await dm(member, [admin], "b".repeat(10000));
    assert.equal(await rawContent(member, exact), "b".repeat(10000));
  });

  test("the limit counts code points, not UTF-16 units", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "😀".repeat(10000));
    assert.equal(await rawContent(member, id), "😀".repeat(10000));
  });
});

describe("POST /messages: topics", () => {
  test("a topic longer than 60 code points is cut to 57 and '...'", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    assert.equal(await storedTopic(await post(member, channel, "t".repeat(61))), "t".repeat(57) + "...");
    assert.equal(await storedTopic(await post(member, channel, "u".repeat(60))), "u".repeat(60));
    assert.equal(await storedTopic(await post(member, channel, "😀".repeat(61))), "😀".repeat(57) + "...");
    assert.equal(await storedTopic(await post(member, channel, "😀".repeat(60))), "😀".repeat(60));
  });

  test("a control character in the topic is refused, naming its 1-based position", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    assertBad(await send(member, { type: "channel", to: channel.id, topic: "ab\u0007c", content: "x" }), "Invalid character in topic, at position 3!");
  });

  test("surrounding whitespace is stripped from the topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    assert.equal(await storedTopic(await post(member, channel, "  padded topic \t")), "padded topic");
  });

  test("'', whitespace, '(no topic)' and 'general chat' all mean the empty topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    for (const topic of ["", "   ", "(no topic)", "general chat"]) {
      const id = await post(member, channel, topic, `topic ${JSON.stringify(topic)}`);
      assert.equal(await storedTopic(id), "", JSON.stringify(topic));
      // Clients that understand the empty topic see ""; others see its display name.
      assert.equal((await fetchMessage(member, id, { allow_empty_topic_name: true })).subject, "");
      const legacy = await fetchMessage(member, id);
      assert.equal(legacy.subject, "general chat");
      assert.equal(legacy.topic, "general chat");
    }
  });

  test("the organization's realm_empty_topic_display_name also means the empty topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    await withStoredRealmSetting("empty_topic_display_name", "lobby", async () => {
      const state = await t.register(member, { fetch_event_types: ["realm"], event_types: ["message"] });
      assert.equal(state.realm_empty_topic_display_name, "lobby");
      const id = await post(member, channel, "lobby");
      assert.equal(await storedTopic(id), "");
      assert.equal((await fetchMessage(member, id)).subject, "lobby");
      // The English fallback is accepted whatever the organization calls the empty topic.
      assert.equal(await storedTopic(await post(member, channel, "general chat")), "");
    });
  });

  test("channel topics_policy disable_empty_topic refuses the empty topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    await patchChannel(member, channel, { topics_policy: "disable_empty_topic" });
    for (const topic of ["", "(no topic)", "general chat"]) {
      assertErrorMsg(await send(member, { type: "channel", to: channel.id, topic, content: "x" }), 400, "Sending messages to the general chat is not allowed in this channel.");
    }
    await post(member, channel, "named topic");
  });

  test("realm topics_policy disable_empty_topic applies to channels that inherit it", async () => {
    const { member } = u();
    const inheriting = await newChannel(member);
    const allowing = await newChannel(member);
    await patchChannel(member, allowing, { topics_policy: "allow_empty_topic" });
    await withRealm({ topics_policy: "disable_empty_topic" }, { topics_policy: "allow_empty_topic" }, async () => {
      assertErrorMsg(
        await send(member, { type: "channel", to: inheriting.id, topic: "", content: "x" }),
        400,
        "Sending messages to the general chat is not allowed in this channel.",
      );
      await post(member, inheriting, "named");
      // A channel's own policy wins over the organization's.
      assert.equal(await storedTopic(await post(member, allowing, "")), "");
    });
    // Back to the default: the empty topic is allowed again.
    assert.equal(await storedTopic(await post(member, inheriting, "")), "");
  });

  test("channel topics_policy empty_topic_only allows only the empty topic", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    await patchChannel(member, channel, { topics_policy: "empty_topic_only" });
    assertErrorMsg(await send(member, { type: "channel", to: channel.id, topic: "named", content: "x" }), 400, "Only the general chat topic is allowed in this channel.");
    assert.equal(await storedTopic(await post(member, channel, "")), "");
    assert.equal(await storedTopic(await post(member, channel, "(no topic)")), "");
  });
});

describe("POST /messages: direct-message recipients", () => {
  test("an unknown user ID is 'Invalid user ID N'", async () => {
    const { member, admin } = u();
    assertBad(await send(member, { type: "direct", to: [admin.id, 999999], content: "x" }), "Invalid user ID 999999");
  });

  test("an unknown email is \"Invalid email 'x'\"", async () => {
    const { member, admin } = u();
    assertBad(await send(member, { type: "direct", to: [await apiEmail(admin), "nobody@example.com"], content: "x" }), "Invalid email 'nobody@example.com'");
    assertBad(await send(member, { type: "direct", to: "nobody@example.com", content: "x" }), "Invalid email 'nobody@example.com'");
  });

  test("a deactivated recipient is \"'email' is no longer using Zulip.\"", async () => {
    const { member, admin } = u();
    const gone = await newUser("Departed");
    const email = await apiEmail(gone);
    assertSuccess(await t.api(admin, "DELETE", `/users/${gone.id}`));
    assertBad(await send(member, { type: "direct", to: [gone.id], content: "x" }), `'${email}' is no longer using Zulip.`);
    assertBad(await send(member, { type: "direct", to: [admin.id, gone.id], content: "x" }), `'${email}' is no longer using Zulip.`);
    assertBad(await send(member, { type: "direct", to: [email], content: "x" }), `'${email}' is no longer using Zulip.`);
  });

  test("a list mixing IDs and emails is refused", async () => {
    const { member, admin, moderator } = u();
    assertBad(
      await send(member, { type: "direct", to: [admin.id, await apiEmail(moderator)], content: "x" }),
      "Recipient lists may contain emails or user IDs, but not both.",
    );
  });

  test("an empty list has no recipients", async () => {
    const { member } = u();
    assertBad(await send(member, { type: "direct", to: [], content: "x" }), "Message must have recipients");
  });
});

describe("POST /messages: queue_id and local_id", () => {
  test("queue_id without local_id, and local_id without queue_id, are refused", async () => {
    const { member, admin } = u();
    const queueId = await messageQueue(member);
    const before = (await db().selectFrom("messages").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow()).n;
    const withoutLocal = await send(member, { type: "direct", to: [admin.id], content: "x", queue_id: queueId });
    assert.equal(withoutLocal.status, 400, JSON.stringify(withoutLocal.body));
    assert.equal(withoutLocal.body.result, "error");
    assert.match(withoutLocal.body.msg, /local_id/);
    const withoutQueue = await send(member, { type: "direct", to: [admin.id], content: "x", local_id: "1.01" });
    assert.equal(withoutQueue.status, 400, JSON.stringify(withoutQueue.body));
    assert.equal(withoutQueue.body.result, "error");
    assert.match(withoutQueue.body.msg, /queue_id/);
    const afterCount = (await db().selectFrom("messages").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow()).n;
    assert.equal(Number(afterCount), Number(before), "nothing was sent");
    assert.deepEqual(await messageEvents(member, queueId), []);
  });
});

describe("POST /messages: channel access", () => {
  test("an archived channel: \"Not authorized to send to channel 'name'\"", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${channel.id}`));
    for (const sender of [member, admin]) {
      assertBad(await send(sender, { type: "channel", to: channel.id, topic: "t", content: "x" }), `Not authorized to send to channel '${channel.name}'`);
    }
  });

  test("a private channel the sender is not subscribed to is refused, even to administrators", async () => {
    const { member, admin, moderator } = u();
    const secret = await newChannel(moderator, [], { invite_only: true });
    for (const sender of [member, admin]) {
      assertBad(await send(sender, { type: "channel", to: secret.id, topic: "t", content: "x" }), `Not authorized to send to channel '${secret.name}'`);
    }
    await subscribe(moderator, secret, [member]);
    await post(member, secret, "t");
  });

  test("a guest cannot send to a public channel they are not subscribed to", async () => {
    const { member, guest } = u();
    const channel = await newChannel(member);
    assertBad(await send(guest, { type: "channel", to: channel.id, topic: "t", content: "x" }), `Not authorized to send to channel '${channel.name}'`);
    assertBad(await send(guest, { type: "channel", to: channel.name, topic: "t", content: "x" }), `Not authorized to send to channel '${channel.name}'`);
  });

  test("a member may send to a public channel without being subscribed, and is not subscribed by it", async () => {
    const { member, admin } = u();
    const channel = await newChannel(admin);
    await post(member, channel, "drive-by");
    const sub = await db().selectFrom("subscriptions").select("active").where("user_id", "=", member.id).where("channel_id", "=", channel.id).executeTakeFirst();
    assert.notEqual(sub?.active, true);
  });

  test("can_send_message_group: others get 'You do not have permission to post in this channel.'", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(admin, [member, moderator]);
    await patchChannel(admin, channel, { can_send_message_group: groupSetting(sys["role:administrators"]!) });
    for (const sender of [member, moderator]) {
      assertBad(await send(sender, { type: "channel", to: channel.id, topic: "t", content: "x" }), "You do not have permission to post in this channel.");
    }
    await post(admin, channel, "t");
    // A user-defined setting of direct members works the same way.
    await patchChannel(admin, channel, { can_send_message_group: groupSetting(sys["role:nobody"]!) });
    assertBad(await send(admin, { type: "channel", to: channel.id, topic: "t", content: "x" }), "You do not have permission to post in this channel.");
    await patchChannel(admin, channel, { can_send_message_group: { new: { direct_members: [member.id], direct_subgroups: [] } } });
    await post(member, channel, "t");
    assertBad(await send(moderator, { type: "channel", to: channel.id, topic: "t", content: "x" }), "You do not have permission to post in this channel.");
  });

  test("can_send_message_group: a bot may post where its owner may", async () => {
    const { member, admin, bot } = u();
    const adminsBot = await newUser("Helper Bot", Role.MEMBER, { bot: true, botOwnerId: admin.id });
    const channel = await newChannel(admin, [member, bot, adminsBot]);
    await patchChannel(admin, channel, { can_send_message_group: groupSetting(sys["role:administrators"]!) });
    await post(adminsBot, channel, "beep");
    // The member's bot may not: its owner may not post there either.
    assertBad(await send(bot, { type: "channel", to: channel.id, topic: "beep", content: "x" }), "You do not have permission to post in this channel.");
  });
});

describe("POST /messages: direct-message policies", () => {
  const everyone = () => ({ direct_message_permission_group: groupSetting(sys["role:everyone"]!), direct_message_initiator_group: groupSetting(sys["role:everyone"]!) });

  test("direct_message_permission_group: a conversation needs someone in the group", async () => {
    const { admin, bot } = u();
    const a = await newUser("Permission");
    const b = await newUser("Permission");
    await withRealm({ direct_message_permission_group: groupSetting(sys["role:administrators"]!) }, everyone(), async () => {
      assertBad(await send(a, { type: "direct", to: [b.id], content: "x" }), "This conversation does not include any users who can authorize it.");
      // An administrator in the conversation authorizes it, whoever sends.
      await dm(a, [admin]);
      await dm(a, [admin, b]);
      await dm(admin, [a]);
      // Messages to oneself and to bots are exempt.
      await dm(a, [a]);
      await dm(a, [bot]);
    });
  });

  test("direct_message_permission_group role:nobody: 'Direct messages are disabled in this organization.'", async () => {
    const { admin, member, owner } = u();
    await withRealm({ direct_message_permission_group: groupSetting(sys["role:nobody"]!) }, everyone(), async () => {
      assertBad(await send(member, { type: "direct", to: [admin.id], content: "x" }), "Direct messages are disabled in this organization.");
      assertBad(await send(owner, { type: "direct", to: [admin.id], content: "x" }), "Direct messages are disabled in this organization.");
      await dm(member, [member], "self-DMs still work");
    });
  });

  test("direct_message_permission_group as a group of direct members", async () => {
    const a = await newUser("Allowed");
    const b = await newUser("Other");
    const c = await newUser("Other");
    await withRealm({ direct_message_permission_group: { new: { direct_members: [a.id], direct_subgroups: [] } } }, everyone(), async () => {
      await dm(b, [a]);
      assertBad(await send(b, { type: "direct", to: [c.id], content: "x" }), "This conversation does not include any users who can authorize it.");
    });
  });

  test("direct_message_initiator_group: others may only reply in existing conversations", async () => {
    const { admin } = u();
    const a = await newUser("Initiator");
    const b = await newUser("Initiator");
    await withRealm({ direct_message_initiator_group: groupSetting(sys["role:administrators"]!) }, everyone(), async () => {
      assertBad(await send(a, { type: "direct", to: [b.id], content: "x" }), "You do not have permission to initiate direct message conversations.");
      assertBad(await send(a, { type: "direct", to: [admin.id], content: "x" }), "You do not have permission to initiate direct message conversations.");
      // Once an administrator starts it, the conversation exists and either side may write.
      await dm(admin, [a]);
      await dm(a, [admin], "reply");
      // A group conversation is a different conversation.
      assertBad(await send(a, { type: "direct", to: [admin.id, b.id], content: "x" }), "You do not have permission to initiate direct message conversations.");
      await dm(a, [a], "self-DMs are always allowed");
    });
  });
});

describe("POST /messages: wildcard and group mentions", () => {
  test("@**all** in a channel with more than 15 subscribers: STREAM_WILDCARD_MENTION_NOT_ALLOWED for a member", async () => {
    const sender = await newUser("Shouter");
    const channel = await newChannel(sender, crowd); // 16 subscribers
    for (const wildcard of ["all", "everyone", "channel", "stream"]) {
      assertError(
        await send(sender, { type: "channel", to: channel.id, topic: "t", content: `@**${wildcard}** look` }),
        400,
        "STREAM_WILDCARD_MENTION_NOT_ALLOWED",
        "You do not have permission to use channel wildcard mentions in this channel.",
      );
    }
    // Silent wildcards notify no one, so they are allowed.
    await post(sender, channel, "t", "@_**all** quietly");
  });

  test("@**all** in a large channel is allowed for an administrator (can_mention_many_users_group)", async () => {
    const sender = await newUser("Shouter");
    const channel = await newChannel(sender, crowd);
    await post(u().admin, channel, "t", "@**all** announcement");
  });

  test("@**all** in a channel with at most 15 subscribers is allowed for a member", async () => {
    const sender = await newUser("Shouter");
    const channel = await newChannel(sender, crowd.slice(0, 14)); // 15 subscribers
    await post(sender, channel, "t", "@**all** hello");
  });

  test("deactivated subscribers do not count toward the channel wildcard threshold", async () => {
    const sender = await newUser("Shouter");
    const leaving = await newUser("Leaving");
    const channel = await newChannel(sender, [...crowd.slice(0, 14), leaving]); // 16 subscribers
    assertError(await send(sender, { type: "channel", to: channel.id, topic: "t", content: "@**all** x" }), 400, "STREAM_WILDCARD_MENTION_NOT_ALLOWED");
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${leaving.id}`));
    await post(sender, channel, "t", "@**all** now 15 active");
  });

  test("wildcard mentions in direct messages are never limited", async () => {
    const sender = await newUser("Shouter");
    await dm(sender, crowd, "@**all** @**topic** everyone in this group");
  });

  test("@**topic** with more than 15 topic participants: TOPIC_WILDCARD_MENTION_NOT_ALLOWED", async () => {
    const sender = await newUser("Topic Shouter");
    const channel = await newChannel(sender, crowd);
    // 14 others took part: with the sender, 15 participants.
    for (const person of crowd.slice(0, 14)) await post(person, channel, "busy", "me too");
    await post(sender, channel, "busy", "@**topic** hello");
    // One more participant makes 16.
    await post(crowd[14]!, channel, "busy", "and me");
    assertError(
      await send(sender, { type: "channel", to: channel.id, topic: "busy", content: "@**topic** again" }),
      400,
      "TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
      "You do not have permission to use topic wildcard mentions in this topic.",
    );
    // The threshold is about the topic, not the channel: a quiet topic is fine.
    await post(sender, channel, "quiet", "@**topic** hi");
    // The topic is matched case-insensitively.
    assertError(await send(sender, { type: "channel", to: channel.id, topic: "BUSY", content: "@**topic**" }), 400, "TOPIC_WILDCARD_MENTION_NOT_ALLOWED");
    await post(u().admin, channel, "busy", "@**topic** admins may");
  });

  test("a group whose can_mention_group excludes the sender cannot be mentioned", async () => {
    const { member, admin, moderator } = u();
    const name = uniqueName("restricted group");
    assertSuccess(
      await t.api(admin, "POST", "/user_groups/create", {
        name,
        description: "",
        members: [moderator.id],
        can_mention_group: sys["role:administrators"],
      }),
    );
    const channel = await newChannel(member, [admin, moderator]);
    assertBad(await send(member, { type: "channel", to: channel.id, topic: "t", content: `@*${name}* hello` }), `You are not allowed to mention user group '${name}'.`);
    // Silent group mentions notify no one and are allowed.
    await post(member, channel, "t", `@_*${name}* quietly`);
    await post(admin, channel, "t", `@*${name}* hello`);
  });
});

// ---------------------------------------------------------------------------
// 3. Flags

describe("POST /messages: the sender's read flag", () => {
  test("read_by_sender=true marks the sender's copy read", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "x", { read_by_sender: true });
    assert.deepEqual(await flagsOf(member, id), ["read"]);
    assert.deepEqual(await flagsOf(admin, id), []);
    assert.equal(await rowFlags(member, id), BIT.READ | BIT.IS_PRIVATE);
    assert.equal(await rowFlags(admin, id), BIT.IS_PRIVATE);
  });

  test("read_by_sender=false leaves it unread, whatever the client", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "x", { read_by_sender: false }, MOBILE);
    assert.deepEqual(await flagsOf(member, id), []);
    const channel = await newChannel(member);
    const channelId = await post(member, channel, "t", "x", { read_by_sender: false, client: "website" });
    assert.deepEqual(await flagsOf(member, channelId), []);
    assert.equal(await rowFlags(member, channelId), 0);
  });

  test("by default an interactive client (User-Agent ZulipMobile) marks it read", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "x", {}, MOBILE);
    assert.deepEqual(await flagsOf(member, id), ["read"]);
    assert.equal((await fetchMessage(member, id)).client, "ZulipMobile");
    assert.deepEqual(await flagsOf(admin, id), []);
  });

  test("by default a script's User-Agent leaves it unread", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "x");
    assert.deepEqual(await flagsOf(member, id), []);
    const channel = await newChannel(member);
    const channelId = await post(member, channel, "t");
    assert.deepEqual(await flagsOf(member, channelId), []);
  });

  test("by default client=website marks it read and is the message's client", async () => {
    const { member, admin } = u();
    const id = await dm(member, [admin], "x", { client: "website" });
    assert.deepEqual(await flagsOf(member, id), ["read"]);
    assert.equal((await fetchMessage(admin, id)).client, "website");
  });
});

describe("POST /messages: mention flags", () => {
  test("a user mention flags only that subscriber", async () => {
    const { member, admin, moderator, guest } = u();
    const channel = await newChannel(member, [admin, moderator, guest]);
    const id = await post(member, channel, "t", `${await mention(admin)} please look`, { read_by_sender: true });
    assert.deepEqual(await flagsOf(admin, id), ["mentioned"]);
    assert.deepEqual(await flagsOf(moderator, id), []);
    assert.deepEqual(await flagsOf(guest, id), []);
    assert.deepEqual(await flagsOf(member, id), ["read"]);
    assert.equal(await rowFlags(admin, id), BIT.MENTIONED);
    assert.equal(await rowFlags(moderator, id), 0);
  });

  test("a mentioned user who is not subscribed gets no row and no event", async () => {
    const { member, admin, owner } = u();
    const channel = await newChannel(member, [admin]);
    const ownerQueue = await messageQueue(owner);
    const id = await post(member, channel, "t", `${await mention(owner)} fyi`);
    assert.equal(await rowFlags(owner, id), undefined);
    assert.equal(await rowFlags(admin, id), 0);
    assert.deepEqual(await messageEvents(owner, ownerQueue), []);
  });

  test("a user mention in a direct message flags the mentioned participant", async () => {
    const { member, admin, moderator } = u();
    const id = await dm(member, [admin, moderator], `${await mention(moderator)} see this`);
    assert.deepEqual(await flagsOf(moderator, id), ["mentioned"]);
    assert.deepEqual(await flagsOf(admin, id), []);
    assert.equal(await rowFlags(moderator, id), BIT.MENTIONED | BIT.IS_PRIVATE);
  });

  test("@**all** sets stream_wildcard_mentioned (and wildcard_mentioned) for every recipient, the sender included", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(member, [admin, moderator]);
    const id = await post(member, channel, "t", "@**all** meeting now", { read_by_sender: true });
    assert.deepEqual(await flagsOf(admin, id), STREAM_WILDCARD_FLAGS);
    assert.deepEqual(await flagsOf(moderator, id), STREAM_WILDCARD_FLAGS);
    assert.deepEqual(await flagsOf(member, id), ["read", ...STREAM_WILDCARD_FLAGS]);
    assert.equal(await rowFlags(admin, id), BIT.STREAM_WILDCARD);
    assert.equal(await rowFlags(member, id), BIT.STREAM_WILDCARD | BIT.READ);
  });

  test("@**topic** sets topic_wildcard_mentioned only for the topic's participants (and the sender)", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(member, [admin, moderator]);
    await post(admin, channel, "planning", "I have an idea");
    const id = await post(member, channel, "planning", "@**topic** thoughts?", { read_by_sender: true });
    assert.deepEqual(await flagsOf(admin, id), TOPIC_WILDCARD_FLAGS);
    assert.deepEqual(await flagsOf(member, id), ["read", ...TOPIC_WILDCARD_FLAGS]);
    // The moderator is subscribed but never took part in the topic.
    assert.deepEqual(await flagsOf(moderator, id), []);
    assert.equal(await rowFlags(admin, id), BIT.TOPIC_WILDCARD);
    assert.equal(await rowFlags(moderator, id), 0);
  });

  test("a group mention flags the group's subscribed members as mentioned, and no one else", async () => {
    const { member, admin, moderator, guest, owner } = u();
    const name = uniqueName("mention group");
    assertSuccess(await t.api(admin, "POST", "/user_groups/create", { name, description: "", members: [admin.id, owner.id] }));
    const channel = await newChannel(member, [admin, moderator, guest]);
    const id = await post(member, channel, "t", `@*${name}* please review`);
    // Zulip sets `mentioned` for members of a mentioned group (do_send_messages adds them to mentions_user_ids).
    assert.deepEqual(await flagsOf(admin, id), ["mentioned"]);
    assert.equal((await rowFlags(admin, id))! & BIT.MENTIONED, BIT.MENTIONED);
    assert.deepEqual(await flagsOf(moderator, id), []);
    assert.deepEqual(await flagsOf(guest, id), []);
    assert.deepEqual(await flagsOf(member, id), []);
    // The owner is in the group but not subscribed: no row.
    assert.equal(await rowFlags(owner, id), undefined);
  });

  test("silent mentions set no flags", async () => {
    const { member, admin, moderator } = u();
    const name = uniqueName("silent group");
    assertSuccess(await t.api(admin, "POST", "/user_groups/create", { name, description: "", members: [moderator.id] }));
    const channel = await newChannel(member, [admin, moderator]);
    const id = await post(member, channel, "t", `${await mention(admin, true)} @_**all** @_**topic** @_*${name}* quietly`);
    assert.deepEqual(await flagsOf(admin, id), []);
    assert.deepEqual(await flagsOf(moderator, id), []);
    assert.deepEqual(await flagsOf(member, id), []);
    assert.equal(await rowFlags(admin, id), 0);
    assert.equal(await rowFlags(moderator, id), 0);
  });

  test("a sender not subscribed to a public channel gets no row and no event", async () => {
    const { member, admin } = u();
    const channel = await newChannel(admin);
    const memberQueue = await messageQueue(member);
    const adminQueue = await messageQueue(admin);
    const id = await post(member, channel, "t", "drive-by", { read_by_sender: true });
    assert.equal(await rowFlags(member, id), undefined);
    assert.equal(await rowFlags(admin, id), 0);
    assert.deepEqual(await messageEvents(member, memberQueue), []);
    assert.equal((await messageEvents(admin, adminQueue)).length, 1);
    // Reading it through the channel's public history shows it as historical.
    assert.deepEqual(await flagsOf(member, id), ["read", "historical"]);
  });
});

// ---------------------------------------------------------------------------
// 4. Events

describe("POST /messages: a channel larger than a statement's bound values", () => {
  // 33,000 subscribers: past SQLite's 32,766 bound variables even at one value per recipient.
  test("every one of 33,000 subscribers gets a flags row, with their own flags", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const template = await db().selectFrom("users").selectAll().where("id", "=", admin.id).executeTakeFirstOrThrow();
    const crowdIds: number[] = [];
    for (let start = 0; start < 33_000; start += 500) {
      const rows = Array.from({ length: 500 }, (_, i) => {
        const email = `big-crowd-${start + i}@example.org`;
        const { id: _id, ...rest } = template;
        return { ...rest, role: Role.MEMBER, email, delivery_email: email, email_key: email, delivery_email_key: email, full_name: `Big Crowd ${start + i}`, api_key: `bigcrowd${start + i}`.padEnd(32, "x") };
      });
      const inserted = await db().insertInto("users").values(rows).returning("id").execute();
      crowdIds.push(...inserted.map((r) => r.id));
    }
    for (let start = 0; start < crowdIds.length; start += 500) {
      await db()
        .insertInto("subscriptions")
        .values(crowdIds.slice(start, start + 500).map((user_id) => ({ user_id, channel_id: channel.id, color: "#76ce90" })))
        .execute();
    }
    // One of the last to subscribe has an alert word: their lookup is among the last bound values.
    const alertedId = crowdIds.at(-2)!;
    await db().insertInto("alert_words").values({ user_id: alertedId, word: "everyone", word_key: "everyone" }).execute();
    const id = await post(member, channel, "big", `${await mention(admin)} hello everyone`, { read_by_sender: true });
    const rows = await db().selectFrom("user_messages").select(["user_id", "flags"]).where("message_id", "=", id).execute();
    assert.equal(rows.length, 33_002);
    const flags = new Map(rows.map((r) => [r.user_id, Number(r.flags)]));
    assert.equal(flags.get(member.id), BIT.READ);
    assert.equal(flags.get(admin.id), BIT.MENTIONED);
    assert.equal(flags.get(alertedId), BIT.HAS_ALERT_WORD);
    assert.ok(crowdIds.every((x) => x === alertedId || flags.get(x) === 0), "the rest of the crowd: a row each, no flags");
    assert.deepEqual(await flagsOf(admin, id), ["mentioned"]);

    // A direct message to the whole crowd, by email: each recipient is looked up, and each gets a row.
    const emails = crowdIds.map((_, i) => `big-crowd-${i}@example.org`);
    const dmId = (await sendOk(member, { type: "direct", to: JSON.stringify(emails), content: "hello crowd" })).id as number;
    const dmRows = await db().selectFrom("user_messages").select(["user_id", "flags"]).where("message_id", "=", dmId).execute();
    assert.equal(dmRows.length, 33_001);
    assert.ok(dmRows.every((r) => (Number(r.flags) & BIT.IS_PRIVATE) !== 0));
    // The same people by ID, in another order: the same conversation (found by its hash; the
    // participant list itself is too long for a PostgreSQL index).
    const againId = (await sendOk(member, { type: "direct", to: JSON.stringify([...crowdIds].reverse()), content: "again" })).id as number;
    const [first, again] = await Promise.all([dmId, againId].map((mid) => db().selectFrom("messages").select("recipient_id").where("id", "=", mid).executeTakeFirstOrThrow()));
    assert.equal(again!.recipient_id, first!.recipient_id);
  });
});

describe("POST /messages: message events", () => {
  test("every subscriber's queue gets the message with that user's flags; non-subscribers get nothing", async () => {
    const { member, admin, moderator, owner } = u();
    const channel = await newChannel(member, [admin, moderator]);
    const queues = new Map<TestUser, string>();
    for (const user of [member, admin, moderator, owner]) queues.set(user, await messageQueue(user, { apply_markdown: true }));
    const content = `${await mention(admin)} look at this`;
    const id = await post(member, channel, "events", content, { read_by_sender: true });

    const expectedFlags = new Map<TestUser, string[]>([
      [member, ["read"]],
      [admin, ["mentioned"]],
      [moderator, []],
    ]);
    for (const [user, flags] of expectedFlags) {
      const events = await messageEvents(user, queues.get(user)!);
      assert.equal(events.length, 1, user.email);
      const event = events[0]!;
      assert.deepEqual(Object.keys(event).sort(), ["flags", "id", "message", "type"], user.email);
      assert.deepEqual(event.flags, flags, user.email);
      assert.equal(event.message.id, id);
      assert.equal(event.message.flags, undefined, "flags live next to the message, not in it");
      assert.equal(event.message.sender_id, member.id);
      assert.equal(event.message.type, "stream");
      assert.equal(event.message.stream_id, channel.id);
      assert.equal(event.message.display_recipient, channel.name);
      assert.equal(event.message.subject, "events");
      assert.equal(event.message.topic, "events");
      assert.equal(event.message.content_type, "text/html");
      assert.equal(typeof event.message.timestamp, "number");
    }
    assert.deepEqual(await messageEvents(owner, queues.get(owner)!), []);
  });

  test("the queue named by queue_id gets local_id (and local_message_id); other queues do not", async () => {
    const { member, admin } = u();
    const echoing = await messageQueue(member);
    const other = await messageQueue(member);
    const recipient = await messageQueue(admin);
    const { id } = await sendOk(member, { type: "direct", to: [admin.id], content: "echo", queue_id: echoing, local_id: "17.01" });

    const [own] = await messageEvents(member, echoing);
    assert.equal(own.message.id, id);
    assert.equal(own.local_id, "17.01");
    assert.equal(own.local_message_id, "17.01");
    for (const [user, queue] of [
      [member, other],
      [admin, recipient],
    ] as const) {
      const [event] = await messageEvents(user, queue);
      assert.equal(event.message.id, id);
      assert.equal("local_id" in event, false);
      assert.equal("local_message_id" in event, false);
    }
  });

  test("apply_markdown=false queues get the Markdown source as text/x-markdown; true queues get HTML", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const markdown = await messageQueue(admin, { apply_markdown: false });
    const html = await messageQueue(admin, { apply_markdown: true });
    const source = "**bold** and _italic_ text";
    await post(member, channel, "format", source);

    const [raw] = await messageEvents(admin, markdown);
    assert.equal(raw.message.content, source);
    assert.equal(raw.message.content_type, "text/x-markdown");
    const [rendered] = await messageEvents(admin, html);
    assert.equal(rendered.message.content_type, "text/html");
    assert.notEqual(rendered.message.content, source);
    assert.match(rendered.message.content, /^<p>/);
    assert.match(rendered.message.content, /bold/);
  });

  test("an empty topic is 'general chat' unless the queue has the empty_topic_name capability", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const modern = await messageQueue(admin, { client_capabilities: { empty_topic_name: true } });
    const older = await messageQueue(admin);
    await post(member, channel, "", "in the empty topic");
    await post(member, channel, "named", "in a named one");

    const modernEvents = await messageEvents(admin, modern);
    assert.deepEqual(modernEvents.map((e) => [e.message.subject, e.message.topic]), [["", ""], ["named", "named"]]);
    const olderEvents = await messageEvents(admin, older);
    assert.deepEqual(olderEvents.map((e) => [e.message.subject, e.message.topic]), [["general chat", "general chat"], ["named", "named"]]);
  });

  test("an all_public_streams queue of a non-subscriber gets public-channel messages with no flags, not private ones", async () => {
    const { member, admin, owner } = u();
    const open = await newChannel(member, [admin]);
    const secret = await newChannel(member, [admin], { invite_only: true });
    const everything = await messageQueue(owner, { all_public_streams: true });
    const plain = await messageQueue(owner);
    const publicId = await post(member, open, "t", "public");
    await post(member, secret, "t", "private");
    await dm(member, [admin], "direct");

    const events = await messageEvents(owner, everything);
    assert.deepEqual(events.map((e) => e.message.id), [publicId]);
    assert.deepEqual(events[0].flags, []);
    assert.deepEqual(await messageEvents(owner, plain), []);
  });

  test("a subscriber's all_public_streams queue gets each message once, with the subscriber's flags", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const queue = await messageQueue(admin, { all_public_streams: true });
    const id = await post(member, channel, "t", `${await mention(admin)} hi`);
    const events = await messageEvents(admin, queue);
    assert.deepEqual(events.map((e) => [e.message.id, e.flags]), [[id, ["mentioned"]]]);
  });

  test("a guest cannot register an all_public_streams queue", async () => {
    const response = await t.api(u().guest, "POST", "/register", { event_types: ["message"], all_public_streams: true });
    assertBad(response, "User not authorized for this query");
  });

  test("a narrowed queue gets only the messages that match its narrow", async () => {
    const { member, admin } = u();
    const wanted = await newChannel(member, [admin]);
    const other = await newChannel(member, [admin]);
    const narrowed = await messageQueue(admin, { narrow: [["channel", wanted.name]] });
    const a = await post(member, wanted, "t", "one");
    await post(member, other, "t", "two");
    await dm(member, [admin], "three");
    const b = await post(member, wanted, "u", "four");
    assert.deepEqual((await messageEvents(admin, narrowed)).map((e) => e.message.id), [a, b]);
  });

  test("a direct message reaches every participant's queue, the sender's included, and no one else", async () => {
    const { member, admin, moderator, owner } = u();
    const queues = new Map<TestUser, string>();
    for (const user of [member, admin, moderator, owner]) queues.set(user, await messageQueue(user));
    const id = await dm(member, [admin, moderator], "group hello", { read_by_sender: true });
    for (const [user, flags] of [
      [member, ["read"]],
      [admin, []],
      [moderator, []],
    ] as const) {
      const events = await messageEvents(user, queues.get(user)!);
      assert.equal(events.length, 1, user.email);
      assert.equal(events[0].message.id, id);
      assert.equal(events[0].message.type, "private");
      assert.deepEqual(events[0].flags, flags, user.email);
      assert.deepEqual(sortedIds(events[0].message.display_recipient.map((r: any) => r.id)), sortedIds([member.id, admin.id, moderator.id]));
    }
    assert.deepEqual(await messageEvents(owner, queues.get(owner)!), []);
  });

  test("automatic follow sends user_topic, and muted_topics only to queues that do not ask for user_topic", async () => {
    const sender = await newUser("Follower");
    const channel = await newChannel(sender);
    const modern = await t.register(sender, { event_types: ["message", "user_topic", "muted_topics"] });
    const legacy = await t.register(sender, { event_types: ["message", "muted_topics"] });
    const topicOnly = await t.register(sender, { event_types: ["user_topic"] });
    const first = await sendOk(sender, { type: "channel", to: channel.id, topic: "Auto Followed", content: "start" });
    assert.equal(first.automatic_new_visibility_policy, POLICY.FOLLOWED);

    const modernEvents = await t.queuedEvents(sender, modern.queue_id);
    const userTopic = modernEvents.filter((e) => e.type === "user_topic");
    assert.equal(userTopic.length, 1);
    const { id: _id, ...shape } = userTopic[0];
    assert.deepEqual(Object.keys(shape).sort(), ["last_updated", "stream_id", "topic_name", "type", "visibility_policy"]);
    assert.equal(shape.stream_id, channel.id);
    assert.equal(shape.topic_name, "Auto Followed");
    assert.equal(shape.visibility_policy, POLICY.FOLLOWED);
    assert.ok(Math.abs(shape.last_updated - Date.now() / 1000) < 300, String(shape.last_updated));
    assert.equal(modernEvents.filter((e) => e.type === "muted_topics").length, 0);
    assert.equal(modernEvents.filter((e) => e.type === "message").length, 1);

    const legacyEvents = await t.queuedEvents(sender, legacy.queue_id);
    assert.deepEqual(legacyEvents.filter((e) => e.type === "muted_topics").map((e) => e.muted_topics), [[]]);
    assert.equal(legacyEvents.filter((e) => e.type === "user_topic").length, 0);

    assert.deepEqual((await t.queuedEvents(sender, topicOnly.queue_id)).map((e) => e.type), ["user_topic"]);

    // The second message changes nothing: no new user_topic event.
    await post(sender, channel, "Auto Followed", "more");
    assert.deepEqual((await t.queuedEvents(sender, topicOnly.queue_id)).map((e) => e.type), ["user_topic"]);
  });

  test("the first message sets the channel's first_message_id; later ones leave it", async () => {
    const { member } = u();
    const channel = await newChannel(member);
    const stream = async () => assertSuccess(await t.api(member, "GET", `/streams/${channel.id}`)).stream;
    assert.equal((await stream()).first_message_id, null);
    const first = await post(member, channel, "t");
    assert.equal((await stream()).first_message_id, first);
    await post(member, channel, "u");
    assert.equal((await stream()).first_message_id, first);
  });
});

// ---------------------------------------------------------------------------
// 5. User topics

function setTopicPolicy(user: TestUser, channelId: number, topic: string, policy: number): Promise<ApiResponse> {
  return t.api(user, "POST", "/user_topics", { stream_id: channelId, topic, visibility_policy: policy });
}

async function storedPolicies(user: TestUser, channel: Channel): Promise<{ topic: string; visibility_policy: number }[]> {
  return db()
    .selectFrom("user_topics")
    .select(["topic", "visibility_policy"])
    .where("user_id", "=", user.id)
    .where("channel_id", "=", channel.id)
    .orderBy("topic")
    .execute();
}

describe("POST /user_topics", () => {
  test("each policy can be set and cleared, with a user_topic event each time", async () => {
    const user = await newUser("Topic Setter");
    const channel = await newChannel(user);
    const queue = (await t.register(user, { event_types: ["user_topic"] })).queue_id as string;
    const policies = [POLICY.MUTED, POLICY.UNMUTED, POLICY.FOLLOWED, POLICY.INHERIT];
    for (const policy of policies) {
      const response = await setTopicPolicy(user, channel.id, "plans", policy);
      assertSuccess(response);
      assert.deepEqual(response.body, { result: "success", msg: "" });
      assert.deepEqual(await storedPolicies(user, channel), policy === POLICY.INHERIT ? [] : [{ topic: "plans", visibility_policy: policy }]);
    }
    const events = await t.queuedEvents(user, queue);
    assert.deepEqual(
      events.map(({ last_updated, ...rest }) => {
        assert.equal(typeof last_updated, "number");
        assert.ok(Math.abs(last_updated - Date.now() / 1000) < 300);
        return rest;
      }),
      policies.map((policy, i) => ({ type: "user_topic", stream_id: channel.id, topic_name: "plans", visibility_policy: policy, id: i })),
    );
  });

  test("an invalid policy is refused", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    for (const policy of [4, -1, 99]) assertBad(await setTopicPolicy(user, channel.id, "t", policy), "Invalid visibility_policy");
    assert.deepEqual(await storedPolicies(user, channel), []);
  });

  test("an unknown channel is 'Invalid channel ID', for every policy", async () => {
    const user = await newUser();
    for (const policy of [0, 1, 2, 3]) assertBad(await setTopicPolicy(user, 999999, "t", policy), "Invalid channel ID");
  });

  test("a private channel the user cannot access, or an archived one, is 'Invalid channel ID'", async () => {
    const user = await newUser();
    const { admin } = u();
    const secret = await newChannel(admin, [], { invite_only: true });
    for (const policy of [1, 2, 3]) assertBad(await setTopicPolicy(user, secret.id, "t", policy), "Invalid channel ID");
    const archived = await newChannel(admin, [user]);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${archived.id}`));
    assertBad(await setTopicPolicy(user, archived.id, "t", POLICY.MUTED), "Invalid channel ID");
  });

  test("INHERIT may clear a policy after the user lost access to the channel", async () => {
    const user = await newUser("Leaver");
    const { admin } = u();
    const secret = await newChannel(admin, [user], { invite_only: true });
    assertSuccess(await setTopicPolicy(user, secret.id, "secret plans", POLICY.MUTED));
    await unsubscribeSelf(user, secret);
    assertBad(await setTopicPolicy(user, secret.id, "secret plans", POLICY.FOLLOWED), "Invalid channel ID");
    assertSuccess(await setTopicPolicy(user, secret.id, "secret plans", POLICY.INHERIT));
    assert.deepEqual(await storedPolicies(user, secret), []);
  });

  test("setting the current policy changes nothing and sends no event", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    const queue = (await t.register(user, { event_types: ["user_topic", "muted_topics"] })).queue_id as string;
    assertSuccess(await setTopicPolicy(user, channel.id, "same", POLICY.MUTED));
    assertSuccess(await setTopicPolicy(user, channel.id, "same", POLICY.MUTED));
    // Clearing a topic that has no policy is a no-op too.
    assertSuccess(await setTopicPolicy(user, channel.id, "untouched", POLICY.INHERIT));
    assert.deepEqual((await t.queuedEvents(user, queue)).map((e) => [e.type, e.topic_name, e.visibility_policy]), [["user_topic", "same", POLICY.MUTED]]);
  });

  test("topics match case-insensitively", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    assertSuccess(await setTopicPolicy(user, channel.id, "Release Plans", POLICY.MUTED));
    assertSuccess(await setTopicPolicy(user, channel.id, "release PLANS", POLICY.FOLLOWED));
    const rows = await storedPolicies(user, channel);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.visibility_policy, POLICY.FOLLOWED);
    assert.equal(rows[0]!.topic.toLowerCase(), "release plans");
    assertSuccess(await setTopicPolicy(user, channel.id, "RELEASE plans", POLICY.INHERIT));
    assert.deepEqual(await storedPolicies(user, channel), []);
  });

  test("a topic longer than 60 characters is refused", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    assertBad(await setTopicPolicy(user, channel.id, "x".repeat(61), POLICY.MUTED), "topic is too long (limit: 60 characters)");
  });

  test("muting sends muted_topics with every muted topic to legacy queues", async () => {
    const user = await newUser("Muter");
    const channel = await newChannel(user);
    const legacy = (await t.register(user, { event_types: ["muted_topics"] })).queue_id as string;
    assertSuccess(await setTopicPolicy(user, channel.id, "noisy", POLICY.MUTED));
    assertSuccess(await setTopicPolicy(user, channel.id, "liked", POLICY.FOLLOWED));
    const events = await t.queuedEvents(user, legacy);
    assert.equal(events.length, 2);
    for (const event of events) {
      assert.equal(event.type, "muted_topics");
      assert.equal(event.muted_topics.length, 1);
      const [name, topic, ts] = event.muted_topics[0];
      assert.deepEqual([name, topic, typeof ts], [channel.name, "noisy", "number"]);
    }
  });

  test("/register lists user_topics, and muted_topics only when user_topic is not asked for", async () => {
    const user = await newUser("Registrar");
    const channel = await newChannel(user);
    assertSuccess(await setTopicPolicy(user, channel.id, "muted one", POLICY.MUTED));
    assertSuccess(await setTopicPolicy(user, channel.id, "followed one", POLICY.FOLLOWED));

    const modern = await t.register(user, { fetch_event_types: ["user_topic"], event_types: ["message"] });
    const topics = [...modern.user_topics].sort((a: any, b: any) => (a.topic_name < b.topic_name ? -1 : 1));
    assert.deepEqual(
      topics.map(({ last_updated, ...rest }: any) => {
        assert.equal(typeof last_updated, "number");
        return rest;
      }),
      [
        { stream_id: channel.id, topic_name: "followed one", visibility_policy: POLICY.FOLLOWED },
        { stream_id: channel.id, topic_name: "muted one", visibility_policy: POLICY.MUTED },
      ],
    );
    assert.equal(modern.muted_topics, undefined);

    const legacy = await t.register(user, { fetch_event_types: ["muted_topics"], event_types: ["message"] });
    assert.equal(legacy.muted_topics.length, 1);
    assert.deepEqual(legacy.muted_topics[0].slice(0, 2), [channel.name, "muted one"]);
    assert.equal(typeof legacy.muted_topics[0][2], "number");
    assert.equal(legacy.user_topics, undefined);

    const both = await t.register(user, { fetch_event_types: ["muted_topics", "user_topic"], event_types: ["message"] });
    assert.equal(both.muted_topics, undefined);
    assert.equal(both.user_topics.length, 2);
  });
});

describe("Automatic topic visibility", () => {
  async function follower(policy: number, unmute: number = AUTO.ON_SEND): Promise<TestUser> {
    const user = await newUser("Auto");
    await setSettings(user, { automatically_follow_topics_policy: policy, automatically_unmute_topics_in_muted_streams_policy: unmute });
    return user;
  }

  test("ON_INITIATION (the default): starting a topic follows it; a later message does not", async () => {
    const user = await newUser("Initiator");
    const channel = await newChannel(user, [u().admin]);
    const first = await sendOk(user, { type: "channel", to: channel.id, topic: "new idea", content: "x" });
    assert.equal(first.automatic_new_visibility_policy, POLICY.FOLLOWED);
    assert.deepEqual(await storedPolicies(user, channel), [{ topic: "new idea", visibility_policy: POLICY.FOLLOWED }]);
    // Replying in a topic someone else started is not initiation.
    await post(u().admin, channel, "their topic", "x");
    const reply = await sendOk(user, { type: "channel", to: channel.id, topic: "their topic", content: "y" });
    assert.equal(reply.automatic_new_visibility_policy, undefined);
    assert.equal((await storedPolicies(user, channel)).length, 1);
  });

  test("ON_SEND: any message follows the topic", async () => {
    const user = await follower(AUTO.ON_SEND);
    const channel = await newChannel(user, [u().admin]);
    await post(u().admin, channel, "existing", "x");
    const reply = await sendOk(user, { type: "channel", to: channel.id, topic: "existing", content: "y" });
    assert.equal(reply.automatic_new_visibility_policy, POLICY.FOLLOWED);
    const again = await sendOk(user, { type: "channel", to: channel.id, topic: "existing", content: "z" });
    assert.equal(again.automatic_new_visibility_policy, undefined, "already followed");
  });

  test("ON_PARTICIPATION: sending is participating, so it follows the topic", async () => {
    const user = await follower(AUTO.ON_PARTICIPATION);
    const channel = await newChannel(user, [u().admin]);
    await post(u().admin, channel, "existing", "x");
    const reply = await sendOk(user, { type: "channel", to: channel.id, topic: "existing", content: "y" });
    assert.equal(reply.automatic_new_visibility_policy, POLICY.FOLLOWED);
  });

  test("NEVER: no policy is set", async () => {
    const user = await follower(AUTO.NEVER, AUTO.NEVER);
    const channel = await newChannel(user);
    const first = await sendOk(user, { type: "channel", to: channel.id, topic: "new", content: "x" });
    assert.equal(first.automatic_new_visibility_policy, undefined);
    assert.deepEqual(await storedPolicies(user, channel), []);
  });

  test("in a muted channel, automatically_unmute_topics_in_muted_streams_policy ON_SEND unmutes the topic", async () => {
    const user = await follower(AUTO.NEVER, AUTO.ON_SEND);
    const channel = await newChannel(user, [u().admin]);
    await muteChannel(user, channel);
    const queue = (await t.register(user, { event_types: ["user_topic"] })).queue_id as string;
    await post(u().admin, channel, "existing", "x");
    const reply = await sendOk(user, { type: "channel", to: channel.id, topic: "existing", content: "y" });
    assert.equal(reply.automatic_new_visibility_policy, POLICY.UNMUTED);
    const events = await t.queuedEvents(user, queue);
    assert.deepEqual(events.map((e) => [e.type, e.stream_id, e.topic_name, e.visibility_policy]), [["user_topic", channel.id, "existing", POLICY.UNMUTED]]);
    // Not muted: nothing to unmute.
    const open = await newChannel(user);
    assert.equal((await sendOk(user, { type: "channel", to: open.id, topic: "t", content: "x" })).automatic_new_visibility_policy, undefined);
  });

  test("in a muted channel, unmute ON_INITIATION unmutes only topics the user starts", async () => {
    const user = await follower(AUTO.NEVER, AUTO.ON_INITIATION);
    const channel = await newChannel(user, [u().admin]);
    await muteChannel(user, channel);
    await post(u().admin, channel, "existing", "x");
    assert.equal((await sendOk(user, { type: "channel", to: channel.id, topic: "existing", content: "y" })).automatic_new_visibility_policy, undefined);
    assert.equal((await sendOk(user, { type: "channel", to: channel.id, topic: "mine", content: "y" })).automatic_new_visibility_policy, POLICY.UNMUTED);
  });

  test("following wins over unmuting in a muted channel", async () => {
    const user = await follower(AUTO.ON_SEND, AUTO.ON_SEND);
    const channel = await newChannel(user);
    await muteChannel(user, channel);
    assert.equal((await sendOk(user, { type: "channel", to: channel.id, topic: "t", content: "x" })).automatic_new_visibility_policy, POLICY.FOLLOWED);
  });

  test("a bot sending never changes a policy", async () => {
    const { member, bot } = u();
    const channel = await newChannel(member, [bot]);
    const fromBot = await sendOk(bot, { type: "channel", to: channel.id, topic: "bot topic", content: "beep" });
    assert.equal(fromBot.automatic_new_visibility_policy, undefined);
    assert.equal((await db().selectFrom("user_topics").select("user_id").where("user_id", "=", bot.id).execute()).length, 0);
  });

  test("mentioned users with automatically_follow_topics_where_mentioned follow the topic", async () => {
    const sender = await newUser("Mentioner");
    const keen = await newUser("Keen");
    const reluctant = await newUser("Reluctant");
    await setSettings(reluctant, { automatically_follow_topics_where_mentioned: false });
    const channel = await newChannel(sender, [keen, reluctant]);
    const keenQueue = (await t.register(keen, { event_types: ["user_topic"] })).queue_id as string;
    const reluctantQueue = (await t.register(reluctant, { event_types: ["user_topic"] })).queue_id as string;
    const body = await sendOk(sender, { type: "channel", to: channel.id, topic: "Review", content: `${await mention(keen)} ${await mention(reluctant)} please review` });
    // The response only reports the sender's own change.
    assert.equal(body.automatic_new_visibility_policy, POLICY.FOLLOWED);
    const events = await t.queuedEvents(keen, keenQueue);
    assert.deepEqual(events.map((e) => [e.type, e.stream_id, e.topic_name, e.visibility_policy]), [["user_topic", channel.id, "Review", POLICY.FOLLOWED]]);
    assert.deepEqual(await storedPolicies(keen, channel), [{ topic: "Review", visibility_policy: POLICY.FOLLOWED }]);
    assert.deepEqual(await t.queuedEvents(reluctant, reluctantQueue), []);
    assert.deepEqual(await storedPolicies(reluctant, channel), []);
  });

  test("a mentioned user who muted the topic keeps it muted", async () => {
    const sender = await newUser("Mentioner");
    const muter = await newUser("Muter");
    const channel = await newChannel(sender, [muter]);
    assertSuccess(await setTopicPolicy(muter, channel.id, "noise", POLICY.MUTED));
    await post(sender, channel, "noise", `${await mention(muter)} hey`);
    assert.deepEqual(await storedPolicies(muter, channel), [{ topic: "noise", visibility_policy: POLICY.MUTED }]);
  });
});

// ---------------------------------------------------------------------------
// 6. /register state

describe("POST /register: message state", () => {
  const MESSAGE_STATE = ["message", "update_message_flags", "recent_private_conversations", "starred_messages"];

  async function state(user: TestUser): Promise<any> {
    return t.register(user, { fetch_event_types: MESSAGE_STATE, event_types: ["message"] });
  }

  test("max_message_id is -1 with no messages, then the newest message the user received", async () => {
    const user = await newUser("Newcomer");
    assert.equal((await state(user)).max_message_id, -1);
    const id = await dm(u().admin, [user]);
    assert.equal((await state(user)).max_message_id, id);
    // Messages in channels the user is not in are not theirs.
    const channel = await newChannel(u().admin);
    await post(u().admin, channel, "t");
    assert.equal((await state(user)).max_message_id, id);
  });

  test("unread_msgs: exact shape, muted channel listed but not counted, unsubscribed channel left out", async () => {
    const { admin, moderator } = u();
    const user = await newUser("Reader");
    const main = await newChannel(admin, [user]);
    const muted = await newChannel(admin, [user]);
    const left = await newChannel(admin, [user]);
    await muteChannel(user, muted);

    const m1 = await post(admin, main, "Alpha", "first");
    const m2 = await post(admin, main, "alpha", "same topic, other case");
    const m3 = await post(admin, main, "beta", `${await mention(user)} look`);
    const m4 = await post(admin, muted, "quiet", "muted");
    const m5 = await post(admin, muted, "quiet", "@**all** in a muted channel");
    const m6 = await post(admin, left, "gone", "before leaving");
    await unsubscribeSelf(user, left);
    const m7 = await dm(admin, [user], "hello");
    const m8 = await dm(moderator, [user], "hello too");
    const m9 = await dm(user, [admin], "my own, unread", { read_by_sender: false });
    const m10 = await dm(admin, [user, moderator], "group");
    const m11 = await dm(user, [user], "self, unread", { read_by_sender: false });
    const m12 = await post(admin, main, "beta", "@**all** wildcard");
    const read = await dm(user, [admin], "my own, read", { read_by_sender: true });
    void m6;
    void read;

    const unread = (await state(user)).unread_msgs;
    assert.deepEqual(Object.keys(unread).sort(), ["count", "huddles", "mentions", "old_unreads_missing", "pms", "streams"]);
    assert.deepEqual(unread.pms, [
      { other_user_id: admin.id, sender_id: admin.id, unread_message_ids: [m7, m9] },
      { other_user_id: moderator.id, sender_id: moderator.id, unread_message_ids: [m8] },
      { other_user_id: user.id, sender_id: user.id, unread_message_ids: [m11] },
    ]);
    assert.deepEqual(unread.streams, [
      { stream_id: main.id, topic: "Alpha", unread_message_ids: [m1, m2] },
      { stream_id: main.id, topic: "beta", unread_message_ids: [m3, m12] },
      { stream_id: muted.id, topic: "quiet", unread_message_ids: [m4, m5] },
    ]);
    assert.deepEqual(unread.huddles, [{ user_ids_string: sortedIds([admin.id, moderator.id, user.id]).join(","), unread_message_ids: [m10] }]);
    // A wildcard mention in a muted channel is not a mention.
    assert.deepEqual(sortedIds(unread.mentions), [m3, m12]);
    // 3 + 1 + 1 direct, 4 in the unmuted channel; the muted channel's 2 are listed but not counted.
    assert.equal(unread.count, 9);
    assert.equal(unread.old_unreads_missing, false);
  });

  test("unread_msgs.streams is ordered by channel ID numerically, then by topic", async () => {
    const { admin } = u();
    const user = await newUser("Reader");
    // A channel whose ID sorts before the early one's as text (e.g. "120" < "3"), if one can be made.
    let late = await newChannel(admin);
    for (let i = 0; i < 300 && `${late.id}:` > `${earlyChannel.id}:`; i++) late = await newChannel(admin);
    await subscribe(admin, earlyChannel, [user]);
    await subscribe(admin, late, [user]);
    const a = await post(admin, late, "b topic", "x");
    const b = await post(admin, late, "A topic", "x");
    const c = await post(admin, earlyChannel, "zed", "x");
    assert.deepEqual((await state(user)).unread_msgs.streams, [
      { stream_id: earlyChannel.id, topic: "zed", unread_message_ids: [c] },
      { stream_id: late.id, topic: "A topic", unread_message_ids: [b] },
      { stream_id: late.id, topic: "b topic", unread_message_ids: [a] },
    ]);
  });

  test("unread_msgs shows the empty topic by its display name unless the client has empty_topic_name", async () => {
    const { admin } = u();
    const user = await newUser("Reader");
    const channel = await newChannel(admin, [user]);
    const id = await post(admin, channel, "", "empty topic");
    const legacy = await state(user);
    assert.deepEqual(legacy.unread_msgs.streams, [{ stream_id: channel.id, topic: "general chat", unread_message_ids: [id] }]);
    const modern = await t.register(user, { fetch_event_types: MESSAGE_STATE, event_types: ["message"], client_capabilities: { empty_topic_name: true } });
    assert.deepEqual(modern.unread_msgs.streams, [{ stream_id: channel.id, topic: "", unread_message_ids: [id] }]);
  });

  test("recent_private_conversations: other participants sorted, newest conversation first, self-DM as []", async () => {
    const { admin, moderator } = u();
    const user = await newUser("Chatter");
    assert.deepEqual((await state(user)).recent_private_conversations, []);
    await dm(admin, [user], "one");
    const m2 = await dm(moderator, [user], "two");
    const m3 = await dm(user, [admin], "three");
    const m4 = await dm(user, [moderator, admin], "four");
    const m5 = await dm(user, [user], "five");
    // Channel messages play no part.
    const channel = await newChannel(admin, [user]);
    await post(admin, channel, "t");
    assert.deepEqual((await state(user)).recent_private_conversations, [
      { user_ids: [], max_message_id: m5 },
      { user_ids: sortedIds([admin.id, moderator.id]), max_message_id: m4 },
      { user_ids: [admin.id], max_message_id: m3 },
      { user_ids: [moderator.id], max_message_id: m2 },
    ]);
  });

  test("starred_messages lists the user's starred message IDs, ascending", async () => {
    const { admin } = u();
    const user = await newUser("Starrer");
    assert.deepEqual((await state(user)).starred_messages, []);
    const a = await dm(admin, [user], "a");
    const b = await dm(admin, [user], "b");
    const c = await dm(admin, [user], "c");
    for (const id of [c, a]) {
      await db()
        .updateTable("user_messages")
        .set((eb) => ({ flags: eb("flags", "+", BIT.STARRED) }))
        .where("user_id", "=", user.id)
        .where("message_id", "=", id)
        .execute();
    }
    assert.deepEqual((await state(user)).starred_messages, [a, c]);
    // Someone else's star is not the user's.
    assert.deepEqual((await state(admin)).starred_messages.filter((id: number) => id === b), []);
  });
});

// ---------------------------------------------------------------------------
// 7. Roles

describe("POST /messages: roles", () => {
  test("every role, and a bot, can send to a public channel they are subscribed to", async () => {
    const { owner, admin, moderator, member, guest, bot } = u();
    const channel = await newChannel(member, [owner, admin, moderator, guest, bot]);
    for (const [role, sender] of Object.entries({ owner, admin, moderator, member, guest, bot })) {
      const { id } = await sendOk(sender, { type: "channel", to: channel.id, topic: "roll call", content: `${role} here` });
      const message = await fetchMessage(member, id);
      assert.equal(message.sender_id, sender.id, role);
      assert.equal(message.stream_id, channel.id, role);
    }
  });

  test("a guest cannot send to a public channel they are not subscribed to; the other roles can", async () => {
    const { owner, admin, moderator, member, guest } = u();
    const channel = await newChannel(admin);
    for (const sender of [owner, admin, moderator, member]) await post(sender, channel, "open door");
    assertBad(await send(guest, { type: "channel", to: channel.id, topic: "open door", content: "x" }), `Not authorized to send to channel '${channel.name}'`);
  });

  test("a guest can send direct messages", async () => {
    const { guest, member } = u();
    const id = await dm(guest, [member], "hello from a guest");
    assert.deepEqual(await flagsOf(member, id), []);
  });
});

describe("POST /messages: guests who cannot see everyone", () => {
  test("outside can_access_all_users_group, a guest writes only to people sharing a channel or a conversation", async () => {
    const guest = await newUser("Limited guest", Role.GUEST);
    const stranger = await newUser("Stranger");
    const neighbour = await newUser("Neighbour");
    await newChannel(u().admin, [guest, neighbour]);
    // can_access_all_users_group may only be role:everyone or role:members (a system group).
    await withRealm({ can_access_all_users_group: groupSetting(sys["role:members"]!) }, { can_access_all_users_group: groupSetting(sys["role:everyone"]!) }, async () => {
      assertBad(await send(guest, { type: "direct", to: JSON.stringify([stranger.id]), content: "hi" }), "You do not have permission to access some of the recipients.");
      assertBad(await send(guest, { type: "direct", to: JSON.stringify([neighbour.id, stranger.id]), content: "hi" }), "You do not have permission to access some of the recipients.");
      // Someone in a shared channel is reachable; so is someone who wrote to the guest first.
      await dm(guest, [neighbour]);
      await dm(stranger, [guest], "hello guest");
      await dm(guest, [stranger], "hello back");
      await dm(guest, [guest], "a note to self");
    });
    // With everyone visible again, any user may be written to.
    const other = await newUser("Other");
    await dm(guest, [other]);
  });
});
