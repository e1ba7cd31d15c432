// Event queues under load, against DESIGN.md's budgets:
//   (a) 10,000 idle GET /events long-polls on one server process: resident
//       memory under 300 MB, and what they cost in CPU while idle;
//   (b) fan-out: one event for 1,000 waiting queues delivered with p99 under 50 ms;
//   (c) the same for a message: POST /messages to a channel with 1,000
//       subscribers, each with a GET /events long-poll waiting, until every
//       recipient's poll has returned the message (p99 under 50 ms).
//
// Runs the compiled `parley serve` as a child process on a fresh database (a
// temporary SQLite directory, or with DATABASE_URL the PostgreSQL schema
// `bench_events`, dropped before and after), creates users with POST /users
// and gets their keys from POST /dev_fetch_api_key (PARLEY_DEV_MODE is on for
// that alone), then drives it over HTTP from this process.
//
// Usage: npm run bench:events [-- --queues 10000 --users 1000 --idle 10 --fanout 1000 --rounds 10 --parts idle,realm,message]
//        (npm run build && node --import tsx bench/events.ts …)
// --server <dist dir> runs that compiled server instead of this checkout's
// dist/ (bench/issue28.ts: another revision); --pg-schema names the schema;
// --alone sets how many sends (c) times with no queue registered; --json
// <file> writes the fan-out and send times there as well.
// --parts picks (a) idle, (b) realm (with its yardstick) and (c) message; (b)
// and (c) share one fresh server process, (b)'s queues are deleted before (c).
//
// The fan-out rounds are repeated against bench/bare-longpoll.ts, a bare
// Fastify app that holds long-polls and answers them all at once: on a small
// shared machine the client and the kernel take much of the latency, and the
// yardstick shows how much. BENCH_SERVER_NODE_ARGS passes node options to the
// Parley server only (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
//
// Every long-poll is one TCP connection, so both this process and the server
// need more file descriptors than 10,000: if the soft `ulimit -n` is too low
// the script re-executes itself (and starts the server) under the hard limit,
// and stops with a message if even that is too low.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { call as apiCall, percentile, pool, sleep, type BenchUser, type Reply } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    queues: { type: "string", default: "10000" },
    users: { type: "string", default: "1000" },
    idle: { type: "string", default: "10" },
    fanout: { type: "string", default: "1000" },
    rounds: { type: "string", default: "10" },
    port: { type: "string", default: "19993" },
    // idle: (a); realm: (b) with its bare yardstick; message: (c).
    parts: { type: "string", default: "idle,realm,message" },
    alone: { type: "string", default: "10" },
    server: { type: "string" },
    "pg-schema": { type: "string" },
    json: { type: "string" },
  },
});
const PARTS = new Set(values.parts.split(","));
const QUEUES = Number(values.queues);
const USERS = Number(values.users);
const IDLE_SECONDS = Number(values.idle);
const FANOUT = Number(values.fanout);
const ROUNDS = Number(values.rounds);
const ALONE = Number(values.alone);
const PORT = Number(values.port);
if (FANOUT > USERS) throw new Error("--fanout is one queue per user: it cannot exceed --users");

// ---------------------------------------------------------------------------
// File descriptors: one per connection on each side, plus slack.

function fdLimits(): { soft: number; hard: number } {
  const line = fs.readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"))!;
  const [soft, hard] = line.replace("Max open files", "").trim().split(/\s+/);
  const num = (s: string | undefined) => (s === "unlimited" ? Infinity : Number(s));
  return { soft: num(soft), hard: num(hard) };
}
const neededFds = QUEUES + 1000;
const limits = fdLimits();
if (limits.soft < neededFds) {
  if (limits.hard < neededFds || process.env.BENCH_EVENTS_REEXEC) {
    console.error(`bench/events: needs ${neededFds} file descriptors, ulimit -n allows ${limits.soft} (hard ${limits.hard}). Raise it (ulimit -n ${neededFds}) or pass a smaller --queues.`);
    process.exit(2);
  }
  const raised = limits.hard === Infinity ? "unlimited" : String(limits.hard);
  const result = spawnSync("/bin/sh", ["-c", `ulimit -n ${raised} && exec "$@"`, "sh", process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: { ...process.env, BENCH_EVENTS_REEXEC: "1" },
  });
  process.exit(result.status ?? 1);
}

