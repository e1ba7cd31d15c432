// Images served outside /api/v1: default user avatars and the organization
// icon. Public, like the URLs Zulip hands out for them, and cacheable because
// the URL carries the version.
import type { FastifyInstance } from "fastify";
import { identiconSvg } from "../domain/avatar.ts";
import type { MethodTable } from "../http/route.ts";
import type { Services } from "../services.ts";

const SVG_HEADERS = { "content-type": "image/svg+xml", "cache-control": "public, max-age=86400" };

export function avatarRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const paths = ["/avatar/:user_id", "/avatar/:user_id/medium"];
  for (const path of paths) {
    methods.add(path, "GET");
    app.get<{ Params: { user_id: string } }>(path, async (request, reply) => {
      // The seed is the ID and the version, never the name or email, so the image reveals nothing.
      const version = typeof (request.query as Record<string, unknown>).v === "string" ? (request.query as Record<string, string>).v : "1";
      return reply.headers(SVG_HEADERS).send(identiconSvg(`${request.params.user_id}:${version}`));
    });
  }
  methods.add("/realm_icon.svg", "GET");
  app.get("/realm_icon.svg", async (_request, reply) => reply.headers(SVG_HEADERS).send(identiconSvg(`realm:${services.config.externalUrl}`)));
}
