// Narrows: what the message list shows. Written in the URL's hash the way
// Zulip's web app writes them (#narrow/channel/12-general/topic/lunch), sent
// to the server as its narrow operators, and matched against new messages so
// an open list can take them in without a refetch.
import type { Message } from "../api/types.ts";
import { searchApiNarrow, searchFromHashParts, searchHash } from "./search.ts";

export type Narrow =
  | { kind: "all" }
  | { kind: "channel"; streamId: number }
  | { kind: "topic"; streamId: number; topic: string }
  | { kind: "dm"; userIds: number[] } // the other participants (self excluded unless alone), ascending
  | { kind: "all-dms" }
  | { kind: "mentions" }
  | { kind: "starred" }
  | { kind: "search"; query: string };

/** The views: the inbox, a message list, and the pages that are not message lists. */
export type View =
  | { kind: "inbox" }
  | { kind: "recent" }
  | { kind: "messages"; narrow: Narrow; near?: number; /** A /with/ID link: the view follows that message wherever it moved. */ with?: boolean }
  | { kind: "channels" }
  | { kind: "people" }
  | { kind: "settings" }
  | { kind: "organization" }
  | { kind: "scheduled" }
  | { kind: "drafts" };

/** Zulip's hashes of the pages that are not message lists. */
const PAGE_HASHES = { channels: "#channels/all", people: "#people", settings: "#settings/profile", organization: "#organization/organization-profile", scheduled: "#scheduled", drafts: "#drafts", recent: "#recent" } as const;

/** Zulip's hash encoding: URI-encode, then '.' for '%' (and '.' itself as '.2E'). */
export function encodeHashComponent(text: string): string {
  return encodeURIComponent(text).replace(/\./g, "%2E").replace(/%/g, ".");
}

export function decodeHashComponent(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\./g, "%"));
  } catch {
    return text;
  }
}

function slug(name: string): string {
  return name.replace(/[^\p{L}\p{N}_-]+/gu, "-");
}

export interface NameLookup {
  channelName(streamId: number): string | undefined;
}

export function narrowHash(narrow: Narrow, names: NameLookup): string {
  const channel = (id: number) => {
    const name = names.channelName(id);
    return name === undefined ? String(id) : `${id}-${encodeHashComponent(slug(name))}`;
  };
  switch (narrow.kind) {
    case "all":
      return "#feed";
    case "channel":
      return `#narrow/channel/${channel(narrow.streamId)}`;
    case "topic":
      return `#narrow/channel/${channel(narrow.streamId)}/topic/${encodeHashComponent(narrow.topic)}`;
    case "dm":
      return `#narrow/dm/${narrow.userIds.join(",")}-${narrow.userIds.length > 1 ? "group" : "dm"}`;
    case "all-dms":
      return "#narrow/is/dm";
    case "mentions":
      return "#narrow/is/mentioned";
    case "starred":
      return "#narrow/is/starred";
    case "search":
      return searchHash(narrow.query);
  }
}

export function viewHash(view: View, names: NameLookup): string {
  if (view.kind === "messages") return narrowHash(view.narrow, names);
  return view.kind === "inbox" ? "#inbox" : PAGE_HASHES[view.kind];
}

function leadingId(operand: string): number | undefined {
  const match = /^(\d+)(-|$)/.exec(operand);
  return match ? Number(match[1]) : undefined;
}

/**
 * Reads a location hash; unknown or empty hashes are the inbox. A message
 * list's hash may end in /near/ID (or /with/ID): the list opens around that
 * message.
 */
export function parseHash(hash: string, selfId: number): View {
  const view = parseViewHash(hash, selfId);
  const found = /^#?narrow\/(?:.*\/)?(near|with)\/(\d+)(?:\/|$)/.exec(hash);
  if (view.kind !== "messages" || !found) return view;
  return found[1] === "with" ? { ...view, near: Number(found[2]), with: true } : { ...view, near: Number(found[2]) };
}

