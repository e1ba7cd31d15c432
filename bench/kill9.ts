// Durability under kill -9 (issue 28): no acknowledged message is lost.
//
// Runs the compiled `parley serve` on a fresh database — a temporary SQLite
// directory, or with DATABASE_URL the PostgreSQL schema bench_kill9_<pid>
// (dropped at the end) — and for each of --runs rounds:
//   1. starts the server on the data the previous round left;
//   2. has --clients users (each with its own API key and keep-alive
//      connection) send channel messages in a loop as fast as the server
//      answers, each with a unique word in it, recording every message the
//      server acknowledged (HTTP 200 with its id) and every request still
//      without an answer;
//   3. after a random 1–3 s, SIGKILLs the server (clients stop sending first);
//   4. starts it again on the same data, waits for GET /health to answer 200;
//   5. reads the database through the project's storage layer
//      (src/storage/database.ts openStorage): every acknowledged message must
//      be there under its id with its content, with a user_messages row for
//      every subscriber (the sender's marked read: the requests ask for
//      read_by_sender); a request that was in
//      flight at the kill may or may not have been committed (counted, allowed);
//      no row may appear that no request sent;
//   6. searches (GET /messages, narrow search:<the word>) for the last
//      acknowledged message: the full-text index must have survived too;
//   7. stops the server (SIGTERM).
// Exits non-zero if any check fails.
//
// Usage: npm run bench:kill9 [-- --runs 5 --clients 8]
//        DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:kill9
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { inChunks, openStorage } from "../src/storage/database.ts";
import { call, sleep, waitForHttp, type BenchUser, type Reply } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({ options: { runs: { type: "string", default: "5" }, clients: { type: "string", default: "8" } } });
const RUNS = Number(values.runs);
const CLIENTS = Number(values.clients);

const PORT = 19993;
const origin = `http://127.0.0.1:${PORT}`;
const cli = path.join(root, "dist", "cli.js");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:kill9 does)");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-kill9-"));
const PG_URL = process.env.DATABASE_URL || "";
const pgSchema = PG_URL ? `bench_kill9_${process.pid}` : "";
const dbName = PG_URL ? "PostgreSQL" : "SQLite";
// The clients drive their users far past the API limits: RATE_LIMITING=false, as the other benches.
const env = { ...process.env, RATE_LIMITING: "false", DATA_DIR: dataDir, PORT: String(PORT), LOG_LEVEL: "warn", DATABASE_URL: PG_URL, PG_SCHEMA: pgSchema };
const CHANNEL = "kill nine";
/** user_messages flag bit for read (domain/message-flags.ts). */
const READ = 1;

function cliJson(args: string[]): { user_id: number; email: string; api_key: string } {
  return JSON.parse(execFileSync(process.execPath, [cli, ...args, "--json"], { env }).toString());
}

let server: ChildProcess | undefined;

async function startServer(): Promise<number> {
  const started = performance.now();
  server = spawn(process.execPath, [cli, "serve"], { env, stdio: ["ignore", "ignore", "inherit"] });
  await waitForHttp(`${origin}/health`, server);
  const health = await fetch(`${origin}/health`);
  if (health.status !== 200) throw new Error(`GET /health after start: ${health.status} ${await health.text()}`);
  return performance.now() - started;
}

async function stopServer(signal: NodeJS.Signals): Promise<void> {
  const child = server;
  server = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await exited;
}

/** A setup call that must succeed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function api(agent: http.Agent, user: BenchUser, method: string, urlPath: string, params: Record<string, unknown> = {}): Promise<any> {
  const reply = await call(agent, user, method, urlPath, params, origin).reply;
  if (reply.status !== 200 || reply.body.result !== "success") throw new Error(`${method} ${urlPath}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

interface Sent {
  client: number;
  sender: BenchUser;
  content: string;
  /** The unique word in the content, for the search check. */
  word: string;
  /** Set when an answer arrived: the id on a 200, else the status. */
  ackId?: number;
  status?: number;
  /** No answer when the server was killed. */
  inFlightAtKill: boolean;
  error?: string;
}

interface RoundResult {
  run: number;
  killAfterMs: number;
  acknowledged: number;
  lost: number;
  wrongContent: number;
  missingFlagRows: number;
  inFlight: number;
  committedWithoutAck: number;
  unexpectedRows: number;
  failedReplies: number;
  restartMs: number;
  searchFound: boolean;
}

let reported = 0;
/** The first few failures in full; the table counts them all. */
function report(line: string): void {
  if (reported++ < 20) console.error(`  ${line}`);
}

