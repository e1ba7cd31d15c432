// Hostile input never gets a 5xx (issue 18): every list parameter has a
// bound (and a list at the bound works, its IDs looked up in chunks past
// SQLite's 32,766 and PostgreSQL's 65,535 bound values per statement), JSON
// parameters nested deeper than MAX_JSON_DEPTH are refused before anything
// walks them, and NUL characters — which PostgreSQL refuses in text — are
// refused or name nothing, with the same answer on both databases.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { MAX_JSON_DEPTH } from "../src/domain/json.ts";
import {
  MAX_GROUP_IDS,
  MAX_ITEMS_PER_REQUEST,
  MAX_MESSAGE_IDS,
  MAX_NARROW_TERMS,
  MAX_PRINCIPALS,
  MAX_USER_IDS,
} from "../src/domain/limits.ts";
import { MAX_MESSAGES_PER_FETCH } from "../src/domain/messages.ts";
import { IDS_PER_STATEMENT } from "../src/storage/database.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;

/** A request with a hand-made URL path (and query) and headers, for what t.api cannot express. */
async function raw(method: string, urlPath: string, headers: Record<string, string> = {}, body?: string): Promise<ApiResponse> {
  const response = await fetch(t.url + urlPath, { method, headers, body: body ?? null });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the test looks at the text.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** Never a server error, and an error reply is Zulip's JSON. */
function assertClientAnswer(response: ApiResponse, context: string): void {
  assert.ok(response.status < 500, `${context}: HTTP ${response.status} ${JSON.stringify(response.body)}`);
}

const tooLong = (name: string, max: number) => `${name} is too long (limit: ${max} items)`;
const tooDeep = (name: string) => `${name} is nested too deeply (limit: ${MAX_JSON_DEPTH} levels)`;
const nul = (name: string) => `${name} contains a NUL character`;

/** `n` copies of `value`. */
const repeat = <T>(value: T, n: number): T[] => new Array<T>(n).fill(value);

/** JSON text of `depth` nested empty lists. */
const nestedLists = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

async function createGroup(members: number[] = []): Promise<number> {
  const reply = assertSuccess(await t.api(u().owner, "POST", "/user_groups/create", { name: uniqueName("bounds group"), description: "", members }));
  return reply.group_id as number;
}

async function createChannel(name = uniqueName("bounds channel")): Promise<{ id: number; name: string }> {
  assertSuccess(await t.api(u().owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
  const reply = assertSuccess(await t.api(u().owner, "GET", "/get_stream_id", { stream: name }));
  return { id: reply.stream_id as number, name };
}

// ---------------------------------------------------------------------------
// Lists: one item over the bound is refused, naming the parameter

describe("list parameters over their bound", () => {
  test("each is refused with 400 BAD_REQUEST naming the parameter, before any item is checked", async () => {
    const group = await createGroup();
    const owner = u().owner;
    // Items that would each be an error: the length is what is refused.
    const over = (max: number) => repeat(-1, max + 1);
    const cases: [string, string, Params, string][] = [
      ["POST", "/user_groups/create", { name: uniqueName(), description: "", members: over(MAX_USER_IDS) }, tooLong("members", MAX_USER_IDS)],
      ["POST", "/user_groups/create", { name: uniqueName(), description: "", members: [], subgroups: over(MAX_GROUP_IDS) }, tooLong("subgroups", MAX_GROUP_IDS)],
      ["POST", `/user_groups/${group}/members`, { add: over(MAX_USER_IDS) }, tooLong("add", MAX_USER_IDS)],
      ["POST", `/user_groups/${group}/members`, { delete: over(MAX_USER_IDS) }, tooLong("delete", MAX_USER_IDS)],
      ["POST", `/user_groups/${group}/members`, { add_subgroups: over(MAX_GROUP_IDS) }, tooLong("add_subgroups", MAX_GROUP_IDS)],
      ["POST", `/user_groups/${group}/members`, { delete_subgroups: over(MAX_GROUP_IDS) }, tooLong("delete_subgroups", MAX_GROUP_IDS)],
      ["POST", `/user_groups/${group}/subgroups`, { add: over(MAX_GROUP_IDS) }, tooLong("add", MAX_GROUP_IDS)],
      ["POST", `/user_groups/${group}/subgroups`, { delete: over(MAX_GROUP_IDS) }, tooLong("delete", MAX_GROUP_IDS)],
      [
        "PATCH",
        `/user_groups/${group}`,
        { can_mention_group: { new: { direct_members: over(MAX_USER_IDS), direct_subgroups: [] } } },
        tooLong('can_mention_group.new["direct_members"]', MAX_USER_IDS),
      ],
      [
        "PATCH",
        "/realm",
        { can_create_groups: { new: { direct_members: [], direct_subgroups: over(MAX_GROUP_IDS) } } },
        tooLong('can_create_groups.new["direct_subgroups"]', MAX_GROUP_IDS),
      ],
      ["POST", "/typing", { op: "start", to: over(MAX_USER_IDS) }, tooLong("to", MAX_USER_IDS)],
      ["POST", "/messages", { type: "direct", to: over(MAX_USER_IDS), content: "hi" }, tooLong("to", MAX_USER_IDS)],
      ["POST", "/messages", { type: "direct", to: repeat("x@example.com", MAX_USER_IDS + 1).join(","), content: "hi" }, tooLong("to", MAX_USER_IDS)],
      ["POST", "/scheduled_messages", { type: "direct", to: over(MAX_USER_IDS), content: "hi", scheduled_delivery_timestamp: 4102444800 }, tooLong("to", MAX_USER_IDS)],
      ["POST", "/messages/flags", { messages: over(MAX_MESSAGE_IDS), op: "add", flag: "starred" }, tooLong("messages", MAX_MESSAGE_IDS)],
      [
        "POST",
        "/messages/flags/narrow",
        { anchor: "newest", num_before: 1, num_after: 0, narrow: repeat(["is", "starred"], MAX_NARROW_TERMS + 1), op: "add", flag: "read" },
        tooLong("narrow", MAX_NARROW_TERMS),
      ],
      [
        "POST",
        "/messages/flags/narrow",
        { anchor: "newest", num_before: 1, num_after: 0, narrow: [["dm", repeat(1, MAX_USER_IDS + 1)]], op: "add", flag: "read" },
        tooLong('narrow[0]["operand"]', MAX_USER_IDS),
      ],
      ["POST", "/register", { narrow: [["dm", repeat(1, MAX_USER_IDS + 1).join(",")]] }, tooLong('narrow[0]["operand"]', MAX_USER_IDS)],
      ["POST", "/register", { event_types: repeat("message", MAX_ITEMS_PER_REQUEST + 1) }, tooLong("event_types", MAX_ITEMS_PER_REQUEST)],
      ["POST", "/users/me/subscriptions", { subscriptions: repeat({ name: "x" }, MAX_ITEMS_PER_REQUEST + 1) }, tooLong("subscriptions", MAX_ITEMS_PER_REQUEST)],
      ["POST", "/users/me/subscriptions", { subscriptions: [{ name: "x" }], principals: over(MAX_PRINCIPALS) }, tooLong("principals", MAX_PRINCIPALS)],
      ["POST", "/users/me/subscriptions", { subscriptions: [{ name: "x" }], principals: repeat("x@example.com", MAX_PRINCIPALS + 1) }, tooLong("principals", MAX_PRINCIPALS)],
      ["DELETE", "/users/me/subscriptions", { subscriptions: repeat("x", MAX_ITEMS_PER_REQUEST + 1) }, tooLong("subscriptions", MAX_ITEMS_PER_REQUEST)],
      ["PATCH", "/users/me/subscriptions", { delete: repeat("x", MAX_ITEMS_PER_REQUEST + 1) }, tooLong("delete", MAX_ITEMS_PER_REQUEST)],
      [
        "POST",
        "/users/me/subscriptions/properties",
        { subscription_data: repeat({ stream_id: 1, property: "pin_to_top", value: true }, MAX_ITEMS_PER_REQUEST + 1) },
        tooLong("subscription_data", MAX_ITEMS_PER_REQUEST),
      ],
      ["POST", "/users/me/alert_words", { alert_words: repeat("x", MAX_ITEMS_PER_REQUEST + 1) }, tooLong("alert_words", MAX_ITEMS_PER_REQUEST)],
      ["PATCH", "/users/me/profile_data", { data: repeat({ id: 1, value: "x" }, MAX_ITEMS_PER_REQUEST + 1) }, tooLong("data", MAX_ITEMS_PER_REQUEST)],
      ["PATCH", "/users/me/profile_data", { data: [{ id: 1, value: over(MAX_USER_IDS) }] }, tooLong('data[0]["value"]', MAX_USER_IDS)],
      ["PATCH", "/realm/profile_fields", { order: over(MAX_ITEMS_PER_REQUEST) }, tooLong("order", MAX_ITEMS_PER_REQUEST)],
      ["PATCH", "/channel_folders", { order: over(MAX_ITEMS_PER_REQUEST) }, tooLong("order", MAX_ITEMS_PER_REQUEST)],
      ["POST", "/invites", { invitee_emails: "new@example.com", stream_ids: over(MAX_ITEMS_PER_REQUEST) }, tooLong("stream_ids", MAX_ITEMS_PER_REQUEST)],
      ["POST", "/invites/multiuse", { group_ids: over(MAX_ITEMS_PER_REQUEST) }, tooLong("group_ids", MAX_ITEMS_PER_REQUEST)],
    ];
    for (const [method, path, params, msg] of cases) {
      assertError(await t.api(owner, method, path, params), 400, "BAD_REQUEST", msg);
    }
  });

  test("GET parameters: message_ids has Zulip's bound and error; msg_ids and narrow have theirs", async () => {
    // Built by hand: URLSearchParams would percent-encode every comma past Node's 16 KiB header limit.
    const ids = (n: number) => `[${repeat(1, n).join(",")}]`;
    assertError(
      await raw("GET", `/api/v1/messages?message_ids=${ids(MAX_MESSAGES_PER_FETCH + 1)}`, { authorization: basicAuth(u().member.email, u().member.apiKey) }),
      400,
      "BAD_REQUEST",
      `Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`,
    );
    assertError(
      await raw("GET", `/api/v1/messages/matches_narrow?narrow=[]&msg_ids=${ids(MAX_MESSAGES_PER_FETCH + 1)}`, { authorization: basicAuth(u().member.email, u().member.apiKey) }),
      400,
      "BAD_REQUEST",
      tooLong("msg_ids", MAX_MESSAGES_PER_FETCH),
    );
    const terms = JSON.stringify(repeat(["is", "starred"], MAX_NARROW_TERMS + 1));
    assertError(await t.api(u().member, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: JSON.parse(terms) }), 400, "BAD_REQUEST", tooLong("narrow", MAX_NARROW_TERMS));
  });
});

// ---------------------------------------------------------------------------
// Lists at their bound: answered (success, or the error for the items), never a 5xx

describe("list parameters at their bound", () => {
  test("a narrow of MAX_NARROW_TERMS terms of every kind runs as one statement on both databases", async () => {
    const channel = await createChannel();
    const kinds: [string, unknown][] = [
      ["channel", channel.name],
      ["topic", "a topic"],
      ["sender", u().member.id],
      ["is", "unread"],
      ["is", "starred"],
      ["has", "link"],
      ["search", "word"],
      ["in", "home"],
    ];
    const narrow = Array.from({ length: MAX_NARROW_TERMS }, (_, i) => {
      const [operator, operand] = kinds[i % kinds.length]!;
      return { operator, operand, negated: i % 3 === 0 && operator !== "channel" };
    });
    assertSuccess(await t.api(u().owner, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow }));
    assertSuccess(await t.api(u().owner, "POST", "/messages/flags/narrow", { anchor: "newest", num_before: 10, num_after: 0, narrow, op: "add", flag: "starred" }));
  });

  test("IDs past what one statement binds: looked up in chunks, the first bad one named", async () => {
    assert.ok(MAX_USER_IDS > 65535 && MAX_MESSAGE_IDS > 65535, "the bounds exceed both databases' per-statement limits");
    // Distinct IDs, none a user: each would make an unchunked IN (…) fail on both databases.
    const unknownUsers = Array.from({ length: MAX_USER_IDS }, (_, i) => 1_000_000 + i);
    const group = await createGroup();
    assertError(await t.api(u().owner, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: unknownUsers }), 400, "BAD_REQUEST", "Invalid user ID: 1000000");
    assertError(await t.api(u().owner, "POST", `/user_groups/${group}/members`, { add: unknownUsers }), 400, "BAD_REQUEST", "Invalid user ID: 1000000");
    assertError(await t.api(u().owner, "POST", `/user_groups/${group}/members`, { delete: unknownUsers }), 400, "BAD_REQUEST", "Invalid user ID: 1000000");
    assertError(await t.api(u().member, "POST", "/typing", { op: "start", to: unknownUsers }), 400, "BAD_REQUEST", "Invalid user ID 1000000");
    assertError(await t.api(u().member, "POST", "/messages", { type: "direct", to: unknownUsers, content: "hi" }), 400, "BAD_REQUEST", "Invalid user ID 1000000");
    assertError(
      await t.api(u().owner, "PATCH", `/user_groups/${group}`, { can_mention_group: { new: { direct_members: unknownUsers, direct_subgroups: [] } } }),
      400,
      "BAD_REQUEST",
      "Invalid user ID: 1000000",
    );
    assertError(
      await t.api(u().owner, "PATCH", "/realm", { can_create_groups: { new: { direct_members: unknownUsers, direct_subgroups: [] } } }),
      400,
      "BAD_REQUEST",
      "Invalid user ID: 1000000",
    );
    const unknownGroups = unknownUsers.slice(0, MAX_GROUP_IDS);
    assertError(await t.api(u().owner, "POST", `/user_groups/${group}/subgroups`, { add: unknownGroups }), 400, "BAD_REQUEST", "Invalid user group ID: 1000000");
    assertError(await t.api(u().owner, "POST", `/user_groups/${group}/members`, { delete_subgroups: unknownGroups }), 400, "BAD_REQUEST", "Invalid user group ID: 1000000");
    const narrowed = await t.api(u().member, "POST", "/messages/flags/narrow", { anchor: "newest", num_before: 1, num_after: 0, narrow: [["dm", unknownUsers]], op: "add", flag: "read" });
    assertError(narrowed, 400, "BAD_NARROW");

    // Messages: reading unknown IDs changes nothing (they count as read), after looking every one up.
    const unknownMessages = Array.from({ length: MAX_MESSAGE_IDS }, (_, i) => 1_000_000_000 + i);
    const flagged = assertSuccess(await t.api(u().member, "POST", "/messages/flags", { messages: unknownMessages, op: "add", flag: "read" }));
    assert.equal(flagged.messages.length, MAX_MESSAGE_IDS);
    assertError(await t.api(u().member, "POST", "/messages/flags", { messages: unknownMessages, op: "add", flag: "starred" }), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("a typing notification to more recipients than one statement binds", async () => {
    // The same person many times: the look-up takes each ID once, the event names everyone given.
    const to = repeat(u().admin.id, MAX_USER_IDS);
    t.clearEvents();
    assertSuccess(await t.api(u().member, "POST", "/typing", { op: "start", to }));
    const [event] = t.eventsFor(u().admin.id, "typing", "start");
    assert.ok(event, "the recipient hears of it");
  });

  test("principals and channel lists at their bounds", async () => {
    // Each principal is the same person: the look-up is by chunks, the subscription once.
    const channel = await createChannel();
    const principals = repeat(u().member.id, MAX_PRINCIPALS);
    const reply = assertSuccess(await t.api(u().owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals }));
    assert.deepEqual(reply.subscribed, { [u().member.id]: [channel.name] });
    const byEmail = repeat(u().member.email, MAX_PRINCIPALS);
    assertSuccess(await t.api(u().owner, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name], principals: byEmail }));
    // Channels that do not exist, at the bound: named in the error, no statement over its limits.
    const names = Array.from({ length: MAX_ITEMS_PER_REQUEST }, (_, i) => `missing ${i}`);
    assertError(await t.api(u().owner, "DELETE", "/users/me/subscriptions", { subscriptions: names }), 400, "STREAM_DOES_NOT_EXIST", "Channel 'missing 0' does not exist", { stream: "missing 0" });
    const words = Array.from({ length: MAX_ITEMS_PER_REQUEST }, (_, i) => `word${i}`);
    assert.equal(assertSuccess(await t.api(u().guest, "POST", "/users/me/alert_words", { alert_words: words })).alert_words.length, MAX_ITEMS_PER_REQUEST);
    assert.equal(assertSuccess(await t.api(u().guest, "DELETE", "/users/me/alert_words", { alert_words: words })).alert_words.length, 0);
  });
});

