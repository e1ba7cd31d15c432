// POST /typing: tells a conversation's other participants that someone is
// composing. The server keeps no typing state; it only fans the event out.
import { checkCanPost, hasContentAccess } from "../domain/channels.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import { channelFacts, getChannel, subscriptionRows } from "../queries/channels.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";

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
  const receivesTyping = (u: Pick<User, "is_active" | "settings">) => u.is_active && parseUserSettings(u.settings).receives_typing_notifications;

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
  const actor = await actorFor(db, sender);
  const subscribed = (await subscriptionRows(db, [sender.id], [channel.id]))[0]?.active === true;
  // Zulip's access_stream_by_id_for_message: channels one cannot read look unknown, whatever else holds.
  if (channel.is_archived || !hasContentAccess(actor, channelFacts(channel), subscribed)) throw badRequest("Invalid channel ID");
  // A bot may post where its owner may.
  const ownerRow = sender.is_bot && sender.bot_owner_id !== null ? await db.selectFrom("users").select(["id", "role"]).where("id", "=", sender.bot_owner_id).executeTakeFirst() : undefined;
  const owner = ownerRow ? await actorFor(db, ownerRow) : undefined;
  checkCanPost(actor, { ...channelFacts(channel), name: channel.name }, subscribed, owner);

  const subscribers = await db
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select(["users.id", "users.is_active", "users.settings"])
    .where("subscriptions.channel_id", "=", channel.id)
    .where("subscriptions.active", "=", true)
    .where("users.is_active", "=", true)
    .execute();
  if (subscribers.length > MAX_CHANNEL_SIZE_FOR_TYPING) return;
  const emptyTopicName = parseRealmSettings(realm.settings).empty_topic_display_name;
  const topic = normalizeTopic(target.topic, emptyTopicName);
  const userIds = subscribers.filter(receivesTyping).map((u) => u.id);
  const event = { type: "typing", op, message_type: "stream", sender: person(sender), stream_id: channel.id, topic };
  if (topic !== "") {
    services.notifier.notify(realm.id, event, userIds);
    return;
  }
  // Clients that do not know the empty topic see it under the organization's display name.
  services.notifier.notify(realm.id, event, userIds, { name: "empty_topic_name", present: true });
  services.notifier.notify(realm.id, { ...event, topic: emptyTopicName }, userIds, { name: "empty_topic_name", present: false });
}
