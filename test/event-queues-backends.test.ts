// One set of cases for both event queue backends: the in-process one (always)
// and Redis (when DATABASE_URL and REDIS_URL are set). Then what only Redis
// can do: several processes sharing queues — a queue registered on one
// server and read on another, a long-poll woken by a message sent through
// another, typing/presence/realm events crossing, garbage collection once.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Config } from "../src/config.ts";
import type { EventQueueBackend, QueueTimings } from "../src/events/backend.ts";
import { QueueError } from "../src/events/backend.ts";
import type { QueueFilter } from "../src/events/filter.ts";
import { CAPABILITY_NAMES, LocalNotifier, type CapabilityName, type ClientEvent, type MessageDelivery } from "../src/events/notifier.ts";
import { EventQueues } from "../src/events/queues.ts";
import { RedisEventQueues } from "../src/events/redis-queues.ts";
import { idTemplate, SerializedEvent } from "../src/events/serialized.ts";
import { connectRedis } from "../src/redis.ts";
import { assertError, assertSuccess, deleteRedisKeys, PG_URL, REDIS_URL, startTestApp, testConfig, type TestApp } from "./helpers.ts";

const REALM = 1;
const OTHER_REALM = 2;
const ALICE = 11;
const BOB = 12;

const NO_CAPABILITIES = Object.fromEntries(CAPABILITY_NAMES.map((name) => [name, false])) as Record<CapabilityName, boolean>;

function filter(overrides: Partial<QueueFilter> = {}): QueueFilter {
  return { eventTypes: null, narrow: [], allPublicStreams: false, applyMarkdown: true, capabilities: NO_CAPABILITIES, slimPresence: false, ...overrides };
}

/** A backend under test, its notifier (what actions call) and its clock. */
interface Harness {
  queues: EventQueueBackend;
  notifier: LocalNotifier;
  clock: { now: number };
  /** Another process on the same store (Redis only). */
  peer?: () => Harness;
  /** Its Redis connections' name (Redis only). */
  connectionName?: string;
  close(): Promise<void>;
}

const TIMINGS: QueueTimings = { heartbeatMs: 60_000, idleTimeoutMs: 600_000, maxLifespanMs: 7 * 24 * 3600_000, sweepIntervalMs: 3600_000 };

function memoryHarness(timings: QueueTimings = TIMINGS): Harness {
  const notifier = new LocalNotifier();
  const clock = { now: 1_000_000 };
  const queues = new EventQueues(notifier, timings, () => clock.now);
  return { queues, notifier, clock, close: async () => queues.shutdown() };
}

let harnesses = 0;

function redisHarness(timings: QueueTimings = TIMINGS, config: Config = testConfig(), clock = { now: 1_000_000 }): Harness {
  const notifier = new LocalNotifier();
  // Connection names of their own (CLIENT LIST shows them), per test process: Redis is shared.
  const name = `test-events-${process.pid}-${++harnesses}`;
  const queues = new RedisEventQueues(notifier, timings, {
    redis: connectRedis(config, name),
    subscriber: connectRedis(config, `${name}-wake`),
    keyPrefix: config.redisKeyPrefix,
    clock: () => clock.now,
    onError: (error) => assert.fail(String(error)),
  });
  return {
    queues,
    notifier,
    clock,
    peer: () => redisHarness(timings, config, clock),
    connectionName: `parley-${name}`,
    close: async () => {
      await queues.shutdown();
      await deleteRedisKeys(config);
    },
  };
}

const BACKENDS: [string, (timings?: QueueTimings) => Harness][] = [["memory", memoryHarness]];
if (PG_URL && REDIS_URL) BACKENDS.push(["redis", redisHarness]);

async function maybe<T>(value: T | Promise<T>): Promise<T> {
  return value;
}

async function create(h: Harness, userId: number, f: QueueFilter = filter(), lifespanMs?: number, realmId = REALM): Promise<string> {
  return (await maybe(h.queues.create({ realmId, userId, filter: f, lifespanMs }))).id;
}

/** A GET /events: opens (acknowledging lastEventId) and waits; resolves with the events answered. */
async function poll(h: Harness, queueId: string, userId: number, lastEventId: number, dontBlock: boolean): Promise<{ answer: Promise<ClientEvent[]>; cancel: (() => void) | undefined }> {
  const opened = await maybe(h.queues.open(queueId, userId, lastEventId, dontBlock));
  let cancel: (() => void) | undefined;
  const answer = new Promise<ClientEvent[]>((resolve) => {
    cancel = h.queues.wait(opened, dontBlock, (json) => resolve(JSON.parse(json) as ClientEvent[]));
  });
  return { answer, cancel };
}

