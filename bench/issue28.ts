// Issue 28's table, before and after, in one run on one database: every row
// measured for two revisions of the server, their runs alternating, so that
// the ratios can be compared on a shared machine.
//
// "before" is --before <git revision> (default 55a8506, the code when the
// issue was filed), compiled once in a temporary git worktree
// (bench/revision.ts, as bench/startup.ts --compare does); "after" is this
// checkout's dist/ (npm run bench:issue28 builds it first). Each row comes
// from the bench that already measures it, run as a child process pointed at
// one revision's compiled server (--server) with a PostgreSQL schema of its
// own per revision (their migrations differ), writing its numbers to a JSON
// file (--json):
//   1–3  bench/messages.ts --parts send at 10 connections: send rate ÷ its
//        storage floor at 10 sends per commit, ÷ the bare route, and p99;
//   4–5  bench/events.ts --parts realm,message: the message fan-out p99 to
//        1,000 waiting polls ÷ the bare long-poll yardstick's (part "realm"
//        runs it), and sequential sends from one connection to that
//        1,001-subscriber channel with no queue registered (median);
//   6    bench/presence.ts --parts ping: 10,000 users pinging once a minute;
//   7    bench/startup.ts --compare-dist: cold start and idle memory (SQLite:
//        startup.ts runs its servers on SQLite whatever DATABASE_URL says);
//   8    here: `npm start` in the revision's checkout until the first 200
//        (the before revision's prestart builds everything every time).
// With --rounds N each bench runs N times per revision, the order of the two
// revisions swapped every round; the table shows medians.
//
// Usage: npm run bench:issue28 [-- --before 55a8506 --rounds 1 --duration 5 --fanout-rounds 3 --ping-duration 15 --startup-runs 3]
//        DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:issue28
// The children's own reports go to stderr; the table goes to stdout.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { sleep } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";
import { compileRevision, root } from "./revision.ts";

const { values } = parseArgs({
  options: {
    before: { type: "string", default: "55a8506" },
    rounds: { type: "string", default: "1" },
    duration: { type: "string", default: "5" },
    "fanout-rounds": { type: "string", default: "3" },
    "ping-duration": { type: "string", default: "15" },
    "startup-runs": { type: "string", default: "3" },
    sends: { type: "string", default: "10" },
  },
});
const ROUNDS = Number(values.rounds);
const PG_URL = process.env.DATABASE_URL || "";
const dbName = PG_URL ? "PostgreSQL" : "SQLite";
const NPM_START_PORT = 19989;
if (!fs.existsSync(path.join(root, "dist", "cli.js"))) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:issue28 does)");

interface Revision {
  label: "before" | "after";
  /** Its checkout: where `npm start` runs. */
  dir: string;
  dist: string;
  commit: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-issue28-"));

/** Benches that failed: their cells say so, and the run goes on to the other rows. */
const failures: string[] = [];

/** Runs a bench script against one revision; its report goes to stderr, its --json output is returned (undefined if it failed). */
function runBench(script: string, revision: Revision, args: string[]): Json {
  const name = path.basename(script, ".ts");
  const out = path.join(work, `${name}-${revision.label}.json`);
  fs.rmSync(out, { force: true });
  console.error(`\n## ${name}, ${revision.label} (${revision.commit.slice(0, 10)})`);
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", path.join(root, "bench", script), "--server", revision.dist, "--pg-schema", `bench_i28_${revision.label}_${name}`, "--json", out, ...args],
    { cwd: root, stdio: ["ignore", 2, 2], env: process.env },
  );
  if (result.status !== 0) {
    failures.push(`bench/${script} for ${revision.label} exited with ${result.status ?? result.signal} (its output is on stderr)`);
    return undefined;
  }
  return JSON.parse(fs.readFileSync(out, "utf8"));
}

