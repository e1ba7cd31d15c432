// The `parley` command line, run as a real child process on a fresh database
// per test: a temporary SQLite DATA_DIR, or a new PostgreSQL schema when
// DATABASE_URL is set. The child's environment is built from scratch, so a
// SQLite run can never reach a PostgreSQL server by inheritance.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import pg from "pg";
import tar from "tar-stream";
import { describeBackends } from "../src/backends.ts";
import { loadConfig } from "../src/config.ts";
import { dropPgSchema } from "./helpers.ts";
import { zipFile } from "./zip-writer.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PG_URL = process.env.DATABASE_URL;
/** With DATABASE_URL, REDIS_URL puts events and rate limits in Redis (under a key prefix of the test's own). */
const REDIS_URL = PG_URL ? process.env.REDIS_URL : undefined;
const DIALECT = PG_URL ? "postgres" : "sqlite";

/**
 * How long one CLI command may take before the test gives up on it: a hang
 * detector, not a speed check (start-up time is measured in bench/startup.ts).
 * Generous, because several commands run at once on a loaded two-core machine.
 */
const COMMAND_TIMEOUT_MS = 120_000;
/** How long `serve` may take to start listening, and to exit after a signal: hang detectors too. */
const SERVE_START_TIMEOUT_MS = 60_000;
// Beyond the drain's own default bound (SHUTDOWN_TIMEOUT_SECONDS, 30 s), so that a drain that runs out
// exits with its status 1 and the test says so; 5 s failed on a loaded CI machine for a drain of ~150 ms.
const SERVE_STOP_TIMEOUT_MS = 45_000;

const API_KEY = /^[A-Za-z0-9]{32}$/;

type Env = Record<string, string>;

interface FreshDb {
  /** Environment for a child using this database (PATH, HOME and the database settings). */
  env: Env;
  dataDir: string;
  schema: string | undefined;
}

/** A database nobody else uses, removed when the test ends. */
function freshDb(t: TestContext): FreshDb {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-cli-"));
  const env: Env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.homedir(), DATA_DIR: dataDir };
  let schema: string | undefined;
  if (PG_URL) {
    schema = `cli_${crypto.randomBytes(6).toString("hex")}`;
    env.DATABASE_URL = PG_URL;
    env.PG_SCHEMA = schema;
    if (REDIS_URL) {
      env.REDIS_URL = REDIS_URL;
      env.REDIS_KEY_PREFIX = `${schema}:`;
    }
  }
  t.after(async () => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (schema) await dropPgSchema(schema);
  });
  return { env, dataDir, schema };
}

