// Uploaded files: storing one (POST /user_uploads), deleting one (DELETE
// /attachments/{id}) with the `attachment` events they cause, and the key
// that signs temporary URLs. Files are kept in the configured file store
// (services.files) under their path_id; files still arriving wait on this
// machine's disk, in the ".incoming" directory of config.uploadsDir.
import crypto from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { Config } from "../config.ts";
import {
  checkUploadSize,
  makePathId,
  temporaryToken,
  temporaryUrl,
  uploadContentType,
  uploadUrl,
  withDetectedCharset,
} from "../domain/uploads.ts";
import { badRequest } from "../errors.ts";
import { INCOMING_DIR } from "../files/local-store.ts";
import { FileExistsError, readStoredFile, type FileStore } from "../files/store.ts";
import { attachmentObjects, realmUploadSpaceUsed } from "../queries/attachments.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Attachment, Realm, User } from "../storage/schema.ts";
import { inRealmTransaction } from "./transaction.ts";

/** A file received in a multipart request, waiting on disk to be stored or discarded. */
export interface ReceivedUpload {
  /** The client's file name, cleaned as Django does (domain/uploads.ts uploadedFileName). */
  fileName: string;
  /** The part's Content-Type as the multipart parser reported it. */
  declaredType: string;
  size: number;
  /** A file in incomingDir(config); uploadFile copies it into the file store. */
  tempPath: string;
}

/** Where multipart files are written while the request is still arriving. */
export function incomingDir(config: Config): string {
  return path.join(config.uploadsDir, INCOMING_DIR);
}

/** A fresh temporary file name in incomingDir (the directory is created if missing). */
export async function newIncomingPath(config: Config): Promise<string> {
  const dir = incomingDir(config);
  await fs.mkdir(dir, { recursive: true });
  return path.join(dir, crypto.randomBytes(16).toString("hex"));
}

/** Removes temporary files older than `maxAgeMs` left by requests that never finished (a crash, say). */
export async function sweepIncoming(config: Config, maxAgeMs: number): Promise<void> {
  const dir = incomingDir(config);
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return;
  }
  const cutoff = Date.now() - maxAgeMs;
  for (const name of names) {
    const file = path.join(dir, name);
    const stat = await fs.stat(file).catch(() => undefined);
    if (stat && stat.mtimeMs < cutoff) await fs.rm(file, { force: true }).catch(() => {});
  }
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

/** How much of a text/plain file is read to decide its charset (Zulip reads up to 32 KiB when streaming). */
const CHARSET_SNIFF_BYTES = 64 * 1024;

/**
 * POST /user_uploads: stores a received file under a new path_id, records the
 * attachment (linked to no message yet, so visible to its uploader only) and
 * tells the uploader's clients (`attachment` op `add`). Returns the URL a
 * message links it by and the file's name.
 */
export async function uploadFile(services: Services, realm: Realm, user: User, upload: ReceivedUpload): Promise<{ url: string; filename: string }> {
  const { config } = services;
  checkUploadSize(upload.size, config.maxFileUploadSizeMib);
  let contentType = uploadContentType(upload.declaredType, upload.fileName);
  const head = await readHead(upload.tempPath, CHARSET_SNIFF_BYTES);
  contentType = withDetectedCharset(contentType, head, upload.size <= head.length);
  const pathId = makePathId(realm.id, upload.fileName, crypto.randomBytes(19));
  await services.files.put(pathId, createReadStream(upload.tempPath));
  try {
    await inRealmTransaction(services, realm.id, async (trx, pending) => {
      const { id } = await trx
        .insertInto("attachments")
        .values({
          realm_id: realm.id,
          owner_id: user.id,
          path_id: pathId,
          file_name: upload.fileName,
          content_type: contentType,
          size: upload.size,
          // Zulip reports whole seconds, times 1000.
          create_time: services.now() * 1000,
        })
        .returning("id")
        .executeTakeFirstOrThrow();
      const [attachment] = await attachmentObjects(trx, [id]);
      const event = { type: "attachment", op: "add", attachment, upload_space_used: await realmUploadSpaceUsed(trx, realm.id) };
      pending.add(realm.id, event, [user.id]);
    });
  } catch (error) {
    await services.files.delete(pathId);
    throw error;
  }
  return { url: uploadUrl(pathId), filename: upload.fileName };
}

/**
 * DELETE /attachments/{id}: only the uploader may delete a file; anyone
 * else's, or an unknown ID, is "Invalid attachment". Removes the row, its
 * message links and the file, then sends `attachment` op `remove`.
 */
export async function deleteAttachment(services: Services, realm: Realm, user: User, attachmentId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const attachment = isStorableId(attachmentId)
      ? await trx.selectFrom("attachments").selectAll().where("id", "=", attachmentId).where("owner_id", "=", user.id).executeTakeFirst()
      : undefined;
    if (!attachment) throw badRequest("Invalid attachment");
    await trx.deleteFrom("attachment_messages").where("attachment_id", "=", attachment.id).execute();
    await trx.deleteFrom("attachments").where("id", "=", attachment.id).execute();
    const event = { type: "attachment", op: "remove", attachment: { id: attachment.id }, upload_space_used: await realmUploadSpaceUsed(trx, realm.id) };
    pending.add(realm.id, event, [user.id]);
    // The file goes last: if it cannot be removed the transaction rolls back and nothing changed.
    try {
      await services.files.delete(attachment.path_id);
    } catch {
      throw badRequest("An error occurred while deleting the attachment. Please try again later.");
    }
  });
}

/** Where the signing key is kept: beside the files, in whichever store holds them, so it moves with them. */
const SIGNING_KEY = ".signing-key";

const signingKeys = new WeakMap<FileStore, Promise<Buffer>>();

/**
 * The key that signs temporary URLs (and, derived from it, image-proxy
 * paths): random, made once and kept in the file store, so every process
 * using that store shares it; read once per process. Written with put(),
 * which never replaces a file, so concurrent starts agree on one key.
 */
export function uploadSigningKey(files: FileStore): Promise<Buffer> {
  let key = signingKeys.get(files);
  if (!key) {
    key = loadOrMakeSigningKey(files);
    key.catch(() => signingKeys.delete(files));
    signingKeys.set(files, key);
  }
  return key;
}

async function loadOrMakeSigningKey(files: FileStore): Promise<Buffer> {
  const read = async () => {
    const file = await files.open(SIGNING_KEY);
    return file && Buffer.from((await readStoredFile(file)).toString("utf8").trim(), "hex");
  };
  let key = await read();
  if (key === undefined) {
    try {
      await files.put(SIGNING_KEY, Buffer.from(crypto.randomBytes(32).toString("hex")));
    } catch (error) {
      if (!(error instanceof FileExistsError)) throw error;
    }
    key = await read();
  }
  if (key === undefined || key.length < 32) throw new Error(`the stored ${SIGNING_KEY} is not a usable key; delete it to make a new one`);
  return key;
}

/** GET /api/v1/user_uploads/…: a URL that serves the file without credentials for a minute. */
export async function temporaryFileUrl(services: Services, attachment: Pick<Attachment, "id" | "path_id">): Promise<string> {
  const key = await uploadSigningKey(services.files);
  return temporaryUrl(temporaryToken(key, attachment.id, attachment.path_id, services.now()), attachment.path_id);
}
