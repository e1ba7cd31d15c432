// User status: POST /users/me/status, GET /users/{user_id}/status, the
// administrators' POST /users/{user_id}/status (feature level 407) —
// partial updates, clearing with empty values, the legacy `away` (the
// inverse of presence_enabled), emoji checks shared with reactions, Zulip's
// errors, the `user_status` events and their recipients, and /register's
// user_status.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

const NOW = 1_750_000_000;

let t: TestApp;
before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const fresh = (role: number = Role.MEMBER) => t.createUser(uniqueName("Statuser"), role);
const setStatus = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/users/me/status", params);
const setStatusFor = (actor: TestUser, userId: number | string, params: Record<string, unknown>) => t.api(actor, "POST", `/users/${userId}/status`, params);
const getStatus = async (viewer: TestUser, userId: number) => assertSuccess(await t.api(viewer, "GET", `/users/${userId}/status`)).status;
const registered = async (viewer: TestUser) => (await t.register(viewer, { fetch_event_types: ["user_status"] })).user_status;
const statusEvents = () => t.events.filter((n) => n.event.type === "user_status").map((n) => ({ event: n.event, userIds: [...n.userIds].sort((a, b) => a - b) }));

const OCTOPUS = { emoji_name: "octopus", emoji_code: "1f419", reaction_type: "unicode_emoji" };
const HOUSE = { emoji_name: "house", emoji_code: "1f3e0", reaction_type: "unicode_emoji" };

// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

async function uploadEmoji(user: TestUser, name: string): Promise<number> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(PNG)], { type: "image/png" }), "emoji.png");
  const response = await fetch(`${t.url}/api/v1/realm/emoji/${name}`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  assert.equal(response.status, 200, await response.text());
  const row = await t.services.storage.db.selectFrom("realm_emoji").select("id").where("name", "=", name).where("deactivated", "=", false).executeTakeFirstOrThrow();
  return row.id;
}

