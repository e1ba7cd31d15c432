// API-level tests of mobile push (issue 8): POST /mobile_push/register, the
// deprecated token endpoints, forwarding registrations to the push service,
// and the pushes sent for direct messages and mentions. A fake push service
// (node:http on port 0) records every request and answers as told.
// Zulip's behaviour: docs/zulip-behaviour/mobile-push.md.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, test } from "node:test";
import { ConfigError, loadConfig } from "../src/config.ts";
import { PUSH_MAX_ATTEMPTS as MAX_ATTEMPTS } from "../src/domain/push.ts";
import { PUSH_MESSAGE_JOB, PUSH_NOTIFY_JOB, PUSH_REGISTER_JOB } from "../src/jobs/names.ts";
import { assertError, assertSuccess, jobsSettled, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

interface Recorded {
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: any;
}

type Answer = { status: number; body: unknown } | "drop";

/** A push service that records requests; `answers` are used first, then `fallback`. */
class FakePushService {
  requests: Recorded[] = [];
  answers: Answer[] = [];
  fallback: Answer = { status: 200, body: { result: "success", msg: "" } };
  nextDeviceId = 100;
  readonly server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const contentType = req.headers["content-type"];
      const body = contentType?.startsWith("application/json") ? JSON.parse(raw) : Object.fromEntries(new URLSearchParams(raw));
      this.requests.push({ path: req.url ?? "", authorization: req.headers.authorization, contentType, body });
      const answer = this.answers.shift() ?? this.fallback;
      if (answer === "drop") {
        req.socket.destroy();
        return;
      }
      const reply = req.url?.endsWith("/e2ee/register") && answer.status === 200 ? { ...(answer.body as object), device_id: this.nextDeviceId++ } : answer.body;
      res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(reply));
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.requests = [];
    this.answers = [];
    this.fallback = { status: 200, body: { result: "success", msg: "" } };
  }

  to(path: string): Recorded[] {
    return this.requests.filter((r) => r.path === `/api/v1/remotes/${path}`);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const fake = new FakePushService();
let t: TestApp;
/** An app with no push service configured. */
let plain: TestApp;

before(async () => {
  const url = await fake.start();
  t = await startTestApp({ pushServiceUrl: url, pushServiceOrgId: "server-uuid", pushServiceOrgKey: "server-key", pushRetryBaseMs: 5 });
  plain = await startTestApp();
});
after(async () => {
  await t?.close();
  await plain?.close();
  await fake.close();
});
beforeEach(async () => {
  await idle();
  fake.reset();
  t.clearEvents();
  // Every test starts with no registrations.
  await t.services.storage.db.deleteFrom("push_device_tokens").execute();
  await t.services.storage.db.deleteFrom("push_devices").execute();
});

const u = () => t.users;
const db = () => t.services.storage.db;
const idle = () => jobsSettled(t.services);

const APNS_TOKEN = "c0ffee00deadbeef";
const PUSH_KEY = Buffer.from("push public key bytes").toString("base64");
const CIPHERTEXT = Buffer.from('{"token":"c0ffee","token_kind":"apns"}').toString("base64");

function e2ee(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    token_kind: "ios_push",
    push_account_id: 2408,
    push_public_key: PUSH_KEY,
    bouncer_public_key: "bouncer-key-1",
    encrypted_push_registration: CIPHERTEXT,
    ...overrides,
  };
}

async function addAndroid(user: TestUser, token = `fcm-${user.id}-token`): Promise<void> {
  assertSuccess(await t.api(user, "POST", "/users/me/android_gcm_reg_id", { token }));
}

