// Uploaded files. API: POST /user_uploads (one file, any field name),
// GET /user_uploads/{realm_id}/{filename} (a temporary URL to the file),
// GET /attachments and DELETE /attachments/{id}. Outside /api/v1, as Zulip
// serves them: /user_uploads/{path_id} and /user_uploads/download/{path_id}
// (API credentials) and /user_uploads/temporary/{token}/{filename} (none).
// Also how multipart files reach the upload endpoint: @fastify/multipart
// hands every file part to multipartFileReceiver, which streams the upload
// endpoint's file to disk and drops any other endpoint's.
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import { Transform } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import type { MultipartFile } from "@fastify/multipart";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { actorFor } from "../actions/actor.ts";
import {
  deleteAttachment,
  newIncomingPath,
  sweepIncoming,
  temporaryFileUrl,
  uploadFile,
  uploadSigningKey,
  type ReceivedUpload,
} from "../actions/uploads.ts";
import { externalContentKey } from "../actions/external-content.ts";
import type { Config } from "../config.ts";
import { externalContentPath, isFetchableUrl } from "../domain/external-content.ts";
import { imageFileTooLarge, MAX_AVATAR_FILE_SIZE_MIB, MAX_ICON_FILE_SIZE_MIB } from "../domain/avatar.ts";
import { emojiFileTooLarge, maxEmojiFileBytes } from "../domain/emoji.ts";
import {
  contentDisposition,
  fileTooLarge,
  invalidToken,
  maxUploadBytes,
  parseTemporaryToken,
  pathIdFileName,
  servesInline,
  temporaryTokenValid,
  thumbnailTarget,
  uploadedFileName,
} from "../domain/uploads.ts";
import { ApiError, badRequest, missingArgument } from "../errors.ts";
import { isStorageKey } from "../files/store.ts";
import { param } from "../http/params.ts";
import { authenticateFileRequest, defineRoute, routePathOf, type MethodTable } from "../http/route.ts";
import { sendStoredFile } from "../http/stored-file.ts";
import { attachmentById, attachmentByPathId, attachmentsOwnedBy, canAccessAttachment, realmUploadSpaceUsed } from "../queries/attachments.ts";
import type { Services } from "../services.ts";
import type { Attachment, Realm, User } from "../storage/schema.ts";

// ---------------------------------------------------------------------------
// Receiving multipart files

/** How large a file an endpoint keeps, and its answer to a larger one. */
interface FileLimit {
  maxBytes: number;
  tooLarge(): ApiError;
}

/**
 * The endpoints (POST, by route URL) that keep the file a multipart request
 * sends: file uploads, custom emoji images (Zulip's MAX_EMOJI_FILE_SIZE_MIB),
 * avatars and the organization icon (MAX_AVATAR_FILE_SIZE_MIB, MAX_ICON_FILE_SIZE_MIB).
 */
const FILE_ENDPOINTS: Readonly<Record<string, (config: Config) => FileLimit>> = {
  "/user_uploads": (config) => ({ maxBytes: maxUploadBytes(config.maxFileUploadSizeMib), tooLarge: () => fileTooLarge(config.maxFileUploadSizeMib) }),
  "/realm/emoji/:emoji_name": () => ({ maxBytes: maxEmojiFileBytes(), tooLarge: emojiFileTooLarge }),
  "/users/me/avatar": () => ({ maxBytes: maxUploadBytes(MAX_AVATAR_FILE_SIZE_MIB), tooLarge: () => imageFileTooLarge(MAX_AVATAR_FILE_SIZE_MIB) }),
  "/realm/icon": () => ({ maxBytes: maxUploadBytes(MAX_ICON_FILE_SIZE_MIB), tooLarge: () => imageFileTooLarge(MAX_ICON_FILE_SIZE_MIB) }),
};

/** Endpoints that take an avatar image along with other changes: a bot's creation and edit. */
const BOT_AVATAR_ENDPOINTS: ReadonlySet<string> = new Set(["POST /bots", "PATCH /bots/:bot_id"]);

