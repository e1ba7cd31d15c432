// Turning credentials into a user: HTTP Basic API keys, and the
// password/dev-mode endpoints that hand out API keys.
import crypto from "node:crypto";
import { sql } from "kysely";
import { ApiError, incomingWebhookBotRefused, invalidApiKey, rateLimited, realmDeactivated, userDeactivated, webhookBotSessionRefused } from "../errors.ts";
import { BotType } from "../domain/roles.ts";
import { passwordAuthEnabled, parseRealmSettings } from "../domain/realm-settings.ts";
import { cachedDefaultRealm, cachedUserByLoginEmail, getUserByDeliveryEmail } from "../queries/users.ts";
import { LOGIN_FAILURES_RULE } from "../rate-limit.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { keysEqual, verifyPassword } from "./credentials.ts";

export interface Authenticated {
  user: User;
  realm: Realm;
}

/** The organization a request addresses. One per server for now. */
export async function realmForRequest(services: Services): Promise<Realm> {
  const realm = await cachedDefaultRealm(services.storage);
  if (!realm) throw new ApiError(404, "NONEXISTENT_SUBDOMAIN", "Invalid subdomain");
  return realm;
}

/** Checks an API email and key (from HTTP Basic); the key is compared in constant time. */
export async function authenticateApiKey(services: Services, email: string, apiKey: string): Promise<Authenticated> {
  const realm = await realmForRequest(services);
  const user = await cachedUserByLoginEmail(services.storage, realm.id, email);
  if (!user || !keysEqual(user.api_key, apiKey.trim())) throw invalidApiKey();
  if (realm.deactivated) throw realmDeactivated();
  if (!user.is_active) throw userDeactivated();
  return { user, realm };
}

/**
 * Where a set of credentials may be used. An incoming-webhook bot's API key
 * is pasted into third-party services' webhook URLs, so, as in Zulip
 * (validate_api_key's allow_webhook_access, the allow_incoming_webhooks view
 * flag), it reaches only the endpoints that say they accept it: the webhook
 * endpoints and sending a message. Every other endpoint (reading messages,
 * users, event queues, settings, files) refuses it.
 */
export function checkApiKeyScope(user: Pick<User, "bot_type">, allowIncomingWebhookBots: boolean): void {
  if (user.bot_type === BotType.INCOMING_WEBHOOK && !allowIncomingWebhookBots) throw incomingWebhookBotRefused();
}

/** Zulip's authenticated_json_view: a browser session is never an incoming-webhook bot's to use, on any endpoint. */
export function checkSessionScope(user: Pick<User, "bot_type">): void {
  if (user.bot_type === BotType.INCOMING_WEBHOOK) throw webhookBotSessionRefused();
}

function authenticationFailed(): ApiError {
  return new ApiError(401, "AUTHENTICATION_FAILED", "Your username or password is incorrect");
}

export interface ApiKeyGrant {
  api_key: string;
  email: string;
  user_id: number;
}

function grantFor(user: User): ApiKeyGrant {
  return { api_key: user.api_key, email: user.delivery_email, user_id: user.id };
}

interface CountedLogin {
  key: string;
  windowStart: number;
}

/**
 * Counts a password login for `username` before its password is checked, in
 * one statement that both dialects run atomically (an upsert that starts a
 * new window when the old one has passed), so parallel guesses cannot all
 * slip under the limit. Returns the window the attempt was counted in, or the
 * seconds to wait when the username is locked.
 */
async function countLoginAttempt(services: Services, realmId: number, username: string): Promise<CountedLogin | { retryAfter: number }> {
  const { windowSeconds, maxRequests } = LOGIN_FAILURES_RULE;
  // Hashed: a bounded key whatever was typed.
  const key = crypto.createHash("sha256").update(`${realmId}:${username.trim().toLowerCase()}`).digest("hex");
  const now = services.now();
  const expired = now - windowSeconds;
  const row = await services.storage.db.transaction().execute(async (trx) => {
    // Windows that have passed mean nothing: keep the table as small as the recent failures.
    await trx.deleteFrom("login_failures").where("window_start", "<=", expired).execute();
    return trx
      .insertInto("login_failures")
      .values({ key, window_start: now, attempts: 1 })
      .onConflict((oc) =>
        oc.column("key").doUpdateSet({
          attempts: sql<number>`CASE WHEN login_failures.window_start <= ${expired} THEN 1 ELSE login_failures.attempts + 1 END`,
          window_start: sql<number>`CASE WHEN login_failures.window_start <= ${expired} THEN ${now} ELSE login_failures.window_start END`,
        }),
      )
      .returning(["key", "window_start", "attempts"])
      .executeTakeFirstOrThrow();
  });
  if (row.attempts > maxRequests) return { retryAfter: row.window_start + windowSeconds - now };
  return { key, windowStart: row.window_start };
}

/** A login that succeeded is not a failure: takes back the attempt counted in `windowStart`. */
async function forgiveLoginAttempt(services: Services, { key, windowStart }: CountedLogin): Promise<void> {
  await services.storage.db
    .updateTable("login_failures")
    .set({ attempts: sql<number>`attempts - 1` })
    .where("key", "=", key)
    .where("window_start", "=", windowStart)
    .where("attempts", ">", 0)
    .execute();
}

/** POST /fetch_api_key: username (email) and password. */
export async function fetchApiKey(services: Services, username: string, password: string): Promise<ApiKeyGrant> {
  const realm = await realmForRequest(services);
  // Guesses are limited per username, so a password cannot be brute-forced.
  const counted = services.config.rateLimiting ? await countLoginAttempt(services, realm.id, username) : undefined;
  if (counted && "retryAfter" in counted) throw rateLimited(counted.retryAfter);
  const user = await getUserByDeliveryEmail(services.storage.db, realm.id, username.trim());
  // Verify the password before revealing anything about the account's state;
  // verifyPassword takes as long for a missing account as for a wrong password.
  const passwordHash = user && !user.is_bot ? user.password_hash : null;
  if (!(await verifyPassword(passwordHash, password)) || !user) throw authenticationFailed();
  if (counted) await forgiveLoginAttempt(services, counted);
  if (!user.is_active) throw userDeactivated();
  if (realm.deactivated) throw realmDeactivated();
  if (!passwordAuthEnabled(parseRealmSettings(realm.settings))) {
    throw new ApiError(401, "PASSWORD_AUTH_DISABLED", "Password authentication is disabled in this organization");
  }
  return grantFor(user);
}

/** POST /dev_fetch_api_key: any user's key by email alone. Routes allow it only in development mode. */
export async function devFetchApiKey(services: Services, username: string): Promise<ApiKeyGrant> {
  const realm = await realmForRequest(services);
  if (realm.deactivated) throw realmDeactivated();
  const user = await getUserByDeliveryEmail(services.storage.db, realm.id, username.trim());
  if (!user || user.is_system_bot) throw authenticationFailed();
  if (!user.is_active) throw userDeactivated();
  return grantFor(user);
}
