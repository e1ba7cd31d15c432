// Direct-message conversations are found by a hash of their participant list
// (Zulip's huddle_hash), not by the list itself: PostgreSQL cannot put a key
// longer than about 2,700 bytes in a B-tree, so a unique index on dm_key
// refused conversations of several hundred people.
import { sql, type Kysely } from "kysely";
import { dmHash } from "../../domain/messages.ts";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await sql`ALTER TABLE recipients ADD COLUMN dm_hash text`.execute(db);
  const rows = (await sql<{ id: number; dm_key: string }>`SELECT id, dm_key FROM recipients WHERE dm_key IS NOT NULL`.execute(db)).rows;
  for (const row of rows) await sql`UPDATE recipients SET dm_hash = ${dmHash(row.dm_key)} WHERE id = ${row.id}`.execute(db);
  await sql`DROP INDEX recipients_dm_key`.execute(db);
  await sql`CREATE UNIQUE INDEX recipients_dm_hash ON recipients (realm_id, dm_hash)`.execute(db);
}
