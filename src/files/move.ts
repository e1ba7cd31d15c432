// `parley move-uploads`: copies every stored file from one backend to another
// and checks each copy (size and SHA-256, read back from the target). Safe to
// run again after an interruption, or while servers keep adding files: a put
// is all or nothing, so a file is either in the target complete, and then
// checked and skipped, or not at all, and then copied.
import crypto from "node:crypto";
import { FileExistsError, type FileStore, type StoredFile } from "./store.ts";

export interface MoveReport {
  /** Files copied by this run (and checked). */
  copied: number;
  /** Bytes they hold. */
  bytes: number;
  /** Files the target held already, the same bytes. */
  present: number;
  /** Files removed from the source after their copy was checked (with deleteSource). */
  deleted: number;
  /** Keys under which the target holds different contents: left alone on both sides. */
  conflicts: string[];
  /** Keys whose copy failed (and was removed from the target again), with why. */
  failed: { key: string; error: string }[];
}

export interface MoveOptions {
  /** Remove each file from the source once its copy is checked. */
  deleteSource?: boolean;
  /** Told of each file as it is done, for progress output. */
  progress?(key: string, outcome: "copied" | "present" | "conflict" | "failed" | "gone"): void;
}

async function digest(file: StoredFile): Promise<{ size: number; sha256: string }> {
  const hash = crypto.createHash("sha256");
  let size = 0;
  for await (const piece of file.stream()) {
    hash.update(piece as Buffer);
    size += (piece as Buffer).length;
  }
  return { size, sha256: hash.digest("hex") };
}

function sameContents(a: { size: number; sha256: string }, b: { size: number; sha256: string }): boolean {
  return a.size === b.size && a.sha256 === b.sha256;
}

export async function moveFiles(from: FileStore, to: FileStore, options: MoveOptions = {}): Promise<MoveReport> {
  const report: MoveReport = { copied: 0, bytes: 0, present: 0, deleted: 0, conflicts: [], failed: [] };
  for await (const { key } of from.list()) {
    const source = await from.open(key);
    // Deleted since it was listed (a server removed an old avatar, say).
    if (!source) {
      options.progress?.(key, "gone");
      continue;
    }
    let outcome: "copied" | "present" | "conflict";
    try {
      outcome = await copyOne(key, source, to, report);
    } catch (error) {
      report.failed.push({ key, error: (error as Error).message });
      options.progress?.(key, "failed");
      continue;
    }
    options.progress?.(key, outcome);
    if (outcome === "conflict") continue;
    if (options.deleteSource) {
      await from.delete(key);
      report.deleted += 1;
    }
  }
  return report;
}

async function copyOne(key: string, source: StoredFile, to: FileStore, report: MoveReport): Promise<"copied" | "present" | "conflict"> {
  const existing = await to.open(key);
  if (existing) return compareExisting(key, source, existing, report);
  let written;
  try {
    written = await to.put(key, source.stream());
  } catch (error) {
    // Someone else stored it meanwhile (a server still writing to this backend): compare with theirs.
    if (!(error instanceof FileExistsError)) throw error;
    const theirs = await to.open(key);
    if (!theirs) throw error;
    return compareExisting(key, source, theirs, report);
  }
  // What was read must be all of the source, and what the target gives back exactly what was read.
  const stored = await to.open(key);
  const check = stored && (await digest(stored));
  if (written.size !== source.size || !check || !sameContents(check, written)) {
    await to.delete(key);
    throw new Error(`the copy does not match: read ${written.size} of ${source.size} bytes, stored ${check ? `${check.size} bytes, sha256 ${check.sha256}` : "nothing"}, expected sha256 ${written.sha256}`);
  }
  report.copied += 1;
  report.bytes += written.size;
  return "copied";
}

async function compareExisting(key: string, source: StoredFile, existing: StoredFile, report: MoveReport): Promise<"present" | "conflict"> {
  if (existing.size === source.size && sameContents(await digest(existing), await digest(source))) {
    report.present += 1;
    return "present";
  }
  report.conflicts.push(key);
  return "conflict";
}
