// Rate limits as Zulip has them: failed password logins per username (in the
// database, counted before the password is checked), API calls per user, and
// unauthenticated calls per IP address, with Zulip's 429 and X-RateLimit-*
// headers. Every other test file runs with RATE_LIMITING=false. API calls are
// counted in memory, or in Redis when REDIS_URL is set (with DATABASE_URL):
// every case here runs on whichever the environment picks.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { openServices, startServer } from "../src/server.ts";
import type { Services } from "../src/services.ts";
import { RedisRateLimiter } from "../src/rate-limit.ts";
import { connectRedis, type Redis } from "../src/redis.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

const AUTH_FAILED = "Your username or password is incorrect";
const LIMITED = "API usage exceeded rate limit";

function rateLimitHeaders(response: ApiResponse): { limit: number; remaining: number; reset: number } {
  const header = (name: string) => {
    const value = response.headers.get(name);
    assert.ok(value !== null && /^\d+$/.test(value), `${name}: ${value}`);
    return Number(value);
  };
  return { limit: header("x-ratelimit-limit"), remaining: header("x-ratelimit-remaining"), reset: header("x-ratelimit-reset") };
}

describe("failed password logins per username", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true });
  });
  after(() => t.close());

  test("five failed guesses lock the username for 30 minutes: 429 RATE_LIMIT_HIT, the wait in body and header", async () => {
    const victim = await t.createUser("Rate Limited");
    for (let i = 0; i < 5; i++) {
      assertError(await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: `guess-${i}` }), 401, "AUTHENTICATION_FAILED", AUTH_FAILED);
    }
    // Even the right password is refused now (any case of the address).
    const limited = await t.api(null, "POST", "/fetch_api_key", { username: victim.email.toUpperCase(), password: victim.password });
    assertError(limited, 429, "RATE_LIMIT_HIT", LIMITED);
    const wait = limited.body["retry-after"];
    assert.ok(typeof wait === "number" && wait > 1700 && wait <= 1800, JSON.stringify(limited.body));
    assert.equal(limited.headers.get("retry-after"), String(Math.ceil(wait)));
    // Other usernames are not affected, and API keys keep working for the locked user.
    assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: t.users.moderator.email, password: t.users.moderator.password }));
    assertSuccess(await t.api(victim, "GET", "/users/me"));
  });

  test("60 guesses in parallel: only 5 passwords are checked, and the right one among the rest is refused", async () => {
    const victim = await t.createUser("Parallel Victim");
    const guesses = Array.from({ length: 60 }, (_, i) => (i === 45 ? victim.password : `wrong-${i}`));
    const replies = await Promise.all(guesses.map((password) => t.api(null, "POST", "/fetch_api_key", { username: victim.email, password })));
    const statuses = replies.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 401).length, 5, statuses.join(","));
    assert.equal(statuses.filter((s) => s === 429).length, 55, statuses.join(","));
    assert.notEqual(statuses[45], 200, "the right password slipped past the limit");
    for (const reply of replies.filter((r) => r.status === 429)) assertError(reply, 429, "RATE_LIMIT_HIT", LIMITED);
  });

  test("successful logins are not failures: they never lock, and do not use up the failures allowed", async () => {
    const user = await t.createUser("Frequent Login");
    for (let i = 0; i < 8; i++) assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }));
    for (let i = 0; i < 4; i++) assertError(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: "wrong" }), 401, "AUTHENTICATION_FAILED");
    assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }));
    // The fifth failure is still allowed; the sixth attempt is not.
    assertError(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: "wrong" }), 401, "AUTHENTICATION_FAILED");
    assertError(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }), 429, "RATE_LIMIT_HIT");
  });

  test("unknown usernames are limited too, with a bounded key per username", async () => {
    const username = `nobody-${"x".repeat(5000)}@example.com`;
    for (let i = 0; i < 5; i++) assertError(await t.api(null, "POST", "/fetch_api_key", { username, password: "p" }), 401, "AUTHENTICATION_FAILED");
    assertError(await t.api(null, "POST", "/fetch_api_key", { username, password: "p" }), 429, "RATE_LIMIT_HIT");
    const keys = await t.services.storage.db.selectFrom("login_failures").select("key").execute();
    assert.ok(keys.every((k) => /^[0-9a-f]{64}$/.test(k.key)), JSON.stringify(keys.slice(0, 3)));
  });

  test("the lockout is in the database: a restarted (or second) server process still refuses", async () => {
    const victim = await t.createUser("Restart Victim");
    for (let i = 0; i < 5; i++) await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: "wrong" });
    // A new process: its own services and in-memory limiters, the same database.
    const services = await openServices(t.services.config, t.services.storage);
    const app = await buildApp(services);
    try {
      const reply = await app.inject({
        method: "POST",
        url: "/api/v1/fetch_api_key",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        payload: new URLSearchParams({ username: victim.email, password: victim.password }).toString(),
      });
      assert.equal(reply.statusCode, 429, reply.body);
      assert.equal(JSON.parse(reply.body).code, "RATE_LIMIT_HIT");
    } finally {
      await app.close();
      services.redis?.disconnect();
    }
  });

  test("after 30 minutes the username may try again", async () => {
    const victim = await t.createUser("Patient Victim");
    for (let i = 0; i < 5; i++) await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: "wrong" });
    assertError(await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: victim.password }), 429, "RATE_LIMIT_HIT");
    const realNow = t.services.now;
    const start = realNow();
    t.services.now = () => start + 30 * 60 + 1;
    try {
      assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: victim.password }));
    } finally {
      t.services.now = realNow;
    }
  });
});

