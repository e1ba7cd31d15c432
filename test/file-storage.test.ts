// The file stores (UPLOAD_STORAGE): local files and files in PostgreSQL.
// Through HTTP on each backend: a file of many chunks uploaded and read back
// byte for byte, range requests (206 across a chunk boundary, 416, the cases
// that get the whole file); the store's own promises (a key is written once,
// a file is invisible until complete, a failed write leaves nothing, keys
// cannot leave the store); on PostgreSQL that reads and writes go one chunk
// per query (memory bounded by the chunk size, counted, not timed); and
// two servers with no shared disk serving each other's files; and
// `parley move-uploads` both ways, re-run after an interruption, with a
// conflict, and with --delete-source, while a server keeps serving the files.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough, Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { sql } from "kysely";
import sharp from "sharp";
import { uploadSigningKey } from "../src/actions/uploads.ts";
import { ConfigError, loadConfig } from "../src/config.ts";
import { CHUNK_BYTES, DatabaseFileStore } from "../src/files/database-store.ts";
import { LocalFileStore } from "../src/files/local-store.ts";
import { openFileStore } from "../src/files/open.ts";
import { FileExistsError, readStoredFile, type FileStore, type UploadStorage } from "../src/files/store.ts";
import { openServices, startServer, type RunningServer } from "../src/server.ts";
import { openStorage } from "../src/storage/database.ts";
import { assertSuccess, basicAuth, DIALECT, PG_URL, startTestApp, storedBytes, storedKeys, testConfig, type TestApp, type TestUser } from "./helpers.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const BACKENDS: UploadStorage[] = DIALECT === "postgres" ? ["local", "database"] : ["local"];

/** A file of 12 whole chunks and a piece of a 13th, in random bytes. */
const BIG = crypto.randomBytes(12 * CHUNK_BYTES + 1000);

interface FileResponse {
  status: number;
  headers: Headers;
  bytes: Buffer;
}

async function get(app: TestApp, user: TestUser | null, urlPath: string, headers: Record<string, string> = {}): Promise<FileResponse> {
  const auth: Record<string, string> = user ? { authorization: basicAuth(user.email, user.apiKey) } : {};
  const response = await fetch(app.url + urlPath, { headers: { ...auth, ...headers } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function postFile(app: TestApp, user: TestUser, urlPath: string, content: Buffer, name: string, type: string): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(content)], { type }), name);
  const response = await fetch(`${app.url}/api/v1${urlPath}`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body as Record<string, unknown>;
}

/** Uploads a file (POST /user_uploads) and returns its URL and path_id. */
async function upload(app: TestApp, user: TestUser, content: Buffer, name = "data.bin", type = "application/octet-stream"): Promise<{ url: string; pathId: string }> {
  const url = (await postFile(app, user, "/user_uploads", content, name, type)).url as string;
  return { url, pathId: url.slice("/user_uploads/".length) };
}

async function pngImage(): Promise<Buffer> {
  return sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 200, g: 20, b: 20 } } })
    .png()
    .toBuffer();
}