// ---------------------------------------------------------------------------
// The server process and what /proc says about it.

const cli = path.join(values.server ? path.resolve(values.server) : path.join(root, "dist"), "cli.js");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:events does)");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-events-"));
const PG_URL = process.env.DATABASE_URL || "";
const pgSchema = PG_URL ? (values["pg-schema"] ?? "bench_events") : "";
const env = {
  ...process.env,
  // 10,000 polling clients are one user far past the API limits, as in any load test.
  RATE_LIMITING: "false",
  DATA_DIR: dataDir,
  PORT: String(PORT),
  LOG_LEVEL: "warn",
  DATABASE_URL: PG_URL,
  PG_SCHEMA: pgSchema,
  // No heartbeat may end an idle poll during the run.
  EVENT_HEARTBEAT_SECONDS: "3600",
  // Only for POST /dev_fetch_api_key: API keys without an argon2 login each.
  PARLEY_DEV_MODE: "true",
};
const base = `http://127.0.0.1:${PORT}`;
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

const dropSchema = () => dropPgSchema(PG_URL, pgSchema);

/** The server process running now, stopped on the way out whatever happens. */
let running: ChildProcess | undefined;

async function startParley(): Promise<ChildProcess> {
  // exec keeps the PID, so /proc/<pid> is the server's own.
  // BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") are node options for the server alone.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
  const child = spawn("/bin/sh", ["-c", `ulimit -n ${neededFds + 1000} 2>/dev/null || true; exec "$@"`, "sh", process.execPath, ...nodeArgs, cli, "serve"], {
    env,
    stdio: ["ignore", "ignore", "inherit"],
  });
  running = child;
  let exited = false;
  child.once("exit", () => (exited = true));
  for (let i = 0; i < 400 && !exited; i++) {
    try {
      if ((await fetch(`${base}/api/v1/server_settings`)).ok) return child;
    } catch {
      // not listening yet
    }
    await sleep(25);
  }
  throw new Error("parley serve did not come up");
}

async function stopParley(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** utime + stime of the process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After the comm field: state is field 3, utime 14, stime 15 (1-based over the whole line).
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** CPU used over an idle window of `seconds`, as a share of one core, with RSS at both ends. */
async function idleWindow(pid: number, seconds: number) {
  const rssStart = rssMb(pid);
  const cpuStart = cpuSeconds(pid);
  const started = performance.now();
  await sleep(seconds * 1000);
  const wall = (performance.now() - started) / 1000;
  const cpu = cpuSeconds(pid) - cpuStart;
  return { rssStart, rssEnd: rssMb(pid), cpuSeconds: cpu, cpuPercent: (100 * cpu) / wall };
}

// ---------------------------------------------------------------------------
// HTTP: plain node:http with one keep-alive agent and no socket cap, so each
// long-poll has a connection of its own.

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: Infinity });

type User = BenchUser;

/** One API call on this script's agent; `written` resolves once the request is on the wire. */
function call(user: User | null, method: string, urlPath: string, params: Record<string, unknown> = {}, origin = base): { reply: Promise<Reply>; written: Promise<void> } {
  return apiCall(agent, user, method, urlPath, params, origin);
}




async function ok(user: User | null, method: string, urlPath: string, params: Record<string, unknown> = {}) {
  const { status, body } = await call(user, method, urlPath, params).reply;
  if (status !== 200 || body.result !== "success") throw new Error(`${method} ${urlPath}: ${status} ${JSON.stringify(body)}`);
  return body;
}


const ms = (n: number) => n.toFixed(1);

