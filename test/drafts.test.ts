// Drafts: GET/POST /drafts, PATCH/DELETE /drafts/{draft_id} — the draft
// object (type "stream"/"private"/"", `to`, topic, content, timestamp),
// Zulip's checks and errors (404 "Draft does not exist" for unknown and
// other users' drafts), enable_drafts_synchronization (refused when off;
// turning it off deletes the drafts), the `drafts` events (to the owner
// alone) and /register's drafts.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

const NOW = 1_750_000_000;

let t: TestApp;
before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

type Draft = Record<string, unknown>;

const fresh = (role: number = Role.MEMBER) => t.createUser(uniqueName("Drafter"), role);
const create = (user: TestUser, drafts: unknown) => t.api(user, "POST", "/drafts", { drafts });
const edit = (user: TestUser, id: number | string, draft: unknown) => t.api(user, "PATCH", `/drafts/${id}`, { draft });
const remove = (user: TestUser, id: number | string) => t.api(user, "DELETE", `/drafts/${id}`);
const list = async (user: TestUser) => assertSuccess(await t.api(user, "GET", "/drafts"));
const registered = async (user: TestUser) => (await t.register(user, { fetch_event_types: ["drafts"] })).drafts;
const draftEvents = () => t.events.filter((n) => n.event.type === "drafts").map((n) => ({ event: n.event, userIds: [...n.userIds] }));

async function createOk(user: TestUser, drafts: Draft[]): Promise<number[]> {
  const body = assertSuccess(await create(user, drafts));
  assert.deepEqual(Object.keys(body).sort(), ["ids", "msg", "result"]);
  assert.equal(body.ids.length, drafts.length);
  return body.ids;
}

/** A channel with these subscribers (private ones are created by the first of them). */
async function newChannel(members: TestUser[], inviteOnly = false): Promise<number> {
  const name = uniqueName("drafting");
  assertSuccess(
    await t.api(members[0]!, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: members.map((m) => m.id),
      invite_only: inviteOnly,
      send_new_subscription_messages: false,
    }),
  );
  return assertSuccess(await t.api(members[0]!, "GET", "/get_stream_id", { stream: name })).stream_id;
}

const channelDraft = (channelId: number, extra: Draft = {}): Draft => ({ type: "stream", to: [channelId], topic: "sync drafts", content: "Let's add backend support.", timestamp: 1595479019, ...extra });
const dmDraft = (to: number[], extra: Draft = {}): Draft => ({ type: "private", to, topic: "", content: "What if we synced drafts?", timestamp: 1595479019, ...extra });

