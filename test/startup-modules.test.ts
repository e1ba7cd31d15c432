// What `parley serve` (compiled, dist/cli.js) loads at start, and what it
// loads only when a request needs it (issue 28: cold start and idle memory).
// The server runs in a child process under test/fixtures/record-modules.mjs,
// which writes every module file loaded to a list before the module runs; the
// test reads that list after the server answers, and again after requests
// that need the rarely used modules. No timings: bench/startup.ts measures
// those. Run `npm run build` first.
import assert from "node:assert/strict";
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { dropPgSchema } from "./helpers.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CLI = path.join(ROOT, "dist", "cli.js");
const RECORDER = path.join(ROOT, "test", "fixtures", "record-modules.mjs");
const PG_URL = process.env.DATABASE_URL;
/** A hang detector, not a speed check. */
const WAIT_MS = 60_000;
const OWNER = { email: "owner@example.com", password: "start-modules-pw" };

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-start-modules-"));
const moduleLog = path.join(dataDir, "modules.log");
const schema = PG_URL ? `start_${crypto.randomBytes(6).toString("hex")}` : undefined;
const port = 20000 + crypto.randomInt(10_000);
const baseUrl = `http://127.0.0.1:${port}`;
const env: Record<string, string> = {
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? os.homedir(),
  DATA_DIR: dataDir,
  PORT: String(port),
  HOST: "127.0.0.1",
  LOG_LEVEL: "warn",
  // A mail server that is not there: the first email loads nodemailer, fails, and goes to the outbox.
  SMTP_URL: "smtp://127.0.0.1:9",
  ...(PG_URL && schema ? { DATABASE_URL: PG_URL, PG_SCHEMA: schema } : {}),
};
let server: ChildProcess;

/** The packages under node_modules whose files the server has loaded. */
function loadedPackages(): Set<string> {
  const packages = new Set<string>();
  for (const line of fs.readFileSync(moduleLog, "utf8").split("\n")) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(line);
    if (match) packages.add(match[1]!);
  }
  return packages;
}

async function waitFor(what: string, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

before(async () => {
  execFileSync(process.execPath, [CLI, "init", "--org-name", "Start", "--owner-email", OWNER.email, "--owner-password", OWNER.password, "--json"], { env });
  server = spawn(process.execPath, ["--import", RECORDER, CLI, "serve"], { env: { ...env, MODULE_LOG: moduleLog }, stdio: ["ignore", "ignore", "inherit"] });
  await waitFor("the server to answer", async () => {
    try {
      return (await fetch(`${baseUrl}/api/v1/server_settings`)).ok;
    } catch {
      return false;
    }
  });
});

after(async () => {
  if (server.exitCode === null) {
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGTERM");
    await exited;
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (schema) await dropPgSchema(schema);
});

test("after start: the database driver in use is loaded, the other one and the rarely used modules are not", () => {
  const loaded = loadedPackages();
  assert.ok(loaded.has("fastify") && loaded.has("kysely"), "the recorder sees the server's packages");
  assert.ok(loaded.has(PG_URL ? "pg" : "better-sqlite3"));
  for (const name of [PG_URL ? "better-sqlite3" : "pg", "nodemailer", "@node-rs/argon2", "htmlparser2", "ajv", "@fastify/ajv-compiler", "@fastify/fast-json-stringify-compiler", "sharp", "katex", "highlight.js", "ioredis", "tar-stream"]) {
    assert.equal(loaded.has(name), false, `${name} is loaded at start`);
  }
});

test("signing in with a password loads argon2, and the password is checked as before", async () => {
  const attempt = (password: string) =>
    fetch(`${baseUrl}/api/v1/fetch_api_key`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ username: OWNER.email, password }).toString(),
    });
  const wrong = await attempt("not-the-password");
  assert.equal(wrong.status, 401);
  const wrongBody = (await wrong.json()) as Record<string, unknown>;
  assert.equal(wrongBody.code, "AUTHENTICATION_FAILED");
  assert.equal(wrongBody.msg, "Your username or password is incorrect");
  const right = await attempt(OWNER.password);
  assert.equal(right.status, 200);
  const body = (await right.json()) as Record<string, unknown>;
  assert.equal(body.result, "success");
  assert.match(String(body.api_key), /^[A-Za-z0-9]{32}$/);
  assert.ok(loadedPackages().has("@node-rs/argon2"));
});

test("the first email for an SMTP server loads nodemailer; the refused message goes to the outbox", async () => {
  assert.equal(loadedPackages().has("nodemailer"), false);
  const response = await fetch(`${baseUrl}/accounts/password/reset`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ email: OWNER.email }).toString(),
  });
  assert.equal(response.status, 200);
  const outbox = path.join(dataDir, "outbox");
  let record: Record<string, unknown> | undefined;
  // The file is there once written whole (its text ends with a newline).
  await waitFor("the reset email in the outbox", () => {
    const [file] = fs.existsSync(outbox) ? fs.readdirSync(outbox) : [];
    const text = file === undefined ? "" : fs.readFileSync(path.join(outbox, file), "utf8");
    if (text.endsWith("}\n")) record = JSON.parse(text) as Record<string, unknown>;
    return record !== undefined;
  });
  assert.ok(record);
  assert.equal(record.kind, "password_reset");
  assert.equal(record.to, OWNER.email);
  assert.equal(typeof record.smtp_error, "string");
  assert.ok(loadedPackages().has("nodemailer"));
});