/** The kernel's count of connections dropped because a listen queue was full (TcpExt ListenOverflows). */
function listenOverflows(): number {
  const lines = fs.readFileSync("/proc/net/netstat", "utf8").split("\n").filter((l) => l.startsWith("TcpExt:"));
  const names = lines[0]?.split(/\s+/) ?? [];
  const counts = lines[1]?.split(/\s+/) ?? [];
  return Number(counts[names.indexOf("ListenOverflows")] ?? 0);
}
const mb = (n: number) => n.toFixed(0);

// ---------------------------------------------------------------------------

interface Queue {
  user: User;
  id: string;
  lastEventId: number;
}

/**
 * Opens a long-poll on every queue, `batch` connections at a time with a
 * pause between batches (the server listens with a backlog of 511 and takes
 * in well under a thousand polls a second: faster bursts overflow the accept
 * queue and cost SYN retransmits of a second or more); returns the pending replies.
 */
async function openPolls(queues: readonly Queue[], batch: number, pauseMs: number, origin = base): Promise<Promise<Reply>[]> {
  const replies: Promise<Reply>[] = [];
  for (let i = 0; i < queues.length; i += batch) {
    const written: Promise<void>[] = [];
    for (const q of queues.slice(i, i + batch)) {
      const c = call(q.user, "GET", "/events", { queue_id: q.id, last_event_id: q.lastEventId }, origin);
      // Failures are counted by whoever awaits the reply; keep them from being unhandled meanwhile.
      c.reply.catch(() => {});
      replies.push(c.reply);
      written.push(c.written);
    }
    await Promise.all(written);
    await sleep(pauseMs);
  }
  return replies;
}

/** Checks a poll's reply holds a realm name event; returns its id. */
function realmNameEventId(reply: Reply, name: string): number {
  if (reply.status !== 200 || reply.body.result !== "success") throw new Error(`poll failed: ${reply.status} ${JSON.stringify(reply.body)}`);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const event = (reply.body.events as any[]).find((e) => e.type === "realm" && e.property === "name");
  if (!event || event.value !== name) throw new Error(`expected the realm name event, got ${JSON.stringify(reply.body.events)}`);
  return Math.max(...reply.body.events.map((e: { id: number }) => e.id));
}

interface Round {
  first: number;
  p50: number;
  p99: number;
  max: number;
  /** When the request that caused the event had its reply. */
  patch: number;
  serverCpu: number;
  benchCpu: number;
}

/** What starts a fan-out round and what every poll must then receive. */
interface Trigger {
  /** Sends the change for this round. */
  send(round: number): Promise<Reply>;
  /** Checks a poll's reply carries the round's event (`sent` is the triggering request's reply); returns the queue's new last event ID. */
  check(reply: Reply, round: number, sent: Reply): number;
}

/** A PATCH /realm name change: a realm-wide event to every active user. */
function realmNameTrigger(owner: User | null, origin: string): Trigger {
  return {
    send: (round) => call(owner, "PATCH", "/realm", { name: `Bench round ${round}` }, origin).reply,
    check: (reply, round) => realmNameEventId(reply, `Bench round ${round}`),
  };
}

/** A ~200-character channel message with a mention and a link, like bench/messages.ts sends. */
const MESSAGE_CONTENT =
  "@**Bench User 3** the deploy of build 4512 failed again on the staging cluster; logs are at https://ci.example.com/builds/4512/log?step=deploy — can you look before the 15:00 sync? I think it is the new cache config.";

