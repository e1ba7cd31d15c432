// Zulip's emoji names (src/markdown/zulip-emoji-names.json) are the one
// name table of the server: every canonical name and alias resolves to its
// code for reactions, user status and Markdown, server_emoji_data_url lists
// them canonical name first, and the names Zulip clients send (the terminal
// client's reactions with their codes, the mobile app's status) work over
// HTTP. Unknown names answer as Zulip does.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { checkEmojiRequest, emojiDataForName, ReactionType } from "../src/domain/emoji.ts";
import table from "../src/markdown/zulip-emoji-names.json" with { type: "json" };
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

interface TableEntry {
  name: string;
  code: string;
  aliases: string[];
}
const entries = (table as { emoji: TableEntry[] }).emoji;
/** Zulip's renderer writes codes without U+FE0F (`1f441-200d-1f5e8`). */
const bare = (code: string) =>
  code
    .split("-")
    .filter((p) => p !== "fe0f")
    .join("-");
const everyName: { name: string; code: string; canonical: string }[] = entries.flatMap((e) => [e.name, ...e.aliases].map((name) => ({ name, code: bare(e.code), canonical: e.name })));

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const noCustomEmoji = new Map();

async function newChannel(user: TestUser): Promise<string> {
  const name = uniqueName("emoji names");
  assertSuccess(await t.api(user, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], send_new_subscription_messages: false }));
  return name;
}

async function reactions(user: TestUser, messageId: number) {
  const message = assertSuccess(await t.api(user, "GET", `/messages/${messageId}`)).message;
  return (message.reactions as { emoji_name: string; emoji_code: string; reaction_type: string; user_id: number }[]).map(({ emoji_name, emoji_code, reaction_type }) => ({ emoji_name, emoji_code, reaction_type }));
}

describe("Zulip's emoji name table", () => {
  test("holds Zulip's 1,826 canonical names and 1,061 aliases, each name once", () => {
    assert.equal(entries.length, 1826);
    assert.equal(entries.reduce((n, e) => n + e.aliases.length, 0), 1061);
    assert.equal(new Set(everyName.map((x) => x.name)).size, 2887);
  });

  test("every name and alias resolves to its code for a reaction or a status", () => {
    for (const { name, code } of everyName) {
      assert.deepEqual(emojiDataForName(name, noCustomEmoji), { emojiCode: code, reactionType: ReactionType.UNICODE }, name);
      assert.doesNotThrow(() => checkEmojiRequest(name, code, ReactionType.UNICODE, noCustomEmoji), name);
    }
  });

  test("every name and alias renders as its emoji in Markdown", async () => {
    const user = t.users.member;
    // A few hundred names a request: the table in a dozen renders.
    for (let i = 0; i < everyName.length; i += 250) {
      const batch = everyName.slice(i, i + 250);
      const rendered = assertSuccess(await t.api(user, "POST", "/messages/render", { content: batch.map((x) => `:${x.name}:`).join(" ") })).rendered as string;
      const spans = [...rendered.matchAll(/<span aria-label="[^"]*" class="emoji emoji-([0-9a-f-]+)" role="img" title="[^"]*">:([^:<]+):<\/span>/g)].map((m) => ({ code: m[1], name: m[2] }));
      assert.deepEqual(
        spans,
        batch.map((x) => ({ code: x.code, name: x.name.replace(/&/g, "&amp;") })),
      );
    }
  });

  test("server_emoji_data_url lists every code with its canonical name first, then its aliases", async () => {
    const state = await t.register(t.users.member);
    const response = await fetch(new URL(new URL(state.server_emoji_data_url as string).pathname, t.url));
    assert.equal(response.status, 200);
    const { code_to_names } = (await response.json()) as { code_to_names: Record<string, string[]> };
    assert.equal(Object.keys(code_to_names).length, entries.length);
    for (const e of entries) assert.deepEqual(code_to_names[bare(e.code)], [e.name, ...e.aliases], e.name);
  });
});

