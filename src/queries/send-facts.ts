// What a send reads about its sender and recipients besides the conversation
// itself, in one statement: each round trip to PostgreSQL costs the process
// and the database a socket write and a wake-up (bench/RESULTS.md), and these
// four small look-ups were four of them on every message.
import { sql, type Kysely, type RawBuilder } from "kysely";
import { VisibilityPolicy } from "../domain/messages.ts";
import { idsFromArray, idsFromJson, preparedQuery } from "../storage/compiled.ts";
import type { Storage } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database>;

export interface SendFacts {
  /** The recipients' alert words (has_alert_word). */
  alertWords: Map<number, string[]>;
  /** Who muted the sender, deactivated users included (Zulip's get_muting_users). */
  mutedBy: Set<number>;
  /** Whether the sender muted the channel (their subscription, active or not). */
  senderChannelMuted: boolean;
  /** The sender's own visibility policy for the topic. */
  senderTopicPolicy: number;
}

interface Row {
  kind: number;
  user_id: number | null;
  word: string | null;
  value: number | null;
}

// The `kind` of each branch below, in its order.
const ALERT_WORD = 1;
const MUTED_BY = 2;
const CHANNEL_MUTED = 3;
const TOPIC_POLICY = 4;

type Args = { senderId: number; channelId: number; topicKey: string };

// One row per fact, told apart by `kind`; each branch is an indexed look-up of its own. (The first
// branch names the columns and, on PostgreSQL, their types: hence the typed NULL.)
const factsSql = (a: Args, recipientIds: RawBuilder<unknown>) => sql<Row>`
  SELECT 1 AS kind, user_id, word, CAST(NULL AS INTEGER) AS value FROM alert_words WHERE user_id IN (${recipientIds})
  UNION ALL
  SELECT 2, user_id, NULL, NULL FROM muted_users WHERE muted_user_id = ${a.senderId}
  UNION ALL
  SELECT 3, NULL, NULL, CASE WHEN is_muted THEN 1 ELSE 0 END FROM subscriptions WHERE user_id = ${a.senderId} AND channel_id = ${a.channelId}
  UNION ALL
  SELECT 4, NULL, NULL, visibility_policy FROM user_topics WHERE user_id = ${a.senderId} AND channel_id = ${a.channelId} AND topic_key = ${a.topicKey}`;

const factsPostgres = preparedQuery((_db, a: Args & { recipientIds: number[] }) => factsSql(a, idsFromArray(a.recipientIds)));
const factsSqlite = preparedQuery((_db, a: Args & { recipientIds: string }) => factsSql(a, idsFromJson(a.recipientIds)));

/**
 * The alert words of `recipientIds`, who muted the sender, and for a channel
 * message the sender's mute of the channel and policy for the topic.
 */
export async function sendFacts(
  storage: Pick<Storage, "dialect">,
  db: Db,
  senderId: number,
  recipientIds: readonly number[],
  channel: { channelId: number; topicKey: string } | null,
): Promise<SendFacts> {
  // Direct messages have no subscription or topic: IDs start at 1, so channel 0 matches no row.
  const args = { senderId, channelId: channel?.channelId ?? 0, topicKey: channel?.topicKey ?? "" };
  const rows =
    storage.dialect === "postgres"
      ? await factsPostgres.execute(db, { ...args, recipientIds: [...recipientIds] })
      : await factsSqlite.execute(db, { ...args, recipientIds: JSON.stringify(recipientIds) });
  const facts: SendFacts = { alertWords: new Map(), mutedBy: new Set(), senderChannelMuted: false, senderTopicPolicy: VisibilityPolicy.INHERIT };
  for (const r of rows) {
    const kind = Number(r.kind);
    if (kind === ALERT_WORD) {
      const words = facts.alertWords.get(r.user_id!);
      if (words) words.push(r.word!);
      else facts.alertWords.set(r.user_id!, [r.word!]);
    } else if (kind === MUTED_BY) facts.mutedBy.add(r.user_id!);
    else if (kind === CHANNEL_MUTED) facts.senderChannelMuted = Number(r.value) === 1;
    else if (kind === TOPIC_POLICY) facts.senderTopicPolicy = Number(r.value);
  }
  return facts;
}
