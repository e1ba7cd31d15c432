// Deleting messages (DELETE /messages/{message_id}, and POST
// /streams/{stream_id}/delete_topic in batches; retention and deactivation
// may reuse it), as Zulip's do_delete_messages:
// one transaction under the organization's lock checks each message, then per
// conversation (a direct-message conversation, or a channel topic) finds who
// hears of it, removes the messages with their flag rows, reactions, submessages and
// attachment links, moves the channel's first_message_id on, and queues the
// `delete_message` events. Uploads only these messages linked are removed
// with them (Zulip: "automatically deleted once the last message containing a
// link to them is deleted").
//
// Parley deletes for good; Zulip moves the rows to archive tables an
// administrator can restore from for 30 days. Nothing in the API reads the
// archive, so clients see the same thing.
import { sql } from "kysely";
import { hasContentAccess } from "../domain/channels.ts";
import type { Actor } from "../domain/group-settings.ts";
import { checkCanDeleteMessage } from "../domain/message-delete.ts";
import { normalizeTopicName, VisibilityPolicy } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { ApiError, badRequest } from "../errors.ts";
import type { CapabilityConditions, ClientEvent, PendingEvents } from "../events/notifier.ts";
import { channelFacts, getChannel } from "../queries/channels.ts";
import { messageAudience } from "../queries/message-audience.ts";
import { readableMessage, visibleTopicMessages } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Channel, Message, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { setVisibilityPolicy } from "./user-topics.ts";

export interface DeleteMessagesOptions {
  /**
   * "check" (the default, DELETE /messages/{id}): every message must be one
   * the actor can read ("Invalid message(s)" otherwise, also for archived
   * channels) and may delete (domain/message-delete.ts). "caller-checked":
   * the caller has decided already (delete a topic, retention, a deactivated
   * user's messages); IDs that no longer exist are skipped, and if none is
   * left the answer is "Message already deleted".
   */
  permission?: "check" | "caller-checked";
}

/** The messages of one conversation, deleted and announced together (Zulip groups them the same way). */
interface Conversation {
  channel: Channel | null;
  /** Lowercased topic for channel messages: Zulip groups, and names the topic in the event, this way. */
  topicKey: string;
  recipientId: number;
  ids: number[];
}

type MessageRow = Pick<Message, "id" | "sender_id" | "recipient_id" | "channel_id" | "topic_key" | "date_sent">;

const alreadyDeleted = () => badRequest("Message already deleted");

/**
 * Deletes `messageIds` in one transaction and tells clients. `actor` is the
 * user deleting them (null for the server itself, with "caller-checked"); it
 * hears of the deletion even when not otherwise in the audience, provided it
 * could read the messages.
 */
