// Widgets: /poll and /todo messages and the "widget" submessage Zulip gives
// them (exact content text), widget_content on POST /messages, POST
// /submessage (who may, Zulip's validation messages for polls and todo
// lists, errors in Zulip's order), the `submessage` event and who receives
// it, `submessages` in every message object (GET /messages, GET
// /messages/{id}, `message` events), widgets refusing content edits, and
// submessages going with a deleted message. See
// docs/zulip-behaviour/widgets-reports.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, sortedIds, startTestApp, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

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
  const name = unique("widgets");
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

async function send(sender: TestUser, channel: Channel, content: string, extra: Params = {}): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.id, topic: "widgets", content, ...extra })).id as number;
}

async function sendDm(sender: TestUser, to: TestUser[], content: string): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((x) => x.id), content })).id as number;
}

/** The message as `user` gets it from GET /messages/{id}. */
async function fetchOne(user: TestUser, messageId: number): Promise<Json> {
  return assertSuccess(await t.api(user, "GET", `/messages/${messageId}`)).message;
}

async function submessagesOf(user: TestUser, messageId: number): Promise<Json[]> {
  return (await fetchOne(user, messageId)).submessages;
}

const submessage = (user: TestUser, messageId: number | string, content: unknown, msgType = "widget"): Promise<ApiResponse> =>
  t.api(user, "POST", "/submessage", { message_id: messageId, msg_type: msgType, content: typeof content === "string" ? content : JSON.stringify(content) });

/** The widget submessage's content as Zulip writes it (Python's json.dumps). */
const pollContent = (question: string, options: string[]) =>
  `{"widget_type": "poll", "extra_data": {"question": ${JSON.stringify(question)}, "options": [${options.map((o) => JSON.stringify(o)).join(", ")}]}}`;

function submessageNotifications(): { userIds: number[]; event: Json }[] {
  return t.events.filter((n) => n.event.type === "submessage").map((n) => ({ userIds: sortedIds(n.userIds), event: n.event }));
}

// ---------------------------------------------------------------------------

