// The jobs actions queue, by name, with their payloads: what an action and
// the worker registered for the name (src/workers/) agree on.
import type { PayloadMessage, Trigger } from "../domain/outgoing-webhooks.ts";
import type { PushMessage } from "../domain/push.ts";

/** Deliver a scheduled message or reminder when it falls due (run_at = its time). */
export const SCHEDULED_MESSAGE_JOB = "scheduled_message";
export interface ScheduledMessageJob {
  id: number;
  realm_id: number;
}

/** Read the pages a message links to and render their previews into it. */
export const LINK_PREVIEWS_JOB = "link_previews";
export interface LinkPreviewsJob {
  realm_id: number;
  message_id: number;
  /** The text the links were found in: a message edited since is left to the edit's own job. */
  content: string;
  urls: string[];
}

/** Work out who of a message's notified recipients gets a mobile push, and queue one PUSH_NOTIFY_JOB each. */
export const PUSH_MESSAGE_JOB = "push_message";
export interface PushMessageJob {
  realm_id: number;
  message: PushMessage;
  /** Recipients who may get a push (not the sender, unread, a DM or mentioned), with their flags. */
  candidates: Record<string, string[]>;
}

/** One request to the push service's push/notify. */
export const PUSH_NOTIFY_JOB = "push_notify";
export interface PushNotifyJob {
  user_id: number;
  message_id: number;
  body: Record<string, unknown>;
}

/** Forward a stored E2EE push registration to the push service and record its answer. */
export const PUSH_REGISTER_JOB = "push_register";
export interface PushRegisterJob {
  device_row_id: number;
  /** The registration forwarded: a newer one replacing it is another job's. */
  registration: string;
}

/** POST a message to an outgoing-webhook bot's services (Zulip's outgoing_webhooks queue); keyed by bot. */
export const OUTGOING_WEBHOOK_JOB = "outgoing_webhook";
export interface OutgoingWebhookJob {
  realm_id: number;
  bot_id: number;
  message_id: number;
  trigger: Trigger;
  /** The message as it was sent (Zulip's queue event carries it), so later edits or a deletion change nothing. */
  message: PayloadMessage;
}

/**
 * Decide which of a new message's candidates are owed a missed-message email
 * (idle, trigger, settings) and record it: a missed_message_emails row each,
 * and the user's MISSED_MESSAGE_EMAIL_JOB for their batch. A send now makes
 * this decision in its own transaction (actions/missed-message-emails.ts);
 * the job runs only checks that an earlier version queued.
 */
export const MISSED_MESSAGE_CHECK_JOB = "missed_message_check";
export interface MissedMessageCheckJob {
  realm_id: number;
  message_id: number;
  /**
   * The message's channel and topic key, and who followed the topic or asked for the channel's emails
   * when it was sent (someone the message made follow it is not notified of it as a follower); null for a direct message.
   */
  channel: { id: number; topic_key: string; listeners: number[] } | null;
  /** Recipients who may be notified (not the sender, unread; a DM, mentioned, or listening to the topic), with their flags. */
  candidates: Record<string, string[]>;
}

/** Send a user's due missed-message emails, one per conversation (Zulip's missedmessage_emails worker); keyed by user. */
export const MISSED_MESSAGE_EMAIL_JOB = "missed_message_email";
export interface MissedMessageEmailJob {
  user_id: number;
}

export function missedMessageEmailJobKey(userId: number): string {
  return `missed_message_email:${userId}`;
}

/** Write an organization export's tarball into the file store (Zulip's deferred_work realm_export); one attempt. */
export const REALM_EXPORT_JOB = "realm_export";
export interface RealmExportJob {
  realm_id: number;
  export_id: number;
}

/** Delete a finished export's tarball when its retention period ends (run_at = then). */
export const REALM_EXPORT_EXPIRE_JOB = "realm_export_expire";
export interface RealmExportExpireJob {
  realm_id: number;
  export_id: number;
}

/**
 * The daily digest check (Zulip's enqueue_digest_emails cron): on each
 * organization's digest weekday, queue DIGEST_EMAIL_JOBs for the users owed a
 * digest. Each check queues the next day's, in its own transaction; one keyed
 * chain for the whole cluster (workers/digest-emails.ts).
 */
export const DIGEST_CHECK_JOB = "digest_check";
export const DIGEST_CHECK_JOB_KEY = "digest_check";
export interface DigestCheckJob {
  /** The UTC day (YYYY-MM-DD) the check was scheduled for: for people reading the queue; the check does the day it runs on. */
  day: string;
}

/** Build and send the digests of some users of one organization (Zulip's digest_emails queue, 30 users an event). */
export const DIGEST_EMAIL_JOB = "digest_email";
export interface DigestEmailJob {
  realm_id: number;
  user_ids: number[];
  /** UNIX seconds: the digest covers what happened after it. */
  cutoff: number;
}
