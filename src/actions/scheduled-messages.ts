// Scheduled messages and message reminders (Zulip's
// zerver/actions/scheduled_messages.py and reminders.py). Scheduling runs the
// send checks at once, so what could never be sent is refused; delivery runs
// them again through the send path, in one transaction with marking the row
// delivered, so each row is sent exactly once or not at all.
import { SCHEDULED_MESSAGE_JOB, type ScheduledMessageJob } from "../jobs/names.ts";
import { enqueueJob } from "../jobs/queue.ts";
import type { Updateable } from "kysely";
import { defaultReadBySender } from "../domain/messages.ts";
import {
  checkDeliveryInFuture,
  deliveryTimeNotInFuture,
  checkScheduledRecipient,
  deliveryFailedNotice,
  DeliveryType,
  normalizeReminderNote,
  reminderContent,
  type RemindedMessage,
} from "../domain/scheduled-messages.ts";
import { ApiError, badRequest, realmDeactivated, userDeactivated } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { accessibleMessage, readableMessage } from "../queries/messages.ts";
import { formatReminder, formatScheduledMessage, scheduledRowById, scheduledRowOf, type ScheduledRow } from "../queries/scheduled-messages.ts";
import { getRealm } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Message, Realm, ScheduledMessageTable, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { checkMessage, notificationBot, sendMessageInTransaction, sendNotificationBotMessage, type SendRequest } from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

type Kind = "channel" | "direct";

export interface ScheduleRequest {
  kind: Kind;
  /** A channel ID, or user IDs. */
  to: number | number[];
  content: string;
  topic: string | undefined;
  deliverAt: number;
  readBySender: boolean | undefined;
  clientName: string;
}

export interface ScheduledEdit {
  kind?: Kind | undefined;
  to?: number | number[] | undefined;
  content?: string | undefined;
  topic?: string | undefined;
  deliverAt?: number | undefined;
  clientName: string;
}

function sendRequest(kind: Kind, to: number | number[], content: string, topic: string | undefined, clientName: string): SendRequest {
  return { kind, to: JSON.stringify(to), content, topic: kind === "channel" ? topic : undefined, clientName };
}

/** The stored conversation as a send request's kind and `to`. */
function storedTarget(row: ScheduledRow): { kind: Kind; to: number | number[] } {
  return row.channel_id !== null ? { kind: "channel", to: row.channel_id } : { kind: "direct", to: formatScheduledMessage(row).to };
}

function notFound(): ApiError {
  return new ApiError(404, "BAD_REQUEST", "Scheduled message does not exist");
}

/** POST /scheduled_messages: checked as a send now, stored, announced to the sender's clients. */
export async function scheduleMessage(services: Services, realm: Realm, sender: User, request: ScheduleRequest): Promise<number> {
  checkDeliveryInFuture(request.deliverAt, services.now());
  const to = checkScheduledRecipient(request.kind, request.to);
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const checked = await checkMessage(services, trx, realm, sender, sendRequest(request.kind, to, request.content, request.topic, request.clientName));
    const { conversation } = checked;
    // Zulip: unread by default for messages to oneself, whatever the client.
    const toSelf = conversation.channel === null && conversation.participants.length === 1;
    const { id } = await trx
      .insertInto("scheduled_messages")
      .values({
        realm_id: realm.id,
        sender_id: sender.id,
        delivery_type: DeliveryType.SEND_LATER,
        recipient_id: conversation.recipientId,
        channel_id: conversation.channel?.id ?? null,
        topic: conversation.topic,
        content: checked.content,
        rendered_content: checked.rendered.html,
        sending_client: request.clientName,
        read_by_sender: request.readBySender ?? (defaultReadBySender(request.clientName) && !toSelf),
        scheduled_timestamp: request.deliverAt,
        request_timestamp: services.now(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await enqueueDelivery(services, trx, pending, realm.id, id, request.deliverAt);
    const row = (await scheduledRowById(trx, id))!;
    pending.add(realm.id, { type: "scheduled_messages", op: "add", scheduled_messages: [formatScheduledMessage(row)] }, [sender.id]);
    return id;
  });
}

/** PATCH /scheduled_messages/{id}, in Zulip's order of checks; a successful edit makes a failed message pending again. */
export async function editScheduledMessage(services: Services, realm: Realm, sender: User, id: number, edit: ScheduledEdit): Promise<void> {
  if (edit.kind === undefined && edit.to === undefined && edit.content === undefined && edit.topic === undefined && edit.deliverAt === undefined) {
    throw badRequest("Nothing to change");
  }
  if (edit.kind !== undefined && edit.to === undefined) throw badRequest("Recipient required when updating type of scheduled message.");
  if (edit.kind === "channel" && edit.topic === undefined) throw badRequest("Topic required when updating scheduled message type to channel.");
  if (edit.deliverAt !== undefined) checkDeliveryInFuture(edit.deliverAt, services.now());

  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const row = isStorableId(id) ? await scheduledRowOf(trx, sender.id, DeliveryType.SEND_LATER, id) : undefined;
    if (!row) throw notFound();
    if (row.delivered) throw badRequest("Scheduled message was already sent");
    // A failed message needs a new time: the old one has passed.
    if (row.failed && edit.deliverAt === undefined) throw deliveryTimeNotInFuture();

    const stored = storedTarget(row);
    const kind = edit.kind ?? stored.kind;
    // A topic alone does not concern a direct message (Zulip ignores it).
    const topicChanges = edit.topic !== undefined && kind === "channel";
    const changes: Updateable<ScheduledMessageTable> = { sending_client: edit.clientName, failed: false, failure_message: null };
    if (edit.kind !== undefined || edit.to !== undefined || edit.content !== undefined || topicChanges) {
      const to = edit.to !== undefined ? checkScheduledRecipient(kind, edit.to) : stored.to;
      const topic = edit.topic ?? (stored.kind === "channel" ? row.topic : undefined);
      const checked = await checkMessage(services, trx, realm, sender, sendRequest(kind, to, edit.content ?? row.content, topic, edit.clientName));
      Object.assign(changes, {
        recipient_id: checked.conversation.recipientId,
        channel_id: checked.conversation.channel?.id ?? null,
        topic: checked.conversation.topic,
        content: checked.content,
        rendered_content: checked.rendered.html,
      });
    }
    if (edit.deliverAt !== undefined) changes.scheduled_timestamp = edit.deliverAt;
    await trx.updateTable("scheduled_messages").set(changes).where("id", "=", row.id).execute();
    // A new time (or a failed message made pending again) needs a delivery then; a job for the old time finds the row not due and ends.
    if (edit.deliverAt !== undefined) await enqueueDelivery(services, trx, pending, realm.id, row.id, edit.deliverAt);
    const updated = (await scheduledRowById(trx, row.id))!;
    pending.add(realm.id, { type: "scheduled_messages", op: "update", scheduled_message: formatScheduledMessage(updated) }, [sender.id]);
  });
}

