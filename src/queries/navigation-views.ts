// Navigation views as the API shows them (Zulip's lib/navigation_views.py):
// one serializer used by GET /navigation_views, POST /register and the events.
import type { Kysely, Transaction } from "kysely";
import type { Database, NavigationView } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiNavigationView {
  fragment: string;
  is_pinned: boolean;
  /** Null for built-in views. */
  name: string | null;
}

export function formatNavigationView(row: NavigationView): ApiNavigationView {
  return { fragment: row.fragment, is_pinned: row.is_pinned, name: row.name };
}

/** The views a user has stored, in creation (ID) order; built-in views they never configured are not listed. */
export async function navigationViewsOf(db: Db, userId: number): Promise<ApiNavigationView[]> {
  const rows = await db.selectFrom("navigation_views").selectAll().where("user_id", "=", userId).orderBy("id").execute();
  return rows.map(formatNavigationView);
}

/** The user's view with exactly this fragment. */
export async function navigationViewByFragment(db: Db, userId: number, fragment: string): Promise<NavigationView | undefined> {
  return db.selectFrom("navigation_views").selectAll().where("user_id", "=", userId).where("fragment", "=", fragment).executeTakeFirst();
}

/** Whether any of the user's views has this name (compared exactly, as Zulip's name= filter). */
export async function navigationViewNameTaken(db: Db, userId: number, name: string): Promise<boolean> {
  const row = await db.selectFrom("navigation_views").select("id").where("user_id", "=", userId).where("name", "=", name).executeTakeFirst();
  return row !== undefined;
}
