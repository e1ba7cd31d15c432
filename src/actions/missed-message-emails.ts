// The decision a new message owes missed-message emails (Zulip's Tornado
// decides it on the message event, then queues missedmessage_emails): for
// each candidate who is idle (domain/notifications.ts isIdle) and whose
// settings allow the trigger, a missed_message_emails row, scheduled with the
// user's pending batch or, without one, at now +
// email_notifications_batching_period_seconds, and one queued
// missed_message_email job of theirs for it.
//
// A send decides before it takes the organization's lock (the facts are reads
// Zulip also makes outside its transaction) and writes in its own
// transaction: the rows commit with the message, so a crash loses no email
// and no second transaction or job is paid per send. Rows are unique per
// (user, message), so writing them again inserts nothing. On PostgreSQL the
// writes are common table expressions of the message's own INSERT
// (actions/messages.ts): each round trip while the lock is held lengthens
// every send's wait (bench/RESULTS.md, "What the mention costs").
import { sql, type QueryCreator } from "kysely";
import { VisibilityPolicy } from "../domain/messages.ts";
import { notificationTrigger } from "../domain/notifications.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { MISSED_MESSAGE_EMAIL_JOB, missedMessageEmailJobKey, type MissedMessageCheckJob, type MissedMessageEmailJob } from "../jobs/names.ts";
import { DEFAULT_MAX_ATTEMPTS, enqueueJob, wakeAfterCommit, type EnqueueContext } from "../jobs/queue.ts";
import { idleAmong, notificationRecipientFacts, type NotificationRecipientFacts } from "../queries/notification-recipients.ts";
import type { Services } from "../services.ts";
import { preparedQuery } from "../storage/compiled.ts";
import type { Database } from "../storage/schema.ts";
import type { Trx } from "./transaction.ts";

/** An email a message owes someone. */
export interface OwedEmail {
  userId: number;
  trigger: string;
  /** When a new batch would be due (UNIX ms): now + the user's batching period. */
  defaultAt: number;
}

/** The candidates of a message, and what the check needs of its channel (the check job's fields but the message's). */
export type EmailCheck = Pick<MissedMessageCheckJob, "channel" | "candidates">;

/** Who of `check`'s candidates is owed an email, from their `facts` (which may hold others too). */
export async function missedMessageEmailsOwed(services: Services, check: EmailCheck, facts: ReadonlyMap<number, NotificationRecipientFacts>): Promise<OwedEmail[]> {
  const { channel, candidates } = check;
  const candidateFacts = new Map(Object.keys(candidates).flatMap((id) => (facts.has(Number(id)) ? [[Number(id), facts.get(Number(id))!] as const] : [])));
  const idle = await idleAmong(services, candidateFacts);
  const listeners = new Set(channel?.listeners ?? []);
  const now = services.nowMs();
  const owed: OwedEmail[] = [];
  for (const userId of idle) {
    const f = candidateFacts.get(userId)!;
    if (f.isBot || !f.isActive) continue;
    const settings = parseUserSettings(f.settings);
    const trigger = notificationTrigger({
      flags: candidates[userId] ?? [],
      isDirectMessage: channel === null,
      dmMentionEnabled: settings.enable_offline_email_notifications,
      followedTopicEnabled: settings.enable_followed_topic_email_notifications,
      channelEnabled: f.emailOverride ?? settings.enable_stream_email_notifications,
      channelMuted: f.channelMuted,
      // Following since this very message does not count for it (a check an earlier version queued reads the facts after the follow).
      topicPolicy: f.topicPolicy === VisibilityPolicy.FOLLOWED && !listeners.has(userId) ? null : f.topicPolicy,
      wildcardMentionsNotify: f.wildcardOverride ?? settings.wildcard_mentions_notify,
      followedTopicWildcardMentionsNotify: settings.enable_followed_topic_wildcard_mentions_notify,
      alertWordsAsMentions: true,
    });
    if (trigger !== null) owed.push({ userId, trigger, defaultAt: now + settings.email_notifications_batching_period_seconds * 1000 });
  }
  return owed;
}

