// The Notification Bot messages of subscribing (POST /users/me/subscriptions:
// `announce` and the "subscribed you" direct messages with
// new_subscription_messages_sent) and GET /users/me/{stream_id}/topics.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let bot: { id: number; email: string };

before(async () => {
  t = await startTestApp();
  const row = await t.services.storage.db
    .selectFrom("users")
    .select(["id", "email"])
    .where("realm_id", "=", t.realm.id)
    .where("email_key", "=", "notification-bot@zulip.com")
    .executeTakeFirstOrThrow();
  bot = row;
});
after(() => t?.close());

const u = () => t.users;

const subscribe = (user: TestUser, params: Params) => t.api(user, "POST", "/users/me/subscriptions", params);
const send = (user: TestUser, params: Params) => t.api(user, "POST", "/messages", params);

/** Messages the user can see from the Notification Bot, newest last. */
async function botMessages(user: TestUser): Promise<{ content: string; type: string; subject: string; display_recipient: unknown; id: number }[]> {
  const reply = assertSuccess(
    await t.api(user, "GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, apply_markdown: false, narrow: [["sender", bot.id]] }),
  );
  return reply.messages;
}

async function newMember(prefix: string): Promise<TestUser> {
  return t.createUser(uniqueName(prefix), Role.MEMBER);
}

describe("subscribing others: the Notification Bot tells them", () => {
  test("one channel: a direct message naming who subscribed them; new_subscription_messages_sent true", async () => {
    const target = await newMember("Target");
    const name = uniqueName("Told");
    const reply = assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [target.id] }));
    assert.equal(reply.new_subscription_messages_sent, true);
    const [message, ...rest] = await botMessages(target);
    assert.equal(rest.length, 0);
    const admin = assertSuccess(await t.api(u().admin, "GET", "/users/me"));
    assert.equal(message!.type, "private");
    // Zulip's text since zulip/zulip#34396: a silent mention of who acted, no "the channel".
    assert.equal(message!.content, `@_**${admin.full_name}|${admin.user_id}** subscribed you to #**${name}**.`);
    const participants = (message!.display_recipient as { id: number }[]).map((r) => r.id).sort((a, b) => a - b);
    assert.deepEqual(participants, [bot.id, target.id].sort((a, b) => a - b));
  });

  test("several channels: one message listing them sorted", async () => {
    const target = await newMember("Target");
    const b = uniqueName("Bbb");
    const a = uniqueName("Aaa");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name: b }, { name: a }], principals: [target.id] }));
    const messages = await botMessages(target);
    assert.equal(messages.length, 1);
    const admin = assertSuccess(await t.api(u().admin, "GET", "/users/me"));
    // The trailing newline of Zulip's text goes, as every sent message's trailing whitespace does.
    assert.equal(messages[0]!.content, `@_**${admin.full_name}|${admin.user_id}** subscribed you to the following channels:\n\n* #**${a}**\n* #**${b}**`);
  });

  test("rendered as a silent mention: no @, class silent, and no mention flag for anyone", async () => {
    const target = await newMember("Target");
    const name = uniqueName("Rendered");
    const queue = (await t.register(u().admin, { event_types: ["message"] })).queue_id as string;
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [target.id] }));
    const reply = assertSuccess(
      await t.api(target, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, apply_markdown: true, narrow: [["sender", bot.id]] }),
    );
    const message = reply.messages[0];
    const admin = assertSuccess(await t.api(u().admin, "GET", "/users/me"));
    assert.match(message.content, new RegExp(`^<p><span class="user-mention silent" data-user-id="${admin.user_id}">${admin.full_name}</span> subscribed you to <a class="stream"`));
    assert.equal(message.flags.includes("mentioned"), false);
    // The person who acted is neither a recipient nor told.
    assert.deepEqual(await t.queuedEvents(u().admin, queue), []);
  });

  test("the acting user, bots and already-subscribed people get nothing", async () => {
    const target = await newMember("Target");
    const name = uniqueName("Quiet");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [u().admin.id, u().bot.id] }));
    assert.equal((await botMessages(u().bot)).filter((m) => m.content.includes(name)).length, 0);
    assert.equal((await botMessages(u().admin)).filter((m) => m.content.includes(name)).length, 0);
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [target.id] }));
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [target.id] }));
    assert.equal((await botMessages(target)).length, 1, "a second subscribe of the same person sends nothing");
  });

  test("send_new_subscription_messages=false: nobody is told and the field is absent", async () => {
    const target = await newMember("Target");
    const reply = assertSuccess(
      await subscribe(u().admin, { subscriptions: [{ name: uniqueName("Silent") }], principals: [target.id], send_new_subscription_messages: false }),
    );
    assert.equal("new_subscription_messages_sent" in reply, false);
    assert.equal((await botMessages(target)).length, 0);
  });

  test("the message reaches the person's event queue", async () => {
    const target = await newMember("Target");
    const queue = (await t.register(target, { event_types: ["message"] })).queue_id as string;
    const name = uniqueName("Live");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [target.id] }));
    const events = await t.queuedEvents(target, queue);
    assert.equal(events.length, 1);
    assert.equal(events[0].type, "message");
    assert.equal(events[0].message.sender_id, bot.id);
    assert.deepEqual(events[0].flags, []);
  });
});

