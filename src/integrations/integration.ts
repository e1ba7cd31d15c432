// An incoming-webhook integration (Zulip's zerver/webhooks/<name>/view.py):
// one module per integration turns a payload into the messages to post, or
// says the event is ignored. Pure: no I/O, no HTTP, no database.

/** What the webhook route hands an integration. */
export interface WebhookRequest {
  /** The parsed JSON body (or the `payload` form field's JSON), or undefined when the body is not JSON. */
  payload: unknown;
  /** The raw body text, for integrations that read it themselves. */
  rawBody: string;
  /** Request headers, names lower-cased. */
  headers: Readonly<Record<string, string | undefined>>;
  /** Query and form parameters other than api_key/stream/topic, as strings. */
  query: Readonly<Record<string, string | undefined>>;
  /** The `topic` query parameter when given: integrations that show titles differently use it. */
  userTopic: string | undefined;
}

export interface WebhookMessage {
  topic: string;
  content: string;
  /**
   * Zulip's complete_event_type for this message (e.g. Grafana's alert status,
   * GitHub's "pull_request_opened"), matched against the `only_events` and
   * `exclude_events` URL parameters (fnmatch patterns). Messages without one
   * are never filtered.
   */
  eventType?: string;
}

export type WebhookResult =
  /** One or more messages to post, in order. */
  | { kind: "messages"; messages: WebhookMessage[] }
  /** Nothing to post: HTTP 200 success (e.g. an ignored action, a branch filtered out). */
  | { kind: "ignore" }
  /** Zulip's "The 'X' event isn't currently supported by the Y webhook; ignoring": HTTP 200, success, with that msg. */
  | { kind: "unsupported"; event: string }
  /** A client error with Zulip's message (400 BAD_REQUEST unless `status`/`code` say otherwise; `extra` fields merged into the JSON body). */
  | { kind: "error"; message: string; status?: number; code?: string; extra?: Record<string, unknown> };

export interface Integration {
  /** The URL name: /api/v1/external/<name>. */
  name: string;
  /** The display name used in Zulip's messages ("GitHub", "GitLab", …). */
  displayName: string;
  /**
   * Slack-compatible replies (slack_incoming): success bodies get `"ok": true`,
   * and errors after authentication are `{"ok": false, "error": msg}` with
   * the error's HTTP status, as Zulip's slack_error_handler answers.
   */
  slackResponses?: boolean;
  handle(request: WebhookRequest): WebhookResult;
}

/**
 * The error Zulip gives when the body an integration needs is not JSON
 * (InvalidJSONError: HTTP 400, code INVALID_JSON); the route also tells the
 * bot's owner, as Zulip's notify_bot_owner_about_invalid_json does.
 */
export function malformedJson(): WebhookResult {
  return { kind: "error", message: "Malformed JSON", code: "INVALID_JSON" };
}
