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

// Zulip's URL regex, written out as a scanner so that the work is linear in
// the text however many places a URL is tried at. The expression it follows:
//
//   (?: (?: https?://[\w.:@-]+?  |  (?<domain>(?:[\w-]+\.)+(?<tld>[\w-]+)) ) (?:/PATH)?
//     | [\w.-]+@[\w.-]+\.\w+
//     | bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34} )
//   (?=[!:;?),.'">]*(?:$|\s))
//
// (\w is Python's Unicode \w; PATH is any text without whitespace, quotes or
// parentheses, plus balanced parentheses up to 7 deep), taking the first match
// in the order a backtracking engine would. A bare domain counts only with a
// known TLD; otherwise only the e-mail and bitcoin forms are tried. The text
// must also pass Zulip's quick test first (mayStartUrl).
// As a regex, the lookahead re-scans trailing punctuation from every end it
// tries and a failed path is re-scanned from every later start: quadratic.

/** Characters after which a bare URL may start (or the start of the text). */
export const URL_BOUNDARY_RE = /[\s'"(,:<]/u;

export interface UrlMatch {
  url: string;
  end: number;
}

const WORD_AT_RE = /[\p{L}\p{N}_]/uy;

/** Length (1 or 2 code units) of the Unicode word character at i, or 0. */
function wordLength(src: string, i: number): number {
  const c = src.charCodeAt(i);
  if (c < 0x80) return isAsciiWord(c) ? 1 : 0;
  WORD_AT_RE.lastIndex = i;
  return WORD_AT_RE.test(src) ? WORD_AT_RE.lastIndex - i : 0;
}

/** JavaScript's \s. */
function isSpace(c: number): boolean {
  return (
    c === 0x20 || (c >= 0x09 && c <= 0x0d) ||
    (c >= 0xa0 && (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 ||
      c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff))
  );
}

/** Punctuation a URL may be followed by before whitespace: ! : ; ? ) , . ' " > */
function isTrailingPunct(c: number): boolean {
  return c === 0x21 || c === 0x22 || c === 0x27 || c === 0x29 || c === 0x2c || c === 0x2e || c === 0x3a || c === 0x3b || c === 0x3e || c === 0x3f;
}

const BITCOIN_CHAR = /[a-km-zA-HJ-NP-Z1-9]/;
const UNKNOWN = -2;
const FAILED = -1;

/**
 * Finds URLs in one text. Remembers what it learnt (where the current run of
 * non-space text ends, where paths and parenthesised groups end), so trying
 * every position of a text costs time linear in its length.
 */
export class UrlScanner {
  // No whitespace in [chunkFrom, chunkEnd); chunkEnd is whitespace or the end.
  private chunkFrom = -1;
  private chunkEnd = -1;
  // The trailing punctuation of that chunk starts here: a URL may end at any
  // position in [chunkPunct, chunkEnd] and nowhere else.
  private chunkPunct = -1;
  private pathWalks = 0;
  private pathEnds: Int32Array | null = null;
  private groupEnds: Map<number, number> | null = null;

  constructor(readonly src: string) {}

  /** A URL starting exactly at pos (the caller checks the character before it). */
  matchAt(pos: number): UrlMatch | null {
    const src = this.src;
    if (pos >= src.length) return null;
    if (!mayStartUrl(src, pos)) return null;
    this.locateChunk(pos);
    const end =
      this.schemeUrl(pos) ??
      this.domainUrl(pos) ??
      this.emailUrl(pos) ??
      this.bitcoinUrl(pos);
    return end === null ? null : { url: src.slice(pos, end), end };
  }

  private locateChunk(pos: number): void {
    if (pos >= this.chunkFrom && pos <= this.chunkEnd) return;
    const src = this.src;
    let i = pos;
    while (i < src.length && !isSpace(src.charCodeAt(i))) {
      if (i === this.chunkFrom) {
        this.chunkFrom = pos; // same chunk, reached from further back
        return;
      }
      i++;
    }
    let p = i;
    while (p > 0 && isTrailingPunct(src.charCodeAt(p - 1))) p--;
    this.chunkFrom = pos;
    this.chunkEnd = i;
    this.chunkPunct = p;
  }

  /** Whether a URL may end at i (the lookahead after the expression). */
  private canEndAt(i: number): boolean {
    return i >= this.chunkPunct && i <= this.chunkEnd;
  }

  // https?://[\w.:@-]+? (?:/PATH)?
  private schemeUrl(pos: number): number | null {
    const src = this.src;
    if (!src.startsWith("http", pos)) return null;
    let i = pos + 4;
    if (src.charCodeAt(i) === 0x73) i++;
    if (!src.startsWith("://", i)) return null;
    i += 3;
    for (;;) {
      const n = hostCharLength(src, i);
      if (n === 0) return null;
      i += n;
      // The host ends at i (lazily: the first i that works wins).
      if (src.charCodeAt(i) === 0x2f) {
        const end = this.pathEnd(i + 1);
        if (end !== null) return end;
      }
      if (this.canEndAt(i)) return i;
    }
  }

  // (?:[\w-]+\.)+ (?<tld>[\w-]+) (?:/PATH)? with a known TLD
  private domainUrl(pos: number): number | null {
    const src = this.src;
    const dots: number[] = [];
    let i = pos;
    let lastLabelEnd = -1;
    for (;;) {
      const labelStart = i;
      for (let n = labelLength(src, i); n > 0; n = labelLength(src, i)) i += n;
      if (i === labelStart) break;
      lastLabelEnd = i;
      if (src.charCodeAt(i) !== 0x2e) break;
      dots.push(i);
      i++;
    }
    if (dots.length === 0) return null;
    // Greedy: as many labels as possible first; the TLD is the whole label
    // after the last dot taken (a shorter one is followed by a word character).
    for (let k = dots.length - 1; k >= 0; k--) {
      const tldStart = dots[k]! + 1;
      const tldEnd = k + 1 < dots.length ? dots[k + 1]! : lastLabelEnd > tldStart ? lastLabelEnd : tldStart;
      if (tldEnd === tldStart) continue; // "a.b." has no label after its last dot
      let end: number | null = null;
      if (src.charCodeAt(tldEnd) === 0x2f) end = this.pathEnd(tldEnd + 1);
      if (end === null && this.canEndAt(tldEnd)) end = tldEnd;
      if (end === null) continue;
      // The expression matched as a domain: with an unknown TLD only the
      // e-mail and bitcoin forms may still apply.
      return TLDS.has(src.slice(tldStart, tldEnd)) ? end : null;
    }
    return null;
  }

  // [\w.-]+@[\w.-]+\.\w+
  private emailUrl(pos: number): number | null {
    const src = this.src;
    let i = pos;
    for (let n = localLength(src, i); n > 0; n = localLength(src, i)) i += n;
    if (i === pos || src.charCodeAt(i) !== 0x40) return null;
    const domainStart = i + 1;
    let domainEnd = domainStart;
    for (let n = localLength(src, domainEnd); n > 0; n = localLength(src, domainEnd)) domainEnd += n;
    // Greedy [\w.-]+ before the last "\.": try the dots from the right.
    for (let dot = domainEnd - 1; dot > domainStart; dot--) {
      if (src.charCodeAt(dot) !== 0x2e) continue;
      let end = dot + 1;
      for (let n = wordLength(src, end); n > 0; n = wordLength(src, end)) end += n;
      if (end > dot + 1 && this.canEndAt(end)) return end;
    }
    return null;
  }

  // bitcoin:[13][a-km-zA-HJ-NP-Z1-9]{25,34}
  private bitcoinUrl(pos: number): number | null {
    const src = this.src;
    if (!src.startsWith("bitcoin:", pos)) return null;
    const first = src.charCodeAt(pos + 8);
    if (first !== 0x31 && first !== 0x33) return null;
    let i = pos + 9;
    while (i - pos - 9 < 35 && i < src.length && BITCOIN_CHAR.test(src[i]!)) i++;
    const n = i - pos - 9;
    return n >= 25 && n <= 34 && this.canEndAt(i) ? i : null;
  }

  /**
   * PATH starting at `start` (after the "/"): the shortest path after which
   * the URL may end, or null. A path runs over anything but whitespace,
   * quotes and parentheses, and over balanced parenthesised groups; it may
   * end only outside a group.
   */
  private pathEnd(start: number): number | null {
    const src = this.src;
    // The first walk is not recorded: a text usually has one path, and a
    // later walk over the same positions is recorded for the ones after it.
    const ends = this.pathWalks++ === 0 ? null : (this.pathEnds ??= new Int32Array(src.length + 1).fill(UNKNOWN));
    const walked: number[] = [];
    let i = start;
    let result: number;
    for (;;) {
      const known = ends ? ends[i]! : UNKNOWN;
      if (known !== UNKNOWN) {
        result = known;
        break;
      }
      if (this.canEndAt(i)) {
        result = i;
        break;
      }
      if (ends) walked.push(i);
      const c = src.charCodeAt(i);
      if (i >= src.length || isSpace(c) || c === 0x22 || c === 0x29) {
        result = FAILED;
        break;
      }
      if (c === 0x28) {
        const close = this.groupEnd(i);
        if (close === FAILED) {
          result = FAILED;
          break;
        }
        i = close + 1;
      } else {
        i++;
      }
    }
    // Every position walked over continues the same walk: same answer.
    if (ends) for (const w of walked) ends[w] = result;
    return result === FAILED ? null : result;
  }

  /** The ")" closing the group opened at `open`, or FAILED (unbalanced, too deep, or space/quote inside). */
  private groupEnd(open: number): number {
    const memo = (this.groupEnds ??= new Map());
    const known = memo.get(open);
    if (known !== undefined) return known;
    const src = this.src;
    let depth = 1;
    let result = FAILED;
    for (let i = open + 1; i < src.length; i++) {
      const c = src.charCodeAt(i);
      if (isSpace(c) || c === 0x22) break;
      if (c === 0x28) {
        if (++depth > 7) break;
      } else if (c === 0x29 && --depth === 0) {
        result = i;
        break;
      }
    }
    memo.set(open, result);
    return result;
  }
}

/**
 * Zulip's quick test before the full expression, which also decides: a URL
 * must start with a scheme, "bitcoin:", an e-mail's "name@", or "label." and
 * a word character ("a.-b.com" is not a URL, "a.b-c.com" is).
 */
export function mayStartUrl(src: string, pos: number): boolean {
  let c = src.charCodeAt(pos);
  if (c === 0x68 && (src.startsWith("http://", pos) || src.startsWith("https://", pos))) return true;
  if (c === 0x62 && src.startsWith("bitcoin:", pos)) return true;
  // Most words are plain ASCII: decide them in one pass over a lookup table.
  let i = pos;
  while (c < 0x80 && ASCII_URL_CLASS[c]! & (WORD | HYPHEN)) c = src.charCodeAt(++i);
  if (c >= 0x80) return mayStartUrlSlow(src, pos);
  if (c === 0x2e && i > pos) {
    const next = src.charCodeAt(i + 1);
    if (next < 0x80 ? ASCII_URL_CLASS[next]! & WORD : wordLength(src, i + 1) > 0) return true;
  }
  while (c < 0x80 && ASCII_URL_CLASS[c]!) c = src.charCodeAt(++i);
  if (c >= 0x80) return mayStartUrlSlow(src, pos);
  return i > pos && c === 0x40;
}

const WORD = 1;
const HYPHEN = 2;
const DOT = 4;
const ASCII_URL_CLASS = new Uint8Array(0x80);
for (let c = 0; c < 0x80; c++) {
  if ((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f) ASCII_URL_CLASS[c] = WORD;
}
ASCII_URL_CLASS[0x2d] = HYPHEN;
ASCII_URL_CLASS[0x2e] = DOT;

/** mayStartUrl for text with non-ASCII characters (Unicode word characters). */
function mayStartUrlSlow(src: string, pos: number): boolean {
  let i = pos;
  for (let n = labelLength(src, i); n > 0; n = labelLength(src, i)) i += n;
  if (i > pos && src.charCodeAt(i) === 0x2e && wordLength(src, i + 1) > 0) return true;
  for (let n = localLength(src, i); n > 0; n = localLength(src, i)) i += n;
  return i > pos && src.charCodeAt(i) === 0x40;
}

function isAsciiWord(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || c === 0x5f;
}

function hostCharLength(src: string, i: number): number {
  const c = src.charCodeAt(i);
  return c === 0x2e || c === 0x3a || c === 0x40 || c === 0x2d ? 1 : wordLength(src, i);
}

function labelLength(src: string, i: number): number {
  return src.charCodeAt(i) === 0x2d ? 1 : wordLength(src, i);
}

function localLength(src: string, i: number): number {
  const c = src.charCodeAt(i);
  return c === 0x2e || c === 0x2d ? 1 : wordLength(src, i);
}

/** Match a URL at `pos` of `src` (the caller checks the preceding character). */
export function matchUrlAt(src: string, pos: number): UrlMatch | null {
  return new UrlScanner(src).matchAt(pos);
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

// The raw URLs of Zulip's topic_links (markdown/linkifiers.ts adds the
// linkifiers' links): the topic is split at spaces and !;),'" and each piece
// searched on its own. URLs without a scheme get https://. `index` is where
// the piece starts, which is what Zulip orders and compares them by.
const TOPIC_SPLIT_RE = /[ !;),'"]/g;

export function topicUrlMatches(topic: string): { text: string; url: string; index: number }[] {
  const out: { text: string; url: string; index: number }[] = [];
  let pos = 0;
  while (pos < topic.length) {
    TOPIC_SPLIT_RE.lastIndex = pos;
    const split = TOPIC_SPLIT_RE.exec(topic);
    const end = split ? split.index : topic.length;
    const scanner = new UrlScanner(topic.slice(pos, end));
    for (let i = 0; i < scanner.src.length; i++) {
      if (i > 0 && !URL_BOUNDARY_RE.test(scanner.src[i - 1]!)) continue;
      const m = scanner.matchAt(i);
      if (m) {
        const text = m.url;
        const url = SCHEME_RE.test(text) ? text : "https://" + text;
        out.push({ text, url, index: pos });
        break;
      }
    }
    pos = end + 1;
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
