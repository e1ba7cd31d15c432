// GET /external_content/<digest>/<hex URL>: another site's image, fetched on
// the reader's behalf (Zulip's camo; see domain/external-content.ts). No
// sign-in, as camo has none: the digest is the permission, and only this
// server can make one. A digest that is not this server's: 403. An image that
// cannot be had (an internal address, not an image, too large, the site's
// error, too slow): 404, as camo answers.
//
// Images are kept on disk for the day browsers are told to keep them
// (actions/external-content-cache.ts), and readers of an image being fetched
// wait for that fetch. Fetches hold slots: a few per client network
// (http/client-slots.ts; the address as request.ip sees it, so behind
// TRUSTED_PROXIES the client's), a bounded total, so nobody — the proxy needs
// no sign-in — can hold them all with images that never arrive.
import path from "node:path";
import type { FastifyInstance, FastifyReply } from "fastify";
import { ExternalContentCache, type CachedImage } from "../actions/external-content-cache.ts";
import { externalContentKey } from "../actions/external-content.ts";
import { verifiedExternalUrl } from "../domain/external-content.ts";
import { ApiError } from "../errors.ts";
import { ClientSlots } from "../http/client-slots.ts";
import type { MethodTable } from "../http/route.ts";
import { fetchExternalImage } from "../outbound/external-content.ts";
import { outboundSettings, OutboundError } from "../outbound/request.ts";
import type { Services } from "../services.ts";

/** How long browsers and caches may keep a proxied image, and this server its copy: a day, as the other site may change it. */
const CACHE_SECONDS = 24 * 3600;
/** Images fetched at once by this process; past it, readers are told to come back (503 with Retry-After). */
const MAX_FETCHES_IN_FLIGHT = 32;
/** Requests of one client network waiting for one of its fetch slots (a page of images); past it, 503. */
const MAX_QUEUED_PER_CLIENT = 32;

function busy(): ApiError {
  return new ApiError(503, "BAD_REQUEST", "Too many images are being fetched; try again shortly", {}, { "retry-after": "1" });
}

export function externalContentRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const { config } = services;
  const cache = new ExternalContentCache(path.join(config.dataDir, "external-content-cache"), {
    maxBytes: config.externalContentCacheBytes,
    maxAgeMs: CACHE_SECONDS * 1000,
  });
  const slots = new ClientSlots({ total: MAX_FETCHES_IN_FLIGHT, perClient: config.externalContentFetchesPerAddress, queuedPerClient: MAX_QUEUED_PER_CLIENT });
  const fetchImage = (url: string) =>
    fetchExternalImage(url, {
      ...outboundSettings(config),
      timeoutMs: config.externalContentTimeoutMs,
      firstByteTimeoutMs: config.externalContentFirstByteTimeoutMs,
      idleTimeoutMs: config.externalContentIdleTimeoutMs,
    });

  // The URL's hex is a wildcard: a path parameter is capped in length (maxParamLength), URLs are not.
  methods.add("/external_content/:digest/*", "GET");
  app.get<{ Params: { digest: string; "*": string } }>("/external_content/:digest/*", async (request, reply) => {
    const url = verifiedExternalUrl(request.params.digest, request.params["*"], await externalContentKey(services.files));
    if (url === undefined) throw new ApiError(403, "BAD_REQUEST", "Invalid signature");
    let image: CachedImage;
    try {
      const cached = await cache.open(url);
      if (cached !== undefined) return send(reply, cached);
      // An image being fetched is waited for without a slot: the fetch holds one already.
      const joined = cache.join(url);
      if (joined !== undefined) return send(reply, await joined);
      const abandoned = new AbortController();
      reply.raw.once("close", () => abandoned.abort());
      const release = await slots.acquire(request.ip, abandoned.signal);
      if (release === undefined) throw busy();
      try {
        // Fetched while this request waited for its slot?
        image = (await cache.open(url)) ?? (await cache.fetch(url, () => fetchImage(url)));
      } finally {
        release();
      }
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      request.log.info({ reason: error.message }, "external image not served");
      throw new ApiError(404, "BAD_REQUEST", "Image not available");
    }
    return send(reply, image);
  });
}

function send(reply: FastifyReply, image: CachedImage): FastifyReply {
  reply
    .header("content-type", image.contentType)
    .header("content-length", image.bodySize)
    .header("cache-control", `public, max-age=${CACHE_SECONDS}`)
    .header("x-content-type-options", "nosniff")
    .header("content-security-policy", "default-src 'none'; sandbox");
  if (image.bodySize === 0) {
    void image.file.close();
    return reply.send(Buffer.alloc(0));
  }
  return reply.send(image.file.createReadStream({ start: image.bodyOffset, end: image.bodyOffset + image.bodySize - 1 }));
}
