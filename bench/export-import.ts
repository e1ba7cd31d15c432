// Issue 29: `parley export` and `parley import zulip` of an organization with
// a million messages: wall time and peak resident memory of each command, run
// as a child process of the compiled CLI (dist/cli.js) under /usr/bin/time
// (its %M, the child's peak RSS in KiB).
//
// Setup (not measured): an organization in a temporary SQLite database made
// through the normal actions — 20 users (the owner and 19 more), 20 channels
// with 5–10 subscribers each, a few direct-message conversations — then N
// messages with their flag rows (one per subscriber or participant) and some
// reactions inserted directly, in one transaction per batch of 20,000.
//
// Measured:
//   export          `parley export <file> --full` on that database;
//   import SQLite   `parley import zulip <file>` into a fresh data directory;
//   import PG       the same into a PostgreSQL database of its own, made with
//                   `createdb` (with --pg <url of the server>, such as
//                   postgres://postgres@127.0.0.1:5432; dropped afterwards).
// Yardsticks in the same run, so that results are also ratios:
//   read+gzip       every message row read with one streaming SELECT
//                   (better-sqlite3 iterate()), as JSON text, through gzip:
//                   the floor under the export's own work;
//   seed insert     the setup's direct insertion of the messages, flag rows
//                   and reactions: the floor under the import's writes.
//
// Usage: npm run bench:export-import [-- --messages 1000000 --pg postgres://postgres@127.0.0.1:5432 --imports sqlite,pg --keep]
import { execFileSync, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createGzip } from "node:zlib";
import SQLite from "better-sqlite3";
import { loadConfig } from "../src/config.ts";
import { createRealm } from "../src/actions/realm.ts";
import { createUser } from "../src/actions/users.ts";
import { subscribe } from "../src/actions/subscriptions.ts";
import { sendMessage } from "../src/actions/messages.ts";
import { closeServices, openServices } from "../src/server.ts";
import type { User } from "../src/storage/schema.ts";
import { COMMON_WORDS, prng } from "./seeded-text.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "1000000" },
    pg: { type: "string", default: "" },
    keep: { type: "boolean", default: false },
    /** Which imports to measure: sqlite, pg (needs --pg), or none. */
    imports: { type: "string", default: "sqlite,pg" },
    /** Only the imports, of this tarball (one a --keep run left; --messages should say how many it holds): no setup, no export, no yardsticks. */
    tarball: { type: "string", default: "" },
  },
});
const MESSAGES = Number(values.messages);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cli = path.join(root, "dist", "cli.js");
if (!fs.existsSync(cli)) throw new Error("dist/cli.js is missing: run `npm run build` first (npm run bench:export-import does)");
if (!fs.existsSync("/usr/bin/time")) throw new Error("/usr/bin/time (GNU time) is needed to read the children's peak RSS");

const USERS = 20;
const CHANNELS = 20;
const DM_SHARE = 0.02;
const REACTION_SHARE = 0.05;
const BATCH = 20000;

