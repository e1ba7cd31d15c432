// Avatars and organization icons as Zulip serves them: the sizes and limits
// (zerver/lib/thumbnail.py, MAX_AVATAR_FILE_SIZE_MIB), the URLs clients load
// and derive the medium size from, where the files live under the uploads
// directory, Zulip's error messages, and the generated default images: a
// symmetric 5×5 identicon whose pattern and colour come from a hash, drawn
// here as pixels (images.ts encodes them as PNG).
//
// URLs, all under /user_avatars/ as Zulip's local storage serves them:
//   uploaded avatar  /user_avatars/{realm_id}/{avatar_hash}.png?version=N  (and -medium.png)
//   default avatar   /user_avatars/{realm_id}/default/{user_id}.png?version=N  (and -medium.png)
//   icon             /user_avatars/{realm_id}/realm/icon.png?version=N
// Clients ask for the medium size by replacing the path's ".png" with
// "-medium.png" (zulip-flutter's UploadedAvatarUrl), so every avatar path ends in ".png".
import crypto from "node:crypto";
import { ApiError, badRequest } from "../errors.ts";
import type { Realm, User } from "../storage/schema.ts";

/** zerver/lib/thumbnail.py: the avatar (and icon) size, and the medium avatar size clients ask for above it. */
export const DEFAULT_AVATAR_SIZE = 100;
export const MEDIUM_AVATAR_SIZE = 500;

/** Zulip's MAX_AVATAR_FILE_SIZE_MIB and MAX_ICON_FILE_SIZE_MIB defaults (also in /register). */
export const MAX_AVATAR_FILE_SIZE_MIB = 5;
export const MAX_ICON_FILE_SIZE_MIB = 5;

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: images larger than this (all frames together) are refused before decoding. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES: the declared types an avatar or icon may have. */
export const AVATAR_IMAGE_TYPES: ReadonlySet<string> = new Set(["image/avif", "image/gif", "image/heic", "image/jpeg", "image/png", "image/tiff", "image/webp"]);

export type AvatarFields = Pick<User, "id" | "realm_id" | "avatar_source" | "avatar_version" | "avatar_hash">;

export const AvatarSource = { DEFAULT: "G", UPLOADED: "U" } as const;

/** The path of a user's avatar (no query string), at the default or the medium size. */
export function avatarPath(user: AvatarFields, medium = false): string {
  const suffix = medium ? "-medium.png" : ".png";
  if (user.avatar_source === AvatarSource.UPLOADED && user.avatar_hash !== null) return `/user_avatars/${user.realm_id}/${user.avatar_hash}${suffix}`;
  return `/user_avatars/${user.realm_id}/default/${user.id}${suffix}`;
}

/** A user's avatar_url (avatar_url_medium with `medium`): absolute, versioned by avatar_version as Zulip's are. */
export function avatarUrl(externalUrl: string, user: AvatarFields, medium = false): string {
  return `${externalUrl}${avatarPath(user, medium)}?version=${user.avatar_version}`;
}

/** realm_icon_url: one path for the default and the uploaded icon, versioned by icon_version. */
export function realmIconUrl(externalUrl: string, realm: Pick<Realm, "id" | "icon_version">): string {
  return `${externalUrl}/user_avatars/${realm.id}/realm/icon.png?version=${realm.icon_version}`;
}

/** A random name for an uploaded avatar's files: 40 hex digits, as long as Zulip's user_avatar_hash. `random` holds 20 random bytes. */
export function newAvatarHash(random: Uint8Array): string {
  if (random.length < 20) throw new Error("newAvatarHash needs 20 random bytes");
  return Buffer.from(random.subarray(0, 20)).toString("hex");
}

/** Where an uploaded avatar's files live, relative to the uploads directory (Zulip's avatars/{realm_id}/{hash}…). */
export function avatarStoragePaths(realmId: number, hash: string): { small: string; medium: string; original: string } {
  const base = `avatars/${realmId}/${hash}`;
  return { small: `${base}.png`, medium: `${base}-medium.png`, original: `${base}.original` };
}

/** Where an uploaded icon's files live: one pair per icon_version, so a new icon never overwrites the one being served. */
export function realmIconStoragePaths(realmId: number, version: number): { small: string; original: string } {
  const base = `avatars/${realmId}/realm/icon-${version}`;
  return { small: `${base}.png`, original: `${base}.original` };
}

/** "{hash}.png" / "{hash}-medium.png" → the hash and size; undefined for any other name. */
export function parseAvatarFileName(fileName: string): { hash: string; medium: boolean } | undefined {
  const match = /^([0-9a-f]{40})(-medium)?\.png$/.exec(fileName);
  return match ? { hash: match[1]!, medium: match[2] !== undefined } : undefined;
}

