// Integration test with the published zulip-js package (a devDependency) as a
// real client: it builds its own URLs (realm + "/api/v1"), sends POST
// parameters as multipart/form-data (arrays JSON-encoded, other values as
// strings), and GET/DELETE parameters in the query string. Covers profile and
// server settings, POST /register, long-polling GET /events woken by a
// subscription and by a direct typing notification, heartbeats, DELETE
// /events and the BAD_EVENT_QUEUE_ID error that follows; sending channel and
// direct messages with local echo (queue_id + local_id), receiving them by
// long-poll, and fetching them back with a narrow.
//
// zulip-js is CommonJS without type declarations: it is loaded with
// createRequire and typed here with just what the test uses. Loading it
// replaces globalThis.FormData with the `form-data` package
// (isomorphic-form-data does that), so this file makes no multipart requests
// of its own through test/helpers.ts.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import { assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
type Params = Record<string, unknown>;

interface ZulipClient {
  config: { apiURL: string };
  users: { me: { getProfile(): Promise<Json>; subscriptions: { add(params: Params): Promise<Json> } } };
  server: { settings(params?: Params): Promise<Json> };
  streams: { subscriptions: { retrieve(params?: Params): Promise<Json> }; getStreamId(name: string): Promise<Json> };
  queues: { register(params: Params): Promise<Json>; deregister(params: Params): Promise<Json> };
  events: { retrieve(params: Params): Promise<Json> };
  typing: { send(params: Params): Promise<Json> };
  messages: { send(params: Params): Promise<Json>; retrieve(params: Params): Promise<Json>; render(params: Params | string): Promise<Json>; getById(params: Params): Promise<Json> };
}
type ZulipInit = (config: { username: string; apiKey: string; realm: string }) => Promise<ZulipClient>;

const zulipInit = createRequire(import.meta.url)("zulip-js") as ZulipInit;

/** Heartbeats come after this long, so an idle poll can be seen to end. */
const HEARTBEAT_MS = 1500;

let t: TestApp;
let me: TestUser;
let other: TestUser;
let z: ZulipClient;
let zOther: ZulipClient;

before(async () => {
  t = await startTestApp({ eventHeartbeatMs: HEARTBEAT_MS });
  me = t.users.member;
  other = t.users.moderator;
  z = await zulipInit({ username: me.email, apiKey: me.apiKey, realm: t.url });
  zOther = await zulipInit({ username: other.email, apiKey: other.apiKey, realm: t.url });
});
after(() => t?.close());

function success(reply: Json): Json {
  assert.equal(reply.result, "success", JSON.stringify(reply));
  assert.equal(reply.msg, "");
  return reply;
}

/**
 * Long-polls through zulip-js until an event matching `wanted` arrives,
 * acknowledging whatever came before it (heartbeats included).
 */
async function waitForEvent(queueId: string, lastEventId: number, wanted: (e: Json) => boolean): Promise<{ event: Json; lastEventId: number; polls: number }> {
  const deadline = Date.now() + 10_000;
  let last = lastEventId;
  for (let polls = 1; Date.now() < deadline; polls++) {
    const reply = success(await z.events.retrieve({ queue_id: queueId, last_event_id: last }));
    assert.equal(reply.queue_id, queueId);
    for (const event of reply.events as Json[]) {
      assert.ok(event.id > last, `event IDs increase: ${JSON.stringify(reply.events)}`);
      last = event.id;
      if (wanted(event)) return { event, lastEventId: last, polls };
    }
  }
  throw new Error("no matching event within 10 s");
}

