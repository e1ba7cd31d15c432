// Fetching from other sites for readers — an image for the image proxy (see
// domain/external-content.ts), a page's head for a link preview:
// http(s) only, redirects followed a few times and each hop checked again,
// the address checked when the connection is made (so a name that resolves
// to this machine or a private network is refused, whatever it resolved to
// when the URL was signed), one time limit for the whole fetch, image types
// only, and a size cap enforced as the bytes pass.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import crypto from "node:crypto";
import type { Config } from "../config.ts";
import {
  isFetchableUrl,
  isInternalAddress,
  isProxiedImageType,
  MAX_EXTERNAL_IMAGE_BYTES,
  MAX_EXTERNAL_REDIRECTS,
} from "../domain/external-content.ts";
import { uploadSigningKey } from "./uploads.ts";

const keys = new Map<string, Promise<Buffer>>();

/** The key external-content paths are signed with: derived from the server's upload-signing secret, shared by every process (read once per process). */
export function externalContentKey(config: Config): Promise<Buffer> {
  let key = keys.get(config.uploadsDir);
  if (!key) {
    key = uploadSigningKey(config).then((secret) => crypto.createHmac("sha256", secret).update("external_content").digest());
    key.catch(() => keys.delete(config.uploadsDir));
    keys.set(config.uploadsDir, key);
  }
  return key;
}

/** The image could not be fetched (refused address, not an image, too large, upstream error, timeout…): `reason` says which. */
export class ExternalContentUnavailable extends Error {}

export interface ExternalImage {
  contentType: string;
  contentLength: number | undefined;
  /** The image's bytes, cut off with an error past MAX_EXTERNAL_IMAGE_BYTES. */
  body: NodeJS.ReadableStream;
}

// Names are resolved by asking DNS directly (c-ares), not with getaddrinfo:
// that runs on libuv's four threads, which a name server that never answers
// would hold for every file read and password hash of the process.
const resolver = new dns.promises.Resolver({ timeout: 3000, tries: 2 });

async function addressesOf(hostname: string): Promise<dns.LookupAddress[]> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  return [
    ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
}

function guardedLookup(allowInternal: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    addressesOf(hostname).then(
      (list) => {
        if (list.length === 0) return callback(new ExternalContentUnavailable(`${hostname} has no address`), "", 0);
        if (!allowInternal && list.some((a) => isInternalAddress(a.address))) {
          return callback(new ExternalContentUnavailable(`${hostname} is an internal address`), "", 0);
        }
        const wanted = options.family === 4 || options.family === 6 ? list.filter((a) => a.family === options.family) : list;
        if (wanted.length === 0) return callback(new ExternalContentUnavailable(`${hostname} has no IPv${options.family} address`), "", 0);
        if ((options as dns.LookupAllOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, wanted);
        return callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, "", 0),
    );
  };
}

// Agents of their own: no keep-alive sockets shared with anything else, and no proxy from the environment
// (which would connect to the proxy, not to the checked address).
const agents = { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) };

function request(url: URL, allowInternal: boolean, signal: AbortSignal, accept: string): Promise<http.IncomingMessage & { responseUrl?: string }> {
  // A literal address is connected to without a lookup: checked here.
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (net.isIP(literal) && !allowInternal && isInternalAddress(literal)) {
    return Promise.reject(new ExternalContentUnavailable(`${literal} is an internal address`));
  }
  const secure = url.protocol === "https:";
  const get = secure ? https.get : http.get;
  return new Promise((resolve, reject) => {
    const req = get(
      url,
      {
        agent: secure ? agents.https : agents.http,
        headers: { accept, "user-agent": accept.startsWith("image/") ? "Parley image proxy" : "Parley link previews" },
        lookup: guardedLookup(allowInternal),
        signal,
      },
      (response) => resolve(Object.assign(response, { responseUrl: url.href })),
    );
    req.on("error", reject);
  });
}

class SizeLimit extends Transform {
  private seen = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) return done(new ExternalContentUnavailable("the image is too large"));
    done(null, chunk);
  }
}

/** Opens a URL on another site, following redirects (each hop checked as the first); the reply's headers are in, its body not yet read. */
async function openExternal(url: string, options: { allowInternal: boolean; timeoutMs: number; accept: string }): Promise<http.IncomingMessage & { responseUrl?: string }> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  let current = new URL(url);
  for (let hop = 0; ; hop++) {
    if (!isFetchableUrl(current.href)) throw new ExternalContentUnavailable("not an http(s) URL");
    let response: http.IncomingMessage & { responseUrl?: string };
    try {
      response = await request(current, options.allowInternal, signal, options.accept);
    } catch (error) {
      if (error instanceof ExternalContentUnavailable) throw error;
      throw new ExternalContentUnavailable(`fetch failed: ${(error as Error).message}`);
    }
    const status = response.statusCode ?? 0;
    if ([301, 302, 303, 307, 308].includes(status) && response.headers.location) {
      response.resume();
      if (hop >= MAX_EXTERNAL_REDIRECTS) throw new ExternalContentUnavailable("too many redirects");
      try {
        current = new URL(response.headers.location, current);
      } catch {
        throw new ExternalContentUnavailable("a redirect to a malformed address");
      }
      continue;
    }
    if (status < 200 || status > 299) {
      response.destroy();
      throw new ExternalContentUnavailable(`the site answered ${status}`);
    }
    return response;
  }
}

/** Fetches an image another site serves, for a reader; throws ExternalContentUnavailable when it may not or cannot be had. */
export async function fetchExternalImage(url: string, options: { allowInternal: boolean; timeoutMs: number }): Promise<ExternalImage> {
  const response = await openExternal(url, { ...options, accept: "image/*" });
  const contentType = response.headers["content-type"];
  const length = response.headers["content-length"] === undefined ? undefined : Number(response.headers["content-length"]);
  const refuse = (reason: string) => {
    response.destroy();
    return new ExternalContentUnavailable(reason);
  };
  if (!isProxiedImageType(contentType)) throw refuse(`not an image (${contentType ?? "no type"})`);
  if (length !== undefined && (!Number.isSafeInteger(length) || length > MAX_EXTERNAL_IMAGE_BYTES)) throw refuse("the image is too large");
  const limited = new SizeLimit(MAX_EXTERNAL_IMAGE_BYTES);
  // Either side ending early (the reader gone, the cap, the site's error) closes the other: no socket waits for the time limit.
  pipeline(response, limited).catch(() => undefined);
  return { contentType: contentType!, contentLength: length, body: limited };
}

/**
 * The start of an HTML page on another site (for its link preview): at most
 * `maxBytes`, read as UTF-8, with the URL it finally came from (after
 * redirects, for resolving relative URLs). Throws ExternalContentUnavailable.
 */
export async function fetchExternalPage(url: string, options: { allowInternal: boolean; timeoutMs: number; maxBytes: number }): Promise<{ html: string; url: string }> {
  const response = await openExternal(url, { ...options, accept: "text/html,application/xhtml+xml" });
  const type = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "text/html" && type !== "application/xhtml+xml") {
    response.destroy();
    throw new ExternalContentUnavailable(`not a page (${type || "no type"})`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= options.maxBytes) break;
    }
  } catch (error) {
    throw new ExternalContentUnavailable(`reading the page failed: ${(error as Error).message}`);
  } finally {
    response.destroy();
  }
  const finalUrl = response.responseUrl ?? url;
  return { html: Buffer.concat(chunks).subarray(0, options.maxBytes).toString("utf8"), url: finalUrl };
}