function parseViewHash(hash: string, selfId: number): View {
  const path = hash.replace(/^#/, "");
  if (path === "feed" || path === "all_messages") return { kind: "messages", narrow: { kind: "all" } };
  const page = path.split("/")[0];
  if (page === "channels" || page === "streams") return { kind: "channels" };
  if (page === "people") return { kind: "people" };
  if (page === "settings") return { kind: "settings" };
  if (page === "organization") return { kind: "organization" };
  if (page === "scheduled") return { kind: "scheduled" };
  if (page === "drafts") return { kind: "drafts" };
  if (page === "recent" || page === "recent_topics") return { kind: "recent" };
  if (!path.startsWith("narrow/")) return { kind: "inbox" };
  const parts = path.slice("narrow/".length).split("/");
  const search = searchFromHashParts(parts);
  if (search !== null) return { kind: "messages", narrow: { kind: "search", query: search } };
  let streamId: number | undefined;
  let topic: string | undefined;
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const operator = parts[i]!;
    const operand = decodeHashComponent(parts[i + 1]!);
    switch (operator) {
      case "channel":
      case "stream":
        streamId = leadingId(operand);
        break;
      case "topic":
      case "subject":
        topic = operand;
        break;
      case "dm":
      case "pm-with": {
        const ids = (/^([\d,]+)/.exec(operand)?.[1] ?? "").split(",").filter(Boolean).map(Number);
        return { kind: "messages", narrow: dmNarrow(ids, selfId) };
      }
      case "is":
        if (operand === "dm" || operand === "private") return { kind: "messages", narrow: { kind: "all-dms" } };
        if (operand === "mentioned") return { kind: "messages", narrow: { kind: "mentions" } };
        if (operand === "starred") return { kind: "messages", narrow: { kind: "starred" } };
        break;
      case "search":
        return { kind: "messages", narrow: { kind: "search", query: operand } };
    }
  }
  if (streamId !== undefined && topic !== undefined) return { kind: "messages", narrow: { kind: "topic", streamId, topic } };
  if (streamId !== undefined) return { kind: "messages", narrow: { kind: "channel", streamId } };
  return { kind: "inbox" };
}

/** A DM narrow from any list of participants: others only, sorted; yourself alone for notes to self. */
export function dmNarrow(userIds: number[], selfId: number): Narrow {
  const others = [...new Set(userIds)].filter((id) => id !== selfId).sort((a, b) => a - b);
  return { kind: "dm", userIds: others.length > 0 ? others : [selfId] };
}

/** One string per narrow: the key of its message list. */
export function narrowKey(narrow: Narrow): string {
  switch (narrow.kind) {
    case "channel":
      return `channel:${narrow.streamId}`;
    case "topic":
      return `topic:${narrow.streamId}:${narrow.topic.toLowerCase()}`;
    case "dm":
      return `dm:${narrow.userIds.join(",")}`;
    case "search":
      return `search:${narrow.query}`;
    default:
      return narrow.kind;
  }
}

/** The server's narrow operators for GET /messages. */
export function apiNarrow(narrow: Narrow): { operator: string; operand: string | number | number[] }[] {
  switch (narrow.kind) {
    case "all":
      return [];
    case "channel":
      return [{ operator: "channel", operand: narrow.streamId }];
    case "topic":
      return [
        { operator: "channel", operand: narrow.streamId },
        { operator: "topic", operand: narrow.topic },
      ];
    case "dm":
      return [{ operator: "dm", operand: narrow.userIds }];
    case "all-dms":
      return [{ operator: "is", operand: "dm" }];
    case "mentions":
      return [{ operator: "is", operand: "mentioned" }];
    case "starred":
      return [{ operator: "is", operand: "starred" }];
    case "search":
      return searchApiNarrow(narrow.query);
  }
}

/** The participants of a DM message other than yourself (yourself alone for notes to self), ascending. */
export function dmParticipants(message: Message, selfId: number): number[] {
  const recipients = Array.isArray(message.display_recipient) ? message.display_recipient.map((r) => r.id) : [];
  const narrow = dmNarrow(recipients, selfId);
  return narrow.kind === "dm" ? narrow.userIds : [];
}

/**
 * Whether a message belongs to a narrow, for the narrows that can be decided
 * on the client; undefined where only the server can tell (search).
 */
export function messageMatches(narrow: Narrow, message: Message, selfId: number): boolean | undefined {
  switch (narrow.kind) {
    case "all":
      return true;
    case "channel":
      return message.type === "stream" && message.stream_id === narrow.streamId;
    case "topic":
      return message.type === "stream" && message.stream_id === narrow.streamId && message.subject.toLowerCase() === narrow.topic.toLowerCase();
    case "dm":
      return message.type === "private" && dmParticipants(message, selfId).join(",") === narrow.userIds.join(",");
    case "all-dms":
      return message.type === "private";
    case "mentions":
      return message.flags.some((f) => f === "mentioned" || f === "stream_wildcard_mentioned" || f === "topic_wildcard_mentioned");
    case "starred":
      return message.flags.includes("starred");
    case "search":
      return undefined;
  }
}

/** The conversation a message belongs to, as the narrow to open when clicking its header. */
export function conversationNarrow(message: Message, selfId: number): Narrow {
  if (message.type === "stream" && message.stream_id !== undefined) return { kind: "topic", streamId: message.stream_id, topic: message.subject };
  return { kind: "dm", userIds: dmParticipants(message, selfId) };
}

export function sameNarrow(a: Narrow, b: Narrow): boolean {
  return narrowKey(a) === narrowKey(b);
}
