// Builds the Fastify application from its services. No globals: tests build
// as many apps as they like, each on its own database.
import { createRequire } from "node:module";
import formbody from "@fastify/formbody";
import multipart from "@fastify/multipart";
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest, type FastifyServerOptions } from "fastify";
import pino from "pino";
import { maxUploadBytes } from "./domain/uploads.ts";
import { ApiError } from "./errors.ts";
import { MethodTable, registerRoutes, type Route } from "./http/route.ts";
import { addSecurityHeaders } from "./http/security-headers.ts";
import { clientErrorHandler, errorBody, frameworkErrorHandler, isMalformedMultipart } from "./http/transport.ts";
import { avatarFileRoutes, avatarRoutes } from "./routes/avatars.ts";
import { authRoutes } from "./routes/auth.ts";
import { channelFoldersRoutes } from "./routes/channel-folders.ts";
import { channelsRoutes } from "./routes/channels.ts";
import { eventsRoutes } from "./routes/events.ts";
import { messageFlagsRoutes } from "./routes/message-flags.ts";
import { messageDeleteRoutes } from "./routes/message-delete.ts";
import { messageEditRoutes } from "./routes/message-edit.ts";
import { messageRoutes } from "./routes/messages.ts";
import { typingRoutes } from "./routes/typing.ts";
import { presenceRoutes } from "./routes/presence.ts";
import { fileLimitFor, multipartBodyLimit, multipartFileReceiver, uploadFileRoutes, uploadRoutes } from "./routes/uploads.ts";
import { reactionRoutes } from "./routes/reactions.ts";
import { messageReportRoutes } from "./routes/message-reports.ts";
import { submessageRoutes } from "./routes/submessages.ts";
import { realmEmojiFileRoutes, realmEmojiRoutes } from "./routes/realm-emoji.ts";
import { realmExportFileRoutes, realmExportRoutes } from "./routes/realm-export.ts";
import { scheduledMessageRoutes } from "./routes/scheduled-messages.ts";
import { savedSnippetsRoutes } from "./routes/saved-snippets.ts";
import { navigationViewsRoutes } from "./routes/navigation-views.ts";
import { pushRoutes } from "./routes/push.ts";
import { realmRoutes } from "./routes/realm.ts";
import { subscriptionsRoutes } from "./routes/subscriptions.ts";
import { userGroupsRoutes } from "./routes/user-groups.ts";
import { serverSettingsRoutes } from "./routes/server-settings.ts";
import { settingsRoutes } from "./routes/settings.ts";
import { userRoutes } from "./routes/users.ts";
import { botRoutes } from "./routes/bots.ts";
import { customProfileFieldRoutes } from "./routes/custom-profile-fields.ts";
import { invitationRoutes, joinPageRoutes } from "./routes/invitations.ts";
import { userStatusRoutes } from "./routes/user-status.ts";
import { mutedUsersRoutes } from "./routes/muted-users.ts";
import { draftsRoutes } from "./routes/drafts.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { passwordResetPageRoutes } from "./routes/password-reset.ts";
import { emailUnsubscribeRoutes } from "./routes/email-unsubscribe.ts";
import { webClientRoutes } from "./routes/web-client.ts";
import { externalContentRoutes } from "./routes/external-content.ts";
import { healthRoutes } from "./routes/health.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import type { Services } from "./services.ts";

export const API_ROUTES: readonly Route[] = [
  ...serverSettingsRoutes,
  ...authRoutes,
  ...sessionRoutes,
  ...userRoutes,
  ...botRoutes,
  ...settingsRoutes,
  ...userGroupsRoutes,
  ...channelFoldersRoutes,
  ...channelsRoutes,
  ...subscriptionsRoutes,
  ...eventsRoutes,
  ...typingRoutes,
  ...presenceRoutes,
  ...realmRoutes,
  ...customProfileFieldRoutes,
  ...messageRoutes,
  ...messageFlagsRoutes,
  ...messageDeleteRoutes,
  ...messageEditRoutes,
  ...uploadRoutes,
  ...reactionRoutes,
  ...submessageRoutes,
  ...messageReportRoutes,
  ...realmEmojiRoutes,
  ...realmExportRoutes,
  ...avatarRoutes,
  ...scheduledMessageRoutes,
  ...savedSnippetsRoutes,
  ...navigationViewsRoutes,
  ...invitationRoutes,
  ...pushRoutes,
  ...userStatusRoutes,
  ...mutedUsersRoutes,
  ...draftsRoutes,
];

function bodyTooLarge(): Error {
  return Object.assign(new Error("Request body is too large"), { statusCode: 413 });
}

