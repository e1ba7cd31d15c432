// Unsent compose text per conversation, as Zulip's web app keeps its drafts:
// in this browser across reloads (localStorage, per signed-in user), and,
// when the user's enable_drafts_synchronization setting is on, on the server
// too (/drafts, kept current by drafts events), so the Drafts view shows the
// same drafts on every device. Only message text is stored: never credentials.
import { create } from "zustand";
import { api, ApiError } from "../api/client.ts";
import { useUsers } from "./users.ts";
import { dmNarrow, narrowKey, type Narrow } from "./narrow.ts";
import { useSettings } from "./settings.ts";

const PREFIX = "parley-drafts:";
const MAX_AGE_MS = 30 * 24 * 3600 * 1000;
/** How long the server copy waits after the last keystroke, so typing is not one request per key. */
const SYNC_DELAY_MS = 800;

interface StoredDraft {
  text: string;
  topic?: string;
  at: number;
  /** Where the compose box was: what the Drafts view opens. */
  narrow?: Narrow;
  /** The server's copy of this draft (draft synchronization on). */
  serverId?: number;
}

interface Stored {
  [conversation: string]: StoredDraft;
}

/** A draft as the server keeps it (GET /drafts, drafts events). */
export interface ServerDraft {
  id: number;
  type: "stream" | "private" | "";
  to: number[];
  topic: string;
  content: string;
  timestamp: number;
}

/** One row of the Drafts view. */
export interface DraftEntry {
  key: string;
  narrow: Narrow | null;
  topic: string;
  content: string;
  at: number;
  serverId?: number;
}

export const useDrafts = create<{ server: ServerDraft[]; local: number }>(() => ({ server: [], local: 0 }));

function storageKey(selfId: number): string {
  return `${PREFIX}${selfId}`;
}

function read(selfId: number): Stored {
  try {
    const raw = window.localStorage.getItem(storageKey(selfId));
    return raw ? (JSON.parse(raw) as Stored) : {};
  } catch {
    return {};
  }
}

function write(selfId: number, drafts: Stored): void {
  try {
    window.localStorage.setItem(storageKey(selfId), JSON.stringify(drafts));
  } catch {
    // Storage full or disabled: drafts then last as long as the page.
  }
  useDrafts.setState((s) => ({ local: s.local + 1 }));
}

const syncOn = () => useSettings.getState().settings.enable_drafts_synchronization === true;

/** The server's form of a draft written in `narrow`, or null where it has none (a draft with no recipient yet). */
function serverForm(narrow: Narrow | undefined, text: string, topic: string | undefined, selfId: number): Record<string, unknown> | null {
  const timestamp = Math.floor(Date.now() / 1000);
  if (narrow?.kind === "channel" || narrow?.kind === "topic") return { type: "stream", to: [narrow.streamId], topic: topic ?? (narrow.kind === "topic" ? narrow.topic : ""), content: text, timestamp };
  if (narrow?.kind === "dm") return { type: "private", to: narrow.userIds.filter((id) => id !== selfId || narrow.userIds.length === 1), topic: "", content: text, timestamp };
  return null;
}

/** The server's newest draft for a conversation key (narrowKey: "channel:ID", "topic:ID:topic", "dm:IDs"). */
function serverDraftFor(conversation: string, selfId: number): ServerDraft | undefined {
  const [kind, id, ...rest] = conversation.split(":");
  const matches = useDrafts.getState().server.filter((d) => {
    if (kind === "channel") return d.type === "stream" && d.to[0] === Number(id);
    if (kind === "topic") return d.type === "stream" && d.to[0] === Number(id) && d.topic.toLowerCase() === rest.join(":");
    if (kind === "dm") {
      const others = (id ?? "").split(",").map(Number);
      return d.type === "private" && dmNarrow(d.to, selfId).kind === "dm" && narrowKey(dmNarrow(d.to, selfId)) === narrowKey(dmNarrow(others, selfId));
    }
    return false;
  });
  return matches.sort((a, b) => b.timestamp - a.timestamp)[0];
}

const timers = new Map<string, ReturnType<typeof setTimeout>>();
/** Each conversation's server requests, one after another: a second edit waits for the first draft's ID. */
const chains = new Map<string, Promise<void>>();

function queuePush(selfId: number, conversation: string): void {
  const next = (chains.get(conversation) ?? Promise.resolve()).then(() => pushToServer(selfId, conversation));
  chains.set(conversation, next);
  void next.finally(() => {
    if (chains.get(conversation) === next) chains.delete(conversation);
  });
}

/** Brings the server's copy of one conversation's draft up to date with the local one. */
async function pushToServer(selfId: number, conversation: string): Promise<void> {
  const entry = read(selfId)[conversation];
  if (!entry) return;
  const draft = serverForm(entry.narrow, entry.text, entry.topic, selfId);
  if (!draft) return;
  try {
    if (entry.serverId !== undefined) {
      try {
        await api.patch(`/drafts/${entry.serverId}`, { draft });
        return;
      } catch (error) {
        // Deleted meanwhile (on another device): the text goes up as a new draft.
        if (!(error instanceof ApiError) || error.isNetwork) throw error;
      }
    }
    const reply = await api.post<{ ids: number[] }>("/drafts", { drafts: [draft] });
    const drafts = read(selfId);
    const now = drafts[conversation];
    if (now) {
      drafts[conversation] = { ...now, serverId: reply.ids[0] };
      write(selfId, drafts);
    } else if (reply.ids[0] !== undefined) void api.delete(`/drafts/${reply.ids[0]}`).catch(() => undefined);
  } catch {
    // The local copy stays; the next edit tries again.
  }
}

