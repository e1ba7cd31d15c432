// Navigation views: GET/POST /navigation_views, PATCH/DELETE
// /navigation_views/{fragment} (the fragment may contain '/') — reply
// shapes, stripping, the built-in fragments (no custom name) and custom views
// (a name required), Zulip's order of checks and errors (404 with code
// BAD_REQUEST for a missing view), views private to their owner for every
// role, the `navigation_view` add/update/remove events (to the owner only)
// and /register's navigation_views.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import type { Notification } from "../src/events/notifier.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const BUILT_IN = [
  "inbox",
  "recent",
  "feed",
  "drafts",
  "narrow/has/reaction/sender/me",
  "narrow/is/mentioned",
  "narrow/is/starred",
  "scheduled",
  "reminders",
];

const fresh = (role: number = Role.MEMBER) => t.createUser(uniqueName("Navigator"), role);
const list = async (user: TestUser) => assertSuccess(await t.api(user, "GET", "/navigation_views")).navigation_views;
const add = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/navigation_views", params);
/** `path` goes into the URL as given: slashes stay path separators. */
const update = (user: TestUser, path: string, params: Record<string, unknown> = {}) => t.api(user, "PATCH", `/navigation_views/${path}`, params);
const remove = (user: TestUser, path: string) => t.api(user, "DELETE", `/navigation_views/${path}`);

async function addOk(user: TestUser, params: Record<string, unknown>): Promise<void> {
  const body = assertSuccess(await add(user, params));
  assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
}

/** Every navigation_view notification since the last clearEvents: the event and who it went to. */
const notifications = (): Pick<Notification, "event" | "userIds">[] =>
  t.events.filter((n) => n.event.type === "navigation_view").map((n) => ({ event: n.event, userIds: [...n.userIds] }));

const NOT_FOUND = "Navigation view does not exist.";
const EXISTS = "Navigation view already exists.";
const BUILT_IN_NAMED = "Built-in views cannot have a custom name.";
const CUSTOM_UNNAMED = "Custom views must have a valid name.";

