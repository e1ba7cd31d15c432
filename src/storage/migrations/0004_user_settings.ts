// Personal settings as a JSON object per user: only the values that differ
// from Zulip's defaults (domain/user-settings.ts) are stored.
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable("users").addColumn("settings", "text", (c) => c.notNull().defaultTo("{}")).execute();
}
