// One typed configuration object, read from the environment once at start-up
// and validated there, so nothing else in the code reads process.env.
import path from "node:path";
import { addressList } from "./domain/external-content.ts";

export interface Config {
  host: string;
  port: number;
  /** Where the embedded SQLite database lives when no DATABASE_URL is set. */
  dataDir: string;
  /** postgres://… to run on PostgreSQL; undefined means SQLite under dataDir. */
  databaseUrl: string | undefined;
  /** PostgreSQL schema to keep the tables in (created if missing); undefined: the server's default. */
  pgSchema: string | undefined;
  /** redis://… to share event queues and rate limits between processes; undefined: they live in this process. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key this server uses, so several deployments (or test runs) can share one Redis. */
  redisKeyPrefix: string;
  /** The organization's canonical URL as clients see it (realm_url). */
  externalUrl: string;
  /** Domain of the fake `user{id}@domain` API emails used when real emails are hidden. */
  fakeEmailDomain: string;
  logLevel: string;
  /** Enables POST /dev_fetch_api_key and GET /dev_list_users. Never in production. */
  devMode: boolean;
  /** Largest request body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Largest body an incoming webhook (/api/v1/external/…) accepts, in bytes (see docs/security.md, "Incoming webhook limits"). */
  webhookBodyLimitBytes: number;
  /** Largest uploaded file accepted, in MiB (Zulip's MAX_FILE_UPLOAD_SIZE); 0 disables uploads. */
  maxFileUploadSizeMib: number;
  /** Where uploaded files are stored: <dataDir>/uploads unless overridden. */
  uploadsDir: string;
  /**
   * Which file store keeps uploads, avatars, custom emoji and icons: "local"
   * (files under uploadsDir) or "database" (in PostgreSQL, shared by every
   * process). uploadsDir holds files still arriving either way.
   */
  uploadStorage: "local" | "database";
  /** Name of the organization created on an empty database by `serve`. */
  defaultOrgName: string;
  /** Email of the owner created on an empty database by `serve`. */
  defaultOwnerEmail: string;
  /** How long an idle GET /events waits before answering with a heartbeat (Zulip: 45 s). */
  eventHeartbeatMs: number;
  /** Lifespan of an event queue nobody polls (Zulip: 10 minutes). */
  eventQueueIdleMs: number;
  /** How long `parley serve` may take to drain after SIGTERM/SIGINT before it exits anyway. */
  shutdownTimeoutMs: number;
  /** Default validity of invitations, in minutes (Zulip's INVITATION_LINK_VALIDITY_DAYS × 1440). */
  invitationLinkValidityMinutes: number;
  /** Invitation emails an organization may send per 24 hours (Zulip's INVITES_DEFAULT_REALM_DAILY_MAX). */
  invitesDailyMax: number;
  /** smtp:// or smtps:// URL of the mail server; undefined: emails go to <dataDir>/outbox. */
  smtpUrl: string | undefined;
  /** From address of the emails the server sends (Zulip's NOREPLY_EMAIL_ADDRESS). */
  emailFrom: string;
  /** Base URL of the mobile push service (a Zulip-style push bouncer); undefined: push not configured. */
  pushServiceUrl: string | undefined;
  /** HTTP Basic credentials Parley presents to the push service (Zulip's ZULIP_ORG_ID / ZULIP_ORG_KEY). */
  pushServiceOrgId: string | undefined;
  pushServiceOrgKey: string | undefined;
  /** First retry delay for failed push-service requests; it doubles per attempt, capped at a minute. */
  pushRetryBaseMs: number;
  /** How long an outgoing-webhook bot's server has to answer, whole reply included (Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS: 10). */
  outgoingWebhookTimeoutMs: number;
  /** Zulip's RATE_LIMITING: false turns every limit off, login limits included (load tests, test suites). */
  rateLimiting: boolean;
  /** API calls per user per minute (Zulip's api_by_user rule: 200). */
  apiRateLimitPerMinute: number;
  /**
   * Addresses (or CIDR ranges) of reverse proxies whose X-Forwarded-For is
   * believed, so per-IP limits see the client's address, not the proxy's.
   */
  trustedProxies: string[];
  /** How long a browser session lasts from sign-in, in seconds (Zulip's SESSION_COOKIE_AGE: two weeks). */
  sessionAgeSeconds: number;
  /**
   * Whether the image proxy (/external_content/…) may fetch from this machine
   * and private networks. Off: a message's image link cannot make the server
   * probe its own network. On only where those hosts are meant to be reached.
   */
  externalContentAllowInternal: boolean;
  /**
   * Internal addresses or CIDR ranges that requests to other sites (image
   * proxy, link previews, outgoing webhooks) may reach all the same, e.g. a
   * bot server on this machine, without opening every internal address.
   */
  externalContentAllowAddresses: string[];
  /** Name servers those requests resolve names with ("address" or "address:port"); empty: the system's (/etc/resolv.conf). */
  externalContentDnsServers: string[];
  /** The image proxy's time limit for one image (and a link preview's for one page), redirects and bytes included. */
  externalContentTimeoutMs: number;
  /** How long the image proxy waits for another site to start answering (each redirect hop anew). */
  externalContentFirstByteTimeoutMs: number;
  /** How long the image proxy waits for the next bytes of an image once they have started to come. */
  externalContentIdleTimeoutMs: number;
  /** Images the image proxy fetches at once for one client address (an IPv6 /64); more wait their turn. */
  externalContentFetchesPerAddress: number;
  /** Bytes of fetched images kept on disk (DATA_DIR/external-content-cache), least recently used first out; 0 keeps none. */
  externalContentCacheBytes: number;
  /** Zulip's INLINE_URL_EMBED_PREVIEW: link previews may be made (each organization's inline_url_embed_preview turns them on). */
  inlineUrlEmbedPreview: boolean;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function intFrom(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got '${raw}'`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}`);
  return value;
}