async function newChannel(actor: TestUser, subscribers: TestUser[]): Promise<{ id: number; name: string }> {
  const name = uniqueName("push channel");
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [actor.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
    }),
  );
  const id = assertSuccess(await t.api(actor, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function fullName(user: TestUser): Promise<string> {
  return (await db().selectFrom("users").select("full_name").where("id", "=", user.id).executeTakeFirstOrThrow()).full_name;
}

/** Sends and waits for the push worker to finish with the message. */
async function sendAndSettle(user: TestUser, params: Record<string, unknown>): Promise<number> {
  const id = assertSuccess(await t.api(user, "POST", "/messages", params)).id as number;
  await idle();
  return id;
}

const notifies = () => fake.to("push/notify").map((r) => r.body);

describe("configuration", () => {
  test("PUSH_SERVICE_URL is optional, needs credentials, and must be an http(s) URL", () => {
    const none = loadConfig({});
    assert.equal(none.pushServiceUrl, undefined);
    assert.equal(none.pushRetryBaseMs, 1000);
    const set = loadConfig({ PUSH_SERVICE_URL: "https://push.example.com/", PUSH_SERVICE_ORG_ID: "id", PUSH_SERVICE_ORG_KEY: "key", PUSH_RETRY_BASE_MS: "250" });
    assert.deepEqual([set.pushServiceUrl, set.pushServiceOrgId, set.pushServiceOrgKey, set.pushRetryBaseMs], ["https://push.example.com", "id", "key", 250]);
    assert.throws(() => loadConfig({ PUSH_SERVICE_URL: "https://push.example.com" }), ConfigError);
    assert.throws(() => loadConfig({ PUSH_SERVICE_URL: "push.example.com", PUSH_SERVICE_ORG_ID: "id", PUSH_SERVICE_ORG_KEY: "key" }), ConfigError);
  });
});

describe("no push service configured", () => {
  test("POST /mobile_push/register: PUSH_SERVICE_NOT_CONFIGURED (HTTP 400)", async () => {
    const res = await plain.api(plain.users.member, "POST", "/mobile_push/register", e2ee());
    assertError(res, 400, "PUSH_SERVICE_NOT_CONFIGURED", "Server is not configured to use push notification service.");
    const rows = await plain.services.storage.db.selectFrom("push_devices").selectAll().execute();
    assert.equal(rows.length, 0);
  });

  test("server settings and register state say push is off", async () => {
    const settings = assertSuccess(await plain.api(null, "GET", "/server_settings"));
    assert.equal(settings.push_notifications_enabled, false);
    const state = await plain.register(plain.users.member, { fetch_event_types: ["realm", "push_device"] });
    assert.equal(state.realm_push_notifications_enabled, false);
    assert.deepEqual(state.push_devices, {});
  });

  test("legacy tokens are stored; removing an unknown one: Token does not exist", async () => {
    const member = plain.users.member;
    assertSuccess(await plain.api(member, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN, appid: "org.zulip.Zulip" }));
    const rows = await plain.services.storage.db.selectFrom("push_device_tokens").selectAll().where("user_id", "=", member.id).execute();
    assert.deepEqual(
      rows.map((r) => [r.kind, r.token, r.ios_app_id]),
      [[1, APNS_TOKEN, "org.zulip.Zulip"]],
    );
    assertError(await plain.api(member, "DELETE", "/users/me/ios_device_token", { token: "abcdef" }), 400, "BAD_REQUEST", "Token does not exist");
    assertError(await plain.api(member, "DELETE", "/users/me/android_gcm_reg_id", { token: "nope" }), 400, "BAD_REQUEST", "Token does not exist");
    assertSuccess(await plain.api(member, "DELETE", "/users/me/ios_device_token", { token: APNS_TOKEN }));
    assertError(await plain.api(member, "DELETE", "/users/me/ios_device_token", { token: APNS_TOKEN }), 400, "BAD_REQUEST", "Token does not exist");
  });

  test("a message to a user with a token sends nothing anywhere and succeeds", async () => {
    assertSuccess(await plain.api(plain.users.member, "POST", "/users/me/android_gcm_reg_id", { token: "tok" }));
    assertSuccess(await plain.api(plain.users.owner, "POST", "/messages", { type: "direct", to: [plain.users.member.id], content: "hi" }));
    // Without a push service no push job is queued, nor any worker registered for one.
    assert.deepEqual(await plain.services.storage.db.selectFrom("jobs").select("name").where("name", "in", [PUSH_MESSAGE_JOB, PUSH_NOTIFY_JOB, PUSH_REGISTER_JOB]).execute(), []);
    assert.ok(!plain.services.jobs!.names.some((n) => n.startsWith("push_")));
    assert.equal(fake.requests.length, 0);
  });
});

describe("POST /mobile_push/register", () => {
  test("each missing parameter: REQUEST_VARIABLE_MISSING", async () => {
    for (const name of ["token_kind", "push_account_id", "push_public_key", "bouncer_public_key", "encrypted_push_registration"]) {
      const params = e2ee();
      delete params[name];
      assertError(await t.api(u().member, "POST", "/mobile_push/register", params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, { var_name: name });
    }
  });

  test("invalid values: BAD_REQUEST naming the parameter", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ token_kind: "apns" }, "Invalid token_kind"],
      [{ token_kind: "" }, "Invalid token_kind"],
      [{ push_account_id: "abc" }, "push_account_id is not an integer"],
      [{ push_public_key: "not base64!" }, "Invalid push_public_key"],
      [{ push_public_key: "" }, "Invalid push_public_key"],
      // URL-safe alphabet and missing padding are not RFC 4648 standard base64.
      [{ push_public_key: "ab-_" }, "Invalid push_public_key"],
      [{ push_public_key: "abc" }, "Invalid push_public_key"],
      [{ encrypted_push_registration: "random-string-no-encryption" }, "Invalid encrypted_push_registration"],
      [{ encrypted_push_registration: "YWJj\nZGVm" }, "Invalid encrypted_push_registration"],
    ];
    for (const [override, msg] of cases) {
      assertError(await t.api(u().member, "POST", "/mobile_push/register", e2ee(override)), 400, "BAD_REQUEST", msg);
    }
    assert.equal((await db().selectFrom("push_devices").selectAll().execute()).length, 0);
    await idle();
    assert.equal(fake.requests.length, 0);
  });

  test("bots may not register: This endpoint does not accept bot requests.", async () => {
    assertError(await t.api(u().bot, "POST", "/mobile_push/register", e2ee()), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });

  test("every human role registers its own device; the registration is stored and forwarded", async () => {
    const humans = [u().owner, u().admin, u().moderator, u().member, u().guest];
    for (const user of humans) assertSuccess(await t.api(user, "POST", "/mobile_push/register", e2ee({ token_kind: "android_push" })));
    await idle();
    const rows = await db().selectFrom("push_devices").selectAll().orderBy("user_id").execute();
    assert.deepEqual(
      rows.map((r) => [r.user_id, r.push_account_id, r.token_kind, r.push_public_key, r.bouncer_public_key, r.encrypted_push_registration]),
      humans.map((h) => [h.id, 2408, "android_push", PUSH_KEY, "bouncer-key-1", CIPHERTEXT]).sort((a, b) => (a[0] as number) - (b[0] as number)),
    );
    const forwarded = fake.to("push/e2ee/register");
    assert.equal(forwarded.length, humans.length);
    assert.equal(forwarded[0]!.authorization, `Basic ${Buffer.from("server-uuid:server-key").toString("base64")}`);
    assert.match(forwarded[0]!.contentType ?? "", /^application\/x-www-form-urlencoded/);
    assert.deepEqual(forwarded[0]!.body, {
      realm_id: String(t.realm.id),
      push_account_id: "2408",
      encrypted_push_registration: CIPHERTEXT,
      bouncer_public_key: "bouncer-key-1",
    });
    assert.ok(rows.every((r) => r.bouncer_device_id !== null && r.error_code === null));
  });

  test("accepted: push_device event (active), register state, and re-registering is idempotent", async () => {
    const member = u().member;
    const queue = await t.register(member, { event_types: ["push_device"] });
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    const events = await t.queuedEvents(member, queue.queue_id);
    assert.deepEqual(
      events.map(({ id: _id, ...e }: any) => e),
      [{ type: "push_device", push_account_id: "2408", status: "active" }],
    );
    const state = await t.register(member, { fetch_event_types: ["push_device", "realm"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "active", error_code: null } });
    assert.equal(state.realm_push_notifications_enabled, true);
    assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).push_notifications_enabled, true);

    // The same registration again: nothing forwarded, no event, one row.
    t.clearEvents();
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    assert.equal(fake.to("push/e2ee/register").length, 1);
    assert.deepEqual(t.eventsFor(member.id, "push_device"), []);
    assert.equal((await db().selectFrom("push_devices").selectAll().execute()).length, 1);

    // A new key for the same account replaces the registration and forwards it again.
    const newKey = Buffer.from("another key").toString("base64");
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee({ push_public_key: newKey })));
    await idle();
    assert.equal(fake.to("push/e2ee/register").length, 2);
    const rows = await db().selectFrom("push_devices").selectAll().execute();
    assert.deepEqual(
      rows.map((r) => [r.push_public_key, r.bouncer_device_id !== null]),
      [[newKey, true]],
    );
  });

  test("refused by the service: failed with its error code; registering again succeeds", async () => {
    const member = u().member;
    fake.answers.push({ status: 400, body: { result: "error", code: "INVALID_BOUNCER_PUBLIC_KEY", msg: "Invalid bouncer_public_key" } });
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee({ bouncer_public_key: "stale key" })));
    await idle();
    assert.deepEqual(t.eventsFor(member.id, "push_device"), [{ type: "push_device", push_account_id: "2408", status: "failed", error_code: "INVALID_BOUNCER_PUBLIC_KEY" }]);
    let state = await t.register(member, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "failed", error_code: "INVALID_BOUNCER_PUBLIC_KEY" } });
    assert.equal(fake.to("push/e2ee/register").length, 1, "a refusal is not retried");

    // The same values again after a failure are forwarded again.
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee({ bouncer_public_key: "stale key" })));
    await idle();
    state = await t.register(member, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "active", error_code: null } });
  });

  test("the service failing once (HTTP 500) is retried", async () => {
    fake.answers.push({ status: 500, body: { result: "error", msg: "oops" } });
    assertSuccess(await t.api(u().member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    assert.equal(fake.to("push/e2ee/register").length, 2);
    const state = await t.register(u().member, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "active", error_code: null } });
  });

  test("the service unreachable through every retry: failed with REQUEST_EXPIRED", async () => {
    fake.fallback = "drop";
    const member = u().member;
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee()));
    let state = await t.register(member, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "pending", error_code: null } });
    await idle();
    assert.equal(fake.to("push/e2ee/register").length, MAX_ATTEMPTS);
    state = await t.register(member, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, { "2408": { status: "failed", error_code: "REQUEST_EXPIRED" } });
    assert.deepEqual(t.eventsFor(member.id, "push_device"), [{ type: "push_device", push_account_id: "2408", status: "failed", error_code: "REQUEST_EXPIRED" }]);
  });

  test("devices are per user: another user's push_account_id is independent", async () => {
    assertSuccess(await t.api(u().member, "POST", "/mobile_push/register", e2ee()));
    assertSuccess(await t.api(u().guest, "POST", "/mobile_push/register", e2ee()));
    await idle();
    assert.equal((await db().selectFrom("push_devices").selectAll().execute()).length, 2);
    const state = await t.register(u().moderator, { fetch_event_types: ["push_device"] });
    assert.deepEqual(state.push_devices, {});
  });
});

