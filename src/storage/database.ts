// Opens the one Kysely database the server uses: SQLite (better-sqlite3) by
// default, PostgreSQL (pg) when a postgres:// URL is given. Only the driver
// in use is loaded: a server on SQLite never loads pg, nor one on PostgreSQL
// better-sqlite3.
import fs from "node:fs";
import path from "node:path";
import type SQLite from "better-sqlite3";
import {
  Kysely,
  type Transaction,
  PostgresDialect,
  SqliteDialect,
  type SqliteDatabase,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from "kysely";
import { BOOLEAN_COLUMNS, type Database } from "./schema.ts";
import { preparedQuery, preparedStatementName, renewPreparedStatementName } from "./compiled.ts";
import { CACHED_TABLES, invalidatingDialect, RowCache, type CachedTable } from "./row-cache.ts";

export type Dialect = "sqlite" | "postgres";

export interface Storage {
  db: Kysely<Database>;
  dialect: Dialect;
  /**
   * Settles once every commit made so far is on disk, or undefined when it
   * already is (nothing written since the last completed fsync, PostgreSQL,
   * :memory:). Await it before telling anyone about a write.
   */
  durable(): Promise<void> | undefined;
  /** SQLite on a file: the fsync of its WAL (tests observe and delay it). */
  wal?: WalSync;
  /** Rows kept between requests (organization, users, channels and their subscribers), with their invalidation: row-cache.ts. */
  rows: RowCache;
  close(): Promise<void>;
}

export interface StorageOptions {
  /** postgres://… URL; when absent, SQLite at sqlitePath. */
  databaseUrl?: string | undefined;
  sqlitePath?: string;
  /** PostgreSQL schema to use (created if missing); tests use one per app. */
  pgSchema?: string;
}

type PgDriver = { pg: typeof import("pg").default; prepareValue: (value: unknown) => unknown };
let pgDriver: Promise<PgDriver> | undefined;

/** pg, loaded when the first PostgreSQL database is opened, with its own conversion of a value for the wire (not in its typed exports). */
function loadPg(): Promise<PgDriver> {
  pgDriver ??= (async () => {
    const { default: pg } = await import("pg");
    // count(*) and bigint columns come back from pg as strings; every such value
    // this server stores (times, counts) fits a JavaScript number.
    pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
    const utils = "pg/lib/utils.js";
    const { prepareValue } = ((await import(utils)) as { default: { prepareValue?: (value: unknown) => unknown } }).default;
    // Checked here rather than failing every named statement later, should a release of node-postgres move it.
    if (typeof prepareValue !== "function") throw new Error("this version of node-postgres has no pg/lib/utils.js prepareValue");
    return { pg, prepareValue };
  })();
  return pgDriver;
}

/**
 * SQLite returns 0/1 for booleans: turn the known boolean columns back into
 * booleans so rows have one type on both dialects. (Booleans going in are
 * bound as 0/1 by the statement cache below, not by rewriting every query's
 * tree here: that copy of the tree cost about 4% of a send's CPU.)
 */
class SqliteBooleanPlugin implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    for (const row of args.result.rows) {
      for (const key of Object.keys(row)) {
        if (BOOLEAN_COLUMNS.has(key) && typeof row[key] === "number") row[key] = row[key] !== 0;
      }
    }
    return args.result;
  }
}

type SqliteStatement = ReturnType<SqliteDatabase["prepare"]>;

/** better-sqlite3 binds no booleans: bind them as SQLite stores them, 1 and 0. */
function withIntegerBooleans(parameters: ReadonlyArray<unknown>): ReadonlyArray<unknown> {
  if (!parameters.some((p) => typeof p === "boolean")) return parameters;
  return parameters.map((p) => (typeof p === "boolean" ? (p ? 1 : 0) : p));
}

