// The message parts of POST /register's state: max_message_id, unread_msgs,
// recent_private_conversations, user_topics and the legacy muted_topics, as
// Zulip's fetch_initial_state_data builds them.
import type { Kysely, Transaction } from "kysely";
import { sql } from "kysely";
import { ANY_MENTION, countsAsMention, Flag, isMutedConversation } from "../domain/message-flags.ts";
import { dmKeyUserIds, VisibilityPolicy } from "../domain/messages.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Zulip's MAX_UNREAD_MESSAGES: only the newest unread messages are listed. */
export const MAX_UNREAD_MESSAGES = 50000;
/** Zulip's RECENT_CONVERSATIONS_LIMIT: direct messages looked at for recent conversations. */
export const RECENT_CONVERSATIONS_LIMIT = 1000;

export async function maxMessageId(db: Db, userId: number): Promise<number> {
  const row = await db.selectFrom("user_messages").select((eb) => eb.fn.max("message_id").as("max")).where("user_id", "=", userId).executeTakeFirst();
  return row?.max ?? -1;
}

export interface UnreadMessages {
  pms: { other_user_id: number; sender_id: number; unread_message_ids: number[] }[];
  streams: { stream_id: number; topic: string; unread_message_ids: number[] }[];
  huddles: { user_ids_string: string; unread_message_ids: number[] }[];
  mentions: number[];
  count: number;
  old_unreads_missing: boolean;
}

/**
 * Unread messages (Zulip's get_raw_unread_data + aggregate_unread_data):
 * direct messages by conversation, channel messages by (channel, topic) in
 * channels the user is still subscribed to; muted channels and topics are
 * listed but not counted, and wildcard mentions in them are not mentions.
 */
export async function unreadMessages(db: Db, userId: number, emptyTopicName: string | null): Promise<UnreadMessages> {
  const rows = await db
    .selectFrom("user_messages as um")
    .innerJoin("messages as m", "m.id", "um.message_id")
    .leftJoin("recipients as r", (j) => j.onRef("r.id", "=", "m.recipient_id").on("m.channel_id", "is", null))
    .leftJoin("subscriptions as s", (j) => j.onRef("s.channel_id", "=", "m.channel_id").on("s.user_id", "=", userId))
    .select(["um.message_id", "um.flags", "m.sender_id", "m.channel_id", "m.topic", "m.topic_key", "r.dm_key", "s.active", "s.is_muted"])
    .where("um.user_id", "=", userId)
    .where(sql<boolean>`(um.flags & 1) = 0`)
    .orderBy("um.message_id", "desc")
    .limit(MAX_UNREAD_MESSAGES)
    .execute();
  rows.reverse();
  const topicPolicies = new Map<string, number>();
  for (const t of await db.selectFrom("user_topics").select(["channel_id", "topic_key", "visibility_policy"]).where("user_id", "=", userId).execute()) {
    topicPolicies.set(`${t.channel_id}:${t.topic_key}`, t.visibility_policy);
  }

  const pms = new Map<number, number[]>();
  const huddles = new Map<string, number[]>();
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const mentions: number[] = [];
  let count = 0;
  for (const row of rows) {
    if (row.channel_id === null) {
      const participants = dmKeyUserIds(row.dm_key!);
      if (participants.length <= 2) {
        const other = participants.find((id) => id !== userId) ?? userId;
        pms.set(other, [...(pms.get(other) ?? []), row.message_id]);
      } else {
        huddles.set(row.dm_key!, [...(huddles.get(row.dm_key!) ?? []), row.message_id]);
      }
      count++;
      if (row.flags & ANY_MENTION) mentions.push(row.message_id);
      continue;
    }
    // Channels the user left are not unread for them.
    if (row.active !== true) continue;
    const key = `${row.channel_id}:${row.topic_key}`;
    let entry = streams.get(key);
    if (!entry) {
      const topic = row.topic === "" && emptyTopicName !== null ? emptyTopicName : row.topic;
      streams.set(key, (entry = { stream_id: row.channel_id, topic, unread_message_ids: [] }));
    }
    entry.unread_message_ids.push(row.message_id);
    const policy = topicPolicies.get(key) ?? VisibilityPolicy.INHERIT;
    const muted = isMutedConversation(row.is_muted === true, policy);
    if (!muted) count++;
    if (countsAsMention(row.flags, muted)) {
      mentions.push(row.message_id);
    }
  }
  return {
    pms: [...pms].sort((a, b) => a[0] - b[0]).map(([other, ids]) => ({ other_user_id: other, sender_id: other, unread_message_ids: ids })),
    streams: [...streams.values()].sort((a, b) => a.stream_id - b.stream_id || (a.topic.toLowerCase() < b.topic.toLowerCase() ? -1 : a.topic.toLowerCase() > b.topic.toLowerCase() ? 1 : 0)),
    huddles: [...huddles].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([key, ids]) => ({ user_ids_string: key, unread_message_ids: ids })),
    mentions,
    count,
    old_unreads_missing: rows.length === MAX_UNREAD_MESSAGES,
  };
}

/** Conversations among the user's newest direct messages, newest first; the user's own ID is left out. */
export async function recentPrivateConversations(db: Db, userId: number): Promise<{ user_ids: number[]; max_message_id: number }[]> {
  const rows = await db
    .selectFrom("user_messages as um")
    .innerJoin("messages as m", "m.id", "um.message_id")
    .innerJoin("recipients as r", "r.id", "m.recipient_id")
    .select(["um.message_id", "r.dm_key"])
    .where("um.user_id", "=", userId)
    .where(sql<boolean>`(um.flags & ${sql.lit(Flag.IS_PRIVATE)}) <> 0`)
    .orderBy("um.message_id", "desc")
    .limit(RECENT_CONVERSATIONS_LIMIT)
    .execute();
  const newest = new Map<string, number>();
  for (const row of rows) if (!newest.has(row.dm_key!)) newest.set(row.dm_key!, row.message_id);
  return [...newest].map(([key, id]) => ({ user_ids: dmKeyUserIds(key).filter((u) => u !== userId), max_message_id: id }));
}

export async function userTopics(db: Db, userId: number, emptyTopicName: string | null): Promise<{ stream_id: number; topic_name: string; visibility_policy: number; last_updated: number }[]> {
  const rows = await db.selectFrom("user_topics").selectAll().where("user_id", "=", userId).orderBy("last_updated").execute();
  return rows.map((r) => ({
    stream_id: r.channel_id,
    topic_name: r.topic === "" && emptyTopicName !== null ? emptyTopicName : r.topic,
    visibility_policy: r.visibility_policy,
    last_updated: r.last_updated,
  }));
}

export async function mutedTopics(db: Db, userId: number): Promise<[string, string, number][]> {
  const rows = await db
    .selectFrom("user_topics")
    .innerJoin("channels", "channels.id", "user_topics.channel_id")
    .select(["channels.name", "user_topics.topic", "user_topics.last_updated"])
    .where("user_topics.user_id", "=", userId)
    .where("user_topics.visibility_policy", "=", VisibilityPolicy.MUTED)
    .orderBy("user_topics.last_updated")
    .execute();
  return rows.map((r) => [r.name, r.topic, r.last_updated]);
}

export async function starredMessageIds(db: Db, userId: number): Promise<number[]> {
  const rows = await db
    .selectFrom("user_messages")
    .select("message_id")
    .where("user_id", "=", userId)
    .where(sql<boolean>`(flags & ${sql.lit(Flag.STARRED)}) <> 0`)
    .orderBy("message_id")
    .execute();
  return rows.map((r) => r.message_id);
}
