// Recent conversations (Zulip's recent_view_data): every topic and direct
// conversation of the messages the client has seen, newest first, with who
// took part and when. Filled, as Zulip's web app does, by a narrow-less
// GET /messages from the newest message back (400 at first, 1,000 more at a
// time on "Load more"), and kept by message, move and deletion events, which
// are taken in from the start even before the first page is asked for.
import { create } from "zustand";
import { api } from "../api/client.ts";
import type { Message } from "../api/types.ts";
import { dmParticipants } from "./narrow.ts";

export interface RecentConversation {
  /** "topic:<channel id>:<lowercased topic>" or "dm:<participant ids>". */
  key: string;
  kind: "topic" | "dm";
  streamId: number;
  /** The topic as its newest message spells it ("" for direct conversations). */
  topic: string;
  /** A direct conversation's other participants (yourself alone for notes to self), ascending; the unreads store's DM key joined. */
  userIds: number[];
  maxId: number;
  /** Seconds, of the newest message. */
  timestamp: number;
  /** Who sent messages in it, the most recent sender first. */
  senders: number[];
  /** Whether you sent one of its messages. */
  participated: boolean;
}

export interface RecentState {
  /** Most recent first. */
  conversations: RecentConversation[];
  status: "idle" | "loading" | "loaded" | "error";
  /** Older history is still on the server: "Load more" asks for it. */
  foundOldest: boolean;
  loadingMore: boolean;
}

export const useRecent = create<RecentState>(() => ({ conversations: [], status: "idle", foundOldest: false, loadingMore: false }));

/** Zulip's recent_view_initial_fetch_size and its "load more" batch. */
export const FIRST_FETCH = 400;
export const MORE_FETCH = 1000;

interface Entry {
  id: number;
  key: string;
  kind: "topic" | "dm";
  streamId: number;
  topic: string;
  userIds: number[];
  senderId: number;
  timestamp: number;
}

const entries = new Map<number, Entry>();
const byConversation = new Map<string, Set<number>>();
const summaries = new Map<string, RecentConversation>();
let selfId = 0;
let generation = 0;
/** The oldest message id asked about so far: "Load more" continues from there. */
let oldestFetched: number | null = null;

function topicKey(streamId: number, topic: string): string {
  return `topic:${streamId}:${topic.toLowerCase()}`;
}

function entryOf(message: Pick<Message, "id" | "type" | "stream_id" | "subject" | "display_recipient" | "sender_id" | "timestamp">): Entry | null {
  if (message.type === "stream") {
    if (message.stream_id === undefined) return null;
    return { id: message.id, key: topicKey(message.stream_id, message.subject), kind: "topic", streamId: message.stream_id, topic: message.subject, userIds: [], senderId: message.sender_id, timestamp: message.timestamp };
  }
  const userIds = dmParticipants(message as Message, selfId);
  if (userIds.length === 0) return null;
  return { id: message.id, key: `dm:${userIds.join(",")}`, kind: "dm", streamId: 0, topic: "", userIds, senderId: message.sender_id, timestamp: message.timestamp };
}

function summarize(key: string): void {
  const ids = byConversation.get(key);
  if (!ids || ids.size === 0) {
    byConversation.delete(key);
    summaries.delete(key);
    return;
  }
  const list = [...ids].sort((a, b) => b - a).map((id) => entries.get(id)!);
  const newest = list[0]!;
  const senders: number[] = [];
  for (const e of list) if (!senders.includes(e.senderId)) senders.push(e.senderId);
  summaries.set(key, {
    key,
    kind: newest.kind,
    streamId: newest.streamId,
    topic: newest.topic,
    userIds: newest.userIds,
    maxId: newest.id,
    timestamp: newest.timestamp,
    senders,
    participated: senders.includes(selfId),
  });
}

function publish(): void {
  useRecent.setState({ conversations: [...summaries.values()].sort((a, b) => b.maxId - a.maxId) });
}

function put(entry: Entry, touched: Set<string>): void {
  const old = entries.get(entry.id);
  if (old) {
    byConversation.get(old.key)?.delete(entry.id);
    touched.add(old.key);
  }
  entries.set(entry.id, entry);
  let ids = byConversation.get(entry.key);
  if (!ids) byConversation.set(entry.key, (ids = new Set()));
  ids.add(entry.id);
  touched.add(entry.key);
}

function take(messages: Message[]): void {
  const touched = new Set<string>();
  for (const m of messages) {
    const entry = entryOf(m);
    if (entry) put(entry, touched);
  }
  for (const key of touched) summarize(key);
  if (touched.size > 0) publish();
}

interface FetchReply {
  messages: Message[];
  found_oldest: boolean;
}