function scheduleSync(selfId: number, conversation: string): void {
  clearTimeout(timers.get(conversation));
  timers.set(
    conversation,
    setTimeout(() => {
      timers.delete(conversation);
      queuePush(selfId, conversation);
    }, SYNC_DELAY_MS),
  );
}

export const draftsStore = {
  /** /register's drafts (the server's, when synchronization is on). */
  load(drafts: ServerDraft[] | undefined): void {
    useDrafts.setState({ server: drafts ?? [] });
  },
  /** A drafts event. */
  apply(event: { op: string; drafts?: ServerDraft[]; draft?: ServerDraft; draft_id?: number }): void {
    const { server } = useDrafts.getState();
    if (event.op === "add" && event.drafts) {
      const ids = new Set(event.drafts.map((d) => d.id));
      useDrafts.setState({ server: [...server.filter((d) => !ids.has(d.id)), ...event.drafts] });
    } else if (event.op === "update" && event.draft) {
      const draft = event.draft;
      useDrafts.setState({ server: server.map((d) => (d.id === draft.id ? draft : d)) });
    } else if (event.op === "remove") {
      useDrafts.setState({ server: server.filter((d) => d.id !== event.draft_id) });
      // Deleted elsewhere (sent, or deleted in a Drafts view): this browser's copy goes too.
      const selfId = useUsers.getState().selfId;
      const drafts = read(selfId);
      const stale = Object.keys(drafts).filter((key) => drafts[key]!.serverId === event.draft_id);
      if (stale.length > 0) {
        for (const key of stale) delete drafts[key];
        write(selfId, drafts);
      }
    }
  },
  /**
   * A conversation's draft for its compose box: this browser's, or the
   * server's when that is newer (written on another device), which then
   * becomes this browser's copy, so later edits update that same server draft.
   */
  get(selfId: number, conversation: string): { text: string; topic?: string } | undefined {
    const drafts = read(selfId);
    let entry = drafts[conversation];
    const server = syncOn() ? serverDraftFor(conversation, selfId) : undefined;
    if (server && (!entry || server.timestamp * 1000 > entry.at)) {
      entry = { text: server.content, topic: conversation.startsWith("channel:") ? server.topic : undefined, at: server.timestamp * 1000, narrow: entry?.narrow, serverId: server.id };
      drafts[conversation] = entry;
      write(selfId, drafts);
    }
    if (!entry || Date.now() - entry.at > MAX_AGE_MS) return undefined;
    return { text: entry.text, topic: entry.topic };
  },
  save(selfId: number, conversation: string, text: string, topic?: string, narrow?: Narrow): void {
    const drafts = read(selfId);
    const previous = drafts[conversation];
    if (text.trim() === "") {
      delete drafts[conversation];
      clearTimeout(timers.get(conversation));
      if (previous?.serverId !== undefined) void api.delete(`/drafts/${previous.serverId}`).catch(() => undefined);
    } else drafts[conversation] = { text, topic, at: Date.now(), narrow: narrow ?? previous?.narrow, serverId: previous?.serverId };
    // Old drafts go, so storage does not grow without end.
    for (const [key, entry] of Object.entries(drafts)) if (Date.now() - entry.at > MAX_AGE_MS) delete drafts[key];
    write(selfId, drafts);
    if (text.trim() !== "" && syncOn()) scheduleSync(selfId, conversation);
  },
  clear(selfId: number, conversation: string): void {
    this.save(selfId, conversation, "");
  },
  /** The drafts the Drafts view lists, newest first: the server's when synchronization is on, this browser's otherwise. */
  list(selfId: number): DraftEntry[] {
    if (syncOn()) {
      return useDrafts
        .getState()
        .server.map((d): DraftEntry => {
          const narrow: Narrow | null =
            d.type === "stream" && d.to[0] !== undefined ? (d.topic === "" ? { kind: "channel", streamId: d.to[0] } : { kind: "topic", streamId: d.to[0], topic: d.topic }) : d.type === "private" ? dmNarrow(d.to, selfId) : null;
          return { key: `server:${d.id}`, narrow, topic: d.topic, content: d.content, at: d.timestamp * 1000, serverId: d.id };
        })
        .sort((a, b) => b.at - a.at);
    }
    return Object.entries(read(selfId))
      .filter(([, e]) => Date.now() - e.at <= MAX_AGE_MS)
      .map(([key, e]): DraftEntry => ({ key, narrow: e.narrow ?? null, topic: e.topic ?? (e.narrow?.kind === "topic" ? e.narrow.topic : ""), content: e.text, at: e.at, serverId: e.serverId }))
      .sort((a, b) => b.at - a.at);
  },
  /** Puts a draft from the Drafts view back as its conversation's draft, for the compose box there to open; the conversation's key. */
  restore(selfId: number, entry: DraftEntry): string | null {
    if (!entry.narrow) return null;
    const key = narrowKey(entry.narrow);
    const drafts = read(selfId);
    if (entry.key !== key) delete drafts[entry.key];
    drafts[key] = { text: entry.content, topic: entry.narrow.kind === "channel" ? entry.topic : undefined, at: Date.now(), narrow: entry.narrow, serverId: entry.serverId };
    write(selfId, drafts);
    return key;
  },
  /** Deletes a draft from the Drafts view: this browser's copy and the server's. */
  async remove(selfId: number, entry: DraftEntry): Promise<void> {
    const drafts = read(selfId);
    for (const [key, e] of Object.entries(drafts)) if (key === entry.key || (entry.serverId !== undefined && e.serverId === entry.serverId)) delete drafts[key];
    write(selfId, drafts);
    if (entry.serverId !== undefined) await api.delete(`/drafts/${entry.serverId}`);
  },
};