describe("an organization with more users than one statement binds", () => {
  let big: TestApp;
  let everyone: number[];
  // More than SQLite's 32,766 bound values, and two values per membership row past PostgreSQL's 65,535.
  const COUNT = 34_000;

  before(async () => {
    big = await startTestApp();
    const db = big.services.storage.db;
    const template = await db.selectFrom("users").selectAll().where("id", "=", big.users.member.id).executeTakeFirstOrThrow();
    const { id: _id, ...row } = template;
    const rows = Array.from({ length: COUNT }, (_, i) => {
      const email = `bulk${i}@example.com`;
      return { ...row, email, delivery_email: email, email_key: email, delivery_email_key: email, full_name: `Bulk ${i}`, api_key: `bulk-key-${i}` };
    });
    for (let i = 0; i < rows.length; i += 500) await db.insertInto("users").values(rows.slice(i, i + 500)).execute();
    everyone = (await db.selectFrom("users").select("id").where("email", "like", "bulk%").orderBy("id").execute()).map((r) => r.id);
    assert.equal(everyone.length, COUNT);
    assert.ok(COUNT > 32766 && COUNT > IDS_PER_STATEMENT);
  });
  after(() => big?.close());

  test("a group of all of them is created, emptied and filled again", async () => {
    const owner = big.users.owner;
    const created = assertSuccess(await big.api(owner, "POST", "/user_groups/create", { name: "Everyone in bulk", description: "", members: everyone }));
    const groupId = created.group_id as number;
    assert.equal(assertSuccess(await big.api(owner, "GET", `/user_groups/${groupId}/members`)).members.length, COUNT);
    assertSuccess(await big.api(owner, "POST", `/user_groups/${groupId}/members`, { delete: everyone }));
    assert.equal(assertSuccess(await big.api(owner, "GET", `/user_groups/${groupId}/members`)).members.length, 0);
    assertSuccess(await big.api(owner, "POST", `/user_groups/${groupId}/members`, { add: everyone }));
    assert.equal(assertSuccess(await big.api(owner, "GET", `/user_groups/${groupId}/members`, { direct_member_only: true })).members.length, COUNT);
    assertError(await big.api(owner, "POST", `/user_groups/${groupId}/members`, { add: everyone }), 400, "BAD_REQUEST", `User ${everyone[0]} is already a member of this group`);
  });

  test("group settings naming all of them directly", async () => {
    const owner = big.users.owner;
    const groupId = assertSuccess(await big.api(owner, "POST", "/user_groups/create", { name: "Bulk mentioners", description: "", members: [] })).group_id;
    const setting = { direct_members: everyone, direct_subgroups: [] };
    assertSuccess(await big.api(owner, "PATCH", `/user_groups/${groupId}`, { can_mention_group: { new: setting } }));
    assertSuccess(await big.api(owner, "PATCH", "/realm", { can_create_groups: { new: setting } }));
    const groups = assertSuccess(await big.api(owner, "GET", "/user_groups")).user_groups;
    assert.equal(groups.find((g: { id: number }) => g.id === groupId).can_mention_group.direct_members.length, COUNT);
  });

  test("typing to all of them", async () => {
    assertSuccess(await big.api(big.users.member, "POST", "/typing", { op: "start", to: everyone }));
  });
});

