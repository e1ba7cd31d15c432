// SQLite commits with synchronous=NORMAL and the WAL is fsynced off the
// event loop (storage/database.ts, WalSync): a reply to a write must not go
// out before an fsync of the WAL that started after the write has finished.
// SQLite only: PostgreSQL syncs at COMMIT and durable() is a no-op there.
import assert from "node:assert/strict";
import fs from "node:fs";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { sql } from "kysely";
import { startTestApp, type TestApp } from "./helpers.ts";

const skip = process.env.DATABASE_URL ? "SQLite only" : false;

let app: TestApp;
before(async () => {
  if (skip) return;
  app = await startTestApp();
  const r = await app.api(app.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "durable" }], principals: [app.users.member.id] });
  assert.equal(r.status, 200);
});
after(async () => {
  await app?.close();
});

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await sleep(10);
  }
  assert.fail(`timed out waiting for ${what}`);
}

function send(content: string) {
  return app.api(app.users.member, "POST", "/messages", { type: "stream", to: "durable", topic: "durability", content });
}

test("SQLite runs with synchronous=NORMAL (1)", { skip }, async () => {
  const { rows } = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(app.services.storage.db);
  assert.equal(rows[0]?.synchronous, 1);
});

/**
 * Runs `write` (an HTTP request) with the WAL's fsync held: once its commit
 * is done and an fsync has begun, the reply must still be waiting; it comes
 * only after that fsync finished.
 */
async function replyWaitsForFsync(write: () => Promise<{ status: number }>, committed: () => Promise<boolean>): Promise<void> {
  const wal = app.services.storage.wal!;
  const real = wal.sync;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const entered: number[] = [];
  const finished: number[] = [];
  wal.sync = async (fd) => {
    entered.push(fd);
    await gate;
    await real(fd);
    finished.push(fd);
  };
  try {
    let replied = false;
    const reply = write().then((r) => {
      replied = true;
      // The WAL's fsync (the last one entered) finished before the reply arrived.
      assert.ok(finished.length > 0 && finished.at(-1) === entered.at(-1), "reply before the WAL fsync finished");
      return r;
    });
    await waitFor(() => entered.length > 0, "the fsync to start");
    assert.ok(await committed(), "committed");
    await sleep(200);
    assert.equal(replied, false, "the reply went out while the fsync was held");
    release();
    const r = await reply;
    assert.equal(r.status, 200);
  } finally {
    release();
    wal.sync = real;
  }
}

test("a reply to a write waits for the WAL's fsync", { skip }, async () => {
  await replyWaitsForFsync(
    () => send("held until the fsync"),
    async () => (await app.services.storage.db.selectFrom("messages").select("id").where("content", "=", "held until the fsync").execute()).length === 1,
  );
});

test("so does a reply to a write outside group commit (its own transaction): the reply hook waits", { skip }, async () => {
  // Channel folders are written in a transaction of their own, not through inRealmTransaction.
  await replyWaitsForFsync(
    () => app.api(app.users.admin, "POST", "/channel_folders/create", { name: "held folder", description: "" }),
    async () => (await app.services.storage.db.selectFrom("channel_folders").select("id").where("name", "=", "held folder").execute()).length === 1,
  );
});

test("the fsync'd descriptor is the WAL file's, also after the WAL was deleted and made anew", { skip }, async () => {
  const wal = app.services.storage.wal!;
  const real = wal.sync;
  const file = (await sql<{ file: string }>`SELECT file FROM pragma_database_list WHERE name = 'main'`.execute(app.services.storage.db)).rows[0]!.file;
  const synced: number[] = [];
  wal.sync = async (fd) => {
    synced.push(fs.fstatSync(fd).ino);
    await real(fd);
  };
  try {
    assert.equal((await send("before")).status, 200);
    assert.ok(synced.includes(fs.statSync(`${file}-wal`).ino));
    // Leaving WAL mode checkpoints and deletes the WAL; back in WAL mode the next write makes a new file.
    await sql`PRAGMA journal_mode = DELETE`.execute(app.services.storage.db);
    assert.equal(fs.existsSync(`${file}-wal`), false);
    await sql`PRAGMA journal_mode = WAL`.execute(app.services.storage.db);
    synced.length = 0;
    assert.equal((await send("after")).status, 200);
    assert.ok(synced.includes(fs.statSync(`${file}-wal`).ino), "fsynced the new WAL file");
  } finally {
    wal.sync = real;
  }
});

test("reads do not fsync", { skip }, async () => {
  const wal = app.services.storage.wal!;
  assert.equal((await send("a write first")).status, 200);
  await waitFor(() => app.services.storage.durable() === undefined, "the write to be durable");
  const fsyncs = wal.fsyncs;
  const written = wal.written;
  for (let i = 0; i < 5; i++) {
    assert.equal((await app.api(app.users.member, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: "[]" })).status, 200);
    assert.equal((await app.api(app.users.member, "GET", "/users/me")).status, 200);
    assert.equal((await app.api(app.users.member, "GET", "/users/me/subscriptions")).status, 200);
  }
  assert.equal(wal.written, written, "reads counted as writes");
  assert.equal(wal.fsyncs, fsyncs, "reads fsynced");
});

test("concurrent writes share fsyncs", { skip }, async () => {
  const wal = app.services.storage.wal!;
  await waitFor(() => app.services.storage.durable() === undefined, "earlier writes to be durable");
  const fsyncs = wal.fsyncs;
  const writes = 20;
  const replies = await Promise.all(Array.from({ length: writes }, (_, i) => send(`concurrent ${i}`)));
  for (const r of replies) assert.equal(r.status, 200);
  const used = wal.fsyncs - fsyncs;
  assert.ok(used >= 1, "no fsync");
  assert.ok(used < writes, `${used} fsyncs for ${writes} writes`);
});

test("presence reports are not waited for: their reply goes out with an fsync held, and the next write's fsync covers them", { skip }, async () => {
  const wal = app.services.storage.wal!;
  await waitFor(() => app.services.storage.durable() === undefined, "earlier writes to be durable");
  const written = wal.written;
  const real = wal.sync;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered = 0;
  wal.sync = async (fd) => {
    entered += 1;
    await gate;
    await real(fd);
  };
  try {
    const user = app.users.moderator;
    // The user's first report: a row inserted (in a transaction of presence writes).
    const reply = app.api(user, "POST", "/users/me/presence", { status: "active", ping_only: "true", new_user_input: "true" });
    const outcome = await Promise.race([reply.then((r) => r.status), sleep(10_000).then(() => "still waiting")]);
    assert.equal(outcome, 200);
    const row = await app.services.storage.db.selectFrom("user_presence").select("last_update_id").where("user_id", "=", user.id).executeTakeFirst();
    assert.ok(row, "the report was written");
    assert.equal(wal.written, written, "the presence write was counted as one to wait for");
    assert.equal(entered, 0, "an fsync started for a presence write");
    assert.equal(app.services.storage.durable(), undefined);
    // Any other write still waits, and its fsync (of the whole WAL) covers the presence frames too.
    release();
    assert.equal((await send("after a presence report")).status, 200);
    assert.equal(entered, 1);
    assert.equal(app.services.storage.durable(), undefined);
  } finally {
    release();
    wal.sync = real;
  }
});
