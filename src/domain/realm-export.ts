// Organization data exports, Zulip's rules (zerver/views/realm_export.py,
// zerver/lib/export.py): the export types and states, the limits on what may
// be asked for through the API, and the export object the API returns.
import type { RealmExport } from "../storage/schema.ts";

/** Zulip's RealmExport.EXPORT_*: what an export contains. */
export const ExportType = {
  /** Public channels' messages only; no member's private data. */
  PUBLIC: 1,
  /** Also the private data (private channels, DMs, personal settings) of members who consented. */
  FULL_WITH_CONSENT: 2,
  /** Everything: the operator's command line only (`parley export --full`). */
  FULL_WITHOUT_CONSENT: 3,
} as const;
export type ExportTypeValue = (typeof ExportType)[keyof typeof ExportType];

/** The types POST /export/realm accepts. */
export const API_EXPORT_TYPES: readonly number[] = [ExportType.PUBLIC, ExportType.FULL_WITH_CONSENT];

/** Zulip's RealmExport status numbers. */
export const ExportStatus = {
  REQUESTED: 1,
  STARTED: 2,
  SUCCEEDED: 3,
  FAILED: 4,
  DELETED: 5,
} as const;

/** Exports an organization may request in EXPORT_LIMIT_WINDOW_SECONDS (Zulip's EXPORT_LIMIT). */
export const EXPORT_LIMIT = 5;
export const EXPORT_LIMIT_WINDOW_SECONDS = 7 * 24 * 60 * 60;
/** Above this many messages, Zulip asks for a manual (command-line) export. */
export const MAX_MESSAGE_HISTORY = 250_000;
/** Above this much uploaded data, likewise. */
export const MAX_UPLOAD_QUOTA_BYTES = 20 * 1024 * 1024 * 1024;
/** Messages per messages-NNNNNN.json file (Zulip's MESSAGE_BATCH_CHUNK_SIZE). */
export const MESSAGE_CHUNK_SIZE = 1000;
/**
 * How long a finished export's tarball is kept before it is deleted as if an
 * administrator had (Zulip keeps them until deleted; a tarball holds the
 * whole organization's history, so Parley does not keep it indefinitely).
 */
export const EXPORT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/** The export object of GET /export/realm and the realm_export event (Zulip's get_realm_exports_serialized). */
export interface SerializedExport {
  id: number;
  export_time: number;
  acting_user_id: number;
  export_url: string | null;
  deleted_timestamp: number | null;
  failed_timestamp: number | null;
  pending: boolean;
  export_type: number;
}

/** Where a finished export's tarball is served, for administrators only (Zulip's local-storage path). */
export function exportUrl(externalUrl: string, exportPath: string): string {
  return `${externalUrl.replace(/\/$/, "")}/user_avatars/${exportPath}`;
}

/** The storage key of an export's tarball: `exports/{realm_id}/{random}/{file name}`. */
export function exportStoragePath(realmId: number, randomHex: string, fileName: string): string {
  return `exports/${realmId}/${randomHex}/${fileName}`;
}

/** The tarball's name, as Zulip names it: zulip-export-{random}.tar.gz. */
export function exportFileName(randomHex: string): string {
  return `zulip-export-${randomHex}.tar.gz`;
}

/** Exports requested by someone (the command line's are not listed, as in Zulip), oldest first. */
export function serializeExports(rows: readonly RealmExport[], externalUrl: string): SerializedExport[] {
  return rows
    .filter((row) => row.acting_user_id !== null)
    .sort((a, b) => a.id - b.id)
    .map((row) => ({
      id: row.id,
      export_time: row.date_requested,
      acting_user_id: row.acting_user_id!,
      export_url: row.status === ExportStatus.SUCCEEDED && row.export_path !== null ? exportUrl(externalUrl, row.export_path) : null,
      deleted_timestamp: row.date_deleted,
      failed_timestamp: row.date_failed,
      pending: row.status === ExportStatus.REQUESTED || row.status === ExportStatus.STARTED,
      export_type: row.type,
    }));
}
