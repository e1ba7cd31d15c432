// Saved snippets: GET/POST /saved_snippets, PATCH/DELETE
// /saved_snippets/{saved_snippet_id} — reply shapes, stripping and limits,
// Zulip's errors (404 with code BAD_REQUEST for a missing snippet), PATCH
// with nothing to change, snippets private to their owner for every role, the
// `saved_snippets` add/update/remove events (to the owner only) and
// /register's saved_snippets.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import type { Notification } from "../src/events/notifier.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

const NOW = 1_750_000_000;

let t: TestApp;
before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const fresh = (role: number = Role.MEMBER) => t.createUser(uniqueName("Snippeter"), role);
const list = async (user: TestUser) => assertSuccess(await t.api(user, "GET", "/saved_snippets")).saved_snippets;
const create = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/saved_snippets", params);
const edit = (user: TestUser, id: number | string, params: Record<string, unknown> = {}) => t.api(user, "PATCH", `/saved_snippets/${id}`, params);
const remove = (user: TestUser, id: number | string) => t.api(user, "DELETE", `/saved_snippets/${id}`);

async function createOk(user: TestUser, title: string, content: string): Promise<number> {
  const body = assertSuccess(await create(user, { title, content }));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "saved_snippet_id"]);
  assert.equal(typeof body.saved_snippet_id, "number");
  return body.saved_snippet_id;
}

/** Every saved_snippets notification since the last clearEvents: the event and who it went to. */
const notifications = (): Pick<Notification, "event" | "userIds">[] =>
  t.events.filter((n) => n.event.type === "saved_snippets").map((n) => ({ event: n.event, userIds: [...n.userIds] }));

const NOT_FOUND = "Saved snippet does not exist.";

