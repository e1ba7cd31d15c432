// The "local" file store: files in a directory of this machine at their keys
// (DATA_DIR/uploads/avatars/2/….png and so on, Zulip's local-storage layout,
// the one Parley has always used). A file is written under a temporary name
// in ".incoming", flushed to disk, then hard-linked into place: a link never
// replaces an existing file, and a reader never sees half a file.
import crypto from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { checkStorageKey, FileExistsError, type FileStore, type PutResult, type StoredFile } from "./store.ts";

/** Scratch space beside the files (same file system, so a link can move a file into place); never listed. */
export const INCOMING_DIR = ".incoming";

/** Temporary copies made while the signing key was created by older versions: not files. */
const OLD_KEY_CANDIDATE = /^\.signing-key\..+$/;

export class LocalFileStore implements FileStore {
  readonly backend = "local" as const;

  constructor(readonly root: string) {}

  /** The file a key names: always inside the root, whatever the key says (checkStorageKey refuses "..", and this checks again). */
  pathOf(key: string): string {
    const parts = checkStorageKey(key);
    const root = path.resolve(this.root);
    const file = path.resolve(root, ...parts);
    if (!file.startsWith(root + path.sep)) throw new Error(`Refusing to use '${key}' as a storage key`);
    return file;
  }

  async put(key: string, body: Readable | Buffer): Promise<PutResult> {
    const target = this.pathOf(key);
    const incoming = path.join(this.root, INCOMING_DIR);
    await fs.mkdir(incoming, { recursive: true });
    const temp = path.join(incoming, crypto.randomBytes(16).toString("hex"));
    const hash = crypto.createHash("sha256");
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        hash.update(chunk);
        callback(null, chunk);
      },
    });
    try {
      // Readable only by the server's user: uploads are private, and the signing key lives here too.
      await pipeline(Buffer.isBuffer(body) ? Readable.from([body]) : body, counter, createWriteStream(temp, { flags: "wx", mode: 0o600 }));
      const handle = await fs.open(temp, "r+");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.mkdir(path.dirname(target), { recursive: true });
      try {
        await fs.link(temp, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new FileExistsError(key);
        throw error;
      }
    } finally {
      await fs.rm(temp, { force: true });
    }
    return { size, sha256: hash.digest("hex") };
  }

  async open(key: string): Promise<StoredFile | undefined> {
    const file = this.pathOf(key);
    const stat = await fs.stat(file).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT" || error.code === "ENOTDIR") return undefined;
      throw error;
    });
    if (!stat?.isFile()) return undefined;
    return {
      size: stat.size,
      stream: (range) => createReadStream(file, range ? { start: range.start, end: range.end } : {}),
    };
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.pathOf(key), { force: true });
  }

  async *list(): AsyncIterable<{ key: string; size: number }> {
    yield* this.walk(path.resolve(this.root), []);
  }

  private async *walk(dir: string, prefix: string[]): AsyncGenerator<{ key: string; size: number }> {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    for (const entry of entries) {
      if (prefix.length === 0 && (entry.name === INCOMING_DIR || OLD_KEY_CANDIDATE.test(entry.name))) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        yield* this.walk(full, [...prefix, entry.name]);
      } else if (entry.isFile()) {
        const stat = await fs.stat(full).catch(() => undefined);
        if (stat) yield { key: [...prefix, entry.name].join("/"), size: stat.size };
      }
    }
  }
}
