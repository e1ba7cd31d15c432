// Rules for uploaded files, as Zulip applies them: the name a file keeps, the
// path it is stored under, its content type, whether browsers may show it
// inline, the size limit, and the signed tokens of temporary download URLs.
// No I/O: callers pass in random bytes, keys and the current time.
import crypto from "node:crypto";
import { ApiError, badRequest } from "../errors.ts";

/** How long a temporary file URL works (Zulip's SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS). */
export const TEMPORARY_URL_VALIDITY_SECONDS = 60;

/**
 * Content types served with `Content-Disposition: inline` (zerver/lib/mime_types.py);
 * everything else is a download. Never add types a browser would run as a
 * document (text/html, image/svg+xml, application/xhtml+xml, text/xml).
 */
export const INLINE_MIME_TYPES: ReadonlySet<string> = new Set([
  "audio/aac",
  "audio/flac",
  "audio/mp4",
  "audio/mpeg",
  "audio/wav",
  "audio/webm",
  "application/pdf",
  "image/apng",
  "image/avif",
  "image/gif",
  "image/jpeg",
  "image/png",
  "image/webp",
  "text/plain",
  "video/mp4",
  "video/webm",
]);

/** Extensions → content types, for files uploaded without one (Python's mimetypes plus Zulip's additions). */
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  "7z": "application/x-7z-compressed",
  aac: "audio/aac",
  apng: "image/apng",
  avif: "image/avif",
  bmp: "image/bmp",
  c: "text/plain",
  css: "text/css",
  csv: "text/csv",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  flac: "audio/flac",
  gif: "image/gif",
  gz: "application/gzip",
  h: "text/plain",
  heic: "image/heic",
  htm: "text/html",
  html: "text/html",
  ico: "image/vnd.microsoft.icon",
  ics: "text/calendar",
  jpe: "image/jpeg",
  jpeg: "image/jpeg",
  jpg: "image/jpeg",
  js: "text/javascript",
  json: "application/json",
  m4a: "audio/mp4",
  md: "text/markdown",
  mov: "video/quicktime",
  mp3: "audio/mpeg",
  mp4: "video/mp4",
  odp: "application/vnd.oasis.opendocument.presentation",
  ods: "application/vnd.oasis.opendocument.spreadsheet",
  odt: "application/vnd.oasis.opendocument.text",
  oga: "audio/ogg",
  ogg: "audio/ogg",
  ogv: "video/ogg",
  pdf: "application/pdf",
  png: "image/png",
  ppt: "application/vnd.ms-powerpoint",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  py: "text/x-python",
  rtf: "application/rtf",
  sh: "application/x-sh",
  svg: "image/svg+xml",
  tar: "application/x-tar",
  tif: "image/tiff",
  tiff: "image/tiff",
  txt: "text/plain",
  wav: "audio/wav",
  weba: "audio/webm",
  webm: "video/webm",
  webp: "image/webp",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  xml: "text/xml",
  zip: "application/zip",
};

export const OCTET_STREAM = "application/octet-stream";

/** The content type a file name suggests, if its extension is known. */
export function guessContentType(fileName: string): string | undefined {
  const dot = fileName.lastIndexOf(".");
  if (dot < 0) return undefined;
  return TYPES_BY_EXTENSION[fileName.slice(dot + 1).toLowerCase()];
}

/** "text/plain; charset=utf-8" → "text/plain". */
export function bareContentType(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

/**
 * The content type stored for an upload. As in Zulip, the type the client
 * declared wins; without one, the file name's, else application/octet-stream.
 * The multipart parser reports a part without a Content-Type header as
 * text/plain (RFC 7578's default), which is indistinguishable from a declared
 * text/plain: a name that says otherwise (photo.png) is taken to mean the
 * client declared nothing, as Zulip's Python client does.
 */
export function uploadContentType(declared: string, fileName: string): string {
  const guessed = guessContentType(fileName);
  let type = declared.trim();
  if (type === "" || (bareContentType(type) === "text/plain" && guessed !== undefined && guessed !== "text/plain")) type = guessed ?? OCTET_STREAM;
  // Anything that could not be sent back verbatim as a header is no type at all.
  return /^[\x21-\x7e][\x20-\x7e]*$/.test(type) ? type : OCTET_STREAM;
}

/**
 * Zulip's maybe_add_charset: a text/plain upload without a charset gets one
 * when its bytes tell. Zulip guesses with chardet; here valid UTF-8 (ASCII
 * included) is labelled utf-8 and anything else is left unlabelled.
 * `complete` says whether `head` is the whole file or only its beginning.
 */
export function withDetectedCharset(contentType: string, head: Uint8Array, complete: boolean): string {
  if (bareContentType(contentType) !== "text/plain" || /;\s*charset\s*=/i.test(contentType)) return contentType;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(head, { stream: !complete });
  } catch {
    return contentType;
  }
  return `${contentType}; charset=utf-8`;
}

