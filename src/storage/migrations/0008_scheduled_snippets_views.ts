// Per-user timed delivery and saved items (issue 7):
// - scheduled_messages: messages to send later and message reminders share one
//   table and one ID sequence, as Zulip's ScheduledMessage (delivery_type 1 =
//   send later, 2 = remind). A delivered row is kept (delivered = true, with the
//   sent message's ID), so a delivery is recorded in the same transaction as the
//   message it sent: that is what makes delivery exactly once.
// - saved_snippets: reusable message texts.
// - navigation_views: a user's settings for built-in views and their own views,
//   identified by URL fragment.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("scheduled_messages")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("sender_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("delivery_type", "integer", (c) => c.notNull())
    // The conversation: a channel (channel_id set) or a direct-message group.
    .addColumn("recipient_id", "integer", (c) => c.notNull().references("recipients.id"))
    .addColumn("channel_id", "integer", (c) => c.references("channels.id"))
    .addColumn("topic", "text", (c) => c.notNull())
    .addColumn("content", "text", (c) => c.notNull())
    .addColumn("rendered_content", "text", (c) => c.notNull())
    .addColumn("sending_client", "text", (c) => c.notNull())
    .addColumn("read_by_sender", "boolean", (c) => c.notNull())
    .addColumn("scheduled_timestamp", "bigint", (c) => c.notNull())
    .addColumn("request_timestamp", "bigint", (c) => c.notNull())
    .addColumn("delivered", "boolean", (c) => c.notNull().defaultTo(false))
    // No foreign key: the sent message may later be deleted.
    .addColumn("delivered_message_id", "integer")
    .addColumn("failed", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("failure_message", "text")
    // Reminders: the message reminded of (no foreign key, it may be deleted) and the note.
    .addColumn("reminder_target_message_id", "integer")
    .addColumn("reminder_note", "text")
    .execute();
  // What the delivery worker scans: pending rows by due time.
  await sql`CREATE INDEX scheduled_messages_pending ON scheduled_messages (scheduled_timestamp, id) WHERE NOT delivered AND NOT failed`.execute(db);
  await db.schema.createIndex("scheduled_messages_sender").on("scheduled_messages").columns(["sender_id", "delivery_type", "scheduled_timestamp"]).execute();

  await db.schema
    .createTable("saved_snippets")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("title", "text", (c) => c.notNull())
    .addColumn("content", "text", (c) => c.notNull())
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("saved_snippets_user").on("saved_snippets").columns(["user_id", "id"]).execute();

  await db.schema
    .createTable("navigation_views")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("fragment", "text", (c) => c.notNull())
    .addColumn("is_pinned", "boolean", (c) => c.notNull())
    // NULL for built-in views.
    .addColumn("name", "text")
    .addUniqueConstraint("navigation_views_user_fragment", ["user_id", "fragment"])
    .execute();
}
