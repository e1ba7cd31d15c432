// The web client's budgets (issue 20), measured in Debian's Chromium driven
// by playwright-core against a running Parley with a large history
// (bench/messages.ts seeds it and calls measureWebClient; `npm run bench:web`):
//   (a) first paint of the message list: from navigation start to the first
//       message row on screen, signed in, "All messages" (anchor first_unread),
//       a fresh page each time; yardstick: the same browser loading a bare
//       Fastify route's page in the same run;
//   (b) JavaScript shipped on first load, gzipped (and as served: brotli);
//   (c) a new message from another user on screen: from the moment that
//       user's POST /messages returns to the moment its row is in the page
//       (both clocks are this machine's Date.now());
//   (d) scrolling back through 5,000 messages with the mouse wheel: frame
//       times (requestAnimationFrame gaps), rows in the DOM, and JS heap
//       after a forced GC at 1,000 / 2,500 / 5,000 messages.
import fs from "node:fs";
import http from "node:http";
import { chromium, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

export interface WebBenchInput {
  base: string;
  /** A page of the yardstick server (a bare Fastify route). */
  barePageUrl: string;
  viewer: { email: string; password: string };
  sender: { email: string; apiKey: string };
  /** A channel both are subscribed to, with an empty history: the latency case's list sits at the bottom. */
  latencyChannel: { id: number; name: string };
}

export interface WebBenchResult {
  firstPaintMs: number[];
  barePageMs: number[];
  jsGzipBytes: number;
  jsServedBytes: number;
  jsFiles: number;
  latencyMs: number[];
  scroll: {
    messagesSeen: number;
    seconds: number;
    frames: number;
    framesOver50ms: number;
    frameP50: number;
    frameP99: number;
    frameMax: number;
    checkpoints: { messages: number; heapMB: number; domNodes: number; rowsInDom: number }[];
  };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
};

export async function measureWebClient(input: WebBenchInput, onProgress: (line: string) => void = () => undefined): Promise<WebBenchResult> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`Chromium is not at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const login = await context.request.post(`${input.base}/json/login`, { form: { username: input.viewer.email, password: input.viewer.password } });
    if (login.status() !== 200) throw new Error(`log in: ${login.status()} ${await login.text()}`);

    // (a) + (b): fresh pages (the HTTP cache is per context: a new context per load, the session cookie copied).
    const cookies = await context.cookies();
    const firstPaintMs: number[] = [];
    const barePageMs: number[] = [];
    let jsUrls: string[] = [];
    let jsServedBytes = 0;
    let firstPaintCalls: string[] = [];
    for (let i = 0; i < 6; i++) {
      const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await fresh.addCookies(cookies);
      const page = await fresh.newPage();
      await page.goto(`${input.base}/#feed`, { waitUntil: "commit" });
      await page.locator('[role="log"][aria-label="Messages"] article[data-message-id]').first().waitFor({ timeout: 60_000 });
      const ms = await page.evaluate(() => performance.now());
      const scripts = await page.evaluate(() =>
        performance
          .getEntriesByType("resource")
          .filter((r) => r.name.endsWith(".js"))
          .map((r) => ({ name: r.name, size: (r as PerformanceResourceTiming).encodedBodySize })),
      );
      // Where the time went: the page's own requests, in order (start and duration, ms since navigation).
      const calls = await page.evaluate(() =>
        performance
          .getEntriesByType("resource")
          .map((r) => `${new URL(r.name).pathname.replace(/^\/assets\/.*/, "assets")} @${Math.round(r.startTime)}+${Math.round(r.duration)}`),
      );
      // The first load of the run is warm-up (the server's first requests, Chromium's first start of a renderer).
      if (i > 0) firstPaintMs.push(ms);
      if (i === 5) firstPaintCalls = calls;
      if (i === 0) {
        jsUrls = scripts.map((s) => s.name);
        jsServedBytes = scripts.reduce((sum, s) => sum + s.size, 0);
      }
      await fresh.close();

      const bare = await browser.newContext();
      const barePage = await bare.newPage();
      await barePage.goto(input.barePageUrl, { waitUntil: "load" });
      if (i > 0) barePageMs.push(await barePage.evaluate(() => performance.now()));
      await bare.close();
    }
    let jsGzipBytes = 0;
    for (const url of jsUrls) jsGzipBytes += await gzippedSize(url);
    onProgress(`first paint: ${firstPaintMs.map((m) => m.toFixed(0)).join(", ")} ms; JS ${jsUrls.length} files, ${jsGzipBytes} B gzip`);
    onProgress(`the last load's requests: ${firstPaintCalls.join(", ")}`);

    // (c) latency.
    const page = await context.newPage();
    await page.goto(`${input.base}/#narrow/channel/${input.latencyChannel.id}-x`);
    await page.locator('[role="log"][aria-label="Messages"]').waitFor({ timeout: 60_000 });
    // Probes of this run only (a kept database may hold an earlier run's).
    const runTag = Date.now().toString(36);
    await page.evaluate((tag) => {
      const seen: Record<string, number> = {};
      (window as unknown as { __seen: Record<string, number> }).__seen = seen;
      new MutationObserver(() => {
        for (const article of document.querySelectorAll('[role="log"] article[data-message-id]')) {
          const match = new RegExp(`latency-probe-${tag}-(\\d+)`).exec(article.textContent ?? "");
          if (match && seen[match[1]!] === undefined) seen[match[1]!] = Date.now();
        }
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    }, runTag);
    const latencyMs: number[] = [];
    const auth = `Basic ${Buffer.from(`${input.sender.email}:${input.sender.apiKey}`).toString("base64")}`;
    for (let n = 0; n < 30; n++) {
      const body = new URLSearchParams({ type: "stream", to: String(input.latencyChannel.id), topic: "latency", content: `latency-probe-${runTag}-${n}` });
      const reply = await fetch(`${input.base}/api/v1/messages`, { method: "POST", headers: { authorization: auth, "content-type": "application/x-www-form-urlencoded" }, body });
      const returned = Date.now();
      if (reply.status !== 200) throw new Error(`send: ${reply.status} ${await reply.text()}`);
      await page.waitForFunction((k) => (window as unknown as { __seen: Record<string, number> }).__seen[k] !== undefined, String(n), { timeout: 30_000 });
      const seenAt = await page.evaluate((k) => (window as unknown as { __seen: Record<string, number> }).__seen[k]!, String(n));
      latencyMs.push(seenAt - returned);
      await new Promise((r) => setTimeout(r, 150));
    }
    onProgress(`latency p50 ${percentile(latencyMs, 0.5)} ms`);

    // (d) scrolling back.
    const scroll = await scrollBack(page, `${input.base}/#feed`, 5000, onProgress);
    return { firstPaintMs, barePageMs, jsGzipBytes, jsServedBytes, jsFiles: jsUrls.length, latencyMs, scroll };
  } finally {
    await browser.close();
  }
}

