// Several `parley serve` processes behind a real HAProxy, on one PostgreSQL
// schema and one Redis key prefix (issue 26, docs/scale-out.md "Running
// several processes"). Runs only with DATABASE_URL and REDIS_URL set (`.ci/run`
// runs it in its PostgreSQL + Redis pass); needs Debian's haproxy.
//
// Three processes P1..P3 (node --import tsx src/cli.ts serve, as
// test/cli.test.ts runs the CLI), each on a port of its own, and HAProxy in
// front (round-robin, health checks on GET /health, option redispatch). Most
// requests go through HAProxy, as clients' would; a case that means one
// process talks to it by its port. The cases run in order, and the later ones
// stop processes: SIGTERM (a rolling restart: the process is started again),
// then kill -9 of the process holding two jobs, then kill -9 of a process
// while clients poll and send.
//
// Clients retry a request that failed because its process died (a network
// error or HAProxy's 502/503/504), as Zulip's clients do; any other error
// fails the test.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DIGEST_CHECK_JOB, MISSED_MESSAGE_EMAIL_JOB } from "../src/jobs/names.ts";
import { Redis } from "ioredis";
import pg from "pg";
import { createRealm } from "../src/actions/realm.ts";
import { createUser } from "../src/actions/users.ts";
import { loadConfig } from "../src/config.ts";
import { closeServices, openServices } from "../src/server.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PG_URL = process.env.DATABASE_URL;
const REDIS_URL = process.env.REDIS_URL;
const HAPROXY = "/usr/sbin/haproxy";
const SKIP = PG_URL && REDIS_URL ? false : "the multi-process suite needs DATABASE_URL (PostgreSQL) and REDIS_URL: skipped";

/** API calls per user per minute on every process: small, so the rate-limit case can exhaust it. */
const API_LIMIT = 60;
/** The heartbeat of idle polls: short, so a poll the test abandons ends soon. */
const HEARTBEAT_SECONDS = 10;
/** How long a process may take to start answering GET /health, and to exit after SIGTERM. */
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

const schema = `cluster_${crypto.randomBytes(5).toString("hex")}`;
const keyPrefix = `${schema}:`;
const dataDirs: string[] = [];

interface Account {
  id: number;
  email: string;
  apiKey: string;
}

interface Proc {
  name: string;
  port: number;
  child: ChildProcess;
  output: string;
}