/** DELETE /scheduled_messages/{id} and DELETE /reminders/{id}: delivered rows can be deleted too, as in Zulip. */
export async function deleteScheduledRow(services: Services, realm: Realm, user: User, deliveryType: number, id: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const row = isStorableId(id) ? await scheduledRowOf(trx, user.id, deliveryType, id) : undefined;
    if (!row) throw deliveryType === DeliveryType.REMIND ? new ApiError(404, "BAD_REQUEST", "Reminder does not exist") : notFound();
    await trx.deleteFrom("scheduled_messages").where("id", "=", row.id).execute();
    pending.add(realm.id, removeEvent(row), [user.id]);
  });
}

function removeEvent(row: ScheduledRow) {
  return row.delivery_type === DeliveryType.REMIND
    ? { type: "reminders", op: "remove", reminder_id: row.id }
    : { type: "scheduled_messages", op: "remove", scheduled_message_id: row.id };
}

export interface ReminderRequest {
  messageId: number;
  deliverAt: number;
  note: string | undefined;
  clientName: string;
}

/** The message a reminder quotes, with what its text needs. */
async function remindedMessage(trx: Trx, message: Message): Promise<RemindedMessage> {
  const sender = await trx.selectFrom("users").select(["id", "full_name"]).where("id", "=", message.sender_id).executeTakeFirstOrThrow();
  if (message.channel_id !== null) {
    const channel = await trx.selectFrom("channels").select(["id", "name"]).where("id", "=", message.channel_id).executeTakeFirstOrThrow();
    return { id: message.id, content: message.content, sender, conversation: { channel, topic: message.topic } };
  }
  const recipient = await trx.selectFrom("recipients").select("dm_key").where("id", "=", message.recipient_id).executeTakeFirstOrThrow();
  return { id: message.id, content: message.content, sender, conversation: { participantIds: recipient.dm_key!.split(",").map(Number) } };
}

/** POST /reminders: a direct message from the Notification Bot to the user at the given time, quoting a message they can read. */
export async function createReminder(services: Services, realm: Realm, user: User, request: ReminderRequest): Promise<number> {
  checkDeliveryInFuture(request.deliverAt, services.now());
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { row: message } = await accessibleMessage(trx, realm.id, await actorFor(trx, user), request.messageId);
    const note = normalizeReminderNote(request.note);
    const content = reminderContent(services.config.externalUrl, await remindedMessage(trx, message), note);
    const checked = await checkMessage(services, trx, realm, user, { kind: "direct", to: JSON.stringify([user.id]), content, topic: undefined, clientName: request.clientName });
    const { id } = await trx
      .insertInto("scheduled_messages")
      .values({
        realm_id: realm.id,
        sender_id: user.id,
        delivery_type: DeliveryType.REMIND,
        recipient_id: checked.conversation.recipientId,
        channel_id: null,
        topic: "",
        content: checked.content,
        rendered_content: checked.rendered.html,
        sending_client: request.clientName,
        read_by_sender: false,
        scheduled_timestamp: request.deliverAt,
        request_timestamp: services.now(),
        reminder_target_message_id: message.id,
        reminder_note: note,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await enqueueDelivery(services, trx, pending, realm.id, id, request.deliverAt);
    const row = (await scheduledRowById(trx, id))!;
    pending.add(realm.id, { type: "reminders", op: "add", reminders: [formatReminder(row)] }, [user.id]);
    return id;
  });
}

