// GET /external_content/<digest>/<hex URL>: another site's image, fetched on
// the reader's behalf (Zulip's camo; see domain/external-content.ts). No
// sign-in, as camo has none: the digest is the permission, and only this
// server can make one. A digest that is not this server's: 403. An image that
// cannot be had (an internal address, not an image, too large, the site's
// error, too slow): 404, as camo answers.
import type { FastifyInstance } from "fastify";
import { ExternalContentUnavailable, externalContentKey, fetchExternalImage } from "../actions/external-content.ts";
import { verifiedExternalUrl } from "../domain/external-content.ts";
import { ApiError } from "../errors.ts";
import type { MethodTable } from "../http/route.ts";
import type { Services } from "../services.ts";

/** How long browsers and caches may keep a proxied image: a day, as the other site may change it. */
const CACHE_SECONDS = 24 * 3600;
/** Images fetched at once by this process; past it, readers are told to come back (503 with Retry-After). */
const MAX_FETCHES_IN_FLIGHT = 32;
let inFlight = 0;

export function externalContentRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const { config } = services;
  // The URL's hex is a wildcard: a path parameter is capped in length (maxParamLength), URLs are not.
  methods.add("/external_content/:digest/*", "GET");
  app.get<{ Params: { digest: string; "*": string } }>("/external_content/:digest/*", async (request, reply) => {
    const url = verifiedExternalUrl(request.params.digest, request.params["*"], await externalContentKey(config));
    if (url === undefined) throw new ApiError(403, "BAD_REQUEST", "Invalid signature");
    if (inFlight >= MAX_FETCHES_IN_FLIGHT) {
      reply.header("retry-after", "1");
      throw new ApiError(503, "BAD_REQUEST", "Too many images are being fetched; try again shortly");
    }
    inFlight += 1;
    let image;
    try {
      image = await fetchExternalImage(url, { allowInternal: config.externalContentAllowInternal, timeoutMs: config.externalContentTimeoutMs });
    } catch (error) {
      inFlight -= 1;
      if (!(error instanceof ExternalContentUnavailable)) throw error;
      request.log.info({ reason: error.message }, "external image not served");
      throw new ApiError(404, "BAD_REQUEST", "Image not available");
    }
    let released = false;
    const release = () => {
      if (!released) (released = true), (inFlight -= 1);
    };
    image.body.once("close", release);
    image.body.once("end", release);
    image.body.once("error", release);
    reply
      .header("content-type", image.contentType)
      .header("cache-control", `public, max-age=${CACHE_SECONDS}`)
      .header("x-content-type-options", "nosniff")
      .header("content-security-policy", "default-src 'none'; sandbox");
    if (image.contentLength !== undefined) reply.header("content-length", image.contentLength);
    return reply.send(image.body);
  });
}
