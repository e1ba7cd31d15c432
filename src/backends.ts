// Which backends a configuration uses, in words for the log `parley serve`
// writes at start: an operator checking a deployment sees where the data
// goes without reading the environment. Never a password.
import path from "node:path";
import type { Config } from "./config.ts";

export interface Backends {
  database: string;
  events: string;
  rateLimits: string;
  uploads: string;
}

/** Where the embedded SQLite database lives when no DATABASE_URL is set. */
export function sqliteFile(config: Config): string {
  return path.join(config.dataDir, "parley.sqlite3");
}

/** postgres://user@host:port/database, schema: no password, no other parameters. */
function describePostgres(url: string, schema: string | undefined): string {
  const parsed = new URL(url);
  // A Unix socket is given as ?host=/path.
  const host = parsed.hostname === "" ? (parsed.searchParams.get("host") ?? "localhost") : parsed.hostname;
  const port = parsed.port === "" ? "5432" : parsed.port;
  const user = parsed.username === "" ? "" : `${decodeURIComponent(parsed.username)}@`;
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "(the user's database)";
  return `postgres ${user}${host}:${port}/${database}, schema ${schema ?? "(the search_path's)"}`;
}

/** redis://host:port/db, key prefix: no user name or password. */
function describeRedis(url: string, keyPrefix: string): string {
  const parsed = new URL(url);
  const port = parsed.port === "" ? "6379" : parsed.port;
  const db = parsed.pathname.replace(/^\//, "") || "0";
  return `${parsed.protocol.replace(/:$/, "")} ${parsed.hostname}:${port}/${db}, key prefix ${keyPrefix}`;
}

export function describeBackends(config: Config): Backends {
  const redis = config.redisUrl === undefined ? undefined : describeRedis(config.redisUrl, config.redisKeyPrefix);
  return {
    database: config.databaseUrl === undefined ? `sqlite ${sqliteFile(config)}` : describePostgres(config.databaseUrl, config.pgSchema),
    events: redis ?? "in-process",
    rateLimits: !config.rateLimiting ? "off (RATE_LIMITING=false)" : (redis ?? "in-process"),
    uploads: config.uploadStorage === "database" ? "database (the stored_files tables)" : `local directory ${config.uploadsDir}`,
  };
}
