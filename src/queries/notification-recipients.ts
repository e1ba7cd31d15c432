// What the notification rules (domain/notifications.ts) need to know about a
// new message's candidates, for mobile push and missed-message emails alike.
import { sql, type Kysely, type RawBuilder } from "kysely";
import { VisibilityPolicy } from "../domain/messages.ts";
import { IDLE_AFTER_SECONDS, isIdle } from "../domain/notifications.ts";
import type { Services } from "../services.ts";
import { idsFromArray, idsFromJson, preparedQuery } from "../storage/compiled.ts";
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
  /** Hears of every message of the topic beyond mentions: follows it, or has the channel's email notifications on. */
  listening: boolean;
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
  listening: boolean | number | null;
}

type ChannelTopic = { channelId: number; topicKey: string };

// Literals in the conditions, so both databases use the partial indexes of migration 0028.
const FOLLOWED = sql.lit(VisibilityPolicy.FOLLOWED);

/** The facts' statement; `idCondition` completes `WHERE u.id …`. */
const factsSql = (a: ChannelTopic, idCondition: RawBuilder<unknown>) => sql<FactsRow>`
  SELECT u.id, u.settings, u.is_bot, u.is_active, p.last_active_time, s.is_muted, s.wildcard_mentions_notify, s.email_notifications, t.visibility_policy,
    (t.visibility_policy = ${FOLLOWED} OR (s.email_notifications = TRUE AND s.active = TRUE)) AS listening
  FROM users u
  LEFT JOIN user_presence p ON p.user_id = u.id
  LEFT JOIN subscriptions s ON s.user_id = u.id AND s.channel_id = ${a.channelId}
  LEFT JOIN user_topics t ON t.user_id = u.id AND t.channel_id = ${a.channelId} AND t.topic_key = ${a.topicKey}
  WHERE u.id ${idCondition}`;

/**
 * The topic's listeners, found on two small partial indexes: its followers, and subscribers with the
 * channel's email_notifications on. (Subscribers who inherit a global enable_stream_email_notifications
 * are not found here: that would read every subscriber's settings on every send.)
 */
const listenerIds = (a: ChannelTopic) => sql`
  SELECT user_id FROM user_topics WHERE channel_id = ${a.channelId} AND topic_key = ${a.topicKey} AND visibility_policy = ${FOLLOWED}
  UNION
  SELECT user_id FROM subscriptions WHERE channel_id = ${a.channelId} AND email_notifications = TRUE AND active = TRUE`;

// Compiled once (a send runs one for every message); the user IDs travel as one array (PostgreSQL) or
// one JSON text (SQLite), so the text is the same for any number of them.
// Named (planned once per connection) up to 100 people; past that a generic plan probes four indexes per
// person where a plan for the values joins by hash (3 times faster for 20,000: bench/RESULTS.md).
const FACTS_NAMED = { namedUpToArrayLength: 100 };
const factsPostgres = preparedQuery((_db, a: ChannelTopic & { userIds: number[] }) => factsSql(a, sql`IN (${idsFromArray(a.userIds)})`), FACTS_NAMED);
const factsSqlite = preparedQuery((_db, a: ChannelTopic & { userIds: string }) => factsSql(a, sql`IN (${idsFromJson(a.userIds)})`));
const factsAndListenersPostgres = preparedQuery((_db, a: ChannelTopic & { userIds: number[] }) => factsSql(a, sql`IN (${idsFromArray(a.userIds)} UNION ${listenerIds(a)})`), FACTS_NAMED);
const factsAndListenersSqlite = preparedQuery((_db, a: ChannelTopic & { userIds: string }) => factsSql(a, sql`IN (${idsFromJson(a.userIds)} UNION ${listenerIds(a)})`));

/**
 * Each of `userIds`' settings and presence, and for a channel message their
 * subscription's and topic's settings: one statement. With `withListeners`,
 * the topic's listeners' too (they may be owed an email for any message), in
 * the same statement: a send reads them while the organization's lock is held.
 */
export async function notificationRecipientFacts(
  storage: Pick<Storage, "dialect">,
  db: Db,
  userIds: readonly number[],
  channel: ChannelTopic | null,
  options: { withListeners?: boolean } = {},
): Promise<Map<number, NotificationRecipientFacts>> {
  const facts = new Map<number, NotificationRecipientFacts>();
  const withListeners = channel !== null && options.withListeners === true;
  if (userIds.length === 0 && !withListeners) return facts;
  // Direct messages join no subscription or topic: IDs start at 1, so channel 0 matches no row.
  const topic = { channelId: channel?.channelId ?? 0, topicKey: channel?.topicKey ?? "" };
  const rows =
    storage.dialect === "postgres"
      ? await (withListeners ? factsAndListenersPostgres : factsPostgres).execute(db, { ...topic, userIds: [...userIds] })
      : await (withListeners ? factsAndListenersSqlite : factsSqlite).execute(db, { ...topic, userIds: JSON.stringify(userIds) });
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
      listening: Boolean(r.listening),
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
