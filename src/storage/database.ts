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
import { preparedQuery } from "./compiled.ts";

export type Dialect = "sqlite" | "postgres";

export interface Storage {
  db: Kysely<Database>;
  dialect: Dialect;
  close(): Promise<void>;
}

export interface StorageOptions {
  /** postgres://… URL; when absent, SQLite at sqlitePath. */
  databaseUrl?: string | undefined;
  sqlitePath?: string;
  /** PostgreSQL schema to use (created if missing); tests use one per app. */
  pgSchema?: string;
}

let pgDriver: Promise<typeof import("pg").default> | undefined;

/** pg, loaded when the first PostgreSQL database is opened. */
function loadPg(): Promise<typeof import("pg").default> {
  pgDriver ??= import("pg").then(({ default: pg }) => {
    // count(*) and bigint columns come back from pg as strings; every such value
    // this server stores (times, counts) fits a JavaScript number.
    pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
    return pg;
  });
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

function sqliteStatement(statement: SQLite.Statement): SqliteStatement {
  return {
    reader: statement.reader,
    all: (parameters) => statement.all(withIntegerBooleans(parameters) as unknown[]),
    run: (parameters) => statement.run(withIntegerBooleans(parameters) as unknown[]),
    iterate: (parameters) => statement.iterate(withIntegerBooleans(parameters) as unknown[]),
  };
}

/**
 * Kysely prepares every query afresh; better-sqlite3 statements are reusable,
 * so keep the most recent ones by SQL text. Safe because better-sqlite3 runs
 * a statement to completion synchronously (Kysely's streaming is not used).
 */
function withStatementCache(sqlite: SQLite.Database, size = 500): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => sqlite.close(),
    prepare: (sql: string) => {
      let statement = cache.get(sql);
      if (statement) {
        cache.delete(sql); // re-insert below: most recently used last
      } else {
        statement = sqliteStatement(sqlite.prepare(sql));
        if (cache.size >= size) cache.delete(cache.keys().next().value!);
      }
      cache.set(sql, statement);
      return statement;
    },
  };
}

export async function openStorage(options: StorageOptions): Promise<Storage> {
  if (options.databaseUrl) {
    const schema = options.pgSchema;
    if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`bad schema name ${schema}`);
    const pg = await loadPg();
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: 10,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // An idle client's connection error (database restart, network blip) must
    // not crash the process; the pool replaces the client on the next query.
    pool.on("error", (error) => process.emitWarning(`PostgreSQL pool: ${error.message}`));
    if (schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: "postgres", close: () => db.destroy() };
  }

  const file = options.sqlitePath ?? ":memory:";
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  const { default: SQLite } = await import("better-sqlite3");
  const sqlite = new SQLite(file);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  // WAL with synchronous=NORMAL can lose the last commits on power loss; FULL keeps
  // every acknowledged write.
  sqlite.pragma("synchronous = FULL");
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(sqlite) }),
    plugins: [new SqliteBooleanPlugin()],
  });
  return { db, dialect: "sqlite", close: () => db.destroy() };
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
