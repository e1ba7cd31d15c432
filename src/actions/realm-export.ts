// Organization data exports (Zulip's zerver/views/realm_export.py and
// zerver/actions/realm_export.py): an administrator asks for one, a row is
// written and the realm_export job queued in the same transaction; the job
// (workers/realm-export.ts) writes the tarball into the file store and marks
// the row succeeded or failed. Every change sends the whole list to the
// organization's administrators as a realm_export event.
import crypto from "node:crypto";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { PassThrough } from "node:stream";
import {
  API_EXPORT_TYPES,
  EXPORT_LIMIT,
  EXPORT_LIMIT_WINDOW_SECONDS,
  EXPORT_RETENTION_SECONDS,
  ExportStatus,
  ExportType,
  exportFileName,
  exportStoragePath,
  MAX_MESSAGE_HISTORY,
  MAX_UPLOAD_QUOTA_BYTES,
  serializeExports,
  type ExportTypeValue,
  type SerializedExport,
} from "../domain/realm-export.ts";
import { isAdmin } from "../domain/roles.ts";
import { badRequest, mustBeAdmin } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { enqueueJob } from "../jobs/queue.ts";
import { REALM_EXPORT_EXPIRE_JOB, REALM_EXPORT_JOB, type RealmExportExpireJob, type RealmExportJob } from "../jobs/names.ts";
import {
  exportConsents,
  exportsRequestedSince,
  humanAdminIds,
  messageCount,
  ownerConsents,
  ownerEmailExportable,
  realmExportRow,
  realmExportRows,
  uploadSpaceBytes,
  writeExportTarball,
  type ExportStats,
} from "../queries/realm-export.ts";
import { getRealm } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

/** Zulip's require_realm_admin. */
function requireAdmin(user: Pick<User, "role">): void {
  if (!isAdmin(user.role)) throw mustBeAdmin();
}

/** Sends the organization's export list to its administrators (Zulip's notify_realm_export). */
async function notifyRealmExport(trx: Trx, services: Services, pending: PendingEvents, realmId: number): Promise<void> {
  const exports = serializeExports(await realmExportRows(trx, realmId), services.config.externalUrl);
  pending.add(realmId, { type: "realm_export", exports }, await humanAdminIds(trx, realmId));
}

/** GET /export/realm. */
export async function listRealmExports(services: Services, realm: Realm, user: User): Promise<SerializedExport[]> {
  requireAdmin(user);
  return serializeExports(await realmExportRows(services.storage.db, realm.id), services.config.externalUrl);
}

/** GET /export/realm/consents. */
export async function listExportConsents(services: Services, realm: Realm, user: User): Promise<{ user_id: number; consented: boolean }[]> {
  requireAdmin(user);
  return exportConsents(services.storage.db, realm.id);
}

/** POST /export/realm: checks Zulip's limits, records the request and queues the job; returns the export's id. */
export async function requestRealmExport(services: Services, realm: Realm, user: User, exportType: number): Promise<number> {
  requireAdmin(user);
  if (!API_EXPORT_TYPES.includes(exportType)) throw badRequest("Invalid export_type");
  const db = services.storage.db;
  const now = services.now();
  // Large organizations are exported on the command line (`parley export`), as Zulip asks for a manual export.
  if ((await messageCount(db, realm.id)) > MAX_MESSAGE_HISTORY || (await uploadSpaceBytes(db, realm.id)) > MAX_UPLOAD_QUOTA_BYTES) {
    throw badRequest("Please request a manual export from your server's administrator.");
  }
  if (exportType === ExportType.FULL_WITH_CONSENT && !(await ownerConsents(db, realm.id))) {
    throw badRequest("Make sure at least one Organization Owner is consenting to the export or contact your server's administrator for help.");
  }
  if (exportType === ExportType.PUBLIC && !(await ownerEmailExportable(db, realm.id))) {
    throw badRequest("Make sure at least one Organization Owner allows other Administrators to see their email address or contact your server's administrator for help");
  }
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    // Counted under the organization's lock, so concurrent requests cannot pass the limit together.
    if ((await exportsRequestedSince(trx, realm.id, now - EXPORT_LIMIT_WINDOW_SECONDS)) >= EXPORT_LIMIT) throw badRequest("Exceeded rate limit.");
    const { id } = await trx
      .insertInto("realm_exports")
      .values({ realm_id: realm.id, acting_user_id: user.id, type: exportType, status: ExportStatus.REQUESTED, date_requested: now })
      .returning("id")
      .executeTakeFirstOrThrow();
    // One attempt: a failed export is reported as failed and asked for again, as in Zulip.
    await enqueueJob(trx, pending, services, REALM_EXPORT_JOB, { realm_id: realm.id, export_id: id } satisfies RealmExportJob, { maxAttempts: 1 });
    await notifyRealmExport(trx, services, pending, realm.id);
    return id;
  });
}

