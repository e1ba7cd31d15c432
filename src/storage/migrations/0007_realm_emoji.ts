// Custom emoji of an organization (Zulip's RealmEmoji). Deactivating one keeps
// the row, so old messages and reactions still show its image; an active
// name is unique per organization, and a deactivated name can be taken again.
// The image lives under the uploads directory (see actions/realm-emoji.ts).
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("realm_emoji")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    // NULL when the uploader is unknown (Zulip allows it; Parley always records one).
    .addColumn("author_id", "integer", (c) => c.references("users.id"))
    .addColumn("name", "text", (c) => c.notNull())
    // The image's file name, e.g. "3f9c0a1b2d4e5f60.png", under avatars/{realm_id}/emoji/images/.
    .addColumn("file_name", "text", (c) => c.notNull())
    .addColumn("deactivated", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .execute();
  // Zulip's unique_realm_emoji_when_false_deactivated. `NOT deactivated` reads the same on both dialects.
  await sql`CREATE UNIQUE INDEX realm_emoji_active_name ON realm_emoji (realm_id, name) WHERE NOT deactivated`.execute(db);
  await db.schema.createIndex("realm_emoji_realm").on("realm_emoji").columns(["realm_id", "id"]).execute();
}
