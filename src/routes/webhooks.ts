// /api/v1/external/<integration>: incoming webhooks. Unlike the rest of the
// API, the body belongs to the third-party service, so this route reads it
// raw, whatever its Content-Type (Grafana sends JSON labelled as a form), and
// takes Zulip's parameters from the query string or a urlencoded form:
// api_key (or HTTP Basic), stream, topic, only_events, exclude_events, and
// whatever the integration reads itself. The integration module turns the
// payload into messages (src/integrations); actions/webhooks.ts sends them.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { authenticateApiKey } from "../actions/auth.ts";
import { authenticateWebhookKey, deliverWebhookMessages, invalidJsonNotice, missingApiKey, missingHeaderNotice, notifyBotOwner, unsupportedEventMessage } from "../actions/webhooks.ts";
import { jsonNestingExceeds, MAX_WEBHOOK_JSON_DEPTH, tooDeeplyNested } from "../domain/json.ts";
import { ApiError, badRequest } from "../errors.ts";
import { API_PREFIX, basicCredentials, limitByIp, limitByUser, type MethodTable } from "../http/route.ts";
import { errorBody } from "../http/transport.ts";
import { FnmatchPattern } from "../integrations/fnmatch.ts";
import { integrationNamed } from "../integrations/index.ts";
import type { Integration, WebhookMessage, WebhookRequest } from "../integrations/integration.ts";
import type { Services } from "../services.ts";

/** The parameters the route itself reads; integrations get the rest. */
const ROUTE_PARAMS = new Set(["api_key", "stream", "topic"]);

export const WEBHOOK_PATH = `${API_PREFIX}/external/:integration`;

/**
 * Registers the webhook route in a scope of its own, whose body parser keeps
 * every body as bytes, up to the webhook body limit (a larger body: 413, as
 * for any request over BODY_LIMIT_BYTES).
 */
export async function webhookRoutes(app: FastifyInstance, services: Services, methods: MethodTable): Promise<void> {
  methods.add(WEBHOOK_PATH, "GET");
  methods.add(WEBHOOK_PATH, "POST");
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    const handler = async (request: FastifyRequest<{ Params: { integration: string } }>, reply: FastifyReply) => handleWebhook(services, request, reply);
    scope.route({ method: ["GET", "POST"], url: WEBHOOK_PATH, handler, bodyLimit: services.config.webhookBodyLimitBytes });
  });
}

/** Django's QueryDict[name]: the last value. */
function lastValues(params: URLSearchParams): Map<string, string> {
  const values = new Map<string, string>();
  for (const [name, value] of params) values.set(name, value);
  return values;
}

function isFormBody(contentType: string | undefined): boolean {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase() === "application/x-www-form-urlencoded";
}

function isJsonBody(contentType: string | undefined): boolean {
  return (contentType ?? "").split(";")[0]!.trim().toLowerCase() === "application/json";
}