/** The owed emails as the PostgreSQL statements' arrays: each row names its message by `owedOrds`, a position in the statement's `ids`. */
export type OwedEmailArrays = {
  owedOrds: number[];
  owedUserIds: number[];
  owedTriggers: string[];
  owedDefaultAts: number[];
  owedJobKeys: string[];
  owedPayloads: string[];
  /** Now (UNIX ms): the jobs' created_at. */
  now: number;
};

/** The emails owed by each message of a statement, `owedBy[k]` by its message at position k + 1; a user's default time is that of the first message owing them. */
export function owedEmailArrays(owedBy: readonly (readonly OwedEmail[])[], now: number): OwedEmailArrays {
  const arrays: OwedEmailArrays = { owedOrds: [], owedUserIds: [], owedTriggers: [], owedDefaultAts: [], owedJobKeys: [], owedPayloads: [], now };
  // A user owed by several of the messages: the first of them starts their batch (unless one is pending), the others join it.
  const batchStart = new Map<number, number>();
  owedBy.forEach((owed, k) => {
    for (const o of owed) {
      if (!batchStart.has(o.userId)) batchStart.set(o.userId, o.defaultAt);
      arrays.owedOrds.push(k + 1);
      arrays.owedUserIds.push(o.userId);
      arrays.owedTriggers.push(o.trigger);
      arrays.owedDefaultAts.push(batchStart.get(o.userId)!);
      arrays.owedJobKeys.push(missedMessageEmailJobKey(o.userId));
      arrays.owedPayloads.push(JSON.stringify({ user_id: o.userId } satisfies MissedMessageEmailJob));
    }
  });
  return arrays;
}

/**
 * PostgreSQL: the common table expressions that write the owed emails of the messages in `ids(ord,
 * id)`, a table expression `qc` already has: each user's pending batch, their rows, and their job
 * unless one is queued, whose lock keeps a runner from claiming it (SKIP LOCKED) until this commits.
 * `email_jobs` holds the IDs of the jobs inserted. (Kysely writes a raw body as it is: hence the
 * parentheses.) Every part sees the snapshot from before the statement, so what a user is owed by
 * several of its messages is decided together: one batch (Zulip's: a message joins the pending
 * batch, the first one starts it) and one job.
 */
export function withOwedEmailWrites<DB extends Database>(qc: QueryCreator<DB>, a: OwedEmailArrays) {
  return qc
    .with(
      "owed(ord, user_id, trigger, default_at, job_key, payload)",
      () =>
        sql`(SELECT o, u, t, d, k, p FROM unnest(${a.owedOrds}::bigint[], ${a.owedUserIds}::integer[], ${a.owedTriggers}::text[], ${a.owedDefaultAts}::bigint[], ${a.owedJobKeys}::text[], ${a.owedPayloads}::text[]) AS x(o, u, t, d, k, p))`,
    )
    .with(
      "batched",
      () =>
        sql`(SELECT o.ord, o.user_id, o.trigger, o.default_at, o.job_key, o.payload, COALESCE((SELECT min(e.scheduled_at) FROM missed_message_emails e WHERE e.user_id = o.user_id), o.default_at) AS scheduled_at FROM owed o)`,
    )
    .with(
      "recorded",
      () =>
        sql`(INSERT INTO missed_message_emails (user_id, message_id, trigger, scheduled_at) SELECT b.user_id, ids.id, b.trigger, b.scheduled_at FROM batched b JOIN ids ON ids.ord = b.ord ON CONFLICT (user_id, message_id) DO NOTHING)`,
    )
    .with("queued", () => sql`(SELECT job_key FROM jobs WHERE job_key = ANY(${a.owedJobKeys}::text[]) AND name = ${MISSED_MESSAGE_EMAIL_JOB} AND status = 'queued' FOR UPDATE)`)
    .with(
      "email_jobs",
      () => sql<{ id: number }>`(
        INSERT INTO jobs (name, payload, job_key, run_at, max_attempts, created_at)
        SELECT DISTINCT ON (job_key) ${MISSED_MESSAGE_EMAIL_JOB}, payload, job_key, scheduled_at, ${DEFAULT_MAX_ATTEMPTS}, ${a.now} FROM batched
        WHERE job_key NOT IN (SELECT job_key FROM queued)
        ORDER BY job_key, ord
        RETURNING id)`,
    );
}

