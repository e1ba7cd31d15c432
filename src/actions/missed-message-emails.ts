// The decision a new message owes missed-message emails (Zulip's Tornado
// decides it on the message event, then queues missedmessage_emails): for
// each candidate who is idle (domain/notifications.ts isIdle) and whose
// settings allow the trigger, a missed_message_emails row, scheduled with the
// user's pending batch or, without one, at now +
// email_notifications_batching_period_seconds, and one queued
// missed_message_email job of theirs for it.
//
// It runs in the send's own transaction: the rows commit with the message, so
// a crash loses no email and no second transaction or job is paid per send.
// Rows are unique per (user, message), so running it again inserts nothing.
import { VisibilityPolicy } from "../domain/messages.ts";
import { notificationTrigger } from "../domain/notifications.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { MISSED_MESSAGE_EMAIL_JOB, missedMessageEmailJobKey, type MissedMessageCheckJob, type MissedMessageEmailJob } from "../jobs/names.ts";
import { enqueueJob, type EnqueueContext } from "../jobs/queue.ts";
import { idleAmong, notificationRecipientFacts } from "../queries/notification-recipients.ts";
import type { Services } from "../services.ts";
import { preparedQuery } from "../storage/compiled.ts";
import type { Trx } from "./transaction.ts";

// Compiled once: a send runs them for every idle person it owes an email.
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
const queuedEmailJobLocked = preparedQuery((db, a: { key: string }) =>
  db.selectFrom("jobs").select("id").where("job_key", "=", a.key).where("name", "=", MISSED_MESSAGE_EMAIL_JOB).where("status", "=", "queued").forUpdate(),
);

/** Records the missed-message emails `check`'s message owes, in `trx`. */
export async function recordMissedMessageEmails(services: Services, trx: Trx, pending: EnqueueContext, check: MissedMessageCheckJob): Promise<void> {
  const { message_id, channel, candidates } = check;
  const facts = await notificationRecipientFacts(services.storage, trx, Object.keys(candidates).map(Number), channel && { channelId: channel.id, topicKey: channel.topic_key });
  const idle = await idleAmong(services, facts);
  const listeners = new Set(channel?.listeners ?? []);
  const now = services.nowMs();
  for (const userId of idle) {
    const f = facts.get(userId)!;
    if (f.isBot || !f.isActive) continue;
    const settings = parseUserSettings(f.settings);
    const trigger = notificationTrigger({
      flags: candidates[userId] ?? [],
      isDirectMessage: channel === null,
      dmMentionEnabled: settings.enable_offline_email_notifications,
      followedTopicEnabled: settings.enable_followed_topic_email_notifications,
      channelEnabled: f.emailOverride ?? settings.enable_stream_email_notifications,
      channelMuted: f.channelMuted,
      // Following since this very message (it mentioned them) does not count for it.
      topicPolicy: f.topicPolicy === VisibilityPolicy.FOLLOWED && !listeners.has(userId) ? null : f.topicPolicy,
      wildcardMentionsNotify: f.wildcardOverride ?? settings.wildcard_mentions_notify,
      followedTopicWildcardMentionsNotify: settings.enable_followed_topic_wildcard_mentions_notify,
      alertWordsAsMentions: true,
    });
    if (trigger === null) continue;
    // Zulip's batching: a message joins the user's pending batch, else starts one.
    const batch = await pendingBatch.executeTakeFirst(trx, { userId });
    const scheduledAt = batch ? Number(batch.scheduled_at) : now + settings.email_notifications_batching_period_seconds * 1000;
    await insertOwedEmail.execute(trx, { userId, messageId: message_id, trigger, scheduledAt });
    // One queued job per user: a queued one (not yet claimed) will see this row. On PostgreSQL the row
    // lock keeps a runner from claiming it (SKIP LOCKED) until this commits; SQLite has one writer.
    const queued = services.storage.dialect === "postgres" ? queuedEmailJobLocked : queuedEmailJob;
    if (!(await queued.executeTakeFirst(trx, { key: missedMessageEmailJobKey(userId) }))) {
      const payload: MissedMessageEmailJob = { user_id: userId };
      await enqueueJob(trx, pending, services, MISSED_MESSAGE_EMAIL_JOB, payload, { key: missedMessageEmailJobKey(userId), runAt: scheduledAt });
    }
  }
}
