// Several processes share one database: data a process keeps across requests
// goes stale when another process changes it. Every module-level collection
// or lazily-set variable in src/ is listed here with why it is safe (see
// docs/scale-out.md, "Caches"); a new one fails this test until it is
// reviewed — invalidated in every process, or shown safe — and listed.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";

const SRC = path.join(import.meta.dirname, "..", "src");

/** file: variable names, each reviewed. */
const REVIEWED: Record<string, string[]> = {
  // A channel's recipient row never changes or goes; only committed rows are cached.
  "actions/messages.ts": ["channelRecipientCaches"],
  // Keyed by the stored settings text: a change is a new key.
  "domain/realm-settings.ts": ["parsedSettings"],
  // Derived from the uploads signing key, which never changes (and lives in the shared file store).
  "actions/external-content.ts": ["keys"],
  "actions/email-unsubscribe.ts": ["keys"],
  "actions/uploads.ts": ["signingKeys"],
  // Built from the configuration: the allowed internal addresses, the DNS resolvers of outbound requests.
  "domain/external-content.ts": ["allowLists"],
  "outbound/request.ts": ["resolvers"],
  // Pages being read now (work in flight), and the per-process cap on them.
  "actions/link-previews.ts": ["reading", "pagesInFlight"],
  // Writes waiting for their batch, not data: the database is read again.
  "actions/transaction.ts": ["writesByStorage"],
  "actions/presence-writes.ts": ["writers"],
  // Static data or code: emoji tables, highlight.js, KaTeX, sharp, the dummy hash and argon2, the emoji data file.
  "markdown/emoji.ts": ["nameToCode", "codeToName", "codeToAliases"],
  "markdown/code.ts": ["hljs", "loaded"],
  "markdown/zulip-rules.ts": ["katex", "fenceEnds"],
  "images.ts": ["loading", "identicons"],
  "actions/credentials.ts": ["dummyHash", "argon2"],
  // Code loaded on first use (the markdown-it instance, the PostgreSQL driver): no data.
  "markdown/render.ts": ["md"],
  "storage/database.ts": ["pgDriver"],
  "queries/emoji-data.ts": ["built"],
  // Static: Slack's emoji names to code points, built from emojibase's data when `parley import slack` loads the module.
  "import/slack-markdown.ts": ["slackNameToCode"],
  // SMTP transports by configured URL.
  "mail.ts": ["transports"],
  // The names PostgreSQL connections prepare statements under, by SQL text: code, not data. A schema change another process makes is met by a new name (storage/database.ts).
  "storage/compiled.ts": ["statementNames"],
  // Whether a statement's SQL text writes realms or users: decided from the text alone.
  "storage/row-cache.ts": ["verdicts"],
  // Compiled linkifiers, checked against the organization's linkifiers_version (read from the database each request, bumped by any process that changes them).
  "queries/linkifiers.ts": ["caches"],
  // Organizations' presence: each reply first reads the rows numbered after the snapshot (any process writing presence, deactivating or reactivating a user numbers them); read anew after 60 s.
  "queries/presence-snapshot.ts": ["snapshots"],
  // Per request (weak keys on the request, or on one request's lookups).
  "http/route.ts": ["authenticated"],
  "app.ts": ["parsingMultipart"],
  "routes/uploads.ts": ["receivedFiles"],
  "queries/messages.ts": ["topicLinksMemo"],
  // Static: the integrations by name.
  "integrations/index.ts": ["BY_NAME"],
  // The image proxy's per-process cap on fetches in flight.
  "routes/external-content.ts": ["inFlight"],
};

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

test("every module-level mutable collection or variable in src/ is reviewed for several processes", () => {
  const found: Record<string, string[]> = {};
  for (const file of sourceFiles(SRC)) {
    const text = fs.readFileSync(file, "utf8");
    const names = [
      // Collections that can grow: Map, WeakMap (Sets of constants are left out: they are built once from literals).
      ...[...text.matchAll(/^(?:export )?const (\w+)(?::[^=]+)?\s*=\s*new (?:Map|WeakMap)\b/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/^(?:export )?let (\w+)/gm)].map((m) => m[1]!),
    ];
    if (names.length > 0) found[path.relative(SRC, file).split(path.sep).join("/")] = names.sort();
  }
  const reviewed = Object.fromEntries(Object.entries(REVIEWED).map(([file, names]) => [file, [...names].sort()]));
  const unreviewed = Object.entries(found).flatMap(([file, names]) => names.filter((n) => !reviewed[file]?.includes(n)).map((n) => `${file}: ${n}`));
  assert.deepEqual(unreviewed, [], "module-level state not reviewed for several processes (see docs/scale-out.md, Caches)");
});
