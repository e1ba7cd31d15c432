// Reads behind the personal-flag endpoints (POST /messages/flags, its narrow
// form and the mark-as-read endpoints): which of some messages the user has a
// flags row for, may reach through channel history, or may not mark unread;
// and the per-message details an "unread" event carries. Every query takes a
// list of IDs and is one statement per chunk, never one per message.
import type { Kysely, Transaction } from "kysely";
import { canReadChannelHistory } from "../domain/channels.ts";
import type { Actor } from "../domain/group-settings.ts";
import { ANY_MENTION, countsAsMention, isMutedConversation } from "../domain/message-flags.ts";
import { dmKeyUserIds, VisibilityPolicy } from "../domain/messages.ts";
import { inChunks } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";
import { channelFacts } from "./channels.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** The user's flags row of each of `messageIds` that has one. */
export async function flagRowsOf(db: Db, userId: number, messageIds: readonly number[]): Promise<Map<number, number>> {
  const found = new Map<number, number>();
  for (const chunk of inChunks(messageIds)) {
    const rows = await db.selectFrom("user_messages").select(["message_id", "flags"]).where("user_id", "=", userId).where("message_id", "in", chunk).execute();
    for (const row of rows) found.set(row.message_id, row.flags);
  }
  return found;
}

/**
 * Channel messages among `messageIds` (of this organization) in channels the
 * user is not subscribed to, with their channel: Zulip keeps every unread
 * channel message in a subscribed channel, so these cannot be marked unread.
 */
export async function messagesInUnsubscribedChannels(db: Db, realmId: number, userId: number, messageIds: readonly number[]): Promise<{ id: number; channel_id: number }[]> {
  const found: { id: number; channel_id: number }[] = [];
  for (const chunk of inChunks(messageIds)) {
    const rows = await db
      .selectFrom("messages as m")
      .select(["m.id", "m.channel_id"])
      .where("m.id", "in", chunk)
      .where("m.realm_id", "=", realmId)
      .where("m.channel_id", "is not", null)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("subscriptions as s")
              .select("s.user_id")
              .where("s.user_id", "=", userId)
              .whereRef("s.channel_id", "=", "m.channel_id")
              .where("s.active", "=", true),
          ),
        ),
      )
      .execute();
    for (const row of rows) found.push({ id: row.id, channel_id: row.channel_id! });
  }
  return found;
}

/**
 * Those of `messageIds` that the user may read without having a flags row
 * (Zulip's bulk_access_messages for such messages): channel messages of this
 * organization in channels whose history they may read. Direct messages
 * without a row, unknown IDs and other organizations' messages are not.
 */
export async function readableThroughHistory(db: Db, realmId: number, actor: Actor, messageIds: readonly number[]): Promise<Set<number>> {
  const byChannel = new Map<number, number[]>();
  for (const chunk of inChunks(messageIds)) {
    const rows = await db
      .selectFrom("messages")
      .select(["id", "channel_id"])
      .where("id", "in", chunk)
      .where("realm_id", "=", realmId)
      .where("channel_id", "is not", null)
      .execute();
    for (const row of rows) {
      const list = byChannel.get(row.channel_id!);
      if (list) list.push(row.id);
      else byChannel.set(row.channel_id!, [row.id]);
    }
  }
  const readable = new Set<number>();
  if (byChannel.size === 0) return readable;
  const channelIds = [...byChannel.keys()];
  const channels = await db.selectFrom("channels").selectAll().where("id", "in", channelIds).execute();
  const subscribed = new Set(
    (await db.selectFrom("subscriptions").select("channel_id").where("user_id", "=", actor.id).where("channel_id", "in", channelIds).where("active", "=", true).execute()).map(
      (s) => s.channel_id,
    ),
  );
  for (const channel of channels) {
    const facts = { ...channelFacts(channel), history_public_to_subscribers: channel.history_public_to_subscribers };
    if (canReadChannelHistory(actor, facts, subscribed.has(channel.id))) for (const id of byChannel.get(channel.id)!) readable.add(id);
  }
  return readable;
}