describe("the names Zulip's clients and docs use, over HTTP", () => {
  const examples: [name: string, code: string][] = [
    ["car", "1f697"],
    ["computer", "1f4bb"],
    ["x", "274e"],
    ["art", "1f3a8"],
    ["running", "1f3c3"],
    ["book", "1f4d6"],
    ["email", "2709"],
    ["office", "1f3e2"],
  ];

  for (const [name, code] of examples) {
    test(`:${name}: reacts, sets a status and renders as ${code}`, async () => {
      const user = t.users.member;
      const channel = await newChannel(user);
      const id = assertSuccess(await t.api(user, "POST", "/messages", { type: "stream", to: channel, topic: "names", content: `:${name}:` })).id as number;

      assertSuccess(await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: name }));
      assert.deepEqual(await reactions(user, id), [{ emoji_name: name, emoji_code: code, reaction_type: "unicode_emoji" }]);
      assertSuccess(await t.api(user, "DELETE", `/messages/${id}/reactions`, { emoji_name: name }));
      assert.deepEqual(await reactions(user, id), []);

      assertSuccess(await t.api(user, "POST", "/users/me/status", { emoji_name: name, status_text: "out" }));
      const status = assertSuccess(await t.api(user, "GET", `/users/${user.id}/status`)).status;
      assert.deepEqual(status, { status_text: "out", emoji_name: name, emoji_code: code, reaction_type: "unicode_emoji" });

      const message = assertSuccess(await t.api(user, "GET", `/messages/${id}`)).message;
      const title = name.replace(/_/g, " ");
      assert.equal(message.content, `<p><span aria-label="${title}" class="emoji emoji-${code}" role="img" title="${title}">:${name}:</span></p>`);
    });
  }

  test("the terminal client's reaction (name, code and type from its table) is accepted, also a code spelt with U+FE0F", async () => {
    const user = t.users.member;
    const channel = await newChannel(user);
    const id = assertSuccess(await t.api(user, "POST", "/messages", { type: "stream", to: channel, topic: "terminal", content: "hi" })).id as number;
    assertSuccess(await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" }));
    assertSuccess(await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: "eye_in_speech_bubble", emoji_code: "1f441-fe0f-200d-1f5e8-fe0f", reaction_type: "unicode_emoji" }));
    assert.deepEqual(await reactions(user, id), [
      { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" },
      { emoji_name: "eye_in_speech_bubble", emoji_code: "1f441-200d-1f5e8", reaction_type: "unicode_emoji" },
    ]);
    // The same emoji by its other spelling is the same reaction.
    assertError(
      await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: "eye_in_speech_bubble", emoji_code: "1f441-200d-1f5e8", reaction_type: "unicode_emoji" }),
      400,
      "REACTION_ALREADY_EXISTS",
      "Reaction already exists.",
    );
    assertSuccess(await t.api(user, "DELETE", `/messages/${id}/reactions`, { emoji_code: "1f441-fe0f-200d-1f5e8-fe0f", reaction_type: "unicode_emoji" }));
    // Another user's vote keeps the first reaction's name, as on Zulip.
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    assertSuccess(await t.api(t.users.admin, "POST", `/messages/${id}/reactions`, { emoji_name: "+1" }));
    assert.deepEqual(await reactions(user, id), [
      { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" },
      { emoji_name: "thumbs_up", emoji_code: "1f44d", reaction_type: "unicode_emoji" },
    ]);
  });

  test("the mobile app's status (name, code and type) with car", async () => {
    const user = t.users.admin;
    assertSuccess(await t.api(user, "POST", "/users/me/status", { status_text: "driving", emoji_name: "car", emoji_code: "1f697", reaction_type: "unicode_emoji" }));
    assert.deepEqual(assertSuccess(await t.api(user, "GET", `/users/${user.id}/status`)).status, {
      status_text: "driving",
      emoji_name: "car",
      emoji_code: "1f697",
      reaction_type: "unicode_emoji",
    });
  });

  test("a name and code that do not match, and an unknown name, are refused as Zulip refuses them", async () => {
    const user = t.users.member;
    const channel = await newChannel(user);
    const id = assertSuccess(await t.api(user, "POST", "/messages", { type: "stream", to: channel, topic: "unknown", content: ":notanemoji: :car:" })).id as number;
    assertError(await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: "notanemoji" }), 400, "BAD_REQUEST", "Emoji 'notanemoji' does not exist");
    assertError(await t.api(user, "POST", "/users/me/status", { emoji_name: "notanemoji" }), 400, "BAD_REQUEST", "Emoji 'notanemoji' does not exist");
    // `x` is Zulip's cross mark button (274e), not the cross mark (274c).
    assertError(await t.api(user, "POST", `/messages/${id}/reactions`, { emoji_name: "x", emoji_code: "274c", reaction_type: "unicode_emoji" }), 400, "BAD_REQUEST", "Invalid emoji name.");
    const message = assertSuccess(await t.api(user, "GET", `/messages/${id}`)).message;
    assert.match(message.content as string, /^<p>:notanemoji: <span [^>]*class="emoji emoji-1f697"/);
  });

  test("a Unicode emoji missing from Zulip's table stays text, as on Zulip", async () => {
    assert.ok(!entries.some((e) => bare(e.code) === "1f426-200d-1f525"));
    const rendered = assertSuccess(await t.api(t.users.member, "POST", "/messages/render", { content: "🐦‍🔥 🚗" })).rendered;
    assert.equal(rendered, '<p>🐦‍🔥 <span aria-label="car" class="emoji emoji-1f697" role="img" title="car">:car:</span></p>');
  });
});