function fileEndpoint(request: FastifyRequest): ((config: Config) => FileLimit) | undefined {
  const path = routePathOf(request.routeOptions.url);
  if (path === undefined) return undefined;
  // The same endpoints under /api/v1 and /json.
  if (BOT_AVATAR_ENDPOINTS.has(`${request.method} ${path}`)) return FILE_ENDPOINTS["/users/me/avatar"];
  return request.method === "POST" && Object.hasOwn(FILE_ENDPOINTS, path) ? FILE_ENDPOINTS[path] : undefined;
}

/** The file limit of the endpoint a request goes to, if it is one that keeps files. */
export function fileLimitFor(config: Config, request: FastifyRequest): FileLimit | undefined {
  return fileEndpoint(request)?.(config);
}

/** Whether a request goes to an endpoint that keeps the files it is sent. */
export function takesUploadedFile(request: FastifyRequest): boolean {
  return fileEndpoint(request) !== undefined;
}

/** Largest multipart body a request may send: a file-taking endpoint allows a maximum-size file plus the usual fields. */
export function multipartBodyLimit(config: Config, request: FastifyRequest): number {
  return (fileLimitFor(config, request)?.maxBytes ?? 0) + config.bodyLimitBytes;
}

/** The file parts an upload request sent, as Django's request.FILES sees them. */
interface ReceivedFiles {
  /** Distinct field names that carried a file. */
  fieldNames: Set<string>;
  /** The file of the first such field (the last one sent under that name, as Django keeps it). */
  file?: ReceivedUpload;
  /** Temporary files written for this request, removed once it is answered. */
  tempPaths: Set<string>;
}

const receivedFiles = new WeakMap<FastifyRequest, ReceivedFiles>();

function receivedFor(request: FastifyRequest): ReceivedFiles {
  let received = receivedFiles.get(request);
  if (!received) {
    received = { fieldNames: new Set(), tempPaths: new Set() };
    receivedFiles.set(request, received);
  }
  return received;
}

async function discardReceived(request: FastifyRequest): Promise<void> {
  const received = receivedFiles.get(request);
  if (!received) return;
  receivedFiles.delete(request);
  // The file store holds its own copy of a file the upload stored.
  await Promise.all([...received.tempPaths].map((p) => fs.rm(p, { force: true }).catch(() => {})));
}

/** Reads a part to its end without keeping it. */
async function drain(part: MultipartFile): Promise<void> {
  await finished(part.file.resume());
}

/**
 * Stops parsing a request whose answer is already decided: the rest of the
 * body is read and dropped, so the client can finish sending and read the reply.
 */
function abandonBody(request: FastifyRequest): void {
  request.raw.unpipe();
  request.raw.resume();
}

/**
 * @fastify/multipart's onFile: files sent to the upload endpoint are streamed
 * to a temporary file (never held in memory), checked against the size limit
 * as they arrive; file parts sent to any other endpoint are read and dropped,
 * as those endpoints take no files. Form fields are untouched either way.
 */
export function multipartFileReceiver(services: Services): (this: FastifyRequest, part: MultipartFile) => Promise<void> {
  const { config } = services;
  return async function receiveFile(this: FastifyRequest, part: MultipartFile): Promise<void> {
    // Django ignores file parts without a usable name; so does Zulip. (The
    // parser reports an application/octet-stream part without one as a file.)
    const fileName = takesUploadedFile(this) ? uploadedFileName((part.filename as string | undefined) ?? "") : undefined;
    if (fileName === undefined) return drain(part);
    const received = receivedFor(this);
    const first = received.fieldNames.size === 0 ? part.fieldname : [...received.fieldNames][0];
    received.fieldNames.add(part.fieldname);
    // A second file field makes the request an error: no need to keep its bytes.
    if (part.fieldname !== first) return drain(part);

    const { maxBytes, tooLarge } = fileLimitFor(config, this)!;
    const tempPath = await newIncomingPath(config);
    received.tempPaths.add(tempPath);
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        size += chunk.length;
        callback(size > maxBytes ? tooLarge() : null, chunk);
      },
    });
    try {
      await pipeline(part.file, counter, createWriteStream(tempPath));
    } catch (error) {
      await fs.rm(tempPath, { force: true });
      if (size > maxBytes) {
        // Zulip's answer, without reading the rest of an oversized file into storage.
        abandonBody(this);
        throw tooLarge();
      }
      throw error;
    }
    if (received.file) await fs.rm(received.file.tempPath, { force: true });
    received.file = { fileName, declaredType: part.mimetype, size, tempPath };
  };
}

