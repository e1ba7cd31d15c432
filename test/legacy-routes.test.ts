// API-level tests of the legacy routes Zulip clients still call (issue 19):
// POST/DELETE /users/me/apns_device_token (the mobile app's iOS token
// endpoint, the same handler as /users/me/ios_device_token), PATCH
// /users/me/subscriptions/muted_topics (mapped onto topic visibility
// policies), PATCH /settings/display and /settings/notifications (aliases of
// PATCH /settings), and POST /register's idle_queue_timeout (ignored: Zulip
// 12 added it, after Parley's feature level).
// Zulip's behaviour: docs/zulip-behaviour/misc-endpoints.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;
const db = () => t.services.storage.db;

const HUMANS = ["owner", "admin", "moderator", "member", "guest"] as const;

function assertBad(response: ApiResponse, msg: string): void {
  assertError(response, 400, "BAD_REQUEST", msg);
  assert.equal(response.body.var_name, undefined, JSON.stringify(response.body));
}

function assertPlainSuccess(response: ApiResponse): void {
  assertSuccess(response);
  assert.deepEqual(response.body, { result: "success", msg: "" });
}

/** A new public channel `creator` is subscribed to (plus `others`); returns its ID. */
async function newChannel(creator: TestUser, options: { others?: TestUser[]; inviteOnly?: boolean; prefix?: string } = {}): Promise<{ id: number; name: string }> {
  const name = uniqueName(options.prefix ?? "Legacy");
  const params: Params = { subscriptions: [{ name }], invite_only: options.inviteOnly ?? false };
  if (options.others) params.principals = [creator.id, ...options.others.map((o) => o.id)];
  assertSuccess(await t.api(creator, "POST", "/users/me/subscriptions", params));
  const id = assertSuccess(await t.api(creator, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function tokensOf(user: TestUser): Promise<string[]> {
  const rows = await db().selectFrom("push_device_tokens").select("token").where("user_id", "=", user.id).where("kind", "=", 1).orderBy("id").execute();
  return rows.map((r) => r.token);
}

/** A fresh APNs token (hex). */
let tokenCounter = 0;
function apnsToken(): string {
  tokenCounter += 1;
  return `${"ab".repeat(16)}${tokenCounter.toString(16).padStart(8, "0")}`;
}

// ---------------------------------------------------------------------------

describe("POST/DELETE /users/me/apns_device_token", () => {
  test("every human role adds its own token; the same row as /users/me/ios_device_token", async () => {
    for (const role of HUMANS) {
      const user = u()[role];
      const token = apnsToken();
      assertPlainSuccess(await t.api(user, "POST", "/users/me/apns_device_token", { token, appid: "org.zulip.Zulip" }));
      assert.ok((await tokensOf(user)).includes(token), role);
      // Adding it again through the other path changes nothing: one row.
      assertPlainSuccess(await t.api(user, "POST", "/users/me/ios_device_token", { token, appid: "org.zulip.Zulip" }));
      assert.equal((await tokensOf(user)).filter((x) => x === token).length, 1, role);
      // Removed through either path.
      assertPlainSuccess(await t.api(user, "DELETE", "/users/me/ios_device_token", { token }));
      assert.equal((await tokensOf(user)).includes(token), false, role);
    }
    const token = apnsToken();
    assertPlainSuccess(await t.api(u().member, "POST", "/users/me/ios_device_token", { token, appid: "org.zulip.Zulip" }));
    assertPlainSuccess(await t.api(u().member, "DELETE", "/users/me/apns_device_token", { token }));
    assert.equal((await tokensOf(u().member)).includes(token), false);
  });

  test("stores the appid and takes parameters in the query string too", async () => {
    const token = apnsToken();
    assertPlainSuccess(await t.api(u().member, "POST", "/users/me/apns_device_token", { token, appid: "com.example.App" }, { encoding: "query" }));
    const row = await db().selectFrom("push_device_tokens").selectAll().where("user_id", "=", u().member.id).where("token", "=", token).executeTakeFirstOrThrow();
    assert.equal(row.ios_app_id, "com.example.App");
    assert.equal(row.kind, 1);
  });

  test("missing parameters: REQUEST_VARIABLE_MISSING", async () => {
    assertError(await t.api(u().member, "POST", "/users/me/apns_device_token", { appid: "org.zulip.Zulip" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'token' argument", { var_name: "token" });
    assertError(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: apnsToken() }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'appid' argument", { var_name: "appid" });
    assertError(await t.api(u().member, "DELETE", "/users/me/apns_device_token", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'token' argument", { var_name: "token" });
  });

  test("invalid tokens and app IDs: Zulip's validate_token messages; nothing stored", async () => {
    const before = await tokensOf(u().member);
    assertBad(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: "", appid: "org.zulip.Zulip" }), "Empty or invalid length token");
    assertBad(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: "a".repeat(4097), appid: "org.zulip.Zulip" }), "Empty or invalid length token");
    assertBad(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: "xyz1", appid: "org.zulip.Zulip" }), "Invalid APNS token");
    assertBad(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: "abc", appid: "org.zulip.Zulip" }), "Invalid APNS token");
    assertBad(await t.api(u().member, "POST", "/users/me/apns_device_token", { token: apnsToken(), appid: "org zulip" }), "Invalid appid");
    assertBad(await t.api(u().member, "DELETE", "/users/me/apns_device_token", { token: "" }), "Empty or invalid length token");
    assertBad(await t.api(u().member, "DELETE", "/users/me/apns_device_token", { token: "nothex" }), "Invalid APNS token");
    assert.deepEqual(await tokensOf(u().member), before);
  });

  test("removing a token one does not have: Token does not exist (also another user's)", async () => {
    assertBad(await t.api(u().member, "DELETE", "/users/me/apns_device_token", { token: apnsToken() }), "Token does not exist");
    const token = apnsToken();
    assertPlainSuccess(await t.api(u().admin, "POST", "/users/me/apns_device_token", { token, appid: "org.zulip.Zulip" }));
    assertBad(await t.api(u().member, "DELETE", "/users/me/apns_device_token", { token }), "Token does not exist");
    assert.ok((await tokensOf(u().admin)).includes(token));
  });

  test("bots may neither add nor remove tokens", async () => {
    assertBad(await t.api(u().bot, "POST", "/users/me/apns_device_token", { token: apnsToken(), appid: "org.zulip.Zulip" }), "This endpoint does not accept bot requests.");
    assertBad(await t.api(u().bot, "DELETE", "/users/me/apns_device_token", { token: apnsToken() }), "This endpoint does not accept bot requests.");
    assert.deepEqual(await tokensOf(u().bot), []);
  });

  test("without credentials: 401; other methods: 405 listing POST and DELETE", async () => {
    assertError(await t.api(null, "POST", "/users/me/apns_device_token", { token: apnsToken(), appid: "x" }), 401, "UNAUTHORIZED");
    const reply = await t.api(u().member, "GET", "/users/me/apns_device_token");
    assert.equal(reply.status, 405);
    assert.deepEqual([...reply.body.allowed_methods].sort(), ["DELETE", "POST"]);
  });
});

