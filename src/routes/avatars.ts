// Avatars, the organization icon and the emoji data document.
//
// API: POST/DELETE /users/me/avatar and POST/DELETE /realm/icon (multipart
// image uploads, received by routes/uploads.ts's file receiver).
//
// Outside /api/v1, public as Zulip serves them (their URLs are in API data
// that every client shows), PNG, cacheable because each URL names one image:
//   /user_avatars/{realm_id}/{hash}.png, -medium.png       uploaded avatars
//   /user_avatars/{realm_id}/default/{user_id}.png, -medium.png  generated ones
//   /user_avatars/{realm_id}/realm/icon.png?version=N      the organization icon
//   /static/generated/emoji/emoji_api[.{hash}].json        server_emoji_data_url
// and /avatar/{user_id or email}[/medium], Zulip's authenticated redirect to
// a user's current avatar (what zulip-flutter falls back to without avatar_url).
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { deleteAvatar, deleteRealmIcon, uploadAvatar, uploadRealmIcon } from "../actions/avatars.ts";
import {
  AvatarSource,
  DEFAULT_AVATAR_SIZE,
  MEDIUM_AVATAR_SIZE,
  avatarStoragePaths,
  avatarUrl,
  defaultAvatarSeed,
  defaultIconSeed,
  parseAvatarFileName,
  parseDefaultAvatarFileName,
  realmIconStoragePaths,
} from "../domain/avatar.ts";
import { noSuchUser } from "../errors.ts";
import { authenticateFileRequest, defineRoute, type MethodTable } from "../http/route.ts";
import { sendStoredFile } from "../http/stored-file.ts";
import { identiconPng } from "../images.ts";
import { EMOJI_DATA_PATH, emojiDataFile } from "../queries/emoji-data.ts";
import { getRealm, getUserById, getUserByLoginEmail } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { receivedUploads } from "./uploads.ts";

export const avatarRoutes = [
  defineRoute({
    method: "POST",
    path: "/users/me/avatar",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user, http }) => ({ avatar_url: await uploadAvatar(services, realm, user, receivedUploads(http)) }),
  }),
  defineRoute({
    method: "DELETE",
    path: "/users/me/avatar",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user }) => ({ avatar_url: await deleteAvatar(services, realm, user) }),
  }),
  defineRoute({
    method: "POST",
    path: "/realm/icon",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user, http }) => ({ icon_url: await uploadRealmIcon(services, realm, user, receivedUploads(http)) }),
  }),
  defineRoute({
    method: "DELETE",
    path: "/realm/icon",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user }) => ({ icon_url: await deleteRealmIcon(services, realm, user) }),
  }),
];

/** What Zulip's nginx sends with uploaded images: nothing in them may run or load anything. */
export const IMAGE_SECURITY_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; object-src 'self';",
  "x-content-type-options": "nosniff",
};

/** For a URL whose contents never change. */
const CACHE_FOREVER = "public, max-age=31536000, immutable";
/** For a URL whose contents may change: keep it, but ask (If-None-Match) before using it. */
const CACHE_REVALIDATE = "public, no-cache";

function notFound(reply: FastifyReply): FastifyReply {
  return reply.status(404).header("content-type", "text/html; charset=utf-8").send("<p>File not found</p>");
}

/** Whether the client already holds this version (If-None-Match, RFC 9110 weak comparison). */
function clientHas(request: FastifyRequest, etag: string): boolean {
  const header = request.headers["if-none-match"];
  if (header === undefined) return false;
  return header.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t.replace(/^W\//, "") === etag;
  });
}

interface ImageReply {
  etag: string;
  cacheControl: string;
  /** The PNG, or the key of the stored file that holds it. */
  body: Buffer | { key: string };
}

async function sendPng(services: Services, request: FastifyRequest, reply: FastifyReply, image: ImageReply): Promise<FastifyReply> {
  reply.headers({ ...IMAGE_SECURITY_HEADERS, etag: image.etag, "cache-control": image.cacheControl });
  if (clientHas(request, image.etag)) return reply.status(304).send();
  if (Buffer.isBuffer(image.body)) return reply.header("content-type", "image/png").send(image.body);
  const file = await services.files.open(image.body.key);
  if (!file) {
    reply.removeHeader("etag");
    reply.removeHeader("cache-control");
    return notFound(reply);
  }
  return sendStoredFile(request, reply, file, { "content-type": "image/png" }, image.etag);
}

const REALM_ID = /^[1-9][0-9]{0,9}$/;

/** The query string of a request, with its "?" (or ""). */
function queryString(request: FastifyRequest): string {
  const at = request.url.indexOf("?");
  return at < 0 ? "" : request.url.slice(at);
}

