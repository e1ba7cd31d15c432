// Outgoing webhooks go through the guarded request to other sites (src/outbound/):
// on a server that has not opted in to internal addresses, a bot cannot make
// the server reach this machine or its private networks — not by the address
// written in any form, not by a name that resolves there, not by a redirect.
// `payload_url` is checked when the bot is created or edited, and every
// connection is checked again when it is made.
//
// Real servers on this machine stand in for the rest of the world: the app is
// told (EXTERNAL_CONTENT_ALLOW_ADDRESSES) that 127.0.0.2 is allowed, so a bot
// server there plays an outside site; 127.0.0.1 stays internal. A small DNS
// server (EXTERNAL_CONTENT_DNS_SERVERS) answers names for both.
import assert from "node:assert/strict";
import dgram from "node:dgram";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { ConfigError, loadConfig } from "../src/config.ts";
import { isAllowedAddress, isRefusedHost } from "../src/domain/external-content.ts";
import { DISALLOWED_NETWORK } from "../src/domain/outgoing-webhooks.ts";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser, pendingJobs, startJobRunner } from "./helpers.ts";
import { OUTGOING_WEBHOOK_JOB, type OutgoingWebhookJob } from "../src/jobs/names.ts";

const DEADLINE_MS = 60_000;
/** The name the test DNS server resolves to the internal bot server's address, and the one it resolves to the "outside" one. */
const LOOPBACK_NAME = "loopback.parley-test";
const OUTSIDE_NAME = "outside.parley-test";

interface Received {
  method: string;
  path: string;
  body: string;
}

/** A bot server on `host` that records requests; `respond` answers them (default: 200 with content "reached"). */
async function botServer(host: string, respond?: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ method: req.method ?? "", path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") });
      if (respond) return respond(req, res);
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ content: "reached" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, received, port: (server.address() as AddressInfo).port };
}

