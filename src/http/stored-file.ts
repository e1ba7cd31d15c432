// Replying with a stored file (uploads, avatars, custom emoji, the icon),
// whichever file store holds it, streamed, with HTTP range requests (RFC 9110
// §14) as Zulip's nginx answers them: "Range: bytes=first-last", "first-" or
// "-suffix" gets 206 with those bytes, a range past the end 416; a header
// this server does not understand, several ranges, or an If-Range that does
// not match the file gets the whole file (which the RFC allows).
import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ByteRange, StoredFile } from "../files/store.ts";

/**
 * What a Range header asks of a file of `size` bytes: a range within it,
 * "unsatisfiable", or undefined for "send the whole file".
 */
export function requestedRange(header: string | undefined, size: number): ByteRange | "unsatisfiable" | undefined {
  if (header === undefined) return undefined;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return undefined;
  const [, first, last] = match as unknown as [string, string, string];
  if (first === "") {
    // "-N": the last N bytes.
    if (last === "") return undefined;
    const length = Number(last);
    if (length === 0 || size === 0) return "unsatisfiable";
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(first);
  if (last !== "" && Number(last) < start) return undefined;
  if (start >= size) return "unsatisfiable";
  return { start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) };
}

/**
 * Sends `file` with `headers` (its type, disposition, caching…): the whole
 * file, or the range a GET asks for. `etag`, when the reply has one, is what
 * an If-Range must match for the range to be honoured.
 */
export function sendStoredFile(request: FastifyRequest, reply: FastifyReply, file: StoredFile, headers: Record<string, string>, etag?: string): FastifyReply {
  const ifRange = request.headers["if-range"];
  const range = request.method === "GET" && (ifRange === undefined || (etag !== undefined && ifRange === etag)) ? requestedRange(request.headers.range, file.size) : undefined;
  if (range === "unsatisfiable") {
    return reply
      .status(416)
      .headers({ "content-range": `bytes */${file.size}`, "content-type": "text/html; charset=utf-8", "x-content-type-options": "nosniff" })
      .send("<p>Requested range not satisfiable</p>");
  }
  reply.headers({ ...headers, "accept-ranges": "bytes" });
  // HEAD (Fastify's, from the GET route) would read the whole stream to discard it: give it nothing to read.
  if (request.method === "HEAD") return reply.status(200).header("content-length", String(file.size)).send(Readable.from([]));
  if (range === undefined) return reply.status(200).header("content-length", String(file.size)).send(file.stream());
  return reply
    .status(206)
    .headers({ "content-range": `bytes ${range.start}-${range.end}/${file.size}`, "content-length": String(range.end - range.start + 1) })
    .send(file.stream(range));
}
