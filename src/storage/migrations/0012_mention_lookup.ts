// Mentions are looked up by name when a message is sent (queries/markdown-context.ts:
// by `lower(full_name)` and by `full_name` as written); without these indexes
// every send that mentions someone read all of the organization's users.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await sql`CREATE INDEX users_realm_full_name ON users (realm_id, full_name)`.execute(db);
  await sql`CREATE INDEX users_realm_full_name_lower ON users (realm_id, lower(full_name))`.execute(db);
}
