// API-level tests of scheduled messages (GET/POST /scheduled_messages,
// PATCH/DELETE /scheduled_messages/{id}) and message reminders (GET/POST
// /reminders, DELETE /reminders/{id}): the records and their events, the
// /register state, delivery by the worker and what a failed delivery does.
// Where the contract is silent, Zulip's behaviour
// (docs/zulip-behaviour/scheduled-reminders-snippets-views.md §1–2) decides;
// Parley's deliberate choices (no 10-minute lateness cutoff, a `reminders`
// `remove` event on delivery, the quote fence chosen from the quoted text,
// PATCH of a channel message's topic re-running the send checks) are tested
// as such.
//
// Time: the app's clock (services.now) is a variable that only moves forward.
// Every test schedules relative to the current `clock` and moves it to deliver;
// the server's own delivery timer uses the same clock, so tests assert on the
// resulting state (messages, GET lists, events), never on delivery counts.
// Each test uses fresh users, so rows other tests leave behind never show up
// in its lists, queues or messages.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import type { Notification } from "../src/events/notifier.ts";
import { deliverDueMessages } from "../src/workers/scheduled-delivery.ts";
import { assertError, assertSuccess, sortedIds, startTestApp, type ApiResponse, type Params, type RequestOptions, type TestApp, type TestUser } from "./helpers.ts";

// Tests read arbitrary fields of replies and events.
/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;
let sys: Record<string, number>;
let notificationBotId: number;
let realNow: () => number;
/** The clock every request and the delivery worker see. Only moves forward. */
let clock = Math.floor(Date.now() / 1000);

before(async () => {
  t = await startTestApp();
  realNow = t.services.now;
  t.services.now = () => clock;
  sys = await t.systemGroupIds();
  notificationBotId = (
    await db().selectFrom("users").select("id").where("realm_id", "=", t.realm.id).where("email_key", "=", "notification-bot@zulip.com").executeTakeFirstOrThrow()
  ).id;
});
after(async () => {
  if (!t) return;
  t.services.now = realNow;
  await t.close();
});

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
const db = () => t.services.storage.db;

const NOT_FUTURE = "Scheduled delivery time must be in the future.";
const SCHEDULED_NOT_FOUND = "Scheduled message does not exist";
const REMINDER_NOT_FOUND = "Reminder does not exist";
const NO_POST = "You do not have permission to post in this channel.";
const EXTERNAL_URL = "http://parley.test";
/** A script's User-Agent: its client name is "SchedulerScript", which does not mark messages read. */
const SCRIPT: RequestOptions = { headers: { "user-agent": "SchedulerScript/2.0 (cron)" } };
/** Zulip's typed_endpoint says `{name} is not valid JSON`; Parley's parser, for every endpoint, `Argument "{name}" is not valid JSON.` */
const notValidJson = (name: string) => new RegExp(`^(Argument "${name}" is not valid JSON\\.|${name} is not valid JSON)$`);

interface Channel {
  id: number;
  name: string;
}

let counter = 0;
/** A fresh user, so nothing another test scheduled shows up in their lists. */
async function newUser(prefix = "Planner", role: number = Role.MEMBER, options: { bot?: boolean; botOwnerId?: number } = {}): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${counter}`, role, options);
}

async function fullName(user: { id: number }): Promise<string> {
  return (await db().selectFrom("users").select("full_name").where("id", "=", user.id).executeTakeFirstOrThrow()).full_name;
}

/** Creates a channel with `creator` and `subscribers` subscribed (no Notification Bot messages). */
async function newChannel(creator: TestUser, subscribers: TestUser[] = [], params: Params = {}, name?: string): Promise<Channel> {
  counter += 1;
  const channelName = name ?? `schedchan${counter}`;
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name: channelName }],
      principals: [creator.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
      ...params,
    }),
  );
  const id = assertSuccess(await t.api(creator, "GET", "/get_stream_id", { stream: channelName })).stream_id as number;
  return { id, name: channelName };
}

async function setSendGroup(channel: Channel, groupName: string): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", `/streams/${channel.id}`, { can_send_message_group: { new: sys[groupName] } }));
}

function schedule(user: TestUser, params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
  return t.api(user, "POST", "/scheduled_messages", params, options);
}

/** Schedules and returns the ID, checking the reply is exactly {result, msg, scheduled_message_id}. */
async function scheduleOk(user: TestUser, params: Params, options: RequestOptions = {}): Promise<number> {
  const body = assertSuccess(await schedule(user, params, options));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "scheduled_message_id"]);
  assert.ok(Number.isInteger(body.scheduled_message_id) && body.scheduled_message_id > 0, JSON.stringify(body));
  return body.scheduled_message_id as number;
}

async function listScheduled(user: TestUser): Promise<any[]> {
  const body = assertSuccess(await t.api(user, "GET", "/scheduled_messages"));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "scheduled_messages"]);
  return body.scheduled_messages;
}

function patch(user: TestUser, id: number | string, params: Params, options: RequestOptions = {}): Promise<ApiResponse> {
  return t.api(user, "PATCH", `/scheduled_messages/${id}`, params, options);
}

async function patchOk(user: TestUser, id: number, params: Params, options: RequestOptions = {}): Promise<void> {
  const body = assertSuccess(await patch(user, id, params, options));
  assert.deepEqual(body, { result: "success", msg: "" });
}

function deleteScheduled(user: TestUser, id: number | string): Promise<ApiResponse> {
  return t.api(user, "DELETE", `/scheduled_messages/${id}`);
}

function remind(user: TestUser, params: Params): Promise<ApiResponse> {
  return t.api(user, "POST", "/reminders", params);
}

async function remindOk(user: TestUser, params: Params): Promise<number> {
  const body = assertSuccess(await remind(user, params));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "reminder_id", "result"]);
  assert.ok(Number.isInteger(body.reminder_id) && body.reminder_id > 0, JSON.stringify(body));
  return body.reminder_id as number;
}

async function listReminders(user: TestUser): Promise<any[]> {
  const body = assertSuccess(await t.api(user, "GET", "/reminders"));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "reminders", "result"]);
  return body.reminders;
}

function deleteReminder(user: TestUser, id: number | string): Promise<ApiResponse> {
  return t.api(user, "DELETE", `/reminders/${id}`);
}

/** Moves the clock to `ts` and runs the delivery worker (the server's timer may have run it already). */
async function deliverAt(ts: number): Promise<void> {
  assert.ok(ts >= clock, "the clock only moves forward");
  clock = ts;
  await deliverDueMessages(t.services);
}

async function post(user: TestUser, channel: Channel, topic: string, content: string): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", { type: "channel", to: channel.id, topic, content })).id as number;
}

async function dm(user: TestUser, to: TestUser[], content: string): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", { type: "direct", to: to.map((r) => r.id), content })).id as number;
}

/** Messages from `senderId` that `viewer` has, oldest first, with raw content. */
async function messagesFrom(viewer: TestUser, senderId: number): Promise<any[]> {
  const body = assertSuccess(
    await t.api(viewer, "GET", "/messages", { anchor: "newest", num_before: 200, num_after: 0, apply_markdown: false, narrow: [{ operator: "sender", operand: senderId }] }),
  );
  return body.messages;
}

/** One message as `viewer` sees it (rendered or raw), or undefined. */
async function fetchMessage(viewer: TestUser, id: number, applyMarkdown = false): Promise<any> {
  const body = assertSuccess(await t.api(viewer, "GET", "/messages", { message_ids: [id], apply_markdown: applyMarkdown }));
  return body.messages.find((m: any) => m.id === id);
}

/** Notifications about one scheduled message (add, update or remove). */
function scheduledNotifications(id: number): Notification[] {
  return t.events.filter((n) => {
    const e = n.event as any;
    if (e.type !== "scheduled_messages") return false;
    return e.scheduled_message_id === id || e.scheduled_message?.scheduled_message_id === id || e.scheduled_messages?.some((m: any) => m.scheduled_message_id === id);
  });
}

function reminderNotifications(id: number): Notification[] {
  return t.events.filter((n) => {
    const e = n.event as any;
    return e.type === "reminders" && (e.reminder_id === id || e.reminders?.some((r: any) => r.reminder_id === id));
  });
}

/** `message` events that reached `userId` for message `messageId`. */
function messageEventsFor(userId: number, messageId: number): any[] {
  return t.eventsFor(userId, "message").filter((e: any) => e.message.id === messageId);
}

function channelRecord(id: number, channel: Channel, topic: string, content: string, rendered: string, ts: number, failed = false) {
  return { scheduled_message_id: id, to: channel.id, type: "stream", content, rendered_content: rendered, topic, scheduled_delivery_timestamp: ts, failed };
}

function directRecord(id: number, to: number[], content: string, rendered: string, ts: number, failed = false) {
  return { scheduled_message_id: id, to, type: "private", content, rendered_content: rendered, scheduled_delivery_timestamp: ts, failed };
}

/** Python's str() of an aware UTC datetime: "2025-06-01 14:00:00+00:00". */
function pythonUtc(ts: number): string {
  const d = new Date(ts * 1000);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}+00:00`;
}

