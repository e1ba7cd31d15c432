// Muted users as the API shows them (Zulip's get_user_mutes): one serializer
// for POST /register's muted_users and the `muted_users` event; and the
// inverse look-up the send path makes (Zulip's get_muting_users).
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";
import { preparedQuery } from "../storage/compiled.ts";

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

/**
 * Who muted `senderId` (deactivated users included): one indexed look-up
 * however many recipients a message has; the send path keeps the ones that
 * receive the message.
 */
const mutingUsers = preparedQuery((db, a: { senderId: number }) => db.selectFrom("muted_users").select("user_id").where("muted_user_id", "=", a.senderId));

export async function mutingUserIds(db: Db, senderId: number): Promise<Set<number>> {
  const rows = await mutingUsers.execute(db, { senderId });
  return new Set(rows.map((r) => r.user_id));
}
