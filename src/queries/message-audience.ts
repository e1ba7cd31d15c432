// Who hears about a change to existing messages (reactions, edits, moves,
// deletes, as Zulip's event_recipient_ids_for_action_on_messages): the users
// who can currently see them and would have them in a client.
import type { Kysely, Transaction } from "kysely";
import { Role } from "../domain/roles.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** The channel of channel messages (null for direct messages), as far as the audience depends on it. */
export interface AudienceChannel {
  id: number;
  invite_only: boolean;
  history_public_to_subscribers: boolean;
}

/**
 * Active users to notify about `messageIds`, sorted: for direct messages
 * those with a flags row; in a channel with history public to subscribers
 * every active subscriber, and in a public channel also the non-guests with a
 * flags row (they starred or reacted without subscribing); in a
 * protected-history channel the active subscribers who received at least one
 * of the messages.
 */
export async function messageAudience(db: Db, messageIds: readonly number[], channel: AudienceChannel | null): Promise<number[]> {
  if (messageIds.length === 0) return [];
  if (channel === null) return [...(await flagRowHolders(db, messageIds, { guests: true }))].sort((a, b) => a - b);
  let query = db
    .selectFrom("subscriptions as s")
    .innerJoin("users as u", "u.id", "s.user_id")
    .select("s.user_id")
    .where("s.channel_id", "=", channel.id)
    .where("s.active", "=", true)
    .where("u.is_active", "=", true);
  if (!channel.history_public_to_subscribers) {
    query = query.where((eb) =>
      eb.exists(eb.selectFrom("user_messages as um").select("um.user_id").whereRef("um.user_id", "=", "s.user_id").where("um.message_id", "in", messageIds)),
    );
  }
  const rows = await query.orderBy("s.user_id").execute();
  const users = new Set(rows.map((r) => r.user_id));
  if (!channel.invite_only) for (const id of await flagRowHolders(db, messageIds, { guests: false })) users.add(id);
  return [...users].sort((a, b) => a - b);
}

/** Active users with a flags row for any of the messages. */
async function flagRowHolders(db: Db, messageIds: readonly number[], options: { guests: boolean }): Promise<number[]> {
  let query = db
    .selectFrom("user_messages as um")
    .innerJoin("users as u", "u.id", "um.user_id")
    .select("um.user_id")
    .distinct()
    .where("um.message_id", "in", messageIds)
    .where("u.is_active", "=", true);
  if (!options.guests) query = query.where("u.role", "<>", Role.GUEST);
  return (await query.execute()).map((r) => r.user_id);
}
