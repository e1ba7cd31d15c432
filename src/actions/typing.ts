// POST /typing: tells a conversation's other participants that someone is
// composing; POST /messages/{message_id}/typing, that someone is editing a
// message. The server keeps no typing state; it only fans the events out.
import { checkCanPost, hasContentAccess } from "../domain/channels.ts";
import { checkCanEditContent } from "../domain/message-edit.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import type { Kysely } from "kysely";
import type { ClientEvent } from "../events/notifier.ts";
import { channelFacts, getChannel, subscriptionRows } from "../queries/channels.ts";
import { readableMessage } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Database, Realm, User } from "../storage/schema.ts";
import { cachedActorFor } from "./actor.ts";

/** Zulip's MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS: larger channels get no typing events. */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

export type TypingOp = "start" | "stop";

export type TypingTarget = { kind: "direct"; to: number[] | undefined } | { kind: "channel"; channelId: number | undefined; topic: string | undefined };

/** The two names clients may use for the empty topic. */
function normalizeTopic(topic: string, emptyTopicName: string): string {
  const trimmed = topic.trim();
  return trimmed === "(no topic)" || trimmed === emptyTopicName ? "" : trimmed;
}

export async function sendTypingNotification(services: Services, realm: Realm, sender: User, op: TypingOp, target: TypingTarget): Promise<void> {
  const db = services.storage.db;
  const senderSettings = parseUserSettings(sender.settings);
  const person = (u: Pick<User, "id" | "email">) => ({ user_id: u.id, email: u.email });

  if (target.kind === "direct") {
    if (target.to === undefined) throw badRequest("Missing 'to' argument");
    if (target.to.length === 0) throw badRequest("Empty 'to' list");
    if (!senderSettings.send_private_typing_notifications) throw badRequest("User has disabled typing notifications for direct messages");
    const ids = target.to.includes(sender.id) ? [...target.to] : [...target.to, sender.id];
    const byId = new Map<number, Pick<User, "id" | "email" | "is_active" | "settings">>();
    for (const chunk of inChunks([...new Set(ids)].filter(isStorableId))) {
      const rows = await db.selectFrom("users").select(["id", "email", "is_active", "settings"]).where("realm_id", "=", realm.id).where("id", "in", chunk).execute();
      for (const row of rows) byId.set(row.id, row);
    }
    const recipients = ids.map((id) => {
      const user = byId.get(id);
      // Deactivated users are valid recipients; they just hear nothing.
      if (!user) throw badRequest(`Invalid user ID ${id}`);
      return user;
    });
    const event = { type: "typing", op, message_type: "direct", sender: person(sender), recipients: recipients.map(person) };
    services.notifier.notify(realm.id, event, [...new Set(recipients)].filter(receivesTyping).map((u) => u.id));
    return;
  }

  if (target.channelId === undefined) throw badRequest("Missing 'stream_id' argument");
  if (target.topic === undefined) throw badRequest("Missing topic");
  if (!senderSettings.send_stream_typing_notifications) throw badRequest("User has disabled typing notifications for channel messages");
  const channel = isStorableId(target.channelId) ? await getChannel(db, realm.id, target.channelId) : undefined;
  if (!channel) throw badRequest("Invalid channel ID");
  const actor = await cachedActorFor(services.storage, sender);
  const subscribed = (await subscriptionRows(db, [sender.id], [channel.id]))[0]?.active === true;
  // Zulip's access_stream_by_id_for_message: channels one cannot read look unknown, whatever else holds.
  if (channel.is_archived || !hasContentAccess(actor, channelFacts(channel), subscribed)) throw badRequest("Invalid channel ID");
  // A bot may post where its owner may.
  const ownerRow = sender.is_bot && sender.bot_owner_id !== null ? await db.selectFrom("users").select(["id", "role"]).where("id", "=", sender.bot_owner_id).executeTakeFirst() : undefined;
  const owner = ownerRow ? await cachedActorFor(services.storage, ownerRow) : undefined;
  checkCanPost(actor, { ...channelFacts(channel), name: channel.name }, subscribed, owner);

  const userIds = await channelTypingAudience(db, channel.id);
  if (userIds === null) return;
  const emptyTopicName = parseRealmSettings(realm.settings).empty_topic_display_name;
  const topic = normalizeTopic(target.topic, emptyTopicName);
  const event = { type: "typing", op, message_type: "stream", sender: person(sender), stream_id: channel.id, topic };
  notifyWithTopic(services, realm.id, event, (t) => ({ ...event, topic: t }), topic, emptyTopicName, userIds);
}

