// API-level tests of reading messages: GET /messages (the message object,
// anchors and windows, every narrow operator, history and access rules),
// GET /messages/{message_id}, GET /messages/matches_narrow and
// POST /messages/render. Expected behaviour is Zulip's, as researched in
// docs/zulip-behaviour/messages.md §2–§4.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, DIALECT, startTestApp, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
/** Notification Bot and the other system bots: their messages (e.g. "X subscribed you") are left out of comparisons. */
let systemBotIds: Set<number>;

before(async () => {
  t = await startTestApp();
  const bots = await db().selectFrom("users").select("id").where("realm_id", "=", t.realm.id).where("is_system_bot", "=", true).execute();
  systemBotIds = new Set(bots.map((b) => b.id));
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const u = () => t.users;
const db = () => t.services.storage.db;

const NEWEST = 10000000000000000;
const FLAG = { read: 1, starred: 2, mentioned: 8, stream_wildcard_mentioned: 16 } as const;

let counter = 0;
function unique(prefix: string): string {
  counter += 1;
  return `${prefix} ${counter}`;
}

async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

/** The address the API shows for a user (user{id}@… while real addresses are hidden). */
async function apiEmail(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("email").where("id", "=", user.id).executeTakeFirstOrThrow()).email;
}

async function fullName(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("full_name").where("id", "=", user.id).executeTakeFirstOrThrow()).full_name;
}

interface Channel {
  id: number;
  name: string;
}

/**
 * A new channel created by `creator`, who is subscribed; the others are
 * subscribed too (without Notification Bot messages where supported).
 */
async function newChannel(creator: TestUser, others: TestUser[] = [], options: Params = {}, prefix = "fetch channel"): Promise<Channel> {
  const name = unique(prefix);
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

/** `adder` subscribes `users` to the channel. */
async function addSubscribers(adder: TestUser, channel: Channel, users: TestUser[]): Promise<void> {
  assertSuccess(
    await t.api(adder, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channel.name }],
      principals: users.map((x) => x.id),
      send_new_subscription_messages: false,
    }),
  );
}

async function unsubscribe(user: TestUser, channel: Channel): Promise<void> {
  assertSuccess(await t.api(user, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name] }));
}

async function send(sender: TestUser, channel: Channel, topic: string, content: string, extra: Params = {}): Promise<number> {
  const body = assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.name, topic, content, ...extra }));
  assert.equal(typeof body.id, "number");
  return body.id as number;
}

async function sendDm(sender: TestUser, to: TestUser[], content: string, extra: Params = {}): Promise<number> {
  const body = assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((x) => x.id), content, ...extra }));
  return body.id as number;
}

function getMessages(user: TestUser, params: Params): Promise<ApiResponse> {
  return t.api(user, "GET", "/messages", params);
}

/** GET /messages, asserting success. */
async function fetchBody(user: TestUser, params: Params): Promise<Json> {
  return assertSuccess(await getMessages(user, params));
}

/** Every message of a narrow (oldest first), system-bot messages left out. */
async function fetchAll(user: TestUser, narrow: unknown[] | null, extra: Params = {}): Promise<Json[]> {
  const params: Params = { anchor: "oldest", num_before: 0, num_after: 5000, ...extra };
  if (narrow !== null) params.narrow = narrow;
  const body = await fetchBody(user, params);
  return (body.messages as Json[]).filter((m) => !systemBotIds.has(m.sender_id));
}

async function ids(user: TestUser, narrow: unknown[] | null, extra: Params = {}): Promise<number[]> {
  return (await fetchAll(user, narrow, extra)).map((m) => m.id as number);
}

const asc = (list: readonly number[]): number[] => [...list].sort((a, b) => a - b);
const without = (list: readonly number[], removed: readonly number[]): number[] => asc(list.filter((x) => !removed.includes(x)));
const only = (list: readonly number[], kept: readonly number[]): number[] => asc(list.filter((x) => kept.includes(x)));

async function flagsOf(user: TestUser, messageId: number): Promise<number> {
  const row = await db().selectFrom("user_messages").select("flags").where("user_id", "=", user.id).where("message_id", "=", messageId).executeTakeFirstOrThrow();
  return Number(row.flags);
}

/** Sets bits in the user's flags row for the message (the flags endpoints come later). */
async function addFlags(user: TestUser, messageId: number, bits: number): Promise<void> {
  const flags = await flagsOf(user, messageId);
  await db().updateTable("user_messages").set({ flags: flags | bits }).where("user_id", "=", user.id).where("message_id", "=", messageId).execute();
}

async function removeFlags(user: TestUser, messageId: number, bits: number): Promise<void> {
  const flags = await flagsOf(user, messageId);
  await db().updateTable("user_messages").set({ flags: flags & ~bits }).where("user_id", "=", user.id).where("message_id", "=", messageId).execute();
}

async function markRead(user: TestUser, messageIds: number[]): Promise<void> {
  for (const id of messageIds) await addFlags(user, id, FLAG.read);
}

async function markUnread(user: TestUser, messageIds: number[]): Promise<void> {
  for (const id of messageIds) await removeFlags(user, id, FLAG.read);
}

async function react(user: TestUser, messageId: number, emojiName: string, emojiCode: string): Promise<void> {
  await db().insertInto("reactions").values({ message_id: messageId, user_id: user.id, emoji_name: emojiName, emoji_code: emojiCode, reaction_type: "unicode_emoji" }).execute();
}

/** An uploaded file owned by `owner`, as POST /user_uploads would record it; returns its URL path. */
async function upload(owner: TestUser, fileName: string, contentType: string): Promise<string> {
  counter += 1;
  const pathId = `${t.realm.id}/a${counter % 10}/tok${counter}x${Date.now().toString(36)}/${fileName}`;
  await db()
    .insertInto("attachments")
    .values({ realm_id: t.realm.id, owner_id: owner.id, path_id: pathId, file_name: fileName, content_type: contentType, size: 123, create_time: Date.now() })
    .execute();
  return `/user_uploads/${pathId}`;
}

async function setTopicPolicy(user: TestUser, channel: Channel, topic: string, policy: number): Promise<void> {
  assertSuccess(await t.api(user, "POST", "/user_topics", { stream_id: channel.id, topic, visibility_policy: policy }));
}

async function clearTopicPolicies(user: TestUser): Promise<void> {
  await db().deleteFrom("user_topics").where("user_id", "=", user.id).execute();
}

async function muteChannel(user: TestUser, channel: Channel, muted = true): Promise<void> {
  assertSuccess(
    await t.api(user, "POST", "/users/me/subscriptions/properties", {
      subscription_data: [{ stream_id: channel.id, property: "is_muted", value: muted }],
    }),
  );
}

function assertBadNarrow(response: ApiResponse, desc: string): void {
  assertError(response, 400, "BAD_NARROW", `Invalid narrow operator: ${desc}`, { desc });
}

