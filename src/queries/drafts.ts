// Drafts as the API shows them, through the one serializer in
// domain/drafts.ts: GET /drafts, POST /register's drafts and the `drafts`
// events.
import type { Kysely, Transaction } from "kysely";
import { dmKeyUserIds } from "../domain/messages.ts";
import { formatDraft, type ApiDraft } from "../domain/drafts.ts";
import type { Database, Draft } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

function draftsQuery(db: Db, userId: number) {
  return db
    .selectFrom("drafts")
    .leftJoin("recipients", "recipients.id", "drafts.recipient_id")
    .select(["drafts.id", "drafts.user_id", "drafts.recipient_id", "drafts.topic", "drafts.content", "drafts.last_edit_time_ms", "recipients.channel_id", "recipients.dm_key"])
    .where("drafts.user_id", "=", userId);
}

type Row = Draft & { channel_id: number | null; dm_key: string | null };

function format(row: Row): ApiDraft {
  const recipient = row.recipient_id === null ? null : { channel_id: row.channel_id, dm_user_ids: row.dm_key === null ? null : dmKeyUserIds(row.dm_key) };
  return formatDraft(row, recipient);
}

/** GET /drafts: oldest edit first. */
export async function draftsOf(db: Db, userId: number): Promise<ApiDraft[]> {
  const rows = await draftsQuery(db, userId).orderBy("drafts.last_edit_time_ms").orderBy("drafts.id").execute();
  return rows.map(format);
}

/** POST /register's drafts: the most recently edited first, at most `limit`. */
export async function recentDraftsOf(db: Db, userId: number, limit: number): Promise<ApiDraft[]> {
  const rows = await draftsQuery(db, userId).orderBy("drafts.last_edit_time_ms", "desc").orderBy("drafts.id", "desc").limit(limit).execute();
  return rows.map(format);
}

/** One of the user's own drafts; another user's does not exist for them. */
export async function draftOf(db: Db, userId: number, draftId: number): Promise<ApiDraft | undefined> {
  const row = await draftsQuery(db, userId).where("drafts.id", "=", draftId).executeTakeFirst();
  return row ? format(row) : undefined;
}