/**
 * The files a request to a file-taking endpoint sent: how many distinct
 * fields carried one (Django's len(request.FILES)) and the first of them.
 * Temporary files are removed once the request is answered.
 */
export function receivedUploads(request: FastifyRequest): { fieldCount: number; file?: ReceivedUpload } {
  const received = receivedFiles.get(request);
  return received?.file ? { fieldCount: received.fieldNames.size, file: received.file } : { fieldCount: received?.fieldNames.size ?? 0 };
}

// ---------------------------------------------------------------------------
// Who may download what

type Lookup = { found: Attachment } | { missing: true } | { forbidden: true };

async function attachmentForViewer(services: Services, realm: Realm, user: User, pathId: string): Promise<Lookup> {
  const db = services.storage.db;
  const attachment = await attachmentByPathId(db, pathId);
  if (!attachment) return { missing: true };
  if (!(await canAccessAttachment(db, realm.id, await actorFor(db, user), attachment))) return { forbidden: true };
  return { found: attachment };
}

const NOT_FOUND = "This file does not exist or has been deleted.";
const FORBIDDEN = "You are not authorized to view this file.";

// ---------------------------------------------------------------------------
// API routes

export const uploadRoutes = [
  defineRoute({
    method: "POST",
    path: "/user_uploads",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user, http }) => {
      try {
        const received = receivedFiles.get(http);
        if (!received || received.fieldNames.size === 0 || !received.file) throw badRequest("You must specify a file to upload");
        if (received.fieldNames.size > 1) throw badRequest("You may only upload one file at a time");
        const { url, filename } = await uploadFile(services, realm, user, received.file);
        // `uri` is the deprecated name of `url`, kept for old clients as Zulip does.
        return { uri: url, url, filename };
      } finally {
        // Before replying, so a client never sees leftovers (the file store has its own copy).
        await discardReceived(http);
      }
    },
  }),
  defineRoute({
    method: "GET",
    path: "/user_uploads/:realm_id/*",
    auth: "api",
    // "*" is the rest of the path_id after the organization's ID, slashes included.
    params: { realm_id: param.string().required(), "*": param.string().required() },
    handler: async ({ services, realm, user }, params) => {
      const lookup = await attachmentForViewer(services, realm, user, `${params.realm_id}/${params["*"]}`);
      if ("missing" in lookup) throw new ApiError(404, "BAD_REQUEST", NOT_FOUND);
      if ("forbidden" in lookup) throw new ApiError(403, "BAD_REQUEST", FORBIDDEN);
      return { url: await temporaryFileUrl(services, lookup.found) };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/attachments",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user }) => {
      const db = services.storage.db;
      return { attachments: await attachmentsOwnedBy(db, user.id), upload_space_used: await realmUploadSpaceUsed(db, realm.id) };
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/attachments/:attachment_id",
    auth: "api",
    params: { attachment_id: param.int().required() },
    handler: async ({ services, realm, user }, { attachment_id }) => {
      await deleteAttachment(services, realm, user, attachment_id);
    },
  }),
];

// ---------------------------------------------------------------------------
// Serving files (outside /api/v1)

/** What Zulip's nginx sends with every uploaded file: nothing in it may run or load anything. */
const FILE_SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; media-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; object-src 'self';",
  "x-content-type-options": "nosniff",
};

function htmlError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.status(status).header("content-type", "text/html; charset=utf-8").header("vary", "Accept").send(`<p>${message}</p>`);
}