/** A TCP port nothing listens on now (the process started on it takes it). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` until it returns something other than undefined; fails after `ms`. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

function encode(params: Record<string, unknown>): string {
  const body = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) body.set(key, typeof value === "string" ? value : JSON.stringify(value));
  return body.toString();
}

interface Reply {
  status: number;
  body: any;
}

/** One API call as `user` to `base` (HAProxy's URL or a process's). Network errors are thrown. */
async function call(base: string, user: Account, method: string, route: string, params: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<Reply> {
  const auth = `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString("base64")}`;
  const query = method === "GET" || method === "DELETE" ? `?${encode(params)}` : "";
  const response = await fetch(`${base}/api/v1${route}${query}`, {
    method,
    headers: { authorization: auth, ...(query === "" ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
    ...(query === "" ? { body: encode(params) } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

function ok(reply: Reply, what: string): any {
  assert.equal(reply.status, 200, `${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  assert.equal(reply.body.result, "success", what);
  return reply.body;
}

/** The process behind the reply died or was being taken out: try again, as a client would. */
function processGone(reply: Reply): boolean {
  return reply.status === 502 || reply.status === 503 || reply.status === 504;
}

/** A call retried (for a while) when its process died under it or HAProxy had none to give it to. */
async function callRetrying(base: string, user: Account, method: string, route: string, params: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<Reply> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    let reply: Reply | undefined;
    try {
      reply = await call(base, user, method, route, params, timeoutMs);
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (reply !== undefined && !processGone(reply)) return reply;
    if (Date.now() > deadline) return reply!;
    await sleep(100);
  }
}

/** A bot server or push service on 127.0.0.1 that records requests; with hangFirst, the first to a path never gets an answer. */
class FakeServer {
  url = "";
  readonly #requests: { path: string; body: string; answered: boolean }[] = [];
  readonly #hang = new Map<string, unknown>();
  readonly #hanging = new Map<http.ServerResponse, { record: { answered: boolean }; path: string; answer: unknown }>();
  readonly #server = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const path = (req.url ?? "").split("?")[0]!;
      const record = { path, body, answered: false };
      this.#requests.push(record);
      const hangingFor = this.#hang.get(path);
      if (hangingFor !== undefined && this.#requests.filter((r) => r.path === path).length === 1) {
        this.#hanging.set(res, { record, path, answer: hangingFor });
        return;
      }
      record.answered = true;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(hangingFor ?? { result: "success", msg: "" }));
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as net.AddressInfo).port}`;
  }

  /** The first request to `path` hangs; later ones get `answer`. */
  hangFirst(path: string, answer: unknown): void {
    this.#hang.set(path, answer);
  }

  /** Answers the hanging request to `path`, if its client is still there. */
  release(path: string): void {
    for (const [res, hung] of this.#hanging) {
      if (hung.path !== path) continue;
      this.#hanging.delete(res);
      hung.record.answered = true;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(hung.answer));
    }
  }

  received(path: string): { path: string; body: string }[] {
    return this.#requests.filter((r) => r.path === path);
  }

  answered(path: string): number {
    return this.#requests.filter((r) => r.path === path && r.answered).length;
  }

  async stop(): Promise<void> {
    for (const res of this.#hanging.keys()) res.destroy();
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

describe("several parley serve processes behind HAProxy", { skip: SKIP }, () => {
  const procs: Proc[] = [];
  let haproxy: ChildProcess | undefined;
  let haproxyOutput = "";
  let lb = "";
  let db: pg.Client;
  let redis: Redis;
  let owner: Account, alice: Account, bob: Account, carol: Account, dave: Account, erin: Account, frank: Account, limited: Account;
  const botServer = new FakeServer();
  const pushService = new FakeServer();
  let haproxyConfig = "";

  function env(dataDir: string, port: number): Record<string, string> {
    return {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? os.homedir(),
      HOST: "127.0.0.1",
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: PG_URL!,
      PG_SCHEMA: schema,
      REDIS_URL: REDIS_URL!,
      REDIS_KEY_PREFIX: keyPrefix,
      UPLOAD_STORAGE: "database",
      EXTERNAL_URL: lb,
      TRUSTED_PROXIES: "127.0.0.1",
      LOG_LEVEL: "warn",
      RATE_LIMITING: "true",
      API_RATE_LIMIT_PER_MINUTE: String(API_LIMIT),
      EVENT_HEARTBEAT_SECONDS: String(HEARTBEAT_SECONDS),
      SHUTDOWN_TIMEOUT_SECONDS: "10",
      // The fake bot server and push service listen on 127.0.0.1.
      EXTERNAL_CONTENT_ALLOW_INTERNAL: "true",
      PUSH_SERVICE_URL: pushService.url,
      PUSH_SERVICE_ORG_ID: "cluster-org",
      PUSH_SERVICE_ORG_KEY: "cluster-key",
      PUSH_RETRY_BASE_MS: "50",
    };
  }

  /** Starts `parley serve` on `port` and waits until its GET /health answers 200. */
  async function startProcess(name: string, port: number): Promise<Proc> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `parley-${name}-`));
    dataDirs.push(dataDir);
    const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", "serve"], { cwd: ROOT, env: env(dataDir, port), stdio: ["ignore", "pipe", "pipe"] });
    const proc: Proc = { name, port, child, output: "" };
    const keep = (chunk: string) => (proc.output = (proc.output + chunk).slice(-20_000));
    child.stdout!.setEncoding("utf8").on("data", keep);
    child.stderr!.setEncoding("utf8").on("data", keep);
    await waitFor(
      `${name} to answer GET /health on port ${port}`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${proc.output}`);
        try {
          const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) });
          await response.arrayBuffer();
          return response.status === 200 ? true : undefined;
        } catch {
          return undefined;
        }
      },
      START_TIMEOUT_MS,
    );
    return proc;
  }

  function exited(proc: Proc): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const { child } = proc;
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${proc.name} did not exit within ${STOP_TIMEOUT_MS} ms:\n${proc.output}`)), STOP_TIMEOUT_MS);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal });
      });
    });
  }

  const direct = (proc: Proc) => `http://127.0.0.1:${proc.port}`;

  /** Whether a poll waits on the queue now (the Redis backend's mark, set when the poll starts waiting). */
  async function pollWaiting(queueId: string): Promise<true | undefined> {
    return (await redis.hexists(`${keyPrefix}q:${queueId}`, "w")) === 1 ? true : undefined;
  }

  async function register(base: string, user: Account, eventTypes: string[]): Promise<{ queueId: string; lastEventId: number }> {
    const body = ok(await callRetrying(base, user, "POST", "/register", { event_types: eventTypes }), "POST /register");
    return { queueId: body.queue_id, lastEventId: body.last_event_id };
  }

  async function sendDirect(base: string, from: Account, to: Account[], content: string): Promise<number> {
    return ok(await call(base, from, "POST", "/messages", { type: "direct", to: to.map((u) => u.id), content }), "POST /messages").id;
  }

  /** Expires the leases of jobs held by a dead process, as the passing of their lease time would (see the case below). */
  async function expireLeases(): Promise<void> {
    const now = Date.now();
    await db.query(`UPDATE jobs SET run_at = $1 WHERE status = 'running' AND run_at > $1`, [now]);
    // Outgoing webhooks have had a queue of their own (moving onto jobs/): its claims are leases on available_at (seconds).
    const legacy = await db.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'outgoing_webhook_jobs'`, [schema]);
    if (legacy.rowCount) await db.query(`UPDATE outgoing_webhook_jobs SET available_at = $1 WHERE available_at > $1`, [Math.floor(now / 1000)]);
  }

  /**
   * Jobs not yet over; jobs waiting for the clock are left out, as jobsSettled does: a missed-message email
   * batch waiting for its period (120 s), and the daily digest check each process seeds for its hour.
   */
  async function pendingJobs(): Promise<number> {
    const waiting = `NOT (name IN ($1, $2) AND status = 'queued' AND run_at > $3)`;
    let count = Number((await db.query(`SELECT count(*) AS n FROM jobs WHERE status <> 'failed' AND ${waiting}`, [MISSED_MESSAGE_EMAIL_JOB, DIGEST_CHECK_JOB, Date.now()])).rows[0].n);
    const legacy = await db.query(`SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'outgoing_webhook_jobs'`, [schema]);
    if (legacy.rowCount) count += Number((await db.query(`SELECT count(*) AS n FROM outgoing_webhook_jobs`)).rows[0].n);
    return count;
  }

  before(async () => {
    if (!fs.existsSync(HAPROXY)) {
      throw new Error(`${HAPROXY} is missing: the multi-process suite runs behind Debian's haproxy (apt-get install haproxy; .ci/run installs it)`);
    }
    await Promise.all([botServer.start(), pushService.start()]);
    const lbPort = await freePort();
    lb = `http://127.0.0.1:${lbPort}`;

    // The organization and its users, created once before any process starts (two first `serve`s would both create one).
    const config = loadConfig({ DATABASE_URL: PG_URL!, PG_SCHEMA: schema, DATA_DIR: os.tmpdir(), EXTERNAL_URL: lb, HOST: "127.0.0.1" });
    const services = await openServices(config);
    try {
      const { realm, owner: ownerRow } = await createRealm(services, { name: "Cluster", ownerEmail: "owner@cluster.example", ownerPassword: "owner-password-1", ownerFullName: "Owner" });
      owner = { id: ownerRow.id, email: ownerRow.delivery_email, apiKey: ownerRow.api_key };
      const make = async (name: string) => {
        const user = await createUser(services, realm, null, { email: `${name}@cluster.example`, fullName: name, password: `${name}-password-1`, role: 400, isBot: false });
        return { id: user.id, email: user.delivery_email, apiKey: user.api_key };
      };
      alice = await make("alice");
      bob = await make("bob");
      carol = await make("carol");
      dave = await make("dave");
      erin = await make("erin");
      frank = await make("frank");
      limited = await make("limited");
    } finally {
      await closeServices(services);
    }
    db = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await db.connect();
    redis = new Redis(REDIS_URL!);

    const ports = [await freePort(), await freePort(), await freePort()];
    procs.push(...(await Promise.all(ports.map((port, i) => startProcess(`p${i + 1}`, port)))));

    haproxyConfig = haproxyConfigFor(lbPort, ports);
    const configFile = path.join(dataDirs[0]!, "haproxy.cfg");
    fs.writeFileSync(configFile, haproxyConfig);
    haproxy = spawn(HAPROXY, ["-db", "-f", configFile], { stdio: ["ignore", "pipe", "pipe"] });
    haproxy.stdout!.setEncoding("utf8").on("data", (chunk: string) => (haproxyOutput += chunk));
    haproxy.stderr!.setEncoding("utf8").on("data", (chunk: string) => (haproxyOutput += chunk));
    await waitFor("HAProxy to answer GET /health", async () => {
      if (haproxy!.exitCode !== null) throw new Error(`haproxy exited with ${haproxy!.exitCode}:\n${haproxyOutput}`);
      try {
        const response = await fetch(`${lb}/health`, { signal: AbortSignal.timeout(2000) });
        await response.arrayBuffer();
        return response.status === 200 ? true : undefined;
      } catch {
        return undefined;
      }
    });
  });

  after(async () => {
    for (const proc of procs) if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGKILL");
    haproxy?.kill("SIGKILL");
    await Promise.all([botServer.stop(), pushService.stop()]);
    await redis?.quit().catch(() => {});
    if (db) {
      await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await db.end();
    }
    if (REDIS_URL) {
      const cleanup = new Redis(REDIS_URL);
      for await (const keys of cleanup.scanStream({ match: `${keyPrefix}*`, count: 500 })) if ((keys as string[]).length > 0) await cleanup.del(...(keys as string[]));
      await cleanup.quit();
    }
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  test("the HAProxy configuration the test runs is the one docs/scale-out.md shows", () => {
    const docs = fs.readFileSync(path.join(ROOT, "docs", "scale-out.md"), "utf8");
    const shown = haproxyConfigFor(80, [9991, 9992, 9993]);
    assert.ok(docs.includes(shown), `docs/scale-out.md should contain, verbatim:\n${shown}`);
  });

  test("a queue registered on one process is read on each of the others", async () => {
    const [p1, p2, p3] = procs as [Proc, Proc, Proc];
    const { queueId, lastEventId } = await register(direct(p1), alice, ["message"]);
    const id = await sendDirect(direct(p3), bob, [alice], "registered on p1, sent through p3");
    // Read on p2 without acknowledging, then on p3 acknowledging: the same event, its ID the queue's.
    const onP2 = ok(await call(direct(p2), alice, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId, dont_block: true }), "GET /events on p2");
    assert.deepEqual(onP2.events.map((e: any) => [e.type, e.message?.id]), [["message", id]]);
    const onP3 = ok(await call(direct(p3), alice, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId, dont_block: true }), "GET /events on p3");
    assert.deepEqual(onP3.events, onP2.events);
    // Acknowledged on p3: p1 has nothing more to give.
    const acked = onP3.events[0].id;
    const onP1 = ok(await call(direct(p1), alice, "GET", "/events", { queue_id: queueId, last_event_id: acked, dont_block: true }), "GET /events on p1");
    assert.deepEqual(onP1.events, []);
    // And through HAProxy, whichever process serves it.
    for (let i = 0; i < 3; i++) ok(await call(lb, alice, "GET", "/events", { queue_id: queueId, last_event_id: acked, dont_block: true }), "GET /events through HAProxy");
  });

  test("a long-poll on p1 wakes for a message sent through p2", async () => {
    const [p1, p2] = procs as [Proc, Proc];
    const { queueId, lastEventId } = await register(lb, carol, ["message"]);
    const poll = call(direct(p1), carol, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId });
    await waitFor("the poll to wait on p1", () => pollWaiting(queueId));
    const id = await sendDirect(direct(p2), bob, [carol], "sent through p2");
    // The design target is well under a second (one Redis PUBLISH); the bound
    // is far below the 10 s heartbeat, which would otherwise answer the poll.
    const reply = await Promise.race([poll, sleep(5000).then(() => undefined)]);
    assert.ok(reply !== undefined, "the poll on p1 was not woken by the message sent through p2");
    assert.deepEqual(ok(reply, "GET /events").events.map((e: any) => [e.type, e.message?.id]), [["message", id]]);
  });

  test("typing, presence and realm events cross processes", async () => {
    const [p1, p2, p3] = procs as [Proc, Proc, Proc];
    const { queueId, lastEventId } = await register(direct(p1), dave, ["typing", "presence", "realm"]);
    ok(await call(direct(p2), erin, "POST", "/typing", { op: "start", type: "direct", to: [dave.id] }), "POST /typing on p2");
    ok(await call(direct(p3), erin, "POST", "/users/me/presence", { status: "active", new_user_input: true }), "POST presence on p3");
    const name = `Cluster ${crypto.randomBytes(3).toString("hex")}`;
    ok(await call(direct(p2), owner, "PATCH", "/realm", { name }), "PATCH /realm on p2");
    const seen: any[] = [];
    let last = lastEventId;
    await waitFor("typing, presence and realm events on p1", async () => {
      // Long-polls (they answer as events arrive): GET /events is rate limited too.
      const body = ok(await call(direct(p1), dave, "GET", "/events", { queue_id: queueId, last_event_id: last }), "GET /events on p1");
      for (const event of body.events) {
        seen.push(event);
        last = event.id;
      }
      const has = (type: string) => seen.some((e) => e.type === type);
      return has("typing") && has("presence") && has("realm") ? true : undefined;
    });
    const typing = seen.find((e) => e.type === "typing");
    assert.equal(typing.op, "start");
    assert.equal(typing.sender.user_id, erin.id);
    const presence = seen.find((e) => e.type === "presence");
    assert.equal(presence.user_id, erin.id);
    const realm = seen.find((e) => e.type === "realm");
    assert.deepEqual([realm.op, realm.property, realm.value], ["update", "name", name]);
  });

  test("a change through one process reaches the row caches of the others (PostgreSQL NOTIFY)", async () => {
    const [p1, p2, p3] = procs as [Proc, Proc, Proc];
    const nameOn = async (proc: Proc) => ok(await call(direct(proc), carol, "GET", "/users/me"), `GET /users/me on ${proc.name}`).full_name as string;
    // Each process authenticates carol twice, the second time with her row kept in its cache
    // (the first look-up opens the process's LISTEN connection; rows are kept once it is up).
    for (const proc of [p1, p2, p3]) await nameOn(proc);
    await sleep(300);
    const old = await nameOn(p2);
    for (const proc of [p1, p3]) assert.equal(await nameOn(proc), old);
    const name = `Carol ${crypto.randomBytes(3).toString("hex")}`;
    ok(await call(direct(p1), owner, "PATCH", `/users/${carol.id}`, { full_name: name }), "PATCH /users/{id} on p1");
    // The writing process drops its cache before it answers; the others when PostgreSQL tells them.
    assert.equal(await nameOn(p1), name);
    for (const proc of [p2, p3]) await waitFor(`carol's new name on ${proc.name}`, async () => ((await nameOn(proc)) === name ? true : undefined), 5000);
  });

  test("rate limits hold across processes: the calls accepted by all of them add up to the limit", async () => {
    // API_LIMIT calls at once, then one more a minute / API_LIMIT later
    // (Zulip's algorithm). Three times the limit, spread over the processes
    // in turn; without a shared count each process would accept API_LIMIT.
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 3 * API_LIMIT }, (_, i) => call(direct(procs[i % 3]!), limited, "GET", "/users/me")),
    );
    const elapsedMs = Date.now() - started;
    const accepted = replies.filter((r) => r.status === 200).length;
    const refused = replies.filter((r) => r.status === 429);
    assert.equal(accepted + refused.length, replies.length, `every call is accepted or refused: ${JSON.stringify(replies.map((r) => r.status))}`);
    for (const reply of refused) assert.equal(reply.body.code, "RATE_LIMIT_HIT");
    // The budget refills one call per 60 / API_LIMIT seconds while the calls run.
    const refill = Math.floor(elapsedMs / ((60 * 1000) / API_LIMIT)) + 1;
    assert.ok(accepted >= API_LIMIT && accepted <= API_LIMIT + refill, `accepted ${accepted} calls across three processes; the limit is ${API_LIMIT} (+${refill} refilled)`);
  });

  test("a scheduled message due while the processes run is sent once", async () => {
    const content = `scheduled ${crypto.randomBytes(4).toString("hex")}`;
    const { queueId, lastEventId } = await register(lb, frank, ["message"]);
    const deliverAt = Math.floor(Date.now() / 1000) + 2;
    const scheduled = ok(await call(lb, erin, "POST", "/scheduled_messages", { type: "direct", to: [frank.id], content, scheduled_delivery_timestamp: deliverAt }), "POST /scheduled_messages");
    const event = await waitFor("the scheduled message's event", async () => {
      const body = ok(await call(lb, frank, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId }), "GET /events");
      return body.events.find((e: any) => e.type === "message");
    });
    assert.equal(event.message.content.includes(content), true);
    // Every process polls the job queue every second; the job is gone once one of them has sent it.
    await waitFor("the scheduled message's job to finish", async () => ((await pendingJobs()) === 0 ? true : undefined));
    const sent = await db.query(`SELECT id FROM messages WHERE content = $1`, [content]);
    assert.deepEqual(sent.rows.map((r) => Number(r.id)), [event.message.id]);
    const row = await db.query(`SELECT delivered FROM scheduled_messages WHERE id = $1`, [scheduled.scheduled_message_id]);
    assert.equal(Boolean(row.rows[0]?.delivered), true);
  });

  test("SIGTERM: the waiting long-poll is answered at once while a job finishes, the process exits 0, and the client goes on through another without losing events", async () => {
    const [p1, p2, p3] = procs as [Proc, Proc, Proc];
    const botReply = `drained ${crypto.randomBytes(3).toString("hex")}`;
    const bot = ok(
      await call(lb, owner, "POST", "/bots", { full_name: "Drain Hook", short_name: "drainhook", bot_type: 3, payload_url: JSON.stringify(`${botServer.url}/drain-hook`), interface_type: 1 }),
      "POST /bots",
    );
    botServer.hangFirst("/drain-hook", { content: botReply });
    const { queueId, lastEventId } = await register(lb, alice, ["message"]);
    const poll = call(direct(p3), alice, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId });
    await waitFor("the poll to wait on p3", () => pollWaiting(queueId));
    // A job in progress on p3 when the signal comes: only p3 runs while it is queued and claimed.
    p1.child.kill("SIGSTOP");
    p2.child.kill("SIGSTOP");
    try {
      await sendDirect(direct(p3), erin, [{ id: bot.user_id } as Account], "keep p3 busy");
      await waitFor("p3's request to the bot server", () => (botServer.received("/drain-hook").length >= 1 ? true : undefined));
    } finally {
      p1.child.kill("SIGCONT");
      p2.child.kill("SIGCONT");
    }
    const exit = exited(p3);
    p3.child.kill("SIGTERM");
    // Answered by the drain at once — not after the job, nor by the 10 s
    // heartbeat (the bound is well below both).
    const reply = await Promise.race([poll, sleep(5000).then(() => undefined)]);
    assert.ok(reply !== undefined, "the waiting poll was not answered when p3 began to drain");
    const answered = ok(reply, "the drained poll");
    assert.deepEqual(answered.events, []);
    // Sent while p3 drains: the client's next polls go through HAProxy to the others.
    const ids = [await sendDirect(lb, bob, [alice], "after the drain 1"), await sendDirect(lb, bob, [alice], "after the drain 2")];
    const seen: number[] = [];
    let last = lastEventId;
    await waitFor("both messages through HAProxy", async () => {
      const body = ok(await callRetrying(lb, alice, "GET", "/events", { queue_id: queueId, last_event_id: last }), "GET /events");
      for (const event of body.events) {
        if (event.type === "message") seen.push(event.message.id);
        last = event.id;
      }
      return seen.length >= 2 ? true : undefined;
    });
    assert.deepEqual(seen, ids);
    // p3 waits for its job: the bot answers now, p3 posts the answer and exits 0.
    assert.equal(p3.child.exitCode, null, "p3 exited before its job finished");
    botServer.release("/drain-hook");
    assert.deepEqual(await exit, { code: 0, signal: null }, p3.output);
    const replies = await db.query(`SELECT content FROM messages WHERE sender_id = $1`, [bot.user_id]);
    assert.deepEqual(replies.rows.map((r) => r.content), [botReply]);
    assert.equal(botServer.received("/drain-hook").length, 1, "the job was finished by p3, not run again elsewhere");
    // The rolling restart: p3 comes back on its port, and HAProxy sends it requests again.
    procs[2] = await startProcess("p3", p3.port);
  });

  test("an outgoing webhook and a mobile push are delivered once when the process holding them is killed before sending", async () => {
    const [p1, p2, p3] = procs as [Proc, Proc, Proc];
    const botReply = `pong ${crypto.randomBytes(3).toString("hex")}`;
    const bot = ok(
      await call(lb, owner, "POST", "/bots", { full_name: "Cluster Hook", short_name: "clusterhook", bot_type: 3, payload_url: JSON.stringify(`${botServer.url}/hook`), interface_type: 1 }),
      "POST /bots",
    );
    ok(await call(lb, dave, "POST", "/users/me/android_gcm_reg_id", { token: `fcm-${dave.id}-token` }), "POST android_gcm_reg_id");
    // The first request of each hangs (the dead process never finishes it); later ones are answered.
    botServer.hangFirst("/hook", { content: botReply });
    pushService.hangFirst("/api/v1/remotes/push/notify", { result: "success", msg: "" });
    // Only p2 runs while the jobs are queued and claimed: it holds both.
    p1.child.kill("SIGSTOP");
    p3.child.kill("SIGSTOP");
    let p2exit: Promise<unknown>;
    try {
      await sendDirect(direct(p2), erin, [{ id: bot.user_id } as Account], "ping the bot");
      const pushed = await sendDirect(direct(p2), erin, [dave], "a direct message for dave's phone");
      await waitFor("p2's request to the bot server", () => (botServer.received("/hook").length >= 1 ? true : undefined));
      await waitFor("p2's request to the push service", () => (pushService.received("/api/v1/remotes/push/notify").length >= 1 ? true : undefined));
      assert.equal(pushService.received("/api/v1/remotes/push/notify")[0]!.body.includes(String(pushed)), true);
      p2exit = exited(p2);
      p2.child.kill("SIGKILL");
      await p2exit;
    } finally {
      p1.child.kill("SIGCONT");
      p3.child.kill("SIGCONT");
    }
    // The claims of the dead process last for their lease (a minute or more);
    // the test makes them run out now, as that time passing would, rather
    // than wait. The survivors then take both jobs again.
    await expireLeases();
    await waitFor("the survivors to deliver both", () => (botServer.answered("/hook") === 1 && pushService.answered("/api/v1/remotes/push/notify") === 1 ? true : undefined), 20_000);
    await waitFor("the jobs to finish", async () => ((await pendingJobs()) === 0 ? true : undefined), 20_000);
    // Exactly one delivery each besides the one the dead process never finished, and the bot's answer is posted once.
    assert.equal(botServer.received("/hook").length, 2);
    assert.equal(pushService.received("/api/v1/remotes/push/notify").length, 2);
    const replies = await db.query(`SELECT content FROM messages WHERE sender_id = $1`, [bot.user_id]);
    assert.deepEqual(replies.rows.map((r) => r.content), [botReply]);
  });

  test("kill -9 of a process while clients poll and send: every acknowledged message reaches every queue, in order, through the survivors", async () => {
    const victim = procs[0]!;
    // alice and carol poll through HAProxy; the owner polls the victim itself
    // until it dies, so one poll surely dies with it.
    const receivers = [alice, carol, owner];
    const onVictim = 2;
    let killed = false;
    const pollFailures = receivers.map(() => 0);
    const queues = await Promise.all(receivers.map((user) => register(lb, user, ["message"])));
    const acked: number[] = [];
    const LAST_MESSAGE = "burst over";
    const seenBy: number[][] = receivers.map(() => []);

    const pollLoop = async (index: number) => {
      const user = receivers[index]!;
      let last = queues[index]!.lastEventId;
      const { queueId } = queues[index]!;
      // The last message is sent once the others are done: seeing it, the client has seen all it will.
      let sawLast = false;
      const done = () => sawLast;
      const deadline = Date.now() + 60_000;
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`${user.email} saw ${JSON.stringify(seenBy[index])}, acknowledged ${JSON.stringify(acked)}`);
        let reply: Reply;
        try {
          // A long-poll, cut short by the client so the loop notices the end of the sends.
          const base = index === onVictim && !killed ? direct(victim) : lb;
          // Long-polls: while acknowledged messages are unseen, one arrives soon.
          reply = await call(base, user, "GET", "/events", { queue_id: queueId, last_event_id: last }, (HEARTBEAT_SECONDS + 5) * 1000);
        } catch {
          pollFailures[index]! += 1;
          await sleep(100);
          continue;
        }
        if (processGone(reply)) {
          pollFailures[index]! += 1;
          await sleep(100);
          continue;
        }
        const body = ok(reply, `GET /events for ${user.email}`);
        for (const event of body.events) {
          if (event.type === "message") seenBy[index]!.push(event.message.id);
          if (event.type === "message" && String(event.message.content).includes(LAST_MESSAGE)) sawLast = true;
          last = event.id;
        }
      }
    };
    const polls = receivers.map((_, i) => pollLoop(i));

    const total = 16;
    let failedSends = 0;
    for (let i = 0; i < total; i++) {
      if (i === 6) {
        // The owner's poll waits on the victim with every event so far acknowledged (nothing can answer it before the kill).
        const key = `${keyPrefix}q:${queues[onVictim]!.queueId}`;
        await waitFor("the owner's poll to wait on the victim", async () =>
          (await redis.hexists(key, "w")) === 1 && (await redis.xlen(`${key}:e`)) === 0 && seenBy[onVictim]!.length === acked.length ? true : undefined,
        );
        const gone = exited(victim);
        killed = true;
        victim.child.kill("SIGKILL");
        await gone;
      }
      try {
        const reply = await call(lb, frank, "POST", "/messages", { type: "direct", to: receivers.map((u) => u.id), content: `burst ${i}` });
        if (reply.status === 200) acked.push(reply.body.id);
        else if (processGone(reply)) failedSends++;
        else assert.fail(`POST /messages: ${reply.status} ${JSON.stringify(reply.body)}`);
      } catch {
        // Its process died under it: not acknowledged, so the client would send it again.
        failedSends++;
      }
    }
    // A last message, once the sends are over: each client polls until it has it.
    const last = ok(await callRetrying(lb, frank, "POST", "/messages", { type: "direct", to: receivers.map((u) => u.id), content: LAST_MESSAGE }), "the last POST /messages");
    acked.push(last.id);
    await Promise.all(polls);
    assert.ok(pollFailures[onVictim]! >= 1, "the owner's poll on the victim did not fail with it");
    assert.ok(acked.length >= total - 2, `acknowledged ${acked.length} of ${total} sends (${failedSends} failed with the dead process)`);
    for (const [index, seen] of seenBy.entries()) {
      // In order, none twice (a send that died unacknowledged may or may not be there), and every acknowledged one.
      assert.deepEqual(seen, [...new Set(seen)].sort((a, b) => a - b), `${receivers[index]!.email} saw events out of order: ${JSON.stringify(seen)}`);
      assert.deepEqual(seen.filter((id) => acked.includes(id)), acked, `${receivers[index]!.email} missed acknowledged messages`);
    }
  });
});

/**
 * The HAProxy configuration of docs/scale-out.md, for a front end on
 * `frontPort` and processes on `ports`.
 */
function haproxyConfigFor(frontPort: number, ports: number[]): string {
  const servers = ports.map((port, i) => `    server parley${i + 1} 127.0.0.1:${port} check`).join("\n");
  return `global
    # Each waiting long-poll holds two connections (client and server side).
    maxconn 8000

defaults
    mode http
    log global
    option http-keep-alive
    # Long-polls: GET /events waits up to EVENT_HEARTBEAT_SECONDS (45 by default).
    timeout connect 5s
    timeout client 90s
    timeout server 90s
    timeout http-request 30s
    timeout http-keep-alive 10s
    timeout queue 30s
    # A connection refused (a process stopping or gone) is retried on another.
    retries 3
    option redispatch 1

frontend parley
    bind 127.0.0.1:${frontPort}
    option forwardfor
    default_backend parley

backend parley
    balance roundrobin
    # A draining or unhealthy process answers 503 (or nothing) and is taken out.
    option httpchk GET /health
    http-check expect status 200
    default-server inter 1s fall 2 rise 1
${servers}
`;
}
