// Scale-out on one machine (issue 26): event fan-out and the send rate with
// one Parley process with in-memory event queues (the default), one process
// with its queues in Redis, and two processes sharing Redis — and what Redis
// does per event. In one run, on PostgreSQL (DATABASE_URL, required):
//   (a) fan-out: 1,000 users subscribed to a channel, each with one queue
//       (event_types ["message"]) and one GET /events long-poll waiting,
//       spread over the processes (queue i on process i mod n); one
//       POST /messages through the first process; per poll the time from
//       sending the POST to having the whole reply. One warm-up round, then
//       --rounds. The same rounds against bench/bare-longpoll.ts (a bare
//       Fastify app answering held polls on PATCH /realm) as the yardstick.
//   (b) send rate: POST /messages to a channel with 10 subscribers (as
//       bench/messages.ts), each subscriber with one queue registered and not
//       polled (so every send is a real fan-out to 10 queues); 10 autocannon
//       connections, split evenly between the processes, each aimed at its
//       process's port directly (no load balancer); 2 s warm-up, then
//       --duration s. bench/bare-server.ts at 10 connections as the yardstick.
//   (c) Redis's side: INFO commandstats / stats / cpu deltas over (a)'s
//       rounds (from the POST to the last reply: the fan-out and the polls'
//       reads; and separately the opening of the polls) and over (b)'s
//       measured window, per event.
//
// Processes are the compiled `node dist/cli.js serve`, each an OS process of
// its own, on one PostgreSQL schema (bench_scaleout_<pid>, dropped before and
// after) and, for the Redis cases, one REDIS_KEY_PREFIX per case. By default
// the script starts a private `redis-server` (no persistence) on 127.0.0.1
// so that Redis's counters and CPU are this bench's alone on a shared
// machine; `--redis shared` uses REDIS_URL instead (its deltas then include
// whatever else talks to that server meanwhile).
//
// Usage: npm run bench:scale-out [-- --fanout 1000 --rounds 5 --duration 10 --parts fanout,send --redis private|shared --profile DIR]
//        (npm run build && DATABASE_URL=postgres://… node --import tsx bench/scale-out.ts …)
// --profile DIR runs the first process of the two-process case under
// `node --cpu-prof` (profile written to DIR when it stops) and prints where
// its time went, by function and by file.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { authHeader, call as apiCall, encode, percentile, pool, sleep, waitForHttp, type BenchUser, type Reply } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    fanout: { type: "string", default: "1000" },
    rounds: { type: "string", default: "5" },
    duration: { type: "string", default: "10" },
    port: { type: "string", default: "19981" },
    parts: { type: "string", default: "fanout,send" },
    redis: { type: "string", default: "private" },
    profile: { type: "string" },
  },
});
const FANOUT = Number(values.fanout);
const ROUNDS = Number(values.rounds);
const DURATION = Number(values.duration);
const PORT = Number(values.port);
const PARTS = new Set(values.parts.split(","));
const PG_URL = process.env.DATABASE_URL || "";
if (!PG_URL) throw new Error("bench/scale-out needs DATABASE_URL (PostgreSQL): Redis queues need it, and several processes cannot share SQLite");
if (values.redis !== "private" && values.redis !== "shared") throw new Error("--redis is private or shared");
const cli = path.join(root, "dist", "cli.js");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:scale-out does)");

const pgSchema = `bench_scaleout_${process.pid}`;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-scaleout-"));
const REDIS_PORT = PORT + 10;
const redisUrl = values.redis === "private" ? `redis://127.0.0.1:${REDIS_PORT}` : process.env.REDIS_URL || "redis://127.0.0.1:6379";
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
const baseEnv = {
  ...process.env,
  // One user sends far past the API limits, as in any load test (and as bench/messages.ts runs).
  RATE_LIMITING: "false",
  DATA_DIR: dataDir,
  LOG_LEVEL: "warn",
  DATABASE_URL: PG_URL,
  PG_SCHEMA: pgSchema,
  // No heartbeat may end a waiting poll during the run.
  EVENT_HEARTBEAT_SECONDS: "3600",
  // Only for POST /dev_fetch_api_key: keys without an argon2 login each.
  PARLEY_DEV_MODE: "true",
  REDIS_URL: "",
  REDIS_KEY_PREFIX: "",
};


