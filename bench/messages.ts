// Messages against DESIGN.md's budgets, in one run on one machine:
//   (1) sending a channel message to a 10-subscriber channel: request rate of
//       POST /messages at least 25% of a bare Fastify route's, p99 under 20 ms;
//   (2) fetching 100 messages from a narrow over 1,000,000 stored messages:
//       GET /messages p99 under 20 ms.
//
// Runs the compiled `parley serve` (default LOG_LEVEL=info, as deployed) on a
// fresh database — a temporary SQLite directory, or with DATABASE_URL the
// PostgreSQL schema bench_messages_<pid> — and bench/bare-server.ts as the
// yardstick, each as its own process, and autocannon from this one (2 s
// warm-up, then --duration seconds per case). Every case runs at each of
// --connections: 1 connection gives the latency of a request on its own, 10
// the rate the server sustains (its latencies then include waiting for the
// other nine: the server is one thread).
//
// Part (2) seeds the history with SQL, not through the API: the server is
// stopped, this process writes `messages` (on SQLite the FTS5 triggers index
// each row as it goes in; on PostgreSQL the generated tsvector column and its
// GIN index do) and a `user_messages` row per subscriber, in big
// transactions, then the server is started again on it. 50 channels with 40
// topics each (2,000 topics, a few of them busy; one channel quiet, with
// messages only in the oldest tenth of the history), 20 users, 8 subscribers
// per channel: 1M messages make 8M flag rows. The user measured (the owner) is
// subscribed to 20 of the channels, so 400k of the messages are theirs.
//
// Part (3), `--parts web` (`npm run bench:web`: 100,000 messages), seeds the
// same history and measures the web client in Debian's Chromium over it
// (bench/web-client.ts says what and how).
//
// Usage: npm run bench:messages [-- --messages 1000000 --duration 10 --connections 1,10 --parts send,fetch,web --keep]
//        DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:messages …
// --keep leaves the database (directory or schema) in place and prints where.
// --server <dist dir> runs that compiled server instead of this checkout's
// dist/ (bench/issue28.ts: another revision); --pg-schema names the schema;
// --json <file> writes the results there as well.
// BENCH_SERVER_NODE_ARGS passes node options to the server only (e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof"); BENCH_LOG_LEVEL overrides its log level.
// On SQLite the run also times one-row fsync'd commits in the same directory,
// and a send's two inserts alone in a loop (the storage floor): each bounds
// the send rate whatever the rest of the code does.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import SQLite from "better-sqlite3";
import pg from "pg";
import { measureWebClient, webReport } from "./web-client.ts";
import { sleep, waitForHttp } from "./http-client.ts";
import { dropPgSchema } from "./pg-schema.ts";
import { COMMON_WORDS, prng } from "./seeded-text.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "1000000" },
    duration: { type: "string", default: "10" },
    connections: { type: "string", default: "1,10" },
    parts: { type: "string", default: "send,fetch" },
    keep: { type: "boolean", default: false },
    server: { type: "string" },
    "pg-schema": { type: "string" },
    json: { type: "string" },
  },
});
const MESSAGES = Number(values.messages);
const duration = Number(values.duration);
const connectionCounts = values.connections.split(",").map(Number);
const parts = new Set(values.parts.split(","));

const USERS = 20;
const CHANNELS = 50;
const TOPICS_PER_CHANNEL = 40;
/** Channel c's subscribers: users u (0 is the owner) with (u + c) % 5 < 2 — 8 per channel, 20 channels per user. */
const subscribesTo = (u: number, c: number) => (u + c) % 5 < 2;
/** A channel (the owner is subscribed) whose messages are all in the oldest tenth of the history. */
const QUIET_CHANNEL = 5;

const PORT = Number(process.env.BENCH_PORT ?? 19995);
const BARE_PORT = PORT + 1;
const base = `http://127.0.0.1:${PORT}`;
const cli = path.join(values.server ? path.resolve(values.server) : path.join(root, "dist"), "cli.js");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:messages does)");
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-messages-"));
const sqlitePath = path.join(dataDir, "parley.sqlite3");
const PG_URL = process.env.DATABASE_URL || "";
const pgSchema = PG_URL ? (values["pg-schema"] ?? `bench_messages_${process.pid}`) : "";
const dbName = PG_URL ? "PostgreSQL" : "SQLite";
// Load tests drive one user far past the API limits: RATE_LIMITING=false, as Zulip load tests run.
const env = { ...process.env, RATE_LIMITING: "false", DATA_DIR: dataDir, PORT: String(PORT), LOG_LEVEL: "warn", DATABASE_URL: PG_URL, PG_SCHEMA: pgSchema };



