// Where uploaded files, avatars, custom emoji and the organization icon are
// kept: one narrow interface with a backend per place. "local" is a directory
// on this machine (DATA_DIR/uploads, laid out as Zulip's local storage), for
// one server; "database" keeps the files in PostgreSQL, in chunks, so that
// every process behind a load balancer reads the same files. An object store
// (S3) would be a third implementation of the same five methods.
//
// Keys are path_ids and the like ("avatars/2/abc.png", "2/a/token/name.txt"):
// segments separated by "/", none empty, "." or "..", none with a backslash
// or NUL. Every backend refuses any other key, so a key valid in one is valid
// in all, and files can be moved between them (files/move.ts).
import type { Readable } from "node:stream";

export type UploadStorage = "local" | "database";

/** An inclusive byte range, as HTTP Range requests give one: bytes start…end. */
export interface ByteRange {
  start: number;
  end: number;
}

/** A stored file, found: its size, and its bytes on demand. */
export interface StoredFile {
  size: number;
  /**
   * The file's bytes (or those of `range`, which must lie within the file).
   * Nothing is read before the stream is; a file deleted meanwhile ends the
   * stream with an error.
   */
  stream(range?: ByteRange): Readable;
}

/** What put() stored: the bytes it read, counted and hashed on the way. */
export interface PutResult {
  size: number;
  /** SHA-256 of the contents, hex. */
  sha256: string;
}

export interface FileStore {
  readonly backend: UploadStorage;
  /**
   * Stores `body` under `key`. A key is written once: if it holds a file
   * already, this throws FileExistsError and leaves that file alone. The file
   * becomes visible only once complete, so a failed or interrupted put leaves
   * nothing behind.
   */
  put(key: string, body: Readable | Buffer): Promise<PutResult>;
  /** The file under `key`, or undefined if there is none. */
  open(key: string): Promise<StoredFile | undefined>;
  /** Removes the file under `key`; nothing happens if there is none. */
  delete(key: string): Promise<void>;
  /** Every stored file, once each, in no particular order (for moving them to another backend). */
  list(): AsyncIterable<{ key: string; size: number }>;
}

/** put() found a file under the key already. */
export class FileExistsError extends Error {
  constructor(readonly key: string) {
    super(`a file is stored under '${key}' already`);
  }
}

/** Keys that are never files of ours: scratch space of the local backend's directory. */
const RESERVED_FIRST_SEGMENT = ".incoming";

/** Throws unless `key` is one every backend may store (see the top of this file). */
export function checkStorageKey(key: string): string[] {
  const parts = key.split("/");
  if (
    key.length === 0 ||
    key.length > 1024 ||
    parts[0] === RESERVED_FIRST_SEGMENT ||
    parts.some((p) => p === "" || p === "." || p === ".." || p.includes("\\") || p.includes("\0"))
  ) {
    throw new Error(`Refusing to use '${key}' as a storage key`);
  }
  return parts;
}

/** Whether every backend may store `key` (checkStorageKey would accept it). */
export function isStorageKey(key: string): boolean {
  try {
    checkStorageKey(key);
    return true;
  } catch {
    return false;
  }
}

/** Reads a stored file's bytes (or a range of them) into one buffer: for small files only (keys, images to re-encode). */
export async function readStoredFile(file: StoredFile, range?: ByteRange): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const piece of file.stream(range)) pieces.push(piece as Buffer);
  return Buffer.concat(pieces);
}