/** utime + stime of a process, in ms. */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1000;
}

async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/** Every child this script started, stopped on the way out whatever happens. */
const children = new Set<ChildProcess>();


interface Server {
  child: ChildProcess;
  pid: number;
  origin: string;
}

async function startParley(port: number, extraEnv: Record<string, string>, nodeArgs: string[] = []): Promise<Server> {
  const child = spawn(process.execPath, [...nodeArgs, cli, "serve"], { env: { ...baseEnv, ...extraEnv, PORT: String(port) }, stdio: ["ignore", "ignore", "inherit"] });
  children.add(child);
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}/api/v1/server_settings`, child);
  return { child, pid: child.pid!, origin };
}

async function startScript(file: string, port: number, ready: string): Promise<Server> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench", file)], { env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "ignore", "inherit"] });
  children.add(child);
  const origin = `http://127.0.0.1:${port}`;
  await waitForHttp(`${origin}${ready}`, child);
  return { child, pid: child.pid!, origin };
}

// ---------------------------------------------------------------------------
// HTTP clients: node:http, one keep-alive agent, no socket cap (one connection per poll).

const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: Infinity });

type User = BenchUser;

function call(user: User | null, method: string, urlPath: string, params: Record<string, unknown>, origin: string): { reply: Promise<Reply>; written: Promise<void> } {
  return apiCall(agent, user, method, urlPath, params, origin);
}



// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ok(user: User | null, method: string, urlPath: string, params: Record<string, unknown>, origin: string): Promise<any> {
  const { status, body } = await call(user, method, urlPath, params, origin).reply;
  if (status !== 200 || body.result !== "success") throw new Error(`${method} ${urlPath}: ${status} ${JSON.stringify(body)}`);
  return body;
}

const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
const f1 = (n: number) => n.toFixed(1);
const f0 = (n: number) => n.toFixed(0);

// ---------------------------------------------------------------------------
// Redis's counters: one INFO (commandstats, stats, cpu) per snapshot.

interface RedisSnapshot {
  calls: Map<string, number>;
  commands: number;
  inBytes: number;
  outBytes: number;
  cpuMs: number;
  /** The reply to this INFO itself, counted in the next snapshot's output bytes. */
  replyBytes: number;
}

let statsClient: Redis | undefined;

async function redisSnapshot(): Promise<RedisSnapshot> {
  const text = (await statsClient!.call("INFO", "commandstats", "stats", "cpu")) as string;
  const calls = new Map<string, number>();
  const fields = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) calls.set(m[1]!, Number(m[2]));
    else if (line.includes(":")) fields.set(line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1));
  }
  return {
    calls,
    commands: Number(fields.get("total_commands_processed")),
    inBytes: Number(fields.get("total_net_input_bytes")),
    outBytes: Number(fields.get("total_net_output_bytes")),
    cpuMs: 1000 * (Number(fields.get("used_cpu_user")) + Number(fields.get("used_cpu_sys"))),
    replyBytes: Buffer.byteLength(text) + 16,
  };
}

interface RedisCost {
  /** Per command name, calls (scripts' own redis.call()s included: Redis counts them). */
  calls: Map<string, number>;
  /** total_commands_processed: the clients' commands and (Redis 7) those scripts run, the INFO snapshots excluded. */
  commands: number;
  inBytes: number;
  outBytes: number;
  cpuMs: number;
}

/** What happened in Redis between two snapshots, without the snapshots' own INFO. */
function redisDelta(a: RedisSnapshot, b: RedisSnapshot): RedisCost {
  const calls = new Map<string, number>();
  for (const [name, n] of b.calls) {
    const d = n - (a.calls.get(name) ?? 0) - (name === "info" ? 1 : 0);
    if (d > 0) calls.set(name, d);
  }
  return {
    calls,
    commands: b.commands - a.commands - 1,
    // The INFO request (~40 bytes) in, the first snapshot's reply out.
    inBytes: b.inBytes - a.inBytes - 40,
    outBytes: b.outBytes - a.outBytes - a.replyBytes,
    cpuMs: b.cpuMs - a.cpuMs,
  };
}

