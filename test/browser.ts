// Shared set-up of the browser tests: Debian's Chromium driven by
// playwright-core against a real server (test/helpers.ts) serving the built
// client from dist/web. Chromium comes from the system (`apt-get install
// chromium`); Playwright's own browser download is not used. Without it the
// tests fail, loudly.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import type { Config } from "../src/config.ts";
import { WEB_CLIENT_DIR } from "../src/routes/web-client.ts";
import { assertSuccess, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
/** Generous: two cores shared by many processes. */
export const WAIT = 15_000;

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Builds the client when dist/web is missing or older than web/'s sources. */
export function ensureClientBuilt(): void {
  const index = path.join(WEB_CLIENT_DIR, "index.html");
  if (fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestMtime(path.join(ROOT, "web"))) return;
  execFileSync(process.execPath, [path.join(ROOT, "node_modules/vite/bin/vite.js"), "build", "--config", "web/vite.config.ts", "--logLevel", "warn"], { cwd: ROOT, stdio: "inherit" });
}

/** A test app, a browser, and pages whose errors fail the test. */
export class BrowserHarness {
  t!: TestApp;
  browser!: Browser;
  readonly contexts: BrowserContext[] = [];
  /** Uncaught errors in any page: a bug in the client. Tests assert it stays empty. */
  readonly pageErrors: string[] = [];

  /** Starts a server (with `overrides` to its configuration) and the browser. */
  async start(overrides: Partial<Config> = {}): Promise<void> {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(`Chromium is needed for the web client's browser tests and is not at ${CHROMIUM}: install it with \`apt-get install chromium\` (or set CHROMIUM_PATH).`);
    }
    ensureClientBuilt();
    this.t = await startTestApp(overrides);
    this.browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  }

  async close(): Promise<void> {
    for (const c of this.contexts) await c.close().catch(() => undefined);
    await this.browser?.close();
    await this.t?.close();
  }

  async newPage(options: { width?: number; height?: number; permissions?: string[] } = {}): Promise<Page> {
    const context = await this.browser.newContext({ viewport: { width: options.width ?? 1200, height: options.height ?? 800 }, colorScheme: "light", permissions: options.permissions });
    this.contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.on("pageerror", (error) => this.pageErrors.push(`${error.message}\n${error.stack ?? ""}`));
    return page;
  }

  /** Signs in through the sign-in page, opening `hash` (e.g. "#inbox") afterwards. */
  async logIn(page: Page, user: TestUser, hash = ""): Promise<void> {
    await page.goto(this.t.url + "/" + hash);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await sidebar(page).waitFor();
  }

  async createChannel(name: string, members: TestUser[], options: Record<string, unknown> = {}): Promise<number> {
    const t = this.t;
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: members.map((u) => u.id), ...options }));
    return assertSuccess(await t.api(t.users.admin, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  }

  async send(user: TestUser, streamId: number, topic: string, content: string): Promise<number> {
    return assertSuccess(await this.t.api(user, "POST", "/messages", { type: "stream", to: streamId, topic, content })).id as number;
  }
}

export function sidebar(page: Page): Locator {
  return page.getByRole("navigation", { name: "Sidebar" });
}

export function channelLink(page: Page, name: string): Locator {
  return sidebar(page).getByRole("link", { name, exact: true });
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeout = WAIT): Promise<void> {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
