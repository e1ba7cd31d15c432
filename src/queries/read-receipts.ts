// GET /messages/{message_id}/read_receipts (Zulip's views/read_receipts.py):
// who has read a message, as far as they let others know.
import { sql, type Kysely } from "kysely";
import type { Actor } from "../domain/group-settings.ts";
import { Flag } from "../domain/message-flags.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import type { Database, Realm } from "../storage/schema.ts";
import { readableMessage } from "./messages.ts";

/**
 * The IDs (ascending) of the active users whose flags row marks the message
 * read, except its sender and those with send_read_receipts off. The message
 * must be one the actor can read ("Invalid message(s)"; archived channels'
 * included), and the organization must have enable_read_receipts on. Bots
 * are included, as in Zulip, and so is the actor; users the actor muted, and
 * users who muted the actor, are left out.
 */
export async function readReceipts(db: Kysely<Database>, realm: Realm, actor: Actor, messageId: number): Promise<number[]> {
  const found = await readableMessage(db, realm.id, actor, messageId);
  if (!found) throw badRequest("Invalid message(s)");
  if (!parseRealmSettings(realm.settings).enable_read_receipts) throw badRequest("Read receipts are disabled in this organization.");
  const rows = await db
    .selectFrom("user_messages as um")
    .innerJoin("users as u", "u.id", "um.user_id")
    .select(["u.id", "u.settings"])
    .where("um.message_id", "=", found.row.id)
    .where("u.is_active", "=", true)
    .where("u.id", "<>", found.row.sender_id)
    .where(sql<boolean>`(um.flags & ${sql.lit(Flag.READ)}) <> 0`)
    .where("u.id", "not in", db.selectFrom("muted_users").select("muted_user_id").where("user_id", "=", actor.id))
    .where("u.id", "not in", db.selectFrom("muted_users").select("user_id").where("muted_user_id", "=", actor.id))
    .orderBy("u.id")
    .execute();
  return rows.filter((r) => parseUserSettings(r.settings).send_read_receipts).map((r) => r.id);
}
