// Outgoing webhooks' state changes (Zulip's queue_event_on_commit to
// "outgoing_webhooks", and what zerver/lib/outgoing_webhook.py does with each
// request's outcome): the delivery jobs queued in the send's transaction, and
// the messages the bot writes — its reply in the
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
import type { BotService, Realm, User } from "../storage/schema.ts";
import { OUTGOING_WEBHOOK_JOB, type OutgoingWebhookJob } from "../jobs/names.ts";
import { enqueueJobs } from "../jobs/queue.ts";
import { sendMessage } from "./messages.ts";
import type { Trx } from "./transaction.ts";

/**
 * Queues one delivery per triggered bot on the job queue, in the send's
 * transaction: the jobs commit with the message or not at all. A bot's
 * deliveries share a key, so they run one at a time, in the order sent,
 * across every process: a slow or dead endpoint holds up only its own bot.
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
  const payloadMessage = { ...rest, rendered_content: renderedContent } as PayloadMessage;
  await enqueueJobs(
    trx,
    pending,
    services,
    triggers.map((t) => {
      const job: OutgoingWebhookJob = { realm_id: realmId, bot_id: t.botId, message_id: message.id, trigger: t.trigger, message: payloadMessage };
      // Zulip's request_retry: a timeout or connection error is tried again MAX_REQUEST_RETRIES times.
      return { name: OUTGOING_WEBHOOK_JOB, payload: job, options: { key: outgoingWebhookKey(t.botId), maxAttempts: MAX_REQUEST_RETRIES + 1 } };
    }),
  );
}

/** The job-queue key of a bot's deliveries. */
export function outgoingWebhookKey(botId: number): string {
  return `outgoing_webhook:${botId}`;
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
  return { realm, bot, message: job.message, trigger: job.trigger, services: await botServices(db, bot.id) };
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