function sqliteStatement(statement: SQLite.Statement, wrote: (statement: SQLite.Statement) => void): SqliteStatement {
  return {
    reader: statement.reader,
    all: (parameters) => {
      const rows = statement.all(withIntegerBooleans(parameters) as unknown[]);
      wrote(statement);
      return rows;
    },
    run: (parameters) => {
      const result = statement.run(withIntegerBooleans(parameters) as unknown[]);
      wrote(statement);
      return result;
    },
    // Kysely streams only reads (SELECT); nothing this server runs iterates a write.
    iterate: (parameters) => statement.iterate(withIntegerBooleans(parameters) as unknown[]),
  };
}

/**
 * With synchronous=NORMAL SQLite does not fsync at COMMIT (the commit's
 * fsync used to block the one thread, better-sqlite3 being synchronous): the
 * committed frames sit in the WAL file's page cache. This makes them durable
 * from libuv's thread pool instead: fs.fsync on a descriptor of `<db>-wal`
 * (and of its directory, once per WAL file, so the file's name survives a
 * power cut too). Writers count up `written`; durable() waits for an fsync
 * that started after the caller's writes. Callers that come while one runs
 * share the next one (group fsync), so there is at most one in flight.
 *
 * Checkpoints: with WAL and NORMAL SQLite still syncs the WAL before it
 * copies pages into the database and the database after, so checkpointed
 * pages are durable on their own. Checkpoints run automatically (the default
 * wal_autocheckpoint of 1000 pages; journal_size_limit is left at its default
 * -1, so the WAL is never truncated but rewritten from the start in place)
 * and the WAL file keeps its inode while the database is open: the one
 * descriptor stays valid. The file is deleted only when the last connection
 * closes (after a full checkpoint) or journal_mode changes; each fsync checks
 * that the path still names the descriptor's file and reopens it if not,
 * and a missing WAL holds nothing that is not in the (synced) database.
 *
 * Writes no client is told of need not wait: the job runner's (a job lost
 * to a power cut is run again: jobs are at-least-once) and CLI commands'
 * (they close the database, which checkpoints and syncs it, before exiting).
 * Nor do presence reports' (unsynced()).
 */
export class WalSync {
  /** Bumped after every statement that wrote and after the COMMIT of a transaction that wrote. */
  written = 0;
  /** The value of `written` that the last completed fsync covers. */
  private synced = 0;
  private running: { covers: number; done: Promise<void> } | undefined;
  /** Callers who came while `running` could not cover them: the fsync that starts after it. */
  private following: Promise<void> | undefined;
  private wal: { handle: fs.promises.FileHandle; ino: number } | undefined;
  /** Completed fsyncs of the WAL, for tests and benches. */
  fsyncs = 0;
  /** The fsync itself: replaceable so tests can hold it or watch it. */
  sync: (fd: number) => Promise<void> = (fd) => new Promise((resolve, reject) => fs.fsync(fd, (error) => (error ? reject(error) : resolve())));
  private uncommitted = false;
  /** Inside unsynced(): the transaction's statements are not counted. */
  private exempt = false;

  constructor(
    private readonly walPath: string,
    private readonly inTransaction: () => boolean,
  ) {}

  /** Called after each statement runs. COMMIT and RELEASE count as read-only to SQLite, hence `uncommitted`. */
  noteStatement(statement: SQLite.Statement): void {
    if (this.exempt) return;
    if (!statement.readonly) {
      this.written += 1;
      if (this.inTransaction()) this.uncommitted = true;
    } else if (this.uncommitted && !this.inTransaction()) {
      this.written += 1;
      this.uncommitted = false;
    }
  }

  /**
   * Runs `write`, a transaction's body, without counting its statements (nor
   * so its COMMIT) as writes anyone must wait for: for data whose loss in a
   * power cut harms nobody (presence times, rewritten by the next minute's
   * ping). A crash of the process loses nothing (the page cache survives
   * it), and the next fsync, or a checkpoint, syncs these frames with the
   * rest of the WAL. Call it inside the transaction, where the one connection
   * is held, so no one else's statement runs meanwhile.
   */
  async unsynced<T>(write: () => Promise<T>): Promise<T> {
    this.exempt = true;
    try {
      return await write();
    } finally {
      this.exempt = false;
    }
  }

