// Pure rules about channel folders: name and description checks, name
// uniqueness, and the reorder mapping, with the errors Zulip gives.
import { unprintablePosition } from "./text.ts";
import { badRequest, type ApiError } from "../errors.ts";
import { MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH, MAX_CHANNEL_FOLDER_NAME_LENGTH } from "./limits.ts";

/** Length in Unicode code points, as Python's len() counts them. */
function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** Zulip's typed_endpoint max_length message. */
function checkLength(value: string, name: string, max: number): void {
  if (codePointLength(value) > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
}

export function checkFolderNameLength(name: string): void {
  checkLength(name, "name", MAX_CHANNEL_FOLDER_NAME_LENGTH);
}

export function checkFolderDescription(description: string): void {
  checkLength(description, "description", MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH);
}



/**
 * The checks on a new or changed folder name that need no database: length,
 * emptiness, printable characters. The name is stored as given (Zulip does
 * not strip it).
 */
export function checkFolderName(name: string): void {
  checkFolderNameLength(name);
  if (name.trim() === "") throw badRequest("Channel folder name can't be empty.");
  const position = unprintablePosition(name);
  if (position !== null) throw badRequest(`Invalid character in channel folder name, at position ${position}.`);
}

export function folderNameInUse(): ApiError {
  return badRequest("Channel folder name already in use");
}

/**
 * Whether `name` collides, ignoring case, with a folder of the organization
 * other than `exceptId` (the folder being renamed, so that a case-only rename
 * is allowed). Archived folders count: their names stay reserved.
 */
export function isFolderNameTaken(existing: readonly { id: number; name: string }[], name: string, exceptId?: number): boolean {
  const wanted = name.toLowerCase();
  return existing.some((f) => f.id !== exceptId && f.name.toLowerCase() === wanted);
}

/**
 * The new position of every folder for PATCH /channel_folders: each folder's
 * index in `order` (the last one when an ID repeats). Every folder of the
 * organization, archived ones included, must be listed; unknown IDs are ignored.
 */
export function folderOrderMapping(folderIds: readonly number[], order: readonly number[]): Map<number, number> {
  const indexOf = new Map<number, number>();
  order.forEach((id, index) => indexOf.set(id, index));
  const mapping = new Map<number, number>();
  for (const id of folderIds) {
    const index = indexOf.get(id);
    if (index === undefined) throw badRequest("Invalid order mapping.");
    mapping.set(id, index);
  }
  return mapping;
}