async function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

let parley: ChildProcess | undefined;
let bare: ChildProcess | undefined;

async function startParley(): Promise<void> {
  // As deployed: one access-log line per request (foundation.ts does the same).
  // BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") are node options for the server alone.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
  parley = spawn(process.execPath, [...nodeArgs, cli, "serve"], { env: { ...env, LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info" }, stdio: ["ignore", "ignore", "inherit"] });
  await waitForHttp(`${base}/api/v1/server_settings`, parley);
}

// ---------------------------------------------------------------------------
// API calls for the set-up (fetch, form bodies).

interface User {
  id: number;
  email: string;
  apiKey: string;
}

const authHeader = (u: User) => `Basic ${Buffer.from(`${u.email}:${u.apiKey}`).toString("base64")}`;

function form(params: Record<string, unknown>): string {
  return new URLSearchParams(Object.entries(params).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])).toString();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function api(user: User, method: string, urlPath: string, params: Record<string, unknown> = {}): Promise<any> {
  const query = method === "GET";
  const response = await fetch(`${base}/api/v1${urlPath}${query ? `?${form(params)}` : ""}`, {
    method,
    headers: { authorization: authHeader(user), ...(query ? {} : { "content-type": "application/x-www-form-urlencoded" }) },
    ...(query ? {} : { body: form(params) }),
  });
  const body = await response.json();
  if (response.status !== 200 || body.result !== "success") throw new Error(`${method} ${urlPath}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

async function createChannel(owner: User, name: string, subscriberIds: number[]): Promise<number> {
  await api(owner, "POST", "/users/me/subscriptions", {
    subscriptions: [{ name }],
    principals: subscriberIds,
    announce: false,
    send_new_subscription_messages: false,
  });
  return (await api(owner, "GET", "/get_stream_id", { stream: name })).stream_id as number;
}

// ---------------------------------------------------------------------------
// autocannon

interface Result {
  title: string;
  connections: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Messages in the reply, for fetches. */
  count?: number;
}

async function measureAt(title: string, connections: number, options: autocannon.Options): Promise<Result> {
  // One warm-up pass so JIT and caches are settled before measuring. A slow
  // case must show as slow, not as missing: requests may take up to a minute.
  await autocannon({ ...options, connections, duration: 2, timeout: 60 });
  const result = await autocannon({ ...options, connections, duration, timeout: 60 });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${title}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  return {
    title,
    connections,
    rps: result.requests.total / duration,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
  };
}

/** The case at each connection count. */
async function measure(title: string, options: () => autocannon.Options): Promise<Result[]> {
  const results: Result[] = [];
  for (const connections of connectionCounts) results.push(await measureAt(title, connections, options()));
  return results;
}

/** A ~200-character message with a mention and a link, in one of 20 topics in turn. */
const SEND_CONTENT = (mentioned: string) =>
  `@**${mentioned}** the deploy of build 4512 failed again on the staging cluster; logs are at https://ci.example.com/builds/4512/log?step=deploy — can you look before the 15:00 sync? I think it is the new cache config.`;

function sendRequests(owner: User, channel: string, mentioned: string): autocannon.Options {
  const bodies = Array.from({ length: 20 }, (_, t) =>
    form({
      type: "stream",
      to: channel,
      topic: `release checklist ${t}`,
      content: SEND_CONTENT(mentioned),
    }),
  );
  let next = 0;
  return {
    url: base,
    requests: [
      {
        method: "POST",
        path: "/api/v1/messages",
        headers: { authorization: authHeader(owner), "content-type": "application/x-www-form-urlencoded" },
        setupRequest: (request) => ({ ...request, body: bodies[next++ % bodies.length]! }),
      },
    ],
  };
}

/**
 * What one fsync'd commit costs on this disk: single-row insert transactions
 * on a WAL SQLite file with synchronous=FULL (as the server opens it), in the
 * same directory, for 2 s. SQLite commits run one at a time and
 * better-sqlite3 blocks the event loop while they do, so this bounds the send rate.
 */
function sqliteCommitCeiling(): { perSecond: number; p50: number; p99: number } {
  const file = path.join(dataDir, "fsync-probe.sqlite3");
  const db = new SQLite(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const times: number[] = [];
  const started = performance.now();
  while (performance.now() - started < 2000) {
    const t0 = performance.now();
    insert.run("x".repeat(200));
    times.push(performance.now() - t0);
  }
  const wall = (performance.now() - started) / 1000;
  db.close();
  for (const suffix of ["", "-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
  times.sort((a, b) => a - b);
  return { perSecond: times.length / wall, p50: times[Math.floor(times.length / 2)]!, p99: times[Math.floor(times.length * 0.99)]! };
}

/**
 * The most sends a second SQLite could store, whatever the rest of the server
 * did: only the two writes every send makes (the message row with its FTS5
 * entry, and a flags row per subscriber) on a copy of the bench database, with
 * the server's pragmas, for 2 s per batch size: ten sends per fsync'd commit
 * (what group commit reaches at best under ten connections), and a thousand
 * (the commit's cost all but gone). No HTTP, authentication, lookups or rendering.
 */
function sqliteStorageFloor(channelName: string, content: string): { perCommit: number; perSecond: number }[] {
  const file = path.join(dataDir, "floor-probe.sqlite3");
  new SQLite(sqlitePath, { readonly: true }).exec(`VACUUM INTO '${file}'`);
  const db = new SQLite(file);
  db.pragma("journal_mode = WAL");
  db.pragma("foreign_keys = ON");
  db.pragma("synchronous = FULL");
  const channel = db.prepare("SELECT c.id, c.realm_id, r.id AS recipient_id FROM channels c JOIN recipients r ON r.channel_id = c.id WHERE c.name = ?").get(channelName) as {
    id: number;
    realm_id: number;
    recipient_id: number;
  };
  const subscribers = (db.prepare("SELECT user_id FROM subscriptions WHERE channel_id = ? AND active = 1").all(channel.id) as { user_id: number }[]).map((r) => r.user_id);
  const insertMessage = db.prepare(
    "INSERT INTO messages (realm_id, sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content, date_sent, sending_client) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'bench')",
  );
  // The statement the server uses (actions/messages.ts insertFlagRows).
  const insertFlags = db.prepare("INSERT INTO user_messages (user_id, message_id, flags) SELECT json_extract(value, '$[0]'), ?, json_extract(value, '$[1]') FROM json_each(?)");
  const html = `<p>${content}</p>`;
  const results = [10, 1000].map((perCommit) => {
    let sends = 0;
    const started = performance.now();
    while (performance.now() - started < 2000) {
      db.exec("BEGIN");
      for (let i = 0; i < perCommit; i++, sends++) {
        const topic = `release checklist ${sends % 20}`;
        const id = insertMessage.run(channel.realm_id, subscribers[0], channel.recipient_id, channel.id, topic, topic, content, html, Math.floor(Date.now() / 1000)).lastInsertRowid;
        insertFlags.run(id, JSON.stringify(subscribers.map((u, n) => [u, n === 0 ? 1 : 0])));
      }
      db.exec("COMMIT");
    }
    return { perCommit, perSecond: sends / ((performance.now() - started) / 1000) };
  });
  db.close();
  for (const suffix of ["", "-wal", "-shm"]) fs.rmSync(file + suffix, { force: true });
  return results;
}

/**
 * The same floor on PostgreSQL, on one connection as group commit uses one
 * per organization: BEGIN, per send the message insert (its tsvector column
 * and GIN entry) and the flags insert as the server writes them, COMMIT. The
 * probe's rows are deleted afterwards, so the fetch part sees the same database.
 */
async function pgStorageFloor(channelName: string, content: string): Promise<{ perCommit: number; perSecond: number }[]> {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${pgSchema}` });
  await client.connect();
  try {
    const channel = (await client.query("SELECT c.id, c.realm_id, r.id AS recipient_id FROM channels c JOIN recipients r ON r.channel_id = c.id WHERE c.name = $1", [channelName])).rows[0] as {
      id: number;
      realm_id: number;
      recipient_id: number;
    };
    const subscribers = (await client.query("SELECT user_id FROM subscriptions WHERE channel_id = $1 AND active", [channel.id])).rows.map((r: { user_id: number }) => r.user_id);
    const html = `<p>${content}</p>`;
    const results: { perCommit: number; perSecond: number }[] = [];
    for (const perCommit of [10, 1000]) {
      let sends = 0;
      const started = performance.now();
      while (performance.now() - started < 2000) {
        await client.query("BEGIN");
        for (let i = 0; i < perCommit; i++, sends++) {
          const topic = `release checklist ${sends % 20}`;
          const { rows } = await client.query(
            "INSERT INTO messages (realm_id, sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content, date_sent, sending_client) VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8, 'bench-floor') RETURNING id",
            [channel.realm_id, subscribers[0], channel.recipient_id, channel.id, topic, content, html, Math.floor(Date.now() / 1000)],
          );
          // The statement the server uses (actions/messages.ts insertFlagRows).
          await client.query("INSERT INTO user_messages (user_id, message_id, flags) SELECT u, $1, f FROM unnest($2::integer[], $3::integer[]) AS t(u, f)", [
            rows[0].id,
            subscribers,
            subscribers.map((_u: number, n: number) => (n === 0 ? 1 : 0)),
          ]);
        }
        await client.query("COMMIT");
      }
      results.push({ perCommit, perSecond: sends / ((performance.now() - started) / 1000) });
    }
    await client.query("DELETE FROM user_messages WHERE message_id IN (SELECT id FROM messages WHERE sending_client = 'bench-floor')");
    await client.query("DELETE FROM messages WHERE sending_client = 'bench-floor'");
    return results;
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------
// Seeding

// A long tail of rarer words, as real text has.
const RARE = Array.from({ length: 20000 }, (_, i) => `w${(i * 7919).toString(36)}`);
/** In 1% of the messages: the search narrow's word. */
const SEARCH_WORD = "kubernetes";
/** A common word, in about 9% of the messages. */
const COMMON_SEARCH_WORD = "build";

interface MessageRowSeed {
  id: number;
  sender: number;
  channel: number;
  topic: string;
  content: string;
  rendered: string;
  dateSent: number;
  hasLink: boolean;
}

interface SeedTarget {
  /** Inserts one batch of messages and their flag rows in one transaction. */
  insert(messages: MessageRowSeed[], flagRows: [userId: number, messageId: number, flags: number][]): Promise<void>;
  finish(): Promise<void>;
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

interface World {
  realmId: number;
  users: { id: number; fullName: string }[];
  channels: { id: number; recipientId: number; subscribers: number[] }[];
  firstId: number;
}

function topicName(c: number, t: number): string {
  return `${COMMON_WORDS[(c * 7 + t) % COMMON_WORDS.length]} ${COMMON_WORDS[(c * 13 + t * 3 + 5) % COMMON_WORDS.length]} #${t}`;
}

async function seed(world: World, target: SeedTarget, onProgress: (done: number) => void): Promise<void> {
  const random = prng(20261121);
  const BATCH = 20000;
  const start = Math.floor(Date.now() / 1000) - MESSAGES * 30;
  let messages: MessageRowSeed[] = [];
  let flagRows: [number, number, number][] = [];
  for (let i = 0; i < MESSAGES; i++) {
    const id = world.firstId + i;
    let c = Math.floor(random() * CHANNELS);
    // One quiet channel: nothing in the newest 90% of the history.
    while (c === QUIET_CHANNEL && i >= MESSAGES / 10) c = Math.floor(random() * CHANNELS);
    const channel = world.channels[c]!;
    // A few busy topics per channel, a long tail of quiet ones.
    const t = Math.floor(TOPICS_PER_CHANNEL * random() ** 2);
    const sender = channel.subscribers[Math.floor(random() * channel.subscribers.length)]!;
    const words: string[] = [];
    const length = 10 + Math.floor(random() * 30);
    for (let w = 0; w < length; w++) words.push(random() < 0.7 ? COMMON_WORDS[Math.floor(random() * COMMON_WORDS.length)]! : RARE[Math.floor(random() * RARE.length)]!);
    if (random() < 0.01) words.splice(Math.floor(random() * words.length), 0, SEARCH_WORD);
    let content = words.join(" ");
    let rendered = `<p>${escapeHtml(content)}</p>`;
    let mentioned = -1;
    if (random() < 0.1) {
      mentioned = channel.subscribers[Math.floor(random() * channel.subscribers.length)]!;
      const name = world.users.find((u) => u.id === mentioned)!.fullName;
      content = `@**${name}** ${content}`;
      rendered = `<p><span class="user-mention" data-user-id="${mentioned}">@${escapeHtml(name)}</span> ${rendered.slice(3)}`;
    }
    const hasLink = random() < 0.1;
    if (hasLink) {
      const url = `https://ci.example.com/builds/${Math.floor(random() * 100000)}`;
      content += ` ${url}`;
      rendered = `${rendered.slice(0, -4)} <a href="${url}">${url}</a></p>`;
    }
    messages.push({ id, sender, channel: c, topic: topicName(c, t), content, rendered, dateSent: start + i * 30, hasLink });
    for (const u of channel.subscribers) {
      // Read, except 2% scattered unread (never one's own); 0.2% starred; the mentioned user's row says so.
      let flags = u === sender || random() >= 0.02 ? 1 : 0;
      if (random() < 0.002) flags |= 2;
      if (u === mentioned) flags |= 8;
      flagRows.push([u, id, flags]);
    }
    if (messages.length === BATCH || i === MESSAGES - 1) {
      await target.insert(messages, flagRows);
      messages = [];
      flagRows = [];
      onProgress(i + 1);
    }
  }
  await target.finish();
}

function sqliteTarget(world: World): SeedTarget {
  const db = new SQLite(sqlitePath);
  // This connection only: the seed need not survive a power cut.
  db.pragma("synchronous = OFF");
  db.pragma("cache_size = -262144");
  const insertMessage = db.prepare(
    `INSERT INTO messages (id, realm_id, sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content, date_sent, sending_client, has_attachment, has_image, has_link)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'website', 0, 0, ?)`,
  );
  const insertFlags = db.prepare("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)");
  const batch = db.transaction((messages: MessageRowSeed[], flagRows: [number, number, number][]) => {
    for (const m of messages) {
      const channel = world.channels[m.channel]!;
      insertMessage.run(m.id, world.realmId, m.sender, channel.recipientId, channel.id, m.topic, m.topic.toLowerCase(), m.content, m.rendered, m.dateSent, m.hasLink ? 1 : 0);
    }
    for (const [u, id, flags] of flagRows) insertFlags.run(u, id, flags);
  });
  return {
    insert: async (messages, flagRows) => batch(messages, flagRows),
    finish: async () => {
      db.exec("UPDATE channels SET first_message_id = (SELECT min(id) FROM messages WHERE messages.channel_id = channels.id) WHERE first_message_id IS NULL");
      db.pragma("wal_checkpoint(TRUNCATE)");
      db.close();
    },
  };
}

async function pgTarget(world: World): Promise<SeedTarget> {
  const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${pgSchema}` });
  await client.connect();
  await client.query("SET synchronous_commit = off");
  return {
    insert: async (messages, flagRows) => {
      await client.query("BEGIN");
      await client.query(
        `INSERT INTO messages (id, realm_id, sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content, date_sent, sending_client, has_attachment, has_image, has_link)
         SELECT id, $1, sender_id, recipient_id, channel_id, topic, lower(topic), content, rendered, date_sent, 'website', false, false, has_link
         FROM unnest($2::int[], $3::int[], $4::int[], $5::int[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bool[])
           AS t(id, sender_id, recipient_id, channel_id, topic, content, rendered, date_sent, has_link)`,
        [
          world.realmId,
          messages.map((m) => m.id),
          messages.map((m) => m.sender),
          messages.map((m) => world.channels[m.channel]!.recipientId),
          messages.map((m) => world.channels[m.channel]!.id),
          messages.map((m) => m.topic),
          messages.map((m) => m.content),
          messages.map((m) => m.rendered),
          messages.map((m) => m.dateSent),
          messages.map((m) => m.hasLink),
        ],
      );
      await client.query("INSERT INTO user_messages (user_id, message_id, flags) SELECT * FROM unnest($1::int[], $2::int[], $3::int[])", [
        flagRows.map((r) => r[0]),
        flagRows.map((r) => r[1]),
        flagRows.map((r) => r[2]),
      ]);
      await client.query("COMMIT");
    },
    finish: async () => {
      await client.query("SELECT setval(pg_get_serial_sequence('messages', 'id'), (SELECT max(id) FROM messages))");
      await client.query("UPDATE channels SET first_message_id = (SELECT min(id) FROM messages WHERE messages.channel_id = channels.id) WHERE first_message_id IS NULL");
      // What autovacuum does soon after a bulk insert anyway: statistics and the visibility map.
      await client.query("VACUUM ANALYZE messages");
      await client.query("VACUUM ANALYZE user_messages");
      await client.end();
    },
  };
}

/** The database's own view: recipient rows for the channels, and the next message ID. */
async function readWorld(users: World["users"], channelIds: number[]): Promise<World> {
  const ensureRecipients = "INSERT INTO recipients (realm_id, type, channel_id) SELECT realm_id, 2, id FROM channels WHERE id NOT IN (SELECT channel_id FROM recipients WHERE channel_id IS NOT NULL)";
  let recipients: { id: number; channel_id: number }[];
  let maxId: number;
  let realmId: number;
  const realmOf = `SELECT realm_id FROM channels WHERE id = ${channelIds[0]!}`;
  if (PG_URL) {
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${pgSchema}` });
    await client.connect();
    await client.query(ensureRecipients);
    recipients = (await client.query("SELECT id, channel_id FROM recipients WHERE channel_id IS NOT NULL")).rows;
    maxId = Number((await client.query("SELECT coalesce(max(id), 0) AS m FROM messages")).rows[0].m);
    realmId = (await client.query(realmOf)).rows[0].realm_id;
    await client.end();
  } else {
    const db = new SQLite(sqlitePath);
    db.exec(ensureRecipients);
    recipients = db.prepare("SELECT id, channel_id FROM recipients WHERE channel_id IS NOT NULL").all() as typeof recipients;
    maxId = (db.prepare("SELECT coalesce(max(id), 0) AS m FROM messages").get() as { m: number }).m;
    realmId = (db.prepare(realmOf).get() as { realm_id: number }).realm_id;
    db.close();
  }
  const recipientOf = new Map(recipients.map((r) => [r.channel_id, r.id]));
  return {
    realmId,
    users,
    channels: channelIds.map((id, c) => ({ id, recipientId: recipientOf.get(id)!, subscribers: users.filter((_, u) => subscribesTo(u, c)).map((u) => u.id) })),
    firstId: maxId + 1,
  };
}

// ---------------------------------------------------------------------------

/** Ratios are to the bare route at the same connection count. */
function table(results: Result[], bareResults: Result[] = []): void {
  const withCount = results.some((r) => r.count !== undefined);
  const withRatio = bareResults.length > 0;
  console.log(`| case | conns | req/s | p50 ms | p90 ms | p99 ms | max ms |${withCount ? " messages |" : ""}${withRatio ? " ratio to bare |" : ""}`);
  console.log(`|---|---|---|---|---|---|---|${withCount ? "---|" : ""}${withRatio ? "---|" : ""}`);
  for (const r of results) {
    const bareRps = bareResults.find((b) => b.connections === r.connections)?.rps;
    console.log(
      `| ${r.title} | ${r.connections} | ${Math.round(r.rps)} | ${r.p50} | ${r.p90} | ${r.p99} | ${r.max} |${withCount ? ` ${r.count ?? ""} |` : ""}${withRatio ? ` ${bareRps ? (r.rps / bareRps).toFixed(3) : ""} |` : ""}`,
    );
  }
}

/** The commit the compiled server was built from, and whether src/ had uncommitted changes. */
function sourceRevision(): string {
  if (values.server) return `the compiled server in ${values.server}`;
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root }).toString().trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { cwd: root }).toString().trim() !== "";
    return dirty ? `${head} with uncommitted changes in src/` : head;
  } catch {
    return "unknown (no git)";
  }
}

async function main() {
  const revision = sourceRevision();
  const started = performance.now();
  const loadStart = os.loadavg()[0]!;
  const init = JSON.parse(
    execFileSync(process.execPath, [cli, "init", "--org-name", "Bench", "--owner-email", "owner@bench.example", "--owner-password", "bench-owner-pw", "--owner-name", "Bench Owner", "--json"], {
      env,
    }).toString(),
  ) as { user_id: number; email: string; api_key: string };
  const owner: User = { id: init.user_id, email: init.email, apiKey: init.api_key };

  bare = spawn(process.execPath, ["--import", "tsx", path.join(root, "bench", "bare-server.ts")], { env: { ...process.env, PORT: String(BARE_PORT) }, stdio: ["ignore", "ignore", "inherit"] });
  await startParley();
  await waitForHttp(`http://127.0.0.1:${BARE_PORT}/bare`, bare);

  // Users 1..19 (0 is the owner); only the owner's key is used.
  const users: World["users"] = [{ id: owner.id, fullName: "Bench Owner" }];
  for (let i = 1; i < USERS; i++) {
    const body = await api(owner, "POST", "/users", { email: `user${i}@bench.example`, password: `pw-${i}-bench-pw`, full_name: `Bench User ${i}` });
    users.push({ id: body.user_id, fullName: `Bench User ${i}` });
  }

  // ---- (1) sending --------------------------------------------------------
  const sendResults: Result[] = [];
  const bareResults: Result[] = [];
  let ceiling: ReturnType<typeof sqliteCommitCeiling> | undefined;
  let floor: ReturnType<typeof sqliteStorageFloor> | undefined;
  const sendChannel = "send bench";
  await createChannel(
    owner,
    sendChannel,
    users.slice(0, 10).map((u) => u.id),
  );
  if (parts.has("send")) {
    bareResults.push(...(await measure("bare Fastify route", () => ({ url: `http://127.0.0.1:${BARE_PORT}/bare` }))));
    sendResults.push(...(await measure("POST /messages, 10 subscribers", () => sendRequests(owner, sendChannel, "Bench User 3"))));
    if (!PG_URL) ceiling = sqliteCommitCeiling();
    floor = PG_URL ? await pgStorageFloor(sendChannel, SEND_CONTENT("Bench User 3")) : sqliteStorageFloor(sendChannel, SEND_CONTENT("Bench User 3"));
  }

  // ---- (2) fetching over a large history -----------------------------------
  const fetchResults: Result[] = [];
  let anchorNote = "";
  let seedSeconds = 0;
  let seedSize = "";
  let webLines = "";
  if (parts.has("fetch") || parts.has("web")) {
    // The web part's latency case: a channel of the owner and user 1 with no history, so its list sits at the bottom.
    const latencyChannel = "latency";
    const latencyChannelId = await createChannel(owner, latencyChannel, [owner.id, users[1]!.id]);
    const channelIds: number[] = [];
    for (let c = 0; c < CHANNELS; c++) {
      channelIds.push(
        await createChannel(
          owner,
          `channel ${c}`,
          users.filter((_, u) => subscribesTo(u, c)).map((u) => u.id),
        ),
      );
    }
    await stop(parley);
    const world = await readWorld(users, channelIds);
    const t0 = performance.now();
    const target = PG_URL ? await pgTarget(world) : sqliteTarget(world);
    let lastReport = t0;
    await seed(world, target, (done) => {
      if (performance.now() - lastReport > 10000) {
        lastReport = performance.now();
        console.error(`  seeded ${done} messages in ${((lastReport - t0) / 1000).toFixed(0)} s`);
      }
    });
    seedSeconds = (performance.now() - t0) / 1000;
    if (PG_URL) {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      const size = (await client.query(`SELECT sum(pg_total_relation_size(quote_ident(schemaname) || '.' || quote_ident(tablename)))::bigint AS b FROM pg_tables WHERE schemaname = $1`, [pgSchema])).rows[0].b;
      await client.end();
      seedSize = `${(Number(size) / 2 ** 30).toFixed(2)} GiB`;
    } else {
      seedSize = `${(fs.statSync(sqlitePath).size / 2 ** 30).toFixed(2)} GiB`;
    }
    console.error(`seeded ${MESSAGES} messages (${MESSAGES * 8} flag rows) in ${seedSeconds.toFixed(0)} s; database ${seedSize}`);
    await startParley();

    if (parts.has("web")) {
      // Read everything first: the list opens at the newest messages, with the whole history above to scroll back through.
      await api(owner, "POST", "/mark_all_as_read");
      const sender = await fetch(`${base}/api/v1/fetch_api_key`, { method: "POST", body: new URLSearchParams({ username: "user1@bench.example", password: "pw-1-bench-pw" }) });
      const senderKey = ((await sender.json()) as { api_key: string }).api_key;
      const web = await measureWebClient(
        {
          base,
          barePageUrl: `http://127.0.0.1:${BARE_PORT}/bare`,
          viewer: { email: owner.email, password: "bench-owner-pw" },
          sender: { email: "user1@bench.example", apiKey: senderKey },
          latencyChannel: { id: latencyChannelId, name: latencyChannel },
        },
        (line) => console.error(`  web: ${line}`),
      );
      webLines = webReport(web, `${MESSAGES} messages (the owner, subscribed to 20 of the 50 channels, sees ${Math.round(MESSAGES * 0.4)} in All messages)`);
    }
  }
  if (parts.has("fetch")) {
    const channel0 = "channel 0";
    // The busiest topic (about 16% of the channel's messages) and the quietest (about 1%, spread over the whole history).
    const busyTopic = topicName(0, 0);
    const quietTopic = topicName(0, TOPICS_PER_CHANNEL - 1);
    const cases: [string, unknown[]][] = [
      [`(a) channel + topic (${busyTopic})`, [{ operator: "channel", operand: channel0 }, { operator: "topic", operand: busyTopic }]],
      [`(a') channel + a quiet topic (${quietTopic})`, [{ operator: "channel", operand: channel0 }, { operator: "topic", operand: quietTopic }]],
      ["(b) channel", [{ operator: "channel", operand: channel0 }]],
      [`(b') a quiet channel (nothing in the newest 90%)`, [{ operator: "channel", operand: `channel ${QUIET_CHANNEL}` }]],
      ["(c) no narrow (all the user's messages)", []],
      [`(d) search "${SEARCH_WORD}" (1% of messages)`, [{ operator: "search", operand: SEARCH_WORD }]],
      [`(d'') search "${COMMON_SEARCH_WORD}" (~9% of messages)`, [{ operator: "search", operand: COMMON_SEARCH_WORD }]],
      ["(d') channel + search", [{ operator: "channel", operand: channel0 }, { operator: "search", operand: SEARCH_WORD }]],
      ["(e) is:unread", [{ operator: "is", operand: "unread" }]],
      ["(e') is:starred", [{ operator: "is", operand: "starred" }]],
    ];
    const headers = { authorization: authHeader(owner) };
    // anchor=newest; where the server cannot answer that (see the note printed), the largest
    // storable ID with include_anchor=false: the same rows, the same queries.
    let anchorParams: Record<string, unknown> = { anchor: "newest" };
    try {
      await api(owner, "GET", "/messages", { ...anchorParams, num_before: 100, num_after: 0, narrow: [] });
    } catch (error) {
      anchorNote = `GET /messages with anchor=newest failed (${String(error).slice(0, 200)}); measured with anchor=2147483647&include_anchor=false instead.`;
      console.error(anchorNote);
      anchorParams = { anchor: 2147483647, include_anchor: false };
    }
    for (const [title, narrow] of cases) {
      const params = { ...anchorParams, num_before: 100, num_after: 0, narrow };
      const url = `${base}/api/v1/messages?${form(params)}`;
      // Check the answer once: a fast wrong answer is no result.
      const check = await api(owner, "GET", "/messages", params);
      for (const result of await measure(`GET /messages ${title}`, () => ({ url, headers }))) {
        result.count = check.messages.length;
        fetchResults.push(result);
      }
    }
    // Sending again, now over the large history.
    if (parts.has("send")) fetchResults.push(...(await measure(`POST /messages, 10 subscribers, over ${MESSAGES} messages`, () => sendRequests(owner, sendChannel, "Bench User 3"))));
  }

  // ---- report ----------------------------------------------------------------
  console.log(`\n### ${dbName}\n`);
  console.log(`Code: ${revision} (at the start of the run; the server is the compiled dist/ from then).`);
  console.log(
    `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${Math.round((performance.now() - started) / 1000)} s in all, load average ${loadStart.toFixed(1)} at the start and ${os.loadavg()[0]!.toFixed(1)} at the end; 2 s warm-up then ${duration} s per case\n`,
  );
  if (sendResults.length > 0) {
    console.log("(1) sending (~200 characters with a mention and a link, 20 topics in turn)\n");
    table([...bareResults, ...sendResults], bareResults);
    if (ceiling) {
      console.log(
        `\nSQLite commit ceiling on this disk (WAL, synchronous=FULL, one-row transactions, same directory): ${Math.round(ceiling.perSecond)} commits/s, p50 ${ceiling.p50.toFixed(2)} ms, p99 ${ceiling.p99.toFixed(2)} ms per commit.`,
      );
    }
    if (floor) {
      const bare10 = bareResults.find((b) => b.connections === 10)?.rps;
      const rates = floor.map((f) => `${Math.round(f.perSecond)} sends/s at ${f.perCommit} per commit${bare10 ? ` (${(f.perSecond / bare10).toFixed(3)} of the bare route at 10 connections)` : ""}`);
      console.log(`\n${dbName} storage floor (a send's two inserts alone, message + full-text index + 10 flag rows, ${PG_URL ? "one connection" : "in-process, on a copy of this database"}): ${rates.join("; ")}.`);
    }
  }
  if (fetchResults.length > 0) {
    console.log(`\n(2) ${MESSAGES} messages seeded in ${seedSeconds.toFixed(0)} s (${MESSAGES * 8} flag rows; database ${seedSize}); GET /messages anchor=newest num_before=100 as the owner (subscribed to 20 of the 50 channels)\n`);
    table(fetchResults, bareResults);
    if (anchorNote) console.log(`\nNote: ${anchorNote}`);
  }
  if (webLines) console.log(`\n${webLines}`);
  if (values.keep) console.log(`\nkept: ${PG_URL ? `schema ${pgSchema}` : dataDir}`);
  if (values.json) fs.writeFileSync(values.json, JSON.stringify({ database: dbName, bare: bareResults, send: sendResults, fetch: fetchResults, floor, ceiling }, null, 2));
}

// A named schema may be left from an interrupted run.
if (values["pg-schema"]) await dropPgSchema(PG_URL, pgSchema);
try {
  await main();
} finally {
  await stop(parley);
  await stop(bare);
  if (!values.keep) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropPgSchema(PG_URL, pgSchema);
  }
}
