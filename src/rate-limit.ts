// Counting attempts per key in a sliding window. In one process this lives in
// memory; several processes will share it through Redis (same interface).

export interface RateLimiter {
  /** Seconds until another attempt is allowed, or 0 if one is allowed now. */
  secondsUntilAllowed(key: string, now: number): number;
  record(key: string, now: number): void;
}

export class MemoryRateLimiter implements RateLimiter {
  readonly #attempts = new Map<string, number[]>();

  constructor(
    private readonly maxAttempts: number,
    private readonly windowSeconds: number,
  ) {}

  #recent(key: string, now: number): number[] {
    const recent = (this.#attempts.get(key) ?? []).filter((t) => t > now - this.windowSeconds);
    if (recent.length === 0) this.#attempts.delete(key);
    else this.#attempts.set(key, recent);
    return recent;
  }

  secondsUntilAllowed(key: string, now: number): number {
    const recent = this.#recent(key, now);
    if (recent.length < this.maxAttempts) return 0;
    return recent[recent.length - this.maxAttempts]! + this.windowSeconds - now;
  }

  record(key: string, now: number): void {
    this.#attempts.set(key, [...this.#recent(key, now), now]);
  }
}

/** Zulip's default for password logins: 5 failures per username per 30 minutes. */
export function loginRateLimiter(): RateLimiter {
  return new MemoryRateLimiter(5, 30 * 60);
}