describe("announce: the Notification Bot posts new channels in the announcements channel", () => {
  test("one and several channels, topic 'new channels', silent mention of the creator", async () => {
    const announcements = uniqueName("Announce");
    const created = assertSuccess(await subscribe(u().admin, { subscriptions: [{ name: announcements }] }));
    assert.ok(created);
    const channelId = assertSuccess(await t.api(u().admin, "GET", "/get_stream_id", { stream: announcements })).stream_id as number;
    assertSuccess(await t.api(u().admin, "PATCH", "/realm", { new_stream_announcements_stream_id: channelId }));
    try {
      const one = uniqueName("Fresh");
      assertSuccess(await subscribe(u().member, { subscriptions: [{ name: one }], announce: true }));
      const two = [uniqueName("Pair"), uniqueName("Pair")];
      assertSuccess(await subscribe(u().member, { subscriptions: two.map((name) => ({ name })), announce: true }));
      const member = assertSuccess(await t.api(u().member, "GET", "/users/me"));
      const posted = (await botMessages(u().admin)).filter((m) => m.type === "stream" && m.display_recipient === announcements);
      assert.equal(posted.length, 2);
      assert.equal(posted[0]!.subject, "new channels");
      assert.equal(posted[0]!.content, `@_**${member.full_name}|${member.user_id}** created a new channel #**${one}**.`);
      assert.equal(posted[1]!.content, `@_**${member.full_name}|${member.user_id}** created the following channels: #**${two[0]}**, #**${two[1]}**.`);
    } finally {
      assertSuccess(await t.api(u().admin, "PATCH", "/realm", { new_stream_announcements_stream_id: -1 }));
    }
  });

  test("no announcement without announce, for existing channels, or without an announcements channel", async () => {
    const before = (await botMessages(u().admin)).length;
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: uniqueName("NoAnnounce") }], announce: true }));
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: uniqueName("NoFlag") }] }));
    assert.equal((await botMessages(u().admin)).length, before);
  });
});

describe("GET /users/me/{stream_id}/topics", () => {
  test("topics with their newest message ID, newest first; the empty topic by its display name unless allowed", async () => {
    const name = uniqueName("Topics");
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name }] }));
    const channelId = assertSuccess(await t.api(u().member, "GET", "/get_stream_id", { stream: name })).stream_id as number;
    const ids: number[] = [];
    for (const topic of ["alpha", "beta", "Alpha", ""]) {
      ids.push(assertSuccess(await send(u().member, { type: "stream", to: name, topic, content: `in ${topic}` })).id);
    }
    const reply = assertSuccess(await t.api(u().member, "GET", `/users/me/${channelId}/topics`));
    assert.deepEqual(reply.topics, [
      { name: "general chat", max_id: ids[3] },
      { name: "Alpha", max_id: ids[2] },
      { name: "beta", max_id: ids[1] },
    ]);
    const raw = assertSuccess(await t.api(u().member, "GET", `/users/me/${channelId}/topics`, { allow_empty_topic_name: true }));
    assert.equal(raw.topics[0].name, "");
    // A public channel's history is readable without subscribing.
    assert.equal(assertSuccess(await t.api(u().moderator, "GET", `/users/me/${channelId}/topics`)).topics.length, 3);
  });

  test("private channels: unknown to outsiders; protected history shows only received topics", async () => {
    const name = uniqueName("Secret");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], invite_only: true, history_public_to_subscribers: false }));
    const channelId = assertSuccess(await t.api(u().admin, "GET", "/get_stream_id", { stream: name })).stream_id as number;
    assertSuccess(await send(u().admin, { type: "stream", to: name, topic: "before", content: "early" }));
    assertError(await t.api(u().member, "GET", `/users/me/${channelId}/topics`), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(u().guest, "GET", `/users/me/${channelId}/topics`), 400, "BAD_REQUEST", "Invalid channel ID");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name }], principals: [u().member.id] }));
    assertSuccess(await send(u().admin, { type: "stream", to: name, topic: "after", content: "later" }));
    assert.deepEqual(
      assertSuccess(await t.api(u().member, "GET", `/users/me/${channelId}/topics`)).topics.map((x: { name: string }) => x.name),
      ["after"],
    );
    assert.deepEqual(
      assertSuccess(await t.api(u().admin, "GET", `/users/me/${channelId}/topics`)).topics.map((x: { name: string }) => x.name),
      ["after", "before"],
    );
  });

  test("unknown channel, bad ID", async () => {
    assertError(await t.api(u().member, "GET", "/users/me/999999/topics"), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(u().member, "GET", "/users/me/abc/topics"), 400, "BAD_REQUEST");
  });
});
