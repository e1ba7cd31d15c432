// Muting and unmuting users (Zulip's views/muted_users.py and
// actions/muted_users.py). Muting marks the muted user's messages read for
// the muter (with the update_message_flags event); the send path marks their
// new messages read on arrival. Each change sends the full `muted_users`
// list to the user's own clients.
import { sql } from "kysely";
import { Flag } from "../domain/message-flags.ts";
import { badRequest, noSuchUser } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { isMuted, mutedUsersOf } from "../queries/muted-users.ts";
import { getUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { inChunks } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

/**
 * Zulip's access_user_by_id_including_cross_realm(allow_bots=True,
 * allow_deactivated=True): any account of the organization, bots, system
 * bots and deactivated users included.
 */
async function mutableUser(services: Services, realm: Realm, userId: number): Promise<User> {
  const target = await getUserById(services.storage.db, realm.id, userId);
  if (!target) throw noSuchUser();
  return target;
}

/** POST /users/me/muted_users/{muted_user_id}. */
export async function muteUser(services: Services, realm: Realm, user: User, mutedUserId: number): Promise<void> {
  if (mutedUserId === user.id) throw badRequest("Cannot mute self");
  const target = await mutableUser(services, realm, mutedUserId);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (await isMuted(trx, user.id, target.id)) throw badRequest("User already muted");
    await trx.insertInto("muted_users").values({ user_id: user.id, muted_user_id: target.id, date_muted: services.now() }).execute();
    await markMutedUserMessagesRead(trx, pending, realm, user.id, target.id);
    pending.add(realm.id, { type: "muted_users", muted_users: await mutedUsersOf(trx, user.id) }, [user.id]);
  });
}

/** DELETE /users/me/muted_users/{muted_user_id}: messages marked read by the mute stay read. */
export async function unmuteUser(services: Services, realm: Realm, user: User, mutedUserId: number): Promise<void> {
  const target = await mutableUser(services, realm, mutedUserId);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { numDeletedRows } = await trx.deleteFrom("muted_users").where("user_id", "=", user.id).where("muted_user_id", "=", target.id).executeTakeFirst();
    if (Number(numDeletedRows) === 0) throw badRequest("User is not muted");
    pending.add(realm.id, { type: "muted_users", muted_users: await mutedUsersOf(trx, user.id) }, [user.id]);
  });
}

/** Zulip's do_mark_muted_user_messages_as_read: the muter's unread messages from the muted user become read. */
async function markMutedUserMessagesRead(trx: Trx, pending: PendingEvents, realm: Realm, userId: number, senderId: number): Promise<void> {
  const rows = await trx
    .selectFrom("user_messages")
    .innerJoin("messages", "messages.id", "user_messages.message_id")
    .select("user_messages.message_id")
    .where("user_messages.user_id", "=", userId)
    .where(sql<boolean>`(user_messages.flags & ${sql.lit(Flag.READ)}) = 0`)
    .where("messages.sender_id", "=", senderId)
    .orderBy("user_messages.message_id")
    .execute();
  const ids = rows.map((r) => r.message_id);
  if (ids.length === 0) return;
  for (const chunk of inChunks(ids)) {
    await trx
      .updateTable("user_messages")
      .set({ flags: sql<number>`flags | ${sql.lit(Flag.READ)}` })
      .where("user_id", "=", userId)
      .where("message_id", "in", chunk)
      .execute();
  }
  pending.add(realm.id, { type: "update_message_flags", op: "add", operation: "add", flag: "read", messages: ids, all: false }, [userId]);
}