export function servesInline(contentType: string): boolean {
  return INLINE_MIME_TYPES.has(bareContentType(contentType));
}

/** Python's urllib.parse.quote with its default safe set ("/" and the unreserved characters). */
function pyQuote(value: string): string {
  return encodeURIComponent(value)
    .replace(/%2F/g, "/")
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Django's content_disposition_header: `inline|attachment; filename="…"` (or filename*= for non-ASCII names). */
export function contentDisposition(fileName: string, asAttachment: boolean): string {
  const disposition = asAttachment ? "attachment" : "inline";
  // Control characters can never be part of a header value.
  // eslint-disable-next-line no-control-regex
  const name = fileName.replace(/[\x00-\x1f\x7f]/g, "");
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(name)) return `${disposition}; filename="${name.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
  return `${disposition}; filename*=utf-8''${pyQuote(name)}`;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** The HTML character references Python's html.unescape is commonly given. */
function htmlUnescape(value: string): string {
  return value.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z]+);/g, (whole, ref: string) => {
    if (ref.startsWith("#")) {
      const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : "\ufffd";
    }
    return NAMED_ENTITIES[ref] ?? whole;
  });
}

/** Characters Python's str.isprintable() rejects: controls, format, surrogates, private use, unassigned, separators but the space. */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu;

/** Python's urllib.parse.unquote: %XX runs decoded as UTF-8, invalid bytes replaced. */
function pyUnquote(value: string): string {
  if (!value.includes("%")) return value;
  return value.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => Buffer.from(run.replace(/%/g, ""), "hex").toString("utf8"));
}

/**
 * The name an uploaded file keeps, from the multipart filename: Django's
 * sanitize_file_name (HTML references decoded, directories dropped,
 * unprintable characters removed) then Zulip's URL-unquoting. Undefined for
 * parts Django does not count as files ("", "." or "..").
 */
export function uploadedFileName(raw: string): string | undefined {
  let name = htmlUnescape(raw);
  name = name.slice(name.lastIndexOf("/") + 1);
  name = name.slice(name.lastIndexOf("\\") + 1);
  name = name.replace(NON_PRINTABLE, "");
  if (name === "" || name === "." || name === "..") return undefined;
  // Unquoting may produce characters no database can store (NUL): those go, as above.
  const unquoted = pyUnquote(name).replace(NON_PRINTABLE, "");
  return unquoted === "" ? name : unquoted;
}

/** Longest last path component, in UTF-8 bytes: file systems refuse names over 255 bytes. */
const MAX_STORED_NAME_BYTES = 200;

function truncateUtf8(value: string, maxBytes: number): string {
  let out = "";
  let bytes = 0;
  for (const char of value) {
    const size = Buffer.byteLength(char);
    if (bytes + size > maxBytes) break;
    out += char;
    bytes += size;
  }
  return out;
}

/**
 * Zulip's sanitize_name: a name safe in a file system, in object storage and in
 * a URL. Word characters (any script), whitespace, "." and "-" survive;
 * whitespace and dash runs become one "-". Unlike Zulip, overlong names are
 * shortened (keeping the extension), since the file system would refuse them.
 */
export function sanitizeName(value: string): string {
  let name = value.normalize("NFKC").replace(/[^\p{L}\p{N}_\s.-]/gu, "").trim();
  name = name.replace(/[-\s]+/g, "-");
  if (Buffer.byteLength(name) > MAX_STORED_NAME_BYTES) {
    const dot = name.lastIndexOf(".");
    const extension = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : "";
    name = truncateUtf8(name.slice(0, name.length - extension.length), MAX_STORED_NAME_BYTES - Buffer.byteLength(extension)) + extension;
  }
  if (name === "" || name === "." || name === "..") return "uploaded-file";
  return name;
}

/**
 * Zulip's local-storage path_id: `{realm_id}/{random byte in hex, unpadded}/{token_urlsafe(18)}/{sanitized name}`.
 * `random` must hold at least 19 random bytes.
 */
export function makePathId(realmId: number, fileName: string, random: Uint8Array): string {
  if (random.length < 19) throw new Error("makePathId needs 19 random bytes");
  const bucket = random[0]!.toString(16);
  const token = Buffer.from(random.subarray(1, 19)).toString("base64url");
  return `${realmId}/${bucket}/${token}/${sanitizeName(fileName)}`;
}

/** The URL a message links a file by. */
export function uploadUrl(pathId: string): string {
  return `/user_uploads/${pathId}`;
}

/** The last component of a path_id: what a temporary URL ends with. */
export function pathIdFileName(pathId: string): string {
  return pathId.slice(pathId.lastIndexOf("/") + 1);
}

export function maxUploadBytes(maxMib: number): number {
  return maxMib * 1024 * 1024;
}

export function fileTooLarge(maxMib: number): ApiError {
  return badRequest(`File is larger than this server's configured maximum upload size (${maxMib} MiB).`);
}

