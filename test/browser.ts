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

/** What a page's securitypolicyviolation event says, sent to the test through a binding. */
declare global {
  interface Window {
    __parleyCspViolation?: (report: string) => void;
  }
}

/**
 * A test app, a browser, and pages whose errors fail the test. The pages run
 * under the server's Content-Security-Policy (Playwright's bypassCSP stays
 * off), and every violation of it is a page error: something the client
 * does that the policy forbids, which real browsers would block.
 */
export class BrowserHarness {
  t!: TestApp;
  browser!: Browser;
  readonly contexts: BrowserContext[] = [];
  /** Uncaught errors and CSP violations in any page: a bug in the client (or the policy). Tests assert it stays empty. */
  readonly pageErrors: string[] = [];
  /** The CSP violations among pageErrors, with their page: close() fails on any left, for tests that do not check pageErrors. */
  private readonly cspViolations: { page: Page; text: string }[] = [];

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
    assert.deepEqual(
      this.cspViolations.map((v) => v.text),
      [],
      "the pages broke the server's Content-Security-Policy",
    );
  }

  async newPage(options: { width?: number; height?: number; permissions?: string[] } = {}): Promise<Page> {
    const context = await this.browser.newContext({ viewport: { width: options.width ?? 1200, height: options.height ?? 800 }, colorScheme: "light", permissions: options.permissions });
    this.contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT);
    page.on("pageerror", (error) => this.pageErrors.push(`${error.message}\n${error.stack ?? ""}`));
    const violation = (text: string) => {
      this.cspViolations.push({ page, text });
      this.pageErrors.push(text);
    };
    await page.exposeBinding("__parleyCspViolation", (_source, report: string) => violation(report));
    // Before any of the page's own scripts: every violation in every document the page loads.
    await page.addInitScript(() => {
      document.addEventListener("securitypolicyviolation", (e) => {
        window.__parleyCspViolation?.(`CSP violation: ${e.effectiveDirective} refused ${e.blockedURI || "(inline)"} in ${e.documentURI} at ${e.sourceFile}:${e.lineNumber} ${e.sample}`);
      });
    });
    // Chromium's own word, for what the event does not report (a policy it cannot parse, violations in documents the init script missed).
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) violation(`CSP console ${message.type()}: ${message.text()}`);
    });
    return page;
  }

  /**
   * Closes `page` and hands back the CSP violations it caused, no longer
   * counted as errors: for a test that provokes them on purpose.
   */
  async closeExpectingViolations(page: Page): Promise<string[]> {
    await page.context().close();
    const taken = this.cspViolations.filter((v) => v.page === page).map((v) => v.text);
    for (let i = this.cspViolations.length - 1; i >= 0; i--) if (this.cspViolations[i]!.page === page) this.cspViolations.splice(i, 1);
    for (const text of taken) {
      const at = this.pageErrors.indexOf(text);
      if (at >= 0) this.pageErrors.splice(at, 1);
    }
    return taken;
  }

  /** Signs in through the sign-in page, opening `hash` (e.g. "#inbox") afterwards. */
  async logIn(page: Page, user: TestUser, hash = ""): Promise<void> {
    await page.goto(this.t.url + "/" + hash);
    await page.getByLabel("Email").fill(user.email);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Log in" }).click();
    // Attached, not visible: at phone size the sidebar is a closed drawer.
    await page.locator("nav#left-sidebar").waitFor({ state: "attached" });
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

/** One accessibility finding of axe-core: the rule, its impact, and the elements it found. */
export interface AxeFinding {
  id: string;
  impact: string;
  help: string;
  targets: string[];
  /** The start of each element's HTML, to tell which one it is. */
  html: string[];
}

let axeSource: string | null = null;

/**
 * The serious and critical WCAG findings of axe-core on the page as it is
 * now (or within `selector`). axe runs through the DevTools protocol, so the
 * page's Content-Security-Policy is not loosened for it.
 */
export async function axeFindings(page: Page, selector?: string): Promise<AxeFinding[]> {
  axeSource ??= fs.readFileSync(path.join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
  const loaded = await page.evaluate(() => typeof (window as unknown as { axe?: unknown }).axe !== "undefined");
  if (!loaded) await page.evaluate(axeSource);
  const violations = await page.evaluate(async (context) => {
    const axe = (window as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: { id: string; impact: string; help: string; nodes: { target: string[]; html: string }[] }[] }> } }).axe;
    const result = await axe.run(context ?? document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] }, resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")), html: v.nodes.map((n) => n.html.slice(0, 160)) }));
  }, selector ?? null);
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}
