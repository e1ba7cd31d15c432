// What actions need from the outside world, passed explicitly (no globals).
import type { Config } from "./config.ts";
import type { Notifier } from "./events/notifier.ts";
import type { EventQueueBackend } from "./events/backend.ts";
import type { FileStore } from "./files/store.ts";
import type { RateLimiter } from "./rate-limit.ts";
import type { Redis } from "./redis.ts";
import type { Storage } from "./storage/database.ts";
import type { JobRunner } from "./jobs/runner.ts";

export interface Services {
  config: Config;
  storage: Storage;
  /** Where uploads, avatars, custom emoji and icons are kept (UPLOAD_STORAGE). */
  files: FileStore;
  notifier: Notifier;
  /** The event queues, fed by the notifier: in this process, or in Redis when REDIS_URL is set. */
  queues: EventQueueBackend;
  /** API calls per user and unauthenticated calls per IP address: counted in this process, or in Redis when configured. */
  apiLimiter: RateLimiter;
  /**
   * Ordinary commands to Redis when REDIS_URL is set (rate limits, GET
   * /health), with a short command timeout: a request must not hang on Redis.
   * Blocking reads and pub/sub need connections of their own.
   */
  redis?: Redis | undefined;
  /** Current time in UNIX seconds; tests may replace it. */
  now(): number;
  /** Current time in UNIX milliseconds: the same clock as now(), finer (a replaced now() is followed). */
  nowMs(): number;
  /** This process's job runner (src/jobs/), while the server runs: woken when a transaction commits jobs. */
  jobs?: JobRunner | undefined;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}

/** Milliseconds on the clock of `services.now()`: the real ones while now() tells the real second, else now()'s second. */
export function clockMs(this: Pick<Services, "now">): number {
  const ms = Date.now();
  const seconds = this.now();
  return Math.floor(ms / 1000) === seconds ? ms : seconds * 1000;
}