describe("zulip-js as a client", () => {
  test("builds the /api/v1 URL from the realm", () => {
    assert.equal(z.config.apiURL, `${t.url}/api/v1`);
  });

  test("users.me.getProfile and server.settings", async () => {
    const profile = success(await z.users.me.getProfile());
    assert.equal(profile.user_id, me.id);
    assert.equal(profile.delivery_email, me.email);
    assert.equal(profile.full_name, "Max Member");
    assert.equal(profile.role, 400);

    const settings = success(await z.server.settings());
    assert.equal(settings.realm_name, "Test Org");
    assert.equal(typeof settings.zulip_feature_level, "number");
    assert.equal(settings.authentication_methods.password, true);
  });

  test("register, subscription and typing events by long-poll, deregister", async () => {
    // zulip-js JSON-encodes event_types itself; client_capabilities (an
    // object) it would hand to form-data as is, so it goes JSON-encoded.
    const registered = success(
      await z.queues.register({
        event_types: ["subscription", "typing"],
        client_capabilities: JSON.stringify({ notification_settings_null: true, stream_typing_notifications: true }),
      }),
    );
    const queueId: string = registered.queue_id;
    assert.match(queueId, /^[0-9a-f-]{36}$/);
    assert.equal(registered.last_event_id, -1);
    // fetch_event_types defaults to event_types: the subscription state is there, nothing unasked-for is.
    assert.ok(Array.isArray(registered.subscriptions));
    assert.equal(registered.realm_users, undefined);
    let last: number = registered.last_event_id;

    // 1. A poll that is already waiting is woken by the subscription.
    const channel = uniqueName("zulip-js channel");
    const waiting = waitForEvent(queueId, last, (e) => e.type === "subscription" && e.op === "add");
    await new Promise((r) => setTimeout(r, 100));
    // zulip-js JSON-encodes array parameters.
    const subscribed = success(await z.users.me.subscriptions.add({ subscriptions: [{ name: channel, description: "made by zulip-js" }] }));
    assert.deepEqual(subscribed.subscribed, { [String(me.id)]: [channel] });
    const added = await waiting;
    assert.equal(added.polls, 1, "the waiting poll itself answered");
    last = added.lastEventId;
    assert.equal(added.event.subscriptions.length, 1);
    const sub = added.event.subscriptions[0];
    assert.equal(sub.name, channel);
    assert.equal(sub.description, "made by zulip-js");
    assert.equal(sub.creator_id, me.id);

    const { stream_id: channelId } = success(await z.streams.getStreamId(channel));
    assert.equal(sub.stream_id, channelId);
    const mine = success(await z.streams.subscriptions.retrieve());
    assert.ok(mine.subscriptions.some((s: Json) => s.stream_id === channelId && s.name === channel));

    // 2. Another user's direct typing notification, sent through zulip-js too
    //    (a one-element `to` list: zulip-js JSON-encodes it).
    const typingWait = waitForEvent(queueId, last, (e) => e.type === "typing");
    await new Promise((r) => setTimeout(r, 100));
    success(await zOther.typing.send({ to: [me.id], op: "start" }));
    const typing = await typingWait;
    assert.equal(typing.polls, 1, "the waiting poll itself answered");
    last = typing.lastEventId;
    assert.equal(typing.event.op, "start");
    assert.equal(typing.event.message_type, "direct");
    assert.deepEqual(typing.event.sender, { user_id: other.id, email: `user${other.id}@parley.test` });
    assert.deepEqual(
      [...typing.event.recipients].sort((a: Json, b: Json) => a.user_id - b.user_id),
      [me, other].map((u) => ({ user_id: u.id, email: `user${u.id}@parley.test` })).sort((a, b) => a.user_id - b.user_id),
    );

    // And a stop, sent with t.api (form-encoded) rather than zulip-js, to the
    // same queue: both encodings reach the same poll.
    const stopWait = waitForEvent(queueId, last, (e) => e.type === "typing");
    await new Promise((r) => setTimeout(r, 100));
    assertSuccess(await t.api(other, "POST", "/typing", { to: [me.id], op: "stop" }));
    const stop = await stopWait;
    last = stop.lastEventId;
    assert.equal(stop.event.op, "stop");

    // 3. An idle poll ends with a heartbeat after eventHeartbeatMs.
    const started = Date.now();
    const idle = success(await z.events.retrieve({ queue_id: queueId, last_event_id: last }));
    const waited = Date.now() - started;
    assert.deepEqual(
      idle.events.map((e: Json) => e.type),
      ["heartbeat"],
    );
    assert.equal(idle.events[0].id, last + 1);
    assert.ok(waited >= HEARTBEAT_MS - 100 && waited < HEARTBEAT_MS + 2000, `heartbeat after ${waited} ms`);
    last = idle.events[0].id;

    // dont_block answers at once, with nothing unacknowledged left.
    const empty = success(await z.events.retrieve({ queue_id: queueId, last_event_id: last, dont_block: true }));
    assert.deepEqual(empty.events, []);

    // 4. Deregister (DELETE /events, queue_id in the query string); the queue is gone.
    success(await z.queues.deregister({ queue_id: queueId }));
    const gone = await z.events.retrieve({ queue_id: queueId, last_event_id: last });
    assert.equal(gone.result, "error", JSON.stringify(gone));
    assert.equal(gone.code, "BAD_EVENT_QUEUE_ID");
    assert.equal(gone.queue_id, queueId);
    assert.equal(gone.msg, `Bad event queue ID: ${queueId}`);
    const again = await z.queues.deregister({ queue_id: queueId });
    assert.equal(again.code, "BAD_EVENT_QUEUE_ID");
  });

  test("a deregister ends a poll that is waiting", async () => {
    const { queue_id: queueId } = success(await z.queues.register({ event_types: ["typing"] }));
    const polling = z.events.retrieve({ queue_id: queueId, last_event_id: -1 });
    await new Promise((r) => setTimeout(r, 100));
    success(await z.queues.deregister({ queue_id: queueId }));
    const reply = success(await polling);
    assert.deepEqual(reply.events, []);
  });

  test("another user's queue ID is unknown to this user", async () => {
    const { queue_id: theirs } = success(await zOther.queues.register({ event_types: ["typing"] }));
    const reply = await z.events.retrieve({ queue_id: theirs, last_event_id: -1, dont_block: true });
    assert.equal(reply.code, "BAD_EVENT_QUEUE_ID");
    const deleting = await z.queues.deregister({ queue_id: theirs });
    assert.equal(deleting.code, "BAD_EVENT_QUEUE_ID");
    success(await zOther.queues.deregister({ queue_id: theirs }));
  });

  test("messages: send with local echo, receive by long-poll, fetch with a narrow, render", async () => {
    const channel = uniqueName("zulip-js messages");
    success(await z.users.me.subscriptions.add({ subscriptions: [{ name: channel }], principals: [me.id, other.id] }));
    // form-data takes no booleans: zulip-js clients send them as JSON text.
    const mine = success(await z.queues.register({ event_types: ["message"], apply_markdown: "true" }));
    const theirs = success(await zOther.queues.register({ event_types: ["message"], apply_markdown: "false" }));

    // The sender's own queue gets local_id back; zulip-js sends POST parameters as multipart.
    const waiting = waitForEvent(mine.queue_id, -1, (e) => e.type === "message");
    await new Promise((r) => setTimeout(r, 100));
    const sent = success(
      await z.messages.send({ type: "stream", to: channel, topic: "greetings", content: "Hello **world**", queue_id: mine.queue_id, local_id: "42.01" }),
    );
    assert.equal(typeof sent.id, "number");
    const echo = await waiting;
    assert.equal(echo.polls, 1, "the waiting poll itself answered");
    assert.equal(echo.event.message.id, sent.id);
    assert.equal(echo.event.local_id, "42.01");
    assert.equal(echo.event.local_message_id, "42.01");
    assert.equal(echo.event.message.content, "<p>Hello <strong>world</strong></p>");
    assert.equal(echo.event.message.display_recipient, channel);
    assert.equal(echo.event.message.subject, "greetings");

    // The other subscriber's queue asked for Markdown source and gets no local_id.
    const received = success(await zOther.events.retrieve({ queue_id: theirs.queue_id, last_event_id: -1, dont_block: true }));
    const event = (received.events as Json[]).find((e) => e.type === "message")!;
    assert.equal(event.message.id, sent.id);
    assert.equal(event.message.content, "Hello **world**");
    assert.equal(event.message.content_type, "text/x-markdown");
    assert.equal(event.local_id, undefined);
    assert.deepEqual(event.flags, []);

    // A direct message the other way, then both fetched back with narrows (zulip-js JSON-encodes narrow).
    const dm = success(await zOther.messages.send({ type: "direct", to: [me.id], content: "psst" }));
    const topic = success(await z.messages.retrieve({ anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "channel", operand: channel }, { operator: "topic", operand: "greetings" }] }));
    assert.deepEqual(topic.messages.map((m: Json) => m.id), [sent.id]);
    assert.equal(topic.found_newest, true);
    const direct = success(await z.messages.retrieve({ anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "dm", operand: [other.id] }] }));
    assert.deepEqual(direct.messages.map((m: Json) => m.id), [dm.id]);
    assert.deepEqual(direct.messages[0].flags, []);

    const one = success(await z.messages.getById({ message_id: dm.id }));
    assert.equal(one.raw_content, "psst");
    assert.equal(success(await z.messages.render({ content: "*hi*" })).rendered, "<p><em>hi</em></p>");
  });
});
