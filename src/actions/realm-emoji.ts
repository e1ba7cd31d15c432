// Custom emoji (Zulip's zerver/views/realm_emoji.py and actions/realm_emoji.py):
// adding one (POST /realm/emoji/{name}, an image upload) and deactivating one
// (DELETE /realm/emoji/{name}). Each change sends the whole realm_emoji
// object to every active user in a `realm_emoji` event (op `update`).
//
// Images are kept in the file store (services.files) at
// avatars/{realm_id}/emoji/images/{file_name}, and served publicly at
// /user_avatars/… as Zulip's local storage does.
// Deactivating keeps the image: old messages and reactions still show it.
import crypto from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import {
  checkCustomEmojiName,
  customEmojiName,
  emojiFileExtension,
  emojiFileTooLarge,
  emojiStoragePath,
  isBuiltInEmojiName,
  maxEmojiFileBytes,
  sniffImageType,
  undecodableImage,
} from "../domain/emoji.ts";
import { hasPermission } from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES } from "../domain/realm-settings.ts";
import { isAdmin, isGuest } from "../domain/roles.ts";
import { bareContentType, uploadContentType } from "../domain/uploads.ts";
import { ApiError, badRequest, humansOnly, insufficientPermission } from "../errors.ts";
import { activeRealmEmoji, realmEmojiDict } from "../queries/realm-emoji.ts";
import { listActiveUsers } from "../queries/users.ts";
import type { PendingEvents } from "../events/notifier.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import type { ReceivedUpload } from "./uploads.ts";

/** The files an upload request carried: how many fields held one, and the first. */
export interface EmojiUpload {
  fieldCount: number;
  file?: ReceivedUpload;
}

async function readHead(file: string, bytes: number): Promise<Buffer> {
  const handle = await fs.open(file, "r");
  try {
    const buffer = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buffer, 0, bytes, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function notifyRealmEmoji(trx: Trx, pending: PendingEvents, realmId: number): Promise<void> {
  const realmEmoji = await realmEmojiDict(trx, realmId);
  const everyone = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "realm_emoji", op: "update", realm_emoji: realmEmoji }, everyone);
}

/**
 * POST /realm/emoji/{emoji_name}, in Zulip's order of checks: guests and bots
 * never (require_member_or_admin); the name; can_add_custom_emoji_group; an
 * active emoji of that name; exactly one file; built-in names only for
 * administrators; the size; then the image type and contents.
 */
export async function addRealmEmoji(services: Services, realm: Realm, user: User, rawName: string, upload: EmojiUpload): Promise<void> {
  if (isGuest(user.role)) throw badRequest("Not allowed for guest users");
  if (user.is_bot) throw humansOnly();
  const name = customEmojiName(rawName);
  checkCustomEmojiName(name);
  const db = services.storage.db;
  const actor = await actorFor(db, user);
  const settings = parseRealmSettings(realm.settings);
  if (!hasPermission(settings.can_add_custom_emoji_group, REALM_GROUP_SETTING_RULES.can_add_custom_emoji_group, actor)) throw insufficientPermission();

  // The image goes into place inside the transaction, so it is removed again if anything fails, the commit included.
  let stored: string | undefined;
  try {
    await inRealmTransaction(services, realm.id, async (trx, pending) => {
      if (await activeRealmEmoji(trx, realm.id, name)) throw badRequest("A custom emoji with this name already exists.");
      const file = upload.file;
      if (upload.fieldCount !== 1 || !file) throw badRequest("You must upload exactly one file.");
      if (isBuiltInEmojiName(name) && !isAdmin(user.role)) throw badRequest("Only administrators can override default emoji.");
      if (file.size > maxEmojiFileBytes()) throw emojiFileTooLarge();
      // Zulip's get_file_info: the declared type, else the file name's; then only image types browsers show inline.
      const extension = emojiFileExtension(bareContentType(uploadContentType(file.declaredType, file.fileName)));
      if (sniffImageType(await readHead(file.tempPath, 64)) === undefined) throw undecodableImage();

      const fileName = `${crypto.randomBytes(8).toString("hex")}${extension}`;
      const key = emojiStoragePath(realm.id, fileName);
      // put() never replaces an existing file; the temporary file is removed after the reply.
      await services.files.put(key, createReadStream(file.tempPath));
      stored = key;
      await trx.insertInto("realm_emoji").values({ realm_id: realm.id, author_id: user.id, name, file_name: fileName, date_created: services.now() }).execute();
      await notifyRealmEmoji(trx, pending, realm.id);
    });
  } catch (error) {
    if (stored !== undefined) await services.files.delete(stored);
    throw error;
  }
}

/**
 * DELETE /realm/emoji/{emoji_name}: marks the active emoji of that name
 * deactivated. Unknown names are a 404; only administrators and the emoji's
 * author may deactivate it (Zulip's check_remove_custom_emoji).
 */
export async function deactivateRealmEmoji(services: Services, realm: Realm, user: User, name: string): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const emoji = await activeRealmEmoji(trx, realm.id, name);
    if (!emoji) throw new ApiError(404, "BAD_REQUEST", `Emoji '${name}' does not exist`);
    if (!isAdmin(user.role) && (emoji.author_id === null || emoji.author_id !== user.id)) {
      throw badRequest("Must be an organization administrator or emoji author");
    }
    await trx.updateTable("realm_emoji").set({ deactivated: true }).where("id", "=", emoji.id).execute();
    await notifyRealmEmoji(trx, pending, realm.id);
  });
}