export function avatarFileRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const { config } = services;
  const db = () => services.storage.db;

  // Uploaded avatars: the random name is the only way to them, and never names other contents.
  methods.add("/user_avatars/:realm_id/:file_name", "GET");
  app.get<{ Params: { realm_id: string; file_name: string } }>("/user_avatars/:realm_id/:file_name", async (request, reply) => {
    const { realm_id: realmId, file_name: fileName } = request.params;
    const parsed = parseAvatarFileName(fileName);
    if (!REALM_ID.test(realmId) || !parsed) return notFound(reply);
    const paths = avatarStoragePaths(Number(realmId), parsed.hash);
    const key = parsed.medium ? paths.medium : paths.small;
    return sendPng(services, request, reply, { etag: `"${parsed.hash}${parsed.medium ? "-medium" : ""}"`, cacheControl: CACHE_FOREVER, body: { key } });
  });

  // Generated avatars: a user's never changes (its seed is the user ID), so neither does the URL's image.
  methods.add("/user_avatars/:realm_id/default/:file_name", "GET");
  app.get<{ Params: { realm_id: string; file_name: string } }>("/user_avatars/:realm_id/default/:file_name", async (request, reply) => {
    const { realm_id: realmId, file_name: fileName } = request.params;
    const parsed = parseDefaultAvatarFileName(fileName);
    if (!REALM_ID.test(realmId) || !parsed) return notFound(reply);
    // Only for users that exist: nobody may make the server draw images for any number at all.
    if (!(await getUserById(db(), Number(realmId), parsed.userId))) return notFound(reply);
    const size = parsed.medium ? MEDIUM_AVATAR_SIZE : DEFAULT_AVATAR_SIZE;
    return sendPng(services, request, reply, { etag: `"default-${parsed.userId}-${size}"`, cacheControl: CACHE_FOREVER, body: await identiconPng(defaultAvatarSeed(parsed.userId), size) });
  });

  // The icon: one path, its contents named by ?version= (icon_version).
  methods.add("/user_avatars/:realm_id/realm/icon.png", "GET");
  app.get<{ Params: { realm_id: string }; Querystring: { version?: string } }>("/user_avatars/:realm_id/realm/icon.png", async (request, reply) => {
    const realmId = request.params.realm_id;
    const realm = REALM_ID.test(realmId) ? await getRealm(db(), Number(realmId)) : undefined;
    if (!realm) return notFound(reply);
    // A request for the current version may be kept for good; any other gets today's icon, to be checked again.
    const cacheControl = request.query.version === String(realm.icon_version) ? CACHE_FOREVER : CACHE_REVALIDATE;
    const etag = `"icon-${realm.icon_version}"`;
    if (realm.icon_source === AvatarSource.UPLOADED) {
      return sendPng(services, request, reply, { etag, cacheControl, body: { key: realmIconStoragePaths(realm.id, realm.icon_version).small } });
    }
    return sendPng(services, request, reply, { etag, cacheControl, body: await identiconPng(defaultIconSeed(realm.id), DEFAULT_AVATAR_SIZE) });
  });

  // Zulip's /avatar/{email_or_id}: a redirect to the user's avatar, for clients that have credentials but no avatar_url.
  const redirectToAvatar = (medium: boolean) => async (request: FastifyRequest<{ Params: { email_or_id: string } }>, reply: FastifyReply) => {
    const { realm } = await authenticateFileRequest(services, request);
    const key = request.params.email_or_id;
    const user = /^[0-9]+$/.test(key) ? await getUserById(db(), realm.id, Number(key)) : await getUserByLoginEmail(db(), realm.id, key);
    if (!user) throw noSuchUser();
    // As Zulip, the request's own query string is passed on (its URLs already have one).
    const query = queryString(request).replace(/^\?/, "&");
    return reply.redirect(avatarUrl(config.externalUrl, user, medium) + (query === "&" ? "" : query), 302);
  };
  methods.add("/avatar/:email_or_id", "GET");
  app.get("/avatar/:email_or_id", redirectToAvatar(false));
  methods.add("/avatar/:email_or_id/medium", "GET");
  app.get("/avatar/:email_or_id/medium", redirectToAvatar(true));

  // server_emoji_data_url. The current hash is cached for good; the plain name, or an older
  // hash a client kept from before an upgrade, gets the current document to be checked again.
  methods.add(`${EMOJI_DATA_PATH}/:file_name`, "GET");
  app.get<{ Params: { file_name: string } }>(`${EMOJI_DATA_PATH}/:file_name`, async (request, reply) => {
    const match = /^emoji_api(?:\.([0-9a-f]{16}))?\.json$/.exec(request.params.file_name);
    if (!match) return notFound(reply);
    const data = emojiDataFile();
    const etag = `"${data.hash}"`;
    reply.headers({
      "cache-control": match[1] === data.hash ? CACHE_FOREVER : CACHE_REVALIDATE,
      etag,
      vary: "Accept-Encoding",
      // Clients fetch it without credentials, from any origin (as Zulip's static files allow).
      "access-control-allow-origin": "*",
      "x-content-type-options": "nosniff",
    });
    if (clientHas(request, etag)) return reply.status(304).send();
    reply.header("content-type", "application/json");
    if (/\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""))) return reply.header("content-encoding", "gzip").send(data.gzip);
    return reply.send(data.json);
  });
}
