// What GET /health reports to a load balancer: whether this process can do
// its work — the database answers, Redis answers (when configured), and the
// database's migrations are the ones this code expects.
import { sql } from "kysely";
import type { Services } from "../services.ts";
import { migrationState, type MigrationState } from "../storage/migrate.ts";

export interface Health {
  database: "ok" | "unreachable";
  redis: "ok" | "unreachable" | "not configured";
  /** "unknown" when the database cannot be read. */
  migrations: MigrationState | "unknown";
}

/** A check that gets no answer in this time has failed: a load balancer's own check times out after a few seconds. */
const CHECK_TIMEOUT_MS = 3000;

/** ioredis states between connections: a PING would only wait for a reconnection. */
const REDIS_RECONNECTING = new Set(["reconnecting", "close", "end"]);

async function answersInTime<T>(check: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function checkDatabase(services: Services, onFailure: (what: string, error: unknown) => void): Promise<Pick<Health, "database" | "migrations">> {
  try {
    await answersInTime(sql`SELECT 1`.execute(services.storage.db), "database");
  } catch (error) {
    onFailure("the database does not answer", error);
    return { database: "unreachable", migrations: "unknown" };
  }
  try {
    return { database: "ok", migrations: await answersInTime(migrationState(services.storage), "migrations") };
  } catch (error) {
    onFailure("the applied migrations cannot be read", error);
    return { database: "ok", migrations: "unknown" };
  }
}

async function checkRedis(services: Services, onFailure: (what: string, error: unknown) => void): Promise<Health["redis"]> {
  const { redis } = services;
  if (redis === undefined) return "not configured";
  try {
    if (REDIS_RECONNECTING.has(redis.status)) throw new Error(`Redis connection is ${redis.status}`);
    // The connection's command timeout bounds the wait for an answer.
    const reply = await redis.ping();
    if (reply !== "PONG") throw new Error(`PING answered ${reply}`);
    return "ok";
  } catch (error) {
    onFailure("Redis does not answer", error);
    return "unreachable";
  }
}

/** Checks the database, Redis and migrations at once; `onFailure` hears why a check failed (for the log, not for the reply). */
export async function serverHealth(services: Services, onFailure: (what: string, error: unknown) => void): Promise<Health> {
  const [database, redis] = await Promise.all([checkDatabase(services, onFailure), checkRedis(services, onFailure)]);
  return { ...database, redis };
}

/**
 * Why a server is not healthy, in Zulip's words where it has them
 * (zerver/views/health.py); undefined when it is. A database newer than the
 * code ("ahead") is healthy: during a rolling deploy the new release migrates
 * first and the old processes keep serving until they are replaced.
 */
export function unhealthyReason(health: Health): string | undefined {
  const reasons: string[] = [];
  if (health.database !== "ok") reasons.push("Cannot query the database");
  if (health.redis === "unreachable") reasons.push("Cannot query redis");
  if (health.migrations === "behind") reasons.push("Database migrations are not current");
  else if (health.migrations === "unknown" && health.database === "ok") reasons.push("Cannot read the database's migrations");
  return reasons.length > 0 ? reasons.join("; ") : undefined;
}