function addCost(into: RedisCost | undefined, c: RedisCost): RedisCost {
  if (!into) return { ...c, calls: new Map(c.calls) };
  for (const [k, v] of c.calls) into.calls.set(k, (into.calls.get(k) ?? 0) + v);
  into.commands += c.commands;
  into.inBytes += c.inBytes;
  into.outBytes += c.outBytes;
  into.cpuMs += c.cpuMs;
  return into;
}

// ---------------------------------------------------------------------------
// (a) fan-out rounds

interface Queue {
  user: User;
  id: string;
  lastEventId: number;
  /** The process this queue's polls go to. */
  origin: string;
}

async function openPolls(queues: readonly Queue[]): Promise<Promise<Reply>[]> {
  const replies: Promise<Reply>[] = [];
  // 100 at a time with pauses, as bench/events.ts: bursts overflow accept queues.
  for (let i = 0; i < queues.length; i += 100) {
    const written: Promise<void>[] = [];
    for (const q of queues.slice(i, i + 100)) {
      const c = call(q.user, "GET", "/events", { queue_id: q.id, last_event_id: q.lastEventId }, q.origin);
      c.reply.catch(() => {});
      replies.push(c.reply);
      written.push(c.written);
    }
    await Promise.all(written);
    await sleep(50);
  }
  return replies;
}

/**
 * Waits until the servers have taken in every poll just opened: at least
 * 500 ms, then until no server process used CPU over 100 ms (on a loaded
 * machine 500 ms is not enough, and a message sent while polls are still
 * arriving is answered to them without any waiting); with Redis also until
 * Redis has run one open script per poll. At most 10 s.
 */
async function takenIn(pids: number[], redis?: { since: RedisSnapshot; scripts: number }): Promise<void> {
  await sleep(500);
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const before = pids.map(cpuMs);
    await sleep(100);
    const quiet = pids.every((pid, i) => cpuMs(pid) - before[i]! <= 1000 / CLK_TCK);
    // EVAL too: the first call of a script in a fresh Redis is answered NOSCRIPT and sent again as EVAL.
    const calls = redis && redisDelta(redis.since, await redisSnapshot()).calls;
    const opened = !calls || (calls.get("evalsha") ?? 0) + (calls.get("eval") ?? 0) >= redis!.scripts;
    if (quiet && opened) return;
  }
  console.error("  polls not all taken in after 10 s: measuring anyway");
}

/** Busy and total jiffies of the whole machine (/proc/stat). */
function machineTicks(): { busy: number; total: number } {
  const fields = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  // idle and iowait
  return { busy: total - fields[3]! - fields[4]!, total };
}

interface Round {
  p50: number;
  p99: number;
  max: number;
  /** When the sender had its reply. */
  sent: number;
  /** CPU ms of each server process from the POST to the last reply. */
  serverCpu: number[];
  benchCpu: number;
  redisCpu: number;
  /** Server CPU (all processes) per GET /events taken in, ms. */
  openCpuPerPoll: number;
}

interface FanoutResult {
  rounds: Round[];
  all: number[];
  /** Redis from the POST to the last reply (the fan-out and the woken polls' reads), summed over the counted rounds. */
  wake?: RedisCost;
  /** Redis while the polls were being opened (GET /events taken in), summed over the counted rounds. */
  open?: RedisCost;
}

const MESSAGE_CONTENT =
  "@**Bench User 3** the deploy of build 4512 failed again on the staging cluster; logs are at https://ci.example.com/builds/4512/log?step=deploy — can you look before the 15:00 sync? I think it is the new cache config.";

interface Trigger {
  send(round: number): Promise<Reply>;
  /** Checks a poll's reply carries the round's event; returns the queue's new last event ID. */
  check(reply: Reply, sent: Reply, round: number): number;
}

function messageTrigger(sender: User, channel: string, origin: string): Trigger {
  return {
    send: (round) => call(sender, "POST", "/messages", { type: "stream", to: channel, topic: `fan-out round ${round}`, content: MESSAGE_CONTENT }, origin).reply,
    check: (reply, sent) => {
      if (reply.status !== 200 || reply.body.result !== "success") throw new Error(`poll failed: ${reply.status} ${JSON.stringify(reply.body)}`);
      if (sent.status !== 200) throw new Error(`POST /messages: ${sent.status} ${JSON.stringify(sent.body)}`);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      if (!(reply.body.events as any[]).some((e) => e.type === "message" && e.message?.id === sent.body.id)) {
        throw new Error(`expected message ${sent.body.id}, got ${JSON.stringify(reply.body.events).slice(0, 300)}`);
      }
      return Math.max(...reply.body.events.map((e: { id: number }) => e.id));
    },
  };
}

