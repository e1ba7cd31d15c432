// API-level tests of code playgrounds (issue 19): POST /realm/playgrounds,
// DELETE /realm/playgrounds/{playground_id}, realm_playgrounds in POST
// /register and `realm_playgrounds` events; administrators only; Zulip's
// validation messages (the view's pygments_language checks, then the model's
// full_clean reported with `errors`).
// Zulip's behaviour: docs/zulip-behaviour/misc-endpoints.md.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { after, before, describe, test } from "node:test";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;

const add = (user: TestUser, params: Params) => t.api(user, "POST", "/realm/playgrounds", params);
const remove = (user: TestUser, id: number | string) => t.api(user, "DELETE", `/realm/playgrounds/${id}`);

function playground(overrides: Params = {}): Params {
  return { name: uniqueName("Playground"), pygments_language: "Python", url_template: "https://python.example.com/?code={code}", ...overrides };
}

async function listed(user: TestUser = u().member): Promise<any[]> {
  return (await t.register(user, { fetch_event_types: ["realm_playgrounds"] })).realm_playgrounds;
}

function assertBad(response: ApiResponse, msg: string, errors?: Record<string, string[]>): void {
  assertError(response, 400, "BAD_REQUEST", msg);
  assert.deepEqual(response.body.errors, errors, JSON.stringify(response.body));
}

