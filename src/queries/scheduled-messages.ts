// Scheduled messages and reminders as the API shows them (Zulip's
// ScheduledMessage.to_dict / to_reminder_dict): one serializer each, used by
// GET, POST /register and the events.
import type { Kysely, Transaction } from "kysely";
import { DeliveryType } from "../domain/scheduled-messages.ts";
import { dmKeyUserIds } from "../domain/messages.ts";
import type { Database, ScheduledMessage } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** A row with its conversation's direct-message key (null for channels). */
export type ScheduledRow = ScheduledMessage & { dm_key: string | null };

export interface ApiScheduledMessage {
  scheduled_message_id: number;
  to: number | number[];
  type: "stream" | "private";
  content: string;
  rendered_content: string;
  topic?: string;
  scheduled_delivery_timestamp: number;
  failed: boolean;
}

export interface ApiReminder {
  reminder_id: number;
  to: number[];
  type: "private";
  content: string;
  rendered_content: string;
  scheduled_delivery_timestamp: number;
  failed: boolean;
  reminder_target_message_id: number | null;
}

/** Everyone in the conversation but the sender; yourself for a message to yourself (Zulip's get_recipient_ids). */
export function directRecipientIds(dmKey: string, senderId: number): number[] {
  const ids = dmKeyUserIds(dmKey);
  const others = ids.filter((id) => id !== senderId);
  return others.length === 0 ? [senderId] : others;
}

export function formatScheduledMessage(row: ScheduledRow): ApiScheduledMessage {
  const common = { scheduled_message_id: row.id, content: row.content, rendered_content: row.rendered_content };
  const timing = { scheduled_delivery_timestamp: row.scheduled_timestamp, failed: row.failed };
  if (row.channel_id !== null) return { ...common, to: row.channel_id, type: "stream", topic: row.topic, ...timing };
  return { ...common, to: directRecipientIds(row.dm_key!, row.sender_id), type: "private", ...timing };
}

export function formatReminder(row: ScheduledRow): ApiReminder {
  return {
    reminder_id: row.id,
    to: directRecipientIds(row.dm_key!, row.sender_id),
    type: "private",
    content: row.content,
    rendered_content: row.rendered_content,
    scheduled_delivery_timestamp: row.scheduled_timestamp,
    failed: row.failed,
    reminder_target_message_id: row.reminder_target_message_id,
  };
}

function scheduledRows(db: Db) {
  return db.selectFrom("scheduled_messages as s").innerJoin("recipients as r", "r.id", "s.recipient_id").selectAll("s").select("r.dm_key");
}

/** One of the user's rows of this delivery type, delivered or not (what PATCH and DELETE look up). */
export async function scheduledRowOf(db: Db, userId: number, deliveryType: number, id: number): Promise<ScheduledRow | undefined> {
  return scheduledRows(db).where("s.id", "=", id).where("s.sender_id", "=", userId).where("s.delivery_type", "=", deliveryType).executeTakeFirst();
}

export async function scheduledRowById(db: Db, id: number): Promise<ScheduledRow | undefined> {
  return scheduledRows(db).where("s.id", "=", id).executeTakeFirst();
}

/** The user's undelivered rows (failed ones included), soonest first. */
async function undeliveredRows(db: Db, userId: number, deliveryType: number): Promise<ScheduledRow[]> {
  return scheduledRows(db)
    .where("s.sender_id", "=", userId)
    .where("s.delivery_type", "=", deliveryType)
    .where("s.delivered", "=", false)
    .orderBy("s.scheduled_timestamp")
    .orderBy("s.id")
    .execute();
}

export async function undeliveredScheduledMessages(db: Db, userId: number): Promise<ApiScheduledMessage[]> {
  return (await undeliveredRows(db, userId, DeliveryType.SEND_LATER)).map(formatScheduledMessage);
}

export async function undeliveredReminders(db: Db, userId: number): Promise<ApiReminder[]> {
  return (await undeliveredRows(db, userId, DeliveryType.REMIND)).map(formatReminder);
}

/** Pending rows due at `now`, oldest due first: what the delivery worker works through. */
export async function dueScheduledRows(db: Db, now: number, limit: number): Promise<{ id: number; realm_id: number }[]> {
  return db
    .selectFrom("scheduled_messages")
    .select(["id", "realm_id"])
    .where("delivered", "=", false)
    .where("failed", "=", false)
    .where("scheduled_timestamp", "<=", now)
    .orderBy("scheduled_timestamp")
    .orderBy("id")
    .limit(limit)
    .execute();
}