/** POST /messages to a channel: one `message` event to each subscriber. */
function messageTrigger(sender: User, channel: string): Trigger {
  return {
    send: (round) => call(sender, "POST", "/messages", { type: "stream", to: channel, topic: `fan-out round ${round}`, content: MESSAGE_CONTENT }).reply,
    check: (reply, _round, sent) => {
      if (reply.status !== 200 || reply.body.result !== "success") throw new Error(`poll failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      if (sent.status !== 200 || sent.body.result !== "success") throw new Error(`POST /messages: ${sent.status} ${JSON.stringify(sent.body)}`);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const event = (reply.body.events as any[]).find((e) => e.type === "message" && e.message?.id === sent.body.id);
      if (!event) throw new Error(`expected message ${sent.body.id}, got ${JSON.stringify(reply.body.events).slice(0, 300)}`);
      return Math.max(...reply.body.events.map((e: { id: number }) => e.id));
    },
  };
}

/**
 * ROUNDS rounds (after one uncounted warm-up) of: a long-poll on every queue,
 * 500 ms for the server to take them in, then the trigger (one PATCH /realm,
 * or one POST /messages); per poll, the time from sending the trigger to
 * having the whole reply.
 */
async function fanoutRounds(queues: Queue[], trigger: Trigger, origin: string, pid: number): Promise<{ rounds: Round[]; all: number[] }> {
  const rounds: Round[] = [];
  const all: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const polls = await openPolls(queues, 100, 50, origin);
    await sleep(500);
    const serverCpuStart = cpuSeconds(pid);
    const benchCpuStart = process.cpuUsage();
    const start = performance.now();
    const sent = trigger.send(round);
    sent.catch(() => {});
    const replies = await Promise.all(polls);
    const sentDone = await sent;
    const serverCpu = 1000 * (cpuSeconds(pid) - serverCpuStart);
    const benchUsage = process.cpuUsage(benchCpuStart);
    if (sentDone.status !== 200) throw new Error(`round ${round}: ${JSON.stringify(sentDone.body)}`);
    const times = replies.map((r, i) => {
      queues[i]!.lastEventId = trigger.check(r, round, sentDone);
      return r.at - start;
    });
    if (round === 0) continue;
    times.sort((a, b) => a - b);
    all.push(...times);
    rounds.push({
      first: times[0]!,
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      max: times.at(-1)!,
      patch: sentDone.at - start,
      serverCpu,
      benchCpu: (benchUsage.user + benchUsage.system) / 1000,
    });
  }
  all.sort((a, b) => a - b);
  return { rounds, all };
}

function printRounds({ rounds, all }: { rounds: Round[]; all: number[] }, trigger = "PATCH"): void {
  console.log(`| round | first ms | p50 ms | p99 ms | max ms | ${trigger} reply ms | server CPU ms | bench CPU ms |`);
  console.log("|---|---|---|---|---|---|---|---|");
  rounds.forEach((r, i) => console.log(`| ${i + 1} | ${ms(r.first)} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${ms(r.patch)} | ${r.serverCpu.toFixed(0)} | ${r.benchCpu.toFixed(0)} |`));
  console.log(`| all ${rounds.length} | ${ms(Math.min(...rounds.map((r) => r.first)))} | ${ms(percentile(all, 50))} | ${ms(percentile(all, 99))} | ${ms(all.at(-1)!)} | | | |`);
}

/** The same rounds against bench/bare-longpoll.ts: what Fastify, the kernel and this client cost alone. */
async function bareRounds(): Promise<{ rounds: Round[]; all: number[] }> {
  const port = PORT + 1;
  const origin = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench", "bare-longpoll.ts")], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        if (d.toString().includes("listening")) resolve();
      });
      child.once("exit", () => reject(new Error("bench/bare-longpoll.ts exited")));
    });
    const queues = Array.from({ length: FANOUT }, (_, i): Queue => ({ user: { id: i, email: `bare${i}@bench.example`, apiKey: "x" }, id: `bare-${i}`, lastEventId: -1 }));
    return await fanoutRounds(queues, realmNameTrigger(null, origin), origin, child.pid!);
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  }
}

/** The commit the compiled server was built from, and whether src/ had uncommitted changes. */
function sourceRevision(): string {
  if (values.server) return `the compiled server in ${values.server}`;
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: root }).toString().trim() !== "";
    return dirty ? `${head} with uncommitted changes in src/` : head;
  } catch {
    return "unknown (no git)";
  }
}

/** What --json writes: fan-out p99s and the sends with no queue registered, in ms. */
const summary: { message?: { subscribers: number; p99: number; aloneMedian: number; alone: number[] }; yardstick?: { p99: number } } = {};

async function main() {
  const revision = sourceRevision();
  const db = PG_URL ? "PostgreSQL" : "SQLite";
  const started = performance.now();
  // Other work on the machine skews latencies: the load average goes in the report.
  const loadStart = os.loadavg()[0]!;
  await dropSchema();
  const init = JSON.parse(
    execFileSync(process.execPath, [cli, "init", "--org-name", "Bench", "--owner-email", "owner@bench.example", "--owner-password", "bench-owner-pw", "--json"], { env }).toString(),
  ) as { user_id: number; email: string; api_key: string };
  const owner: User = { id: init.user_id, email: init.email, apiKey: init.api_key };

  let parley = await startParley();
  const pid = parley.pid!;
  const rssFresh = rssMb(pid);

  // Users: POST /users (an argon2 hash each), then their keys.
  let t0 = performance.now();
  const emails = Array.from({ length: USERS }, (_, i) => `user${i}@bench.example`);
  const ids = await pool(emails, 8, async (email, i) => (await ok(owner, "POST", "/users", { email, password: `pw-${i}-bench`, full_name: `Bench User ${i}` })).user_id as number);
  const users = await pool(emails, 16, async (email, i): Promise<User> => {
    const key = await ok(null, "POST", "/dev_fetch_api_key", { username: email });
    return { id: ids[i]!, email, apiKey: key.api_key };
  });
  const usersSeconds = (performance.now() - t0) / 1000;
  console.log(`${db}: created ${USERS} users in ${usersSeconds.toFixed(1)} s`);

  const reports: (() => void)[] = [];
  if (PARTS.has("idle")) reports.push(await idlePart(pid, owner, users, rssFresh));

  // (b) and (c): fan-out latency, on a fresh server process.
  await stopParley(parley);
  agent.destroy();
  parley = await startParley();
  const fanPid = parley.pid!;
  if (PARTS.has("realm")) reports.push(await realmPart(fanPid, owner, users));
  if (PARTS.has("message")) reports.push(await messagePart(fanPid, owner, users));
  await stopParley(parley);
  agent.destroy();
  if (PARTS.has("realm")) {
    yardstick = await bareRounds();
    agent.destroy();
  }

  // ---- report ---------------------------------------------------------------
  const cpu = os.cpus()[0]?.model ?? "cpu";
  console.log(`\n### ${db}\n`);
  console.log(`Code: ${revision} (at the start of the run; the server is the compiled dist/ from then).`);
  console.log(
    `${os.cpus().length} × ${cpu}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${Math.round((performance.now() - started) / 1000)} s in all, load average ${loadStart.toFixed(1)} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end\n`,
  );
  for (const report of reports) report();
  if (yardstick) summary.yardstick = { p99: percentile(yardstick.all, 99) };
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ database: db, ...summary }, null, 2));
}