/** The Notification Bot's notice about a failed scheduled message (Zulip's send_failed_scheduled_message_notification). */
function failureNotice(ts: number, error: string): string {
  return `The message you scheduled for <time:${pythonUtc(ts)}>  was not sent because of the following error:\n\n> ${error}\n\n[View scheduled messages](#scheduled)`;
}

async function dbRow(id: number) {
  return db().selectFrom("scheduled_messages").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

// ---------------------------------------------------------------------------
// 1. POST /scheduled_messages and GET /scheduled_messages

describe("POST /scheduled_messages: scheduling and the GET record", () => {
  test("type channel: the reply has scheduled_message_id; GET shows the exact record (legacy type stream, topic); nothing is sent yet", async () => {
    const sender = await newUser();
    const reader = await newUser("Reader");
    const channel = await newChannel(sender, [reader]);
    const ts = clock + 3600;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "plans", content: "Hello **team**", scheduled_delivery_timestamp: ts });
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "plans", "Hello **team**", "<p>Hello <strong>team</strong></p>", ts)]);
    assert.deepEqual(await messagesFrom(reader, sender.id), []);
  });

  test("type stream with the legacy subject parameter: the same record", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    const ts = clock + 1000;
    const id = await scheduleOk(sender, { type: "stream", to: channel.id, subject: "legacy", content: "old style", scheduled_delivery_timestamp: ts });
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "legacy", "old style", "<p>old style</p>", ts)]);
  });

  test("type direct: to lists the recipient, type is private, no topic key (a topic is ignored)", async () => {
    const sender = await newUser();
    const other = await newUser("Recipient");
    const ts = clock + 500;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], topic: "ignored", content: "psst", scheduled_delivery_timestamp: ts });
    assert.deepEqual(await listScheduled(sender), [directRecord(id, [other.id], "psst", "<p>psst</p>", ts)]);
  });

  test("type private to a group: duplicates dropped, to lists the others ascending, the sender left out", async () => {
    const sender = await newUser();
    const a = await newUser("Group A");
    const b = await newUser("Group B");
    const ts = clock + 700;
    const id = await scheduleOk(sender, { type: "private", to: [b.id, a.id, b.id, sender.id], content: "group hello", scheduled_delivery_timestamp: ts });
    assert.deepEqual(await listScheduled(sender), [directRecord(id, sortedIds([a.id, b.id]), "group hello", "<p>group hello</p>", ts)]);
  });

  test("a direct message to yourself: to is [self]; to yourself and one other: [other]", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const ts = clock + 800;
    const self = await scheduleOk(sender, { type: "direct", to: [sender.id], content: "note to self", scheduled_delivery_timestamp: ts });
    const pair = await scheduleOk(sender, { type: "direct", to: [sender.id, other.id], content: "pair", scheduled_delivery_timestamp: ts + 1 });
    assert.deepEqual(await listScheduled(sender), [
      directRecord(self, [sender.id], "note to self", "<p>note to self</p>", ts),
      directRecord(pair, [other.id], "pair", "<p>pair</p>", ts + 1),
    ]);
  });

  test("topics are read as when sending: whitespace stripped, '(no topic)' is the empty topic", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    const ts = clock + 900;
    const spaced = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "  spaced out  ", content: "a", scheduled_delivery_timestamp: ts });
    const empty = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "(no topic)", content: "b", scheduled_delivery_timestamp: ts + 1 });
    const list = await listScheduled(sender);
    assert.deepEqual(
      list.map((m) => [m.scheduled_message_id, m.topic]),
      [
        [spaced, "spaced out"],
        [empty, ""],
      ],
    );
  });

  test("GET lists soonest first, equal times by ID; scheduled IDs are distinct", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const base = clock + 10_000;
    const third = await scheduleOk(sender, { type: "direct", to: [other.id], content: "third", scheduled_delivery_timestamp: base + 300 });
    const first = await scheduleOk(sender, { type: "direct", to: [other.id], content: "first", scheduled_delivery_timestamp: base + 100 });
    const second = await scheduleOk(sender, { type: "direct", to: [other.id], content: "second", scheduled_delivery_timestamp: base + 200 });
    const tie = await scheduleOk(sender, { type: "direct", to: [other.id], content: "tie", scheduled_delivery_timestamp: base + 100 });
    assert.equal(new Set([first, second, third, tie]).size, 4);
    assert.deepEqual(
      (await listScheduled(sender)).map((m) => [m.content, m.scheduled_delivery_timestamp]),
      [
        ["first", base + 100],
        ["tie", base + 100],
        ["second", base + 200],
        ["third", base + 300],
      ],
    );
  });
});

