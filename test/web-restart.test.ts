// The web client across a real server restart: `parley serve` (the compiled
// CLI, as `npm start` runs it) is stopped and started again on the same port
// and database while a browser is signed in. The page shows "Reconnecting…",
// keeps its session (stored in the database), registers a new event queue,
// and shows what was sent while it was away and after.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { BrowserHarness, channelLink, ROOT } from "./browser.ts";
import { PG_URL, dropPgSchema } from "./helpers.ts";

const CLI = path.join(ROOT, "dist", "cli.js");
const h = new BrowserHarness();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-restart-"));
const schema = PG_URL ? `restart_${crypto.randomBytes(6).toString("hex")}` : undefined;
let port = 0;
let server: ChildProcess | undefined;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port: p } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(p));
    });
  });
}

function env(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    RATE_LIMITING: "false",
    ...(PG_URL ? { DATABASE_URL: PG_URL, PG_SCHEMA: schema } : {}),
  };
}

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: env(), stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`parley ${args[0]} exited ${code}: ${out}`))));
  });
}

async function startServe(): Promise<void> {
  server = spawn(process.execPath, [CLI, "serve"], { env: env(), stdio: ["ignore", "ignore", "inherit"] });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || server.exitCode !== null) throw new Error("parley serve did not come up");
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stopServe(): Promise<void> {
  const child = server;
  server = undefined;
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

before(async () => {
  if (!fs.existsSync(CLI)) throw new Error("dist/cli.js is missing: npm test builds it (npm run build)");
  await h.start();
  port = await freePort();
});

after(async () => {
  await stopServe();
  await h.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (schema) await dropPgSchema(schema);
});

test("the page survives a server restart: reconnecting, same session, missed messages shown", { timeout: 180_000 }, async () => {
  const owner = JSON.parse(await run(["init", "--org-name", "Restart Org", "--owner-email", "owner@restart.example", "--owner-password", "restart-owner-pw", "--owner-name", "Rita Owner", "--json"])) as {
    email: string;
    api_key: string;
  };
  await startServe();
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Basic ${Buffer.from(`${owner.email}:${owner.api_key}`).toString("base64")}` };
  const form = (params: Record<string, string>) => ({ method: "POST", headers: { ...auth, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(params) });
  assert.equal((await fetch(`${base}/api/v1/users/me/subscriptions`, form({ subscriptions: JSON.stringify([{ name: "ops" }]) }))).status, 200);

  const page = await h.newPage();
  await page.goto(`${base}/`);
  await page.getByLabel("Email").fill(owner.email);
  await page.getByLabel("Password").fill("restart-owner-pw");
  await page.getByRole("button", { name: "Log in" }).click();
  await channelLink(page, "ops").click();
  await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();

  await stopServe();
  await page.getByRole("status").filter({ hasText: "Reconnecting…" }).waitFor({ timeout: 30_000 });
  await startServe();
  // Sent while the page has not yet found the new server (or just after): it must show either way.
  assert.equal((await fetch(`${base}/api/v1/messages`, form({ type: "stream", to: "ops", topic: "status", content: "Back after the restart" }))).status, 200);
  await page.getByText("Back after the restart").waitFor({ timeout: 60_000 });
  await page.getByText("Reconnecting…").waitFor({ state: "hidden", timeout: 30_000 });
  // Still signed in (the session lives in the database), and live: a message from the page goes through.
  await page.getByRole("textbox", { name: "Topic", exact: true }).fill("status");
  await page.getByRole("textbox", { name: "Message", exact: true }).fill("Seen it");
  await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
  const deadline = Date.now() + 30_000;
  for (;;) {
    const reply = (await (await fetch(`${base}/api/v1/messages?${new URLSearchParams({ anchor: "newest", num_before: "1", num_after: "0", apply_markdown: "false" })}`, { headers: auth })).json()) as {
      messages: { content: string }[];
    };
    if (reply.messages[0]?.content === "Seen it") break;
    if (Date.now() > deadline) assert.fail(`the page's message never arrived: ${JSON.stringify(reply)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.deepEqual(h.pageErrors, []);
});
