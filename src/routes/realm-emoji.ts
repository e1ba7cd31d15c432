// Custom emoji: GET /realm/emoji, POST /realm/emoji/{emoji_name} (a
// multipart image upload, received by routes/uploads.ts's file receiver) and
// DELETE /realm/emoji/{emoji_name}; and, outside /api/v1, the images
// themselves at /user_avatars/{realm_id}/emoji/images/{file_name}, public as
// Zulip serves them (they appear in messages anyone may be shown).
import type { FastifyInstance } from "fastify";
import { addRealmEmoji, deactivateRealmEmoji } from "../actions/realm-emoji.ts";
import { emojiContentType, emojiStoragePath, isEmojiFileName } from "../domain/emoji.ts";
import { param } from "../http/params.ts";
import { defineRoute, type MethodTable } from "../http/route.ts";
import { sendStoredFile } from "../http/stored-file.ts";
import { realmEmojiDict } from "../queries/realm-emoji.ts";
import type { Services } from "../services.ts";
import { IMAGE_SECURITY_HEADERS } from "./avatars.ts";
import { receivedUploads } from "./uploads.ts";

export const realmEmojiRoutes = [
  defineRoute({
    method: "GET",
    path: "/realm/emoji",
    auth: "api",
    params: {},
    // Zulip's list_emoji: every custom emoji, deactivated ones too, for anyone in the organization.
    handler: async ({ services, realm }) => ({ emoji: await realmEmojiDict(services.storage.db, realm.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/realm/emoji/:emoji_name",
    auth: "api",
    params: { emoji_name: param.string().required() },
    handler: async ({ services, realm, user, http }, p) => {
      await addRealmEmoji(services, realm, user, p.emoji_name, receivedUploads(http));
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/realm/emoji/:emoji_name",
    auth: "api",
    params: { emoji_name: param.string().required() },
    handler: async ({ services, realm, user }, p) => {
      await deactivateRealmEmoji(services, realm, user, p.emoji_name);
    },
  }),
];

const IMAGE_HEADERS = {
  ...IMAGE_SECURITY_HEADERS,
  // A file name is never reused for other contents.
  "cache-control": "public, max-age=31536000, immutable",
};

export function realmEmojiFileRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const route = "/user_avatars/:realm_id/emoji/images/:file_name";
  methods.add(route, "GET");
  app.get<{ Params: { realm_id: string; file_name: string } }>(route, async (request, reply) => {
    const { realm_id: realmId, file_name: fileName } = request.params;
    const notFound = () => reply.status(404).header("content-type", "text/html; charset=utf-8").send("<p>File not found</p>");
    if (!/^[1-9][0-9]{0,9}$/.test(realmId) || !isEmojiFileName(fileName)) return notFound();
    const file = await services.files.open(emojiStoragePath(Number(realmId), fileName));
    if (!file) return notFound();
    return sendStoredFile(request, reply, file, { ...IMAGE_HEADERS, "content-type": emojiContentType(fileName)! });
  });
}