/** DELETE /export/realm/{export_id}: removes the tarball; the row stays, marked deleted. */
export async function deleteRealmExport(services: Services, realm: Realm, user: User, exportId: number): Promise<void> {
  requireAdmin(user);
  await removeExport(services, realm.id, exportId, true);
}

async function removeExport(services: Services, realmId: number, exportId: number, byRequest: boolean): Promise<void> {
  const path = await inRealmTransaction(services, realmId, async (trx, pending) => {
    const row = await realmExportRow(trx, realmId, exportId);
    if (!row) {
      if (byRequest) throw badRequest("Invalid data export ID");
      return null;
    }
    if (row.status === ExportStatus.DELETED) {
      if (byRequest) throw badRequest("Export already deleted");
      return null;
    }
    if (row.status === ExportStatus.FAILED) {
      if (byRequest) throw badRequest("Export failed, nothing to delete");
      return null;
    }
    if (row.status === ExportStatus.REQUESTED || row.status === ExportStatus.STARTED) {
      if (byRequest) throw badRequest("Export still in progress");
      return null;
    }
    await trx.updateTable("realm_exports").set({ status: ExportStatus.DELETED, date_deleted: services.now() }).where("id", "=", exportId).execute();
    await notifyRealmExport(trx, services, pending, realmId);
    return row.export_path;
  });
  // After the commit: a row marked deleted never points at a file someone could still be handed.
  if (path !== null) await services.files.delete(path);
}

/** The retention period ran out: the tarball is deleted as if an administrator had (REALM_EXPORT_EXPIRE_JOB). */
export async function expireRealmExport(services: Services, realmId: number, exportId: number): Promise<void> {
  await removeExport(services, realmId, exportId, false);
}

/**
 * Runs a requested export (REALM_EXPORT_JOB): writes the tarball into the
 * file store, then marks the export succeeded and queues its expiry. Throws
 * if the export cannot be written; the job's failure handler marks it failed.
 */
export async function runRealmExport(services: Services, realmId: number, exportId: number): Promise<void> {
  const db = services.storage.db;
  const row = await realmExportRow(db, realmId, exportId);
  const realm = await getRealm(db, realmId);
  // Deleted meanwhile, or run already: nothing to do.
  if (!row || !realm || (row.status !== ExportStatus.REQUESTED && row.status !== ExportStatus.STARTED)) return;
  await db.updateTable("realm_exports").set({ status: ExportStatus.STARTED, date_started: services.now() }).where("id", "=", exportId).execute();

  const random = crypto.randomBytes(16).toString("hex");
  const fileName = exportFileName(random);
  const key = exportStoragePath(realmId, random, fileName);
  const size = await storeExportTarball(services, realm, row.type as ExportTypeValue, key, fileName.replace(/\.tar\.gz$/, ""));

  await inRealmTransaction(services, realmId, async (trx, pending) => {
    await trx
      .updateTable("realm_exports")
      .set({ status: ExportStatus.SUCCEEDED, date_succeeded: services.now(), export_path: key, tarball_size_bytes: size })
      .where("id", "=", exportId)
      .execute();
    await enqueueJob(trx, pending, services, REALM_EXPORT_EXPIRE_JOB, { realm_id: realmId, export_id: exportId } satisfies RealmExportExpireJob, {
      runAt: (services.now() + EXPORT_RETENTION_SECONDS) * 1000,
    });
    await notifyRealmExport(trx, services, pending, realmId);
  });
}