const recordOwedPostgres = preparedQuery((db, a: OwedEmailArrays & { messageId: number }) =>
  withOwedEmailWrites(
    db.with("ids(ord, id)", () => sql`(SELECT 1::bigint, ${a.messageId}::integer)`),
    a,
  )
    .selectFrom("email_jobs")
    .select("id"),
);

// SQLite, compiled once: a send runs them for every idle person it owes an email.
const pendingBatch = preparedQuery((db, a: { userId: number }) =>
  db.selectFrom("missed_message_emails").select("scheduled_at").where("user_id", "=", a.userId).orderBy("scheduled_at").limit(1),
);
const insertOwedEmail = preparedQuery((db, a: { userId: number; messageId: number; trigger: string; scheduledAt: number }) =>
  db
    .insertInto("missed_message_emails")
    .values({ user_id: a.userId, message_id: a.messageId, trigger: a.trigger, scheduled_at: a.scheduledAt })
    .onConflict((oc) => oc.columns(["user_id", "message_id"]).doNothing()),
);
const queuedEmailJob = preparedQuery((db, a: { key: string }) =>
  db.selectFrom("jobs").select("id").where("job_key", "=", a.key).where("name", "=", MISSED_MESSAGE_EMAIL_JOB).where("status", "=", "queued"),
);

/** Writes the `owed` emails of message `messageId` in `trx`. */
export async function writeMissedMessageEmails(services: Services, trx: Trx, pending: EnqueueContext, messageId: number, owed: readonly OwedEmail[]): Promise<void> {
  if (owed.length === 0) return;
  if (services.storage.dialect === "postgres") {
    const jobs = await recordOwedPostgres.execute(trx, { messageId, ...owedEmailArrays([owed], services.nowMs()) });
    if (jobs.length > 0) wakeAfterCommit(pending, services);
    return;
  }
  for (const { userId, trigger, defaultAt } of owed) {
    // Zulip's batching: a message joins the user's pending batch, else starts one.
    const batch = await pendingBatch.executeTakeFirst(trx, { userId });
    const scheduledAt = batch ? Number(batch.scheduled_at) : defaultAt;
    await insertOwedEmail.execute(trx, { userId, messageId, trigger, scheduledAt });
    // One queued job per user: a queued one (not yet claimed) will see this row. SQLite has one writer.
    if (!(await queuedEmailJob.executeTakeFirst(trx, { key: missedMessageEmailJobKey(userId) }))) {
      const payload: MissedMessageEmailJob = { user_id: userId };
      await enqueueJob(trx, pending, services, MISSED_MESSAGE_EMAIL_JOB, payload, { key: missedMessageEmailJobKey(userId), runAt: scheduledAt });
    }
  }
}

/** Decides and records the missed-message emails `check`'s message owes, in `trx`: for a check job queued by an earlier version. */
export async function recordMissedMessageEmails(services: Services, trx: Trx, pending: EnqueueContext, check: MissedMessageCheckJob): Promise<void> {
  const { channel, candidates } = check;
  const facts = await notificationRecipientFacts(services.storage, trx, Object.keys(candidates).map(Number), channel && { channelId: channel.id, topicKey: channel.topic_key });
  await writeMissedMessageEmails(services, trx, pending, check.message_id, await missedMessageEmailsOwed(services, check, facts));
}
