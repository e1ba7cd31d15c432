// Link previews (Zulip's url embed data, which it keeps in its cache): what a
// linked page said of itself, fetched once and reused by every message that
// links it, in the database so every process shares it.
// - url_hash: SHA-256 of the URL, hex — the key (a URL may be longer than an
//   index entry can be on PostgreSQL).
// - data: JSON {title, description, image}, or null when the page gave no
//   preview (or could not be fetched): that answer is cached too.
// - fetched_at: UNIX seconds; an entry older than PREVIEW_CACHE_SECONDS is
//   fetched again when a new message links it.
import type { Kysely } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable("link_previews")
    .addColumn("url_hash", "text", (c) => c.primaryKey())
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("data", "text")
    .addColumn("fetched_at", "integer", (c) => c.notNull())
    .execute();
}