// ---------------------------------------------------------------------------
// Deep JSON

describe("JSON nested too deeply", () => {
  const DEEP = 100_000;

  test("PATCH /realm time limits, retention and group settings: 400 naming the parameter, form and JSON bodies", async () => {
    const owner = { authorization: basicAuth(u().owner.email, u().owner.apiKey) };
    for (const name of ["message_content_edit_limit_seconds", "message_retention_days", "can_create_groups"]) {
      assertError(await t.api(u().owner, "PATCH", "/realm", { [name]: nestedLists(DEEP) }), 400, "BAD_REQUEST", tooDeep(name));
      // A JSON body is decoded by the server before the parameters are read (by hand here: JSON.stringify would overflow the stack).
      const json = await raw("PATCH", "/api/v1/realm", { ...owner, "content-type": "application/json" }, `{"${name}": ${nestedLists(DEEP)}}`);
      assertError(json, 400, "BAD_REQUEST", tooDeep(name));
    }
  });

  test("at the limit it is an ordinary value; one level more is refused", async () => {
    assertError(await t.api(u().owner, "PATCH", "/realm", { message_retention_days: nestedLists(MAX_JSON_DEPTH) }), 400, "REQUEST_VARIABLE_INVALID");
    assertError(await t.api(u().owner, "PATCH", "/realm", { message_retention_days: nestedLists(MAX_JSON_DEPTH + 1) }), 400, "BAD_REQUEST", tooDeep("message_retention_days"));
    // Brackets inside strings do not count.
    assertError(await t.api(u().owner, "PATCH", "/realm", { message_retention_days: JSON.stringify("[".repeat(DEEP)) }), 400, "REQUEST_VARIABLE_INVALID");
  });

  test("group settings, narrows, message recipients and untyped values", async () => {
    const group = await createGroup();
    const deep = nestedLists(DEEP);
    const wrapped = (inner: string) => `{"new": {"direct_members": ${inner}, "direct_subgroups": []}}`;
    assertError(await t.api(u().owner, "PATCH", `/user_groups/${group}`, { can_mention_group: deep }), 400, "BAD_REQUEST", tooDeep("can_mention_group"));
    assertError(await t.api(u().owner, "PATCH", `/user_groups/${group}`, { can_mention_group: wrapped(deep) }), 400, "BAD_REQUEST", tooDeep("can_mention_group"));
    assertError(await t.api(u().owner, "POST", "/messages/flags/narrow", { anchor: "newest", num_before: 1, num_after: 0, narrow: deep, op: "add", flag: "read" }), 400, "BAD_REQUEST", tooDeep("narrow"));
    assertError(await t.api(u().owner, "POST", "/register", { narrow: deep }), 400, "BAD_REQUEST", tooDeep("narrow"));
    // GET: as deep as a URL can carry (Node refuses request heads over 16 KiB).
    const inUrl = nestedLists(5000);
    assertError(await raw("GET", `/api/v1/messages?anchor=newest&num_before=1&num_after=0&narrow=${inUrl}`, { authorization: basicAuth(u().member.email, u().member.apiKey) }), 400, "BAD_REQUEST", tooDeep("narrow"));
    assertError(await t.api(u().member, "POST", "/messages", { type: "direct", to: deep, content: "hi" }), 400, "BAD_REQUEST", tooDeep("to"));
    assertError(await t.api(u().member, "POST", "/messages", { type: "channel", to: deep, topic: "t", content: "hi" }), 400, "BAD_REQUEST", tooDeep("to"));
    assertError(await t.api(u().member, "PATCH", "/settings", { enter_sends: deep }), 400, "BAD_REQUEST", tooDeep("enter_sends"));
    const channel = await createChannel();
    assertError(await t.api(u().owner, "PATCH", `/users/me/subscriptions/${channel.id}`, { property: "pin_to_top", value: deep }), 400, "BAD_REQUEST", tooDeep("value"));
    assertError(
      await t.api(u().owner, "POST", "/users/me/subscriptions/properties", { subscription_data: `[{"stream_id": ${channel.id}, "property": "pin_to_top", "value": ${deep}}]` }),
      400,
      "BAD_REQUEST",
      tooDeep("subscription_data"),
    );
  });

  test("a JSON request body: every nested value is measured before it is re-encoded", async () => {
    const headers = { authorization: basicAuth(u().member.email, u().member.apiKey), "content-type": "application/json" };
    assertError(await raw("POST", "/api/v1/register", headers, `{"narrow": ${nestedLists(DEEP)}}`), 400, "BAD_REQUEST", tooDeep("narrow"));
    assertError(await raw("POST", "/api/v1/register", headers, `{"narrow": {"a": ${nestedLists(DEEP)}}}`), 400, "BAD_REQUEST", tooDeep("narrow"));
    // Unknown parameters too: the value is re-encoded before the declaration is consulted.
    assertError(await raw("PATCH", "/api/v1/settings", headers, `{"whatever": ${nestedLists(DEEP)}}`), 400, "BAD_REQUEST", tooDeep("whatever"));
    // At the limit, a JSON body's value parses like the same form field.
    assertError(await raw("POST", "/api/v1/register", headers, `{"narrow": ${nestedLists(MAX_JSON_DEPTH)}}`), 400, "BAD_REQUEST", 'narrow[0] should have exactly 2 items');
  });
});