export async function deleteMessages(
  services: Services,
  realm: Realm,
  actor: User | null,
  messageIds: readonly number[],
  options: DeleteMessagesOptions = {},
): Promise<void> {
  const check = (options.permission ?? "check") === "check";
  if (check && actor === null) throw new Error("deleteMessages: permission checks need an acting user");
  const ids = [...new Set(messageIds)];
  if (ids.length === 0) return;
  const orphanedFiles = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    // Read under the lock: a PATCH /realm that committed before us counts.
    const realmRow = await trx.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
    const settings = parseRealmSettings(realmRow.settings);
    const channels = new Map<number, Channel>();
    const channelOf = async (channelId: number): Promise<Channel> => {
      let channel = channels.get(channelId);
      if (!channel) channels.set(channelId, (channel = await trx.selectFrom("channels").selectAll().where("id", "=", channelId).executeTakeFirstOrThrow()));
      return channel;
    };

    const actorInfo = actor ? await actorFor(trx, actor) : null;
    let rows: MessageRow[];
    if (check) {
      rows = [];
      const now = services.now();
      for (const id of ids) {
        const found = await readableMessage(trx, realm.id, actorInfo!, id);
        if (!found) throw badRequest("Invalid message(s)");
        const row = found.row;
        const channel = row.channel_id === null ? null : await channelOf(row.channel_id);
        // Zulip's access_message(is_modifying_message=True): archived channels' messages cannot change.
        if (channel?.is_archived) throw badRequest("Invalid message(s)");
        let ownMessage = row.sender_id === actor!.id;
        if (!ownMessage) {
          const sender = await trx.selectFrom("users").select("bot_owner_id").where("id", "=", row.sender_id).executeTakeFirst();
          ownMessage = sender?.bot_owner_id === actor!.id;
        }
        checkCanDeleteMessage({
          actor: actorInfo!,
          ownMessage,
          realm: settings,
          channel: channel ? channelFacts(channel) : null,
          ageSeconds: now - row.date_sent,
        });
        rows.push(row);
      }
    } else {
      const storable = ids.filter(isStorableId);
      rows =
        storable.length === 0
          ? []
          : await trx
              .selectFrom("messages")
              .select(["id", "sender_id", "recipient_id", "channel_id", "topic_key", "date_sent"])
              .where("realm_id", "=", realm.id)
              .where("id", "in", storable)
              .execute();
      if (rows.length === 0) throw alreadyDeleted();
    }

    const conversations = new Map<string, Conversation>();
    for (const row of rows) {
      const key = row.channel_id === null ? `dm:${row.recipient_id}` : `channel:${row.recipient_id}:${row.topic_key}`;
      let conversation = conversations.get(key);
      if (!conversation) {
        const channel = row.channel_id === null ? null : await channelOf(row.channel_id);
        conversations.set(key, (conversation = { channel, topicKey: channel ? row.topic_key : "", recipientId: row.recipient_id, ids: [] }));
      }
      conversation.ids.push(row.id);
    }
    // Zulip's order: direct-message conversations by recipient, then channel topics by (recipient, topic).
    const ordered = [...conversations.values()].sort(
      (a, b) => Number(a.channel !== null) - Number(b.channel !== null) || a.recipientId - b.recipientId || (a.topicKey < b.topicKey ? -1 : a.topicKey > b.topicKey ? 1 : 0),
    );

    const linkedAttachments = new Set<number>();
    for (const conversation of ordered) {
      const messageIdsSorted = [...conversation.ids].sort((a, b) => a - b);
      const { channel } = conversation;
      // Who hears of it is decided before the flag rows it depends on go.
      const audience = new Set(await messageAudience(trx, messageIdsSorted, channel));
      if (actor && actorInfo && (check || (await canReadAny(trx, actorInfo, channel, messageIdsSorted)))) audience.add(actor.id);
      const userIds = [...audience].sort((a, b) => a - b);

      for (const link of await trx.selectFrom("attachment_messages").select("attachment_id").where("message_id", "in", messageIdsSorted).execute()) {
        linkedAttachments.add(link.attachment_id);
      }
      await trx.deleteFrom("user_messages").where("message_id", "in", messageIdsSorted).execute();
      await trx.deleteFrom("reactions").where("message_id", "in", messageIdsSorted).execute();
      await trx.deleteFrom("submessages").where("message_id", "in", messageIdsSorted).execute();
      await trx.deleteFrom("attachment_messages").where("message_id", "in", messageIdsSorted).execute();
      // Full-text rows go with the message: an SQLite trigger, a generated column on PostgreSQL.
      const deleted = await trx.deleteFrom("messages").where("id", "in", messageIdsSorted).executeTakeFirst();
      if (Number(deleted.numDeletedRows) !== messageIdsSorted.length) throw alreadyDeleted();

      if (channel) await moveFirstMessageId(trx, pending, realm.id, channel.id, messageIdsSorted, userIds);
      queueDeleteEvents(pending, realm.id, settings.empty_topic_display_name, conversation, messageIdsSorted, userIds);
    }

    // Uploads no remaining message links go too. (Zulip also keeps those a scheduled message still links; Parley has no scheduled messages yet.)
    if (linkedAttachments.size === 0) return [];
    const orphaned = await trx
      .selectFrom("attachments")
      .select(["id", "path_id"])
      .where("id", "in", [...linkedAttachments])
      .where((eb) => eb.not(eb.exists(eb.selectFrom("attachment_messages").select("attachment_messages.message_id").whereRef("attachment_messages.attachment_id", "=", "attachments.id"))))
      .execute();
    if (orphaned.length > 0) await trx.deleteFrom("attachments").where("id", "in", orphaned.map((a) => a.id)).execute();
    return orphaned.map((a) => a.path_id);
  });
  // The files go after the commit; one left behind by a crash here is unreachable (no row names it) and harmless.
  for (const pathId of orphanedFiles) {
    await services.files.delete(pathId).catch(() => {});
  }
}

