// Missed-message emails waiting for their batch (Zulip's
// ScheduledMessageNotificationEmail): one row per (user, message) that an
// email is owed for, written with the decision to notify and deleted when
// the email covering it has gone out (workers/missed-message-emails.ts).
// - trigger: why (domain/notifications.ts), which the email's wording uses;
// - scheduled_at: UNIX milliseconds when the user's batch goes out: every row
//   of one batch has the same time, that of the batch's first message.
// No foreign key to messages: a deleted message's rows are dropped by the
// job that finds the message gone, as a read one's are.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("missed_message_emails")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("message_id", "integer", (c) => c.notNull())
    .addColumn("trigger", "text", (c) => c.notNull())
    .addColumn("scheduled_at", "bigint", (c) => c.notNull())
    .execute();
  // One row per (user, message): a retried decision inserts nothing twice.
  await sql`CREATE UNIQUE INDEX missed_message_emails_user_message ON missed_message_emails (user_id, message_id)`.execute(db);
  await sql`CREATE INDEX missed_message_emails_user_due ON missed_message_emails (user_id, scheduled_at)`.execute(db);
  // Who hears of every message in a topic beyond mentions (queries/notification-recipients.ts listenerIds): the topic's
  // followers, and subscribers with the channel's email notifications on; both small sets. The subscriptions
  // index repeats its condition's columns so SQLite's planner prefers it (without statistics) to subscriptions_channel.
  await sql`CREATE INDEX user_topics_followers ON user_topics (channel_id, topic_key) WHERE visibility_policy = 3`.execute(db);
  await sql`CREATE INDEX subscriptions_email_notifications ON subscriptions (channel_id, active, email_notifications) WHERE email_notifications = TRUE AND active = TRUE`.execute(db);
}
