// Muted users as the API shows them (Zulip's get_user_mutes): one serializer
// for POST /register's muted_users and the `muted_users` event. (The send
// path's inverse look-up, Zulip's get_muting_users, is in send-facts.ts.)
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiMutedUser {
  id: number;
  timestamp: number;
}

/** Whom the user muted, and when: oldest first. */
export async function mutedUsersOf(db: Db, userId: number): Promise<ApiMutedUser[]> {
  const rows = await db
    .selectFrom("muted_users")
    .select(["muted_user_id", "date_muted"])
    .where("user_id", "=", userId)
    .orderBy("date_muted")
    .orderBy("muted_user_id")
    .execute();
  return rows.map((r) => ({ id: r.muted_user_id, timestamp: r.date_muted }));
}

export async function isMuted(db: Db, userId: number, mutedUserId: number): Promise<boolean> {
  const row = await db.selectFrom("muted_users").select("user_id").where("user_id", "=", userId).where("muted_user_id", "=", mutedUserId).executeTakeFirst();
  return row !== undefined;
}

