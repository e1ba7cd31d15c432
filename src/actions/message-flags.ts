// Personal message flags (Zulip's zerver/actions/message_flags.py): setting
// and clearing read, starred and collapsed on listed messages or on a range
// of a narrow, and the mark-as-read shortcuts. Each change is a handful of
// set-based statements in one transaction, whatever the number of messages,
// followed by one update_message_flags event to the user's own queues.
import { sql } from "kysely";
import { DEFAULT_HISTORICAL_FLAGS, editableFlagBit, Flag } from "../domain/message-flags.ts";
import { normalizeTopicName } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { badRequest } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { accessChannel } from "../queries/channels.ts";
import {
  flagRowsOf,
  messagesInUnsubscribedChannels,
  readableThroughHistory,
  receivedInTopic,
  unreadMessageDetails,
  type UnreadMessageDetails,
} from "../queries/message-flags.ts";
import { messageRange, type RangeRequest } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

export interface FlagChange {
  /** Messages whose flag changed, in the order asked for: what the event lists. */
  changed: number[];
  /** Present when clearing read: channels whose messages were skipped because the user is not subscribed. */
  ignoredChannels?: number[];
}

/** POST /messages/flags (Zulip's do_update_message_flags). */
export async function updateMessageFlags(services: Services, realm: Realm, user: User, op: string, flag: string, messageIds: readonly number[]): Promise<FlagChange> {
  return inRealmTransaction(services, realm.id, (trx, pending) => changeFlag(trx, pending, realm, user, op, flag, messageIds));
}

export interface NarrowFlagResult {
  processed_count: number;
  updated_count: number;
  first_processed_id: number | null;
  last_processed_id: number | null;
  found_oldest: boolean;
  found_newest: boolean;
  ignored_because_not_subscribed_channels?: number[];
}

/**
 * POST /messages/flags/narrow: the range is chosen exactly as GET /messages
 * would choose it, then changed like a list of IDs. Narrow errors come before
 * flag errors, as in Zulip.
 */
export async function updateMessageFlagsForNarrow(
  services: Services,
  realm: Realm,
  user: User,
  range: Omit<RangeRequest, "emptyTopicName">,
  op: string,
  flag: string,
): Promise<NarrowFlagResult> {
  const emptyTopicName = parseRealmSettings(realm.settings).empty_topic_display_name;
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const actor = await actorFor(trx, user);
    const { rows, found_oldest, found_newest } = await messageRange(trx, services.storage.dialect, realm, actor, { ...range, emptyTopicName }, "ids");
    const ids = rows.map((r) => r.id);
    const { changed, ignoredChannels } = await changeFlag(trx, pending, realm, user, op, flag, ids);
    return {
      processed_count: ids.length,
      updated_count: changed.length,
      first_processed_id: ids[0] ?? null,
      last_processed_id: ids[ids.length - 1] ?? null,
      found_oldest,
      found_newest,
      ...(ignoredChannels ? { ignored_because_not_subscribed_channels: ignoredChannels } : {}),
    };
  });
}

async function changeFlag(trx: Trx, pending: PendingEvents, realm: Realm, user: User, op: string, flag: string, messageIds: readonly number[]): Promise<FlagChange> {
  const bit = editableFlagBit(flag);
  if (op !== "add" && op !== "remove") throw badRequest(`Invalid message flag operation: '${op}'`);
  const adding = op === "add";
  const target = adding ? bit : 0;
  const actor = await actorFor(trx, user);
  // Each message once; IDs no row can have stay in, as unknown messages.
  let ids = [...new Set(messageIds)];

  let ignoredChannels: number[] | undefined;
  if (flag === "read" && !adding) {
    // Unread channel messages are always in subscribed channels: skip the others.
    const skipped = await messagesInUnsubscribedChannels(trx, realm.id, user.id, ids.filter(isStorableId));
    const skippedIds = new Set(skipped.map((s) => s.id));
    // Name only channels of messages the user could read (Zulip names them all, which would
    // tell the channel of any message ID).
    const own = await flagRowsOf(trx, user.id, [...skippedIds]);
    const readable = await readableThroughHistory(trx, realm.id, actor, [...skippedIds].filter((id) => !own.has(id)));
    ignoredChannels = [...new Set(skipped.filter((s) => own.has(s.id) || readable.has(s.id)).map((s) => s.channel_id))].sort((a, b) => a - b);
    ids = ids.filter((id) => !skippedIds.has(id));
  }

  const rows = await flagRowsOf(trx, user.id, ids.filter(isStorableId));
  // A message without a row counts as read and historical, so only some changes need one.
  const needsRow = (DEFAULT_HISTORICAL_FLAGS & bit) !== target;
  const changed = ids.filter((id) => {
    const flags = rows.get(id);
    return (flags ?? DEFAULT_HISTORICAL_FLAGS) & bit ? target === 0 : target !== 0;
  });
  const missing = needsRow ? changed.filter((id) => !rows.has(id)) : [];
  if (missing.length > 0) {
    const readable = await readableThroughHistory(trx, realm.id, actor, missing.filter(isStorableId));
    if (missing.some((id) => !readable.has(id))) throw badRequest("Invalid message(s)");
  }

  const withRow = changed.filter((id) => rows.has(id));
  for (const chunk of inChunks(withRow)) {
    await trx
      .updateTable("user_messages")
      .set({ flags: adding ? sql<number>`flags | ${sql.lit(bit)}` : sql<number>`flags & ${sql.lit(~bit)}` })
      .where("user_id", "=", user.id)
      .where("message_id", "in", chunk)
      .execute();
  }
  // Messages read through channel history get a row (Zulip's "historical" UserMessage).
  const historicalFlags = (DEFAULT_HISTORICAL_FLAGS & ~bit) | target;
  for (const chunk of inChunks(missing)) {
    await trx
      .insertInto("user_messages")
      .values(chunk.map((id) => ({ user_id: user.id, message_id: id, flags: historicalFlags })))
      .execute();
  }

  const event = { type: "update_message_flags", op, operation: op, flag, messages: changed, all: false };
  if (flag === "read" && !adding) {
    addUnreadEvent(pending, realm, user.id, event, await unreadMessageDetails(trx, user.id, changed));
  } else {
    pending.add(realm.id, event, [user.id]);
  }
  return { changed, ...(ignoredChannels ? { ignoredChannels } : {}) };
}

