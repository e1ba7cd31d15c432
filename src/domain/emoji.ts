// Emoji rules as Zulip applies them (zerver/lib/emoji.py, views/realm_emoji.py,
// actions/realm_emoji.py): which emoji a reaction may name, custom emoji
// names, the image formats and size a custom emoji may have. No I/O: callers
// pass in the organization's custom emoji.
import { ApiError, badRequest } from "../errors.ts";
import { codeToName, nameToCode, unicodeEmojiCode } from "../markdown/emoji.ts";

/** The namespaces of emoji_code, as stored and returned (Zulip's Reaction.REACTION_TYPES). */
export const ReactionType = {
  UNICODE: "unicode_emoji",
  REALM: "realm_emoji",
  ZULIP_EXTRA: "zulip_extra_emoji",
} as const;

/**
 * The API contract's name for Zulip's zulip_extra_emoji. Accepted as input;
 * Parley stores and returns Zulip's name, which is what Zulip clients render.
 */
export const SERVICE_EXTRA_EMOJI = "service_extra_emoji";

/** Zulip's only extra emoji: its name is its code. */
export const ZULIP_EXTRA_EMOJI_NAMES: readonly string[] = ["zulip"];

/** A reaction_type as a client sent it, with the contract's alias mapped to Zulip's name. */
export function normalizeReactionType(value: string): string {
  return value === SERVICE_EXTRA_EMOJI ? ReactionType.ZULIP_EXTRA : value;
}

/** What the reaction rules need to know about a custom emoji. */
export interface CustomEmojiFacts {
  id: number;
  name: string;
  deactivated: boolean;
}

export interface EmojiData {
  emojiCode: string;
  reactionType: string;
}

/**
 * Zulip's get_emoji_data: the code and type a name means now. An active
 * custom emoji wins over the Zulip emoji and the Unicode emoji of that name.
 */
export function emojiDataForName(name: string, activeByName: ReadonlyMap<string, CustomEmojiFacts>): EmojiData {
  const custom = activeByName.get(name);
  if (custom) return { emojiCode: String(custom.id), reactionType: ReactionType.REALM };
  if (ZULIP_EXTRA_EMOJI_NAMES.includes(name)) return { emojiCode: name, reactionType: ReactionType.ZULIP_EXTRA };
  const code = nameToCode.get(name);
  if (code !== undefined) return { emojiCode: code, reactionType: ReactionType.UNICODE };
  throw badRequest(`Emoji '${name}' does not exist`);
}

/**
 * Zulip's check_emoji_request: whether (name, code, type) may start a new
 * reaction. `byId` holds every custom emoji of the organization, deactivated
 * ones included, keyed by ID.
 */
export function checkEmojiRequest(name: string, code: string, type: string, byId: ReadonlyMap<string, CustomEmojiFacts>): void {
  if (type === ReactionType.REALM) {
    const custom = byId.get(code);
    if (!custom) throw badRequest("Invalid custom emoji.");
    if (custom.name !== name) throw badRequest("Invalid custom emoji name.");
    if (custom.deactivated) throw badRequest("This custom emoji has been deactivated.");
  } else if (type === ReactionType.ZULIP_EXTRA) {
    if (!ZULIP_EXTRA_EMOJI_NAMES.includes(code)) throw badRequest("Invalid emoji code.");
    if (name !== code) throw badRequest("Invalid emoji name.");
  } else if (type === ReactionType.UNICODE) {
    // Either spelling of the few codes Zulip's table writes with U+FE0F.
    const bare = unicodeEmojiCode(code);
    if (!codeToName.has(bare)) throw badRequest("Invalid emoji code.");
    if (nameToCode.get(name) !== bare) throw badRequest("Invalid emoji name.");
  } else {
    throw badRequest("Invalid emoji type.");
  }
}

/** Whether a name is one of the built-in (Unicode) emoji, which only administrators may override. */
export function isBuiltInEmojiName(name: string): boolean {
  return nameToCode.has(name);
}

// ---------------------------------------------------------------------------
// Custom emoji

/** Zulip's MAX_EMOJI_FILE_SIZE_MIB default. */
export const MAX_EMOJI_FILE_SIZE_MIB = 5;

export function maxEmojiFileBytes(): number {
  return MAX_EMOJI_FILE_SIZE_MIB * 1024 * 1024;
}