describe("POST /drafts and GET /drafts", () => {
  test("a channel draft comes back as sent, with its ID; the add event carries it, to the owner alone", async () => {
    const user = await fresh();
    const channel = await newChannel([user]);
    assert.deepEqual(await list(user), { result: "success", msg: "", count: 0, drafts: [] });
    const [id] = await createOk(user, [channelDraft(channel)]);
    const expected = { id, ...channelDraft(channel) };
    assert.deepEqual(await list(user), { result: "success", msg: "", count: 1, drafts: [expected] });
    assert.deepEqual(draftEvents(), [{ event: { type: "drafts", op: "add", drafts: [expected] }, userIds: [user.id] }]);
  });

  test("direct-message drafts drop the topic; `to` is the other participants, or oneself", async () => {
    const user = await fresh();
    const zoe = await fresh();
    const othello = await fresh();
    const ids = await createOk(user, [
      dmDraft([zoe.id], { topic: "This topic should be ignored." }),
      dmDraft([othello.id, zoe.id], { timestamp: 1595479020 }),
      dmDraft([user.id], { timestamp: 1595479021 }),
      dmDraft([zoe.id, user.id], { timestamp: 1595479022 }),
    ]);
    assert.deepEqual((await list(user)).drafts, [
      { id: ids[0], ...dmDraft([zoe.id]) },
      { id: ids[1], ...dmDraft([zoe.id, othello.id].sort((a, b) => a - b), { timestamp: 1595479020 }) },
      { id: ids[2], ...dmDraft([user.id], { timestamp: 1595479021 }) },
      { id: ids[3], ...dmDraft([zoe.id], { timestamp: 1595479022 }) },
    ]);
  });

  test("no recipients: type \"\" with no `to` and no topic, whatever type was sent", async () => {
    const user = await fresh();
    const ids = await createOk(user, [
      { type: "private", to: [], topic: "sync drafts", content: "Nobody yet", timestamp: 1595479019 },
      { type: "", to: [7, 8], topic: "sync drafts", content: "Nobody either", timestamp: 1595479019 },
    ]);
    assert.deepEqual((await list(user)).drafts, [
      { id: ids[0], type: "", to: [], topic: "", content: "Nobody yet", timestamp: 1595479019 },
      { id: ids[1], type: "", to: [], topic: "", content: "Nobody either", timestamp: 1595479019 },
    ]);
  });

  test("timestamps: now when missing or null, whole seconds when fractional; drafts listed oldest edit first", async () => {
    const user = await fresh();
    const ids = await createOk(user, [
      { type: "", to: [], topic: "", content: "later", timestamp: 1595479100.9 },
      { type: "", to: [], topic: "", content: "no time" },
      { type: "", to: [], topic: "", content: "null time", timestamp: null },
      { type: "", to: [], topic: "", content: "earlier", timestamp: 1595479000 },
    ]);
    const drafts = (await list(user)).drafts;
    assert.deepEqual(
      drafts.map((d: Draft) => [d.id, d.content, d.timestamp]),
      [
        [ids[3], "earlier", 1595479000],
        [ids[0], "later", 1595479100],
        [ids[1], "no time", NOW],
        [ids[2], "null time", NOW],
      ],
    );
  });

  test("content is stripped and cut like a message's; channel topics are cut at 60 characters", async () => {
    const user = await fresh();
    const channel = await newChannel([user]);
    const [id] = await createOk(user, [channelDraft(channel, { topic: "t".repeat(70), content: `\n\n  ${"c".repeat(10_005)}  \n` })]);
    const [draft] = (await list(user)).drafts;
    assert.equal(draft.id, id);
    assert.equal(draft.topic, `${"t".repeat(57)}...`);
    assert.equal([...draft.content].length, 10_000);
    assert.ok(draft.content.endsWith("\n[message truncated]"));
  });

  test("errors: each with Zulip's message, and no draft stored from a batch with a bad one", async () => {
    const user = await fresh();
    const other = await fresh();
    const gone = await fresh();
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${gone.id}`));
    const channel = await newChannel([user]);
    const secret = await newChannel([t.users.admin], true);
    const archived = await newChannel([user]);
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${archived}`));
    const cases: [unknown, string][] = [
      [[channelDraft(channel, { timestamp: -10.1 })], "Timestamp must not be negative."],
      [[channelDraft(channel, { timestamp: 253402300800 })], "Timestamp must not be after the year 9999."],
      [[channelDraft(channel, { to: [] })], "Must specify exactly 1 channel ID for channel messages"],
      [[channelDraft(channel, { to: [channel, secret] })], "Must specify exactly 1 channel ID for channel messages"],
      [[channelDraft(secret)], "Invalid channel ID"],
      [[channelDraft(999999)], "Invalid channel ID"],
      [[channelDraft(99999999999999)], "Invalid channel ID"],
      [[channelDraft(archived)], "Invalid channel ID"],
      [[dmDraft([99999999999999])], "Invalid user ID 99999999999999"],
      [[dmDraft([other.id, 999999])], "Invalid user ID 999999"],
      // NUL is refused wherever client JSON is decoded (docs/security.md), before Zulip's content and topic checks.
      [[{ type: "", to: [], topic: "", content: "Some regular \u0000 content here" }], 'drafts[0]["content"] contains a NUL character'],
      [[channelDraft(channel, { topic: "thinking about \u0000" })], 'drafts[0]["topic"] contains a NUL character'],
      [[channelDraft(channel, { content: "   " })], 'drafts[0]["content"] cannot be blank'],
      [[channelDraft(channel, { type: "channel" })], 'Invalid drafts[0]["type"]'],
      [[channelDraft(channel, { to: ["x"] })], 'drafts[0]["to"][0] is not an integer'],
      [[channelDraft(channel, { to: 5 })], 'drafts[0]["to"] is not a list'],
      [[channelDraft(channel, { topic: 5 })], 'drafts[0]["topic"] is not a string'],
      [[channelDraft(channel, { timestamp: "1595479019" })], 'drafts[0]["timestamp"] is not a float'],
      [["not a draft"], "drafts[0] is not a dict"],
      [{ type: "" }, "drafts is not a list"],
      // A valid draft first: the batch fails whole.
      [[channelDraft(channel), dmDraft([999999])], "Invalid user ID 999999"],
    ];
    for (const [drafts, msg] of cases) assertError(await create(user, drafts), 400, "BAD_REQUEST", msg);
    const deactivatedEmail = assertSuccess(await t.api(t.users.admin, "GET", `/users/${gone.id}`)).user.email;
    assertError(await create(user, [dmDraft([gone.id])]), 400, "BAD_REQUEST", `'${deactivatedEmail}' is no longer using Zulip.`);
    // The shape checks of typed_endpoint (Parley's wording for keys; see docs/zulip-behaviour/status-muted-drafts.md).
    assertError(await create(user, [{ ...channelDraft(channel), extra: 1 }]), 400, "BAD_REQUEST", "drafts[0] has an unexpected key 'extra'");
    const { content: _content, ...noContent } = channelDraft(channel);
    assertError(await create(user, [noContent]), 400, "BAD_REQUEST", "drafts[0] is missing key 'content'");
    assertError(await t.api(user, "POST", "/drafts", { drafts: "[{" }), 400, "BAD_REQUEST", 'Argument "drafts" is not valid JSON.');
    // JSON numbers too large for a double parse as Infinity.
    const huge = '[{"type": "", "to": [], "topic": "", "content": "x", "timestamp": 1e400}]';
    assertError(await t.api(user, "POST", "/drafts", { drafts: huge }), 400, "BAD_REQUEST", "Timestamp must not be after the year 9999.");
    assertError(await t.api(user, "POST", "/drafts", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'drafts' argument", { var_name: "drafts" });
    assert.deepEqual((await list(user)).drafts, []);
    assert.deepEqual(draftEvents(), []);
  });

  test("an empty list creates nothing and sends an empty add event, as Zulip does", async () => {
    const user = await fresh();
    assert.deepEqual(assertSuccess(await create(user, [])).ids, []);
    assert.deepEqual(draftEvents(), [{ event: { type: "drafts", op: "add", drafts: [] }, userIds: [user.id] }]);
  });

  test("guests draft only to channels they can read; every role, bots included, has drafts of their own", async () => {
    const guest = await fresh(Role.GUEST);
    const publicChannel = await newChannel([t.users.admin]);
    const guestChannel = await newChannel([t.users.admin, guest]);
    assertError(await create(guest, [channelDraft(publicChannel)]), 400, "BAD_REQUEST", "Invalid channel ID");
    await createOk(guest, [channelDraft(guestChannel)]);
    // A member may draft to a public channel without being subscribed.
    await createOk(await fresh(), [channelDraft(publicChannel)]);
    const ids: Record<string, number> = {};
    const roles = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;
    for (const role of roles) ids[role] = (await createOk(t.users[role], [{ type: "", to: [], topic: "", content: `${role} draft` }]))[0]!;
    for (const role of roles) {
      assert.deepEqual(
        (await list(t.users[role])).drafts.map((d: Draft) => d.content),
        [`${role} draft`],
      );
      for (const other of roles) if (other !== role) assertError(await remove(t.users[role], ids[other]!), 404, "BAD_REQUEST", "Draft does not exist");
    }
    for (const role of roles) assertSuccess(await remove(t.users[role], ids[role]!));
  });
});

