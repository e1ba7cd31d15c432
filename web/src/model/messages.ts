// Messages: one table of the messages the client holds (by id), a message
// list per narrow (the ids in order, what is known about either end), and
// the outbox of messages being sent (local echo). Lists are fetched from
// GET /messages; after that only events change them.
import { create } from "zustand";
import { api, ApiError } from "../api/client.ts";
import type { Message, Reaction } from "../api/types.ts";
import { apiNarrow, messageMatches, narrowKey, type Narrow } from "./narrow.ts";
import { useUsers } from "./users.ts";

export interface MessageList {
  narrow: Narrow;
  ids: number[];
  foundOldest: boolean;
  foundNewest: boolean;
  /** The first fetch has not answered yet. */
  loading: boolean;
  loadingOlder: boolean;
  loadingNewer: boolean;
  error: string | null;
  /** Where the list was opened (the first unread, or the newest): the view scrolls there once. */
  anchorId: number | null;
  /**
   * A search's highlighted versions of its messages (the server's
   * match_content and match_subject), by message id: shown in this list
   * only, the messages table keeps each message as it is.
   */
  matches: Record<number, SearchMatch>;
}

export interface SearchMatch {
  /** Rendered HTML with <span class="highlight"> around the matched words. */
  content: string;
  /** The topic, HTML-escaped, matched words highlighted the same way. */
  subject: string;
}

export type SendTarget = { type: "stream"; streamId: number; streamName: string; topic: string } | { type: "private"; userIds: number[] };

export interface OutboxMessage {
  localId: string;
  /** What was typed and where it goes: a failed send is tried again from these, or given back to the compose box. */
  content: string;
  target: SendTarget;
  /** What the message will look like, for matching narrows and drawing the echo. */
  draft: Message;
  state: "sending" | "sent" | "failed";
  error?: string;
  /** The server's id once POST /messages answered. */
  messageId?: number;
}

export interface MessagesState {
  byId: Record<number, Message>;
  lists: Record<string, MessageList>;
  outbox: OutboxMessage[];
}

export const useMessages = create<MessagesState>(() => ({ byId: {}, lists: {}, outbox: [] }));

const PAGE = 100;
const FIRST_PAGE = 50;
/**
 * The most messages a list holds: scrolled further, the far end is let go
 * (and fetched again if scrolled back to), so a long read back through
 * history keeps the page's memory bounded.
 */
export const MAX_LIST_LENGTH = 1000;
/** Lists of narrows visited earlier are let go beyond this many (the least recently opened first). */
const MAX_LISTS = 12;
let generation = 0;
/** Narrow keys, most recently opened last. */
let openedOrder: string[] = [];
/** Bumped when a list is opened (again): a page asked for before belongs to the old list and is dropped. */
const listEpoch = new Map<string, number>();
/** Lists on screen whose reader is not at the newest end: new messages are not appended there past the cap. */
const readingBack = new Set<string>();

function sortedUnique(ids: number[]): number[] {
  return [...new Set(ids)].sort((a, b) => a - b);
}

function selfId(): number {
  return useUsers.getState().selfId;
}

/** The messages table holds messages as they are: a search's highlights stay with its list (searchMatches). */
function storeMessages(messages: Message[]): void {
  if (messages.length === 0) return;
  useMessages.setState((s) => {
    const byId = { ...s.byId };
    for (const m of messages) {
      const { match_content: _content, match_subject: _subject, ...plain } = m;
      byId[m.id] = plain;
    }
    return { byId };
  });
}

/** The highlighted versions a search's page brought (GET /messages sends them when the narrow searches words). */
function searchMatches(messages: Message[]): Record<number, SearchMatch> {
  const matches: Record<number, SearchMatch> = {};
  for (const m of messages) if (m.match_content !== undefined && m.match_subject !== undefined) matches[m.id] = { content: m.match_content, subject: m.match_subject };
  return matches;
}

/** The messages table without the messages no list or unsent message refers to any more. */
function heldOnly(byId: Record<number, Message>, lists: Record<string, MessageList>, outbox: OutboxMessage[]): Record<number, Message> {
  const held = new Set<number>();
  for (const list of Object.values(lists)) for (const id of list.ids) held.add(id);
  for (const o of outbox) if (o.messageId !== undefined) held.add(o.messageId);
  const kept: Record<number, Message> = {};
  for (const id of held) if (byId[id]) kept[id] = byId[id];
  return kept;
}