const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-bench-export-"));
const sourceDir = path.join(work, "source");
fs.mkdirSync(sourceDir);
const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`);

interface World {
  realmId: number;
  users: { id: number; fullName: string }[];
  channels: { id: number; recipientId: number; subscribers: number[] }[];
  dms: { recipientId: number; userIds: number[] }[];
}

/** The organization, its users, channels and DM conversations, through the normal actions. */
async function buildWorld(): Promise<World> {
  const config = loadConfig({ ...process.env, DATA_DIR: sourceDir, DATABASE_URL: "", REDIS_URL: "", LOG_LEVEL: "warn" });
  const services = await openServices(config);
  try {
    const { realm, owner } = await createRealm(services, { name: "Export bench", ownerEmail: "owner@bench.example", ownerPassword: "owner-bench-pw", ownerFullName: "Bench Owner" });
    const users: User[] = [owner];
    for (let i = 1; i < USERS; i++) users.push(await createUser(services, realm, null, { email: `user${i}@bench.example`, password: null, fullName: `Bench User ${i}` }));
    const channelIds: number[] = [];
    for (let c = 0; c < CHANNELS; c++) {
      // 5–10 subscribers, the owner always among them (the creator).
      const count = 5 + (c % 6);
      const members = [owner, ...Array.from({ length: count - 1 }, (_, k) => users[1 + ((c * 3 + k) % (USERS - 1))]!)];
      await subscribe(services, realm, owner, {
        subscriptions: [{ name: `channel ${c}` }],
        principals: members.map((u) => u.id),
        authorizationErrorsFatal: true,
        announce: false,
        sendNewSubscriptionMessages: false,
        inviteOnly: c % 7 === 6,
        isWebPublic: false,
        isDefaultStream: false,
        historyPublicToSubscribers: null,
        messageRetentionDays: null,
        topicsPolicy: "inherit",
        folderId: null,
        groupSettings: {},
      });
    }
    // A few DM conversations, each started with one real send (which makes its recipient row).
    const dmSends: number[][] = [];
    for (let d = 0; d < 6; d++) {
      const a = users[d]!;
      const others = d % 2 === 0 ? [users[d + 7]!] : [users[d + 7]!, users[d + 11]!];
      await sendMessage(services, realm, a, { kind: "direct", to: JSON.stringify(others.map((u) => u.id)), content: `hello ${d}`, topic: undefined, clientName: "bench" });
      dmSends.push([a.id, ...others.map((u) => u.id)].sort((x, y) => x - y));
    }
    const db = services.storage.db;
    // Channels get their recipient row with their first message (actions/messages.ts recipientIdFor): the seed's are made here.
    const channels = [];
    for (const ch of await db.selectFrom("channels").select("id").where("realm_id", "=", realm.id).where("name", "like", "channel %").orderBy("id").execute()) {
      const found = await db.selectFrom("recipients").select("id").where("channel_id", "=", ch.id).executeTakeFirst();
      const recipientId = found?.id ?? (await db.insertInto("recipients").values({ realm_id: realm.id, type: 2, channel_id: ch.id, dm_key: null, dm_hash: null }).returning("id").executeTakeFirstOrThrow()).id;
      channels.push({ id: ch.id, recipientId });
    }
    const world: World = { realmId: realm.id, users: users.map((u) => ({ id: u.id, fullName: u.full_name })), channels: [], dms: [] };
    for (const ch of channels) {
      const subs = await db.selectFrom("subscriptions").select("user_id").where("channel_id", "=", ch.id).where("active", "=", true).orderBy("user_id").execute();
      world.channels.push({ id: ch.id, recipientId: ch.recipientId, subscribers: subs.map((s) => s.user_id) });
    }
    for (const ids of dmSends) {
      const r = await db.selectFrom("recipients").select("id").where("realm_id", "=", realm.id).where("dm_key", "=", ids.join(",")).executeTakeFirstOrThrow();
      world.dms.push({ recipientId: r.id, userIds: ids });
    }
    return world;
  } finally {
    await closeServices(services);
  }
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** Inserts the messages, their flag rows and reactions; returns the time it took (the import's yardstick). */
function seedMessages(world: World): { ms: number; userMessages: number; reactions: number } {
  const db = new SQLite(path.join(sourceDir, "parley.sqlite3"));
  db.pragma("synchronous = OFF");
  db.pragma("cache_size = -262144");
  const random = prng(20261128);
  const insertMessage = db.prepare(
    `INSERT INTO messages (realm_id, sender_id, recipient_id, channel_id, topic, topic_key, content, rendered_content, date_sent, sending_client, has_attachment, has_image, has_link)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'website', 0, 0, ?)`,
  );
  const insertFlags = db.prepare("INSERT INTO user_messages (user_id, message_id, flags) VALUES (?, ?, ?)");
  const insertReaction = db.prepare("INSERT INTO reactions (message_id, user_id, emoji_name, emoji_code, reaction_type) VALUES (?, ?, ?, ?, 'unicode_emoji')");
  const emoji = [
    ["thumbs_up", "1f44d"],
    ["tada", "1f389"],
    ["heart", "2764"],
    ["eyes", "1f440"],
  ] as const;
  const nameOf = new Map(world.users.map((u) => [u.id, u.fullName]));
  const start = Math.floor(Date.now() / 1000) - MESSAGES * 30;
  let userMessages = 0;
  let reactions = 0;
  const firstIds = new Map<number, number>();
  const batch = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const dm = random() < DM_SHARE ? world.dms[Math.floor(random() * world.dms.length)]! : undefined;
      const channel = dm ? undefined : world.channels[Math.floor(random() * world.channels.length)]!;
      const members = dm ? dm.userIds : channel!.subscribers;
      const sender = members[Math.floor(random() * members.length)]!;
      const words: string[] = [];
      const length = 8 + Math.floor(random() * 30);
      for (let w = 0; w < length; w++) words.push(COMMON_WORDS[Math.floor(random() * COMMON_WORDS.length)]!);
      if (random() < 0.1) words[0] = `**${words[0]}**`;
      if (random() < 0.05) words.push("`npm test`");
      let content = words.join(" ");
      let mentioned = -1;
      if (random() < 0.1) {
        mentioned = members[Math.floor(random() * members.length)]!;
        content = `@**${nameOf.get(mentioned)}** ${content}`;
      }
      const hasLink = random() < 0.1;
      if (hasLink) content += ` https://ci.example.com/builds/${Math.floor(random() * 100000)}`;
      const topic = dm ? "" : `${COMMON_WORDS[(i * 7) % COMMON_WORDS.length]} #${Math.floor(random() ** 2 * 50)}`;
      const id = Number(
        insertMessage.run(world.realmId, sender, dm ? dm.recipientId : channel!.recipientId, dm ? null : channel!.id, topic, topic.toLowerCase(), content, `<p>${escapeHtml(content)}</p>`, start + i * 30, hasLink ? 1 : 0)
          .lastInsertRowid,
      );
      if (channel && !firstIds.has(channel.id)) firstIds.set(channel.id, id);
      for (const u of members) {
        let flags = u === sender || random() >= 0.02 ? 1 : 0;
        if (random() < 0.002) flags |= 2;
        if (u === mentioned) flags |= 8;
        if (dm) flags |= 2048;
        insertFlags.run(u, id, flags);
        userMessages++;
      }
      if (random() < REACTION_SHARE) {
        const count = 1 + Math.floor(random() * 3);
        for (let r = 0; r < count; r++) {
          const [name, code] = emoji[r]!;
          insertReaction.run(id, members[(Math.floor(random() * members.length) + r) % members.length]!, name, code);
          reactions++;
        }
      }
    }
  });
  const started = performance.now();
  for (let from = 0; from < MESSAGES; from += BATCH) {
    batch(from, Math.min(MESSAGES, from + BATCH));
    if ((from / BATCH) % 10 === 9) log(`seeded ${from + BATCH} messages`);
  }
  const ms = performance.now() - started;
  const setFirst = db.prepare("UPDATE channels SET first_message_id = ? WHERE id = ? AND (first_message_id IS NULL OR first_message_id > ?)");
  for (const [channelId, id] of firstIds) setFirst.run(id, channelId, id);
  db.close();
  return { ms, userMessages, reactions };
}