/** Waits (a bounded number of turns) until `condition` holds. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const sha256 = (bytes: Buffer) => crypto.createHash("sha256").update(bytes).digest("hex");

for (const backend of BACKENDS) {
  describe(`UPLOAD_STORAGE=${backend}`, () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp({ uploadStorage: backend });
      assert.equal(t.services.files.backend, backend);
    });
    after(async () => t?.close());

    test("a file of many chunks: uploaded, downloaded byte for byte; a range across a chunk boundary is 206 with exactly those bytes", async () => {
      const { member } = t.users;
      const file = await upload(t, member, BIG);
      const whole = await get(t, member, file.url);
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get("content-length"), String(BIG.length));
      assert.equal(whole.headers.get("accept-ranges"), "bytes");
      assert.equal(whole.bytes.length, BIG.length);
      assert.ok(whole.bytes.equals(BIG), "downloaded bytes differ");
      assert.ok((await storedBytes(t, file.pathId))!.equals(BIG));

      // 100 bytes before the end of chunk 2 to 100 bytes into chunk 3.
      const start = 3 * CHUNK_BYTES - 100;
      const end = 3 * CHUNK_BYTES + 99;
      const part = await get(t, member, file.url, { range: `bytes=${start}-${end}` });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get("content-range"), `bytes ${start}-${end}/${BIG.length}`);
      assert.equal(part.headers.get("content-length"), "200");
      assert.equal(part.headers.get("content-type"), "application/octet-stream");
      assert.match(part.headers.get("content-disposition") ?? "", /^attachment; filename="data.bin"/);
      assert.ok(part.bytes.equals(BIG.subarray(start, end + 1)), "range bytes differ");
    });

    test("other ranges: open-ended, suffix, clipped at the end; past the end 416; several, unparsable or If-Range: the whole file", async () => {
      const { member } = t.users;
      const content = Buffer.from("0123456789abcdefghij");
      const file = await upload(t, member, content, "alphabet.txt", "text/plain");
      const range = async (header: string, extra: Record<string, string> = {}) => get(t, member, file.url, { range: header, ...extra });

      const from15 = await range("bytes=15-");
      assert.equal(from15.status, 206);
      assert.equal(from15.headers.get("content-range"), "bytes 15-19/20");
      assert.equal(from15.bytes.toString(), "fghij");
      const last3 = await range("bytes=-3");
      assert.equal(last3.status, 206);
      assert.equal(last3.headers.get("content-range"), "bytes 17-19/20");
      assert.equal(last3.bytes.toString(), "hij");
      const clipped = await range("bytes=18-1000");
      assert.equal(clipped.headers.get("content-range"), "bytes 18-19/20");
      assert.equal(clipped.bytes.toString(), "ij");
      const longSuffix = await range("bytes=-1000");
      assert.equal(longSuffix.status, 206);
      assert.equal(longSuffix.bytes.toString(), content.toString());
      const first = await range("bytes=0-0");
      assert.equal(first.status, 206);
      assert.equal(first.bytes.toString(), "0");

      for (const header of ["bytes=20-", "bytes=25-30", "bytes=-0"]) {
        const refused = await range(header);
        assert.equal(refused.status, 416, header);
        assert.equal(refused.headers.get("content-range"), "bytes */20", header);
      }
      for (const header of ["bytes=0-1,5-6", "bytes=5-2", "items=0-1", "bytes=abc", "bytes=-"]) {
        const whole = await range(header);
        assert.equal(whole.status, 200, header);
        assert.equal(whole.bytes.toString(), content.toString(), header);
      }
      // An If-Range this server's reply never carried (it sends no validator for uploads): the whole file.
      const conditional = await range("bytes=0-1", { "if-range": '"some-etag"' });
      assert.equal(conditional.status, 200);
      assert.equal(conditional.bytes.toString(), content.toString());
    });

    test("temporary URLs, custom emoji and avatars are served from the store, ranges included", async () => {
      const { member, admin } = t.users;
      const file = await upload(t, member, BIG);
      const temporary = assertSuccess(await t.api(member, "GET", `/user_uploads/${file.pathId}`)).url as string;
      const part = await get(t, null, temporary, { range: `bytes=${CHUNK_BYTES - 1}-${CHUNK_BYTES}` });
      assert.equal(part.status, 206);
      assert.ok(part.bytes.equals(BIG.subarray(CHUNK_BYTES - 1, CHUNK_BYTES + 1)));

      const png = await pngImage();
      await postFile(t, admin, `/realm/emoji/storage_${backend}`, png, "e.png", "image/png");
      const emoji = assertSuccess(await t.api(member, "GET", "/realm/emoji")).emoji as Record<string, { name: string; source_url: string }>;
      const source = Object.values(emoji).find((e) => e.name === `storage_${backend}`)!.source_url;
      const image = await get(t, null, source);
      assert.equal(image.status, 200);
      assert.ok(image.bytes.equals(png));
      const head = await get(t, null, source, { range: "bytes=0-7" });
      assert.equal(head.status, 206);
      assert.ok(head.bytes.equals(png.subarray(0, 8)));

      const avatarUrl = (await postFile(t, member, "/users/me/avatar", png, "me.png", "image/png")).avatar_url as string;
      const avatar = await get(t, null, new URL(avatarUrl).pathname);
      assert.equal(avatar.status, 200);
      assert.equal(avatar.headers.get("content-type"), "image/png");
      // If-Range with the avatar's own ETag keeps the range.
      const etag = avatar.headers.get("etag")!;
      const ranged = await get(t, null, new URL(avatarUrl).pathname, { range: "bytes=1-3", "if-range": etag });
      assert.equal(ranged.status, 206);
      assert.equal(ranged.bytes.toString("latin1"), "PNG");
      const keys = await storedKeys(t, `avatars/${t.realm.id}/`);
      assert.ok(keys.some((k) => k.endsWith(".original")), keys.join(", "));
    });

    test("put: a key is written once; a file is invisible until complete; a failed put leaves nothing", async () => {
      const store = t.services.files;
      const key = `tests/${backend}/once.txt`;
      assert.deepEqual(await store.put(key, Buffer.from("first")), { size: 5, sha256: sha256(Buffer.from("first")) });
      await assert.rejects(store.put(key, Buffer.from("second")), FileExistsError);
      assert.equal((await readStoredFile((await store.open(key))!)).toString(), "first");

      // A file being written is not there for readers, however much of it has arrived.
      const slowKey = `tests/${backend}/slow.bin`;
      const body = new PassThrough();
      const writesBefore = store instanceof DatabaseFileStore ? store.stats.chunkWrites : 0;
      const writing = store.put(slowKey, body);
      body.write(BIG.subarray(0, 3 * CHUNK_BYTES));
      await until(
        async () => (store instanceof DatabaseFileStore ? store.stats.chunkWrites - writesBefore >= 3 : (await incomingBytes(t)) >= 3 * CHUNK_BYTES),
        "the first chunks to be written",
      );
      assert.equal(await store.open(slowKey), undefined);
      assert.equal((await storedKeys(t, slowKey)).length, 0);
      body.end(BIG.subarray(3 * CHUNK_BYTES));
      assert.deepEqual(await writing, { size: BIG.length, sha256: sha256(BIG) });
      assert.ok((await readStoredFile((await store.open(slowKey))!)).equals(BIG));

      // A body that fails half-way: nothing stored, nothing left over.
      const rowsBefore = await chunkRows(t);
      const failing = Readable.from(
        (async function* () {
          yield BIG.subarray(0, 2 * CHUNK_BYTES + 5);
          throw new Error("the client went away");
        })(),
      );
      await assert.rejects(store.put(`tests/${backend}/broken.bin`, failing), /the client went away/);
      assert.equal(await store.open(`tests/${backend}/broken.bin`), undefined);
      assert.equal(await chunkRows(t), rowsBefore);
      assert.equal(await incomingBytes(t), 0);

      await store.delete(key);
      assert.equal(await store.open(key), undefined);
      await store.delete(key); // nothing there: no error
      await store.delete(slowKey);
    });

    test("keys that could name something outside the store are refused by every method", async () => {
      const store = t.services.files;
      for (const key of ["", "../secret", "a/../../b", "a//b", "/abs", "a/./b", "a\\b", "a\0b", ".incoming/x"]) {
        await assert.rejects(store.put(key, Buffer.from("x")), /Refusing/, JSON.stringify(key));
        await assert.rejects(store.open(key), /Refusing/, JSON.stringify(key));
        await assert.rejects(store.delete(key), /Refusing/, JSON.stringify(key));
      }
    });

    if (backend === "database") {
      test("memory stays bounded: one chunk per query, reading and writing; a range reads only the chunks that hold it", async () => {
        const store = t.services.files as DatabaseFileStore;
        const { member } = t.users;
        const chunks = Math.ceil(BIG.length / CHUNK_BYTES);
        const before = { ...store.stats };
        const file = await upload(t, member, BIG);
        assert.equal(store.stats.chunkWrites - before.chunkWrites, chunks);
        const row = await t.services.storage.db.selectFrom("stored_files").selectAll().where("path", "=", file.pathId).executeTakeFirstOrThrow();
        assert.deepEqual([row.size, row.sha256, row.chunk_size], [BIG.length, sha256(BIG), CHUNK_BYTES]);
        const stored = await t.services.storage.db
          .selectFrom("stored_file_chunks")
          .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.max(sql<number>`length(data)`).as("largest")])
          .where("file_id", "=", row.id)
          .executeTakeFirstOrThrow();
        assert.equal(Number(stored.n), chunks);
        assert.equal(Number(stored.largest), CHUNK_BYTES);

        const reads = store.stats.chunkReads;
        const whole = await get(t, member, file.url);
        assert.ok(whole.bytes.equals(BIG));
        assert.equal(store.stats.chunkReads - reads, chunks, "one query per chunk");
        assert.equal(store.stats.largestChunk, CHUNK_BYTES, "no query moved more than a chunk");

        // HEAD: the size, without reading the file.
        const headReads = store.stats.chunkReads;
        const head = await fetch(t.url + file.url, { method: "HEAD", headers: { authorization: basicAuth(member.email, member.apiKey) } });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get("content-length"), String(BIG.length));
        assert.equal(store.stats.chunkReads, headReads);

        const boundary = store.stats.chunkReads;
        const part = await get(t, member, file.url, { range: `bytes=${5 * CHUNK_BYTES - 10}-${5 * CHUNK_BYTES + 10}` });
        assert.equal(part.status, 206);
        assert.equal(store.stats.chunkReads - boundary, 2, "a range across one boundary reads two chunks");
        const inside = store.stats.chunkReads;
        await get(t, member, file.url, { range: `bytes=${7 * CHUNK_BYTES + 1}-${7 * CHUNK_BYTES + 50}` });
        assert.equal(store.stats.chunkReads - inside, 1);
      });
    }
  });
}