/** (a) QUEUES idle long-polls: memory and CPU, then one event wakes them all. Returns the report. */
async function idlePart(pid: number, owner: User, users: User[], rssFresh: number): Promise<() => void> {
  // ---- (a) idle long-polls -------------------------------------------------
  const before = await idleWindow(pid, 3);

  // event_types ["realm"] (and so fetch_event_types too): a small initial
  // state, and one PATCH /realm at the end can wake every poll.
  let t0 = performance.now();
  const queues = await pool(
    Array.from({ length: QUEUES }, (_, i) => users[i % USERS]!),
    32,
    async (user): Promise<Queue> => {
      const body = await ok(user, "POST", "/register", { event_types: ["realm"], queue_lifespan_secs: 3600 });
      return { user, id: body.queue_id, lastEventId: body.last_event_id };
    },
  );
  const registerSeconds = (performance.now() - t0) / 1000;
  console.log(`registered ${QUEUES} queues (${Math.ceil(QUEUES / USERS)} per user) in ${registerSeconds.toFixed(1)} s (${Math.round(QUEUES / registerSeconds)}/s)`);
  const afterQueues = await idleWindow(pid, 3);

  t0 = performance.now();
  const openCpuStart = cpuSeconds(pid);
  const overflowsBefore = listenOverflows();
  const idlePolls = await openPolls(queues, 100, 50);
  const overflows = listenOverflows() - overflowsBefore;
  const openSeconds = (performance.now() - t0) / 1000;
  // No poll should end before the wake-up; if some do, say how and when.
  const ended = new Set<number>();
  const early: string[] = [];
  for (const [i, p] of idlePolls.entries()) {
    void p.then(
      (r) => {
        ended.add(i);
        if (early.length < 5) early.push(`${((r.at - t0) / 1000).toFixed(1)} s: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      },
      (e: unknown) => {
        ended.add(i);
        if (early.length < 5) early.push(`${((performance.now() - t0) / 1000).toFixed(1)} s: ${String(e)}`);
      },
    );
  }
  console.log(`opened ${QUEUES} long-polls in ${openSeconds.toFixed(1)} s; ${IDLE_SECONDS} s idle window in 2 s`);
  // Let the server take in the last requests before measuring.
  await sleep(2000);
  // Server CPU per GET /events taken in (authentication, parameters, the wait set up).
  const cpuPerPollMs = (1000 * (cpuSeconds(pid) - openCpuStart)) / QUEUES;
  const idle = await idleWindow(pid, IDLE_SECONDS);
  const endedBeforeWake = new Set(ended);
  console.log(`idle ${IDLE_SECONDS} s with ${QUEUES} long-polls: RSS ${mb(idle.rssStart)}→${mb(idle.rssEnd)} MB, CPU ${idle.cpuSeconds.toFixed(2)} s (${idle.cpuPercent.toFixed(1)}% of a core); answered before the wake-up: ${endedBeforeWake.size}`);
  if (endedBeforeWake.size > 0) {
    console.log(`${endedBeforeWake.size} polls ended before the wake-up (times since opening began), e.g.:\n  ${early.join("\n  ")}`);
    console.log(`listen-queue overflows so far: ${listenOverflows() - overflowsBefore}`);
  }

  // Every poll still waiting must answer the one realm event.
  const wakeName = "Bench woken";
  const wakeServerCpu = cpuSeconds(pid);
  const wakeBenchCpu = process.cpuUsage();
  const wakeStart = performance.now();
  const patch = call(owner, "PATCH", "/realm", { name: wakeName }).reply;
  // Awaited below; if a poll fails first, this must not become an unhandled rejection that skips the clean-up.
  patch.catch(() => {});
  const wakeReplies = await Promise.all(idlePolls.filter((_, i) => !endedBeforeWake.has(i)));
  const patchReply = await patch;
  const wakeBenchUsage = process.cpuUsage(wakeBenchCpu);
  const wakeCpu = { server: 1000 * (cpuSeconds(pid) - wakeServerCpu), bench: (wakeBenchUsage.user + wakeBenchUsage.system) / 1000 };
  if (patchReply.status !== 200) throw new Error(`PATCH /realm: ${JSON.stringify(patchReply.body)}`);
  const wakeTimes = wakeReplies.map((r) => (realmNameEventId(r, wakeName), r.at - wakeStart)).sort((a, b) => a - b);
  const rssAfterWake = rssMb(pid);
  console.log(
    `one PATCH /realm woke all ${wakeReplies.length} waiting polls: p50 ${ms(percentile(wakeTimes, 50))} ms, p99 ${ms(percentile(wakeTimes, 99))} ms, last ${ms(wakeTimes.at(-1)!)} ms; PATCH answered after ${ms(patchReply.at - wakeStart)} ms; CPU: server ${wakeCpu.server.toFixed(0)} ms, bench ${wakeCpu.bench.toFixed(0)} ms`,
  );

  return () => {
    console.log(`(a) ${QUEUES} queues over ${USERS} users (event_types ["realm"]), one long-poll each; idle windows of 3 s, 3 s and ${IDLE_SECONDS} s\n`);
    console.log("| state of the server process | RSS MB | CPU over the window |");
    console.log("|---|---|---|");
    console.log(`| fresh, before users were created | ${mb(rssFresh)} | |`);
    console.log(`| ${USERS} users created, no queues | ${mb(before.rssEnd)} | ${before.cpuPercent.toFixed(1)}% of a core |`);
    console.log(`| ${QUEUES} queues registered, no polls | ${mb(afterQueues.rssEnd)} | ${afterQueues.cpuPercent.toFixed(1)}% |`);
    console.log(`| ${QUEUES} long-polls waiting (start of window) | ${mb(idle.rssStart)} | |`);
    console.log(`| ${QUEUES} long-polls waiting (after ${IDLE_SECONDS} s idle) | ${mb(idle.rssEnd)} | ${idle.cpuPercent.toFixed(1)}% (${idle.cpuSeconds.toFixed(2)} s CPU) |`);
    console.log(`| after one event woke them all | ${mb(rssAfterWake)} | |`);
    console.log();
    console.log(`RSS growth per queue: ${((1024 * (afterQueues.rssEnd - before.rssEnd)) / QUEUES).toFixed(1)} KB registered, ${((1024 * (idle.rssEnd - afterQueues.rssEnd)) / QUEUES).toFixed(1)} KB more while polled.`);
    console.log(
      `POST /register: ${Math.round(QUEUES / registerSeconds)}/s (32 in flight); opening ${QUEUES} polls: ${openSeconds.toFixed(1)} s (${overflows} listen-queue overflows); polls that ended before the wake-up: ${endedBeforeWake.size}.`,
    );
    console.log(
      `Server CPU per GET /events taken in: ${cpuPerPollMs.toFixed(2)} ms. The heartbeat was off (EVENT_HEARTBEAT_SECONDS=3600); at the default 45 s, ${QUEUES} idle clients would make ${Math.round(QUEUES / 45)} heartbeat replies and new polls a second: about ${((100 * cpuPerPollMs * QUEUES) / 45 / 1000).toFixed(0)}% of a core for taking in the polls alone, before the replies.`,
    );
    console.log(
      `Waking all ${wakeReplies.length} waiting polls with one PATCH /realm: p50 ${ms(percentile(wakeTimes, 50))} ms, p99 ${ms(percentile(wakeTimes, 99))} ms, last ${ms(wakeTimes.at(-1)!)} ms (CPU meanwhile: server ${wakeCpu.server.toFixed(0)} ms, this process ${wakeCpu.bench.toFixed(0)} ms).\n`,
    );
  };
}

/** (b)'s rounds against bench/bare-longpoll.ts, run once Parley has stopped. */
let yardstick: { rounds: Round[]; all: number[] } | undefined;

/** (b) One PATCH /realm per round to FANOUT waiting queues. Returns the report (with the yardstick's rounds, run later). */
async function realmPart(fanPid: number, owner: User, users: User[]): Promise<() => void> {
  // The PATCH /realm alone, with no queue registered: what the fan-out adds to.
  const alone: number[] = [];
  for (let i = 0; i <= ALONE; i++) {
    const start = performance.now();
    const r = await call(owner, "PATCH", "/realm", { name: `Bench alone ${i}` }).reply;
    if (r.status !== 200) throw new Error(`PATCH /realm: ${JSON.stringify(r.body)}`);
    if (i > 0) alone.push(r.at - start);
  }
  alone.sort((a, b) => a - b);
  const fanQueues = await pool(users.slice(0, FANOUT), 32, async (user): Promise<Queue> => {
    const body = await ok(user, "POST", "/register", { event_types: ["realm"], queue_lifespan_secs: 3600 });
    return { user, id: body.queue_id, lastEventId: body.last_event_id };
  });
  const parleyRounds = await fanoutRounds(fanQueues, realmNameTrigger(owner, base), base, fanPid);
  const rssFanout = rssMb(fanPid);
  // Gone before (c), so that its messages meet only its own queues.
  await pool(fanQueues, 32, (q) => ok(q.user, "DELETE", "/events", { queue_id: q.id }));
  return () => {
    console.log(`(b) ${FANOUT} users with one queue each (event_types ["realm"]), all waiting; one PATCH /realm name change per round; time from sending the PATCH to each poll's full reply, measured in this process\n`);
    printRounds(parleyRounds);
    console.log(`\nPATCH /realm with no queue registered, for comparison (${ALONE} in a row): median ${ms(percentile(alone, 50))} ms, max ${ms(alone.at(-1)!)} ms.`);
    console.log(`CPU columns: utime+stime of the server (/proc, ${1000 / CLK_TCK} ms ticks) and of this process (the ${FANOUT} clients) from sending the PATCH to the last reply.`);
    console.log(`Server RSS after the fan-out rounds: ${mb(rssFanout)} MB.\n`);
    console.log(`Yardstick: the same rounds against a bare Fastify app (bench/bare-longpoll.ts) holding ${FANOUT} long-polls and answering them all on PATCH /realm (no auth, no database, no queues)\n`);
    if (yardstick) printRounds(yardstick);
    console.log();
  };
}

/**
 * (c) One POST /messages per round to a channel whose FANOUT subscribers
 * (plus the sender) each have a queue registered for messages with a poll
 * waiting. Returns the report.
 */
async function messagePart(fanPid: number, owner: User, users: User[]): Promise<() => void> {
  const channel = "fan-out bench";
  const members = users.slice(0, FANOUT);
  let t0 = performance.now();
  await ok(owner, "POST", "/users/me/subscriptions", {
    subscriptions: [{ name: channel }],
    principals: [owner.id, ...members.map((u) => u.id)],
    announce: false,
    send_new_subscription_messages: false,
  });
  const subscribeSeconds = (performance.now() - t0) / 1000;
  // POST /messages alone, with no queue registered: what the fan-out adds to.
  const trigger = messageTrigger(owner, channel);
  const alone: number[] = [];
  for (let i = 0; i <= ALONE; i++) {
    const start = performance.now();
    const r = await call(owner, "POST", "/messages", { type: "stream", to: channel, topic: "alone", content: MESSAGE_CONTENT }).reply;
    if (r.status !== 200) throw new Error(`POST /messages: ${JSON.stringify(r.body)}`);
    if (i > 0) alone.push(r.at - start);
  }
  alone.sort((a, b) => a - b);
  t0 = performance.now();
  const queues = await pool(members, 32, async (user): Promise<Queue> => {
    const body = await ok(user, "POST", "/register", { event_types: ["message"], queue_lifespan_secs: 3600 });
    return { user, id: body.queue_id, lastEventId: body.last_event_id };
  });
  const registerSeconds = (performance.now() - t0) / 1000;
  const rounds = await fanoutRounds(queues, trigger, base, fanPid);
  const rss = rssMb(fanPid);
  summary.message = { subscribers: FANOUT + 1, p99: percentile(rounds.all, 99), aloneMedian: percentile(alone, 50), alone };
  return () => {
    console.log(
      `(c) a channel with ${FANOUT + 1} subscribers (subscribed in one request, ${subscribeSeconds.toFixed(1)} s); ${FANOUT} of them with one queue each (event_types ["message"], registered in ${registerSeconds.toFixed(1)} s), all waiting; the owner (subscribed, no queue) sends one ~200-character message with a mention and a link per round, to a new topic each round; time from sending the POST to each poll's full reply\n`,
    );
    printRounds(rounds, "POST");
    console.log(`\nPOST /messages to the same channel with no queue registered (${ALONE} in a row): median ${ms(percentile(alone, 50))} ms, max ${ms(alone.at(-1)!)} ms.`);
    console.log(`Server RSS after the rounds: ${mb(rss)} MB. Compare with (b) and its yardstick above: same machine, same clients, same number of polls.\n`);
  };
}

try {
  await main();
} finally {
  if (running) await stopParley(running);
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropSchema().catch((e: unknown) => console.error(`dropping ${pgSchema}: ${String(e)}`));
}
