// The "database" file store: files in PostgreSQL, shared by every process
// that uses the database (migration 0025). A file is a stored_files row and
// its contents in CHUNK_BYTES pieces.
//
// Memory stays bounded whatever the file's size: put() holds one chunk at a
// time, inserting each as it fills, all in one transaction, so a file is
// visible complete or not at all; a read fetches one chunk per query, by
// primary key, only when the stream wants more bytes, and a range reads only
// the chunks that hold it.
//
// put() and delete() run on a pool connection of their own, so they may be
// called while the caller holds a realm transaction (the icon, custom emoji
// and attachment deletion do, as they did with local files): the file's
// write commits on its own, and the caller removes the file again if its
// transaction fails.
import crypto from "node:crypto";
import { Readable } from "node:stream";
import type { Kysely } from "kysely";
import type { Database } from "../storage/schema.ts";
import { checkStorageKey, FileExistsError, type ByteRange, type FileStore, type PutResult, type StoredFile } from "./store.ts";

/** Bytes per chunk: large enough that a download is few queries, small enough to hold one per stream. */
export const CHUNK_BYTES = 256 * 1024;

/** Files listed per query by list(). */
const LIST_PAGE = 500;

/** What the store has read and written, chunk by chunk: tests check that memory use is bounded by the chunk size. */
export interface ChunkStats {
  /** Queries that read chunks: each reads exactly one. */
  chunkReads: number;
  chunkWrites: number;
  /** The most bytes one query read or wrote. */
  largestChunk: number;
}

export class DatabaseFileStore implements FileStore {
  readonly backend = "database" as const;
  readonly stats: ChunkStats = { chunkReads: 0, chunkWrites: 0, largestChunk: 0 };

  constructor(private readonly db: Kysely<Database>) {}

  async put(key: string, body: Readable | Buffer): Promise<PutResult> {
    checkStorageKey(key);
    return this.db.transaction().execute(async (trx) => {
      // A second writer of the same key waits here for the first to commit, then finds its row.
      const inserted = await trx
        .insertInto("stored_files")
        .values({ path: key, size: 0, sha256: "", chunk_size: CHUNK_BYTES, created_at: Math.floor(Date.now() / 1000) })
        .onConflict((oc) => oc.column("path").doNothing())
        .returning("id")
        .executeTakeFirst();
      if (!inserted) throw new FileExistsError(key);
      const hash = crypto.createHash("sha256");
      let size = 0;
      let seq = 0;
      let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
      let filled = 0;
      const flush = async () => {
        await trx.insertInto("stored_file_chunks").values({ file_id: inserted.id, seq, data: chunk.subarray(0, filled) }).execute();
        this.count("chunkWrites", filled);
        seq += 1;
        chunk = Buffer.allocUnsafe(CHUNK_BYTES);
        filled = 0;
      };
      for await (const piece of Buffer.isBuffer(body) ? [body] : body) {
        const bytes = piece as Buffer;
        hash.update(bytes);
        size += bytes.length;
        let offset = 0;
        while (offset < bytes.length) {
          const taken = bytes.copy(chunk, filled, offset, Math.min(bytes.length, offset + CHUNK_BYTES - filled));
          filled += taken;
          offset += taken;
          if (filled === CHUNK_BYTES) await flush();
        }
      }
      if (filled > 0) await flush();
      const sha256 = hash.digest("hex");
      await trx.updateTable("stored_files").set({ size, sha256 }).where("id", "=", inserted.id).execute();
      return { size, sha256 };
    });
  }

  async open(key: string): Promise<StoredFile | undefined> {
    checkStorageKey(key);
    const row = await this.db.selectFrom("stored_files").select(["id", "size", "chunk_size"]).where("path", "=", key).executeTakeFirst();
    if (!row) return undefined;
    return { size: row.size, stream: (range) => Readable.from(this.chunks(key, row, range), { objectMode: false, highWaterMark: 1 }) };
  }

  /** The bytes of `range` (default: the whole file), one chunk query at a time, each when the reader asks for more. */
  private async *chunks(key: string, file: { id: number; size: number; chunk_size: number }, range?: ByteRange): AsyncGenerator<Buffer> {
    const start = range?.start ?? 0;
    const end = range?.end ?? file.size - 1;
    if (file.size === 0 || end < start) return;
    if (start < 0 || end >= file.size) throw new RangeError(`bytes ${start}-${end} are not within '${key}' (${file.size} bytes)`);
    const first = Math.floor(start / file.chunk_size);
    const last = Math.floor(end / file.chunk_size);
    for (let seq = first; seq <= last; seq++) {
      const row = await this.db.selectFrom("stored_file_chunks").select("data").where("file_id", "=", file.id).where("seq", "=", seq).executeTakeFirst();
      // The file was deleted (or replaced: a new file has a new id) while being read.
      if (!row) throw new Error(`'${key}' was removed while being read`);
      this.count("chunkReads", row.data.length);
      const base = seq * file.chunk_size;
      yield row.data.subarray(seq === first ? start - base : 0, seq === last ? end - base + 1 : row.data.length);
    }
  }

  async delete(key: string): Promise<void> {
    checkStorageKey(key);
    // Its chunks go with it (ON DELETE CASCADE).
    await this.db.deleteFrom("stored_files").where("path", "=", key).execute();
  }

  async *list(): AsyncIterable<{ key: string; size: number }> {
    let after: string | undefined;
    for (;;) {
      let query = this.db.selectFrom("stored_files").select(["path", "size"]).orderBy("path").limit(LIST_PAGE);
      if (after !== undefined) query = query.where("path", ">", after);
      const rows = await query.execute();
      for (const row of rows) yield { key: row.path, size: row.size };
      if (rows.length < LIST_PAGE) return;
      after = rows[rows.length - 1]!.path;
    }
  }

  private count(what: "chunkReads" | "chunkWrites", bytes: number): void {
    this.stats[what] += 1;
    this.stats.largestChunk = Math.max(this.stats.largestChunk, bytes);
  }
}