/** Runs the TypeScript source, or with PARLEY_BIN the installed bin (compiled JavaScript, as `npx parley` runs it). */
function spawnCli(args: string[], env: Env): ChildProcess {
  const entry = env.PARLEY_BIN ? ["bin/parley.js"] : ["--import", "tsx", "src/cli.ts"];
  return spawn(process.execPath, [...entry, ...args], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves when the child exits; after `ms` it is killed and the promise rejects. */
function waitForExit(child: ChildProcess, ms: number, what: string): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} did not exit within ${ms} ms`));
    }, ms);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

interface CliResult extends Exit {
  stdout: string;
  stderr: string;
}

async function cli(db: FreshDb, args: string[], extraEnv: Env = {}): Promise<CliResult> {
  const child = spawnCli(args, { ...db.env, ...extraEnv });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const exit = await waitForExit(child, COMMAND_TIMEOUT_MS, `parley ${args.join(" ")}`);
  // Let the pipes drain: 'exit' can fire before the last output arrives.
  await new Promise<void>((resolve) => {
    if (child.stdout!.readableEnded && child.stderr!.readableEnded) resolve();
    else child.once("close", () => resolve());
  });
  return { ...exit, stdout, stderr };
}

function describe(result: CliResult): string {
  return `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

/** Runs a command that must succeed; returns its output. */
async function ok(db: FreshDb, args: string[], extraEnv: Env = {}): Promise<CliResult> {
  const result = await cli(db, args, extraEnv);
  assert.equal(result.code, 0, `parley ${args.join(" ")}: ${describe(result)}`);
  return result;
}

/** Parses output that must be exactly one JSON object on one line. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function singleJson(stdout: string): any {
  const lines = stdout.split("\n").filter((line) => line.trim() !== "");
  assert.equal(lines.length, 1, `expected one line of JSON, got:\n${stdout}`);
  const parsed: unknown = JSON.parse(lines[0]!);
  assert.ok(parsed !== null && typeof parsed === "object" && !Array.isArray(parsed), `not a JSON object: ${stdout}`);
  return parsed;
}

function assertUsage(result: CliResult, message?: RegExp): void {
  assert.equal(result.code, 2, describe(result));
  assert.match(result.stderr, /Usage: parley/, describe(result));
  if (message) assert.match(result.stderr, message, describe(result));
}

function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

const OWNER = { email: "boss@acme.example", password: "s3cretpw" };

async function initOrg(db: FreshDb, extraEnv: Env = {}): Promise<{ user_id: number; email: string; api_key: string; realm_url: string }> {
  const result = await ok(
    db,
    ["init", "--org-name", "Acme", "--owner-email", OWNER.email, "--owner-password", OWNER.password, "--json"],
    extraEnv,
  );
  return singleJson(result.stdout);
}

// ---- HTTP -------------------------------------------------------------------

function basicAuth(email: string, apiKey: string): string {
  return `Basic ${Buffer.from(`${email}:${apiKey}`).toString("base64")}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function http(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  const text = await response.text();
  try {
    return { status: response.status, body: JSON.parse(text) };
  } catch {
    return { status: response.status, body: text };
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function getMe(baseUrl: string, email: string, apiKey: string): Promise<any> {
  const reply = await http(`${baseUrl}/api/v1/users/me`, { headers: { authorization: basicAuth(email, apiKey) } });
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(reply.body.result, "success", JSON.stringify(reply.body));
  return reply.body;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function fetchApiKey(baseUrl: string, username: string, password: string): Promise<{ status: number; body: any }> {
  return http(`${baseUrl}/api/v1/fetch_api_key`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ username, password }).toString(),
  });
}

// ---- serve ------------------------------------------------------------------

interface Serving {
  child: ChildProcess;
  url: string;
  /** The dialect the server said it runs on. */
  dialect: string;
  /** Everything written to stdout so far. */
  stdout(): string;
  stderr(): string;
  /** Sends `signal` and waits for the exit. */
  stop(signal: NodeJS.Signals): Promise<Exit>;
}

const LISTENING = /^Parley listening on (\S+) \((\w+)\)$/;

