// Custom emoji as clients see them: the realm_emoji object keyed by ID that
// GET /realm/emoji, POST /register and `realm_emoji` events all carry, and
// the lookups reactions and Markdown need.
import type { Kysely, Transaction } from "kysely";
import { emojiSourceUrl, type CustomEmojiFacts } from "../domain/emoji.ts";
import type { Database, RealmEmoji } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** One custom emoji (Zulip's EmojiInfo). */
export interface ApiRealmEmoji {
  id: string;
  name: string;
  source_url: string;
  /** Non-null only for animated images with a still version; Parley makes no stills. */
  still_url: string | null;
  deactivated: boolean;
  author_id: number | null;
}

export function formatRealmEmoji(row: RealmEmoji): ApiRealmEmoji {
  return {
    id: String(row.id),
    name: row.name,
    source_url: emojiSourceUrl(row.realm_id, row.file_name),
    still_url: null,
    deactivated: row.deactivated,
    author_id: row.author_id,
  };
}

export async function realmEmojiRows(db: Db, realmId: number): Promise<RealmEmoji[]> {
  return db.selectFrom("realm_emoji").selectAll().where("realm_id", "=", realmId).orderBy("id").execute();
}

/** Every custom emoji of the organization, deactivated ones included, keyed by ID. */
export async function realmEmojiDict(db: Db, realmId: number): Promise<Record<string, ApiRealmEmoji>> {
  const out: Record<string, ApiRealmEmoji> = {};
  for (const row of await realmEmojiRows(db, realmId)) out[String(row.id)] = formatRealmEmoji(row);
  return out;
}

/** The organization's custom emoji for the reaction rules: all by ID, and the active ones by name. */
export async function customEmojiFacts(db: Db, realmId: number): Promise<{ byId: Map<string, CustomEmojiFacts>; activeByName: Map<string, CustomEmojiFacts> }> {
  const rows = await db.selectFrom("realm_emoji").select(["id", "name", "deactivated"]).where("realm_id", "=", realmId).execute();
  const byId = new Map<string, CustomEmojiFacts>();
  const activeByName = new Map<string, CustomEmojiFacts>();
  for (const row of rows) {
    byId.set(String(row.id), row);
    if (!row.deactivated) activeByName.set(row.name, row);
  }
  return { byId, activeByName };
}

/** The active custom emoji among `names`, with their image URLs (for Markdown). */
export async function activeRealmEmojiByName(db: Db, realmId: number, names: readonly string[]): Promise<Map<string, { sourceUrl: string }>> {
  if (names.length === 0) return new Map();
  const rows = await db
    .selectFrom("realm_emoji")
    .select(["realm_id", "name", "file_name"])
    .where("realm_id", "=", realmId)
    .where("deactivated", "=", false)
    .where("name", "in", names)
    .execute();
  return new Map(rows.map((r) => [r.name, { sourceUrl: emojiSourceUrl(r.realm_id, r.file_name) }]));
}

/** The active custom emoji of that name, if any. */
export async function activeRealmEmoji(db: Db, realmId: number, name: string): Promise<RealmEmoji | undefined> {
  return db.selectFrom("realm_emoji").selectAll().where("realm_id", "=", realmId).where("name", "=", name).where("deactivated", "=", false).executeTakeFirst();
}
