// Weekly digest emails (Zulip's zerver/lib/digest.py; workers/digest-emails.ts):
// - digest_days: each UTC day (YYYY-MM-DD) whose daily digest check ran. The
//   check inserts its day before it queues anything, so of two checks for one
//   day (two processes seeding the chain at once) only the first does the work.
// - user_digests: when each user was last sent a digest (UNIX seconds), Zulip's
//   USER_DIGEST_EMAIL_CREATED audit rows: written before the email goes out,
//   so a retried or repeated job never sends a second one that week.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("digest_days")
    .addColumn("day", "text", (c) => c.primaryKey())
    .addColumn("checked_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("user_digests")
    .addColumn("user_id", "integer", (c) => c.primaryKey().references("users.id"))
    .addColumn("last_sent_at", "bigint", (c) => c.notNull())
    .execute();
}