async function held(h: Harness, queueId: string, userId: number, lastEventId = -1): Promise<ClientEvent[]> {
  await h.queues.settled();
  return (await poll(h, queueId, userId, lastEventId, true)).answer;
}

async function rejects(promise: () => unknown, kind: QueueError["kind"], message: string): Promise<void> {
  await assert.rejects(
    async () => promise(),
    (error: unknown) => error instanceof QueueError && error.kind === kind && error.message === message,
  );
}

/** Resolves once `check` holds, polling; fails after a bounded wait. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function messageEvent(id: number, overrides: Record<string, unknown> = {}): ClientEvent {
  return {
    type: "message",
    message: {
      id,
      type: "stream",
      stream_id: 7,
      display_recipient: "general",
      subject: "lunch",
      sender_id: ALICE,
      sender_email: "alice@example.com",
      content: "<p>hi <strong>there</strong></p>",
      content_type: "text/html",
      ...overrides,
    },
  };
}

function delivery(overrides: Partial<MessageDelivery> = {}): MessageDelivery {
  return { flags: { [ALICE]: ["read"], [BOB]: ["mentioned"] }, rawContent: "hi **there**", emptyTopicName: "general chat", publicChannel: false, ...overrides };
}

for (const [name, make] of BACKENDS) {
  describe(`event queues in ${name}`, () => {
    let h: Harness;
    before(() => {
      h = make();
    });
    after(async () => h.close());

    test("an event gets per-queue IDs from 0; acknowledged events are dropped", async () => {
      const q = await create(h, ALICE);
      assert.deepEqual(await held(h, q, ALICE), []);
      h.notifier.notify(REALM, { type: "presence", user_id: BOB }, [ALICE]);
      h.notifier.notify(REALM, { type: "typing", op: "start" }, [ALICE, BOB]);
      assert.deepEqual(await held(h, q, ALICE), [
        { type: "presence", user_id: BOB, id: 0 },
        { type: "typing", op: "start", id: 1 },
      ]);
      assert.deepEqual(await held(h, q, ALICE, 0), [{ type: "typing", op: "start", id: 1 }]);
      assert.deepEqual(await held(h, q, ALICE, 1), []);
      assert.deepEqual(await maybe(h.queues.peek(q)), []);
    });

    test("acknowledging an event already dropped, or one never handed out, is an error", async () => {
      const q = await create(h, ALICE);
      h.notifier.notify(REALM, { type: "presence" }, [ALICE]);
      h.notifier.notify(REALM, { type: "presence" }, [ALICE]);
      assert.equal((await held(h, q, ALICE, 1)).length, 0);
      await rejects(() => h.queues.open(q, ALICE, 0, true), "pruned", "An event newer than 0 has already been pruned!");
      await rejects(() => h.queues.open(q, ALICE, 5, true), "pruned", "Event 5 was not in this queue");
    });

    test("someone else's queue, or no queue, is unknown; remove() forgets a queue", async () => {
      const q = await create(h, ALICE);
      await rejects(() => h.queues.open(q, BOB, -1, true), "unknown", `Bad event queue ID: ${q}`);
      await rejects(() => h.queues.open("nope", ALICE, -1, true), "unknown", "Bad event queue ID: nope");
      await rejects(() => h.queues.remove(q, BOB), "unknown", `Bad event queue ID: ${q}`);
      assert.ok((await maybe(h.queues.queueIdsOf(ALICE))).includes(q));
      await h.queues.remove(q, ALICE);
      assert.ok(!(await maybe(h.queues.queueIdsOf(ALICE))).includes(q));
      assert.equal(await maybe(h.queues.peek(q)), undefined);
      await rejects(() => h.queues.open(q, ALICE, -1, true), "unknown", `Bad event queue ID: ${q}`);
    });

    test("queues take only their event types, their organization's events and the capability forms they declared", async () => {
      const typing = await create(h, ALICE, filter({ eventTypes: new Set(["typing"]) }));
      const bulk = await create(h, ALICE, filter({ capabilities: { ...NO_CAPABILITIES, bulk_message_deletion: true } }));
      const elsewhere = await create(h, ALICE, filter(), undefined, OTHER_REALM);
      h.notifier.notify(REALM, { type: "presence" }, [ALICE]);
      h.notifier.notify(REALM, { type: "typing", op: "stop" }, [ALICE]);
      h.notifier.notify(REALM, { type: "delete_message", message_ids: [1] }, [ALICE], { name: "bulk_message_deletion", present: true });
      h.notifier.notify(REALM, { type: "delete_message", message_id: 1 }, [ALICE], { name: "bulk_message_deletion", present: false });
      assert.deepEqual(await held(h, typing, ALICE), [{ type: "typing", op: "stop", id: 0 }]);
      assert.deepEqual(
        (await held(h, bulk, ALICE)).map((e) => e.type + (e.message_ids ? "[]" : "")),
        ["presence", "typing", "delete_message[]"],
      );
      assert.deepEqual(await held(h, elsewhere, ALICE), []);
    });

    test("message events: each queue its form (HTML or Markdown), its user's flags, its narrow; local_id to the sender's queue; all_public_streams", async () => {
      const html = await create(h, ALICE);
      const markdown = await create(h, BOB, filter({ applyMarkdown: false }));
      const narrowed = await create(h, BOB, filter({ narrow: [{ operator: "topic", operand: "other", negated: false }] }));
      const everything = await create(h, 99, filter({ allPublicStreams: true }));
      h.notifier.notifyMessage(REALM, messageEvent(5), [ALICE, BOB], delivery({ localId: { queueId: html, localId: "1.5" }, publicChannel: true }));
      const [a] = await held(h, html, ALICE);
      assert.deepEqual(a, { ...messageEvent(5), flags: ["read"], local_message_id: "1.5", local_id: "1.5", id: 0 });
      const [b] = await held(h, markdown, BOB);
      assert.deepEqual(b, { type: "message", message: { ...(messageEvent(5).message as object), content: "hi **there**", content_type: "text/x-markdown" }, flags: ["mentioned"], id: 0 });
      assert.deepEqual(await held(h, narrowed, BOB), []);
      assert.deepEqual((await held(h, everything, 99)).map((e) => [e.type, e.flags, e.id]), [["message", [], 0]]);
      // A private channel's message reaches only its recipients.
      h.notifier.notifyMessage(REALM, messageEvent(6), [ALICE], delivery());
      assert.deepEqual(await held(h, everything, 99, 0), []);
    });

    test("a waiting poll is answered when an event arrives; the newer of two polls replaces the older, which answers []", async () => {
      const q = await create(h, BOB);
      const first = await poll(h, q, BOB, -1, false);
      assert.ok(h.queues.isWaiting(q));
      const second = await poll(h, q, BOB, -1, false);
      assert.deepEqual(await first.answer, []);
      h.notifier.notify(REALM, { type: "presence", user_id: 3 }, [BOB]);
      assert.deepEqual(await second.answer, [{ type: "presence", user_id: 3, id: 0 }]);
      assert.ok(!h.queues.isWaiting(q));
    });

    test("remove() answers the queue's waiting poll; close() answers every waiting poll at once", async () => {
      const removed = await create(h, BOB);
      const waiting = await poll(h, removed, BOB, -1, false);
      await h.queues.remove(removed, BOB);
      assert.deepEqual(await waiting.answer, []);

      const closing = make();
      try {
        const q = await create(closing, BOB);
        const pending = await poll(closing, q, BOB, -1, false);
        closing.queues.close();
        assert.deepEqual(await pending.answer, []);
        assert.ok(closing.queues.closed);
        // Events notified meanwhile stay in the queue for the client's next poll (on another process).
        closing.notifier.notify(REALM, { type: "presence" }, [BOB]);
        await closing.queues.settled();
        assert.deepEqual(await maybe(closing.queues.peek(q)), [JSON.stringify({ type: "presence", id: 0 })]);
        // A poll on a closing process is answered at once.
        assert.deepEqual((await (await poll(closing, q, BOB, -1, false)).answer).length, 1);
      } finally {
        await closing.close();
      }
    });

    test("a poll with nothing to say ends with a heartbeat, which takes the next ID", async () => {
      const quick = make({ ...TIMINGS, heartbeatMs: 20 });
      try {
        const q = await create(quick, ALICE);
        assert.deepEqual(await (await poll(quick, q, ALICE, -1, false)).answer, [{ type: "heartbeat", id: 0 }]);
        assert.ok(!quick.queues.isWaiting(q));
        quick.notifier.notify(REALM, { type: "presence" }, [ALICE]);
        assert.deepEqual(await held(quick, q, ALICE, 0), [{ type: "presence", id: 1 }]);
      } finally {
        await quick.close();
      }
    });

    test("queues nobody polls for their lifespan are swept; a polled or waiting one is kept; recentlyPolled", async () => {
      const idle = await create(h, 31, filter(), 1000);
      const polled = await create(h, 32, filter(), 1000);
      const waited = await create(h, 33, filter(), 1000);
      h.clock.now += 800;
      await held(h, polled, 32);
      const waiting = await poll(h, waited, 33, -1, false);
      assert.equal(await maybe(h.queues.recentlyPolled(31, 500)), false);
      assert.equal(await maybe(h.queues.recentlyPolled(32, 500)), true);
      assert.equal(await maybe(h.queues.recentlyPolled(33, 10)), true, "a waiting poll counts as online");
      h.clock.now += 400;
      assert.equal(await maybe(h.queues.sweep()), 1);
      await rejects(() => h.queues.open(idle, 31, -1, true), "unknown", `Bad event queue ID: ${idle}`);
      assert.deepEqual(await maybe(h.queues.queueIdsOf(31)), []);
      assert.deepEqual(await held(h, polled, 32), []);
      waiting.cancel?.();
      await h.queues.remove(waited, 33);
    });

    test("an event is serialized once; the text Redis completes per queue is what the memory backend sends", () => {
      for (const event of [{ type: "presence", user_id: 1, nested: { a: [1, "é\u2028"] } }, { type: "odd", id: "own", after: true }]) {
        const [head, tail] = idTemplate(event);
        assert.equal(`${head}42${tail}`, SerializedEvent.of(event).withId(42));
        assert.equal(`${head}42${tail}`, JSON.stringify({ ...event, id: 42 }));
      }
    });
  });
}

describe("event queues across processes (Redis)", { skip: !(PG_URL && REDIS_URL) && "needs DATABASE_URL and REDIS_URL" }, () => {
  let a: TestApp;
  let b: Awaited<ReturnType<TestApp["startPeer"]>>;
  before(async () => {
    a = await startTestApp();
    b = await a.startPeer();
  });
  after(async () => a?.close());

  async function channel(name: string): Promise<number> {
    const { owner, member, admin } = a.users;
    assertSuccess(await a.api(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [owner.id, member.id, admin.id] }));
    return assertSuccess(await a.api(owner, "GET", "/get_stream_id", { stream: name })).stream_id;
  }

  test("a queue registered on server A is read and deleted on server B; B's unknown-queue error is A's", async () => {
    const { member, owner } = a.users;
    const id = await channel("crossing");
    const { queue_id } = await a.register(member, { event_types: ["message"] });
    assertSuccess(await a.api(owner, "POST", "/messages", { type: "stream", to: id, topic: "t", content: "from A" }));
    const read = assertSuccess(await b.api(member, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true }));
    assert.deepEqual(
      read.events.map((e: ClientEvent) => [e.type, (e.message as { content: string }).content, e.id]),
      [["message", "from A", 0]],
    );
    assertError(await b.api(owner, "GET", "/events", { queue_id, last_event_id: -1 }), 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${queue_id}`, { queue_id });
    assertSuccess(await b.api(member, "DELETE", "/events", { queue_id }));
    assertError(await a.api(member, "GET", "/events", { queue_id, last_event_id: 0 }), 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${queue_id}`, { queue_id });
  });

  test("a long-poll on A wakes for a message sent through B", async () => {
    const { member, admin } = a.users;
    const id = await channel("wake");
    const { queue_id } = await a.register(member, { event_types: ["message"] });
    const polling = a.api(member, "GET", "/events", { queue_id, last_event_id: -1 });
    await until(() => a.services.queues.isWaiting(queue_id), "the poll on A to wait");
    assertSuccess(await b.api(admin, "POST", "/messages", { type: "stream", to: id, topic: "t", content: "through B" }));
    const reply = assertSuccess(await polling);
    assert.deepEqual(
      reply.events.map((e: ClientEvent) => (e.message as { content: string }).content),
      ["through B"],
    );
  });

  test("typing, presence and realm events cross from B to queues registered on A", async () => {
    const { member, admin, owner } = a.users;
    const { queue_id } = await a.register(member, { event_types: ["typing", "presence", "realm"], client_capabilities: { simplified_presence_events: true } });
    assertSuccess(await b.api(admin, "POST", "/typing", { type: "direct", op: "start", to: [member.id] }));
    assertSuccess(await b.api(admin, "POST", "/users/me/presence", { status: "active", new_user_input: true }));
    assertSuccess(await b.api(owner, "PATCH", "/realm", { description: "crossed" }));
    const events = assertSuccess(await a.api(member, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true })).events as ClientEvent[];
    assert.deepEqual(
      events.map((e) => e.type),
      ["typing", "presence", "realm"],
    );
    assert.deepEqual(events.map((e) => e.id), [0, 1, 2]);
    assert.equal((events[0]!.sender as { user_id: number }).user_id, admin.id);
    assert.deepEqual(events[2], { type: "realm", op: "update", property: "description", value: "crossed", id: 2 });
  });

  test("an event of the notifier (test helpers' events list) is still recorded on the process that notified it", async () => {
    a.clearEvents();
    assertSuccess(await a.api(a.users.admin, "POST", "/typing", { type: "direct", op: "stop", to: [a.users.member.id] }));
    assert.deepEqual(a.eventsFor(a.users.member.id, "typing", "stop").length, 1);
  });

  test("many waiting polls share the process's two Redis connections; a subscriber reconnecting loses no wake-up", async () => {
    const config = { ...testConfig(), redisKeyPrefix: `${a.services.config.redisKeyPrefix}conn:` };
    const h = redisHarness(TIMINGS, config);
    const admin = connectRedis(config, "test-admin");
    const list = async () => ((await admin.client("LIST")) as string).split("\n");
    const connections = async () => (await list()).filter((line) => line.includes(` name=${h.connectionName}`)).length;
    try {
      const before = await connections();
      const ids = await Promise.all(Array.from({ length: 200 }, (_, i) => create(h, 1000 + i)));
      const polls = await Promise.all(ids.map((id, i) => poll(h, id, 1000 + i, -1, false)));
      assert.ok(ids.every((id) => h.queues.isWaiting(id)));
      assert.equal(before, 2);
      assert.equal(await connections(), before);
      // The wake-up channel's connection drops (as on a network blip); what is sent meanwhile still wakes the polls.
      const subscriber = (await list()).find((line) => line.includes(` name=${h.connectionName}-wake `));
      assert.ok(subscriber);
      await admin.client("KILL", "ID", /\bid=(\d+)/.exec(subscriber)![1]!);
      h.notifier.notify(REALM, { type: "presence" }, ids.map((_, i) => 1000 + i));
      const answers = await Promise.all(polls.map((p) => p.answer));
      assert.deepEqual(new Set(answers.map((events) => JSON.stringify(events))), new Set([JSON.stringify([{ type: "presence", id: 0 }])]));
    } finally {
      admin.disconnect();
      await h.close();
    }
  });

  test("an expired queue is removed once, whichever process sweeps", async () => {
    const clock = { now: 5_000_000 };
    const config = { ...testConfig(), redisKeyPrefix: `${a.services.config.redisKeyPrefix}gc:` };
    const one = redisHarness(TIMINGS, config, clock);
    const two = one.peer!();
    try {
      const ids = await Promise.all([1, 2, 3].map(() => create(one, ALICE, filter(), 1000)));
      clock.now += 2000;
      const removed = await Promise.all([one.queues.sweep(), two.queues.sweep(), one.queues.sweep(), two.queues.sweep()]);
      assert.equal(removed.reduce((x, y) => x + y, 0), 3);
      for (const id of ids) await rejects(() => two.queues.open(id, ALICE, -1, true), "unknown", `Bad event queue ID: ${id}`);
      assert.deepEqual(await two.queues.queueIdsOf(ALICE), []);
    } finally {
      await two.queues.shutdown();
      await one.close();
    }
  });

  test("server A closing answers its waiting poll at once; the queue and its events live on for server B", async () => {
    const { member, admin } = a.users;
    const c = await a.startPeer();
    const { queue_id } = await a.register(member, { event_types: ["typing"] });
    const polling = c.api(member, "GET", "/events", { queue_id, last_event_id: -1 });
    await until(() => c.services.queues.isWaiting(queue_id), "the poll on C to wait");
    await c.close();
    const answered = assertSuccess(await polling);
    assert.deepEqual(answered.events, []);
    assertSuccess(await b.api(admin, "POST", "/typing", { type: "direct", op: "start", to: [member.id] }));
    const events = assertSuccess(await b.api(member, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true })).events as ClientEvent[];
    assert.deepEqual(events.map((e) => [e.type, e.op, e.id]), [["typing", "start", 0]]);
  });
});
