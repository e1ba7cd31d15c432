// Outgoing-webhook bots (bot_type 3) against a real HTTP server on 127.0.0.1:
// which messages trigger them, the exact payload of both interfaces, the bot's
// reply in the conversation, and Zulip's failure rules (timeouts and
// connection errors retried, other errors not), with the owner told. Waits
// poll for a condition until a deadline: nothing here sleeps a fixed time.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { dmKey } from "../src/domain/messages.ts";
import { MAX_PAYLOAD_EXCERPT, MAX_REQUEST_RETRIES, pythonBytesRepr, pythonStrRepr } from "../src/domain/outgoing-webhooks.ts";
import { Role } from "../src/domain/roles.ts";
import { SERVICE_VERSION } from "../src/version.ts";
import { assertSuccess, startTestApp, uniqueName, type Params, type TestApp, type TestUser, pendingJobs, startJobRunner } from "./helpers.ts";
import { OUTGOING_WEBHOOK_JOB, type OutgoingWebhookJob } from "../src/jobs/names.ts";

/** Short, so the timeout cases are quick; long enough for a loaded machine's answers from a local server. */
const TIMEOUT_MS = 1500;
const DEADLINE_MS = 60_000;

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** What the fake bot server answers on one path; `hang` never answers. */
type Handler = { status?: number; body?: string; hang?: boolean };

let t: TestApp;
let server: http.Server;
let baseUrl: string;
const received: Received[] = [];
const handlers = new Map<string, Handler>();
let member: TestUser;
let owner: TestUser;
/** What the workers logged (expected failures included), shown when a wait times out. */
const workerLog: string[] = [];
const recordLog = (error: unknown, what: string) => workerLog.push(`${what}: ${error instanceof Error ? error.stack : JSON.stringify(error)}`);

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false> | T | undefined | false): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; worker log:\n${workerLog.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const requestsTo = (path: string) => received.filter((r) => r.path === path);

interface Bot extends TestUser {
  fullName: string;
  path: string;
  token: string;
}

/** An outgoing-webhook bot owned by `member`, whose service is `path` on the fake server. */
async function outgoingBot(handler: Handler, iface = 1, url?: string): Promise<Bot> {
  const fullName = uniqueName("Hook Bot");
  const user = await t.createUser(fullName, Role.MEMBER, { bot: true, botOwnerId: member.id });
  const path = `/${fullName.replace(/\W+/g, "-")}`;
  const token = `token-${path.slice(1)}`;
  const db = t.services.storage.db;
  await db.updateTable("users").set({ bot_type: 3 }).where("id", "=", user.id).execute();
  await db.insertInto("bot_services").values({ user_id: user.id, name: "svc", base_url: url ?? `${baseUrl}${path}`, token, interface: iface }).execute();
  handlers.set(path, handler);
  return { ...user, fullName, path, token };
}

async function send(user: TestUser, params: Params): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", params)).id as number;
}

async function newChannel(creator: TestUser, subscribers: TestUser[], params: Params = {}): Promise<{ id: number; name: string }> {
  const name = uniqueName("hooks");
  assertSuccess(await t.api(creator, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [creator.id, ...subscribers.map((s) => s.id)], ...params }));
  return { id: assertSuccess(await t.api(creator, "GET", "/get_stream_id", { stream: name })).stream_id as number, name };
}

/** The messages `senderId` sent, oldest first, with their conversation. */
async function messagesBy(senderId: number) {
  return t.services.storage.db
    .selectFrom("messages")
    .innerJoin("recipients", "recipients.id", "messages.recipient_id")
    .select(["messages.id", "messages.content", "messages.channel_id", "messages.topic", "messages.sending_client", "recipients.dm_key"])
    .where("messages.sender_id", "=", senderId)
    .orderBy("messages.id")
    .execute();
}

async function jobsFor(messageId: number) {
  return (await pendingJobs<OutgoingWebhookJob>(t.services, OUTGOING_WEBHOOK_JOB)).filter((job) => job.message_id === messageId);
}

/** The message as GET /messages shows it to `viewer` without Markdown applied. */
async function fetched(viewer: TestUser, id: number, applyMarkdown: boolean) {
  const reply = assertSuccess(await t.api(viewer, "GET", "/messages", { anchor: id, num_before: 0, num_after: 0, apply_markdown: applyMarkdown, narrow: [] }));
  return reply.messages[0];
}

