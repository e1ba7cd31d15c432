// Migration 0031: on SQLite, user_messages is rebuilt as a WITHOUT ROWID
// table clustered on (user_id, message_id), keeping every row, its flags,
// the partial indexes and the foreign keys. A no-op on PostgreSQL.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sql } from "kysely";
import { renderDescription } from "../src/queries/markdown-context.ts";
import { migrateToLatest } from "../src/storage/migrate.ts";
import { assertSuccess, startTestApp, uniqueName, type TestApp } from "./helpers.ts";

const isSqlite = !process.env.DATABASE_URL;

let app: TestApp;
before(async () => {
  app = await startTestApp();
});
after(async () => {
  await app?.close();
});

type FlagRow = { user_id: number; message_id: number; flags: number };

async function flagRows(): Promise<FlagRow[]> {
  return app.services.storage.db.selectFrom("user_messages").select(["user_id", "message_id", "flags"]).orderBy("user_id").orderBy("message_id").execute();
}

async function tableSql(name: string): Promise<string | undefined> {
  const { rows } = await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE name = ${name}`.execute(app.services.storage.db);
  return rows[0]?.sql;
}

async function userMessagesIndexes(): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'user_messages' ORDER BY name`.execute(app.services.storage.db);
  return rows.map((r) => r.name);
}

const INDEXES = ["user_messages_mentioned", "user_messages_message", "user_messages_private", "user_messages_starred", "user_messages_unread"];

test("a new SQLite database has user_messages clustered on its key, with its indexes", { skip: isSqlite ? false : "SQLite only" }, async () => {
  assert.match((await tableSql("user_messages")) ?? "", /WITHOUT ROWID\s*$/);
  assert.deepEqual(await userMessagesIndexes(), INDEXES);
});

test("0031 rebuilds an old rowid table with every row and flag; reads, flag changes and foreign keys work after it", async () => {
  const { db } = app.services.storage;
  const { owner, member } = app.users;
  const channel = uniqueName("clustered");
  assertSuccess(await app.api(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }], principals: JSON.stringify([owner.id, member.id]) }));
  const ids: number[] = [];
  for (const content of ["one", "two", `three @**${(await db.selectFrom("users").select("full_name").where("id", "=", member.id).executeTakeFirstOrThrow()).full_name}**`]) {
    ids.push(assertSuccess(await app.api(owner, "POST", "/messages", { type: "stream", to: channel, topic: "t", content })).id);
  }
  assertSuccess(await app.api(member, "POST", "/messages/flags", { messages: JSON.stringify([ids[0]]), op: "add", flag: "starred" }));
  assertSuccess(await app.api(member, "POST", "/messages/flags", { messages: JSON.stringify([ids[1]]), op: "add", flag: "read" }));

  if (isSqlite) {
    // The table as 0005 made it, holding the same rows.
    await sql`CREATE TABLE user_messages_rowid (
      user_id integer NOT NULL REFERENCES users (id), message_id integer NOT NULL REFERENCES messages (id),
      flags integer NOT NULL DEFAULT 0, CONSTRAINT user_messages_pk PRIMARY KEY (user_id, message_id))`.execute(db);
    await sql`INSERT INTO user_messages_rowid SELECT user_id, message_id, flags FROM user_messages`.execute(db);
    await sql`DROP TABLE user_messages`.execute(db);
    await sql`ALTER TABLE user_messages_rowid RENAME TO user_messages`.execute(db);
    await sql`CREATE INDEX user_messages_message ON user_messages (message_id)`.execute(db);
    await sql`CREATE INDEX user_messages_unread ON user_messages (user_id, message_id) WHERE (flags & 1) = 0`.execute(db);
    await sql`CREATE INDEX user_messages_starred ON user_messages (user_id, message_id) WHERE (flags & 2) <> 0`.execute(db);
    await sql`CREATE INDEX user_messages_mentioned ON user_messages (user_id, message_id) WHERE (flags & 120) <> 0`.execute(db);
    await sql`CREATE INDEX user_messages_private ON user_messages (user_id, message_id) WHERE (flags & 2048) <> 0`.execute(db);
    assert.doesNotMatch((await tableSql("user_messages")) ?? "", /WITHOUT ROWID/);
  }
  const before = await flagRows();
  await sql`DELETE FROM kysely_migration WHERE name = '0031_user_messages_clustered'`.execute(db);

  const applied = await migrateToLatest(app.services.storage, {
    renderDescription: (trx, realmId, text) => renderDescription(trx, app.services.config, realmId, text),
  });
  assert.deepEqual(applied, ["0031_user_messages_clustered"]);
  assert.deepEqual(await flagRows(), before);
  if (isSqlite) {
    assert.match((await tableSql("user_messages")) ?? "", /WITHOUT ROWID\s*$/);
    assert.equal(await tableSql("user_messages_clustered"), undefined);
    assert.deepEqual(await userMessagesIndexes(), INDEXES);
  }

  // Through the API: the flags read back by narrow, and changed.
  const narrow = (operator: string, operand: string) =>
    app.api(member, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: "channel", operand: channel }, { operator, operand }]) });
  const ids_ = (r: { messages: { id: number }[] }) => r.messages.map((m) => m.id);
  assert.deepEqual(ids_(assertSuccess(await narrow("is", "starred"))), [ids[0]]);
  assert.deepEqual(ids_(assertSuccess(await narrow("is", "unread"))), [ids[0], ids[2]]);
  assert.deepEqual(ids_(assertSuccess(await narrow("is", "mentioned"))), [ids[2]]);
  assertSuccess(await app.api(member, "POST", "/messages/flags", { messages: JSON.stringify([ids[2]]), op: "add", flag: "read" }));
  assert.deepEqual(ids_(assertSuccess(await narrow("is", "unread"))), [ids[0]]);
  const next = assertSuccess(await app.api(owner, "POST", "/messages", { type: "stream", to: channel, topic: "t", content: "after" })).id;
  assert.deepEqual(ids_(assertSuccess(await narrow("is", "unread"))), [ids[0], next]);

  // The foreign keys hold on the new table.
  await assert.rejects(db.insertInto("user_messages").values({ user_id: member.id, message_id: next + 1_000_000, flags: 0 }).execute());
  await assert.rejects(db.insertInto("user_messages").values({ user_id: 99_999_999, message_id: next, flags: 0 }).execute());
});