describe("POST /scheduled_messages: errors", () => {
  test("a time in the past or the present is refused; the next second is accepted", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    t.clearEvents();
    for (const ts of [clock, clock - 1, 0]) {
      assertError(await schedule(sender, { type: "direct", to: [other.id], content: "too late", scheduled_delivery_timestamp: ts }), 400, "BAD_REQUEST", NOT_FUTURE);
    }
    const channel = await newChannel(sender);
    assertError(await schedule(sender, { type: "channel", to: channel.id, topic: "t", content: "too late", scheduled_delivery_timestamp: clock }), 400, "BAD_REQUEST", NOT_FUTURE);
    assert.deepEqual(await listScheduled(sender), []);
    assert.deepEqual(t.eventsFor(sender.id, "scheduled_messages"), []);
    await scheduleOk(sender, { type: "direct", to: [other.id], content: "just in time", scheduled_delivery_timestamp: clock + 1 });
    assert.equal((await listScheduled(sender)).length, 1);
  });

  test("missing parameters: REQUEST_VARIABLE_MISSING with var_name", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const full: Params = { type: "direct", to: [other.id], content: "x", scheduled_delivery_timestamp: clock + 60 };
    for (const name of ["type", "to", "content", "scheduled_delivery_timestamp"]) {
      const params = { ...full };
      delete params[name];
      assertError(await schedule(sender, params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, { var_name: name });
    }
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("to must be JSON: a channel name or a bare email is refused; so is a JSON list of emails", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const channel = await newChannel(sender);
    assertError(await schedule(sender, { type: "channel", to: channel.name, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", notValidJson("to"));
    assertError(await schedule(sender, { type: "direct", to: other.email, content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", notValidJson("to"));
    assertError(await schedule(sender, { type: "direct", to: [other.email], content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST");
    assertError(
      await schedule(sender, { type: "direct", to: [other.id], content: "x", scheduled_delivery_timestamp: "tomorrow" }),
      400,
      "BAD_REQUEST",
      /^scheduled_delivery_timestamp is not (an integer|valid JSON)$/,
    );
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("a list for a channel message: 'Invalid data type for channel ID', even with one element", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    for (const to of [[channel.id], [channel.id, channel.id]]) {
      for (const type of ["channel", "stream"]) {
        assertError(await schedule(sender, { type, to, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid data type for channel ID");
      }
    }
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("an integer for a direct message: 'Invalid data type for recipients'; an empty list: 'Message must have recipients'", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    for (const type of ["direct", "private"]) {
      assertError(await schedule(sender, { type, to: other.id, content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid data type for recipients");
    }
    assertError(await schedule(sender, { type: "direct", to: [], content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Message must have recipients");
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("an unknown channel ID: STREAM_DOES_NOT_EXIST with stream_id", async () => {
    const sender = await newUser();
    assertError(
      await schedule(sender, { type: "channel", to: 987654, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 }),
      400,
      "STREAM_DOES_NOT_EXIST",
      "Channel with ID '987654' does not exist",
      { stream_id: 987654 },
    );
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("an unknown user ID: 'Invalid user ID N'", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    assertError(await schedule(sender, { type: "direct", to: [other.id, 987654], content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid user ID 987654");
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("a channel message without a topic: 'Missing topic'", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    assertError(await schedule(sender, { type: "channel", to: channel.id, content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Missing topic");
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("blank content is refused as when sending", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    assertError(await schedule(sender, { type: "direct", to: [other.id], content: "   ", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Message must not be empty");
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("a guest cannot schedule to a channel they are not subscribed to; once subscribed they can", async () => {
    const guest = await newUser("Guest", Role.GUEST);
    const channel = await newChannel(u().admin);
    const params = { type: "channel", to: channel.id, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 };
    assertError(await schedule(guest, params), 400, "BAD_REQUEST", `Not authorized to send to channel '${channel.name}'`);
    assert.deepEqual(await listScheduled(guest), []);
    assertSuccess(await t.api(u().admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [guest.id], send_new_subscription_messages: false }));
    await scheduleOk(guest, params);
  });

  test("a channel restricted by can_send_message_group: 'You do not have permission to post in this channel.'", async () => {
    const sender = await newUser();
    const channel = await newChannel(u().admin, [sender]);
    await setSendGroup(channel, "role:administrators");
    assertError(await schedule(sender, { type: "channel", to: channel.id, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", NO_POST);
    assert.deepEqual(await listScheduled(sender), []);
    // The administrator may.
    const admin = await newUser("Admin", Role.ADMINISTRATOR);
    await scheduleOk(admin, { type: "channel", to: channel.id, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 });
  });

  test("an archived channel: 'Not authorized to send to channel'", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    assertSuccess(await t.api(u().owner, "DELETE", `/streams/${channel.id}`));
    assertError(
      await schedule(sender, { type: "channel", to: channel.id, topic: "t", content: "x", scheduled_delivery_timestamp: clock + 60 }),
      400,
      "BAD_REQUEST",
      `Not authorized to send to channel '${channel.name}'`,
    );
  });

  test("an invalid type: 'Invalid type'", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    for (const type of ["email", "Direct", ""]) {
      assertError(await schedule(sender, { type, to: [other.id], content: "x", scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid type");
    }
    assert.deepEqual(await listScheduled(sender), []);
  });
});

// ---------------------------------------------------------------------------
// 2. Events and POST /register

describe("scheduled_messages events and /register", () => {
  test("add, update and remove reach the sender's queue only, each with its exact shape", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const senderQueue = (await t.register(sender, { event_types: ["scheduled_messages"] })).queue_id as string;
    const otherQueue = (await t.register(other, { event_types: ["scheduled_messages"] })).queue_id as string;
    t.clearEvents();
    const ts = clock + 4000;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "first", scheduled_delivery_timestamp: ts });
    await patchOk(sender, id, { content: "*second*", scheduled_delivery_timestamp: ts + 10 });
    assertSuccess(await deleteScheduled(sender, id));

    const queued = (await t.queuedEvents(sender, senderQueue)).map(({ id: _eventId, ...rest }: any) => rest);
    assert.deepEqual(queued, [
      { type: "scheduled_messages", op: "add", scheduled_messages: [directRecord(id, [other.id], "first", "<p>first</p>", ts)] },
      { type: "scheduled_messages", op: "update", scheduled_message: directRecord(id, [other.id], "*second*", "<p><em>second</em></p>", ts + 10) },
      { type: "scheduled_messages", op: "remove", scheduled_message_id: id },
    ]);
    assert.deepEqual(await t.queuedEvents(other, otherQueue), []);
    const notifications = scheduledNotifications(id);
    assert.deepEqual(
      notifications.map((n) => [n.event.op, n.userIds]),
      [
        ["add", [sender.id]],
        ["update", [sender.id]],
        ["remove", [sender.id]],
      ],
    );
  });

  test("POST /register: scheduled_messages is the GET list (failed ones included); absent unless asked for; per user", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const channel = await newChannel(sender);
    const ts = clock + 5000;
    const b = await scheduleOk(sender, { type: "direct", to: [other.id], content: "later", scheduled_delivery_timestamp: ts + 50 });
    const a = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "t", content: "sooner", scheduled_delivery_timestamp: ts });
    const expected = [channelRecord(a, channel, "t", "sooner", "<p>sooner</p>", ts), directRecord(b, [other.id], "later", "<p>later</p>", ts + 50)];
    assert.deepEqual(await listScheduled(sender), expected);
    const state = await t.register(sender, { fetch_event_types: ["scheduled_messages"] });
    assert.deepEqual(state.scheduled_messages, expected);
    assert.equal("scheduled_messages" in (await t.register(sender, { fetch_event_types: ["alert_words"] })), false);
    // The recipient sees none of it.
    assert.deepEqual(await listScheduled(other), []);
    assert.deepEqual((await t.register(other, { fetch_event_types: ["scheduled_messages"] })).scheduled_messages, []);
  });
});

// ---------------------------------------------------------------------------
// 3. PATCH /scheduled_messages/{id}

describe("PATCH /scheduled_messages/{id}: the checks, in Zulip's order", () => {
  let sender: TestUser;
  let other: TestUser;
  let channel: Channel;
  let id: number;
  let ts: number;
  before(async () => {
    sender = await newUser("Patcher");
    other = await newUser("Other");
    channel = await newChannel(sender);
    ts = clock + 50_000;
    id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "t", content: "unchanged", scheduled_delivery_timestamp: ts });
  });
  const unchanged = () => channelRecord(id, channel, "t", "unchanged", "<p>unchanged</p>", ts);

  test("1. no parameter: 'Nothing to change', even for an unknown ID", async () => {
    assertError(await patch(sender, id, {}), 400, "BAD_REQUEST", "Nothing to change");
    assertError(await patch(sender, 987654321, {}), 400, "BAD_REQUEST", "Nothing to change");
    assertError(await patch(other, id, {}), 400, "BAD_REQUEST", "Nothing to change");
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
  });

  test("2. type without to: 'Recipient required when updating type of scheduled message.', before the lookup", async () => {
    for (const type of ["direct", "private", "channel", "stream"]) {
      assertError(await patch(sender, id, { type, topic: "x" }), 400, "BAD_REQUEST", "Recipient required when updating type of scheduled message.");
    }
    assertError(await patch(sender, 987654321, { type: "direct" }), 400, "BAD_REQUEST", "Recipient required when updating type of scheduled message.");
    // It comes before the time check.
    assertError(await patch(sender, id, { type: "direct", scheduled_delivery_timestamp: 1 }), 400, "BAD_REQUEST", "Recipient required when updating type of scheduled message.");
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
  });

  test("3. type channel/stream without topic: 'Topic required when updating scheduled message type to channel.'", async () => {
    for (const type of ["channel", "stream"]) {
      assertError(await patch(sender, id, { type, to: channel.id }), 400, "BAD_REQUEST", "Topic required when updating scheduled message type to channel.");
    }
    assertError(await patch(sender, 987654321, { type: "channel", to: channel.id }), 400, "BAD_REQUEST", "Topic required when updating scheduled message type to channel.");
    assertError(
      await patch(sender, id, { type: "stream", to: channel.id, scheduled_delivery_timestamp: 1 }),
      400,
      "BAD_REQUEST",
      "Topic required when updating scheduled message type to channel.",
    );
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
  });

  test("4. a timestamp in the past or present: 'Scheduled delivery time must be in the future.', before the lookup", async () => {
    for (const when of [clock, clock - 100]) {
      assertError(await patch(sender, id, { scheduled_delivery_timestamp: when }), 400, "BAD_REQUEST", NOT_FUTURE);
      assertError(await patch(sender, id, { content: "new", scheduled_delivery_timestamp: when }), 400, "BAD_REQUEST", NOT_FUTURE);
    }
    assertError(await patch(sender, 987654321, { scheduled_delivery_timestamp: clock }), 400, "BAD_REQUEST", NOT_FUTURE);
    assertError(await patch(other, id, { scheduled_delivery_timestamp: clock }), 400, "BAD_REQUEST", NOT_FUTURE);
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
  });

  test("5. unknown ID, someone else's, a reminder's: 404 'Scheduled message does not exist' (code BAD_REQUEST)", async () => {
    assertError(await patch(sender, 987654321, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await patch(sender, 2 ** 40, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await patch(other, id, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await patch(u().owner, id, { scheduled_delivery_timestamp: ts + 1 }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    const target = await post(sender, channel, "t", "remind me");
    const reminder = await remindOk(sender, { message_id: target, scheduled_delivery_timestamp: ts });
    assertError(await patch(sender, reminder, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await patch(sender, reminder, { scheduled_delivery_timestamp: ts + 5 }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
    assert.equal((await listReminders(sender))[0].scheduled_delivery_timestamp, ts);
  });

  test("a failed recipient check changes nothing and sends no update event", async () => {
    t.clearEvents();
    assertError(await patch(sender, id, { to: 987654, content: "moved" }), 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '987654' does not exist", { stream_id: 987654 });
    assertError(await patch(sender, id, { to: [channel.id] }), 400, "BAD_REQUEST", "Invalid data type for channel ID");
    assertError(await patch(sender, id, { type: "channel", to: [channel.id], topic: "x" }), 400, "BAD_REQUEST", "Invalid data type for channel ID");
    assertError(await patch(sender, id, { type: "direct", to: other.id }), 400, "BAD_REQUEST", "Invalid data type for recipients");
    assertError(await patch(sender, id, { type: "direct", to: [987654] }), 400, "BAD_REQUEST", "Invalid user ID 987654");
    assertError(await patch(sender, id, { type: "channel", to: 987654, topic: "x" }), 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '987654' does not exist", {
      stream_id: 987654,
    });
    assertError(await patch(sender, id, { to: "not json" }), 400, "BAD_REQUEST", notValidJson("to"));
    assertError(await patch(sender, id, { type: "email", to: [other.id] }), 400, "BAD_REQUEST", "Invalid type");
    assertError(await patch(sender, id, { content: " " }), 400, "BAD_REQUEST", "Message must not be empty");
    assert.deepEqual(await listScheduled(sender), [unchanged()]);
    assert.deepEqual(scheduledNotifications(id), []);
  });
});

describe("PATCH /scheduled_messages/{id}: edits", () => {
  test("content: stored and re-rendered, the rest kept; the update event carries the full record to the sender only", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    const ts = clock + 6000;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "t", content: "plain", scheduled_delivery_timestamp: ts });
    t.clearEvents();
    await patchOk(sender, id, { content: "now **bold**" });
    const expected = channelRecord(id, channel, "t", "now **bold**", "<p>now <strong>bold</strong></p>", ts);
    assert.deepEqual(await listScheduled(sender), [expected]);
    const notifications = scheduledNotifications(id);
    assert.equal(notifications.length, 1);
    assert.deepEqual(notifications[0]!.userIds, [sender.id]);
    assert.deepEqual(notifications[0]!.event, { type: "scheduled_messages", op: "update", scheduled_message: expected });
  });

  test("scheduled_delivery_timestamp alone: the row moves in GET order", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const ts = clock + 7000;
    const a = await scheduleOk(sender, { type: "direct", to: [other.id], content: "a", scheduled_delivery_timestamp: ts });
    const b = await scheduleOk(sender, { type: "direct", to: [other.id], content: "b", scheduled_delivery_timestamp: ts + 100 });
    await patchOk(sender, a, { scheduled_delivery_timestamp: ts + 200 });
    assert.deepEqual(await listScheduled(sender), [directRecord(b, [other.id], "b", "<p>b</p>", ts + 100), directRecord(a, [other.id], "a", "<p>a</p>", ts + 200)]);
  });

  test("topic alone: a channel message changes topic; for a direct message it is ignored (success, unchanged, update event)", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const channel = await newChannel(sender);
    const ts = clock + 7500;
    const inChannel = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "old", content: "c", scheduled_delivery_timestamp: ts });
    const direct = await scheduleOk(sender, { type: "direct", to: [other.id], content: "d", scheduled_delivery_timestamp: ts + 1 });
    t.clearEvents();
    await patchOk(sender, inChannel, { topic: "  new topic " });
    await patchOk(sender, direct, { topic: "whatever" });
    assert.deepEqual(await listScheduled(sender), [
      channelRecord(inChannel, channel, "new topic", "c", "<p>c</p>", ts),
      directRecord(direct, [other.id], "d", "<p>d</p>", ts + 1),
    ]);
    assert.deepEqual(
      scheduledNotifications(direct).map((n) => n.event),
      [{ type: "scheduled_messages", op: "update", scheduled_message: directRecord(direct, [other.id], "d", "<p>d</p>", ts + 1) }],
    );
  });

  test("Parley: topic alone on a channel message re-runs the send checks; a timestamp alone does not", async () => {
    const sender = await newUser();
    const channel = await newChannel(u().admin, [sender]);
    const ts = clock + 8000;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "before", content: "c", scheduled_delivery_timestamp: ts });
    await setSendGroup(channel, "role:administrators");
    try {
      t.clearEvents();
      assertError(await patch(sender, id, { topic: "after" }), 400, "BAD_REQUEST", NO_POST);
      assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "before", "c", "<p>c</p>", ts)]);
      assert.deepEqual(scheduledNotifications(id), []);
      await patchOk(sender, id, { scheduled_delivery_timestamp: ts + 5 });
      assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "before", "c", "<p>c</p>", ts + 5)]);
    } finally {
      await setSendGroup(channel, "role:everyone");
    }
    await patchOk(sender, id, { topic: "after" });
    assert.equal((await listScheduled(sender))[0].topic, "after");
  });

  test("channel → direct → channel: type, to and topic follow the edit; the old topic is dropped", async () => {
    const sender = await newUser();
    const a = await newUser("Dest A");
    const b = await newUser("Dest B");
    const first = await newChannel(sender);
    const second = await newChannel(sender);
    const ts = clock + 9000;
    const id = await scheduleOk(sender, { type: "channel", to: first.id, topic: "orig", content: "travels", scheduled_delivery_timestamp: ts });
    await patchOk(sender, id, { type: "direct", to: [a.id], topic: "ignored for direct" });
    assert.deepEqual(await listScheduled(sender), [directRecord(id, [a.id], "travels", "<p>travels</p>", ts)]);
    await patchOk(sender, id, { type: "private", to: [b.id, a.id] });
    assert.deepEqual(await listScheduled(sender), [directRecord(id, sortedIds([a.id, b.id]), "travels", "<p>travels</p>", ts)]);
    await patchOk(sender, id, { type: "channel", to: second.id, topic: "back" });
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, second, "back", "travels", "<p>travels</p>", ts)]);
    await patchOk(sender, id, { type: "stream", to: first.id, topic: "home", content: "home again" });
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, first, "home", "home again", "<p>home again</p>", ts)]);
  });

  test("to alone: a channel message moves channel keeping its topic; a direct message gets new recipients", async () => {
    const sender = await newUser();
    const a = await newUser("Dest A");
    const b = await newUser("Dest B");
    const first = await newChannel(sender);
    const second = await newChannel(sender);
    const ts = clock + 9500;
    const inChannel = await scheduleOk(sender, { type: "channel", to: first.id, topic: "kept", content: "c", scheduled_delivery_timestamp: ts });
    const direct = await scheduleOk(sender, { type: "direct", to: [a.id], content: "d", scheduled_delivery_timestamp: ts + 1 });
    await patchOk(sender, inChannel, { to: second.id });
    await patchOk(sender, direct, { to: [b.id, b.id] });
    assert.deepEqual(await listScheduled(sender), [channelRecord(inChannel, second, "kept", "c", "<p>c</p>", ts), directRecord(direct, [b.id], "d", "<p>d</p>", ts + 1)]);
    assertError(await patch(sender, direct, { to: second.id }), 400, "BAD_REQUEST", "Invalid data type for recipients");
    assertError(await patch(sender, direct, { to: [987654] }), 400, "BAD_REQUEST", "Invalid user ID 987654");
  });
});

// ---------------------------------------------------------------------------
// 4. DELETE /scheduled_messages/{id}

describe("DELETE /scheduled_messages/{id}", () => {
  test("plain success; a remove event to the sender only; gone from GET; then 404", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const ts = clock + 3000;
    const keep = await scheduleOk(sender, { type: "direct", to: [other.id], content: "keep", scheduled_delivery_timestamp: ts });
    const drop = await scheduleOk(sender, { type: "direct", to: [other.id], content: "drop", scheduled_delivery_timestamp: ts });
    t.clearEvents();
    assert.deepEqual(assertSuccess(await deleteScheduled(sender, drop)), { result: "success", msg: "" });
    assert.deepEqual(await listScheduled(sender), [directRecord(keep, [other.id], "keep", "<p>keep</p>", ts)]);
    assert.deepEqual(
      scheduledNotifications(drop).map((n) => [n.event, n.userIds]),
      [[{ type: "scheduled_messages", op: "remove", scheduled_message_id: drop }, [sender.id]]],
    );
    assertError(await deleteScheduled(sender, drop), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await patch(sender, drop, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    // Deleting never sends it.
    await deliverAt(ts);
    assert.deepEqual(
      (await messagesFrom(other, sender.id)).map((m) => m.content),
      ["keep"],
    );
  });

  test("unknown ID, someone else's, a reminder's: 404 'Scheduled message does not exist'; nothing deleted", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const ts = clock + 3000;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "mine", scheduled_delivery_timestamp: ts });
    const target = await dm(sender, [other], "remember this");
    const reminder = await remindOk(sender, { message_id: target, scheduled_delivery_timestamp: ts });
    t.clearEvents();
    assertError(await deleteScheduled(sender, 987654321), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await deleteScheduled(sender, 2 ** 40), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await deleteReminder(sender, 2 ** 40), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    for (const user of [other, u().admin, u().owner]) assertError(await deleteScheduled(user, id), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assertError(await deleteScheduled(sender, reminder), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    assert.equal((await listScheduled(sender)).length, 1);
    assert.equal((await listReminders(sender)).length, 1);
    assert.deepEqual(scheduledNotifications(id), []);
    assert.deepEqual(reminderNotifications(reminder), []);
  });
});

// ---------------------------------------------------------------------------
// 5. Delivery

describe("delivery", () => {
  test("a channel message: not a second early; at the time it is sent as the sender with content, topic and client; subscribers get it", async () => {
    const sender = await newUser();
    const reader = await newUser("Reader");
    const outsider = await newUser("Outsider");
    const channel = await newChannel(sender, [reader]);
    const due = clock + 120;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "launch", content: "Liftoff **now**", scheduled_delivery_timestamp: due, client: "website" });
    t.clearEvents();

    await deliverAt(due - 1);
    assert.deepEqual(await messagesFrom(reader, sender.id), []);
    assert.equal((await listScheduled(sender)).length, 1);
    assert.deepEqual(scheduledNotifications(id), []);

    await deliverAt(due);
    const sent = await messagesFrom(reader, sender.id);
    assert.equal(sent.length, 1);
    const message = sent[0]!;
    assert.equal(message.sender_id, sender.id);
    assert.equal(message.type, "stream");
    assert.equal(message.stream_id, channel.id);
    assert.equal(message.display_recipient, channel.name);
    assert.equal(message.subject, "launch");
    assert.equal(message.content, "Liftoff **now**");
    assert.equal(message.client, "website");
    assert.equal(message.timestamp, due);
    assert.equal((await fetchMessage(reader, message.id, true)).content, "<p>Liftoff <strong>now</strong></p>");
    // The sent message has its own ID.
    assert.notEqual(message.id, id);
    // Subscribers' queues get it; the outsider's do not.
    assert.equal(messageEventsFor(reader.id, message.id).length, 1);
    assert.equal(messageEventsFor(sender.id, message.id).length, 1);
    assert.equal(messageEventsFor(outsider.id, message.id).length, 0);
    // The row leaves GET and /register, with a remove event.
    assert.deepEqual(await listScheduled(sender), []);
    assert.deepEqual((await t.register(sender, { fetch_event_types: ["scheduled_messages"] })).scheduled_messages, []);
    assert.deepEqual(
      scheduledNotifications(id).map((n) => [n.event, n.userIds]),
      [[{ type: "scheduled_messages", op: "remove", scheduled_message_id: id }, [sender.id]]],
    );
  });

  test("the sent message's ID is not the scheduled message's ID", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "distinct ids", scheduled_delivery_timestamp: due });
    // Make sure the next message ID cannot coincide with the scheduled one by chance.
    let latest = await dm(sender, [other], "filler");
    while (latest < id) latest = await dm(sender, [other], "filler");
    await deliverAt(due);
    const sent = (await messagesFrom(other, sender.id)).filter((m) => m.content === "distinct ids");
    assert.equal(sent.length, 1);
    assert.notEqual(sent[0]!.id, id);
    assert.ok(sent[0]!.id > latest);
  });

  test("a direct message: every participant gets it; a group keeps its members", async () => {
    const sender = await newUser();
    const a = await newUser("Dest A");
    const b = await newUser("Dest B");
    const due = clock + 60;
    await scheduleOk(sender, { type: "direct", to: [a.id, b.id], content: "group hello", scheduled_delivery_timestamp: due });
    t.clearEvents();
    await deliverAt(due);
    const [message, ...rest] = await messagesFrom(a, sender.id);
    assert.equal(rest.length, 0);
    assert.equal(message.type, "private");
    assert.equal(message.content, "group hello");
    assert.deepEqual(sortedIds(message.display_recipient.map((r: any) => r.id)), sortedIds([sender.id, a.id, b.id]));
    for (const user of [sender, a, b]) assert.equal(messageEventsFor(user.id, message.id).length, 1, `message event for ${user.id}`);
    assert.deepEqual(await fetchMessage(b, message.id).then((m) => m.flags), []);
  });

  test("the sender's read flag: read_by_sender true / false, and the client-based default", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const channel = await newChannel(sender);
    const due = clock + 60;
    const cases: [string, Params, RequestOptions, string[]][] = [
      ["explicit true from a script", { read_by_sender: true }, SCRIPT, ["read"]],
      ["explicit false from the web app", { read_by_sender: false, client: "website" }, {}, []],
      ["default from the web app", { client: "website" }, {}, ["read"]],
      ["default from a script", {}, SCRIPT, []],
    ];
    for (const [label, extra, options] of cases) {
      await scheduleOk(sender, { type: "direct", to: [other.id], content: `dm ${label}`, scheduled_delivery_timestamp: due, ...extra }, options);
      await scheduleOk(sender, { type: "channel", to: channel.id, topic: "flags", content: `channel ${label}`, scheduled_delivery_timestamp: due, ...extra }, options);
    }
    // A direct message to oneself is unread by default, whatever the client.
    await scheduleOk(sender, { type: "direct", to: [sender.id], content: "self default", scheduled_delivery_timestamp: due, client: "website" });
    await scheduleOk(sender, { type: "direct", to: [sender.id], content: "self explicit", scheduled_delivery_timestamp: due, read_by_sender: true });
    await deliverAt(due);
    const mine = await messagesFrom(sender, sender.id);
    const flagsOf = (content: string) => {
      const found = mine.filter((m) => m.content === content);
      assert.equal(found.length, 1, content);
      return found[0].flags;
    };
    for (const [label, , , flags] of cases) {
      assert.deepEqual(flagsOf(`dm ${label}`), flags, `dm ${label}`);
      assert.deepEqual(flagsOf(`channel ${label}`), flags, `channel ${label}`);
    }
    assert.deepEqual(flagsOf("self default"), []);
    assert.deepEqual(flagsOf("self explicit"), ["read"]);
    // The recipient's copies are unread.
    const theirs = await messagesFrom(other, sender.id);
    assert.equal(theirs.length, cases.length);
    assert.ok(theirs.every((m) => m.flags.length === 0));
    assert.equal(mine.find((m) => m.content === "dm default from a script").client, "SchedulerScript");
  });

  test("the client is that of the last edit", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "from where", scheduled_delivery_timestamp: due, client: "website" });
    await patchOk(sender, id, { content: "from the phone" }, { headers: { "user-agent": "ZulipMobile/27.0 (Android 14)" } });
    await deliverAt(due);
    const [message] = await messagesFrom(other, sender.id);
    assert.equal(message.content, "from the phone");
    assert.equal(message.client, "ZulipMobile");
  });

  test("Parley: a row that fell due long ago is delivered, not failed (no 10-minute cutoff)", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "better late", scheduled_delivery_timestamp: due });
    t.clearEvents();
    await deliverAt(due + 3 * 3600);
    const [message, ...rest] = await messagesFrom(other, sender.id);
    assert.equal(rest.length, 0);
    assert.equal(message.content, "better late");
    assert.equal(message.timestamp, due + 3 * 3600);
    assert.deepEqual(await listScheduled(sender), []);
    assert.deepEqual(await messagesFrom(sender, notificationBotId), []);
    assert.deepEqual(
      scheduledNotifications(id).map((n) => n.event.op),
      ["remove"],
    );
  });

  test("exactly once: delivering again sends nothing; PATCH says 'already sent'; DELETE still finds the delivered row", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "only once", scheduled_delivery_timestamp: due });
    await deliverAt(due);
    await deliverAt(due + 1);
    await deliverAt(due + 120);
    assert.equal((await messagesFrom(other, sender.id)).length, 1);
    const messageEvents = t.eventsFor(other.id, "message").filter((e: any) => e.message.sender_id === sender.id);
    assert.equal(messageEvents.length, 1);

    assertError(await patch(sender, id, { content: "too late" }), 400, "BAD_REQUEST", "Scheduled message was already sent");
    assertError(await patch(sender, id, { scheduled_delivery_timestamp: clock + 100 }), 400, "BAD_REQUEST", "Scheduled message was already sent");
    // Someone else still gets "does not exist".
    assertError(await patch(other, id, { content: "x" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
    t.clearEvents();
    assertSuccess(await deleteScheduled(sender, id));
    assert.deepEqual(
      scheduledNotifications(id).map((n) => n.event),
      [{ type: "scheduled_messages", op: "remove", scheduled_message_id: id }],
    );
    // The sent message stays.
    assert.equal((await messagesFrom(other, sender.id)).length, 1);
    assertError(await deleteScheduled(sender, id), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
  });
});

// ---------------------------------------------------------------------------
// 6. Failed delivery

describe("failed delivery", () => {
  test("the sender lost can_send_message_group: failed, update event, Notification Bot notice; PATCH needs a time; a new time makes it pending and it is sent then", async () => {
    const sender = await newUser();
    const reader = await newUser("Reader");
    const channel = await newChannel(u().admin, [sender, reader]);
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "news", content: "big news", scheduled_delivery_timestamp: due });
    await setSendGroup(channel, "role:administrators");
    t.clearEvents();
    await deliverAt(due);

    const failed = channelRecord(id, channel, "news", "big news", "<p>big news</p>", due, true);
    assert.deepEqual(await listScheduled(sender), [failed]);
    assert.deepEqual((await t.register(sender, { fetch_event_types: ["scheduled_messages"] })).scheduled_messages, [failed]);
    assert.deepEqual(await messagesFrom(reader, sender.id), []);
    assert.deepEqual(
      scheduledNotifications(id).map((n) => [n.event, n.userIds]),
      [[{ type: "scheduled_messages", op: "update", scheduled_message: failed }, [sender.id]]],
    );
    const notices = await messagesFrom(sender, notificationBotId);
    assert.equal(notices.length, 1);
    const notice = notices[0]!;
    assert.equal(notice.type, "private");
    assert.deepEqual(sortedIds(notice.display_recipient.map((r: any) => r.id)), sortedIds([notificationBotId, sender.id]));
    assert.ok(notice.content.includes("was not sent because of the following error"), notice.content);
    assert.ok(notice.content.includes(NO_POST), notice.content);
    assert.ok(notice.content.includes("[View scheduled messages](#scheduled)"), notice.content);
    assert.equal(notice.content, failureNotice(due, NO_POST));
    assert.deepEqual(notice.flags, []);

    // Failed rows are not retried by the worker.
    await setSendGroup(channel, "role:everyone");
    await deliverAt(due + 600);
    assert.deepEqual(await messagesFrom(reader, sender.id), []);
    assert.equal((await messagesFrom(sender, notificationBotId)).length, 1);

    // Editing a failed message needs a new time.
    assertError(await patch(sender, id, { content: "bigger news" }), 400, "BAD_REQUEST", NOT_FUTURE);
    assertError(await patch(sender, id, { topic: "other" }), 400, "BAD_REQUEST", NOT_FUTURE);
    assert.deepEqual(await listScheduled(sender), [failed]);

    const retry = clock + 300;
    t.clearEvents();
    await patchOk(sender, id, { scheduled_delivery_timestamp: retry });
    const pending = channelRecord(id, channel, "news", "big news", "<p>big news</p>", retry, false);
    assert.deepEqual(await listScheduled(sender), [pending]);
    assert.deepEqual(
      scheduledNotifications(id).map((n) => n.event),
      [{ type: "scheduled_messages", op: "update", scheduled_message: pending }],
    );
    await deliverAt(retry - 1);
    assert.deepEqual(await messagesFrom(reader, sender.id), []);
    await deliverAt(retry);
    const sent = await messagesFrom(reader, sender.id);
    assert.deepEqual(
      sent.map((m) => [m.subject, m.content, m.timestamp]),
      [["news", "big news", retry]],
    );
    assert.deepEqual(await listScheduled(sender), []);
    assert.equal((await messagesFrom(sender, notificationBotId)).length, 1, "no second notice");
  });

  test("a failed message made pending with a time alone fails again if the cause remains (a second notice)", async () => {
    const sender = await newUser();
    const channel = await newChannel(u().admin, [sender]);
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "t", content: "stubborn", scheduled_delivery_timestamp: due });
    await setSendGroup(channel, "role:administrators");
    try {
      await deliverAt(due);
      assert.equal((await listScheduled(sender))[0].failed, true);
      const retry = clock + 60;
      await patchOk(sender, id, { scheduled_delivery_timestamp: retry });
      assert.equal((await listScheduled(sender))[0].failed, false);
      await deliverAt(retry);
      assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "t", "stubborn", "<p>stubborn</p>", retry, true)]);
      assert.deepEqual(
        (await messagesFrom(sender, notificationBotId)).map((m) => m.content),
        [failureNotice(due, NO_POST), failureNotice(retry, NO_POST)],
      );
    } finally {
      await setSendGroup(channel, "role:everyone");
    }
  });

  test("an archived channel: fails with \"Not authorized to send to channel\"; moved to another channel with a new time it is sent there", async () => {
    const sender = await newUser();
    const channel = await newChannel(sender);
    const fallback = await newChannel(sender);
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "channel", to: channel.id, topic: "t", content: "archived away", scheduled_delivery_timestamp: due });
    assertSuccess(await t.api(u().owner, "DELETE", `/streams/${channel.id}`));
    await deliverAt(due);
    const error = `Not authorized to send to channel '${channel.name}'`;
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, channel, "t", "archived away", "<p>archived away</p>", due, true)]);
    assert.deepEqual(
      (await messagesFrom(sender, notificationBotId)).map((m) => m.content),
      [failureNotice(due, error)],
    );
    // A new channel without a new time is still refused.
    assertError(await patch(sender, id, { to: fallback.id }), 400, "BAD_REQUEST", NOT_FUTURE);
    const retry = clock + 60;
    await patchOk(sender, id, { to: fallback.id, scheduled_delivery_timestamp: retry });
    assert.deepEqual(await listScheduled(sender), [channelRecord(id, fallback, "t", "archived away", "<p>archived away</p>", retry)]);
    await deliverAt(retry);
    const sent = (await messagesFrom(sender, sender.id)).filter((m) => m.content === "archived away");
    assert.deepEqual(
      sent.map((m) => [m.stream_id, m.subject]),
      [[fallback.id, "t"]],
    );
    assert.deepEqual(await listScheduled(sender), []);
  });

  test("a recipient deactivated before delivery: fails with \"'email' is no longer using Zulip.\" and a notice", async () => {
    const sender = await newUser();
    const leaving = await newUser("Leaving");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [leaving.id], content: "too late for you", scheduled_delivery_timestamp: due });
    const email = assertSuccess(await t.api(sender, "GET", `/users/${leaving.id}`)).user.email as string;
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${leaving.id}`));
    t.clearEvents();
    await deliverAt(due);
    const error = `'${email}' is no longer using Zulip.`;
    const failed = directRecord(id, [leaving.id], "too late for you", "<p>too late for you</p>", due, true);
    assert.deepEqual(await listScheduled(sender), [failed]);
    assert.deepEqual(
      scheduledNotifications(id).map((n) => n.event),
      [{ type: "scheduled_messages", op: "update", scheduled_message: failed }],
    );
    assert.deepEqual(
      (await messagesFrom(sender, notificationBotId)).map((m) => m.content),
      [failureNotice(due, error)],
    );
    assert.deepEqual(await messagesFrom(sender, sender.id), []);
  });

  test("a deactivated sender: the row fails silently (no update event, no notice)", async () => {
    const sender = await newUser();
    const other = await newUser("Other");
    const due = clock + 60;
    const id = await scheduleOk(sender, { type: "direct", to: [other.id], content: "from beyond", scheduled_delivery_timestamp: due });
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${sender.id}`));
    t.clearEvents();
    await deliverAt(due);
    const row = await dbRow(id);
    assert.equal(row.failed, true);
    assert.equal(row.delivered, false);
    assert.equal(row.failure_message, "Account is deactivated");
    assert.deepEqual(scheduledNotifications(id), []);
    assert.deepEqual(await messagesFrom(other, sender.id), []);
    assert.equal(
      t.events.filter((n) => n.event.type === "message" && n.userIds.includes(sender.id)).length,
      0,
      "no Notification Bot notice",
    );
  });
});

