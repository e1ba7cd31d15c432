// Turning credentials into a user: HTTP Basic API keys, and the
// password/dev-mode endpoints that hand out API keys.
import { ApiError, invalidApiKey, rateLimited, realmDeactivated, userDeactivated } from "../errors.ts";
import { passwordAuthEnabled, parseRealmSettings } from "../domain/realm-settings.ts";
import { getDefaultRealm, getUserByDeliveryEmail, getUserByLoginEmail } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { keysEqual, verifyPassword } from "./credentials.ts";

export interface Authenticated {
  user: User;
  realm: Realm;
}

/** The organization a request addresses. One per server for now. */
export async function realmForRequest(services: Services): Promise<Realm> {
  const realm = await getDefaultRealm(services.storage.db);
  if (!realm) throw new ApiError(404, "NONEXISTENT_SUBDOMAIN", "Invalid subdomain");
  return realm;
}

/** Checks an API email and key (from HTTP Basic); the key is compared in constant time. */
export async function authenticateApiKey(services: Services, email: string, apiKey: string): Promise<Authenticated> {
  const realm = await realmForRequest(services);
  const user = await getUserByLoginEmail(services.storage.db, realm.id, email.trim());
  if (!user || !keysEqual(user.api_key, apiKey.trim())) throw invalidApiKey();
  if (realm.deactivated) throw realmDeactivated();
  if (!user.is_active) throw userDeactivated();
  return { user, realm };
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

/** POST /fetch_api_key: username (email) and password. */
export async function fetchApiKey(services: Services, username: string, password: string): Promise<ApiKeyGrant> {
  const realm = await realmForRequest(services);
  // Failed guesses are limited per username, so a password cannot be brute-forced.
  const limitKey = `${realm.id}:${username.trim().toLowerCase()}`;
  const wait = services.loginLimiter.secondsUntilAllowed(limitKey, services.now());
  if (wait > 0) throw rateLimited(wait);
  const user = await getUserByDeliveryEmail(services.storage.db, realm.id, username.trim());
  // Verify the password before revealing anything about the account's state;
  // verifyPassword takes as long for a missing account as for a wrong password.
  const passwordHash = user && !user.is_bot ? user.password_hash : null;
  if (!(await verifyPassword(passwordHash, password)) || !user) {
    services.loginLimiter.record(limitKey, services.now());
    throw authenticationFailed();
  }
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
