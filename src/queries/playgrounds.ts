// Code playgrounds as clients see them: the realm_playgrounds list that
// POST /register and `realm_playgrounds` events carry.
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Zulip's RealmPlaygroundDict. */
export interface ApiPlayground {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

/** The organization's playgrounds, oldest first (Zulip's get_realm_playgrounds). */
export async function realmPlaygrounds(db: Db, realmId: number): Promise<ApiPlayground[]> {
  return db.selectFrom("realm_playgrounds").select(["id", "name", "pygments_language", "url_template"]).where("realm_id", "=", realmId).orderBy("id").execute();
}