async function handleWebhook(services: Services, request: FastifyRequest<{ Params: { integration: string } }>, reply: FastifyReply): Promise<unknown> {
  const integration = integrationNamed(request.params.integration);
  // An integration Parley does not have is a URL it does not serve, as in Zulip.
  if (integration === undefined) return reply.status(404).send(errorBody("Endpoint not found", "BAD_REQUEST"));

  const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
  let rawBody: string;
  try {
    rawBody = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw badRequest("Malformed payload");
  }
  const contentType = request.headers["content-type"];
  const query = lastValues(new URLSearchParams(request.url.split("?").slice(1).join("?")));
  const form = isFormBody(contentType) ? lastValues(new URLSearchParams(rawBody)) : new Map<string, string>();
  // Zulip's REQ reads the form (request.POST) before the query string (request.GET).
  const param = (name: string): string | undefined => form.get(name) ?? query.get(name);

  // Credentials first (webhook_view), and counted against the address when they fail.
  let authed;
  try {
    const apiKey = param("api_key");
    if (apiKey !== undefined) authed = await authenticateWebhookKey(services, apiKey);
    else if (request.headers.authorization !== undefined) {
      const { email, apiKey: key } = basicCredentials(request.headers.authorization);
      authed = await authenticateApiKey(services, email, key);
    } else throw missingApiKey();
  } catch (error) {
    await limitByIp(services, request, reply);
    throw error;
  }
  const { user, realm } = authed;
  await limitByUser(services, reply, user.id);

  const onlyEvents = eventPatterns(param("only_events"), "only_events");
  const excludeEvents = eventPatterns(param("exclude_events"), "exclude_events");
  const stream = param("stream");
  const userTopic = param("topic");

  const integrationParams: Record<string, string> = {};
  for (const [name, value] of [...query, ...form]) if (!ROUTE_PARAMS.has(name)) integrationParams[name] = value;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  const webhookRequest: WebhookRequest = {
    payload: jsonPayload(rawBody, contentType, param("payload")),
    rawBody,
    headers,
    query: integrationParams,
    userTopic,
  };

  try {
    const result = integration.handle(webhookRequest);
    switch (result.kind) {
      case "ignore":
        return success(reply, integration, "");
      case "unsupported":
        return success(reply, integration, unsupportedEventMessage(result.event, integration.displayName));
      case "error":
        if (result.code === "INVALID_JSON") await notifyBotOwner(services, realm, user, invalidJsonNotice(integration.displayName));
        if (result.code === "MISSING_HTTP_EVENT_HEADER" && typeof result.extra?.header === "string") {
          const path = request.url.split("?")[0]!;
          await notifyBotOwner(services, realm, user, missingHeaderNotice(user.full_name, path, result.extra.header, integration.displayName));
        }
        throw new ApiError(result.status ?? 400, result.code ?? "BAD_REQUEST", result.message, result.extra ?? {});
      case "messages": {
        const wanted = result.messages.filter((m) => wantedEvent(m, onlyEvents, excludeEvents));
        await deliverWebhookMessages(services, realm, user, wanted, { stream, userTopic, clientName: `Zulip${integration.displayName.replace(/\s+/g, "")}Webhook` });
        return success(reply, integration, "");
      }
    }
  } catch (error) {
    // Zulip's slack_error_handler: errors raised by the Slack view are answered the way Slack answers.
    if (integration.slackResponses && error instanceof ApiError) return reply.status(error.status).send({ ok: false, error: error.message });
    throw error;
  }
}

function success(reply: FastifyReply, integration: Integration, msg: string): FastifyReply {
  return reply.send({ result: "success", msg, ...(integration.slackResponses ? { ok: true } : {}) });
}

/**
 * The payload handed to the integration: the body when it is JSON (whatever
 * the Content-Type says), else the `payload` form or query field's JSON (the
 * Slack-compatible form encoding), else undefined. A JSON-labelled body is
 * always the body, as Zulip's views read it.
 */
function jsonPayload(rawBody: string, contentType: string | undefined, payloadField: string | undefined): unknown {
  const parsed = parseJson(rawBody, "Request body");
  if (parsed !== undefined || isJsonBody(contentType)) return parsed;
  return payloadField === undefined ? undefined : parseJson(payloadField, "payload");
}

/**
 * JSON text as a value, or undefined when it is not JSON. JSON that nests
 * deeper than MAX_WEBHOOK_JSON_DEPTH is refused (400) before any integration
 * walks it. JSON.parse itself does not recurse, so the depth is counted after
 * it, only for text that is JSON.
 */
function parseJson(text: string, name: string): unknown {
  if (text.trim() === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
  if (jsonNestingExceeds(text, MAX_WEBHOOK_JSON_DEPTH)) throw tooDeeplyNested(name, MAX_WEBHOOK_JSON_DEPTH);
  return value;
}

/** only_events / exclude_events: JSON lists of strings (Zulip's Json[list[str]]), each an fnmatch pattern (any string is one). */
function eventPatterns(raw: string | undefined, name: string): FnmatchPattern[] | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest(`${name} is not valid JSON`);
  }
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  return value.map((pattern, i) => {
    if (typeof pattern !== "string") throw badRequest(`${name}[${i}] is not a string`);
    return new FnmatchPattern(pattern);
  });
}

function wantedEvent(message: WebhookMessage, only: FnmatchPattern[] | undefined, exclude: FnmatchPattern[] | undefined): boolean {
  const event = message.eventType;
  if (event === undefined) return true;
  if (only !== undefined && !only.some((p) => p.matches(event))) return false;
  if (exclude !== undefined && exclude.some((p) => p.matches(event))) return false;
  return true;
}
