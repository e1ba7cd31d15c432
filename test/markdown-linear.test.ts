// Rendering time is linear in the input, whatever the input (issue 18): each
// adversarial text below is rendered at 10,000 characters (max_message_length)
// and at 40,000, and must take at most 250 ms at 10,000 and must not grow much
// faster than the text. Quadratic rules (a rescan of the rest of the text from
// each comma, backtick or "<time:") take sixteen times as long for four times
// the text, and seconds at these sizes; the renderer before issue 18 fails
// here on commas, URLs, backticks, emphasis, <time:>, fences and code blocks.
//
// Times are CPU time of this process (process.cpuUsage), the best of three
// runs after a warm-up: other processes on a loaded machine take wall-clock
// time, not this process's CPU time. Growth is only judged when the larger
// text costs more than 100 ms: below that, memory effects dominate. Past
// roughly 10,000 tokens a render no longer fits the CPU caches, and the cost
// per character of some texts (runs of "*", blank lines) jumps up to six-fold
// between 10,000 and 40,000 characters, with plain markdown-it as well; such
// a linear text then looks "quadratic" by ratio, but stays far under 100 ms.
//
// Then POST /messages/render: content longer than max_message_length is
// refused as Zulip refuses it, before any rendering.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { renderMarkdown, type MarkdownContext, type MentionUser } from "../src/markdown/render.ts";
import { ADVERSARIAL, repeat } from "./adversarial-markdown.ts";
import { assertError, assertSuccess, startTestApp, type TestApp } from "./helpers.ts";

const USERS: MentionUser[] = [
  { id: 10, fullName: "King Hamlet" },
  { id: 11, fullName: "Othello, the Moor of Venice" },
];
const CHANNELS = [{ id: 1, name: "Denmark" }];

const context: MarkdownContext = {
  realmUrl: "http://127.0.0.1:9991",
  usersByName: (name) => USERS.filter((u) => u.fullName.toLowerCase() === name.toLowerCase()),
  userById: (id) => USERS.find((u) => u.id === id),
  groupByName: (name) => (name === "hamletcharacters" ? { id: 5, name } : undefined),
  channelByName: (name) => CHANNELS.find((c) => c.name === name),
  realmEmojiByName: (name) => (name === "green_tick" ? { sourceUrl: "/user_avatars/1/emoji/green_tick.png" } : undefined),
  translateEmoticons: true,
};

const SMALL = 10_000;
const LARGE = 40_000;
/**
 * A pathology detector, not a budget: quadratic rules take seconds here, a
 * linear render ~40 ms on a quiet machine, and CPU time itself inflates when
 * other processes share the cores. The renderer's speed is measured in
 * bench/render.ts.
 */
const CEILING_MS = 250;
/** Below this at LARGE, growth is not judged (see the top of the file). */
const GROWTH_FLOOR_MS = 100;

function cpuMs(input: string): number {
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const start = process.cpuUsage();
    renderMarkdown(input, context);
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / 1000);
  }
  return best;
}

describe("rendering time is linear in the input", () => {
  test("the adversarial texts have the sizes they claim", () => {
    for (const [name, make] of Object.entries(ADVERSARIAL)) {
      for (const n of [SMALL, LARGE]) {
        const length = make(n).length;
        assert.ok(length >= n && length <= n + 16, `${name}: ${length} characters for ${n}`);
      }
    }
  });

  for (const [name, make] of Object.entries(ADVERSARIAL)) {
    test(name, (t) => {
      const small = make(SMALL);
      const large = make(LARGE);
      renderMarkdown(small, context); // warm-up: lazy imports, JIT
      const smallMs = cpuMs(small);
      const largeMs = cpuMs(large);
      const detail = `${SMALL}: ${smallMs.toFixed(1)} ms, ${LARGE}: ${largeMs.toFixed(1)} ms`;
      t.diagnostic(detail);
      assert.ok(smallMs <= CEILING_MS, `over ${CEILING_MS} ms at ${SMALL} characters (${detail})`);
      // Linear: about 4× (up to 6× more from the caches). Quadratic: 16×.
      assert.ok(largeMs <= GROWTH_FLOOR_MS || largeMs <= 8 * smallMs + 5, `grows faster than the text (${detail})`);
    });
  }
});

describe("POST /messages/render and max_message_length", () => {
  let t: TestApp;
  let maxLength: number;
  before(async () => {
    t = await startTestApp();
    maxLength = (await t.register(t.users.member)).max_message_length as number;
  });
  after(() => t?.close());

  const render = (content: string) => t.api(t.users.member, "POST", "/messages/render", { content });

  test("content of exactly max_message_length characters renders", async () => {
    const body = assertSuccess(await render("x".repeat(maxLength)));
    assert.equal(body.rendered, `<p>${"x".repeat(maxLength)}</p>`);
  });

  test("longer content is refused, as Zulip's StringConstraints(max_length) refuses it", async () => {
    assertError(await render("x".repeat(maxLength + 1)), 400, "BAD_REQUEST", `content is too long (limit: ${maxLength} characters)`);
  });

  test("the length counts code points, as Python's len() does", async () => {
    // 😀 is two UTF-16 units: max_message_length of them is twice as many units.
    assertSuccess(await render("😀".repeat(maxLength)));
    assertError(await render("😀".repeat(maxLength + 1)), 400, "BAD_REQUEST", `content is too long (limit: ${maxLength} characters)`);
  });

  test("the issue's 200 KB of commas is refused at once", async () => {
    const start = performance.now();
    assertError(await render("a,".repeat(100_000)), 400, "BAD_REQUEST", `content is too long (limit: ${maxLength} characters)`);
    assert.ok(performance.now() - start < 2000, `${(performance.now() - start).toFixed(0)} ms`);
  });

  test("adversarial content at the limit renders quickly over HTTP", async () => {
    const start = performance.now();
    assertSuccess(await render(repeat("a,", maxLength)));
    assert.ok(performance.now() - start < 2000, `${(performance.now() - start).toFixed(0)} ms`);
  });
});
