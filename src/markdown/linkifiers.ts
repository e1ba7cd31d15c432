// Realm linkifiers (Zulip's RealmFilter) in the renderer: an administrator's
// regular expression and RFC 6570 URL template, applied to message content
// and topics the way Zulip's Markdown processor applies them.
//
// Patterns run on every message, so they are compiled with re2js (RE2
// semantics, matching in time linear in the input: no catastrophic
// backtracking, whatever the pattern), as Zulip compiles them with re2.
import { RE2JS } from "re2js";
import { sanitizeUrl, topicUrlMatches } from "./links.ts";

/** Zulip's LinkifierDict: what GET /realm/linkifiers and the events carry. */
export interface Linkifier {
  id: number;
  pattern: string;
  url_template: string;
}

// The groups Zulip wraps every pattern in (prepare_linkifier_pattern): a
// match must follow the start of the text, whitespace, NEL, a separator or
// one of '"(,:< and be followed by the end or a character that is neither a
// letter nor a number.
const BEFORE_GROUP = "linkifier_before_match";
const OUTER_GROUP = "linkifier_actual_match";
const AFTER_GROUP = "linkifier_after_match";

function preparedPattern(source: string): string {
  return `(?P<${BEFORE_GROUP}>^|\\s|\u0085|\\pZ|['"\\(,:<])(?P<${OUTER_GROUP}>${source})(?P<${AFTER_GROUP}>$|[^\\pL\\pN])`;
}

// ---------------------------------------------------------------- RFC 6570

interface VarSpec {
  name: string;
  /** The :N prefix modifier (characters), or 0. */
  prefix: number;
}

type TemplatePart = string | { operator: string; vars: VarSpec[] };

interface OperatorRules {
  first: string;
  separator: string;
  named: boolean;
  ifEmpty: string;
  reserved: boolean;
}

const OPERATORS: Record<string, OperatorRules> = {
  "": { first: "", separator: ",", named: false, ifEmpty: "", reserved: false },
  "+": { first: "", separator: ",", named: false, ifEmpty: "", reserved: true },
  "#": { first: "#", separator: ",", named: false, ifEmpty: "", reserved: true },
  ".": { first: ".", separator: ".", named: false, ifEmpty: "", reserved: false },
  "/": { first: "/", separator: "/", named: false, ifEmpty: "", reserved: false },
  ";": { first: ";", separator: ";", named: true, ifEmpty: "", reserved: false },
  "?": { first: "?", separator: "&", named: true, ifEmpty: "=", reserved: false },
  "&": { first: "&", separator: "&", named: true, ifEmpty: "=", reserved: false },
};

