// Files kept in the database (UPLOAD_STORAGE=database, files/database-store.ts):
// uploads, avatars, custom emoji and icons, for servers of several processes
// that share no disk. One row per file and its contents in chunks.
// - stored_files.path: the file's key (a path_id, "avatars/2/….png"), unique.
// - size, sha256 (hex): of the whole file, written with its last chunk.
// - chunk_size: the size of every chunk but the last, so a byte offset names
//   its chunk without reading any other (the writer's size is kept per file,
//   so a later change of it leaves stored files readable).
// - stored_file_chunks: (file_id, seq) → data, seq from 0; an empty file has none.
// The table exists on SQLite too (migrations are shared); the server uses it on PostgreSQL only.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("stored_files")
    .addColumn("id", id.type, id.build)
    .addColumn("path", "text", (c) => c.notNull().unique())
    .addColumn("size", "bigint", (c) => c.notNull())
    .addColumn("sha256", "text", (c) => c.notNull())
    .addColumn("chunk_size", "integer", (c) => c.notNull())
    .addColumn("created_at", "integer", (c) => c.notNull())
    .execute();
  await db.schema
    .createTable("stored_file_chunks")
    .addColumn("file_id", "integer", (c) => c.notNull().references("stored_files.id").onDelete("cascade"))
    .addColumn("seq", "integer", (c) => c.notNull())
    .addColumn("data", dialect === "postgres" ? "bytea" : "blob", (c) => c.notNull())
    .addPrimaryKeyConstraint("stored_file_chunks_pk", ["file_id", "seq"])
    .execute();
  // Most uploads are compressed already (images, archives, PDFs): PostgreSQL
  // would try to compress every chunk for nothing. Kept out of line, uncompressed.
  if (dialect === "postgres") await sql`ALTER TABLE stored_file_chunks ALTER COLUMN data SET STORAGE EXTERNAL`.execute(db);
}