export function emojiFileTooLarge(): ApiError {
  return badRequest(`Uploaded file is larger than the allowed limit of ${MAX_EMOJI_FILE_SIZE_MIB} MiB`);
}

/** The name an upload asks for, as Zulip reads it from the path: trimmed, spaces as underscores. */
export function customEmojiName(raw: string): string {
  return raw.trim().replace(/ /g, "_");
}

/** Zulip's check_valid_emoji_name. */
export function checkCustomEmojiName(name: string): void {
  if (name === "") throw badRequest("Emoji name is missing");
  if (/^[0-9a-z_-]+$/.test(name)) {
    if (/[_-]$/.test(name)) throw badRequest("Emoji names must end with either a letter or digit.");
    return;
  }
  throw badRequest("Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.");
}

/**
 * Image types a custom emoji may have, with the extension its file gets:
 * those Zulip both decodes (THUMBNAIL_ACCEPT_IMAGE_TYPES) and lets browsers
 * show inline (INLINE_MIME_TYPES).
 */
export const EMOJI_IMAGE_TYPES: Readonly<Record<string, string>> = {
  "image/avif": ".avif",
  "image/gif": ".gif",
  "image/jpeg": ".jpg",
  "image/png": ".png",
  "image/webp": ".webp",
};

/** The extension for a (bare) content type, or Zulip's BAD_IMAGE "Invalid image format". */
export function emojiFileExtension(contentType: string): string {
  const extension = EMOJI_IMAGE_TYPES[contentType];
  if (extension === undefined) throw new ApiError(400, "BAD_IMAGE", "Invalid image format");
  return extension;
}

/** Content type of a stored emoji file, by its extension. */
export function emojiContentType(fileName: string): string | undefined {
  const extension = fileName.slice(fileName.lastIndexOf("."));
  return Object.entries(EMOJI_IMAGE_TYPES).find(([, ext]) => ext === extension)?.[0];
}

const startsWith = (bytes: Uint8Array, offset: number, ascii: string): boolean =>
  bytes.length >= offset + ascii.length && [...ascii].every((c, i) => bytes[offset + i] === c.charCodeAt(0));

/**
 * The image format the first bytes of a file show, among EMOJI_IMAGE_TYPES.
 * Zulip decodes every emoji with libvips; Parley does not decode images, so
 * it checks the file's signature instead.
 */
export function sniffImageType(head: Uint8Array): string | undefined {
  if (head.length >= 8 && head[0] === 0x89 && startsWith(head, 1, "PNG\r\n\x1a\n")) return "image/png";
  if (startsWith(head, 0, "GIF87a") || startsWith(head, 0, "GIF89a")) return "image/gif";
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return "image/jpeg";
  if (startsWith(head, 0, "RIFF") && startsWith(head, 8, "WEBP")) return "image/webp";
  if (startsWith(head, 4, "ftyp")) {
    // An ISO-BMFF file: AVIF when its ftyp box names an AVIF brand.
    const boxSize = ((head[0]! << 24) | (head[1]! << 16) | (head[2]! << 8) | head[3]!) >>> 0;
    const end = Math.min(boxSize, head.length);
    for (let offset = 8; offset + 4 <= end; offset += 4) {
      if (startsWith(head, offset, "avif") || startsWith(head, offset, "avis")) return "image/avif";
    }
  }
  return undefined;
}

/** Zulip's BAD_IMAGE answer for bytes that are no image it can read. */
export function undecodableImage(): ApiError {
  return new ApiError(400, "BAD_IMAGE", "Could not decode image; did you upload an image file?");
}

/** Where an emoji file is stored, relative to the uploads directory (Zulip's avatars/ + RealmEmoji.PATH_ID_TEMPLATE). */
export function emojiStoragePath(realmId: number, fileName: string): string {
  return `avatars/${realmId}/emoji/images/${fileName}`;
}

/** The URL clients load the image from (relative to the server, as Zulip's local storage gives it). */
export function emojiSourceUrl(realmId: number, fileName: string): string {
  return `/user_avatars/${realmId}/emoji/images/${fileName}`;
}

/** File names Parley gives emoji images: random hex and a known extension. */
export function isEmojiFileName(fileName: string): boolean {
  return /^[0-9a-f]{16}\.[a-z]+$/.test(fileName) && emojiContentType(fileName) !== undefined;
}