/** Every message row, through one streaming SELECT, as JSON text through gzip: the export's floor. */
async function readAndGzip(): Promise<{ ms: number; bytes: number }> {
  const db = new SQLite(path.join(sourceDir, "parley.sqlite3"), { readonly: true });
  const started = performance.now();
  const rows = db.prepare("SELECT * FROM messages ORDER BY id").iterate();
  const flags = db.prepare("SELECT user_id, flags FROM user_messages WHERE message_id = ?");
  function* text() {
    for (const row of rows) {
      const r = row as { id: number };
      yield JSON.stringify({ ...r, usermessages: flags.all(r.id) }) + "\n";
    }
  }
  const out = path.join(work, "yardstick.json.gz");
  await pipeline(Readable.from(text()), createGzip(), createWriteStream(out));
  const ms = performance.now() - started;
  db.close();
  const bytes = fs.statSync(out).size;
  fs.rmSync(out);
  return { ms, bytes };
}

interface Measured {
  ms: number;
  peakRssMb: number;
}

/** Runs the compiled CLI under /usr/bin/time: wall time and peak RSS of the child. */
async function measureCli(label: string, args: string[], env: Record<string, string>): Promise<Measured> {
  const timeFile = path.join(work, `time-${label.replace(/\W+/g, "-")}.txt`);
  log(`${label}: parley ${args.join(" ")}`);
  const started = performance.now();
  const child = spawn("/usr/bin/time", ["-o", timeFile, "-f", "%M", process.execPath, cli, ...args], {
    env: { ...process.env, LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", 2],
  });
  // Progress lines: only the last few are of interest.
  let last = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    last = chunk.toString().trim().split("\n").pop() ?? last;
  });
  const code: number = await new Promise((resolve) => child.on("exit", (c) => resolve(c ?? 1)));
  const ms = performance.now() - started;
  if (code !== 0) throw new Error(`${label} exited with ${code} (last output: ${last})`);
  const peakKb = Number(fs.readFileSync(timeFile, "utf8").trim().split("\n").pop());
  log(`${label}: ${(ms / 1000).toFixed(1)} s, peak RSS ${(peakKb / 1024).toFixed(0)} MB (last output: ${last})`);
  return { ms, peakRssMb: peakKb / 1024 };
}