// ---------------------------------------------------------------------------

describe("PATCH /users/me/subscriptions/muted_topics", () => {
  const mute = (user: TestUser, params: Params) => t.api(user, "PATCH", "/users/me/subscriptions/muted_topics", params);

  async function policies(user: TestUser): Promise<{ stream_id: number; topic_name: string; visibility_policy: number }[]> {
    const state = await t.register(user, { fetch_event_types: ["user_topic"], client_capabilities: { empty_topic_name: true } });
    return (state.user_topics as any[]).map((r) => ({ stream_id: r.stream_id, topic_name: r.topic_name, visibility_policy: r.visibility_policy }));
  }

  test("add by stream_id: the topic is muted; muted_topics and user_topic events to the user alone", async () => {
    const channel = await newChannel(u().member, { others: [u().admin] });
    t.clearEvents();
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "Lunch plans", op: "add" }));
    assert.deepEqual(
      (await policies(u().member)).filter((p) => p.stream_id === channel.id),
      [{ stream_id: channel.id, topic_name: "Lunch plans", visibility_policy: 1 }],
    );
    const types = t.events.map((n) => [n.event.type, n.userIds]);
    assert.deepEqual(types, [
      ["muted_topics", [u().member.id]],
      ["user_topic", [u().member.id]],
    ]);
    const userTopic = t.eventsFor(u().member.id, "user_topic")[0]!;
    assert.equal(userTopic.stream_id, channel.id);
    assert.equal(userTopic.topic_name, "Lunch plans");
    assert.equal(userTopic.visibility_policy, 1);
    assert.equal(typeof userTopic.last_updated, "number");
    const muted = t.eventsFor(u().member.id, "muted_topics")[0]!.muted_topics as unknown[][];
    assert.ok(muted.some((m) => m[0] === channel.name && m[1] === "Lunch plans"));
    // Nothing for the other subscriber.
    assert.deepEqual(await policies(u().admin), []);
  });

  test("add by channel name (any case); muting again, in another case, succeeds and sends nothing", async () => {
    const channel = await newChannel(u().member);
    assertPlainSuccess(await mute(u().member, { stream: channel.name.toUpperCase(), topic: "Design", op: "add" }));
    assert.ok((await policies(u().member)).some((p) => p.stream_id === channel.id && p.topic_name === "Design" && p.visibility_policy === 1));
    t.clearEvents();
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "DESIGN", op: "add" }));
    assert.deepEqual(t.events, []);
    assert.equal((await policies(u().member)).filter((p) => p.stream_id === channel.id).length, 1);
  });

  test("remove: the policy is cleared (user_topic with visibility_policy 0); removing again succeeds silently", async () => {
    const channel = await newChannel(u().member);
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "Noise", op: "add" }));
    t.clearEvents();
    assertPlainSuccess(await mute(u().member, { stream: channel.name, topic: "noise", op: "remove" }));
    assert.deepEqual((await policies(u().member)).filter((p) => p.stream_id === channel.id), []);
    const event = t.eventsFor(u().member.id, "user_topic")[0]!;
    assert.deepEqual([event.stream_id, event.topic_name, event.visibility_policy], [channel.id, "Noise", 0]);
    t.clearEvents();
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "Noise", op: "remove" }));
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "never muted", op: "remove" }));
    assert.deepEqual(t.events, []);
  });

  test("remove clears a followed or unmuted topic too (any policy maps to inherit)", async () => {
    const channel = await newChannel(u().member);
    assertSuccess(await t.api(u().member, "POST", "/user_topics", { stream_id: channel.id, topic: "Followed", visibility_policy: 3 }));
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "Followed", op: "remove" }));
    assert.deepEqual((await policies(u().member)).filter((p) => p.stream_id === channel.id), []);
  });

  test("unknown channels: add says Invalid channel ID / Invalid channel name; remove says Topic is not muted", async () => {
    assertBad(await mute(u().member, { stream_id: 999999, topic: "x", op: "add" }), "Invalid channel ID");
    assertBad(await mute(u().member, { stream: "No such channel", topic: "x", op: "add" }), "Invalid channel name 'No such channel'");
    assertBad(await mute(u().member, { stream_id: 999999, topic: "x", op: "remove" }), "Topic is not muted");
    assertBad(await mute(u().member, { stream: "No such channel", topic: "x", op: "remove" }), "Topic is not muted");
    assertBad(await mute(u().member, { stream_id: 2 ** 40, topic: "x", op: "add" }), "Invalid channel ID");
  });

  test("channels one cannot read look unknown for add; remove needs only the channel to exist", async () => {
    const secret = await newChannel(u().admin, { inviteOnly: true, prefix: "Secret" });
    assertBad(await mute(u().member, { stream_id: secret.id, topic: "x", op: "add" }), "Invalid channel ID");
    assertBad(await mute(u().member, { stream: secret.name, topic: "x", op: "add" }), `Invalid channel name '${secret.name}'`);
    assertPlainSuccess(await mute(u().member, { stream_id: secret.id, topic: "x", op: "remove" }));
    // Guests read only channels they are subscribed to.
    const open = await newChannel(u().admin, { prefix: "Open" });
    assertBad(await mute(u().guest, { stream_id: open.id, topic: "x", op: "add" }), "Invalid channel ID");
    const guests = await newChannel(u().admin, { others: [u().guest], prefix: "WithGuest" });
    assertPlainSuccess(await mute(u().guest, { stream_id: guests.id, topic: "x", op: "add" }));
    // A member may mute topics of any public channel, subscribed or not.
    assertPlainSuccess(await mute(u().member, { stream_id: open.id, topic: "x", op: "add" }));
  });

  test("every role, bots included, may mute topics", async () => {
    const channel = await newChannel(u().owner, { others: [u().admin, u().moderator, u().member, u().guest, u().bot] });
    for (const role of [...HUMANS, "bot"] as const) {
      assertPlainSuccess(await mute(u()[role], { stream_id: channel.id, topic: "everyone", op: "add" }));
      assert.ok((await policies(u()[role])).some((p) => p.stream_id === channel.id && p.visibility_policy === 1), role);
    }
  });

  test("archived channels: add refused, remove allowed", async () => {
    const channel = await newChannel(u().admin);
    assertPlainSuccess(await mute(u().admin, { stream_id: channel.id, topic: "old", op: "add" }));
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${channel.id}`));
    assertBad(await mute(u().admin, { stream_id: channel.id, topic: "new", op: "add" }), "Invalid channel ID");
    assertPlainSuccess(await mute(u().admin, { stream_id: channel.id, topic: "old", op: "remove" }));
  });

  test("the empty topic under its other names", async () => {
    const channel = await newChannel(u().member);
    const state = await t.register(u().member, { fetch_event_types: ["realm"] });
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: state.realm_empty_topic_display_name, op: "add" }));
    assert.ok((await policies(u().member)).some((p) => p.stream_id === channel.id && p.topic_name === ""));
    assertPlainSuccess(await mute(u().member, { stream_id: channel.id, topic: "", op: "remove" }));
    assert.equal((await policies(u().member)).some((p) => p.stream_id === channel.id), false);
  });

  test("bad input: Zulip's messages and codes", async () => {
    const channel = await newChannel(u().member);
    assertBad(await mute(u().member, { topic: "x", op: "add" }), "Missing 'stream_id' argument");
    assertError(await mute(u().member, { stream_id: channel.id, stream: channel.name, topic: "x", op: "add" }), 400, "BAD_REQUEST", "Unsupported parameter combination: stream_id, stream", {
      parameters: "stream_id, stream",
    });
    assertError(await mute(u().member, { stream_id: channel.id, op: "add" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'topic' argument", { var_name: "topic" });
    assertError(await mute(u().member, { stream_id: channel.id, topic: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'op' argument", { var_name: "op" });
    assertBad(await mute(u().member, { stream_id: channel.id, topic: "x", op: "toggle" }), "Invalid op");
    assertBad(await mute(u().member, { stream_id: "general", topic: "x", op: "add" }), "stream_id is not an integer");
    assertBad(await mute(u().member, { stream_id: channel.id, topic: "t".repeat(61), op: "add" }), "topic is too long (limit: 60 characters)");
    assertBad(await mute(u().member, { stream_id: channel.id, topic: "t".repeat(61), op: "remove" }), "topic is too long (limit: 60 characters)");
    assert.deepEqual(await policies(u().member).then((p) => p.filter((x) => x.stream_id === channel.id)), []);
  });

  test("not the legacy property route: /users/me/subscriptions/{stream_id} still works beside it", async () => {
    const channel = await newChannel(u().member);
    assertPlainSuccess(await t.api(u().member, "PATCH", `/users/me/subscriptions/${channel.id}`, { property: "pin_to_top", value: true }));
    const subs = assertSuccess(await t.api(u().member, "GET", "/users/me/subscriptions")).subscriptions as any[];
    assert.equal(subs.find((s) => s.stream_id === channel.id).pin_to_top, true);
    const reply = await t.api(u().member, "DELETE", "/users/me/subscriptions/muted_topics");
    assert.equal(reply.status, 405);
  });
});

// ---------------------------------------------------------------------------

describe("PATCH /settings/display and /settings/notifications", () => {
  for (const path of ["/settings/display", "/settings/notifications"]) {
    test(`${path}: display and notification settings alike, with PATCH /settings's events`, async () => {
      const user = await t.createUser(uniqueName("Settings"), Role.MEMBER);
      t.clearEvents();
      assertPlainSuccess(await t.api(user, "PATCH", path, { twenty_four_hour_time: true, enable_sounds: false }));
      const state = await t.register(user, { fetch_event_types: ["user_settings"], client_capabilities: { user_settings_object: true } });
      assert.equal(state.user_settings.twenty_four_hour_time, true);
      assert.equal(state.user_settings.enable_sounds, false);
      const updates = t.eventsFor(user.id, "user_settings", "update").map((e) => [e.property, e.value]);
      assert.deepEqual(updates.sort(), [
        ["enable_sounds", false],
        ["twenty_four_hour_time", true],
      ]);
      // Only the user hears of it.
      assert.ok(t.events.every((n) => n.userIds.length === 1 && n.userIds[0] === user.id));
    });

    test(`${path}: full_name, timezone and the password too; unknown parameters listed as ignored`, async () => {
      const user = await t.createUser(uniqueName("Renamed"), Role.MEMBER);
      const reply = assertSuccess(await t.api(user, "PATCH", path, { full_name: "Renamed Person", timezone: "Europe/Paris", no_such_setting: 1 }));
      assert.deepEqual(reply.ignored_parameters_unsupported, ["no_such_setting"]);
      const me = assertSuccess(await t.api(user, "GET", "/users/me"));
      assert.equal(me.full_name, "Renamed Person");
      assert.equal(me.timezone, "Europe/Paris");
      assertBad(await t.api(user, "PATCH", path, { old_password: "wrong", new_password: "a-new-long-password-1" }), "Wrong password!");
    });

    test(`${path}: bad values fail as on PATCH /settings; bots are refused`, async () => {
      assertBad(await t.api(u().member, "PATCH", path, { twenty_four_hour_time: "yes" }), 'Argument "twenty_four_hour_time" is not valid JSON.');
      assertBad(await t.api(u().member, "PATCH", path, { timezone: "Mars/Olympus" }), "timezone is not a recognized time zone");
      assertBad(await t.api(u().bot, "PATCH", path, { enable_sounds: false }), "This endpoint does not accept bot requests.");
      const reply = await t.api(u().member, "POST", path, { enable_sounds: false });
      assert.equal(reply.status, 405);
    });
  }

  test("every human role may use the aliases", async () => {
    for (const role of HUMANS) {
      assertPlainSuccess(await t.api(u()[role], "PATCH", "/settings/notifications", { enable_offline_email_notifications: true }));
      assertPlainSuccess(await t.api(u()[role], "PATCH", "/settings/display", { left_side_userlist: false }));
    }
  });
});

// ---------------------------------------------------------------------------

describe("POST /register: idle_queue_timeout", () => {
  test("ignored (Zulip 12 added it): listed in ignored_parameters_unsupported, the queue works as without it", async () => {
    for (const value of ["mobile", 3600]) {
      const reply = assertSuccess(await t.api(u().member, "POST", "/register", { event_types: ["message"], idle_queue_timeout: value }));
      assert.deepEqual(reply.ignored_parameters_unsupported, ["idle_queue_timeout"]);
      assert.equal(typeof reply.queue_id, "string");
      assert.deepEqual(await t.queuedEvents(u().member, reply.queue_id), []);
    }
    // A JSON-encoded string, as the Flutter app sends it, is ignored alike.
    const reply = assertSuccess(await t.api(u().member, "POST", "/register", { event_types: ["message"], idle_queue_timeout: JSON.stringify("mobile") }));
    assert.deepEqual(reply.ignored_parameters_unsupported, ["idle_queue_timeout"]);
  });
});