describe("legacy token endpoints", () => {
  test("POST /users/me/ios_device_token: token and appid required", async () => {
    assertError(await t.api(u().member, "POST", "/users/me/ios_device_token", { appid: "org.zulip.Zulip" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'token' argument");
    assertError(await t.api(u().member, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'appid' argument");
  });

  test("invalid tokens and app IDs: BAD_REQUEST with Zulip's messages", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ token: "" }, "Empty or invalid length token"],
      [{ token: "ab".repeat(2049) }, "Empty or invalid length token"],
      [{ token: "not hex at all" }, "Invalid APNS token"],
      [{ token: "abc" }, "Invalid APNS token"],
      [{ appid: "org zulip" }, "Invalid appid"],
    ];
    for (const [override, msg] of cases) {
      const params = { token: APNS_TOKEN, appid: "org.zulip.Zulip", ...override };
      assertError(await t.api(u().member, "POST", "/users/me/ios_device_token", params), 400, "BAD_REQUEST", msg);
    }
    assertError(await t.api(u().member, "POST", "/users/me/android_gcm_reg_id", { token: "" }), 400, "BAD_REQUEST", "Empty or invalid length token");
    assertError(await t.api(u().member, "POST", "/users/me/android_gcm_reg_id", { token: "x".repeat(4097) }), 400, "BAD_REQUEST", "Empty or invalid length token");
    assertError(await t.api(u().member, "DELETE", "/users/me/ios_device_token", { token: "xyz" }), 400, "BAD_REQUEST", "Invalid APNS token");
    assertError(await t.api(u().member, "DELETE", "/users/me/android_gcm_reg_id", { token: "" }), 400, "BAD_REQUEST", "Empty or invalid length token");
    assert.equal((await db().selectFrom("push_device_tokens").selectAll().execute()).length, 0);
    assert.equal(fake.requests.length, 0);
  });

  test("bots may not add tokens", async () => {
    assertError(await t.api(u().bot, "POST", "/users/me/android_gcm_reg_id", { token: "abc" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await t.api(u().bot, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN, appid: "a.b" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });

  test("iOS: stored once however often registered, forwarded to the service, removed", async () => {
    const member = u().member;
    for (let i = 0; i < 2; i++) assertSuccess(await t.api(member, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN, appid: "org.zulip.Zulip" }));
    const rows = await db().selectFrom("push_device_tokens").selectAll().execute();
    assert.deepEqual(
      rows.map((r) => [r.user_id, r.kind, r.token, r.ios_app_id]),
      [[member.id, 1, APNS_TOKEN, "org.zulip.Zulip"]],
    );
    const registered = fake.to("push/register");
    assert.equal(registered.length, 2);
    assert.deepEqual(registered[0]!.body, { realm_id: String(t.realm.id), user_id: String(member.id), token: APNS_TOKEN, token_kind: "1", ios_app_id: "org.zulip.Zulip" });

    assertSuccess(await t.api(member, "DELETE", "/users/me/ios_device_token", { token: APNS_TOKEN }));
    assert.equal((await db().selectFrom("push_device_tokens").selectAll().execute()).length, 0);
    assert.deepEqual(fake.to("push/unregister").map((r) => r.body), [{ realm_id: String(t.realm.id), user_id: String(member.id), token: APNS_TOKEN, token_kind: "1" }]);
  });

  test("Android: any non-empty token; removal; the service answers for unknown tokens", async () => {
    const member = u().member;
    assertSuccess(await t.api(member, "POST", "/users/me/android_gcm_reg_id", { token: "fcm:token/with+any_chars" }));
    assert.deepEqual(fake.to("push/register").map((r) => r.body.token_kind), ["2"]);
    assert.equal(fake.to("push/register")[0]!.body.ios_app_id, undefined);
    assertSuccess(await t.api(member, "DELETE", "/users/me/android_gcm_reg_id", { token: "fcm:token/with+any_chars" }));
    assert.equal((await db().selectFrom("push_device_tokens").selectAll().execute()).length, 0);
    fake.answers.push({ status: 400, body: { result: "error", code: "BAD_REQUEST", msg: "Token does not exist" } });
    assertError(await t.api(member, "DELETE", "/users/me/android_gcm_reg_id", { token: "unknown" }), 400, "BAD_REQUEST", "Token does not exist");
  });

  test("a token registered by another user moves to the new user", async () => {
    await addAndroid(u().member, "shared-device");
    await addAndroid(u().guest, "shared-device");
    const rows = await db().selectFrom("push_device_tokens").select(["user_id", "token"]).execute();
    assert.deepEqual(rows, [{ user_id: u().guest.id, token: "shared-device" }]);
  });

  test("the service failing: 502 (5xx, unreachable) or its message (4xx), and nothing stored", async () => {
    fake.answers.push({ status: 500, body: {} });
    assertError(await t.api(u().member, "POST", "/users/me/android_gcm_reg_id", { token: "t1" }), 502, "BAD_REQUEST", "Received 500 from push notification bouncer");
    fake.answers.push("drop");
    assertError(await t.api(u().member, "POST", "/users/me/android_gcm_reg_id", { token: "t1" }), 502, "BAD_REQUEST", "ConnectionError while trying to connect to push notification bouncer");
    fake.answers.push({ status: 401, body: { result: "error", code: "INVALID_ZULIP_SERVER", msg: "Zulip server auth failure" } });
    assertError(await t.api(u().member, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN, appid: "a.b" }), 400, "BAD_REQUEST", "Zulip server auth failure");
    assert.equal((await db().selectFrom("push_device_tokens").selectAll().execute()).length, 0);
  });
});

describe("pushes for new messages", () => {
  test("a direct message: one push request for the recipient with Zulip's payloads, none for the sender", async () => {
    const { owner, member } = u();
    await addAndroid(member);
    await addAndroid(owner);
    const id = await sendAndSettle(owner, { type: "direct", to: [member.id], content: "Hello **there** & welcome" });
    const sent = fake.to("push/notify");
    assert.equal(sent.length, 1);
    assert.match(sent[0]!.contentType ?? "", /^application\/json/);
    assert.equal(sent[0]!.authorization, `Basic ${Buffer.from("server-uuid:server-key").toString("base64")}`);
    const body = sent[0]!.body;
    const ownerName = await fullName(owner);
    assert.equal(body.user_id, member.id);
    assert.equal(body.realm_id, t.realm.id);
    assert.equal(body.trigger, "direct_message");
    assert.deepEqual(body.gcm_options, { priority: "high" });
    assert.equal(body.gcm_payload.event, "message");
    assert.equal(body.gcm_payload.zulip_message_id, id);
    assert.equal(body.gcm_payload.user_id, member.id);
    assert.equal(body.gcm_payload.sender_id, owner.id);
    const ownerRow = await db().selectFrom("users").select("email").where("id", "=", owner.id).executeTakeFirstOrThrow();
    assert.equal(body.gcm_payload.sender_email, ownerRow.email);
    assert.equal(body.gcm_payload.sender_full_name, ownerName);
    assert.equal(body.gcm_payload.recipient_type, "private");
    assert.equal(body.gcm_payload.pm_users, undefined);
    assert.equal(body.gcm_payload.content, "Hello there & welcome");
    assert.equal(body.gcm_payload.content_truncated, false);
    assert.equal(body.gcm_payload.realm_uri, "http://parley.test");
    assert.equal(body.gcm_payload.server, "parley.test");
    assert.equal(typeof body.gcm_payload.time, "number");
    assert.deepEqual(body.apns_payload.alert, { title: ownerName, subtitle: "", body: "Hello there & welcome" });
    assert.deepEqual(body.apns_payload.custom.zulip.message_ids, [id]);
    assert.equal(body.apns_payload.custom.zulip.recipient_type, "private");
  });

  test("a group direct message: pm_users, and a push per recipient with a device", async () => {
    const { owner, member, guest, moderator } = u();
    await addAndroid(member);
    await addAndroid(guest);
    await sendAndSettle(owner, { type: "direct", to: [member.id, guest.id, moderator.id], content: "x".repeat(250) });
    const bodies = notifies();
    assert.deepEqual(bodies.map((b) => b.user_id).sort(), [member.id, guest.id].sort());
    const ids = [owner.id, member.id, guest.id, moderator.id].sort((a, b) => a - b).join(",");
    assert.equal(bodies[0].gcm_payload.pm_users, ids);
    assert.equal(bodies[0].gcm_payload.content, `${"x".repeat(200)}…`);
    assert.equal(bodies[0].gcm_payload.content_truncated, true);
    assert.equal(bodies[0].apns_payload.alert.subtitle, `${await fullName(owner)}:`);
  });

  test("no push to users without devices, nor for E2EE devices the service has not accepted", async () => {
    const { owner, moderator, member } = u();
    fake.fallback = { status: 400, body: { result: "error", code: "BAD_REQUEST", msg: "no" } };
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    fake.reset();
    await sendAndSettle(owner, { type: "direct", to: [moderator.id], content: "hi" });
    await sendAndSettle(owner, { type: "direct", to: [member.id], content: "hi" });
    assert.deepEqual(notifies(), []);
  });

  test("an accepted E2EE device gets pushes", async () => {
    assertSuccess(await t.api(u().member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    await sendAndSettle(u().owner, { type: "direct", to: [u().member.id], content: "hi" });
    assert.deepEqual(notifies().map((b) => b.user_id), [u().member.id]);
  });

  test("a personal mention in a channel: pushed to the mentioned user only", async () => {
    const { admin, member, guest } = u();
    const channel = await newChannel(admin, [member, guest]);
    await addAndroid(member);
    await addAndroid(guest);
    const id = await sendAndSettle(admin, { type: "channel", to: channel.id, topic: "Plans", content: `hey @**${await fullName(member)}**` });
    const bodies = notifies();
    assert.equal(bodies.length, 1);
    const body = bodies[0];
    assert.equal(body.user_id, member.id);
    assert.equal(body.trigger, "mentioned");
    assert.equal(body.gcm_payload.zulip_message_id, id);
    assert.equal(body.gcm_payload.recipient_type, "stream");
    assert.equal(body.gcm_payload.stream, channel.name);
    assert.equal(body.gcm_payload.stream_id, channel.id);
    assert.equal(body.gcm_payload.topic, "Plans");
    assert.equal(body.apns_payload.alert.title, `#${channel.name} > Plans`);
    assert.equal(body.apns_payload.alert.subtitle, `${await fullName(admin)} mentioned you:`);
  });

  test("a plain channel message pushes nothing", async () => {
    const channel = await newChannel(u().admin, [u().member]);
    await addAndroid(u().member);
    await sendAndSettle(u().admin, { type: "channel", to: channel.id, topic: "t", content: "no mention" });
    assert.deepEqual(notifies(), []);
  });

  test("a group mention pushes to the group's members", async () => {
    const { admin, member, moderator } = u();
    const channel = await newChannel(admin, [member, moderator]);
    await addAndroid(member);
    await addAndroid(moderator);
    const groupName = uniqueName("pushgroup");
    assertSuccess(await t.api(admin, "POST", "/user_groups/create", { name: groupName, description: "d", members: [member.id] }));
    await sendAndSettle(admin, { type: "channel", to: channel.id, topic: "t", content: `@*${groupName}* ping` });
    assert.deepEqual(notifies().map((b) => [b.user_id, b.trigger]), [[member.id, "mentioned"]]);
  });

  test("wildcard mentions: pushed unless the channel is muted or wildcard notifications are off; personal mentions even in a muted channel", async () => {
    const { admin, member, guest } = u();
    const channel = await newChannel(admin, [member, guest]);
    await addAndroid(member);
    await addAndroid(guest);
    await sendAndSettle(admin, { type: "channel", to: channel.id, topic: "t", content: "@**all** hello" });
    assert.deepEqual(notifies().map((b) => [b.user_id, b.trigger]).sort(), [[member.id, "stream_wildcard_mentioned"], [guest.id, "stream_wildcard_mentioned"]].sort());
    assert.equal(notifies()[0].apns_payload.alert.subtitle, `${await fullName(admin)} mentioned everyone:`);

    fake.reset();
    assertSuccess(await t.api(member, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: channel.id, property: "is_muted", value: true }] }));
    assertSuccess(await t.api(guest, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: channel.id, property: "wildcard_mentions_notify", value: false }] }));
    await sendAndSettle(admin, { type: "channel", to: channel.id, topic: "t", content: "@**all** again" });
    assert.deepEqual(notifies(), []);
    await sendAndSettle(admin, { type: "channel", to: channel.id, topic: "t", content: `@**${await fullName(member)}** you` });
    assert.deepEqual(notifies().map((b) => b.user_id), [member.id]);
  });

  test("enable_offline_push_notifications off: no push; enable_online_push_notifications off: no push while a client polls", async () => {
    const { owner, member } = u();
    await addAndroid(member);
    // Earlier tests' event queues would make the member count as online.
    for (const queueId of await t.services.queues.queueIdsOf(member.id)) await t.services.queues.remove(queueId, member.id);
    try {
      assertSuccess(await t.api(member, "PATCH", "/settings", { enable_offline_push_notifications: false }));
      await sendAndSettle(owner, { type: "direct", to: [member.id], content: "one" });
      assert.deepEqual(notifies(), []);
      assertSuccess(await t.api(member, "PATCH", "/settings", { enable_offline_push_notifications: true, enable_online_push_notifications: false }));
      // Offline (no event queue): pushed.
      await sendAndSettle(owner, { type: "direct", to: [member.id], content: "two" });
      assert.equal(notifies().length, 1);
      // Online (a queue that just polled, and active presence, as Zulip's idle test): not pushed.
      await t.register(member);
      assertSuccess(await t.api(member, "POST", "/users/me/presence", { status: "active" }));
      await sendAndSettle(owner, { type: "direct", to: [member.id], content: "three" });
      assert.equal(notifies().length, 1);
    } finally {
      for (const queueId of await t.services.queues.queueIdsOf(member.id)) await t.services.queues.remove(queueId, member.id);
      assertSuccess(await t.api(member, "PATCH", "/settings", { enable_offline_push_notifications: true, enable_online_push_notifications: true }));
    }
  });

  test("the service failing once (503) is retried; the send is not held up", async () => {
    await addAndroid(u().member);
    fake.answers.push({ status: 503, body: {} });
    await sendAndSettle(u().owner, { type: "direct", to: [u().member.id], content: "retry me" });
    const sent = notifies();
    assert.equal(sent.length, 2);
    assert.deepEqual(sent[0], sent[1]);
  });

  test("the service down: the send succeeds at once; the push is given up after bounded retries", async () => {
    await addAndroid(u().member);
    fake.fallback = "drop";
    const started = Date.now();
    const res = await t.api(u().owner, "POST", "/messages", { type: "direct", to: [u().member.id], content: "into the void" });
    assertSuccess(res);
    assert.ok(Date.now() - started < 2000);
    await idle();
    assert.equal(notifies().length, MAX_ATTEMPTS);
    // The message was stored and delivered as usual.
    const row = await db().selectFrom("messages").select("content").where("id", "=", res.body.id).executeTakeFirst();
    assert.equal(row?.content, "into the void");
  });

  test("a refusal (4xx) is not retried", async () => {
    await addAndroid(u().member);
    fake.answers.push({ status: 400, body: { result: "error", code: "BAD_REQUEST", msg: "Invalid" } });
    await sendAndSettle(u().owner, { type: "direct", to: [u().member.id], content: "x" });
    assert.equal(notifies().length, 1);
  });
});