function realmTrigger(origin: string): Trigger {
  return {
    send: (round) => call(null, "PATCH", "/realm", { name: `Bench round ${round}` }, origin).reply,
    check: (reply, _sent, round) => {
      if (reply.body.events?.[0]?.value !== `Bench round ${round}`) throw new Error(`bare poll: ${JSON.stringify(reply.body)}`);
      return 0;
    },
  };
}

async function fanoutRounds(queues: Queue[], trigger: Trigger, pids: number[], withRedis: boolean): Promise<FanoutResult> {
  const result: FanoutResult = { rounds: [], all: [] };
  for (let round = 0; round <= ROUNDS; round++) {
    const openStart = withRedis ? await redisSnapshot() : undefined;
    const openCpuStart = pids.map(cpuMs);
    const polls = await openPolls(queues);
    await takenIn(pids, withRedis && openStart ? { since: openStart, scripts: queues.length } : undefined);
    const openEnd = withRedis ? await redisSnapshot() : undefined;
    const cpuStart = pids.map(cpuMs);
    const openCpu = cpuStart.reduce((sum, c, i) => sum + c - openCpuStart[i]!, 0);
    const benchStart = process.cpuUsage();
    const start = performance.now();
    const sending = trigger.send(round);
    sending.catch(() => {});
    const replies = await Promise.all(polls);
    const sent = await sending;
    const serverCpu = pids.map((pid, i) => cpuMs(pid) - cpuStart[i]!);
    const bench = process.cpuUsage(benchStart);
    // Let the sender's own trailing Redis work (nothing should be left) land before the snapshot.
    const wakeEnd = withRedis ? await redisSnapshot() : undefined;
    const times = replies.map((r, i) => {
      queues[i]!.lastEventId = trigger.check(r, sent, round);
      return r.at - start;
    });
    if (round === 0) continue;
    times.sort((a, b) => a - b);
    result.all.push(...times);
    let redisCpu = 0;
    if (openStart && openEnd && wakeEnd) {
      const wake = redisDelta(openEnd, wakeEnd);
      redisCpu = wake.cpuMs;
      result.wake = addCost(result.wake, wake);
      result.open = addCost(result.open, redisDelta(openStart, openEnd));
    }
    result.rounds.push({ p50: percentile(times, 50), p99: percentile(times, 99), max: times.at(-1)!, sent: sent.at - start, serverCpu, benchCpu: (bench.user + bench.system) / 1000, redisCpu, openCpuPerPoll: openCpu / queues.length });
  }
  result.all.sort((a, b) => a - b);
  return result;
}

// ---------------------------------------------------------------------------
// (b) send rate

interface SendResult {
  rps: number;
  p50: number;
  p99: number;
  /** Server CPU ms per send, per process, over the measured window. */
  cpuPerSend: number[];
  redis?: RedisCost;
  sends: number;
  /** Share of the whole machine's CPU time (all cores) that was busy over the window: everyone's work, not only this bench's. */
  machineBusy: number;
  /** This process's CPU (autocannon) per send, ms. */
  benchCpuPerSend: number;
}

function sendOptions(owner: User, channel: string, origin: string, connections: number, duration: number): autocannon.Options {
  const bodies = Array.from({ length: 20 }, (_, t) => encode({ type: "stream", to: channel, topic: `release checklist ${t}`, content: MESSAGE_CONTENT }));
  let next = 0;
  return {
    url: origin,
    connections,
    duration,
    timeout: 60,
    requests: [
      {
        method: "POST",
        path: "/api/v1/messages",
        headers: { authorization: authHeader(owner), "content-type": "application/x-www-form-urlencoded" },
        setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length]! }),
      },
    ],
  };
}

