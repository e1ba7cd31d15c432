// What the notification rules (domain/notifications.ts) need to know about a
// new message's candidates, for mobile push and missed-message emails alike.
import type { Kysely } from "kysely";
import { IDLE_AFTER_SECONDS, isIdle } from "../domain/notifications.ts";
import type { Services } from "../services.ts";
import { inChunks } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database>;

export interface NotificationRecipientFacts {
  settings: string;
  isBot: boolean;
  isActive: boolean;
  /** For channel messages: the subscription's mute and overrides, and the topic's visibility policy. */
  channelMuted: boolean;
  wildcardOverride: boolean | null;
  emailOverride: boolean | null;
  topicPolicy: number | null;
}

/** Each recipient's settings, and for a channel message their subscription's and topic's settings. */
export async function notificationRecipientFacts(
  db: Db,
  userIds: readonly number[],
  channel: { channelId: number; topicKey: string } | null,
): Promise<Map<number, NotificationRecipientFacts>> {
  const facts = new Map<number, NotificationRecipientFacts>();
  if (userIds.length === 0) return facts;
  const users = await db.selectFrom("users").select(["id", "settings", "is_bot", "is_active"]).where("id", "in", userIds).execute();
  for (const u of users) {
    facts.set(u.id, { settings: u.settings, isBot: u.is_bot, isActive: u.is_active, channelMuted: false, wildcardOverride: null, emailOverride: null, topicPolicy: null });
  }
  if (channel) {
    const subs = await db
      .selectFrom("subscriptions")
      .select(["user_id", "is_muted", "wildcard_mentions_notify", "email_notifications"])
      .where("channel_id", "=", channel.channelId)
      .where("user_id", "in", userIds)
      .execute();
    for (const s of subs) {
      const f = facts.get(s.user_id);
      if (f) Object.assign(f, { channelMuted: s.is_muted, wildcardOverride: s.wildcard_mentions_notify, emailOverride: s.email_notifications });
    }
    const topics = await db
      .selectFrom("user_topics")
      .select(["user_id", "visibility_policy"])
      .where("channel_id", "=", channel.channelId)
      .where("topic_key", "=", channel.topicKey)
      .where("user_id", "in", userIds)
      .execute();
    for (const t of topics) {
      const f = facts.get(t.user_id);
      if (f) f.topicPolicy = t.visibility_policy;
    }
  }
  return facts;
}

/**
 * Which of `userIds` are idle as Zulip decides (domain/notifications.ts
 * isIdle): no client polled for events recently, in any process, or no
 * active presence recently.
 */
export async function idleUsers(services: Pick<Services, "queues" | "now">, db: Db, userIds: readonly number[]): Promise<Set<number>> {
  const idle = new Set<number>();
  if (userIds.length === 0) return idle;
  const active = new Map<number, number | null>();
  for (const chunk of inChunks([...userIds])) {
    const rows = await db.selectFrom("user_presence").select(["user_id", "last_active_time"]).where("user_id", "in", chunk).execute();
    for (const r of rows) active.set(r.user_id, r.last_active_time === null ? null : Number(r.last_active_time));
  }
  const now = services.now();
  for (const id of userIds) {
    const polled = await services.queues.recentlyPolled(id, IDLE_AFTER_SECONDS * 1000);
    if (isIdle(polled, active.get(id) ?? null, now)) idle.add(id);
  }
  return idle;
}
