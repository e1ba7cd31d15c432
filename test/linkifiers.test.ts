// API-level tests of linkifiers (issue 21): GET /realm/linkifiers, POST
// /realm/filters, PATCH and DELETE /realm/filters/{filter_id}, PATCH
// /realm/linkifiers; realm_linkifiers in POST /register and
// `realm_linkifiers` events (only for the linkifier_url_template
// capability); Zulip's validation messages; the links in rendered content
// and topic_links of message objects (send, fetch, edit events); RE2's
// linear-time matching of catastrophic patterns.
// Zulip's behaviour: docs/zulip-behaviour/linkifiers.md.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { compileLinkifiers, renderMarkdown, topicLinks } from "../src/markdown/render.ts";
import { expandUrlTemplate, parseUrlTemplate } from "../src/markdown/linkifiers.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;
const db = () => t.services.storage.db;

const add = (user: TestUser, params: Params) => t.api(user, "POST", "/realm/filters", params);
const update = (user: TestUser, id: number | string, params: Params) => t.api(user, "PATCH", `/realm/filters/${id}`, params);
const remove = (user: TestUser, id: number | string) => t.api(user, "DELETE", `/realm/filters/${id}`);
const reorder = (user: TestUser, ids: unknown) => t.api(user, "PATCH", "/realm/linkifiers", { ordered_linkifier_ids: ids });

async function list(user: TestUser = u().member): Promise<any[]> {
  return assertSuccess(await t.api(user, "GET", "/realm/linkifiers")).linkifiers;
}

async function clearAll(): Promise<void> {
  for (const l of await list()) assertSuccess(await remove(u().admin, l.id));
}

function assertBad(response: ApiResponse, msg: string, errors?: Record<string, string[]>): void {
  assertError(response, 400, "BAD_REQUEST", msg);
  assert.deepEqual(response.body.errors, errors, JSON.stringify(response.body));
}

const TRAC = { pattern: "#(?P<id>[0-9]{2,8})", url_template: "https://trac.example.com/ticket/{id}" };

