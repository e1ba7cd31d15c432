// Zulip's search syntax: words to search for, mixed with operators
// (`channel:design topic:"new logo" sender:ada@example.com has:link -is:starred
// logo`). The text is split into the server's narrow terms here, as Zulip's
// web app does; the server evaluates them (full-text search included). A
// search narrow is written in the location hash as Zulip writes narrows:
// #narrow/channel/12-design/topic/new.20logo/search/logo.
import { useChannels } from "./channels.ts";
import { decodeHashComponent, encodeHashComponent, type Narrow } from "./narrow.ts";
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