/**
 * For callers that checked permission themselves: could the actor read at
 * least one of the messages (so their client may be showing it)? Zulip sends
 * the acting user the event only then.
 */
async function canReadAny(trx: Trx, actor: Actor, channel: Channel | null, messageIds: readonly number[]): Promise<boolean> {
  const received = async () =>
    (await trx.selectFrom("user_messages").select("message_id").where("user_id", "=", actor.id).where("message_id", "in", messageIds).limit(1).executeTakeFirst()) !== undefined;
  if (!channel) return received();
  const subscription = await trx.selectFrom("subscriptions").select("active").where("user_id", "=", actor.id).where("channel_id", "=", channel.id).executeTakeFirst();
  if (!hasContentAccess(actor, channelFacts(channel), subscription?.active === true)) return false;
  return channel.history_public_to_subscribers || received();
}

/**
 * Zulip's check_update_first_message_id: when the channel's first message is
 * among those deleted, the oldest remaining one takes its place (null when
 * none is left), and the conversation's audience gets a `stream` update.
 */
async function moveFirstMessageId(trx: Trx, pending: PendingEvents, realmId: number, channelId: number, deletedIds: readonly number[], userIds: readonly number[]): Promise<void> {
  const channel = await trx.selectFrom("channels").select(["id", "name", "first_message_id"]).where("id", "=", channelId).executeTakeFirstOrThrow();
  if (channel.first_message_id === null || !deletedIds.includes(channel.first_message_id)) return;
  const oldest = await trx
    .selectFrom("messages")
    .select(sql<number | null>`min(id)`.as("id"))
    .where("channel_id", "=", channelId)
    .executeTakeFirst();
  const value = oldest?.id === null || oldest?.id === undefined ? null : Number(oldest.id);
  await trx.updateTable("channels").set({ first_message_id: value }).where("id", "=", channelId).execute();
  pending.add(realmId, { type: "stream", op: "update", property: "first_message_id", value, stream_id: channel.id, name: channel.name }, userIds);
}

/**
 * The `delete_message` events of one conversation, in each client's form:
 * with the bulk_message_deletion capability one event listing every ID,
 * without it one event per message with `message_id`; the empty topic under
 * the organization's display name for clients without empty_topic_name
 * (Zulip's process_deletion_event).
 */
function queueDeleteEvents(
  pending: PendingEvents,
  realmId: number,
  emptyTopicName: string,
  conversation: Conversation,
  messageIds: readonly number[],
  userIds: readonly number[],
): void {
  const send = (topic: string, condition: (bulk: boolean) => CapabilityConditions) => {
    const where = conversation.channel ? { stream_id: conversation.channel.id, topic } : {};
    const messageType = conversation.channel ? "stream" : "private";
    const bulk: ClientEvent = { type: "delete_message", message_ids: [...messageIds], ...where, message_type: messageType };
    pending.add(realmId, bulk, userIds, condition(true));
    for (const id of messageIds) {
      pending.add(realmId, { type: "delete_message", ...where, message_type: messageType, message_id: id }, userIds, condition(false));
    }
  };
  const bulkDeletion = (present: boolean) => ({ name: "bulk_message_deletion" as const, present });
  if (conversation.channel === null || conversation.topicKey !== "") {
    send(conversation.topicKey, bulkDeletion);
    return;
  }
  send("", (bulk) => [bulkDeletion(bulk), { name: "empty_topic_name", present: true }]);
  send(emptyTopicName, (bulk) => [bulkDeletion(bulk), { name: "empty_topic_name", present: false }]);
}