/** Bytes in the local store's scratch directory (files being written). */
async function incomingBytes(t: TestApp): Promise<number> {
  const dir = path.join(t.services.config.uploadsDir, ".incoming");
  if (!fs.existsSync(dir)) return 0;
  return fs.readdirSync(dir).reduce((sum, name) => sum + (fs.statSync(path.join(dir, name), { throwIfNoEntry: false })?.size ?? 0), 0);
}

/** Chunk rows in the database (always 0 for a server that stores files locally). */
async function chunkRows(t: TestApp): Promise<number> {
  const row = await t.services.storage.db
    .selectFrom("stored_file_chunks")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe("a data directory written by earlier versions", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-old-layout-"));
  const secret = crypto.randomBytes(32);
  let t: TestApp;
  before(async () => {
    // As earlier versions left it: the key as hex text, a file at its path_id, a half-made key beside it.
    const uploads = path.join(dataDir, "uploads");
    fs.mkdirSync(uploads);
    fs.writeFileSync(path.join(uploads, ".signing-key"), secret.toString("hex"), { mode: 0o600 });
    fs.writeFileSync(path.join(uploads, ".signing-key.0123abcd"), "half-made");
    t = await startTestApp({ dataDir, uploadStorage: "local" });
    const dir = path.join(uploads, String(t.realm.id), "ab", "oldtokenoldtokenoldtoken");
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "old.txt"), "written long ago");
  });
  after(async () => {
    await t?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test("is read as it is: the same key, files at their path_ids; leftovers are not files", async () => {
    assert.ok((await uploadSigningKey(t.services.files)).equals(secret));
    const pathId = `${t.realm.id}/ab/oldtokenoldtokenoldtoken/old.txt`;
    await t.services.storage.db
      .insertInto("attachments")
      .values({ realm_id: t.realm.id, owner_id: t.users.member.id, path_id: pathId, file_name: "old.txt", content_type: "text/plain", size: 16, create_time: 0 })
      .execute();
    const response = await get(t, t.users.member, `/user_uploads/${pathId}`);
    assert.equal(response.status, 200);
    assert.equal(response.bytes.toString(), "written long ago");
    assert.deepEqual(await storedKeys(t), [".signing-key", pathId]);
  });
});

