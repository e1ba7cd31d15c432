// The security headers every reply carries (Zulip's nginx sends the same set
// on everything it serves: zulip-include-common/headers), and the web
// client's Content-Security-Policy. A route that sets one of them itself
// (the uploads' and the image proxy's locked-down policies, the password
// reset pages' no-referrer) keeps its own.
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.ts";
import { isSecureRequest } from "./session-cookie.ts";

/**
 * HSTS for a year, Zulip's max-age. Without includeSubDomains (Zulip adds
 * it): Parley cannot know what else is served under its host name.
 */
export const STRICT_TRANSPORT_SECURITY = "max-age=31536000";

/**
 * The policy of replies that are not pages: JSON, files' error pages. Such
 * a reply opened as a document loads nothing, runs nothing, and cannot be
 * framed.
 */
export const LOCKED_DOWN_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const DEFAULTS: Readonly<Record<string, string>> = {
  "content-security-policy": LOCKED_DOWN_POLICY,
  // No other site may frame any of it (clickjacking); CSP's frame-ancestors says the same to newer browsers.
  "x-frame-options": "DENY",
  // Files are what their Content-Type says, never sniffed into HTML or script.
  "x-content-type-options": "nosniff",
  // Other sites see only the origin in Referer, never a narrow's URL.
  "referrer-policy": "strict-origin-when-cross-origin",
  // A window this server's pages open, or that opens them, gets no handle on them.
  "cross-origin-opener-policy": "same-origin",
};

/**
 * The web client's policy (GET / and /assets/…): its own scripts only — the
 * page has no inline script; the signed-in session written into it is a
 * non-executable `<script type="application/json">` — its own stylesheets,
 * fonts (KaTeX's are bundled) and connections (the API and the event
 * long-poll are same-origin). Two allowances, both for the server's rendered
 * message HTML: `style` attributes (KaTeX sets heights and offsets in them;
 * link previews set their image as a background), and images from the
 * organization's own URL (avatar URLs are absolute, at EXTERNAL_URL, which a
 * browser may reach under another name) and from YouTube's thumbnail host
 * (video previews link the thumbnail there, as Zulip renders them). Every
 * other image on another site comes through the image proxy, same-origin.
 */
export function webClientPolicy(config: Pick<Config, "externalUrl">): string {
  const images = ["'self'"];
  // CSP source expressions cannot name an IPv6 literal; a browser at one is at 'self' anyway.
  if (!new URL(config.externalUrl).hostname.startsWith("[")) images.push(config.externalUrl);
  images.push("https://i.ytimg.com");
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "style-src-attr 'unsafe-inline'",
    `img-src ${images.join(" ")}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** Adds the headers to every reply (API, files, pages, errors), leaving those a route set alone. */
export function addSecurityHeaders(app: FastifyInstance, config: Config): void {
  app.addHook("onSend", async (request, reply, payload) => {
    for (const [name, value] of Object.entries(DEFAULTS)) {
      if (!reply.hasHeader(name)) reply.header(name, value);
    }
    // Browsers ignore it over plain HTTP; sent when the browser reached us over HTTPS (the session cookie's Secure rule).
    if (isSecureRequest(config, request)) reply.header("strict-transport-security", STRICT_TRANSPORT_SECURITY);
    return payload;
  });
}
