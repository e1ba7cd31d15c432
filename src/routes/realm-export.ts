// Organization data exports: POST /export/realm, GET /export/realm,
// DELETE /export/realm/{export_id}, GET /export/realm/consents (Zulip's
// zerver/views/realm_export.py), and, outside /api/v1, the finished tarball
// at its export_url, for the organization's administrators only.
import type { FastifyInstance } from "fastify";
import { deleteRealmExport, listExportConsents, listRealmExports, requestRealmExport } from "../actions/realm-export.ts";
import { ExportType } from "../domain/realm-export.ts";
import { isAdmin } from "../domain/roles.ts";
import { param } from "../http/params.ts";
import { authenticateFileRequest, defineRoute, type MethodTable } from "../http/route.ts";
import { sendStoredFile } from "../http/stored-file.ts";
import { isFinishedExportPath } from "../queries/realm-export.ts";
import type { Services } from "../services.ts";

export const realmExportRoutes = [
  defineRoute({
    method: "POST",
    path: "/export/realm",
    auth: "api",
    // Checked by the action after the administrator check, as Zulip's decorators order them.
    params: { export_type: param.int().default(ExportType.PUBLIC) },
    handler: async ({ services, realm, user }, p) => ({ id: await requestRealmExport(services, realm, user, p.export_type) }),
  }),

  defineRoute({
    method: "GET",
    path: "/export/realm",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user }) => ({ exports: await listRealmExports(services, realm, user) }),
  }),

  defineRoute({
    method: "GET",
    path: "/export/realm/consents",
    auth: "api",
    params: {},
    handler: async ({ services, realm, user }) => ({ export_consents: await listExportConsents(services, realm, user) }),
  }),

  defineRoute({
    method: "DELETE",
    path: "/export/realm/:export_id",
    auth: "api",
    params: { export_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await deleteRealmExport(services, realm, user, p.export_id);
    },
  }),
];

function htmlError(reply: import("fastify").FastifyReply, status: number, message: string) {
  return reply.status(status).header("content-type", "text/html; charset=utf-8").send(`<p>${message}</p>`);
}

/** The tarball at export_url: the organization's administrators only, with their API key or their session. */
export function realmExportFileRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const route = "/user_avatars/exports/:realm_id/:token/:file_name";
  methods.add(route, "GET");
  app.get<{ Params: { realm_id: string; token: string; file_name: string } }>(route, async (request, reply) => {
    const { realm, user } = await authenticateFileRequest(services, request);
    const { realm_id: realmId, token, file_name: fileName } = request.params;
    if (!isAdmin(user.role)) return htmlError(reply, 403, "You are not authorized to view this file.");
    const key = `exports/${realmId}/${token}/${fileName}`;
    const file = (await isFinishedExportPath(services.storage.db, realm.id, key)) ? await services.files.open(key) : undefined;
    if (!file) return htmlError(reply, 404, "This file does not exist or has been deleted.");
    return sendStoredFile(request, reply, file, {
      "content-type": "application/gzip",
      "content-disposition": `attachment; filename="${fileName}"`,
      "cache-control": "private, no-store",
      "x-content-type-options": "nosniff",
    });
  });
}