/** 10 connections split evenly over the processes' ports, all at once; latencies are the connections' pooled percentiles (per-instance p50/p99 averaged, weighted by requests). */
async function sendRate(owner: User, channel: string, servers: Server[], withRedis: boolean): Promise<SendResult> {
  const per = 10 / servers.length;
  const run = (duration: number) => Promise.all(servers.map((s) => autocannon(sendOptions(owner, channel, s.origin, per, duration))));
  await run(2);
  const cpuStart = servers.map((s) => cpuMs(s.pid));
  const ticks = machineTicks();
  const benchStart = process.cpuUsage();
  const before = withRedis ? await redisSnapshot() : undefined;
  const results = await run(DURATION);
  const after = withRedis ? await redisSnapshot() : undefined;
  const cpu = servers.map((s, i) => cpuMs(s.pid) - cpuStart[i]!);
  const ticksEnd = machineTicks();
  const bench = process.cpuUsage(benchStart);
  for (const r of results) if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) throw new Error(`send: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
  const sends = results.reduce((n, r) => n + r.requests.total, 0);
  const weighted = (pick: (r: autocannon.Result) => number) => results.reduce((n, r) => n + pick(r) * r.requests.total, 0) / sends;
  return {
    rps: sends / DURATION,
    p50: weighted((r) => r.latency.p50),
    p99: weighted((r) => r.latency.p99),
    cpuPerSend: cpu.map((c) => c / sends),
    redis: before && after ? redisDelta(before, after) : undefined,
    sends,
    machineBusy: (ticksEnd.busy - ticks.busy) / (ticksEnd.total - ticks.total),
    benchCpuPerSend: (bench.user + bench.system) / 1000 / sends,
  };
}

// ---------------------------------------------------------------------------
// CPU profile summary (--profile)

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

function summarizeProfile(file: string): string[] {
  const prof = JSON.parse(fs.readFileSync(file, "utf8")) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
  let total = 0;
  let idle = 0;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    total += us;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    const rel = url.replace(/^file:\/\//, "").replace(`${root}/`, "");
    // node_modules may be a symlink to a shared install elsewhere: name the package, not the path.
    const inModules = rel.lastIndexOf("node_modules/");
    const pkg = inModules >= 0 ? rel.slice(inModules) : "";
    const area = !url ? functionName : pkg ? pkg.split("/").slice(0, pkg.startsWith("node_modules/@") ? 3 : 2).join("/") : rel.startsWith("node:") ? "node: internals" : rel;
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    const key = `${functionName || "(anonymous)"} ${rel}:${lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  const busy = total - idle;
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `| ${k.replace(/\|/g, "\\|")} | ${f0(us / 1000)} | ${f1((100 * us) / busy)}% |`);
  return [
    `Profile ${path.basename(file)}: ${f0(total / 1000)} ms sampled, ${f0(busy / 1000)} ms busy (not idle).`,
    "",
    "| where (self time, by file or package) | ms | share of busy |",
    "|---|---|---|",
    ...top(byArea, 15),
    "",
    "| function (self time) | ms | share of busy |",
    "|---|---|---|",
    ...top(byFunction, 20),
  ];
}

// ---------------------------------------------------------------------------

const dropSchema = () => dropPgSchema(PG_URL, pgSchema);

/** Removes this run's keys (its prefixes) from Redis. */
async function dropRedisKeys(prefix: string): Promise<void> {
  if (!statsClient) return;
  let cursor = "0";
  do {
    const [next, keys] = await statsClient.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    if (keys.length > 0) await statsClient.del(...keys);
  } while (cursor !== "0");
}

interface Case {
  name: string;
  processes: number;
  redis: boolean;
}

const CASES: Case[] = [
  { name: "1 process, in-memory queues", processes: 1, redis: false },
  { name: "1 process, Redis queues", processes: 1, redis: true },
  { name: "2 processes, Redis queues", processes: 2, redis: true },
];