describe("POST /users/me/status and GET /users/{user_id}/status", () => {
  test("a user who never set a status has {}; text and emoji are stored and shown to others", async () => {
    const user = await fresh();
    assert.deepEqual(await getStatus(t.users.guest, user.id), {});
    const body = assertSuccess(await setStatus(user, { status_text: "On vacation", ...OCTOPUS }));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    const expected = { status_text: "On vacation", ...OCTOPUS };
    for (const viewer of [user, t.users.guest, t.users.bot, t.users.owner]) assert.deepEqual(await getStatus(viewer, user.id), expected);
    assert.deepEqual((await registered(t.users.member))[String(user.id)], expected);
  });

  test("the user_status event carries exactly the changed parts and goes to every active user", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { status_text: "  Busy  ", emoji_name: "octopus" }));
    assertSuccess(await setStatus(user, { status_text: "Lunch" }));
    assertSuccess(await setStatus(user, { emoji_name: "house" }));
    const everyone = await t.activeUserIds();
    assert.deepEqual(statusEvents(), [
      { event: { type: "user_status", user_id: user.id, status_text: "Busy", ...OCTOPUS }, userIds: everyone },
      { event: { type: "user_status", user_id: user.id, status_text: "Lunch" }, userIds: everyone },
      { event: { type: "user_status", user_id: user.id, ...HOUSE }, userIds: everyone },
    ]);
    // Each request changed only what it named.
    assert.deepEqual(await getStatus(t.users.member, user.id), { status_text: "Lunch", ...HOUSE });
  });

  test("a name alone takes its code and type; code and type may be given; the contract's service_extra_emoji is Zulip's zulip_extra_emoji", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { emoji_name: "thumbs_up" }));
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" });
    // An alias keeps the name the client chose.
    assertSuccess(await setStatus(user, { emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" }));
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" });
    assertSuccess(await setStatus(user, { emoji_name: "zulip" }));
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: "zulip", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" });
    assertSuccess(await setStatus(user, { emoji_name: "zulip", emoji_code: "zulip", reaction_type: "service_extra_emoji" }));
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: "zulip", emoji_code: "zulip", reaction_type: "zulip_extra_emoji" });
  });

  test("custom emoji: by name or by ID; a deactivated one is refused", async () => {
    const user = await fresh();
    const name = `party${Date.now() % 100000}`;
    const id = await uploadEmoji(t.users.admin, name);
    assertSuccess(await setStatus(user, { emoji_name: name }));
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: name, emoji_code: String(id), reaction_type: "realm_emoji" });
    assertError(await setStatus(user, { emoji_name: "other", emoji_code: String(id), reaction_type: "realm_emoji" }), 400, "BAD_REQUEST", "Invalid custom emoji name.");
    assertError(await setStatus(user, { emoji_name: name, emoji_code: "999999", reaction_type: "realm_emoji" }), 400, "BAD_REQUEST", "Invalid custom emoji.");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/realm/emoji/${name}`));
    assertError(await setStatus(user, { emoji_name: name, emoji_code: String(id), reaction_type: "realm_emoji" }), 400, "BAD_REQUEST", "This custom emoji has been deactivated.");
    // By name alone, a deactivated custom emoji is no emoji at all.
    assertError(await setStatus(user, { emoji_name: name }), 400, "BAD_REQUEST", `Emoji '${name}' does not exist`);
    // The status set earlier stays as it was.
    assert.deepEqual(await getStatus(user, user.id), { emoji_name: name, emoji_code: String(id), reaction_type: "realm_emoji" });
  });

  test("empty values clear: text with '', the emoji with emoji_name '' whatever code and type come with it", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { status_text: "Out", ...OCTOPUS }));
    t.clearEvents();
    // The way the Flutter app clears: every field empty.
    assertSuccess(await setStatus(user, { status_text: "", emoji_name: "", emoji_code: "", reaction_type: "" }));
    assert.deepEqual(await getStatus(user, user.id), {});
    assert.deepEqual(statusEvents().map((e) => e.event), [
      { type: "user_status", user_id: user.id, status_text: "", emoji_name: "", emoji_code: "", reaction_type: "unicode_emoji" },
    ]);
    assert.equal(String(user.id) in (await registered(t.users.member)), false);
    // Clearing one part keeps the other.
    assertSuccess(await setStatus(user, { status_text: "Back soon", ...HOUSE }));
    assertSuccess(await setStatus(user, { emoji_name: "", emoji_code: "1f3e0", reaction_type: "unicode_emoji" }));
    assert.deepEqual(await getStatus(user, user.id), { status_text: "Back soon" });
    assertSuccess(await setStatus(user, { status_text: "   ", ...HOUSE }));
    assert.deepEqual(await getStatus(user, user.id), HOUSE);
  });

  test("away: the inverse of presence_enabled, with the user's settings events; shown as away: true", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { away: true }));
    assert.deepEqual(await getStatus(t.users.member, user.id), { away: true });
    const settings = (await t.register(user, { fetch_event_types: ["user_settings"] })).user_settings;
    assert.equal(settings.presence_enabled, false);
    assert.deepEqual(t.eventsFor(user.id, "user_settings"), [{ type: "user_settings", op: "update", property: "presence_enabled", value: false }]);
    // Older clients (no user_settings_object) get the legacy event, naming the user by API email.
    assert.deepEqual(
      t.eventsFor(user.id, "update_global_notifications").map(({ user: _email, ...rest }) => rest),
      [{ type: "update_global_notifications", notification_name: "presence_enabled", setting: false }],
    );
    assert.deepEqual(statusEvents(), [{ event: { type: "user_status", user_id: user.id, away: true }, userIds: await t.activeUserIds() }]);
    assert.deepEqual((await registered(t.users.admin))[String(user.id)], { away: true });

    // Away again: no settings change, but the status event as Zulip sends it.
    t.clearEvents();
    assertSuccess(await setStatus(user, { away: true, status_text: "Gone fishing" }));
    assert.deepEqual(t.eventsFor(user.id, "user_settings"), []);
    assert.deepEqual(statusEvents().map((e) => e.event), [{ type: "user_status", user_id: user.id, away: true, status_text: "Gone fishing" }]);
    assert.deepEqual(await getStatus(user, user.id), { away: true, status_text: "Gone fishing" });

    t.clearEvents();
    assertSuccess(await setStatus(user, { away: false }));
    assert.deepEqual(await getStatus(user, user.id), { status_text: "Gone fishing" });
    assert.deepEqual(t.eventsFor(user.id, "user_settings"), [{ type: "user_settings", op: "update", property: "presence_enabled", value: true }]);
    // PATCH /settings presence_enabled is the same switch.
    assertSuccess(await t.api(user, "PATCH", "/settings", { presence_enabled: false }));
    assert.deepEqual(await getStatus(user, user.id), { away: true, status_text: "Gone fishing" });
  });

  test("status_text is stripped, then at most 60 characters (code points)", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { status_text: `  ${"😀".repeat(60)}\n` }));
    assert.deepEqual(await getStatus(user, user.id), { status_text: "😀".repeat(60) });
    assertError(await setStatus(user, { status_text: "x".repeat(61) }), 400, "BAD_REQUEST", "status_text is too long (limit: 60 characters)");
    assertError(await setStatus(user, { status_text: "😀".repeat(61) }), 400, "BAD_REQUEST", "status_text is too long (limit: 60 characters)");
    assert.deepEqual(await getStatus(user, user.id), { status_text: "😀".repeat(60) });
  });

  test("errors, with nothing changed and no event", async () => {
    const user = await fresh();
    assertSuccess(await setStatus(user, { status_text: "Keep me" }));
    t.clearEvents();
    const cases: [Record<string, unknown>, string][] = [
      [{}, "Client did not pass any new values."],
      [{ emoji_code: "1f419" }, "Client did not pass any new values."],
      [{ status_text: "x", emoji_code: "1f419" }, "Client must pass emoji_name if they pass either emoji_code or reaction_type."],
      [{ status_text: "x", reaction_type: "unicode_emoji" }, "Client must pass emoji_name if they pass either emoji_code or reaction_type."],
      [{ emoji_name: "no_such_emoji_here" }, "Emoji 'no_such_emoji_here' does not exist"],
      [{ emoji_name: "octopus", emoji_code: "1f3e0", reaction_type: "unicode_emoji" }, "Invalid emoji name."],
      [{ emoji_name: "octopus", emoji_code: "fffff", reaction_type: "unicode_emoji" }, "Invalid emoji code."],
      [{ emoji_name: "octopus", emoji_code: "1f419", reaction_type: "emoji_of_doom" }, "Invalid emoji type."],
      [{ emoji_name: "octopus", emoji_code: "1f419", reaction_type: "" }, "Invalid emoji type."],
      [{ emoji_name: "zulip", emoji_code: "octopus", reaction_type: "zulip_extra_emoji" }, "Invalid emoji code."],
      [{ away: 1 }, "away is not a boolean"],
      [{ away: "maybe" }, 'Argument "away" is not valid JSON.'],
    ];
    for (const [params, msg] of cases) assertError(await setStatus(user, params), 400, "BAD_REQUEST", msg);
    assert.deepEqual(statusEvents(), []);
    assert.deepEqual(await getStatus(user, user.id), { status_text: "Keep me" });
  });

  test("bots may not set a status; every human role may; unknown parameters are listed", async () => {
    assertError(await setStatus(t.users.bot, { status_text: "beep" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    for (const role of [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST]) {
      const user = await fresh(role);
      assertSuccess(await setStatus(user, { status_text: `role ${role}` }));
      assert.deepEqual(await getStatus(t.users.member, user.id), { status_text: `role ${role}` });
    }
    const body = assertSuccess(await setStatus(await fresh(), { status_text: "x", scheduled_end_time: 5 }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["scheduled_end_time"]);
    assertError(await t.api(null, "POST", "/users/me/status", { status_text: "x" }), 401, "UNAUTHORIZED");
  });

  test("GET errors: unknown IDs and bots are no such user; deactivated users are refused", async () => {
    assertError(await t.api(t.users.member, "GET", "/users/999999/status"), 400, "BAD_REQUEST", "No such user");
    assertError(await t.api(t.users.member, "GET", `/users/${t.users.bot.id}/status`), 400, "BAD_REQUEST", "No such user");
    assertError(await t.api(t.users.member, "GET", "/users/abc/status"), 400, "BAD_REQUEST", "user_id is not an integer");
    const gone = await fresh();
    assertSuccess(await setStatus(gone, { status_text: "Leaving" }));
    assert.deepEqual((await registered(t.users.member))[String(gone.id)], { status_text: "Leaving" });
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${gone.id}`));
    assertError(await t.api(t.users.member, "GET", `/users/${gone.id}/status`), 400, "BAD_REQUEST", "User is deactivated");
    // Deactivated users are left out of /register.
    assert.equal(String(gone.id) in (await registered(t.users.member)), false);
  });
});

