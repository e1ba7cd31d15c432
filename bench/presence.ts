// Presence against DESIGN.md's budget: "10,000 users pinging once a minute
// cost under 5% of a core", and issue 28's 50,000 online users in one
// organization on one process (--users 50000).
//
// Runs the compiled `parley serve` (LOG_LEVEL=warn, RATE_LIMITING=false) on a
// fresh database — a temporary SQLite directory, or with DATABASE_URL the
// PostgreSQL schema bench_presence, dropped before and after — and
// bench/bare-server.ts as the yardstick, each as its own process, and drives
// both from this one with plain node:http (one keep-alive agent).
//
// Seeding (SQL through the project's storage layer, before the server starts):
// --users members with API keys, and for each a presence row as a client that
// pinged a minute ago leaves it (both times 60 s old, last_update_id in the
// order of those pings). That is the steady state of an organization whose
// users all have a client open: every ping now moves the row (it is more than
// 55 s old) and none is "coming back online" (130 s), so no ping is free and
// none sends an event — the common case, measured.
//
// Parts (--parts, all by default):
//   ping   POST /users/me/presence status=active ping_only=true
//          new_user_input=true, each from a different user, paced at
//          users/60 per second (10,000 users: 166.7/s) for --duration
//          seconds: the rate 10,000 users pinging once a minute make. The
//          server's CPU over the window (utime+stime of its process, from
//          /proc) divided by the wall time is the share of a core the pings
//          cost. The same number of requests at the same pace is then sent to
//          the bare Fastify route, and its process's CPU measured the same way.
//          Rows written are those whose last_update_id passed the sequence's
//          value at the start; transactions, the sequence's moves (each write
//          transaction bumps it once: the sequence bump, one INSERT or UPDATE
//          for the batch's rows). Then the same
//          users ping again at the same pace (their second clients, within the
//          minute): rows only read, nothing written.
//   poll   the same report with last_update_id (the modern protocol Zulip's
//          web app speaks), each user sending the number it got a minute ago:
//          the reply holds everyone who pinged since, i.e. the whole
//          organization. Too heavy to run at 166.7/s, so it runs at
//          --poll-rate per second for --poll-duration seconds and the CPU per
//          request is scaled to --users a minute (every user's client
//          polling once a minute).
//   legacy the same without last_update_id (zulip-terminal, and the mobile app
//          today, which send none): the legacy format (or with slim_presence
//          the modern one) of everyone seen in 14 days; as `poll`.
//
// --warm-auth: before the ping window, each of its users makes one
// GET /users/me/alert_words (not measured), as a process that has served
// them for a minute has authenticated them: the steady state of the row
// cache (src/storage/row-cache.ts). Without it each user's first ping in
// the window is its first request to this process.
//
// Usage: npm run bench:presence [-- --users 10000 --duration 30 --parts ping,poll,legacy --poll-rate 2 --poll-duration 10 --warm-auth]
//        npm run bench:presence -- --users 50000 --duration 10   (one organization of 50,000 online users)
//        DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:presence
// BENCH_SERVER_NODE_ARGS passes node options to the server only (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof").
// --server <dist dir> runs that compiled server instead of this checkout's
// dist/ (bench/issue28.ts: another revision), and seeds through that
// server's own storage layer, so its database has its migrations and no
// others; --pg-schema names the schema; --json <file> writes the rows there.
import crypto from "node:crypto";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type Storage } from "../src/storage/database.ts";
import { waitForHttp } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    users: { type: "string", default: "10000" },
    duration: { type: "string", default: "30" },
    parts: { type: "string", default: "ping,poll,legacy" },
    "poll-rate": { type: "string", default: "2" },
    "poll-duration": { type: "string", default: "10" },
    port: { type: "string", default: "19995" },
    server: { type: "string" },
    "pg-schema": { type: "string" },
    json: { type: "string" },
    "warm-auth": { type: "boolean", default: false },
  },
});
const USERS = Number(values.users);
const DURATION = Number(values.duration);
const PARTS = new Set(values.parts.split(","));
const POLL_RATE = Number(values["poll-rate"]);
const POLL_DURATION = Number(values["poll-duration"]);
const PORT = Number(values.port);
const BARE_PORT = PORT + 1;
/** The rate of `USERS` users pinging once a minute. */
const PING_RATE = USERS / 60;
const WARMUP = 200;

