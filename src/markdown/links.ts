// URL handling shared by Markdown links, bare-URL auto-linking and topic links:
// Zulip's URL detection (scheme URLs, bare domains with a known TLD, e-mail
// addresses), its scheme allow-list, and relative rewriting of realm links.

import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

// Zulip: `http`, `https`, `ftp`, `file` plus the HTML spec's safelisted schemes.
const ALLOWED_SCHEMES = new Set([
  "http", "https", "ftp", "file", "bitcoin", "geo", "im", "irc", "ircs", "magnet", "mailto",
  "matrix", "mms", "news", "nntp", "openpgp4fpr", "sip", "sms", "smsto", "ssh", "tel", "urn",
  "webcal", "wtai", "xmpp",
]);

// File extensions that are also TLDs but far more often file names.
const TLD_FALSE_POSITIVES = new Set(["java", "md", "mov", "py", "zip"]);
const TLDS: ReadonlySet<string> = new Set(
  (require("tlds") as string[]).filter((tld) => !TLD_FALSE_POSITIVES.has(tld)),
);

const W = String.raw`\p{L}\p{N}_`; // Python's Unicode \w
// Up to six levels of balanced parentheses inside a URL path.
const PAREN_GROUP = String.raw`[^\s()"]*?(?:\(%s\)[^\s()"]*?)*`;
let nested = PAREN_GROUP;
for (let i = 0; i < 6; i++) nested = nested.replace("%s", PAREN_GROUP);
nested = nested.replace("%s", String.raw`[^\s()"]*`);

const URL_BODY =
  String.raw`(?:(?:https?://[${W}.:@-]+?|(?<domain>(?:[${W}-]+\.)+(?<tld>[${W}-]+)))` +
  String.raw`(?:/${nested})?` +
  String.raw`|[${W}.-]+@[${W}.-]+\.[${W}]+` +
  String.raw`|bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34})`;
// A URL must be followed by optional punctuation and then whitespace or the end.
const URL_END = String.raw`(?=[!:;?),.'">]*(?:$|\s))`;

/** Sticky: a URL starting exactly at lastIndex. */
const URL_AT_RE = new RegExp(`(?<url>${URL_BODY})${URL_END}`, "uy");
/** Cheap test before the full expression: could a URL start here? */
const URL_HINT_RE = new RegExp(String.raw`https?://|bitcoin:|[${W}.-]+@|[${W}-]+\.[${W}]`, "uy");
/** Characters after which a bare URL may start (or the start of the text). */
export const URL_BOUNDARY_RE = /[\s'"(,:<]/u;

export interface UrlMatch {
  url: string;
  end: number;
}

/** Match a URL at `pos` of `src` (the caller checks the preceding character). */
export function matchUrlAt(src: string, pos: number): UrlMatch | null {
  // Fast path: a URL needs ".", "@" or ":" before the next whitespace.
  let candidate = false;
  for (let i = pos; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x2e || c === 0x40 || c === 0x3a) {
      candidate = true;
      break;
    }
    if (c <= 0x20 || c === 0xa0 || c === 0x2028 || c === 0x3000) break;
  }
  if (!candidate) return null;
  URL_HINT_RE.lastIndex = pos;
  if (!URL_HINT_RE.test(src)) return null;
  URL_AT_RE.lastIndex = pos;
  const m = URL_AT_RE.exec(src);
  if (!m) return null;
  const tld = m.groups?.["tld"];
  if (m.groups?.["domain"] !== undefined && (tld === undefined || !TLDS.has(tld))) {
    // The bare-domain branch needs a real TLD; a scheme or e-mail match may still apply.
    return matchSchemeOrEmail(src, pos);
  }
  return { url: m[0], end: pos + m[0].length };
}

const SCHEME_OR_EMAIL_RE = new RegExp(
  String.raw`(?:https?://[${W}.:@-]+?(?:/${nested})?|[${W}.-]+@[${W}.-]+\.[${W}]+|bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34})${URL_END}`,
  "uy",
);
function matchSchemeOrEmail(src: string, pos: number): UrlMatch | null {
  SCHEME_OR_EMAIL_RE.lastIndex = pos;
  const m = SCHEME_OR_EMAIL_RE.exec(src);
  return m ? { url: m[0], end: pos + m[0].length } : null;
}

const SCHEME_RE = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;

/**
 * Zulip's sanitize_url: returns the href to use, or null when the URL must
 * not become a link (unknown scheme such as `javascript:`).
 */
export function sanitizeUrl(raw: string): string | null {
  const url = raw.replace(/[\t\r\n]/g, "").trim().replace(/ /g, "%20");
  if (url === "") return null;
  const scheme = SCHEME_RE.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    if (url.startsWith("/") && !url.startsWith("//")) return url; // domain-relative
    if (url.startsWith("#")) return url; // fragment
    if (url.startsWith("//")) return sanitizeUrl("http:" + url);
    const path = url.split(/[?#]/, 1)[0]!;
    if (path.includes("@")) return "mailto:" + url;
    return "http://" + url;
  }
  if (!ALLOWED_SCHEMES.has(scheme)) return null;
  return url;
}

/** Links to the realm itself are made relative (`#narrow/…`, `user_uploads/…`). */
export function rewriteLocalLink(href: string, realmUrl: string): string {
  if (!realmUrl) return href;
  const prefix = realmUrl + "/";
  if (href.startsWith(prefix + "#") || href.startsWith(prefix + "user_uploads/")) {
    return href.slice(prefix.length);
  }
  return href;
}

// Zulip's topic_links: raw URLs in a topic name (realm linkifiers are not
// supported here). URLs without a scheme get https://.
const TOPIC_SPLIT_RE = /[ !;),'"]/;

export function topicLinks(topic: string): { text: string; url: string }[] {
  const out: { text: string; url: string }[] = [];
  let pos = 0;
  while (pos < topic.length) {
    const rest = topic.slice(pos);
    const split = TOPIC_SPLIT_RE.exec(rest);
    const end = split ? split.index : rest.length;
    const segment = rest.slice(0, end);
    for (let i = 0; i < segment.length; i++) {
      if (i > 0 && !URL_BOUNDARY_RE.test(segment[i - 1]!)) continue;
      const m = matchUrlAt(segment, i);
      if (m) {
        const text = m.url;
        const url = SCHEME_RE.test(text) ? text : "https://" + text;
        out.push({ text, url });
        break;
      }
    }
    pos += end + 1;
  }
  return out;
}

/** The URL of an inline image preview: Zulip's /thumbnail endpoint form. */
export function thumbnailUrl(imageUrl: string, size: "thumbnail" | "full"): string {
  const url = imageUrl.replace(/^\/+/, "");
  return `/thumbnail?url=${quotePlus(url)}&size=${size}`;
}

// Python's urllib.parse.quote_plus.
function quotePlus(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/%20/g, "+");
}

// Python's urllib.parse.quote(s, safe=""), then "." -> "%2E" and "%" -> "."
// (Zulip's hash_util_encode, used in #narrow URLs).
export function hashUtilEncode(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase())
    .replace(/\./g, "%2E")
    .replace(/%/g, ".");
}

export function encodeChannel(id: number, name: string): string {
  return `${id}-${hashUtilEncode(name.replace(/ /g, "-"))}`;
}
