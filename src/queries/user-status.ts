// Reading user statuses: one user's (GET /users/{user_id}/status) and the
// organization's (POST /register's user_status), both through the one
// serializer in domain/user-status.ts. "Away" comes from each user's
// presence_enabled setting.
import type { Kysely, Transaction } from "kysely";
import { formatUserStatus, type ApiUserStatus } from "../domain/user-status.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

const STATUS_COLUMNS = ["user_statuses.status_text", "user_statuses.emoji_name", "user_statuses.emoji_code", "user_statuses.reaction_type", "users.settings"] as const;

/** A user's status; {} for one who never set any (Zulip's get_user_status). */
export async function userStatusOf(db: Db, userId: number): Promise<ApiUserStatus> {
  const row = await db
    .selectFrom("user_statuses")
    .innerJoin("users", "users.id", "user_statuses.user_id")
    .select(STATUS_COLUMNS)
    .where("user_statuses.user_id", "=", userId)
    .executeTakeFirst();
  return row ? formatUserStatus(row, parseUserSettings(row.settings).presence_enabled) : {};
}

/**
 * POST /register's user_status: every active user with a status row that
 * shows something (text, emoji, or away), keyed by user ID as a string
 * (Zulip's get_all_users_status_dict). A user who turned presence off without
 * ever setting a status has no row and is not listed, as in Zulip.
 */
export async function userStatusState(db: Db, realmId: number): Promise<Record<string, ApiUserStatus>> {
  const rows = await db
    .selectFrom("user_statuses")
    .innerJoin("users", "users.id", "user_statuses.user_id")
    .select(["user_statuses.user_id", ...STATUS_COLUMNS])
    .where("user_statuses.realm_id", "=", realmId)
    .where("users.is_active", "=", true)
    .orderBy("user_statuses.user_id")
    .execute();
  const state: Record<string, ApiUserStatus> = {};
  for (const row of rows) {
    const status = formatUserStatus(row, parseUserSettings(row.settings).presence_enabled);
    if (Object.keys(status).length > 0) state[String(row.user_id)] = status;
  }
  return state;
}
