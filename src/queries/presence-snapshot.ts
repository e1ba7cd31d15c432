// An organization's presence, kept in memory and serialized once per change
// instead of once per request. Every open client polls POST
// /users/me/presence once a minute: at 10,000 users that is 167 replies a
// second, each of which used to run realmPresence's query over the whole
// organization and serialize every row again (63 ms of CPU at 10,000 online
// users).
//
// A snapshot holds, per user with a presence row, the stored times, the
// row's last_update_id and its two reply fragments (modern, keyed by user ID;
// legacy, keyed by API email), serialized when the row changes. Every user
// appears once, with their newest change, so the snapshot is also the log of
// changes a last_update_id client needs: its reply is the entries numbered
// after its id, found by one pass, never a query over the organization. (A
// client with no data yet, last_update_id 0 or -1, gets realmPresence's
// query: a client's first list, once.) Users are kept in blocks of 256 by ID,
// each with its fragments joined and encoded once per change to one of them:
// a reply is the concatenation of the blocks it wholly includes, plus the
// users it picks from the others (a change numbered after the client's id,
// a connection within the history limit, a limited guest's view).
//
// Freshness, across processes too: every reply first reads the rows numbered
// after the snapshot's newest number (one statement on the (realm_id,
// last_update_id) index; usually a few rows or none) and merges them.
// Numbers become visible in order (the sequence row stays locked until the
// writing transaction commits, see presence-writes.ts), so a snapshot that
// saw number N holds every change up to N. A change written by another
// process sharing the database (REDIS_URL) is thus in the very next reply,
// as in one process. Deactivating or reactivating a user renumbers their row
// (renumberPresence), which reaches every process the same way. As a safety
// net against writes outside these paths (an operator's SQL), a snapshot
// older than the ping interval (60 s, Zulip's presence precision) is read
// anew.
//
// Replies are JSON text, byte for byte what JSON.stringify made of
// realmPresence's answer: the modern format's keys are user IDs, which
// JSON.stringify orders numerically; both formats list users by ID.
import type { Kysely } from "kysely";
import { DEFAULT_PRESENCE_HISTORY_DAYS, PRESENCE_PING_INTERVAL_SECS, legacyPresence, modernPresence } from "../domain/presence.ts";
import type { RealmSettings } from "../domain/realm-settings.ts";
import type { Database } from "../storage/schema.ts";
import { realmPresence, type RealmPresenceRequest } from "./presence.ts";

type Db = Kysely<Database>;

/** A snapshot read this long ago is read anew, whatever the sequence says. */
export const SNAPSHOT_MAX_AGE_MS = PRESENCE_PING_INTERVAL_SECS * 1000;

interface Entry {
  userId: number;
  email: string;
  dateJoined: number;
  lastConnectedTime: number | null;
  lastActiveTime: number | null;
  lastUpdateId: number;
  /** `"<id>":{…}`, serialized on first use. */
  modern?: string | undefined;
  /** `"<email>":{…}`, serialized on first use. */
  legacy?: string | undefined;
  /** The block the entry is in (once the blocks are made). */
  block?: Block | undefined;
}

/** Users in a block of a reply's presences, by ID. */
const BLOCK_SIZE = 256;

/**
 * BLOCK_SIZE consecutive users (by ID) and, made on first use after a change
 * to one of them, their fragments joined and encoded: a list puts together
 * whole blocks, so a change costs one block's serialization, not the
 * organization's.
 */
interface Block {
  entries: Entry[];
  /** The block's numbers and connection times, undefined after a change. */
  stats?: { minUpdateId: number; maxUpdateId: number; oldestConnected: number } | undefined;
  modern?: Buffer | undefined;
  legacy?: Buffer | undefined;
}

interface Snapshot {
  entries: Map<number, Entry>;
  /** The entries by user ID in blocks; undefined after a user came or went. */
  blocks: Block[] | undefined;
  /** Every change numbered up to this one is in the entries. */
  newest: number;
  loadedAtMs: number;
}

const snapshots = new WeakMap<object, Map<number, Snapshot>>();

interface Row {
  user_id: number;
  email: string;
  date_joined: number;
  last_connected_time: number | null;
  last_active_time: number | null;
  last_update_id: number;
  is_active: boolean | number;
  is_bot: boolean | number;
}