describe("POST /realm/playgrounds", () => {
  test("an administrator adds one: its id; register lists it for every role; the event has the whole list", async () => {
    const before = await listed();
    const params = playground();
    t.clearEvents();
    const reply = assertSuccess(await add(u().admin, params));
    assert.deepEqual(Object.keys(reply).sort(), ["id", "msg", "result"]);
    assert.equal(typeof reply.id, "number");
    const entry = { id: reply.id, name: params.name, pygments_language: "Python", url_template: params.url_template };
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"] as const) assert.deepEqual(await listed(u()[role]), [...before, entry], role);
    const events = t.events.filter((n) => n.event.type === "realm_playgrounds");
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.event, { type: "realm_playgrounds", realm_playgrounds: [...before, entry] });
    assert.deepEqual([...events[0]!.userIds].sort((a, b) => a - b), await t.activeUserIds());
  });

  test("several per language, listed oldest first; values are stripped", async () => {
    const one = assertSuccess(await add(u().owner, playground({ name: "  Rust one  ", pygments_language: " Rust ", url_template: " https://play.rust-lang.org/?code={code} " }))).id;
    const two = assertSuccess(await add(u().owner, playground({ name: "Rust two", pygments_language: "Rust" }))).id;
    const rust = (await listed()).filter((p) => p.pygments_language === "Rust");
    assert.deepEqual(
      rust.map((p) => [p.id, p.name, p.url_template]),
      [
        [one, "Rust one", "https://play.rust-lang.org/?code={code}"],
        [two, "Rust two", "https://python.example.com/?code={code}"],
      ],
    );
  });

  test("the same name and language twice: Zulip's uniqueness message; another language is fine", async () => {
    const params = playground({ name: "Twice", pygments_language: "Go" });
    assertSuccess(await add(u().admin, params));
    assertBad(await add(u().admin, params), "Realm playground with this Realm, Pygments language and Name already exists.", {
      __all__: ["Realm playground with this Realm, Pygments language and Name already exists."],
    });
    assertBad(await add(u().admin, { ...params, name: "  Twice " }), "Realm playground with this Realm, Pygments language and Name already exists.", {
      __all__: ["Realm playground with this Realm, Pygments language and Name already exists."],
    });
    assertSuccess(await add(u().admin, { ...params, pygments_language: "Go+" }));
    assertSuccess(await add(u().admin, { ...params, name: "twice" }));
  });

  test("URL templates: RFC 6570 with code as the only variable", async () => {
    for (const url_template of [
      "https://example.com/{code}",
      "https://example.com/run{?code}",
      "https://example.com/#{+code}",
      "https://example.com{/code*}",
      "https://example.com/?c={code:100}&again={code}",
      "https://example.com/a b?c={code}",
    ]) {
      assertSuccess(await add(u().admin, playground({ url_template })));
    }
    const onlyCode = '"code" should be the only variable present in the URL template';
    assertBad(await add(u().admin, playground({ url_template: "https://template.com{?test,code}" })), onlyCode, { __all__: [onlyCode] });
    assertBad(await add(u().admin, playground({ url_template: "https://{host}/{code}" })), onlyCode, { __all__: [onlyCode] });
    const missing = 'Missing the required variable "code" in the URL template';
    assertBad(await add(u().admin, playground({ url_template: "https://template.com{?test}" })), missing, { __all__: [missing] });
    assertBad(await add(u().admin, playground({ url_template: "https://template.com/" })), missing, { __all__: [missing] });
    for (const url_template of [
      "https://template.com?test={test",
      "https://template.com/}{code}",
      "https://template.com/{}",
      "https://template.com/{co de}",
      "https://template.com/{=code}",
      "https://template.com/{code:0}",
      "https://template.com/{code:10000}",
      "https://template.com/{{code}}",
      "https://template.com/{code,}",
    ]) {
      assertBad(await add(u().admin, playground({ url_template })), "Invalid URL template.", { url_template: ["Invalid URL template."] });
    }
  });

  test("blank values: Django's message, every field's errors in field order", async () => {
    assertBad(await add(u().admin, playground({ url_template: "  " })), "This field cannot be blank.", {
      url_template: ["This field cannot be blank."],
      __all__: ['Missing the required variable "code" in the URL template'],
    });
    assertBad(await add(u().admin, playground({ name: " " })), "This field cannot be blank.", { name: ["This field cannot be blank."] });
    assertBad(await add(u().admin, playground({ pygments_language: "" })), "This field cannot be blank.", { pygments_language: ["This field cannot be blank."] });
    assertBad(await add(u().admin, playground({ name: "", pygments_language: "", url_template: "bad{" })), "Invalid URL template.", {
      url_template: ["Invalid URL template."],
      name: ["This field cannot be blank."],
      pygments_language: ["This field cannot be blank."],
    });
  });

  test("pygments_language: the view's checks come first, without errors", async () => {
    assertBad(await add(u().admin, playground({ pygments_language: "a$b$c" })), "Invalid characters in pygments language");
    assertBad(await add(u().admin, playground({ pygments_language: "x".repeat(41), url_template: "bad{" })), "pygments_language is too long (limit: 40 characters)");
    assertSuccess(await add(u().admin, playground({ pygments_language: "x".repeat(40) })));
    assertSuccess(await add(u().admin, playground({ pygments_language: "c++ #/.-_" })));
  });

  test("missing parameters: REQUEST_VARIABLE_MISSING, in Zulip's order", async () => {
    assertError(await add(u().admin, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'name' argument", { var_name: "name" });
    assertError(await add(u().admin, { name: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'url_template' argument", { var_name: "url_template" });
    assertError(await add(u().admin, { name: "x", url_template: "{code}" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'pygments_language' argument", {
      var_name: "pygments_language",
    });
  });

  test("only owners and administrators, checked before the parameters; nothing is added or sent otherwise", async () => {
    const before = await listed();
    t.clearEvents();
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await add(u()[role], playground()), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      assertError(await add(u()[role], {}), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.deepEqual(await listed(), before);
    assert.deepEqual(t.events.filter((n) => n.event.type === "realm_playgrounds"), []);
    assertError(await t.api(null, "POST", "/realm/playgrounds", playground()), 401, "UNAUTHORIZED");
  });
});

describe("POST /realm/playgrounds: bounds and URL schemes (issue 25)", () => {
  const tooLong = (max: number, length: number) => `Ensure this value has at most ${max} characters (it has ${length}).`;
  // Hex does not compress, so PostgreSQL cannot squeeze it under its index-row limit.
  const incompressible = (length: number) => crypto.randomBytes(length).toString("hex").slice(0, length);

  test("names past 100 characters: a 400 with Django's max_length message on both databases, nothing stored or sent", async () => {
    const before = await listed();
    t.clearEvents();
    for (const role of ["admin", "owner"] as const) {
      const name = incompressible(8000);
      assertBad(await add(u()[role], playground({ name })), tooLong(100, 8000), { name: [tooLong(100, 8000)] });
    }
    assertBad(await add(u().admin, playground({ name: "\u{1F980}".repeat(101) })), tooLong(100, 101), { name: [tooLong(100, 101)] });
    assert.deepEqual(await listed(), before);
    assert.deepEqual(t.events.filter((n) => n.event.type === "realm_playgrounds"), []);
    // Counted after stripping, in characters (four-byte ones included): 100 is fine.
    const atLimit = "\u{1F980}".repeat(100);
    const id = assertSuccess(await add(u().admin, playground({ name: `  ${atLimit}  ` }))).id;
    assert.equal((await listed()).find((p) => p.id === id)?.name, atLimit);
    // Members are refused for their role first.
    assertError(await add(u().member, playground({ name: incompressible(8000) })), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
  });

  test("URL templates past 1,024 characters: Django's message; with a long name too, both are reported, template first", async () => {
    const template = `https://example.com/?code={code}&pad=${"p".repeat(1024 - 37 + 1)}`;
    assert.equal(template.length, 1025);
    assertBad(await add(u().admin, playground({ url_template: template })), tooLong(1024, 1025), { url_template: [tooLong(1024, 1025)] });
    assertBad(await add(u().admin, playground({ url_template: template, name: "n".repeat(101) })), tooLong(1024, 1025), {
      url_template: [tooLong(1024, 1025)],
      name: [tooLong(100, 101)],
    });
    assertSuccess(await add(u().admin, playground({ url_template: template.slice(0, 1024) })));
  });

  test("URL templates make http(s) links only: javascript:, data: and other schemes, or a scheme from {code}, are refused", async () => {
    const notHttp = "The URL template's scheme must be http or https.";
    const fromVariable = "The URL template's scheme must not come from a variable.";
    const before = await listed();
    for (const [url_template, msg] of [
      ["javascript:alert({code})", notHttp],
      ["JAVASCRIPT:eval({code})", notHttp],
      ["data:text/html,{code}", notHttp],
      ["java\tscript:{code}", notHttp],
      ["ftp://example.com/{code}", notHttp],
      ["{code}", fromVariable],
      ["{+code}", fromVariable],
      ["java{code}", fromVariable],
    ] as const) {
      for (const role of ["admin", "owner"] as const) assertBad(await add(u()[role], playground({ url_template })), msg, { url_template: [msg] });
    }
    assert.deepEqual(await listed(), before);
    assertError(await add(u().member, playground({ url_template: "javascript:alert({code})" })), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    for (const url_template of ["http://example.com/?c={code}", "HTTPS://example.com/{code}", "/run{?code}"]) assertSuccess(await add(u().admin, playground({ url_template })));
  });
});

describe("DELETE /realm/playgrounds/{playground_id}", () => {
  test("an administrator removes one; the event carries the rest", async () => {
    const keep = assertSuccess(await add(u().admin, playground({ pygments_language: "Keep" }))).id;
    const gone = assertSuccess(await add(u().admin, playground({ pygments_language: "Gone" }))).id;
    t.clearEvents();
    assertSuccess(await remove(u().owner, gone));
    const after = await listed();
    assert.ok(after.some((p) => p.id === keep));
    assert.equal(after.some((p) => p.id === gone), false);
    const events = t.events.filter((n) => n.event.type === "realm_playgrounds");
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.event.realm_playgrounds, after);
    assert.deepEqual([...events[0]!.userIds].sort((a, b) => a - b), await t.activeUserIds());
  });

  test("unknown or already removed: Invalid playground", async () => {
    const id = assertSuccess(await add(u().admin, playground())).id;
    assertSuccess(await remove(u().admin, id));
    assertBad(await remove(u().admin, id), "Invalid playground");
    assertBad(await remove(u().admin, 999999), "Invalid playground");
    assertError(await remove(u().admin, "abc"), 400, "BAD_REQUEST", "playground_id is not an integer");
  });

  test("only owners and administrators", async () => {
    const id = assertSuccess(await add(u().admin, playground())).id;
    for (const role of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await remove(u()[role], id), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.ok((await listed()).some((p) => p.id === id));
  });
});
