// Statements built once: the hot paths (authentication on every request, a
// message send) run the same few statements with new values each time, and
// Kysely rebuilt, froze and compiled each one's query tree on every call —
// about a tenth of a send's CPU on SQLite. A prepared query is a Kysely
// builder written with placeholders for its values; it is compiled the first
// time it runs on a database, and afterwards only the values are bound into
// the kept SQL text. The result still passes through the database's plugins
// (SQLite's booleans), and the statement keeps its query tree, so it reads
// the same to anything that inspects executed statements.
import { createQueryId, sql, type Compilable, type CompiledQuery, type DialectAdapter, type Kysely, type RawBuilder } from "kysely";
import type { Database } from "./schema.ts";

/**
 * PostgreSQL: the prepared queries' texts by the name each pooled connection
 * prepares them under (database.ts), so the server parses and plans each once
 * per connection rather than on every call; planning was most of what a
 * send's small reads cost PostgreSQL (bench/RESULTS.md). A text whose result
 * columns come from `*` is left unnamed: a column added by a newer process's
 * migration would change a prepared statement's result type, which
 * PostgreSQL refuses to run.
 */
const statementNames = new Map<string, { base: string; generation: number; arrayLimit: number | undefined }>();
const STAR_RESULT = /\*\s*(,|from\b)|"?\w+"?\s*\.\s*\*|\breturning\s+\*|\btable\s+"?\w/i;

const nameOf = (entry: { base: string; generation: number }) => (entry.generation === 0 ? entry.base : `${entry.base}_g${entry.generation}`);

/** The name to run `text` under with these values, or undefined to run it unnamed. */
export function preparedStatementName(text: string, values: readonly unknown[]): string | undefined {
  const entry = statementNames.get(text);
  if (!entry) return undefined;
  const { arrayLimit } = entry;
  if (arrayLimit !== undefined && values.some((v) => Array.isArray(v) && v.length > arrayLimit)) return undefined;
  return nameOf(entry);
}

/**
 * After PostgreSQL refused `failedName` for a changed result type: the text's
 * next name, which every connection of the process prepares afresh (the old
 * name would fail on each of them). A name already renewed stays.
 */
export function renewPreparedStatementName(text: string, failedName: string): void {
  const entry = statementNames.get(text);
  if (entry && nameOf(entry) === failedName) entry.generation += 1;
}

export interface PreparedQueryOptions {
  /**
   * PostgreSQL: a call with an array argument longer than this runs unnamed,
   * with a plan for its values. For statements whose best plan depends on an
   * array's length: a generic plan takes `unnest($1)` for 10 rows.
   */
  namedUpToArrayLength?: number;
}

/** Stands for an argument in a prepared query's tree, until the statement is run. */
class Placeholder {
  constructor(readonly name: string) {}
}

/** A compiled statement's parameters: an argument's name, or a value written into the builder. */
type Binding = { argument: string } | { value: unknown };

interface Plan {
  compiled: CompiledQuery;
  bindings: Binding[];
}

export interface PreparedQuery<A extends Record<string, unknown>, R> {
  execute(db: Kysely<Database>, args: A): Promise<R[]>;
  executeTakeFirst(db: Kysely<Database>, args: A): Promise<R | undefined>;
}

/**
 * A statement compiled once per database (per dialect adapter: a process
 * serving one database compiles it once). `build` receives stand-ins for
 * the arguments; they may only be used as bound values (`where(col, "=",
 * args.x)`, `${args.x}` in sql``), never computed with (trim them, compare
 * them, spread them in an `in` list) — the statement's text must be the same
 * for every call.
 */
export function preparedQuery<A extends Record<string, unknown>, R>(
  build: (db: Kysely<Database>, args: A) => Compilable<R> | RawBuilder<R>,
  options: PreparedQueryOptions = {},
): PreparedQuery<A, R> {
  // Compiled SQL text per database: derived from code only, never from data.
  const plans = new WeakMap<DialectAdapter, Plan>();
  const placeholders = new Proxy({} as A, { get: (_, name) => new Placeholder(String(name)) });

  function planFor(db: Kysely<Database>): Plan {
    const adapter = db.getExecutor().adapter;
    let plan = plans.get(adapter);
    if (!plan) {
      // A query builder compiles on the database it came from; sql`` needs to be told which.
      const compiled = (build(db, placeholders) as { compile(db: Kysely<Database>): CompiledQuery }).compile(db);
      const bindings = compiled.parameters.map((p): Binding => (p instanceof Placeholder ? { argument: p.name } : { value: p }));
      plan = { compiled, bindings };
      plans.set(adapter, plan);
      // Per text: two prepared queries of the same text share its name and the first one's options.
      if (!statementNames.has(compiled.sql) && !STAR_RESULT.test(compiled.sql)) {
        statementNames.set(compiled.sql, { base: `parley_${statementNames.size + 1}`, generation: 0, arrayLimit: options.namedUpToArrayLength });
      }
    }
    return plan;
  }

  async function execute(db: Kysely<Database>, args: A): Promise<R[]> {
    const { compiled, bindings } = planFor(db);
    const parameters = bindings.map((b) => ("argument" in b ? args[b.argument] : b.value));
    const query: CompiledQuery<R> = { sql: compiled.sql, parameters, query: compiled.query, queryId: createQueryId() };
    return (await db.executeQuery(query)).rows;
  }

  return {
    execute,
    executeTakeFirst: async (db, args) => (await execute(db, args))[0],
  };
}

/**
 * A list of IDs as one bound value, for `IN (…)` in a prepared query: its text
 * stays the same for any number of IDs (and past SQLite's variable limit). An
 * integer array on PostgreSQL, a JSON array's text on SQLite.
 */
export const idsFromArray = (ids: number[]): RawBuilder<unknown> => sql`SELECT unnest(${ids}::integer[])`;
export const idsFromJson = (ids: string): RawBuilder<unknown> => sql`SELECT value FROM json_each(${ids})`;
