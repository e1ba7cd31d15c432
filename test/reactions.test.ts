// Emoji reactions: POST and DELETE /messages/{message_id}/reactions — the
// reply, the stored reaction as GET /messages shows it, Zulip's errors,
// voting on an existing reaction, custom and Zulip emoji, who may react to
// what (direct messages, private channels, history, archived channels,
// guests, bots), the historical flags row, automatic topic following, and
// the `reaction` events with exactly who receives them.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, basicAuth, sortedIds, startTestApp, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const u = () => t.users;
const db = () => t.services.storage.db;

let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  return t.createUser(unique(prefix), role);
}

interface Channel {
  id: number;
  name: string;
}

async function newChannel(creator: TestUser, others: TestUser[] = [], options: Params = {}): Promise<Channel> {
  const name = unique("reactions");
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
  assertSuccess(await t.api(adder, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: users.map((x) => x.id), send_new_subscription_messages: false }));
}

async function send(sender: TestUser, channel: Channel, content = "react to me", topic = "reactions"): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.name, topic, content })).id as number;
}

async function sendDm(sender: TestUser, to: TestUser[], content = "a direct message"): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((x) => x.id), content })).id as number;
}

const react = (user: TestUser, messageId: number | string, params: Params): Promise<ApiResponse> => t.api(user, "POST", `/messages/${messageId}/reactions`, params);
const unreact = (user: TestUser, messageId: number | string, params: Params): Promise<ApiResponse> => t.api(user, "DELETE", `/messages/${messageId}/reactions`, params);

/** The message's reactions as `user` fetches it. */
async function reactionsOf(user: TestUser, messageId: number): Promise<Json[]> {
  return assertSuccess(await t.api(user, "GET", `/messages/${messageId}`)).message.reactions;
}

async function apiEmail(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("email").where("id", "=", user.id).executeTakeFirstOrThrow()).email;
}

async function fullName(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("full_name").where("id", "=", user.id).executeTakeFirstOrThrow()).full_name;
}

/** The `reaction` event Zulip sends for `user` reacting to `messageId`. */
async function reactionEvent(op: "add" | "remove", user: TestUser, messageId: number, emoji: { emoji_name: string; emoji_code: string; reaction_type: string }): Promise<Json> {
  return {
    type: "reaction",
    op,
    user_id: user.id,
    user: { user_id: user.id, email: await apiEmail(user), full_name: await fullName(user), is_mirror_dummy: false },
    message_id: messageId,
    ...emoji,
  };
}

/** Reaction notifications sent since the last clearEvents. */
function reactionNotifications(): { userIds: number[]; event: Json }[] {
  return t.events.filter((n) => n.event.type === "reaction").map((n) => ({ userIds: sortedIds(n.userIds), event: n.event }));
}

async function flagsRow(user: TestUser, messageId: number): Promise<number | undefined> {
  const row = await db().selectFrom("user_messages").select("flags").where("user_id", "=", user.id).where("message_id", "=", messageId).executeTakeFirst();
  return row === undefined ? undefined : Number(row.flags);
}

const OCTOPUS = { emoji_name: "octopus", emoji_code: "1f419", reaction_type: "unicode_emoji" };
const THUMBS_UP = { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" };
const ZULIP = { emoji_name: "zulip", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" };

// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

/** Uploads a custom emoji through the API and returns its ID. */
async function uploadEmoji(user: TestUser, name: string): Promise<number> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(PNG)], { type: "image/png" }), "emoji.png");
  const response = await fetch(`${t.url}/api/v1/realm/emoji/${encodeURIComponent(name)}`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as Json;
  assert.equal(response.status, 200, JSON.stringify(body));
  const row = await db().selectFrom("realm_emoji").select("id").where("realm_id", "=", t.realm.id).where("name", "=", name).where("deactivated", "=", false).executeTakeFirstOrThrow();
  return row.id;
}

// ---------------------------------------------------------------------------

