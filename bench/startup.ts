// Cold start to serving and idle resident memory of `parley serve` (compiled),
// against DESIGN.md's budgets: under 1 s and under 120 MB.
// Usage: npm run build && node --import tsx bench/startup.ts [--runs 5]
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const runs = Number(parseArgs({ options: { runs: { type: "string", default: "5" } } }).values.runs);
const cli = path.join(root, "dist", "cli.js");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-start-"));
const env = { ...process.env, DATA_DIR: dataDir, PORT: "19992", LOG_LEVEL: "warn", DATABASE_URL: "" };
execFileSync(process.execPath, [cli, "init", "--org-name", "Start", "--owner-email", "s@example.com", "--owner-password", "start-pw", "--json"], { env });

const times: number[] = [];
let rssMb = 0;
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  const child = spawn(process.execPath, [cli, "serve"], { env, stdio: "ignore" });
  for (;;) {
    try {
      if ((await fetch("http://127.0.0.1:19992/api/v1/server_settings")).ok) break;
    } catch {
      // not yet listening
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  times.push(performance.now() - started);
  if (i === runs - 1) {
    // Idle: a few seconds after start, no traffic.
    await new Promise((r) => setTimeout(r, 3000));
    const status = fs.readFileSync(`/proc/${child.pid}/status`, "utf8");
    rssMb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
  }
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
}
fs.rmSync(dataDir, { recursive: true, force: true });
times.sort((a, b) => a - b);
console.log(`cold start to first answer (SQLite, ${runs} runs): median ${times[Math.floor(runs / 2)]!.toFixed(0)} ms, max ${times[runs - 1]!.toFixed(0)} ms`);
console.log(`idle resident memory after 3 s: ${rssMb.toFixed(0)} MB`);