function boolFrom(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (["1", "true", "yes", "on"].includes(raw.toLowerCase())) return true;
  if (["0", "false", "no", "off"].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got '${raw}'`);
}

function listFrom(env: Env, name: string): string[] {
  return (env[name] ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** A list of addresses or CIDR ranges, each checked. */
function addressListFrom(env: Env, name: string): string[] {
  const entries = listFrom(env, name);
  try {
    addressList(entries);
  } catch (error) {
    throw new ConfigError(`${name}: ${(error as Error).message}`);
  }
  return entries;
}

/** A domain usable in an email address: the URL's host name if it is one, else a reserved name. */
function emailDomainFor(url: URL): string {
  const host = url.hostname;
  const looksLikeDomain = /^[a-z0-9-]+(\.[a-z0-9-]+)+$/i.test(host) && !/^[\d.]+$/.test(host);
  return looksLikeDomain ? host.toLowerCase() : "parley.invalid";
}

function uploadStorageFrom(env: Env, databaseUrl: string | undefined): Config["uploadStorage"] {
  const raw = env.UPLOAD_STORAGE || "local";
  if (raw !== "local" && raw !== "database") throw new ConfigError(`UPLOAD_STORAGE must be local or database, got '${raw}'`);
  if (raw === "database" && !databaseUrl) throw new ConfigError("UPLOAD_STORAGE=database needs DATABASE_URL: files are kept in PostgreSQL");
  return raw;
}

function smtpUrlFrom(env: Env): string | undefined {
  const raw = env.SMTP_URL || undefined;
  if (raw !== undefined && !/^smtps?:\/\/[^/]/.test(raw)) throw new ConfigError("SMTP_URL must be an smtp:// or smtps:// URL");
  return raw;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const host = env.HOST || "127.0.0.1";
  const port = intFrom(env, "PORT", 9991, 0, 65535);
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL (unset it to use SQLite)");
  }
  const pgSchema = env.PG_SCHEMA || undefined;
  if (pgSchema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(pgSchema)) {
    throw new ConfigError("PG_SCHEMA must be a lower-case SQL identifier");
  }
  const redisUrl = env.REDIS_URL || undefined;
  if (redisUrl && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError("REDIS_URL must be a redis:// or rediss:// URL");
  if (redisUrl && !databaseUrl) throw new ConfigError("REDIS_URL needs DATABASE_URL: several processes cannot share one SQLite file");
  const redisKeyPrefix = env.REDIS_KEY_PREFIX || "parley:";
  if (!/^[A-Za-z0-9_:.-]{1,64}$/.test(redisKeyPrefix)) throw new ConfigError("REDIS_KEY_PREFIX may hold letters, digits and _ : . - (at most 64)");
  const externalUrlRaw = env.EXTERNAL_URL || `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  let externalUrl: URL;
  try {
    externalUrl = new URL(externalUrlRaw);
  } catch {
    throw new ConfigError(`EXTERNAL_URL is not a URL: '${externalUrlRaw}'`);
  }
  const dataDir = path.resolve(env.DATA_DIR || "data");
  const pushServiceUrl = env.PUSH_SERVICE_URL || undefined;
  if (pushServiceUrl !== undefined && !/^https?:\/\/[^/]/.test(pushServiceUrl)) throw new ConfigError("PUSH_SERVICE_URL must be an http:// or https:// URL");
  if (pushServiceUrl !== undefined && (!env.PUSH_SERVICE_ORG_ID || !env.PUSH_SERVICE_ORG_KEY)) {
    throw new ConfigError("PUSH_SERVICE_URL needs PUSH_SERVICE_ORG_ID and PUSH_SERVICE_ORG_KEY");
  }
  const config: Config = {
    host,
    port,
    dataDir,
    databaseUrl,
    pgSchema,
    redisUrl,
    redisKeyPrefix,
    externalUrl: externalUrl.origin,
    fakeEmailDomain: env.FAKE_EMAIL_DOMAIN || emailDomainFor(externalUrl),
    logLevel: env.LOG_LEVEL || "info",
    devMode: boolFrom(env, "PARLEY_DEV_MODE", false),
    bodyLimitBytes: intFrom(env, "BODY_LIMIT_BYTES", 25 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    webhookBodyLimitBytes: intFrom(env, "WEBHOOK_BODY_LIMIT_BYTES", 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxFileUploadSizeMib: intFrom(env, "MAX_FILE_UPLOAD_SIZE_MIB", 100, 0, 100 * 1024),
    uploadStorage: uploadStorageFrom(env, databaseUrl),
    defaultOrgName: env.ORG_NAME || "Parley",
    defaultOwnerEmail: env.OWNER_EMAIL || "owner@parley.example",
    eventHeartbeatMs: intFrom(env, "EVENT_HEARTBEAT_SECONDS", 45, 1, 3600) * 1000,
    eventQueueIdleMs: intFrom(env, "EVENT_QUEUE_TIMEOUT_SECONDS", 600, 10, 7 * 24 * 3600) * 1000,
    shutdownTimeoutMs: intFrom(env, "SHUTDOWN_TIMEOUT_SECONDS", 30, 1, 3600) * 1000,
    invitationLinkValidityMinutes: intFrom(env, "INVITATION_LINK_VALIDITY_MINUTES", 14400, 1, 100 * 365 * 1440),
    invitesDailyMax: intFrom(env, "INVITES_DAILY_MAX", 100, 0, 1_000_000),
    smtpUrl: smtpUrlFrom(env),
    emailFrom: env.EMAIL_FROM || `noreply@${emailDomainFor(externalUrl)}`,
    pushServiceUrl: pushServiceUrl?.replace(/\/+$/, ""),
    pushServiceOrgId: env.PUSH_SERVICE_ORG_ID || undefined,
    pushServiceOrgKey: env.PUSH_SERVICE_ORG_KEY || undefined,
    pushRetryBaseMs: intFrom(env, "PUSH_RETRY_BASE_MS", 1000, 1, 60_000),
    outgoingWebhookTimeoutMs: intFrom(env, "OUTGOING_WEBHOOK_TIMEOUT_SECONDS", 10, 1, 600) * 1000,
    rateLimiting: boolFrom(env, "RATE_LIMITING", true),
    apiRateLimitPerMinute: intFrom(env, "API_RATE_LIMIT_PER_MINUTE", 200, 1, 1_000_000),
    trustedProxies: listFrom(env, "TRUSTED_PROXIES"),
    sessionAgeSeconds: intFrom(env, "SESSION_AGE_SECONDS", 14 * 24 * 3600, 60, 10 * 365 * 24 * 3600),
    externalContentAllowInternal: boolFrom(env, "EXTERNAL_CONTENT_ALLOW_INTERNAL", false),
    externalContentAllowAddresses: addressListFrom(env, "EXTERNAL_CONTENT_ALLOW_ADDRESSES"),
    externalContentDnsServers: listFrom(env, "EXTERNAL_CONTENT_DNS_SERVERS"),
    externalContentTimeoutMs: intFrom(env, "EXTERNAL_CONTENT_TIMEOUT_SECONDS", 10, 1, 300) * 1000,
    externalContentFirstByteTimeoutMs: intFrom(env, "EXTERNAL_CONTENT_FIRST_BYTE_TIMEOUT_SECONDS", 5, 1, 300) * 1000,
    externalContentIdleTimeoutMs: intFrom(env, "EXTERNAL_CONTENT_IDLE_TIMEOUT_SECONDS", 5, 1, 300) * 1000,
    externalContentFetchesPerAddress: intFrom(env, "EXTERNAL_CONTENT_FETCHES_PER_ADDRESS", 8, 1, 32),
    externalContentCacheBytes: intFrom(env, "EXTERNAL_CONTENT_CACHE_MIB", 256, 0, 1024 * 1024) * 1024 * 1024,
    inlineUrlEmbedPreview: boolFrom(env, "INLINE_URL_EMBED_PREVIEW", false),
    ...overrides,
    // Follows the data directory, including one given as an override.
    uploadsDir: overrides.uploadsDir ?? path.join(overrides.dataDir ?? dataDir, "uploads"),
  };
  return config;
}
