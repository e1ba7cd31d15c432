// Zulip's search syntax: words to search for, mixed with operators
// (`channel:design topic:"new logo" sender:ada@example.com has:link -is:starred
// logo`). The text is split into the server's narrow terms here, as Zulip's
// web app does; the server evaluates them (full-text search included). A
// search narrow is written in the location hash as Zulip writes narrows:
// #narrow/channel/12-design/topic/new.20logo/search/logo.
import { useChannels } from "./channels.ts";
import { decodeHashComponent, encodeHashComponent, type Narrow } from "./narrow.ts";
import { matchChannels, matchPeople, matchTopics } from "./suggestions.ts";
import { useUsers } from "./users.ts";

export interface SearchTerm {
  operator: string;
  operand: string;
  negated: boolean;
}

/** The operators the search box understands (the server's, with Zulip's old names). */
const OPERATORS = new Set(["channel", "stream", "channels", "streams", "topic", "subject", "sender", "from", "dm", "pm-with", "dm-including", "group-pm-with", "is", "has", "in", "id", "near", "with", "search"]);

const CANONICAL: Record<string, string> = { stream: "channel", streams: "channels", subject: "topic", from: "sender", "pm-with": "dm" };

function unquote(text: string): string {
  return text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1) : text;
}

/** Splits a search text into terms: operators, and the remaining words as one `search` term. */
export function parseSearch(text: string): SearchTerm[] {
  const terms: SearchTerm[] = [];
  const words: string[] = [];
  for (const token of text.match(/[^\s"]*"[^"]*"?|\S+/g) ?? []) {
    const match = /^(-?)([a-z-]+):(.*)$/i.exec(token);
    const operator = match ? match[2]!.toLowerCase() : "";
    if (!match || !OPERATORS.has(operator) || match[3] === "") {
      words.push(unquote(token));
      continue;
    }
    // Zulip writes a space inside an operand as "+", or the operand is quoted.
    const raw = match[3]!;
    const operand = raw.startsWith('"') ? unquote(raw) : raw.replace(/\+/g, " ").replace(/%2B/gi, "+");
    const canonical = CANONICAL[operator] ?? operator;
    if (canonical === "search") words.push(operand);
    else terms.push({ operator: canonical, operand, negated: match[1] === "-" });
  }
  const search = words.join(" ").trim();
  if (search !== "") terms.push({ operator: "search", operand: search, negated: false });
  return terms;
}

function channelIdByName(name: string): number | undefined {
  const lower = name.toLowerCase();
  for (const sub of Object.values(useChannels.getState().subscriptions)) if (sub.name.toLowerCase() === lower) return sub.stream_id;
  return undefined;
}

function userIdByEmailOrName(text: string): number | undefined {
  const lower = text.toLowerCase();
  for (const u of Object.values(useUsers.getState().byId)) if (u.email.toLowerCase() === lower || u.full_name.toLowerCase() === lower) return u.user_id;
  return undefined;
}

/** The server's narrow for a search text (channel and people by ID where known, else as written: the server resolves names and emails). */
export function searchApiNarrow(text: string): { operator: string; operand: string | number | number[]; negated?: boolean }[] {
  return parseSearch(text).map((t) => {
    let operand: string | number | number[] = t.operand;
    if (t.operator === "channel") operand = channelIdByName(t.operand) ?? (/^\d+$/.test(t.operand) ? Number(t.operand) : t.operand);
    else if (t.operator === "sender" || t.operator === "dm-including") operand = userIdByEmailOrName(t.operand) ?? t.operand;
    else if (t.operator === "dm") {
      const ids = t.operand.split(",").map((p) => userIdByEmailOrName(p.trim()));
      operand = ids.every((id): id is number => id !== undefined) ? ids : t.operand;
    }
    return t.negated ? { operator: t.operator, operand, negated: true } : { operator: t.operator, operand };
  });
}

/** A term back in search syntax (spaces as "+", Zulip's way). */
function unparseTerm(t: SearchTerm): string {
  if (t.operator === "search") return t.operand;
  return `${t.negated ? "-" : ""}${t.operator}:${t.operand.replace(/\+/g, "%2B").replace(/ /g, "+")}`;
}

export function unparseSearch(terms: SearchTerm[]): string {
  return terms.map(unparseTerm).join(" ");
}

function slug(name: string): string {
  return name.replace(/[^\p{L}\p{N}_-]+/gu, "-");
}

/** The location hash of a search: each term as operator/operand, channels as ID-name. */
export function searchHash(text: string): string {
  const parts = parseSearch(text).map((t) => {
    let operand = t.operand;
    if (t.operator === "channel") {
      const id = channelIdByName(t.operand);
      if (id !== undefined) operand = `${id}-${slug(t.operand)}`;
    }
    return `${t.negated ? "-" : ""}${t.operator}/${encodeHashComponent(operand)}`;
  });
  return `#narrow/${parts.join("/")}`;
}

/**
 * The search text a hash path names, when it is more than one simple narrow
 * (a channel, a topic, one conversation, one `is:` view): a search, or any
 * other operator, or a negation. null for the simple narrows.
 */
export function searchFromHashParts(parts: string[]): string | null {
  const terms: SearchTerm[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const rawOperator = parts[i]!;
    const negated = rawOperator.startsWith("-");
    const operator = CANONICAL[negated ? rawOperator.slice(1) : rawOperator] ?? (negated ? rawOperator.slice(1) : rawOperator);
    let operand = decodeHashComponent(parts[i + 1]!);
    if (operator === "near" || operator === "with") continue;
    if (operator === "channel") {
      const id = /^(\d+)(-|$)/.exec(operand)?.[1];
      if (id !== undefined) operand = useChannels.getState().subscriptions[Number(id)]?.name ?? id;
    }
    terms.push({ operator, operand, negated });
  }
  const simple =
    terms.every((t) => !t.negated) &&
    (terms.every((t) => t.operator === "channel" || t.operator === "topic") ||
      (terms.length === 1 && (terms[0]!.operator === "dm" || (terms[0]!.operator === "is" && ["dm", "private", "mentioned", "starred"].includes(terms[0]!.operand)))));
  return simple || terms.length === 0 ? null : unparseSearch(terms);
}

/** What the search box starts with in a narrow: its operators, so typed words search within it (Zulip's way). */
export function narrowSearchText(narrow: Narrow | null): string {
  if (!narrow) return "";
  const name = (id: number) => useChannels.getState().subscriptions[id]?.name ?? String(id);
  const email = (id: number) => useUsers.getState().byId[id]?.email ?? String(id);
  switch (narrow.kind) {
    case "channel":
      return `${unparseTerm({ operator: "channel", operand: name(narrow.streamId), negated: false })} `;
    case "topic":
      return `${unparseTerm({ operator: "channel", operand: name(narrow.streamId), negated: false })} ${unparseTerm({ operator: "topic", operand: narrow.topic, negated: false })} `;
    case "dm":
      return `dm:${narrow.userIds.map(email).join(",")} `;
    case "all-dms":
      return "is:dm ";
    case "mentions":
      return "is:mentioned ";
    case "starred":
      return "is:starred ";
    case "search":
      return narrow.query;
    case "all":
      return "";
  }
}

// ---- suggestions while typing (Zulip's search typeahead) ----

/** What the search box may suggest for the word being typed. */
export type SearchSuggestion =
  /** The text as typed: picking it searches. */
  | { kind: "typed"; insert: string }
  /** An operator: without an operand (`channel:`) its operands are suggested next; `is:starred` is complete. */
  | { kind: "operator"; insert: string; term: string; negated: boolean }
  | { kind: "person"; insert: string; operator: "sender" | "dm" | "dm-including"; userId: number; negated: boolean }
  | { kind: "channel"; insert: string; streamId: number; negated: boolean }
  | { kind: "topic"; insert: string; streamId: number; topic: string; negated: boolean };

/** The operators suggested by name: the empty ones lead to their operands, the others are complete terms. */
export const SUGGESTED_OPERATORS = [
  "channel:",
  "topic:",
  "sender:",
  "dm:",
  "dm-including:",
  "is:starred",
  "is:mentioned",
  "is:dm",
  "is:unread",
  "is:resolved",
  "is:followed",
  "has:link",
  "has:image",
  "has:attachment",
  "has:reaction",
] as const;

const SUGGESTION_LIMIT = 12;

/** An operand as the search box writes it (spaces as "+"). */
function operandText(operand: string): string {
  return operand.replace(/\+/g, "%2B").replace(/ /g, "+");
}

/** The channel a search text names (its `channel:` term), for suggesting that channel's topics. */
export function searchChannel(text: string): number | undefined {
  const term = parseSearch(text).find((t) => t.operator === "channel" && !t.negated);
  return term ? channelIdByName(term.operand) : undefined;
}

/**
 * Suggestions for the word before the caret: the typed text first (Enter
 * searches it), then operators, people, channels and the chosen channel's
 * topics that fit it (those known: the caller fetches a channel's topics when
 * missing). null when no word is being typed.
 */
export function searchSuggestions(before: string): { start: number; items: SearchSuggestion[] } | null {
  const start = before.search(/\S*$/);
  const token = before.slice(start);
  if (token === "") return null;
  const negated = token.startsWith("-") && token.length > 1;
  const sign = negated ? "-" : "";
  const body = negated ? token.slice(1) : token;
  const match = /^([a-z-]+):(.*)$/i.exec(body);
  const operator = match ? match[1]!.toLowerCase() : "";
  // "channel:" alone is not worth searching: only its operands are suggested.
  const items: SearchSuggestion[] = match && OPERATORS.has(operator) && match[2] === "" ? [] : [{ kind: "typed", insert: token }];
  const operatorTerm = (term: string): SearchSuggestion => ({ kind: "operator", insert: term.endsWith(":") ? sign + term : `${sign}${term} `, term, negated });
  const people = (operator: "sender" | "dm" | "dm-including", query: string, limit: number) => {
    for (const u of matchPeople(query).slice(0, limit)) items.push({ kind: "person", insert: `${sign}${operator}:${u.email} `, operator, userId: u.user_id, negated });
  };
  const channels = (query: string, limit: number) => {
    for (const c of matchChannels(query).slice(0, limit)) items.push({ kind: "channel", insert: `${sign}channel:${operandText(c.name)} `, streamId: c.streamId, negated });
  };
  if (match && OPERATORS.has(operator)) {
    const canonical = CANONICAL[operator] ?? operator;
    const operand = match[2]!.replace(/\+/g, " ").replace(/%2B/gi, "+");
    const q = operand.toLowerCase();
    if (canonical === "channel") channels(operand, SUGGESTION_LIMIT);
    else if (canonical === "sender" || canonical === "dm" || canonical === "dm-including") people(canonical, operand, SUGGESTION_LIMIT);
    else if (canonical === "topic") {
      const streamId = searchChannel(before.slice(0, start));
      if (streamId !== undefined) {
        for (const name of matchTopics(streamId, operand)) {
          items.push({ kind: "topic", insert: `${sign}topic:${operandText(name)} `, streamId, topic: name, negated });
        }
      }
    } else if (canonical === "is" || canonical === "has") {
      for (const term of SUGGESTED_OPERATORS) if (term.startsWith(`${canonical}:${q}`) && term.length > canonical.length + 1) items.push(operatorTerm(term));
    }
  } else {
    // A word: the operators it starts (or whose operand it starts), then people and channels named so.
    const q = body.toLowerCase();
    for (const term of SUGGESTED_OPERATORS) {
      const [name, operand] = term.split(":") as [string, string];
      if (name.startsWith(q) || (operand !== "" && operand.startsWith(q))) items.push(operatorTerm(term));
    }
    if (!body.includes(":")) {
      for (const u of matchPeople(body).slice(0, 3)) {
        items.push({ kind: "person", insert: `${sign}sender:${u.email} `, operator: "sender", userId: u.user_id, negated });
        items.push({ kind: "person", insert: `${sign}dm:${u.email} `, operator: "dm", userId: u.user_id, negated });
      }
      channels(body, 3);
    }
  }
  const seen = new Set<string>();
  const unique = items.filter((item) => !seen.has(item.insert.trim()) && (seen.add(item.insert.trim()), true));
  return { start, items: unique.slice(0, SUGGESTION_LIMIT) };
}