  durable(): Promise<void> | undefined {
    if (this.synced >= this.written) return undefined;
    const running = this.running;
    if (!running) return this.start();
    if (running.covers >= this.written) return running.done;
    // The running fsync may have started before this caller's commit: wait for the next.
    this.following ??= running.done
      .catch(() => undefined)
      .then(() => {
        this.following = undefined;
        return this.synced >= this.written ? undefined : this.start();
      });
    return this.following;
  }

  private start(): Promise<void> {
    const covers = this.written;
    const done = this.fsyncWal().then(() => {
      this.fsyncs += 1;
      if (covers > this.synced) this.synced = covers;
    });
    const running = { covers, done };
    this.running = running;
    const clear = () => {
      if (this.running === running) this.running = undefined;
    };
    done.then(clear, clear);
    return done;
  }

  private async fsyncWal(): Promise<void> {
    let stat: fs.Stats;
    try {
      stat = await fs.promises.stat(this.walPath);
    } catch (error) {
      // No WAL: SQLite checkpointed everything into the database (and synced it) and deleted the file.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    if (this.wal?.ino !== stat.ino) {
      // First fsync, or the WAL was deleted and made anew: a new file, whose directory entry must be synced too.
      await this.closeWal();
      const handle = await fs.promises.open(this.walPath, "r");
      this.wal = { handle, ino: (await handle.stat()).ino };
      const dir = await fs.promises.open(path.dirname(this.walPath), "r");
      try {
        await this.sync(dir.fd);
      } finally {
        await dir.close();
      }
    }
    await this.sync(this.wal.handle.fd);
  }

  private async closeWal(): Promise<void> {
    const handle = this.wal?.handle;
    this.wal = undefined;
    await handle?.close();
  }

  /** Waits for the fsync in flight, then closes the descriptor. */
  async close(): Promise<void> {
    await this.running?.done.catch(() => undefined);
    await this.following?.catch(() => undefined);
    await this.closeWal();
  }
}


/**
 * Kysely prepares every query afresh; better-sqlite3 statements are reusable,
 * so keep the most recent ones by SQL text. Safe because better-sqlite3 runs
 * a statement to completion synchronously (Kysely's streaming is not used).
 */
