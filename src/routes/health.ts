// GET /health, for load balancers and monitoring: Zulip's /health endpoint
// (zerver/views/health.py), with which check failed named in the reply.
// Outside /api/v1: no authentication and no rate limit, so a load balancer
// can call it every second or two.
import type { FastifyInstance } from "fastify";
import pino, { type LevelWithSilent } from "pino";
import type { MethodTable } from "../http/route.ts";
import { errorBody } from "../http/transport.ts";
import { serverHealth, unhealthyReason } from "../queries/health.ts";
import type { Services } from "../services.ts";

/** LOG_LEVEL, but at least warn: a load balancer's checks would fill the access log; failed checks still say why. */
function healthLogLevel(level: string): LevelWithSilent {
  const value = level === "silent" ? Infinity : (pino.levels.values[level] ?? 0);
  return value >= pino.levels.values.warn! ? (level as LevelWithSilent) : "warn";
}

export function healthRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  methods.add("/health", "GET");
  app.get("/health", { logLevel: healthLogLevel(services.config.logLevel) }, async (request, reply) => {
    reply.header("cache-control", "no-store");
    // Draining (SIGTERM): the load balancer is to take this process out now, whatever the checks would say.
    if (services.queues.closed) return reply.status(503).send(errorBody("The server is shutting down", "SERVER_NOT_READY", { shutting_down: true }));
    const health = await serverHealth(services, (what, error) => request.log.warn({ err: error }, `health check: ${what}`));
    const reason = unhealthyReason(health);
    // 503, not Zulip's 500: the server is up but cannot serve; load balancers and monitors read it so.
    if (reason !== undefined) return reply.status(503).send(errorBody(reason, "SERVER_NOT_READY", { ...health }));
    return reply.send({ result: "success", msg: "", ...health });
  });
}