/** Starts `parley serve` on an ephemeral port and waits for its "listening" log line. */
async function serve(t: TestContext, db: FreshDb, extraEnv: Env = {}): Promise<Serving> {
  const child = spawnCli(["serve"], { ...db.env, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", ...extraEnv });
  // Whatever happens in the test, no server outlives it.
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8");
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));

  const started = await new Promise<{ url: string; dialect: string }>((resolve, reject) => {
    let pending = "";
    const fail = (message: string) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`${message}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
    };
    const timer = setTimeout(() => fail(`serve did not start listening within ${SERVE_START_TIMEOUT_MS} ms`), SERVE_START_TIMEOUT_MS);
    child.once("exit", (code, signal) => fail(`serve exited before listening (code ${code}, signal ${signal})`));
    child.stdout!.on("data", (chunk: string) => {
      stdout += chunk;
      pending += chunk;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        let entry: { msg?: unknown };
        try {
          entry = JSON.parse(line) as { msg?: unknown };
        } catch {
          continue; // the credentials block is plain text
        }
        const match = typeof entry.msg === "string" ? LISTENING.exec(entry.msg) : null;
        if (match) {
          clearTimeout(timer);
          child.removeAllListeners("exit");
          resolve({ url: match[1]!, dialect: match[2]! });
        }
      }
    });
  });

  return {
    child,
    ...started,
    stdout: () => stdout,
    stderr: () => stderr,
    stop: async (signal) => {
      child.kill(signal);
      return waitForExit(child, SERVE_STOP_TIMEOUT_MS, `serve after ${signal}`);
    },
  };
}

// ---- tests ------------------------------------------------------------------

test("init --json prints one JSON object with the owner's credentials; a second init fails", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const result = await ok(db, ["init", "--org-name", "Acme", "--owner-email", OWNER.email, "--owner-password", OWNER.password, "--json"]);
  const body = singleJson(result.stdout);
  assert.deepEqual(Object.keys(body).sort(), ["api_key", "email", "realm_url", "user_id"]);
  assert.ok(Number.isInteger(body.user_id) && body.user_id > 0, `user_id: ${body.user_id}`);
  assert.equal(body.email, OWNER.email);
  assert.match(body.api_key, API_KEY);
  assert.equal(typeof body.realm_url, "string");
  assert.doesNotThrow(() => new URL(body.realm_url), body.realm_url);
  assert.equal(result.stderr, "");

  // The database is the one the test chose, not some default.
  if (PG_URL) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const { rows } = await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'users'", [db.schema]);
      assert.equal(rows[0].n, 1, `no users table in schema ${db.schema}`);
    } finally {
      await client.end();
    }
  } else {
    assert.ok(fs.existsSync(path.join(db.dataDir, "parley.sqlite3")), "the SQLite file is in DATA_DIR");
  }

  const again = await cli(db, ["init", "--org-name", "Other", "--owner-email", "other@acme.example", "--owner-password", "0therpass", "--json"]);
  assert.equal(again.code, 1, describe(again));
  assert.match(again.stderr, /^parley: .*already has an organization/, describe(again));
  assert.doesNotMatch(again.stderr, /Usage: parley/);
  assert.equal(again.stdout, "");

  // The first owner is untouched.
  const key = await ok(db, ["api-key", "--email", OWNER.email]);
  assert.equal(key.stdout, `${body.api_key}\n`);
});

test("import zulip on an empty database: exit 0, counts per table on stdout, the users can then use the server's API keys", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  // The smallest export Zulip writes: one realm, one user, no messages (test/import-zulip.test.ts covers the rest).
  const realm = {
    zerver_realm: [{ id: 3, name: "Moved Org", description: "", date_created: 1590000000 }],
    zerver_userprofile: [{ id: 9, email: "ann@acme.example", delivery_email: "ann@acme.example", full_name: "Ann", role: 100, is_active: true, is_bot: false, date_joined: 1590000000 }],
  };
  const file = path.join(db.dataDir, "export.tar.gz");
  const pack = tar.pack();
  pack.entry({ name: "zulip-export-1/realm.json" }, JSON.stringify(realm));
  pack.finalize();
  await pipeline(pack, createGzip(), fs.createWriteStream(file));

  const result = await ok(db, ["import", "zulip", file]);
  assert.match(result.stdout, /^realm: 1$/m);
  assert.match(result.stdout, /^users: 1$/m);
  assert.match(result.stdout, /^messages: 0$/m);
  assert.match(result.stdout, /Imported the organization/);
  const key = await ok(db, ["api-key", "--email", "ann@acme.example"]);
  assert.match(key.stdout.trim(), API_KEY);
  // A second run is refused with status 2.
  const again = await cli(db, ["import", "zulip", file]);
  assert.equal(again.code, 2, describe(again));
  // A file that is not a tarball: status 1, said in one line.
  fs.writeFileSync(path.join(db.dataDir, "bad.tar.gz"), "not gzip");
  const fresh = freshDb(t);
  const bad = await cli(fresh, ["import", "zulip", path.join(db.dataDir, "bad.tar.gz")]);
  assert.equal(bad.code, 1, describe(bad));
  assert.match(bad.stderr, /^parley: cannot read .* as a \.tar\.gz: .*\(nothing was imported\)\n$/);
});

test("import slack on an empty database: exit 0, counts on stdout; a file that is not a zip: exit 1", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  // A small Slack export (test/import-slack.test.ts covers the rest).
  const users = [{ id: "U1", name: "ann", real_name: "Ann", is_owner: true, profile: { email: "ann@acme.example", real_name: "Ann" } }];
  const channels = [{ id: "C1", name: "general", created: 1600000000, creator: "U1", is_general: true, members: ["U1"], purpose: { value: "" } }];
  const file = path.join(db.dataDir, "Acme Slack export Sep 1 2020 - Sep 30 2020.zip");
  fs.writeFileSync(
    file,
    zipFile(
      new Map([
        ["users.json", JSON.stringify(users)],
        ["channels.json", JSON.stringify(channels)],
        ["general/2020-09-13.json", JSON.stringify([{ type: "message", user: "U1", text: "Hello *all*", ts: "1600000000.000100" }])],
      ]),
    ),
  );
  const result = await ok(db, ["import", "slack", file]);
  assert.match(result.stdout, /^users: 1$/m);
  assert.match(result.stdout, /^channels: 1$/m);
  assert.match(result.stdout, /^messages: 1$/m);
  assert.match(result.stdout, /Imported the organization/);
  assert.match((await ok(db, ["api-key", "--email", "ann@acme.example"])).stdout.trim(), API_KEY);
  fs.writeFileSync(path.join(db.dataDir, "bad.zip"), "not a zip file");
  const bad = await cli(freshDb(t), ["import", "slack", path.join(db.dataDir, "bad.zip")]);
  assert.equal(bad.code, 1, describe(bad));
  assert.match(bad.stderr, /^parley: not a zip file .*\(nothing was imported\)\n$/);
});

for (const [source, file] of [
  ["zulip", "missing.tar.gz"],
  ["slack", "Acme Slack export.zip"],
] as const) {
  test(`import ${source} refuses a database that has an organization: exit 2, nothing changed`, { timeout: 180_000 }, async (t) => {
    const db = freshDb(t);
    await ok(db, ["init", "--org-name", "Acme", "--owner-email", OWNER.email, "--owner-password", OWNER.password]);
    const result = await cli(db, ["import", source, path.join(db.dataDir, file)]);
    assert.equal(result.code, 2, describe(result));
    assert.match(result.stderr, /already has an organization/);
    assert.equal(result.stdout, "");
    // The organization is the one it was.
    const key = await ok(db, ["api-key", "--email", OWNER.email]);
    assert.match(key.stdout.trim(), API_KEY);
  });
}

test("init without --json prints the credentials and a zuliprc", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const env = { EXTERNAL_URL: "https://chat.acme.example" };
  const result = await ok(db, ["init", "--org-name", "Acme", "--owner-email", OWNER.email, "--owner-password", OWNER.password, "--owner-name", "Bea Boss"], env);
  const out = result.stdout;
  assert.throws(() => JSON.parse(out), "human-readable, not JSON");
  assert.ok(out.includes(OWNER.email), out);
  assert.ok(out.includes(OWNER.password), out);
  const key = /API key:\s+(\S+)/.exec(out)?.[1];
  assert.ok(key, out);
  assert.match(key, API_KEY);
  assert.ok(out.includes(`[api]\nemail=${OWNER.email}\nkey=${key}\nsite=https://chat.acme.example\n`), out);

  // The key printed is the one stored, and the JSON form of api-key agrees.
  const json = singleJson((await ok(db, ["api-key", "--email", OWNER.email, "--json"])).stdout);
  assert.equal(json.api_key, key);
});

test("create-user: members, bots, bad roles, missing options, no organization, duplicates", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const userArgs = ["--email", "a@acme.example", "--full-name", "Ann Example", "--password", "pw123456"];

  // Before init there is nobody to add users to.
  const early = await cli(db, ["create-user", ...userArgs, "--json"]);
  assertUsage(early, /no organization/);
  assert.equal(early.stdout, "");

  const owner = await initOrg(db);

  const [badRole, noEmail, badRoleText] = await Promise.all([
    cli(db, ["create-user", ...userArgs, "--role", "999"]),
    cli(db, ["create-user", "--full-name", "Ann Example", "--password", "pw123456"]),
    cli(db, ["create-user", ...userArgs, "--role", "admin"]),
  ]);
  assertUsage(badRole, /--role must be one of/);
  assertUsage(noEmail, /--email is required/);
  assertUsage(badRoleText, /--role must be one of/);

  const created = await ok(db, ["create-user", ...userArgs, "--role", "200", "--json"]);
  const ann = singleJson(created.stdout);
  assert.deepEqual(Object.keys(ann).sort(), ["api_key", "email", "user_id"]);
  assert.ok(Number.isInteger(ann.user_id) && ann.user_id > owner.user_id, `user_id: ${ann.user_id}`);
  assert.equal(ann.email, "a@acme.example");
  assert.match(ann.api_key, API_KEY);
  assert.notEqual(ann.api_key, owner.api_key);

  const bot = await ok(db, ["create-user", "--email", "helper-bot@acme.example", "--full-name", "Helper Bot", "--bot"]);
  assert.match(bot.stdout, /^Created bot helper-bot@acme\.example \(id \d+\), API key [A-Za-z0-9]{32}\n$/, bot.stdout);

  const member = await ok(db, ["create-user", "--email", "m@acme.example", "--full-name", "Max Member", "--password", "pw123456"]);
  assert.match(member.stdout, /^Created user m@acme\.example \(id \d+\), API key [A-Za-z0-9]{32}\n$/, member.stdout);

  const duplicate = await cli(db, ["create-user", "--email", "a@acme.example", "--full-name", "Ann Again", "--password", "pw123456"]);
  assert.equal(duplicate.code, 1, describe(duplicate));
  assert.match(duplicate.stderr, /already in use/);
  assert.doesNotMatch(duplicate.stderr, /Usage: parley/);
  assert.equal(duplicate.stdout, "");

  // The owner's address is taken too, whatever its case.
  const ownerDuplicate = await cli(db, ["create-user", "--email", OWNER.email.toUpperCase(), "--full-name", "Impostor", "--password", "pw123456"]);
  assert.equal(ownerDuplicate.code, 1, describe(ownerDuplicate));
  assert.match(ownerDuplicate.stderr, /already in use/);

  // Ann's key did not change.
  assert.equal((await ok(db, ["api-key", "--email", "a@acme.example"])).stdout, `${ann.api_key}\n`);
});