/** The bytes of a gzip reply as they cross the wire (fetch would decompress them). */
function gzippedSize(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { "accept-encoding": "gzip" } }, (reply) => {
        if (reply.headers["content-encoding"] !== "gzip") reject(new Error(`${url} was not served gzipped`));
        let bytes = 0;
        reply.on("data", (chunk: Buffer) => (bytes += chunk.length));
        reply.on("end", () => resolve(bytes));
      })
      .on("error", reject);
  });
}

async function scrollBack(page: Page, url: string, target: number, onProgress: (line: string) => void): Promise<WebBenchResult["scroll"]> {
  await page.goto(url);
  const list = page.locator('[role="log"][aria-label="Messages"]');
  await list.locator("article[data-message-id]").first().waitFor({ timeout: 60_000 });
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  // A string, not a function: the bench runs under tsx, whose compiled functions refer to a helper the page lacks.
  await page.evaluate(`(() => {
    window.__ids = new Set();
    window.__frames = [];
    window.__recording = true;
    function note() {
      for (const a of document.querySelectorAll('[role="log"] article[data-message-id]')) window.__ids.add(a.getAttribute("data-message-id"));
    }
    note();
    new MutationObserver(note).observe(document.body, { childList: true, subtree: true });
    let last = performance.now();
    function tick(now) {
      window.__frames.push(now - last);
      last = now;
      if (window.__recording) requestAnimationFrame(tick);
    }
    requestAnimationFrame(tick);
  })()`);
  const box = await list.boundingBox();
  if (box) await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const checkpoints: WebBenchResult["scroll"]["checkpoints"] = [];
  const marks = [1000, 2500, target];
  const started = Date.now();
  let seen = 0;
  let stuckSince = Date.now();
  while (seen < target) {
    await page.mouse.wheel(0, -1200);
    await page.waitForTimeout(16);
    const now = await page.evaluate(() => (window as unknown as { __ids: Set<string> }).__ids.size);
    if (now > seen) stuckSince = Date.now();
    seen = now;
    if (Date.now() - stuckSince > 30_000) throw new Error(`scrolling back stopped at ${seen} messages`);
    while (marks.length > 0 && seen >= marks[0]!) {
      const messages = marks.shift()!;
      await cdp.send("HeapProfiler.collectGarbage");
      const metrics = (await cdp.send("Performance.getMetrics")).metrics;
      const metric = (name: string) => metrics.find((m) => m.name === name)?.value ?? NaN;
      const rowsInDom = await list.locator("article[data-message-id]").count();
      checkpoints.push({ messages, heapMB: metric("JSHeapUsedSize") / 2 ** 20, domNodes: metric("Nodes"), rowsInDom });
      onProgress(`scrolled back ${messages} messages: heap ${(metric("JSHeapUsedSize") / 2 ** 20).toFixed(1)} MB, ${metric("Nodes")} DOM nodes`);
    }
  }
  const seconds = (Date.now() - started) / 1000;
  const frames = await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __recording: boolean };
    w.__recording = false;
    return w.__frames.slice(1);
  });
  return {
    messagesSeen: seen,
    seconds,
    frames: frames.length,
    framesOver50ms: frames.filter((f) => f > 50).length,
    frameP50: percentile(frames, 0.5),
    frameP99: percentile(frames, 0.99),
    frameMax: Math.max(...frames),
    checkpoints,
  };
}