describe("RATE_LIMITING=false turns every limit off", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: false, apiRateLimitPerMinute: 2 });
  });
  after(() => t.close());

  test("no lockout after many failures, no API limit, no headers", async () => {
    for (let i = 0; i < 8; i++) await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email, password: "wrong" });
    assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email, password: t.users.member.password }));
    for (let i = 0; i < 5; i++) {
      const reply = await t.api(t.users.member, "GET", "/users/me");
      assertSuccess(reply);
      assert.equal(reply.headers.get("x-ratelimit-limit"), null);
    }
  });
});

describe("API calls per user (api_by_user)", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true, apiRateLimitPerMinute: 5 });
  });
  after(() => t.close());

  test("the limit is counted down in X-RateLimit-* headers, then 429 with retry-after; other users are not affected", async () => {
    const user = await t.createUser("Busy Caller");
    const clock = t.services.apiLimiter.clock;
    const start = clock();
    t.services.apiLimiter.clock = () => start;
    try {
      for (let i = 0; i < 5; i++) {
        const reply = await t.api(user, "GET", "/users/me");
        assertSuccess(reply);
        const headers = rateLimitHeaders(reply);
        assert.equal(headers.limit, 5);
        assert.equal(headers.remaining, 4 - i);
        // The bucket is empty again 12 s (60 s / 5) per call from now.
        assert.equal(headers.reset, Math.floor(start + 12 * (i + 1)));
      }
      const limited = await t.api(user, "GET", "/users/me");
      assertError(limited, 429, "RATE_LIMIT_HIT", LIMITED);
      assert.equal(limited.body["retry-after"], 12);
      assert.equal(limited.headers.get("retry-after"), "12");
      assert.deepEqual(rateLimitHeaders(limited), { limit: 5, remaining: 0, reset: Math.floor(start + 12) });
      // Refused calls are not counted; another user has a bucket of their own.
      assertError(await t.api(user, "POST", "/messages", { type: "channel", to: "general", topic: "t", content: "x" }), 429, "RATE_LIMIT_HIT");
      assert.equal(rateLimitHeaders(await t.api(t.users.member, "GET", "/users/me")).remaining, 4);
      // One call's worth later, one call is allowed again.
      t.services.apiLimiter.clock = () => start + 12;
      assertSuccess(await t.api(user, "GET", "/users/me"));
      assertError(await t.api(user, "GET", "/users/me"), 429, "RATE_LIMIT_HIT");
    } finally {
      t.services.apiLimiter.clock = clock;
    }
  });

  test("event polls have a bucket of their own (Zulip's event server counts apart), with the headers on the long-poll reply", async () => {
    const user = await t.createUser("Poller");
    const { queue_id } = await t.register(user);
    for (let i = 0; i < 4; i++) assertSuccess(await t.api(user, "GET", "/users/me"));
    assertError(await t.api(user, "GET", "/users/me"), 429, "RATE_LIMIT_HIT");
    for (let i = 0; i < 5; i++) {
      const poll = await t.api(user, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true });
      assertSuccess(poll);
      assert.equal(rateLimitHeaders(poll).remaining, 4 - i);
    }
    assertError(await t.api(user, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true }), 429, "RATE_LIMIT_HIT");
  });

  test("bad credentials count against the address, not against the user", async () => {
    const user = await t.createUser("Impersonated");
    const stranger = { ...user, apiKey: "x".repeat(32) };
    for (let i = 0; i < 10; i++) assertError(await t.api(stranger, "GET", "/users/me"), 401, "INVALID_API_KEY");
    assert.equal(rateLimitHeaders(await t.api(user, "GET", "/users/me")).remaining, 4);
  });
});

