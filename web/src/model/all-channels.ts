// Every channel you can see (GET /streams, for the channel browser), kept
// by events once fetched: stream create, delete and update (name,
// description with its rendered HTML…), and the subscriber counts, from
// subscription events: peer_add / peer_remove for other people, add / remove
// for yourself.
//
// A count is exact only against a known subscriber list: GET /streams gives
// counts alone, and a peer_add may name people the count already holds (the
// one that follows a stream create lists every subscriber). So the first
// change to a channel whose list is unknown fetches the list
// (GET /streams/{id}/members); changes that arrive meanwhile are replayed on
// it in order, and later ones apply to the list directly.
import { create } from "zustand";
import { api } from "../api/client.ts";

export interface Channel {
  stream_id: number;
  name: string;
  description: string;
  rendered_description?: string;
  invite_only: boolean;
  is_web_public?: boolean;
  is_archived?: boolean;
  subscriber_count?: number;
  /** The subscribers' ids, when known (subscriber_count is then its length). */
  subscribers?: number[];
}

export const useAllChannels = create<{ byId: Record<number, Channel> | null; error: string | null }>(() => ({ byId: null, error: null }));

interface SubscriberChange {
  op: "add" | "remove";
  userIds: number[];
}

/** Channels whose subscriber list is being fetched → the changes seen meanwhile. */
const loading = new Map<number, SubscriberChange[]>();

function applyChange(subscribers: number[], change: SubscriberChange): number[] {
  const set = new Set(subscribers);
  for (const id of change.userIds) {
    if (change.op === "add") set.add(id);
    else set.delete(id);
  }
  return [...set];
}

function setSubscribers(streamId: number, subscribers: number[]): void {
  useAllChannels.setState((s) => {
    const c = s.byId?.[streamId];
    if (!s.byId || !c) return s;
    return { byId: { ...s.byId, [streamId]: { ...c, subscribers, subscriber_count: subscribers.length } } };
  });
}

async function loadSubscribers(streamId: number): Promise<void> {
  loading.set(streamId, []);
  let subscribers: number[] | null = null;
  try {
    subscribers = (await api.get<{ subscribers: number[] }>(`/streams/${streamId}/members`)).subscribers;
  } catch {
    // No longer visible (a private channel you left), or offline: the count stays as it was.
  }
  const meanwhile = loading.get(streamId) ?? [];
  loading.delete(streamId);
  if (subscribers === null) return;
  for (const change of meanwhile) subscribers = applyChange(subscribers, change);
  setSubscribers(streamId, subscribers);
}

/** Each GET /streams under way → the channels whose subscribers changed meanwhile (its counts may predate that). */
const fetchesUnderWay = new Set<Set<number>>();

function noteChanged(streamIds: number[]): void {
  for (const changed of fetchesUnderWay) for (const id of streamIds) changed.add(id);
}

function changeSubscribers(streamIds: number[], change: SubscriberChange): void {
  noteChanged(streamIds);
  const byId = useAllChannels.getState().byId;
  if (byId === null) return;
  for (const id of streamIds) {
    const c = byId[id];
    if (!c) continue;
    const queued = loading.get(id);
    if (queued) queued.push(change);
    else if (c.subscribers) setSubscribers(id, applyChange(c.subscribers, change));
    else void loadSubscribers(id);
  }
}

export const allChannelsStore = {
  reset(): void {
    loading.clear();
    fetchesUnderWay.clear();
    useAllChannels.setState({ byId: null, error: null });
  },
  async fetch(): Promise<void> {
    const changed = new Set<number>();
    fetchesUnderWay.add(changed);
    try {
      const reply = await api.get<{ streams: Channel[] }>("/streams", { include_public: true, include_subscribed: true, include_all: false });
      const byId: Record<number, Channel> = {};
      for (const c of reply.streams) byId[c.stream_id] = c;
      useAllChannels.setState({ byId, error: null });
    } catch (e) {
      useAllChannels.setState({ error: (e as Error).message });
    } finally {
      fetchesUnderWay.delete(changed);
    }
    // Counts that a change may have overtaken are taken from the channel's member list.
    for (const id of changed) if (useAllChannels.getState().byId?.[id] && !loading.has(id)) void loadSubscribers(id);
  },
  created(channels: Channel[]): void {
    useAllChannels.setState((s) => (s.byId === null ? s : { byId: { ...s.byId, ...Object.fromEntries(channels.map((c) => [c.stream_id, c])) } }));
  },
  deleted(ids: number[]): void {
    useAllChannels.setState((s) => {
      if (s.byId === null) return s;
      const byId = { ...s.byId };
      for (const id of ids) delete byId[id];
      return { byId };
    });
  },
  /** A stream update event: `extra` holds its companions (rendered_description beside description). */
  updated(streamId: number, property: string, value: unknown, extra: Partial<Channel> = {}): void {
    useAllChannels.setState((s) => {
      const c = s.byId?.[streamId];
      if (!s.byId || !c) return s;
      return { byId: { ...s.byId, [streamId]: { ...c, [property]: value, ...extra } } };
    });
  },
  /** subscription peer_add / peer_remove: other people subscribed to or left these channels. */
  peers(op: "add" | "remove", streamIds: number[], userIds: number[]): void {
    changeSubscribers(streamIds, { op, userIds });
  },
  /** subscription add: you subscribed; the event lists each channel's subscribers. */
  subscribed(subscriptions: { stream_id: number; subscribers?: number[] }[], selfId: number): void {
    for (const sub of subscriptions) {
      if (sub.subscribers && !loading.has(sub.stream_id)) {
        noteChanged([sub.stream_id]);
        setSubscribers(sub.stream_id, sub.subscribers);
      }
      else changeSubscribers([sub.stream_id], { op: "add", userIds: [selfId] });
    }
  },
  /** subscription remove: you left these channels. */
  unsubscribed(streamIds: number[], selfId: number): void {
    changeSubscribers(streamIds, { op: "remove", userIds: [selfId] });
  },
};
