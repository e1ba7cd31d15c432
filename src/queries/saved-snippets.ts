// Saved snippets as the API shows them (Zulip's SavedSnippet.to_api_dict):
// one serializer used by GET /saved_snippets, POST /register and the events.
import type { Kysely, Transaction } from "kysely";
import type { Database, SavedSnippet } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiSavedSnippet {
  id: number;
  title: string;
  content: string;
  date_created: number;
}

export function formatSavedSnippet(row: SavedSnippet): ApiSavedSnippet {
  return { id: row.id, title: row.title, content: row.content, date_created: row.date_created };
}

/** A user's snippets in creation (ID) order, as Zulip's unordered query returns them in practice. */
export async function savedSnippetsOf(db: Db, userId: number): Promise<ApiSavedSnippet[]> {
  const rows = await db.selectFrom("saved_snippets").selectAll().where("user_id", "=", userId).orderBy("id").execute();
  return rows.map(formatSavedSnippet);
}

/** One of the user's own snippets; another user's is as good as missing. */
export async function savedSnippetOf(db: Db, userId: number, snippetId: number): Promise<SavedSnippet | undefined> {
  return db.selectFrom("saved_snippets").selectAll().where("id", "=", snippetId).where("user_id", "=", userId).executeTakeFirst();
}