describe("POST /realm/filters and GET /realm/linkifiers", () => {
  beforeEach(clearAll);

  test("an administrator adds one: its id; every role lists it; the event carries the ordered list to capable clients", async () => {
    t.clearEvents();
    const reply = assertSuccess(await add(u().admin, TRAC));
    assert.deepEqual(Object.keys(reply).sort(), ["id", "msg", "result"]);
    const entry = { pattern: TRAC.pattern, url_template: TRAC.url_template, id: reply.id };
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"] as const) {
      const body = assertSuccess(await t.api(u()[role], "GET", "/realm/linkifiers"));
      assert.deepEqual(Object.keys(body).sort(), ["linkifiers", "msg", "result"]);
      assert.deepEqual(body.linkifiers, [entry], role);
    }
    const events = t.events.filter((n) => n.event.type === "realm_linkifiers");
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.event, { type: "realm_linkifiers", realm_linkifiers: [entry] });
    assert.deepEqual([...events[0]!.userIds].sort((a, b) => a - b), await t.activeUserIds());
    // Zulip sends no realm_filters event at this feature level; realm_linkifiers only to linkifier_url_template clients.
    assert.equal(t.events.filter((n) => n.event.type === "realm_filters").length, 0);
    assert.deepEqual(events[0]!.capability, { name: "linkifier_url_template", present: true });
  });

  test("register: realm_linkifiers for linkifier_url_template clients, [] otherwise; realm_filters is always []", async () => {
    const id = assertSuccess(await add(u().owner, TRAC)).id;
    const capable = await t.register(u().guest, { fetch_event_types: ["realm_linkifiers", "realm_filters"], client_capabilities: { linkifier_url_template: true } });
    assert.deepEqual(capable.realm_linkifiers, [{ pattern: TRAC.pattern, url_template: TRAC.url_template, id }]);
    assert.deepEqual(capable.realm_filters, []);
    const old = await t.register(u().guest, { fetch_event_types: ["realm_linkifiers", "realm_filters"] });
    assert.deepEqual(old.realm_linkifiers, []);
    assert.deepEqual(old.realm_filters, []);
  });

  test("the event reaches a capable queue, not one without the capability", async () => {
    const capable = await t.register(u().member, { event_types: ["realm_linkifiers"], client_capabilities: { linkifier_url_template: true } });
    const plain = await t.register(u().member, { event_types: ["realm_linkifiers"] });
    const id = assertSuccess(await add(u().admin, TRAC)).id;
    const got = await t.queuedEvents(u().member, capable.queue_id);
    assert.deepEqual(
      got.map((e: any) => ({ type: e.type, realm_linkifiers: e.realm_linkifiers })),
      [{ type: "realm_linkifiers", realm_linkifiers: [{ pattern: TRAC.pattern, url_template: TRAC.url_template, id }] }],
    );
    assert.deepEqual(await t.queuedEvents(u().member, plain.queue_id), []);
  });

  test("pattern and template are stripped; Zulip's accepted examples all pass", async () => {
    const id = assertSuccess(await add(u().admin, { pattern: "  #(?P<id>[123])\n", url_template: " https://realm.com/my_realm_filter/{id}  " })).id;
    assert.deepEqual(await list(), [{ id, pattern: "#(?P<id>[123])", url_template: "https://realm.com/my_realm_filter/{id}" }]);
    for (const [pattern, url_template] of [
      ["ZUL-(?P<id>\\d+)", "https://realm.com/my_realm_filter/#hashtag/{id}"],
      ["ZUL2-(?P<id>\\d+)", "https://realm.com/my_realm_filter/?value={id}"],
      ["_code=(?P<id>[0-9a-zA-Z]+)", "https://example.com/product/{id}/details"],
      ["PR (?P<id>[0-9]+)", "https://example.com/~user/web#view_type=type&model=model&action=12345&id={id}"],
      ["lp/(?P<id>[0-9]+)", "https://realm.com/my_realm_filter/?value={id}&sort=reverse"],
      ["!(?P<id>[0-9]+)", "https://realm.com/index.pl?Action=AgentTicketZoom;TicketNumber={id}"],
      ["ZULZ-(?P<hello>\\d+)-(?P<world>\\d+)", "https://realm.com/my_realm_filter/{hello}/{world}"],
      ["ZUL-URL-(?P<id>\\d+)", "https://example.com/%ba/{id}"],
      ["(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)", "https://github.com/{org}/{repo}/issue/{id}"],
      [
        "FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+);(?P<location>[a-z]+);(?P<name>[a-z]{2,8});(?P<chapter>[0-9]{2,3});(?P<fragment>[a-z]{2,8})",
        "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}",
      ],
      ["3#123", "https://example.com"],
      ["(?<id>[0-9]+)x", "https://example.com/{id}"],
    ]) {
      assertSuccess(await add(u().admin, { pattern, url_template }));
    }
  });

  test("patterns over 600 characters and URL templates over 1,024 are refused (Django's max_length message)", async () => {
    const long = "a".repeat(601);
    assertError(await t.api(t.users.admin, "POST", "/realm/filters", { pattern: long, url_template: "https://x.example/" }), 400, "BAD_REQUEST", "Ensure this value has at most 600 characters (it has 601).", {
      errors: { pattern: ["Ensure this value has at most 600 characters (it has 601)."] },
    });
    // Four-byte characters that do not compress: 1,000 of them answered 500 on PostgreSQL (the unique index's key was too large).
    const wide = (n: number) => Array.from({ length: n }, (_, i) => String.fromCodePoint(0x20000 + ((i * 7919) % 0x8000))).join("");
    assertError(await t.api(t.users.admin, "POST", "/realm/filters", { pattern: `${wide(992)}(?P<id>)`, url_template: "https://x.example/{id}" }), 400, "BAD_REQUEST", "Ensure this value has at most 600 characters (it has 1000).");
    assertSuccess(await t.api(t.users.admin, "POST", "/realm/filters", { pattern: `${wide(592)}(?P<id>)`, url_template: "https://x.example/{id}" }));
    const template = `https://x.example/${"b".repeat(1007)}`;
    assertError(await t.api(t.users.admin, "POST", "/realm/filters", { pattern: "#(?P<id>[0-9]+)", url_template: template }), 400, "BAD_REQUEST", "Ensure this value has at most 1024 characters (it has 1025).");
    // At the limit, accepted.
    assertSuccess(await t.api(t.users.admin, "POST", "/realm/filters", { pattern: `${"a".repeat(592)}(?P<id>)`, url_template: "https://x.example/{id}" }));
  });

  test("Zulip's validation messages, with every error under `errors`", async () => {
    const url = "https://realm.com/my_realm_filter/{id}";
    assertBad(await add(u().admin, { pattern: "", url_template: url }), "This field cannot be blank.", {
      pattern: ["This field cannot be blank."],
      __all__: ["Group 'id' in URL template is not present in linkifier pattern."],
    });
    assertBad(await add(u().admin, { pattern: "(foo", url_template: url }), "Bad regular expression: missing ): (foo", { __all__: ["Bad regular expression: missing ): (foo"] });
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d????)", url_template: url }), "Bad regular expression: bad repetition operator: ????", {
      __all__: ["Bad regular expression: bad repetition operator: ????"],
    });
    for (const [pattern, msg] of [
      ["a)", "unexpected ): a)"],
      ["[a", "missing ]: [a"],
      ["*a", "no argument for repetition operator: *"],
      ["a{1001}", "invalid repetition size: {1001}"],
      ["(?z)", "invalid perl operator: (?z"],
      ["[z-a]", "invalid character class range: z-a"],
      ["\\8", "invalid escape sequence: \\8"],
      ["a\\", "trailing \\"],
      ["(?P<id>a)(?P<id>b)", "invalid named capture group: id"],
      // Lookarounds and backreferences are not RE2.
      ["a(?=b)", "invalid perl operator: (?="],
    ]) {
      assertBad(await add(u().admin, { pattern, url_template: "https://example.com" }), `Bad regular expression: ${msg}`, { __all__: [`Bad regular expression: ${msg}`] });
    }
    const notInTemplate = "Group 'id' in linkifier pattern is not present in URL template.";
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d+)", url_template: "$fgfg" }), notInTemplate, { __all__: [notInTemplate] });
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d+)", url_template: "https://realm.com/my_realm_filter/" }), notInTemplate, { __all__: [notInTemplate] });
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d+)-(?P<hello>\\d+)", url_template: "https://realm.com/{hello}" }), notInTemplate, { __all__: [notInTemplate] });
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d+)-(?P<hello>\\d+)-(?P<world>\\d+)", url_template: "https://realm.com/{hello}" }), notInTemplate, {
      __all__: [notInTemplate],
    });
    const notInPattern = "Group 'hello' in URL template is not present in linkifier pattern.";
    assertBad(await add(u().admin, { pattern: "ZUL-(?P<id>\\d+)", url_template: "https://realm.com/{hello}" }), notInPattern, { __all__: [notInPattern] });
    // The smallest name is reported.
    assertBad(await add(u().admin, { pattern: "x", url_template: "https://realm.com/{zz}/{b}/{c}" }), "Group 'b' in URL template is not present in linkifier pattern.", {
      __all__: ["Group 'b' in URL template is not present in linkifier pattern."],
    });
    assertBad(await add(u().admin, { pattern: "#(?P<id>[123])", url_template: "{id" }), "Invalid URL template.", { url_template: ["Invalid URL template."] });
    for (const url_template of ["https://example.com/{foo", "https://example.com/{{}", "https://example.com/{//foo}", "https://example.com/{bar++}"]) {
      assertBad(await add(u().admin, { pattern: "(?P<foo>x)", url_template }), "Invalid URL template.", { url_template: ["Invalid URL template."] });
    }
    assertBad(await add(u().admin, { pattern: "x", url_template: " " }), "This field cannot be blank.", { url_template: ["This field cannot be blank."] });
    assertBad(await add(u().admin, { pattern: "", url_template: "" }), "This field cannot be blank.", {
      pattern: ["This field cannot be blank."],
      url_template: ["This field cannot be blank."],
    });
    assert.deepEqual(await list(), []);
  });

  test("a pattern once per organization: Django's uniqueness message", async () => {
    assertSuccess(await add(u().admin, TRAC));
    const taken = "Realm filter with this Realm and Pattern already exists.";
    assertBad(await add(u().admin, { ...TRAC, url_template: "https://other.example.com/{id}" }), taken, { __all__: [taken] });
    assertBad(await add(u().admin, { pattern: ` ${TRAC.pattern} `, url_template: "x" }), notInTemplateFor("id"), { __all__: [notInTemplateFor("id"), taken] });
    assert.equal((await list()).length, 1);
  });

  test("missing or malformed parameters", async () => {
    assertError(await add(u().admin, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'pattern' argument", { var_name: "pattern" });
    assertError(await add(u().admin, { pattern: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'url_template' argument", { var_name: "url_template" });
    const reply = assertSuccess(await add(u().admin, { pattern: "x", url_template: "https://x.example.com", other: 1 }));
    assert.deepEqual(reply.ignored_parameters_unsupported, ["other"]);
  });

  test("only owners and administrators, checked before the parameters; nothing is added or sent otherwise", async () => {
    t.clearEvents();
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await add(u()[role], TRAC), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      assertError(await add(u()[role], {}), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assertSuccess(await add(u().owner, TRAC));
    assert.equal((await list()).length, 1);
    assert.equal(t.events.filter((n) => n.event.type === "realm_linkifiers").length, 1);
    assertError(await t.api(null, "POST", "/realm/filters", TRAC), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "GET", "/realm/linkifiers"), 401, "UNAUTHORIZED");
  });
});

function notInTemplateFor(name: string): string {
  return `Group '${name}' in linkifier pattern is not present in URL template.`;
}

describe("PATCH /realm/filters/{filter_id}", () => {
  beforeEach(clearAll);

  test("an administrator changes pattern and template; the event has the new list", async () => {
    const id = assertSuccess(await add(u().admin, { pattern: "#(?P<id>[123])", url_template: "https://realm.com/my_realm_filter/{id}" })).id;
    t.clearEvents();
    assertSuccess(await update(u().owner, id, { pattern: " #(?P<id>[0-9]+) ", url_template: "https://realm.com/my_realm_filter/issues/{id}" }));
    const now = [{ id, pattern: "#(?P<id>[0-9]+)", url_template: "https://realm.com/my_realm_filter/issues/{id}" }];
    assert.deepEqual(await list(), now);
    const events = t.events.filter((n) => n.event.type === "realm_linkifiers");
    assert.deepEqual(
      events.map((n) => n.event),
      [{ type: "realm_linkifiers", realm_linkifiers: now }],
    );
    // Its own pattern again is fine.
    assertSuccess(await update(u().admin, id, { pattern: "#(?P<id>[0-9]+)", url_template: "https://x.example.com/{id}" }));
  });

  test("Zulip's errors: validation, unknown linkifier, another's pattern, missing parameters, roles", async () => {
    const id = assertSuccess(await add(u().admin, TRAC)).id;
    const other = assertSuccess(await add(u().admin, { pattern: "other", url_template: "https://o.example.com" })).id;
    assertBad(await update(u().admin, id, { pattern: "ZUL-(?P<id>\\d????)", url_template: TRAC.url_template }), "Bad regular expression: bad repetition operator: ????", {
      __all__: ["Bad regular expression: bad repetition operator: ????"],
    });
    assertBad(await update(u().admin, id, { pattern: "ZUL-(?P<id>\\d+)", url_template: "$fgfg" }), notInTemplateFor("id"), { __all__: [notInTemplateFor("id")] });
    assertBad(await update(u().admin, id, { pattern: TRAC.pattern, url_template: "{id" }), "Invalid URL template.", { url_template: ["Invalid URL template."] });
    assertBad(await update(u().admin, id, { pattern: "other", url_template: "https://x.example.com" }), "Realm filter with this Realm and Pattern already exists.", {
      __all__: ["Realm filter with this Realm and Pattern already exists."],
    });
    for (const bad of [other + 1000, 999999999, 2 ** 40, 0, -1]) assertBad(await update(u().admin, bad, TRAC), "Linkifier not found.");
    // An unknown linkifier is reported before the values are checked, as in Zulip.
    assertBad(await update(u().admin, other + 1000, { pattern: "(", url_template: "{" }), "Linkifier not found.");
    assertError(await update(u().admin, "abc", TRAC), 400, "BAD_REQUEST", "filter_id is not an integer");
    assertError(await update(u().admin, id, { pattern: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'url_template' argument", { var_name: "url_template" });
    assertError(await update(u().admin, id, { url_template: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'pattern' argument", { var_name: "pattern" });
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await update(u()[role], id, { pattern: "new", url_template: "https://n.example.com" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.deepEqual(
      (await list()).map((l) => l.pattern),
      [TRAC.pattern, "other"],
    );
  });
});

describe("URL template schemes (issue 25): http, https or none; refused at creation and update", () => {
  beforeEach(clearAll);

  const notHttp = "The URL template's scheme must be http or https.";
  const fromVariable = "The URL template's scheme must not come from a variable.";
  const refusedTemplates: [string, string, string][] = [
    ["(?P<x>[0-9]+)", "javascript:alert({x})", notHttp],
    ["(?P<x>[0-9]+)", "JavaScript:alert({x})", notHttp],
    ["(?P<x>[0-9]+)", "data:text/html,<script>alert({x})</script>", notHttp],
    ["(?P<x>[0-9]+)", "vbscript:msgbox({x})", notHttp],
    ["(?P<x>[0-9]+)", "java\tscript:alert({x})", notHttp],
    ["(?P<x>[0-9]+)", "java\nscript:alert({x})", notHttp],
    ["(?P<x>[0-9]+)", "\u0001javascript:alert({x})", notHttp],
    ["(?P<x>[0-9]+)", "ftp://files.example.com/{x}", notHttp],
    ["(?P<x>[0-9]+)", "mailto:{x}@example.com", notHttp],
    ["(?P<url>\\S+)", "{+url}", fromVariable],
    ["(?P<url>\\S+)", "{url}", fromVariable],
    ["(?P<rest>\\S+)", "java{rest}", fromVariable],
    ["(?P<s>[a-z]+)", "http{s}://example.com/", fromVariable],
  ];

  test("an administrator or owner gets a 400 for javascript:, data: and every scheme but http(s); nothing is stored or sent", async () => {
    t.clearEvents();
    for (const [pattern, url_template, msg] of refusedTemplates) {
      for (const role of ["admin", "owner"] as const) assertBad(await add(u()[role], { pattern, url_template }), msg, { url_template: [msg] });
    }
    assert.deepEqual(await list(), []);
    assert.deepEqual(t.events.filter((n) => n.event.type === "realm_linkifiers"), []);
    // Members are refused for their role first, whatever the template.
    assertError(await add(u().member, { pattern: "(?P<x>[0-9]+)", url_template: "javascript:alert({x})" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
  });

  test("updates are checked the same way and leave the linkifier as it was", async () => {
    const id = assertSuccess(await add(u().admin, TRAC)).id;
    t.clearEvents();
    for (const [pattern, url_template, msg] of refusedTemplates) {
      for (const role of ["admin", "owner"] as const) assertBad(await update(u()[role], id, { pattern, url_template }), msg, { url_template: [msg] });
    }
    assertError(await update(u().member, id, { pattern: "(?P<x>[0-9]+)", url_template: "javascript:alert({x})" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    assert.deepEqual(await list(), [{ id, ...TRAC }]);
    assert.deepEqual(t.events.filter((n) => n.event.type === "realm_linkifiers"), []);
  });

  test("the scheme error comes with the model's other errors, in Zulip's field order", async () => {
    assertBad(await add(u().admin, { pattern: "(?P<id>[0-9]+)", url_template: "javascript:alert(1)" }), notHttp, {
      url_template: [notHttp],
      __all__: [notInTemplateFor("id")],
    });
    assertBad(await add(u().admin, { pattern: "", url_template: "data:,{x}" }), "This field cannot be blank.", {
      pattern: ["This field cannot be blank."],
      url_template: [notHttp],
      __all__: ["Group 'x' in URL template is not present in linkifier pattern."],
    });
  });

  test("http and https in any case, and templates without a scheme (relative to the server), are accepted", async () => {
    for (const [pattern, url_template] of [
      ["A(?P<x>[0-9]+)", "http://a.example.com/{x}"],
      ["B(?P<x>[0-9]+)", "HTTPS://b.example.com/{x}"],
      ["C(?P<x>[0-9]+)", "/help/{x}"],
      ["D(?P<x>[0-9]+)", "#narrow/channel/{x}"],
      ["E(?P<x>[0-9]+)", "//e.example.com/{x}"],
      ["F(?P<x>[0-9]+)", "https://{x}.example.com/"],
    ]) {
      assertSuccess(await add(u().admin, { pattern, url_template }));
    }
    assert.equal((await list()).length, 6);
  });
});

describe("DELETE /realm/filters/{filter_id}", () => {
  beforeEach(clearAll);

  test("an administrator removes one; the event carries the rest; unknown ones are not found", async () => {
    const keep = assertSuccess(await add(u().admin, TRAC)).id;
    const gone = assertSuccess(await add(u().admin, { pattern: "gone", url_template: "https://g.example.com" })).id;
    t.clearEvents();
    assertSuccess(await remove(u().owner, gone));
    const rest = [{ id: keep, pattern: TRAC.pattern, url_template: TRAC.url_template }];
    assert.deepEqual(await list(), rest);
    assert.deepEqual(
      t.events.filter((n) => n.event.type === "realm_linkifiers").map((n) => n.event),
      [{ type: "realm_linkifiers", realm_linkifiers: rest }],
    );
    assertBad(await remove(u().admin, gone), "Linkifier not found.");
    assertBad(await remove(u().admin, 2 ** 40), "Linkifier not found.");
    assertError(await remove(u().admin, "abc"), 400, "BAD_REQUEST", "filter_id is not an integer");
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await remove(u()[role], keep), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.deepEqual(await list(), rest);
  });
});

describe("PATCH /realm/linkifiers (order)", () => {
  beforeEach(clearAll);

  test("Zulip's reorder test: creation order by default, a new order, new ones last, deletion keeps the order, bad lists refused", async () => {
    t.clearEvents();
    assertSuccess(await reorder(u().admin, []));
    assert.equal(t.events.filter((n) => n.event.type === "realm_linkifiers").length, 0);
    const ids: number[] = [];
    for (const n of [1, 2, 3]) ids.push(assertSuccess(await add(u().admin, { pattern: `${n}#(?P<id>[123])`, url_template: `https://filter.com/${n}/{id}` })).id);
    assert.deepEqual(
      (await list()).map((l) => l.id),
      ids,
    );
    t.clearEvents();
    const reversed = [ids[2]!, ids[1]!, ids[0]!];
    assertSuccess(await reorder(u().owner, reversed));
    assert.deepEqual(
      (await list()).map((l) => l.id),
      reversed,
    );
    const events = t.events.filter((n) => n.event.type === "realm_linkifiers");
    assert.equal(events.length, 1);
    assert.deepEqual(
      (events[0]!.event.realm_linkifiers as any[]).map((l) => l.id),
      reversed,
    );
    const added = assertSuccess(await add(u().admin, { pattern: "3#123", url_template: "https://example.com" })).id;
    let order = [...reversed, added];
    assert.deepEqual(
      (await list()).map((l) => l.id),
      order,
    );
    const deleted = order[2]!;
    assertSuccess(await remove(u().admin, deleted));
    order = [order[0]!, order[1]!, added];
    assert.deepEqual(
      (await list()).map((l) => l.id),
      order,
    );
    const rotated = [order[2]!, order[0]!, order[1]!];
    const all = "The ordered list must enumerate all existing linkifiers exactly once";
    assertBad(await reorder(u().admin, [deleted, ...rotated]), all);
    assertBad(await reorder(u().admin, [...rotated, rotated[0]]), "The ordered list must not contain duplicated linkifiers");
    assertBad(await reorder(u().admin, rotated.slice(0, 2)), all);
    assertBad(await reorder(u().admin, [...rotated.slice(0, 2), 2 ** 40]), all);
    assert.deepEqual(
      (await list()).map((l) => l.id),
      order,
    );
    assertError(await reorder(u().admin, "nope"), 400, "BAD_REQUEST");
    assertError(await reorder(u().admin, ["a"]), 400, "BAD_REQUEST");
    assertError(await t.api(u().admin, "PATCH", "/realm/linkifiers", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'ordered_linkifier_ids' argument", {
      var_name: "ordered_linkifier_ids",
    });
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await reorder(u()[role], rotated), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
  });
});

// ---------------------------------------------------------------- rendering

interface Channel {
  id: number;
  name: string;
}

let channel: Channel;

async function ensureChannel(): Promise<Channel> {
  if (channel) return channel;
  const name = uniqueName("linkifiers");
  assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [u().member.id, u().admin.id], send_new_subscription_messages: false }));
  const row = await db().selectFrom("channels").select("id").where("realm_id", "=", t.realm.id).where("name", "=", name).executeTakeFirstOrThrow();
  channel = { id: row.id, name };
  return channel;
}

async function send(content: string, topic = "topic"): Promise<number> {
  const c = await ensureChannel();
  return assertSuccess(await t.api(u().member, "POST", "/messages", { type: "stream", to: c.id, topic, content })).id;
}

async function fetched(id: number): Promise<any> {
  const body = assertSuccess(await t.api(u().member, "GET", "/messages", { message_ids: JSON.stringify([id]) }));
  return body.messages[0];
}

describe("rendering: message content and topic_links", () => {
  beforeEach(clearAll);

  test("Zulip's test_realm_patterns: content, topic_links in the message event and in GET /messages", async () => {
    assertSuccess(await add(u().admin, TRAC));
    t.clearEvents();
    const id = await send("We should fix #224 #336 #446 and #115, but not issue#124 or #1124z or [trac #15](https://trac.example.com/ticket/16) today.", "#444");
    const expected =
      '<p>We should fix <a href="https://trac.example.com/ticket/224">#224</a> <a href="https://trac.example.com/ticket/336">#336</a> <a href="https://trac.example.com/ticket/446">#446</a> and <a href="https://trac.example.com/ticket/115">#115</a>, but not issue#124 or #1124z or <a href="https://trac.example.com/ticket/16">trac #15</a> today.</p>';
    const event = t.events.find((n) => n.event.type === "message")!.event as any;
    assert.equal(event.message.content, expected);
    assert.deepEqual(event.message.topic_links, [{ url: "https://trac.example.com/ticket/444", text: "#444" }]);
    const message = await fetched(id);
    assert.equal(message.content, expected);
    assert.deepEqual(message.topic_links, [{ url: "https://trac.example.com/ticket/444", text: "#444" }]);
    const withUrl = await fetched(await send("x", "#444 https://google.com"));
    assert.deepEqual(withUrl.topic_links, [
      { url: "https://trac.example.com/ticket/444", text: "#444" },
      { url: "https://google.com", text: "https://google.com" },
    ]);
    // Direct messages have no topic links.
    const dm = assertSuccess(await t.api(u().member, "POST", "/messages", { type: "direct", to: JSON.stringify([u().admin.id]), content: "#123" })).id;
    const dmMessage = await fetched(dm);
    assert.equal(dmMessage.content, '<p><a href="https://trac.example.com/ticket/123">#123</a></p>');
    assert.deepEqual(dmMessage.topic_links, []);
  });

  test("a change applies to the next message at once; old messages keep their rendering (as in Zulip); topic_links follow the current set", async () => {
    const id = assertSuccess(await add(u().admin, TRAC)).id;
    const first = await send("see #123", "#123");
    assertSuccess(await update(u().admin, id, { pattern: TRAC.pattern, url_template: "https://new.example.com/{id}" }));
    const second = await send("see #123", "#123");
    assert.equal((await fetched(first)).content, '<p>see <a href="https://trac.example.com/ticket/123">#123</a></p>');
    assert.equal((await fetched(second)).content, '<p>see <a href="https://new.example.com/123">#123</a></p>');
    assert.deepEqual((await fetched(first)).topic_links, [{ url: "https://new.example.com/123", text: "#123" }]);
    assertSuccess(await remove(u().admin, id));
    assert.equal((await fetched(await send("see #123"))).content, "<p>see #123</p>");
    assert.deepEqual((await fetched(first)).topic_links, []);
  });

  test("another process's change is seen: the cache follows realms.linkifiers_version", async () => {
    assert.equal((await fetched(await send("see #77"))).content, "<p>see #77</p>");
    // What another server process does: rows and the version in one transaction, no event here.
    await db()
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto("realm_linkifiers").values({ realm_id: t.realm.id, pattern: TRAC.pattern, url_template: TRAC.url_template, order: 0 }).execute();
        await trx
          .updateTable("realms")
          .set((eb) => ({ linkifiers_version: eb("linkifiers_version", "+", 1) }))
          .where("id", "=", t.realm.id)
          .execute();
      });
    assert.equal((await fetched(await send("see #77"))).content, '<p>see <a href="https://trac.example.com/ticket/77">#77</a></p>');
  });

  test("edits: new content is rendered with the linkifiers; the update_message event has the new topic's topic_links", async () => {
    assertSuccess(await add(u().admin, TRAC));
    const id = await send("plain");
    t.clearEvents();
    assertSuccess(await t.api(u().member, "PATCH", `/messages/${id}`, { content: "now #42", topic: "about #43" }));
    const event = t.events.find((n) => n.event.type === "update_message")!.event as any;
    assert.equal(event.rendered_content, '<p>now <a href="https://trac.example.com/ticket/42">#42</a></p>');
    assert.deepEqual(event.topic_links, [{ url: "https://trac.example.com/ticket/43", text: "#43" }]);
    assert.deepEqual((await fetched(id)).topic_links, [{ url: "https://trac.example.com/ticket/43", text: "#43" }]);
  });

  test("POST /messages/render uses them; not inside code, links or URLs", async () => {
    assertSuccess(await add(u().admin, TRAC));
    const render = async (content: string) => assertSuccess(await t.api(u().member, "POST", "/messages/render", { content })).rendered;
    assert.equal(await render("#123"), '<p><a href="https://trac.example.com/ticket/123">#123</a></p>');
    assert.equal(await render("`#123` and\n```\n#124\n```"), '<p><code>#123</code> and</p>\n<div class="codehilite"><pre><span></span><code>#124\n</code></pre></div>');
    assert.equal(await render("https://example.com/a,#123"), '<p><a href="https://example.com/a,#123">https://example.com/a,#123</a></p>');
    assert.equal(await render("**#123** *x* #12"), '<p><strong>#123</strong> <em>x</em> <a href="https://trac.example.com/ticket/12">#12</a></p>');
    assert.equal(await render("> quoted #123"), '<blockquote>\n<p>quoted <a href="https://trac.example.com/ticket/123">#123</a></p>\n</blockquote>');
  });

  test("channel descriptions are rendered with them (Zulip's render_stream_description passes the realm)", async () => {
    assertSuccess(await add(u().admin, TRAC));
    const name = uniqueName("described");
    assertSuccess(await t.api(u().admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name, description: "Tracks #321" }], send_new_subscription_messages: false }));
    const row = await db().selectFrom("channels").select("rendered_description").where("realm_id", "=", t.realm.id).where("name", "=", name).executeTakeFirstOrThrow();
    assert.equal(row.rendered_description, '<p>Tracks <a href="https://trac.example.com/ticket/321">#321</a></p>');
  });

  test("a catastrophic pattern (exponential for a backtracking engine) renders fast", async () => {
    assertSuccess(await add(u().admin, { pattern: "(?P<x>(a+)+$)", url_template: "https://x.example.com/{x}" }));
    const content = " " + "a".repeat(9000) + "!";
    const start = performance.now();
    const id = await send(content, "a".repeat(50) + "!");
    const elapsed = performance.now() - start;
    // A backtracking engine takes longer than the universe's age here; RE2 scans once.
    assert.ok(elapsed < 10_000, `${elapsed} ms`);
    assert.equal((await fetched(id)).content, `<p>${content.trim()}</p>`);
  });
});

describe("the renderer (pure): Zulip's test_markdown linkifier cases", () => {
  const ctx = (linkifiers: { pattern: string; url_template: string }[]) => ({
    realmUrl: "http://zulip.testserver",
    usersByName: () => [],
    userById: () => undefined,
    groupByName: () => undefined,
    channelByName: () => undefined,
    linkifiers: compileLinkifiers(linkifiers.map((l, i) => ({ id: i + 1, ...l }))),
  });
  const trac = ctx([TRAC]);

  test("word boundaries (assert_conversion)", () => {
    for (const [text, converted] of [
      ["Hello #123 World", true],
      ["Hello #123World", false],
      ["Hello#123 World", false],
      ["Hello#123World", false],
      ["Hello\u00a0#123\u00a0World", true],
      ["チケットは#123です", false],
      ["チケットは #123です", false],
      ["チケットは#123 です", false],
      ["チケットは #123 です", true],
      ["(#123)", true],
      ["#123>", true],
      ['"#123"', true],
      ["#123@", true],
      [")#123(", false],
      ["##123", false],
    ] as const) {
      const html = renderMarkdown(text, trac).html;
      assert.equal(html.includes("https://trac.example.com"), converted, `${text}: ${html}`);
      assert.deepEqual(topicLinks(text, trac.linkifiers), converted ? [{ url: "https://trac.example.com/ticket/123", text: "#123" }] : [], text);
    }
  });

  test("several linkifiers: earlier ones win overlaps (test_multiple_matching_realm_patterns)", () => {
    const multi = ctx([
      { pattern: "(?P<id>ABC-[0-9]+)", url_template: "https://trac.example.com/ticket/{id}" },
      { pattern: "(?P<id>[A-Z][A-Z0-9]*-[0-9]+)", url_template: "https://other-trac.example.com/ticket/{id}" },
      { pattern: "(?P<id>[A-Z][A-Z0-9]+)", url_template: "https://yet-another-trac.example.com/ticket/{id}" },
    ]);
    assert.equal(
      renderMarkdown("We should fix ABC-123 or [trac ABC-123](https://trac.example.com/ticket/16) today.", multi).html,
      '<p>We should fix <a href="https://trac.example.com/ticket/ABC-123">ABC-123</a> or <a href="https://trac.example.com/ticket/16">trac ABC-123</a> today.</p>',
    );
    assert.deepEqual(topicLinks("ABC-123", multi.linkifiers), [{ url: "https://trac.example.com/ticket/ABC-123", text: "ABC-123" }]);
    assert.deepEqual(topicLinks("ASD-123 ABC-123 QWE", multi.linkifiers), [
      { url: "https://other-trac.example.com/ticket/ASD-123", text: "ASD-123" },
      { url: "https://trac.example.com/ticket/ABC-123", text: "ABC-123" },
      { url: "https://yet-another-trac.example.com/ticket/QWE", text: "QWE" },
    ]);
    assert.equal(
      renderMarkdown("ASD-123 ABC-123 QWE", multi).html,
      '<p><a href="https://other-trac.example.com/ticket/ASD-123">ASD-123</a> <a href="https://trac.example.com/ticket/ABC-123">ABC-123</a> <a href="https://yet-another-trac.example.com/ticket/QWE">QWE</a></p>',
    );
  });

  test("topic_links: nested patterns, raw URLs, ordering by priority (test_topic_links_ordering_by_priority)", () => {
    const nested = ctx([TRAC, { pattern: "hello#(?P<id>[0-9]+)", url_template: "https://trac.example.com/hello/{id}" }]);
    assert.deepEqual(topicLinks("hello#123 #234", nested.linkifiers), [
      { url: "https://trac.example.com/hello/123", text: "hello#123" },
      { url: "https://trac.example.com/ticket/234", text: "#234" },
    ]);
    assert.deepEqual(topicLinks("#111 https://google.com #111 #222 #111 https://google.com #222", trac.linkifiers), [
      { url: "https://trac.example.com/ticket/111", text: "#111" },
      { url: "https://google.com", text: "https://google.com" },
      { url: "https://trac.example.com/ticket/111", text: "#111" },
      { url: "https://trac.example.com/ticket/222", text: "#222" },
      { url: "https://trac.example.com/ticket/111", text: "#111" },
      { url: "https://google.com", text: "https://google.com" },
      { url: "https://trac.example.com/ticket/222", text: "#222" },
    ]);
    const prio = ctx([
      { pattern: "http", url_template: "http://example.com/" },
      { pattern: "b#(?P<id>[a-z]+)", url_template: "http://example.com/b/{id}" },
      { pattern: "a#(?P<aid>[a-z]+) b#(?P<bid>[a-z]+)", url_template: "http://example.com/a/{aid}/b/{bid}" },
      { pattern: "a#(?P<id>[a-z]+)", url_template: "http://example.com/a/{id}" },
    ]);
    assert.deepEqual(topicLinks("http://foo.com a#asd b#bar", prio.linkifiers), [
      { text: "http", url: "http://example.com/" },
      { text: "a#asd", url: "http://example.com/a/asd" },
      { text: "b#bar", url: "http://example.com/b/bar" },
    ]);
    const mixed = ctx([
      { pattern: "ABC-42", url_template: "https://google.com" },
      { pattern: "com.+(?P<id>ABC\\-[0-9]+)", url_template: "https://trac.example.com/ticket/{id}" },
    ]);
    assert.deepEqual(topicLinks("com ABC-42", mixed.linkifiers), [{ url: "https://google.com", text: "ABC-42" }]);
    assert.deepEqual(topicLinks("https://foo.com/ABC-123", mixed.linkifiers), [{ url: "https://foo.com/ABC-123", text: "https://foo.com/ABC-123" }]);
    assert.deepEqual(topicLinks("com https://foo.com/ABC-123", mixed.linkifiers), [{ url: "https://trac.example.com/ticket/ABC-123", text: "com https://foo.com/ABC-123" }]);
    assert.deepEqual(topicLinks("no match here", trac.linkifiers), []);
  });

  test("URL templates: escaping and RFC 6570 operators", () => {
    const esc = ctx([{ pattern: "url-(?P<id>[0-9]+)", url_template: "https://example.com/A%20Test/%%%ba/{id}" }]);
    assert.equal(renderMarkdown("url-123 is well-escaped", esc).html, '<p><a href="https://example.com/A%20Test/%25%25%ba/123">url-123</a> is well-escaped</p>');
    assert.deepEqual(topicLinks("url-123 is well-escaped", esc.linkifiers), [{ url: "https://example.com/A%20Test/%25%25%ba/123", text: "url-123" }]);
    const spaces = ctx([{ pattern: "community guidelines", url_template: "https://zulip.com/development-community/#community-norms" }]);
    assert.equal(
      renderMarkdown("please observe community guidelines here", spaces).html,
      '<p>please observe <a href="https://zulip.com/development-community/#community-norms">community guidelines</a> here</p>',
    );
    const big = ctx([
      {
        pattern:
          "FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+);(?P<location>[a-z]+);(?P<name>[a-z]{2,8});(?P<chapter>[0-9]{2,3});(?P<fragment>[a-z]{2,8})",
        url_template: "https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}",
      },
    ]);
    assert.equal(
      renderMarkdown("FOO_abcde;e;zulip;front;hello;123;fragment", big).html,
      '<p><a href="https://zone_e.zulip.net/ticket/front/abcde?name=hello&amp;chapter=123#fragm">FOO_abcde;e;zulip;front;hello;123;fragment</a></p>',
    );
    const t6570 = parseUrlTemplate("https://x/{a}/{+a}/{#a}/{;a,e}/{?a,e,u}{&a}/{a:2}/{u}")!;
    assert.equal(
      expandUrlTemplate(t6570, { a: "b c/d?é", e: "", u: null }),
      "https://x/b%20c%2Fd%3F%C3%A9/b%20c/d?%C3%A9/#b%20c/d?%C3%A9/;a=b%20c%2Fd%3F%C3%A9;e/?a=b%20c%2Fd%3F%C3%A9&e=&a=b%20c%2Fd%3F%C3%A9/b%20/",
    );
    // An unsafe result (javascript:) is no link, as Zulip's url_to_a refuses it.
    const js = ctx([{ pattern: "js(?P<x>[0-9])", url_template: "javascript:alert({x})" }]);
    assert.equal(renderMarkdown("js1", js).html, "<p>js1</p>");
    // Links to the organization itself become relative.
    const local = ctx([{ pattern: "home", url_template: "http://zulip.testserver/#narrow/channel/1-general" }]);
    assert.equal(renderMarkdown("home", local).html, '<p><a href="#narrow/channel/1-general">home</a></p>');
  });

  test("a pattern that cannot be wrapped (a group named like Zulip's own) matches nothing", () => {
    const clash = ctx([{ pattern: "(?P<linkifier_actual_match>x)", url_template: "https://x.example.com/{linkifier_actual_match}" }, TRAC]);
    assert.equal(renderMarkdown("x #12", clash).html, '<p>x <a href="https://trac.example.com/ticket/12">#12</a></p>');
  });

  test("catastrophic patterns stay linear", () => {
    const cat = ctx([{ pattern: "(?P<x>(a+)+$)", url_template: "https://x.example.com/{x}" }, { pattern: "(?P<y>(x*)*y)", url_template: "https://y.example.com/{y}" }]);
    for (const n of [5000, 20000]) {
      const start = performance.now();
      renderMarkdown(" " + "a".repeat(n) + "! " + "x".repeat(n), cat);
      topicLinks("a".repeat(60) + "!", cat.linkifiers);
      assert.ok(performance.now() - start < 5000, `${n}: ${performance.now() - start} ms`);
    }
  });
});
