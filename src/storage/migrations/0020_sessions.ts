// Browser sign-in (issue 20):
// - sessions: one row per signed-in browser. The cookie holds a random token;
//   only its SHA-256 is stored, so a copy of the database signs nobody in.
//   Each session has its own CSRF token, which the page sends back in
//   X-CSRFToken on unsafe requests. Rows expire at expires_at (fixed at
//   sign-in) and are deleted at logout, on a password change and on
//   deactivation.
// - password_reset_tokens: the one-time links of "Forgot your password?"
//   emails, likewise stored hashed, deleted when used or when the password
//   changes any other way.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("sessions")
    // Hex SHA-256 of the cookie's token.
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("csrf_token", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
  // A user's sessions are ended together; expired ones are deleted by age.
  await db.schema.createIndex("sessions_user").on("sessions").column("user_id").execute();
  await db.schema.createIndex("sessions_expires_at").on("sessions").column("expires_at").execute();

  await db.schema
    .createTable("password_reset_tokens")
    .addColumn("token_hash", "text", (c) => c.primaryKey())
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("password_reset_tokens_user").on("password_reset_tokens").column("user_id").execute();
  await db.schema.createIndex("password_reset_tokens_expires_at").on("password_reset_tokens").column("expires_at").execute();
}