describe("POST /messages/{message_id}/reactions", () => {
  test("by name: success reply, the reaction on the message, has:reaction finds it", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().moderator, channel);
    const plain = await send(u().moderator, channel, "no reactions here");
    const reply = await react(u().member, id, { emoji_name: "octopus" });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    assert.deepEqual(await reactionsOf(u().moderator, id), [{ ...OCTOPUS, user_id: u().member.id }]);
    const found = assertSuccess(await t.api(u().member, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "stream", operand: channel.id }, { operator: "has", operand: "reaction" }] }));
    assert.deepEqual(
      found.messages.map((m: Json) => m.id),
      [id],
    );
    // Several people, several emoji: listed in the order they were added.
    assertSuccess(await react(u().moderator, id, { emoji_name: "octopus" }));
    assertSuccess(await react(u().member, id, { emoji_name: "tada" }));
    assert.deepEqual(await reactionsOf(u().member, id), [
      { ...OCTOPUS, user_id: u().member.id },
      { ...OCTOPUS, user_id: u().moderator.id },
      { emoji_name: "tada", emoji_code: "1f389", reaction_type: "unicode_emoji", user_id: u().member.id },
    ]);
  });

  test("explicit emoji_code and reaction_type, and Zulip's errors for ones that do not match", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel);
    const bad = async (params: Params, msg: string) => assertError(await react(u().member, id, params), 400, "BAD_REQUEST", msg);
    await bad({ emoji_name: "no_such_emoji" }, "Emoji 'no_such_emoji' does not exist");
    await bad({ emoji_name: "no_such_emoji", emoji_code: "1f419" }, "Emoji 'no_such_emoji' does not exist");
    await bad({ emoji_name: "octopus", emoji_code: "zzzz", reaction_type: "unicode_emoji" }, "Invalid emoji code.");
    await bad({ emoji_name: "tada", emoji_code: "1f419", reaction_type: "unicode_emoji" }, "Invalid emoji name.");
    await bad({ emoji_name: "octopus", emoji_code: "1f419", reaction_type: "bogus_emoji" }, "Invalid emoji type.");
    await bad({ emoji_name: "zulip", emoji_code: "nope", reaction_type: "zulip_extra_emoji" }, "Invalid emoji code.");
    await bad({ emoji_name: "octopus", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" }, "Invalid emoji name.");
    await bad({ emoji_name: "octopus", emoji_code: "999999", reaction_type: "realm_emoji" }, "Invalid custom emoji.");
    assert.deepEqual(await reactionsOf(u().member, id), []);
    // Given in full, or the code alone (the name gives the type).
    assertSuccess(await react(u().member, id, OCTOPUS));
    assertSuccess(await react(u().member, id, { emoji_name: "tada", emoji_code: "1f389" }));
    assert.deepEqual(
      (await reactionsOf(u().member, id)).map((r) => r.emoji_code),
      ["1f419", "1f389"],
    );
  });

  test("the Zulip emoji: zulip_extra_emoji, with the contract's service_extra_emoji accepted as its other name", async () => {
    const channel = await newChannel(u().member, [u().moderator, u().admin]);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: "zulip" }));
    assertSuccess(await react(u().moderator, id, { emoji_name: "zulip", emoji_code: "zulip", reaction_type: "service_extra_emoji" }));
    assertSuccess(await react(u().admin, id, ZULIP));
    assert.deepEqual(await reactionsOf(u().member, id), [
      { ...ZULIP, user_id: u().member.id },
      { ...ZULIP, user_id: u().moderator.id },
      { ...ZULIP, user_id: u().admin.id },
    ]);
    assertError(await react(u().admin, id, { ...ZULIP, reaction_type: "service_extra_emoji" }), 400, "REACTION_ALREADY_EXISTS", "Reaction already exists.");
    assertSuccess(await unreact(u().moderator, id, { emoji_code: "zulip", reaction_type: "service_extra_emoji" }));
    assertSuccess(await unreact(u().admin, id, { emoji_code: "zulip", reaction_type: "zulip_extra_emoji" }));
    assert.deepEqual(await reactionsOf(u().member, id), [{ ...ZULIP, user_id: u().member.id }]);
  });

  test("the same emoji twice is REACTION_ALREADY_EXISTS, under another name of the same code too", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: "+1" }));
    for (const params of [{ emoji_name: "+1" }, { emoji_name: "thumbs_up" }, { emoji_name: "like" }, THUMBS_UP]) {
      assertError(await react(u().member, id, params), 400, "REACTION_ALREADY_EXISTS", "Reaction already exists.");
    }
    assert.deepEqual(await reactionsOf(u().member, id), [{ emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji", user_id: u().member.id }]);
  });

  test("voting: a reaction with an existing code joins it under the name it was first added with, unchecked", async () => {
    const others = [u().moderator, u().admin, u().owner];
    const channel = await newChannel(u().member, others);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: "thumbs_up" }));
    assertSuccess(await react(u().moderator, id, { emoji_name: "+1" }));
    // A name that means nothing is fine when the code votes for an existing reaction.
    assertSuccess(await react(u().admin, id, { emoji_name: "not_a_name", emoji_code: "1f44d", reaction_type: "unicode_emoji" }));
    assert.deepEqual(
      (await reactionsOf(u().member, id)).map((r) => [r.user_id, r.emoji_name, r.emoji_code]),
      [
        [u().member.id, "thumbs_up", "1f44d"],
        [u().moderator.id, "thumbs_up", "1f44d"],
        [u().admin.id, "thumbs_up", "1f44d"],
      ],
    );
    // Without an existing reaction, the same request is checked.
    const fresh = await send(u().member, channel);
    assertError(await react(u().owner, fresh, { emoji_name: "not_a_name", emoji_code: "1f44d", reaction_type: "unicode_emoji" }), 400, "BAD_REQUEST", "Invalid emoji name.");
  });

  test("custom emoji: by name or ID; wrong ID or name; deactivated ones only as votes", async () => {
    const others = [u().moderator, u().admin, u().owner];
    const channel = await newChannel(u().member, others);
    const name = `party_${++counter}`;
    const emojiId = await uploadEmoji(u().member, name);
    const custom = { emoji_name: name, emoji_code: String(emojiId), reaction_type: "realm_emoji" };
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: name }));
    assertSuccess(await react(u().moderator, id, custom));
    assert.deepEqual(await reactionsOf(u().member, id), [
      { ...custom, user_id: u().member.id },
      { ...custom, user_id: u().moderator.id },
    ]);
    const other = await send(u().member, channel);
    assertError(await react(u().admin, other, { ...custom, emoji_code: "999999" }), 400, "BAD_REQUEST", "Invalid custom emoji.");
    assertError(await react(u().admin, other, { ...custom, emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid custom emoji name.");

    assertSuccess(await t.api(u().member, "DELETE", `/realm/emoji/${name}`));
    assertError(await react(u().admin, other, { emoji_name: name }), 400, "BAD_REQUEST", `Emoji '${name}' does not exist`);
    assertError(await react(u().admin, other, custom), 400, "BAD_REQUEST", "This custom emoji has been deactivated.");
    // Still a vote where it is already in use, and still removable.
    assertSuccess(await react(u().admin, id, custom));
    assertSuccess(await unreact(u().member, id, { emoji_code: String(emojiId), reaction_type: "realm_emoji" }));
    assert.deepEqual(
      (await reactionsOf(u().member, id)).map((r) => r.user_id),
      [u().moderator.id, u().admin.id],
    );
  });

  test("bad input: missing name, wrong types, unknown and impossible message IDs, unknown parameters", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel);
    assertError(await react(u().member, id, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'emoji_name' argument", { var_name: "emoji_name" });
    assertError(await react(u().member, id, { emoji_code: "1f419" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'emoji_name' argument");
    assertError(await react(u().member, "abc", { emoji_name: "octopus" }), 400, "BAD_REQUEST", "message_id is not an integer");
    assertError(await react(u().member, "1.5", { emoji_name: "octopus" }), 400, "BAD_REQUEST", "message_id is not an integer");
    for (const missing of [999999999, 0, -1, 99999999999]) {
      assertError(await react(u().member, missing, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
      assertError(await unreact(u().member, missing, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    }
    assertError(await react(u().member, id, { emoji_name: "oct\u0000opus" }), 400, "BAD_REQUEST", "emoji_name contains a NUL character");
    // An emoji name that is JSON is still just a string.
    assertError(await react(u().member, id, { emoji_name: '["octopus"]' }), 400, "BAD_REQUEST", `Emoji '["octopus"]' does not exist`);
    const reply = assertSuccess(await react(u().member, id, { emoji_name: "octopus", colour: "red" }));
    assert.deepEqual(reply.ignored_parameters_unsupported, ["colour"]);
    // Parameters in the query string or a JSON body work as well.
    assertSuccess(await t.api(u().member, "POST", `/messages/${id}/reactions?emoji_name=tada`, {}));
    assertSuccess(await react(u().member, id, { emoji_name: "heart" }));
    assertSuccess(await t.api(u().member, "DELETE", `/messages/${id}/reactions`, { emoji_name: "heart" }, { encoding: "json" }));
    // No credentials; wrong method.
    assertError(await t.api(null, "POST", `/messages/${id}/reactions`, { emoji_name: "octopus" }), 401, "UNAUTHORIZED");
    const wrong = await t.api(u().member, "PATCH", `/messages/${id}/reactions`, {});
    assertError(wrong, 405, "METHOD_NOT_ALLOWED");
    assert.equal(wrong.headers.get("allow"), "POST, DELETE");
  });
});

describe("DELETE /messages/{message_id}/reactions", () => {
  test("by name, by code, by code and type; only one's own; errors", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: "octopus" }));
    assertSuccess(await react(u().member, id, { emoji_name: "tada" }));
    assertSuccess(await react(u().member, id, { emoji_name: "+1" }));
    assertSuccess(await react(u().moderator, id, { emoji_name: "octopus" }));

    // Someone else's reaction is not yours to remove.
    assertError(await unreact(u().moderator, id, { emoji_name: "tada" }), 400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist.");
    assertError(await unreact(u().member, id, { emoji_code: "1f419", reaction_type: "realm_emoji" }), 400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist.");
    assertError(await unreact(u().member, id, {}), 400, "BAD_REQUEST", "At least one of the following arguments must be present: emoji_name, emoji_code");
    assertError(await unreact(u().member, id, { emoji_name: "no_such_emoji" }), 400, "BAD_REQUEST", "Emoji 'no_such_emoji' does not exist");

    const reply = await unreact(u().member, id, { emoji_name: "octopus" });
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    // The code decides, whatever name comes with it; the type defaults to unicode_emoji.
    assertSuccess(await unreact(u().member, id, { emoji_name: "whatever", emoji_code: "1f389" }));
    assertSuccess(await unreact(u().member, id, { emoji_name: "thumbs_up" }));
    assertError(await unreact(u().member, id, { emoji_name: "octopus" }), 400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist.");
    assert.deepEqual(await reactionsOf(u().member, id), [{ ...OCTOPUS, user_id: u().moderator.id }]);
  });

  test("a custom emoji's reaction by name alone (Parley takes the name's type), and after the emoji is deactivated", async () => {
    const channel = await newChannel(u().member);
    const name = `wave_${++counter}`;
    const emojiId = await uploadEmoji(u().member, name);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: name }));
    assertSuccess(await unreact(u().member, id, { emoji_name: name }));
    assertSuccess(await react(u().member, id, { emoji_name: name }));
    assertSuccess(await t.api(u().member, "DELETE", `/realm/emoji/${name}`));
    assertError(await unreact(u().member, id, { emoji_name: name }), 400, "BAD_REQUEST", `Emoji '${name}' does not exist`);
    assertSuccess(await unreact(u().member, id, { emoji_name: name, emoji_code: String(emojiId), reaction_type: "realm_emoji" }));
    assert.deepEqual(await reactionsOf(u().member, id), []);
  });
});

describe("who may react", () => {
  test("direct messages: the participants only", async () => {
    const dm = await sendDm(u().admin, [u().moderator]);
    for (const outsider of [u().member, u().owner, u().guest, u().bot]) {
      assertError(await react(outsider, dm, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
      assertError(await unreact(outsider, dm, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    }
    assertSuccess(await react(u().moderator, dm, { emoji_name: "octopus" }));
    assertSuccess(await react(u().admin, dm, { emoji_name: "octopus" }));
    const self = await sendDm(u().member, [u().member], "note to self");
    assertSuccess(await react(u().member, self, { emoji_name: "tada" }));
    assertError(await react(u().admin, self, { emoji_name: "tada" }), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("private channels: subscribers; with protected history only those who received the message", async () => {
    const late = await newUser("Late");
    const outsider = await newUser("Outsider");
    const shared = await newChannel(u().member, [], { invite_only: true, history_public_to_subscribers: true });
    const protectedChannel = await newChannel(u().member, [], { invite_only: true, history_public_to_subscribers: false });
    const sharedId = await send(u().member, shared);
    const protectedId = await send(u().member, protectedChannel);
    await subscribe(u().member, shared, [late]);
    await subscribe(u().member, protectedChannel, [late]);
    for (const id of [sharedId, protectedId]) {
      // Not subscribed: not even administrators see private channels' messages.
      for (const user of [outsider, u().admin, u().owner]) assertError(await react(user, id, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    }
    assertError(await react(late, protectedId, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertSuccess(await react(late, sharedId, { emoji_name: "octopus" }));
    // Shared history: the late subscriber now has a historical flags row (read, historical).
    assert.equal(await flagsRow(late, sharedId), 1 | 1024);
    assert.deepEqual(assertSuccess(await t.api(late, "GET", `/messages/${sharedId}`)).message.flags, ["read", "historical"]);
  });

  test("public channels: anyone but guests, subscribed or not; a non-subscriber gets a historical flags row", async () => {
    const channel = await newChannel(u().moderator);
    const id = await send(u().moderator, channel);
    const reader = await newUser("Reader");
    const senderFlags = await flagsRow(u().moderator, id);
    assert.equal(await flagsRow(reader, id), undefined);
    assertSuccess(await react(reader, id, { emoji_name: "octopus" }));
    assert.equal(await flagsRow(reader, id), 1 | 1024);
    // Removing the reaction keeps the row; adding again does not make a second one.
    assertSuccess(await unreact(reader, id, { emoji_name: "octopus" }));
    assertSuccess(await react(reader, id, { emoji_name: "octopus" }));
    assert.equal(await flagsRow(reader, id), 1 | 1024);
    // The sender's own row is untouched.
    assert.notEqual(senderFlags, undefined);
    assert.equal(await flagsRow(u().moderator, id), senderFlags);
    // Bots react like anyone else.
    assertSuccess(await react(u().bot, id, { emoji_name: "octopus" }));
    // Guests only where they are subscribed.
    assertError(await react(u().guest, id, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    await subscribe(u().moderator, channel, [u().guest]);
    assertSuccess(await react(u().guest, id, { emoji_name: "octopus" }));
    assert.deepEqual(
      (await reactionsOf(u().moderator, id)).map((r) => r.user_id),
      [reader.id, u().bot.id, u().guest.id],
    );
  });

  test("archived channels: no reactions added or removed", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel);
    assertSuccess(await react(u().member, id, { emoji_name: "octopus" }));
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${channel.id}`));
    assertError(await react(u().member, id, { emoji_name: "tada" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await unreact(u().member, id, { emoji_name: "octopus" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assert.deepEqual(await reactionsOf(u().member, id), [{ ...OCTOPUS, user_id: u().member.id }]);
  });
});

describe("reaction events", () => {
  test("a public channel: every subscriber and the reacting non-subscriber, with Zulip's payload", async () => {
    const subscriber = await newUser("Sub");
    const reader = await newUser("Reader");
    const channel = await newChannel(u().member, [subscriber]);
    const id = await send(u().member, channel);
    t.clearEvents();
    assertSuccess(await react(reader, id, { emoji_name: "octopus" }));
    assertSuccess(await unreact(reader, id, { emoji_name: "octopus" }));
    const audience = sortedIds([u().member.id, subscriber.id, reader.id]);
    assert.deepEqual(reactionNotifications(), [
      { userIds: audience, event: await reactionEvent("add", reader, id, OCTOPUS) },
      { userIds: audience, event: await reactionEvent("remove", reader, id, OCTOPUS) },
    ]);
    // A subscriber's reaction goes to the subscribers and, in a public channel, to non-guests with a
    // flags row: the reader kept the historical row their reaction created (queries/message-audience.ts).
    t.clearEvents();
    assertSuccess(await react(subscriber, id, { emoji_name: "+1" }));
    assert.deepEqual(reactionNotifications(), [
      { userIds: sortedIds([u().member.id, subscriber.id, reader.id]), event: await reactionEvent("add", subscriber, id, { emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" }) },
    ]);
  });

  test("direct messages: the participants; failures send nothing", async () => {
    const dm = await sendDm(u().admin, [u().moderator, u().member]);
    t.clearEvents();
    assertSuccess(await react(u().moderator, dm, { emoji_name: "tada" }));
    assertError(await react(u().moderator, dm, { emoji_name: "tada" }), 400, "REACTION_ALREADY_EXISTS");
    assertError(await react(u().owner, dm, { emoji_name: "tada" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await unreact(u().moderator, dm, { emoji_name: "octopus" }), 400, "REACTION_DOES_NOT_EXIST");
    assert.deepEqual(reactionNotifications(), [
      {
        userIds: sortedIds([u().admin.id, u().moderator.id, u().member.id]),
        event: await reactionEvent("add", u().moderator, dm, { emoji_name: "tada", emoji_code: "1f389", reaction_type: "unicode_emoji" }),
      },
    ]);
  });

  test("a protected-history channel: subscribers who received the message, not later ones; a vote carries the first name", async () => {
    const late = await newUser("Late");
    const early = await newUser("Early");
    const channel = await newChannel(u().member, [early], { invite_only: true, history_public_to_subscribers: false });
    const id = await send(u().member, channel);
    await subscribe(u().member, channel, [late]);
    assertSuccess(await react(early, id, { emoji_name: "thumbs_up" }));
    t.clearEvents();
    assertSuccess(await react(u().member, id, { emoji_name: "like" }));
    assert.deepEqual(reactionNotifications(), [{ userIds: sortedIds([u().member.id, early.id]), event: await reactionEvent("add", u().member, id, THUMBS_UP) }]);
  });

  test("through real event queues: only queues registered for reaction events, of users who can see the message", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel);
    const watcher = (await t.register(u().moderator, { event_types: ["reaction"] })).queue_id as string;
    const other = (await t.register(u().moderator, { event_types: ["message"] })).queue_id as string;
    const outsider = (await t.register(u().guest, { event_types: ["reaction"] })).queue_id as string;
    assertSuccess(await react(u().member, id, { emoji_name: "octopus" }));
    const events = await t.queuedEvents(u().moderator, watcher);
    assert.deepEqual(
      events.map(({ id: _queueId, ...rest }: Json) => rest),
      [await reactionEvent("add", u().member, id, OCTOPUS)],
    );
    assert.deepEqual(await t.queuedEvents(u().moderator, other), []);
    assert.deepEqual(await t.queuedEvents(u().guest, outsider), []);
  });
});

describe("automatic topic visibility", () => {
  test("reacting follows the topic when the user's policy is 'on participation'; never for the default policy", async () => {
    const follower = await newUser("Follower");
    const bystander = await newUser("Bystander");
    const channel = await newChannel(u().member, [follower, bystander]);
    const id = await send(u().member, channel, "follow me", "participation");
    assertSuccess(await t.api(follower, "PATCH", "/settings", { automatically_follow_topics_policy: 1 }));
    t.clearEvents();
    assertSuccess(await react(bystander, id, { emoji_name: "octopus" }));
    assert.deepEqual(t.eventsFor(bystander.id, "user_topic"), []);
    assertSuccess(await react(follower, id, { emoji_name: "octopus" }));
    const [topicEvent] = t.eventsFor(follower.id, "user_topic");
    assert.deepEqual({ ...topicEvent, last_updated: 0 }, { type: "user_topic", stream_id: channel.id, topic_name: "participation", last_updated: 0, visibility_policy: 3 });
    const row = await db().selectFrom("user_topics").select("visibility_policy").where("user_id", "=", follower.id).where("channel_id", "=", channel.id).executeTakeFirst();
    assert.equal(row?.visibility_policy, 3);
    // Already followed: nothing more.
    t.clearEvents();
    assertSuccess(await react(follower, id, { emoji_name: "tada" }));
    assert.deepEqual(t.eventsFor(follower.id, "user_topic"), []);
  });

  test("in a muted channel, 'unmute on participation' unmutes the topic; a non-subscriber's reaction changes nothing", async () => {
    const user = await newUser("Unmuter");
    const reader = await newUser("Reader");
    const channel = await newChannel(u().member, [user]);
    const id = await send(u().member, channel, "muted talk", "muted topic");
    assertSuccess(await t.api(user, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: channel.id, property: "is_muted", value: true }] }));
    assertSuccess(await t.api(user, "PATCH", "/settings", { automatically_follow_topics_policy: 4, automatically_unmute_topics_in_muted_streams_policy: 1 }));
    assertSuccess(await t.api(reader, "PATCH", "/settings", { automatically_follow_topics_policy: 1 }));
    t.clearEvents();
    assertSuccess(await react(user, id, { emoji_name: "octopus" }));
    assertSuccess(await react(reader, id, { emoji_name: "octopus" }));
    assert.deepEqual(
      t.eventsFor(user.id, "user_topic").map((e) => e.visibility_policy),
      [2],
    );
    assert.deepEqual(t.eventsFor(reader.id, "user_topic"), []);
  });
});