/** A DNS server for A queries of `names` (NXDOMAIN for others, no AAAA records): just enough for c-ares. */
async function dnsServer(names: Record<string, string>) {
  const socket = dgram.createSocket("udp4");
  socket.on("message", (query, peer) => {
    let offset = 12;
    const labels: string[] = [];
    while (offset < query.length && query[offset]! !== 0) {
      const length = query[offset]!;
      labels.push(query.subarray(offset + 1, offset + 1 + length).toString("latin1"));
      offset += length + 1;
    }
    offset += 1;
    const type = query.readUInt16BE(offset);
    offset += 4;
    const address = names[labels.join(".").toLowerCase()];
    const answer =
      address !== undefined && type === 1
        ? Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]), Buffer.from(address.split(".").map(Number))])
        : Buffer.alloc(0);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(address === undefined ? 0x8183 : 0x8180, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answer.length > 0 ? 1 : 0, 6);
    socket.send(Buffer.concat([header, query.subarray(12, offset), answer]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { socket, port: socket.address().port };
}

let t: TestApp;
let member: TestUser;
let inside: Awaited<ReturnType<typeof botServer>>;
let outside: Awaited<ReturnType<typeof botServer>>;
let dns: Awaited<ReturnType<typeof dnsServer>>;
const workerLog: string[] = [];

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; worker log:\n${workerLog.join("\n")}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * An outgoing-webhook bot owned by `member` whose service URL is written
 * straight into the database, as a bot made before the create-time check (or
 * whose name resolved elsewhere then) would have it.
 */
async function storedBot(url: string) {
  const fullName = uniqueName("Guard Bot");
  const user = await t.createUser(fullName, Role.MEMBER, { bot: true, botOwnerId: member.id });
  const db = t.services.storage.db;
  await db.updateTable("users").set({ bot_type: 3 }).where("id", "=", user.id).execute();
  await db.insertInto("bot_services").values({ user_id: user.id, name: "svc", base_url: url, token: "secret-token", interface: 1 }).execute();
  return { ...user, fullName };
}

async function messagesBy(senderId: number) {
  return t.services.storage.db
    .selectFrom("messages")
    .select(["id", "content", "rendered_content", "channel_id"])
    .where("sender_id", "=", senderId)
    .orderBy("id")
    .execute();
}

async function jobsFor(messageId: number) {
  return (await pendingJobs<OutgoingWebhookJob>(t.services, OUTGOING_WEBHOOK_JOB)).filter((job) => job.message_id === messageId);
}

/** Mentions the bot in a direct message and waits for its two failure messages (the conversation's and its owner's) and for the job to end. */
async function triggerAndWaitForFailure(bot: { id: number; fullName: string }) {
  const id = assertSuccess(await t.api(member, "POST", "/messages", { type: "direct", to: JSON.stringify([bot.id]), content: "are you there?" })).id as number;
  const messages = await waitFor("the failure notices", async () => {
    const rows = await messagesBy(bot.id);
    return rows.length >= 2 ? rows : undefined;
  });
  await waitFor("the job to end", async () => (await jobsFor(id)).length === 0);
  return messages;
}

describe("outgoing webhooks never reach internal addresses unless the operator allows them", () => {
  before(async () => {
    inside = await botServer("127.0.0.1");
    outside = await botServer("127.0.0.2", (req, res) => {
      // The "outside" site: /to-inside redirects to the internal server, /to-outside to itself, /hook answers.
      if (req.url === "/to-inside") return res.writeHead(307, { location: `http://127.0.0.1:${inside.port}/reached-inside` }).end();
      if (req.url === "/to-inside-302") return res.writeHead(302, { location: `http://${LOOPBACK_NAME}:${inside.port}/reached-inside` }).end();
      if (req.url === "/to-outside") return res.writeHead(307, { location: "/hook" }).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ content: "answered from outside" }));
    });
    dns = await dnsServer({ [LOOPBACK_NAME]: "127.0.0.1", [OUTSIDE_NAME]: "127.0.0.2" });
    t = await startTestApp({
      outgoingWebhookTimeoutMs: 5000,
      externalContentAllowInternal: false,
      externalContentAllowAddresses: ["127.0.0.2"],
      externalContentDnsServers: [`127.0.0.1:${dns.port}`],
    });
    member = t.users.member;
    await t.services.jobs!.stop();
    t.services.jobs = startJobRunner(t.services, (error, what) => workerLog.push(`${what}: ${error instanceof Error ? error.stack : JSON.stringify(error)}`));
  });

  after(async () => {
    await t?.close();
    for (const s of [inside, outside]) {
      s?.server.closeAllConnections();
      await new Promise((resolve) => s?.server.close(resolve));
    }
    dns?.socket.close();
  });

  test("POST /bots and PATCH /bots/{id} refuse an internal address or a URL that is not http(s), with a 400", async () => {
    const refused = [
      `http://127.0.0.1:${inside.port}/hook`,
      "http://localhost/hook",
      "http://api.localhost./hook",
      "http://[::1]:8080/hook",
      "http://2130706433/hook",
      "http://0x7f.1/hook",
      "http://0.0.0.0/hook",
      "http://[::ffff:127.0.0.1]/hook",
      "http://10.1.2.3/hook",
      "http://169.254.169.254/latest/meta-data",
      "https://192.168.1.1/",
    ];
    for (const url of refused) {
      const name = uniqueName("refused");
      const reply = await t.api(member, "POST", "/bots", { full_name: name, short_name: name.replace(/\W+/g, "-").toLowerCase(), bot_type: 3, payload_url: JSON.stringify(url) });
      assertError(reply, 400, "BAD_REQUEST", "payload_url is for a private or disallowed network");
    }
    const name = uniqueName("ftp");
    assertError(
      await t.api(member, "POST", "/bots", { full_name: name, short_name: name.replace(/\W+/g, "-").toLowerCase(), bot_type: 3, payload_url: JSON.stringify("ftp://files.example.com/") }),
      400,
      "BAD_REQUEST",
      "payload_url is not an http or https URL",
    );

    // A name, and an internal address the operator allowed, are accepted (names are checked when connected to).
    const created = assertSuccess(
      await t.api(member, "POST", "/bots", { full_name: "Named Hook", short_name: "namedhook", bot_type: 3, payload_url: JSON.stringify("https://bots.example.com/hook") }),
    );
    assertSuccess(await t.api(member, "PATCH", `/bots/${created.user_id}`, { service_payload_url: JSON.stringify(`http://127.0.0.2:${outside.port}/hook`) }));
    for (const url of refused) {
      assertError(
        await t.api(member, "PATCH", `/bots/${created.user_id}`, { service_payload_url: JSON.stringify(url) }),
        400,
        "BAD_REQUEST",
        "service_payload_url is for a private or disallowed network",
      );
    }
    const service = await t.services.storage.db.selectFrom("bot_services").select("base_url").where("user_id", "=", created.user_id).executeTakeFirstOrThrow();
    assert.equal(service.base_url, `http://127.0.0.2:${outside.port}/hook`);
  });

  test("at connect time, whatever form the address takes or whatever name leads there: not sent, not retried, the bot says why and tells its owner", async () => {
    const port = inside.port;
    for (const url of [
      `http://127.0.0.1:${port}/literal`,
      `http://localhost:${port}/localhost`,
      `http://[::1]:${port}/ipv6`,
      `http://2130706433:${port}/integer`,
      `http://0.0.0.0:${port}/zeros`,
      `http://${LOOPBACK_NAME}:${port}/name`,
    ]) {
      const bot = await storedBot(url);
      const messages = await triggerAndWaitForFailure(bot);
      assert.deepEqual(
        messages.map((m) => m.content),
        [`Failure! ${DISALLOWED_NETWORK}`, messages[1]!.content],
        url,
      );
      assert.match(messages[1]!.content, /^\[A message\]\(.*\) to your bot @_\*\*Guard Bot.*\*\* triggered an outgoing webhook\.\nThe URL configured for the webhook is for a private or disallowed network\.$/, url);
      // Said once: the refusal is not retried (a retried failure ends with "Bot is unavailable").
      assert.equal((await messagesBy(bot.id)).length, 2, url);
    }
    assert.deepEqual(inside.received, []);
  });

  test("a site outside that redirects to an internal address: the redirect is checked like the first request and refused", async () => {
    for (const url of [`http://127.0.0.2:${outside.port}/to-inside`, `http://${OUTSIDE_NAME}:${outside.port}/to-inside-302`]) {
      const before = outside.received.length;
      const bot = await storedBot(url);
      const messages = await triggerAndWaitForFailure(bot);
      assert.equal(messages[0]!.content, `Failure! ${DISALLOWED_NETWORK}`, url);
      assert.match(messages[1]!.content, /\nThe URL configured for the webhook is for a private or disallowed network\.$/, url);
      assert.equal(outside.received.length, before + 1, url);
    }
    assert.deepEqual(inside.received, []);
  });

  test("an allowed site is reached, and its redirects to itself are followed with the POST and its body (307)", async () => {
    const bot = await storedBot(`http://${OUTSIDE_NAME}:${outside.port}/to-outside`);
    const before = outside.received.length;
    assertSuccess(await t.api(member, "POST", "/messages", { type: "direct", to: JSON.stringify([bot.id]), content: "hello outside" }));
    const [reply] = await waitFor("the reply", async () => {
      const rows = await messagesBy(bot.id);
      return rows.length > 0 ? rows : undefined;
    });
    assert.equal(reply!.content, "answered from outside");
    const requests = outside.received.slice(before);
    assert.deepEqual(
      requests.map((r) => [r.method, r.path]),
      [
        ["POST", "/to-outside"],
        ["POST", "/hook"],
      ],
    );
    assert.equal(JSON.parse(requests[1]!.body).data, "hello outside");
  });
});