async function round(run: number, users: BenchUser[], subscriberIds: number[], owner: BenchUser, channelId: number, afterId: number): Promise<{ result: RoundResult; maxId: number }> {
  await startServer();
  const sent: Sent[] = [];
  let killed = false;
  const agents = users.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const clients = users.map(async (sender, client) => {
    for (let n = 0; !killed; n++) {
      const word = `k9r${run}c${client}n${n}p${process.pid}`;
      const entry: Sent = { client, sender, word, content: `kill -9 round ${run}, client ${client}, message ${n}: ${word}`, inFlightAtKill: false };
      sent.push(entry);
      let reply: Reply;
      try {
        reply = await call(agents[client]!, sender, "POST", "/messages", { type: "stream", to: channelId, topic: `client ${client}`, content: entry.content, read_by_sender: true }, origin).reply;
      } catch (error) {
        entry.error = (error as Error).message;
        return;
      }
      entry.status = reply.status;
      if (reply.status === 200 && typeof reply.body?.id === "number") entry.ackId = reply.body.id;
      else if (!killed) throw new Error(`POST /messages before the kill: ${reply.status} ${JSON.stringify(reply.body)}`);
    }
  });
  const killAfterMs = 1000 + Math.random() * 2000;
  await sleep(killAfterMs);
  // Stop the loops first, so that no request starts after the kill.
  killed = true;
  for (const entry of sent) if (entry.status === undefined && entry.error === undefined) entry.inFlightAtKill = true;
  await stopServer("SIGKILL");
  await Promise.all(clients);
  for (const agent of agents) agent.destroy();

  const restartMs = await startServer();

  // What the database holds, read as the server reads it.
  const storage = await openStorage(PG_URL ? { databaseUrl: PG_URL, pgSchema } : { sqlitePath: path.join(dataDir, "parley.sqlite3") });
  let rows: { id: number; sender_id: number; content: string; channel_id: number | null }[];
  const flagRows = new Map<number, Map<number, number>>();
  try {
    rows = await storage.db.selectFrom("messages").select(["id", "sender_id", "content", "channel_id"]).where("channel_id", "=", channelId).where("id", ">", afterId).orderBy("id").execute();
    for (const ids of inChunks(rows.map((r) => r.id))) {
      for (const f of await storage.db.selectFrom("user_messages").select(["message_id", "user_id", "flags"]).where("message_id", "in", ids).execute()) {
        let perUser = flagRows.get(f.message_id);
        if (!perUser) flagRows.set(f.message_id, (perUser = new Map()));
        perUser.set(f.user_id, f.flags);
      }
    }
  } finally {
    await storage.close();
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  const byContent = new Map(rows.map((r) => [r.content, r]));
  const acked = sent.filter((s) => s.ackId !== undefined);
  let lost = 0;
  let wrongContent = 0;
  let missingFlagRows = 0;
  for (const s of acked) {
    const row = byId.get(s.ackId!);
    if (!row) {
      lost++;
      report(`LOST: message ${s.ackId} (${s.word}) was acknowledged but is not in the database`);
      continue;
    }
    if (row.content !== s.content || row.sender_id !== s.sender.id) {
      wrongContent++;
      report(`WRONG: message ${s.ackId} holds ${JSON.stringify(row.content)} from ${row.sender_id}, sent ${JSON.stringify(s.content)} from ${s.sender.id}`);
    }
    const perUser = flagRows.get(row.id) ?? new Map<number, number>();
    for (const u of subscriberIds) {
      const flags = perUser.get(u);
      if (flags === undefined || (u === s.sender.id && (flags & READ) === 0)) {
        missingFlagRows++;
        report(`FLAGS: message ${row.id} has ${flags === undefined ? "no user_messages row" : `flags ${flags} (not read)`} for user ${u}`);
      }
    }
  }
  const unanswered = sent.filter((s) => s.ackId === undefined);
  const committedWithoutAck = unanswered.filter((s) => byContent.has(s.content)).length;
  const sentContents = new Set(sent.map((s) => s.content));
  const unexpectedRows = rows.filter((r) => !sentContents.has(r.content)).length + (rows.length - byContent.size);
  const failedReplies = sent.filter((s) => s.status !== undefined && s.ackId === undefined).length;

  // The full-text index holds the last acknowledged message.
  let searchFound = false;
  const last = acked.reduce<Sent | undefined>((a, s) => (a && a.ackId! > s.ackId! ? a : s), undefined);
  if (last) {
    const agent = new http.Agent({ keepAlive: false });
    const found = await api(agent, owner, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: [{ operator: "search", operand: last.word }] });
    searchFound = found.messages.length === 1 && found.messages[0].id === last.ackId;
    agent.destroy();
  }
  await stopServer("SIGTERM");
  const maxId = rows.length > 0 ? rows[rows.length - 1]!.id : afterId;
  return {
    result: {
      run,
      killAfterMs,
      acknowledged: acked.length,
      lost,
      wrongContent,
      missingFlagRows,
      inFlight: sent.filter((s) => s.inFlightAtKill).length,
      committedWithoutAck,
      unexpectedRows,
      failedReplies,
      restartMs,
      searchFound,
    },
    maxId,
  };
}