function rowsQuery(db: Db, realmId: number) {
  return db
    .selectFrom("user_presence as p")
    .innerJoin("users as u", "u.id", "p.user_id")
    .select(["p.user_id", "u.email", "u.date_joined", "p.last_connected_time", "p.last_active_time", "p.last_update_id", "u.is_active", "u.is_bot"])
    .where("p.realm_id", "=", realmId);
}

function entryOf(row: Row): Entry {
  return {
    userId: row.user_id,
    email: row.email,
    dateJoined: Number(row.date_joined),
    lastConnectedTime: row.last_connected_time === null ? null : Number(row.last_connected_time),
    lastActiveTime: row.last_active_time === null ? null : Number(row.last_active_time),
    lastUpdateId: Number(row.last_update_id),
  };
}

async function load(db: Db, realmId: number, nowMs: number): Promise<Snapshot> {
  const rows = await rowsQuery(db, realmId).where("u.is_active", "=", true).where("u.is_bot", "=", false).execute();
  const entries = new Map<number, Entry>();
  let newest = 0;
  for (const row of rows) {
    const entry = entryOf(row);
    entries.set(entry.userId, entry);
    if (entry.lastUpdateId > newest) newest = entry.lastUpdateId;
  }
  return { entries, blocks: undefined, newest, loadedAtMs: nowMs };
}

/**
 * Merges the rows numbered after the snapshot: changed times, and users who
 * left (deactivated) or came back. Seeing number N means every number up to
 * N is committed (see above), so the snapshot then holds all of them.
 */
async function catchUp(db: Db, realmId: number, snapshot: Snapshot): Promise<void> {
  const rows = await rowsQuery(db, realmId).where("p.last_update_id", ">", snapshot.newest).execute();
  for (const row of rows) {
    const fresh = entryOf(row);
    if (fresh.lastUpdateId > snapshot.newest) snapshot.newest = fresh.lastUpdateId;
    const held = snapshot.entries.get(fresh.userId);
    // A concurrent catch-up merged this change, or a newer one, already.
    if (held !== undefined && held.lastUpdateId > fresh.lastUpdateId) continue;
    if (!row.is_active || row.is_bot) {
      if (held !== undefined) {
        snapshot.entries.delete(fresh.userId);
        snapshot.blocks = undefined;
      }
    } else if (held === undefined) {
      snapshot.entries.set(fresh.userId, fresh);
      snapshot.blocks = undefined;
    } else {
      // In place: the blocks stay as they are; this entry's fragments and its block's bytes are made anew.
      Object.assign(held, fresh, { modern: undefined, legacy: undefined });
      if (held.block !== undefined) held.block.stats = held.block.modern = held.block.legacy = undefined;
    }
  }
}

/**
 * The organization's snapshot, brought up to date by one statement: the rows
 * numbered after it (none, most of the time), or every row when it is new or
 * 60 s old. `database` keys the cache (its Storage): each opened database,
 * like each process, has its own.
 */
async function currentSnapshot(database: object, db: Db, realmId: number, nowMs: number): Promise<Snapshot> {
  let cache = snapshots.get(database);
  if (!cache) snapshots.set(database, (cache = new Map()));
  const held = cache.get(realmId);
  if (held === undefined || nowMs - held.loadedAtMs >= SNAPSHOT_MAX_AGE_MS || nowMs < held.loadedAtMs) {
    const fresh = await load(db, realmId, nowMs);
    cache.set(realmId, fresh);
    return fresh;
  }
  await catchUp(db, realmId, held);
  return held;
}

function blocksOf(snapshot: Snapshot): Block[] {
  if (snapshot.blocks === undefined) {
    const ordered = [...snapshot.entries.values()].sort((a, b) => a.userId - b.userId);
    const blocks: Block[] = [];
    for (let i = 0; i < ordered.length; i += BLOCK_SIZE) {
      const block: Block = { entries: ordered.slice(i, i + BLOCK_SIZE) };
      for (const entry of block.entries) entry.block = block;
      blocks.push(block);
    }
    snapshot.blocks = blocks;
  }
  return snapshot.blocks;
}

function statsOf(block: Block): NonNullable<Block["stats"]> {
  if (block.stats === undefined) {
    let minUpdateId = Infinity;
    let maxUpdateId = -Infinity;
    let oldestConnected = Infinity;
    for (const entry of block.entries) {
      if (entry.lastUpdateId < minUpdateId) minUpdateId = entry.lastUpdateId;
      if (entry.lastUpdateId > maxUpdateId) maxUpdateId = entry.lastUpdateId;
      // "Never connected" (NULL) is older than any limit.
      const connected = entry.lastConnectedTime ?? -Infinity;
      if (connected < oldestConnected) oldestConnected = connected;
    }
    block.stats = { minUpdateId, maxUpdateId, oldestConnected };
  }
  return block.stats;
}