/** "{user_id}.png" / "{user_id}-medium.png" → the user ID and size. */
export function parseDefaultAvatarFileName(fileName: string): { userId: number; medium: boolean } | undefined {
  const match = /^([1-9][0-9]{0,9})(-medium)?\.png$/.exec(fileName);
  return match ? { userId: Number(match[1]), medium: match[2] !== undefined } : undefined;
}

// ---------------------------------------------------------------------------
// Zulip's answers (zerver/views/user_settings.py, realm_icon.py, lib/thumbnail.py)

export function exactlyOneAvatar(): ApiError {
  return badRequest("You must upload exactly one avatar.");
}

export function exactlyOneIcon(): ApiError {
  return badRequest("You must upload exactly one icon.");
}

export function avatarChangesDisabled(): ApiError {
  return badRequest("Avatar changes are disabled in this organization.");
}

export function imageFileTooLarge(maxMib: number): ApiError {
  return badRequest(`Uploaded file is larger than the allowed limit of ${maxMib} MiB`);
}

/** BAD_IMAGE: the declared type is not one Zulip decodes. */
export function invalidImageFormat(): ApiError {
  return new ApiError(400, "BAD_IMAGE", "Invalid image format");
}

/** BAD_IMAGE: the bytes are no image of an accepted format. */
export function undecodableImage(): ApiError {
  return new ApiError(400, "BAD_IMAGE", "Could not decode image; did you upload an image file?");
}

/** BAD_IMAGE: more pixels than IMAGE_BOMB_TOTAL_PIXELS. */
export function imageTooLarge(): ApiError {
  return new ApiError(400, "BAD_IMAGE", "Image size exceeds limit.");
}

/** BAD_IMAGE: the header was readable but the pixel data is not. */
export function corruptedImage(): ApiError {
  return new ApiError(400, "BAD_IMAGE", "Image is corrupted or truncated");
}

// ---------------------------------------------------------------------------
// Generated default images

/** What a seed draws: which of the 5×5 cells are filled, and the two colours (RGB). */
export interface Identicon {
  cells: boolean[][];
  foreground: [number, number, number];
  background: [number, number, number];
}

function hslToRgb(hue: number, saturation: number, lightness: number): [number, number, number] {
  const c = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const h = hue / 60;
  const x = c * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] = h < 1 ? [c, x, 0] : h < 2 ? [x, c, 0] : h < 3 ? [0, c, x] : h < 4 ? [0, x, c] : h < 5 ? [x, 0, c] : [c, 0, x];
  const m = lightness - c / 2;
  return [r, g, b].map((v) => Math.round((v + m) * 255)) as [number, number, number];
}

/**
 * The identicon of a seed: a pattern symmetric about the vertical axis and a
 * hue, both from SHA-256 of the seed. Seeds are IDs, never names or emails,
 * so the image reveals nothing about the person.
 */
export function identicon(seed: string): Identicon {
  const digest = crypto.createHash("sha256").update(seed).digest();
  const hue = ((digest[0]! << 8) | digest[1]!) % 360;
  const cells: boolean[][] = [];
  for (let row = 0; row < 5; row++) {
    const line = new Array<boolean>(5).fill(false);
    for (let col = 0; col < 3; col++) {
      const on = (digest[2 + row * 3 + col]! & 1) === 1;
      line[col] = on;
      line[4 - col] = on;
    }
    cells.push(line);
  }
  return { cells, foreground: hslToRgb(hue, 0.55, 0.45), background: hslToRgb(hue, 0.25, 0.93) };
}

/**
 * The identicon drawn as `size`×`size` RGB pixels (3 bytes each, row by row):
 * the 5×5 pattern on a 7×7 grid, so a one-cell margin of background surrounds it.
 */
export function identiconPixels(icon: Identicon, size: number): Buffer {
  const pixels = Buffer.alloc(size * size * 3);
  const cellAt = (v: number) => Math.floor((v * 7) / size) - 1;
  for (let y = 0; y < size; y++) {
    const row = cellAt(y);
    for (let x = 0; x < size; x++) {
      const col = cellAt(x);
      const on = row >= 0 && row < 5 && col >= 0 && col < 5 && icon.cells[row]![col]!;
      const [r, g, b] = on ? icon.foreground : icon.background;
      const offset = (y * size + x) * 3;
      pixels[offset] = r;
      pixels[offset + 1] = g;
      pixels[offset + 2] = b;
    }
  }
  return pixels;
}

/** The seed of a user's default avatar and of an organization's default icon. */
export const defaultAvatarSeed = (userId: number): string => `avatar:${userId}`;
export const defaultIconSeed = (realmId: number): string => `realm-icon:${realmId}`;
