// Uploaded files as the API shows them (the contract's Attachment object):
// GET /attachments, `attachment` events and edit replies all use this. Also
// who may download a file.
import type { Kysely, Transaction } from "kysely";
import type { Actor } from "../domain/group-settings.ts";
import { isStorableId } from "../storage/database.ts";
import type { Attachment, Database } from "../storage/schema.ts";
import { readableMessage } from "./messages.ts";

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

/**
 * Zulip's upload_space_used: bytes of every file uploaded in the
 * organization (Realm.currently_used_upload_space_bytes), not just the
 * user's own, in GET /attachments and in every `attachment` event.
 */
export async function realmUploadSpaceUsed(db: Db, realmId: number): Promise<number> {
  const row = await db
    .selectFrom("attachments")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("size"), eb.lit(0)).as("total"))
    .where("realm_id", "=", realmId)
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}

/** upload_space_used as seen by a user: their organization's total (realmUploadSpaceUsed). */
export async function uploadSpaceUsed(db: Db, userId: number): Promise<number> {
  const row = await db
    .selectFrom("attachments")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("size"), eb.lit(0)).as("total"))
    .where("realm_id", "=", (eb) => eb.selectFrom("users").select("realm_id").where("id", "=", userId))
    .executeTakeFirst();
  return Number(row?.total ?? 0);
}

/** The Attachment objects of a user's uploads, in ID order (GET /attachments). */
export async function attachmentsOwnedBy(db: Db, userId: number): Promise<ApiAttachment[]> {
  const rows = await db.selectFrom("attachments").select("id").where("owner_id", "=", userId).orderBy("id").execute();
  return attachmentObjects(db, rows.map((r) => r.id));
}

export async function attachmentByPathId(db: Db, pathId: string): Promise<Attachment | undefined> {
  // No stored path_id holds a NUL or a lone surrogate (and PostgreSQL would reject the query).
  if (/\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(pathId)) return undefined;
  return db.selectFrom("attachments").selectAll().where("path_id", "=", pathId).executeTakeFirst();
}

export async function attachmentById(db: Db, attachmentId: number): Promise<Attachment | undefined> {
  if (!isStorableId(attachmentId)) return undefined;
  return db.selectFrom("attachments").selectAll().where("id", "=", attachmentId).executeTakeFirst();
}

/**
 * Zulip's validate_attachment_request for a logged-in user: the uploader may
 * always download a file; anyone else only if they can read at least one
 * message that links it (readableMessage decides, so the rules for direct
 * messages, private channels, protected history and guests are the message
 * rules). A file no message links yet is its uploader's alone.
 */
export async function canAccessAttachment(db: Db, realmId: number, actor: Actor, attachment: Pick<Attachment, "id" | "realm_id" | "owner_id">): Promise<boolean> {
  if (attachment.realm_id !== realmId) return false;
  if (attachment.owner_id === actor.id) return true;
  const links = await db
    .selectFrom("attachment_messages as am")
    .innerJoin("messages as m", "m.id", "am.message_id")
    .leftJoin("user_messages as um", (j) => j.onRef("um.message_id", "=", "m.id").on("um.user_id", "=", actor.id))
    .select(["m.id", "m.channel_id", "um.user_id as flags_user_id"])
    .where("am.attachment_id", "=", attachment.id)
    .orderBy("m.id")
    .execute();
  // A message the user has a flags row for, then one message per channel: a
  // channel message without a flags row is readable or not by its channel alone.
  const candidates: number[] = [];
  const received = links.find((l) => l.flags_user_id !== null);
  if (received) candidates.push(received.id);
  const seenChannels = new Set<number>();
  for (const link of links) {
    if (link.channel_id === null || seenChannels.has(link.channel_id)) continue;
    seenChannels.add(link.channel_id);
    candidates.push(link.id);
  }
  for (const messageId of candidates) {
    if (await readableMessage(db, realmId, actor, messageId)) return true;
  }
  return false;
}