// ---------------------------------------------------------------------------
// Configuration

describe("choosing the store", () => {
  test("the database store is refused on SQLite", async () => {
    const storage = await openStorage({});
    try {
      assert.throws(() => openFileStore({ ...loadConfig({}), uploadStorage: "database" }, storage), ConfigError);
      assert.equal(openFileStore(loadConfig({}), storage).backend, "local");
    } finally {
      await storage.close();
    }
  });

  test("UPLOAD_STORAGE: local by default; database needs DATABASE_URL; nothing else", () => {
    assert.equal(loadConfig({}).uploadStorage, "local");
    assert.equal(loadConfig({ UPLOAD_STORAGE: "local" }).uploadStorage, "local");
    assert.equal(loadConfig({ UPLOAD_STORAGE: "database", DATABASE_URL: "postgres://db.example/parley" }).uploadStorage, "database");
    assert.throws(() => loadConfig({ UPLOAD_STORAGE: "database" }), (e: Error) => e instanceof ConfigError && e.message === "UPLOAD_STORAGE=database needs DATABASE_URL: files are kept in PostgreSQL");
    assert.throws(() => loadConfig({ UPLOAD_STORAGE: "s3" }), (e: Error) => e instanceof ConfigError && e.message === "UPLOAD_STORAGE must be local or database, got 's3'");
  });
});

