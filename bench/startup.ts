// Cold start to serving and idle resident memory of `parley serve` (compiled),
// against DESIGN.md's budgets: under 1 s and under 120 MB. Also counts the
// module files (and their bytes) loaded by the time the server answers, from
// one extra run under test/fixtures/record-modules.mjs, and starts a bare
// Fastify server (bench/bare-server.ts's route) the same way as a yardstick,
// so that times on a shared machine can be read as ratios.
// With --compare <git revision>, that revision is compiled in a temporary
// worktree and measured in the same run, its starts alternating with these.
// --compare-dist <dist dir> measures an already compiled server instead (with
// --compare as its label); --json <file> writes the medians there as well.
// Usage: npm run build && node --import tsx bench/startup.ts [--runs 5] [--compare main] [--json out.json]
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { compileRevision, root } from "./revision.ts";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "5" }, compare: { type: "string" }, "compare-dist": { type: "string" }, json: { type: "string" } },
});
const runs = Number(values.runs);
const PORT = 19992;
const recorder = path.join(root, "test", "fixtures", "record-modules.mjs");
const BARE = `import Fastify from "fastify";
const app = Fastify({ logger: false });
app.get("/api/v1/server_settings", async () => ({ result: "success", msg: "" }));
await app.listen({ host: "127.0.0.1", port: ${PORT} });`;

interface Target {
  label: string;
  /** Arguments to node that start the server. */
  args: string[];
  env: NodeJS.ProcessEnv;
  times: number[];
  rssMb: number[];
  modules?: { files: number; bytes: number };
}

function parleyTarget(label: string, dist: string): Target {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-start-"));
  const env = { ...process.env, DATA_DIR: dataDir, PORT: String(PORT), LOG_LEVEL: "warn", DATABASE_URL: "" };
  const cli = path.join(dist, "cli.js");
  execFileSync(process.execPath, [cli, "init", "--org-name", "Start", "--owner-email", "s@example.com", "--owner-password", "start-pw", "--json"], { env });
  return { label, args: [cli, "serve"], env, times: [], rssMb: [] };
}

/** Starts the target, waits for its first answer; with `idle`, reads VmRSS after 3 s without traffic. */
async function startOnce(target: Target, options: { idle: boolean; moduleLog?: string }): Promise<void> {
  const args = options.moduleLog ? ["--import", recorder, ...target.args] : target.args;
  const env = options.moduleLog ? { ...target.env, MODULE_LOG: options.moduleLog } : target.env;
  const started = performance.now();
  const child = spawn(process.execPath, args, { env, cwd: root, stdio: "ignore" });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${PORT}/api/v1/server_settings`)).ok) break;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  if (!options.moduleLog) target.times.push(performance.now() - started);
  if (options.idle) {
    await new Promise((r) => setTimeout(r, 3000));
    const status = fs.readFileSync(`/proc/${child.pid}/status`, "utf8");
    target.rssMb.push(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
  }
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
}

/** Files (and bytes) in a recorder's list, each counted once. */
function countModules(log: string): { files: number; bytes: number } {
  const files = new Set(fs.readFileSync(log, "utf8").split("\n").filter(Boolean).map((line) => line.split("\t")[1]!));
  let bytes = 0;
  for (const file of files) bytes += fs.statSync(file).size;
  return { files: files.size, bytes };
}

const compareDist = values["compare-dist"];
if (compareDist && !values.compare) throw new Error("--compare-dist needs --compare <label>");
const before = compareDist ? { dist: compareDist, cleanup: () => {} } : values.compare ? compileRevision(values.compare) : undefined;
const targets: Target[] = [
  ...(before ? [parleyTarget(values.compare!, before.dist)] : []),
  parleyTarget("this checkout", path.join(root, "dist")),
  { label: "bare Fastify", args: ["--input-type=module", "-e", BARE], env: process.env, times: [], rssMb: [] },
];
const load = os.loadavg()[0]!.toFixed(1);
try {
  for (let i = 0; i < runs; i++) {
    for (const target of targets) await startOnce(target, { idle: true });
  }
  for (const target of targets) {
    const log = path.join(os.tmpdir(), `parley-start-modules-${process.pid}.log`);
    fs.rmSync(log, { force: true });
    await startOnce(target, { idle: false, moduleLog: log });
    target.modules = countModules(log);
    fs.rmSync(log, { force: true });
  }
} finally {
  for (const target of targets) if (target.env.DATA_DIR && target.env !== process.env) fs.rmSync(target.env.DATA_DIR, { recursive: true, force: true });
  before?.cleanup();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const bare = targets[targets.length - 1]!;
console.log(
  `\n${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}; load average ${load} at the start, ${os.loadavg()[0]!.toFixed(1)} at the end; ` +
    `SQLite, ${runs} starts each, alternating\n`,
);
console.log("| server | cold start to first answer, median (max) | ÷ bare Fastify | idle RSS after 3 s, median | modules loaded at start | their bytes |");
console.log("|---|---|---|---|---|---|");
for (const target of targets) {
  const times = [...target.times].sort((a, b) => a - b);
  console.log(
    `| ${target.label} | ${median(times).toFixed(0)} ms (${times[times.length - 1]!.toFixed(0)} ms) | ${(median(times) / median(bare.times)).toFixed(1)} | ` +
      `${median(target.rssMb).toFixed(0)} MB | ${target.modules!.files} | ${(target.modules!.bytes / 2 ** 20).toFixed(1)} MB |`,
  );
}
if (values.json) {
  const summary = targets.map((t) => ({ label: t.label, startMs: median(t.times), rssMb: median(t.rssMb), modules: t.modules }));
  fs.writeFileSync(values.json, JSON.stringify(summary, null, 2));
}