test("api-key prints a user's key, as JSON or bare; unknown emails are usage errors", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);

  const early = await cli(db, ["api-key", "--email", OWNER.email]);
  assertUsage(early, /no organization/);

  const owner = await initOrg(db);
  const [json, plain, upper, unknown, missing] = await Promise.all([
    ok(db, ["api-key", "--email", OWNER.email, "--json"]),
    ok(db, ["api-key", "--email", OWNER.email]),
    ok(db, ["api-key", "--email", OWNER.email.toUpperCase()]),
    cli(db, ["api-key", "--email", "nobody@acme.example"]),
    cli(db, ["api-key"]),
  ]);
  assert.deepEqual(singleJson(json.stdout), { user_id: owner.user_id, email: OWNER.email, api_key: owner.api_key });
  assert.equal(plain.stdout, `${owner.api_key}\n`);
  assert.equal(upper.stdout, `${owner.api_key}\n`, "emails match case-insensitively");
  assertUsage(unknown, /no user with email nobody@acme\.example/);
  assert.equal(unknown.stdout, "");
  assertUsage(missing, /--email is required/);
});

test("migrate succeeds, and again on a migrated database", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const first = await ok(db, ["migrate"]);
  assert.match(first.stdout, /^.+\n$/);
  assert.match(first.stdout, /up to date/i);
  const second = await ok(db, ["migrate"]);
  assert.equal(second.stdout, first.stdout);
  // A migrated, empty database still takes an init.
  const owner = await initOrg(db);
  assert.equal(owner.email, OWNER.email);
  await ok(db, ["migrate"]);
});