// ---------------------------------------------------------------------------
// parley move-uploads

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `parley …` as a child process with exactly `env` (plus PATH and HOME). */
function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.homedir(), LOG_LEVEL: "silent", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`parley ${args.join(" ")} did not finish`));
    }, 60_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const shown = (r: CliResult) => `exit ${r.code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;

describe("parley move-uploads: usage", () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-move-usage-"));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  test("wrong usage exits 2 with the help; without DATABASE_URL it exits 1 saying why", async () => {
    for (const args of [[], ["--to", "s3"], ["--to"], ["--to", "local", "extra"], ["--to", "database", "--delete"]]) {
      const result = await cli(["move-uploads", ...args], { DATA_DIR: dataDir });
      assert.equal(result.code, 2, shown(result));
      assert.match(result.stderr, /^parley: .*\n\nUsage: parley <command>/, shown(result));
    }
    assert.match((await cli(["move-uploads", "--to", "s3"], { DATA_DIR: dataDir })).stderr, /^parley: --to must be local or database\n/);
    const noPg = await cli(["move-uploads", "--to", "database"], { DATA_DIR: dataDir });
    assert.equal(noPg.code, 1, shown(noPg));
    assert.equal(noPg.stderr, "parley: move-uploads needs DATABASE_URL: the database file store is in PostgreSQL\n");
    assert.match((await cli(["help"], {})).stdout, /move-uploads --to local\|database \[--delete-source\]/);
  });
});

if (PG_URL) {
  describe("two servers on one database, no shared disk", () => {
    let a: TestApp;
    let b: RunningServer;
    const bDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-second-"));
    before(async () => {
      a = await startTestApp({ uploadStorage: "database" });
      const schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(a.services.storage.db)).rows[0]!.schema;
      const config = testConfig({ dataDir: bDataDir, uploadStorage: "database" });
      b = await startServer(await openServices(config, await openStorage({ databaseUrl: PG_URL, pgSchema: schema })));
    });
    after(async () => {
      await b?.close();
      await a?.close();
      fs.rmSync(bDataDir, { recursive: true, force: true });
    });

    test("a file uploaded through one is served by the other, with a temporary URL the first signed", async () => {
      const { member, admin } = a.users;
      assert.notEqual(a.services.config.uploadsDir, b.services.config.uploadsDir);
      const file = await upload(a, member, BIG);
      const temporary = assertSuccess(await a.api(member, "GET", `/user_uploads/${file.pathId}`)).url as string;
      const viaB = await fetch(b.url + file.url, { headers: { authorization: basicAuth(member.email, member.apiKey) } });
      assert.equal(viaB.status, 200);
      assert.ok(Buffer.from(await viaB.arrayBuffer()).equals(BIG));
      const signed = await fetch(b.url + temporary, { headers: { range: "bytes=0-9" } });
      assert.equal(signed.status, 206);
      assert.ok(Buffer.from(await signed.arrayBuffer()).equals(BIG.subarray(0, 10)));
      const png = await pngImage();
      await postFile(a, admin, "/realm/emoji/shared_emoji", png, "s.png", "image/png");
      const [key] = await storedKeys(a, `avatars/${a.realm.id}/emoji/images/`);
      const emoji = await fetch(`${b.url}/user_avatars/${a.realm.id}/emoji/images/${key!.split("/").pop()}`);
      assert.equal(emoji.status, 200);
      assert.ok(Buffer.from(await emoji.arrayBuffer()).equals(png));
      // Deleted through the second: gone for the first.
      const id = (await a.services.storage.db.selectFrom("attachments").select("id").where("path_id", "=", file.pathId).executeTakeFirstOrThrow()).id;
      const deleted = await fetch(`${b.url}/api/v1/attachments/${id}`, { method: "DELETE", headers: { authorization: basicAuth(member.email, member.apiKey) } });
      assert.equal(deleted.status, 200);
      assert.equal((await get(a, member, file.url)).status, 404);
    });
  });

  describe("parley move-uploads: local → database → local, with a server serving the files", () => {
    let t: TestApp;
    let schema: string;
    let local: LocalFileStore;
    let database: DatabaseFileStore;
    const otherDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-move-back-"));
    before(async () => {
      t = await startTestApp({ uploadStorage: "local" });
      schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(t.services.storage.db)).rows[0]!.schema;
      local = t.services.files as LocalFileStore;
      database = new DatabaseFileStore(t.services.storage.db);
    });
    after(async () => {
      await t?.close();
      fs.rmSync(otherDataDir, { recursive: true, force: true });
    });

    const env = (dataDir = t.services.config.dataDir) => ({ DATABASE_URL: PG_URL!, PG_SCHEMA: schema, DATA_DIR: dataDir });
    const contentsOf = async (store: FileStore) => {
      const files = new Map<string, string>();
      for await (const { key } of store.list()) files.set(key, sha256(await readStoredFile((await store.open(key))!)));
      return new Map([...files].sort(([a], [b]) => a.localeCompare(b)));
    };

    test("every file is copied and checked; re-runs copy only what is missing and report conflicts; servers read the copies; --delete-source empties the source", async () => {
      const { member, admin } = t.users;
      // Temporary URLs last a minute: the clock stands still while the commands run.
      const now = t.services.now();
      t.services.now = () => now;
      const big = await upload(t, member, BIG);
      const small = await upload(t, member, Buffer.from("small and plain"), "small.txt", "text/plain");
      const png = await pngImage();
      const avatarPath = new URL((await postFile(t, member, "/users/me/avatar", png, "me.png", "image/png")).avatar_url as string).pathname;
      await postFile(t, admin, "/realm/emoji/moved", png, "moved.png", "image/png");
      const emojiPath = `/user_avatars/${t.realm.id}/emoji/images/${(await storedKeys(t, `avatars/${t.realm.id}/emoji/images/`))[0]!.split("/").pop()}`;
      // Signed with the key kept among the files: still valid once they have moved.
      const temporary = assertSuccess(await t.api(member, "GET", `/user_uploads/${big.pathId}`)).url as string;
      const original = await contentsOf(local);
      assert.ok(original.has(".signing-key"), [...original.keys()].join(", "));
      assert.equal(original.size, 2 + 3 + 1 + 1); // two uploads, avatar (3 files), emoji, signing key

      const moved = await cli(["move-uploads", "--to", "database"], env());
      assert.equal(moved.code, 0, shown(moved));
      assert.equal(moved.stdout, `Copied ${original.size} files (${await totalBytes(local)} bytes) from local to database, each checked (size and SHA-256); 0 files already there.\n`);
      assert.deepEqual(await contentsOf(database), original);

      // Interrupted before the big file was reached: a second run copies that one only.
      await database.delete(big.pathId);
      const rerun = await cli(["move-uploads", "--to", "database"], env());
      assert.equal(rerun.code, 0, shown(rerun));
      assert.equal(rerun.stdout, `Copied 1 file (${BIG.length} bytes) from local to database, each checked (size and SHA-256); ${original.size - 1} files already there.\n`);
      assert.deepEqual(await contentsOf(database), original);

      // Other contents under a key in the target: reported, neither side touched, exit 1.
      await database.delete(small.pathId);
      await database.put(small.pathId, Buffer.from("something else"));
      const conflict = await cli(["move-uploads", "--to", "database"], env());
      assert.equal(conflict.code, 1, shown(conflict));
      assert.equal(conflict.stderr, `conflict: ${small.pathId} is in database with other contents; left as it is in both\n`);
      assert.match(conflict.stdout, /; conflicts: 1, failed: 0\.\n$/);
      assert.equal((await storedBytes(t, small.pathId))!.toString(), "small and plain");
      assert.equal((await readStoredFile((await database.open(small.pathId))!)).toString(), "something else");
      await database.delete(small.pathId);
      assert.equal((await cli(["move-uploads", "--to", "database"], env())).code, 0);
      assert.deepEqual(await contentsOf(database), original);

      // The server switched to the database store, with the local files gone: everything still answers.
      t.services.files = database;
      fs.rmSync(t.services.config.uploadsDir, { recursive: true, force: true });
      const check = async () => {
        const whole = await get(t, member, big.url);
        assert.equal(whole.status, 200);
        assert.ok(whole.bytes.equals(BIG));
        const viaTemporary = await get(t, null, temporary, { range: `bytes=${2 * CHUNK_BYTES - 3}-${2 * CHUNK_BYTES + 2}` });
        assert.equal(viaTemporary.status, 206);
        assert.ok(viaTemporary.bytes.equals(BIG.subarray(2 * CHUNK_BYTES - 3, 2 * CHUNK_BYTES + 3)));
        assert.equal((await get(t, member, small.url)).bytes.toString(), "small and plain");
        assert.equal((await get(t, null, avatarPath)).status, 200);
        assert.ok((await get(t, null, emojiPath)).bytes.equals(png));
      };
      await check();
      const later = await upload(t, member, Buffer.from("uploaded on the database store"), "later.txt", "text/plain");
      assert.equal((await storedBytes(t, later.pathId))!.toString(), "uploaded on the database store");

      // And back to local files, in another data directory, emptying the database store.
      const back = await cli(["move-uploads", "--to", "local", "--delete-source"], env(otherDataDir));
      assert.equal(back.code, 0, shown(back));
      assert.match(back.stdout, new RegExp(`^Copied ${original.size + 1} files \\(\\d+ bytes\\) from database to local, each checked \\(size and SHA-256\\); 0 files already there; removed ${original.size + 1} files from database\\.\n$`));
      const returned = new LocalFileStore(path.join(otherDataDir, "uploads"));
      const expected = new Map(original);
      expected.set(later.pathId, sha256(Buffer.from("uploaded on the database store")));
      assert.deepEqual(await contentsOf(returned), new Map([...expected].sort(([a], [b]) => a.localeCompare(b))));
      assert.deepEqual(await contentsOf(database), new Map());
      assert.equal(await chunkRows(t), 0);

      t.services.files = returned;
      await check();
    });
  });
}

async function totalBytes(store: FileStore): Promise<number> {
  let total = 0;
  for await (const { size } of store.list()) total += size;
  return total;
}
