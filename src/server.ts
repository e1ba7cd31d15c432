// Wiring for a running server: storage, migrations, services and the app.
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "./app.ts";
import type { Config } from "./config.ts";
import { LocalNotifier } from "./events/notifier.ts";
import { EventQueues } from "./events/queues.ts";
import { MemoryRateLimiter } from "./rate-limit.ts";
import { openStorage, type Storage } from "./storage/database.ts";
import { migrateToLatest } from "./storage/migrate.ts";
import { renderDescription } from "./queries/markdown-context.ts";
import { unixNow, type Services } from "./services.ts";
import { startScheduledDelivery } from "./workers/scheduled-delivery.ts";
import { startPushNotifications } from "./workers/push-notifications.ts";
import { startOutgoingWebhooks } from "./workers/outgoing-webhooks.ts";

export async function openConfiguredStorage(config: Config): Promise<Storage> {
  return openStorage({
    databaseUrl: config.databaseUrl,
    sqlitePath: path.join(config.dataDir, "parley.sqlite3"),
    ...(config.pgSchema ? { pgSchema: config.pgSchema } : {}),
  });
}

/** Storage opened and migrated, with the services actions need. */
export async function openServices(config: Config, storage?: Storage): Promise<Services> {
  const opened = storage ?? (await openConfiguredStorage(config));
  await migrateToLatest(opened, { renderDescription: (db, realmId, description) => renderDescription(db, config, realmId, description) });
  const notifier = new LocalNotifier();
  const queues = new EventQueues(notifier, {
    heartbeatMs: config.eventHeartbeatMs,
    idleTimeoutMs: config.eventQueueIdleMs,
    // Zulip's MAX_QUEUE_TIMEOUT_SECS: a week.
    maxLifespanMs: 7 * 24 * 3600 * 1000,
    sweepIntervalMs: Math.min(60_000, config.eventQueueIdleMs / 4),
  });
  return { config, storage: opened, notifier, queues, apiLimiter: new MemoryRateLimiter(), now: unixNow };
}

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  url: string;
  /** Stops accepting requests, lets in-flight ones finish, then closes the database. */
  close(): Promise<void>;
}

export async function startServer(services: Services): Promise<RunningServer> {
  const app = await buildApp(services);
  // Thousands of long-polling clients reconnect at once after a restart or a
  // network blip: a deep accept queue (the kernel caps it at somaxconn).
  const address = await app.listen({ host: services.config.host, port: services.config.port, backlog: 4096 });
  const delivery = startScheduledDelivery(services, (error) => app.log.error({ err: error }, "scheduled delivery failed"));
  services.outgoingWebhooks = startOutgoingWebhooks(services, (error, what) => app.log.warn({ err: error }, what));
  if (services.config.pushServiceUrl !== undefined) services.push = startPushNotifications(services, (error, what) => app.log.warn({ err: error }, what));
  return {
    app,
    services,
    url: address,
    close: async () => {
      await delivery.stop();
      await services.outgoingWebhooks?.stop();
      services.outgoingWebhooks = undefined;
      await services.push?.stop();
      services.push = undefined;
      await app.close();
      await services.storage.close();
    },
  };
}