/** Zulip's rule: a file of exactly the limit is accepted. */
export function checkUploadSize(size: number, maxMib: number): void {
  if (size > maxUploadBytes(maxMib)) throw fileTooLarge(maxMib);
}

// ---------------------------------------------------------------------------
// Temporary URLs: /user_uploads/temporary/{token}/{file name}, usable without
// credentials for TEMPORARY_URL_VALIDITY_SECONDS. The token names the
// attachment and the time it was issued, signed with the server's key over
// the attachment's path_id too, so it cannot be moved to another file.

function tokenMac(key: Uint8Array, attachmentId: number, pathId: string, issuedAt: number): string {
  return crypto.createHmac("sha256", key).update(`user_uploads:${attachmentId}:${issuedAt}:${pathId}`).digest("base64url");
}

export function temporaryToken(key: Uint8Array, attachmentId: number, pathId: string, issuedAt: number): string {
  return `${attachmentId}.${issuedAt}.${tokenMac(key, attachmentId, pathId, issuedAt)}`;
}

export function temporaryUrl(token: string, pathId: string): string {
  return `/user_uploads/temporary/${token}/${encodeURIComponent(pathIdFileName(pathId))}`;
}

/** The parts of a well-formed token, before its signature is checked. */
export function parseTemporaryToken(token: string): { attachmentId: number; issuedAt: number; mac: string } | undefined {
  const match = /^([1-9][0-9]{0,9})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return undefined;
  return { attachmentId: Number(match[1]), issuedAt: Number(match[2]), mac: match[3]! };
}

/** Whether a parsed token is genuine for this attachment and still within its validity at `now` (seconds). */
export function temporaryTokenValid(key: Uint8Array, parsed: { attachmentId: number; issuedAt: number; mac: string }, pathId: string, now: number): boolean {
  const expected = Buffer.from(tokenMac(key, parsed.attachmentId, pathId, parsed.issuedAt));
  const given = Buffer.from(parsed.mac);
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return false;
  return now - parsed.issuedAt <= TEMPORARY_URL_VALIDITY_SECONDS;
}

/** Zulip's error for a temporary URL whose token does not check out. */
export function invalidToken(): ApiError {
  return badRequest("Invalid token");
}

/**
 * Where GET /thumbnail?url=… sends the browser: only ever to one of this
 * server's uploads. Zulip's endpoint takes `user_uploads/{realm_id}/{path}`
 * (the form the Markdown renderer writes) and answers anything else with a
 * 403, having stopped proxying other URLs; here the same path with a leading
 * slash, or as an absolute URL on the organization's own address, is
 * accepted too. The answer is a path on this server, each segment
 * percent-encoded (so nothing in it can end the header or leave the host);
 * undefined when the URL is not one of ours.
 */
export function thumbnailTarget(url: string, externalUrl: string): string | undefined {
  let path: string;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith("//") || url.startsWith("\\")) {
    // An absolute URL: on the organization's own address, or nothing.
    let parsed: URL;
    let own: URL;
    try {
      parsed = new URL(url);
      own = new URL(externalUrl);
    } catch {
      return undefined;
    }
    const base = own.pathname.replace(/\/+$/, "");
    if (parsed.origin !== own.origin || parsed.username !== "" || parsed.password !== "" || !parsed.pathname.startsWith(`${base}/user_uploads/`)) return undefined;
    try {
      path = decodeURIComponent(parsed.pathname.slice(base.length + 1));
    } catch {
      return undefined;
    }
  } else {
    path = url.replace(/^\/(?!\/)/, "");
  }
  const match = /^user_uploads\/([0-9]+)\/(.+)$/s.exec(path);
  if (!match) return undefined;
  const segments = match[2]!.split("/");
  if (segments.some((s) => s === "." || s === ".." || s.includes("\\") || s.includes("\0"))) return undefined;
  return `/user_uploads/${match[1]}/${segments.map(encodeURIComponent).join("/")}`;
}
