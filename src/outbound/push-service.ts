// HTTP client for the mobile push service (a Zulip-style push notification
// bouncer), as Zulip's send_to_push_bouncer: requests go to
// {PUSH_SERVICE_URL}/api/v1/remotes/{endpoint} with HTTP Basic credentials, and
// replies map to three outcomes: success (the JSON body), a failure worth
// retrying (network error, timeout, 5xx), or a refusal (4xx, with the
// service's error code and message).
import { ApiError } from "../errors.ts";
import type { Config } from "../config.ts";
import { SERVICE_VERSION } from "../version.ts";

export class PushServiceError extends Error {
  constructor(
    /** retry: the service may accept it later; refused: it never will as sent. */
    readonly kind: "retry" | "refused",
    message: string,
    readonly code: string = "BAD_REQUEST",
  ) {
    super(message);
  }

  /** The error a client gets when its request depended on the service (Zulip: 502 for retry-later errors). */
  toApiError(): ApiError {
    return this.kind === "retry" ? new ApiError(502, "BAD_REQUEST", this.message) : new ApiError(400, "BAD_REQUEST", this.message);
  }
}

const TIMEOUT_MS = 30_000;

/** Sends one request; `json` bodies are sent as JSON, others form-encoded (as Zulip does per endpoint). */
export async function callPushService(config: Config, endpoint: string, body: Record<string, unknown>, encoding: "form" | "json"): Promise<Record<string, unknown>> {
  if (config.pushServiceUrl === undefined) throw new PushServiceError("refused", "Server is not configured to use push notification service.");
  const url = `${config.pushServiceUrl}/api/v1/remotes/${endpoint}`;
  const headers: Record<string, string> = {
    authorization: `Basic ${Buffer.from(`${config.pushServiceOrgId ?? ""}:${config.pushServiceOrgKey ?? ""}`).toString("base64")}`,
    "user-agent": `ZulipServer/${SERVICE_VERSION}`,
  };
  let payload: string;
  if (encoding === "json") {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  } else {
    headers["content-type"] = "application/x-www-form-urlencoded";
    const entries = Object.entries(body)
      .filter(([, v]) => v !== undefined && v !== null)
      .map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)] as [string, string]);
    payload = new URLSearchParams(entries).toString();
  }
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { method: "POST", headers, body: payload, signal: AbortSignal.timeout(TIMEOUT_MS) });
    text = await response.text();
  } catch (error) {
    const name = error instanceof Error && error.name === "TimeoutError" ? "Timeout" : "ConnectionError";
    throw new PushServiceError("retry", `${name} while trying to connect to push notification bouncer`);
  }
  if (response.status >= 500) throw new PushServiceError("retry", `Received ${response.status} from push notification bouncer`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const reply = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : undefined;
  if (response.status >= 400) {
    const msg = typeof reply?.msg === "string" ? reply.msg : "Error received from push notification bouncer";
    throw new PushServiceError("refused", msg, typeof reply?.code === "string" ? reply.code : "BAD_REQUEST");
  }
  if (response.status !== 200) throw new PushServiceError("refused", `Push notification bouncer returned unexpected status code ${response.status}`);
  return reply ?? {};
}