/** One entry of an update_message_flags event's message_details (Zulip's MessageDetailsDict). */
export type UnreadMessageDetails =
  | { type: "private"; user_ids: number[]; mentioned?: true }
  | { type: "stream"; stream_id: number; topic: string; unmuted_stream_msg: boolean; mentioned?: true };

/**
 * What clients need to put messages just marked unread back into their
 * unread_msgs (Zulip's get_raw_unread_data + format_unread_message_details),
 * keyed by message ID as a string. Direct messages list the other
 * participants (none for a message to oneself); channel messages their
 * channel and topic and whether the conversation is unmuted. Mentions count
 * as in register's unread_msgs: wildcard mentions only outside muted
 * conversations. Messages in channels the user is not subscribed to are left
 * out, as Zulip leaves out inactive recipients.
 */
export async function unreadMessageDetails(db: Db, userId: number, messageIds: readonly number[]): Promise<Record<string, UnreadMessageDetails>> {
  const rows: {
    message_id: number;
    flags: number;
    channel_id: number | null;
    topic: string;
    topic_key: string;
    dm_key: string | null;
    active: boolean | null;
    is_muted: boolean | null;
  }[] = [];
  for (const chunk of inChunks(messageIds)) {
    rows.push(
      ...(await db
        .selectFrom("user_messages as um")
        .innerJoin("messages as m", "m.id", "um.message_id")
        .leftJoin("recipients as r", (j) => j.onRef("r.id", "=", "m.recipient_id").on("m.channel_id", "is", null))
        .leftJoin("subscriptions as s", (j) => j.onRef("s.channel_id", "=", "m.channel_id").on("s.user_id", "=", userId))
        .select(["um.message_id", "um.flags", "m.channel_id", "m.topic", "m.topic_key", "r.dm_key", "s.active", "s.is_muted"])
        .where("um.user_id", "=", userId)
        .where("um.message_id", "in", chunk)
        .execute()),
    );
  }
  const channelIds = [...new Set(rows.flatMap((r) => (r.channel_id === null ? [] : [r.channel_id])))];
  const policies = new Map<string, number>();
  if (channelIds.length > 0) {
    const topics = await db.selectFrom("user_topics").select(["channel_id", "topic_key", "visibility_policy"]).where("user_id", "=", userId).where("channel_id", "in", channelIds).execute();
    for (const t of topics) policies.set(`${t.channel_id}:${t.topic_key}`, t.visibility_policy);
  }
  const details: Record<string, UnreadMessageDetails> = {};
  for (const row of rows.sort((a, b) => a.message_id - b.message_id)) {
    if (row.channel_id === null) {
      const entry: UnreadMessageDetails = {
        type: "private",
        user_ids: dmKeyUserIds(row.dm_key!)
          .filter((id) => id !== userId)
          .sort((a, b) => a - b),
      };
      if (row.flags & ANY_MENTION) entry.mentioned = true;
      details[row.message_id] = entry;
      continue;
    }
    if (row.active !== true) continue;
    const policy = policies.get(`${row.channel_id}:${row.topic_key}`) ?? VisibilityPolicy.INHERIT;
    const muted = isMutedConversation(row.is_muted === true, policy);
    const entry: UnreadMessageDetails = { type: "stream", stream_id: row.channel_id, topic: row.topic, unmuted_stream_msg: !muted };
    if (countsAsMention(row.flags, muted)) entry.mentioned = true;
    details[row.message_id] = entry;
  }
  return details;
}

/**
 * Whether the user has received a message in the topic (Zulip's
 * user_message_exists_for_topic); `recipientId` is the channel's.
 */
export async function receivedInTopic(db: Db, userId: number, recipientId: number, topicKey: string): Promise<boolean> {
  const row = await db
    .selectFrom("messages as m")
    .select("m.id")
    .where("m.recipient_id", "=", recipientId)
    .where("m.topic_key", "=", topicKey)
    .where((eb) => eb.exists(eb.selectFrom("user_messages as um").select("um.message_id").whereRef("um.message_id", "=", "m.id").where("um.user_id", "=", userId)))
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