/** Streams the export into the file store under `key`; returns its size. A partial tarball is never left behind (put() is all or nothing). */
async function storeExportTarball(services: Services, realm: Realm, type: ExportTypeValue, key: string, dir: string): Promise<number> {
  const body = new PassThrough();
  // Its failures reach us through put() and the writer's pipeline, even one before the pipeline is attached.
  body.on("error", () => {});
  const putting = services.files.put(key, body);
  // The store gave up (full disk, say): stop writing into a pipe nobody reads.
  void putting.catch((error: unknown) => body.destroy(error as Error));
  const writing: Promise<ExportStats> = writeExportTarball(services.storage.db, services.files, realm, type, dir, body, { nowSeconds: services.now() });
  const [, stored] = await Promise.all([writing, putting]);
  return stored.size;
}

/** The export job failed for good: the export is marked failed, and administrators told. */
export async function markRealmExportFailed(services: Services, realmId: number, exportId: number): Promise<void> {
  await inRealmTransaction(services, realmId, async (trx, pending) => {
    const row = await realmExportRow(trx, realmId, exportId);
    if (!row || (row.status !== ExportStatus.REQUESTED && row.status !== ExportStatus.STARTED)) return;
    await trx.updateTable("realm_exports").set({ status: ExportStatus.FAILED, date_failed: services.now() }).where("id", "=", exportId).execute();
    await notifyRealmExport(trx, services, pending, realmId);
  });
}

/** A member changed allow_private_data_export: administrators see the consent list change (Zulip's realm_export_consent). */
export async function queueExportConsentEvent(trx: Trx, pending: PendingEvents, realmId: number, userId: number, consented: boolean): Promise<void> {
  pending.add(realmId, { type: "realm_export_consent", user_id: userId, consented }, await humanAdminIds(trx, realmId));
}

/**
 * `parley export`: writes the organization's export to `outputPath` on this
 * machine (Zulip's manage.py export), refusing to overwrite a file. Recorded
 * as an export without an acting user, which the API does not list.
 */
export async function exportRealmToFile(
  services: Services,
  realm: Realm,
  type: ExportTypeValue,
  outputPath: string,
  progress: (what: string) => void,
  zulipVersion?: string,
): Promise<ExportStats> {
  const db = services.storage.db;
  const partial = `${outputPath}.partial`;
  // Neither an existing tarball nor another run's partial one is overwritten ("wx" below).
  for (const existing of [outputPath, partial]) {
    const found = await fs.stat(existing).then(
      () => true,
      () => false,
    );
    if (found) throw badRequest(`Refusing to overwrite existing file: ${existing}`);
  }
  const { id } = await db
    .insertInto("realm_exports")
    .values({ realm_id: realm.id, acting_user_id: null, type, status: ExportStatus.STARTED, date_requested: services.now(), date_started: services.now() })
    .returning("id")
    .executeTakeFirstOrThrow();
  try {
    const out = createWriteStream(partial, { flags: "wx" });
    const dir = path.basename(outputPath).replace(/\.tar\.gz$|\.tgz$/, "") || "zulip-export";
    const stats = await writeExportTarball(db, services.files, realm, type, dir, out, { nowSeconds: services.now(), progress, ...(zulipVersion === undefined ? {} : { zulipVersion }) });
    await fs.rename(partial, outputPath);
    const { size } = await fs.stat(outputPath);
    await db.updateTable("realm_exports").set({ status: ExportStatus.SUCCEEDED, date_succeeded: services.now(), tarball_size_bytes: size }).where("id", "=", id).execute();
    return stats;
  } catch (error) {
    await fs.rm(partial, { force: true });
    await db.updateTable("realm_exports").set({ status: ExportStatus.FAILED, date_failed: services.now() }).where("id", "=", id).execute();
    throw error;
  }
}