const pingCount = Math.round(PING_RATE * DURATION);
const pollCount = Math.round(POLL_RATE * POLL_DURATION);
const needed = WARMUP + (PARTS.has("ping") ? pingCount : 0) + (PARTS.has("poll") ? pollCount : 0) + (PARTS.has("legacy") ? pollCount : 0);
// A user's second ping comes one ping window after the first: within 55 s it writes nothing.
if (DURATION > 50) throw new Error("--duration is at most 50 s (each user's second ping must come within 55 s of the first)");
if (needed > USERS) throw new Error(`${needed} distinct users needed (warm-up, ${pingCount} pings, polls): raise --users or lower --duration`);

const serverDir = values.server ? path.resolve(values.server) : undefined;
const cli = path.join(serverDir ?? path.join(root, "dist"), "cli.js");
/** A module of the server measured: its compiled .js with --server, else this checkout's source. */
const serverModule = (name: string) => (serverDir ? path.join(serverDir, `${name}.js`) : path.join(root, "src", `${name}.ts`));
const { Role } = (await import(serverModule("domain/roles"))) as typeof import("../src/domain/roles.ts");
const { directSystemGroupsForRole } = (await import(serverModule("domain/system-groups"))) as typeof import("../src/domain/system-groups.ts");
const { EmailVisibility } = (await import(serverModule("domain/users"))) as typeof import("../src/domain/users.ts");
const { openStorage } = (await import(serverModule("storage/database"))) as typeof import("../src/storage/database.ts");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:presence does)");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-presence-"));
const PG_URL = process.env.DATABASE_URL || "";
const pgSchema = PG_URL ? (values["pg-schema"] ?? "bench_presence") : "";
const env = {
  ...process.env,
  // One process driving 10,000 users is far past the API limits, as in any load test.
  RATE_LIMITING: "false",
  DATA_DIR: dataDir,
  PORT: String(PORT),
  LOG_LEVEL: "warn",
  DATABASE_URL: PG_URL,
  PG_SCHEMA: pgSchema,
};
const base = `http://127.0.0.1:${PORT}`;
const CLK_TCK = Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const dropSchema = () => dropPgSchema(PG_URL, pgSchema);

function openBenchStorage(): Promise<Storage> {
  return PG_URL ? openStorage({ databaseUrl: PG_URL, pgSchema }) : openStorage({ sqlitePath: path.join(dataDir, "parley.sqlite3") });
}

/** utime and stime of a process, in seconds (10 ms ticks). */
function cpuTimes(pid: number): { user: number; system: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { user: Number(fields[11]) / CLK_TCK, system: Number(fields[12]) / CLK_TCK };
}


const children: ChildProcess[] = [];
function start(args: string[], childEnv: NodeJS.ProcessEnv): ChildProcess {
  const nodeArgs = args[0] === cli ? (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean) : [];
  const child = spawn(process.execPath, [...nodeArgs, ...args], { env: childEnv, stdio: ["ignore", "ignore", "inherit"] });
  children.push(child);
  return child;
}

// ---------------------------------------------------------------------------
// Seeding

interface BenchUser {
  id: number;
  email: string;
  apiKey: string;
  /** The last_update_id of the user's seeded row: what its client got a minute ago. */
  lastUpdateId: number;
}