describe("saved snippets: create, list, edit, delete", () => {
  test("a new user has none; snippets come back with every field, in ID order", async () => {
    const user = await fresh();
    assert.deepEqual(await list(user), []);
    const first = await createOk(user, "Sign-off", "Cheers,\nMax");
    const second = await createOk(user, "Greeting", "Hello **there**");
    const third = await createOk(user, "Agenda", "1. Status");
    assert.ok(first < second && second < third);
    assert.deepEqual(await list(user), [
      { id: first, title: "Sign-off", content: "Cheers,\nMax", date_created: NOW },
      { id: second, title: "Greeting", content: "Hello **there**", date_created: NOW },
      { id: third, title: "Agenda", content: "1. Status", date_created: NOW },
    ]);
  });

  test("title and content are stored stripped of surrounding whitespace (Python's notion of it)", async () => {
    const user = await fresh();
    const id = await createOk(user, "  \t Title with  inner space\n ", "\n\n  body line 1\n  body line 2  \n\n");
    const other = await createOk(user, "\u00a0\u2003nbsp\u3000", "\u0085next line\u001f");
    assert.deepEqual(await list(user), [
      { id, title: "Title with  inner space", content: "body line 1\n  body line 2", date_created: NOW },
      { id: other, title: "nbsp", content: "next line", date_created: NOW },
    ]);
  });

  test("limits: title 60 and content 10000 code points, counted after stripping", async () => {
    const user = await fresh();
    const title = "😀".repeat(60); // 60 code points, 120 UTF-16 units
    const content = "c".repeat(10000);
    const id = await createOk(user, `   ${title}   `, ` ${content} `);
    assert.deepEqual(await list(user), [{ id, title, content, date_created: NOW }]);
    assertError(await create(user, { title: "t".repeat(61), content: "x" }), 400, "BAD_REQUEST", "title is too long (limit: 60 characters)");
    assertError(await create(user, { title: "😀".repeat(61), content: "x" }), 400, "BAD_REQUEST", "title is too long (limit: 60 characters)");
    assertError(await create(user, { title: "t", content: "c".repeat(10001) }), 400, "BAD_REQUEST", "content is too long (limit: 10000 characters)");
    assert.equal((await list(user)).length, 1);
  });

  test("POST errors: missing, blank and whitespace-only values", async () => {
    const user = await fresh();
    assertError(await create(user, { content: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'title' argument", { var_name: "title" });
    assertError(await create(user, { title: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'content' argument", { var_name: "content" });
    assertError(await create(user, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'title' argument");
    assertError(await create(user, { title: "", content: "x" }), 400, "BAD_REQUEST", "title cannot be blank");
    assertError(await create(user, { title: " \t\n ", content: "x" }), 400, "BAD_REQUEST", "title cannot be blank");
    assertError(await create(user, { title: "x", content: "" }), 400, "BAD_REQUEST", "content cannot be blank");
    assertError(await create(user, { title: "x", content: "\n\n   " }), 400, "BAD_REQUEST", "content cannot be blank");
    assertError(await create(user, { title: "x\u0000y", content: "x" }), 400, "BAD_REQUEST", "title contains a NUL character");
    assert.deepEqual(await list(user), []);
    assert.deepEqual(notifications(), []);
  });

  test("PATCH changes only what is given, stripped; the rest and date_created stay", async () => {
    const user = await fresh();
    const id = await createOk(user, "Old title", "Old content");
    const keep = await createOk(user, "Untouched", "Same");
    t.services.now = () => NOW + 500;
    try {
      assertSuccess(await edit(user, id, { title: "  New title  " }));
      assert.deepEqual((await list(user))[0], { id, title: "New title", content: "Old content", date_created: NOW });
      assertSuccess(await edit(user, id, { content: "\nNew content\n" }));
      assert.deepEqual((await list(user))[0], { id, title: "New title", content: "New content", date_created: NOW });
      const body = assertSuccess(await edit(user, id, { title: "Both", content: "changed" }));
      assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    } finally {
      t.services.now = () => NOW;
    }
    assert.deepEqual(await list(user), [
      { id, title: "Both", content: "changed", date_created: NOW },
      { id: keep, title: "Untouched", content: "Same", date_created: NOW },
    ]);
  });

  test("PATCH errors: bad values (checked before the look-up), unknown and foreign IDs", async () => {
    const user = await fresh();
    const owner = await fresh();
    const id = await createOk(user, "Mine", "text");
    const theirs = await createOk(owner, "Theirs", "secret");
    assertError(await edit(user, id, { title: "   " }), 400, "BAD_REQUEST", "title cannot be blank");
    assertError(await edit(user, id, { content: "" }), 400, "BAD_REQUEST", "content cannot be blank");
    assertError(await edit(user, id, { title: "t".repeat(61) }), 400, "BAD_REQUEST", "title is too long (limit: 60 characters)");
    assertError(await edit(user, id, { content: "c".repeat(10001) }), 400, "BAD_REQUEST", "content is too long (limit: 10000 characters)");
    // Invalid values fail before the existence check.
    assertError(await edit(user, 999999, { title: "" }), 400, "BAD_REQUEST", "title cannot be blank");
    assertError(await edit(user, 999999, { title: "x" }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await edit(user, theirs, { title: "hijacked" }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await edit(user, theirs, { content: "hijacked" }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await edit(user, "abc", { title: "x" }), 400, "BAD_REQUEST", "saved_snippet_id is not an integer");
    assert.deepEqual(await list(user), [{ id, title: "Mine", content: "text", date_created: NOW }]);
    assert.deepEqual(await list(owner), [{ id: theirs, title: "Theirs", content: "secret", date_created: NOW }]);
    assert.deepEqual(notifications().filter((n) => n.event.op !== "add"), []);
  });

  test("PATCH with nothing to change succeeds at once, without an event, even for an unknown or foreign ID", async () => {
    const user = await fresh();
    const owner = await fresh();
    const id = await createOk(user, "Mine", "text");
    const theirs = await createOk(owner, "Theirs", "secret");
    t.clearEvents();
    for (const target of [id, 999999, theirs]) {
      const body = assertSuccess(await edit(user, target));
      assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    }
    assert.deepEqual(notifications(), []);
    assert.deepEqual(await list(user), [{ id, title: "Mine", content: "text", date_created: NOW }]);
  });

  test("DELETE removes only that snippet; unknown, foreign and already deleted IDs do not exist", async () => {
    const user = await fresh();
    const owner = await fresh();
    const gone = await createOk(user, "Gone", "bye");
    const stays = await createOk(user, "Stays", "hi");
    const theirs = await createOk(owner, "Theirs", "secret");
    const body = assertSuccess(await remove(user, gone));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assert.deepEqual(await list(user), [{ id: stays, title: "Stays", content: "hi", date_created: NOW }]);
    assertError(await remove(user, gone), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, 999999), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, theirs), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, "abc"), 400, "BAD_REQUEST", "saved_snippet_id is not an integer");
    assert.deepEqual(await list(owner), [{ id: theirs, title: "Theirs", content: "secret", date_created: NOW }]);
  });

  test("unsupported parameters are reported as ignored", async () => {
    const user = await fresh();
    const body = assertSuccess(await create(user, { title: "t", content: "c", color: "red" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["color"]);
  });

  test("every role, guests and bots included, has snippets of their own", async () => {
    const roles = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;
    const ids: Record<string, number> = {};
    for (const role of roles) ids[role] = await createOk(t.users[role], `${role} title`, `${role} content`);
    for (const role of roles) {
      const user = t.users[role];
      assert.deepEqual(await list(user), [{ id: ids[role], title: `${role} title`, content: `${role} content`, date_created: NOW }], role);
      assertSuccess(await edit(user, ids[role]!, { title: `${role} edited` }));
      for (const other of roles) {
        if (other !== role) assertError(await remove(user, ids[other]!), 404, "BAD_REQUEST", NOT_FOUND);
      }
    }
    for (const role of roles) {
      assert.deepEqual(await list(t.users[role]), [{ id: ids[role], title: `${role} edited`, content: `${role} content`, date_created: NOW }], role);
      assertSuccess(await remove(t.users[role], ids[role]!));
      assert.deepEqual(await list(t.users[role]), [], role);
    }
  });

  test("unauthenticated requests are refused", async () => {
    assertError(await t.api(null, "GET", "/saved_snippets"), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "POST", "/saved_snippets", { title: "t", content: "c" }), 401, "UNAUTHORIZED");
  });
});

describe("saved snippets: events and /register", () => {
  test("add, update and remove events carry the full snippet (or its ID) and go to the owner alone", async () => {
    const user = await fresh();
    const id = await createOk(user, " Title ", " Content ");
    assertSuccess(await edit(user, id, { content: "Edited" }));
    assertSuccess(await remove(user, id));
    assert.deepEqual(notifications(), [
      { event: { type: "saved_snippets", op: "add", saved_snippet: { id, title: "Title", content: "Content", date_created: NOW } }, userIds: [user.id] },
      { event: { type: "saved_snippets", op: "update", saved_snippet: { id, title: "Title", content: "Edited", date_created: NOW } }, userIds: [user.id] },
      { event: { type: "saved_snippets", op: "remove", saved_snippet_id: id }, userIds: [user.id] },
    ]);
  });

  test("failed requests send no event", async () => {
    const user = await fresh();
    const id = await createOk(user, "t", "c");
    t.clearEvents();
    assertError(await create(user, { title: "", content: "c" }), 400, "BAD_REQUEST");
    assertError(await edit(user, id, { title: "" }), 400, "BAD_REQUEST");
    assertError(await edit(user, 999999, { title: "x" }), 404, "BAD_REQUEST");
    assertError(await remove(user, 999999), 404, "BAD_REQUEST");
    assert.deepEqual(notifications(), []);
  });

  test("the events reach the owner's queue and no one else's", async () => {
    const user = await fresh(Role.GUEST);
    const queue = (await t.register(user, { event_types: ["saved_snippets"] })).queue_id as string;
    const other = (await t.register(t.users.admin, { event_types: ["saved_snippets"] })).queue_id as string;
    const id = await createOk(user, "Queued", "text");
    assertSuccess(await edit(user, id, { title: "Renamed" }));
    assertSuccess(await remove(user, id));
    assert.deepEqual(
      (await t.queuedEvents(user, queue)).map(({ id: _eventId, ...event }) => event),
      [
        { type: "saved_snippets", op: "add", saved_snippet: { id, title: "Queued", content: "text", date_created: NOW } },
        { type: "saved_snippets", op: "update", saved_snippet: { id, title: "Renamed", content: "text", date_created: NOW } },
        { type: "saved_snippets", op: "remove", saved_snippet_id: id },
      ],
    );
    assert.deepEqual(await t.queuedEvents(t.users.admin, other), []);
  });

  test("/register's saved_snippets is the user's own list, as GET shows it, after changes", async () => {
    const user = await fresh(Role.MODERATOR);
    const state = async (who: TestUser) => (await t.register(who, { fetch_event_types: ["saved_snippets"] })).saved_snippets;
    assert.deepEqual(await state(user), []);
    const a = await createOk(user, "A", "first");
    const b = await createOk(user, "B", "second");
    const c = await createOk(user, "C", "third");
    assertSuccess(await edit(user, b, { title: "B2" }));
    assertSuccess(await remove(user, a));
    const expected = [
      { id: b, title: "B2", content: "second", date_created: NOW },
      { id: c, title: "C", content: "third", date_created: NOW },
    ];
    assert.deepEqual(await state(user), expected);
    assert.deepEqual(await list(user), expected);
    // Another user's state does not include them.
    const stranger = await fresh();
    assert.deepEqual(await state(stranger), []);
    // Not asked for: not there.
    assert.equal("saved_snippets" in (await t.register(user, { fetch_event_types: ["alert_words"] })), false);
  });
});
