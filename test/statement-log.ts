// Which statements a piece of work runs on an app's database. A plugin sees
// a statement only when its query tree is built and compiled, which prepared
// statements (src/storage/compiled.ts) skip after their first run; so the
// statements are taken where they are executed, by every executor that
// carries the marking plugin (the database's and its transactions').
import { DefaultQueryExecutor, type CompiledQuery, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryResult, type RootOperationNode, type UnknownRow } from "kysely";
import type { Storage } from "../src/storage/database.ts";

class Marker implements KyselyPlugin {
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/**
 * Runs `action` with `plugin` (default: one that changes nothing) added to
 * `storage.db`, and returns the statements executed through it, in order.
 */
export async function statementsRun(storage: Storage, action: () => Promise<unknown>, plugin: KyselyPlugin = new Marker()): Promise<CompiledQuery[]> {
  const original = storage.db;
  const run: CompiledQuery[] = [];
  const own = Object.getOwnPropertyDescriptor(DefaultQueryExecutor.prototype, "executeQuery");
  const inherited = DefaultQueryExecutor.prototype.executeQuery;
  DefaultQueryExecutor.prototype.executeQuery = function <R>(this: DefaultQueryExecutor, query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.plugins.includes(plugin)) run.push(query);
    return inherited.call<DefaultQueryExecutor, [CompiledQuery], Promise<QueryResult<R>>>(this, query);
  };
  storage.db = original.withPlugin(plugin);
  try {
    await action();
  } finally {
    storage.db = original;
    if (own) Object.defineProperty(DefaultQueryExecutor.prototype, "executeQuery", own);
    else delete (DefaultQueryExecutor.prototype as { executeQuery?: unknown }).executeQuery;
  }
  return run;
}

/**
 * Leaves authentication's rows in the app's row cache: runs `request` (any
 * authenticated call) once, waits until the cache keeps rows (on PostgreSQL,
 * once its LISTEN connection is up), and runs it again. Statement counts
 * after this leave out the organization's and the user's reads.
 */
export async function warmRowCache(storage: Storage, request: () => Promise<unknown>): Promise<void> {
  await request();
  for (let waited = 0; !storage.rows.trusted; waited += 10) {
    if (waited > 10_000) throw new Error("the row cache never started keeping rows");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await request();
}
