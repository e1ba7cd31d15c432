// /api/v1/external/<integration>: authentication (api_key, HTTP Basic),
// where messages go (stream by name or ID, topic override, a direct message
// to the owner), Zulip's errors and owner notices, body handling, event
// filters, permissions and events. The integrations' formats are
// test/webhook-fixtures.test.ts's job.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createUser } from "../src/actions/users.ts";
import { MAX_MESSAGE_LENGTH } from "../src/domain/limits.ts";
import { Role } from "../src/domain/roles.ts";
import { jsonMessageContent } from "../src/integrations/json.ts";
import { sentry } from "../src/integrations/sentry.ts";
import { MessageText, normalizeWebhookContent } from "../src/integrations/normalize.ts";
import { pyJsonDumps, pyJsonLoads } from "../src/integrations/pyjson.ts";
import type { User } from "../src/storage/schema.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type TestApp } from "./helpers.ts";

// Zulip's webhook test table (real payloads): a GitHub pull request, for the event filters.
const TABLE = JSON.parse(fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "fixtures/zulip-webhook-cases.json"), "utf8")) as {
  integrations: Record<string, { cases: { name: string; headers: Record<string, string>; payload: unknown }[] }>;
};
const PULL_REQUEST_OPENED = TABLE.integrations.github!.cases.find((c) => c.name === "test_pull_request_opened_msg")!;

/** `[[[…]]]`, `depth` lists deep. */
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

/** What the JSON formatter posts for `text`, printed whole and then cut as Zulip cuts it: what the bounded printing must equal. */
const printedWhole = (text: string) => normalizeWebhookContent("```json\n" + pyJsonDumps(pyJsonLoads(text), 2) + "\n```");

interface Hook {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

describe("incoming webhooks", () => {
  let app: TestApp;
  let bot: User;
  let notificationBotId: number;
  let channelId: number;
  const channel = "alerts";

  before(async () => {
    app = await startTestApp();
    bot = await makeBot("Hook Bot", app.users.member.id);
    assertSuccess(await app.api(app.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    channelId = (await app.services.storage.db.selectFrom("channels").select("id").where("name", "=", channel).executeTakeFirstOrThrow()).id;
    notificationBotId = (await app.services.storage.db.selectFrom("users").select("id").where("email_key", "=", "notification-bot@zulip.com").executeTakeFirstOrThrow()).id;
  });
  after(async () => app?.close());

  async function makeBot(name: string, ownerId: number, botType = 2): Promise<User> {
    const slug = uniqueName(name).toLowerCase().replace(/[^a-z0-9]+/g, "-");
    return createUser(app.services, app.realm, null, { email: `${slug}-bot@example.com`, fullName: name, password: null, isBot: true, botType, botOwnerId: ownerId });
  }

  async function hook(path: string, init: { method?: string; query?: Record<string, string>; body?: string; contentType?: string; headers?: Record<string, string> } = {}): Promise<Hook> {
    const qs = new URLSearchParams(init.query ?? {}).toString();
    const headers: Record<string, string> = { ...(init.contentType ? { "content-type": init.contentType } : {}), ...init.headers };
    const response = await fetch(`${app.url}/api/v1/external/${path}${qs ? `?${qs}` : ""}`, { method: init.method ?? "POST", headers, body: init.body });
    const text = await response.text();
    return { status: response.status, body: JSON.parse(text) };
  }

  async function lastMessages(senderId: number, n = 1) {
    const rows = await app.services.storage.db
      .selectFrom("messages")
      .leftJoin("channels", "channels.id", "messages.channel_id")
      .select(["messages.id", "messages.topic", "messages.content", "messages.channel_id", "messages.recipient_id", "messages.sending_client", "channels.name as channel"])
      .where("messages.sender_id", "=", senderId)
      .orderBy("messages.id", "desc")
      .limit(n)
      .execute();
    return rows.reverse();
  }

  async function recipientsOf(messageId: number): Promise<number[]> {
    const rows = await app.services.storage.db.selectFrom("user_messages").select("user_id").where("message_id", "=", messageId).orderBy("user_id").execute();
    return rows.map((r) => r.user_id);
  }

  const jsonBody = (value: unknown) => ({ body: JSON.stringify(value), contentType: "application/json" });

  test("/register lists the integrations in realm_incoming_webhook_bots", async () => {
    const state = assertSuccess(await app.api(app.users.member, "POST", "/register", { fetch_event_types: ["realm_incoming_webhook_bots"] }));
    const names = state.realm_incoming_webhook_bots.map((i: { name: string }) => i.name).sort();
    assert.deepEqual(names, ["alertmanager", "github", "githubsponsors", "gitlab", "grafana", "json", "sentry", "slack_incoming"].sort());
    assert.deepEqual(
      state.realm_incoming_webhook_bots.find((i: { name: string }) => i.name === "github"),
      { name: "github", display_name: "GitHub", all_event_types: null, config_options: [] },
    );
  });

  test("a JSON payload posts to the channel and topic, as the bot, with Zulip's client name and a message event", async () => {
    app.clearEvents();
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: channel }, ...jsonBody({ a: 1 }) });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.channel, channel);
    assert.equal(message!.topic, "JSON");
    assert.equal(message!.content, '```json\n{\n  "a": 1\n}\n```');
    assert.equal(message!.sending_client, "ZulipJSONWebhook");
    const events = app.eventsFor(app.users.member.id, "message");
    assert.equal(events.length, 1);
    assert.equal((events[0] as unknown as { message: { id: number } }).message.id, message!.id);
  });