/** A list longer than MAX_LIST_LENGTH loses its far end: the oldest messages when it grew at the newest end, and the reverse. */
function trimmed(list: MessageList, grewAt: "oldest" | "newest", slack = 0): MessageList {
  if (list.ids.length <= MAX_LIST_LENGTH + slack) return list;
  const ids = grewAt === "oldest" ? list.ids.slice(0, MAX_LIST_LENGTH) : list.ids.slice(-MAX_LIST_LENGTH);
  const matches: Record<number, SearchMatch> = {};
  for (const id of ids) if (list.matches[id]) matches[id] = list.matches[id];
  return grewAt === "oldest" ? { ...list, ids, matches, foundNewest: false } : { ...list, ids, matches, foundOldest: false };
}

/** Puts a grown list in place, trimming it and letting go of the messages nothing holds any more. */
function replaceGrownList(key: string, grewAt: "oldest" | "newest", patch: (list: MessageList) => Partial<MessageList>): void {
  useMessages.setState((s) => {
    const list = s.lists[key];
    if (!list) return s;
    const grown = { ...list, ...patch(list) };
    const next = trimmed(grown, grewAt);
    const lists = { ...s.lists, [key]: next };
    // Only a trim lets messages go.
    return next === grown ? { lists } : { lists, byId: heldOnly(s.byId, lists, s.outbox) };
  });
}

/** Whether a message id falls inside the stretch of history a list holds, so it can be put in place without a refetch. */
function fitsRange(list: MessageList, id: number): boolean {
  if (list.loading) return false;
  if (list.ids.length === 0) return list.foundOldest && list.foundNewest;
  return (list.foundOldest || id >= list.ids[0]!) && (list.foundNewest || id <= list.ids.at(-1)!);
}

function patchList(key: string, patch: (list: MessageList) => Partial<MessageList>): void {
  useMessages.setState((s) => {
    const list = s.lists[key];
    if (!list) return s;
    return { lists: { ...s.lists, [key]: { ...list, ...patch(list) } } };
  });
}

interface FetchReply {
  messages: Message[];
  found_oldest: boolean;
  found_newest: boolean;
  found_anchor: boolean;
  anchor: number;
}

async function fetchMessages(narrow: Narrow, anchor: number | "first_unread" | "newest" | "oldest", before: number, after: number, includeAnchor = true): Promise<FetchReply> {
  return api.get<FetchReply>("/messages", {
    anchor: typeof anchor === "number" ? String(anchor) : anchor,
    num_before: before,
    num_after: after,
    include_anchor: includeAnchor,
    narrow: apiNarrow(narrow),
    apply_markdown: true,
    client_gravatar: false,
  });
}

let localCounter = 0;

/**
 * A first page asked for before the event queue existed (beside POST
 * /register, to save a round trip at start): open() takes it instead of
 * asking again.
 */
let early: { key: string; anchor: number | "first_unread"; reply: Promise<FetchReply> } | null = null;