describe("Zulip's default: 200 calls a minute per user", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true });
  });
  after(() => t.close());

  test("250 calls in a burst: 200 answered, the rest 429", async () => {
    const user = await t.createUser("Burst Caller");
    const statuses: number[] = [];
    // Time stands still during the burst, so a slow machine's calls do not refill the bucket.
    const clock = t.services.apiLimiter.clock;
    const start = clock();
    t.services.apiLimiter.clock = () => start;
    try {
      for (let batch = 0; batch < 5; batch++) {
        const replies = await Promise.all(Array.from({ length: 50 }, () => t.api(user, "GET", "/users/me")));
        statuses.push(...replies.map((r) => r.status));
      }
    } finally {
      t.services.apiLimiter.clock = clock;
    }
    assert.equal(statuses.filter((s) => s === 200).length, 200);
    assert.equal(statuses.filter((s) => s === 429).length, 50);
  });
});

describe("unauthenticated calls per IP address (api_by_ip: 100 a minute)", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true });
  });
  after(() => t.close());

  test("server_settings, fetch_api_key and invitation keys share the address's 100 calls; signed-in calls do not", async () => {
    const clock = t.services.apiLimiter.clock;
    const start = clock();
    t.services.apiLimiter.clock = () => start;
    try {
      for (let i = 0; i < 98; i++) assertSuccess(await t.api(null, "GET", "/server_settings"));
      assertError(await t.api(null, "GET", "/invites/join/nokey"), 404, "BAD_REQUEST");
      const last = await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email, password: t.users.member.password });
      assertSuccess(last);
      assert.deepEqual(rateLimitHeaders(last), { limit: 100, remaining: 0, reset: Math.floor(start + 60) });
      const limited = await t.api(null, "GET", "/server_settings");
      assertError(limited, 429, "RATE_LIMIT_HIT", LIMITED);
      assert.equal(limited.body["retry-after"], 0.6);
      assertError(await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email, password: t.users.member.password }), 429, "RATE_LIMIT_HIT");
      // X-Forwarded-For is not believed without TRUSTED_PROXIES.
      assertError(await t.api(null, "GET", "/server_settings", {}, { headers: { "x-forwarded-for": "198.51.100.9" } }), 429, "RATE_LIMIT_HIT");
      const joinPage = await fetch(`${t.url}/join/nokey/`);
      assert.equal(joinPage.status, 429);
      assert.equal((await joinPage.json()).code, "RATE_LIMIT_HIT");
      // Signed-in users are counted per user, not per address.
      assertSuccess(await t.api(t.users.member, "GET", "/users/me"));
      // Bad credentials from a limited address are refused with the 429.
      const bad = await fetch(`${t.url}/api/v1/users/me`, { headers: { authorization: basicAuth(t.users.member.email, "wrong") } });
      assert.equal(bad.status, 429);
    } finally {
      t.services.apiLimiter.clock = clock;
    }
  });
});

