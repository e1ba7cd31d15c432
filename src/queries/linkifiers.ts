// Linkifiers as clients see them (GET /realm/linkifiers, POST /register's
// realm_linkifiers, `realm_linkifiers` events) and as the renderer uses them.
//
// Compiled linkifiers are cached per process, keyed by the organization's
// linkifiers_version: every change increments it in the transaction that
// makes the change, and the realm row (read on every request, and by every
// worker before it sends) carries it, so a process sees a change made by
// another one on the next request that reads the realm, and the send path
// costs no query while the linkifiers stay as they are.
import type { Kysely, Transaction } from "kysely";
import { compileLinkifiers, type CompiledLinkifiers, type Linkifier } from "../markdown/render.ts";
import type { Storage } from "../storage/database.ts";
import type { Database, Realm } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** The organization's linkifiers in the order they apply (Zulip's linkifiers_for_realm: by order, then ID). */
export async function realmLinkifiers(db: Db, realmId: number): Promise<Linkifier[]> {
  return db.selectFrom("realm_linkifiers").select(["pattern", "url_template", "id"]).where("realm_id", "=", realmId).orderBy("order").orderBy("id").execute();
}

interface CacheEntry {
  version: number;
  linkifiers: CompiledLinkifiers;
}

/** Per database (tests run several in one process), per organization. */
const caches = new WeakMap<object, Map<number, CacheEntry>>();

/**
 * The organization's compiled linkifiers. `realm` is its row as read for the
 * request: when its linkifiers_version is the cached one, no query is made.
 * `db` is the connection or transaction to read with; `database` names the
 * database it reads (its Storage, or its Kysely instance), which the cache is
 * kept for.
 */
export async function compiledLinkifiersFor(database: Storage | Db, db: Db, realm: Pick<Realm, "id"> & { linkifiers_version?: number }): Promise<CompiledLinkifiers> {
  let cache = caches.get(database);
  if (!cache) caches.set(database, (cache = new Map()));
  let version = realm.linkifiers_version;
  if (typeof version !== "number") {
    const row = await db.selectFrom("realms").select("linkifiers_version").where("id", "=", realm.id).executeTakeFirst();
    version = row?.linkifiers_version ?? 0;
  }
  const cached = cache.get(realm.id);
  if (cached && cached.version === version) return cached.linkifiers;
  // The version is read again with `db` before the rows: a change increments
  // it in the transaction that changes them, so the rows are at least that
  // version's (a change committed in between leaves newer rows under the
  // older version, which the next request, reading the newer version,
  // compiles again). Read inside a transaction that itself changed the
  // linkifiers (group commit), the version is ahead of the realm row's: the
  // rows may yet be rolled back, so they are used but not cached.
  const seen = await db.selectFrom("realms").select("linkifiers_version").where("id", "=", realm.id).executeTakeFirst();
  const linkifiers = compileLinkifiers(await realmLinkifiers(db, realm.id));
  if (seen?.linkifiers_version === version && (!cached || version >= cached.version)) cache.set(realm.id, { version, linkifiers });
  return linkifiers;
}
