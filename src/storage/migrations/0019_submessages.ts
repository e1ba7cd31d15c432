// Submessages (Zulip's SubMessage): the data of widgets. A /poll or /todo
// message gets one "widget" submessage from its sender when it is sent; votes,
// new options and ticked tasks are further submessages on the same message,
// which clients replay in ID order.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("submessages")
    .addColumn("id", id.type, id.build)
    .addColumn("message_id", "integer", (c) => c.notNull().references("messages.id"))
    .addColumn("sender_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("msg_type", "text", (c) => c.notNull())
    // JSON text as the client sent it (or as the server wrote the widget).
    .addColumn("content", "text", (c) => c.notNull())
    .execute();
  // A page of messages reads its submessages by message, in ID order.
  await db.schema.createIndex("submessages_message").on("submessages").columns(["message_id", "id"]).execute();
}