describe("TRUSTED_PROXIES: per-IP limits see the client behind a reverse proxy", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true, trustedProxies: ["127.0.0.1", "::1"] });
  });
  after(() => t.close());

  test("each X-Forwarded-For address has its own bucket", async () => {
    const from = (ip: string) => t.api(null, "GET", "/server_settings", {}, { headers: { "x-forwarded-for": ip } });
    // Time stands still, so a slow machine's calls do not refill the bucket.
    const clock = t.services.apiLimiter.clock;
    const start = clock();
    t.services.apiLimiter.clock = () => start;
    try {
      for (let i = 0; i < 100; i++) assertSuccess(await from("203.0.113.7"));
      assertError(await from("203.0.113.7"), 429, "RATE_LIMIT_HIT");
      assert.equal(rateLimitHeaders(await from("198.51.100.2")).remaining, 99);
    } finally {
      t.services.apiLimiter.clock = clock;
    }
  });

  test("configuration: RATE_LIMITING, API_RATE_LIMIT_PER_MINUTE, TRUSTED_PROXIES", () => {
    assert.deepEqual(loadConfig({}).trustedProxies, []);
    assert.deepEqual(loadConfig({ TRUSTED_PROXIES: "10.0.0.1, 10.1.0.0/16" }).trustedProxies, ["10.0.0.1", "10.1.0.0/16"]);
    assert.equal(loadConfig({}).rateLimiting, true);
    assert.equal(loadConfig({ RATE_LIMITING: "false" }).rateLimiting, false);
    assert.equal(loadConfig({}).apiRateLimitPerMinute, 200);
    assert.throws(() => loadConfig({ API_RATE_LIMIT_PER_MINUTE: "0" }));
  });
});

