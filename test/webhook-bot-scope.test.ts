// What an incoming-webhook bot's API key reaches (issue 25, item 3). Such a
// key sits in third-party services' webhook URLs, so, as in Zulip
// (validate_api_key's allow_webhook_access), it may post through the webhook
// endpoints and send messages (POST /messages), and nothing else: every other
// endpoint answers 401 UNAUTHORIZED "This API is not available to incoming
// webhook bots.". Generic and outgoing-webhook bots are not affected.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createSession } from "../src/actions/sessions.ts";
import { createUser } from "../src/actions/users.ts";
import { BotType } from "../src/domain/roles.ts";
import { SESSION_COOKIE } from "../src/http/session-cookie.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type ApiResponse, type BrowserSession, type TestApp, type TestUser } from "./helpers.ts";

const REFUSED = "This API is not available to incoming webhook bots.";

let t: TestApp;
let incoming: TestUser;
let generic: TestUser;
let outgoing: TestUser;
const channel = "webhook-scope";
let channelId: number;
let messageId: number;

async function makeBot(name: string, botType: number): Promise<TestUser> {
  const slug = uniqueName(name).toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const user = await createUser(t.services, t.realm, null, { email: `${slug}-bot@example.com`, fullName: name, password: null, isBot: true, botType, botOwnerId: t.users.member.id });
  return { id: user.id, email: user.delivery_email, apiKey: user.api_key, role: user.role, password: "" };
}

before(async () => {
  t = await startTestApp();
  incoming = await makeBot("Incoming Hook", BotType.INCOMING_WEBHOOK);
  generic = await makeBot("Generic Helper", BotType.GENERIC);
  outgoing = await makeBot("Outgoing Hook", BotType.OUTGOING_WEBHOOK);
  assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
  channelId = (await t.services.storage.db.selectFrom("channels").select("id").where("name", "=", channel).executeTakeFirstOrThrow()).id;
  messageId = assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channel, topic: "history", content: "a secret in the history" })).id;
});
after(() => t?.close());

function assertRefused(response: ApiResponse, what: string): void {
  assertError(response, 401, "UNAUTHORIZED", REFUSED);
  assert.equal(response.headers.get("www-authenticate"), 'Basic realm="zulip"', what);
  assert.equal(JSON.stringify(response.body).includes("a secret in the history"), false, what);
}

/** GET on a path outside /api/v1 (files, avatars) with HTTP Basic credentials. */
async function getWithBasic(user: TestUser, path: string): Promise<ApiResponse> {
  const response = await fetch(`${t.url}${path}`, { headers: { authorization: basicAuth(user.email, user.apiKey) }, redirect: "manual" });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the assertion shows the text.
  }
  return { status: response.status, headers: response.headers, body };
}