const UNRESERVED_RE = /[A-Za-z0-9\-._~]/;
const RESERVED_RE = /[:/?#[\]@!$&'()*+,;=]/;
const HEX2_RE = /^[0-9A-Fa-f]{2}$/;

/** Percent-encodes `text`, keeping unreserved characters, and reserved ones and %XX triplets when `reserved`. */
function encode(text: string, reserved: boolean): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (UNRESERVED_RE.test(ch) || (reserved && RESERVED_RE.test(ch))) out += ch;
    else if (reserved && ch === "%" && HEX2_RE.test(text.slice(i + 1, i + 3))) {
      out += text.slice(i, i + 3);
      i += 2;
    } else {
      const cp = text.codePointAt(i)!;
      if (cp > 0xffff) i++;
      // A lone surrogate (no UTF-8 form) stands for U+FFFD, as Python's encoder with errors="replace".
      const char = cp >= 0xd800 && cp <= 0xdfff ? "\ufffd" : String.fromCodePoint(cp);
      out += encodeURIComponent(char).replace(/[!'()*]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
    }
  }
  return out;
}

/** Parses a template already known to be valid (domain/linkifiers.ts checks them when stored); null otherwise. */
export function parseUrlTemplate(template: string): TemplatePart[] | null {
  const parts: TemplatePart[] = [];
  let pos = 0;
  while (pos < template.length) {
    const open = template.indexOf("{", pos);
    if (open === -1) {
      parts.push(template.slice(pos));
      break;
    }
    if (open > pos) parts.push(template.slice(pos, open));
    const close = template.indexOf("}", open);
    if (close === -1) return null;
    let body = template.slice(open + 1, close);
    let operator = "";
    if (body !== "" && body[0]! in OPERATORS) {
      operator = body[0]!;
      body = body.slice(1);
    }
    const vars: VarSpec[] = [];
    for (const spec of body.split(",")) {
      const m = /^([^:*]+)(?::([0-9]+)|\*)?$/.exec(spec);
      if (!m) return null;
      vars.push({ name: m[1]!, prefix: m[2] ? Number(m[2]) : 0 });
    }
    parts.push({ operator, vars });
    pos = close + 1;
  }
  return parts;
}

/** RFC 6570 expansion with string values; undefined (null) variables are left out, as the spec says. */
export function expandUrlTemplate(parts: readonly TemplatePart[], values: Readonly<Record<string, string | null>>): string {
  let out = "";
  for (const part of parts) {
    if (typeof part === "string") {
      // Literal text: characters a URI may not hold are percent-encoded, %XX kept.
      out += encode(part, true);
      continue;
    }
    const rules = OPERATORS[part.operator]!;
    const expanded: string[] = [];
    for (const spec of part.vars) {
      const raw = values[spec.name];
      if (raw === undefined || raw === null) continue;
      const value = spec.prefix > 0 ? [...raw].slice(0, spec.prefix).join("") : raw;
      const encoded = encode(value, rules.reserved);
      if (!rules.named) expanded.push(encoded);
      else expanded.push(encoded === "" ? spec.name + rules.ifEmpty : `${spec.name}=${encoded}`);
    }
    if (expanded.length > 0) out += rules.first + expanded.join(rules.separator);
  }
  return out;
}

// ---------------------------------------------------------------- compiled set

export interface CompiledLinkifier {
  id: number;
  /** null: the pattern does not compile with Zulip's wrapping (then it matches nothing, as in Zulip). */
  regex: RE2JS | null;
  /**
   * The bare pattern: a text it does not match anywhere cannot hold a match of
   * the wrapped one, and RE2 answers "is there a match" several times faster
   * than it finds matches with their groups.
   */
  probe: RE2JS | null;
  template: TemplatePart[] | null;
  /** Names of the pattern's own groups (the template's variables). */
  groups: string[];
}

/** The organization's linkifiers, in the order they apply. */
export type CompiledLinkifiers = readonly CompiledLinkifier[];

export function compileLinkifiers(linkifiers: readonly Linkifier[]): CompiledLinkifiers {
  return linkifiers.map((l) => {
    let regex: RE2JS | null = null;
    try {
      regex = RE2JS.compile(preparedPattern(l.pattern));
    } catch {
      regex = null;
    }
    let probe: RE2JS | null = null;
    if (regex) {
      try {
        probe = RE2JS.compile(l.pattern);
      } catch {
        probe = null;
      }
    }
    const groups = regex ? Object.keys(regex.namedGroups()).filter((n) => n !== BEFORE_GROUP && n !== OUTER_GROUP && n !== AFTER_GROUP) : [];
    return { id: l.id, regex, probe, template: parseUrlTemplate(l.url_template), groups };
  });
}

interface RawMatch {
  /** Index of the whole match (the character before included), as Zulip's topic_links orders by it. */
  index: number;
  start: number;
  end: number;
  afterLength: number;
  url: string;
}

/** The expanded URL of the current match, or null when there is none. */
function matchUrl(linkifier: CompiledLinkifier, m: ReturnType<RE2JS["matcher"]>): string | null {
  if (!linkifier.template) return null;
  const values: Record<string, string | null> = {};
  for (const name of linkifier.groups) values[name] = m.group(name);
  return expandUrlTemplate(linkifier.template, values);
}

/**
 * Every match of one linkifier, left to right: each search starts where the
 * previous match's text ended (the character after it may begin the next
 * one), as Zulip's loops do.
 */
function* matchesOf(linkifier: CompiledLinkifier, text: string): Generator<RawMatch> {
  // Most texts hold no match: RE2 says so fastest without positions.
  if (!linkifier.regex || (linkifier.probe && !linkifier.probe.test(text))) return;
  const probe = linkifier.probe?.matcher(text);
  const m = linkifier.regex.matcher(text);
  let pos = 0;
  while (pos <= text.length) {
    // No match of the bare pattern starts before the probe's leftmost one, so
    // neither does the wrapped pattern's text: its search (the slow one, with
    // groups) starts one character before it, for the character it needs there.
    let from = pos;
    if (probe) {
      if (!probe.find(pos)) return;
      from = Math.max(pos, probe.start() - 1);
    }
    if (!m.find(from)) return;
    const start = m.start(OUTER_GROUP);
    const end = m.end(OUTER_GROUP);
    const afterLength = m.end(AFTER_GROUP) - m.start(AFTER_GROUP);
    const url = matchUrl(linkifier, m);
    if (url !== null) yield { index: m.start(), start, end, afterLength, url };
    // Never search the same place twice (an empty match).
    pos = Math.max(m.end() - afterLength, m.start() + 1);
  }
}

/** A linkifier link in a text: [start, end) becomes <a href="href">. */
export interface LinkifierMatch {
  start: number;
  end: number;
  href: string;
}

/**
 * The linkifier links of one text block (Zulip's LinkifierPattern, applied
 * once per linkifier in order). A linkifier's links hide their text from the
 * ones after it: Zulip replaces each with a placeholder that starts and ends
 * with a control character, so a later match can neither overlap it nor
 * start right after it. The renderer only takes the links it reaches as
 * text (not those inside code, links or other syntax that comes first).
 * Returns them by start.
 */
export function linkifierMatches(text: string, linkifiers: CompiledLinkifiers): LinkifierMatch[] {
  const found: LinkifierMatch[] = [];
  let masked = text;
  for (const linkifier of linkifiers) {
    const taken: LinkifierMatch[] = [];
    for (const m of matchesOf(linkifier, masked)) {
      if (m.end === m.start) continue;
      const href = sanitizeUrl(m.url);
      if (href === null) continue;
      // A match reaching into an earlier linkifier's link (possible only with a
      // pattern that matches control characters) is not taken.
      if (masked.slice(m.start, m.end).includes("\u0002")) continue;
      taken.push({ start: m.start, end: m.end, href });
    }
    if (taken.length === 0) continue;
    let next = "";
    let at = 0;
    for (const t of taken) {
      next += masked.slice(at, t.start) + "\u0002".repeat(t.end - t.start);
      at = t.end;
    }
    masked = next + masked.slice(at);
    found.push(...taken);
  }
  return found.sort((a, b) => a.start - b.start);
}

interface TopicMatch {
  text: string;
  url: string;
  index: number;
}

/**
 * Zulip's topic_links: every linkifier's matches (each linkifier searching
 * the whole topic), then the raw URLs; where two overlap, the earlier
 * linkifier wins, a linkifier beats a raw URL, and an earlier match beats a
 * later one of the same linkifier. Returned in topic order.
 */
export function topicLinks(topic: string, linkifiers: CompiledLinkifiers = []): { text: string; url: string }[] {
  const candidates: TopicMatch[] = [];
  for (const linkifier of linkifiers) {
    for (const m of matchesOf(linkifier, topic)) candidates.push({ text: topic.slice(m.start, m.end), url: m.url, index: m.index });
  }
  for (const m of topicUrlMatches(topic)) candidates.push(m);
  const overlap = (a: TopicMatch, b: TopicMatch) => (b.index <= a.index && a.index < b.index + b.text.length) || (a.index <= b.index && b.index < a.index + a.text.length);
  const applied: TopicMatch[] = [];
  for (const candidate of candidates) {
    if (applied.every((old) => !overlap(old, candidate))) applied.push(candidate);
  }
  return applied.sort((a, b) => a.index - b.index).map((m) => ({ url: m.url, text: m.text }));
}