test("usage errors exit 2 with the help on stderr; help exits 0 with it on stdout", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const [none, unknown, bogus, serveArgs, initMissing, help, dashH, importNone, importOther, importExtra, slackNoToken, slackEmptyToken, slackOther, zulipToken] = await Promise.all([
    cli(db, []),
    cli(db, ["frobnicate"]),
    cli(db, ["init", "--bogus"]),
    cli(db, ["serve", "--port", "1234"]),
    cli(db, ["init", "--org-name", "Acme"]),
    cli(db, ["help"]),
    cli(db, ["--help"]),
    cli(db, ["import"]),
    cli(db, ["import", "mattermost", "x.zip"]),
    cli(db, ["import", "zulip", "a.tar.gz", "b.tar.gz"]),
    cli(db, ["import", "slack", "a.zip", "--token"]),
    cli(db, ["import", "slack", "a.zip", "--token="]),
    cli(db, ["import", "slack", "a.zip", "--team", "x"]),
    cli(db, ["import", "zulip", "a.tar.gz", "--token", "xoxb-1"]),
  ]);
  assertUsage(none, /no command given/);
  assertUsage(unknown, /unknown command 'frobnicate'/);
  assertUsage(bogus, /bogus/);
  assertUsage(serveArgs, /serve takes no arguments/);
  assertUsage(initMissing, /--owner-email is required/);
  assertUsage(importNone, /import needs a source: zulip or slack/);
  assertUsage(importOther, /cannot import from 'mattermost'/);
  assertUsage(importExtra, /import zulip takes one argument/);
  assertUsage(slackNoToken, /--token/);
  assertUsage(slackEmptyToken, /--token needs a Slack token/);
  assertUsage(slackOther, /--team/);
  assertUsage(zulipToken, /import zulip takes one argument/);
  for (const result of [none, unknown, bogus, serveArgs, initMissing, importNone, importOther, importExtra, slackNoToken, slackEmptyToken, slackOther, zulipToken]) assert.equal(result.stdout, "", describe(result));

  for (const result of [help, dashH]) {
    assert.equal(result.code, 0, describe(result));
    assert.match(result.stdout, /^Usage: parley/);
    for (const command of ["serve", "migrate", "init", "create-user", "api-key", "import zulip", "import slack", "move-uploads"]) assert.ok(result.stdout.includes(command), command);
    assert.equal(result.stderr, "");
  }
  // The help is the same text everywhere.
  assert.ok(none.stderr.endsWith(help.stdout), describe(none));
});

