// The one error type every layer throws: a Zulip error code with its message,
// extra fields and the HTTP status Zulip gives it. Domain rules and actions
// throw these; the HTTP layer's error handler turns them into the JSON error
// envelope.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Readonly<Record<string, unknown>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

/** HTTP 400 BAD_REQUEST: Zulip's generic JsonableError. */
export function badRequest(msg: string): ApiError {
  return new ApiError(400, "BAD_REQUEST", msg);
}

export function missingArgument(name: string): ApiError {
  return new ApiError(400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, { var_name: name });
}

/** Zulip's IncompatibleParametersError: `parameters` is the names joined by ", ". */
export function incompatibleParameters(names: readonly string[]): ApiError {
  const parameters = names.join(", ");
  return new ApiError(400, "BAD_REQUEST", `Unsupported parameter combination: ${parameters}`, { parameters });
}

export function noSuchUser(): ApiError {
  return badRequest("No such user");
}

/** Zulip answers "you may not" with HTTP 400 BAD_REQUEST, not 403. */
export function insufficientPermission(): ApiError {
  return badRequest("Insufficient permission");
}

/** Zulip's role-requirement errors: HTTP 400 with code UNAUTHORIZED_PRINCIPAL. */
export function mustBeAdmin(): ApiError {
  return new ApiError(400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
}

export function mustBeOwner(): ApiError {
  return new ApiError(400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
}

export function humansOnly(): ApiError {
  return badRequest("This endpoint does not accept bot requests.");
}

const BASIC_CHALLENGE = { "WWW-Authenticate": 'Basic realm="zulip"' };

/** HTTP 401 for requests without usable credentials. */
export function unauthorized(msg = "Not logged in: API authentication or user session required"): ApiError {
  return new ApiError(401, "UNAUTHORIZED", msg, {}, BASIC_CHALLENGE);
}

/** HTTP 401 on /json without a (live) session: Zulip asks for session authentication there, not Basic. */
export function sessionRequired(): ApiError {
  return new ApiError(401, "UNAUTHORIZED", "Not logged in: API authentication or user session required", {}, { "WWW-Authenticate": 'Session realm="zulip"' });
}

/** Zulip's CsrfFailureError: HTTP 403, Django's reason in the message and as `reason`. */
export function csrfFailed(reason: string): ApiError {
  return new ApiError(403, "CSRF_FAILED", `CSRF error: ${reason}`, { reason });
}

/**
 * Zulip's validate_api_key without allow_webhook_access: an incoming-webhook
 * bot's key on any other endpoint. Raised inside authentication, so Zulip
 * answers it as its UnauthorizedError: 401 with the Basic challenge.
 */
export function incomingWebhookBotRefused(): ApiError {
  return unauthorized("This API is not available to incoming webhook bots.");
}

/** Zulip's authenticated_json_view: a browser session of an incoming-webhook bot (a 400, as Zulip's JsonableError). */
export function webhookBotSessionRefused(): ApiError {
  return badRequest("Webhook bots can only access webhooks");
}

export function invalidApiKey(): ApiError {
  return new ApiError(401, "INVALID_API_KEY", "Invalid API key", {}, BASIC_CHALLENGE);
}

export function userDeactivated(): ApiError {
  return new ApiError(401, "USER_DEACTIVATED", "Account is deactivated");
}

export function realmDeactivated(): ApiError {
  return new ApiError(401, "REALM_DEACTIVATED", "This organization has been deactivated");
}

/** Zulip's 429: the wait in seconds as a number in the body (clients sleep that long), whole seconds in Retry-After. */
export function rateLimited(retryAfterSeconds: number): ApiError {
  const seconds = Math.max(0.001, Math.round(retryAfterSeconds * 1000) / 1000);
  return new ApiError(429, "RATE_LIMIT_HIT", "API usage exceeded rate limit", { "retry-after": seconds }, { "Retry-After": String(Math.ceil(seconds)) });
}
