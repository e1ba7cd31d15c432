// markdown-it rules that turn CommonMark into Zulip-flavoured Markdown.
//
// Block level: Zulip fences (``` / ~~~ with quote, spoiler, math and code),
// paragraphs that keep trailing spaces, "empty" block quotes that stay text.
// Inline: Zulip's own patterns (mentions, channel links, TeX, <time:>, emoji,
// ~~del~~, bare-URL links, code spans that keep their spaces, links whose text
// is literal), `*`-only emphasis, every newline a <br>.
// Core: mentions in quotes become silent; link/upload/image flags and inline
// image previews are computed after inline parsing.
//
// Per-render data travels in `env.zulip` (a ZulipEnv); the MarkdownIt instance
// itself is shared and never mutated after setup.

import { createRequire } from "node:module";
import type KaTeX from "katex";
import type { MarkdownIt, StateBlock, StateCore, StateInline, Token } from "markdown-it";
import { renderCodeBlock } from "./code.ts";
import {
  EMOTICONS,
  POSSIBLE_EMOJI_RE,
  TEXT_PRESENTATION_RE,
  ZULIP_EXTRA_EMOJI_URL,
  codeToName,
  emojiCodeOf,
  nameToCode,
} from "./emoji.ts";
import {
  URL_BOUNDARY_RE,
  encodeChannel,
  hashUtilEncode,
  mayStartUrl,
  rewriteLocalLink,
  sanitizeUrl,
  thumbnailUrl,
  UrlScanner,
} from "./links.ts";
import { linkifierMatches, type CompiledLinkifiers, type LinkifierMatch } from "./linkifiers.ts";
import { parseTime } from "./time.ts";
import type { MarkdownContext } from "./types.ts";

export interface ZulipEnv {
  ctx: MarkdownContext;
  realmUrl: string;
  realmHost: string;
  inQuote: boolean;
  mentionedUserIds: Set<number>;
  mentionedGroupIds: Set<number>;
  channelWildcard: boolean;
  topicWildcard: boolean;
  hasLink: boolean;
  hasImage: boolean;
  uploadPathIds: string[];
  /** > 0 while tokenizing the text of a [link](url). */
  linkDepth: number;
  /** Source line of an ordered list item -> the number it was written with. */
  orderedListStarts: Map<number, number>;
  /** What the inline rules learnt about the text being parsed (see scansOf). */
  scans: InlineScans | null;
  /** The organization's linkifiers; null when it has none. */
  linkifiers: CompiledLinkifiers | null;
  /** Links on other sites that may get a link preview (ctx.urlEmbedPreview), in order. */
  linksForPreview: string[];
}

function zenv(env: unknown): ZulipEnv | undefined {
  return (env as { zulip?: ZulipEnv } | undefined)?.zulip;
}

// Inside [link text] only code spans, mentions, channel links, TeX and times render.
function inLinkText(state: StateInline): boolean {
  return (zenv(state.env)?.linkDepth ?? 0) > 0;
}

// ---------------------------------------------------------------- escaping

