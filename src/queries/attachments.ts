// Uploaded files as the API shows them (the contract's Attachment object):
// GET /attachments, `attachment` events and edit replies all use this.
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiAttachment {
  id: number;
  name: string;
  path_id: string;
  size: number;
  /** Milliseconds. */
  create_time: number;
  /** Messages that link the file, with date_sent in milliseconds. */
  messages: { id: number; date_sent: number }[];
}

/** Attachment objects by ID, in ID order. */
export async function attachmentObjects(db: Db, attachmentIds: readonly number[]): Promise<ApiAttachment[]> {
  if (attachmentIds.length === 0) return [];
  const [rows, links] = await Promise.all([
    db.selectFrom("attachments").selectAll().where("id", "in", [...attachmentIds]).orderBy("id").execute(),
    db
      .selectFrom("attachment_messages")
      .innerJoin("messages", "messages.id", "attachment_messages.message_id")
      .select(["attachment_messages.attachment_id", "messages.id", "messages.date_sent"])
      .where("attachment_messages.attachment_id", "in", [...attachmentIds])
      .orderBy("messages.id")
      .execute(),
  ]);
  return rows.map((a) => ({
    id: a.id,
    name: a.file_name,
    path_id: a.path_id,
    size: a.size,
    create_time: a.create_time,
    messages: links.filter((l) => l.attachment_id === a.id).map((l) => ({ id: l.id, date_sent: l.date_sent * 1000 })),
  }));
}

/** Bytes of every file the user has uploaded (Zulip's upload_space_used). */
export async function uploadSpaceUsed(db: Db, userId: number): Promise<number> {
  const row = await db
    .selectFrom("attachments")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("size"), eb.lit(0)).as("total"))
    .where("owner_id", "=", userId)
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}