export const messagesStore = {
  /** Forget everything (a new event queue: what we hold may have missed events). */
  reset(): void {
    generation += 1;
    openedOrder = [];
    early = null;
    listEpoch.clear();
    useMessages.setState({ byId: {}, lists: {}, outbox: useMessages.getState().outbox.filter((o) => o.state !== "sent") });
  },

  /** The list on screen counts as the most recently opened: the last to be let go. */
  shown(key: string): void {
    if (openedOrder.at(-1) !== key) openedOrder = [...openedOrder.filter((k) => k !== key), key];
  },

  /** Whether the reader of a list on screen is at its newest end (the view follows new messages). */
  following(key: string, atNewest: boolean): void {
    if (atNewest) readingBack.delete(key);
    else readingBack.add(key);
  },

  /** A first page asked for at registration but not used by the view it was for: forgotten. */
  discardPrefetch(): void {
    early = null;
  },

  /** Asks for a narrow's first page now, while the event queue is being registered; the next open() of it uses the reply. */
  prefetch(narrow: Narrow, anchor: number | "first_unread" = "first_unread"): void {
    const reply = fetchMessages(narrow, anchor, FIRST_PAGE, FIRST_PAGE);
    reply.catch(() => undefined);
    early = { key: narrowKey(narrow), anchor, reply };
  },

  /**
   * Opens a narrow's list unless already held: fetched around the first
   * unread, or around a message (a /near/ID link; then fetched again even
   * when held).
   */
  async open(narrow: Narrow, force = false, anchor: number | "first_unread" = "first_unread"): Promise<void> {
    const key = narrowKey(narrow);
    const existing = useMessages.getState().lists[key];
    if (existing && !force && !existing.error) return;
    const prefetched = early?.key === key && early.anchor === anchor ? early.reply : null;
    early = null;
    const gen = generation;
    const epoch = (listEpoch.get(key) ?? 0) + 1;
    listEpoch.set(key, epoch);
    openedOrder = [...openedOrder.filter((k) => k !== key), key];
    const dropped = openedOrder.slice(0, Math.max(0, openedOrder.length - MAX_LISTS));
    openedOrder = openedOrder.slice(dropped.length);
    useMessages.setState((s) => {
      const lists: Record<string, MessageList> = {
        ...s.lists,
        [key]: { narrow, ids: [], foundOldest: false, foundNewest: false, loading: true, loadingOlder: false, loadingNewer: false, error: null, anchorId: null, matches: {} },
      };
      for (const k of dropped) {
        delete lists[k];
        listEpoch.delete(k);
      }
      return dropped.length > 0 ? { lists, byId: heldOnly(s.byId, lists, s.outbox) } : { lists };
    });
    try {
      const reply = await (prefetched ?? fetchMessages(narrow, anchor, FIRST_PAGE, FIRST_PAGE));
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      storeMessages(reply.messages);
      const ids = reply.messages.map((m) => m.id);
      const anchorId = reply.found_anchor ? reply.anchor : (ids.at(-1) ?? null);
      if (reply.found_newest) {
        // Messages whose events came while the page was on its way (addMessage skips a list still loading).
        const newest = ids.at(-1) ?? 0;
        const me = selfId();
        for (const m of Object.values(useMessages.getState().byId)) if (m.id > newest && messageMatches(narrow, m, me) === true) ids.push(m.id);
      }
      patchList(key, () => ({ ids: sortedUnique(ids), foundOldest: reply.found_oldest, foundNewest: reply.found_newest, loading: false, anchorId, matches: searchMatches(reply.messages) }));
      // A message sent after that read of the history but before the event queue existed would be in
      // neither: ask once more for what follows the newest message read.
      if (prefetched && reply.found_newest) void this.catchUp(key, reply.messages.at(-1)?.id);
    } catch (error) {
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      patchList(key, () => ({ loading: false, error: error instanceof Error ? error.message : String(error) }));
    }
  },

  /** What was sent after `after` (the newest message of a page read before the event queue existed). */
  async catchUp(key: string, after: number | undefined): Promise<void> {
    const list = useMessages.getState().lists[key];
    if (!list) return;
    const [gen, epoch] = [generation, listEpoch.get(key)];
    try {
      const reply = await fetchMessages(list.narrow, after ?? "oldest", 0, PAGE, after === undefined);
      if (gen !== generation || listEpoch.get(key) !== epoch || reply.messages.length === 0) return;
      storeMessages(reply.messages);
      replaceGrownList(key, "newest", (l) => ({ ids: sortedUnique([...l.ids, ...reply.messages.map((m) => m.id)]), foundNewest: l.foundNewest && reply.found_newest, matches: { ...l.matches, ...searchMatches(reply.messages) } }));
    } catch {
      // The list stands as read; the next event queue's reload fetches it again.
    }
  },

  async loadOlder(key: string): Promise<void> {
    const list = useMessages.getState().lists[key];
    if (!list || list.loading || list.loadingOlder || list.foundOldest || list.ids.length === 0) return;
    const [gen, epoch] = [generation, listEpoch.get(key)];
    patchList(key, () => ({ loadingOlder: true }));
    try {
      const reply = await fetchMessages(list.narrow, list.ids[0]!, PAGE, 0, false);
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      storeMessages(reply.messages);
      replaceGrownList(key, "oldest", (l) => ({ ids: sortedUnique([...reply.messages.map((m) => m.id), ...l.ids]), foundOldest: reply.found_oldest, loadingOlder: false, matches: { ...l.matches, ...searchMatches(reply.messages) } }));
    } catch (error) {
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      patchList(key, () => ({ loadingOlder: false, error: error instanceof Error ? error.message : String(error) }));
    }
  },

  async loadNewer(key: string): Promise<void> {
    const list = useMessages.getState().lists[key];
    if (!list || list.loading || list.loadingNewer || list.foundNewest || list.ids.length === 0) return;
    const [gen, epoch] = [generation, listEpoch.get(key)];
    patchList(key, () => ({ loadingNewer: true }));
    try {
      const reply = await fetchMessages(list.narrow, list.ids.at(-1)!, 0, PAGE, false);
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      storeMessages(reply.messages);
      replaceGrownList(key, "newest", (l) => ({ ids: sortedUnique([...l.ids, ...reply.messages.map((m) => m.id)]), foundNewest: reply.found_newest, loadingNewer: false, matches: { ...l.matches, ...searchMatches(reply.messages) } }));
    } catch (error) {
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      patchList(key, () => ({ loadingNewer: false, error: error instanceof Error ? error.message : String(error) }));
    }
  },

  // ---- events ----

  /**
   * A message event: onto the end of every complete list it belongs to (the
   * table keeps it only when some list holds it, or may: one still loading);
   * its echo leaves the outbox.
   */
  addMessage(message: Message, localId: string | undefined): void {
    const me = selfId();
    useMessages.setState((s) => {
      const lists = { ...s.lists };
      let held = false;
      let trimmedAny = false;
      for (const [key, list] of Object.entries(lists)) {
        const matches = messageMatches(list.narrow, message, me);
        if (list.loading) {
          // open() takes the messages newer than its page from the table.
          if (matches !== false) held = true;
          continue;
        }
        if (!list.foundNewest || matches !== true || list.ids.includes(message.id)) continue;
        if (list.ids.length >= MAX_LIST_LENGTH + PAGE && readingBack.has(key)) {
          // Full, and read far from its newest end: the newest end is let go instead of the rows on screen
          // (fetched again when scrolled down to).
          lists[key] = { ...list, foundNewest: false };
          continue;
        }
        // A page's worth of slack: a busy conversation is trimmed once a page, not on every message.
        const next = trimmed({ ...list, ids: sortedUnique([...list.ids, message.id]) }, "newest", PAGE);
        trimmedAny ||= next.ids.length <= list.ids.length;
        lists[key] = next;
        held = true;
      }
      const outbox = s.outbox.filter((o) => o.localId !== localId && o.messageId !== message.id);
      if (!held) return { lists, outbox };
      const byId = { ...s.byId, [message.id]: message };
      return { byId: trimmedAny ? heldOnly(byId, lists, outbox) : byId, lists, outbox };
    });
  },

  updateMessage(event: {
    message_id: number;
    message_ids?: number[];
    rendered_content?: string;
    content?: string;
    edit_timestamp?: number;
    stream_id?: number;
    new_stream_id?: number;
    subject?: string;
    orig_subject?: string;
    is_me_message?: boolean;
    rendering_only?: boolean;
  }): void {
    const me = selfId();
    const refetch = new Set<string>();
    const highlight: { key: string; ids: number[] }[] = [];
    useMessages.setState((s) => {
      const byId = { ...s.byId };
      const ids = event.message_ids ?? [event.message_id];
      const moved = event.new_stream_id !== undefined || event.subject !== undefined;
      for (const id of ids) {
        const m = byId[id];
        if (!m) continue;
        const next: Message = { ...m };
        if (id === event.message_id && event.rendered_content !== undefined) {
          next.content = event.rendered_content;
          if (!event.rendering_only && event.edit_timestamp !== undefined) next.last_edit_timestamp = event.edit_timestamp;
        }
        if (moved) {
          if (event.new_stream_id !== undefined) next.stream_id = event.new_stream_id;
          if (event.subject !== undefined) next.subject = event.subject;
          if (event.edit_timestamp !== undefined) next.last_moved_timestamp = event.edit_timestamp;
        }
        byId[id] = next;
      }
      // An edited message's highlights are the old text's: they go, and the search asks the server for the new ones.
      const edited = event.rendered_content !== undefined && !event.rendering_only ? [event.message_id] : [];
      const rehighlight = event.subject !== undefined ? ids : edited;
      let lists = s.lists;
      for (const [key, list] of Object.entries(s.lists)) {
        const stale = rehighlight.filter((id) => list.matches[id] !== undefined);
        if (stale.length === 0) continue;
        const matches = { ...list.matches };
        for (const id of stale) delete matches[id];
        lists = { ...lists, [key]: { ...list, matches } };
        highlight.push({ key, ids: stale });
      }
      if (!moved) return { byId, lists };
      // Moved messages leave the lists they no longer belong to and join, in place, those they now belong to
      // (when they fall inside the history a list holds; the messages this client never held are refetched
      // when their new list is opened).
      lists = { ...lists };
      const destination = event.new_stream_id ?? event.stream_id;
      const missing = ids.some((id) => !byId[id]);
      for (const [key, list] of Object.entries(lists)) {
        const kept = list.ids.filter((id) => !ids.includes(id) || messageMatches(list.narrow, byId[id]!, me) !== false);
        const joining = ids.filter((id) => byId[id] && !list.ids.includes(id) && messageMatches(list.narrow, byId[id]!, me) === true);
        // Messages this client never held may now belong here too: such a list is fetched again.
        const mayGain = missing && (list.narrow.kind === "all" || ((list.narrow.kind === "channel" || list.narrow.kind === "topic") && list.narrow.streamId === destination));
        if (mayGain || !joining.every((id) => fitsRange(list, id))) {
          lists[key] = { ...list, ids: kept };
          refetch.add(key);
        } else if (joining.length > 0 || kept.length !== list.ids.length) {
          lists[key] = { ...list, ids: sortedUnique([...kept, ...joining]) };
        }
      }
      return { byId, lists };
    });
    for (const key of refetch) {
      const list = useMessages.getState().lists[key];
      if (list && !list.loading) void this.open(list.narrow, true);
    }
    for (const { key, ids } of highlight) if (!refetch.has(key)) void this.rehighlight(key, ids);
  },

  /** A search's highlights for messages edited since its page came (GET /messages/matches_narrow, as Zulip's web app asks). */
  async rehighlight(key: string, ids: number[]): Promise<void> {
    const list = useMessages.getState().lists[key];
    if (!list) return;
    const [gen, epoch] = [generation, listEpoch.get(key)];
    try {
      const reply = await api.get<{ messages: Record<string, { match_content: string; match_subject: string }> }>("/messages/matches_narrow", {
        msg_ids: ids,
        narrow: apiNarrow(list.narrow),
      });
      if (gen !== generation || listEpoch.get(key) !== epoch) return;
      patchList(key, (l) => {
        const matches = { ...l.matches };
        for (const [id, m] of Object.entries(reply.messages)) if (l.ids.includes(Number(id))) matches[Number(id)] = { content: m.match_content, subject: m.match_subject };
        return { matches };
      });
    } catch {
      // The message shows without highlights.
    }
  },

  deleteMessages(ids: number[]): void {
    const gone = new Set(ids);
    useMessages.setState((s) => {
      const byId = { ...s.byId };
      for (const id of ids) delete byId[id];
      const lists = { ...s.lists };
      for (const [key, list] of Object.entries(lists)) {
        if (list.ids.some((id) => gone.has(id))) lists[key] = { ...list, ids: list.ids.filter((id) => !gone.has(id)) };
      }
      return { byId, lists };
    });
  },

  updateFlags(op: "add" | "remove", flag: string, ids: number[], all: boolean): void {
    useMessages.setState((s) => {
      const byId = { ...s.byId };
      const targets = all ? Object.keys(byId).map(Number) : ids;
      for (const id of targets) {
        const m = byId[id];
        if (!m) continue;
        const has = m.flags.includes(flag);
        if (op === "add" && !has) byId[id] = { ...m, flags: [...m.flags, flag] };
        if (op === "remove" && has) byId[id] = { ...m, flags: m.flags.filter((f) => f !== flag) };
      }
      // Starring adds to or removes from the starred list in place.
      const lists = { ...s.lists };
      const starred = lists.starred;
      if (flag === "starred" && starred && !starred.loading) {
        if (op === "remove") lists.starred = { ...starred, ids: all ? [] : starred.ids.filter((id) => !targets.includes(id)) };
        else lists.starred = { ...starred, ids: sortedUnique([...starred.ids, ...targets.filter((id) => byId[id] && fitsRange(starred, id))]) };
      }
      return { byId, lists };
    });
  },

  reaction(op: "add" | "remove", messageId: number, reaction: Reaction): void {
    useMessages.setState((s) => {
      const m = s.byId[messageId];
      if (!m) return s;
      const same = (r: Reaction) => r.user_id === reaction.user_id && r.emoji_code === reaction.emoji_code && r.reaction_type === reaction.reaction_type;
      const reactions = op === "add" ? (m.reactions.some(same) ? m.reactions : [...m.reactions, reaction]) : m.reactions.filter((r) => !same(r));
      return { byId: { ...s.byId, [messageId]: { ...m, reactions } } };
    });
  },

  // ---- sending ----

  /** Sends a message with local echo; the echo is replaced by the real message when its event arrives. */
  async send(target: SendTarget, content: string, queueId: string | null): Promise<void> {
    const me = useUsers.getState().byId[selfId()];
    localCounter += 1;
    const localId = `${Date.now()}.${localCounter}`;
    const users = useUsers.getState().byId;
    const draft: Message = {
      id: -localCounter,
      sender_id: selfId(),
      sender_full_name: me?.full_name ?? "",
      sender_email: me?.email ?? "",
      avatar_url: me?.avatar_url ?? null,
      type: target.type,
      subject: target.type === "stream" ? target.topic : "",
      display_recipient:
        target.type === "stream"
          ? target.streamName
          : [...new Set([...target.userIds, selfId()])].map((id) => ({ id, email: users[id]?.email ?? "", full_name: users[id]?.full_name ?? "" })),
      content: "",
      timestamp: Math.floor(Date.now() / 1000),
      flags: ["read"],
      reactions: [],
      ...(target.type === "stream" ? { stream_id: target.streamId } : {}),
    };
    const entry: OutboxMessage = { localId, content, target, draft: { ...draft, content: escapeText(content) }, state: "sending" };
    useMessages.setState((s) => ({ outbox: [...s.outbox, entry] }));
    await post(localId, target, content, queueId);
  },

  /** A failed message sent again (Zulip's resend): the same local echo, in its place, "Sending…" again. */
  async retry(localId: string, queueId: string | null): Promise<void> {
    const entry = useMessages.getState().outbox.find((o) => o.localId === localId);
    if (!entry || entry.state !== "failed") return;
    useMessages.setState((s) => ({ outbox: s.outbox.map((o) => (o.localId === localId ? { ...o, state: "sending", error: undefined } : o)) }));
    await post(localId, entry.target, entry.content, queueId);
  },

  /** A failed message taken back out of the list; the caller gives its text back to the compose box. */
  cancel(localId: string): OutboxMessage | undefined {
    const entry = useMessages.getState().outbox.find((o) => o.localId === localId);
    if (!entry || entry.state !== "failed") return undefined;
    useMessages.setState((s) => ({ outbox: s.outbox.filter((o) => o.localId !== localId) }));
    return entry;
  },
};

