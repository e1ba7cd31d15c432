// Errors about the request itself rather than its parameters — bodies that
// are not what their content type says — answered, like every other error,
// with Zulip's error JSON.

export function errorBody(msg: string, code: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { result: "error", msg, code, ...extra };
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