/** `npm start` in the revision's checkout on an initialized database, until the server first answers 200. */
async function npmStartOnce(revision: Revision): Promise<number> {
  const dataDir = fs.mkdtempSync(path.join(work, "start-"));
  const pgSchema = PG_URL ? `bench_i28_${revision.label}_start` : "";
  const env = { ...process.env, DATA_DIR: dataDir, PORT: String(NPM_START_PORT), LOG_LEVEL: "warn", DATABASE_URL: PG_URL, PG_SCHEMA: pgSchema };
  await dropPgSchema(PG_URL, pgSchema);
  try {
    execFileSync(process.execPath, [path.join(revision.dist, "cli.js"), "init", "--org-name", "Start", "--owner-email", "s@example.com", "--owner-password", "start-pw", "--json"], { env });
    console.error(`\n## npm start, ${revision.label}`);
    const started = performance.now();
    // Its own process group: npm, the shell of its scripts and the server are stopped together.
    const child = spawn("npm", ["start"], { cwd: revision.dir, env, detached: true, stdio: ["ignore", 2, 2] });
    const exited = new Promise((r) => child.once("exit", r));
    let elapsed = 0;
    try {
      for (;;) {
        if (child.exitCode !== null) throw new Error(`npm start (${revision.label}) exited with ${child.exitCode}`);
        if (performance.now() - started > 300_000) throw new Error(`npm start (${revision.label}) did not serve within 300 s`);
        try {
          if ((await fetch(`http://127.0.0.1:${NPM_START_PORT}/api/v1/server_settings`)).status === 200) break;
        } catch {
          // not listening yet
        }
        await sleep(10);
      }
      elapsed = performance.now() - started;
    } finally {
      if (child.exitCode === null) {
        process.kill(-child.pid!, "SIGTERM");
        await exited;
      }
    }
    return elapsed;
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropPgSchema(PG_URL, pgSchema);
  }
}

/** The working tree's commit, and whether its server sources differ from it. */
function headCommit(): string {
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: root }).toString().trim();
  const dirty = execFileSync("git", ["status", "--porcelain", "--", "src", "bin", "package.json"], { cwd: root }).toString().trim() !== "";
  return dirty ? `${head} (with uncommitted changes)` : head;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;

const started = performance.now();
const loadStart = os.loadavg();
console.error(`compiling ${values.before} in a temporary worktree…`);
const compiled = compileRevision(values.before);
const before: Revision = { label: "before", dir: compiled.dir, dist: compiled.dist, commit: compiled.commit };
const after: Revision = { label: "after", dir: root, dist: path.join(root, "dist"), commit: headCommit() };

/** Per revision, per measure: one number per round. */
const samples: Record<Revision["label"], Record<string, number[]>> = { before: {}, after: {} };
const add = (revision: Revision, key: string, value: number) => (samples[revision.label][key] ??= []).push(value);

try {
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [before, after] : [after, before];
    for (const revision of order) {
      const m = runBench("messages.ts", revision, ["--parts", "send", "--connections", "10", "--duration", values.duration]);
      if (!m) {
        for (const key of ["sendRate", "floorRate", "bareRate", "sendP99"]) add(revision, key, NaN);
        continue;
      }
      const send = m.send.find((r: Json) => r.connections === 10);
      const bare = m.bare.find((r: Json) => r.connections === 10);
      const floor = m.floor.find((f: Json) => f.perCommit === 10);
      add(revision, "sendRate", send.rps);
      add(revision, "floorRate", floor.perSecond);
      add(revision, "bareRate", bare.rps);
      add(revision, "sendP99", send.p99);
    }
    for (const revision of order) {
      const e = runBench("events.ts", revision, ["--parts", "realm,message", "--users", "1000", "--queues", "1000", "--fanout", "1000", "--rounds", values["fanout-rounds"], "--alone", values.sends]);
      if (!e) {
        for (const key of ["fanoutP99", "yardstickP99", "bigSendMedian"]) add(revision, key, NaN);
        continue;
      }
      add(revision, "fanoutP99", e.message.p99);
      add(revision, "yardstickP99", e.yardstick.p99);
      add(revision, "bigSendMedian", e.message.aloneMedian);
    }
    for (const revision of order) {
      const p = runBench("presence.ts", revision, ["--parts", "ping", "--users", "10000", "--duration", values["ping-duration"]]);
      add(revision, "pingShare", p ? p.rows[0].shareOfCorePercent : NaN);
    }
    {
      const out = path.join(work, "startup.json");
      console.error("\n## startup.ts, both");
      const result = spawnSync(
        process.execPath,
        ["--import", "tsx", path.join(root, "bench", "startup.ts"), "--compare", "before", "--compare-dist", before.dist, "--runs", values["startup-runs"], "--json", out],
        { cwd: root, stdio: ["ignore", 2, 2] },
      );
      if (result.status !== 0) throw new Error(`bench/startup.ts exited with ${result.status ?? result.signal}`);
      const targets = JSON.parse(fs.readFileSync(out, "utf8")) as { label: string; startMs: number; rssMb: number }[];
      for (const [revision, label] of [
        [before, "before"],
        [after, "this checkout"],
      ] as const) {
        const t = targets.find((x) => x.label === label)!;
        add(revision, "startMs", t.startMs);
        add(revision, "rssMb", t.rssMb);
      }
    }
    for (const revision of order) {
      try {
        add(revision, "npmStartMs", await npmStartOnce(revision));
      } catch (error) {
        failures.push(`npm start for ${revision.label}: ${String(error)}`);
        add(revision, "npmStartMs", NaN);
      }
    }
  }
} finally {
  compiled.cleanup();
  fs.rmSync(work, { recursive: true, force: true });
}

