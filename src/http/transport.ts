// Errors about the request itself rather than its parameters — HTTP that does
// not parse, URLs that do not decode, bodies that are not what their content
// type says — answered, like every other error, with Zulip's error JSON.
// Some never reach Fastify's error handler: Node's HTTP parser rejects the
// request before there is one (clientErrorHandler), or Fastify's router
// rejects the URL before there is a route (frameworkErrors).
import { STATUS_CODES, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";

export function errorBody(msg: string, code: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { result: "error", msg, code, ...extra };
}

/** Status and message for an error of Node's HTTP parser (llhttp's codes), by code. */
function parserError(code: string | undefined): [number, string] {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return [431, "Request header fields too large"];
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return [408, "Request timeout"];
    case "HPE_INVALID_METHOD":
      return [400, "Malformed request: unsupported HTTP method"];
    case "HPE_INVALID_URL":
      return [400, "Malformed request: invalid URL"];
    case "HPE_INVALID_CONTENT_LENGTH":
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return [400, "Malformed request: invalid Content-Length"];
    case "HPE_INVALID_TRANSFER_ENCODING":
    case "HPE_INVALID_CHUNK_SIZE":
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return [400, "Malformed request: invalid chunked encoding"];
    case "HPE_INVALID_EOF_STATE":
      return [400, "Malformed request: the body ended early"];
    case "HPE_INVALID_HEADER_TOKEN":
    case "HPE_INVALID_CONSTANT":
    case "HPE_LF_EXPECTED":
    case "HPE_CR_EXPECTED":
      return [400, "Malformed request: invalid header"];
    default:
      return [400, "Malformed request"];
  }
}

/**
 * Fastify's clientErrorHandler: Node's HTTP server could not parse a request
 * (or timed out reading it). There is no request or reply object, so the
 * answer is written to the socket, which is then closed, as Node does — but
 * only if no response has started on it, so a reply is never corrupted.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  // A connection reset or already destroyed: nobody to answer.
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const [status, msg] = parserError(error.code);
    const body = JSON.stringify(errorBody(msg, "BAD_REQUEST"));
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Fastify's frameworkErrors: the router refused the URL before any route or
 * hook saw it — a path that is not valid percent-encoded UTF-8, or a path
 * segment longer than routerOptions.maxParamLength.
 */
export function frameworkErrorHandler(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === "FST_ERR_MAX_PARAM_LENGTH") {
    void reply.status(414).send(errorBody("URI too long", "BAD_REQUEST"));
  } else if (error.code === "FST_ERR_BAD_URL") {
    void reply.status(400).send(errorBody("Malformed request: the URL path is not valid percent-encoded UTF-8", "BAD_REQUEST"));
  } else {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
    void reply.status(status).send(errorBody("Malformed request", "BAD_REQUEST"));
  }
}

/**
 * Whether an error raised while a multipart body was being parsed is the
 * parser's verdict on the body ("Multipart: Boundary not found", "Unexpected
 * end of multipart data", a part "terminated early"…): busboy reports these
 * as plain Errors, with no status or code. Errors with a code (Fastify's and
 * @fastify/multipart's own, which carry a status too, and system errors such
 * as a full disk) and errors of other classes (TypeError: a bug) are not.
 */
export function isMalformedMultipart(error: Error & { code?: unknown; statusCode?: unknown; syscall?: unknown }): boolean {
  return Object.getPrototypeOf(error) === Error.prototype && error.code === undefined && error.statusCode === undefined && error.syscall === undefined;
}
