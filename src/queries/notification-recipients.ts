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
  /** The presence row's last active time (UNIX seconds), null without one. */
  lastActiveTime: number | null;
  /** For channel messages: the subscription's mute and overrides, and the topic's visibility policy. */
  channelMuted: boolean;
  wildcardOverride: boolean | null;
  emailOverride: boolean | null;
  topicPolicy: number | null;
}

/**
 * Each recipient's settings and presence, and for a channel message their
 * subscription's and topic's settings: one statement (a send runs it in its
 * own transaction for missed-message emails).
 */
export async function notificationRecipientFacts(
  db: Db,
  userIds: readonly number[],
  channel: { channelId: number; topicKey: string } | null,
): Promise<Map<number, NotificationRecipientFacts>> {
  const facts = new Map<number, NotificationRecipientFacts>();
  // Direct messages join no subscription or topic: IDs start at 1, so channel 0 matches no row.
  const channelId = channel?.channelId ?? 0;
  const topicKey = channel?.topicKey ?? "";
  for (const chunk of inChunks([...userIds])) {
    const rows = await db
      .selectFrom("users as u")
      .leftJoin("user_presence as p", "p.user_id", "u.id")
      .leftJoin("subscriptions as s", (j) => j.onRef("s.user_id", "=", "u.id").on("s.channel_id", "=", channelId))
      .leftJoin("user_topics as t", (j) => j.onRef("t.user_id", "=", "u.id").on("t.channel_id", "=", channelId).on("t.topic_key", "=", topicKey))
      .select(["u.id", "u.settings", "u.is_bot", "u.is_active", "p.last_active_time", "s.is_muted", "s.wildcard_mentions_notify", "s.email_notifications", "t.visibility_policy"])
      .where("u.id", "in", chunk)
      .execute();
    for (const r of rows) {
      facts.set(r.id, {
        settings: r.settings,
        isBot: r.is_bot,
        isActive: r.is_active,
        lastActiveTime: r.last_active_time === null ? null : Number(r.last_active_time),
        channelMuted: r.is_muted ?? false,
        wildcardOverride: r.wildcard_mentions_notify,
        emailOverride: r.email_notifications,
        topicPolicy: r.visibility_policy,
      });
    }
  }
  return facts;
}

/**
 * Which of `facts`' users are idle as Zulip decides (domain/notifications.ts
 * isIdle): no client polled for events recently, in any process, or no
 * active presence recently.
 */
export async function idleAmong(services: Pick<Services, "queues" | "now">, facts: ReadonlyMap<number, NotificationRecipientFacts>): Promise<Set<number>> {
  const idle = new Set<number>();
  const now = services.now();
  for (const [id, f] of facts) {
    const polled = await services.queues.recentlyPolled(id, IDLE_AFTER_SECONDS * 1000);
    if (isIdle(polled, f.lastActiveTime, now)) idle.add(id);
  }
  return idle;
}
