// API-level tests of POST /streams/{stream_id}/delete_topic (Zulip's
// delete_in_topic): administrators only; the topic's messages the
// administrator can read go, newest first, in batches of 100 with the same
// delete_message events as DELETE /messages/{id}; past the time limit the
// answer is complete: false and repeating finishes the job; visibility
// policies on the topic are cleared afterwards.
// Zulip's behaviour: docs/zulip-behaviour/misc-endpoints.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DELETE_TOPIC_BATCH_SIZE, DELETE_TOPIC_TIME_LIMIT_SECONDS } from "../src/actions/message-delete.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;
const db = () => t.services.storage.db;

interface Channel {
  id: number;
  name: string;
}

async function newChannel(creator: TestUser, subscribers: TestUser[] = [], params: Params = {}): Promise<Channel> {
  const name = uniqueName("topic channel");
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
      ...params,
    }),
  );
  const row = await db().selectFrom("channels").select("id").where("name", "=", name).executeTakeFirstOrThrow();
  return { id: row.id, name };
}

async function post(user: TestUser, channel: Channel, topic: string, content = "hello"): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", { type: "channel", to: channel.id, topic, content })).id as number;
}

function deleteTopic(user: TestUser, channel: Channel | number, topic: string | undefined): Promise<ApiResponse> {
  const id = typeof channel === "number" ? channel : channel.id;
  return t.api(user, "POST", `/streams/${id}/delete_topic`, topic === undefined ? {} : { topic_name: topic });
}

async function idsInChannel(channel: Channel): Promise<number[]> {
  const rows = await db().selectFrom("messages").select("id").where("channel_id", "=", channel.id).orderBy("id").execute();
  return rows.map((r) => r.id);
}

async function idsInTopic(channel: Channel, topic: string): Promise<number[]> {
  const rows = await db().selectFrom("messages").select("id").where("channel_id", "=", channel.id).where("topic_key", "=", topic.toLowerCase()).orderBy("id").execute();
  return rows.map((r) => r.id);
}

const deleteEvents = () => t.events.filter((n) => n.event.type === "delete_message" && Array.isArray(n.event.message_ids));