test("serve creates the organization once, answers the API, stops cleanly on SIGTERM/SIGINT, and persists", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const ownerEmail = "o@acme.example";
  const env = { OWNER_EMAIL: ownerEmail, ORG_NAME: "Serve Org", EXTERNAL_URL: "http://chat.acme.example" };

  const first = await serve(t, db, env);
  assert.equal(first.dialect, DIALECT);
  assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(first.url, "http://127.0.0.1:0");

  const out = first.stdout();
  assert.equal(count(out, "Created the organization"), 1, out);
  // It says which backends it uses, once.
  const backendLines = out.split("\n").filter((line) => line.includes('"Backends: '));
  assert.equal(backendLines.length, 1, out);
  const { backends } = JSON.parse(backendLines[0]!);
  const redis = REDIS_URL ? `redis ${new URL(REDIS_URL).hostname}:${new URL(REDIS_URL).port || "6379"}/` : undefined;
  if (PG_URL) assert.match(backends.database, new RegExp(`^postgres .*${new URL(PG_URL).hostname}:\\d+/.*, schema ${db.schema}$`));
  else assert.equal(backends.database, `sqlite ${path.join(db.dataDir, "parley.sqlite3")}`);
  for (const name of ["events", "rateLimits"]) {
    if (redis) assert.ok(backends[name].startsWith(redis) && backends[name].endsWith(`key prefix ${db.schema}:`), backends[name]);
    else assert.equal(backends[name], "in-process");
  }
  assert.equal(backends.uploads, process.env.UPLOAD_STORAGE === "database" && PG_URL ? "database (the stored_files tables)" : `local directory ${path.join(db.dataDir, "uploads")}`);
  assert.ok(out.includes('"Serve Org"'), out);
  const creds = /email:\s+(\S+)\n\s*password:\s+(\S+)\n\s*API key:\s+(\S+)\n/.exec(out);
  assert.ok(creds, `no credentials in:\n${out}`);
  const [, email, password, apiKey] = creds as unknown as [string, string, string, string];
  assert.equal(email, ownerEmail);
  assert.ok(password.length >= 8, password);
  assert.match(apiKey, API_KEY);
  assert.equal(count(out, "password:"), 1, out);
  assert.equal(count(out, "[api]"), 1, out);
  assert.ok(out.includes(`[api]\nemail=${ownerEmail}\nkey=${apiKey}\nsite=http://chat.acme.example\n`), out);

  const me = await getMe(first.url, ownerEmail, apiKey);
  assert.equal(me.role, 100);
  assert.equal(me.is_owner, true);
  assert.equal(me.delivery_email, ownerEmail);
  assert.equal(me.full_name, "Owner");

  const wrongKey = await http(`${first.url}/api/v1/users/me`, { headers: { authorization: basicAuth(ownerEmail, "x".repeat(32)) } });
  assert.equal(wrongKey.status, 401, JSON.stringify(wrongKey.body));

  const fetched = await fetchApiKey(first.url, ownerEmail, password);
  assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
  assert.equal(fetched.body.api_key, apiKey);
  assert.equal(fetched.body.email, ownerEmail);
  assert.equal(fetched.body.user_id, me.user_id);

  const settings = await http(`${first.url}/api/v1/server_settings`);
  assert.equal(settings.status, 200, JSON.stringify(settings.body));
  assert.equal(settings.body.realm_name, "Serve Org");

  const firstExit = await first.stop("SIGTERM");
  assert.deepEqual(firstExit, { code: 0, signal: null }, `stderr:\n${first.stderr()}`);
  await assert.rejects(fetch(`${first.url}/api/v1/server_settings`), "the port is closed after SIGTERM");

  // Same database, different settings: the organization is not created again.
  const second = await serve(t, db, { ...env, OWNER_EMAIL: "someone-else@acme.example", ORG_NAME: "Renamed Org" });
  const out2 = second.stdout();
  assert.doesNotMatch(out2, /Created the organization/);
  assert.doesNotMatch(out2, /password:/);
  assert.ok(!out2.includes("[api]"), out2);
  assert.ok(!out2.includes(apiKey), "the key is not printed again");

  const meAgain = await getMe(second.url, ownerEmail, apiKey);
  assert.equal(meAgain.user_id, me.user_id);
  assert.equal(meAgain.role, 100);
  assert.equal((await fetchApiKey(second.url, ownerEmail, password)).body.api_key, apiKey);
  assert.equal((await http(`${second.url}/api/v1/server_settings`)).body.realm_name, "Serve Org");

  const secondExit = await second.stop("SIGINT");
  assert.deepEqual(secondExit, { code: 0, signal: null }, `stderr:\n${second.stderr()}`);

  // The CLI reads the same database the server wrote.
  assert.equal((await ok(db, ["api-key", "--email", ownerEmail])).stdout, `${apiKey}\n`);
});