describe("POST /mobile_push/test_notification", () => {
  const testNotify = (user: TestUser, params: Record<string, unknown> = {}) => t.api(user, "POST", "/mobile_push/test_notification", params);
  const tests = () => fake.to("push/test_notification");

  function expectedRequest(user: TestUser, token: string, kind: number): Record<string, unknown> {
    return {
      realm_id: t.realm.id,
      user_id: user.id,
      token,
      token_kind: kind,
      base_payload: {
        server: new URL(t.services.config.externalUrl).host,
        realm_id: t.realm.id,
        realm_name: t.realm.name,
        realm_uri: t.services.config.externalUrl,
        realm_url: t.services.config.externalUrl,
        user_id: user.id,
      },
    };
  }

  test("without token: one request per legacy device to push/test_notification, JSON, with Zulip's base payload", async () => {
    const member = u().member;
    assertSuccess(await t.api(member, "POST", "/users/me/ios_device_token", { token: APNS_TOKEN, appid: "org.zulip.Zulip" }));
    await addAndroid(member, "fcm-test");
    // An E2EE registration is not a legacy device: the E2EE test endpoint (Zulip 11, level 420) covers those.
    assertSuccess(await t.api(member, "POST", "/mobile_push/register", e2ee()));
    await idle();
    fake.reset();
    const reply = assertSuccess(await testNotify(member));
    assert.deepEqual(reply, { result: "success", msg: "" });
    assert.deepEqual(
      tests().map((r) => r.body),
      [expectedRequest(member, APNS_TOKEN, 1), expectedRequest(member, "fcm-test", 2)],
    );
    assert.ok(tests().every((r) => r.contentType?.startsWith("application/json") && r.authorization === `Basic ${Buffer.from("server-uuid:server-key").toString("base64")}`));
  });

  test("with token: only that device; another user's or an unknown token: INVALID_PUSH_DEVICE_TOKEN, nothing sent", async () => {
    const member = u().member;
    await addAndroid(member, "fcm-one");
    await addAndroid(member, "fcm-two");
    await addAndroid(u().admin, "fcm-admin");
    fake.reset();
    assertSuccess(await testNotify(member, { token: "fcm-two" }));
    assert.deepEqual(tests().map((r) => r.body.token), ["fcm-two"]);
    fake.reset();
    assertError(await testNotify(member, { token: "fcm-admin" }), 400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized");
    assertError(await testNotify(member, { token: "nope" }), 400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized");
    assertError(await testNotify(member, { token: "" }), 400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized");
    assert.deepEqual(tests(), []);
  });

  test("no devices: success and nothing sent (as Zulip)", async () => {
    assertSuccess(await testNotify(u().member));
    assert.deepEqual(tests(), []);
  });

  test("the service does not know the device: INVALID_REMOTE_PUSH_DEVICE_TOKEN; other failures as for registrations", async () => {
    const member = u().member;
    await addAndroid(member, "fcm-stale");
    fake.answers.push({ status: 400, body: { result: "error", code: "INVALID_REMOTE_PUSH_DEVICE_TOKEN", msg: "Device not recognized by the push bouncer" } });
    assertError(await testNotify(member), 400, "INVALID_REMOTE_PUSH_DEVICE_TOKEN", "Device not recognized by the push bouncer");
    fake.answers.push({ status: 400, body: { result: "error", code: "BAD_REQUEST", msg: "Something else" } });
    assertError(await testNotify(member, { token: "fcm-stale" }), 400, "BAD_REQUEST", "Something else");
    fake.answers.push({ status: 503, body: {} });
    assertError(await testNotify(member), 502, "BAD_REQUEST", "Received 503 from push notification bouncer");
    fake.answers.push("drop");
    assertError(await testNotify(member), 502, "BAD_REQUEST", "ConnectionError while trying to connect to push notification bouncer");
  });

  test("every human role for its own devices; bots refused", async () => {
    for (const role of ["owner", "admin", "moderator", "member", "guest"] as const) {
      await addAndroid(u()[role], `fcm-role-${role}`);
      fake.reset();
      assertSuccess(await testNotify(u()[role], { token: `fcm-role-${role}` }));
      assert.deepEqual(tests().map((r) => [r.body.user_id, r.body.token]), [[u()[role].id, `fcm-role-${role}`]], role);
    }
    assertError(await testNotify(u().bot), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await t.api(null, "POST", "/mobile_push/test_notification"), 401, "UNAUTHORIZED");
  });

  test("no push service configured: PUSH_SERVICE_NOT_CONFIGURED (an unknown token is still named first)", async () => {
    const member = plain.users.member;
    assertError(await plain.api(member, "POST", "/mobile_push/test_notification"), 400, "PUSH_SERVICE_NOT_CONFIGURED", "Server is not configured to use push notification service.");
    assertError(await plain.api(member, "POST", "/mobile_push/test_notification", { token: "nope" }), 400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized");
    assertSuccess(await plain.api(member, "POST", "/users/me/android_gcm_reg_id", { token: "fcm-plain" }));
    assertError(await plain.api(member, "POST", "/mobile_push/test_notification", { token: "fcm-plain" }), 400, "PUSH_SERVICE_NOT_CONFIGURED", "Server is not configured to use push notification service.");
  });
});
