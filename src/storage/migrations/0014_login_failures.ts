// Failed password logins per username (Zulip's authenticate_by_username
// limit), kept in the database so that a restart does not clear a lockout and
// every process sees the same count. One row per username key: the start of
// its current 30-minute window and the attempts counted in it.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("login_failures")
    // SHA-256 of organization and lower-cased username: bounded, whatever was typed.
    .addColumn("key", "text", (c) => c.primaryKey())
    .addColumn("window_start", "bigint", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .execute();
  // Expired windows are deleted by age.
  await db.schema.createIndex("login_failures_window_start").on("login_failures").column("window_start").execute();
}