export interface BuildOptions {
  /**
   * Told of every route as it is registered (method, URL pattern), API and
   * others alike: how tests enumerate everything the server answers.
   */
  onRoute?: (method: string, url: string) => void;
}

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]>;
/** Fastify's compiler factories as called: (external schemas, server options) → a compiler. */
type Factory = (externalSchemas: unknown, options: unknown) => unknown;
/** require() as Fastify itself resolves: the compilers are its dependencies. */
const fastifyRequire = createRequire(createRequire(import.meta.url).resolve("fastify"));

/** A factory that requires `module` and makes its compiler selector on first call, as Fastify would have at once. */
function lazyFactory(module: string): Factory {
  let factory: Factory | undefined;
  return (externalSchemas, options) => {
    factory ??= (fastifyRequire(module) as () => Factory)();
    return factory(externalSchemas, options);
  };
}

/**
 * Fastify's own JSON-schema compilers (Ajv, fast-json-stringify), loaded when
 * a route declares a schema. Parley's routes declare none (their parameters
 * go through http/params.ts), so a running server never loads them; left to
 * itself, Fastify requires them, Ajv's hundred files and all, when the app is
 * made. One pair per app, as Fastify makes them.
 */
function lazySchemaCompilers(): CompilersFactory {
  return { buildValidator: lazyFactory("@fastify/ajv-compiler"), buildSerializer: lazyFactory("@fastify/fast-json-stringify-compiler") } as CompilersFactory;
}

/** Requests whose multipart body is being parsed (from preParsing until the fields are on request.body). */
const parsingMultipart = new WeakSet<FastifyRequest>();