describe("deleting a topic", () => {
  test("an administrator deletes every message of the topic (any case); other topics stay; complete: true", async () => {
    const channel = await newChannel(u().member, [u().admin]);
    const doomed = [await post(u().member, channel, "Castle"), await post(u().admin, channel, "castle"), await post(u().member, channel, "CASTLE")];
    const kept = await post(u().member, channel, "garden");
    const reply = assertSuccess(await deleteTopic(u().admin, channel, "castle"));
    assert.deepEqual(reply, { result: "success", msg: "", complete: true });
    assert.deepEqual(await idsInChannel(channel), [kept]);
    for (const id of doomed) assertError(await t.api(u().member, "GET", `/messages/${id}`), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("the events are DELETE /messages's: delete_message to the audience, in each client's form; first_message_id moves", async () => {
    const channel = await newChannel(u().member, [u().admin, u().guest]);
    const doomed = [await post(u().member, channel, "first"), await post(u().guest, channel, "first")];
    const kept = await post(u().member, channel, "second");
    const bulkQueue = (await t.register(u().guest, { event_types: ["delete_message", "stream"], client_capabilities: { bulk_message_deletion: true } })).queue_id as string;
    const oldQueue = (await t.register(u().guest, { event_types: ["delete_message"] })).queue_id as string;
    t.clearEvents();
    assertSuccess(await deleteTopic(u().owner, channel, "first"));
    const bulk = await t.queuedEvents(u().guest, bulkQueue);
    assert.deepEqual(
      bulk.find((e) => e.type === "delete_message"),
      { type: "delete_message", message_ids: doomed, stream_id: channel.id, topic: "first", message_type: "stream", id: bulk.findIndex((e) => e.type === "delete_message") },
    );
    const firstMessage = bulk.find((e) => e.type === "stream");
    assert.deepEqual([firstMessage.property, firstMessage.value], ["first_message_id", kept]);
    const old = await t.queuedEvents(u().guest, oldQueue);
    assert.deepEqual(old.map((e) => e.message_id), doomed);
    const audience = [...deleteEvents()[0]!.userIds].sort((a, b) => a - b);
    // The subscribers, and the owner who deleted them (it could read them).
    assert.deepEqual(audience, [u().owner.id, u().admin.id, u().member.id, u().guest.id].sort((a, b) => a - b));
  });

  test("batches of 100, newest first: one delete_message event per batch", async () => {
    const channel = await newChannel(u().admin);
    const ids: number[] = [];
    for (let i = 0; i < DELETE_TOPIC_BATCH_SIZE + 20; i++) ids.push(await post(u().admin, channel, "long"));
    t.clearEvents();
    assertSuccess(await deleteTopic(u().admin, channel, "long"));
    const events = deleteEvents();
    assert.equal(events.length, 2);
    assert.deepEqual(events[0]!.event.message_ids, ids.slice(20));
    assert.deepEqual(events[1]!.event.message_ids, ids.slice(0, 20));
    assert.deepEqual(await idsInTopic(channel, "long"), []);
  });

  test("past the time limit between batches: complete: false with the rest left; repeating finishes", async () => {
    const channel = await newChannel(u().admin);
    const ids: number[] = [];
    for (let i = 0; i < DELETE_TOPIC_BATCH_SIZE + 5; i++) ids.push(await post(u().admin, channel, "slow"));
    const realNow = t.services.now;
    t.clearEvents();
    // The clock jumps past the limit once the first batch is deleted.
    t.services.now = () => realNow() + (deleteEvents().length > 0 ? DELETE_TOPIC_TIME_LIMIT_SECONDS : 0);
    try {
      const reply = assertSuccess(await deleteTopic(u().admin, channel, "slow"));
      assert.deepEqual(reply, { result: "success", msg: "", complete: false });
    } finally {
      t.services.now = realNow;
    }
    assert.deepEqual(await idsInTopic(channel, "slow"), ids.slice(0, 5));
    assert.deepEqual(assertSuccess(await deleteTopic(u().admin, channel, "slow")).complete, true);
    assert.deepEqual(await idsInTopic(channel, "slow"), []);
  });

  test("a topic with no messages: complete: true, nothing sent", async () => {
    const channel = await newChannel(u().admin);
    t.clearEvents();
    assert.equal(assertSuccess(await deleteTopic(u().admin, channel, "never used")).complete, true);
    assert.deepEqual(t.events, []);
  });

  test("the empty topic under its other names", async () => {
    const channel = await newChannel(u().admin);
    const id = await post(u().admin, channel, "");
    const kept = await post(u().admin, channel, "named");
    assertSuccess(await deleteTopic(u().admin, channel, "general chat"));
    assert.deepEqual(await idsInChannel(channel), [kept]);
    assert.ok(id < kept);
  });
});

describe("visibility policies on the deleted topic", () => {
  test("public history: every policy on the topic is cleared, with user_topic events", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    await post(u().member, channel, "noisy");
    assertSuccess(await t.api(u().moderator, "POST", "/user_topics", { stream_id: channel.id, topic: "noisy", visibility_policy: 1 }));
    assertSuccess(await t.api(u().member, "POST", "/user_topics", { stream_id: channel.id, topic: "Noisy", visibility_policy: 3 }));
    assertSuccess(await t.api(u().member, "POST", "/user_topics", { stream_id: channel.id, topic: "other", visibility_policy: 1 }));
    t.clearEvents();
    assertSuccess(await deleteTopic(u().admin, channel, "NOISY"));
    const rows = await db().selectFrom("user_topics").select(["user_id", "topic_key"]).where("channel_id", "=", channel.id).execute();
    assert.deepEqual(rows, [{ user_id: u().member.id, topic_key: "other" }]);
    for (const user of [u().moderator, u().member]) {
      const events = t.eventsFor(user.id, "user_topic");
      assert.equal(events.length, 1);
      assert.deepEqual([events[0]!.stream_id, String(events[0]!.topic_name).toLowerCase(), events[0]!.visibility_policy], [channel.id, "noisy", 0]);
    }
  });

  test("protected history: only what the administrator received goes; policies stay for those still holding messages", async () => {
    const { member, admin, moderator } = u();
    const channel = await newChannel(member, [moderator], { invite_only: true, history_public_to_subscribers: false });
    const before = await post(member, channel, "secret");
    assertSuccess(await t.api(member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [admin.id] }));
    const after = await post(member, channel, "secret");
    assertSuccess(await t.api(moderator, "POST", "/user_topics", { stream_id: channel.id, topic: "secret", visibility_policy: 1 }));
    // The administrator received only the newer message: nothing of the topic is left for them.
    assertSuccess(await t.api(admin, "POST", "/user_topics", { stream_id: channel.id, topic: "secret", visibility_policy: 1 }));
    t.clearEvents();
    assertSuccess(await deleteTopic(admin, channel, "secret"));
    assert.deepEqual(t.eventsFor(admin.id, "user_topic").map((e) => e.visibility_policy), [0]);
    assert.deepEqual(t.eventsFor(moderator.id, "user_topic"), []);
    assert.deepEqual(await idsInTopic(channel, "secret"), [before]);
    assert.ok(after > before);
    // The moderator (muted) and the member (following, by sending) still receive the older message: their policies stay.
    const rows = await db().selectFrom("user_topics").select(["user_id", "visibility_policy"]).where("channel_id", "=", channel.id).orderBy("user_id").execute();
    assert.deepEqual(
      rows,
      [
        { user_id: moderator.id, visibility_policy: 1 },
        { user_id: member.id, visibility_policy: 3 },
      ].sort((a, b) => a.user_id - b.user_id),
    );
  });
});

describe("who may, and bad requests", () => {
  test("owners and administrators may; everyone else: Must be an organization administrator, checked first", async () => {
    const channel = await newChannel(u().owner, [u().admin, u().moderator, u().member, u().guest, u().bot]);
    const id = await post(u().member, channel, "guarded");
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await deleteTopic(u()[role], channel, "guarded"), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      assertError(await deleteTopic(u()[role], 999999, undefined), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.deepEqual(await idsInTopic(channel, "guarded"), [id]);
    assert.equal(assertSuccess(await deleteTopic(u().owner, channel, "guarded")).complete, true);
    await post(u().member, channel, "guarded");
    assert.equal(assertSuccess(await deleteTopic(u().admin, channel, "guarded")).complete, true);
  });

  test("unknown, unreadable and archived channels: Invalid channel ID; topic_name required", async () => {
    assertError(await deleteTopic(u().admin, 999999, "x"), 400, "BAD_REQUEST", "Invalid channel ID");
    const secret = await newChannel(u().member, [], { invite_only: true });
    const id = await post(u().member, secret, "x");
    assertError(await deleteTopic(u().admin, secret, "x"), 400, "BAD_REQUEST", "Invalid channel ID");
    assert.deepEqual(await idsInTopic(secret, "x"), [id]);
    const archived = await newChannel(u().admin);
    await post(u().admin, archived, "x");
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${archived.id}`));
    assertError(await deleteTopic(u().admin, archived, "x"), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await deleteTopic(u().admin, archived, undefined), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic_name' argument", { var_name: "topic_name" });
    assertError(await t.api(u().admin, "POST", "/streams/abc/delete_topic", { topic_name: "x" }), 400, "BAD_REQUEST", "stream_id is not an integer");
    assertError(await t.api(null, "POST", `/streams/${archived.id}/delete_topic`, { topic_name: "x" }), 401, "UNAUTHORIZED");
  });
});