/** How the database is set to make a commit durable. */
async function durabilitySettings(): Promise<string> {
  if (!PG_URL) return "SQLite: journal_mode=WAL, synchronous=NORMAL, replies wait for an fsync of the WAL (src/storage/database.ts)";
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const show = async (name: string) => (await client.query(`SHOW ${name}`)).rows[0][name];
    return `PostgreSQL ${await show("server_version")}: fsync=${await show("fsync")}, synchronous_commit=${await show("synchronous_commit")}, wal_sync_method=${await show("wal_sync_method")}, full_page_writes=${await show("full_page_writes")}`;
  } finally {
    await client.end();
  }
}

async function main(): Promise<boolean> {
  const started = performance.now();
  const loadStart = os.loadavg()[0]!;
  const init = cliJson(["init", "--org-name", "Kill9", "--owner-email", "owner@kill9.example", "--owner-password", "kill9-owner-pw", "--owner-name", "Kill Owner"]);
  const owner: BenchUser = { id: init.user_id, email: init.email, apiKey: init.api_key };
  const users: BenchUser[] = [];
  for (let i = 0; i < CLIENTS; i++) {
    const u = cliJson(["create-user", "--email", `sender${i}@kill9.example`, "--full-name", `Sender ${i}`, "--password", `kill9-sender-${i}-pw`]);
    users.push({ id: u.user_id, email: u.email, apiKey: u.api_key });
  }
  const subscriberIds = [owner.id, ...users.map((u) => u.id)];
  await startServer();
  const agent = new http.Agent({ keepAlive: true });
  await api(agent, owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: CHANNEL }], principals: subscriberIds, announce: false });
  const channelId = (await api(agent, owner, "GET", "/get_stream_id", { stream: CHANNEL })).stream_id as number;
  agent.destroy();
  await stopServer("SIGTERM");

  const settings = await durabilitySettings();
  const results: RoundResult[] = [];
  let afterId = 0;
  for (let run = 1; run <= RUNS; run++) {
    const { result, maxId } = await round(run, users, subscriberIds, owner, channelId, afterId);
    afterId = maxId;
    results.push(result);
    console.error(
      `  run ${run}: killed after ${(result.killAfterMs / 1000).toFixed(2)} s; ${result.acknowledged} acknowledged, ${result.lost} lost, ${result.inFlight} in flight, ${result.committedWithoutAck} committed without ack`,
    );
  }

  const sum = (f: (r: RoundResult) => number) => results.reduce((a, r) => a + f(r), 0);
  console.log(`\n### ${dbName}\n`);
  console.log(
    `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${Math.round((performance.now() - started) / 1000)} s in all, ` +
      `load average ${loadStart.toFixed(1)} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end; ${CLIENTS} clients (own user and API key, one keep-alive connection each) sending to a channel of ${subscriberIds.length} subscribers`,
  );
  console.log(`${settings}\n`);
  console.log("| run | killed after | messages acknowledged | lost | wrong content / missing flag rows | in flight at the kill | committed without ack | /health 200 after restart | search finds the last acknowledged |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const r of results) {
    console.log(
      `| ${r.run} | ${(r.killAfterMs / 1000).toFixed(2)} s | ${r.acknowledged} | ${r.lost} | ${r.wrongContent} / ${r.missingFlagRows} | ${r.inFlight} | ${r.committedWithoutAck} | ${Math.round(r.restartMs)} ms | ${r.searchFound ? "yes" : "NO"} |`,
    );
  }
  console.log(
    `| all ${results.length} | | ${sum((r) => r.acknowledged)} | ${sum((r) => r.lost)} | ${sum((r) => r.wrongContent)} / ${sum((r) => r.missingFlagRows)} | ${sum((r) => r.inFlight)} | ${sum((r) => r.committedWithoutAck)} | | ${results.filter((r) => r.searchFound).length} of ${results.length} |`,
  );
  const unexpected = sum((r) => r.unexpectedRows);
  const failed = sum((r) => r.failedReplies);
  if (unexpected > 0) console.log(`\n${unexpected} stored messages match no request sent (or are stored twice).`);
  if (failed > 0) console.log(`\n${failed} requests were answered with an error after the kill was sent.`);
  const ok = sum((r) => r.lost + r.wrongContent + r.missingFlagRows) === 0 && unexpected === 0 && results.every((r) => r.searchFound && r.acknowledged > 0);
  console.log(`\n${ok ? "PASS" : "FAIL"}: ${sum((r) => r.lost)} acknowledged messages lost in ${results.length} kills.`);
  return ok;
}

let ok = false;
try {
  ok = await main();
} finally {
  await stopServer("SIGKILL");
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropPgSchema(PG_URL, pgSchema);
}
process.exitCode = ok ? 0 : 1;