export async function buildApp(services: Services, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { config } = services;
  // Buffered stdout writes: synchronous logging of every request cost more CPU
  // than the request itself. pino flushes the buffer when the process exits.
  const logger = pino({ level: config.logLevel }, pino.destination({ dest: 1, sync: false }));
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // One access-log line per request (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: config.bodyLimitBytes,
    // Zulip clients put JSON in form fields; Fastify must not reject long query strings or odd paths.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // request.ip (per-IP rate limits) is the client's address only behind proxies we were told to believe.
    ...(config.trustedProxies.length > 0 ? { trustProxy: config.trustedProxies } : {}),
    // While draining (SIGTERM), a request that arrives on a connection
    // already open is served, not refused with Fastify's bare 503: the load
    // balancer has sent it here already, and the process can still do it.
    // Its reply closes the connection (below), so the next one goes elsewhere.
    return503OnClosing: false,
    // Requests refused before any route sees them get Zulip's error JSON too.
    clientErrorHandler,
    frameworkErrors: frameworkErrorHandler,
    schemaController: { compilersFactory: lazySchemaCompilers() },
  });

  const { onRoute } = options;
  if (onRoute) {
    app.addHook("onRoute", (route) => {
      for (const method of [route.method].flat()) onRoute(method, route.url);
    });
  }

  await app.register(formbody);
  // Form fields become body values as before; file parts go to onFile, which
  // streams the upload endpoint's file to disk (with its name and content
  // type) and drops those sent to endpoints that take no files.
  await app.register(multipart, {
    attachFieldsToBody: "keyValues",
    onFile: multipartFileReceiver(services),
    limits: { fieldSize: config.bodyLimitBytes, fileSize: Math.max(config.bodyLimitBytes, maxUploadBytes(config.maxFileUploadSizeMib)) + 1, parts: 1000 },
  });
  // The multipart parser runs in @fastify/multipart's preValidation hook;
  // this one, added after it, runs once the fields are on request.body. An
  // error in between may be the parser's verdict on a malformed body.
  app.addHook("preValidation", async (request) => {
    parsingMultipart.delete(request);
  });
  // Fastify's bodyLimit does not cover multipart bodies: count their bytes as they stream in.
  // The upload endpoint may take a file of the upload limit on top of the body limit.
  app.addHook("preParsing", async (request, _reply, payload) => {
    if (!request.headers["content-type"]?.startsWith("multipart/")) return payload;
    parsingMultipart.add(request);
    const limit = multipartBodyLimit(config, request);
    const tooLarge = () => fileLimitFor(config, request)?.tooLarge() ?? bodyTooLarge();
    if (Number(request.headers["content-length"] ?? 0) > limit) throw tooLarge();
    // @fastify/multipart reads request.raw itself, not the stream this hook
    // returns, so the bytes are counted beside it. Paused first: listening
    // must not start the flow before the parser is attached.
    const raw = request.raw;
    raw.pause();
    let seen = 0;
    let failed = false;
    raw.on("data", (chunk: Buffer) => {
      seen += chunk.length;
      if (seen <= limit || failed) return;
      failed = true;
      // The parser listens for this and ends with the error; the rest of the body is read and dropped.
      if (raw.listenerCount("error") > 0) raw.emit("error", tooLarge());
      raw.unpipe();
      raw.resume();
    });
    return payload;
  });
  // Bodies of any other type are read (so the size limit holds) and ignored, as Django does.
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, _body, done) => done(null, undefined));

  // On shutdown Fastify closes the connections idle at that moment; a
  // connection busy with a request would stay open (keep-alive) after its
  // response and hold the process. Responses sent while closing end theirs.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
    // Waiting long-polls answer now with what they have, instead of holding shutdown for a heartbeat.
    services.queues.close();
  });
  app.addHook("onSend", async (_request, reply, payload) => {
    // SQLite commits without an fsync (synchronous=NORMAL): a reply waits
    // until the WAL holding whatever this request (or anyone) wrote is on
    // disk. Undefined when nothing was written since the last fsync, as for
    // reads, PostgreSQL (which syncs at COMMIT) and :memory:.
    const durable = services.storage.durable();
    if (durable) await durable;
    // Queues in Redis: a reply goes out once the events its change caused are
    // written, so a client told "done" finds them on its next poll, whichever
    // process serves it. (Undefined in memory, where delivery is synchronous.)
    const written = services.queues.settled();
    if (written) await written;
    // Asked after the waits above, during which the drain may have begun.
    if (closing) reply.header("connection", "close");
    return payload;
  });
  // X-Frame-Options, nosniff, Referrer-Policy, a CSP and (over HTTPS) HSTS on every reply.
  addSecurityHeaders(app, config);

  app.addHook("onResponse", async (request, reply) => {
    // The path only: query strings may carry passwords or API keys.
    const path = request.url.split("?")[0];
    request.log.info({ method: request.method, path, status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 }, "request");
  });

  const methods = new MethodTable();

  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) {
      return reply.status(error.status).headers(error.headers).send(errorBody(error.message, error.code, error.extra));
    }
    const status = error.statusCode ?? 500;
    if (status === 413 || error.code === "FST_PARTS_LIMIT" || error.code === "FST_REQ_FILE_TOO_LARGE") {
      return reply.status(413).send(errorBody("Request body is too large", "BAD_REQUEST"));
    }
    if (parsingMultipart.has(request) && isMalformedMultipart(error)) {
      return reply.status(400).send(errorBody(`Malformed multipart body: ${error.message}`, "BAD_REQUEST"));
    }
    if (error.code === "FST_INVALID_JSON_FIELD_ERROR") {
      // @fastify/multipart says 406, which is about the Accept header.
      return reply.status(400).send(errorBody(`Malformed multipart body: ${error.message}`, "BAD_REQUEST"));
    }
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody(`Malformed request: ${error.message}`, "BAD_REQUEST"));
    }
    if (error.code === "ECONNRESET" && request.raw.destroyed) {
      // The client broke off its request (or sent a body Node could not parse,
      // which the clientErrorHandler has answered): no one to answer, nothing wrong here.
      request.log.info({ err: error }, "request aborted");
      return reply.status(400).send(errorBody("Request aborted", "BAD_REQUEST"));
    }
    request.log.error({ err: error }, "unhandled error");
    return reply.status(500).send(errorBody("Internal server error", "INTERNAL_SERVER_ERROR"));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    const allowed = methods.allowedMethods(path);
    if (allowed.length > 0 && request.method === "OPTIONS") {
      return reply.status(204).header("Allow", allowed.join(", ")).send();
    }
    if (allowed.length > 0) {
      return reply
        .status(405)
        .header("Allow", allowed.join(", "))
        .send(errorBody("Method Not Allowed", "METHOD_NOT_ALLOWED", { allowed_methods: allowed }));
    }
    return reply.status(404).send(errorBody("Endpoint not found", "BAD_REQUEST"));
  });

  registerRoutes(app, services, methods, API_ROUTES);
  avatarFileRoutes(app, services, methods);
  uploadFileRoutes(app, services, methods);
  externalContentRoutes(app, services, methods);
  realmEmojiFileRoutes(app, services, methods);
  realmExportFileRoutes(app, services, methods);
  joinPageRoutes(app, services, methods);
  passwordResetPageRoutes(app, services, methods);
  emailUnsubscribeRoutes(app, services, methods);
  webClientRoutes(app, services, methods);
  healthRoutes(app, services, methods);
  await webhookRoutes(app, services, methods);
  return app;
}