function withStatementCache(sqlite: SQLite.Database, wrote: (statement: SQLite.Statement) => void, size = 500): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql); // re-insert below: most recently used last
      } else {
        statement = sqliteStatement(sqlite.prepare(sql), wrote);
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

type PgQuery = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * Runs the prepared queries' texts (compiled.ts) as named statements on this
 * pooled connection: PostgreSQL parses and plans each once per connection
 * (after five custom plans it may keep a generic one), not on every call.
 *
 * A named statement PostgreSQL refuses after a schema change ("cached plan
 * must not change result type", known by its routine: the message is
 * translated) gets a new name in the whole process, and the call is run again
 * under it when the connection was outside a transaction; inside one, the
 * calls already sent under the old name fail. The values are turned into what
 * goes on the wire before the call: a value that cannot be sent fails here,
 * not between node-postgres's Parse and Bind, which would leave the statement
 * closed on the server but taken for parsed.
 */
function namePreparedStatements(client: import("pg").PoolClient, prepareValue: (value: unknown) => unknown): void {
  const query = client.query.bind(client) as PgQuery;
  const idle = () => (client as unknown as { getTransactionStatus?: () => string | null }).getTransactionStatus?.() === "I";
  // `wire`: the values in wire form; `values`: as given (the name depends on their arrays' lengths).
  const run = async (text: string, name: string, values: unknown[], wire: unknown[], retry: boolean): Promise<unknown> => {
    const outsideTransaction = idle();
    try {
      return await query({ name, text, values: wire });
    } catch (error) {
      const { code, routine } = error as { code?: string; routine?: string };
      if (code === "0A000" && routine === "RevalidateCachedQuery") {
        renewPreparedStatementName(text, name);
        if (retry && outsideTransaction) return run(text, preparedStatementName(text, values)!, values, wire, false);
      }
      throw error;
    }
  };
  const named: PgQuery = (config, values, callback) => {
    const name = typeof config === "string" && Array.isArray(values) && callback === undefined ? preparedStatementName(config, values) : undefined;
    if (name === undefined) return query(config, values, callback);
    let wire: unknown[];
    try {
      wire = (values as unknown[]).map(prepareValue);
    } catch (error) {
      return Promise.reject(error);
    }
    return run(config as string, name, values as unknown[], wire, true);
  };
  (client as unknown as { query: PgQuery }).query = named;
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  if (options.databaseUrl) {
    const schema = options.pgSchema;
    if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
    const { pg, prepareValue } = await loadPg();
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // An idle client's connection error (database restart, network blip) must
    // not crash the process; the pool replaces the client on the next query.
    pool.on("error", (error) => process.emitWarning(`PostgreSQL pool: ${error.message}`));
    pool.on("connect", (client) => namePreparedStatements(client, prepareValue));
    if (schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    const listener = new RowChangeListener(pg, options.databaseUrl, schema);
    const rows = new RowCache({ trusted: false, startListening: () => listener.start(rows) });
    const db = new Kysely<Database>({ dialect: invalidatingDialect(new PostgresDialect({ pool }), rows) });
    return {
      db,
      dialect: "postgres",
      rows,
      durable: () => undefined,
      close: async () => {
        await listener.close();
        await db.destroy();
      },
    };
  }

  const file = options.sqlitePath ?? ":memory:";
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  const { default: SQLite } = await import("better-sqlite3");
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  // NORMAL: no fsync at COMMIT, which would block the event loop. WAL with
  // NORMAL alone could lose the last commits on power loss; WalSync fsyncs
  // the WAL off the thread, and replies to writes wait for it (app.ts, and
  // actions/transaction.ts for the events), so no acknowledged write is lost.
  sqlite.pragma("synchronous = NORMAL");
  const wal = file === ":memory:" ? undefined : new WalSync(`${file}-wal`, () => sqlite.inTransaction);
  // Changes only when another connection (another process) commits to the file. Reading it takes
  // the WAL's read lock (4 µs in a loop, ~20 µs between requests): once per turn of the event loop,
  // which serves a request's look-ups (the organization, then the user) with one check.
  const dataVersion = sqlite.prepare("PRAGMA data_version").pluck();
  let seenVersion = dataVersion.get();
  let checkedThisTurn = false;
  const rows = new RowCache({
    trusted: true,
    othersCommitted: () => {
      if (checkedThisTurn) return false;
      checkedThisTurn = true;
      setImmediate(() => (checkedThisTurn = false));
      const version = dataVersion.get();
      if (version === seenVersion) return false;
      seenVersion = version;
      return true;
    },
  });
  const db = new Kysely<Database>({
    dialect: invalidatingDialect(new SqliteDialect({ database: withStatementCache(sqlite, wal ? (statement) => wal.noteStatement(statement) : () => {}) }), rows),
    plugins: [new SqliteBooleanPlugin()],
  });
  if (!wal) return { db, dialect: "sqlite", rows, durable: () => undefined, close: () => db.destroy() };
  return {
    db,
    dialect: "sqlite",
    wal,
    rows,
    durable: () => wal.durable(),
    // Closing the last connection checkpoints the WAL into the database and syncs it.
    close: async () => {
      await wal.close();
      await db.destroy();
    },
  };
}

/**
 * PostgreSQL: hears other processes' changes to the cached rows. The
 * triggers of migrations 0032 and 0033 run pg_notify('parley_rows', '<schema> <table>') in every
 * statement that writes a cached table; the notification arrives when that
 * transaction commits. One connection per process, opened when the cache
 * is first used; while it is down (not yet up, or lost and reconnecting) the
 * cache keeps nothing, since a change could go unheard.
 */
class RowChangeListener {
  #client: import("pg").Client | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly pg: typeof import("pg").default,
    private readonly connectionString: string,
    private readonly schema: string | undefined,
  ) {}

  start(rows: RowCache): void {
    void this.#connect(rows);
  }

  async #connect(rows: RowCache): Promise<void> {
    this.#retry = undefined;
    if (this.#closed) return;
    const client = new this.pg.Client({
      connectionString: this.connectionString,
      ...(this.schema ? { options: `-c search_path=${this.schema}` } : {}),
      // Named so an operator (or a test) can find it in pg_stat_activity.
      application_name: `parley rows ${this.schema ?? ""}`.trim(),
      // A connection that dies silently stops the notifications: TCP keepalive notices it.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    });
    // Errors end the connection: "end" below handles both.
    client.on("error", () => {});
    client.on("end", () => {
      if (this.#client !== client) return;
      this.#client = undefined;
      rows.setTrusted(false);
      this.#reconnectLater(rows);
    });
    try {
      await client.connect();
      const { rows: found } = await client.query<{ schema: string }>("SELECT current_schema() AS schema");
      const schema = found[0]!.schema;
      client.on("notification", (message) => {
        const [changedSchema, table] = (message.payload ?? "").split(" ");
        if (changedSchema !== schema) return;
        if ((CACHED_TABLES as readonly string[]).includes(table!)) rows.drop(table as CachedTable);
        else rows.dropAll();
      });
      await client.query("LISTEN parley_rows");
      if (this.#closed) {
        await client.end();
        return;
      }
      this.#client = client;
      rows.setTrusted(true);
    } catch (error) {
      process.emitWarning(`PostgreSQL row-change listener: ${(error as Error).message}`);
      void client.end().catch(() => {});
      this.#reconnectLater(rows);
    }
  }

  #reconnectLater(rows: RowCache): void {
    if (this.#closed || this.#retry) return;
    this.#retry = setTimeout(() => void this.#connect(rows), 1000);
    this.#retry.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}

// Every PostgreSQL write transaction's first statement: compiled once.
const realmForUpdate = preparedQuery((db, a: { realmId: number }) => db.selectFrom("realms").select("id").where("id", "=", a.realmId).forUpdate());

/**
 * Serializes competing writers on one organization for the rest of the
 * transaction (rules such as "keep one owner" read, then write). PostgreSQL
 * locks the realm row; SQLite transactions already run one at a time on
 * Kysely's single connection.
 */
export async function lockRealm(trx: Transaction<Database>, dialect: Dialect, realmId: number): Promise<void> {
  if (dialect === "postgres") await realmForUpdate.execute(trx, { realmId });
}

/**
 * The organization's lock in shared mode, for consistent reads: writers (who
 * take it exclusively) wait, other readers do not. SQLite's single
 * connection already serializes transactions.
 */
export async function shareRealmLock(trx: Transaction<Database>, dialect: Dialect, realmId: number): Promise<void> {
  if (dialect === "postgres") await trx.selectFrom("realms").select("id").where("id", "=", realmId).forShare().execute();
}

/**
 * IDs per statement: well under SQLite's (32,766) and PostgreSQL's (65,535)
 * bound-parameter limits, however many IDs a client sends or a channel has
 * subscribers.
 */
export const IDS_PER_STATEMENT = 5000;

/** `items` in pieces of at most `size`, for one `IN (…)` statement each. */
export function inChunks<T>(items: readonly T[], size = IDS_PER_STATEMENT): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/** IDs are 32-bit integer columns; a larger number can name no row (and PostgreSQL would reject it). */
export function isStorableId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= 2147483647;
}

/**
 * Text with a NUL character can name no row (none is stored: every text
 * parameter refuses NUL), and PostgreSQL rejects it in a query where SQLite
 * would find nothing. Look-ups by a client-given text that has not been
 * through the parameter parser (HTTP Basic credentials, paths of the file
 * routes) check it first and answer "not found", as SQLite does.
 */
export function isStorableText(text: string): boolean {
  return !text.includes("\u0000");
}
