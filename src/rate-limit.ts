// Zulip's rate limits (zerver/lib/rate_limiter.py, RATE_LIMITING_RULES):
// API calls per user, unauthenticated calls per IP address, and failed
// password logins per username.
//
// API calls are counted by the algorithm of Zulip's in-memory backend (a
// generic cell rate algorithm): one number per key, the time at which its
// bucket is empty again, so a key costs a map entry and each call O(1). It
// lives in this process, like the event queues; with several processes both
// move to Redis together. Login failures are counted in the database
// (actions/auth.ts), so a restart or a second process cannot reset them.

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

export class MemoryRateLimiter {
  /** Per key, the time (seconds) at which its bucket is empty. */
  readonly #emptyAt = new Map<string, number>();
  #lastSweep = 0;

  /** Current time in seconds, with a fraction; tests may replace it. */
  clock: () => number = () => Date.now() / 1000;

  /** Counts one call for `key` under `rule`, unless it is over the limit (refused calls are not counted). */
  hit(key: string, rule: RateLimitRule): RateLimitResult {
    const now = this.clock();
    this.#sweep(now, rule.windowSeconds);
    const interval = rule.windowSeconds / rule.maxRequests;
    const emptyAt = Math.max(this.#emptyAt.get(key) ?? now, now) + interval;
    if (emptyAt > now + rule.windowSeconds) {
      const wait = emptyAt - rule.windowSeconds - now;
      return { limited: true, limit: rule.maxRequests, remaining: 0, secondsToFreedom: wait, resetAt: Math.floor(now + wait) };
    }
    this.#emptyAt.set(key, emptyAt);
    const remaining = Math.floor(((now + rule.windowSeconds - emptyAt) * rule.maxRequests) / rule.windowSeconds);
    return { limited: false, limit: rule.maxRequests, remaining, secondsToFreedom: emptyAt - now, resetAt: Math.floor(emptyAt) };
  }

  /** Drops keys whose buckets are empty, at most once a window, so memory follows the active keys. */
  #sweep(now: number, windowSeconds: number): void {
    if (now - this.#lastSweep < windowSeconds) return;
    this.#lastSweep = now;
    for (const [key, emptyAt] of this.#emptyAt) if (emptyAt <= now) this.#emptyAt.delete(key);
  }
}