function fragment(entry: Entry, slim: boolean): string {
  const times = { lastConnectedTime: entry.lastConnectedTime, lastActiveTime: entry.lastActiveTime };
  if (slim) return (entry.modern ??= `"${entry.userId}":${JSON.stringify(modernPresence(times, entry.dateJoined))}`);
  return (entry.legacy ??= `${JSON.stringify(entry.email)}:${JSON.stringify(legacyPresence(times, entry.dateJoined))}`);
}

/** A whole block's fragments, joined and encoded once per change to it. */
function blockBytes(block: Block, slim: boolean): Buffer {
  if (slim) return (block.modern ??= Buffer.from(block.entries.map((e) => fragment(e, true)).join(",")));
  return (block.legacy ??= Buffer.from(block.entries.map((e) => fragment(e, false)).join(",")));
}

export interface PresenceJson {
  /** The `presences` object as JSON, in pieces to be concatenated. */
  parts: Buffer[];
  lastUpdateId: number;
}

const OPEN = Buffer.from("{");
const COMMA = Buffer.from(",");
const CLOSE = Buffer.from("}");

/**
 * realmPresence's selection over the snapshot. Blocks wholly in the
 * selection are their cached bytes; others are filtered user by user
 * (and always for a limited guest).
 */
function select(snapshot: Snapshot, request: RealmPresenceRequest): PresenceJson {
  const { lastUpdateId, slim, visible } = request;
  const limited = lastUpdateId === undefined || lastUpdateId <= 0;
  const cutoff = request.now - (request.historyLimitDays ?? DEFAULT_PRESENCE_HISTORY_DAYS) * 86400;
  const includes = (entry: Entry) =>
    (lastUpdateId === undefined || entry.lastUpdateId > lastUpdateId) &&
    (!limited || (entry.lastConnectedTime !== null && entry.lastConnectedTime >= cutoff)) &&
    (visible === undefined || visible.has(entry.userId));
  const parts: Buffer[] = [OPEN];
  let newest = -1;
  const add = (bytes: Buffer) => {
    if (parts.length > 1) parts.push(COMMA);
    parts.push(bytes);
  };
  for (const block of blocksOf(snapshot)) {
    const stats = statsOf(block);
    const all = visible === undefined && (lastUpdateId === undefined || stats.minUpdateId > lastUpdateId) && (!limited || stats.oldestConnected >= cutoff);
    if (all) {
      add(blockBytes(block, slim));
      if (stats.maxUpdateId > newest) newest = stats.maxUpdateId;
      continue;
    }
    if (lastUpdateId !== undefined && stats.maxUpdateId <= lastUpdateId) continue;
    const some: string[] = [];
    for (const entry of block.entries) {
      if (!includes(entry)) continue;
      some.push(fragment(entry, slim));
      if (entry.lastUpdateId > newest) newest = entry.lastUpdateId;
    }
    if (some.length > 0) add(Buffer.from(some.join(",")));
  }
  parts.push(CLOSE);
  if (newest === -1 && lastUpdateId !== undefined) newest = lastUpdateId;
  return { parts, lastUpdateId: newest };
}

/**
 * realmPresence's answer as JSON, from the snapshot: the presences object
 * (in pieces) and the newest last_update_id in it.
 */
export async function realmPresenceJson(database: object, db: Db, realmId: number, settings: Readonly<RealmSettings>, request: RealmPresenceRequest, nowMs: number): Promise<PresenceJson> {
  const text = (json: string, lastUpdateId: number) => ({ parts: [Buffer.from(json)], lastUpdateId });
  if (settings.presence_disabled) return text("{}", -1);
  // history_limit_days=0: the client wants no presence data at all.
  if (request.historyLimitDays === 0) return text("{}", request.lastUpdateId ?? -1);
  // A client without data (last_update_id 0 or -1): its first list, read as realmPresence reads it.
  if (request.lastUpdateId !== undefined && request.lastUpdateId <= 0) {
    const { presences, lastUpdateId } = await realmPresence(db, realmId, settings, request);
    return text(JSON.stringify(presences), lastUpdateId);
  }
  return select(await currentSnapshot(database, db, realmId, nowMs), request);
}