describe("POST /users/{user_id}/status (administrators)", () => {
  test("an administrator sets another user's status; the event goes to everyone; away is not a parameter", async () => {
    const user = await fresh();
    const body = assertSuccess(await setStatusFor(t.users.admin, user.id, { status_text: " In a meeting ", ...OCTOPUS, away: true }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["away"]);
    assert.deepEqual(await getStatus(user, user.id), { status_text: "In a meeting", ...OCTOPUS });
    assert.deepEqual(statusEvents(), [{ event: { type: "user_status", user_id: user.id, status_text: "In a meeting", ...OCTOPUS }, userIds: await t.activeUserIds() }]);
    // Owners' statuses too, and one's own.
    assertSuccess(await setStatusFor(t.users.admin, t.users.owner.id, { status_text: "Owner away" }));
    assertSuccess(await setStatusFor(t.users.owner, t.users.owner.id, { status_text: "Owner back" }));
    assert.deepEqual(await getStatus(t.users.member, t.users.owner.id), { status_text: "Owner back" });
    // Clearing works as for oneself.
    assertSuccess(await setStatusFor(t.users.admin, user.id, { status_text: "", emoji_name: "" }));
    assert.deepEqual(await getStatus(user, user.id), {});
  });

  test("only administrators; bots and unknown IDs are no such user; deactivated users are refused", async () => {
    const user = await fresh();
    const other = await fresh();
    t.clearEvents();
    for (const actor of [t.users.moderator, t.users.member, t.users.guest, t.users.bot]) {
      assertError(await setStatusFor(actor, other.id, { status_text: "hijacked" }), 400, "BAD_REQUEST", "Insufficient permission");
    }
    // Not even for oneself, through this endpoint.
    assertError(await setStatusFor(user, user.id, { status_text: "mine" }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await setStatusFor(t.users.admin, t.users.bot.id, { status_text: "x" }), 400, "BAD_REQUEST", "No such user");
    assertError(await setStatusFor(t.users.admin, 999999, { status_text: "x" }), 400, "BAD_REQUEST", "No such user");
    assertError(await setStatusFor(t.users.admin, "abc", { status_text: "x" }), 400, "BAD_REQUEST", "user_id is not an integer");
    assertError(await setStatusFor(t.users.admin, other.id, {}), 400, "BAD_REQUEST", "Client did not pass any new values.");
    assertError(await setStatusFor(t.users.admin, other.id, { emoji_name: "no_such_emoji_here" }), 400, "BAD_REQUEST", "Emoji 'no_such_emoji_here' does not exist");
    // The text limit is a parameter check: it comes before the user is looked up.
    assertError(await setStatusFor(t.users.member, 999999, { status_text: "x".repeat(61) }), 400, "BAD_REQUEST", "status_text is too long (limit: 60 characters)");
    const gone = await fresh();
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${gone.id}`));
    assertError(await setStatusFor(t.users.admin, gone.id, { status_text: "x" }), 400, "BAD_REQUEST", "User is deactivated");
    assert.deepEqual(statusEvents(), []);
    assert.deepEqual(await getStatus(t.users.member, other.id), {});
  });
});

describe("user_status in /register and through event queues", () => {
  test("the register state lists only users with something to show, keyed by ID", async () => {
    const texty = await fresh();
    const empty = await fresh();
    assertSuccess(await setStatus(texty, { status_text: "Hi" }));
    assertSuccess(await setStatus(empty, { status_text: "" }));
    const state = await registered(t.users.guest);
    assert.deepEqual(state[String(texty.id)], { status_text: "Hi" });
    assert.equal(String(empty.id) in state, false);
    for (const value of Object.values(state)) assert.ok(Object.keys(value as object).length > 0);
    // Not asked for, not sent.
    assert.equal("user_status" in (await t.register(t.users.member, { fetch_event_types: ["alert_words"] })), false);
  });

  test("a queue registered for user_status receives the event", async () => {
    const user = await fresh();
    const queue = (await t.register(t.users.member, { event_types: ["user_status"] })).queue_id as string;
    assertSuccess(await setStatus(user, { status_text: "Polling", emoji_name: "octopus" }));
    const events = await t.queuedEvents(t.users.member, queue);
    assert.deepEqual(events, [{ id: 0, type: "user_status", user_id: user.id, status_text: "Polling", ...OCTOPUS }]);
  });
});
