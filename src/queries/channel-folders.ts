// Reading channel folders, and the one serializer of the folder object used by
// GET /channel_folders, POST /register and channel_folder events.
import type { Kysely, Transaction } from "kysely";
import type { ChannelFolder, Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** A channel folder as the API returns it (the column sort_order is the API's `order`). */
export interface ApiChannelFolder {
  id: number;
  name: string;
  description: string;
  rendered_description: string;
  order: number;
  date_created: number;
  creator_id: number | null;
  is_archived: boolean;
}

export function formatChannelFolder(folder: ChannelFolder): ApiChannelFolder {
  return {
    id: folder.id,
    name: folder.name,
    description: folder.description,
    rendered_description: folder.rendered_description,
    order: folder.sort_order,
    date_created: folder.date_created,
    creator_id: folder.creator_id,
    is_archived: folder.is_archived,
  };
}

export async function getChannelFolder(db: Db, realmId: number, folderId: number): Promise<ChannelFolder | undefined> {
  // IDs are 32-bit integer columns; PostgreSQL refuses to compare with larger literals.
  if (!Number.isInteger(folderId) || folderId < 1 || folderId > 2 ** 31 - 1) return undefined;
  return db.selectFrom("channel_folders").selectAll().where("realm_id", "=", realmId).where("id", "=", folderId).executeTakeFirst();
}

/** Every folder of the organization, archived ones included, by order then ID. */
export async function listChannelFolderRows(db: Db, realmId: number): Promise<ChannelFolder[]> {
  return db.selectFrom("channel_folders").selectAll().where("realm_id", "=", realmId).orderBy("sort_order").orderBy("id").execute();
}

/** The organization's folders as API objects, by order then ID; archived ones only when asked. */
export async function listChannelFolders(db: Db, realmId: number, options: { includeArchived: boolean }): Promise<ApiChannelFolder[]> {
  let query = db.selectFrom("channel_folders").selectAll().where("realm_id", "=", realmId);
  if (!options.includeArchived) query = query.where("is_archived", "=", false);
  const rows = await query.orderBy("sort_order").orderBy("id").execute();
  return rows.map(formatChannelFolder);
}

/** Whether any channel, archived or not, is filed in the folder. */
export async function isChannelFolderInUse(db: Db, folderId: number): Promise<boolean> {
  const row = await db.selectFrom("channels").select("id").where("folder_id", "=", folderId).limit(1).executeTakeFirst();
  return row !== undefined;
}