async function seedUsers(): Promise<BenchUser[]> {
  const storage = await openBenchStorage();
  try {
    const db = storage.db;
    const realm = await db.selectFrom("realms").select(["id"]).executeTakeFirstOrThrow();
    const groups = await db.selectFrom("user_groups").select(["id", "name"]).where("realm_id", "=", realm.id).where("is_system_group", "=", true).execute();
    const groupIds = directSystemGroupsForRole(Role.MEMBER, true).map((name) => groups.find((g) => g.name === name)!.id);
    const now = Math.floor(Date.now() / 1000);
    const users: BenchUser[] = [];
    const CHUNK = 500;
    for (let i = 0; i < USERS; i += CHUNK) {
      const rows = [];
      for (let j = i; j < Math.min(USERS, i + CHUNK); j++) {
        const email = `presence${j}@example.com`;
        rows.push({
          realm_id: realm.id,
          email,
          delivery_email: email,
          email_key: email,
          delivery_email_key: email,
          full_name: `Presence User ${j}`,
          password_hash: null,
          api_key: crypto.randomBytes(16).toString("hex"),
          role: Role.MEMBER,
          is_active: true,
          is_bot: false,
          bot_type: null,
          bot_owner_id: null,
          is_system_bot: false,
          timezone: "",
          avatar_source: "G",
          avatar_version: 1,
          email_address_visibility: EmailVisibility.EVERYONE,
          date_joined: now - 86400,
          settings: "{}",
        });
      }
      const inserted = await db.insertInto("users").values(rows).returning(["id", "email", "api_key"]).execute();
      await db
        .insertInto("user_group_members")
        .values(inserted.flatMap((u) => groupIds.map((g) => ({ group_id: g, user_id: u.id }))))
        .execute();
      for (const u of inserted) users.push({ id: u.id, email: u.email, apiKey: u.api_key, lastUpdateId: 0 });
    }
    return users;
  } finally {
    await storage.close();
  }
}

/** Every user pinged a minute ago, in order: rows 60 s old, numbered 1..N. */
async function seedPresence(users: BenchUser[]): Promise<void> {
  const storage = await openBenchStorage();
  try {
    const db = storage.db;
    const realm = await db.selectFrom("realms").select(["id"]).executeTakeFirstOrThrow();
    const minuteAgo = Math.floor(Date.now() / 1000) - 60;
    const CHUNK = 1000;
    for (let i = 0; i < users.length; i += CHUNK) {
      const rows = users.slice(i, i + CHUNK).map((u, k) => {
        u.lastUpdateId = i + k + 1;
        return { user_id: u.id, realm_id: realm.id, last_connected_time: minuteAgo, last_active_time: minuteAgo, last_update_id: u.lastUpdateId };
      });
      await db.insertInto("user_presence").values(rows).execute();
    }
    // The organization was created after the migration: its sequence row does not exist yet.
    await db
      .insertInto("presence_sequences")
      .values({ realm_id: realm.id, last_update_id: users.length })
      .onConflict((oc) => oc.column("realm_id").doUpdateSet({ last_update_id: users.length }))
      .execute();
  } finally {
    await storage.close();
  }
}

/** The organization's presence sequence: it moves once per write transaction. */
async function sequenceValue(): Promise<number> {
  const storage = await openBenchStorage();
  try {
    const row = await storage.db.selectFrom("presence_sequences").select("last_update_id").executeTakeFirstOrThrow();
    return Number(row.last_update_id);
  } finally {
    await storage.close();
  }
}

/** Presence rows written since the sequence stood at `since`. */
async function rowsWrittenSince(since: number): Promise<number> {
  const storage = await openBenchStorage();
  try {
    const row = await storage.db
      .selectFrom("user_presence")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("last_update_id", ">", since)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  } finally {
    await storage.close();
  }
}

// ---------------------------------------------------------------------------
// Load

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

interface Reply {
  status: number;
  bytes: number;
  ms: number;
}

