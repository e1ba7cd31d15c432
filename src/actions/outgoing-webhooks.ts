// The outgoing-webhook queue's state changes (Zulip's queue_event_on_commit to
// "outgoing_webhooks", and what zerver/lib/outgoing_webhook.py does with each
// request's outcome): enqueue in the send's transaction, claim, finish or put
// back for a retry, and the messages the bot writes — its reply in the
// conversation, "Failure! …" notices, and the direct message telling its owner
// what went wrong.
import { messageLinkUrl } from "../domain/message-links.ts";
import {
  failureContent,
  MAX_REQUEST_RETRIES,
  ownerNotificationContent,
  RESPONSE_CLIENT,
  type BotTrigger,
  type OwnerNotice,
  type PayloadMessage,
  type ReplyMessage,
  type Trigger,
} from "../domain/outgoing-webhooks.ts";
import type { PendingEvents } from "../events/notifier.ts";
import type { ApiMessage } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import { botServices } from "../queries/bots.ts";
import type { BotService, OutgoingWebhookJob, Realm, User } from "../storage/schema.ts";
import { sendMessage } from "./messages.ts";
import type { Trx } from "./transaction.ts";

/**
 * Queues one delivery per triggered bot, in the send's transaction: the rows
 * commit with the message or not at all, and the worker hears of them once
 * the transaction has committed.
 */
export async function enqueueOutgoingWebhooks(
  services: Services,
  trx: Trx,
  pending: PendingEvents,
  realmId: number,
  triggers: readonly BotTrigger[],
  message: ApiMessage,
  renderedContent: string,
): Promise<void> {
  // Zulip's finalize_payload(apply_markdown=False, keep_rendered_content=True): no flags, raw content, and its HTML.
  const { flags: _flags, topic: _topic, ...rest } = message;
  const json = JSON.stringify({ ...rest, rendered_content: renderedContent });
  const now = services.now();
  await trx
    .insertInto("outgoing_webhook_jobs")
    .values(triggers.map((t) => ({ realm_id: realmId, bot_id: t.botId, message_id: message.id, trigger: t.trigger, message: json, failed_tries: 0, available_at: now, created_at: now })))
    .execute();
  pending.afterCommit(() => services.outgoingWebhooks?.wake());
}

/** A job this worker holds until `leaseUntil` (the available_at its claim wrote). */
export interface ClaimedJob {
  job: OutgoingWebhookJob;
  leaseUntil: number;
}

/**
 * Takes up to `limit` due jobs, oldest first. Each is claimed by moving its
 * available_at to the end of the lease, only if it is still due: of several
 * processes reading the same row, one claims it.
 */
export async function claimDueJobs(services: Services, limit: number, leaseSeconds: number): Promise<ClaimedJob[]> {
  const db = services.storage.db;
  const now = services.now();
  const due = await db.selectFrom("outgoing_webhook_jobs").selectAll().where("available_at", "<=", now).orderBy("available_at").orderBy("id").limit(limit).execute();
  const claimed: ClaimedJob[] = [];
  for (const job of due) {
    const leaseUntil = now + leaseSeconds;
    const result = await db
      .updateTable("outgoing_webhook_jobs")
      .set({ available_at: leaseUntil })
      .where("id", "=", job.id)
      .where("available_at", "=", job.available_at)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 1) claimed.push({ job: { ...job, available_at: leaseUntil }, leaseUntil });
  }
  return claimed;
}

/** The delivery is over (answered, failed for good, or nothing left to do). */
export async function finishJob(services: Services, claimed: ClaimedJob): Promise<void> {
  await services.storage.db.deleteFrom("outgoing_webhook_jobs").where("id", "=", claimed.job.id).where("available_at", "=", claimed.leaseUntil).execute();
}

/**
 * A request timed out or could not connect (Zulip's request_retry): the job
 * goes back to the queue at once with one more failed try, or, past
 * MAX_REQUEST_RETRIES, is over — and the caller reports the failure.
 * Returns whether it will be tried again.
 */