  test("the topic parameter replaces the integration's topic; the stream may be an ID", async () => {
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: String(channelId), topic: "  my topic  " }, ...jsonBody({}) });
    assertSuccess({ status: reply.status, headers: new Headers(), body: reply.body });
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.channel_id, channelId);
    assert.equal(message!.topic, "my topic");
  });

  test("parameters may come in a urlencoded form body", async () => {
    const form = new URLSearchParams({ api_key: bot.api_key, stream: channel, payload: JSON.stringify({ text: "from a form" }) }).toString();
    const reply = await hook("slack_incoming", { body: form, contentType: "application/x-www-form-urlencoded" });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(reply.body.ok, true);
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.content, "from a form");
    assert.equal(message!.topic, "");
  });

  test("GET works too (Slack payload in the query)", async () => {
    const reply = await hook("slack_incoming", { method: "GET", query: { api_key: bot.api_key, stream: channel, payload: JSON.stringify({ text: "by GET", channel: "#ops" }) } });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const [message] = await lastMessages(bot.id);
    assert.deepEqual([message!.topic, message!.content], ["ops", "by GET"]);
  });

  test("without a stream the message is a direct message to the bot's owner", async () => {
    const reply = await hook("json", { query: { api_key: bot.api_key, topic: "ignored" }, ...jsonBody({ dm: true }) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.channel_id, null);
    assert.deepEqual(await recipientsOf(message!.id), [app.users.member.id, bot.id].sort((a, b) => a - b));
  });

  test("HTTP Basic authentication works instead of api_key", async () => {
    const reply = await hook("json", { query: { stream: channel }, headers: { authorization: basicAuth(bot.delivery_email, bot.api_key) }, ...jsonBody({ basic: 1 }) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal((await lastMessages(bot.id))[0]!.content, '```json\n{\n  "basic": 1\n}\n```');
    const wrong = await hook("json", { query: { stream: channel }, headers: { authorization: basicAuth(bot.delivery_email, "x".repeat(32)) }, ...jsonBody({}) });
    assertError({ ...wrong, headers: new Headers() }, 401, "INVALID_API_KEY", "Invalid API key");
  });

  test("credentials: missing, malformed and unknown keys", async () => {
    const before = (await lastMessages(bot.id))[0]!.id;
    assertError({ ...(await hook("json", { query: { stream: channel }, ...jsonBody({}) })), headers: new Headers() }, 400, "REQUEST_VARIABLE_MISSING", "Missing 'api_key' argument", { var_name: "api_key" });
    assertError({ ...(await hook("json", { query: { api_key: "short", stream: channel }, ...jsonBody({}) })), headers: new Headers() }, 401, "INVALID_API_KEY", "Malformed API key");
    assertError({ ...(await hook("json", { query: { api_key: "A".repeat(32), stream: channel }, ...jsonBody({}) })), headers: new Headers() }, 401, "INVALID_API_KEY", "Invalid API key");
    // Whitespace around a key is forgiven, as Zulip strips it.
    assert.equal((await hook("json", { query: { api_key: ` ${bot.api_key} `, stream: channel }, ...jsonBody({}) })).status, 200);
    assert.equal((await lastMessages(bot.id, 2))[0]!.id, before);
  });

  test("an unknown integration is 404, before any authentication", async () => {
    const reply = await hook("nosuchthing", { query: { stream: channel }, ...jsonBody({}) });
    assertError({ ...reply, headers: new Headers() }, 404, "BAD_REQUEST", "Endpoint not found");
  });

  test("a body that is not JSON: 400 INVALID_JSON, and the owner hears once a minute", async () => {
    const owner = await app.createUser(uniqueName("Owner"));
    const own = await makeBot("Json Bot", owner.id);
    const first = await hook("json", { query: { api_key: own.api_key, stream: channel }, body: "{not json", contentType: "application/json" });
    assertError({ ...first, headers: new Headers() }, 400, "INVALID_JSON", "Malformed JSON");
    await hook("grafana", { query: { api_key: own.api_key, stream: channel }, body: "", contentType: "application/json" });
    const again = await hook("json", { query: { api_key: own.api_key, stream: channel }, body: "[", contentType: "text/plain" });
    assertError({ ...again, headers: new Headers() }, 400, "INVALID_JSON", "Malformed JSON");
    const notices = (await lastMessages(notificationBotId, 10)).filter((m) => m.content.includes("Zulip JSON integration"));
    assert.equal(notices.length, 1);
    assert.equal(notices[0]!.content, "Hi there! It looks like you tried to set up the Zulip JSON integration,\nbut didn't correctly configure the webhook to send data in the JSON format\nthat this integration expects!");
    assert.deepEqual(await recipientsOf(notices[0]!.id), [notificationBotId, owner.id].sort((a, b) => a - b));
    const grafanaNotices = (await lastMessages(notificationBotId, 10)).filter((m) => m.content.includes("Zulip Grafana integration"));
    assert.equal(grafanaNotices.length, 1);
    assert.equal((await lastMessages(own.id)).length, 0);
  });

  test("an unknown channel name: success, nothing sent, the owner is told", async () => {
    const owner = await app.createUser(uniqueName("Owner"));
    const own = await makeBot("Lost Bot", owner.id);
    const reply = await hook("json", { query: { api_key: own.api_key, stream: "nowhere" }, ...jsonBody({}) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal((await lastMessages(own.id)).length, 0);
    const [notice] = await lastMessages(notificationBotId);
    assert.equal(notice!.content, `Your bot \`${own.delivery_email}\` tried to send a message to channel #**nowhere**, but that channel does not exist. Click [here](#channels/new) to create it.`);
    assert.deepEqual(await recipientsOf(notice!.id), [notificationBotId, owner.id].sort((a, b) => a - b));
  });

  test("an unknown channel ID: 400 STREAM_DOES_NOT_EXIST, and the owner is told", async () => {
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: "999999" }, ...jsonBody({}) });
    assertError({ ...reply, headers: new Headers() }, 400, "STREAM_DOES_NOT_EXIST", "Channel with ID '999999' does not exist", { stream_id: 999999 });
    const [notice] = await lastMessages(notificationBotId);
    assert.equal(notice!.content, `Your bot \`${bot.delivery_email}\` tried to send a message to channel ID 999999, but there is no channel with that ID.`);
  });

  test("a channel without subscribers gets the message, and the owner is told", async () => {
    const name = uniqueName("empty");
    assertSuccess(await app.api(app.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
    assertSuccess(await app.api(app.users.admin, "DELETE", "/users/me/subscriptions", { subscriptions: [name] }));
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: name }, ...jsonBody({}) });
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal((await lastMessages(bot.id))[0]!.channel, name);
    const [notice] = await lastMessages(notificationBotId);
    assert.equal(notice!.content, `Your bot \`${bot.delivery_email}\` tried to send a message to channel #**${name}**. The channel exists but does not have any subscribers.`);
  });

  test("a private channel: the bot posts where its owner is subscribed, not elsewhere", async () => {
    const mine = uniqueName("private");
    assertSuccess(await app.api(app.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: mine }], invite_only: true }));
    assert.equal((await hook("json", { query: { api_key: bot.api_key, stream: mine }, ...jsonBody({}) })).status, 200);
    assert.equal((await lastMessages(bot.id))[0]!.channel, mine);
    const theirs = uniqueName("private");
    assertSuccess(await app.api(app.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: theirs }], invite_only: true }));
    const last = (await lastMessages(bot.id))[0]!.id;
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: theirs }, ...jsonBody({}) });
    assert.equal(reply.status, 400, JSON.stringify(reply.body));
    assert.equal(reply.body.result, "error");
    assert.equal((await lastMessages(bot.id))[0]!.id, last);
  });

  test("a deactivated bot, and a bot whose owner was deactivated, are refused", async () => {
    const owner = await app.createUser(uniqueName("Owner"));
    const own = await makeBot("Doomed Bot", owner.id);
    const other = await makeBot("Other Bot", app.users.moderator.id);
    // Bots are deactivated through DELETE /bots/{id} (another branch's endpoint): the row is what authentication reads.
    await app.services.storage.db.updateTable("users").set({ is_active: false }).where("id", "=", other.id).execute();
    assertError({ ...(await hook("json", { query: { api_key: other.api_key, stream: channel }, ...jsonBody({}) })), headers: new Headers() }, 401, "USER_DEACTIVATED", "Account is deactivated");
    assert.equal((await hook("json", { query: { api_key: own.api_key, stream: channel }, ...jsonBody({}) })).status, 200);
    assertSuccess(await app.api(app.users.admin, "DELETE", `/users/${owner.id}`));
    assertError({ ...(await hook("json", { query: { api_key: own.api_key, stream: channel }, ...jsonBody({}) })), headers: new Headers() }, 401, "USER_DEACTIVATED", "Account is deactivated");
  });

  test("any account's key works (a generic bot, a person); a person without an owner gets the direct message", async () => {
    const generic = await makeBot("Generic Bot", app.users.member.id, 1);
    assert.equal((await hook("json", { query: { api_key: generic.api_key, stream: channel }, ...jsonBody({}) })).status, 200);
    assert.equal((await lastMessages(generic.id))[0]!.channel, channel);
    const person = app.users.moderator;
    assert.equal((await hook("json", { query: { api_key: person.apiKey }, ...jsonBody({ me: 1 }) })).status, 200);
    const [dm] = await lastMessages(person.id);
    assert.equal(dm!.channel_id, null);
    assert.deepEqual(await recipientsOf(dm!.id), [person.id]);
  });

  test("an unsupported event is a success with Zulip's message, and nothing is sent", async () => {
    const last = (await lastMessages(bot.id))[0]!.id;
    const reply = await hook("sentry", { query: { api_key: bot.api_key, stream: channel }, ...jsonBody({ data: { foo: 1 } }) });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { result: "success", msg: "The '['foo']' event isn't currently supported by the Sentry webhook; ignoring" });
    assert.equal((await lastMessages(bot.id))[0]!.id, last);
  });

  test("only_events and exclude_events filter on the event type; bad values are refused", async () => {
    const alert = (status: string) => ({
      alerts: [{ status, labels: { alertname: "A" }, startsAt: "2024-03-01T02:09:00Z", endsAt: "0001-01-01T00:00:00Z", fingerprint: "f" }],
    });
    const last = (await lastMessages(bot.id))[0]!.id;
    assert.equal((await hook("grafana", { query: { api_key: bot.api_key, stream: channel, only_events: '["resolv*"]' }, ...jsonBody(alert("firing")) })).status, 200);
    assert.equal((await hook("grafana", { query: { api_key: bot.api_key, stream: channel, exclude_events: '["fir?ng"]' }, ...jsonBody(alert("firing")) })).status, 200);
    assert.equal((await lastMessages(bot.id))[0]!.id, last);
    assert.equal((await hook("grafana", { query: { api_key: bot.api_key, stream: channel, only_events: '["[fr]iring"]' }, ...jsonBody(alert("firing")) })).status, 200);
    assert.equal((await lastMessages(bot.id))[0]!.topic, "[A]");
    assertError({ ...(await hook("grafana", { query: { api_key: bot.api_key, stream: channel, only_events: "[oops" }, ...jsonBody(alert("firing")) })), headers: new Headers() }, 400, "BAD_REQUEST", "only_events is not valid JSON");
    assertError({ ...(await hook("grafana", { query: { api_key: bot.api_key, stream: channel, exclude_events: "[1]" }, ...jsonBody(alert("firing")) })), headers: new Headers() }, 400, "BAD_REQUEST", "exclude_events[0] is not a string");
  });

  test("event patterns are read as Python's fnmatch reads them: none is an invalid expression", { timeout: 60_000 }, async () => {
    const github = (query: Record<string, string>) =>
      hook("github", { query: { api_key: bot.api_key, stream: channel, ...query }, headers: PULL_REQUEST_OPENED.headers, ...jsonBody(PULL_REQUEST_OPENED.payload) });
    const last = () => lastMessages(bot.id).then((m) => m[0]?.id);
    // The event is "opened_pull_request". An empty range never matches; `]` first in a set is literal.
    let before = await last();
    // Forty `*?` need forty characters: no match, found without backtracking (a regular expression per star took forever).
    const manyStars = JSON.stringify(["*?".repeat(40)]);
    const filteredOut: Record<string, string>[] = [
      { only_events: '["[z-a]"]' },
      { only_events: '["[]]"]' },
      { only_events: '["[z-a]*", "opened_pull_reques[]]"]' },
      { exclude_events: '["[!]]*"]' },
      { only_events: manyStars },
    ];
    for (const query of filteredOut) {
      const reply = await github(query);
      assert.deepEqual([reply.status, reply.body], [200, { result: "success", msg: "" }], JSON.stringify(query));
      assert.equal(await last(), before, `${JSON.stringify(query)} posts nothing`);
    }
    const posted: Record<string, string>[] = [
      { exclude_events: '["[z-a]", "[]]", "[", "[!"]' },
      { only_events: '["[!]]pened_*"]' },
      { only_events: '["*_pull_[r]equest"]' },
      { exclude_events: manyStars },
    ];
    for (const query of posted) {
      const reply = await github(query);
      assert.deepEqual([reply.status, reply.body], [200, { result: "success", msg: "" }], JSON.stringify(query));
      const now = await last();
      assert.notEqual(now, before, `${JSON.stringify(query)} posts the message`);
      before = now;
    }
    // Still refused: what is not a JSON list of strings.
    assertError({ ...(await github({ only_events: '"opened_*"' })), headers: new Headers() }, 400, "BAD_REQUEST", "only_events is not a list");
  });

  test("JSON nested deeper than 1000 levels is refused with a 400, on every integration; 1000 levels are formatted", async () => {
    for (const integration of ["json", "sentry", "grafana", "github", "slack_incoming"]) {
      const reply = await hook(integration, { query: { api_key: bot.api_key, stream: channel }, headers: { "X-GitHub-Event": "push" }, body: nested(5000), contentType: "application/json" });
      assertError({ ...reply, headers: new Headers() }, 400, "BAD_REQUEST", "Request body is nested too deeply (limit: 1000 levels)");
    }
    // Just past the bound, and as the Slack-style `payload` form field.
    assertError({ ...(await hook("json", { query: { api_key: bot.api_key, stream: channel }, body: nested(1001), contentType: "application/json" })), headers: new Headers() }, 400, "BAD_REQUEST", "Request body is nested too deeply (limit: 1000 levels)");
    const form = new URLSearchParams({ api_key: bot.api_key, stream: channel, payload: nested(5000) }).toString();
    const slack = await hook("slack_incoming", { body: form, contentType: "application/x-www-form-urlencoded" });
    assertError({ ...slack, headers: new Headers() }, 400, "BAD_REQUEST", "payload is nested too deeply (limit: 1000 levels)");
    // Brackets in a body that is not JSON are not nesting.
    const text = await hook("json", { query: { api_key: bot.api_key, stream: channel }, body: nested(5000).slice(0, 6000), contentType: "application/json" });
    assertError({ ...text, headers: new Headers() }, 400, "INVALID_JSON", "Malformed JSON");

    const reply = await hook("json", { query: { api_key: bot.api_key, stream: channel }, body: nested(1000), contentType: "application/json" });
    assert.deepEqual([reply.status, reply.body], [200, { result: "success", msg: "" }]);
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.content, printedWhole(nested(1000)));
    assert.equal(message!.content.slice(0, 20), "```json\n[\n  [\n    [\n");
    assert.equal(message!.content.slice(-20), "\n[message truncated]");
  });

  test("a webhook body over WEBHOOK_BODY_LIMIT_BYTES (1 MiB) is refused with 413; the rest of the API keeps its own limit", async () => {
    const limit = app.services.config.webhookBodyLimitBytes;
    assert.equal(limit, 1024 * 1024);
    // JSON a byte over the limit: [0,0,…,0].
    const over = `[${"0,".repeat((limit - 1) / 2)}0]`;
    assert.equal(over.length, limit + 1);
    const before = (await lastMessages(bot.id))[0]?.id;
    for (const integration of ["json", "github", "no_such_integration"]) {
      const reply = await hook(integration, { query: { api_key: bot.api_key, stream: channel }, body: over, contentType: "application/json" });
      assertError({ ...reply, headers: new Headers() }, 413, "BAD_REQUEST", "Request body is too large");
    }
    assert.equal((await lastMessages(bot.id))[0]?.id, before);
    // A form body too (the parameters are in it).
    const form = `api_key=${bot.api_key}&stream=${channel}&payload=${"x".repeat(limit)}`;
    assertError({ ...(await hook("slack_incoming", { body: form, contentType: "application/x-www-form-urlencoded" })), headers: new Headers() }, 413, "BAD_REQUEST", "Request body is too large");

    // At the limit: accepted, and formatted only as far as the message goes.
    const at = over.slice(0, -3) + "]";
    assert.equal(at.length, limit - 1);
    const reply = await hook("json", { query: { api_key: bot.api_key, stream: channel }, body: at, contentType: "application/json" });
    assert.deepEqual([reply.status, reply.body], [200, { result: "success", msg: "" }]);
    const [message] = await lastMessages(bot.id);
    assert.equal(message!.content, printedWhole(at));
    assert.equal([...message!.content].length, MAX_MESSAGE_LENGTH);
    // "```json\n[" and 1994 items "\n  0,", then the first character of the next: 9,980 code points, then Zulip's marker.
    assert.equal(message!.content, "```json\n[" + "\n  0,".repeat(1994) + "\n" + "\n[message truncated]");

    // Other endpoints take bodies up to BODY_LIMIT_BYTES (a message's content is cut, not refused).
    const sent = await app.api(app.users.member, "POST", "/messages", { type: "stream", to: channel, topic: "big", content: "y".repeat(2 * limit) });
    assertSuccess(sent);
  });

  test("WEBHOOK_BODY_LIMIT_BYTES is configurable", async () => {
    const small = await startTestApp({ webhookBodyLimitBytes: 4096 });
    try {
      const owner = small.users.owner;
      const post = (body: string) =>
        fetch(`${small.url}/api/v1/external/json?api_key=${owner.apiKey}`, { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));
      assertError(await post(JSON.stringify({ pad: "p".repeat(4096) })), 413, "BAD_REQUEST", "Request body is too large");
      assertSuccess(await post(JSON.stringify({ pad: "p".repeat(4000) })));
    } finally {
      await small.close();
    }
  });

  test("Slack-compatible errors: {ok: false, error}", async () => {
    const missing = await hook("slack_incoming", { query: { api_key: bot.api_key, stream: channel }, body: "", contentType: "application/x-www-form-urlencoded" });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body, { ok: false, error: "Missing 'payload' argument" });
    const bad = await hook("slack_incoming", { query: { api_key: bot.api_key, stream: channel }, body: "{", contentType: "application/json" });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body, { ok: false, error: "Malformed JSON" });
    // Credentials are checked before the Slack view runs: Zulip's usual error.
    assertError({ ...(await hook("slack_incoming", { query: { api_key: "B".repeat(32) }, ...jsonBody({ text: "x" }) })), headers: new Headers() }, 401, "INVALID_API_KEY");
  });

  test("a body that is not UTF-8 is refused", async () => {
    const response = await fetch(`${app.url}/api/v1/external/json?api_key=${bot.api_key}&stream=${channel}`, { method: "POST", headers: { "content-type": "application/json" }, body: Buffer.from([0x7b, 0xff, 0x7d]) });
    assertError({ status: response.status, headers: response.headers, body: await response.json() }, 400, "BAD_REQUEST", "Malformed payload");
  });

  test("other methods are 405", async () => {
    const reply = await hook("json", { method: "DELETE", query: { api_key: bot.api_key } });
    assert.equal(reply.status, 405);
  });
});

