// Every change to channel folders: permission checks, the writes in one
// transaction, then the channel_folder events (Zulip's actions/channel_folders).
import type { Kysely, Transaction } from "kysely";
import {
  checkFolderDescription,
  checkFolderName,
  checkFolderNameLength,
  folderNameInUse,
  folderOrderMapping,
  isFolderNameTaken,
} from "../domain/channel-folders.ts";
import { isAdmin } from "../domain/roles.ts";
import type { ClientEvent } from "../events/notifier.ts";
import { badRequest, mustBeAdmin } from "../errors.ts";
import {
  formatChannelFolder,
  getChannelFolder,
  isChannelFolderInUse,
  listChannelFolderRows,
} from "../queries/channel-folders.ts";
import { listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { ChannelFolder, Database, Realm, User } from "../storage/schema.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { renderDescription } from "../queries/markdown-context.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Folder events go to every active user of the organization, as in Zulip. */
async function notifyRealm(services: Services, realmId: number, events: readonly ClientEvent[]): Promise<void> {
  if (events.length === 0) return;
  const recipients = (await listActiveUsers(services.storage.db, realmId)).map((u) => u.id);
  for (const event of events) services.notifier.notify(realmId, event, recipients);
}

/** Throws when `name` is already used by another folder of the organization (archived ones too). */
async function checkNameAvailable(db: Db, realmId: number, name: string, exceptId?: number): Promise<void> {
  const existing = await listChannelFolderRows(db, realmId);
  if (isFolderNameTaken(existing, name, exceptId)) throw folderNameInUse();
}

/** A unique-index violation on either dialect. */
function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE";
}

export interface NewChannelFolderInput {
  name: string;
  description: string;
}

/** POST /channel_folders/create. Returns the new folder. */
export async function createChannelFolder(services: Services, realm: Realm, actor: User, input: NewChannelFolderInput): Promise<ChannelFolder> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  checkFolderNameLength(input.name);
  checkFolderDescription(input.description);
  checkFolderName(input.name);
  const db = services.storage.db;
  await checkNameAvailable(db, realm.id, input.name);
  let folder: ChannelFolder;
  try {
    folder = await db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("channel_folders")
        .values({
          realm_id: realm.id,
          name: input.name,
          description: input.description,
          rendered_description: await renderDescription(trx, services.config, realm.id, input.description, await compiledLinkifiersFor(services.storage, trx, realm)),
          // Placeholder until the ID is known: a new folder sorts last, at its own ID.
          sort_order: 0,
          date_created: services.now(),
          creator_id: actor.id,
        })
        .returning("id")
        .executeTakeFirstOrThrow();
      await trx.updateTable("channel_folders").set({ sort_order: inserted.id }).where("id", "=", inserted.id).execute();
      const row = await getChannelFolder(trx, realm.id, inserted.id);
      if (!row) throw new Error("inserted channel folder vanished");
      return row;
    });
  } catch (error) {
    // Two requests for one name at once: the unique index decides.
    if (isUniqueViolation(error)) throw folderNameInUse();
    throw error;
  }
  await notifyRealm(services, realm.id, [{ type: "channel_folder", op: "add", channel_folder: formatChannelFolder(folder) }]);
  return folder;
}

export interface ChannelFolderChanges {
  name?: string | undefined;
  description?: string | undefined;
  isArchived?: boolean | undefined;
}

/**
 * PATCH /channel_folders/{id}. Only values that differ from the stored ones
 * change, each with its own update event. All checks run before any write, so
 * a refused archive leaves the name and description untouched too.
 */
export async function updateChannelFolder(
  services: Services,
  realm: Realm,
  actor: User,
  folderId: number,
  changes: ChannelFolderChanges,
): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  if (changes.name !== undefined) checkFolderNameLength(changes.name);
  if (changes.description !== undefined) checkFolderDescription(changes.description);
  const db = services.storage.db;
  let events: ClientEvent[];
  try {
    events = await db.transaction().execute(async (trx) => {
      const folder = await getChannelFolder(trx, realm.id, folderId);
      if (!folder) throw badRequest("Invalid channel folder ID");
      const update: { name?: string; description?: string; rendered_description?: string; is_archived?: boolean } = {};
      const data: Record<string, unknown>[] = [];
      if (changes.name !== undefined && changes.name !== folder.name) {
        checkFolderName(changes.name);
        await checkNameAvailable(trx, realm.id, changes.name, folder.id);
        update.name = changes.name;
        data.push({ name: changes.name });
      }
      if (changes.description !== undefined && changes.description !== folder.description) {
        update.description = changes.description;
        update.rendered_description = await renderDescription(trx, services.config, realm.id, changes.description, await compiledLinkifiersFor(services.storage, trx, realm));
        data.push({ description: update.description, rendered_description: update.rendered_description });
      }
      if (changes.isArchived !== undefined && changes.isArchived !== folder.is_archived) {
        if (changes.isArchived && (await isChannelFolderInUse(trx, folder.id))) {
          throw badRequest("You need to remove all the channels from this folder to archive it.");
        }
        update.is_archived = changes.isArchived;
        data.push({ is_archived: changes.isArchived });
      }
      if (data.length > 0) await trx.updateTable("channel_folders").set(update).where("id", "=", folder.id).execute();
      return data.map((d) => ({ type: "channel_folder", op: "update", channel_folder_id: folder.id, data: d }));
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw folderNameInUse();
    throw error;
  }
  await notifyRealm(services, realm.id, events);
}

/** PATCH /channel_folders: each folder's order becomes its index in `order`. */
export async function reorderChannelFolders(services: Services, realm: Realm, actor: User, order: readonly number[]): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  await services.storage.db.transaction().execute(async (trx) => {
    const folders = await listChannelFolderRows(trx, realm.id);
    const mapping = folderOrderMapping(
      folders.map((f) => f.id),
      order,
    );
    for (const folder of folders) {
      const position = mapping.get(folder.id)!;
      if (position !== folder.sort_order) {
        await trx.updateTable("channel_folders").set({ sort_order: position }).where("id", "=", folder.id).execute();
      }
    }
  });
  await notifyRealm(services, realm.id, [{ type: "channel_folder", op: "reorder", order: [...order] }]);
}