describe("PATCH and DELETE /drafts/{draft_id}", () => {
  test("PATCH replaces the draft; the update event carries it whole", async () => {
    const user = await fresh();
    const a = await newChannel([user]);
    const b = await newChannel([user]);
    const zoe = await fresh();
    const [id, keep] = await createOk(user, [channelDraft(a), dmDraft([zoe.id], { timestamp: 1595479030 })]);
    t.clearEvents();
    const changed = { type: "stream", to: [b], topic: "designing drafts", content: "The API needs structure.", timestamp: 1595505800 };
    const body = assertSuccess(await edit(user, id!, changed));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assert.deepEqual(draftEvents(), [{ event: { type: "drafts", op: "update", draft: { id, ...changed } }, userIds: [user.id] }]);
    // To a direct message, without a timestamp (now).
    assertSuccess(await edit(user, id!, { type: "private", to: [zoe.id], topic: "dropped", content: "DM now" }));
    assert.deepEqual((await list(user)).drafts, [
      { id: keep, ...dmDraft([zoe.id], { timestamp: 1595479030 }) },
      { id, type: "private", to: [zoe.id], topic: "", content: "DM now", timestamp: NOW },
    ]);
  });

  test("PATCH errors: shape first, then the look-up (404), then the draft rules", async () => {
    const user = await fresh();
    const owner = await fresh();
    const channel = await newChannel([user, owner]);
    const [mine] = await createOk(user, [channelDraft(channel)]);
    const [theirs] = await createOk(owner, [channelDraft(channel, { content: "secret" })]);
    t.clearEvents();
    assertError(await edit(user, 999999, channelDraft(channel, { content: "" })), 400, "BAD_REQUEST", 'draft["content"] cannot be blank');
    assertError(await edit(user, 999999, channelDraft(channel)), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await edit(user, 99999999999, channelDraft(channel)), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await edit(user, 999999, channelDraft(channel, { timestamp: -1 })), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await edit(user, theirs!, channelDraft(channel, { content: "hijacked" })), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await edit(user, mine!, channelDraft(channel, { timestamp: -1 })), 400, "BAD_REQUEST", "Timestamp must not be negative.");
    assertError(await edit(user, mine!, channelDraft(999999)), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await edit(user, "abc", channelDraft(channel)), 400, "BAD_REQUEST", "draft_id is not an integer");
    assertError(await t.api(user, "PATCH", `/drafts/${mine}`, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'draft' argument");
    assertError(await edit(user, mine!, [channelDraft(channel)]), 400, "BAD_REQUEST", "draft is not a dict");
    assert.deepEqual(draftEvents(), []);
    assert.deepEqual((await list(user)).drafts, [{ id: mine, ...channelDraft(channel) }]);
    assert.deepEqual((await list(owner)).drafts, [{ id: theirs, ...channelDraft(channel, { content: "secret" }) }]);
  });

  test("DELETE removes only that draft; unknown, foreign and deleted IDs do not exist", async () => {
    const user = await fresh();
    const owner = await fresh();
    const [gone, stays] = await createOk(user, [dmDraft([user.id]), dmDraft([user.id], { timestamp: 1595479050 })]);
    const [theirs] = await createOk(owner, [dmDraft([owner.id])]);
    t.clearEvents();
    const body = assertSuccess(await remove(user, gone!));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assert.deepEqual(draftEvents(), [{ event: { type: "drafts", op: "remove", draft_id: gone }, userIds: [user.id] }]);
    assert.deepEqual((await list(user)).drafts.map((d: Draft) => d.id), [stays]);
    assertError(await remove(user, gone!), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await remove(user, 999999), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await remove(user, theirs!), 404, "BAD_REQUEST", "Draft does not exist");
    assertError(await remove(user, "abc"), 400, "BAD_REQUEST", "draft_id is not an integer");
    assert.deepEqual((await list(owner)).drafts.map((d: Draft) => d.id), [theirs]);
  });
});

describe("enable_drafts_synchronization, /register and event queues", () => {
  test("with synchronization off every endpoint refuses, before reading its parameters", async () => {
    const user = await fresh();
    assertSuccess(await t.api(user, "PATCH", "/settings", { enable_drafts_synchronization: false }));
    const off = "User has disabled synchronizing drafts.";
    assertError(await t.api(user, "GET", "/drafts"), 400, "BAD_REQUEST", off);
    assertError(await create(user, [{ type: "", to: [], topic: "", content: "x" }]), 400, "BAD_REQUEST", off);
    assertError(await t.api(user, "POST", "/drafts", {}), 400, "BAD_REQUEST", off);
    assertError(await t.api(user, "POST", "/drafts", { drafts: "[{" }), 400, "BAD_REQUEST", off);
    assertError(await edit(user, 1, {}), 400, "BAD_REQUEST", off);
    assertError(await remove(user, 1), 400, "BAD_REQUEST", off);
  });

  test("turning synchronization off deletes the drafts without events; back on, the list starts empty", async () => {
    const user = await fresh();
    const other = await fresh();
    await createOk(user, [dmDraft([user.id]), dmDraft([user.id])]);
    const [kept] = await createOk(other, [dmDraft([other.id])]);
    t.clearEvents();
    assertSuccess(await t.api(user, "PATCH", "/settings", { enable_drafts_synchronization: false }));
    assert.deepEqual(draftEvents(), []);
    assert.deepEqual(await registered(user), []);
    assertSuccess(await t.api(user, "PATCH", "/settings", { enable_drafts_synchronization: true }));
    assert.deepEqual((await list(user)).drafts, []);
    assert.deepEqual((await list(other)).drafts.map((d: Draft) => d.id), [kept]);
  });

  test("/register lists the drafts most recently edited first", async () => {
    const user = await fresh();
    const ids = await createOk(user, [dmDraft([user.id], { timestamp: 1000 }), dmDraft([user.id], { timestamp: 3000 }), dmDraft([user.id], { timestamp: 2000 })]);
    assert.deepEqual(
      (await registered(user)).map((d: Draft) => [d.id, d.timestamp]),
      [
        [ids[1], 3000],
        [ids[2], 2000],
        [ids[0], 1000],
      ],
    );
    assert.deepEqual((await registered(user))[0], { id: ids[1], ...dmDraft([user.id], { timestamp: 3000 }) });
    assert.equal("drafts" in (await t.register(user, { fetch_event_types: ["alert_words"] })), false);
  });

  test("a queue registered for drafts receives add, update and remove; other users' queues do not", async () => {
    const user = await fresh();
    const queue = (await t.register(user, { event_types: ["drafts"] })).queue_id as string;
    const otherQueue = (await t.register(t.users.admin, { event_types: ["drafts"] })).queue_id as string;
    const [id] = await createOk(user, [dmDraft([user.id])]);
    assertSuccess(await edit(user, id!, dmDraft([user.id], { content: "edited" })));
    assertSuccess(await remove(user, id!));
    assert.deepEqual(await t.queuedEvents(user, queue), [
      { id: 0, type: "drafts", op: "add", drafts: [{ id, ...dmDraft([user.id]) }] },
      { id: 1, type: "drafts", op: "update", draft: { id, ...dmDraft([user.id], { content: "edited" }) } },
      { id: 2, type: "drafts", op: "remove", draft_id: id },
    ]);
    assert.deepEqual(await t.queuedEvents(t.users.admin, otherQueue), []);
  });
});
