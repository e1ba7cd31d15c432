// The image proxy's disk cache: an image another site serves is fetched once
// and kept (its bytes and content type, one file per URL named by the URL's
// SHA-256) under DATA_DIR/external-content-cache for as long as browsers are
// told to keep it, so a popular image costs the other site one request, not
// one per reader. Readers asking for an image being fetched wait for that
// fetch instead of starting their own.
//
// Bounded: past `maxBytes` the least recently used files go. A file being
// opened by a reader is not removed under it (pinned); one already opened
// survives its removal (POSIX). The disk is the truth, the in-memory index a
// view of it: a file another process (sharing DATA_DIR) wrote is found when
// this one misses, and one it removed counts as a miss.
//
// File format: "PXC1", the JSON header's length (uint32 BE), the JSON header
// ({url, contentType, fetchedAt}), then the image's bytes.
import crypto from "node:crypto";
import fs from "node:fs";
import type { FileHandle } from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { OutboundError } from "../outbound/request.ts";

const MAGIC = Buffer.from("PXC1");
const PREFIX_BYTES = MAGIC.length + 4;
const ENTRY_NAME = /^[0-9a-f]{64}$/;
/** A partial download older than this was broken off (fetches are limited to minutes). */
const ABANDONED_DOWNLOAD_MS = 3600 * 1000;
/** The most a header may claim to be (a URL of a few KiB and a type): anything longer is not one of ours. */
const MAX_HEADER_BYTES = 64 * 1024;

/** An image from the cache, opened for one reader: read `bodySize` bytes from `bodyOffset` of `file`, then close it. */
export interface CachedImage {
  contentType: string;
  bodySize: number;
  bodyOffset: number;
  file: FileHandle;
}

/** What a fetch hands the cache: the image's type and its bytes (a stream that errors when the fetch fails). */
export interface FetchedImage {
  contentType: string;
  body: NodeJS.ReadableStream;
}

interface Entry {
  key: string;
  /** When it was fetched (ms since the epoch): it is served until fetchedAt + maxAgeMs. */
  fetchedAt: number;
  /** Bytes on disk, header included: what counts against the bound. */
  fileSize: number;
  /** Readers between finding it and having it open: it is not removed meanwhile. */
  pins: number;
}

interface Flight {
  promise: Promise<Entry>;
  /** Readers waiting for it (the one that started it included): each is given a pin when it lands. */
  readers: number;
}

export interface ExternalContentCacheOptions {
  /** Total bytes kept on disk (headers included); 0 keeps nothing past the readers of the moment. */
  maxBytes: number;
  /** How long a fetched image is served from the cache. */
  maxAgeMs: number;
  /** Milliseconds since the epoch; tests may replace it. */
  now?: () => number;
}

export class ExternalContentCache {
  readonly #dir: string;
  readonly #maxBytes: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  /** Entries by key, least recently used first (a use moves one to the end). */
  readonly #entries = new Map<string, Entry>();
  #totalBytes = 0;
  readonly #flights = new Map<string, Flight>();
  /** Files being removed, by key: a new copy is not put in place until its old one is gone. */
  readonly #removing = new Map<string, Promise<void>>();
  #ready: Promise<void> | undefined;

  constructor(dir: string, options: ExternalContentCacheOptions) {
    this.#dir = dir;
    this.#maxBytes = options.maxBytes;
    this.#maxAgeMs = options.maxAgeMs;
    this.#now = options.now ?? Date.now;
  }

