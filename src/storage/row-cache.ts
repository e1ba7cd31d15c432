// Rows every request reads, kept in the process between requests: the
// organization and the user its credentials name (authentication, every
// request), the groups a user is in (every permission check), a channel
// with its active subscribers, and the users a message names (every send).
// Each look-up was a statement, and on PostgreSQL a round trip.
//
// A cached row must never outlive a committed change to a table it was read
// from, whoever made it. Each entry names its tables; a change to one drops
// the entries that read it:
// - this process: the driver below sees every statement; when a write to a
//   cached table commits, its entries are dropped before the transaction's
//   caller goes on (and so before its reply);
// - another process on PostgreSQL (a second server, a worker, a CLI command,
//   psql): triggers on the cached tables NOTIFY at commit (migrations 0032
//   and 0033),
//   and a LISTEN connection drops the table's entries when told. While
//   that connection is not listening, nothing is kept;
// - another process on SQLite (a CLI command): PRAGMA data_version, checked
//   before the first look-up of each turn of the event loop, changes when
//   another connection commits; then everything is dropped.
// A look-up that began before a drop of one of its tables does not store
// what it read.
import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from "kysely";

/** The tables cached rows are read from. */
export const CACHED_TABLES = ["realms", "users", "channels", "subscriptions", "user_group_members", "user_group_subgroups"] as const;
export type CachedTable = (typeof CACHED_TABLES)[number];

// A statement that writes one of them: as Kysely compiles it ("users"), or
// as raw SQL would write it (users, schema.users); a write in a WITH clause too.
const WRITES_CACHED_TABLE = new RegExp(
  `\\b(?:insert\\s+into|update|delete\\s+from|truncate(?:\\s+table)?|alter\\s+table|drop\\s+table(?:\\s+if\\s+exists)?)\\s+(?:"?\\w+"?\\.)?"?(${CACHED_TABLES.join("|")})"?(?![\\w"])`,
  "gi",
);

/** Most statements run again and again with the same text (prepared, or built alike): decide once per text. */
const verdicts = new Map<string, readonly CachedTable[]>();

/** The cached tables `sqlText` writes (none, mostly). */
export function cachedTablesWritten(sqlText: string): readonly CachedTable[] {
  let verdict = verdicts.get(sqlText);
  if (verdict === undefined) {
    const tables = new Set<CachedTable>();
    for (const match of sqlText.matchAll(WRITES_CACHED_TABLE)) tables.add(match[1]!.toLowerCase() as CachedTable);
    verdict = [...tables];
    if (verdicts.size >= 2000) verdicts.clear();
    verdicts.set(sqlText, verdict);
  }
  return verdict;
}

export interface RowCacheStats {
  hits: number;
  misses: number;
  /** Drops of a table's entries, or of all: by a write here, a notification, another SQLite connection's commit. */
  drops: number;
}

/**
 * How long an entry is kept at most. Nothing should need it (every change
 * drops what it touched), but it bounds the harm of a change missed by means
 * the code cannot see (a LISTEN connection stalled without breaking).
 * Presence pings come once a minute: a user's entry outlives several.
 */
const KEEP_MS = 5 * 60_000;

interface Entry {
  value: unknown;
  tables: readonly CachedTable[];
  until: number;
}

export class RowCache {
  readonly #entries = new Map<string, Entry>();
  readonly #limit: number;
  /** Per table: bumped by every drop of its entries. */
  readonly #generations = new Map<CachedTable, number>(CACHED_TABLES.map((table) => [table, 0]));
  /** False while another process's changes could go unseen (PostgreSQL, LISTEN not established). */
  #trusted: boolean;
  /** SQLite: true when another connection committed since the last call. */
  readonly #othersCommitted: (() => boolean) | undefined;
  /** PostgreSQL: starts listening the first time the cache is used. */
  #startListening: (() => void) | undefined;
  readonly stats: RowCacheStats = { hits: 0, misses: 0, drops: 0 };

  constructor(options: { trusted: boolean; othersCommitted?: () => boolean; startListening?: () => void; limit?: number }) {
    this.#trusted = options.trusted;
    this.#othersCommitted = options.othersCommitted;
    this.#startListening = options.startListening;
    this.#limit = options.limit ?? 10_000;
  }