function fakeBotServerAndApp() {
  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const path = req.url ?? "";
        received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        const handler = handlers.get(path) ?? { status: 404, body: "{}" };
        if (handler.hang) return;
        res.writeHead(handler.status ?? 200, { "content-type": "application/json" });
        res.end(handler.body ?? "{}");
      });
    });
    // Idle connections stay open for the whole run: no race between the worker reusing one and the server closing it.
    server.keepAliveTimeout = 120_000;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The bot server is on this machine: the operator's explicit opt-in lets requests reach it.
    t = await startTestApp({ outgoingWebhookTimeoutMs: TIMEOUT_MS, externalContentAllowInternal: true });
    member = t.users.member;
    owner = t.users.owner;
    // The server's worker logs nowhere in tests; this one keeps its log for failure messages.
    await t.services.jobs!.stop();
    t.services.jobs = startJobRunner(t.services, recordLog);
  });

  after(async () => {
    await t?.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
}

describe("outgoing webhooks", () => {
  fakeBotServerAndApp();

  test("a mention in a channel POSTs Zulip's payload and the reply is posted in the same topic", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "It is **sunny**." }) });
    const channel = await newChannel(member, []);
    const content = `@**${bot.fullName}** weather in Paris?`;
    const id = await send(member, { type: "stream", to: channel.name, topic: "forecast", content });

    const [request] = await waitFor("the request", () => (requestsTo(bot.path).length > 0 ? requestsTo(bot.path) : undefined));
    assert.equal(request!.headers["content-type"], "application/json");
    assert.equal(request!.headers["user-agent"], `ZulipOutgoingWebhook/${SERVICE_VERSION}`);
    const raw = await fetched(member, id, false);
    const html = await fetched(member, id, true);
    const { flags: _flags, topic: _topic, ...message } = raw;
    assert.deepEqual(JSON.parse(request!.body), {
      data: content,
      message: { ...message, rendered_content: html.content },
      bot_email: bot.email,
      bot_full_name: bot.fullName,
      token: bot.token,
      trigger: "mention",
    });
    // Spelled out, so the test does not only compare the server with itself.
    const payload = JSON.parse(request!.body).message;
    assert.equal(payload.type, "stream");
    assert.equal(payload.stream_id, channel.id);
    assert.equal(payload.display_recipient, channel.name);
    assert.equal(payload.subject, "forecast");
    assert.equal(payload.content, content);
    assert.equal(payload.content_type, "text/x-markdown");
    assert.equal(payload.sender_id, member.id);
    assert.match(payload.rendered_content, new RegExp(`<span class="user-mention" data-user-id="${bot.id}">@`));

    const replies = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(replies.length, 1);
    assert.equal(replies[0]!.content, "It is **sunny**.");
    assert.equal(replies[0]!.channel_id, channel.id);
    assert.equal(replies[0]!.topic, "forecast");
    assert.equal(replies[0]!.sending_client, "OutgoingWebhookResponse");
    // The job is gone once delivered.
    await waitFor("the job to finish", async () => (await jobsFor(id)).length === 0);
  });

  test("a bot made with POST /bots (bot_type 3, payload_url) is triggered end to end", async () => {
    const path = "/made-over-rest";
    handlers.set(path, { body: JSON.stringify({ content: "made over REST" }) });
    const created = assertSuccess(
      await t.api(member, "POST", "/bots", { full_name: "Rest Hook", short_name: "resthook", bot_type: 3, payload_url: JSON.stringify(`${baseUrl}${path}`), interface_type: 1 }),
    );
    // The token is in the owner's realm_bots (GET /bots does not show services).
    const listed = (await t.register(member, { fetch_event_types: ["realm_bot"] })).realm_bots.find((b: { user_id: number }) => b.user_id === created.user_id);
    const token = listed.services[0].token as string;
    const id = await send(member, { type: "direct", to: [created.user_id], content: "hello rest" });
    const [request] = await waitFor("the request", () => (requestsTo(path).length > 0 ? requestsTo(path) : undefined));
    const body = JSON.parse(request!.body);
    assert.equal(body.token, token);
    assert.equal(body.bot_full_name, "Rest Hook");
    assert.equal(body.bot_email, listed.email);
    assert.equal(body.message.id, id);
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(created.user_id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "made over REST");
  });

  test("the reply goes into the triggering topic even where the bot itself may not post", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "answering anyway" }) });
    const sys = await t.systemGroupIds();
    const admin = t.users.admin;
    const channel = await newChannel(admin, [], { can_send_message_group: sys["role:administrators"] });
    // The bot (a member) is refused when it posts there on its own…
    const own = await t.api(bot, "POST", "/messages", { type: "stream", to: channel.name, topic: "news", content: "me too" });
    assert.equal(own.status, 400);
    // …but its answer to an administrator's mention is posted (Zulip's skip_stream_access_check).
    await send(admin, { type: "stream", to: channel.name, topic: "news", content: `@**${bot.fullName}** summary?` });
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "answering anyway");
    assert.equal(reply!.channel_id, channel.id);
    assert.equal(reply!.topic, "news");
  });

  test("the send queues the delivery in its own transaction and returns before the bot answers", async () => {
    const bot = await outgoingBot({ hang: true });
    const channel = await newChannel(member, []);
    const id = await send(member, { type: "stream", to: channel.name, topic: "t", content: `@**${bot.fullName}** hi` });
    // The reply to the send came back although the endpoint never answers.
    const jobs = await jobsFor(id);
    assert.equal(jobs.length, 1);
    assert.equal(jobs[0]!.bot_id, bot.id);
    assert.equal(jobs[0]!.trigger, "mention");
  });

  test("a direct message to the bot triggers it, and the reply goes to the same conversation", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "pong" }) });
    const id = await send(member, { type: "direct", to: [bot.id], content: "ping" });
    const [request] = await waitFor("the request", () => (requestsTo(bot.path).length > 0 ? requestsTo(bot.path) : undefined));
    const body = JSON.parse(request!.body);
    assert.equal(body.trigger, "direct_message");
    assert.equal(body.data, "ping");
    assert.equal(body.message.id, id);
    assert.equal(body.message.type, "private");
    assert.deepEqual(
      body.message.display_recipient.map((u: { id: number }) => u.id).sort((a: number, b: number) => a - b),
      [member.id, bot.id].sort((a, b) => a - b),
    );
    const { flags: _flags, topic: _topic, ...message } = await fetched(member, id, false);
    assert.deepEqual(body.message, { ...message, rendered_content: "<p>ping</p>" });
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "pong");
    assert.equal(reply!.dm_key, dmKey([member.id, bot.id]));

    // A group conversation with the bot: the reply goes to the whole group.
    const groupId = await send(member, { type: "direct", to: [bot.id, t.users.admin.id], content: "ping all" });
    await waitFor("the group reply", async () => (await messagesBy(bot.id)).length === 2);
    assert.equal((await messagesBy(bot.id))[1]!.dm_key, dmKey([member.id, bot.id, t.users.admin.id]));
    assert.equal(JSON.parse(requestsTo(bot.path)[1]!.body).message.id, groupId);
  });

  test("messages sent by bots never trigger: not the bot's own, not another bot's", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "echo" }) });
    const channel = await newChannel(member, [bot, t.users.bot]);
    const own = await send(bot, { type: "stream", to: channel.name, topic: "t", content: `@**${bot.fullName}** me` });
    const other = await send(t.users.bot, { type: "stream", to: channel.name, topic: "t", content: `@**${bot.fullName}** you` });
    const otherDm = await send(t.users.bot, { type: "direct", to: [bot.id], content: "psst" });
    for (const id of [own, other, otherDm]) assert.deepEqual(await jobsFor(id), []);
    // A human's mention is delivered, and is the only request the bot got.
    await send(member, { type: "stream", to: channel.name, topic: "t", content: `@**${bot.fullName}** human` });
    await waitFor("the reply", async () => (await messagesBy(bot.id)).length === 2);
    assert.equal(requestsTo(bot.path).length, 1);
    assert.equal(JSON.parse(requestsTo(bot.path)[0]!.body).data, `@**${bot.fullName}** human`);
    // The bot's reply did not trigger it again.
    const reply = (await messagesBy(bot.id))[1]!;
    assert.deepEqual(await jobsFor(reply.id), []);
  });

  test("a group mention triggers the group's bots that are subscribed to the channel", async () => {
    const inside = await outgoingBot({ body: "{}" });
    const outside = await outgoingBot({ body: "{}" });
    const name = uniqueName("hook group");
    assertSuccess(await t.api(t.users.admin, "POST", "/user_groups/create", { name, description: "", members: [inside.id, outside.id, member.id] }));
    const channel = await newChannel(member, [inside]);
    const id = await send(member, { type: "stream", to: channel.name, topic: "t", content: `@*${name}* deploy?` });
    assert.deepEqual(
      (await jobsFor(id)).map((j) => [j.bot_id, j.trigger]),
      [[inside.id, "mention"]],
    );
    await waitFor("the request", () => requestsTo(inside.path).length === 1);
  });

  test("several workers (processes) share the queue and deliver each job once", async () => {
    const bots = await Promise.all([1, 2, 3, 4, 5, 6].map(() => outgoingBot({ body: JSON.stringify({ content: "once" }) })));
    await t.services.jobs!.stop();
    const ids: number[] = [];
    for (const bot of bots) ids.push(await send(member, { type: "direct", to: [bot.id], content: "exactly once?" }));
    const first = startJobRunner(t.services, recordLog);
    const second = startJobRunner(t.services, recordLog);
    try {
      await waitFor("every reply", async () => {
        for (const bot of bots) if ((await messagesBy(bot.id)).length === 0) return false;
        return true;
      });
      for (const id of ids) await waitFor("the job to go", async () => (await jobsFor(id)).length === 0);
    } finally {
      await first.stop();
      await second.stop();
    }
    for (const bot of bots) {
      assert.equal(requestsTo(bot.path).length, 1, bot.fullName);
      assert.equal((await messagesBy(bot.id)).length, 1, bot.fullName);
    }
    t.services.jobs = startJobRunner(t.services, recordLog);
  });

  test("a bot whose endpoint hangs holds one delivery at a time, across processes: other bots are not held up behind it", async () => {
    const slow = await outgoingBot({ hang: true });
    const fast = await outgoingBot({ body: JSON.stringify({ content: "right away" }) });
    const channel = await newChannel(member, []);
    // Queued while no worker runs, then two workers (processes) start at once: more slow jobs than both have slots.
    await t.services.jobs!.stop();
    const slowIds: number[] = [];
    for (let i = 0; i < 10; i++) slowIds.push(await send(member, { type: "stream", to: channel.name, topic: "slow", content: `@**${slow.fullName}** ${i}` }));
    const fastId = await send(member, { type: "stream", to: channel.name, topic: "fast", content: `@**${fast.fullName}** you there?` });
    const first = startJobRunner(t.services, recordLog);
    const second = startJobRunner(t.services, recordLog);
    try {
      const [reply] = await waitFor("the other bot's reply", async () => {
        const rows = await messagesBy(fast.id);
        return rows.length > 0 ? rows : undefined;
      });
      assert.equal(reply!.content, "right away");
      // The other bot's request came while the slow bot's first delivery was its only one: none of its later mentions had been sent.
      const fastAt = received.findIndex((r) => r.path === fast.path);
      const slowBefore = received.slice(0, fastAt).filter((r) => r.path === slow.path);
      // (The fast bot's request may even come first: both workers start at once.)
      assert.ok(slowBefore.length <= MAX_REQUEST_RETRIES + 1, String(slowBefore.length));
      for (const r of slowBefore) assert.equal(JSON.parse(r.body).message.id, slowIds[0]);
      assert.equal(JSON.parse(requestsTo(fast.path)[0]!.body).message.id, fastId);
      // Still one at a time, in the order sent, once the first delivery gives up.
      await waitFor("the slow bot's second mention", () => requestsTo(slow.path).some((r) => JSON.parse(r.body).message.id === slowIds[1]));
      const order = requestsTo(slow.path).map((r) => JSON.parse(r.body).message.id as number);
      assert.deepEqual(order.slice(0, MAX_REQUEST_RETRIES + 2), [...Array(MAX_REQUEST_RETRIES + 1).fill(slowIds[0]), slowIds[1]]);
    } finally {
      // The rest of its queue is dropped: a deactivated bot's jobs end without a request.
      await t.services.storage.db.updateTable("users").set({ is_active: false }).where("id", "=", slow.id).execute();
      await first.stop();
      await second.stop();
      t.services.jobs = startJobRunner(t.services, recordLog);
    }
  });

  test("only a real mention triggers: not a silent mention, a quote or a code block", async () => {
    const bot = await outgoingBot({ body: "{}" });
    const channel = await newChannel(member, [bot]);
    for (const content of [`@_**${bot.fullName}** silently`, `\`@**${bot.fullName}**\``, `\`\`\`\n@**${bot.fullName}**\n\`\`\``, "no mention at all"]) {
      const id = await send(member, { type: "stream", to: channel.name, topic: "t", content });
      assert.deepEqual(await jobsFor(id), [], content);
    }
  });

  test("a mention in a private channel the bot cannot read does not trigger; once subscribed it does", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ response_not_required: true }) });
    const secret = await newChannel(member, [], { invite_only: true });
    const hidden = await send(member, { type: "stream", to: secret.name, topic: "t", content: `@**${bot.fullName}** can you read this?` });
    assert.deepEqual(await jobsFor(hidden), []);

    assertSuccess(await t.api(member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: secret.name }], principals: [bot.id] }));
    const seen = await send(member, { type: "stream", to: secret.name, topic: "t", content: `@**${bot.fullName}** and now?` });
    assert.equal((await jobsFor(seen)).length, 1);
    await waitFor("the request", () => requestsTo(bot.path).length === 1);
    // A public channel is readable without a subscription.
    const open = await newChannel(member, []);
    await send(member, { type: "stream", to: open.name, topic: "t", content: `@**${bot.fullName}** public` });
    await waitFor("the second request", () => requestsTo(bot.path).length === 2);
  });

  test("response_not_required, an empty content and the JSON string \"\" post nothing", async () => {
    for (const body of [JSON.stringify({ response_not_required: true, content: "ignored" }), JSON.stringify({ content: "  " }), JSON.stringify(""), "{}"]) {
      const bot = await outgoingBot({ body });
      const id = await send(member, { type: "direct", to: [bot.id], content: "hello" });
      await waitFor("the delivery to finish", async () => requestsTo(bot.path).length === 1 && (await jobsFor(id)).length === 0);
      assert.deepEqual(await messagesBy(bot.id), [], body);
    }
  });

  test("the deprecated response_string is still posted", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ response_string: "legacy" }) });
    await send(member, { type: "direct", to: [bot.id], content: "hello" });
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "legacy");
  });

  test("an endpoint that never answers: the send is not held, the request is retried, then the bot gives up and tells its owner", async () => {
    const bot = await outgoingBot({ hang: true });
    const channel = await newChannel(member, []);
    const started = Date.now();
    const id = await send(member, { type: "stream", to: channel.name, topic: "slow", content: `@**${bot.fullName}** are you there?` });
    // Far less than one timeout, let alone four: nothing of the delivery happened on the send's path.
    assert.ok(Date.now() - started < TIMEOUT_MS * (MAX_REQUEST_RETRIES + 1), "the send waited for the webhook");

    const messages = await waitFor("the failure notices", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    assert.equal(requestsTo(bot.path).length, MAX_REQUEST_RETRIES + 1);
    const failure = messages.find((m) => m.channel_id === channel.id)!;
    assert.equal(failure.content, "Failure! Bot is unavailable");
    assert.equal(failure.topic, "slow");
    const notice = messages.find((m) => m.channel_id === null)!;
    assert.equal(notice.dm_key, dmKey([bot.id, member.id]));
    const url = `http://parley.test/#narrow/channel/${channel.id}-${channel.name.replace(/ /g, "-")}/topic/slow/near/${id}`;
    assert.equal(notice.content, `[A message](${url}) to your bot @_**${bot.fullName}** triggered an outgoing webhook.\nRequest timed out after ${TIMEOUT_MS / 1000} seconds.`);
    await waitFor("the job to finish", async () => (await jobsFor(id)).length === 0);
  });

  test("a 500 answer fails at once (Zulip retries only timeouts and connection errors)", async () => {
    const bot = await outgoingBot({ status: 500, body: "Internal 'oops'" });
    const id = await send(member, { type: "direct", to: [bot.id], content: "boom" });
    const messages = await waitFor("the failure notices", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    assert.equal(requestsTo(bot.path).length, 1, workerLog.join("\n"));
    // The conversation with the sender is the owner's conversation with the bot here: the sender is the owner.
    assert.deepEqual(
      messages.map((m) => m.content),
      [
        "Failure! Third party responded with 500",
        `[A message](http://parley.test/#narrow/dm/${[member.id, bot.id].sort((a, b) => a - b).join(",")}/near/${id}) to your bot @_**${bot.fullName}** triggered an outgoing webhook.\nThe webhook got a response with status code *500*.\nThe response contains the following payload:\n\`\`\`\nb"Internal 'oops'"\n\`\`\``,
      ],
      workerLog.join("\n"),
    );
    await waitFor("the job to finish", async () => (await jobsFor(id)).length === 0);
  });

  test("the owner sees a short, escaped excerpt of an error answer: bounded, in a code block it cannot close, no Markdown or mentions", async () => {
    const hostile = "```\n@**all** @**Max Member** **bold** [click](http://evil.example/)\n```\n" + "x".repeat(20_000);
    const bot = await outgoingBot({ status: 502, body: hostile });
    const id = await send(member, { type: "direct", to: [bot.id], content: "break it" });
    const messages = await waitFor("the failure notices", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    const size = Buffer.byteLength(hostile);
    const excerpt = pythonBytesRepr(Buffer.from(hostile).subarray(0, MAX_PAYLOAD_EXCERPT));
    assert.equal(
      messages[1]!.content,
      `[A message](http://parley.test/#narrow/dm/${[member.id, bot.id].sort((a, b) => a - b).join(",")}/near/${id}) to your bot @_**${bot.fullName}** triggered an outgoing webhook.\nThe webhook got a response with status code *502*.\nThe response contains the following payload:\n\`\`\`\`\n${excerpt}\n\`\`\`\`\n(The first ${MAX_PAYLOAD_EXCERPT} of ${size} bytes.)`,
    );
    assert.ok(messages[1]!.content.length < 1200, String(messages[1]!.content.length));
    // As the owner's client shows it: one code block holding the excerpt; no mention, link or bold came alive.
    const html = (await fetched(member, messages[1]!.id, true)).content as string;
    assert.equal(html.match(/<pre>/g)?.length, 1, html);
    const payload = html.slice(html.indexOf("The response contains the following payload:"));
    assert.doesNotMatch(payload, /user-mention|user-group-mention|<strong>|<a /, payload);
    assert.match(payload, /<code>b&#39;```\\n@\*\*all\*\* @\*\*Max Member\*\*/);
    // The owner was not notified as a mention either.
    const flags = await t.services.storage.db.selectFrom("user_messages").select("flags").where("message_id", "=", messages[1]!.id).where("user_id", "=", member.id).executeTakeFirstOrThrow();
    assert.equal(flags.flags & 8, 0);
  });

  test("a 4xx answer fails without retries; the owner is told even when someone else triggered the bot", async () => {
    const bot = await outgoingBot({ status: 403, body: "" });
    const channel = await newChannel(owner, []);
    const id = await send(owner, { type: "stream", to: channel.name, topic: "t", content: `@**${bot.fullName}** let me in` });
    const messages = await waitFor("the failure notices", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    assert.equal(requestsTo(bot.path).length, 1);
    assert.equal(messages[0]!.content, "Failure! Third party responded with 403");
    assert.equal(messages[0]!.channel_id, channel.id);
    assert.equal(messages[1]!.dm_key, dmKey([bot.id, member.id]));
    assert.match(messages[1]!.content, new RegExp(`near/${id}\\) to your bot @_\\*\\*${bot.fullName}\\*\\* triggered an outgoing webhook\\.\\nThe webhook got a response with status code \\*403\\*\\.$`));
  });

  test("a refused connection is retried, then reported", async () => {
    // A port nothing listens on: bind one, note it, close it.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    const bot = await outgoingBot({}, 1, `http://127.0.0.1:${port}/`);
    const id = await send(member, { type: "direct", to: [bot.id], content: "anyone?" });
    const messages = await waitFor("the failure notices", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    assert.equal(messages[0]!.content, "Failure! Bot is unavailable");
    assert.match(messages[1]!.content, /triggered an outgoing webhook\.\nA connection error occurred\. Is my bot server down\?$/);
    await waitFor("the job to finish", async () => (await jobsFor(id)).length === 0);
  });

  test("a reply that is not JSON, or not an object, is refused and reported with the payload", async () => {
    for (const [body, error, shown] of [
      ["this isn't valid json", "Invalid JSON in response", `"this isn't valid json"`],
      ["true", "Invalid response format", `'true'`],
      [JSON.stringify({ content: "x", widget_content: "test" }), "Widgets: API programmer sent invalid JSON content", pythonStrRepr(JSON.stringify({ content: "x", widget_content: "test" }))],
    ] as const) {
      const bot = await outgoingBot({ body });
      await send(member, { type: "direct", to: [bot.id], content: "hi" });
      const messages = await waitFor("the failure notices", async () => {
        const rows = await messagesBy(bot.id);
        return rows.length >= 2 ? rows : undefined;
      });
      assert.equal(messages[0]!.content, `Failure! ${error}`);
      assert.ok(
        messages[1]!.content.endsWith(
          `triggered an outgoing webhook.\nThe outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> ${error}\nThe response contains the following payload:\n\`\`\`\n${shown}\n\`\`\``,
        ),
        messages[1]!.content,
      );
    }
  });

  test("Slack-format bots get Slack's form fields and answer with `text`; direct messages are refused", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ text: "from slack" }) }, 2);
    const channel = await newChannel(member, []);
    const content = `@**${bot.fullName}** slack?`;
    const id = await send(member, { type: "stream", to: channel.name, topic: "s", content });
    const [request] = await waitFor("the request", () => (requestsTo(bot.path).length > 0 ? requestsTo(bot.path) : undefined));
    assert.equal(request!.headers["content-type"], "application/x-www-form-urlencoded");
    const timestamp = (await fetched(member, id, false)).timestamp as number;
    assert.deepEqual(
      [...new URLSearchParams(request!.body)],
      [
        ["token", bot.token],
        ["team_id", `T${t.realm.id}`],
        ["team_domain", "parley.test"],
        ["channel_id", `C${channel.id}`],
        ["channel_name", channel.name],
        ["thread_ts", String(timestamp)],
        ["timestamp", String(timestamp)],
        ["user_id", `U${member.id}`],
        ["user_name", "Max Member"],
        ["text", content],
        ["trigger_word", "mention"],
        ["service_id", String(bot.id)],
      ],
    );
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "from slack");
    assert.equal(reply!.topic, "s");

    await send(member, { type: "direct", to: [bot.id], content: "dm" });
    const messages = await waitFor("the refusal", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length >= 2 ? rows : undefined;
    });
    assert.equal(messages[1]!.content, "Failure! Slack outgoing webhooks don't support direct messages.");
    assert.equal(messages[1]!.dm_key, dmKey([member.id, bot.id]));
    assert.equal(requestsTo(bot.path).length, 1);
  });

  test("the queue survives a restart: a job queued while no worker runs is delivered by the next one", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "late but here" }) });
    await t.services.jobs!.stop();
    const id = await send(member, { type: "direct", to: [bot.id], content: "while down" });
    assert.equal((await jobsFor(id)).length, 1);
    assert.equal(requestsTo(bot.path).length, 0);
    // A fresh worker (as a restarted or another process would run) finds it in the database.
    t.services.jobs = startJobRunner(t.services, recordLog);
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "late but here");
    await waitFor("the job to finish", async () => (await jobsFor(id)).length === 0);
  });

  test("a deactivated bot's queued job is dropped without a request", async () => {
    const bot = await outgoingBot({ body: JSON.stringify({ content: "should not" }) });
    await t.services.jobs!.stop();
    const id = await send(member, { type: "direct", to: [bot.id], content: "bye" });
    await t.services.storage.db.updateTable("users").set({ is_active: false }).where("id", "=", bot.id).execute();
    t.services.jobs = startJobRunner(t.services, recordLog);
    await waitFor("the job to go", async () => (await jobsFor(id)).length === 0);
    assert.equal(requestsTo(bot.path).length, 0);
    assert.deepEqual(await messagesBy(bot.id), []);
  });
});

describe("Python reprs in owner notices", () => {
  test("str and bytes as Python shows them", () => {
    assert.equal(pythonStrRepr("a'b"), `"a'b"`);
    assert.equal(pythonStrRepr(`a'b"c`), `'a\\'b"c'`);
    assert.equal(pythonStrRepr("line\nnext\ttab\\"), `'line\\nnext\\ttab\\\\'`);
    assert.equal(pythonStrRepr("caf\u00e9 \u0001 \u00a0"), `'caf\u00e9 \\x01 \\xa0'`);
    assert.equal(pythonBytesRepr(Buffer.from("caf\u00e9\n")), `b'caf\\xc3\\xa9\\n'`);
    assert.equal(pythonBytesRepr(Buffer.from("it's")), `b"it's"`);
  });
});