interface CaseResult {
  c: Case;
  fanout?: FanoutResult;
  send?: SendResult;
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadStart = os.loadavg();
  const revision = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
  let redisServer: ChildProcess | undefined;
  if (values.redis === "private") {
    redisServer = spawn("redis-server", ["--port", String(REDIS_PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    children.add(redisServer);
    for (let i = 0; ; i++) {
      try {
        const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        // Refused until redis-server listens: the rejected connect() says so, the event need not.
        probe.on("error", () => {});
        await probe.connect();
        await probe.quit();
        break;
      } catch (error) {
        if (i > 100) throw error;
        await sleep(50);
      }
    }
  }
  statsClient = new Redis(redisUrl);
  const redisVersion = /redis_version:(\S+)/.exec((await statsClient.info("server")) as string)?.[1];
  const prefixes: string[] = [];
  try {
    await dropSchema();
    const init = JSON.parse(
      execFileSync(process.execPath, [cli, "init", "--org-name", "Bench", "--owner-email", "owner@bench.example", "--owner-password", "bench-owner-pw", "--json"], { env: baseEnv }).toString(),
    ) as { user_id: number; email: string; api_key: string };
    const owner: User = { id: init.user_id, email: init.email, apiKey: init.api_key };

    // The organization, once, through a single in-memory process.
    let setup: Server | undefined = await startParley(PORT, {});
    let t0 = performance.now();
    const emails = Array.from({ length: FANOUT }, (_, i) => `user${i}@bench.example`);
    const ids = await pool(emails, 8, async (email, i) => (await ok(owner, "POST", "/users", { email, password: `pw-${i}-bench`, full_name: `Bench User ${i}` }, setup!.origin)).user_id as number);
    const users = await pool(emails, 16, async (email, i): Promise<User> => ({ id: ids[i]!, email, apiKey: (await ok(null, "POST", "/dev_fetch_api_key", { username: email }, setup!.origin)).api_key }));
    console.error(`created ${FANOUT} users in ${f1((performance.now() - t0) / 1000)} s`);
    const fanChannel = "fan-out bench";
    const sendChannel = "send bench";
    const subscribe = (name: string, principals: number[]) =>
      ok(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals, announce: false, send_new_subscription_messages: false }, setup!.origin);
    await subscribe(fanChannel, [owner.id, ...users.map((u) => u.id)]);
    // 10 subscribers, as bench/messages.ts: the owner and nine users.
    const sendMembers = users.slice(0, 9);
    await subscribe(sendChannel, [owner.id, ...sendMembers.map((u) => u.id)]);
    t0 = performance.now();

    const results: CaseResult[] = [];
    for (const [caseIndex, c] of CASES.entries()) {
      const prefix = `bench-scaleout-${process.pid}-${caseIndex}:`;
      const extra: Record<string, string> = c.redis ? { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix } : {};
      if (c.redis) prefixes.push(prefix);
      let servers: Server[];
      if (caseIndex === 0 && setup) {
        servers = [setup];
      } else {
        servers = [];
        for (let i = 0; i < c.processes; i++) {
          const profile = values.profile && c.processes === 2 && i === 0 ? ["--cpu-prof", `--cpu-prof-dir=${values.profile}`] : [];
          servers.push(await startParley(PORT + i, extra, profile));
        }
      }
      setup = undefined;
      const pids = servers.map((s) => s.pid);
      const result: CaseResult = { c };
      console.error(`${c.name}: ${pids.join(", ")}`);

      if (PARTS.has("fanout")) {
        // Queue i is registered and polled on process i mod n: in Redis any process serves any queue.
        const queues = await pool(users, 32, async (user, i): Promise<Queue> => {
          const origin = servers[i % servers.length]!.origin;
          const body = await ok(user, "POST", "/register", { event_types: ["message"], queue_lifespan_secs: 3600 }, origin);
          return { user, id: body.queue_id, lastEventId: body.last_event_id, origin };
        });
        result.fanout = await fanoutRounds(queues, messageTrigger(owner, fanChannel, servers[0]!.origin), pids, c.redis);
        await pool(queues, 32, (q) => ok(q.user, "DELETE", "/events", { queue_id: q.id }, q.origin));
        console.error(`  fan-out p50 ${f1(percentile(result.fanout.all, 50))} ms, p99 ${f1(percentile(result.fanout.all, 99))} ms`);
      }
      if (PARTS.has("send")) {
        const sendQueues = await Promise.all(
          sendMembers.map((user, i) => ok(user, "POST", "/register", { event_types: ["message"], queue_lifespan_secs: 3600 }, servers[i % servers.length]!.origin)),
        );
        result.send = await sendRate(owner, sendChannel, servers, c.redis);
        await Promise.all(sendQueues.map((q, i) => ok(sendMembers[i]!, "DELETE", "/events", { queue_id: q.queue_id }, servers[i % servers.length]!.origin)));
        console.error(`  send ${f0(result.send.rps)}/s`);
      }
      for (const s of servers) await stop(s.child);
      agent.destroy();
      results.push(result);
    }

    // Yardsticks.
    let bareFanout: FanoutResult | undefined;
    let bareSend: autocannon.Result | undefined;
    if (PARTS.has("fanout")) {
      const bare = await startScript("bare-longpoll.ts", PORT + 2, "/api/v1/server_settings");
      const queues = users.map((user, i): Queue => ({ user, id: `bare-${i}`, lastEventId: -1, origin: bare.origin }));
      bareFanout = await fanoutRounds(queues, realmTrigger(bare.origin), [bare.pid], false);
      await stop(bare.child);
      agent.destroy();
    }
    if (PARTS.has("send")) {
      const bare = await startScript("bare-server.ts", PORT + 3, "/bare");
      await autocannon({ url: `${bare.origin}/bare`, connections: 10, duration: 2 });
      bareSend = await autocannon({ url: `${bare.origin}/bare`, connections: 10, duration: DURATION });
      await stop(bare.child);
    }

    // ---- report ---------------------------------------------------------------
    const out: string[] = [];
    const cpu = os.cpus();
    out.push(`### Run of ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC`, "");
    out.push(
      `Code ${revision}; ${cpu.length} × ${cpu[0]?.model ?? "cpu"} (nproc ${os.availableParallelism()}), ${f0(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, Redis ${redisVersion} (${values.redis === "private" ? "a private redis-server started by the script" : `shared, ${redisUrl}`}), PostgreSQL on the same machine. Load average ${loadStart.map(f1).join(" / ")} (1/5/15 min) at the start, ${os.loadavg().map(f1).join(" / ")} at the end; ${f0((performance.now() - started) / 1000)} s in all.`,
      "",
    );
    if (PARTS.has("fanout")) {
      out.push(
        `(a) Fan-out: one POST /messages (through the first process) to a channel with ${FANOUT + 1} subscribers, ${FANOUT} of them with a queue and a GET /events waiting (queue i on process i mod n); time from sending the POST to each poll's whole reply; ${ROUNDS} rounds after one warm-up. Server CPU: utime+stime per process (/proc, ${1000 / CLK_TCK} ms ticks), from the POST to the last reply; medians over the rounds.`,
        "",
        "| case | p50 ms | p99 ms | max ms | p50 / yardstick's | sender's reply ms (median) | server CPU ms per round (median, per process) | Redis CPU ms per round (median) | clients' CPU ms per round (median) | server CPU µs per poll taken in (median) |",
        "|---|---|---|---|---|---|---|---|---|---|",
      );
      const yard50 = bareFanout ? percentile(bareFanout.all, 50) : NaN;
      const row = (name: string, r: FanoutResult) =>
        `| ${name} | ${f1(percentile(r.all, 50))} | ${f1(percentile(r.all, 99))} | ${f1(r.all.at(-1)!)} | ${(percentile(r.all, 50) / yard50).toFixed(2)} | ${f1(median(r.rounds.map((x) => x.sent)))} | ${r.rounds[0]!.serverCpu.map((_, i) => f0(median(r.rounds.map((x) => x.serverCpu[i]!)))).join(" + ")} | ${r.wake ? f1(median(r.rounds.map((x) => x.redisCpu))) : "–"} | ${f0(median(r.rounds.map((x) => x.benchCpu)))} | ${f0(1000 * median(r.rounds.map((x) => x.openCpuPerPoll)))} |`;
      if (bareFanout) out.push(row("bare long-poll yardstick (bench/bare-longpoll.ts, PATCH /realm)", bareFanout));
      for (const r of results) if (r.fanout) out.push(row(r.c.name, r.fanout));
      out.push("", "Per round (p50 / p99 ms):", "");
      out.push(`| case | ${Array.from({ length: ROUNDS }, (_, i) => `round ${i + 1}`).join(" | ")} |`, `|---|${"---|".repeat(ROUNDS)}`);
      if (bareFanout) out.push(`| yardstick | ${bareFanout.rounds.map((x) => `${f0(x.p50)} / ${f0(x.p99)}`).join(" | ")} |`);
      for (const r of results) if (r.fanout) out.push(`| ${r.c.name} | ${r.fanout.rounds.map((x) => `${f0(x.p50)} / ${f0(x.p99)}`).join(" | ")} |`);
      out.push("");
    }
    if (PARTS.has("send")) {
      out.push(
        `(b) Send rate: POST /messages (~200 characters, a mention and a link, 20 topics in turn) to a channel with 10 subscribers, each with one queue registered and not polled; 10 connections split evenly over the processes, each straight to its process's port (no load balancer); 2 s warm-up, then ${DURATION} s. Latencies are the per-connection-group percentiles weighted by requests.`,
        "",
        "| case | sends/s | ratio to bare route | ratio to 1 process in-memory | p50 ms | p99 ms | server CPU ms per send (per process) | Redis CPU µs per send | autocannon CPU ms per send | machine busy (all cores, everyone) |",
        "|---|---|---|---|---|---|---|---|---|---|",
      );
      const bareRps = bareSend ? bareSend.requests.total / DURATION : NaN;
      if (bareSend) out.push(`| bare Fastify route (bench/bare-server.ts, GET) | ${f0(bareRps)} | 1.000 | | ${bareSend.latency.p50} | ${bareSend.latency.p99} | | | | |`);
      const memRps = results[0]?.send?.rps ?? NaN;
      for (const r of results) {
        if (!r.send) continue;
        const s = r.send;
        out.push(
          `| ${r.c.name} | ${f0(s.rps)} | ${(s.rps / bareRps).toFixed(3)} | ${(s.rps / memRps).toFixed(2)} | ${f1(s.p50)} | ${f1(s.p99)} | ${s.cpuPerSend.map((x) => x.toFixed(2)).join(" + ")} | ${s.redis ? f0((1000 * s.redis.cpuMs) / s.sends) : "–"} | ${s.benchCpuPerSend.toFixed(2)} | ${f0(100 * s.machineBusy)}% |`,
        );
      }
      out.push("");
    }
    // (c) Redis per event.
    const costRows: string[] = [];
    const costRow = (label: string, cost: RedisCost, events: number) => {
      const top = [...cost.calls]
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${(v / events).toFixed(v / events < 10 ? 1 : 0)}`)
        .join(", ");
      costRows.push(
        `| ${label} | ${f0(cost.commands / events)} | ${top} | ${f0(cost.inBytes / events)} | ${f0(cost.outBytes / events)} | ${f0((1000 * cost.cpuMs) / events)} |`,
      );
    };
    for (const r of results) {
      if (r.fanout?.wake) costRow(`${r.c.name}: (a) one message to ${FANOUT} waiting polls, POST to last reply`, r.fanout.wake, ROUNDS);
      if (r.fanout?.open) costRow(`${r.c.name}: (a) opening the ${FANOUT} polls of a round`, r.fanout.open, ROUNDS);
      if (r.send?.redis) costRow(`${r.c.name}: (b) one send to 10 queues (not polled)`, r.send.redis, r.send.sends);
    }
    if (costRows.length > 0) {
      out.push(
        "(c) Redis per event, from INFO deltas (this script's INFO calls taken out). 'Commands' is total_commands_processed, which in Redis 7 counts both what clients sent (EVALSHA, SMEMBERS, HMGET, PUBLISH: the round trips' contents) and the commands scripts run inside Redis (EXISTS, HINCRBY, XADD, XRANGE, …); the calls by command say which. Bytes are Redis's network input and output (output includes pub/sub messages to every subscribed process). CPU is used_cpu_user+used_cpu_sys.",
        "",
        "| what (per event) | commands | calls by command | bytes in | bytes out | Redis CPU µs |",
        "|---|---|---|---|---|---|",
        ...costRows,
        "",
      );
    }
    console.log(out.join("\n"));
  } finally {
    for (const p of prefixes) await dropRedisKeys(p).catch((e: unknown) => console.error(`dropping ${p}*: ${String(e)}`));
    statsClient.disconnect();
    for (const child of children) if (child !== redisServer) await stop(child);
    await stop(redisServer);
    if (values.profile) {
      for (const file of fs.readdirSync(values.profile).filter((f) => f.endsWith(".cpuprofile"))) console.log(summarizeProfile(path.join(values.profile, file)).join("\n"), "\n");
    }
  }
}

try {
  await main();
} finally {
  agent.destroy();
  for (const child of children) await stop(child);
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropSchema().catch((e: unknown) => console.error(`dropping ${pgSchema}: ${String(e)}`));
}