  /**
   * The value under `key`, read from `tables`, or `load()`'s answer (stored
   * unless undefined, or unless one of `tables` was dropped while it
   * loaded). Each caller gets its own copy (`copy`: by default a shallow
   * copy of a flat row), so a caller that changes it cannot change the next
   * request's.
   */
  async read<T>(key: string, tables: readonly CachedTable[], load: () => Promise<T | undefined>, copy: (value: T) => T = copyRow): Promise<T | undefined> {
    if (this.#startListening) {
      const start = this.#startListening;
      this.#startListening = undefined;
      start();
    }
    if (this.#othersCommitted?.()) this.dropAll();
    const hit = this.#entries.get(key);
    if (hit && hit.until > Date.now()) {
      this.stats.hits += 1;
      return copy(hit.value as T);
    }
    this.stats.misses += 1;
    const generations = tables.map((table) => this.#generations.get(table));
    const value = await load();
    if (value !== undefined && this.#trusted && tables.every((table, i) => this.#generations.get(table) === generations[i])) {
      // Full: start again rather than track recency on every hit.
      if (this.#entries.size >= this.#limit) this.#entries.clear();
      this.#entries.set(key, { value: copy(value), tables, until: Date.now() + KEEP_MS });
    }
    return value;
  }

  /** Forgets the entries read from `table`; look-ups of it running now do not store theirs. */
  drop(table: CachedTable): void {
    this.#generations.set(table, this.#generations.get(table)! + 1);
    this.stats.drops += 1;
    for (const [key, entry] of this.#entries) if (entry.tables.includes(table)) this.#entries.delete(key);
  }

  /** Forgets everything; no look-up running now stores its answer. */
  dropAll(): void {
    for (const table of CACHED_TABLES) this.#generations.set(table, this.#generations.get(table)! + 1);
    this.stats.drops += 1;
    this.#entries.clear();
  }

  /** Whether rows are kept: always on SQLite; on PostgreSQL while the LISTEN connection is up. */
  get trusted(): boolean {
    return this.#trusted;
  }

  /** PostgreSQL: whether another process's changes are heard (the LISTEN connection is up). */
  setTrusted(trusted: boolean): void {
    this.dropAll();
    this.#trusted = trusted;
  }
}

function copyRow<T>(value: T): T {
  return { ...value };
}

/** A copy of a list of flat rows, for RowCache.read. */
export function copyRows<T extends object>(rows: T[]): T[] {
  return rows.map((row) => ({ ...row }));
}

/** A connection as the wrapped driver hands it out: the driver's own, and what its open transaction wrote. */
class TrackedConnection implements DatabaseConnection {
  inTransaction = false;
  /** The cached tables the open transaction wrote. */
  readonly written = new Set<CachedTable>();

  constructor(
    readonly inner: DatabaseConnection,
    private readonly cache: RowCache,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.inner.executeQuery<R>(query);
    for (const table of cachedTablesWritten(query.sql)) {
      if (this.inTransaction) this.written.add(table);
      else this.cache.drop(table);
    }
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }

  /** The transaction ended: its writes to cached tables drop their entries if it committed. */
  ended(committed: boolean): void {
    if (committed) for (const table of this.written) this.cache.drop(table);
    this.inTransaction = false;
    this.written.clear();
  }
}

/**
 * `dialect` with a driver that drops a cached table's entries from `cache`
 * when a write to it commits: after a statement outside a transaction, or
 * after the COMMIT of a transaction that ran one. (A rolled-back write
 * changed nothing.)
 */
export function invalidatingDialect(dialect: Dialect, cache: RowCache): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createDriver: () => invalidatingDriver(dialect.createDriver(), cache),
  };
}

function invalidatingDriver(driver: Driver, cache: RowCache): Driver {
  // Both of Kysely's drivers hand out the same connection object for the same underlying connection.
  const tracked = new WeakMap<DatabaseConnection, TrackedConnection>();
  const inner = (connection: DatabaseConnection) => (connection as TrackedConnection).inner;
  const result: Driver = {
    init: () => driver.init(),
    async acquireConnection() {
      const connection = await driver.acquireConnection();
      let wrapper = tracked.get(connection);
      if (!wrapper) tracked.set(connection, (wrapper = new TrackedConnection(connection, cache)));
      return wrapper;
    },
    async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings) {
      await driver.beginTransaction(inner(connection), settings);
      const wrapper = connection as TrackedConnection;
      wrapper.written.clear();
      wrapper.inTransaction = true;
    },
    async commitTransaction(connection: DatabaseConnection) {
      try {
        await driver.commitTransaction(inner(connection));
      } finally {
        // A COMMIT that failed may still have committed (the connection broke after): drop either way.
        (connection as TrackedConnection).ended(true);
      }
    },
    async rollbackTransaction(connection: DatabaseConnection) {
      try {
        await driver.rollbackTransaction(inner(connection));
      } finally {
        (connection as TrackedConnection).ended(false);
      }
    },
    releaseConnection: (connection: DatabaseConnection) => driver.releaseConnection(inner(connection)),
    destroy: () => driver.destroy(),
  };
  // Savepoints run through the connection's executeQuery on both of Kysely's drivers; pass them on as they are.
  if (driver.savepoint) result.savepoint = (connection, name, compile) => driver.savepoint!(inner(connection), name, compile);
  if (driver.rollbackToSavepoint) result.rollbackToSavepoint = (connection, name, compile) => driver.rollbackToSavepoint!(inner(connection), name, compile);
  if (driver.releaseSavepoint) result.releaseSavepoint = (connection, name, compile) => driver.releaseSavepoint!(inner(connection), name, compile);
  return result;
}