test("users made with init and create-user can use a running server", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const owner = await initOrg(db);
  const member = singleJson(
    (await ok(db, ["create-user", "--email", "mia@acme.example", "--full-name", "Mia Member", "--password", "memberpw1", "--json"])).stdout,
  );
  const bot = singleJson(
    (await ok(db, ["create-user", "--email", "relay-bot@acme.example", "--full-name", "Relay Bot", "--bot", "--json"])).stdout,
  );

  const server = await serve(t, db, { OWNER_EMAIL: "ignored@acme.example" });
  assert.doesNotMatch(server.stdout(), /Created the organization/, "init already made the organization");

  const ownerMe = await getMe(server.url, OWNER.email, owner.api_key);
  assert.equal(ownerMe.user_id, owner.user_id);
  assert.equal(ownerMe.role, 100);

  const memberMe = await getMe(server.url, "mia@acme.example", member.api_key);
  assert.equal(memberMe.user_id, member.user_id);
  assert.equal(memberMe.role, 400, "create-user's default role is member");
  assert.equal(memberMe.full_name, "Mia Member");
  assert.equal(memberMe.is_bot, false);

  const fetched = await fetchApiKey(server.url, "mia@acme.example", "memberpw1");
  assert.equal(fetched.status, 200, JSON.stringify(fetched.body));
  assert.equal(fetched.body.api_key, member.api_key);

  const botMe = await getMe(server.url, "relay-bot@acme.example", bot.api_key);
  assert.equal(botMe.user_id, bot.user_id);
  assert.equal(botMe.is_bot, true);
  assert.equal(botMe.full_name, "Relay Bot");

  // A key belongs to its user only.
  const swapped = await http(`${server.url}/api/v1/users/me`, { headers: { authorization: basicAuth("mia@acme.example", owner.api_key) } });
  assert.equal(swapped.status, 401, JSON.stringify(swapped.body));

  // A user added while the server runs works at once.
  const late = singleJson(
    (await ok(db, ["create-user", "--email", "late@acme.example", "--full-name", "Lee Late", "--password", "latepass1", "--role", "600", "--json"])).stdout,
  );
  const lateMe = await getMe(server.url, "late@acme.example", late.api_key);
  assert.equal(lateMe.role, 600);

  assert.deepEqual(await server.stop("SIGTERM"), { code: 0, signal: null }, `stderr:\n${server.stderr()}`);
});

test("the installed bin runs the compiled CLI (what npx parley and npm start use)", { timeout: 180_000 }, async (t) => {
  // npm test builds dist/ before running the suite.
  assert.ok(fs.existsSync(path.join(ROOT, "dist", "cli.js")), "dist/cli.js is missing: run npm run build");
  const db = freshDb(t);
  const bin = { PARLEY_BIN: "1" };
  const help = await cli(db, ["help"], bin);
  assert.equal(help.code, 0, describe(help));
  assert.match(help.stdout, /^Usage: parley/);
  const init = JSON.parse((await ok(db, ["init", "--org-name", "Bin Org", "--owner-email", "bin@acme.example", "--owner-password", "binpass1", "--json"], bin)).stdout);
  assert.equal(init.email, "bin@acme.example");
  const key = (await ok(db, ["api-key", "--email", "bin@acme.example"], bin)).stdout.trim();
  assert.equal(key, init.api_key);
});