// ---------------------------------------------------------------------------
// 7. Reminders

describe("reminders: creating and the record", () => {
  test("a channel message without a note: reminder_id; GET shows the exact record; no scheduled message", async () => {
    const user = await newUser();
    const author = await newUser("Author");
    const channel = await newChannel(author, [user], {}, `Remind Room ${++counter}`);
    const target = await post(author, channel, "lunch plans", "Pizza at noon?");
    const ts = clock + 3600;
    t.clearEvents();
    const id = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts });
    const slug = `${channel.id}-${channel.name.replace(/ /g, "-")}`;
    const content =
      `You requested a reminder for #**${channel.name}>lunch plans@${target}**.\n\n` +
      `@_**${await fullName(author)}|${author.id}** [said](${EXTERNAL_URL}/#narrow/channel/${slug}/topic/lunch.20plans/near/${target}):\n` +
      "```quote\nPizza at noon?\n```";
    const list = await listReminders(user);
    assert.equal(list.length, 1);
    const { rendered_content: rendered, ...rest } = list[0];
    assert.deepEqual(rest, { reminder_id: id, to: [user.id], type: "private", content, scheduled_delivery_timestamp: ts, failed: false, reminder_target_message_id: target });
    assert.equal(typeof rendered, "string");
    assert.ok(rendered.includes("<blockquote>") && rendered.includes("Pizza at noon?"), rendered);
    assert.deepEqual(await listScheduled(user), []);
    assert.deepEqual(
      reminderNotifications(id).map((n) => [n.event, n.userIds]),
      [[{ type: "reminders", op: "add", reminders: [list[0]] }, [user.id]]],
    );
    assert.deepEqual(await listReminders(author), []);
  });

  test("a note: after 'Note:' and a quote marker; leading blank lines and trailing whitespace dropped; '' means no note", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    const target = await post(user, channel, "t", "the text");
    const ts = clock + 3600;
    const withNote = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts, note: "\n\nCall Bob back   \n" });
    const emptyNote = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts + 1, note: "" });
    const url = `${EXTERNAL_URL}/#narrow/channel/${channel.id}-${channel.name}/topic/t/near/${target}`;
    const quote = `@_**${await fullName(user)}|${user.id}** [said](${url}):\n\`\`\`quote\nthe text\n\`\`\``;
    assert.deepEqual(
      (await listReminders(user)).map((r) => [r.reminder_id, r.content]),
      [
        [withNote, `You requested a reminder for #**${channel.name}>t@${target}**. Note:\n > Call Bob back\n\n${quote}`],
        [emptyNote, `You requested a reminder for #**${channel.name}>t@${target}**.\n\n${quote}`],
      ],
    );
    // The record has no note field of its own.
    assert.equal("note" in (await listReminders(user))[0], false);
  });

  test("a direct message: 'the following direct message' and a dm link; a group's link ends in -group", async () => {
    const user = await newUser();
    const author = await newUser("Author");
    const third = await newUser("Third");
    const one = await dm(author, [user], "private words");
    const group = await dm(author, [user, third], "group words");
    const ts = clock + 3600;
    const a = await remindOk(user, { message_id: one, scheduled_delivery_timestamp: ts });
    const b = await remindOk(user, { message_id: group, scheduled_delivery_timestamp: ts + 1, note: "reply" });
    const mention = `@_**${await fullName(author)}|${author.id}**`;
    assert.deepEqual(
      (await listReminders(user)).map((r) => [r.reminder_id, r.content]),
      [
        [
          a,
          `You requested a reminder for the following direct message.\n\n${mention} [said](${EXTERNAL_URL}/#narrow/dm/${sortedIds([author.id, user.id]).join(",")}/near/${one}):\n\`\`\`quote\nprivate words\n\`\`\``,
        ],
        [
          b,
          `You requested a reminder for the following direct message. Note:\n > reply\n\n${mention} [said](${EXTERNAL_URL}/#narrow/dm/${sortedIds([author.id, user.id, third.id]).join(",")}-group/near/${group}):\n\`\`\`quote\ngroup words\n\`\`\``,
        ],
      ],
    );
  });

  test("polls and todo lists are named, not quoted", async () => {
    const user = await newUser();
    const author = await newUser("Author");
    const poll = await dm(author, [user], "/poll Lunch where?\nPizza\nSushi");
    const todo = await dm(author, [user], "/todo Chores");
    const ts = clock + 3600;
    await remindOk(user, { message_id: poll, scheduled_delivery_timestamp: ts });
    await remindOk(user, { message_id: todo, scheduled_delivery_timestamp: ts + 1 });
    const mention = `@_**${await fullName(author)}|${author.id}**`;
    const dmSlug = sortedIds([author.id, user.id]).join(",");
    assert.deepEqual(
      (await listReminders(user)).map((r) => r.content),
      [
        `You requested a reminder for the following direct message.\n\n${mention} [sent](${EXTERNAL_URL}/#narrow/dm/${dmSlug}/near/${poll}) a poll.`,
        `You requested a reminder for the following direct message.\n\n${mention} [sent](${EXTERNAL_URL}/#narrow/dm/${dmSlug}/near/${todo}) a todo list.`,
      ],
    );
  });

  test("Parley: the quote fence is longer than any fence in the quoted message", async () => {
    const user = await newUser();
    const code = "Try this:\n```\nrm -rf /tmp/x\n```\nand\n  `````js\nlonger\n  `````";
    const target = await dm(user, [user], code);
    await remindOk(user, { message_id: target, scheduled_delivery_timestamp: clock + 3600 });
    const [reminder] = await listReminders(user);
    const url = `${EXTERNAL_URL}/#narrow/dm/${user.id}/near/${target}`;
    assert.equal(
      reminder.content,
      `You requested a reminder for the following direct message.\n\n@_**${await fullName(user)}|${user.id}** [said](${url}):\n\`\`\`\`\`\`quote\n${code}\n\`\`\`\`\`\``,
    );
  });

  test("a topic that would break #**channel>topic**: the Markdown link fallback, with the URL encoded as Zulip does", async () => {
    const user = await newUser();
    const channel = await newChannel(user);
    const topic = "a*b [x] & y";
    const target = await post(user, channel, topic, "odd topic");
    await remindOk(user, { message_id: target, scheduled_delivery_timestamp: clock + 3600 });
    // Zulip's hash_util_encode: urllib.parse.quote(s, safe=b""), then "." → "%2E" and "%" → ".".
    const encodedTopic = "a.2Ab.20.5Bx.5D.20.26.20y";
    const href = `#narrow/channel/${channel.id}-${channel.name}/topic/${encodedTopic}/near/${target}`;
    const [reminder] = await listReminders(user);
    assert.equal(
      reminder.content,
      `You requested a reminder for [#${channel.name} > a&#42;b &#91;x&#93; &amp; y @ 💬](${href}).\n\n` +
        `@_**${await fullName(user)}|${user.id}** [said](${EXTERNAL_URL}/${href}):\n\`\`\`quote\nodd topic\n\`\`\``,
    );
  });

  test("a long message is truncated so the whole reminder fits max_message_length", async () => {
    const user = await newUser();
    const long = "x".repeat(10_000);
    const target = await dm(user, [user], long);
    await remindOk(user, { message_id: target, scheduled_delivery_timestamp: clock + 3600 });
    const [reminder] = await listReminders(user);
    assert.equal([...reminder.content].length, 10_000);
    assert.ok(reminder.content.endsWith("x\n[message truncated]\n```"), reminder.content.slice(-60));
    assert.ok(reminder.content.startsWith("You requested a reminder for the following direct message.\n\n"));
  });
});