/**
 * POST /messages/{message_id}/typing (Zulip's
 * send_message_edit_notification_backend): the editor must be able to edit
 * the message's content right now (validate_user_can_edit_message with no
 * grace). A `typing_edit_message` event goes to the channel's subscribers
 * (none past 100, as for typing) or to the direct-message participants, in
 * each case those active and receiving typing notifications.
 */
export async function sendMessageEditTyping(services: Services, realm: Realm, editor: User, messageId: number, op: TypingOp): Promise<void> {
  const db = services.storage.db;
  const found = await readableMessage(db, realm.id, await cachedActorFor(services.storage, editor), messageId);
  if (!found) throw badRequest("Invalid message(s)");
  const message = found.row;
  const channel = message.channel_id === null ? undefined : await getChannel(db, realm.id, message.channel_id);
  // access_message(is_modifying_message=True): messages of archived channels cannot change.
  if (channel?.is_archived) throw badRequest("Invalid message(s)");
  const settings = parseRealmSettings(realm.settings);
  checkCanEditContent(settings, message, editor.id, services.now(), 0);
  const editorSettings = parseUserSettings(editor.settings);

  if (channel) {
    if (!editorSettings.send_stream_typing_notifications) throw badRequest("User has disabled typing notifications for channel messages");
    const userIds = await channelTypingAudience(db, channel.id);
    if (userIds === null) return;
    const event = (topic: string) => ({ type: "typing_edit_message", op, sender_id: editor.id, message_id: message.id, recipient: { type: "channel", channel_id: channel.id, topic } });
    notifyWithTopic(services, realm.id, event(message.topic), event, message.topic, settings.empty_topic_display_name, userIds);
    return;
  }

  if (!editorSettings.send_private_typing_notifications) throw badRequest("User has disabled typing notifications for direct messages");
  const recipient = await db.selectFrom("recipients").select("dm_key").where("id", "=", message.recipient_id).executeTakeFirstOrThrow();
  const participantIds = (recipient.dm_key ?? "").split(",").filter((id) => id !== "").map(Number);
  const participants = participantIds.length === 0 ? [] : await db.selectFrom("users").select(["id", "is_active", "settings"]).where("id", "in", participantIds).orderBy("id").execute();
  const userIds = participants.filter(receivesTyping).map((u) => u.id);
  const event = { type: "typing_edit_message", op, sender_id: editor.id, message_id: message.id, recipient: { type: "direct", user_ids: userIds } };
  services.notifier.notify(realm.id, event, userIds);
}

function receivesTyping(u: Pick<User, "is_active" | "settings">): boolean {
  return u.is_active && parseUserSettings(u.settings).receives_typing_notifications;
}

/**
 * Who hears of typing in a channel: its active subscribers who receive
 * typing notifications; null for channels past Zulip's size limit (counted
 * before that setting is applied), where nobody does.
 */
async function channelTypingAudience(db: Kysely<Database>, channelId: number): Promise<number[] | null> {
  const subscribers = await db
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select(["users.id", "users.is_active", "users.settings"])
    .where("subscriptions.channel_id", "=", channelId)
    .where("subscriptions.active", "=", true)
    .where("users.is_active", "=", true)
    .execute();
  if (subscribers.length > MAX_CHANNEL_SIZE_FOR_TYPING) return null;
  return subscribers.filter(receivesTyping).map((u) => u.id);
}

/** Clients that do not know the empty topic get it under the organization's display name. */
function notifyWithTopic(
  services: Services,
  realmId: number,
  event: ClientEvent,
  withTopic: (topic: string) => ClientEvent,
  topic: string,
  emptyTopicName: string,
  userIds: number[],
): void {
  if (topic !== "") {
    services.notifier.notify(realmId, event, userIds);
    return;
  }
  services.notifier.notify(realmId, event, userIds, { name: "empty_topic_name", present: true });
  services.notifier.notify(realmId, withTopic(emptyTopicName), userIds, { name: "empty_topic_name", present: false });
}