describe("the operator's allow-list", () => {
  test("EXTERNAL_CONTENT_ALLOW_ADDRESSES takes addresses and CIDR ranges; anything else stops the start", () => {
    const config = loadConfig({ EXTERNAL_CONTENT_ALLOW_ADDRESSES: " 127.0.0.1, 10.8.0.0/16 ,::1,fd00::/8", EXTERNAL_CONTENT_DNS_SERVERS: "10.0.0.53,10.0.0.54:5353" });
    assert.deepEqual(config.externalContentAllowAddresses, ["127.0.0.1", "10.8.0.0/16", "::1", "fd00::/8"]);
    assert.deepEqual(config.externalContentDnsServers, ["10.0.0.53", "10.0.0.54:5353"]);
    for (const bad of ["localhost", "10.0.0.0/33", "10.0.0.0/8/1", "::1/129", "10.0.0.0/x", "10.0.0.0/"]) {
      assert.throws(() => loadConfig({ EXTERNAL_CONTENT_ALLOW_ADDRESSES: bad }), ConfigError, bad);
    }
    const policy = { allowInternal: false, allowAddresses: config.externalContentAllowAddresses };
    for (const address of ["127.0.0.1", "::ffff:127.0.0.1", "::1", "10.8.3.4", "fd12::1", "93.184.216.34"]) assert.equal(isAllowedAddress(address, policy), true, address);
    for (const address of ["127.0.0.2", "10.9.0.1", "192.168.0.1", "169.254.169.254", "fe80::1", "::ffff:10.9.0.1"]) assert.equal(isAllowedAddress(address, policy), false, address);
    // localhost is both loopback addresses: allowed only when both are.
    assert.equal(isRefusedHost("localhost", policy), false);
    assert.equal(isRefusedHost("localhost", { allowInternal: false, allowAddresses: ["127.0.0.1"] }), true);
    assert.equal(isRefusedHost("[::ffff:7f00:2]", policy), true);
  });
});