describe("reminders: errors", () => {
  test("note length: 1000 characters allowed (after trimming), 1001 refused", async () => {
    const user = await newUser();
    const target = await dm(user, [user], "noted");
    const ts = clock + 3600;
    await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts, note: "n".repeat(1000) + "   \n" });
    assertError(await remind(user, { message_id: target, scheduled_delivery_timestamp: ts, note: "n".repeat(1001) }), 400, "BAD_REQUEST", "Maximum reminder note length: 1000 characters");
    assert.equal((await listReminders(user)).length, 1);
  });

  test("a time in the past or present, checked before the message", async () => {
    const user = await newUser();
    const target = await dm(user, [user], "when");
    for (const ts of [clock, clock - 60]) {
      assertError(await remind(user, { message_id: target, scheduled_delivery_timestamp: ts }), 400, "BAD_REQUEST", NOT_FUTURE);
      assertError(await remind(user, { message_id: 987654321, scheduled_delivery_timestamp: ts }), 400, "BAD_REQUEST", NOT_FUTURE);
    }
    assert.deepEqual(await listReminders(user), []);
  });

  test("missing message_id or scheduled_delivery_timestamp: REQUEST_VARIABLE_MISSING", async () => {
    const user = await newUser();
    const target = await dm(user, [user], "missing");
    assertError(await remind(user, { scheduled_delivery_timestamp: clock + 60 }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'message_id' argument", { var_name: "message_id" });
    assertError(await remind(user, { message_id: target }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'scheduled_delivery_timestamp' argument", {
      var_name: "scheduled_delivery_timestamp",
    });
    assert.deepEqual(await listReminders(user), []);
  });

  test("a message the user cannot read, or none at all: 'Invalid message(s)'", async () => {
    const user = await newUser();
    const a = await newUser("Stranger A");
    const b = await newUser("Stranger B");
    const othersDm = await dm(a, [b], "not for you");
    const secret = await newChannel(a, [b], { invite_only: true });
    const secretMessage = await post(a, secret, "t", "secret");
    for (const messageId of [othersDm, secretMessage, 987654321]) {
      assertError(await remind(user, { message_id: messageId, scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid message(s)");
    }
    // A guest cannot remind themselves of a public channel message they cannot read.
    const guest = await newUser("Guest", Role.GUEST);
    const open = await newChannel(a);
    const openMessage = await post(a, open, "t", "public");
    assertError(await remind(guest, { message_id: openMessage, scheduled_delivery_timestamp: clock + 60 }), 400, "BAD_REQUEST", "Invalid message(s)");
    // A member can: public history is readable without subscribing.
    await remindOk(user, { message_id: openMessage, scheduled_delivery_timestamp: clock + 60 });
    assert.equal((await listReminders(user)).length, 1);
    assert.deepEqual(await listReminders(guest), []);
  });
});

describe("reminders: delivery, events, /register, DELETE", () => {
  test("at the time: a Notification Bot DM to the user, unread, with the link and the quote; remove event; gone from GET and /register", async () => {
    const user = await newUser();
    const author = await newUser("Author");
    const channel = await newChannel(author, [user]);
    const target = await post(author, channel, "deadline", "Report due Friday");
    const due = clock + 600;
    const id = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: due, note: "start early" });
    const [record] = await listReminders(user);
    assert.deepEqual((await t.register(user, { fetch_event_types: ["reminders"] })).reminders, [record]);
    t.clearEvents();

    await deliverAt(due - 1);
    assert.deepEqual(await messagesFrom(user, notificationBotId), []);
    await deliverAt(due);
    const [message, ...rest] = await messagesFrom(user, notificationBotId);
    assert.equal(rest.length, 0);
    assert.equal(message.type, "private");
    assert.equal(message.client, "Internal");
    assert.equal(message.timestamp, due);
    assert.deepEqual(sortedIds(message.display_recipient.map((r: any) => r.id)), sortedIds([notificationBotId, user.id]));
    assert.deepEqual(message.flags, []);
    assert.equal(
      message.content,
      `You requested a reminder for #**${channel.name}>deadline@${target}**. Note:\n > start early\n\n` +
        `@_**${await fullName(author)}|${author.id}** [said](${EXTERNAL_URL}/#narrow/channel/${channel.id}-${channel.name}/topic/deadline/near/${target}):\n` +
        "```quote\nReport due Friday\n```",
    );
    assert.equal(message.content, record.content);
    assert.equal((await fetchMessage(user, message.id, true)).content, record.rendered_content);
    assert.equal(messageEventsFor(user.id, message.id).length, 1);
    // Nobody else hears of it; the author does not get the message.
    assert.equal(messageEventsFor(author.id, message.id).length, 0);
    assert.notEqual(message.id, id);

    assert.deepEqual(await listReminders(user), []);
    assert.deepEqual((await t.register(user, { fetch_event_types: ["reminders"] })).reminders, []);
    assert.deepEqual(
      reminderNotifications(id).map((n) => [n.event, n.userIds]),
      [[{ type: "reminders", op: "remove", reminder_id: id }, [user.id]]],
    );
    // A reminder is no scheduled message: no scheduled_messages events.
    assert.deepEqual(scheduledNotifications(id), []);
    // Once only.
    await deliverAt(due + 60);
    assert.equal((await messagesFrom(user, notificationBotId)).length, 1);
  });

  test("the text is written afresh at delivery from the edited message; a deleted message leaves the stored text", async () => {
    const user = await newUser();
    const author = await newUser("Author");
    const edited = await dm(author, [user], "first draft");
    const deleted = await dm(author, [user], "soon gone");
    const due = clock + 120;
    await remindOk(user, { message_id: edited, scheduled_delivery_timestamp: due });
    await remindOk(user, { message_id: deleted, scheduled_delivery_timestamp: due + 1 });
    const stored = (await listReminders(user)).map((r) => r.content);
    assert.ok(stored[0].includes("first draft"));
    assertSuccess(await t.api(author, "PATCH", `/messages/${edited}`, { content: "final version" }));
    assertSuccess(await t.api(author, "DELETE", `/messages/${deleted}`));
    // The stored text is not rewritten before delivery.
    assert.deepEqual(
      (await listReminders(user)).map((r) => r.content),
      stored,
    );
    await deliverAt(due + 1);
    const contents = (await messagesFrom(user, notificationBotId)).map((m) => m.content);
    assert.deepEqual(contents, [stored[0]!.replace("first draft", "final version"), stored[1]]);
  });

  test("/register: reminders (soonest first) and max_reminder_note_length", async () => {
    const user = await newUser();
    const target = await dm(user, [user], "register me");
    const ts = clock + 3600;
    const later = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts + 10 });
    const sooner = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts });
    const list = await listReminders(user);
    assert.deepEqual(
      list.map((r) => r.reminder_id),
      [sooner, later],
    );
    const state = await t.register(user, { fetch_event_types: ["reminders", "realm"] });
    assert.deepEqual(state.reminders, list);
    assert.equal(state.max_reminder_note_length, 1000);
    assert.equal("reminders" in (await t.register(user, { fetch_event_types: ["scheduled_messages"] })), false);
    // Reminders and scheduled messages are listed apart.
    assert.deepEqual(await listScheduled(user), []);
  });

  test("DELETE: plain success and a remove event; unknown, others' and scheduled-message IDs: 404 'Reminder does not exist'", async () => {
    const user = await newUser();
    const other = await newUser("Other");
    const target = await dm(user, [other], "delete me");
    const ts = clock + 3600;
    const id = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: ts });
    const othersReminder = await remindOk(other, { message_id: target, scheduled_delivery_timestamp: ts });
    const scheduled = await scheduleOk(user, { type: "direct", to: [other.id], content: "scheduled", scheduled_delivery_timestamp: ts });
    t.clearEvents();
    assertError(await deleteReminder(user, 987654321), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    assertError(await deleteReminder(user, othersReminder), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    for (const someone of [other, u().admin, u().owner]) assertError(await deleteReminder(someone, id), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    assertError(await deleteReminder(user, scheduled), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    assert.equal((await listScheduled(user)).length, 1);
    assert.equal((await listReminders(other)).length, 1);

    assert.deepEqual(assertSuccess(await deleteReminder(user, id)), { result: "success", msg: "" });
    assert.deepEqual(await listReminders(user), []);
    assert.deepEqual(
      reminderNotifications(id).map((n) => [n.event, n.userIds]),
      [[{ type: "reminders", op: "remove", reminder_id: id }, [user.id]]],
    );
    assertError(await deleteReminder(user, id), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    // Deleted reminders are never sent.
    await deliverAt(ts);
    assert.deepEqual(await messagesFrom(user, notificationBotId), []);
    assert.equal((await messagesFrom(other, notificationBotId)).length, 1);
  });

  test("a delivered reminder can still be deleted", async () => {
    const user = await newUser();
    const target = await dm(user, [user], "done");
    const due = clock + 60;
    const id = await remindOk(user, { message_id: target, scheduled_delivery_timestamp: due });
    await deliverAt(due);
    assert.equal((await messagesFrom(user, notificationBotId)).length, 1);
    t.clearEvents();
    assertSuccess(await deleteReminder(user, id));
    assert.deepEqual(
      reminderNotifications(id).map((n) => n.event),
      [{ type: "reminders", op: "remove", reminder_id: id }],
    );
    assert.equal((await messagesFrom(user, notificationBotId)).length, 1);
  });
});

// ---------------------------------------------------------------------------
// 8. Roles and ownership

describe("roles and ownership", () => {
  test("guests, bots, moderators, administrators and owners schedule messages and reminders for themselves", async () => {
    const member = await newUser("Friend");
    const channel = await newChannel(member);
    const people: [string, TestUser][] = [
      ["guest", await newUser("Guest", Role.GUEST)],
      ["bot", await newUser("Helper Bot", Role.MEMBER, { bot: true, botOwnerId: member.id })],
      ["moderator", await newUser("Moderator", Role.MODERATOR)],
      ["administrator", await newUser("Admin", Role.ADMINISTRATOR)],
      ["owner", await newUser("Owner", Role.OWNER)],
    ];
    const due = clock + 300;
    for (const [label, who] of people) {
      assertSuccess(await t.api(u().owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [who.id], send_new_subscription_messages: false }));
      const direct = await scheduleOk(who, { type: "direct", to: [member.id], content: `dm from ${label}`, scheduled_delivery_timestamp: due });
      const inChannel = await scheduleOk(who, { type: "channel", to: channel.id, topic: label, content: `post from ${label}`, scheduled_delivery_timestamp: due + 1 });
      const target = await dm(member, [who], `hello ${label}`);
      const reminder = await remindOk(who, { message_id: target, scheduled_delivery_timestamp: due });
      assert.deepEqual(
        (await listScheduled(who)).map((m) => m.scheduled_message_id),
        [direct, inChannel],
        label,
      );
      assert.deepEqual(
        (await listReminders(who)).map((r) => [r.reminder_id, r.to]),
        [[reminder, [who.id]]],
        label,
      );
      await patchOk(who, direct, { content: `edited dm from ${label}` });
    }
    await deliverAt(due + 1);
    for (const [label, who] of people) {
      assert.deepEqual(await listScheduled(who), [], label);
      assert.deepEqual(await listReminders(who), [], label);
      assert.deepEqual(
        (await messagesFrom(member, who.id)).map((m) => m.content),
        [`edited dm from ${label}`, `post from ${label}`],
        label,
      );
      assert.equal((await messagesFrom(who, notificationBotId)).length, 1, label);
    }
  });

  test("nobody reads, edits or deletes another user's scheduled messages or reminders, not even administrators", async () => {
    const owner = await newUser("Private Person");
    const other = await newUser("Other");
    const ts = clock + 3600;
    const id = await scheduleOk(owner, { type: "direct", to: [other.id], content: "mine only", scheduled_delivery_timestamp: ts });
    const target = await dm(owner, [other], "shared");
    const reminder = await remindOk(owner, { message_id: target, scheduled_delivery_timestamp: ts });
    const before = { scheduled: await listScheduled(owner), reminders: await listReminders(owner) };
    for (const someone of [other, u().moderator, u().admin, u().owner]) {
      assert.ok(!(await listScheduled(someone)).some((m) => m.scheduled_message_id === id));
      assert.ok(!(await listReminders(someone)).some((r) => r.reminder_id === reminder));
      const state = await t.register(someone, { fetch_event_types: ["scheduled_messages", "reminders"] });
      assert.ok(!state.scheduled_messages.some((m: any) => m.scheduled_message_id === id));
      assert.ok(!state.reminders.some((r: any) => r.reminder_id === reminder));
      assertError(await patch(someone, id, { content: "hijacked" }), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
      assertError(await deleteScheduled(someone, id), 404, "BAD_REQUEST", SCHEDULED_NOT_FOUND);
      assertError(await deleteReminder(someone, reminder), 404, "BAD_REQUEST", REMINDER_NOT_FOUND);
    }
    assert.deepEqual({ scheduled: await listScheduled(owner), reminders: await listReminders(owner) }, before);
  });
});
