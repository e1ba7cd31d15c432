// User status, muted users and drafts (issue 19):
// - user_statuses: one row per user who ever set a status (Zulip's
//   UserStatus): text, emoji (name, code, reaction type; '' when none) and
//   when it was set. "away" is not stored here: it is the presence_enabled
//   personal setting, as in Zulip.
// - muted_users: who muted whom, and when. The send path looks rows up by
//   the muted user (the sender), hence the second index.
// - drafts: a user's synchronized compose drafts. The conversation is a
//   recipients row (NULL: a draft with no recipient yet); the edit time is in
//   milliseconds, since clients send fractional timestamps.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("user_statuses")
    .addColumn("user_id", "integer", (c) => c.primaryKey().references("users.id"))
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("status_text", "text", (c) => c.notNull())
    .addColumn("emoji_name", "text", (c) => c.notNull())
    .addColumn("emoji_code", "text", (c) => c.notNull())
    .addColumn("reaction_type", "text", (c) => c.notNull())
    .addColumn("timestamp", "bigint", (c) => c.notNull())
    .addColumn("client", "text", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("user_statuses_realm").on("user_statuses").column("realm_id").execute();

  await db.schema
    .createTable("muted_users")
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("muted_user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("date_muted", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("muted_users_pkey", ["user_id", "muted_user_id"])
    .execute();
  await db.schema.createIndex("muted_users_muted").on("muted_users").columns(["muted_user_id", "user_id"]).execute();

  const id = idColumnType(dialect);
  await db.schema
    .createTable("drafts")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("recipient_id", "integer", (c) => c.references("recipients.id"))
    .addColumn("topic", "text", (c) => c.notNull())
    .addColumn("content", "text", (c) => c.notNull())
    .addColumn("last_edit_time_ms", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("drafts_user_time").on("drafts").columns(["user_id", "last_edit_time_ms", "id"]).execute();
}
