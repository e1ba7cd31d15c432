// The browser session cookie: reading it from a request, and the Set-Cookie
// headers that give it to the browser or take it back. HttpOnly (the page's
// scripts never see it), SameSite=Lax (other sites' forms and scripts do not
// send it), Path=/ (the file routes outside /json need it too), and Secure
// when the server is reached over HTTPS.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../config.ts";
import { csrfFailed } from "../errors.ts";

export const SESSION_COOKIE = "parley_session";

/** The value of a cookie in a request's Cookie header(s); the first one wins, as in browsers' order (most specific path first). */
export function cookieValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    return value;
  }
  return undefined;
}

/** The session token a request carries, if any. */
export function sessionToken(request: FastifyRequest): string | undefined {
  return cookieValue(request, SESSION_COOKIE);
}

/**
 * Whether the browser reached us over HTTPS: the configured external URL is
 * https://, or the request itself came over TLS (request.protocol honours
 * X-Forwarded-Proto only from TRUSTED_PROXIES).
 */
export function isSecureRequest(config: Config, request: FastifyRequest): boolean {
  return config.externalUrl.startsWith("https://") || request.protocol === "https";
}

function attributes(config: Config, request: FastifyRequest): string {
  return `Path=/; HttpOnly; SameSite=Lax${isSecureRequest(config, request) ? "; Secure" : ""}`;
}

/** Gives the browser a new session's cookie, lasting as long as the session (SESSION_AGE_SECONDS, to its expiry). */
export function setSessionCookie(config: Config, request: FastifyRequest, reply: FastifyReply, session: { token: string; expiresAt: number }): void {
  const expires = new Date(session.expiresAt * 1000).toUTCString();
  reply.header("set-cookie", `${SESSION_COOKIE}=${session.token}; Max-Age=${config.sessionAgeSeconds}; Expires=${expires}; ${attributes(config, request)}`);
}

/** Tells the browser to forget its session cookie. */
export function clearSessionCookie(config: Config, request: FastifyRequest, reply: FastifyReply): void {
  reply.header("set-cookie", `${SESSION_COOKIE}=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; ${attributes(config, request)}`);
}

/**
 * Refuses a request that signs a browser in when the browser says another
 * site made it (Sec-Fetch-Site: cross-site): "login CSRF", where a foreign
 * page posts a form that signs the visitor into the attacker's account.
 * Requests without the header (older browsers, non-browser clients) and
 * same-site ones pass; the signed-in /json calls have CSRF tokens instead.
 */
export function refuseCrossSiteSignIn(request: FastifyRequest): void {
  if (request.headers["sec-fetch-site"] === "cross-site") throw csrfFailed("Cross-site sign-in refused.");
}
