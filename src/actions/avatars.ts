// Uploaded avatars and organization icons (Zulip's set_avatar_backend /
// delete_avatar_backend with do_change_avatar_fields, and upload_icon /
// delete_icon_backend with do_change_icon_source).
//
// An upload is decoded and resized (images.ts) before the organization's
// transaction starts, so that slow image work never holds its lock. The
// resized files are written under new names first; the transaction then
// points the user (or organization) at them and queues the events; files of
// the previous image go after the commit, and the new ones if it fails.
//
// Files, in the file store (services.files) at the keys Zulip's local storage uses:
//   avatars/{realm_id}/{avatar_hash}.png, -medium.png, .original
//   avatars/{realm_id}/realm/icon-{icon_version}.png, .original
import crypto from "node:crypto";
import { createReadStream } from "node:fs";
import {
  AVATAR_IMAGE_TYPES,
  AvatarSource,
  DEFAULT_AVATAR_SIZE,
  IMAGE_BOMB_TOTAL_PIXELS,
  MAX_AVATAR_FILE_SIZE_MIB,
  MAX_ICON_FILE_SIZE_MIB,
  MEDIUM_AVATAR_SIZE,
  avatarChangesDisabled,
  avatarStoragePaths,
  avatarUrl,
  corruptedImage,
  exactlyOneAvatar,
  exactlyOneIcon,
  imageFileTooLarge,
  imageTooLarge,
  invalidImageFormat,
  newAvatarHash,
  realmIconStoragePaths,
  realmIconUrl,
  undecodableImage,
} from "../domain/avatar.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { isAdmin } from "../domain/roles.ts";
import { bareContentType, maxUploadBytes, OCTET_STREAM, uploadContentType } from "../domain/uploads.ts";
import { mustBeAdmin } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { probeImage, squarePng } from "../images.ts";
import { botWatchers } from "../queries/bots.ts";
import { getUserById, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import type { ReceivedUpload } from "./uploads.ts";

/** The files an upload request carried: how many fields held one, and the first. */
export interface ImageUpload {
  fieldCount: number;
  file?: ReceivedUpload;
}

/**
 * The type an upload says it has: the part's Content-Type, else (none, or
 * application/octet-stream, which clients send when they do not know) the
 * file name's. Zulip refuses an avatar sent as application/octet-stream; the
 * bytes are decoded here anyway, so Parley lets the name speak for it.
 */
function declaredImageType(file: ReceivedUpload): string {
  const declared = bareContentType(uploadContentType(file.declaredType, file.fileName));
  return declared === OCTET_STREAM ? bareContentType(uploadContentType("", file.fileName)) : declared;
}

/**
 * Zulip's upload_avatar_image and resize_avatar: the declared type (else the
 * file name's) must be one Zulip decodes; then the bytes must be an image of
 * such a format — whatever was declared — of at most IMAGE_BOMB_TOTAL_PIXELS
 * (checked from the header, before decoding); then it is scaled to each size.
 */
async function resizedImages(file: ReceivedUpload, sizes: readonly number[]): Promise<Buffer[]> {
  if (!AVATAR_IMAGE_TYPES.has(declaredImageType(file))) throw invalidImageFormat();
  let info;
  try {
    info = await probeImage(file.tempPath);
  } catch {
    throw undecodableImage();
  }
  if (info.width * info.height * info.pages > IMAGE_BOMB_TOTAL_PIXELS) throw imageTooLarge();
  try {
    return await Promise.all(sizes.map((size) => squarePng(file.tempPath, size)));
  } catch {
    throw corruptedImage();
  }
}

/** Stores files (key → bytes, or a received file to copy); returns their keys. */
async function writeFiles(services: Services, files: Record<string, Buffer | { copyOf: string }>): Promise<string[]> {
  const written: string[] = [];
  try {
    for (const [key, content] of Object.entries(files)) {
      // The original as received is kept too, as Zulip keeps it.
      await services.files.put(key, Buffer.isBuffer(content) ? content : createReadStream(content.copyOf));
      written.push(key);
    }
  } catch (error) {
    await removeFiles(services, written);
    throw error;
  }
  return written;
}

async function removeFiles(services: Services, keys: readonly string[]): Promise<void> {
  await Promise.all(keys.map((key) => services.files.delete(key).catch(() => {})));
}

// ---------------------------------------------------------------------------
// User avatars

/**
 * Zulip's notify_avatar_url_change: a realm_user update with the new avatar
 * fields to everyone, and for a bot a realm_bot update to those who see it in
 * realm_bots (its owner and the administrators).
 */
export async function notifyAvatarChange(trx: Trx, services: Services, pending: PendingEvents, user: User): Promise<void> {
  const url = avatarUrl(services.config.externalUrl, user);
  const active = await listActiveUsers(trx, user.realm_id);
  const person = {
    avatar_source: user.avatar_source,
    avatar_url: url,
    avatar_url_medium: avatarUrl(services.config.externalUrl, user, true),
    avatar_version: user.avatar_version,
    user_id: user.id,
  };
  pending.add(user.realm_id, { type: "realm_user", op: "update", person }, active.map((u) => u.id));
  if (user.is_bot && !user.is_system_bot) {
    const watchers = await botWatchers(trx, user);
    pending.add(user.realm_id, { type: "realm_bot", op: "update", bot: { user_id: user.id, avatar_url: url } }, watchers);
  }
}

/**
 * Points a user at a new avatar (`hash`, uploaded) or back at the default
 * (null), incrementing avatar_version, inside the caller's transaction, with
 * the events. Returns the user as changed and the previous uploaded avatar's
 * hash, if there was one.
 */
export async function setAvatarInTransaction(
  trx: Trx,
  services: Services,
  pending: PendingEvents,
  realmId: number,
  userId: number,
  hash: string | null,
): Promise<{ user: User; previousHash: string | null }> {
  const before = await getUserById(trx, realmId, userId);
  if (!before) throw new Error(`user ${userId} vanished`);
  await trx
    .updateTable("users")
    .set({ avatar_source: hash === null ? AvatarSource.DEFAULT : AvatarSource.UPLOADED, avatar_hash: hash, avatar_version: before.avatar_version + 1 })
    .where("id", "=", userId)
    .execute();
  const user = (await getUserById(trx, realmId, userId))!;
  await notifyAvatarChange(trx, services, pending, user);
  return { user, previousHash: before.avatar_hash };
}

async function changeAvatar(services: Services, realm: Realm, userId: number, hash: string | null): Promise<{ user: User; previousHash: string | null }> {
  return inRealmTransaction(services, realm.id, (trx, pending) => setAvatarInTransaction(trx, services, pending, realm.id, userId, hash));
}

export async function removeAvatarFiles(services: Services, realmId: number, hash: string | null): Promise<void> {
  if (hash !== null) await removeFiles(services, Object.values(avatarStoragePaths(realmId, hash)));
}

/** Zulip's avatar_changes_disabled(realm) check; administrators are exempt. */
function checkMayChangeAvatar(realm: Realm, user: User): void {
  if (parseRealmSettings(realm.settings).avatar_changes_disabled && !isAdmin(user.role)) throw avatarChangesDisabled();
}

/** An uploaded avatar checked, resized and written under a new name, not yet anyone's. */
export interface PreparedAvatar {
  hash: string;
  /** The keys of the files written: removed again if the avatar is not used. */
  written: string[];
}

/**
 * Checks and resizes an uploaded avatar image and writes its files (Zulip's
 * upload_avatar_image), before any transaction: slow image work never holds
 * the organization's lock. Pass the result to setAvatarInTransaction, or to
 * discardPreparedAvatar when it is not used.
 */
export async function prepareAvatar(services: Services, realm: Realm, file: ReceivedUpload): Promise<PreparedAvatar> {
  if (file.size > maxUploadBytes(MAX_AVATAR_FILE_SIZE_MIB)) throw imageFileTooLarge(MAX_AVATAR_FILE_SIZE_MIB);
  const [small, medium] = await resizedImages(file, [DEFAULT_AVATAR_SIZE, MEDIUM_AVATAR_SIZE]);
  const hash = newAvatarHash(crypto.randomBytes(20));
  const paths = avatarStoragePaths(realm.id, hash);
  const written = await writeFiles(services, { [paths.small]: small!, [paths.medium]: medium!, [paths.original]: { copyOf: file.tempPath } });
  return { hash, written };
}

export async function discardPreparedAvatar(services: Services, prepared: PreparedAvatar | undefined): Promise<void> {
  if (prepared) await removeFiles(services, prepared.written);
}

/** POST /users/me/avatar, in Zulip's order of checks. Returns the new avatar_url. */
export async function uploadAvatar(services: Services, realm: Realm, user: User, upload: ImageUpload): Promise<string> {
  const file = upload.file;
  if (upload.fieldCount !== 1 || !file) throw exactlyOneAvatar();
  checkMayChangeAvatar(realm, user);
  const prepared = await prepareAvatar(services, realm, file);
  let changed;
  try {
    changed = await changeAvatar(services, realm, user.id, prepared.hash);
  } catch (error) {
    await discardPreparedAvatar(services, prepared);
    throw error;
  }
  await removeAvatarFiles(services, realm.id, changed.previousHash);
  return avatarUrl(services.config.externalUrl, changed.user);
}

/** DELETE /users/me/avatar: back to the default avatar (a no-op when it is already). Returns avatar_url. */
export async function deleteAvatar(services: Services, realm: Realm, user: User): Promise<string> {
  checkMayChangeAvatar(realm, user);
  if (user.avatar_source !== AvatarSource.UPLOADED) return avatarUrl(services.config.externalUrl, user);
  const changed = await changeAvatar(services, realm, user.id, null);
  await removeAvatarFiles(services, realm.id, changed.previousHash);
  return avatarUrl(services.config.externalUrl, changed.user);
}

// ---------------------------------------------------------------------------
// The organization's icon

/**
 * Zulip's do_change_icon_source: a new icon_source and the next icon_version,
 * then a `realm` update_dict event (property "icon") to every active user.
 * `writeIcon` stores the uploaded icon's files for the new version, inside the
 * transaction. Returns the realm as changed.
 */
async function changeIcon(
  services: Services,
  realmId: number,
  source: string,
  writeIcon?: (version: number) => Promise<string[]>,
): Promise<{ realm: Realm; previous: Pick<Realm, "icon_source" | "icon_version"> }> {
  let written: string[] = [];
  try {
    return await inRealmTransaction(services, realmId, async (trx, pending) => {
      const before = await trx.selectFrom("realms").selectAll().where("id", "=", realmId).executeTakeFirstOrThrow();
      const version = before.icon_version + 1;
      await trx.updateTable("realms").set({ icon_source: source, icon_version: version }).where("id", "=", realmId).execute();
      if (writeIcon) written = await writeIcon(version);
      const realm = { ...before, icon_source: source, icon_version: version };
      const event = { type: "realm", op: "update_dict", property: "icon", data: { icon_source: source, icon_url: realmIconUrl(services.config.externalUrl, realm) } };
      pending.add(realmId, event, (await listActiveUsers(trx, realmId)).map((u) => u.id));
      return { realm, previous: before };
    });
  } catch (error) {
    await removeFiles(services, written);
    throw error;
  }
}

async function removeOldIcon(services: Services, realmId: number, previous: Pick<Realm, "icon_source" | "icon_version">): Promise<void> {
  if (previous.icon_source === AvatarSource.UPLOADED) await removeFiles(services, Object.values(realmIconStoragePaths(realmId, previous.icon_version)));
}

/** POST /realm/icon (administrators). Returns the new icon_url. */
export async function uploadRealmIcon(services: Services, realm: Realm, user: User, upload: ImageUpload): Promise<string> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  const file = upload.file;
  if (upload.fieldCount !== 1 || !file) throw exactlyOneIcon();
  if (file.size > maxUploadBytes(MAX_ICON_FILE_SIZE_MIB)) throw imageFileTooLarge(MAX_ICON_FILE_SIZE_MIB);
  const [small] = await resizedImages(file, [DEFAULT_AVATAR_SIZE]);
  const changed = await changeIcon(services, realm.id, AvatarSource.UPLOADED, (version) => {
    const paths = realmIconStoragePaths(realm.id, version);
    // A failed transaction may have left files of this version behind: the next attempt replaces them.
    return removeFiles(services, Object.values(paths)).then(() => writeFiles(services, { [paths.small]: small!, [paths.original]: { copyOf: file.tempPath } }));
  });
  await removeOldIcon(services, realm.id, changed.previous);
  return realmIconUrl(services.config.externalUrl, changed.realm);
}

/** DELETE /realm/icon (administrators): back to the generated icon. Returns icon_url. */
export async function deleteRealmIcon(services: Services, realm: Realm, user: User): Promise<string> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  const changed = await changeIcon(services, realm.id, AvatarSource.DEFAULT);
  await removeOldIcon(services, realm.id, changed.previous);
  return realmIconUrl(services.config.externalUrl, changed.realm);
}