/** POST /messages for an outbox entry; its state follows the reply. */
async function post(localId: string, target: SendTarget, content: string, queueId: string | null): Promise<void> {
  const params =
    target.type === "stream"
      ? { type: "stream", to: target.streamId, topic: target.topic, content }
      : { type: "direct", to: target.userIds, content };
  try {
    const reply = await api.post<{ id: number }>("/messages", { ...params, ...(queueId ? { queue_id: queueId, local_id: localId } : {}) });
    useMessages.setState((s) => {
      // The event may have come first; then the echo is gone already.
      if (s.byId[reply.id]) return { outbox: s.outbox.filter((o) => o.localId !== localId) };
      return { outbox: s.outbox.map((o) => (o.localId === localId ? { ...o, state: "sent", messageId: reply.id } : o)) };
    });
  } catch (error) {
    const message = error instanceof ApiError ? error.message : String(error);
    useMessages.setState((s) => ({ outbox: s.outbox.map((o) => (o.localId === localId ? { ...o, state: "failed", error: message } : o)) }));
  }
}

/** The text of an unsent message as HTML for its echo: its paragraphs, escaped (the server renders the real one). */
function escapeText(text: string): string {
  const escaped = text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  return escaped
    .split(/\n{2,}/)
    .map((p) => `<p>${p.replace(/\n/g, "<br>")}</p>`)
    .join("");
}
