// Zulip's rate limits (zerver/lib/rate_limiter.py, RATE_LIMITING_RULES):
// API calls per user, unauthenticated calls per IP address, and failed
// password logins per username.
//
// API calls are counted by the algorithm of Zulip's in-memory backend (a
// generic cell rate algorithm): one number per key, the time at which its
// bucket is empty again, so a key costs one entry and each call O(1). With one
// process the numbers live in its memory (MemoryRateLimiter); with REDIS_URL
// set they live in Redis (RedisRateLimiter), counted by one Lua script per
// call, so every process draws on the same budget. Both compute with the same
// doubles in the same order, so they give the same answers. Login failures
// are counted in the database (actions/auth.ts), so a restart or a second
// process cannot reset them.
import type { Redis } from "./redis.ts";

export interface RateLimitRule {
  windowSeconds: number;
  maxRequests: number;
}

/** What one counted request learned: whether it is over the limit, and the X-RateLimit-* values. */
export interface RateLimitResult {
  limited: boolean;
  /** The rule's maximum: what a key with no recent calls could send in one burst. */
  limit: number;
  /** Calls left before the limit (0 when limited). */
  remaining: number;
  /** Seconds until the key may call again (when limited), or until its bucket is empty. */
  secondsToFreedom: number;
  /** UNIX time (seconds) at which the key has no limit applied to it any more: X-RateLimit-Reset. */
  resetAt: number;
}

/** Zulip's defaults: api_by_user 200 a minute (configurable), api_by_ip 100 a minute. */
export function apiByUserRule(perMinute: number): RateLimitRule {
  return { windowSeconds: 60, maxRequests: perMinute };
}
export const API_BY_IP_RULE: RateLimitRule = { windowSeconds: 60, maxRequests: 100 };
/** authenticate_by_username: 5 failed logins per username in 30 minutes. */
export const LOGIN_FAILURES_RULE: RateLimitRule = { windowSeconds: 30 * 60, maxRequests: 5 };

/**
 * Counts API calls. The memory limiter answers at once (no Promise: the
 * per-request path stays synchronous); the Redis one answers with a Promise.
 * `null`: the call was not counted because the shared counters cannot be
 * reached (the call goes through: rate limits fail open).
 */
export interface RateLimiter {
  /** Counts one call for `key` under `rule`, unless it is over the limit (refused calls are not counted). */
  hit(key: string, rule: RateLimitRule): RateLimitResult | Promise<RateLimitResult | null>;
  /** Current time in seconds, with a fraction; tests may replace it. */
  clock: () => number;
  /** Told when calls go uncounted because the counters cannot be reached: the first time, then at most once a minute. */
  onUnavailable: (error: Error, uncountedCalls: number) => void;
}

/**
 * One step of the generic cell rate algorithm: the time at which the key's
 * bucket would be empty with this call counted. The Redis script does the
 * same arithmetic (see RATE_LIMIT_SCRIPT).
 */
function emptyAtWithCall(now: number, emptyAt: number | undefined, rule: RateLimitRule): number {
  return Math.max(emptyAt ?? now, now) + rule.windowSeconds / rule.maxRequests;
}

function isOverLimit(now: number, emptyAt: number, rule: RateLimitRule): boolean {
  return emptyAt > now + rule.windowSeconds;
}

/** What a call learns, from the time its bucket would be empty (`emptyAt`, this call counted) and whether that is over the limit. */
function resultOf(now: number, emptyAt: number, rule: RateLimitRule, limited: boolean): RateLimitResult {
  if (limited) {
    const wait = emptyAt - rule.windowSeconds - now;
    return { limited: true, limit: rule.maxRequests, remaining: 0, secondsToFreedom: wait, resetAt: Math.floor(now + wait) };
  }
  const remaining = Math.floor(((now + rule.windowSeconds - emptyAt) * rule.maxRequests) / rule.windowSeconds);
  return { limited: false, limit: rule.maxRequests, remaining, secondsToFreedom: emptyAt - now, resetAt: Math.floor(emptyAt) };
}

export class MemoryRateLimiter implements RateLimiter {
  /** Per key, the time (seconds) at which its bucket is empty. */
  readonly #emptyAt = new Map<string, number>();
  #lastSweep = 0;

  /** Current time in seconds, with a fraction; tests may replace it. */
  clock: () => number = () => Date.now() / 1000;