async function sendAttachment(request: FastifyRequest, reply: FastifyReply, services: Services, attachment: Attachment, forceDownload: boolean): Promise<FastifyReply> {
  // A row whose file is gone, or whose path_id could name no file of ours: Zulip's serve_local answer.
  const file = isStorageKey(attachment.path_id) ? await services.files.open(attachment.path_id) : undefined;
  if (!file) return htmlError(reply, 404, "File not found");
  const asAttachment = forceDownload || !servesInline(attachment.content_type);
  return sendStoredFile(request, reply, file, {
    ...FILE_SECURITY_HEADERS,
    "content-type": attachment.content_type,
    "content-disposition": contentDisposition(attachment.file_name, asAttachment),
    "cache-control": "private, immutable",
  });
}

interface FileParams {
  realm_id: string;
  "*": string;
}

/**
 * Registers the file-serving routes (and the clean-up of temporary upload
 * files). The authenticated routes take the API's HTTP Basic credentials or
 * the browser's session cookie, as Zulip's do.
 */
export function uploadFileRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const { config } = services;

  const serve = (forceDownload: boolean) => async (request: FastifyRequest<{ Params: FileParams }>, reply: FastifyReply) => {
    const { realm, user } = await authenticateFileRequest(services, request);
    const lookup = await attachmentForViewer(services, realm, user, `${request.params.realm_id}/${request.params["*"]}`);
    if ("missing" in lookup) return htmlError(reply, 404, NOT_FOUND);
    if ("forbidden" in lookup) return htmlError(reply, 403, FORBIDDEN);
    return sendAttachment(request, reply, services, lookup.found, forceDownload);
  };
  methods.add("/user_uploads/:realm_id/*", "GET");
  app.get("/user_uploads/:realm_id/*", serve(false));
  // Zulip's download link: the same file, always as an attachment.
  methods.add("/user_uploads/download/:realm_id/*", "GET");
  app.get("/user_uploads/download/:realm_id/*", serve(true));

  // The temporary URL handed out by GET /api/v1/user_uploads/…: no credentials, a signed token.
  methods.add("/user_uploads/temporary/:token/*", "GET");
  app.get<{ Params: { token: string; "*": string } }>("/user_uploads/temporary/:token/*", async (request, reply) => {
    const parsed = parseTemporaryToken(request.params.token);
    if (!parsed) throw invalidToken();
    const attachment = await attachmentById(services.storage.db, parsed.attachmentId);
    if (!attachment || !temporaryTokenValid(await uploadSigningKey(services.files), parsed, attachment.path_id, services.now())) throw invalidToken();
    if (pathIdFileName(attachment.path_id) !== request.params["*"]) throw badRequest("Invalid filename");
    return sendAttachment(request, reply, services, attachment, false);
  });

  // Image previews in rendered messages point at /thumbnail?url=…&size=… (Zulip's
  // form). Parley makes no thumbnails: an upload of this server's is redirected
  // to itself, whose own URL enforces access; an http(s) image elsewhere to its
  // signed /external_content/ path, which fetches it on the reader's behalf
  // (Zulip's generate_thumbnail_url and camo), for signed-in readers only.
  // Anything else gets a 403, never a redirect (it would let anyone make links
  // through this server to anywhere).
  methods.add("/thumbnail", "GET");
  app.get<{ Querystring: { url?: unknown } }>("/thumbnail", async (request, reply) => {
    const url = request.query.url;
    if (url === undefined) throw missingArgument("url");
    const target = typeof url === "string" ? thumbnailTarget(url, config.externalUrl) : undefined;
    if (target !== undefined) return reply.redirect(target);
    if (typeof url === "string" && /^https?:\/\//i.test(url) && isFetchableUrl(url)) {
      // Signing is for signed-in readers (the cookie or HTTP Basic): otherwise anyone could use the server as a proxy to anywhere.
      await authenticateFileRequest(services, request);
      return reply.redirect(externalContentPath(url, await externalContentKey(services.files)));
    }
    throw new ApiError(403, "BAD_REQUEST", "Thumbnails are only available for files uploaded to this server and images on other sites");
  });

  // Temporary files of requests that failed or were cut off, and of earlier runs.
  app.addHook("onResponse", async (request) => discardReceived(request));
  app.addHook("onRequestAbort", async (request) => discardReceived(request));
  void sweepIncoming(config, 60 * 60 * 1000);
}