/** The reply for a narrow naming a channel the user may not read: no error, no messages. */
function assertEmptyInaccessible(body: Json): void {
  assert.deepEqual(body.messages, []);
  assert.equal(body.anchor, NEWEST);
  assert.equal(body.found_anchor, false);
  assert.equal(body.found_oldest, true);
  assert.equal(body.found_newest, true);
  assert.equal(body.history_limited, false);
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------------------

describe("GET /messages: the message object", () => {
  test("a channel message has every field, as the recipient sees it", async () => {
    const sender = await newUser("Shape Sender");
    const viewer = await newUser("Shape Viewer");
    const channel = await newChannel(sender, [viewer]);
    const id = await send(sender, channel, "Shape topic", "hello **world**", { client: "ZulipPython" });

    const body = await fetchBody(viewer, { anchor: id, num_before: 0, num_after: 0, narrow: [["channel", channel.name]] });
    for (const key of ["messages", "anchor", "found_anchor", "found_oldest", "found_newest", "history_limited"]) assert.ok(key in body, `${key} in ${JSON.stringify(body)}`);
    assert.equal(body.anchor, id);
    assert.equal(body.found_anchor, true);
    assert.equal(body.history_limited, false);
    assert.equal(body.messages.length, 1);
    const m = body.messages[0];
    assert.equal(m.id, id);
    assert.equal(m.sender_id, sender.id);
    assert.equal(m.sender_email, await apiEmail(sender));
    assert.equal(m.sender_full_name, await fullName(sender));
    assert.equal(m.sender_realm_str, t.realm.string_id);
    // Real addresses are hidden here, so client_gravatar cannot apply: always a URL.
    assert.equal(typeof m.avatar_url, "string");
    assert.ok(m.avatar_url.length > 0);
    assert.equal(m.client, "ZulipPython");
    assert.equal(m.content_type, "text/html");
    assert.match(m.content, /^<p>/);
    assert.match(m.content, /world/);
    assert.doesNotMatch(m.content, /\*\*/, "Markdown is rendered");
    assert.equal(m.display_recipient, channel.name);
    assert.equal(typeof m.recipient_id, "number");
    assert.equal(m.type, "stream");
    assert.equal(m.stream_id, channel.id);
    assert.equal(m.subject, "Shape topic");
    assert.deepEqual(m.topic_links, []);
    assert.equal(typeof m.timestamp, "number");
    assert.ok(Number.isInteger(m.timestamp) && Math.abs(m.timestamp - nowSeconds()) < 120, `timestamp ${m.timestamp}`);
    assert.equal(m.is_me_message, false);
    assert.deepEqual(m.reactions, []);
    assert.deepEqual(m.submessages, []);
    assert.deepEqual(m.flags, []);
    assert.equal(m.match_content, undefined, "no search, no match_content");
    assert.equal(m.match_subject, undefined);
    assert.equal(m.last_edit_timestamp, undefined);
    assert.equal(m.edit_history, undefined);

    // Every message of a channel shares its recipient ID.
    const second = await send(viewer, channel, "Other topic", "second");
    const both = await fetchAll(viewer, [["channel", channel.name]]);
    assert.deepEqual(both.map((x) => x.id), [id, second]);
    assert.equal(both[1].recipient_id, m.recipient_id);
  });

  test("flags: the sender's own message is read when read_by_sender, and a fresh recipient's is unread", async () => {
    const sender = await newUser("Flag Sender");
    const viewer = await newUser("Flag Viewer");
    const channel = await newChannel(sender, [viewer]);
    const readId = await send(sender, channel, "t", "read by sender", { read_by_sender: true });
    const unreadId = await send(sender, channel, "t", "unread by sender", { read_by_sender: false });
    const senderView = await fetchAll(sender, [["channel", channel.name]]);
    assert.deepEqual(senderView.map((m) => [m.id, m.flags]), [
      [readId, ["read"]],
      [unreadId, []],
    ]);
    const viewerView = await fetchAll(viewer, [["channel", channel.name]]);
    assert.deepEqual(viewerView.map((m) => m.flags), [[], []]);
    await addFlags(viewer, readId, FLAG.starred | FLAG.read | FLAG.mentioned);
    const again = await fetchAll(viewer, [{ operator: "id", operand: readId }]);
    assert.deepEqual(again[0].flags, ["read", "starred", "mentioned"], "flags in Zulip's bit order");
  });

  test("a /me message has is_me_message", async () => {
    const sender = await newUser("Me Sender");
    const channel = await newChannel(sender);
    const id = await send(sender, channel, "status", "/me waves");
    const [m] = await fetchAll(sender, [{ operator: "id", operand: id }]);
    assert.equal(m.is_me_message, true);
    const plain = await send(sender, channel, "status", "I /me wave");
    assert.equal((await fetchAll(sender, [{ operator: "id", operand: plain }]))[0].is_me_message, false);
  });

  test("direct messages: display_recipient, type, no stream_id, one recipient_id for both directions", async () => {
    const owner = u().owner;
    // An ID whose address sorts before the owner's ("user1x@" < "user3@"), so email order and ID order differ.
    let partner = await newUser("Dm Partner");
    while (partner.id < 10) partner = await newUser("Dm Partner");
    const third = await newUser("Dm Third");
    const out = await sendDm(owner, [partner], "owner to partner");
    const back = await sendDm(partner, [owner], "partner to owner");
    const group = await sendDm(owner, [partner, third], "group");
    const self = await sendDm(owner, [owner], "note to self");

    const person = async (x: TestUser) => ({ id: x.id, email: await apiEmail(x), full_name: await fullName(x), is_mirror_dummy: false });
    const pair = [await person(owner), await person(partner)];
    // Zulip orders a 1:1 conversation's two users by their (API) email address.
    const byEmail = [...pair].sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));

    const ownerView = await fetchAll(owner, [{ operator: "dm", operand: [partner.id] }]);
    assert.deepEqual(ownerView.map((m) => m.id), [out, back]);
    for (const m of ownerView) {
      assert.equal(m.type, "private");
      assert.equal("stream_id" in m, false, "no stream_id on direct messages");
      assert.equal(m.subject, "");
      assert.deepEqual(m.topic_links, []);
      assert.equal(typeof m.recipient_id, "number");
      assert.deepEqual(m.display_recipient, byEmail);
    }
    assert.equal(ownerView[0].recipient_id, ownerView[1].recipient_id, "both directions share one recipient_id");
    const partnerView = await fetchAll(partner, [{ operator: "dm", operand: [owner.id] }]);
    assert.equal(partnerView[0].recipient_id, partnerView[1].recipient_id);
    assert.deepEqual(partnerView[0].sender_id, owner.id);
    assert.deepEqual(partnerView[1].sender_id, partner.id);

    const [groupMessage] = await fetchAll(owner, [{ operator: "id", operand: group }]);
    assert.equal(groupMessage.type, "private");
    assert.deepEqual(
      [...groupMessage.display_recipient].sort((a: Json, b: Json) => a.id - b.id),
      [await person(owner), await person(partner), await person(third)].sort((a, b) => a.id - b.id),
    );
    assert.notEqual(groupMessage.recipient_id, ownerView[0].recipient_id);

    const [selfMessage] = await fetchAll(owner, [{ operator: "id", operand: self }]);
    assert.deepEqual(selfMessage.display_recipient, [await person(owner)]);
    assert.notEqual(selfMessage.recipient_id, ownerView[0].recipient_id);
    assert.equal("stream_id" in selfMessage, false);
  });

  test("reactions: emoji_name, emoji_code, reaction_type and user_id for each", async () => {
    const sender = await newUser("React Sender");
    const other = await newUser("React Other");
    const channel = await newChannel(sender, [other]);
    const id = await send(sender, channel, "t", "react to me");
    await react(other, id, "thumbs_up", "1f44d");
    await react(sender, id, "heart", "2764");
    const [m] = await fetchAll(sender, [{ operator: "id", operand: id }]);
    assert.deepEqual(m.reactions, [
      { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji", user_id: other.id },
      { emoji_name: "heart", emoji_code: "2764", reaction_type: "unicode_emoji", user_id: sender.id },
    ]);
  });

  test("apply_markdown=false gives the raw Markdown as text/x-markdown", async () => {
    const sender = await newUser("Raw Sender");
    const channel = await newChannel(sender);
    const id = await send(sender, channel, "t", "some **bold** text");
    const [raw] = await fetchAll(sender, [{ operator: "id", operand: id }], { apply_markdown: false });
    assert.equal(raw.content, "some **bold** text");
    assert.equal(raw.content_type, "text/x-markdown");
    const [html] = await fetchAll(sender, [{ operator: "id", operand: id }], { apply_markdown: true });
    assert.equal(html.content_type, "text/html");
    assert.notEqual(html.content, "some **bold** text");
  });

  test("the empty topic shows as \"general chat\" unless allow_empty_topic_name", async () => {
    const sender = await newUser("Empty Sender");
    const channel = await newChannel(sender);
    const empty = await send(sender, channel, "", "in the empty topic");
    const named = await send(sender, channel, "general chat", "also the empty topic");
    const shown = await fetchAll(sender, [["channel", channel.name]]);
    assert.deepEqual(shown.map((m) => m.subject), ["general chat", "general chat"]);
    const raw = await fetchAll(sender, [["channel", channel.name]], { allow_empty_topic_name: true });
    assert.deepEqual(raw.map((m) => [m.id, m.subject]), [
      [empty, ""],
      [named, ""],
    ]);
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages: anchors and windows", () => {
  let viewer: TestUser;
  let channel: Channel;
  /** m[0..5]: six messages in the channel, oldest first. */
  let m: [number, number, number, number, number, number];
  /** A message of another channel, with an ID between m[2] and m[3]. */
  let between: number;
  const narrow = () => [["channel", channel.name]];

  before(async () => {
    const sender = await newUser("Anchor Sender");
    viewer = await newUser("Anchor Viewer");
    channel = await newChannel(sender, [viewer]);
    const elsewhere = await newChannel(sender, [viewer]);
    const sent: number[] = [];
    for (let i = 1; i <= 3; i++) sent.push(await send(sender, channel, "window", `message ${i}`));
    between = await send(sender, elsewhere, "else", "in between");
    for (let i = 4; i <= 6; i++) sent.push(await send(sender, channel, "window", `message ${i}`));
    m = sent as typeof m;
  });

  const window = async (params: Params) => {
    const body = await fetchBody(viewer, { narrow: narrow(), ...params });
    return { ...body, ids: (body.messages as Json[]).map((x) => x.id) };
  };

  test("numeric anchor: the anchor and up to num_before/num_after on each side", async () => {
    let r = await window({ anchor: m[2], num_before: 1, num_after: 1 });
    assert.deepEqual(r.ids, [m[1], m[2], m[3]]);
    assert.equal(r.anchor, m[2]);
    assert.equal(r.found_anchor, true);
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, false);
    assert.equal(r.history_limited, false);

    // Exactly as many as asked for on each side: not the end yet.
    r = await window({ anchor: m[2], num_before: 2, num_after: 3 });
    assert.deepEqual(r.ids, m);
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, false);

    // Fewer than asked for: the ends are found.
    r = await window({ anchor: m[2], num_before: 5, num_after: 5 });
    assert.deepEqual(r.ids, m);
    assert.equal(r.found_anchor, true);
    assert.equal(r.found_oldest, true);
    assert.equal(r.found_newest, true);

    // The anchor is sent as a string by most clients.
    r = await window({ anchor: String(m[4]), num_before: 0, num_after: 5 });
    assert.deepEqual(r.ids, [m[4], m[5]]);
    assert.equal(r.anchor, m[4]);
    assert.equal(r.found_newest, true);
    assert.equal(r.found_oldest, false, "num_before 0: 0 < 0 is false");
  });

  test("num_before = num_after = 0: only the anchor message", async () => {
    let r = await window({ anchor: m[3], num_before: 0, num_after: 0 });
    assert.deepEqual(r.ids, [m[3]]);
    assert.equal(r.found_anchor, true);
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, false);
    r = await window({ anchor: between, num_before: 0, num_after: 0 });
    assert.deepEqual(r.ids, [], "the anchor is outside the narrow");
    assert.equal(r.found_anchor, false);
    // Defaults are 0 and 0.
    r = await window({ anchor: m[3] });
    assert.deepEqual(r.ids, [m[3]]);
  });

  test("an anchor outside the narrow: found_anchor false, the neighbours still come", async () => {
    const r = await window({ anchor: between, num_before: 1, num_after: 1 });
    assert.deepEqual(r.ids, [m[2], m[3]]);
    assert.equal(r.anchor, between);
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, false);
  });

  test("include_anchor=false leaves the anchor out at an end of the range", async () => {
    let r = await window({ anchor: m[2], num_before: 2, num_after: 0, include_anchor: false });
    assert.deepEqual(r.ids, [m[0], m[1]]);
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_oldest, false);
    r = await window({ anchor: m[2], num_before: 0, num_after: 2, include_anchor: false });
    assert.deepEqual(r.ids, [m[3], m[4]]);
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_newest, false);
    r = await window({ anchor: m[2], num_before: 0, num_after: 10, include_anchor: false });
    assert.deepEqual(r.ids, [m[3], m[4], m[5]]);
    assert.equal(r.found_newest, true);
  });

  test("anchor=newest: the latest messages, anchor 10^16, found_newest", async () => {
    let r = await window({ anchor: "newest", num_before: 2, num_after: 0 });
    assert.deepEqual(r.ids, [m[4], m[5]]);
    assert.equal(r.anchor, NEWEST);
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_newest, true);
    assert.equal(r.found_oldest, false);
    // num_after is meaningless past the newest message.
    r = await window({ anchor: "newest", num_before: 10, num_after: 10 });
    assert.deepEqual(r.ids, m);
    assert.equal(r.found_oldest, true);
    assert.equal(r.found_newest, true);
  });

  test("anchor=oldest: the first messages, anchor 0, found_oldest", async () => {
    let r = await window({ anchor: "oldest", num_before: 0, num_after: 2 });
    assert.deepEqual(r.ids, [m[0], m[1]]);
    assert.equal(r.anchor, 0);
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_oldest, true);
    assert.equal(r.found_newest, false);
    r = await window({ anchor: "oldest", num_before: 5, num_after: 6 });
    assert.deepEqual(r.ids, m);
    assert.equal(r.found_oldest, true);
    assert.equal(r.found_newest, false, "exactly num_after messages: 6 < 6 is false");
    r = await window({ anchor: "oldest", num_before: 5, num_after: 7 });
    assert.equal(r.found_newest, true);
  });

  test("numeric anchors are clamped: negative and 0 mean the oldest, beyond 10^16 the newest", async () => {
    for (const anchor of [0, "0", -5, "-100"]) {
      const r = await window({ anchor, num_before: 0, num_after: 2 });
      assert.deepEqual(r.ids, [m[0], m[1]], `anchor ${anchor}`);
      assert.equal(r.anchor, 0, `anchor ${anchor}`);
      // Zulip: anchored_to_left = (anchor == 0), whatever the spelling.
      assert.equal(r.found_oldest, true, `anchor ${anchor}: found_oldest`);
      assert.equal(r.found_newest, false);
    }
    for (const anchor of ["100000000000000000", NEWEST]) {
      const r = await window({ anchor, num_before: 2, num_after: 0 });
      assert.deepEqual(r.ids, [m[4], m[5]], `anchor ${anchor}`);
      assert.equal(r.anchor, NEWEST, `anchor ${anchor}`);
      // Zulip: anchored_to_right = (anchor >= 10^16), so found_newest even with num_after 0.
      assert.equal(r.found_newest, true, `anchor ${anchor}: found_newest`);
      assert.equal(r.found_anchor, false);
    }
  });

  test("anchor=first_unread: the lowest unread message of the narrow", async () => {
    await markUnread(viewer, m);
    await markRead(viewer, [m[0], m[1], m[2]]);
    // An older unread message outside the narrow does not count.
    await markUnread(viewer, [between]);
    let r = await window({ anchor: "first_unread", num_before: 1, num_after: 1 });
    assert.equal(r.anchor, m[3]);
    assert.deepEqual(r.ids, [m[2], m[3], m[4]]);
    assert.equal(r.found_anchor, true);
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, false);

    // use_first_unread_anchor overrides anchor.
    r = await window({ anchor: "newest", use_first_unread_anchor: true, num_before: 0, num_after: 1 });
    assert.equal(r.anchor, m[3]);
    assert.deepEqual(r.ids, [m[3], m[4]]);
    r = await window({ use_first_unread_anchor: true, num_before: 0, num_after: 0 });
    assert.deepEqual(r.ids, [m[3]]);

    // Without a narrow, the unread message of the other channel comes first.
    const all = await fetchBody(viewer, { anchor: "first_unread", num_before: 0, num_after: 0 });
    assert.equal(all.anchor, between);
  });

  test("anchor=first_unread with nothing unread behaves as newest", async () => {
    await markRead(viewer, m);
    const r = await window({ anchor: "first_unread", num_before: 2, num_after: 3 });
    assert.equal(r.anchor, NEWEST);
    assert.deepEqual(r.ids, [m[4], m[5]], "num_after ignored");
    assert.equal(r.found_anchor, false);
    assert.equal(r.found_newest, true);
    assert.equal(r.found_oldest, false);
    await markUnread(viewer, m);
  });

  test("first_unread skips unread messages in muted topics and channels (no DM narrow)", async () => {
    const sender = await newUser("Mute Anchor Sender");
    const reader = await newUser("Mute Anchor Reader");
    const loud = await newChannel(sender, [reader]);
    const quiet = await newChannel(sender, [reader]);
    const inMutedTopic = await send(sender, loud, "muted topic", "1");
    const inMutedChannel = await send(sender, quiet, "any", "2");
    const visible = await send(sender, loud, "normal topic", "3");
    await setTopicPolicy(reader, loud, "muted topic", 1);
    await muteChannel(reader, quiet);
    const r = await fetchBody(reader, { anchor: "first_unread", num_before: 0, num_after: 0 });
    assert.ok(inMutedTopic < visible && inMutedChannel < visible);
    assert.equal(r.anchor, visible, "muted unread messages are skipped");
    // Narrowed to the channel, its muted topic is still skipped.
    const inChannel = await fetchBody(reader, { anchor: "first_unread", num_before: 0, num_after: 0, narrow: [["channel", loud.name]] });
    assert.equal(inChannel.anchor, visible);
  });

  test("errors: missing and invalid anchors, too many messages, excluded anchor in the middle, negative counts", async () => {
    assertError(await getMessages(viewer, { num_before: 1, num_after: 1 }), 400, "BAD_REQUEST", "Missing 'anchor' argument.");
    assertError(await getMessages(viewer, { anchor: "chocolate", num_before: 1, num_after: 1 }), 400, "BAD_REQUEST", "Invalid anchor");
    assertError(await getMessages(viewer, { anchor: "12abc", num_before: 1, num_after: 1 }), 400, "BAD_REQUEST", "Invalid anchor");
    assertError(await getMessages(viewer, { anchor: "newest", num_before: 2500, num_after: 2501 }), 400, "BAD_REQUEST", "Too many messages requested (maximum 5000).");
    assertError(await getMessages(viewer, { anchor: "newest", num_before: 5001, num_after: 0 }), 400, "BAD_REQUEST", "Too many messages requested (maximum 5000).");
    assertSuccess(await getMessages(viewer, { anchor: "newest", num_before: 2500, num_after: 2500 }));
    assertError(
      await getMessages(viewer, { anchor: m[2], num_before: 1, num_after: 1, include_anchor: false }),
      400,
      "BAD_REQUEST",
      "The anchor can only be excluded at an end of the range",
    );
    const negative = await getMessages(viewer, { anchor: "newest", num_before: -1, num_after: 0 });
    assertError(negative, 400, "BAD_REQUEST", /num_before/);
    const negativeAfter = await getMessages(viewer, { anchor: "oldest", num_before: 0, num_after: -3 });
    assertError(negativeAfter, 400, "BAD_REQUEST", /num_after/);
  });

  test("message_ids: those messages that match the narrow, without anchor, found_* false", async () => {
    const body = await fetchBody(viewer, { message_ids: [m[4], m[0], between, 999999999], narrow: narrow() });
    assert.deepEqual((body.messages as Json[]).map((x) => x.id), [m[0], m[4]]);
    assert.equal("anchor" in body, false, "no anchor key");
    assert.equal(body.found_anchor, false);
    assert.equal(body.found_oldest, false);
    assert.equal(body.found_newest, false);
    assert.equal(body.history_limited, false);
    // Without a narrow: every readable one.
    const all = await fetchBody(viewer, { message_ids: [between, m[1]] });
    assert.deepEqual((all.messages as Json[]).map((x) => x.id), [m[1], between]);
    assert.ok(Array.isArray(all.messages[0].flags));
  });

  test("message_ids with anchor, num_before, num_after or use_first_unread_anchor is an error", async () => {
    const msg = "Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor";
    for (const extra of [{ anchor: "newest" }, { num_before: 1 }, { num_after: 1 }, { use_first_unread_anchor: true }]) {
      assertError(await getMessages(viewer, { message_ids: [m[0]], ...extra }), 400, "BAD_REQUEST", msg);
    }
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages: narrows", () => {
  let V: TestUser; // the viewer
  let A: TestUser;
  let B: TestUser;
  let C: TestUser; // no conversation with V
  let alpha: Channel;
  let beta: Channel;
  let gamma: Channel; // public, V not subscribed
  let delta: Channel; // uploads
  let secret: Channel; // private, V not subscribed
  const id = {} as Record<"a1" | "a2" | "a3" | "b1" | "b2" | "b3" | "c1" | "s1x" | "d1" | "d2" | "g1" | "s1" | "x1" | "e1" | "e2" | "e3" | "e4", number>;
  /** Every message V has a flags row for (V's personal feed). */
  let feed: number[];

  before(async () => {
    V = await newUser("Narrow Viewer");
    A = await newUser("Narrow Alice");
    B = await newUser("Narrow Bob");
    C = await newUser("Narrow Carol");
    alpha = await newChannel(A, [V], {}, "narrow alpha");
    beta = await newChannel(A, [V, B], {}, "narrow beta");
    gamma = await newChannel(A, [], {}, "narrow gamma");
    delta = await newChannel(A, [V], {}, "narrow delta");
    secret = await newChannel(A, [B], { invite_only: true }, "narrow secret");

    id.a1 = await send(A, alpha, "Lunch", "pizza today");
    id.a2 = await send(V, alpha, "lunch", "sushi tomorrow");
    id.a3 = await send(A, alpha, "Other", "see https://example.com for details");
    id.b1 = await send(B, beta, "Lunch", "pizza party");
    id.b2 = await send(A, beta, "", "empty topic message");
    id.b3 = await send(B, beta, "✔ Resolved thing", "done and dusted");
    id.c1 = await send(A, gamma, "Gamma topic", "gamma history pizza");
    id.s1x = await send(A, secret, "hidden", "secret pizza");
    id.d1 = await sendDm(A, [V], "hi viewer");
    id.d2 = await sendDm(V, [A], "hi alice");
    id.g1 = await sendDm(A, [V, B], "group hello");
    id.s1 = await sendDm(V, [V], "note to self");
    id.x1 = await sendDm(A, [B], "group hello pizza secret");
    const file = await upload(A, "doc.txt", "text/plain");
    const image = await upload(A, "pic.png", "image/png");
    id.e1 = await send(A, delta, "files", `the file [doc.txt](${file})`);
    id.e2 = await send(A, delta, "files", `an image [pic.png](${image})`);
    id.e3 = await send(A, delta, "files", `a broken link [gone.txt](/user_uploads/${t.realm.id}/zz/nothing/gone.txt)`);
    id.e4 = await send(A, delta, "files", "just words");

    feed = asc([id.a1, id.a2, id.a3, id.b1, id.b2, id.b3, id.d1, id.d2, id.g1, id.s1, id.e1, id.e2, id.e3, id.e4]);

    // V's personal state: read, starred, mentioned, reactions, topic policies.
    await markUnread(V, feed);
    await markRead(V, [id.a1, id.a2, id.d2, id.s1, id.b3, id.e1, id.e2, id.e3, id.e4]);
    await addFlags(V, id.a1, FLAG.starred);
    await addFlags(V, id.d1, FLAG.starred);
    await addFlags(V, id.a3, FLAG.mentioned);
    await addFlags(V, id.b1, FLAG.stream_wildcard_mentioned);
    await react(B, id.b1, "tada", "1f389");
    await clearTopicPolicies(V);
    await setTopicPolicy(V, beta, "Lunch", 3); // followed
    await setTopicPolicy(V, alpha, "Other", 1); // muted topic
    await muteChannel(V, beta); // muted channel…
    await setTopicPolicy(V, beta, "general chat", 2); // …with its empty topic unmuted
  });

  const feedWithout = (...removed: number[]) => without(feed, removed);

  test("no narrow: the user's own messages only", async () => {
    assert.deepEqual(await ids(V, null), feed);
    assert.deepEqual(await ids(V, []), feed);
  });

  test("channel: by name (any case), by ID, legacy 'stream', and negated", async () => {
    const expected = [id.a1, id.a2, id.a3];
    assert.deepEqual(await ids(V, [["channel", alpha.name]]), expected);
    assert.deepEqual(await ids(V, [["channel", alpha.name.toUpperCase()]]), expected);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: alpha.id }]), expected);
    assert.deepEqual(await ids(V, [["stream", alpha.name]]), expected);
    assert.deepEqual(await ids(V, [{ operator: "stream", operand: alpha.name, negated: false }]), expected);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: alpha.name, negated: true }]), feedWithout(...expected));
    assert.deepEqual(await ids(V, [{ operator: "stream", operand: alpha.id, negated: true }]), feedWithout(...expected));
  });

  test("channel: a public channel's history without being subscribed, flagged read and historical", async () => {
    const messages = await fetchAll(V, [["channel", gamma.name]]);
    assert.deepEqual(messages.map((m) => m.id), [id.c1]);
    assert.deepEqual(messages[0].flags, ["read", "historical"]);
  });

  test("channels:public: every public channel's messages, history included; negated: the rest", async () => {
    const found = await ids(V, [["channels", "public"]]);
    const mine = [...feed, id.c1, id.s1x, id.x1];
    assert.deepEqual(only(found, mine), asc([id.a1, id.a2, id.a3, id.b1, id.b2, id.b3, id.c1, id.e1, id.e2, id.e3, id.e4]));
    assert.deepEqual(await ids(V, [["streams", "public"]]), found, "legacy name");
    const negated = await ids(V, [{ operator: "channels", operand: "public", negated: true }]);
    assert.deepEqual(only(negated, mine), asc([id.d1, id.d2, id.g1, id.s1]));
  });

  test("topic: case-insensitive, across channels, legacy 'subject', negated", async () => {
    assert.deepEqual(await ids(V, [["topic", "lunch"]]), asc([id.a1, id.a2, id.b1]));
    assert.deepEqual(await ids(V, [["topic", "LUNCH"]]), asc([id.a1, id.a2, id.b1]));
    assert.deepEqual(await ids(V, [["subject", "Lunch"]]), asc([id.a1, id.a2, id.b1]));
    assert.deepEqual(await ids(V, [["channel", alpha.name], ["topic", "lunch"]]), [id.a1, id.a2]);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: alpha.name }, { operator: "topic", operand: "lunch", negated: true }]), [id.a3]);
    assert.deepEqual(await ids(V, [{ operator: "topic", operand: "Lunch", negated: true }]), feedWithout(id.a1, id.a2, id.b1));
    assert.deepEqual(await ids(V, [["topic", "no such topic"]]), []);
  });

  test("topic: \"general chat\" means the empty topic", async () => {
    assert.deepEqual(await ids(V, [["channel", beta.name], ["topic", "general chat"]]), [id.b2]);
    assert.deepEqual(await ids(V, [["channel", beta.name], ["topic", ""]]), [id.b2]);
    const [shown] = await fetchAll(V, [["channel", beta.name], ["topic", "general chat"]]);
    assert.equal(shown.subject, "general chat");
  });

  test("sender: by API email (any case) and by ID, negated", async () => {
    const byA = [id.a1, id.a3, id.b2, id.d1, id.g1, id.e1, id.e2, id.e3, id.e4];
    const email = await apiEmail(A);
    assert.deepEqual(await ids(V, [["sender", email]]), asc(byA));
    assert.deepEqual(await ids(V, [["sender", email.toUpperCase()]]), asc(byA));
    assert.deepEqual(await ids(V, [{ operator: "sender", operand: A.id }]), asc(byA));
    assert.deepEqual(await ids(V, [{ operator: "sender", operand: A.id, negated: true }]), feedWithout(...byA));
    // With a channel term, the channel's history too.
    assert.deepEqual(await ids(V, [["channel", gamma.name], { operator: "sender", operand: A.id }]), [id.c1]);
    assert.deepEqual(await ids(V, [{ operator: "sender", operand: C.id }]), []);
  });

  test("dm: by ID list, by email string, with or without self, group and self conversations, legacy 'pm-with', negated", async () => {
    const oneToOne = [id.d1, id.d2];
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [A.id] }]), oneToOne);
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [A.id, V.id] }]), oneToOne);
    assert.deepEqual(await ids(V, [["dm", await apiEmail(A)]]), oneToOne);
    assert.deepEqual(await ids(V, [["dm", `${await apiEmail(A)},${await apiEmail(V)}`]]), oneToOne);
    assert.deepEqual(await ids(V, [{ operator: "pm-with", operand: [A.id] }]), oneToOne);
    assert.deepEqual(await ids(V, [["pm-with", await apiEmail(A)]]), oneToOne);
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [A.id] }]), oneToOne);
    // Group: exactly that set of people.
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [A.id, B.id] }]), [id.g1]);
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [B.id, A.id, V.id] }]), [id.g1]);
    assert.deepEqual(await ids(V, [["dm", `${await apiEmail(B)},${await apiEmail(A)}`]]), [id.g1]);
    // Self.
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [V.id] }]), [id.s1]);
    assert.deepEqual(await ids(V, [["dm", await apiEmail(V)]]), [id.s1]);
    // No such conversation: nothing, no error.
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [C.id] }]), []);
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [B.id] }]), [], "A and B's DM is not V's");
    assert.deepEqual(await ids(V, [{ operator: "dm", operand: [A.id], negated: true }]), feedWithout(...oneToOne));
  });

  test("dm-including: every DM with that user, 1:1 and group; self means all DMs; negated", async () => {
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: A.id }]), asc([id.d1, id.d2, id.g1]));
    assert.deepEqual(await ids(V, [["dm-including", await apiEmail(A)]]), asc([id.d1, id.d2, id.g1]));
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: B.id }]), [id.g1]);
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: V.id }]), asc([id.d1, id.d2, id.g1, id.s1]));
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: C.id }]), []);
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: B.id, negated: true }]), feedWithout(id.g1));
  });

  test("group-pm-with (deprecated): group DMs including that user, not 1:1", async () => {
    assert.deepEqual(await ids(V, [{ operator: "group-pm-with", operand: A.id }]), [id.g1]);
    assert.deepEqual(await ids(V, [["group-pm-with", await apiEmail(B)]]), [id.g1]);
  });

  test("is:dm and is:private, negated", async () => {
    const dms = asc([id.d1, id.d2, id.g1, id.s1]);
    assert.deepEqual(await ids(V, [["is", "dm"]]), dms);
    assert.deepEqual(await ids(V, [["is", "private"]]), dms);
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "private" }]), dms);
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "dm", negated: true }]), feedWithout(...dms));
  });

  test("is:starred, negated", async () => {
    assert.deepEqual(await ids(V, [["is", "starred"]]), asc([id.a1, id.d1]));
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "starred", negated: true }]), feedWithout(id.a1, id.d1));
    const [starred] = await fetchAll(V, [["is", "starred"], ["channel", alpha.name]]);
    assert.deepEqual(starred.flags, ["read", "starred"]);
  });

  test("is:mentioned: personal and wildcard mentions, negated", async () => {
    assert.deepEqual(await ids(V, [["is", "mentioned"]]), asc([id.a3, id.b1]));
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "mentioned", negated: true }]), feedWithout(id.a3, id.b1));
    const [b1] = await fetchAll(V, [{ operator: "id", operand: id.b1 }]);
    assert.deepEqual(b1.flags, ["stream_wildcard_mentioned", "wildcard_mentioned"]);
  });

  test("is:mentioned from a real @-mention in a sent message", async () => {
    const sender = await newUser("Mention Sender");
    const target = await newUser("Mention Target");
    const channel = await newChannel(sender, [target]);
    const mention = await send(sender, channel, "t", `hello @**${await fullName(target)}**`);
    await send(sender, channel, "t", "no mention here");
    assert.deepEqual(await ids(target, [["is", "mentioned"]]), [mention]);
    const [m] = await fetchAll(target, [{ operator: "id", operand: mention }]);
    assert.ok(m.flags.includes("mentioned"), JSON.stringify(m.flags));
  });

  test("is:unread, negated", async () => {
    const unread = asc([id.a3, id.b1, id.b2, id.d1, id.g1]);
    assert.deepEqual(await ids(V, [["is", "unread"]]), unread);
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "unread", negated: true }]), feedWithout(...unread));
    // A channel term does not bring in history: unread needs a flags row.
    assert.deepEqual(await ids(V, [["channel", gamma.name], ["is", "unread"]]), []);
  });

  test("is:resolved: topics starting with \"✔ \", negated", async () => {
    assert.deepEqual(await ids(V, [["is", "resolved"]]), [id.b3]);
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "resolved", negated: true }]), feedWithout(id.b3));
  });

  test("is:followed, negated", async () => {
    assert.deepEqual(await ids(V, [["is", "followed"]]), [id.b1]);
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "followed", negated: true }]), feedWithout(id.b1));
  });

  test("is:muted: muted topics and muted channels' topics not unmuted or followed, negated", async () => {
    // alpha/Other is muted; beta is muted but its Lunch topic is followed and its empty topic unmuted.
    assert.deepEqual(await ids(V, [["is", "muted"]]), asc([id.a3, id.b3]));
    assert.deepEqual(await ids(V, [{ operator: "is", operand: "muted", negated: true }]), feedWithout(id.a3, id.b3));
  });

  test("in:home leaves out muted conversations; in:all does not", async () => {
    assert.deepEqual(await ids(V, [["in", "home"]]), feedWithout(id.a3, id.b3));
    assert.deepEqual(await ids(V, [["in", "all"]]), feed);
    assertBadNarrow(await getMessages(V, { anchor: "newest", narrow: [["in", "nowhere"]] }), "unknown 'in' operand nowhere");
  });

  test("has:link, negated", async () => {
    const plain = feed.filter((x) => ![id.e1, id.e2, id.e3, id.e4].includes(x));
    assert.deepEqual(only(await ids(V, [["has", "link"]]), plain), [id.a3]);
    assert.deepEqual(await ids(V, [["channel", alpha.name], ["has", "link"]]), [id.a3]);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: alpha.name }, { operator: "has", operand: "link", negated: true }]), [id.a1, id.a2]);
  });

  test("has:attachment: messages linking an upload their sender owns; negated", async () => {
    assert.deepEqual(await ids(V, [["channel", delta.name], ["has", "attachment"]]), [id.e1, id.e2]);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: delta.name }, { operator: "has", operand: "attachment", negated: true }]), [id.e3, id.e4]);
  });

  test("has:image: a message showing an uploaded image; negated", async () => {
    assert.deepEqual(await ids(V, [["channel", delta.name], ["has", "image"]]), [id.e2]);
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: delta.name }, { operator: "has", operand: "image", negated: true }]), [id.e1, id.e3, id.e4]);
  });

  test("has:reaction, negated", async () => {
    assert.deepEqual(await ids(V, [["has", "reaction"]]), [id.b1]);
    assert.deepEqual(await ids(V, [{ operator: "has", operand: "reaction", negated: true }]), feedWithout(id.b1));
  });

  test("search: words in content and topic, all of them, any case, with highlighting", async () => {
    assert.deepEqual(await ids(V, [["search", "pizza"]]), asc([id.a1, id.b1]), "not others' DMs, private channels or unsubscribed history");
    assert.deepEqual(await ids(V, [["search", "PIZZA"]]), asc([id.a1, id.b1]));
    assert.deepEqual(await ids(V, [["search", "pizza party"]]), [id.b1], "every word must match");
    assert.deepEqual(await ids(V, [["search", "party pizza"]]), [id.b1]);
    assert.deepEqual(await ids(V, [["search", "pizza nothere"]]), []);
    assert.deepEqual(await ids(V, [["search", "hello"]]), [id.g1]);
    assert.deepEqual(await ids(V, [{ operator: "search", operand: "tomorrow" }]), [id.a2]);

    const [b1] = await fetchAll(V, [["search", "pizza party"]]);
    assert.match(b1.match_content, /<span class="highlight">pizza<\/span>/);
    assert.match(b1.match_content, /<span class="highlight">party<\/span>/);
    assert.equal(b1.match_subject, "Lunch");
    assert.match(b1.content, /pizza party/, "content itself is not highlighted");

    // Topic words match too, and match_subject is highlighted.
    const byTopic = await fetchAll(V, [["search", "lunch"]]);
    assert.deepEqual(byTopic.map((m) => m.id), asc([id.a1, id.a2, id.b1]));
    const a1 = byTopic.find((m) => m.id === id.a1);
    assert.equal(a1.match_subject, '<span class="highlight">Lunch</span>');
    assert.doesNotMatch(a1.match_content, /highlight/);

    // With a channel term, the channel's history is searched too.
    assert.deepEqual(await ids(V, [["channel", gamma.name], ["search", "pizza"]]), [id.c1]);
    assert.deepEqual(await ids(V, [["channel", alpha.name], ["search", "pizza"]]), [id.a1]);
  });

  test("search: highlighting never touches HTML tags, and the topic is HTML-escaped", async () => {
    const sender = await newUser("Highlight Sender");
    const channel = await newChannel(sender);
    const msgId = await send(sender, channel, "<b>example</b> topic", "visit https://example.com today, example");
    const [m] = await fetchAll(sender, [["channel", channel.name], ["search", "example"]]);
    assert.equal(m.id, msgId);
    assert.match(m.match_content, /<span class="highlight">example<\/span>/);
    assert.doesNotMatch(m.match_content, /="[^"]*highlight[^"]*example/, "no highlight inside an attribute");
    assert.doesNotMatch(m.match_content, /href="[^"]*<span/, "no highlight inside an attribute");
    assert.match(m.match_subject, /^&lt;b&gt;<span class="highlight">example<\/span>&lt;\/b&gt; topic$/);
  });

  test("id: that message if readable, negated", async () => {
    assert.deepEqual(await ids(V, [{ operator: "id", operand: id.a2 }]), [id.a2]);
    assert.deepEqual(await ids(V, [["id", String(id.a2)]]), [id.a2]);
    assert.deepEqual(await ids(V, [{ operator: "id", operand: id.d1 }]), [id.d1]);
    assert.deepEqual(await ids(V, [{ operator: "id", operand: id.a2, negated: true }]), feedWithout(id.a2));
    assert.deepEqual(await ids(V, [{ operator: "id", operand: id.x1 }]), [], "others' DMs");
    assert.deepEqual(await ids(V, [{ operator: "id", operand: id.s1x }]), [], "private channel V is not in");
    assert.deepEqual(await ids(V, [["channel", gamma.name], { operator: "id", operand: id.c1 }]), [id.c1]);
    assertBadNarrow(await getMessages(V, { anchor: "newest", narrow: [["id", "abc"]] }), "Invalid message ID");
  });

  test("with: the conversation the message is in now", async () => {
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.a1 }]), [id.a1, id.a2], "channel + topic, any case");
    assert.deepEqual(await ids(V, [["with", String(id.a2)]]), [id.a1, id.a2]);
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.d1 }]), [id.d1, id.d2]);
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.g1 }]), [id.g1]);
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.s1 }]), [id.s1]);
    // It replaces other conversation terms, and keeps the rest.
    assert.deepEqual(await ids(V, [["channel", beta.name], ["topic", "nothing"], { operator: "with", operand: id.a1 }]), [id.a1, id.a2]);
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.a1 }, { operator: "sender", operand: A.id }]), [id.a1]);
    // A public channel's history, for a message V can read without a flags row.
    assert.deepEqual(await ids(V, [{ operator: "with", operand: id.c1 }]), [id.c1]);
    // An unreadable message: the narrow stays as it is if it names a conversation, else an error.
    assert.deepEqual(await ids(V, [["channel", alpha.name], ["topic", "Other"], { operator: "with", operand: id.x1 }]), [id.a3]);
    assertBadNarrow(await getMessages(V, { anchor: "newest", narrow: [{ operator: "with", operand: id.x1 }] }), "Invalid 'with' operator");
    assertError(
      await getMessages(V, { anchor: "newest", narrow: [{ operator: "with", operand: id.a1 }, { operator: "with", operand: id.a2 }] }),
      400,
      "BAD_NARROW",
      "Invalid narrow operator combination: Duplicate 'with' operators.",
    );
  });

  test("near: no filter of its own", async () => {
    assert.deepEqual(await ids(V, [["channel", alpha.name], { operator: "near", operand: id.a2 }]), [id.a1, id.a2, id.a3]);
  });

  test("combinations of terms are ANDed", async () => {
    assert.deepEqual(await ids(V, [["channel", beta.name], ["topic", "lunch"], { operator: "sender", operand: B.id }]), [id.b1]);
    assert.deepEqual(await ids(V, [{ operator: "sender", operand: A.id }, ["is", "dm"]]), [id.d1, id.g1]);
    assert.deepEqual(await ids(V, [["is", "starred"], ["is", "unread"]]), [id.d1]);
    assert.deepEqual(await ids(V, [["search", "pizza"], ["is", "unread"]]), [id.b1]);
    assert.deepEqual(await ids(V, [{ operator: "dm-including", operand: A.id }, { operator: "dm", operand: [A.id], negated: true }]), [id.g1]);
    assert.deepEqual(await ids(V, [["channel", alpha.name], ["channel", beta.name]]), [], "two channels: nothing");
    assert.deepEqual(
      await ids(V, [
        { operator: "channel", operand: alpha.name, negated: true },
        { operator: "is", operand: "dm", negated: true },
        { operator: "channel", operand: delta.name, negated: true },
      ]),
      [id.b1, id.b2, id.b3],
    );
  });

  test("a channel term with a DM term is an error", async () => {
    const desc = "No message can be both a channel message and direct message";
    assertBadNarrow(await getMessages(V, { anchor: "newest", narrow: [["channel", alpha.name], ["is", "dm"]] }), desc);
    assertBadNarrow(await getMessages(V, { anchor: "newest", narrow: [["channel", alpha.name], { operator: "dm", operand: [A.id] }] }), desc);
    // A negated DM term is fine.
    assert.deepEqual(await ids(V, [{ operator: "channel", operand: alpha.name }, { operator: "is", operand: "dm", negated: true }]), [id.a1, id.a2, id.a3]);
  });

  test("errors: unknown operator, channel, user, is/has operand", async () => {
    const narrowed = (narrow: unknown) => getMessages(V, { anchor: "newest", num_before: 1, narrow });
    assertBadNarrow(await narrowed([["foo", "bar"]]), "unknown operator foo");
    assertBadNarrow(await narrowed([{ operator: "foo", operand: "bar" }]), "unknown operator foo");
    assertBadNarrow(await narrowed([["channel", "no such channel"]]), "unknown channel no such channel");
    assertBadNarrow(await narrowed([{ operator: "stream", operand: 987654321 }]), "unknown channel 987654321");
    assertBadNarrow(await narrowed([["sender", "nobody@example.com"]]), "unknown user nobody@example.com");
    assertBadNarrow(await narrowed([{ operator: "sender", operand: 987654321 }]), "unknown user 987654321");
    assertBadNarrow(await narrowed([["dm-including", "nobody@example.com"]]), "unknown user nobody@example.com");
    assertBadNarrow(await narrowed([["dm", "nobody@example.com"]]), "unknown user in nobody@example.com");
    assertError(await narrowed([{ operator: "dm", operand: [987654321] }]), 400, "BAD_NARROW", /^Invalid narrow operator: unknown user in /);
    assertBadNarrow(await narrowed([["is", "foo"]]), "unknown 'is' operand foo");
    assertBadNarrow(await narrowed([["has", "foo"]]), "unknown 'has' operand foo");
    assertError(await narrowed([["channels", "foo"]]), 400, "BAD_NARROW", /^Invalid narrow operator: unknown '?channels'? operand foo$/);
  });

  test("errors: a narrow that is not a list, or not JSON", async () => {
    assertError(await getMessages(V, { anchor: "newest", narrow: { channel: alpha.name } }), 400, "BAD_REQUEST", /narrow/);
    assertError(await getMessages(V, { anchor: "newest", narrow: "channel:x" }), 400, "BAD_REQUEST", /narrow.*not valid JSON|not valid JSON.*narrow/);
    assertError(await getMessages(V, { anchor: "newest", narrow: "[[" }), 400, "BAD_REQUEST", /narrow.*not valid JSON|not valid JSON.*narrow/);
    assertError(await getMessages(V, { anchor: "newest", narrow: [["channel"]] }), 400, "BAD_REQUEST");
    assertError(await getMessages(V, { anchor: "newest", narrow: [[1, "x"]] }), 400, "BAD_REQUEST");
  });

  test("other people's direct messages never appear", async () => {
    const theirs = [id.x1];
    for (const narrow of [null, [["is", "dm"]], [{ operator: "dm-including", operand: A.id }], [{ operator: "dm-including", operand: B.id }], [{ operator: "sender", operand: A.id }], [["search", "secret"]], [["channels", "public"]]]) {
      const found = await ids(V, narrow);
      assert.deepEqual(only(found, theirs), [], `narrow ${JSON.stringify(narrow)}`);
    }
    const body = await fetchBody(V, { message_ids: theirs });
    assert.deepEqual(body.messages, []);
    // Administrators neither.
    assert.deepEqual(only(await ids(u().owner, [{ operator: "dm-including", operand: A.id }]), theirs), []);
    assert.deepEqual(only(await ids(u().admin, null), theirs), []);
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages: history and access", () => {
  test("public channel: history from before subscribing, flagged read and historical; the personal feed has only what was received", async () => {
    const sender = await newUser("History Sender");
    const late = await newUser("History Late");
    const channel = await newChannel(sender);
    const p1 = await send(sender, channel, "t", "before 1");
    const p2 = await send(sender, channel, "t", "before 2");
    assertSuccess(await t.api(late, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }] }));
    const p3 = await send(sender, channel, "t", "after");

    const seen = await fetchAll(late, [["channel", channel.name]]);
    assert.deepEqual(seen.map((m) => [m.id, m.flags]), [
      [p1, ["read", "historical"]],
      [p2, ["read", "historical"]],
      [p3, []],
    ]);
    assert.deepEqual(only(await ids(late, null), [p1, p2, p3]), [p3]);
    const single = assertSuccess(await t.api(late, "GET", `/messages/${p1}`));
    assert.deepEqual(single.message.flags, ["read", "historical"]);
  });

  test("public channel: readable without subscribing at all", async () => {
    const sender = await newUser("Unsub Sender");
    const outsider = await newUser("Unsub Outsider");
    const channel = await newChannel(sender);
    const p1 = await send(sender, channel, "t", "public words");
    const seen = await fetchAll(outsider, [{ operator: "channel", operand: channel.id }]);
    assert.deepEqual(seen.map((m) => [m.id, m.flags]), [[p1, ["read", "historical"]]]);
    assert.deepEqual(assertSuccess(await t.api(outsider, "GET", `/messages/${p1}`)).message.flags, ["read", "historical"]);
    assert.deepEqual(only(await ids(outsider, null), [p1]), []);
  });

  test("guests: no unsubscribed public channel; history of a subscribed one", async () => {
    const sender = await newUser("Guest Area Sender");
    const guest = await newUser("Guest Reader", Role.GUEST);
    const open = await newChannel(sender);
    const joined = await newChannel(sender);
    const o1 = await send(sender, open, "t", "guests cannot read this");
    const j1 = await send(sender, joined, "t", "before the guest joined");
    await addSubscribers(sender, joined, [guest]);
    const j2 = await send(sender, joined, "t", "after the guest joined");

    assertEmptyInaccessible(await fetchBody(guest, { anchor: "newest", num_before: 10, narrow: [["channel", open.name]] }));
    assertEmptyInaccessible(await fetchBody(guest, { anchor: "oldest", num_after: 10, narrow: [{ operator: "channel", operand: open.id }] }));
    assertError(await t.api(guest, "GET", `/messages/${o1}`), 400, "BAD_REQUEST", "Invalid message(s)");
    assert.deepEqual(only(await ids(guest, [["channels", "public"]]), [o1, j1, j2]), [j2], "no public history for guests");
    assert.deepEqual(only(await ids(guest, [["search", "guests"]]), [o1]), []);

    const seen = await fetchAll(guest, [["channel", joined.name]]);
    assert.deepEqual(seen.map((m) => [m.id, m.flags]), [
      [j1, ["read", "historical"]],
      [j2, []],
    ]);
  });

  test("private channel with protected history: a later subscriber sees only messages from after they joined", async () => {
    const creator = await newUser("Protected Creator");
    const late = await newUser("Protected Late");
    const channel = await newChannel(creator, [], { invite_only: true, history_public_to_subscribers: false });
    const q1 = await send(creator, channel, "t", "before");
    await addSubscribers(creator, channel, [late]);
    const q2 = await send(creator, channel, "t", "after");

    assert.deepEqual(await ids(late, [["channel", channel.name]]), [q2]);
    assert.deepEqual(await ids(late, [["channel", channel.name], ["search", "before"]]), []);
    assertError(await t.api(late, "GET", `/messages/${q1}`), 400, "BAD_REQUEST", "Invalid message(s)");
    assert.equal(assertSuccess(await t.api(late, "GET", `/messages/${q2}`)).message.id, q2);
    assert.deepEqual((await fetchBody(late, { message_ids: [q1, q2] })).messages.map((m: Json) => m.id), [q2]);
    assert.deepEqual(await ids(creator, [["channel", channel.name]]), [q1, q2]);
  });

  test("private channel with shared history: a later subscriber sees it all", async () => {
    const creator = await newUser("Shared Creator");
    const late = await newUser("Shared Late");
    const channel = await newChannel(creator, [], { invite_only: true, history_public_to_subscribers: true });
    const q1 = await send(creator, channel, "t", "before");
    await addSubscribers(creator, channel, [late]);
    const q2 = await send(creator, channel, "t", "after");
    const seen = await fetchAll(late, [["channel", channel.name]]);
    assert.deepEqual(seen.map((m) => [m.id, m.flags]), [
      [q1, ["read", "historical"]],
      [q2, []],
    ]);
  });

  test("a private channel the user cannot read: empty result, no error", async () => {
    const creator = await newUser("Closed Creator");
    const outsider = await newUser("Closed Outsider");
    const channel = await newChannel(creator, [], { invite_only: true });
    const q1 = await send(creator, channel, "t", "private words");
    for (const narrow of [[["channel", channel.name]], [{ operator: "stream", operand: channel.id }], [{ operator: "channel", operand: channel.name }, { operator: "topic", operand: "t" }]]) {
      assertEmptyInaccessible(await fetchBody(outsider, { anchor: "newest", num_before: 10, num_after: 0, narrow }));
    }
    assertEmptyInaccessible(await fetchBody(outsider, { anchor: q1, num_before: 1, num_after: 1, narrow: [["channel", channel.name]] }));
    assertEmptyInaccessible(await fetchBody(u().admin, { anchor: "newest", num_before: 10, narrow: [["channel", channel.name]] }));
    assert.deepEqual(only(await ids(outsider, [["search", "private"]]), [q1]), []);
    assert.deepEqual(only(await ids(outsider, [{ operator: "channel", operand: channel.name, negated: true }]), [q1]), []);
    assert.deepEqual((await fetchBody(outsider, { message_ids: [q1] })).messages, []);
  });

  test("after unsubscribing from a private channel, its messages cannot be fetched", async () => {
    const creator = await newUser("Leaving Creator");
    const leaver = await newUser("Leaving Member");
    const channel = await newChannel(creator, [leaver], { invite_only: true, history_public_to_subscribers: false });
    const q1 = await send(creator, channel, "t", "while subscribed");
    assert.equal(assertSuccess(await t.api(leaver, "GET", `/messages/${q1}`)).message.id, q1);
    await unsubscribe(leaver, channel);
    assertError(await t.api(leaver, "GET", `/messages/${q1}`), 400, "BAD_REQUEST", "Invalid message(s)");
    assertEmptyInaccessible(await fetchBody(leaver, { anchor: "newest", num_before: 10, narrow: [["channel", channel.name]] }));
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages/{message_id}", () => {
  let sender: TestUser;
  let reader: TestUser;
  let channel: Channel;

  before(async () => {
    sender = await newUser("Single Sender");
    reader = await newUser("Single Reader");
    channel = await newChannel(sender, [reader]);
  });

  test("the message with the reader's flags, and raw_content", async () => {
    const msgId = await send(sender, channel, "Single topic", "look at **this**");
    const body = assertSuccess(await t.api(reader, "GET", `/messages/${msgId}`));
    assert.equal(body.raw_content, "look at **this**");
    const m = body.message;
    assert.equal(m.id, msgId);
    assert.equal(m.sender_id, sender.id);
    assert.equal(m.sender_email, await apiEmail(sender));
    assert.equal(m.sender_full_name, await fullName(sender));
    assert.equal(m.type, "stream");
    assert.equal(m.stream_id, channel.id);
    assert.equal(m.display_recipient, channel.name);
    assert.equal(m.subject, "Single topic");
    assert.equal(m.content_type, "text/html");
    assert.match(m.content, /^<p>/);
    assert.deepEqual(m.reactions, []);
    assert.deepEqual(m.submessages, []);
    assert.equal(m.is_me_message, false);
    assert.deepEqual(m.flags, []);
    await addFlags(reader, msgId, FLAG.read | FLAG.starred);
    assert.deepEqual(assertSuccess(await t.api(reader, "GET", `/messages/${msgId}`)).message.flags, ["read", "starred"]);
  });

  test("apply_markdown=false and allow_empty_topic_name", async () => {
    const msgId = await send(sender, channel, "", "plain *md*");
    const raw = assertSuccess(await t.api(reader, "GET", `/messages/${msgId}`, { apply_markdown: false }));
    assert.equal(raw.message.content, "plain *md*");
    assert.equal(raw.message.content_type, "text/x-markdown");
    assert.equal(raw.raw_content, "plain *md*");
    assert.equal(raw.message.subject, "general chat");
    const empty = assertSuccess(await t.api(reader, "GET", `/messages/${msgId}`, { allow_empty_topic_name: true }));
    assert.equal(empty.message.subject, "");
    assert.equal(empty.message.content_type, "text/html");
  });

  test("direct messages: readable by their participants", async () => {
    const msgId = await sendDm(sender, [reader], "private hello");
    const body = assertSuccess(await t.api(reader, "GET", `/messages/${msgId}`));
    assert.equal(body.message.type, "private");
    assert.equal("stream_id" in body.message, false);
    assert.equal(body.raw_content, "private hello");
    assert.equal(assertSuccess(await t.api(sender, "GET", `/messages/${msgId}`)).message.id, msgId);
  });

  test("unknown, inaccessible and other people's messages: Invalid message(s)", async () => {
    const bad = (user: TestUser, path: string) => t.api(user, "GET", path);
    assertError(await bad(reader, "/messages/987654321"), 400, "BAD_REQUEST", "Invalid message(s)");
    const dm = await sendDm(sender, [reader], "not for outsiders");
    const outsider = await newUser("Single Outsider");
    assertError(await bad(outsider, `/messages/${dm}`), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await bad(u().owner, `/messages/${dm}`), 400, "BAD_REQUEST", "Invalid message(s)");
    const closed = await newChannel(sender, [], { invite_only: true });
    const hidden = await send(sender, closed, "t", "hidden");
    assertError(await bad(outsider, `/messages/${hidden}`), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await bad(u().admin, `/messages/${hidden}`), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("a message_id that is not an integer", async () => {
    assertError(await t.api(reader, "GET", "/messages/abc"), 400, "BAD_REQUEST", "message_id is not an integer");
    assertError(await t.api(reader, "GET", "/messages/1.5"), 400, "BAD_REQUEST", "message_id is not an integer");
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages/matches_narrow", () => {
  let sender: TestUser;
  let reader: TestUser;
  let channel: Channel;
  let m1: number;
  let m2: number;
  let m3: number;
  let others: number;
  let history: number;

  before(async () => {
    sender = await newUser("Matches Sender");
    reader = await newUser("Matches Reader");
    const outsider = await newUser("Matches Outsider");
    channel = await newChannel(sender, [reader]);
    const publicOther = await newChannel(sender);
    m1 = await send(sender, channel, "Apple topic", "banana split");
    m2 = await send(sender, channel, "Cherry", "apple pie");
    m3 = await send(sender, channel, "Cherry", "nothing fruity");
    others = await sendDm(sender, [outsider], "apple secret");
    history = await send(sender, publicOther, "Apple", "apple history");
  });

  test("search: matching ids keyed by string, with match_content and match_subject", async () => {
    const body = assertSuccess(
      await t.api(reader, "GET", "/messages/matches_narrow", { msg_ids: [m1, m2, m3, others, history, 987654321], narrow: [["search", "apple"]] }),
    );
    assert.deepEqual(Object.keys(body.messages).sort(), [String(m1), String(m2)].sort());
    const first = body.messages[String(m1)];
    assert.deepEqual(Object.keys(first).sort(), ["match_content", "match_subject"]);
    assert.equal(first.match_subject, '<span class="highlight">Apple</span> topic');
    assert.doesNotMatch(first.match_content, /highlight/);
    const second = body.messages[String(m2)];
    assert.match(second.match_content, /<span class="highlight">apple<\/span> pie/);
    assert.equal(second.match_subject, "Cherry");
  });

  test("without a search term: the plain rendered content and topic", async () => {
    const body = assertSuccess(await t.api(reader, "GET", "/messages/matches_narrow", { msg_ids: [m2, m3], narrow: [["channel", channel.name], ["topic", "cherry"]] }));
    assert.deepEqual(Object.keys(body.messages).sort(), [String(m2), String(m3)].sort());
    const [rendered] = (await fetchAll(reader, [{ operator: "id", operand: m3 }])).map((m) => m.content);
    assert.equal(body.messages[String(m3)].match_content, rendered);
    assert.equal(body.messages[String(m3)].match_subject, "Cherry");
    const none = assertSuccess(await t.api(reader, "GET", "/messages/matches_narrow", { msg_ids: [m1], narrow: [["is", "starred"]] }));
    assert.deepEqual(none.messages, {});
  });

  test("missing parameters and bad narrows", async () => {
    assertError(await t.api(reader, "GET", "/messages/matches_narrow", { narrow: [] }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'msg_ids' argument", { var_name: "msg_ids" });
    assertError(await t.api(reader, "GET", "/messages/matches_narrow", { msg_ids: [m1] }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'narrow' argument", { var_name: "narrow" });
    assertBadNarrow(await t.api(reader, "GET", "/messages/matches_narrow", { msg_ids: [m1], narrow: [["foo", "x"]] }), "unknown operator foo");
  });
});

// ---------------------------------------------------------------------------

describe("POST /messages/render", () => {
  test("renders Markdown to HTML", async () => {
    const body = assertSuccess(await t.api(u().member, "POST", "/messages/render", { content: "**foo** and _bar_" }));
    assert.equal(typeof body.rendered, "string");
    assert.match(body.rendered, /^<p>/);
    assert.match(body.rendered, /foo/);
    assert.doesNotMatch(body.rendered, /\*\*foo\*\*/, "Markdown is rendered, not echoed");
    const escaped = assertSuccess(await t.api(u().member, "POST", "/messages/render", { content: "<script>x</script>" }));
    assert.doesNotMatch(escaped.rendered, /<script>/);
  });

  test("missing content", async () => {
    assertError(await t.api(u().member, "POST", "/messages/render", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument", { var_name: "content" });
  });
});

// ---------------------------------------------------------------------------

describe("GET /messages: every role", () => {
  let shared: Channel; // member, guest and bot subscribed
  let memberOnly: Channel;
  let r1: number;
  let r2: number;
  let r3: number;
  let toBot: number;
  let memberDm: number;

  before(async () => {
    const { member, guest, bot } = u();
    shared = await newChannel(member, [guest, bot], {}, "roles shared");
    memberOnly = await newChannel(member, [], {}, "roles member-only");
    r1 = await send(member, shared, "t", "shared one");
    r2 = await send(member, shared, "t", "shared two");
    r3 = await send(member, memberOnly, "t", "member only");
    toBot = await sendDm(member, [bot], "hello bot");
    memberDm = await sendDm(member, [u().moderator], "hello moderator");
  });

  const roles = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;

  for (const role of roles) {
    test(`${role}: fetches channel messages as its role allows`, async () => {
      const user = u()[role];
      const all = [r1, r2, r3, toBot, memberDm];
      assert.deepEqual(await ids(user, [["channel", shared.name]]), [r1, r2], "a public channel: everyone");
      const body = await fetchBody(user, { anchor: "newest", num_before: 100, narrow: [["channel", memberOnly.name]] });
      if (role === "guest") {
        assertEmptyInaccessible(body);
        assertError(await t.api(user, "GET", `/messages/${r3}`), 400, "BAD_REQUEST", "Invalid message(s)");
      } else {
        assert.deepEqual(body.messages.map((m: Json) => m.id), [r3]);
        assert.deepEqual(body.messages[0].flags, role === "member" ? [] : ["read", "historical"]);
        assert.equal(assertSuccess(await t.api(user, "GET", `/messages/${r3}`)).message.id, r3);
      }
      // The personal feed: only what the user received.
      const expected: Record<(typeof roles)[number], number[]> = {
        owner: [],
        admin: [],
        moderator: [memberDm],
        member: [r1, r2, r3, toBot, memberDm],
        guest: [r1, r2],
        bot: [r1, r2, toBot],
      };
      assert.deepEqual(only(await ids(user, null), all), expected[role]);
      if (role !== "member") assertError(await t.api(user, "GET", `/messages/${role === "moderator" ? toBot : memberDm}`), 400, "BAD_REQUEST", "Invalid message(s)");
    });
  }
});

describe("GET /messages: windows over a long history", () => {
  // IDs far apart, as in a large organization: the search and flag queries read the history in
  // slices and from their own indexes (queries/messages.ts readSide), and must still give exactly
  // the window a plain scan gives.
  let reader: TestUser;
  let late: TestUser;
  let channel: Channel;
  let other: Channel;
  /** n[0..5]: "needle" messages in `channel`, oldest first, with wide gaps in the IDs between n[1]/n[2] and n[3]/n[4]. */
  const n: number[] = [];
  let otherNeedle: number;
  let hay: number[];

  /** Moves the next message ID `by` past the last one, as other organizations' messages would. */
  async function skipIds(by: number): Promise<void> {
    const { sql } = await import("kysely");
    if (DIALECT === "postgres") await sql`SELECT setval(pg_get_serial_sequence('messages', 'id'), (SELECT max(id) FROM messages) + ${by})`.execute(db());
    else await sql`UPDATE sqlite_sequence SET seq = seq + ${by} WHERE name = 'messages'`.execute(db());
  }

  before(async () => {
    const sender = await newUser("Long Sender");
    reader = await newUser("Long Reader");
    late = await newUser("Long Late");
    channel = await newChannel(sender, [reader]);
    other = await newChannel(sender, [reader]);
    hay = [];
    n.push(await send(sender, channel, "a", "needle zero"));
    hay.push(await send(sender, channel, "a", "hay"));
    n.push(await send(sender, channel, "b", "needle one https://example.com"));
    await skipIds(60_000);
    n.push(await send(sender, channel, "a", "needle two"));
    otherNeedle = await send(sender, other, "a", "needle elsewhere");
    n.push(await send(sender, channel, "b", "needle three https://example.com"));
    await skipIds(70_000);
    hay.push(await send(sender, channel, "a", "hay"));
    n.push(await send(sender, channel, "a", "needle four"));
    n.push(await send(sender, channel, "b", "needle five"));
    hay.push(await send(sender, channel, "a", "hay"));
    assert.ok(n[2]! - n[1]! > 60_000 && n[4]! - n[3]! > 70_000, "the IDs are far apart");
    for (const id of [n[0]!, n[3]!, n[4]!]) await addFlags(reader, id, FLAG.starred);
  });

  const windowIds = async (user: TestUser, params: Params) => {
    const body = await fetchBody(user, params);
    return { ...body, ids: (body.messages as Json[]).map((x) => x.id as number) };
  };

  test("search: newest first across the gaps, then paging back and forth from anchors", async () => {
    let r = await windowIds(reader, { anchor: "newest", num_before: 4, num_after: 0, narrow: [["search", "needle"]] });
    assert.deepEqual(r.ids, [otherNeedle, n[3], n[4], n[5]], "the four newest matches");
    assert.equal(r.found_oldest, false);
    assert.equal(r.found_newest, true);
    r = await windowIds(reader, { anchor: n[3], include_anchor: false, num_before: 10, num_after: 0, narrow: [["search", "needle"]] });
    assert.deepEqual(r.ids, [n[0], n[1], n[2], otherNeedle]);
    assert.equal(r.found_oldest, true);
    r = await windowIds(reader, { anchor: "oldest", num_before: 0, num_after: 3, narrow: [["search", "needle"]] });
    assert.deepEqual(r.ids, [n[0], n[1], n[2]]);
    assert.equal(r.found_newest, false);
    r = await windowIds(reader, { anchor: n[2], num_before: 1, num_after: 2, narrow: [["search", "needle"]] });
    assert.deepEqual(r.ids, [n[1], n[2], otherNeedle, n[3]]);
    assert.equal(r.found_anchor, true);
    r = await windowIds(reader, { anchor: hay[1], num_before: 1, num_after: 1, narrow: [["search", "needle"]] });
    assert.deepEqual(r.ids, [n[3], n[4]], "an anchor that does not match: its neighbours");
    assert.equal(r.found_anchor, false);
  });

  test("search with other terms: channel, negated channel, topic, has:link, is:starred, negated search", async () => {
    const page = async (narrow: unknown[], params: Params = { anchor: "newest", num_before: 100, num_after: 0 }) => (await windowIds(reader, { narrow, ...params })).ids;
    assert.deepEqual(await page([["channel", channel.name], ["search", "needle"]]), n);
    assert.deepEqual(await page([["channel", channel.name], ["search", "needle"]], { anchor: n[4], num_before: 2, num_after: 0, include_anchor: false }), [n[2], n[3]]);
    assert.deepEqual(only(await page([{ operator: "channel", operand: channel.name, negated: true }, ["search", "needle"]]), [...n, otherNeedle]), [otherNeedle]);
    assert.deepEqual(await page([["channel", channel.name], ["topic", "b"], ["search", "needle"]]), [n[1], n[3], n[5]]);
    assert.deepEqual(await page([["channel", channel.name], ["has", "link"], ["search", "needle"]]), [n[1], n[3]]);
    assert.deepEqual(await page([["is", "starred"], ["search", "needle"]]), [n[0], n[3], n[4]]);
    assert.deepEqual(await page([["channel", channel.name], { operator: "search", operand: "needle", negated: true }]), hay);
    assert.deepEqual(await page([["search", "needle four"]]), [n[4]]);
  });

  test("is:starred and is:unread from anchors inside the history", async () => {
    let r = await windowIds(reader, { anchor: n[3], num_before: 5, num_after: 5, narrow: [["is", "starred"]] });
    assert.deepEqual(only(r.ids, [...n, ...hay, otherNeedle]), [n[0], n[3], n[4]]);
    assert.equal(r.found_anchor, true);
    r = await windowIds(reader, { anchor: n[2], num_before: 0, num_after: 1, narrow: [["is", "starred"]] });
    assert.deepEqual(r.ids, [n[3]], "the first starred message after a non-starred anchor");
    await markRead(reader, [n[2]!, n[4]!]);
    r = await windowIds(reader, { anchor: n[2], num_before: 1, num_after: 2, narrow: [["channel", channel.name], ["is", "unread"]] });
    assert.deepEqual(r.ids, [n[1], n[3], hay[1]]);
    r = await windowIds(reader, { anchor: n[4], num_before: 2, num_after: 0, narrow: [["is", "unread"]] });
    assert.deepEqual(only(r.ids, [...n, ...hay, otherNeedle]), [n[3], hay[1]]);
  });

  test("a channel's history for someone not subscribed: search and paging still find every match", async () => {
    const page = async (params: Params) => (await windowIds(late, { narrow: [["channel", channel.name], ["search", "needle"]], ...params })).ids;
    assert.deepEqual(await page({ anchor: "newest", num_before: 100, num_after: 0 }), n);
    assert.deepEqual(await page({ anchor: n[3], num_before: 1, num_after: 1 }), [n[2], n[3], n[4]]);
    const body = await fetchBody(late, { anchor: "newest", num_before: 1, num_after: 0, narrow: [["channel", channel.name], ["search", "needle"]] });
    assert.deepEqual(body.messages[0].flags, ["read", "historical"]);
    assert.deepEqual(await windowIds(late, { anchor: "newest", num_before: 10, num_after: 0, narrow: [["search", "needle"]] }).then((x) => x.ids), [], "no personal feed to search");
  });
});
