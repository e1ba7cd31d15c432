// The one mechanism every API endpoint goes through: authentication, declared
// parameters, the success envelope with ignored_parameters_unsupported, and
// the method table that lets unknown methods get a 405. Each endpoint is
// served twice: at /api/v1/<path> for API clients (HTTP Basic with an API
// key) and at /json/<path> for the browser (the session cookie, and the
// session's CSRF token on unsafe methods), with the same handler.
import type { OutgoingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { authenticateApiKey, checkApiKeyScope, checkSessionScope, type Authenticated } from "../actions/auth.ts";
import { authenticateSession, csrfTokenMatches, type BrowserSession } from "../actions/sessions.ts";
import type { Services } from "../services.ts";
import { isAdmin } from "../domain/roles.ts";
import { csrfFailed, mustBeAdmin, rateLimited, unauthorized } from "../errors.ts";
import { API_BY_IP_RULE, apiByUserRule, type RateLimitResult, type RateLimitRule } from "../rate-limit.ts";
import { collectRawParams, parseParams, type ParamShape, type ParamsOf } from "./params.ts";
import { clearSessionCookie, sessionToken } from "./session-cookie.ts";

export const API_PREFIX = "/api/v1";
/** Where the browser calls the API, signed in by its session cookie (Zulip's /json). */
export const JSON_PREFIX = "/json";

export type HttpMethod = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

/** Reply data merged into `{"result":"success","msg":""}`. */
export type ReplyData = Record<string, unknown>;

/** Writes a success reply whose data is given as JSON text: the members after `result` and `msg`. */
export type SendJson = (members: string, closeConnection: boolean) => void;

/**
 * A success reply written when its data is ready: GET /events answers a
 * waiting long-poll when an event arrives, with JSON put together from
 * events serialized once for every queue they reach. `start` is called with
 * the function that writes the reply — straight to Node's response (the
 * reply is hijacked from Fastify: no serializer, no onSend hooks, so
 * `closeConnection` stands in for app.ts's shutdown header; the onResponse
 * hooks, the access log, still run).
 */
export class DeferredJson {
  constructor(readonly start: (send: SendJson) => void) {}
}

/**
 * A success reply whose data is JSON already (the members after `result` and
 * `msg`, in pieces to concatenate): an organization's presence, serialized
 * once per change rather than once per request. Sent through Fastify like
 * any reply (its onSend hooks run), without a serializer pass.
 */
export class JsonMembers {
  constructor(readonly parts: readonly (string | Buffer)[]) {}
}

const SUCCESS_HEAD = Buffer.from('{"result":"success","msg":"",');

/** successJson's envelope around JSON members given in pieces. */
function successBytes(parts: readonly (string | Buffer)[], ignored: string[]): Buffer {
  const extra = ignored.length > 0 ? `,"ignored_parameters_unsupported":${JSON.stringify(ignored.sort())}` : "";
  return Buffer.concat([SUCCESS_HEAD, ...parts.map((part) => (typeof part === "string" ? Buffer.from(part) : part)), Buffer.from(`${extra}}`)]);
}

export interface PublicRequest {
  services: Services;
  http: FastifyRequest;
  /** For the headers a handler must set itself (the session cookie). */
  reply: FastifyReply;
}

export interface ApiRequest extends PublicRequest, Authenticated {
  /** The browser session that signed the request in: set on /json, undefined on /api/v1. */
  session: BrowserSession | undefined;
}

/**
 * Where an endpoint is served: "both" (the default) at /api/v1/<path> and
 * /json/<path>; "api" only at /api/v1 (the endpoints that hand out API keys,
 * which never reach a page); "json" only at /json (browser sign-in).
 */
export type Surface = "both" | "api" | "json";

interface RouteSpecBase<S extends ParamShape> {
  method: HttpMethod;
  /** Path under /api/v1 and /json, with :name for path parameters. */
  path: string;
  params: S;
  surface?: Surface;
}

export interface AuthedRouteSpec<S extends ParamShape> extends RouteSpecBase<S> {
  auth: "api";
  /**
   * Counts the user's calls apart from the rest of the API: Zulip's event
   * queue server (Tornado) keeps its own api_by_user buckets, so polling for
   * events never eats into a client's budget for other calls.
   */
  rateLimitBucket?: "events";
  /** Zulip's @require_realm_admin: checked before any parameter is parsed. */
  adminOnly?: boolean;
  /**
   * Zulip's allow_incoming_webhooks view flag: an incoming-webhook bot's API
   * key (which third-party services hold, in webhook URLs) may call this
   * endpoint. Only sending a message says so; every other endpoint answers
   * such a key with a 401 (actions/auth.ts's checkApiKeyScope).
   */
  allowIncomingWebhookBots?: boolean;
  handler(request: ApiRequest, params: ParamsOf<S>): Promise<ReplyData | DeferredJson | JsonMembers | void>;
}

export interface PublicRouteSpec<S extends ParamShape> extends RouteSpecBase<S> {
  auth: "none";
  handler(request: PublicRequest, params: ParamsOf<S>): Promise<ReplyData | void>;
}

export type Route = AuthedRouteSpec<ParamShape> | PublicRouteSpec<ParamShape>;

/** Declares an endpoint; the generic keeps the handler's parameter types exact. */
export function defineRoute<S extends ParamShape>(spec: AuthedRouteSpec<S> | PublicRouteSpec<S>): Route {
  return spec as unknown as Route;
}

/** Reads HTTP Basic credentials, or throws the 401 Zulip gives. */
export function basicCredentials(header: string | undefined): { email: string; apiKey: string } {
  if (header === undefined || header === "") throw unauthorized();
  const [scheme, encoded, ...rest] = header.trim().split(/\s+/);
  if (scheme?.toLowerCase() !== "basic") throw unauthorized("This endpoint requires HTTP basic authentication.");
  if (encoded === undefined || rest.length > 0) throw unauthorized("Invalid authorization header for basic auth");
  const decoded = Buffer.from(encoded, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw unauthorized("Invalid authorization header for basic auth");
  return { email: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

function pathParamNames(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
}

function pathPattern(path: string): RegExp {
  // `:name` is one segment; a trailing `*` (Fastify's wildcard) is the rest of the path.
  const escaped = path
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_]+/g, "[^/]+"))
    .join(".+");
  return new RegExp(`^${escaped}/?$`);
}

/** Which methods each registered path accepts, for 405 replies. */
export class MethodTable {
  readonly #entries: { pattern: RegExp; methods: Set<string> }[] = [];

  add(fullPath: string, method: string): void {
    const source = pathPattern(fullPath).source;
    let entry = this.#entries.find((e) => e.pattern.source === source);
    if (!entry) {
      entry = { pattern: pathPattern(fullPath), methods: new Set() };
      this.#entries.push(entry);
    }
    entry.methods.add(method);
    if (method === "GET") entry.methods.add("HEAD");
  }

  /** The methods a URL path accepts; empty when no route has that path. */
  allowedMethods(urlPath: string): string[] {
    const methods = new Set<string>();
    for (const entry of this.#entries) {
      if (entry.pattern.test(urlPath)) for (const m of entry.methods) methods.add(m);
    }
    return [...methods];
  }
}

/** The same envelope as successBody, as text around JSON members. */
function successJson(members: string, ignored: string[]): string {
  const extra = ignored.length > 0 ? `,"ignored_parameters_unsupported":${JSON.stringify(ignored.sort())}` : "";
  return `{"result":"success","msg":"",${members}${extra}}`;
}

/** Writes a 200 JSON reply to a hijacked Fastify reply; never throws (a failure is logged and the connection dropped). */
function writeJson(reply: FastifyReply, body: string, closeConnection: boolean): void {
  try {
    // Headers set before the reply was hijacked (the rate-limit ones) go out with it.
    const headers: OutgoingHttpHeaders = { ...(reply.getHeaders() as OutgoingHttpHeaders), "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(body) };
    if (closeConnection) headers.connection = "close";
    reply.raw.writeHead(200, headers);
    reply.raw.end(body);
  } catch (error) {
    reply.log.error({ err: error }, "writing a reply failed");
    reply.raw.destroy();
  }
}

function successBody(data: ReplyData | void, ignored: string[]): ReplyData {
  const body: ReplyData = { result: "success", msg: "", ...(data ?? {}) };
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored.sort();
  return body;
}

/** The prefixes a route is served under. */
export function routePrefixes(route: Route): string[] {
  const surface = route.surface ?? "both";
  return surface === "both" ? [API_PREFIX, JSON_PREFIX] : surface === "api" ? [API_PREFIX] : [JSON_PREFIX];
}

/** A registered API route's path without its prefix (/api/v1 or /json); undefined for other routes. */
export function routePathOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  for (const prefix of [API_PREFIX, JSON_PREFIX]) if (url.startsWith(`${prefix}/`)) return url.slice(prefix.length);
  return undefined;
}

/** Methods that change state: on /json they need the session's CSRF token (Django's rule: all but GET, HEAD, OPTIONS, TRACE). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS", "TRACE"]);

export function registerRoutes(app: FastifyInstance, services: Services, methods: MethodTable, routes: readonly Route[]): void {
  for (const route of routes) {
    for (const prefix of routePrefixes(route)) registerRoute(app, services, methods, route, prefix);
  }
}

function registerRoute(app: FastifyInstance, services: Services, methods: MethodTable, route: Route, prefix: string): void {
  const url = prefix + route.path;
  const browser = prefix === JSON_PREFIX;
  const pathNames = pathParamNames(route.path);
  methods.add(url, route.method);
  app.route({
    method: route.method,
    url,
    // Credentials are checked before the body is read, so strangers cannot make the server buffer uploads.
    onRequest:
      route.auth === "api"
        ? async (request: FastifyRequest, reply: FastifyReply) => {
            let authed: AuthenticatedRequest;
            try {
              authed = browser ? await authenticateBrowser(services, request, reply) : await authenticate(services, request);
              if (browser) checkSessionScope(authed.user);
              else checkApiKeyScope(authed.user, route.allowIncomingWebhookBots ?? false);
            } catch (error) {
              // Bad credentials count against the address, like unauthenticated calls.
              await limitByIp(services, request, reply);
              throw error;
            }
            // Django's CsrfViewMiddleware runs before the view (and its rate limits).
            if (authed.session && !SAFE_METHODS.has(request.method)) checkCsrf(request, authed.session);
            const bucket = route.rateLimitBucket === undefined ? "" : `:${route.rateLimitBucket}`;
            const limiting = applyRateLimit(services, reply, `user:${authed.user.id}${bucket}`, apiByUserRule(services.config.apiRateLimitPerMinute));
            if (limiting) await limiting;
            authenticated.set(request, authed);
          }
        : async (request: FastifyRequest, reply: FastifyReply) => limitByIp(services, request, reply),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const authed = authenticated.get(request);
      // Not kept for the life of the request: a waiting long-poll would hold its own copy of the user and organization rows.
      authenticated.delete(request);
      if (route.auth === "api" && route.adminOnly && !isAdmin(authed!.user.role)) throw mustBeAdmin();
      const raw = collectRawParams(request.query, request.body, request.headers["content-type"]?.startsWith("application/json") ?? false);
      Object.assign(raw, request.params as Record<string, string>);
      const { values, ignored } = parseParams(route.params, raw, pathNames);
      const data =
        route.auth === "api"
          ? await route.handler({ services, http: request, reply, user: authed!.user, realm: authed!.realm, session: authed!.session }, values)
          : await route.handler({ services, http: request, reply }, values);
      if (data instanceof DeferredJson) {
        reply.hijack();
        data.start((members, closeConnection) => writeJson(reply, successJson(members, ignored), closeConnection));
        return;
      }
      if (data instanceof JsonMembers) return reply.type("application/json; charset=utf-8").send(successBytes(data.parts, ignored));
      return reply.send(successBody(data, ignored));
    },
  });
}

/**
 * Counts a call against Zulip's rate limits; sets X-RateLimit-Limit,
 * -Remaining and -Reset on the reply (errors included) and throws the 429
 * when the key is over its limit. Counted in memory it is done on return;
 * counted in Redis it returns a Promise, which rejects with the 429.
 */
function applyRateLimit(services: Services, reply: FastifyReply, key: string, rule: RateLimitRule): Promise<void> | undefined {
  if (!services.config.rateLimiting) return undefined;
  const counted = services.apiLimiter.hit(key, rule);
  if (counted instanceof Promise) return counted.then((result) => answerRateLimit(reply, result));
  answerRateLimit(reply, counted);
  return undefined;
}

function answerRateLimit(reply: FastifyReply, result: RateLimitResult | null): void {
  // Not counted (Redis unreachable; the limiter logs it): the call goes through, with no numbers to show.
  if (result === null) return;
  reply.header("X-RateLimit-Limit", String(result.limit));
  reply.header("X-RateLimit-Remaining", String(result.remaining));
  reply.header("X-RateLimit-Reset", String(result.resetAt));
  if (result.limited) throw rateLimited(result.secondsToFreedom);
}

/** Zulip's api_by_user: an authenticated caller's calls (routes outside registerRoutes, such as incoming webhooks). Await the result. */
export function limitByUser(services: Services, reply: FastifyReply, userId: number): Promise<void> | undefined {
  return applyRateLimit(services, reply, `user:${userId}`, apiByUserRule(services.config.apiRateLimitPerMinute));
}

/** Zulip's api_by_ip: unauthenticated calls (logins, invitation keys, server settings) per client address. Await the result. */
export function limitByIp(services: Services, request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
  return applyRateLimit(services, reply, `ip:${request.ip}`, API_BY_IP_RULE);
}

/** Who sent a request, and through which browser session if it came to /json. */
interface AuthenticatedRequest extends Authenticated {
  session?: BrowserSession;
}

const authenticated = new WeakMap<FastifyRequest, AuthenticatedRequest>();

async function authenticate(services: Services, request: FastifyRequest): Promise<Authenticated> {
  const { email, apiKey } = basicCredentials(request.headers.authorization);
  return authenticateApiKey(services, email, apiKey);
}

/**
 * /json: the session cookie, and nothing else (an Authorization header is
 * ignored there, as Zulip's /json views ignore it). A cookie that names no
 * live session is taken back from the browser with the 401.
 */
async function authenticateBrowser(services: Services, request: FastifyRequest, reply: FastifyReply): Promise<AuthenticatedRequest> {
  const token = sessionToken(request);
  try {
    return await authenticateSession(services, token);
  } catch (error) {
    if (token !== undefined) clearSessionCookie(services.config, request, reply);
    throw error;
  }
}

/** Django's CSRF check of an unsafe /json request: X-CSRFToken must be the session's token. */
function checkCsrf(request: FastifyRequest, session: BrowserSession): void {
  const sent = request.headers["x-csrftoken"];
  if (sent === undefined || sent === "") throw csrfFailed("CSRF token missing.");
  if (typeof sent !== "string" || !csrfTokenMatches(session, sent)) throw csrfFailed("CSRF token incorrect.");
}

/**
 * The file routes outside /api/v1 and /json (uploads, the avatar redirect):
 * HTTP Basic when the request has an Authorization header, else the browser's
 * session cookie, as Zulip serves uploads to the web app's session.
 */
export async function authenticateFileRequest(services: Services, request: FastifyRequest): Promise<Authenticated> {
  if (request.headers.authorization !== undefined || sessionToken(request) === undefined) {
    const authed = await authenticate(services, request);
    // Files are not among what an incoming-webhook bot's key is for (Zulip's file views carry no allow_incoming_webhooks).
    checkApiKeyScope(authed.user, false);
    return authed;
  }
  const { user, realm } = await authenticateSession(services, sessionToken(request));
  checkSessionScope(user);
  return { user, realm };
}