// Python-Markdown's serializer: "&" is left alone when it starts an entity.
const AMP_RE = /&(?!(?:#[0-9]+|#x[0-9a-f]+|[0-9a-z]+);)/gi;
const TEXT_ESCAPE_TEST = /[&<>]/;
const ATTR_ESCAPE_TEST = /[&<>"\n]/;

export function escapeText(s: string): string {
  if (!TEXT_ESCAPE_TEST.test(s)) return s;
  return s.replace(AMP_RE, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function escapeAttr(s: string): string {
  if (!ATTR_ESCAPE_TEST.test(s)) return s;
  return s
    .replace(AMP_RE, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/\n/g, "&#10;");
}

function escapeAll(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

// Django's escape(), used for TeX errors in math blocks.
function escapeDjango(s: string): string {
  return escapeAll(s).replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
}

// ---------------------------------------------------------------- helpers

function pushHtml(state: StateInline, html: string): Token {
  const token = state.push("zulip_html", "", 0);
  token.content = html;
  return token;
}

function pushPlain(state: StateInline, text: string): void {
  state.pending += text;
}

function isWordChar(ch: string | undefined): boolean {
  return ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);
}

// A mention may follow the start of the text, whitespace or one of '"({[/<.
const MENTION_BOUNDARY_RE = /[\s'"({[/<]/u;
// Channel links: the same, except "[" (so `[#**x**](url)` does not nest links).
const CHANNEL_BOUNDARY_RE = /[\s'"({/<]/u;

function precededBy(state: StateInline, re: RegExp): boolean {
  const pos = state.pos;
  return pos === 0 || re.test(state.src[pos - 1]!);
}

// Rules are tried at every position of a text. Those that look ahead keep
// what they found for the text being parsed (link text and ~~del~~ are
// tokenized again within the same text), so that no position makes them
// rescan the rest of it: rendering stays linear in the input.
interface InlineScans {
  src: string;
  urls?: UrlScanner;
  backticks?: BacktickRuns;
  /** Backticks the quick code-span search may still look at before the index is built. */
  backtickBudget: number;
  /** The first ">" at or after gtFrom (-1: not looked yet) is at gtAt (-1: none). */
  gtFrom: number;
  gtAt: number;
  /** Index of the last "](" (-1: none, -2: not looked yet). */
  lastLinkClose: number;
  /** The linkifiers' links in the text, by start (computed on first use). */
  linkifiers?: { starts: number[]; byStart: Map<number, LinkifierMatch> };
}

function scansOf(state: StateInline): InlineScans {
  const z = zenv(state.env);
  const known = z?.scans;
  if (known && known.src === state.src) return known;
  const scans: InlineScans = { src: state.src, backtickBudget: state.src.length, gtFrom: -1, gtAt: -1, lastLinkClose: -2 };
  if (z) z.scans = scans;
  return scans;
}

// KaTeX is loaded on the first TeX in a message (it costs ~90 ms to import).
const requireCjs = createRequire(import.meta.url);
let katex: typeof KaTeX | null = null;

const renderTex = (tex: string, displayMode: boolean): string | null => {
  katex ??= requireCjs("katex") as typeof KaTeX;
  // KaTeX console.warn()s about characters it has no metrics for (emoji…);
  // silence it for this synchronous call rather than flood the server log.
  const warn = console.warn;
  console.warn = () => {};
  try {
    return katex.renderToString(tex, {
      displayMode,
      throwOnError: true,
      strict: "ignore",
      trust: false,
      output: "htmlAndMathml",
    });
  } catch {
    return null;
  } finally {
    console.warn = warn;
  }
};

// ---------------------------------------------------------------- inline: text

// The text rule stops wherever another rule may start: markup characters,
// whitespace and ('",  (a bare URL may begin after them), emoji.
const STOP = new Uint8Array(0x3300);
for (const ch of "\n \t\"#$'(*,:;<@[]`~") STOP[ch.charCodeAt(0)] = 1;
for (let c = 0xa0; c < 0x3300; c++) {
  const s = String.fromCharCode(c);
  if (/\p{Emoji}|\s/u.test(s)) STOP[c] = 1;
}

function isStop(src: string, pos: number): boolean {
  const c = src.charCodeAt(pos);
  if (c < 0x3300) {
    if (STOP[c]) return true;
    if (c >= 0x30 && c <= 0x39) {
      const next = src.charCodeAt(pos + 1);
      return next === 0xfe0f || next === 0x20e3; // keycap emoji
    }
    return false;
  }
  return c >= 0xd800 && c <= 0xdbff; // astral plane: most emoji
}

function ruleText(state: StateInline, silent: boolean): boolean {
  let pos = state.pos;
  let max = state.posMax;
  const src = state.src;
  if (zenv(state.env)?.linkifiers) {
    // A linkifier's link may start inside a word (after an opening quote or
    // bracket, say): the text stops there so that ruleLinkifier is tried.
    const starts = linkifiersOf(state).starts;
    const next = starts[firstAbove(starts, pos - 1)];
    if (next === pos) return false;
    if (next !== undefined && next < max) max = next;
  }
  while (pos < max && !isStop(src, pos)) pos++;
  if (pos === state.pos) return false;
  if (!silent) state.pending += src.slice(state.pos, pos);
  state.pos = pos;
  return true;
}

// Zulip's nl2br: every newline is a <br>, spaces around it are kept.
function ruleNewline(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x0a) return false;
  if (!silent) state.push("softbreak", "br", 0);
  state.pos++;
  return true;
}

// ---------------------------------------------------------------- inline: code spans

// Python-Markdown's backtick pattern, single line, content kept verbatim:
//   (`+)(.+?)(?<!`)\1(?!`)
// An opening run of r backticks is closed by the first later run of exactly r
// on the same line; failing that (the regex backtracks) the opening run counts
// as shorter, k < r, its other backticks then start the content: the largest k
// with a run of exactly k later on the line wins, at its first such run.
// BacktickRuns indexes the runs of each line once so that each opening run
// costs at most its own length in lookups, not a scan of the rest of the line.

/** `.` in a JavaScript regex stops at these. */
function isLineTerminator(c: number): boolean {
  return c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029;
}

interface LineRuns {
  start: number;
  end: number;
  /** Distinct run lengths on the line, ascending. */
  lengths: number[];
  /** Run length -> starts of the runs of that length, ascending. */
  starts: Map<number, number[]>;
}

class BacktickRuns {
  private readonly lines: LineRuns[] = [];

  constructor(src: string) {
    let line: LineRuns | null = null;
    let lineStart = 0;
    for (let i = 0; i < src.length; i++) {
      const c = src.charCodeAt(i);
      if (isLineTerminator(c)) {
        if (line) line.end = i;
        line = null;
        lineStart = i + 1;
        continue;
      }
      if (c !== 0x60) continue;
      const runStart = i;
      while (src.charCodeAt(i + 1) === 0x60) i++;
      const length = i - runStart + 1;
      if (!line) {
        line = { start: lineStart, end: src.length, lengths: [], starts: new Map() };
        this.lines.push(line);
      }
      const starts = line.starts.get(length);
      if (starts) starts.push(runStart);
      else line.starts.set(length, [runStart]);
    }
    for (const l of this.lines) l.lengths = [...l.starts.keys()].sort((a, b) => a - b);
  }

  /** The code span the pattern matches at `pos` (a backtick), or null. */
  match(src: string, pos: number): { open: number; close: number } | null {
    let q = pos;
    while (src.charCodeAt(q) === 0x60) q++;
    const line = this.lineAt(pos);
    const lengths = line.lengths;
    for (let i = lastAtMost(lengths, q - pos); i >= 0; i--) {
      const starts = line.starts.get(lengths[i]!)!;
      const j = firstAbove(starts, q);
      if (j < starts.length) return { open: lengths[i]!, close: starts[j]! };
    }
    return null;
  }

  private lineAt(pos: number): LineRuns {
    let lo = 0;
    let hi = this.lines.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lines[mid]!.start <= pos) lo = mid;
      else hi = mid - 1;
    }
    return this.lines[lo]!;
  }
}

/** Index of the last element <= x in an ascending array, or -1. */
function lastAtMost(sorted: number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** Index of the first element > x in an ascending array (length if none). */
function firstAbove(sorted: number[], x: number): number {
  return lastAtMost(sorted, x) + 1;
}

/**
 * The code span at `pos` (a backtick): its opening run length and where the
 * closing run starts, or null. Usually the next run of as many backticks on
 * the line closes it, and a plain search finds it; once such searches have
 * looked at as many characters as the text has, the line index takes over.
 */
function codeSpanAt(scans: InlineScans, src: string, pos: number): { open: number; close: number } | null {
  let q = pos;
  while (src.charCodeAt(q) === 0x60) q++;
  if (!scans.backticks && scans.backtickBudget > 0) {
    const r = q - pos;
    let i = q;
    for (; i < src.length && !isLineTerminator(src.charCodeAt(i)); i++) {
      if (src.charCodeAt(i) !== 0x60) continue;
      const run = i;
      while (src.charCodeAt(i + 1) === 0x60) i++;
      if (i + 1 - run === r) {
        scans.backtickBudget -= i - q;
        return { open: r, close: run };
      }
    }
    scans.backtickBudget -= i - q;
  }
  return (scans.backticks ??= new BacktickRuns(src)).match(src, pos);
}

function ruleBackticks(state: StateInline, silent: boolean): boolean {
  const pos = state.pos;
  const src = state.src;
  if (src.charCodeAt(pos) !== 0x60) return false;
  if (pos > 0 && src.charCodeAt(pos - 1) === 0x5c) return false;
  const m = codeSpanAt(scansOf(state), src, pos);
  if (!m || m.close + m.open > state.posMax) {
    let end = pos;
    while (end < state.posMax && src.charCodeAt(end) === 0x60) end++;
    if (!silent) pushPlain(state, src.slice(pos, end));
    state.pos = end;
    return true;
  }
  if (!silent) {
    const token = state.push("code_inline", "code", 0);
    token.content = src.slice(pos + m.open, m.close);
  }
  state.pos = m.close + m.open;
  return true;
}

// ---------------------------------------------------------------- inline: mentions

const USER_MENTION_RE = /@(_?)\*\*([^*]+)\*\*/y;
const GROUP_MENTION_RE = /@(_?)\*([^*]+)\*/y;
const ID_SYNTAX_RE = /^(.+)?\|(\d+)$/s;
const CHANNEL_WILDCARDS = new Set(["all", "everyone", "stream", "channel"]);

function ruleUserMention(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x40) return false;
  const z = zenv(state.env);
  if (!z || !precededBy(state, MENTION_BOUNDARY_RE)) return false;
  USER_MENTION_RE.lastIndex = state.pos;
  const m = USER_MENTION_RE.exec(state.src);
  if (!m || state.pos + m[0].length > state.posMax) return false;
  const quiet = m[1] === "_" || z.inQuote;
  const name = m[2]!;

  let html: string;
  if (CHANNEL_WILDCARDS.has(name)) {
    if (!silent && !quiet) z.channelWildcard = true;
    html = quiet
      ? `<span class="user-mention channel-wildcard-mention silent" data-user-id="*">${escapeText(name)}</span>`
      : `<span class="user-mention channel-wildcard-mention" data-user-id="*">@${escapeText(name)}</span>`;
  } else if (name === "topic") {
    if (!silent && !quiet) z.topicWildcard = true;
    html = quiet ? `<span class="topic-mention silent">topic</span>` : `<span class="topic-mention">@topic</span>`;
  } else {
    const idMatch = ID_SYNTAX_RE.exec(name);
    let user;
    if (idMatch) {
      user = z.ctx.userById(Number(idMatch[2]));
      // @**name|id** is only valid while the name still matches.
      if (idMatch[1] !== undefined && user && user.fullName !== idMatch[1]) return false;
    } else {
      user = z.ctx.usersByName(name)[0];
    }
    if (!user) return false;
    const userQuiet = quiet || user.isActive === false;
    if (!silent && !userQuiet) z.mentionedUserIds.add(user.id);
    html = userQuiet
      ? `<span class="user-mention silent" data-user-id="${user.id}">${escapeText(user.fullName)}</span>`
      : `<span class="user-mention" data-user-id="${user.id}">@${escapeText(user.fullName)}</span>`;
  }
  if (!silent) pushHtml(state, html);
  state.pos += m[0].length;
  return true;
}

function ruleGroupMention(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x40) return false;
  const z = zenv(state.env);
  if (!z || !precededBy(state, MENTION_BOUNDARY_RE)) return false;
  GROUP_MENTION_RE.lastIndex = state.pos;
  const m = GROUP_MENTION_RE.exec(state.src);
  if (!m || state.pos + m[0].length > state.posMax) return false;
  const group = z.ctx.groupByName(m[2]!);
  if (!group) return false;
  const quiet = m[1] === "_" || z.inQuote || group.deactivated === true;
  if (!silent) {
    if (!quiet) z.mentionedGroupIds.add(group.id);
    pushHtml(
      state,
      quiet
        ? `<span class="user-group-mention silent" data-user-group-id="${group.id}">${escapeText(group.name)}</span>`
        : `<span class="user-group-mention" data-user-group-id="${group.id}">@${escapeText(group.name)}</span>`,
    );
  }
  state.pos += m[0].length;
  return true;
}

// ---------------------------------------------------------------- inline: channel links

const MESSAGE_LINK_RE = /#\*\*([^*>]+)>([^*]*)@(\d+)\*\*/y;
const TOPIC_LINK_RE = /#\*\*([^*>]+)>([^*]+)\*\*/y;
const CHANNEL_LINK_RE = /#\*\*([^*]+)\*\*/y;

function ruleChannelLink(state: StateInline, silent: boolean): boolean {
  if (state.src.charCodeAt(state.pos) !== 0x23) return false;
  const z = zenv(state.env);
  if (!z || !precededBy(state, CHANNEL_BOUNDARY_RE)) return false;
  const src = state.src;
  for (const re of [MESSAGE_LINK_RE, TOPIC_LINK_RE, CHANNEL_LINK_RE]) {
    re.lastIndex = state.pos;
    const m = re.exec(src);
    if (!m || state.pos + m[0].length > state.posMax) continue;
    const channel = z.ctx.channelByName(m[1]!);
    if (!channel) continue;
    if (!silent) {
      const base = `/#narrow/channel/${encodeChannel(channel.id, channel.name)}`;
      let html: string;
      if (re === MESSAGE_LINK_RE) {
        const href = `${base}/topic/${hashUtilEncode(m[2]!)}/near/${m[3]}`;
        html = `<a class="message-link" href="${escapeAttr(href)}">#${escapeText(channel.name)} &gt; ${escapeText(m[2]!)} @ 💬</a>`;
      } else if (re === TOPIC_LINK_RE) {
        const href = `${base}/topic/${hashUtilEncode(m[2]!)}`;
        html = `<a class="stream-topic" data-stream-id="${channel.id}" href="${escapeAttr(href)}">#${escapeText(channel.name)} &gt; ${escapeText(m[2]!)}</a>`;
      } else {
        html = `<a class="stream" data-stream-id="${channel.id}" href="${escapeAttr(base)}">#${escapeText(channel.name)}</a>`;
      }
      pushHtml(state, html).meta = { link: true };
    }
    state.pos += m[0].length;
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- inline: TeX, time

const TEX_RE = /\$\$([^\n_$](?:\\\$|[^$\n])*)\$\$(?!\$)/y;

function ruleTex(state: StateInline, silent: boolean): boolean {
  const pos = state.pos;
  const src = state.src;
  if (src.charCodeAt(pos) !== 0x24 || src.charCodeAt(pos + 1) !== 0x24) return false;
  if (pos > 0 && (src[pos - 1] === "$" || isWordChar(src[pos - 1]))) return false;
  TEX_RE.lastIndex = pos;
  const m = TEX_RE.exec(src);
  if (!m) return false;
  const end = pos + m[0].length;
  if (end > state.posMax || isWordChar(src[end])) return false;
  if (!silent) {
    const html = renderTex(m[1]!, false);
    pushHtml(state, html ?? `<span class="tex-error">${escapeText(m[0])}</span>`);
  }
  state.pos = end;
  return true;
}

// <time:…> ends at the first ">" after it (Zulip: <time:([^>]*?)>).
function ruleTime(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const pos = state.pos;
  if (src.charCodeAt(pos) !== 0x3c || !src.startsWith("<time:", pos)) return false;
  const scans = scansOf(state);
  const from = pos + 6;
  if (scans.gtFrom === -1 || from < scans.gtFrom || (scans.gtAt !== -1 && from > scans.gtAt)) {
    scans.gtFrom = from;
    scans.gtAt = src.indexOf(">", from);
  }
  const close = scans.gtAt;
  if (close === -1 || close + 1 > state.posMax) return false;
  if (!silent) {
    const text = src.slice(from, close);
    const iso = parseTime(text);
    pushHtml(
      state,
      iso === null
        ? `<span class="timestamp-error">Invalid time format: ${escapeText(text)}</span>`
        : `<time datetime="${iso}">${escapeText(text)}</time>`,
    );
  }
  state.pos = close + 1;
  return true;
}

// ---------------------------------------------------------------- inline: links

// [text](url "title"). Zulip keeps the link text literal: only code spans,
// mentions, channel links, TeX and times are rendered inside it.
function ruleLink(state: StateInline, silent: boolean): boolean {
  const src = state.src;
  const start = state.pos;
  if (src.charCodeAt(start) !== 0x5b || inLinkText(state)) return false;
  if (start > 0 && src.charCodeAt(start - 1) === 0x21) return false; // no images: `![x](y)` stays text
  // A link needs a "](" after its "[". Without one, skip markdown-it's label
  // search: from every "[" it walks nested "[" up to 100 deep.
  const scans = scansOf(state);
  if (scans.lastLinkClose === -2) scans.lastLinkClose = src.lastIndexOf("](");
  if (scans.lastLinkClose <= start) return false;
  const z = zenv(state.env);
  const max = state.posMax;
  const labelEnd = state.md.helpers.parseLinkLabel(state, start, true);
  if (labelEnd < 0) return false;
  let pos = labelEnd + 1;
  if (src.charCodeAt(pos) !== 0x28) return false;
  pos++;
  while (pos < max && /\s/.test(src[pos]!)) pos++;
  const dest = state.md.helpers.parseLinkDestination(src, pos, max);
  if (!dest.ok) return false;
  pos = dest.pos;
  const afterDest = pos;
  while (pos < max && /\s/.test(src[pos]!)) pos++;
  let title = "";
  if (pos !== afterDest && pos < max) {
    const t = state.md.helpers.parseLinkTitle(src, pos, max);
    if (t.ok) {
      title = t.str;
      pos = t.pos;
      while (pos < max && /\s/.test(src[pos]!)) pos++;
    }
  }
  if (src.charCodeAt(pos) !== 0x29) return false;
  pos++;
  const sanitized = sanitizeUrl(dest.str);
  if (sanitized === null) return false;
  const href = rewriteLocalLink(sanitized, z?.realmUrl ?? "");

  if (!silent) {
    const open = state.push("link_open", "a", 1);
    open.attrs = [["href", href]];
    if (title) open.attrs.push(["title", title]);
    const label = src.slice(start + 1, labelEnd);
    if (label.trim() === "") {
      const t = state.push("text", "", 0);
      t.content = href;
    } else {
      state.pos = start + 1;
      state.posMax = labelEnd;
      const z2 = zenv(state.env);
      if (z2) z2.linkDepth++;
      state.md.inline.tokenize(state);
      if (z2) z2.linkDepth--;
      state.posMax = max;
    }
    state.push("link_close", "a", -1);
  }
  state.pos = pos;
  return true;
}

// Bare URLs, e-mail addresses and domains with a known TLD become links.
function ruleAutolink(state: StateInline, silent: boolean): boolean {
  if (inLinkText(state)) return false;
  const pos = state.pos;
  const src = state.src;
  if (pos > 0) {
    const p = src.charCodeAt(pos - 1);
    // whitespace or one of '"(,:<
    if (!(p === 0x20 || p === 0x0a || p === 0x27 || p === 0x22 || p === 0x28 || p === 0x2c || p === 0x3a || p === 0x3c)) {
      if (p < 0x09 || (p > 0x0d && p < 0x80) || !URL_BOUNDARY_RE.test(src[pos - 1]!)) return false;
    }
  }
  const c = src.charCodeAt(pos);
  if (c < 0x2d || (c > 0x39 && c < 0x41) || (c > 0x5a && c < 0x5f) || c === 0x60 || (c > 0x7a && c < 0x80)) {
    return false;
  }
  // Most words end here, before any lookup (this rule runs at every word).
  return mayStartUrl(src, pos) && autolinkAt(state, pos, silent);
}

function autolinkAt(state: StateInline, pos: number, silent: boolean): boolean {
  const scans = scansOf(state);
  const m = (scans.urls ??= new UrlScanner(state.src)).matchAt(pos);
  if (!m || m.end > state.posMax) return false;
  const sanitized = sanitizeUrl(m.url);
  if (sanitized === null) return false;
  if (!silent) {
    const z = zenv(state.env);
    const open = state.push("link_open", "a", 1);
    open.attrs = [["href", rewriteLocalLink(sanitized, z?.realmUrl ?? "")]];
    open.markup = "autolink";
    const t = state.push("text", "", 0);
    t.content = m.url;
    state.push("link_close", "a", -1).markup = "autolink";
  }
  state.pos = m.end;
  return true;
}

// ---------------------------------------------------------------- inline: linkifiers

/** The organization's linkifier links in the text being parsed, found once per text. */
function linkifiersOf(state: StateInline): NonNullable<InlineScans["linkifiers"]> {
  const scans = scansOf(state);
  if (!scans.linkifiers) {
    const matches = linkifierMatches(state.src, zenv(state.env)?.linkifiers ?? []);
    scans.linkifiers = { starts: matches.map((m) => m.start), byStart: new Map(matches.map((m) => [m.start, m])) };
  }
  return scans.linkifiers;
}

// Zulip's LinkifierPattern: after code, mentions, channel links, links and
// bare URLs (which take their text first), before emphasis and emoji. The
// link text is the matched text as written.
function ruleLinkifier(state: StateInline, silent: boolean): boolean {
  const z = zenv(state.env);
  if (!z?.linkifiers || inLinkText(state)) return false;
  const match = linkifiersOf(state).byStart.get(state.pos);
  if (!match || match.end > state.posMax) return false;
  if (!silent) {
    const open = state.push("link_open", "a", 1);
    open.attrs = [["href", rewriteLocalLink(match.href, z.realmUrl)]];
    const text = state.push("text", "", 0);
    text.content = state.src.slice(match.start, match.end);
    state.push("link_close", "a", -1);
  }
  state.pos = match.end;
  return true;
}

// ---------------------------------------------------------------- inline: emphasis, del

// Only `*` emphasises (`_foo_` and `__foo__` stay text in Zulip).
function ruleEmphasis(state: StateInline, silent: boolean): boolean {
  if (silent || inLinkText(state)) return false;
  const start = state.pos;
  if (state.src.charCodeAt(start) !== 0x2a) return false;
  const scanned = state.scanDelims(start, true);
  for (let i = 0; i < scanned.length; i++) {
    const token = state.push("text", "", 0);
    token.content = "*";
    state.delimiters.push({
      marker: 0x2a,
      length: scanned.length,
      token: state.tokens.length - 1,
      end: -1,
      open: scanned.can_open,
      close: scanned.can_close,
    });
  }
  state.pos += scanned.length;
  return true;
}

// Zulip's emphasis never spans lines: unpair delimiters around a line break.
function emphasisSingleLine(state: StateInline): boolean {
  if (!state.src.includes("\n")) return false;
  // breaksBefore[i]: line breaks among tokens[0, i), so that each pair is
  // checked in constant time (nested pairs would otherwise rescan their tokens).
  const tokens = state.tokens;
  const breaksBefore = new Int32Array(tokens.length + 1);
  for (let i = 0; i < tokens.length; i++) breaksBefore[i + 1] = breaksBefore[i]! + (tokens[i]!.type === "softbreak" ? 1 : 0);
  const unpair = (delimiters: StateInline["delimiters"]): void => {
    for (const d of delimiters) {
      if (d.marker !== 0x2a || d.end === -1) continue;
      const closer = delimiters[d.end]!;
      if (closer.token > d.token + 1 && breaksBefore[closer.token]! > breaksBefore[d.token + 1]!) d.end = -1;
    }
  };
  unpair(state.delimiters);
  for (const meta of state.tokens_meta) if (meta?.delimiters) unpair(meta.delimiters);
  return false;
}

/** The first token from k on that is not an empty text (left by emphasis delimiters). */
function nextReal(tokens: Token[], k: number): number {
  while (k < tokens.length && tokens[k]!.type === "text" && tokens[k]!.content === "") k++;
  return k;
}

// `***x***` is <strong><em>x</em></strong> in Zulip (CommonMark nests the other way).
function strongOutsideEm(state: StateInline): boolean {
  const tokens = state.tokens;
  // The strong_close matching each strong_open, found once with a stack.
  let closeOf: Map<number, number> | null = null;
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i]!.type !== "em_open") continue;
    const s = nextReal(tokens, i + 1);
    if (tokens[s]?.type !== "strong_open") continue;
    if (!closeOf) {
      closeOf = new Map();
      const open: number[] = [];
      for (let k = 0; k < tokens.length; k++) {
        const type = tokens[k]!.type;
        if (type === "strong_open") open.push(k);
        else if (type === "strong_close" && open.length > 0) closeOf.set(open.pop()!, k);
      }
    }
    const j = closeOf.get(s);
    if (j === undefined) continue;
    const e = nextReal(tokens, j + 1);
    if (tokens[e]?.type === "em_close") {
      [tokens[i], tokens[s]] = [tokens[s]!, tokens[i]!];
      [tokens[j], tokens[e]] = [tokens[e]!, tokens[j]!];
    }
  }
  return false;
}

const DEL_RE = /~~([^~\n]+?)~~(?!~)/y;

function ruleDel(state: StateInline, silent: boolean): boolean {
  const pos = state.pos;
  const src = state.src;
  if (inLinkText(state) || src.charCodeAt(pos) !== 0x7e || src.charCodeAt(pos + 1) !== 0x7e) return false;
  if (pos > 0 && src.charCodeAt(pos - 1) === 0x7e) return false;
  DEL_RE.lastIndex = pos;
  const m = DEL_RE.exec(src);
  if (!m) return false;
  const end = pos + m[0].length;
  const max = state.posMax;
  if (end > max) return false;
  if (!silent) {
    state.push("del_open", "del", 1);
    state.pos = pos + 2;
    state.posMax = end - 2;
    state.md.inline.tokenize(state);
    state.posMax = max;
    state.push("del_close", "del", -1);
  }
  state.pos = end;
  return true;
}

// ---------------------------------------------------------------- inline: emoji

const EMOJI_NAME_RE = /:([\p{L}\p{N}_\-+]+):/uy;

function emojiSpan(code: string, name: string): string {
  const title = escapeAttr(name.replace(/_/g, " "));
  return `<span aria-label="${title}" class="emoji emoji-${code}" role="img" title="${title}">:${escapeText(name)}:</span>`;
}

function imageEmoji(src: string, name: string): string {
  return `<img alt=":${escapeAttr(name)}:" class="emoji" src="${escapeAttr(src)}" title="${escapeAttr(name.replace(/_/g, " "))}">`;
}

function ruleEmoji(state: StateInline, silent: boolean): boolean {
  if (inLinkText(state) || state.src.charCodeAt(state.pos) !== 0x3a) return false;
  EMOJI_NAME_RE.lastIndex = state.pos;
  const m = EMOJI_NAME_RE.exec(state.src);
  if (!m || state.pos + m[0].length > state.posMax) return false;
  if (!silent) {
    const name = m[1]!;
    const realm = zenv(state.env)?.ctx.realmEmojiByName?.(name);
    const code = nameToCode.get(name);
    if (realm) pushHtml(state, imageEmoji(realm.sourceUrl, name));
    else if (name === "zulip") pushHtml(state, imageEmoji(ZULIP_EXTRA_EMOJI_URL, name));
    else if (code !== undefined) pushHtml(state, emojiSpan(code, name));
    else pushPlain(state, m[0]); // unknown names stay text, and are not re-scanned
  }
  state.pos += m[0].length;
  return true;
}

const EMOTICON_EDGE = new Set([..." ,.;?!()[]\"'\n\t"]);
const EMOTICON_LIST = Object.keys(EMOTICONS);

function ruleEmoticon(state: StateInline, silent: boolean): boolean {
  const z = zenv(state.env);
  if (!z?.ctx.translateEmoticons || inLinkText(state)) return false;
  const pos = state.pos;
  const src = state.src;
  if (pos > 0 && !EMOTICON_EDGE.has(src[pos - 1]!)) return false;
  for (const emoticon of EMOTICON_LIST) {
    if (!src.startsWith(emoticon, pos)) continue;
    const end = pos + emoticon.length;
    if (end > state.posMax || (end < src.length && !EMOTICON_EDGE.has(src[end]!))) continue;
    const name = EMOTICONS[emoticon]!;
    const code = nameToCode.get(name);
    if (code === undefined) continue;
    if (!silent) pushHtml(state, emojiSpan(code, name));
    state.pos = end;
    return true;
  }
  return false;
}

function ruleUnicodeEmoji(state: StateInline, silent: boolean): boolean {
  if (inLinkText(state)) return false;
  const pos = state.pos;
  const c = state.src.charCodeAt(pos);
  if (c < 0x23) return false;
  POSSIBLE_EMOJI_RE.lastIndex = pos;
  const m = POSSIBLE_EMOJI_RE.exec(state.src);
  if (!m || pos + m[0].length > state.posMax) return false;
  const seq = m[0];
  if (TEXT_PRESENTATION_RE.test(seq)) return false;
  if (!silent) {
    const code = emojiCodeOf(seq);
    const name = codeToName.get(code);
    if (name !== undefined) pushHtml(state, emojiSpan(code, name));
    else pushPlain(state, seq); // unknown sequences stay as they are, whole
  }
  state.pos += seq.length;
  return true;
}

// ---------------------------------------------------------------- block: fences

// Zulip's FENCE_RE: ``` or ~~~, an optional language (`.py`, `{js}`), and an
// optional header (for spoilers). Closed only by the identical fence string.
const FENCE_RE = /^(~{3,}|`{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+-./#]+)[ ]*([^ ~`][^~`]*)?\}?)?$/;

interface FenceInfo {
  fence: string;
  lang: string | null;
  header: string | null;
}

function fenceAt(state: StateBlock, line: number): FenceInfo | null {
  if (state.sCount[line]! - state.blkIndent >= 4 || state.sCount[line]! < state.blkIndent) return null;
  const start = state.bMarks[line]! + state.tShift[line]!;
  const end = state.eMarks[line]!;
  if (!isFenceCandidate(state.src, start, end)) return null;
  const m = FENCE_RE.exec(state.src.slice(start, end));
  if (!m) return null;
  return { fence: m[1]!, lang: m[2] ? m[2].toLowerCase() : null, header: m[3] ?? null };
}

/**
 * Whether src[start, end) may match Zulip's fence expression: three or more
 * ` or ~, then nothing that is ` or ~. Checked first because the expression
 * backtracks quadratically over a long line with a stray ` or ~ at its end.
 */
export function isFenceCandidate(src: string, start: number, end: number): boolean {
  const fence = src.charCodeAt(start);
  if (fence !== 0x60 && fence !== 0x7e) return false;
  let i = start;
  while (i < end && src.charCodeAt(i) === fence) i++;
  if (i - start < 3) return false;
  for (; i < end; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x60 || c === 0x7e) return false;
  }
  return true;
}

function closesFence(state: StateBlock, line: number, fence: string): boolean {
  if (state.sCount[line]! - state.blkIndent >= 4) return false;
  const start = state.bMarks[line]! + state.tShift[line]!;
  return state.src.slice(start, state.eMarks[line]).trimEnd() === fence;
}

const isContainer = (lang: string | null): boolean =>
  lang === "quote" || lang === "quoted" || lang === "spoiler";

// Where each fence ends, per block state: the scan for a quote or spoiler
// fence passes over the fences nested in it and records where they end, so
// that parsing them later does not scan the same lines again (nested quotes
// would otherwise cost lines × depth).
interface FenceEnd {
  blkIndent: number;
  line: number;
  /** The scan reached its endLine with the fence still open. */
  ranOut: boolean;
}
const fenceEnds = new WeakMap<StateBlock, Map<number, FenceEnd>>();

/** The line that closes the fence opened at `startLine` (or endLine if none). */
function findFenceEnd(state: StateBlock, startLine: number, endLine: number, info: FenceInfo): number {
  if (!isContainer(info.lang)) {
    // Code and math hold no fences: scanned once, by their own rule.
    for (let line = startLine + 1; line < endLine; line++) {
      if (!state.isEmpty(line) && state.sCount[line]! < state.blkIndent) return line;
      if (closesFence(state, line, info.fence)) return line;
    }
    return endLine;
  }
  let memo = fenceEnds.get(state);
  if (!memo) {
    memo = new Map();
    fenceEnds.set(state, memo);
  }
  const known = memo.get(startLine);
  if (known && known.blkIndent === state.blkIndent) {
    if (known.line < endLine) return known.line;
    if (!known.ranOut || endLine === known.line) return endLine;
  }
  const stack: { line: number; info: FenceInfo }[] = [{ line: startLine, info }];
  const record = (at: number, ranOut: boolean): void => {
    for (const open of stack) memo.set(open.line, { blkIndent: state.blkIndent, line: at, ranOut });
  };
  for (let line = startLine + 1; line < endLine; line++) {
    if (!state.isEmpty(line) && state.sCount[line]! < state.blkIndent) {
      record(line, false);
      return line;
    }
    const top = stack[stack.length - 1]!;
    if (closesFence(state, line, top.info.fence)) {
      memo.set(top.line, { blkIndent: state.blkIndent, line, ranOut: false });
      stack.pop();
      if (stack.length === 0) return line;
      continue;
    }
    if (isContainer(top.info.lang)) {
      const nested = fenceAt(state, line);
      if (nested) stack.push({ line, info: nested });
    }
  }
  record(endLine, true);
  return endLine;
}

function ruleFence(state: StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  const info = fenceAt(state, startLine);
  if (!info) return false;
  if (silent) return true;
  const end = findFenceEnd(state, startLine, endLine, info);
  const closed = end < endLine && closesFence(state, end, info.fence);
  state.line = closed ? end + 1 : end;
  if (end === startLine + 1) return true; // a fence with no lines renders nothing

  const lang = info.lang;
  if (lang === "quote" || lang === "quoted" || lang === "spoiler") {
    if (lang === "spoiler") {
      const open = state.push("zulip_spoiler_open", "div", 1);
      open.map = [startLine, state.line];
      if (info.header !== null) {
        const level = state.level;
        const headerTokens: Token[] = [];
        state.md.block.parse(info.header, state.md, state.env, headerTokens);
        for (const t of headerTokens) {
          t.level += level;
          state.tokens.push(t);
        }
      }
      state.push("zulip_spoiler_content", "div", 0);
    } else {
      state.push("blockquote_open", "blockquote", 1).markup = info.fence + lang;
    }
    const oldLineMax = state.lineMax;
    const oldParent = state.parentType;
    state.lineMax = end;
    state.parentType = "blockquote";
    state.md.block.tokenize(state, startLine + 1, end);
    state.lineMax = oldLineMax;
    state.parentType = oldParent;
    if (lang === "spoiler") state.push("zulip_spoiler_close", "div", -1);
    else state.push("blockquote_close", "blockquote", -1);
    state.line = closed ? end + 1 : end;
    return true;
  }

  const lines = state
    .getLines(startLine + 1, end, state.sCount[startLine]!, false)
    .split("\n")
    .map((l) => l.trimEnd());
  const token = state.push(lang === "math" ? "zulip_math" : "zulip_code", "code", 0);
  token.info = lang ?? "";
  token.content = lines.join("\n");
  token.map = [startLine, state.line];
  return true;
}

// A paragraph keeps its trailing spaces (Python-Markdown only left-strips).
function ruleParagraph(state: StateBlock, startLine: number, endLine: number): boolean {
  const terminators = state.md.block.ruler.getRules("paragraph");
  const oldParent = state.parentType;
  // Lines continuing a list item's first paragraph keep their indentation
  // (Python-Markdown appends them to the item verbatim).
  const prev = state.tokens[state.tokens.length - 1];
  const itemStart = oldParent === "list" && prev?.type === "list_item_open" && prev.map?.[0] === startLine;
  let next = startLine + 1;
  state.parentType = "paragraph";
  for (; next < endLine && !state.isEmpty(next); next++) {
    if (state.sCount[next]! - state.blkIndent > 3) continue;
    if (state.sCount[next]! < 0) continue;
    if (terminators.some((rule) => rule(state, next, endLine, true))) break;
  }
  let content: string;
  if (itemStart && next > startLine + 1) {
    const first = state.src.slice(state.bMarks[startLine]! + state.tShift[startLine]!, state.eMarks[startLine]);
    content = first + "\n" + state.getLines(startLine + 1, next, 0, false);
  } else {
    content = state.getLines(startLine, next, state.blkIndent, false);
  }
  content = content.replace(/^[ \t\n]+/, "");
  state.line = next;
  state.push("paragraph_open", "p", 1).map = [startLine, next];
  const inline = state.push("inline", "", 0);
  inline.content = content;
  inline.map = [startLine, next];
  inline.children = [];
  state.push("paragraph_close", "p", -1);
  state.parentType = oldParent;
  return true;
}

function lineText(state: StateBlock, line: number): string {
  return state.src.slice(state.bMarks[line]! + state.tShift[line]!, state.eMarks[line]);
}

// Lines holding only ">" are not a quote in Zulip: they stay text, unless
// lines of text follow directly (those are then quoted).
function ruleEmptyQuote(state: StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  if (silent || state.sCount[startLine]! - state.blkIndent >= 4) return false;
  if (state.src.charCodeAt(state.bMarks[startLine]! + state.tShift[startLine]!) !== 0x3e) return false;
  let line = startLine;
  while (line < endLine && !state.isEmpty(line) && /^>\s*$/.test(lineText(state, line))) line++;
  if (line === startLine) return false;
  if (line < endLine && !state.isEmpty(line)) {
    if (lineText(state, line).startsWith(">") || state.sCount[line]! < state.blkIndent) return false;
    let end = line;
    while (end < endLine && !state.isEmpty(end)) end++;
    state.push("blockquote_open", "blockquote", 1).map = [startLine, end];
    const oldLineMax = state.lineMax;
    state.lineMax = end;
    state.md.block.tokenize(state, line, end);
    state.lineMax = oldLineMax;
    state.push("blockquote_close", "blockquote", -1);
    state.line = end;
    return true;
  }
  const token = state.push("paragraph_open", "p", 1);
  token.map = [startLine, line];
  const inline = state.push("inline", "", 0);
  inline.content = state.getLines(startLine, line, state.blkIndent, false).trim();
  inline.children = [];
  state.push("paragraph_close", "p", -1);
  state.line = line;
  return true;
}

// ---------------------------------------------------------------- core

// Parse inline content, remembering whether it sits in a block quote
// (mentions in quotes are silent in Zulip).
function coreInline(state: StateCore): void {
  const z = zenv(state.env);
  let depth = 0;
  for (const token of state.tokens) {
    if (token.type === "ordered_list_open" && z && token.map) {
      const start = z.orderedListStarts.get(token.map[0]);
      if (start !== undefined && start !== 1) token.attrSet("start", String(start));
    }
    if (token.type === "blockquote_open") depth++;
    else if (token.type === "blockquote_close") depth--;
    else if (token.type === "inline") {
      if (z) z.inQuote = depth > 0;
      state.md.inline.parse(token.content, state.md, state.env, token.children!);
    }
  }
  if (z) z.inQuote = false;
}

const IMAGE_EXTENSIONS = [".bmp", ".gif", ".jpe", ".jpeg", ".jpg", ".png", ".webp"];
const INLINE_PREVIEW_LIMIT = 24;
const MAX_PREVIEWS_PER_MESSAGE = 3;

function urlPath(url: string): string {
  const m = /^(?:[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/?#]*)?([^?#]*)/.exec(url);
  return m ? m[1]! : "";
}

function urlHost(url: string): string {
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/(?:[^@/?#]*@)?([^/?#]*)/.exec(url);
  return m ? m[1]!.toLowerCase() : "";
}

function isImageUrl(url: string): boolean {
  const host = urlHost(url);
  if (host === "pasteboard.co") return false;
  const path = urlPath(url).toLowerCase();
  return IMAGE_EXTENSIONS.some((ext) => path.endsWith(ext));
}

function youtubeId(url: string): string | null {
  const m = /^https?:\/\/([^/?#]+)([^?#]*)(?:\?([^#]*))?/i.exec(url);
  if (!m) return null;
  const host = m[1]!.toLowerCase();
  const path = m[2]!;
  const query = new URLSearchParams(m[3] ?? "");
  let id: string | null = null;
  if (["m.youtube.com", "www.youtube.com", "www.youtube-nocookie.com", "youtube.com", "youtube-nocookie.com"].includes(host)) {
    if ((path === "/watch" || path === "/watch_popup") && query.has("v")) id = query.get("v");
    else if (path === "/watch_videos" && query.has("video_ids")) id = query.get("video_ids")!.split(",")[0]!;
    else if (/^\/(embed|shorts|v)\//.test(path)) id = path.split("/")[2] ?? null;
  } else if (host === "youtu.be" && path.startsWith("/")) {
    id = path.slice(1);
  }
  return id !== null && /^[0-9A-Za-z_-]+$/.test(id) ? id : null;
}

// github.com/…/blob/… image links preview the raw file.
function actualImageUrl(url: string): string {
  const m = /^https?:\/\/((?:[^/?#]+\.)?github\.com)(\/[^?#]*)/i.exec(url);
  if (m) {
    const parts = m[2]!.split("/");
    if (parts.length > 3 && parts[3] === "blob") {
      return "https://raw.githubusercontent.com" + [...parts.slice(0, 3), ...parts.slice(4)].join("/");
    }
  }
  return url;
}

interface LinkRef {
  href: string;
  text: string | null;
  inline: number; // index of the inline token in state.tokens
  child: number; // index of link_open in its children
  inQuote: boolean;
}

function previewHtml(z: ZulipEnv, link: LinkRef): string | null {
  const title = link.text !== null && link.text !== link.href ? ` title="${escapeAttr(link.text)}"` : "";
  if (isImageUrl(link.href)) {
    z.hasImage = true;
    const image = actualImageUrl(link.href);
    const img =
      z.ctx.thumbnailImages === false
        ? `<img src="${escapeAttr(image)}">`
        : `<img data-src-fullsize="${escapeAttr(thumbnailUrl(image, "full"))}" src="${escapeAttr(thumbnailUrl(image, "thumbnail"))}">`;
    return `<div class="message_inline_image"><a href="${escapeAttr(link.href)}"${title}>${img}</a></div>`;
  }
  const yt = youtubeId(link.href);
  if (yt !== null) {
    z.hasImage = true;
    return `<div class="youtube-video message_inline_image"><a data-id="${yt}" href="${escapeAttr(link.href)}"${title}><img src="https://i.ytimg.com/vi/${yt}/default.jpg"></a></div>`;
  }
  return null;
}

/**
 * Link previews (Zulip's url embeds): the first links to pages on other sites,
 * outside quotes, that are not images or videos, are noted for a preview; those
 * whose preview is known (ctx.linkPreview) get Zulip's message_embed block at
 * the end of the message, its image through the image proxy.
 */
function linkEmbeds(state: StateCore, z: ZulipEnv, links: LinkRef[]): void {
  if (!z.ctx.urlEmbedPreview) return;
  for (const link of links) {
    if (z.linksForPreview.length >= MAX_PREVIEWS_PER_MESSAGE) break;
    const href = link.href;
    if (link.inQuote || z.linksForPreview.includes(href) || !/^https?:\/\//i.test(href)) continue;
    const host = urlHost(href);
    if (host === "" || host === z.realmHost || isImageUrl(href) || youtubeId(href) !== null) continue;
    z.linksForPreview.push(href);
  }
  for (const href of z.linksForPreview) {
    const data = z.ctx.linkPreview?.(href);
    if (!data?.image) continue;
    // Zulip's add_embed: the image as a CSS url() in a style attribute (escaped for CSS, then for the attribute).
    const image = (z.ctx.externalImageUrl?.(data.image) ?? data.image).replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\a ");
    const title = data.title ? `<div class="message_embed_title"><a href="${escapeAttr(href)}" title="${escapeAttr(data.title)}">${escapeText(data.title)}</a></div>` : "";
    const description = data.description ? `<div class="message_embed_description">${escapeText(data.description)}</div>` : "";
    const block = new state.Token("zulip_html_block", "", 0);
    block.content = `<div class="message_embed"><a class="message_embed_image" href="${escapeAttr(href)}" style="${escapeAttr(`background-image: url("${image}")`)}"></a><div class="data-container">${title}${description}</div></div>`;
    block.block = true;
    state.tokens.push(block);
  }
}

// has_link / uploads / inline image previews, after inline parsing.
function corePostprocess(state: StateCore): void {
  const z = zenv(state.env);
  if (!z) return;
  const tokens = state.tokens;
  const links: LinkRef[] = [];
  let depth = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.type === "blockquote_open") depth++;
    else if (token.type === "blockquote_close") depth--;
    else if (token.type === "th_open" || token.type === "td_open") {
      const style = token.attrGet("style");
      if (typeof style === "string") token.attrSet("style", style.replace(/^text-align:(\w+)$/, "text-align: $1;"));
    }
    if (token.type !== "inline") continue;
    const children = token.children!;
    for (let j = 0; j < children.length; j++) {
      const child = children[j]!;
      if (child.type === "zulip_html" && (child.meta as { link?: boolean } | null)?.link) z.hasLink = true;
      if (child.type !== "link_open") continue;
      z.hasLink = true;
      const next = children[j + 1];
      const text = next?.type === "text" && children[j + 2]?.type === "link_close" ? next.content : null;
      links.push({ href: child.attrGet("href") as string, text, inline: i, child: j, inQuote: depth > 0 });
    }
  }
  if (links.length === 0) return;
  linkEmbeds(state, z, links);

  // Uploaded files: /user_uploads/<path_id> on this realm.
  const seen = new Set<string>();
  const uploads = new Set(z.uploadPathIds);
  for (const link of links) {
    if (seen.has(link.href)) continue;
    seen.add(link.href);
    let href = link.href;
    if (href.startsWith("user_uploads/")) href = "/" + href;
    const host = urlHost(href);
    if (host !== "" && host !== z.realmHost) continue;
    const path = urlPath(href);
    if (host === "" && !href.startsWith("/")) continue;
    const pathId = path.slice("/user_uploads/".length);
    if (path.startsWith("/user_uploads/") && pathId && !uploads.has(pathId)) {
      uploads.add(pathId);
      z.uploadPathIds.push(pathId);
    }
  }

  if (z.ctx.inlineImagePreview === false) return;
  const previewable = new Set(links.filter((l) => !l.inQuote).map((l) => l.href));
  if (previewable.size === 0 || previewable.size > INLINE_PREVIEW_LIMIT) return;

  // Insertions: token index -> html blocks to insert before it.
  const inserts = new Map<number, string[]>();
  const removeParagraph = new Set<number>(); // inline indexes whose <p> goes away
  const removeLink = new Set<string>(); // `${inline}:${child}` links removed from tight <li>
  const done = new Set<string>();
  for (const link of links) {
    if (link.inQuote || done.has(link.href)) continue;
    done.add(link.href);
    const html = previewHtml(z, link);
    if (html === null) continue;
    // Only an image preview replaces a link that stands alone (not a video's).
    const replaces = html.startsWith('<div class="message_inline_image">');
    const inline = tokens[link.inline]!;
    const open = tokens[link.inline - 1];
    const children = inline.children!;
    const onlyThisLink =
      replaces && link.child === 0 && children.length === 3 && link.text !== null && link.text === link.href;
    let at: number;
    if (open?.type === "paragraph_open" && open.hidden) {
      // Tight list item: the preview goes at the end of the <li>.
      at = link.inline + 1;
      while (at < tokens.length && !(tokens[at]!.type === "list_item_close" && tokens[at]!.level === open.level - 1)) at++;
      if (onlyThisLink) removeLink.add(`${link.inline}:${link.child}`);
    } else if (open?.type === "paragraph_open") {
      at = link.inline + 2; // after paragraph_close
      if (onlyThisLink) removeParagraph.add(link.inline);
    } else {
      at = tokens.length;
    }
    const list = inserts.get(at) ?? [];
    list.push(html);
    inserts.set(at, list);
  }

  for (const key of removeLink) {
    const [i, j] = key.split(":").map(Number) as [number, number];
    tokens[i]!.children!.splice(j, 3);
  }
  for (const i of removeParagraph) {
    tokens[i - 1]!.hidden = true;
    tokens[i + 1]!.hidden = true;
    tokens[i]!.children = [];
    tokens[i - 1]!.meta = { removed: true };
    tokens[i + 1]!.meta = { removed: true };
  }
  const positions = [...inserts.keys()].sort((a, b) => b - a);
  for (const at of positions) {
    const block = new state.Token("zulip_html_block", "", 0);
    block.content = inserts.get(at)!.join("");
    block.block = true;
    tokens.splice(at, 0, block);
  }
}

// ---------------------------------------------------------------- renderer

function installRenderer(md: MarkdownIt): void {
  const rules = md.renderer.rules;
  md.renderer.renderAttrs = (token) => {
    if (!token.attrs) return "";
    let out = "";
    for (const [name, value] of token.attrs) out += ` ${name}="${escapeAttr(String(value))}"`;
    return out;
  };
  rules.text = (tokens, idx) => escapeText(tokens[idx]!.content);
  rules.code_inline = (tokens, idx) => `<code>${escapeAll(tokens[idx]!.content)}</code>`;
  rules.softbreak = () => "<br>\n";
  rules.hardbreak = () => "<br>\n";
  rules.zulip_html = (tokens, idx) => tokens[idx]!.content;
  rules.zulip_html_block = (tokens, idx) => tokens[idx]!.content;
  rules.code_block = (tokens, idx) => renderCodeBlock(tokens[idx]!.content, null) + "\n";
  rules.zulip_code = (tokens, idx) => {
    const t = tokens[idx]!;
    return renderCodeBlock(t.content, t.info || null) + "\n";
  };
  rules.zulip_math = (tokens, idx) => {
    const parts = tokens[idx]!.content.split("\n\n").map((tex) => {
      return renderTex(tex, true) ?? `<span class="tex-error">${escapeDjango(tex)}</span>`;
    });
    return `<p>${parts.join("\n\n")}</p>\n`;
  };
  rules.zulip_spoiler_open = () => '<div class="spoiler-block"><div class="spoiler-header">\n';
  rules.zulip_spoiler_content = () => '</div><div class="spoiler-content" aria-hidden="true">\n';
  rules.zulip_spoiler_close = () => "</div></div>\n";
  rules.bullet_list_open = (tokens, idx, _o, _e, self) => `<ul${self.renderAttrs(tokens[idx]!)}>\n`;
  rules.ordered_list_open = (tokens, idx, _o, _e, self) => `<ol${self.renderAttrs(tokens[idx]!)}>\n`;
  const renderToken = md.renderer.renderToken.bind(md.renderer);
  // A paragraph removed for an inline image preview leaves nothing behind.
  rules.paragraph_open = (tokens, idx, options) =>
    (tokens[idx]!.meta as { removed?: boolean } | null)?.removed ? "" : renderToken(tokens, idx, options);
  rules.paragraph_close = (tokens, idx, options) =>
    (tokens[idx]!.meta as { removed?: boolean } | null)?.removed ? "" : renderToken(tokens, idx, options);
}

// ---------------------------------------------------------------- plugin

export function zulipPlugin(md: MarkdownIt): void {
  md.block.ruler.disable(["lheading", "reference", "html_block"]);
  md.block.ruler.at("fence", ruleFence, { alt: ["paragraph", "blockquote", "list"] });
  md.block.ruler.at("paragraph", ruleParagraph);
  md.block.ruler.before("blockquote", "zulip_empty_quote", ruleEmptyQuote);

  const inline = md.inline.ruler;
  inline.disable(["linkify", "escape", "strikethrough", "image", "autolink", "html_inline", "entity"]);
  inline.at("text", ruleText);
  inline.before("text", "zulip_autolink", ruleAutolink);
  inline.at("newline", ruleNewline);
  inline.at("backticks", ruleBackticks);
  inline.at("emphasis", ruleEmphasis);
  inline.at("link", ruleLink);
  inline.after("link", "zulip_linkifier", ruleLinkifier);
  inline.before("emphasis", "zulip_user_mention", ruleUserMention);
  inline.before("emphasis", "zulip_group_mention", ruleGroupMention);
  inline.before("emphasis", "zulip_tex", ruleTex);
  inline.before("emphasis", "zulip_channel_link", ruleChannelLink);
  inline.before("emphasis", "zulip_time", ruleTime);
  inline.before("emphasis", "zulip_del", ruleDel);
  inline.push("zulip_emoji", ruleEmoji);
  inline.push("zulip_emoticon", ruleEmoticon);
  inline.push("zulip_unicode_emoji", ruleUnicodeEmoji);
  md.inline.ruler2.disable(["strikethrough"]);
  md.inline.ruler2.before("emphasis", "zulip_emphasis_single_line", emphasisSingleLine);
  md.inline.ruler2.after("emphasis", "zulip_strong_outside_em", strongOutsideEm);

  md.core.ruler.disable(["linkify", "replacements", "smartquotes"]);
  md.core.ruler.at("inline", coreInline);
  md.core.ruler.push("zulip_postprocess", corePostprocess);

  installRenderer(md);
}
