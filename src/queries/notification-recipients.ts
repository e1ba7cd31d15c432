// What the notification rules (domain/notifications.ts) need to know about a
// new message's candidates, for mobile push and missed-message emails alike.
import { sql, type Kysely, type RawBuilder } from "kysely";
import { IDLE_AFTER_SECONDS, isIdle } from "../domain/notifications.ts";
import type { Services } from "../services.ts";
import { preparedQuery } from "../storage/compiled.ts";
import type { Storage } from "../storage/database.ts";
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

interface FactsRow {
  id: number;
  settings: string;
  is_bot: boolean;
  is_active: boolean;
  last_active_time: number | string | null;
  is_muted: boolean | null;
  wildcard_mentions_notify: boolean | null;
  email_notifications: boolean | null;
  visibility_policy: number | null;
}

/** The facts' statement; `idCondition` completes `WHERE u.id …` with the IDs as one bound value. */
const factsSql = (a: { channelId: number; topicKey: string }, idCondition: RawBuilder<unknown>) => sql<FactsRow>`
  SELECT u.id, u.settings, u.is_bot, u.is_active, p.last_active_time, s.is_muted, s.wildcard_mentions_notify, s.email_notifications, t.visibility_policy
  FROM users u
  LEFT JOIN user_presence p ON p.user_id = u.id
  LEFT JOIN subscriptions s ON s.user_id = u.id AND s.channel_id = ${a.channelId}
  LEFT JOIN user_topics t ON t.user_id = u.id AND t.channel_id = ${a.channelId} AND t.topic_key = ${a.topicKey}
  WHERE u.id ${idCondition}`;

// Compiled once (a send runs it for every message with candidates); the user IDs travel as one array
// (PostgreSQL) or one JSON text (SQLite), so the text is the same for any number of them.
const factsPostgres = preparedQuery((_db, a: { userIds: number[]; channelId: number; topicKey: string }) => factsSql(a, sql`= ANY(${a.userIds}::integer[])`));
const factsSqlite = preparedQuery((_db, a: { userIds: string; channelId: number; topicKey: string }) => factsSql(a, sql`IN (SELECT value FROM json_each(${a.userIds}))`));

/**
 * Each recipient's settings and presence, and for a channel message their
 * subscription's and topic's settings: one statement.
 */
export async function notificationRecipientFacts(
  storage: Pick<Storage, "dialect">,
  db: Db,
  userIds: readonly number[],
  channel: { channelId: number; topicKey: string } | null,
): Promise<Map<number, NotificationRecipientFacts>> {
  const facts = new Map<number, NotificationRecipientFacts>();
  if (userIds.length === 0) return facts;
  // Direct messages join no subscription or topic: IDs start at 1, so channel 0 matches no row.
  const channelId = channel?.channelId ?? 0;
  const topicKey = channel?.topicKey ?? "";
  const rows =
    storage.dialect === "postgres"
      ? await factsPostgres.execute(db, { userIds: [...userIds], channelId, topicKey })
      : await factsSqlite.execute(db, { userIds: JSON.stringify(userIds), channelId, topicKey });
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
