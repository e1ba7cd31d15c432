// Connections to Redis, when REDIS_URL is set: what several Parley processes
// share besides the database (event queues, rate-limit counters, cache
// invalidation). ioredis reconnects by itself; commands issued while it is
// reconnecting wait in its offline queue.
import { Redis, type RedisOptions } from "ioredis";
import type { Config } from "./config.ts";

export type { Redis };

/**
 * A new connection to the configured Redis. A connection that subscribes
 * (pub/sub) or blocks (XREAD BLOCK) can do nothing else meanwhile, so those
 * get one of their own; ordinary commands share one. `options` adds to or
 * replaces the defaults below for this connection.
 */
export function connectRedis(config: Config, name: string, options: RedisOptions = {}): Redis {
  if (config.redisUrl === undefined) throw new Error("REDIS_URL is not set");
  return new Redis(config.redisUrl, {
    connectionName: `parley-${name}`,
    // A command waits for a reconnection rather than failing at once, but not for ever.
    maxRetriesPerRequest: 3,
    enableAutoPipelining: true,
    ...options,
  });
}
