// Measures Parley's authenticated GET /users/me and public GET /server_settings
// against a bare Fastify route, in one run on one machine, and prints the
// ratios. Usage: npm run bench [-- --duration 10 --connections 10]
import { spawn, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { waitForHttp } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: { duration: { type: "string", default: "10" }, connections: { type: "string", default: "10" } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);


async function run(title: string, url: string, headers: Record<string, string> = {}) {
  // One warm-up pass so JIT and caches are settled before measuring.
  await autocannon({ url, connections, duration: 2, headers });
  const result = await autocannon({ url, connections, duration, headers });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${title}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { title, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-"));
// On PostgreSQL the run gets a schema of its own, dropped at the end.
const pgSchema = process.env.DATABASE_URL ? `bench_${process.pid}` : "";
// Load tests drive one user far past the API limits: RATE_LIMITING=false, as Zulip load tests run.
const env = { ...process.env, RATE_LIMITING: "false", DATA_DIR: dataDir, PORT: "19991", LOG_LEVEL: "warn", DATABASE_URL: process.env.DATABASE_URL ?? "", PG_SCHEMA: pgSchema };
const cli = path.join(root, "dist", "cli.js");
const init = JSON.parse(
  execFileSync(process.execPath, [cli, "init", "--org-name", "Bench", "--owner-email", "bench@example.com", "--owner-password", "bench-password", "--json"], { env }).toString(),
) as { email: string; api_key: string };

const parley = spawn(process.execPath, [cli, "serve"], { env: { ...env, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info" }, stdio: ["ignore", "ignore", "inherit"] });
const bare = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench", "bare-server.ts")], { env: { ...process.env, PORT: "19990" }, stdio: ["ignore", "ignore", "inherit"] });
try {
  await Promise.all([waitForHttp("http://127.0.0.1:19991/api/v1/server_settings", parley), waitForHttp("http://127.0.0.1:19990/bare", bare)]);
  const auth = { authorization: `Basic ${Buffer.from(`${init.email}:${init.api_key}`).toString("base64")}` };
  const results = [
    await run("bare Fastify route", "http://127.0.0.1:19990/bare"),
    await run("GET /api/v1/users/me (authenticated)", "http://127.0.0.1:19991/api/v1/users/me", auth),
    await run("GET /api/v1/server_settings", "http://127.0.0.1:19991/api/v1/server_settings"),
  ];
  const base = results[0]!.rps;
  const db = process.env.DATABASE_URL ? "PostgreSQL" : "SQLite";
  console.log(`\n${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${db}, ${connections} connections, ${duration} s each\n`);
  console.log("| endpoint | req/s | p50 ms | p99 ms | ratio to bare |");
  console.log("|---|---|---|---|---|");
  for (const r of results) console.log(`| ${r.title} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.rps / base).toFixed(2)} |`);
} finally {
  parley.kill("SIGTERM");
  bare.kill("SIGTERM");
  fs.rmSync(dataDir, { recursive: true, force: true });
  await dropPgSchema(process.env.DATABASE_URL ?? "", pgSchema);
}