export async function retryJob(services: Services, claimed: ClaimedJob): Promise<boolean> {
  const failedTries = claimed.job.failed_tries + 1;
  if (failedTries > MAX_REQUEST_RETRIES) {
    await finishJob(services, claimed);
    return false;
  }
  await services.storage.db
    .updateTable("outgoing_webhook_jobs")
    .set({ failed_tries: failedTries, available_at: services.now() })
    .where("id", "=", claimed.job.id)
    .where("available_at", "=", claimed.leaseUntil)
    .execute();
  return true;
}

/** What a delivery needs to know about its bot, read when the worker takes the job. */
export interface JobContext {
  realm: Realm;
  bot: User;
  message: PayloadMessage;
  trigger: Trigger;
  services: BotService[];
}

/** The bot, its organization and services; null when there is nothing to deliver (bot deactivated or gone). */
export async function jobContext(services: Services, job: OutgoingWebhookJob): Promise<JobContext | null> {
  const db = services.storage.db;
  const bot = await db.selectFrom("users").selectAll().where("id", "=", job.bot_id).executeTakeFirst();
  if (!bot || !bot.is_active) return null;
  const realm = await db.selectFrom("realms").selectAll().where("id", "=", job.realm_id).executeTakeFirst();
  if (!realm || realm.deactivated) return null;
  return { realm, bot, message: JSON.parse(job.message) as PayloadMessage, trigger: job.trigger as Trigger, services: await botServices(db, bot.id) };
}

/**
 * Sends `content` as the bot into the conversation of the triggering message
 * (Zulip's send_response_message): the same channel and topic, with no check
 * that the bot may post there, or the same direct-message conversation.
 */
export async function sendResponseMessage(services: Services, ctx: JobContext, reply: ReplyMessage): Promise<void> {
  const { message } = ctx;
  const common = { content: reply.content, clientName: RESPONSE_CLIENT, widgetContent: reply.widgetContent };
  if (message.type === "stream") {
    await sendMessage(services, ctx.realm, ctx.bot, { ...common, kind: "channel", to: String(message.stream_id), topic: message.subject, skipChannelAccessCheck: true });
  } else {
    const ids = (message.display_recipient as { id: number }[]).map((u) => u.id);
    await sendMessage(services, ctx.realm, ctx.bot, { ...common, kind: "direct", to: JSON.stringify(ids), topic: undefined });
  }
}

/** "Failure! …" in the conversation (Zulip's fail_with_message); a conversation that is gone gets nothing. */
export async function failWithMessage(services: Services, ctx: JobContext, failureMessage: string, log: (error: unknown, what: string) => void): Promise<void> {
  try {
    await sendResponseMessage(services, ctx, { content: failureContent(failureMessage) });
  } catch (error) {
    log(error, `outgoing webhook: could not post the failure notice for message ${ctx.message.id}`);
  }
}

/** The web-app link to the triggering message (Zulip's get_message_url). */
export function triggeringMessageUrl(services: Services, message: PayloadMessage): string {
  if (message.type === "stream") {
    return messageLinkUrl(services.config.externalUrl, message.id, { channel: { id: message.stream_id!, name: String(message.display_recipient) }, topic: message.subject });
  }
  return messageLinkUrl(services.config.externalUrl, message.id, { participantIds: (message.display_recipient as { id: number }[]).map((u) => u.id) });
}

/** A direct message from the bot to its owner about a failed delivery (Zulip's notify_bot_owner). */
export async function notifyBotOwner(services: Services, ctx: JobContext, notice: Omit<OwnerNotice, "messageUrl" | "botFullName">, log: (error: unknown, what: string) => void): Promise<void> {
  // Bots without an owner (made by the command line) have nobody to tell.
  if (ctx.bot.bot_owner_id === null) return;
  const content = ownerNotificationContent({ ...notice, messageUrl: triggeringMessageUrl(services, ctx.message), botFullName: ctx.bot.full_name });
  try {
    await sendMessage(services, ctx.realm, ctx.bot, { kind: "direct", to: JSON.stringify([ctx.bot.bot_owner_id]), topic: undefined, content, clientName: RESPONSE_CLIENT });
  } catch (error) {
    // A deactivated owner cannot be written to.
    log(error, `outgoing webhook: could not notify the owner of bot ${ctx.bot.id}`);
  }
}
