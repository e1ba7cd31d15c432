// The outgoing-webhook queue (Zulip's "outgoing_webhooks" RabbitMQ queue, kept
// in the database so it survives restarts and is shared by every process).
// A send that triggers an outgoing-webhook bot writes one row per bot in the
// send's own transaction; the worker (workers/outgoing-webhooks.ts) claims a
// row by moving its available_at past a lease, makes the HTTP request outside
// any transaction, then deletes the row or puts it back for a retry.
// - message: JSON of the message object as it was sent (Zulip puts the message
//   dict in the queue event), so later edits or a deletion change nothing.
// - trigger: "mention" or "direct_message".
// - failed_tries: Zulip's event["failed_tries"]; past MAX_REQUEST_RETRIES the
//   delivery fails for good.
// - available_at: UNIX seconds from which a worker may take the row; a claim
//   sets it to the end of the claim's lease, so a row whose worker died is
//   taken again once the lease runs out.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("outgoing_webhook_jobs")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("bot_id", "integer", (c) => c.notNull().references("users.id"))
    // No foreign key: deleting the message must not wait for (or be refused by) its delivery.
    .addColumn("message_id", "integer", (c) => c.notNull())
    .addColumn("trigger", "text", (c) => c.notNull())
    .addColumn("message", "text", (c) => c.notNull())
    .addColumn("failed_tries", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("available_at", "integer", (c) => c.notNull())
    .addColumn("created_at", "integer", (c) => c.notNull())
    .execute();
  // The worker reads the rows that are due, oldest first.
  await db.schema.createIndex("outgoing_webhook_jobs_due").on("outgoing_webhook_jobs").columns(["available_at", "id"]).execute();
}