describe("an incoming-webhook bot's API key", () => {
  test("sends messages: to a channel and as a direct message", async () => {
    const sent = assertSuccess(await t.api(incoming, "POST", "/messages", { type: "stream", to: channel, topic: "alerts", content: "build failed" }));
    const row = await t.services.storage.db.selectFrom("messages").select(["sender_id", "channel_id", "content"]).where("id", "=", sent.id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { sender_id: incoming.id, channel_id: channelId, content: "build failed" });
    assertSuccess(await t.api(incoming, "POST", "/messages", { type: "direct", to: JSON.stringify([t.users.member.id]), content: "hello owner" }));
  });

  test("posts through the webhook endpoints, with api_key and with HTTP Basic", async () => {
    const basic: Record<string, string> = { authorization: basicAuth(incoming.email, incoming.apiKey) };
    for (const headers of [{} as Record<string, string>, basic]) {
      const query = new URLSearchParams({ stream: channel, topic: "hooks", ...("authorization" in headers ? {} : { api_key: incoming.apiKey }) });
      const response = await fetch(`${t.url}/api/v1/external/json?${query}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ ok: 1 }) });
      assert.equal(response.status, 200, await response.clone().text());
      assert.deepEqual(await response.json(), { result: "success", msg: "" });
    }
    const hooked = await t.services.storage.db.selectFrom("messages").select("id").where("sender_id", "=", incoming.id).where("topic", "=", "hooks").execute();
    assert.equal(hooked.length, 2);
  });

  test("is refused everywhere else: 401 UNAUTHORIZED with Zulip's message, before anything is read or changed", async () => {
    const calls: [string, string, Record<string, unknown>][] = [
      ["GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0 }],
      ["GET", `/messages/${messageId}`, {}],
      ["GET", "/messages/matches_narrow", { msg_ids: JSON.stringify([messageId]), narrow: "[]" }],
      ["PATCH", `/messages/${messageId}`, { content: "edited" }],
      ["DELETE", `/messages/${messageId}`, {}],
      ["POST", "/messages/render", { content: "x" }],
      ["POST", "/messages/flags", { messages: JSON.stringify([messageId]), op: "add", flag: "read" }],
      ["GET", "/users", {}],
      ["GET", "/users/me", {}],
      ["GET", `/users/${t.users.owner.id}`, {}],
      ["POST", "/register", {}],
      ["GET", "/events", { queue_id: "1:1", last_event_id: -1 }],
      ["DELETE", "/events", { queue_id: "1:1" }],
      ["PATCH", "/settings", { full_name: "Renamed" }],
      ["GET", "/streams", {}],
      ["GET", "/users/me/subscriptions", {}],
      ["POST", "/users/me/subscriptions", { subscriptions: JSON.stringify([{ name: "bot-made" }]) }],
      ["POST", "/typing", { op: "start", type: "direct", to: JSON.stringify([t.users.member.id]) }],
      ["POST", "/bots", { full_name: "Child", short_name: "child" }],
      ["POST", "/users/me/api_key/regenerate", {}],
      ["GET", "/scheduled_messages", {}],
      ["GET", "/realm/linkifiers", {}],
    ];
    for (const [method, path, params] of calls) assertRefused(await t.api(incoming, method, path, params), `${method} ${path}`);
    const self = await t.services.storage.db.selectFrom("users").select(["full_name", "api_key"]).where("id", "=", incoming.id).executeTakeFirstOrThrow();
    assert.deepEqual(self, { full_name: "Incoming Hook", api_key: incoming.apiKey });
    assert.equal((await t.services.storage.db.selectFrom("messages").select("content").where("id", "=", messageId).executeTakeFirstOrThrow()).content, "a secret in the history");
    assert.equal(await t.services.storage.db.selectFrom("channels").select("id").where("name", "=", "bot-made").executeTakeFirst(), undefined);
  });

  test("reaches neither uploaded files nor avatars with HTTP Basic", async () => {
    const form = new FormData();
    form.append("file", new Blob(["uploaded notes"], { type: "text/plain" }), "notes.txt");
    const uploaded = await fetch(`${t.url}/api/v1/user_uploads`, { method: "POST", body: form, headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) } });
    const url = ((await uploaded.json()) as { url: string }).url;
    assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channel, topic: "files", content: `[notes](${url})` }));
    const byGeneric = await getWithBasic(generic, url);
    assert.equal(byGeneric.status, 200);
    assert.equal(byGeneric.body, "uploaded notes");
    assertRefused(await getWithBasic(incoming, url), "GET the file");
    assertRefused(await getWithBasic(incoming, `/avatar/${t.users.owner.id}`), "GET /avatar");
    assertRefused(await getWithBasic(incoming, `/thumbnail?url=${encodeURIComponent("https://images.example.com/a.png")}`), "GET /thumbnail");
    const upload = new FormData();
    upload.append("file", new Blob(["bot file"], { type: "text/plain" }), "bot.txt");
    const byBot = await fetch(`${t.url}/api/v1/user_uploads`, { method: "POST", body: upload, headers: { authorization: basicAuth(incoming.email, incoming.apiKey) } });
    assert.equal(byBot.status, 401);
    assert.deepEqual(await byBot.json(), { result: "error", msg: REFUSED, code: "UNAUTHORIZED" });
  });

  test("a browser session of such a bot (bots cannot sign in, but a session row could exist) gets Zulip's /json refusal on every endpoint", async () => {
    const created = await createSession(t.services, incoming.id);
    const session: BrowserSession = { userId: incoming.id, cookie: `${SESSION_COOKIE}=${created.token}`, csrfToken: created.csrfToken };
    for (const [method, path, params] of [
      ["GET", "/users/me", {}],
      ["GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0 }],
      ["POST", "/messages", { type: "stream", to: channel, topic: "t", content: "via a session" }],
    ] as const) {
      assertError(await t.json(session, method, path, params), 400, "BAD_REQUEST", "Webhook bots can only access webhooks");
    }
  });
});

describe("other bots' keys are not affected", () => {
  for (const [name, bot] of [
    ["a generic bot", () => generic],
    ["an outgoing-webhook bot", () => outgoing],
  ] as const) {
    test(`${name} reads history and users, registers a queue and sends`, async () => {
      const history = assertSuccess(await t.api(bot(), "GET", "/messages", { anchor: "newest", num_before: 50, num_after: 0, narrow: JSON.stringify([{ operator: "channel", operand: channel }]) }));
      assert.ok(history.messages.some((m: { id: number }) => m.id === messageId));
      assert.equal(assertSuccess(await t.api(bot(), "GET", "/users/me", {})).user_id, bot().id);
      assertSuccess(await t.api(bot(), "GET", "/users", {}));
      const queue = assertSuccess(await t.api(bot(), "POST", "/register", { event_types: JSON.stringify(["message"]) }));
      assertSuccess(await t.api(bot(), "DELETE", "/events", { queue_id: queue.queue_id }));
      assertSuccess(await t.api(bot(), "POST", "/messages", { type: "stream", to: channel, topic: "bots", content: `from ${name}` }));
      assert.equal((await getWithBasic(bot(), `/avatar/${t.users.owner.id}`)).status, 302);
    });
  }
});