/**
 * The "marked unread" event carries message_details. A topic-less channel
 * message shows as "" only to clients with the empty_topic_name capability;
 * the others get the organization's display name, as in their unread_msgs.
 */
function addUnreadEvent(pending: PendingEvents, realm: Realm, userId: number, event: Record<string, unknown>, details: Record<string, UnreadMessageDetails>): void {
  const hasEmptyTopic = Object.values(details).some((d) => d.type === "stream" && d.topic === "");
  const full = { ...event, type: "update_message_flags", message_details: details };
  if (!hasEmptyTopic) {
    pending.add(realm.id, full, [userId]);
    return;
  }
  const displayName = parseRealmSettings(realm.settings).empty_topic_display_name;
  const renamed: Record<string, UnreadMessageDetails> = {};
  for (const [id, d] of Object.entries(details)) renamed[id] = d.type === "stream" && d.topic === "" ? { ...d, topic: displayName } : d;
  pending.add(realm.id, full, [userId], { name: "empty_topic_name", present: true });
  pending.add(realm.id, { ...full, message_details: renamed }, [userId], { name: "empty_topic_name", present: false });
}

/** The event the mark-as-read shortcuts send (Zulip's ReadMessagesEvent). */
function readEvent(messages: number[], all: boolean) {
  return { type: "update_message_flags", op: "add", operation: "add", flag: "read", messages, all };
}

/**
 * POST /mark_all_as_read: every unread message of the user, in one statement.
 * The event lists no messages and says all: true (clients reload).
 */
export async function markAllAsRead(services: Services, realm: Realm, user: User): Promise<number> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const result = await trx
      .updateTable("user_messages")
      .set({ flags: sql<number>`flags | ${sql.lit(Flag.READ)}` })
      .where("user_id", "=", user.id)
      .where(sql<boolean>`(flags & 1) = 0`)
      .executeTakeFirst();
    pending.add(realm.id, readEvent([], true), [user.id]);
    return Number(result.numUpdatedRows);
  });
}

/**
 * POST /mark_stream_as_read and /mark_topic_as_read (Zulip's
 * do_mark_stream_messages_as_read): the user's unread messages in a channel
 * they may read, or in one of its topics. A topic must hold a message the user
 * received ("No such topic"); the empty topic is named as in any topic
 * parameter. No event when nothing was unread.
 */
export async function markChannelAsRead(services: Services, realm: Realm, user: User, channelId: number, topicName?: string): Promise<number> {
  const emptyTopicName = parseRealmSettings(realm.settings).empty_topic_display_name;
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { channel } = await accessChannel(trx, realm.id, await actorFor(trx, user), channelId, "content");
    const recipient = await trx.selectFrom("recipients").select("id").where("channel_id", "=", channel.id).executeTakeFirst();
    if (!recipient) return 0;
    let topicKey: string | undefined;
    if (topicName !== undefined) {
      const topic = normalizeTopicName(topicName, emptyTopicName);
      topicKey = topic.toLowerCase();
      if (!(await receivedInTopic(trx, user.id, recipient.id, topicKey))) throw badRequest(`No such topic '${topic}'`);
    }
    const messagesOfChannel = trx
      .selectFrom("messages")
      .select("id")
      .where("recipient_id", "=", recipient.id)
      .$if(topicKey !== undefined, (q) => q.where("topic_key", "=", topicKey!));
    const updated = await trx
      .updateTable("user_messages")
      .set({ flags: sql<number>`flags | ${sql.lit(Flag.READ)}` })
      .where("user_id", "=", user.id)
      .where(sql<boolean>`(flags & 1) = 0`)
      .where("message_id", "in", messagesOfChannel)
      .returning("message_id")
      .execute();
    if (updated.length === 0) return 0;
    pending.add(realm.id, readEvent(updated.map((r) => r.message_id).sort((a, b) => a - b), false), [user.id]);
    return updated.length;
  });
}