async function fetchOlder(count: number): Promise<FetchReply> {
  return api.get<FetchReply>("/messages", {
    anchor: oldestFetched === null ? "newest" : String(oldestFetched),
    num_before: count,
    num_after: 0,
    include_anchor: oldestFetched === null,
    narrow: [],
    // Only who, where and when is shown: the raw text is cheaper to send than rendered HTML.
    apply_markdown: false,
    client_gravatar: true,
  });
}

function noteFetched(reply: FetchReply): void {
  for (const m of reply.messages) oldestFetched = oldestFetched === null ? m.id : Math.min(oldestFetched, m.id);
  take(reply.messages);
}

export const recentStore = {
  /** A new event queue: what was held may have missed events; the view asks again when shown. */
  reset(self: number): void {
    generation += 1;
    selfId = self;
    entries.clear();
    byConversation.clear();
    summaries.clear();
    oldestFetched = null;
    useRecent.setState({ conversations: [], status: "idle", foundOldest: false, loadingMore: false });
  },
  /** The first page (the newest FIRST_FETCH messages), unless asked for already. */
  async load(): Promise<void> {
    if (useRecent.getState().status === "loading" || useRecent.getState().status === "loaded") return;
    const gen = generation;
    useRecent.setState({ status: "loading" });
    try {
      const reply = await fetchOlder(FIRST_FETCH);
      if (gen !== generation) return;
      noteFetched(reply);
      useRecent.setState({ status: "loaded", foundOldest: reply.found_oldest });
    } catch {
      if (gen === generation) useRecent.setState({ status: "error" });
    }
  },
  /** After a failed first page: asked for again when the view is next shown (at once if it is on screen). */
  retry(): void {
    if (useRecent.getState().status === "error") useRecent.setState({ status: "idle" });
  },
  /** The next MORE_FETCH older messages. */
  async loadMore(): Promise<void> {
    const state = useRecent.getState();
    if (state.status !== "loaded" || state.loadingMore || state.foundOldest) return;
    const gen = generation;
    useRecent.setState({ loadingMore: true });
    try {
      const reply = await fetchOlder(MORE_FETCH);
      if (gen !== generation) return;
      noteFetched(reply);
      useRecent.setState({ foundOldest: reply.found_oldest, loadingMore: false });
    } catch {
      if (gen === generation) useRecent.setState({ loadingMore: false });
    }
  },
  /** A message event. */
  addMessage(message: Message): void {
    take([message]);
  },
  /** Messages moved to another channel and/or topic (an update_message event). */
  move(messageIds: number[], streamId: number | undefined, topic: string | undefined): void {
    const touched = new Set<string>();
    for (const id of messageIds) {
      const old = entries.get(id);
      if (!old || old.kind !== "topic") continue;
      const newStream = streamId ?? old.streamId;
      const newTopic = topic ?? old.topic;
      put({ ...old, streamId: newStream, topic: newTopic, key: topicKey(newStream, newTopic) }, touched);
    }
    for (const key of touched) summarize(key);
    if (touched.size > 0) publish();
  },
  remove(messageIds: number[]): void {
    const touched = new Set<string>();
    for (const id of messageIds) {
      const old = entries.get(id);
      if (!old) continue;
      entries.delete(id);
      byConversation.get(old.key)?.delete(id);
      touched.add(old.key);
    }
    for (const key of touched) summarize(key);
    if (touched.size > 0) publish();
  },
};

/** The view's filters, kept in this browser across reloads as Zulip's web app keeps them (the text filter only while the page is open). */
export interface RecentFilters {
  participated: boolean;
  unread: boolean;
  includeMuted: boolean;
  text: string;
}

const FILTERS_KEY = "parley-recent-filters";

function readFilters(): RecentFilters {
  const filters: RecentFilters = { participated: false, unread: false, includeMuted: false, text: "" };
  try {
    const saved = JSON.parse(window.localStorage.getItem(FILTERS_KEY) ?? "{}") as Partial<Record<keyof RecentFilters, unknown>>;
    filters.participated = saved.participated === true;
    filters.unread = saved.unread === true;
    filters.includeMuted = saved.includeMuted === true;
  } catch {
    // Storage disabled or garbled: no filters.
  }
  return filters;
}

export const useRecentFilters = create<RecentFilters>(() => readFilters());

export const recentFilters = {
  toggle(filter: "participated" | "unread" | "includeMuted"): void {
    useRecentFilters.setState((s) => ({ [filter]: !s[filter] }));
    const { participated, unread, includeMuted } = useRecentFilters.getState();
    try {
      window.localStorage.setItem(FILTERS_KEY, JSON.stringify({ participated, unread, includeMuted }));
    } catch {
      // Storage disabled: the filters hold for this page only.
    }
  },
  setText(text: string): void {
    useRecentFilters.setState({ text });
  },
};