describe("navigation views: add and list", () => {
  test("a new user has none: built-in views are not listed until configured", async () => {
    assert.deepEqual(await list(await fresh()), []);
  });

  test("built-in and custom views come back with every field, in creation order", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "recent", is_pinned: false });
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    await addOk(user, { fragment: "inbox", is_pinned: true });
    assert.deepEqual(await list(user), [
      { fragment: "recent", is_pinned: false, name: null },
      { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" },
      { fragment: "inbox", is_pinned: true, name: null },
    ]);
  });

  test("fragment and name are stored stripped; the stripped fragment decides whether it is built in", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "  narrow/channel/12-general \n", is_pinned: true, name: "\t General  chat \u00a0" });
    await addOk(user, { fragment: " inbox ", is_pinned: false });
    assertError(await add(user, { fragment: " feed ", is_pinned: true, name: "Feed" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
    assert.deepEqual(await list(user), [
      { fragment: "narrow/channel/12-general", is_pinned: true, name: "General  chat" },
      { fragment: "inbox", is_pinned: false, name: null },
    ]);
  });

  test("each built-in fragment refuses a name and needs none; other fragments need one", async () => {
    const user = await fresh();
    for (const fragment of BUILT_IN) {
      assertError(await add(user, { fragment, is_pinned: true, name: "Mine" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
      await addOk(user, { fragment, is_pinned: true });
    }
    assert.deepEqual(
      await list(user),
      BUILT_IN.map((fragment) => ({ fragment, is_pinned: true, name: null })),
    );
    for (const fragment of ["narrow/is/alerted", "Inbox", "inbox/", "narrow/is/unread", "starred", "all"]) {
      assertError(await add(user, { fragment, is_pinned: true }), 400, "BAD_REQUEST", CUSTOM_UNNAMED);
    }
  });

  test("parameter errors: missing, blank, not a boolean, too long", async () => {
    const user = await fresh();
    assertError(await add(user, { is_pinned: true, name: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'fragment' argument", { var_name: "fragment" });
    assertError(await add(user, { fragment: "inbox" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'is_pinned' argument", { var_name: "is_pinned" });
    assertError(await add(user, { fragment: "", is_pinned: true, name: "x" }), 400, "BAD_REQUEST", "fragment cannot be blank");
    assertError(await add(user, { fragment: "  \n ", is_pinned: true, name: "x" }), 400, "BAD_REQUEST", "fragment cannot be blank");
    assertError(await add(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "" }), 400, "BAD_REQUEST", "name cannot be blank");
    assertError(await add(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "   " }), 400, "BAD_REQUEST", "name cannot be blank");
    // A blank name is a parse error even for a built-in view.
    assertError(await add(user, { fragment: "inbox", is_pinned: true, name: " " }), 400, "BAD_REQUEST", "name cannot be blank");
    assertError(await add(user, { fragment: "inbox", is_pinned: 5 }), 400, "BAD_REQUEST", "is_pinned is not a boolean");
    assertError(await add(user, { fragment: "inbox", is_pinned: '"true"' }), 400, "BAD_REQUEST", "is_pinned is not a boolean");
    // Too long to index (a 500 on PostgreSQL before): bounded in bytes, so four-byte characters count four times.
    assertError(await add(user, { fragment: "\u{1F600}".repeat(501), is_pinned: true, name: "long" }), 400, "BAD_REQUEST", "fragment is too long (limit: 2000 bytes)");
    assertError(await add(user, { fragment: "narrow/".repeat(286), is_pinned: true, name: "long" }), 400, "BAD_REQUEST", "fragment is too long (limit: 2000 bytes)");
    assert.deepEqual(await list(user), []);
    assert.deepEqual(notifications(), []);
  });

  test("a fragment or a name the user already has is refused; other users may reuse both", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    await addOk(user, { fragment: "inbox", is_pinned: true });
    assertError(await add(user, { fragment: "narrow/is/alerted", is_pinned: false, name: "Other name" }), 400, "BAD_REQUEST", EXISTS);
    assertError(await add(user, { fragment: " narrow/is/alerted ", is_pinned: false, name: "Other name" }), 400, "BAD_REQUEST", EXISTS);
    assertError(await add(user, { fragment: "inbox", is_pinned: false }), 400, "BAD_REQUEST", EXISTS);
    assertError(await add(user, { fragment: "narrow/is/unread", is_pinned: false, name: "Alerted" }), 400, "BAD_REQUEST", EXISTS);
    assertError(await add(user, { fragment: "narrow/is/unread", is_pinned: false, name: "  Alerted " }), 400, "BAD_REQUEST", EXISTS);
    // The name rule comes before the duplicate checks.
    assertError(await add(user, { fragment: "inbox", is_pinned: false, name: "Alerted" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
    assertError(await add(user, { fragment: "narrow/is/alerted", is_pinned: false }), 400, "BAD_REQUEST", CUSTOM_UNNAMED);
    // Names compare exactly.
    await addOk(user, { fragment: "narrow/is/unread", is_pinned: false, name: "alerted" });

    const other = await fresh();
    await addOk(other, { fragment: "narrow/is/alerted", is_pinned: false, name: "Alerted" });
    await addOk(other, { fragment: "inbox", is_pinned: false });
    assert.deepEqual(await list(user), [
      { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" },
      { fragment: "inbox", is_pinned: true, name: null },
      { fragment: "narrow/is/unread", is_pinned: false, name: "alerted" },
    ]);
    assert.deepEqual(await list(other), [
      { fragment: "narrow/is/alerted", is_pinned: false, name: "Alerted" },
      { fragment: "inbox", is_pinned: false, name: null },
    ]);
  });

  test("unauthenticated requests are refused", async () => {
    assertError(await t.api(null, "GET", "/navigation_views"), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "POST", "/navigation_views", { fragment: "inbox", is_pinned: true }), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "PATCH", "/navigation_views/inbox", { is_pinned: true }), 401, "UNAUTHORIZED");
  });
});

describe("navigation views: update", () => {
  test("PATCH sets only what is given; the fragment in the path may contain slashes or be URL-encoded", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: false, name: "Alerted" });
    await addOk(user, { fragment: "inbox", is_pinned: false });
    const body = assertSuccess(await update(user, "narrow/is/alerted", { is_pinned: true }));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assert.deepEqual((await list(user))[0], { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    assertSuccess(await update(user, "narrow%2Fis%2Falerted", { name: "  Alert words " }));
    assert.deepEqual((await list(user))[0], { fragment: "narrow/is/alerted", is_pinned: true, name: "Alert words" });
    assertSuccess(await update(user, "narrow/is/alerted", { name: "Both", is_pinned: false }));
    assertSuccess(await update(user, "inbox", { is_pinned: true }));
    assert.deepEqual(await list(user), [
      { fragment: "narrow/is/alerted", is_pinned: false, name: "Both" },
      { fragment: "inbox", is_pinned: true, name: null },
    ]);
  });

  test("fragments with spaces and reserved characters are found URL-decoded", async () => {
    const user = await fresh();
    const fragment = "narrow/channel/7-team chat/topic/a%b?c#d";
    await addOk(user, { fragment, is_pinned: false, name: "Odd" });
    assertSuccess(await update(user, encodeURIComponent(fragment), { is_pinned: true }));
    assert.deepEqual(await list(user), [{ fragment, is_pinned: true, name: "Odd" }]);
    assertSuccess(await remove(user, encodeURIComponent(fragment)));
    assert.deepEqual(await list(user), []);
  });

  test("PATCH with nothing to change succeeds and still sends an update with empty data", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    t.clearEvents();
    assertSuccess(await update(user, "narrow/is/alerted"));
    assert.deepEqual(notifications(), [{ event: { type: "navigation_view", op: "update", fragment: "narrow/is/alerted", data: {} }, userIds: [user.id] }]);
    assert.deepEqual(await list(user), [{ fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" }]);
    // Nothing to change does not skip the existence check.
    assertError(await update(user, "narrow/is/unknown"), 404, "BAD_REQUEST", NOT_FOUND);
  });

  test("PATCH errors in Zulip's order: values, built-in name, name taken (this view's own too), then existence", async () => {
    const user = await fresh();
    const owner = await fresh();
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    await addOk(user, { fragment: "narrow/is/unread", is_pinned: true, name: "Unread" });
    await addOk(user, { fragment: "inbox", is_pinned: true });
    await addOk(owner, { fragment: "narrow/is/private", is_pinned: true, name: "Private" });
    t.clearEvents();

    assertError(await update(user, "narrow/is/alerted", { name: "" }), 400, "BAD_REQUEST", "name cannot be blank");
    assertError(await update(user, "narrow/is/alerted", { name: "  " }), 400, "BAD_REQUEST", "name cannot be blank");
    assertError(await update(user, "narrow/is/alerted", { is_pinned: "yes" }), 400, "BAD_REQUEST");
    assertError(await update(user, "narrow/is/alerted", { is_pinned: 1 }), 400, "BAD_REQUEST", "is_pinned is not a boolean");
    // Built-in views take no name, whether or not the user has configured them.
    assertError(await update(user, "inbox", { name: "My inbox" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
    assertError(await update(user, "recent", { name: "Recent" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
    // A name any of the user's views has, this one's own included, even before the look-up.
    assertError(await update(user, "narrow/is/alerted", { name: "Unread" }), 400, "BAD_REQUEST", EXISTS);
    assertError(await update(user, "narrow/is/alerted", { name: "Alerted" }), 400, "BAD_REQUEST", EXISTS);
    assertError(await update(user, "narrow/is/alerted", { name: " Alerted ", is_pinned: false }), 400, "BAD_REQUEST", EXISTS);
    assertError(await update(user, "narrow/is/nothing", { name: "Alerted" }), 400, "BAD_REQUEST", EXISTS);
    // Missing views, and other users' views, do not exist.
    assertError(await update(user, "narrow/is/nothing", { is_pinned: false }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await update(user, "narrow/is/nothing", { name: "Fresh name" }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await update(user, "recent", { is_pinned: false }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await update(user, "narrow/is/private", { is_pinned: false }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await update(user, "narrow/is", { is_pinned: false }), 404, "BAD_REQUEST", NOT_FOUND);
    // Another user's names do not count.
    assertSuccess(await update(user, "narrow/is/unread", { name: "Private" }));

    assert.deepEqual(await list(user), [
      { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" },
      { fragment: "narrow/is/unread", is_pinned: true, name: "Private" },
      { fragment: "inbox", is_pinned: true, name: null },
    ]);
    assert.deepEqual(await list(owner), [{ fragment: "narrow/is/private", is_pinned: true, name: "Private" }]);
    assert.deepEqual(notifications(), [
      { event: { type: "navigation_view", op: "update", fragment: "narrow/is/unread", data: { name: "Private" } }, userIds: [user.id] },
    ]);
  });
});

describe("navigation views: remove", () => {
  test("DELETE removes only that view, built-in ones included; missing and foreign views do not exist", async () => {
    const user = await fresh();
    const owner = await fresh();
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    await addOk(user, { fragment: "narrow/has/reaction/sender/me", is_pinned: false });
    await addOk(user, { fragment: "inbox", is_pinned: true });
    await addOk(owner, { fragment: "narrow/is/private", is_pinned: true, name: "Private" });

    const body = assertSuccess(await remove(user, "narrow/has/reaction/sender/me"));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assertSuccess(await remove(user, "narrow%2Fis%2Falerted"));
    assert.deepEqual(await list(user), [{ fragment: "inbox", is_pinned: true, name: null }]);
    assertError(await remove(user, "narrow/is/alerted"), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, "recent"), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, "narrow/is/private"), 404, "BAD_REQUEST", NOT_FOUND);
    assert.deepEqual(await list(owner), [{ fragment: "narrow/is/private", is_pinned: true, name: "Private" }]);
    // A removed view's fragment and name are free again.
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: false, name: "Alerted" });
    assert.deepEqual(await list(user), [
      { fragment: "inbox", is_pinned: true, name: null },
      { fragment: "narrow/is/alerted", is_pinned: false, name: "Alerted" },
    ]);
  });
});

describe("navigation views: every role", () => {
  test("owners, administrators, moderators, members, guests and bots each have their own views", async () => {
    const roles = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;
    for (const role of roles) {
      const user = t.users[role];
      await addOk(user, { fragment: `narrow/search/${role}`, is_pinned: false, name: "Same name" });
      await addOk(user, { fragment: "inbox", is_pinned: false });
    }
    for (const role of roles) {
      const user = t.users[role];
      assertSuccess(await update(user, `narrow/search/${role}`, { is_pinned: true, name: `${role} view` }));
      for (const other of roles) {
        if (other !== role) assertError(await remove(user, `narrow/search/${other}`), 404, "BAD_REQUEST", NOT_FOUND);
      }
      assertSuccess(await remove(user, "inbox"));
    }
    for (const role of roles) {
      assert.deepEqual(await list(t.users[role]), [{ fragment: `narrow/search/${role}`, is_pinned: true, name: `${role} view` }], role);
    }
  });
});

describe("navigation views: events and /register", () => {
  test("add, update and remove events have Zulip's shapes and go to the owner alone", async () => {
    const user = await fresh();
    await addOk(user, { fragment: " narrow/is/alerted ", is_pinned: true, name: " Alerted " });
    await addOk(user, { fragment: "inbox", is_pinned: false });
    assertSuccess(await update(user, "narrow/is/alerted", { is_pinned: false }));
    assertSuccess(await update(user, "narrow/is/alerted", { name: "Renamed" }));
    assertSuccess(await update(user, "inbox", { is_pinned: true }));
    assertSuccess(await update(user, "narrow/is/alerted", { name: "Both", is_pinned: true }));
    assertSuccess(await remove(user, "narrow/is/alerted"));
    assertSuccess(await remove(user, "inbox"));
    const to = [user.id];
    assert.deepEqual(notifications(), [
      { event: { type: "navigation_view", op: "add", navigation_view: { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" } }, userIds: to },
      { event: { type: "navigation_view", op: "add", navigation_view: { fragment: "inbox", is_pinned: false, name: null } }, userIds: to },
      { event: { type: "navigation_view", op: "update", fragment: "narrow/is/alerted", data: { is_pinned: false } }, userIds: to },
      { event: { type: "navigation_view", op: "update", fragment: "narrow/is/alerted", data: { name: "Renamed" } }, userIds: to },
      { event: { type: "navigation_view", op: "update", fragment: "inbox", data: { is_pinned: true } }, userIds: to },
      { event: { type: "navigation_view", op: "update", fragment: "narrow/is/alerted", data: { name: "Both", is_pinned: true } }, userIds: to },
      { event: { type: "navigation_view", op: "remove", fragment: "narrow/is/alerted" }, userIds: to },
      { event: { type: "navigation_view", op: "remove", fragment: "inbox" }, userIds: to },
    ]);
  });

  test("failed requests send no event", async () => {
    const user = await fresh();
    await addOk(user, { fragment: "inbox", is_pinned: false });
    t.clearEvents();
    assertError(await add(user, { fragment: "inbox", is_pinned: false }), 400, "BAD_REQUEST", EXISTS);
    assertError(await add(user, { fragment: "narrow/x", is_pinned: false }), 400, "BAD_REQUEST", CUSTOM_UNNAMED);
    assertError(await update(user, "inbox", { name: "x" }), 400, "BAD_REQUEST", BUILT_IN_NAMED);
    assertError(await update(user, "recent", { is_pinned: true }), 404, "BAD_REQUEST", NOT_FOUND);
    assertError(await remove(user, "recent"), 404, "BAD_REQUEST", NOT_FOUND);
    assert.deepEqual(notifications(), []);
  });

  test("the events reach the owner's queue (type navigation_view) and no one else's", async () => {
    const user = await fresh(Role.GUEST);
    const queue = (await t.register(user, { event_types: ["navigation_view"] })).queue_id as string;
    const other = (await t.register(t.users.admin, { event_types: ["navigation_view"] })).queue_id as string;
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    assertSuccess(await update(user, "narrow/is/alerted", { is_pinned: false }));
    assertSuccess(await remove(user, "narrow/is/alerted"));
    assert.deepEqual(
      (await t.queuedEvents(user, queue)).map(({ id: _eventId, ...event }) => event),
      [
        { type: "navigation_view", op: "add", navigation_view: { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" } },
        { type: "navigation_view", op: "update", fragment: "narrow/is/alerted", data: { is_pinned: false } },
        { type: "navigation_view", op: "remove", fragment: "narrow/is/alerted" },
      ],
    );
    assert.deepEqual(await t.queuedEvents(t.users.admin, other), []);
  });

  test("/register's navigation_views is the user's own list, as GET shows it, after changes", async () => {
    const user = await fresh(Role.MODERATOR);
    const state = async (who: TestUser) => (await t.register(who, { fetch_event_types: ["navigation_views"] })).navigation_views;
    assert.deepEqual(await state(user), []);
    await addOk(user, { fragment: "narrow/is/alerted", is_pinned: true, name: "Alerted" });
    await addOk(user, { fragment: "recent", is_pinned: false });
    await addOk(user, { fragment: "narrow/is/unread", is_pinned: false, name: "Unread" });
    assertSuccess(await update(user, "narrow/is/unread", { is_pinned: true, name: "Unread messages" }));
    assertSuccess(await remove(user, "narrow/is/alerted"));
    const expected = [
      { fragment: "recent", is_pinned: false, name: null },
      { fragment: "narrow/is/unread", is_pinned: true, name: "Unread messages" },
    ];
    assert.deepEqual(await state(user), expected);
    assert.deepEqual(await list(user), expected);
    assert.deepEqual(await state(await fresh()), []);
    assert.equal("navigation_views" in (await t.register(user, { fetch_event_types: ["alert_words"] })), false);
  });
});
