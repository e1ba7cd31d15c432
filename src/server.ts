// Wiring for a running server: storage, migrations, services and the app.
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import { sqliteFile } from "./backends.ts";
import type { Config } from "./config.ts";
import { LocalNotifier } from "./events/notifier.ts";
import { EventQueues } from "./events/queues.ts";
import type { EventQueueBackend, QueueTimings } from "./events/backend.ts";
import { openFileStore } from "./files/open.ts";
import { MemoryRateLimiter, RedisRateLimiter } from "./rate-limit.ts";
import type { Redis } from "./redis.ts";
import { openStorage, type Storage } from "./storage/database.ts";
import { migrateToLatest } from "./storage/migrate.ts";
import { renderDescription } from "./queries/markdown-context.ts";
import { clockMs, unixNow, type Services } from "./services.ts";
import { ensureDigestCheck } from "./workers/digest-emails.ts";
import { jobRunnerFor } from "./workers/index.ts";

export async function openConfiguredStorage(config: Config): Promise<Storage> {
  return openStorage({
    databaseUrl: config.databaseUrl,
    sqlitePath: sqliteFile(config),
    ...(config.pgSchema ? { pgSchema: config.pgSchema } : {}),
  });
}

/** Storage opened and migrated, with the services actions need. */
export async function openServices(config: Config, storage?: Storage): Promise<Services> {
  const opened = storage ?? (await openConfiguredStorage(config));
  await migrateToLatest(opened, { renderDescription: (db, realmId, description) => renderDescription(db, config, realmId, description) });
  const notifier = new LocalNotifier();
  const queues = await openEventQueues(config, notifier);
  const files = openFileStore(config, opened);
  const redis = config.redisUrl === undefined ? undefined : await connectRedisCommands(config);
  const apiLimiter = redis ? new RedisRateLimiter(redis, config.redisKeyPrefix) : new MemoryRateLimiter();
  return { config, storage: opened, files, notifier, queues, apiLimiter, redis, now: unixNow, nowMs: clockMs };
}

/** Event queues in this process, or in Redis (shared by every process) when REDIS_URL is set. */
async function openEventQueues(config: Config, notifier: LocalNotifier): Promise<EventQueueBackend> {
  const timings: QueueTimings = {
    heartbeatMs: config.eventHeartbeatMs,
    idleTimeoutMs: config.eventQueueIdleMs,
    // Zulip's MAX_QUEUE_TIMEOUT_SECS: a week.
    maxLifespanMs: 7 * 24 * 3600 * 1000,
    sweepIntervalMs: Math.min(60_000, config.eventQueueIdleMs / 4),
  };
  if (config.redisUrl === undefined) return new EventQueues(notifier, timings);
  // Loaded only when configured: one process on SQLite starts without the Redis client.
  const [{ RedisEventQueues }, { connectRedis }] = await Promise.all([import("./events/redis-queues.ts"), import("./redis.ts")]);
  return new RedisEventQueues(notifier, timings, {
    redis: connectRedis(config, "events"),
    subscriber: connectRedis(config, "events-wake"),
    keyPrefix: config.redisKeyPrefix,
  });
}

/**
 * The shared connection for ordinary Redis commands. It connects on its first
 * command (CLI commands that never use Redis open nothing); a command that
 * gets no answer within a second fails, and its caller decides (rate limits
 * let the call through, /health reports Redis unreachable).
 */
async function connectRedisCommands(config: Config): Promise<Redis> {
  // Loaded only when configured: one process on SQLite starts without the Redis client.
  const { connectRedis } = await import("./redis.ts");
  const redis = connectRedis(config, "commands", { lazyConnect: true, commandTimeout: 1000 });
  // Connection errors reach the callers through their commands (rate limits
  // report an outage once a minute, /health shows it); without a listener
  // ioredis would print every failed reconnection attempt.
  redis.on("error", () => {});
  return redis;
}

/** Closes what openServices opened: the event queues (events notified by the last requests reach Redis first), Redis, then the database. */
export async function closeServices(services: Services): Promise<void> {
  await services.queues.shutdown();
  services.redis?.disconnect();
  await services.storage.close();
}

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  url: string;
  /**
   * The drain: stops accepting connections, answers waiting polls at once
   * (GET /health says 503 from then on), lets requests in progress finish
   * while the job workers finish the jobs they hold, then closes the event
   * queues, Redis and the database.
   */
  close(): Promise<void>;
}

export async function startServer(services: Services): Promise<RunningServer> {
  const app = await buildApp(services);
  // Thousands of long-polling clients reconnect at once after a restart or a
  // network blip: a deep accept queue (the kernel caps it at somaxconn).
  const address = await app.listen({ host: services.config.host, port: services.config.port, backlog: 4096 });
  services.jobs = jobRunnerFor(services, (error, what) => app.log.warn({ err: error }, what));
  // The daily digest check is a chain of jobs: the first process to start with none queued begins it.
  await ensureDigestCheck(services);
  services.jobs.start();
  services.apiLimiter.onUnavailable = (error, uncounted) =>
    app.log.warn({ err: error, uncountedCalls: uncounted }, "rate limits not counted (Redis unreachable): calls are let through");
  return {
    app,
    services,
    url: address,
    close: async () => {
      // The job runner stops claiming and finishes its jobs while the HTTP
      // server drains, not before it: a job that takes a while must not keep
      // waiting long-polls (and the load balancer) on this process meanwhile.
      // Jobs queued by the last requests are claimed by the other processes.
      const stopJobs = async () => {
        await services.jobs?.stop();
        services.jobs = undefined;
      };
      // Node's server.close() drops the connections idle at that moment, once.
      // A response already under way then (its headers out, without
      // "Connection: close") leaves its keep-alive connection idle later, which
      // would hold the drain until the keep-alive timeout: sweep until closed.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      try {
        await Promise.all([app.close(), stopJobs()]);
      } finally {
        clearInterval(sweep);
      }
      await closeServices(services);
    },
  };
}