  /** Never called: this process's memory is always there. */
  onUnavailable: (error: Error, uncountedCalls: number) => void = () => {};

  hit(key: string, rule: RateLimitRule): RateLimitResult {
    const now = this.clock();
    this.#sweep(now, rule.windowSeconds);
    const emptyAt = emptyAtWithCall(now, this.#emptyAt.get(key), rule);
    const limited = isOverLimit(now, emptyAt, rule);
    if (!limited) this.#emptyAt.set(key, emptyAt);
    return resultOf(now, emptyAt, rule, limited);
  }

  /** Drops keys whose buckets are empty, at most once a window, so memory follows the active keys. */
  #sweep(now: number, windowSeconds: number): void {
    if (now - this.#lastSweep < windowSeconds) return;
    this.#lastSweep = now;
    for (const [key, emptyAt] of this.#emptyAt) if (emptyAt <= now) this.#emptyAt.delete(key);
  }
}

/**
 * The same step in Redis, atomically: KEYS[1] holds the time (seconds) at
 * which the key's bucket is empty; ARGV are now, the window and the maximum.
 * Returns {1 if over the limit, the new empty time}; stores it (expiring when
 * the bucket is empty, so idle keys cost nothing) only when the call counts.
 * Times go in and out as decimal text that round-trips a double exactly
 * (%.17g here, JavaScript's shortest form going in), so Lua's arithmetic is
 * JavaScript's to the last bit.
 */
const RATE_LIMIT_SCRIPT = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local stored = redis.call("GET", KEYS[1])
local emptyAt = now
if stored then emptyAt = math.max(tonumber(stored), now) end
emptyAt = emptyAt + window / tonumber(ARGV[3])
local text = string.format("%.17g", emptyAt)
if emptyAt > now + window then return {1, text} end
redis.call("SET", KEYS[1], text, "PX", math.ceil((emptyAt - now) * 1000))
return {0, text}
`;

type RedisWithRateLimit = Redis & {
  parleyRateLimitHit(key: string, now: string, windowSeconds: string, maxRequests: string): Promise<[number, string]>;
};

/** ioredis states in which it is between connections after having had one: a command would wait for a reconnection. */
const RECONNECTING = new Set(["reconnecting", "close", "end"]);

/** How often an outage is reported while it lasts. */
const UNAVAILABLE_REPORT_INTERVAL_MS = 60_000;

/**
 * API rate limits counted in Redis, shared by every process that uses the
 * same Redis and key prefix. Keys are `<prefix>ratelimit:<key>`.
 *
 * When Redis cannot be reached, calls are let through uncounted (fail open:
 * an outage of the counters must not become an outage of the chat) and
 * onUnavailable is told. While ioredis is reconnecting, calls do not wait
 * for it; a Redis that accepts commands but does not answer is bounded by the
 * connection's command timeout.
 */
export class RedisRateLimiter implements RateLimiter {
  readonly #redis: RedisWithRateLimit;
  readonly #keyPrefix: string;
  #lastReportAt = -Infinity;
  #uncounted = 0;

  clock: () => number = () => Date.now() / 1000;
  onUnavailable: (error: Error, uncountedCalls: number) => void = () => {};

  constructor(redis: Redis, keyPrefix: string) {
    redis.defineCommand("parleyRateLimitHit", { numberOfKeys: 1, lua: RATE_LIMIT_SCRIPT });
    this.#redis = redis as RedisWithRateLimit;
    this.#keyPrefix = `${keyPrefix}ratelimit:`;
  }

  async hit(key: string, rule: RateLimitRule): Promise<RateLimitResult | null> {
    const now = this.clock();
    try {
      if (RECONNECTING.has(this.#redis.status)) throw new Error(`Redis connection is ${this.#redis.status}`);
      const [limited, emptyAt] = await this.#redis.parleyRateLimitHit(this.#keyPrefix + key, String(now), String(rule.windowSeconds), String(rule.maxRequests));
      this.#lastReportAt = -Infinity;
      return resultOf(now, Number(emptyAt), rule, limited === 1);
    } catch (error) {
      this.#uncounted += 1;
      const at = Date.now();
      if (at - this.#lastReportAt >= UNAVAILABLE_REPORT_INTERVAL_MS) {
        this.#lastReportAt = at;
        const uncounted = this.#uncounted;
        this.#uncounted = 0;
        this.onUnavailable(error instanceof Error ? error : new Error(String(error)), uncounted);
      }
      return null;
    }
  }
}