describe("the JSON formatter stops at the message length", () => {
  test("a large payload: the message is the whole printout cut as Zulip cuts it, and the values visited are bounded by the message", () => {
    const text = `[${"0,".repeat(999_999)}0]`;
    const payload = pyJsonLoads(text);
    const bounded = new MessageText();
    const visited = jsonMessageContent(payload, bounded);
    assert.equal(bounded.full, true);
    const content = normalizeWebhookContent(bounded.toString());
    assert.equal(content, printedWhole(text));
    assert.equal([...content].length, MAX_MESSAGE_LENGTH);
    assert.equal(content.slice(-20), "\n[message truncated]");
    // Each item prints ",\n  0" (5 characters): the printing stops after about MAX_MESSAGE_LENGTH / 5 of the million.
    assert.equal(visited, 2000);
    // Printed whole, every value is visited.
    const whole = new MessageText(Number.POSITIVE_INFINITY);
    assert.equal(jsonMessageContent(payload, whole), 1_000_001);
  });

  test("a deep payload, whose printout grows with the square of its depth, is visited only as far as the message", () => {
    // 500 levels around 2,000 items: printed whole, 2 MB of indentation.
    const text = "[".repeat(500) + "0,".repeat(1999) + "0" + "]".repeat(500);
    const bounded = new MessageText();
    const visited = jsonMessageContent(pyJsonLoads(text), bounded);
    assert.equal(normalizeWebhookContent(bounded.toString()), printedWhole(text));
    assert.equal(visited, 100);
  });

  test("Sentry: a frame with 100,000 context lines gives the message printing it whole and cutting would", () => {
    const fixture = TABLE.integrations.sentry!.cases.find((c) => c.name === "test_event_for_exception_python")!;
    const payload = structuredClone(fixture.payload) as { data: { event: { exception: { values: { stacktrace: { frames: { pre_context: unknown }[] } }[] } } } };
    const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i}`);
    for (const frame of payload.data.event.exception.values.at(-1)!.stacktrace.frames) frame.pre_context = lines;
    const result = sentry.handle({ payload, rawBody: JSON.stringify(payload), headers: {}, query: {}, userTopic: undefined });
    assert.equal(result.kind, "messages");
    const content = normalizeWebhookContent((result as { messages: { content: string }[] }).messages[0]!.content);
    assert.equal([...content].length, MAX_MESSAGE_LENGTH);
    // Whole, the lines would print as "     line i\n" each, after the exception's head.
    const head = content.slice(0, content.indexOf("     line 0\n"));
    assert.match(head, /^\n?\*\*New exception:\*\* .*\nTraceback:\n```python3\n$/s);
    assert.equal(content, normalizeWebhookContent(head + lines.map((line) => `     ${line}\n`).join("") + "---> …"));
  });

  test("MessageText is full only once a character that is not whitespace stands past the limit", () => {
    const limit = 10;
    const text = new MessageText(limit);
    text.write("\n\n\n0123456789");
    assert.equal(text.full, false, "leading newlines do not count (Zulip strips them)");
    text.write(" \t\u3000\n");
    assert.equal(text.full, false, "trailing whitespace may yet be stripped");
    text.write("\u{1F600}");
    assert.equal(text.full, true, "an astral character is one code point, and not whitespace");
    text.write("dropped");
    assert.equal(text.toString(), "\n\n\n0123456789 \t\u3000\n\u{1F600}");
  });
});