/** The report's lines (Markdown). */
export function webReport(r: WebBenchResult, historyNote: string): string {
  const med = (v: number[]) => percentile(v, 0.5);
  const lines = [
    `(3) web client in Debian's Chromium (headless, playwright-core) over ${historyNote}`,
    "",
    "| measure | value | budget |",
    "|---|---|---|",
    `| first paint of the message list (All messages), median of ${r.firstPaintMs.length} fresh loads | ${med(r.firstPaintMs).toFixed(0)} ms (max ${Math.max(...r.firstPaintMs).toFixed(0)}); ${(med(r.firstPaintMs) / med(r.barePageMs)).toFixed(1)} × the bare route's page load (${med(r.barePageMs).toFixed(0)} ms) | < 1000 ms |`,
    `| JavaScript on first load (${r.jsFiles} files) | ${(r.jsGzipBytes / 1024).toFixed(1)} KB gzipped (${(r.jsServedBytes / 1024).toFixed(1)} KB as served, brotli) | < 350 KB gzipped |`,
    `| another user's message on screen after its send returned (${r.latencyMs.length} sends) | p50 ${med(r.latencyMs)} ms, p90 ${percentile(r.latencyMs, 0.9)} ms, max ${Math.max(...r.latencyMs)} ms | < 200 ms |`,
    `| scrolling back ${r.scroll.messagesSeen} messages by mouse wheel (${r.scroll.seconds.toFixed(0)} s) | ${r.scroll.frames} frames: p50 ${r.scroll.frameP50.toFixed(1)} ms, p99 ${r.scroll.frameP99.toFixed(1)} ms, max ${r.scroll.frameMax.toFixed(0)} ms; ${r.scroll.framesOver50ms} frames over 50 ms | no dropped frames |`,
    ...r.scroll.checkpoints.map(
      (c) => `| after ${c.messages} messages (after a forced GC) | JS heap ${c.heapMB.toFixed(1)} MB, ${c.domNodes} DOM nodes, ${c.rowsInDom} message rows in the DOM | bounded memory |`,
    ),
  ];
  return lines.join("\n");
}