// ---------------------------------------------------------------------------
// NUL characters

describe("NUL characters", () => {
  const basic = (email: string, key: string) => ({ authorization: basicAuth(email, key) });

  test("in the HTTP Basic email or API key: the 401 of an unknown user, on every authenticated route", async () => {
    const member = u().member;
    for (const [email, key] of [
      [`${member.email}\u0000`, member.apiKey],
      [`\u0000${member.email}`, member.apiKey],
      ["nobody\u0000@example.com", "x"],
      [member.email, `${member.apiKey}\u0000`],
    ] as const) {
      for (const [method, path] of [
        ["GET", "/api/v1/users/me"],
        ["POST", "/api/v1/messages"],
        ["GET", "/api/v1/user_uploads/1/ab/c.txt"],
      ] as const) {
        assertError(await raw(method, path, basic(email, key)), 401, "INVALID_API_KEY", "Invalid API key");
      }
    }
    // The file routes outside /api/v1 take the same credentials.
    const file = await raw("GET", "/user_uploads/1/ab/c.txt", basic(`${member.email}\u0000`, member.apiKey));
    assertError(file, 401, "INVALID_API_KEY", "Invalid API key");
  });

  test("in a message's `to`: channel name, email list, comma-separated emails", async () => {
    const member = u().member;
    const channel = await createChannel();
    const cases: [Params, string][] = [
      [{ type: "channel", to: `${channel.name}\u0000`, topic: "t" }, "to"],
      [{ type: "channel", to: JSON.stringify(`${channel.name}\u0000`), topic: "t" }, "to"],
      [{ type: "channel", to: JSON.stringify([`${channel.name}\u0000`]), topic: "t" }, "to[0]"],
      [{ type: "direct", to: JSON.stringify([u().admin.id, `${u().admin.email}\u0000`]) }, "to[1]"],
      [{ type: "direct", to: `${u().admin.email},x\u0000@example.com` }, "to"],
    ];
    for (const [params, where] of cases) {
      assertError(await t.api(member, "POST", "/messages", { content: "hi", ...params }), 400, "BAD_REQUEST", nul(where));
    }
  });

  test("in JSON-decoded strings and object keys of any parameter", async () => {
    const owner = u().owner;
    const channel = await createChannel();
    const cases: [string, string, Params, string][] = [
      ["GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [{ operator: "channel", operand: `${channel.name}\u0000` }] }, 'narrow[0]["operand"]'],
      ["GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [["is", "dm"], ["dm", `${u().admin.email}\u0000`]] }, "narrow[1][1]"],
      ["GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [["sender\u0000", u().admin.id]] }, "narrow[0][0]"],
      ["GET", "/messages/matches_narrow", { msg_ids: [1], narrow: [["topic", "x\u0000"]] }, "narrow[0][1]"],
      ["POST", "/register", { narrow: [["channel", `${channel.name}\u0000`]] }, "narrow[0][1]"],
      ["POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [`${u().member.email}\u0000`] }, "principals[0]"],
      ["DELETE", "/users/me/subscriptions", { subscriptions: [channel.name], principals: [`${u().member.email}\u0000`] }, "principals[0]"],
      ["POST", "/realm/profile_fields", { name: "Choice", field_type: 3, field_data: { "a\u0000": { text: "A", order: "1" } } }, "field_data"],
      ["PATCH", `/users/me/subscriptions/${channel.id}`, { property: "color", value: '"#ff\\u0000000"' }, "value"],
      ["PATCH", "/settings", { enter_sends: '"\\u0000"' }, "enter_sends"],
      ["POST", "/register", { client_capabilities: { "x\u0000": true } }, "client_capabilities"],
    ];
    for (const [method, path, params, name] of cases) {
      assertError(await t.api(owner, method, path, params), 400, "BAD_REQUEST", nul(name));
    }
    // An escaped backslash before "u0000" is no NUL.
    const escaped = await t.api(owner, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [["topic", "x\\u0000"]] });
    assertSuccess(escaped);
  });

  test("in path and query parameters, API and not: a client error, never a 5xx", async () => {
    const auth = basic(u().owner.email, u().owner.apiKey);
    assertError(await raw("GET", "/api/v1/users/x%00@example.com", auth), 400, "BAD_REQUEST", nul("user"));
    assertError(await raw("DELETE", "/api/v1/realm/emoji/x%00y", auth), 400, "BAD_REQUEST", nul("emoji_name"));
    assertError(await raw("GET", "/api/v1/get_stream_id?stream=x%00", auth), 400, "BAD_REQUEST", nul("stream"));
    assertError(await raw("GET", "/api/v1/user_uploads/1/ab%00/c.txt", auth), 400, "BAD_REQUEST", nul("*"));
    for (const path of [
      "/user_uploads/1/ab%00/c.txt",
      "/user_uploads/download/1/ab/c%00.txt",
      "/user_uploads/temporary/x%00y/c.txt",
      "/thumbnail?url=user_uploads/1/%00/x.png&size=full",
      "/avatar/1%00?v=%00",
      "/join/abc%00/",
      "/user_avatars/1/emoji/images/x%00.png",
    ]) {
      assertClientAnswer(await raw("GET", path, auth), `GET ${path}`);
    }
    const joinForm = await raw("POST", "/join/abc%00/", { "content-type": "application/x-www-form-urlencoded" }, "email=a%00%40example.com&full_name=x%00&password=secret%00pass");
    assertClientAnswer(joinForm, "POST /join");
  });

  test("in a JSON body's strings", async () => {
    const response = await raw(
      "POST",
      "/api/v1/messages",
      { ...basic(u().member.email, u().member.apiKey), "content-type": "application/json" },
      JSON.stringify({ type: "direct", to: [`${u().admin.email}\u0000`], content: "hi" }),
    );
    assertError(response, 400, "BAD_REQUEST", nul("to[0]"));
  });
});