describe("widgets from the message content", () => {
  test("/poll: the question on the first line, options after it (list markers and blank lines dropped), from the sender", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const content = "/poll What is your favorite color?\n\nRed\nGreen  \n\n   Blue\n - Yellow\n* Purple";
    const id = await send(u().member, channel, content);
    const message = await fetchOne(u().moderator, id);
    assert.equal(message.content, assertSuccess(await t.api(u().member, "GET", `/messages/${id}`)).message.content);
    assert.deepEqual(message.submessages, [
      {
        id: message.submessages[0].id,
        message_id: id,
        sender_id: u().member.id,
        msg_type: "widget",
        content: pollContent("What is your favorite color?", ["Red", "Green", "Blue", "Yellow", "Purple"]),
      },
    ]);
    assert.equal(typeof message.submessages[0].id, "number");
    // The raw content is kept as written.
    assert.equal(assertSuccess(await t.api(u().member, "GET", `/messages/${id}`)).raw_content, content);
  });

  test("/poll alone, and options without a question", async () => {
    const channel = await newChannel(u().member);
    const bare = await send(u().member, channel, "/poll");
    assert.deepEqual(
      (await submessagesOf(u().member, bare)).map((s) => s.content),
      [pollContent("", [])],
    );
    const noQuestion = await send(u().member, channel, "/poll\nTea\nCoffee");
    assert.deepEqual(
      (await submessagesOf(u().member, noQuestion)).map((s) => JSON.parse(s.content)),
      [{ widget_type: "poll", extra_data: { question: "", options: ["Tea", "Coffee"] } }],
    );
  });

  test("/todo: the title, then tasks split at the first ': ' into task and description", async () => {
    const channel = await newChannel(u().member);
    const cases: [string, Json][] = [
      ["/todo", { task_list_title: "", tasks: [] }],
      ["/todo   School Work", { task_list_title: "School Work", tasks: [] }],
      ["/todo\nTask", { task_list_title: "", tasks: [{ task: "Task", desc: "" }] }],
      [
        "/todo Example Task List Title\n\n    task without description\ntask: with description    \n\n - task as list : also with description",
        {
          task_list_title: "Example Task List Title",
          tasks: [
            { task: "task without description", desc: "" },
            { task: "task", desc: "with description" },
            { task: "task as list", desc: "also with description" },
          ],
        },
      ],
      [
        "/todo School Work\nchemistry homework: assignment 2\nstudy for english test: pages 56-67: all",
        {
          task_list_title: "School Work",
          tasks: [
            { task: "chemistry homework", desc: "assignment 2" },
            { task: "study for english test", desc: "pages 56-67: all" },
          ],
        },
      ],
    ];
    for (const [content, extra] of cases) {
      const id = await send(u().member, channel, content);
      const [widget, ...rest] = await submessagesOf(u().member, id);
      assert.deepEqual(rest, [], content);
      assert.equal(widget.msg_type, "widget");
      assert.deepEqual(JSON.parse(widget.content), { widget_type: "todo", extra_data: extra }, content);
    }
    // Python's json.dumps: ", " and ": " separators, keys in Zulip's order.
    const id = await send(u().member, channel, "/todo Plan\nbuy: milk");
    assert.equal((await submessagesOf(u().member, id))[0].content, '{"widget_type": "todo", "extra_data": {"task_list_title": "Plan", "tasks": [{"task": "buy", "desc": "milk"}]}}');
  });

  test("text outside printable ASCII is escaped in the stored JSON, as Python writes it", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "/poll Café? ☕\n🍵 tea\n\"quoted\"");
    const [widget] = await submessagesOf(u().member, id);
    assert.equal(widget.content, '{"widget_type": "poll", "extra_data": {"question": "Caf\\u00e9? \\u2615", "options": ["\\ud83c\\udf75 tea", "\\"quoted\\""]}}');
    assert.deepEqual(JSON.parse(widget.content).extra_data, { question: "Café? ☕", options: ["🍵 tea", '"quoted"'] });
  });

  test("ordinary messages get no submessage, nor do other slash words or /poll later in the text", async () => {
    const channel = await newChannel(u().member);
    for (const content of ["this is an ordinary message", "/bogus_command", "/me shrugs", "use /poll", "/pollster what?", "/todos", " /poll with a leading space"]) {
      const id = await send(u().member, channel, content);
      assert.deepEqual(await submessagesOf(u().member, id), [], content);
    }
  });

  test("direct messages become widgets too, and group direct messages", async () => {
    const id = await sendDm(u().member, [u().moderator], "/poll Lunch?\nPizza\nSalad");
    assert.deepEqual(
      (await submessagesOf(u().moderator, id)).map((s) => [s.sender_id, s.content]),
      [[u().member.id, pollContent("Lunch?", ["Pizza", "Salad"])]],
    );
    const group = await sendDm(u().moderator, [u().member, u().admin], "/todo Chores");
    assert.deepEqual(JSON.parse((await submessagesOf(u().admin, group))[0].content).extra_data, { task_list_title: "Chores", tasks: [] });
  });

  test("the message event carries the submessage, to every recipient's queue", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const queue = (await t.register(u().moderator, { event_types: ["message"] })).queue_id as string;
    const id = await send(u().member, channel, "/poll Ready?\nYes\nNo");
    const events = await t.queuedEvents(u().moderator, queue);
    const event = events.find((e) => e.type === "message" && e.message.id === id);
    assert.ok(event, JSON.stringify(events));
    const stored = await submessagesOf(u().moderator, id);
    assert.deepEqual(event.message.submessages, stored);
    assert.equal(stored.length, 1);
    // Ordinary messages carry an empty list.
    const plain = await send(u().member, channel, "no widget");
    const plainEvent = (await t.queuedEvents(u().moderator, queue)).find((e) => e.type === "message" && e.message.id === plain);
    assert.deepEqual(plainEvent.message.submessages, []);
  });

  test("GET /messages lists each message's submessages in ID order (one page, several widgets)", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const poll = await send(u().member, channel, "/poll A or B?\nA\nB");
    const plain = await send(u().member, channel, "between");
    const todo = await send(u().moderator, channel, "/todo List");
    assertSuccess(await submessage(u().moderator, poll, { type: "vote", key: "canned,0", vote: 1 }));
    assertSuccess(await submessage(u().member, todo, { type: "new_task", key: 0, task: "write", desc: "", completed: false }));
    assertSuccess(await submessage(u().member, poll, { type: "new_option", idx: 1, option: "C" }));
    const page = assertSuccess(await t.api(u().member, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "channel", operand: channel.id }] }));
    const byId = new Map(page.messages.map((m: Json) => [m.id, m.submessages]));
    assert.deepEqual(byId.get(plain), []);
    const pollSubs = byId.get(poll) as Json[];
    assert.deepEqual(
      pollSubs.map((s) => [s.sender_id, s.msg_type, JSON.parse(s.content)]),
      [
        [u().member.id, "widget", { widget_type: "poll", extra_data: { question: "A or B?", options: ["A", "B"] } }],
        [u().moderator.id, "widget", { type: "vote", key: "canned,0", vote: 1 }],
        [u().member.id, "widget", { type: "new_option", idx: 1, option: "C" }],
      ],
    );
    assert.deepEqual(
      pollSubs.map((s) => s.id),
      [...pollSubs.map((s) => s.id)].sort((a, b) => a - b),
    );
    assert.ok(pollSubs.every((s) => s.message_id === poll));
    assert.deepEqual(
      (byId.get(todo) as Json[]).map((s) => s.sender_id),
      [u().moderator.id, u().member.id],
    );
    // message_ids fetches carry them too.
    const byIds = assertSuccess(await t.api(u().member, "GET", "/messages", { message_ids: [poll] }));
    assert.deepEqual(byIds.messages[0].submessages, pollSubs);
  });
});