// ---- the table ---------------------------------------------------------------
/** A cell: the median of the rounds (NaN where a bench failed), and their range when there were several. */
function cell(label: Revision["label"], value: (s: Record<string, number>) => number, format: (n: number) => string): string {
  const s = samples[label];
  const values: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const v = value(Object.fromEntries(Object.entries(s).map(([k, v]) => [k, v[i]!])));
    if (Number.isFinite(v)) values.push(v);
  }
  if (values.length === 0) return "failed";
  const sorted = [...values].sort((a, b) => a - b);
  return values.length > 1 ? `${format(median(values))} (${format(sorted[0]!)}–${format(sorted.at(-1)!)})` : format(values[0]!);
}
const f2 = (n: number) => n.toFixed(2);
const f3 = (n: number) => n.toFixed(3);
const ms0 = (n: number) => `${n.toFixed(0)} ms`;
const s2 = (n: number) => `${(n / 1000).toFixed(2)} s`;
const rows: [string, string, (label: Revision["label"]) => string][] = [
  [
    "send to 10 subscribers, 10 connections, ÷ storage floor at 10 sends per commit",
    "≥ 0.50",
    (l) => `${cell(l, (s) => s.sendRate! / s.floorRate!, f2)} (${cell(l, (s) => s.sendRate!, (n) => n.toFixed(0))} vs ${cell(l, (s) => s.floorRate!, (n) => n.toFixed(0))} sends/s)`,
  ],
  ["the same ÷ bare route", PG_URL ? "≥ 0.02" : "≥ 0.04", (l) => `${cell(l, (s) => s.sendRate! / s.bareRate!, f3)} (bare ${cell(l, (s) => s.bareRate!, (n) => n.toFixed(0))} req/s)`],
  ["send p99 at 10 connections", "< 20 ms", (l) => cell(l, (s) => s.sendP99!, ms0)],
  [
    "message fan-out to 1,000 waiting polls, p99 ÷ bare long-poll yardstick",
    "≤ 1.25",
    (l) => `${cell(l, (s) => s.fanoutP99! / s.yardstickP99!, f2)} (${cell(l, (s) => s.fanoutP99!, ms0)} vs ${cell(l, (s) => s.yardstickP99!, ms0)})`,
  ],
  [`send to a 1,001-subscriber channel, median of ${values.sends}`, "< 15 ms", (l) => cell(l, (s) => s.bigSendMedian!, (n) => `${n.toFixed(1)} ms`)],
  ["presence: 10,000 users pinging once a minute, share of a core", "< 5%", (l) => cell(l, (s) => s.pingShare!, (n) => `${n.toFixed(1)}%`)],
  ["cold start to first answer; idle resident memory (SQLite)", "< 1 s; < 120 MB", (l) => `${cell(l, (s) => s.startMs!, s2)}; ${cell(l, (s) => s.rssMb!, (n) => `${n.toFixed(0)} MB`)}`],
  ["`npm start` on an installed checkout until it serves", "< 2 s", (l) => cell(l, (s) => s.npmStartMs!, s2)],
];

const loadEnd = os.loadavg();
const load = (l: number[]) => l.map((n) => n.toFixed(2)).join(" ");
console.log(`\n### ${dbName}: before ${before.commit}, after ${after.commit}\n`);
console.log(
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}; load average ${load(loadStart)} at the start, ${load(loadEnd)} at the end; ` +
    `${Math.round((performance.now() - started) / 1000)} s in all; ${ROUNDS} round(s), the revisions alternating; ${values.duration} s send cases, ${values["fanout-rounds"]} fan-out rounds, ${values["ping-duration"]} s of pings, ${values["startup-runs"]} starts each\n`,
);
console.log("| measure (ratio in the same run) | budget | before | after |");
console.log("|---|---|---|---|");
for (const [measure, budget, value] of rows) console.log(`| ${measure} | ${budget} | ${value("before")} | ${value("after")} |`);
for (const failure of failures) console.log(`\nFailed: ${failure}`);
if (failures.length > 0) process.exitCode = 1;
