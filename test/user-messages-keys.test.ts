// The flag rows' references (user_messages.user_id → users, message_id →
// messages) hold on both databases: SQLite's native foreign keys, and on
// PostgreSQL the statement triggers that replace them (migration 0034): a
// row naming no user or no message is refused, a message or user still named
// cannot be deleted or renumbered, and (PostgreSQL) an insert and a delete
// running at once are ordered by the insert's lock, as a native key's are.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql, type Transaction } from "kysely";
import type { Database } from "../src/storage/schema.ts";
import { assertSuccess, createChannel, startTestApp, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const db = () => t.services.storage.db;
const UNKNOWN = 2_000_000_000;

/** Rejected as a foreign-key violation (PostgreSQL 23503, SQLite's constraint error), naming `constraint` on PostgreSQL. */
async function rejectsAsForeignKey(action: Promise<unknown>, constraint: string): Promise<void> {
  await assert.rejects(action, (error: { code?: string; constraint?: string; message: string }) => {
    if (t.services.storage.dialect === "postgres") {
      assert.equal(error.code, "23503");
      assert.equal(error.constraint, constraint);
    } else {
      assert.match(error.message, /FOREIGN KEY constraint failed/);
    }
    return true;
  });
}

/** A message sent to a new channel, and the users holding a flag row for it. */
async function sentMessage(): Promise<{ messageId: number; userIds: number[] }> {
  const channel = await createChannel(t, t.users.owner, [t.users.owner, t.users.member], "keys");
  const messageId = assertSuccess(await t.api(t.users.owner, "POST", "/messages", { type: "stream", to: channel.id, topic: "keys", content: "flagged" })).id as number;
  const rows = await db().selectFrom("user_messages").select("user_id").where("message_id", "=", messageId).orderBy("user_id").execute();
  return { messageId, userIds: rows.map((r) => r.user_id) };
}

async function flagRowsOf(messageId: number): Promise<number> {
  return (await db().selectFrom("user_messages").select("user_id").where("message_id", "=", messageId).execute()).length;
}

describe("the flag rows' references", () => {
  test("a row naming no user or no message is refused, and the whole statement with it", async () => {
    const { messageId, userIds } = await sentMessage();
    const another = t.users.admin.id;
    assert.ok(!userIds.includes(another));
    /** Flag rows (user ID, message ID) in one INSERT. */
    const insert = (...rows: [number, number][]) =>
      db()
        .insertInto("user_messages")
        .values(rows.map(([user_id, message_id]) => ({ user_id, message_id, flags: 0 })))
        .execute();
    await rejectsAsForeignKey(insert([UNKNOWN, messageId]), "user_messages_user_id_fkey");
    await rejectsAsForeignKey(insert([another, UNKNOWN]), "user_messages_message_id_fkey");
    // One bad row among good ones: nothing is written.
    const before = await flagRowsOf(messageId);
    await rejectsAsForeignKey(insert([another, messageId], [UNKNOWN, messageId]), "user_messages_user_id_fkey");
    assert.equal(await flagRowsOf(messageId), before);
    await rejectsAsForeignKey(insert([another, messageId], [another, UNKNOWN]), "user_messages_message_id_fkey");
    assert.equal(await flagRowsOf(messageId), before);
    // Good rows alone go in.
    await insert([another, messageId]);
    assert.equal(await flagRowsOf(messageId), before + 1);
  });

  test("a row's user or message changed to one that does not exist is refused; its flags change freely", async () => {
    const { messageId, userIds } = await sentMessage();
    const userId = userIds[0]!;
    const row = db().updateTable("user_messages").where("user_id", "=", userId).where("message_id", "=", messageId);
    await rejectsAsForeignKey(row.set({ user_id: UNKNOWN }).execute(), "user_messages_user_id_fkey");
    await rejectsAsForeignKey(row.set({ message_id: UNKNOWN }).execute(), "user_messages_message_id_fkey");
    await row.set({ flags: 1 }).execute();
    assert.deepEqual(await db().selectFrom("user_messages").select("flags").where("user_id", "=", userId).where("message_id", "=", messageId).executeTakeFirst(), { flags: 1 });
  });

  test("a message or user that flag rows name cannot be deleted or renumbered; without them the message goes", async () => {
    const { messageId } = await sentMessage();
    await rejectsAsForeignKey(db().deleteFrom("messages").where("id", "=", messageId).execute(), "user_messages_message_id_fkey");
    await rejectsAsForeignKey(db().updateTable("messages").set({ id: UNKNOWN }).where("id", "=", messageId).execute(), "user_messages_message_id_fkey");
    // A bare user row that only a flag row names (any user the API makes is named by other tables' keys too).
    const bare = await db()
      .insertInto("users")
      .values({ realm_id: t.realm.id, email: "bare@keys.example", delivery_email: "bare@keys.example", full_name: "Bare", api_key: "bare-keys-api-key", role: 400, email_address_visibility: 1, date_joined: 0, email_key: "bare@keys.example", delivery_email_key: "bare@keys.example", timezone: "", avatar_source: "G", avatar_version: 1 })
      .returning("id")
      .executeTakeFirstOrThrow();
    await db().insertInto("user_messages").values({ user_id: bare.id, message_id: messageId, flags: 0 }).execute();
    await rejectsAsForeignKey(db().deleteFrom("users").where("id", "=", bare.id).execute(), "user_messages_user_id_fkey");
    await rejectsAsForeignKey(db().updateTable("users").set({ id: UNKNOWN }).where("id", "=", bare.id).execute(), "user_messages_user_id_fkey");
    await db().updateTable("users").set({ full_name: "Bare, renamed" }).where("id", "=", bare.id).execute();
    // Other updates of those rows are not checked against the flag rows.
    await db().updateTable("messages").set({ content: "edited" }).where("id", "=", messageId).execute();
    // The API's delete takes the flag rows first.
    assertSuccess(await t.api(t.users.owner, "DELETE", `/messages/${messageId}`));
    assert.equal(await db().selectFrom("messages").select("id").where("id", "=", messageId).executeTakeFirst(), undefined);
    assert.equal(await flagRowsOf(messageId), 0);
  });
});

describe("PostgreSQL: an insert and a delete at once", { skip: process.env.DATABASE_URL ? false : "PostgreSQL only (SQLite has one writer)" }, () => {
  /** Resolves once a connection of this database waits for a lock in a statement starting with `statement`. */
  async function waitsForALock(statement: string): Promise<void> {
    for (let waited = 0; ; waited += 10) {
      const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${`${statement}%`}`.execute(db());
      if (Number(rows[0]!.n) > 0) return;
      if (waited > 10_000) throw new Error(`nothing waited for a lock in ${statement}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Runs `work` in a transaction held open until the returned `release` is called; resolves once `work` is done. */
  async function heldOpen(work: (trx: Transaction<Database>) => Promise<unknown>): Promise<{ release: () => void; done: Promise<unknown> }> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let worked!: () => void;
    const workDone = new Promise<void>((resolve) => (worked = resolve));
    const done = db()
      .transaction()
      .execute(async (trx) => {
        await work(trx);
        worked();
        await held;
      });
    await workDone;
    return { release, done };
  }

  const outcomeOf = (work: Promise<unknown>) =>
    work.then(
      () => "done",
      (error: { code?: string; constraint?: string }) => `${error.code} ${error.constraint}`,
    );

  /** A user row that only flag rows will name (any user the API makes is named by other tables' keys too). */
  async function bareUser(name: string): Promise<number> {
    const email = `${name}@keys.example`;
    const row = await db()
      .insertInto("users")
      .values({ realm_id: t.realm.id, email, delivery_email: email, full_name: name, api_key: `${name}-keys-api-key`, role: 400, email_address_visibility: 1, date_joined: 0, email_key: email, delivery_email_key: email, timezone: "", avatar_source: "G", avatar_version: 1 })
      .returning("id")
      .executeTakeFirstOrThrow();
    return row.id;
  }

  /** A message whose flag rows are gone: nothing else names it. */
  async function unflaggedMessage(): Promise<number> {
    const { messageId } = await sentMessage();
    await db().deleteFrom("user_messages").where("message_id", "=", messageId).execute();
    return messageId;
  }

  test("a delete of the message or user an uncommitted insert names waits for it, then fails", async () => {
    const messageId = await unflaggedMessage();
    const userId = await bareUser("racing");
    const insert = await heldOpen((trx) => trx.insertInto("user_messages").values({ user_id: userId, message_id: messageId, flags: 0 }).execute());
    const removeMessage = outcomeOf(db().deleteFrom("messages").where("id", "=", messageId).execute());
    await waitsForALock('delete from "messages"');
    const removeUser = outcomeOf(db().deleteFrom("users").where("id", "=", userId).execute());
    await waitsForALock('delete from "users"');
    insert.release();
    await insert.done;
    assert.equal(await removeMessage, "23503 user_messages_message_id_fkey");
    assert.equal(await removeUser, "23503 user_messages_user_id_fkey");
    assert.equal(await flagRowsOf(messageId), 1);
  });

  test("an insert naming a message or user an uncommitted delete removed waits for it, then fails", async () => {
    for (const [side, constraint] of [
      ["message", "user_messages_message_id_fkey"],
      ["user", "user_messages_user_id_fkey"],
    ] as const) {
      const messageId = await unflaggedMessage();
      const userId = await bareUser(`removed-${side}`);
      const remove = await heldOpen((trx) => (side === "message" ? trx.deleteFrom("messages").where("id", "=", messageId) : trx.deleteFrom("users").where("id", "=", userId)).execute());
      const insert = outcomeOf(db().insertInto("user_messages").values({ user_id: userId, message_id: messageId, flags: 0 }).execute());
      await waitsForALock('insert into "user_messages"');
      remove.release();
      await remove.done;
      assert.equal(await insert, `23503 ${constraint}`);
      assert.equal(await flagRowsOf(messageId), 0);
    }
  });

  test("an open insert does not hold up edits of the message or of the users it names", { timeout: 20_000 }, async () => {
    const messageId = await unflaggedMessage();
    const insert = await heldOpen((trx) => trx.insertInto("user_messages").values({ user_id: t.users.member.id, message_id: messageId, flags: 0 }).execute());
    // Both would wait for the insert's commit (and this test time out) were its locks stronger than FOR KEY SHARE.
    await db().updateTable("messages").set({ content: "edited meanwhile" }).where("id", "=", messageId).execute();
    await db().updateTable("users").set({ full_name: "Renamed meanwhile" }).where("id", "=", t.users.member.id).execute();
    insert.release();
    await insert.done;
    assert.equal(await flagRowsOf(messageId), 1);
  });

  test("a delete outside READ COMMITTED is refused; a TRUNCATE that leaves flag rows fails", async () => {
    const { messageId } = await sentMessage();
    await db().deleteFrom("user_messages").where("message_id", "=", messageId).execute();
    const repeatable = db()
      .transaction()
      .setIsolationLevel("repeatable read")
      .execute((trx) => trx.deleteFrom("messages").where("id", "=", messageId).execute());
    await assert.rejects(repeatable, (error: { code?: string }) => error.code === "0A000");
    assert.ok(await db().selectFrom("messages").select("id").where("id", "=", messageId).executeTakeFirst());
    // CASCADE empties the tables whose native keys name messages, but not user_messages: the trigger refuses it all.
    await assert.rejects(sql`TRUNCATE messages CASCADE`.execute(db()), (error: { code?: string }) => error.code === "23503");
    assert.ok(await db().selectFrom("messages").select("id").where("id", "=", messageId).executeTakeFirst());
  });
});
