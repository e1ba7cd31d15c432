// Markdown render time per KB of input: Parley's Zulip-flavoured renderer
// (the compiled one in dist/) against markdown-it's plain CommonMark render of
// the same text in the same process, the yardstick. Inputs: ordinary messages
// (one, and many joined to ~1 KB and ~10 KB) and the adversarial texts of
// test/adversarial-markdown.ts at each of --sizes characters.
//
// With --compare <git revision>, the same inputs are also rendered by
// src/markdown as it was at that revision (extracted with `git archive` and
// compiled into a temporary directory), so before and after come from one
// run on one machine.
//
// Times are wall-clock medians of repeated renders (at least 5, and at least
// --min-ms in all, after one warm-up render); a render slower than 2 s is
// measured once. µs/KB divides by the input's UTF-8 size.
//
// Usage: npm run bench:render [-- --sizes 10000,40000 --compare fc21efe --only comma --min-ms 300]
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import MarkdownIt from "markdown-it";
import type { MarkdownContext, MentionUser, RenderedMessage } from "../src/markdown/render.ts";
import { ADVERSARIAL } from "../test/adversarial-markdown.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "10000,40000" },
    compare: { type: "string" },
    only: { type: "string" },
    "min-ms": { type: "string", default: "300" },
  },
});
const sizes = values.sizes.split(",").map(Number);
const minMs = Number(values["min-ms"]);

type Render = (content: string, ctx: MarkdownContext) => RenderedMessage;

async function loadRenderer(dir: string): Promise<Render> {
  const module = (await import(pathToFileURL(path.join(dir, "markdown", "render.js")).href)) as { renderMarkdown: Render };
  return module.renderMarkdown;
}

/** src/markdown at `revision`, compiled into a temporary directory. */
function compileRevision(revision: string): { dir: string; cleanup: () => void } {
  if (!/^[\w./~^-]+$/.test(revision)) throw new Error(`not a revision: ${revision}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "parley-render-bench-"));
  const archive = execFileSync("git", ["-C", root, "archive", "--format=tar", revision, "src/markdown"]);
  execFileSync("tar", ["-x", "-C", tmp], { input: archive });
  fs.writeFileSync(path.join(tmp, "package.json"), JSON.stringify({ type: "module" }));
  fs.symlinkSync(path.join(root, "node_modules"), path.join(tmp, "node_modules"));
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const files = fs.readdirSync(path.join(tmp, "src", "markdown")).filter((f) => f.endsWith(".ts")).map((f) => path.join(tmp, "src", "markdown", f));
  execFileSync(process.execPath, [
    tsc, "--outDir", path.join(tmp, "dist"), "--rootDir", path.join(tmp, "src"), "--target", "ES2022", "--module", "NodeNext",
    "--moduleResolution", "NodeNext", "--allowImportingTsExtensions", "--rewriteRelativeImportExtensions", "--verbatimModuleSyntax",
    "--esModuleInterop", "--skipLibCheck", "--strict", ...files,
  ]);
  return { dir: path.join(tmp, "dist"), cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }) };
}

const USERS: MentionUser[] = [{ id: 10, fullName: "King Hamlet" }, { id: 11, fullName: "Othello, the Moor of Venice" }];
const context: MarkdownContext = {
  realmUrl: "http://127.0.0.1:9991",
  usersByName: (name) => USERS.filter((u) => u.fullName.toLowerCase() === name.toLowerCase()),
  userById: (id) => USERS.find((u) => u.id === id),
  groupByName: (name) => (name === "hamletcharacters" ? { id: 5, name } : undefined),
  channelByName: (name) => (name === "Denmark" ? { id: 1, name } : undefined),
  realmEmojiByName: () => undefined,
  translateEmoticons: true,
};

const TYPICAL = [
  "Hey @**King Hamlet**, the deploy notes are at https://example.com/docs/release-notes?v=2 — can you **review** them " +
    "before the *standup* tomorrow? I think `npm ci` is still broken on CI :thumbs_up:",
  "Status for #**Denmark**:\n\n* migrated the `users` table\n* fixed the flaky test in `test/events.test.ts`\n" +
    "* next: https://github.com/zulip/zulip/issues/12345",
  "```python\ndef render(content: str) -> str:\n    return markdown.convert(content)  # cached\n```\n" +
    "That is the whole change, see [the PR](https://example.com/pr/42).",
  "> Can we ship on Friday?\n\nYes, if the <time:2024-05-03T15:00:00Z> freeze holds. ~~Thursday~~ is too early. :tada:",
  "Plain text: the meeting moved to room 4, bring the printouts and the charger, and tell Ophelia she is late again.",
];

/** Whole typical messages, one paragraph apart, until the text has `n` characters. */
function typicalText(n: number): string {
  let out = "";
  for (let i = 0; out.length < n; i++) out += (out ? "\n\n" : "") + TYPICAL[i % TYPICAL.length];
  return out;
}

const inputs: { name: string; text: string }[] = [
  { name: "one typical message", text: TYPICAL[0]! },
  { name: "typical messages, ~1 KB", text: typicalText(1000) },
  { name: "typical messages, ~10 KB", text: typicalText(10000) },
];
for (const [name, make] of Object.entries(ADVERSARIAL)) {
  for (const n of sizes) inputs.push({ name: `${name}, ${n / 1000}k`, text: make(n) });
}
const selected = values.only ? inputs.filter((i) => i.name.includes(values.only!)) : inputs;

/** Median ms per call. */
function measure(run: () => unknown): number {
  const first = performance.now();
  run(); // warm-up (and the only run when one takes over 2 s)
  const firstMs = performance.now() - first;
  if (firstMs > 2000) return firstMs;
  const times: number[] = [];
  let total = 0;
  while (times.length < 5 || total < minMs) {
    const start = performance.now();
    run();
    const ms = performance.now() - start;
    times.push(ms);
    total += ms;
    if (ms > 2000) break;
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1]!;
}

const commonmark = new MarkdownIt("commonmark");
const current = await loadRenderer(path.join(root, "dist"));
const old = values.compare ? compileRevision(values.compare) : null;
try {
  const previous = old ? await loadRenderer(old.dir) : null;
  const load = os.loadavg()[0]!.toFixed(2);
  console.log(
    `\n${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ` +
      `${os.type()} ${os.release()}; load average ${load} at the start\n`,
  );
  const oldHead = previous ? ` ${values.compare} µs/KB | ${values.compare} ratio |` : "";
  console.log(`| input | KB | CommonMark µs/KB | Parley µs/KB | ratio |${oldHead}`);
  console.log(`|---|---|---|---|---|${previous ? "---|---|" : ""}`);
  for (const { name, text } of selected) {
    const kb = Buffer.byteLength(text) / 1024;
    const yard = measure(() => commonmark.render(text));
    const now = measure(() => current(text, context));
    const perKb = (ms: number) => ((ms * 1000) / kb).toFixed(ms * 1000 / kb < 10 ? 2 : 0);
    let row = `| ${name} | ${kb.toFixed(1)} | ${perKb(yard)} | ${perKb(now)} | ${(now / yard).toFixed(1)} |`;
    if (previous) {
      const then = measure(() => previous(text, context));
      row += ` ${perKb(then)} | ${(then / yard).toFixed(1)} |`;
    }
    console.log(row);
  }
} finally {
  old?.cleanup();
}