  /** A fresh cached copy of `url`, opened; undefined when there is none. */
  async open(url: string): Promise<CachedImage | undefined> {
    await this.#scan();
    const key = keyOf(url);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      // Perhaps another process sharing the directory fetched it.
      const found = await this.#readEntry(key, url);
      if (found === undefined) return undefined;
      entry = this.#entries.get(key);
      if (entry === undefined) {
        entry = found;
        this.#entries.set(key, entry);
        this.#totalBytes += entry.fileSize;
      }
    }
    if (!this.#fresh(entry)) {
      if (entry.pins === 0) this.#remove(entry);
      return undefined;
    }
    entry.pins += 1;
    return this.#openPinned(entry, url);
  }

  /** Waits for the fetch of `url` under way and opens its image; undefined when none is under way. Throws what the fetch throws. */
  join(url: string): Promise<CachedImage> | undefined {
    const flight = this.#flights.get(keyOf(url));
    if (flight === undefined) return undefined;
    flight.readers += 1;
    return this.#landed(flight, url);
  }

  /**
   * Fetches `url` with `fetch` into the cache and opens it — or, when a
   * fetch of it is already under way, waits for that one. Throws
   * OutboundError when the image cannot be had (the fetch's
   * error, or its body failing midway).
   */
  async fetch(url: string, fetch: () => Promise<FetchedImage>): Promise<CachedImage> {
    await this.#scan();
    const joined = this.join(url);
    if (joined !== undefined) return joined;
    const key = keyOf(url);
    const flight: Flight = { promise: this.#download(key, url, fetch), readers: 1 };
    this.#flights.set(key, flight);
    // Registered first, so it runs before any reader's await resumes: every
    // reader holds a pin from the moment the entry lands, and nothing can
    // remove it before they have it open.
    flight.promise.then(
      (entry) => {
        entry.pins += flight.readers;
        this.#flights.delete(key);
      },
      () => this.#flights.delete(key),
    );
    return this.#landed(flight, url);
  }

  async #landed(flight: Flight, url: string): Promise<CachedImage> {
    const opened = await this.#openPinned(await flight.promise, url);
    if (opened === undefined) throw new OutboundError("bad_answer", "the fetched image was removed meanwhile");
    return opened;
  }

  async #download(key: string, url: string, fetch: () => Promise<FetchedImage>): Promise<Entry> {
    const image = await fetch();
    const fetchedAt = this.#now();
    const header = encodeHeader({ url, contentType: image.contentType, fetchedAt });
    const temporary = path.join(this.#dir, `${key}.tmp-${crypto.randomBytes(6).toString("hex")}`);
    let bodySize = 0;
    const body = image.body as AsyncIterable<Buffer>;
    async function* contents() {
      yield header;
      try {
        for await (const chunk of body) {
          bodySize += chunk.length;
          yield chunk;
        }
      } catch (error) {
        // The other site's failure, not the disk's: the image is not available.
        if (error instanceof OutboundError) throw error;
        throw new OutboundError("connection", `reading the image failed: ${(error as Error).message}`);
      }
    }
    try {
      await fs.promises.mkdir(this.#dir, { recursive: true });
      await pipeline(contents, fs.createWriteStream(temporary));
      await this.#removing.get(key);
      // The copy this one replaces leaves the index first, so its removal cannot take the new file with it.
      const replaced = this.#entries.get(key);
      if (replaced !== undefined) this.#forget(replaced);
      await fs.promises.rename(temporary, path.join(this.#dir, key));
    } catch (error) {
      // The other site's connection too, whichever side failed.
      (image.body as Readable).destroy();
      await fs.promises.rm(temporary, { force: true });
      throw error;
    }
    // Unpinned until the flight pins it for its readers; the bound is
    // enforced as the last of them has it open (an image past the bound by
    // itself is removed then).
    const entry: Entry = { key, fetchedAt, fileSize: header.length + bodySize, pins: 0 };
    // A reader may have found the new file on disk meanwhile and indexed it: counted once.
    const found = this.#entries.get(key);
    if (found !== undefined) this.#forget(found);
    this.#entries.set(key, entry);
    this.#totalBytes += entry.fileSize;
    return entry;
  }

  /**
   * Opens a pinned entry's file for one reader and unpins the entry. The
   * type and offsets come from the opened file itself, so a file replaced
   * meanwhile (a newer fetch) is read consistently. Undefined when the file
   * is gone or no longer holds `url`.
   */
  async #openPinned(entry: Entry, url: string): Promise<CachedImage | undefined> {
    try {
      const file = await fs.promises.open(path.join(this.#dir, entry.key), "r").catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT") return undefined;
        throw error;
      });
      const header = file && (await readHeader(file).catch(async (error: unknown) => {
        await file.close();
        throw error;
      }));
      if (file === undefined || header === undefined || header.url !== url) {
        await file?.close();
        this.#forget(entry);
        return undefined;
      }
      this.#touch(entry);
      return { contentType: header.contentType, bodySize: header.fileSize - header.bodyOffset, bodyOffset: header.bodyOffset, file };
    } finally {
      entry.pins -= 1;
      if (entry.pins === 0) this.#evict();
    }
  }

  #fresh(entry: Entry): boolean {
    const age = this.#now() - entry.fetchedAt;
    return age >= 0 && age < this.#maxAgeMs;
  }

  /** Marks an entry as just used: last in line for eviction, here and (by its time) after a restart. */
  #touch(entry: Entry): void {
    if (this.#entries.get(entry.key) !== entry) return;
    this.#entries.delete(entry.key);
    this.#entries.set(entry.key, entry);
    const now = new Date(this.#now());
    fs.promises.utimes(path.join(this.#dir, entry.key), now, now).catch(() => undefined);
  }

  /** Removes the least recently used entries until the total is within the bound; pinned ones are skipped. */
  #evict(): void {
    if (this.#totalBytes <= this.#maxBytes) return;
    for (const entry of this.#entries.values()) {
      if (this.#totalBytes <= this.#maxBytes) break;
      if (entry.pins === 0) this.#remove(entry);
    }
  }

  /** Drops an entry from the index and its file from the disk. */
  #remove(entry: Entry): void {
    if (!this.#forget(entry)) return;
    const removed = fs.promises.rm(path.join(this.#dir, entry.key), { force: true }).catch(() => undefined);
    this.#removing.set(entry.key, removed);
    void removed.then(() => {
      if (this.#removing.get(entry.key) === removed) this.#removing.delete(entry.key);
    });
  }

  /** Drops an entry from the index only; whether it was there. */
  #forget(entry: Entry): boolean {
    if (this.#entries.get(entry.key) !== entry) return false;
    this.#entries.delete(entry.key);
    this.#totalBytes -= entry.fileSize;
    return true;
  }

  /** Reads the cache directory once: the files a previous run left, oldest use first; abandoned downloads are removed. */
  #scan(): Promise<void> {
    this.#ready ??= (async () => {
      let names: string[];
      try {
        names = await fs.promises.readdir(this.#dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
      const found: { entry: Entry; usedAt: number }[] = [];
      for (const name of names) {
        if (name.includes(".tmp-")) {
          // A download a run broke off; a recent one may be another process's, still under way.
          const stat = await fs.promises.stat(path.join(this.#dir, name)).catch(() => undefined);
          if (stat !== undefined && this.#now() - stat.mtimeMs > ABANDONED_DOWNLOAD_MS) await fs.promises.rm(path.join(this.#dir, name), { force: true });
          continue;
        }
        if (!ENTRY_NAME.test(name)) continue;
        const entry = await this.#readEntry(name, undefined);
        if (entry === undefined) continue;
        const stat = await fs.promises.stat(path.join(this.#dir, name)).catch(() => undefined);
        found.push({ entry, usedAt: stat?.mtimeMs ?? entry.fetchedAt });
      }
      found.sort((a, b) => a.usedAt - b.usedAt);
      for (const { entry } of found) {
        this.#entries.set(entry.key, entry);
        this.#totalBytes += entry.fileSize;
      }
      this.#evict();
    })();
    this.#ready.catch(() => (this.#ready = undefined));
    return this.#ready;
  }

  /** The entry a file on disk holds, or undefined (no such file, not ours, another URL's, expired: the last three are removed). */
  async #readEntry(key: string, url: string | undefined): Promise<Entry | undefined> {
    const file = path.join(this.#dir, key);
    let handle: FileHandle;
    try {
      handle = await fs.promises.open(file, "r");
    } catch {
      return undefined;
    }
    let header: StoredHeader | undefined;
    try {
      header = await readHeader(handle);
    } finally {
      await handle.close();
    }
    const entry = header && keyOf(header.url) === key && (url === undefined || header.url === url) ? { key, fetchedAt: header.fetchedAt, fileSize: header.fileSize, pins: 0 } : undefined;
    if (entry === undefined || !this.#fresh(entry)) {
      await fs.promises.rm(file, { force: true });
      return undefined;
    }
    return entry;
  }
}

function keyOf(url: string): string {
  return crypto.createHash("sha256").update(url, "utf8").digest("hex");
}

interface Header {
  url: string;
  contentType: string;
  fetchedAt: number;
}

interface StoredHeader extends Header {
  /** Where the image's bytes start in the file. */
  bodyOffset: number;
  fileSize: number;
}

function encodeHeader(header: Header): Buffer {
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([MAGIC, length, json]);
}

/** The header of an open cache file, or undefined when it is not one of ours (or cut short). */
async function readHeader(handle: FileHandle): Promise<StoredHeader | undefined> {
  const { size } = await handle.stat();
  if (size < PREFIX_BYTES) return undefined;
  const prefix = Buffer.alloc(PREFIX_BYTES);
  await handle.read(prefix, 0, PREFIX_BYTES, 0);
  const headerBytes = prefix.readUInt32BE(MAGIC.length);
  if (!prefix.subarray(0, MAGIC.length).equals(MAGIC) || headerBytes > MAX_HEADER_BYTES || PREFIX_BYTES + headerBytes > size) return undefined;
  const json = Buffer.alloc(headerBytes);
  await handle.read(json, 0, headerBytes, PREFIX_BYTES);
  let value: Partial<Header>;
  try {
    value = JSON.parse(json.toString("utf8")) as Partial<Header>;
  } catch {
    return undefined;
  }
  if (typeof value.url !== "string" || typeof value.contentType !== "string" || typeof value.fetchedAt !== "number") return undefined;
  return { url: value.url, contentType: value.contentType, fetchedAt: value.fetchedAt, bodyOffset: PREFIX_BYTES + headerBytes, fileSize: size };
}