/** GET /api/v1/users/me as `user` on the server at `url`. */
async function getMe(url: string, user: TestUser): Promise<ApiResponse> {
  const response = await fetch(`${url}/api/v1/users/me`, { headers: { authorization: basicAuth(user.email, user.apiKey) } });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Runs `body` with the clocks of these limiters standing still at the same moment. */
async function frozenClocks(servicesList: Services[], body: (start: number) => Promise<void>): Promise<void> {
  const clocks = servicesList.map((s) => s.apiLimiter.clock);
  const start = clocks[0]!();
  for (const s of servicesList) s.apiLimiter.clock = () => start;
  try {
    await body(start);
  } finally {
    servicesList.forEach((s, i) => (s.apiLimiter.clock = clocks[i]!));
  }
}

describe("several server processes (REDIS_URL): one budget per user across all of them", () => {
  let t: TestApp;
  let second: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    t = await startTestApp({ rateLimiting: true, apiRateLimitPerMinute: 10 });
    // A second process: its own services, limiter and Redis connection, on the same database and Redis key prefix.
    const services = await openServices(t.services.config, { ...t.services.storage, close: async () => {} });
    second = await startServer(services);
  });
  after(async () => {
    await second.close();
    await t.close();
  });

  test("calls spread over two servers: the sum accepted stays at the limit, and the headers count down across both", async () => {
    const user = await t.createUser("Two Process Caller");
    // REDIS_URL (with DATABASE_URL) in the environment puts the counters in Redis.
    const shared = t.services.config.redisUrl !== undefined;
    await frozenClocks([t.services, second.services], async (start) => {
      // One call on each first: the second server sees the first's call.
      const first = await getMe(t.url, user);
      const other = await getMe(second.url, user);
      assertSuccess(first);
      assertSuccess(other);
      assert.equal(rateLimitHeaders(first).remaining, 9);
      // Without Redis each process counts for itself (documented): the second starts afresh.
      assert.equal(rateLimitHeaders(other).remaining, shared ? 8 : 9);
      assert.equal(rateLimitHeaders(other).reset, Math.floor(start + (shared ? 12 : 6)));
      // Then 30 at once, alternating between the servers.
      const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => getMe(i % 2 === 0 ? t.url : second.url, user)));
      const accepted = 2 + replies.filter((r) => r.status === 200).length;
      assert.equal(accepted, shared ? 10 : 20, replies.map((r) => r.status).join(","));
      for (const reply of replies.filter((r) => r.status !== 200)) assertError(reply, 429, "RATE_LIMIT_HIT", LIMITED);
    });
  });

  test("where the counters live: Redis keys under REDIS_KEY_PREFIX that expire within the window, or this process's memory", async () => {
    const user = await t.createUser("Key Owner");
    assertSuccess(await getMe(second.url, user));
    if (t.services.config.redisUrl === undefined) {
      assert.equal(t.services.redis, undefined);
      assert.equal(second.services.redis, undefined);
      return;
    }
    const redis = t.services.redis;
    assert.ok(redis, "no Redis connection with REDIS_URL set");
    const prefix = t.services.config.redisKeyPrefix;
    const key = `${prefix}ratelimit:user:${user.id}`;
    const ttl = await redis.pttl(key);
    // One call in a 10-a-minute window: the bucket is empty again after 6 s.
    assert.ok(ttl > 0 && ttl <= 6000, `PTTL ${ttl}`);
    const keys = await redis.keys(`${prefix}*`);
    assert.ok(keys.length > 0 && keys.every((k) => k.startsWith(`${prefix}ratelimit:`)), keys.join(" "));
  });
});

/** A TCP port on this machine that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("Redis unreachable: rate limits fail open, with a warning in the log", () => {
  let t: TestApp;
  let unreachable: Redis;
  before(async () => {
    t = await startTestApp({ rateLimiting: true, apiRateLimitPerMinute: 2 });
    // The Redis limiter on a port nothing listens on (whatever database and event queues this run uses), connected as the server connects it.
    unreachable = connectRedis({ ...t.services.config, redisUrl: `redis://127.0.0.1:${await closedPort()}` }, "commands", { lazyConnect: true, commandTimeout: 1000 });
    unreachable.on("error", () => {});
    t.services.apiLimiter = new RedisRateLimiter(unreachable, "unreachable:");
  });
  after(async () => {
    unreachable.disconnect();
    await t.close();
  });

  test("calls over the limit go through uncounted, without X-RateLimit headers; the outage is reported once, not per call", async () => {
    const reports: { error: Error; uncounted: number }[] = [];
    t.services.apiLimiter.onUnavailable = (error, uncounted) => reports.push({ error, uncounted });
    for (let i = 0; i < 5; i++) {
      const reply = await t.api(t.users.member, "GET", "/users/me");
      assertSuccess(reply);
      assert.equal(reply.headers.get("x-ratelimit-limit"), null);
    }
    assertSuccess(await t.api(null, "GET", "/server_settings"));
    assert.equal(reports.length, 1, JSON.stringify(reports));
    assert.equal(reports[0]!.uncounted, 1);
    assert.ok(reports[0]!.error instanceof Error);
    // Login failures are in the database, not in Redis: they still lock.
    const victim = await t.createUser("Outage Victim");
    for (let i = 0; i < 5; i++) assertError(await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: "wrong" }), 401, "AUTHENTICATION_FAILED");
    assertError(await t.api(null, "POST", "/fetch_api_key", { username: victim.email, password: victim.password }), 429, "RATE_LIMIT_HIT");
  });
});
