// Starts a real Parley server on a fresh database — SQLite in a temporary
// directory, or a fresh PostgreSQL schema when DATABASE_URL is set — with one
// user of every role, and talks to it over HTTP like a client would.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { createRealm } from "../src/actions/realm.ts";
import { createUser } from "../src/actions/users.ts";
import { loadConfig, type Config } from "../src/config.ts";
import { Role } from "../src/domain/roles.ts";
import type { ClientEvent, Notification } from "../src/events/notifier.ts";
import { readStoredFile } from "../src/files/store.ts";
import { openStorage, type Storage } from "../src/storage/database.ts";
import { connectRedis } from "../src/redis.ts";
import type { Realm, User } from "../src/storage/schema.ts";
import { openServices, startServer, type RunningServer } from "../src/server.ts";
import type { Services } from "../src/services.ts";
import type { JobRunner } from "../src/jobs/runner.ts";
import { DIGEST_CHECK_JOB, MISSED_MESSAGE_EMAIL_JOB, REALM_EXPORT_EXPIRE_JOB } from "../src/jobs/names.ts";
import { jobRunnerFor } from "../src/workers/index.ts";

export interface TestUser {
  id: number;
  /** The real address: what a zuliprc holds and Basic auth accepts. */
  email: string;
  apiKey: string;
  role: number;
  password: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // Tests read arbitrary fields of replies.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export type Encoding = "form" | "query" | "multipart" | "json";

export interface RequestOptions {
  /** How parameters travel; default: query string for GET, urlencoded body otherwise. */
  encoding?: Encoding;
  headers?: Record<string, string>;
  /** Where the path goes: /api/v1 (default) or /json. */
  prefix?: string;
}

/** A browser signed in with POST /json/login: its cookie and the session's CSRF token. */
export interface BrowserSession {
  userId: number;
  /** The Cookie header a browser would send: parley_session=… */
  cookie: string;
  csrfToken: string;
}

export interface JsonRequestOptions extends RequestOptions {
  /** The X-CSRFToken sent on unsafe methods: the session's by default; null sends none. */
  csrf?: string | null;
}

export type Params = Record<string, unknown>;

export interface TestApp {
  url: string;
  services: Services;
  realm: Realm;
  users: Record<"owner" | "admin" | "moderator" | "member" | "guest" | "bot", TestUser>;
  /** Every event notified since start (or the last clearEvents), in order. */
  events: Notification[];
  clearEvents(): void;
  /** Events of `type` (and `op`, if given) that reached `userId`. */
  eventsFor(userId: number, type: string, op?: string): ClientEvent[];
  api(user: TestUser | null, method: string, urlPath: string, params?: Params, options?: RequestOptions): Promise<ApiResponse>;
  /** Signs `user` in at POST /json/login (asserting success). */
  login(user: TestUser): Promise<BrowserSession>;
  /** A call to /json<urlPath> as a browser with `session` (null: no cookie), with its CSRF token on unsafe methods. */
  json(session: BrowserSession | null, method: string, urlPath: string, params?: Params, options?: JsonRequestOptions): Promise<ApiResponse>;
  createUser(name: string, role?: number, options?: { bot?: boolean; botOwnerId?: number }): Promise<TestUser>;
  /** IDs of the active users, system bots excepted: who organization-wide events go to. Ascending. */
  activeUserIds(): Promise<number[]>;
  /** System group IDs by name (role:nobody, role:everyone, …). */
  systemGroupIds(): Promise<Record<string, number>>;
  /** POST /register for `user` (asserting success); returns the reply body (queue_id, state…). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  register(user: TestUser, params?: Params): Promise<any>;
  /**
   * GET /events with dont_block: the events a queue holds after `lastEventId`
   * (default -1: all), heartbeats excluded. Asserts success.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  queuedEvents(user: TestUser, queueId: string, lastEventId?: number): Promise<any[]>;
  /**
   * Another server process, as a second `parley serve` would be: its own
   * services on the same database and (with REDIS_URL) the same Redis key
   * prefix. Closed with this app.
   */
  startPeer(): Promise<PeerServer>;
  close(): Promise<void>;
}

export interface PeerServer {
  url: string;
  services: Services;
  api(user: TestUser | null, method: string, urlPath: string, params?: Params, options?: RequestOptions): Promise<ApiResponse>;
  close(): Promise<void>;
}

export const PG_URL = process.env.DATABASE_URL;
export const DIALECT = PG_URL ? "postgres" : "sqlite";
/** Set (with DATABASE_URL) to run the suite with event queues and rate limits in Redis. */
export const REDIS_URL = process.env.REDIS_URL;
/** UPLOAD_STORAGE=database (with DATABASE_URL) runs the suite with uploaded files kept in PostgreSQL. */
export const UPLOAD_STORAGE = PG_URL && process.env.UPLOAD_STORAGE ? process.env.UPLOAD_STORAGE : "local";

/** Parameter values as a Zulip client encodes them: strings raw, everything else JSON. */
export function encodeValue(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

export function basicAuth(email: string, apiKey: string): string {
  return `Basic ${Buffer.from(`${email}:${apiKey}`).toString("base64")}`;
}

async function request(baseUrl: string, user: TestUser | null, method: string, urlPath: string, params: Params, options: RequestOptions): Promise<ApiResponse> {
  const encoding = options.encoding ?? (method === "GET" ? "query" : "form");
  const headers: Record<string, string> = { ...options.headers };
  if (user) headers.authorization = basicAuth(user.email, user.apiKey);
  let url = `${baseUrl}${options.prefix ?? "/api/v1"}${urlPath}`;
  let body: string | FormData | undefined;
  const entries = Object.entries(params).map(([k, v]) => [k, encodeValue(v)] as [string, string]);
  if (encoding === "query") {
    if (entries.length > 0) url += (url.includes("?") ? "&" : "?") + new URLSearchParams(entries).toString();
  } else if (encoding === "form") {
    headers["content-type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(entries).toString();
  } else if (encoding === "multipart") {
    const form = new FormData();
    for (const [k, v] of entries) form.append(k, v);
    body = form;
  } else {
    headers["content-type"] = "application/json";
    body = JSON.stringify(params);
  }
  const response = await fetch(url, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Non-JSON bodies are returned as text so a test can show what came back.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** A browser's call to /json: the session cookie, and the CSRF token on unsafe methods. */
export function jsonRequest(baseUrl: string, session: BrowserSession | null, method: string, urlPath: string, params: Params = {}, options: JsonRequestOptions = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = {};
  if (session) {
    headers.cookie = session.cookie;
    const csrf = options.csrf === undefined ? session.csrfToken : options.csrf;
    if (csrf !== null && !["GET", "HEAD"].includes(method)) headers["x-csrftoken"] = csrf;
  }
  return request(baseUrl, null, method, urlPath, params, { ...options, prefix: "/json", headers: { ...headers, ...options.headers } });
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return loadConfig(
    // Rate limits off, as Zulip's test suite runs: tests drive one user hard. test/rate-limits.test.ts turns them on.
    {
      HOST: "127.0.0.1",
      PORT: "0",
      LOG_LEVEL: "silent",
      EXTERNAL_URL: "http://parley.test",
      RATE_LIMITING: "false",
      ...(PG_URL ? { DATABASE_URL: PG_URL } : {}),
      // Each test server keeps its Redis keys apart, as each keeps its own PostgreSQL schema.
      ...(PG_URL && REDIS_URL ? { REDIS_URL, REDIS_KEY_PREFIX: `t_${crypto.randomBytes(6).toString("hex")}:` } : {}),
      UPLOAD_STORAGE,
    },
    overrides,
  );
}

/** Drops a test's PostgreSQL schema (on PG_URL) with everything in it. */
export async function dropPgSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** Opens storage on a fresh database: a temp SQLite file, or a new PostgreSQL schema. */
export async function freshStorage(config: Config) {
  if (PG_URL) {
    const schema = `t_${crypto.randomBytes(6).toString("hex")}`;
    const storage = await openStorage({ databaseUrl: PG_URL, pgSchema: schema });
    return {
      storage,
      reopen: () => openStorage({ databaseUrl: PG_URL, pgSchema: schema }),
      cleanup: () => dropPgSchema(schema),
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-test-"));
  const storage = await openStorage({ sqlitePath: path.join(dir, "parley.sqlite3") });
  void config;
  return { storage, reopen: () => openStorage({ sqlitePath: path.join(dir, "parley.sqlite3") }), cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Deletes a test server's Redis keys (its prefix is its own), as its PostgreSQL schema is dropped. */
export async function deleteRedisKeys(config: Config): Promise<void> {
  if (config.redisUrl === undefined) return;
  const redis = connectRedis(config, "test-cleanup");
  try {
    for await (const keys of redis.scanStream({ match: `${config.redisKeyPrefix}*`, count: 500 })) {
      if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
  } finally {
    redis.disconnect();
  }
}

export async function startTestApp(overrides: Partial<Config> = {}): Promise<TestApp> {
  // Each app gets its own data directory, so uploads never land in ./data.
  const dataDir = overrides.dataDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "parley-data-")) : undefined;
  const config = testConfig(dataDir === undefined ? overrides : { ...overrides, dataDir });
  const fresh = await freshStorage(config);
  const storage = fresh.storage;
  const cleanup = async () => {
    await fresh.cleanup();
    await deleteRedisKeys(config);
    if (dataDir !== undefined) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    return await populate(config, storage, fresh.reopen, cleanup);
  } catch (error) {
    await storage.close().catch(() => {});
    await cleanup();
    throw error;
  }
}

async function populate(config: Config, storage: Storage, reopen: () => Promise<Storage>, cleanup: () => Promise<void>): Promise<TestApp> {
  const services = await openServices(config, storage);
  const ownerPassword = "owner-password";
  const { realm, owner } = await createRealm(services, {
    name: "Test Org",
    ownerEmail: "owner@example.com",
    ownerPassword,
    ownerFullName: "Olivia Owner",
  });
  const events: Notification[] = [];
  services.notifier.subscribe((n) => events.push(n));

  let server: RunningServer | undefined = await startServer(services);
  const peers = new Set<RunningServer>();
  const baseUrl = server.url;

  const make = async (name: string, role: number = Role.MEMBER, options: { bot?: boolean; botOwnerId?: number } = {}): Promise<TestUser> => {
    const password = `${name}-password`;
    const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-");
    const user: User = await createUser(services, realm, null, {
      email: `${slug}@example.com`,
      fullName: name,
      password: options.bot ? null : password,
      role,
      isBot: options.bot ?? false,
      ...(options.botOwnerId !== undefined ? { botOwnerId: options.botOwnerId } : {}),
    });
    return { id: user.id, email: user.delivery_email, apiKey: user.api_key, role, password };
  };

  const users = {
    owner: { id: owner.id, email: owner.delivery_email, apiKey: owner.api_key, role: Role.OWNER, password: ownerPassword },
    admin: await make("Adam Admin", Role.ADMINISTRATOR),
    moderator: await make("Mona Moderator", Role.MODERATOR),
    member: await make("Max Member", Role.MEMBER),
    guest: await make("Gus Guest", Role.GUEST),
    bot: undefined as unknown as TestUser,
  };
  users.bot = await make("Bob Bot", Role.MEMBER, { bot: true, botOwnerId: users.member.id });
  events.length = 0;

  return {
    url: baseUrl,
    services,
    realm,
    users,
    events,
    clearEvents: () => {
      events.length = 0;
    },
    eventsFor: (userId, type, op) =>
      events.filter((n) => n.userIds.includes(userId) && n.event.type === type && (op === undefined || n.event.op === op)).map((n) => n.event),
    api: (user, method, urlPath, params = {}, options = {}) => request(baseUrl, user, method, urlPath, params, options),
    login: async (user) => {
      const reply = await request(baseUrl, null, "POST", "/login", { username: user.email, password: user.password }, { prefix: "/json" });
      const body = assertSuccess(reply);
      const cookie = /^(parley_session=[^;]*)/.exec(reply.headers.get("set-cookie") ?? "")?.[1];
      assert.ok(cookie, `no session cookie: ${reply.headers.get("set-cookie")}`);
      return { userId: body.user_id, cookie, csrfToken: body.csrf_token };
    },
    json: (session, method, urlPath, params = {}, options = {}) => jsonRequest(baseUrl, session, method, urlPath, params, options),
    createUser: make,
    activeUserIds: async () => {
      const rows = await services.storage.db
        .selectFrom("users")
        .select("id")
        .where("realm_id", "=", realm.id)
        .where("is_active", "=", true)
        .where("is_system_bot", "=", false)
        .orderBy("id")
        .execute();
      return rows.map((r) => r.id);
    },
    systemGroupIds: async () => {
      const rows = await services.storage.db
        .selectFrom("user_groups")
        .select(["id", "name"])
        .where("realm_id", "=", realm.id)
        .where("is_system_group", "=", true)
        .execute();
      return Object.fromEntries(rows.map((r) => [r.name, r.id]));
    },
    register: async (user, params = {}) => assertSuccess(await request(baseUrl, user, "POST", "/register", params, {})),
    queuedEvents: async (user, queueId, lastEventId = -1) => {
      // Events of an action the test called directly (no reply to wait for them) are written to Redis queues asynchronously.
      await services.queues.settled();
      const reply = assertSuccess(await request(baseUrl, user, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId, dont_block: true }, {}));
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return reply.events.filter((e: any) => e.type !== "heartbeat");
    },
    startPeer: async () => {
      const peer = await startServer(await openServices(config, await reopen()));
      peers.add(peer);
      return {
        url: peer.url,
        services: peer.services,
        api: (user, method, urlPath, params = {}, options = {}) => request(peer.url, user, method, urlPath, params, options),
        close: async () => {
          if (peers.delete(peer)) await peer.close();
        },
      };
    },
    close: async () => {
      if (!server) return;
      const closing = server;
      server = undefined;
      for (const peer of [...peers]) await peer.close();
      peers.clear();
      await closing.close();
      await cleanup();
    },
  };
}

/** Asserts a JSON error reply: HTTP status, code, and (if given) message and extra fields. */
export function assertError(response: ApiResponse, status: number, code: string, msg?: string | RegExp, extra?: Record<string, unknown>): void {
  const context = JSON.stringify(response.body);
  assert.equal(response.status, status, `status: ${context}`);
  assert.equal(response.body.result, "error", context);
  assert.equal(response.body.code, code, context);
  if (typeof msg === "string") assert.equal(response.body.msg, msg, context);
  else if (msg instanceof RegExp) assert.match(response.body.msg, msg, context);
  for (const [key, value] of Object.entries(extra ?? {})) assert.deepEqual(response.body[key], value, `${key}: ${context}`);
}

/** Asserts a success reply and returns its body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function assertSuccess(response: ApiResponse): any {
  assert.equal(response.status, 200, JSON.stringify(response.body));
  assert.equal(response.body.result, "success", JSON.stringify(response.body));
  assert.equal(response.body.msg, "");
  return response.body;
}

/** The channel object a new channel has with every default, as GET /streams shows it. */
export function expectedChannel(
  sys: Record<string, number>,
  now: number,
  id: number,
  name: string,
  creatorId: number,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    stream_id: id,
    name,
    is_archived: false,
    description: "",
    rendered_description: "",
    date_created: now,
    creator_id: creatorId,
    invite_only: false,
    is_web_public: false,
    stream_post_policy: 1,
    is_announcement_only: false,
    message_retention_days: null,
    history_public_to_subscribers: true,
    topics_policy: "inherit",
    first_message_id: null,
    folder_id: null,
    is_recently_active: true,
    can_add_subscribers_group: sys["role:nobody"],
    can_remove_subscribers_group: sys["role:administrators"],
    can_administer_channel_group: { direct_members: [creatorId], direct_subgroups: [] },
    can_delete_any_message_group: sys["role:nobody"],
    can_delete_own_message_group: sys["role:nobody"],
    can_move_messages_out_of_channel_group: sys["role:nobody"],
    can_move_messages_within_channel_group: sys["role:nobody"],
    can_resolve_topics_group: sys["role:nobody"],
    can_send_message_group: sys["role:everyone"],
    can_subscribe_group: sys["role:nobody"],
    stream_weekly_traffic: null,
    subscriber_count: 1,
    ...overrides,
  };
}

/** Keys of the files the app's file store holds under `prefix` ("avatars/2/"), sorted: whichever backend it uses. */
export async function storedKeys(t: { services: Services }, prefix = ""): Promise<string[]> {
  const keys: string[] = [];
  for await (const { key } of t.services.files.list()) if (key.startsWith(prefix)) keys.push(key);
  return keys.sort();
}

/** Services on a fresh, empty database (no organization) and data directory, as an importer finds them; removed after the test. */
export async function emptyServices(t: { after(fn: () => unknown): void }): Promise<Services> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-import-data-"));
  const config = testConfig({ dataDir });
  const fresh = await freshStorage(config);
  const services = await openServices(config, fresh.storage);
  t.after(async () => {
    await fresh.cleanup();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  return services;
}

/** GET requests to `serverUrl` as the user with this address (their stored API key); JSON answers parsed, others as text; anything but 200 fails. */
export async function getAs(services: Services, serverUrl: string, email: string): Promise<(urlPath: string) => Promise<any>> {
  const { api_key } = await services.storage.db.selectFrom("users").select("api_key").where("delivery_email", "=", email).executeTakeFirstOrThrow();
  const auth = basicAuth(email, api_key);
  return async (urlPath: string): Promise<any> => {
    const response = await fetch(`${serverUrl}${urlPath}`, { headers: { authorization: auth } });
    const text = await response.text();
    assert.equal(response.status, 200, `${urlPath}: ${text}`);
    return response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text;
  };
}

/** The contents of a stored file, or undefined when there is none. */
export async function storedBytes(t: TestApp, key: string): Promise<Buffer | undefined> {
  const file = await t.services.files.open(key);
  return file && readStoredFile(file);
}

let nameCounter = 0;
/** A name no other test in this process has used: "prefix N". */
export function uniqueName(prefix = "name"): string {
  nameCounter += 1;
  return `${prefix} ${nameCounter}`;
}

/** A channel named "`prefix` N", created by `creator` with `subscribers` and no new-subscription messages: its ID and name. */
export async function createChannel(t: TestApp, creator: TestUser, subscribers: readonly TestUser[], prefix = "channel", params: Params = {}): Promise<{ id: number; name: string }> {
  const name = uniqueName(prefix);
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
      ...params,
    }),
  );
  const id = assertSuccess(await t.api(creator, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

export const sortedIds = (ids: readonly number[]): number[] => [...ids].sort((a, b) => a - b);

/**
 * Jobs queued to run at a time of their own, which nothing hastens: a missed-message email batch waiting for
 * its period to end (by default 120 s after the message), the daily digest check every server queues for its
 * hour, an export's deletion after its retention.
 */
const JOBS_WAITING_FOR_THEIR_TIME = [MISSED_MESSAGE_EMAIL_JOB, DIGEST_CHECK_JOB, REALM_EXPORT_EXPIRE_JOB];

/**
 * Resolves once no background job (of `names`, or any) is queued, running or waiting for a retry: failed
 * ones are over. Without `names`, a job of JOBS_WAITING_FOR_THEIR_TIME not yet due counts as settled:
 * nothing happens to it until the clock moves on.
 */
export async function jobsSettled(services: Services, names?: readonly string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let query = services.storage.db.selectFrom("jobs").select((eb) => eb.fn.countAll<number>().as("n")).where("status", "<>", "failed");
    if (names) query = query.where("name", "in", [...names]);
    else {
      const now = services.nowMs();
      query = query.where((eb) => eb.not(eb.and([eb("name", "in", JOBS_WAITING_FOR_THEIR_TIME), eb("status", "=", "queued"), eb("run_at", ">", now)])));
    }
    const { n } = await query.executeTakeFirstOrThrow();
    if (Number(n) === 0 && (services.jobs?.busy ?? 0) === 0) {
      // The jobs' events, on Redis, are written to the queues after the job ends (a reply waits for them; a job does not).
      await services.queues.settled();
      return;
    }
    if (Date.now() > deadline) throw new Error(`background jobs still pending after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Another job runner on `services`, started, with every worker and its own log: what another process (or a restart) would run. */
export function startJobRunner(services: Services, log: (error: unknown, what: string) => void = () => {}): JobRunner {
  const runner = jobRunnerFor(services, log);
  runner.start();
  return runner;
}

/** The payloads of the jobs named `name` still queued, running or waiting for a retry (not failed), oldest first. */
export async function pendingJobs<P = Record<string, unknown>>(services: Services, name: string): Promise<P[]> {
  const rows = await services.storage.db.selectFrom("jobs").select("payload").where("name", "=", name).where("status", "<>", "failed").orderBy("id").execute();
  return rows.map((r) => JSON.parse(r.payload) as P);
}