function request(origin: string, method: string, urlPath: string, user: BenchUser | null, params: Record<string, string>): Promise<Reply> {
  const body = new URLSearchParams(params).toString();
  const headers: Record<string, string> = {};
  if (user) headers.authorization = `Basic ${Buffer.from(`${user.email}:${user.apiKey}`).toString("base64")}`;
  if (method !== "GET") {
    headers["content-type"] = "application/x-www-form-urlencoded";
    headers["content-length"] = String(Buffer.byteLength(body));
  }
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${origin}${urlPath}`, { method, headers, agent }, (res) => {
      let bytes = 0;
      res.on("data", (c: Buffer) => (bytes += c.length));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(method === "GET" ? undefined : body);
  });
}

interface Window {
  requests: number;
  wallSeconds: number;
  cpuSeconds: number;
  /** Of which in the kernel (stime): system calls, fsync included. */
  systemSeconds: number;
  p50: number;
  p99: number;
  meanBytes: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Sends `count` requests at `rate` per second (open loop: not waiting for replies), measuring `pid`'s CPU until the last reply. */
async function paced(pid: number, count: number, rate: number, send: (i: number) => Promise<Reply>): Promise<Window> {
  const cpuStart = cpuTimes(pid);
  const t0 = performance.now();
  const replies: Promise<Reply>[] = [];
  for (let i = 0; i < count; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    replies.push(send(i));
  }
  const done = await Promise.all(replies);
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpuEnd = cpuTimes(pid);
  const system = cpuEnd.system - cpuStart.system;
  const cpu = cpuEnd.user - cpuStart.user + system;
  const failed = done.filter((r) => r.status !== 200);
  if (failed.length > 0) throw new Error(`${failed.length} requests failed (HTTP ${failed[0]!.status})`);
  const ms = done.map((r) => r.ms).sort((a, b) => a - b);
  return { requests: count, wallSeconds, cpuSeconds: cpu, systemSeconds: system, p50: percentile(ms, 50), p99: percentile(ms, 99), meanBytes: done.reduce((s, r) => s + r.bytes, 0) / count };
}

// ---------------------------------------------------------------------------

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
const f3 = (n: number) => n.toFixed(3);

await dropSchema();
try {
  const init = JSON.parse(
    execFileSync(process.execPath, [cli, "init", "--org-name", "Presence Bench", "--owner-email", "owner@example.com", "--owner-password", "bench-password", "--json"], { env }).toString(),
  ) as { user_id: number };
  void init;
  let t = performance.now();
  const users = await seedUsers();
  console.error(`seeded ${users.length} users in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  await seedPresence(users);
  console.error(`seeded ${users.length} presence rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);

  const parley = start([cli, "serve"], env);
  const bare = start(["--import", "tsx", path.join(root, "bench", "bare-server.ts")], { ...process.env, PORT: String(BARE_PORT) });
  await Promise.all([waitForHttp(`${base}/api/v1/server_settings`, parley), waitForHttp(`http://127.0.0.1:${BARE_PORT}/bare`, bare)]);
  const pid = parley.pid!;

  let next = 0;
  const take = (n: number) => {
    const slice = users.slice(next, next + n);
    next += n;
    return slice;
  };
  const ping = (user: BenchUser, extra: Record<string, string> = {}) =>
    request(base, "POST", "/api/v1/users/me/presence", user, { status: "active", new_user_input: "true", ...extra });

  // Warm-up: JIT, statement caches, connections.
  const warm = take(WARMUP);
  await paced(pid, warm.length, 100, (i) => ping(warm[i]!, { ping_only: "true" }));
  await paced(bare.pid!, warm.length, 100, () => request(`http://127.0.0.1:${BARE_PORT}`, "GET", "/bare", null, {}));

  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${PG_URL ? "PostgreSQL" : "SQLite"}, load average ${os.loadavg().map(f2).join(" ")}`;
  const rows: string[] = [];
  const notes: string[] = [];
  const summary: { name: string; requests: number; cpuSeconds: number; wallSeconds: number; shareOfCorePercent: number; p50: number; p99: number }[] = [];
  const line = (name: string, w: Window) => {
    const perRequest = w.cpuSeconds / w.requests;
    summary.push({ name, requests: w.requests, cpuSeconds: w.cpuSeconds, wallSeconds: w.wallSeconds, shareOfCorePercent: 100 * perRequest * PING_RATE, p50: w.p50, p99: w.p99 });
    rows.push(
      `| ${name} | ${w.requests} | ${f1(w.requests / w.wallSeconds)} | ${f2(w.cpuSeconds)} (${f2(w.systemSeconds)}) | ${f3(perRequest * 1000)} | ${f1(100 * perRequest * PING_RATE)}% | ${f1(w.p50)} | ${f1(w.p99)} | ${Math.round(w.meanBytes)} |`,
    );
    return perRequest;
  };

  if (PARTS.has("ping")) {
    const pingers = take(pingCount);
    if (values["warm-auth"]) await paced(pid, pingers.length, 500, (i) => request(base, "GET", "/api/v1/users/me/alert_words", pingers[i]!, {}));
    const seqBefore = await sequenceValue();
    const w = await paced(pid, pingers.length, PING_RATE, (i) => ping(pingers[i]!, { ping_only: "true" }));
    const seqAfter = await sequenceValue();
    const transactions = seqAfter - seqBefore;
    const writes = await rowsWrittenSince(seqBefore);
    // The same users' second clients (another tab, the phone) within the minute: nothing to write.
    const seqAgain = await sequenceValue();
    const again = await paced(pid, pingers.length, PING_RATE, (i) => ping(pingers[i]!, { ping_only: "true" }));
    const againWrites = await rowsWrittenSince(seqAgain);
    const bareWindow = await paced(bare.pid!, pingers.length, PING_RATE, () => request(`http://127.0.0.1:${BARE_PORT}`, "GET", "/bare", null, {}));
    const pingCpu = line("ping (ping_only), each a write", w);
    line(`the same users' second clients, within the minute (${againWrites} writes)`, again);
    const bareCpu = line("bare Fastify route, same requests, same pace", bareWindow);
    notes.push(
      `ping: ${writes} presence rows written for ${w.requests} pings, in ${transactions} transactions (${f1(writes / transactions)} rows each; each transaction also rewrites the organization's sequence row: ${f2((writes + transactions) / w.requests)} rows and ${f2((2 * transactions) / w.requests)} write statements per ping, a sequence bump and one multi-row UPDATE per batch); ` +
        `server CPU over the window ${f1((100 * w.cpuSeconds) / w.wallSeconds)}% of a core at ${f1(w.requests / w.wallSeconds)} pings/s; ` +
        `CPU per ping ${f2(pingCpu / bareCpu)} × the bare route's.`,
    );
  }
  if (PARTS.has("poll")) {
    const pollers = take(pollCount);
    line("poll with last_update_id (modern), scaled", await paced(pid, pollers.length, POLL_RATE, (i) => ping(pollers[i]!, { last_update_id: String(pollers[i]!.lastUpdateId) })));
  }
  if (PARTS.has("legacy")) {
    const pollers = take(pollCount);
    line("poll without last_update_id (legacy format), scaled", await paced(pid, pollers.length, POLL_RATE, (i) => ping(pollers[i]!)));
  }
  console.log(`\n${machine}; ${USERS} users, every presence row 60 s old at the start\n`);
  console.log(`| case | requests | rate/s | server CPU s (of which system) | CPU per request ms | share of a core at ${USERS.toLocaleString("en")}/min | p50 ms | p99 ms | reply bytes |`);
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const row of rows) console.log(row);
  for (const note of notes) console.log(`\n${note}`);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ database: PG_URL ? "PostgreSQL" : "SQLite", users: USERS, rows: summary }, null, 2));
} finally {
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once("exit", r)) : undefined)));
  agent.destroy();
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropSchema();
}