/** Zulip's retention STREAM_MESSAGE_BATCH_SIZE: the messages one transaction of delete_topic deletes. */
export const DELETE_TOPIC_BATCH_SIZE = 100;
/** After this many seconds delete_topic stops between batches and answers complete: false. */
export const DELETE_TOPIC_TIME_LIMIT_SECONDS = 50;

/**
 * POST /streams/{stream_id}/delete_topic (Zulip's delete_in_topic; the route
 * is for administrators): deletes the topic's messages the administrator
 * can read, newest first, in batches of DELETE_TOPIC_BATCH_SIZE, each its
 * own transaction with deleteMessages' events, so a long topic makes
 * progress even if the request is cut short. Past the time limit it stops
 * and reports `complete: false`; the client repeats the request. Once the
 * topic is gone, the visibility policies set on it are cleared (in a
 * protected-history channel, only for those who no longer receive any of
 * its messages), with their user_topic events.
 */
export async function deleteTopic(services: Services, realm: Realm, admin: User, channelId: number, topicName: string): Promise<{ complete: boolean }> {
  const db = services.storage.db;
  const actor = await actorFor(db, admin);
  const channel = await getChannel(db, realm.id, channelId);
  if (!channel || channel.is_archived) throw badRequest("Invalid channel ID");
  const subscription = await db.selectFrom("subscriptions").select("active").where("user_id", "=", admin.id).where("channel_id", "=", channel.id).executeTakeFirst();
  if (!hasContentAccess(actor, channelFacts(channel), subscription?.active === true)) throw badRequest("Invalid channel ID");
  const topicKey = normalizeTopicName(topicName, parseRealmSettings(realm.settings).empty_topic_display_name).toLowerCase();

  const startedAt = services.now();
  for (;;) {
    if (services.now() >= startedAt + DELETE_TOPIC_TIME_LIMIT_SECONDS) return { complete: false };
    const batch = await (await visibleTopicMessages(db, actor, channel, topicKey)).select("m.id").orderBy("m.id", "desc").limit(DELETE_TOPIC_BATCH_SIZE).execute();
    if (batch.length === 0) break;
    try {
      await deleteMessages(services, realm, admin, batch.map((r) => r.id), { permission: "caller-checked" });
    } catch (error) {
      // Someone else deleted them first: look again.
      if (!(error instanceof ApiError && error.message === "Message already deleted")) throw error;
    }
  }

  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    let holders = await trx.selectFrom("user_topics").select("user_id").where("channel_id", "=", channel.id).where("topic_key", "=", topicKey).execute();
    if (!channel.history_public_to_subscribers && holders.length > 0) {
      const stillReceiving = await trx
        .selectFrom("user_messages as um")
        .innerJoin("messages as m", "m.id", "um.message_id")
        .select("um.user_id")
        .distinct()
        .where("m.channel_id", "=", channel.id)
        .where("m.topic_key", "=", topicKey)
        .where("um.user_id", "in", holders.map((h) => h.user_id))
        .execute();
      const keep = new Set(stillReceiving.map((r) => r.user_id));
      holders = holders.filter((h) => !keep.has(h.user_id));
    }
    const now = services.now();
    for (const { user_id } of holders) await setVisibilityPolicy(trx, pending, realm.id, user_id, channel.id, topicKey, VisibilityPolicy.INHERIT, now);
  });
  return { complete: true };
}
