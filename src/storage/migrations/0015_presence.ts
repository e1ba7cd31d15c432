// Presence (issue 19), as Zulip's UserPresence and PresenceSequence:
// - user_presence: one row per user, updated in place by every client's ping
//   (no history): the last time a client said the user was connected
//   (last_connected_time) and actively using it (last_active_time), either
//   NULL for "never", and the organization-wide sequence number of its last
//   change (last_update_id), which lets clients fetch only what changed since
//   their last fetch (POST /users/me/presence with last_update_id).
// - presence_sequences: per organization, the last last_update_id handed out.
//   Bumping it takes that row's lock until the writer commits, so numbers
//   become visible in increasing order to every process sharing the database.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("user_presence")
    .addColumn("user_id", "integer", (c) => c.primaryKey().references("users.id"))
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("last_connected_time", "bigint")
    .addColumn("last_active_time", "bigint")
    .addColumn("last_update_id", "bigint", (c) => c.notNull())
    .execute();
  // The two reads of an organization's presence: what changed since a client's
  // last fetch, and everyone seen in the last N days.
  await db.schema.createIndex("user_presence_realm_update").on("user_presence").columns(["realm_id", "last_update_id"]).execute();
  await db.schema.createIndex("user_presence_realm_connected").on("user_presence").columns(["realm_id", "last_connected_time"]).execute();

  await db.schema
    .createTable("presence_sequences")
    .addColumn("realm_id", "integer", (c) => c.primaryKey().references("realms.id"))
    .addColumn("last_update_id", "bigint", (c) => c.notNull())
    .execute();
  // Writers create a missing row themselves (an upsert); existing organizations get theirs here.
  await sql`INSERT INTO presence_sequences (realm_id, last_update_id) SELECT id, 0 FROM realms`.execute(db);
}