test("create-user --bot takes no password; a human needs one", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  await ok(db, ["init", "--org-name", "Acme", "--owner-email", "boss@acme.example", "--owner-password", "s3cretpw"]);
  const bot = JSON.parse((await ok(db, ["create-user", "--email", "b@acme.example", "--full-name", "Bee Bot", "--bot", "--json"])).stdout);
  assert.match(bot.api_key, API_KEY);
  assertUsage(await cli(db, ["create-user", "--email", "c@acme.example", "--full-name", "See Bot", "--bot", "--password", "pw123456"]), /bots have no password/);
  assertUsage(await cli(db, ["create-user", "--email", "d@acme.example", "--full-name", "Dee Human"]), /--password is required/);
});

test("an unreachable database is reported in one line, exit 1", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  // Port 1 on loopback: nothing listens there.
  const result = await cli(db, ["migrate"], { DATABASE_URL: "postgres://postgres@127.0.0.1:1/test" });
  assert.equal(result.code, 1, describe(result));
  assert.match(result.stderr, /^parley: cannot open the database: /);
  assert.equal(result.stderr.trim().split("\n").length, 1, describe(result));
});

test("SIGTERM lets a request already in flight finish, then exits 0", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  const owner = await initOrg(db);
  const server = await serve(t, db);
  // A first request opens a keep-alive connection, so the slow one below is
  // surely received before the signal; fetch_api_key spends tens of ms in argon2.
  assert.equal((await getMe(server.url, owner.email, owner.api_key)).user_id, owner.user_id);
  const inFlight = fetchApiKey(server.url, OWNER.email, OWNER.password);
  // Long enough for a loaded machine to read the request, well inside argon2's time.
  await new Promise((r) => setTimeout(r, 25));
  const exit = server.stop("SIGTERM");
  const answer = await inFlight;
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.equal(answer.body.api_key, owner.api_key);
  assert.deepEqual(await exit, { code: 0, signal: null });
});

test("SIGTERM: a drain that has not ended after SHUTDOWN_TIMEOUT_SECONDS ends the process with status 1, saying so", { timeout: 180_000 }, async (t) => {
  const db = freshDb(t);
  await initOrg(db);
  const server = await serve(t, db, { SHUTDOWN_TIMEOUT_SECONDS: "1" });
  // A client that began a request and never finishes it: its connection is
  // busy, so the drain waits for it (an idle one would be closed at once).
  const { port, hostname } = new URL(server.url);
  const socket = net.connect(Number(port), hostname);
  t.after(() => socket.destroy());
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  await new Promise((resolve) => socket.write("GET /api/v1/server_settings HTTP/1.1\r\nHost: parley\r\n", resolve));
  // Long enough for a loaded machine to read the bytes before the signal.
  await new Promise((r) => setTimeout(r, 200));
  // Well under the 10 s the drain was bounded by before it was configurable.
  assert.deepEqual(await server.stop("SIGTERM"), { code: 1, signal: null }, `stdout:\n${server.stdout()}\nstderr:\n${server.stderr()}`);
  assert.match(server.stdout(), /SIGTERM: not drained after 1 s \(SHUTDOWN_TIMEOUT_SECONDS\): exiting/);
});

test("the backends log line names hosts, databases and prefixes, never a password", () => {
  const backends = describeBackends(
    loadConfig({
      DATABASE_URL: "postgres://chat:pg-secret@db.internal:5433/parley?sslmode=require",
      PG_SCHEMA: "acme",
      REDIS_URL: "redis://default:redis-secret@cache.internal:6380/2",
      REDIS_KEY_PREFIX: "acme:",
      DATA_DIR: "/srv/parley",
    }),
  );
  assert.deepEqual(backends, {
    database: "postgres chat@db.internal:5433/parley, schema acme",
    events: "redis cache.internal:6380/2, key prefix acme:",
    rateLimits: "redis cache.internal:6380/2, key prefix acme:",
    uploads: "local directory /srv/parley/uploads",
  });
  assert.doesNotMatch(JSON.stringify(backends), /secret/);
  const single = describeBackends(loadConfig({ DATA_DIR: "/srv/parley", RATE_LIMITING: "false" }));
  assert.deepEqual(single, { database: "sqlite /srv/parley/parley.sqlite3", events: "in-process", rateLimits: "off (RATE_LIMITING=false)", uploads: "local directory /srv/parley/uploads" });
  assert.equal(describeBackends(loadConfig({ DATABASE_URL: "postgresql:///parley?host=/run/postgresql" })).database, "postgres /run/postgresql:5432/parley, schema (the search_path's)");
  assert.equal(describeBackends(loadConfig({ DATABASE_URL: "postgres://db.internal/parley", UPLOAD_STORAGE: "database" })).uploads, "database (the stored_files tables)");
});