const startedAt = new Date();
const loadStart = os.loadavg();
log(`work directory ${work}; ${MESSAGES} messages`);
let seeded = { ms: NaN, userMessages: NaN, reactions: NaN };
let sourceBytes = NaN;
let yardstick = { ms: NaN, bytes: NaN };
let exported: Measured = { ms: NaN, peakRssMb: NaN };
let tarball = values.tarball;
if (!tarball) {
  const world = await buildWorld();
  log(`organization ${world.realmId}: ${world.users.length} users, ${world.channels.length} channels (${world.channels.map((c) => c.subscribers.length).join(",")} subscribers), ${world.dms.length} DM conversations`);
  seeded = seedMessages(world);
  log(`seeded: ${MESSAGES} messages, ${seeded.userMessages} flag rows, ${seeded.reactions} reactions in ${(seeded.ms / 1000).toFixed(1)} s`);
  sourceBytes = fs.statSync(path.join(sourceDir, "parley.sqlite3")).size;
  yardstick = await readAndGzip();
  log(`yardstick read+gzip: ${(yardstick.ms / 1000).toFixed(1)} s, ${(yardstick.bytes / 1e6).toFixed(1)} MB`);
  tarball = path.join(work, "export.tar.gz");
  exported = await measureCli("export", ["export", tarball, "--full"], { DATA_DIR: sourceDir, DATABASE_URL: "" });
}
const tarballBytes = fs.statSync(tarball).size;

const results: { target: string; measured: Measured }[] = [];
const imports = new Set(values.imports.split(","));
if (imports.has("sqlite")) {
  const importDir = path.join(work, "import-sqlite");
  fs.mkdirSync(importDir);
  results.push({ target: "SQLite", measured: await measureCli("import SQLite", ["import", "zulip", tarball], { DATA_DIR: importDir, DATABASE_URL: "" }) });
  const imported = new SQLite(path.join(importDir, "parley.sqlite3"), { readonly: true });
  const counts = imported.prepare("SELECT (SELECT count(*) FROM messages) AS m, (SELECT count(*) FROM user_messages) AS um, (SELECT count(*) FROM reactions) AS r").get() as { m: number; um: number; r: number };
  imported.close();
  log(`imported into SQLite: ${counts.m} messages, ${counts.um} flag rows, ${counts.r} reactions`);
  if (!values.keep) fs.rmSync(importDir, { recursive: true, force: true });
}
if (values.pg && imports.has("pg")) {
  {
    const url = new URL(values.pg);
    const dbName = `bench_export_import_${process.pid}`;
    const pgArgs = ["-h", url.hostname, "-p", url.port || "5432", "-U", url.username || "postgres"];
    execFileSync("createdb", [...pgArgs, dbName]);
    try {
      const pgDir = path.join(work, "import-pg");
      fs.mkdirSync(pgDir);
      url.pathname = `/${dbName}`;
      results.push({ target: "PostgreSQL", measured: await measureCli("import PostgreSQL", ["import", "zulip", tarball], { DATA_DIR: pgDir, DATABASE_URL: url.toString() }) });
    } finally {
      execFileSync("dropdb", [...pgArgs, dbName]);
    }
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
console.log(`\n### ${MESSAGES.toLocaleString("en")} messages (${startedAt.toISOString().slice(0, 16)}Z, load average ${loadStart.map((l) => l.toFixed(2)).join(" ")} at the start, ${os.loadavg().map((l) => l.toFixed(2)).join(" ")} at the end)\n`);
if (!values.tarball) console.log(`Source: ${MESSAGES} messages, ${seeded.userMessages} flag rows, ${seeded.reactions} reactions; SQLite file ${(sourceBytes / 1e6).toFixed(0)} MB; tarball ${(tarballBytes / 1e6).toFixed(0)} MB.\n`);
else console.log(`Imports only, of ${tarball} (${(tarballBytes / 1e6).toFixed(0)} MB): no yardsticks in this run.\n`);
console.log("| step | wall time s | peak RSS MB | messages/s | ratio to its yardstick |");
console.log("|---|---|---|---|---|");
if (!values.tarball) {
  console.log(`| yardstick: read all message and flag rows + gzip | ${seconds(yardstick.ms)} | (in-process) | ${Math.round(MESSAGES / (yardstick.ms / 1000))} | 1.00 |`);
  console.log(`| \`parley export --full\` (SQLite) | ${seconds(exported.ms)} | ${exported.peakRssMb.toFixed(0)} | ${Math.round(MESSAGES / (exported.ms / 1000))} | ${(exported.ms / yardstick.ms).toFixed(2)} |`);
  console.log(`| yardstick: direct insert of the rows into SQLite (setup) | ${seconds(seeded.ms)} | (in-process) | ${Math.round(MESSAGES / (seeded.ms / 1000))} | 1.00 |`);
}
for (const r of results) {
  console.log(`| \`parley import zulip\` into ${r.target} | ${seconds(r.measured.ms)} | ${r.measured.peakRssMb.toFixed(0)} | ${Math.round(MESSAGES / (r.measured.ms / 1000))} | ${values.tarball ? "–" : (r.measured.ms / seeded.ms).toFixed(2)} |`);
}
if (!values.keep) fs.rmSync(work, { recursive: true, force: true });
else log(`kept ${work}`);
