// Fetching from other sites for readers, through the guarded request
// (outbound/request.ts) with redirects followed: an image for the image proxy
// (see domain/external-content.ts), image types only and a size cap enforced
// as the bytes pass; the head of a page for a link preview.
import { pipeline } from "node:stream/promises";
import { isProxiedImageType, MAX_EXTERNAL_IMAGE_BYTES } from "../domain/external-content.ts";
import { openOutbound, OutboundError, readOutboundBody, SizeLimit, type OutboundRequest, type OutboundResponse } from "./request.ts";

export interface ExternalImage {
  contentType: string;
  contentLength: number | undefined;
  /** The image's bytes, cut off with an error past MAX_EXTERNAL_IMAGE_BYTES. */
  body: NodeJS.ReadableStream;
}

type FetchOptions = Pick<OutboundRequest, "allowInternal" | "allowAddresses" | "dnsServers" | "timeoutMs" | "firstByteTimeoutMs" | "idleTimeoutMs">;

/** A GET with redirects followed whose answer is a 2xx; anything else throws OutboundError. */
async function getOk(url: string, options: FetchOptions, headers: Record<string, string>): Promise<OutboundResponse> {
  const response = await openOutbound(url, { ...options, headers, followRedirects: true });
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    response.destroy();
    throw new OutboundError("bad_answer", `the site answered ${status}`);
  }
  return response;
}

/** Fetches an image another site serves, for a reader; throws OutboundError when it may not or cannot be had. */
export async function fetchExternalImage(url: string, options: FetchOptions): Promise<ExternalImage> {
  const response = await getOk(url, options, { accept: "image/*", "user-agent": "Parley image proxy" });
  const contentType = response.headers["content-type"];
  const length = response.headers["content-length"] === undefined ? undefined : Number(response.headers["content-length"]);
  const refuse = (reason: OutboundError) => {
    response.destroy();
    return reason;
  };
  if (!isProxiedImageType(contentType)) throw refuse(new OutboundError("bad_answer", `not an image (${contentType ?? "no type"})`));
  if (length !== undefined && (!Number.isSafeInteger(length) || length > MAX_EXTERNAL_IMAGE_BYTES)) throw refuse(new OutboundError("too_large", "the image is too large"));
  const limited = new SizeLimit(MAX_EXTERNAL_IMAGE_BYTES);
  // Either side ending early (the reader gone, the cap, the site's error) closes the other: no socket waits for the time limit.
  pipeline(response, limited).catch(() => undefined);
  return { contentType: contentType!, contentLength: length, body: limited };
}

/**
 * The start of an HTML page on another site (for its link preview): at most
 * `maxBytes`, read as UTF-8, with the URL it finally came from (after
 * redirects, for resolving relative URLs). Throws OutboundError.
 */
export async function fetchExternalPage(url: string, options: FetchOptions & { maxBytes: number }): Promise<{ html: string; url: string }> {
  const response = await getOk(url, options, { accept: "text/html,application/xhtml+xml", "user-agent": "Parley link previews" });
  const type = (response.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "text/html" && type !== "application/xhtml+xml") {
    response.destroy();
    throw new OutboundError("bad_answer", `not a page (${type || "no type"})`);
  }
  const html = await readOutboundBody(response, options.maxBytes, "truncate");
  return { html: html.toString("utf8"), url: response.url };
}
