// Browser sessions (issue 20): signing in with a password gives the browser a
// random token in an HttpOnly cookie; the database keeps only its SHA-256,
// with the user, a CSRF token and when the session ends. Every server process
// reads the same rows, so sessions survive restarts and are shared.
import crypto from "node:crypto";
import type { Kysely } from "kysely";
import { realmDeactivated, sessionRequired, userDeactivated } from "../errors.ts";
import { cachedUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Database } from "../storage/schema.ts";
import { preparedQuery } from "../storage/compiled.ts";
import { realmForRequest, type Authenticated } from "./auth.ts";
import { keysEqual } from "./credentials.ts";

/** A signed-in browser's session, as the request that presented it sees it. */
export interface BrowserSession {
  /** SHA-256 (hex) of the cookie's token: the row's key. */
  tokenHash: string;
  csrfToken: string;
  expiresAt: number;
}

export interface SessionAuthenticated extends Authenticated {
  session: BrowserSession;
}

/** A new session: the token goes in the cookie (and nowhere else). */
export interface NewSession extends BrowserSession {
  token: string;
}

/** 32 random bytes, base64url: cookie tokens, CSRF tokens and password reset tokens. */
export function randomToken(): string {
  return crypto.randomBytes(32).toString("base64url");
}

/** How tokens are stored: SHA-256, hex. A token is 256 random bits, so no salt or slow hash is needed. */
export function hashToken(token: string): string {
  return crypto.createHash("sha256").update(token, "utf8").digest("hex");
}

/** Tokens as randomToken makes them; anything else cannot name a session and is not looked up. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** Signs `userId` in: stores a new session (and drops expired ones, anyone's). */
export async function createSession(services: Services, userId: number, db: Kysely<Database> = services.storage.db): Promise<NewSession> {
  const now = services.now();
  const token = randomToken();
  const session: NewSession = { token, tokenHash: hashToken(token), csrfToken: randomToken(), expiresAt: now + services.config.sessionAgeSeconds };
  await db.deleteFrom("sessions").where("expires_at", "<=", now).execute();
  await db
    .insertInto("sessions")
    .values({ token_hash: session.tokenHash, user_id: userId, csrf_token: session.csrfToken, created_at: now, expires_at: session.expiresAt })
    .execute();
  return session;
}

/**
 * The user a session cookie's token signs in, checked like an API key: the
 * session must exist and not have expired, the account must be active and
 * the organization not deactivated. Otherwise 401.
 */
// Every /json request's first statement: compiled once (storage/compiled.ts).
const liveSession = preparedQuery((db, a: { tokenHash: string; now: number }) =>
  db.selectFrom("sessions").select(["token_hash", "user_id", "csrf_token", "expires_at"]).where("token_hash", "=", a.tokenHash).where("expires_at", ">", a.now),
);

export async function authenticateSession(services: Services, token: string | undefined): Promise<SessionAuthenticated> {
  if (token === undefined || !TOKEN_SHAPE.test(token)) throw sessionRequired();
  const db = services.storage.db;
  const row = await liveSession.executeTakeFirst(db, { tokenHash: hashToken(token), now: services.now() });
  if (!row) throw sessionRequired();
  const realm = await realmForRequest(services);
  const user = await cachedUserById(services.storage, realm.id, row.user_id);
  if (!user) throw sessionRequired();
  if (realm.deactivated) throw realmDeactivated();
  if (!user.is_active) throw userDeactivated();
  return { user, realm, session: { tokenHash: row.token_hash, csrfToken: row.csrf_token, expiresAt: row.expires_at } };
}

/** Whether the X-CSRFToken a request sent is its session's (compared in constant time). */
export function csrfTokenMatches(session: BrowserSession, sent: string): boolean {
  return keysEqual(session.csrfToken, sent);
}

/** Ends one session (logout). */
export async function endSession(services: Services, tokenHash: string): Promise<void> {
  await services.storage.db.deleteFrom("sessions").where("token_hash", "=", tokenHash).execute();
}

/**
 * Ends every session of a user — but the one given, if any (the session that
 * changed the password stays signed in, as Zulip's update_session_auth_hash
 * keeps it). Runs inside the caller's transaction.
 */
export async function endUserSessions(db: Kysely<Database>, userIds: number | readonly number[], except?: string): Promise<void> {
  const ids = typeof userIds === "number" ? [userIds] : [...userIds];
  if (ids.length === 0) return;
  let query = db.deleteFrom("sessions").where("user_id", "in", ids);
  if (except !== undefined) query = query.where("token_hash", "!=", except);
  await query.execute();
}

/**
 * What a password change does beyond storing the hash: every session of the
 * user ends but the one that made the change (if any), and every password
 * reset link already sent stops working (Django's reset tokens die with the
 * password they were made for). Runs inside the caller's transaction.
 */
export async function afterPasswordChange(db: Kysely<Database>, userId: number, keepSession?: string): Promise<void> {
  await endUserSessions(db, userId, keepSession);
  await db.deleteFrom("password_reset_tokens").where("user_id", "=", userId).execute();
}