/** The row's delivery job, due at its time, committed with the row. */
async function enqueueDelivery(services: Services, trx: Trx, pending: PendingEvents, realmId: number, id: number, deliverAt: number): Promise<void> {
  const job: ScheduledMessageJob = { id, realm_id: realmId };
  await enqueueJob(trx, pending, services, SCHEDULED_MESSAGE_JOB, job, { runAt: deliverAt * 1000 });
}

/** What became of a due row. */
export type DeliveryOutcome = "delivered" | "failed" | "skipped";

/**
 * Sends one due row through the send path, as its sender (a reminder: as the
 * Notification Bot, to its owner). The row is re-read under the organization's
 * lock and marked delivered in the same transaction as the message, so two
 * workers, a crash or a concurrent edit can neither send it twice nor send a
 * stale version. A send the rules refuse marks the row failed.
 */
export async function deliverScheduledRow(services: Services, id: number, realmId: number, log?: (error: unknown) => void): Promise<DeliveryOutcome> {
  const realm = await getRealm(services.storage.db, realmId);
  if (!realm) return "skipped";
  const now = services.now();
  let row: ScheduledRow | undefined;
  try {
    return await inRealmTransaction(services, realm.id, async (trx, pending) => {
      row = await scheduledRowById(trx, id);
      if (!row || row.delivered || row.failed || row.scheduled_timestamp > now) return "skipped";
      const sender = await trx.selectFrom("users").selectAll().where("id", "=", row.sender_id).executeTakeFirstOrThrow();
      const messageId = row.delivery_type === DeliveryType.REMIND ? await sendReminder(services, trx, pending, realm, sender, row) : await sendScheduled(services, trx, pending, realm, sender, row);
      await trx.updateTable("scheduled_messages").set({ delivered: true, delivered_message_id: messageId }).where("id", "=", row.id).execute();
      pending.add(realm.id, removeEvent(row), [sender.id]);
      return "delivered";
    });
  } catch (error) {
    if (!row) throw error;
    if (!(error instanceof ApiError)) log?.(error);
    await markFailed(services, realm, row, error instanceof ApiError ? error : undefined);
    return "failed";
  }
}

async function sendScheduled(services: Services, trx: Trx, pending: PendingEvents, realm: Realm, sender: User, row: ScheduledRow): Promise<number> {
  if (realm.deactivated) throw realmDeactivated();
  if (!sender.is_active) throw userDeactivated();
  const { kind, to } = storedTarget(row);
  const request = { ...sendRequest(kind, to, row.content, row.topic, row.sending_client), readBySender: row.read_by_sender };
  return (await sendMessageInTransaction(services, trx, pending, realm, sender, request)).id;
}

/** The reminder's text is written afresh when the message is still readable (it may have been edited or moved); else the stored text. */
async function sendReminder(services: Services, trx: Trx, pending: PendingEvents, realm: Realm, user: User, row: ScheduledRow): Promise<number> {
  let content = row.content;
  const target = row.reminder_target_message_id === null ? undefined : await readableMessage(trx, realm.id, await actorFor(trx, user), row.reminder_target_message_id);
  if (target) content = reminderContent(services.config.externalUrl, await remindedMessage(trx, target.row), row.reminder_note);
  const bot = await notificationBot(trx, realm.id);
  const request: SendRequest = { kind: "direct", to: JSON.stringify([user.id]), content, topic: undefined, clientName: "Internal", internal: true };
  return (await sendMessageInTransaction(services, trx, pending, realm, bot, request)).id;
}

/**
 * Marks a row failed (it stays listed until edited or deleted). For scheduled
 * messages the sender's clients get the update and the Notification Bot tells
 * the sender why, unless the sender or organization is deactivated (then
 * nobody is told, as in Zulip); reminders have no update event.
 */
async function markFailed(services: Services, realm: Realm, row: ScheduledRow, error: ApiError | undefined): Promise<void> {
  const message = error?.message ?? "Internal server error";
  const changed = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const result = await trx
      .updateTable("scheduled_messages")
      .set({ failed: true, failure_message: message })
      .where("id", "=", row.id)
      .where("delivered", "=", false)
      .where("failed", "=", false)
      .executeTakeFirst();
    const deactivated = error?.code === "REALM_DEACTIVATED" || error?.code === "USER_DEACTIVATED";
    if (Number(result.numUpdatedRows) === 0 || row.delivery_type === DeliveryType.REMIND || deactivated) return false;
    const updated = (await scheduledRowById(trx, row.id))!;
    pending.add(realm.id, { type: "scheduled_messages", op: "update", scheduled_message: formatScheduledMessage(updated) }, [row.sender_id]);
    return true;
  });
  if (changed) await sendNotificationBotMessage(services, realm, { userIds: [row.sender_id] }, deliveryFailedNotice(row.scheduled_timestamp, message));
}