describe("widget_content on POST /messages", () => {
  test("a zform widget given explicitly; it overrides a /poll in the content", async () => {
    const channel = await newChannel(u().member);
    const zform = { type: "choices", heading: "Options:", choices: [{ short_name: "a", long_name: "Apple", reply: "apple" }] };
    const id = await send(u().member, channel, "/poll ignored?", { widget_content: JSON.stringify({ widget_type: "zform", extra_data: zform }) });
    const message = await fetchOne(u().member, id);
    assert.equal(message.submessages.length, 1);
    assert.equal(message.submessages[0].msg_type, "widget");
    assert.deepEqual(JSON.parse(message.submessages[0].content), { widget_type: "zform", extra_data: zform });
    // Bots use it the same way.
    const botChannel = await newChannel(u().admin, [u().bot]);
    const botId = await send(u().bot, botChannel, "does-not-matter", { widget_content: JSON.stringify({ widget_type: "zform", extra_data: { type: "choices", heading: "", choices: [] } }) });
    assert.equal((await submessagesOf(u().admin, botId))[0].sender_id, u().bot.id);
  });

  test("Zulip's errors, each prefixed 'Widgets: ', and nothing sent", async () => {
    const channel = await newChannel(u().member);
    const before = await db().selectFrom("messages").select(db().fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    const bad = async (widgetContent: string, msg: string) =>
      assertError(await t.api(u().member, "POST", "/messages", { type: "stream", to: channel.id, topic: "w", content: "x", widget_content: widgetContent }), 400, "BAD_REQUEST", msg);
    await bad("{{{{{{", "Widgets: API programmer sent invalid JSON content");
    await bad("5", "Widgets: widget_content is not a dict");
    await bad(JSON.stringify({ color: "red", foo: "bar", x: 2 }), "Widgets: widget_type is not in widget_content");
    await bad(JSON.stringify({ widget_type: "whatever" }), "Widgets: extra_data is not in widget_content");
    await bad(JSON.stringify({ widget_type: "zform", extra_data: 4 }), "Widgets: extra_data is not a dict");
    await bad(JSON.stringify({ widget_type: "bogus", extra_data: {} }), "Widgets: unknown widget type: bogus");
    // Polls and todo lists come only from the content.
    await bad(JSON.stringify({ widget_type: "poll", extra_data: { question: "q", options: [] } }), "Widgets: unknown widget type: poll");
    await bad(JSON.stringify({ widget_type: "zform", extra_data: {} }), "Widgets: zform is missing type field");
    await bad(JSON.stringify({ widget_type: "zform", extra_data: { type: "bogus" } }), "Widgets: unknown zform type: bogus");
    const zform = (extra: Json) => JSON.stringify({ widget_type: "zform", extra_data: { type: "choices", ...extra } });
    await bad(zform({}), "Widgets: heading key is missing from extra_data");
    await bad(zform({ heading: "whatever" }), "Widgets: choices key is missing from extra_data");
    await bad(zform({ heading: "whatever", choices: 99 }), 'Widgets: extra_data["choices"] is not a list');
    await bad(zform({ heading: "whatever", choices: [99] }), 'Widgets: extra_data["choices"][0] is not a dict');
    await bad(zform({ heading: "whatever", choices: [{ long_name: "foo", reply: "bar" }] }), 'Widgets: short_name key is missing from extra_data["choices"][0]');
    await bad(zform({ heading: 7, choices: [] }), 'Widgets: extra_data["heading"] is not a string');
    const afterCount = await db().selectFrom("messages").select(db().fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    assert.equal(Number(afterCount.n), Number(before.n));
  });
});

describe("POST /submessage", () => {
  test("a vote: success reply, stored after the widget, the event to everyone who sees the message", async () => {
    const outsider = await newUser("Outsider");
    const channel = await newChannel(u().member, [u().moderator, u().admin]);
    const id = await send(u().member, channel, "/poll Tabs or spaces?\nTabs\nSpaces");
    t.clearEvents();
    const content = JSON.stringify({ type: "vote", key: "canned,1", vote: 1 });
    const reply = await submessage(u().moderator, id, content);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    assert.equal(reply.status, 200);
    const stored = await submessagesOf(u().member, id);
    assert.equal(stored.length, 2);
    assert.deepEqual(stored[1], { id: stored[1].id, message_id: id, sender_id: u().moderator.id, msg_type: "widget", content });
    assert.ok(stored[1].id > stored[0].id);
    const notes = submessageNotifications();
    assert.equal(notes.length, 1);
    assert.deepEqual(notes[0]!.event, { type: "submessage", msg_type: "widget", message_id: id, submessage_id: stored[1].id, sender_id: u().moderator.id, content });
    assert.deepEqual(notes[0]!.userIds, sortedIds([u().member.id, u().moderator.id, u().admin.id]));
    assert.ok(!notes[0]!.userIds.includes(outsider.id));
  });

  test("the event reaches a subscriber's event queue in Zulip's shape", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel, "/poll Q\nA");
    const queue = (await t.register(u().moderator, { event_types: ["submessage"] })).queue_id as string;
    assertSuccess(await submessage(u().member, id, { type: "question", question: "New question?" }));
    const events = await t.queuedEvents(u().moderator, queue);
    assert.equal(events.length, 1);
    const { id: eventId, ...event } = events[0];
    assert.equal(typeof eventId, "number");
    const stored = await submessagesOf(u().member, id);
    assert.deepEqual(event, { type: "submessage", msg_type: "widget", message_id: id, submessage_id: stored[1].id, sender_id: u().member.id, content: JSON.stringify({ type: "question", question: "New question?" }) });
  });

  test("a public channel's history: a non-subscriber may vote and hears of it; a later subscriber hears of votes too", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "/poll Lunch?\nYes");
    const reader = await newUser("Reader");
    t.clearEvents();
    assertSuccess(await submessage(reader, id, { type: "vote", key: "canned,0", vote: 1 }));
    assert.deepEqual(submessageNotifications()[0]!.userIds, sortedIds([u().member.id, reader.id]));
    const late = await newUser("Late");
    assertSuccess(await t.api(late, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }] }));
    t.clearEvents();
    assertSuccess(await submessage(u().member, id, { type: "vote", key: "canned,0", vote: -1 }));
    assert.deepEqual(submessageNotifications()[0]!.userIds, sortedIds([u().member.id, late.id]));
  });

  test("direct messages: only the participants hear of it; others cannot submessage", async () => {
    const id = await sendDm(u().member, [u().moderator], "/todo Errands");
    t.clearEvents();
    assertSuccess(await submessage(u().moderator, id, { type: "new_task", key: 1, task: "milk", desc: "2 litres", completed: false }));
    assert.deepEqual(submessageNotifications()[0]!.userIds, sortedIds([u().member.id, u().moderator.id]));
    assertError(await submessage(u().admin, id, { type: "strike", key: "1,1" }), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("who may: by role and access (guests, bots, administrators without access, archived channels)", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "/poll Who?\nMe");
    const vote = { type: "vote", key: "canned,0", vote: 1 };
    // Guests see no public channel they are not subscribed to.
    assertError(await submessage(u().guest, id, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [u().guest.id, u().bot.id] }));
    assertSuccess(await submessage(u().guest, id, vote));
    assertSuccess(await submessage(u().bot, id, vote));
    assertSuccess(await submessage(u().owner, id, vote));
    // A private channel's messages: not for an administrator who is not subscribed.
    const secret = await newChannel(u().member, [u().moderator], { invite_only: true });
    const secretPoll = await send(u().member, secret, "/poll Secret?\nYes");
    assertError(await submessage(u().admin, secretPoll, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    assertSuccess(await submessage(u().moderator, secretPoll, vote));
    // Protected history: a subscriber who joined later cannot reach older messages.
    const protectedChannel = await newChannel(u().member, [], { invite_only: true, history_public_to_subscribers: false });
    const oldPoll = await send(u().member, protectedChannel, "/poll Old?\nYes");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: protectedChannel.name }], principals: [u().moderator.id] }));
    assertError(await submessage(u().moderator, oldPoll, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    // Archived channels take no more submessages.
    const archived = await newChannel(u().admin, [u().member]);
    const archivedPoll = await send(u().member, archived, "/poll Archived?\nYes");
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${archived.id}`));
    assertError(await submessage(u().member, archivedPoll, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    const stored = await submessagesOf(u().member, id);
    assert.deepEqual(
      stored.slice(1).map((s) => s.sender_id),
      [u().guest.id, u().bot.id, u().owner.id],
    );
  });

  test("unknown or malformed message IDs", async () => {
    const vote = { type: "vote", key: "canned,0", vote: 1 };
    assertError(await submessage(u().member, 999999999, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await submessage(u().member, 99999999999999, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await submessage(u().member, -1, vote), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await submessage(u().member, "abc", vote), 400, "BAD_REQUEST", "message_id is not an integer");
  });

  test("missing parameters, in Zulip's order", async () => {
    const missing = async (params: Params, name: string) =>
      assertError(await t.api(u().member, "POST", "/submessage", params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, { var_name: name });
    await missing({}, "content");
    await missing({ content: "{}" }, "message_id");
    await missing({ content: "{}", message_id: 1 }, "msg_type");
    assertError(await t.api(null, "POST", "/submessage", { content: "{}", message_id: 1, msg_type: "widget" }), 401, "UNAUTHORIZED");
  });

  test("the first submessage is the sender's: others cannot start one on an ordinary message; the sender may attach anything", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel, "just text");
    assertError(await submessage(u().moderator, id, { type: "vote", key: "canned,0", vote: 1 }), 400, "BAD_REQUEST", "You cannot attach a submessage to this message.");
    // The check comes before the content is looked at.
    assertError(await submessage(u().moderator, id, "not json"), 400, "BAD_REQUEST", "You cannot attach a submessage to this message.");
    // Without a poll or todo widget the content is only required to be JSON; msg_type is free.
    assertSuccess(await submessage(u().member, id, { anything: ["goes", 1] }, "custom"));
    assertError(await submessage(u().member, id, "{oops"), 400, "BAD_REQUEST", "Invalid json for submessage");
    // Once the sender has attached one, others may add theirs.
    assertSuccess(await submessage(u().moderator, id, [1, 2, 3], "custom"));
    assert.deepEqual(
      (await submessagesOf(u().member, id)).map((s) => [s.sender_id, s.msg_type, s.content]),
      [
        [u().member.id, "custom", '{"anything":["goes",1]}'],
        [u().moderator.id, "custom", "[1,2,3]"],
      ],
    );
  });

  test("poll data: Zulip's validation messages", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel, "/poll Preference?\n\nyes\nno");
    const bad = async (content: string, msg: string, user: TestUser = u().member) => assertError(await submessage(user, id, content), 400, "BAD_REQUEST", msg);
    await bad("bogus", "Invalid json for submessage");
    await bad('""', "poll data is not a dict");
    await bad("[]", "poll data is not a dict");
    await bad("{}", "type key is missing from poll data");
    await bad('{"type": 5}', 'poll data["type"] is not a string');
    await bad('{"type": "bogus"}', "Unknown type for poll data: bogus");
    await bad('{"type": "vote"}', "key key is missing from poll data");
    await bad('{"type": "vote", "key": 5, "vote": 1}', 'poll data["key"] is not a string');
    await bad('{"type": "vote", "key": "1,1,", "vote": 99}', 'Invalid poll data["vote"]');
    await bad('{"type": "vote", "key": "1,1", "vote": "1"}', 'poll data["vote"] is not an integer');
    await bad('{"type": "vote", "key": "1,1", "vote": 1, "extra": true}', "Unexpected arguments: extra");
    await bad('{"type": "question"}', "question key is missing from poll data");
    await bad('{"type": "question", "question": 7}', 'poll data["question"] is not a string');
    await bad('{"type": "question", "question": "Tabs or spaces?"}', "You can't edit a question unless you are the author.", u().moderator);
    await bad('{"type": "new_option"}', "option key is missing from poll data");
    await bad('{"type": "new_option", "idx": 7, "option": 999}', 'poll data["option"] is not a string');
    await bad('{"type": "new_option", "idx": -1, "option": "pizza"}', 'poll data["idx"] is too small');
    await bad('{"type": "new_option", "idx": 1001, "option": "pizza"}', 'poll data["idx"] is too large');
    await bad('{"type": "new_option", "idx": "bogus", "option": "maybe"}', 'poll data["idx"] is not an integer');
    assert.equal((await submessagesOf(u().member, id)).length, 1);
    // Only types are checked: a vote for an option that does not exist is stored (clients ignore it).
    assertSuccess(await submessage(u().moderator, id, { type: "vote", key: "1,1", vote: 1 }));
    assertSuccess(await submessage(u().moderator, id, { type: "vote", key: "1,1", vote: -1 }));
    assertSuccess(await submessage(u().moderator, id, { type: "new_option", idx: 1000, option: "maybe" }));
    assertSuccess(await submessage(u().member, id, { type: "question", question: "what's for dinner?" }));
    assert.equal((await submessagesOf(u().member, id)).length, 5);
  });

  test("todo data: Zulip's validation messages", async () => {
    const channel = await newChannel(u().member, [u().moderator]);
    const id = await send(u().member, channel, "/todo");
    const bad = async (content: string, msg: string, user: TestUser = u().member) => assertError(await submessage(user, id, content), 400, "BAD_REQUEST", msg);
    await bad('{"type": "bogus"}', "Unknown type for todo data: bogus");
    await bad("7", "todo data is not a dict");
    await bad('{"type": "new_task"}', "key key is missing from todo data");
    await bad('{"type": "new_task", "key": 7, "task": 7, "desc": "", "completed": false}', 'todo data["task"] is not a string');
    await bad('{"type": "new_task", "key": -1, "task": "eat", "desc": "", "completed": false}', 'todo data["key"] is too small');
    await bad('{"type": "new_task", "key": 1001, "task": "eat", "desc": "", "completed": false}', 'todo data["key"] is too large');
    await bad('{"type": "new_task", "key": 1, "task": "eat", "desc": "", "completed": "no"}', 'todo data["completed"] is not a boolean');
    await bad('{"type": "new_task", "key": 1, "task": "eat", "completed": false}', "desc key is missing from todo data");
    await bad('{"type": "strike"}', "key key is missing from todo data");
    await bad('{"type": "strike", "key": 999}', 'todo data["key"] is not a string');
    await bad('{"type": "new_task_list_title", "title": "School Work"}', "You can't edit the task list title unless you are the author.", u().moderator);
    await bad('{"type": "new_task_list_title", "title": 5}', 'todo data["title"] is not a string');
    assertSuccess(await submessage(u().moderator, id, { type: "new_task", key: 7, task: "eat", desc: "", completed: false }));
    assertSuccess(await submessage(u().moderator, id, { type: "strike", key: "7,5" }));
    assertSuccess(await submessage(u().member, id, { type: "new_task_list_title", title: "School Work" }));
    assert.equal((await submessagesOf(u().member, id)).length, 4);
  });

  test("voting follows the topic for people whose policy is 'on participation'", async () => {
    const voter = await newUser("Follower");
    const channel = await newChannel(u().member, [voter]);
    const id = await send(u().member, channel, "/poll Follow?\nYes");
    assertSuccess(await t.api(voter, "PATCH", "/settings", { automatically_follow_topics_policy: 1 }));
    t.clearEvents();
    assertSuccess(await submessage(voter, id, { type: "vote", key: "canned,0", vote: 1 }));
    const topics = t.eventsFor(voter.id, "user_topic");
    assert.equal(topics.length, 1);
    assert.equal(topics[0]!.visibility_policy, 3);
    assert.equal(topics[0]!.stream_id, channel.id);
  });
});

describe("widget messages elsewhere", () => {
  test("their content cannot be edited; the topic can", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "/poll Edit me?\nNo");
    assertError(await t.api(u().member, "PATCH", `/messages/${id}`, { content: "/poll Edited?" }), 400, "BAD_REQUEST", "Widgets cannot be edited.");
    assertSuccess(await t.api(u().member, "PATCH", `/messages/${id}`, { topic: "moved widget" }));
    // Any submessage makes a widget message, as in Zulip.
    const plain = await send(u().member, channel, "plain");
    assertSuccess(await t.api(u().member, "PATCH", `/messages/${plain}`, { content: "plain, edited" }));
    assertSuccess(await submessage(u().member, plain, { custom: true }, "custom"));
    assertError(await t.api(u().member, "PATCH", `/messages/${plain}`, { content: "again" }), 400, "BAD_REQUEST", "Widgets cannot be edited.");
  });

  test("deleting a widget message removes its submessages", async () => {
    const channel = await newChannel(u().admin, [u().member]);
    const id = await send(u().member, channel, "/poll Delete?\nYes");
    assertSuccess(await submessage(u().admin, id, { type: "vote", key: "canned,0", vote: 1 }));
    assertSuccess(await t.api(u().admin, "DELETE", `/messages/${id}`));
    const left = await db().selectFrom("submessages").select("id").where("message_id", "=", id).execute();
    assert.deepEqual(left, []);
    assertError(await submessage(u().member, id, { type: "vote", key: "canned,0", vote: 1 }), 400, "BAD_REQUEST", "Invalid message(s)");
  });
});
