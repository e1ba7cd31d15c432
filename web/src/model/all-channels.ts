// Every channel you can see (GET /streams, for the channel browser), kept
// by stream events once fetched: created, deleted, renamed or changed.
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
}

export const useAllChannels = create<{ byId: Record<number, Channel> | null; error: string | null }>(() => ({ byId: null, error: null }));

export const allChannelsStore = {
  reset(): void {
    useAllChannels.setState({ byId: null, error: null });
  },
  async fetch(): Promise<void> {
    try {
      const reply = await api.get<{ streams: Channel[] }>("/streams", { include_public: true, include_subscribed: true, include_all: false });
      const byId: Record<number, Channel> = {};
      for (const c of reply.streams) byId[c.stream_id] = c;
      useAllChannels.setState({ byId, error: null });
    } catch (e) {
      useAllChannels.setState({ error: (e as Error).message });
    }
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
  updated(streamId: number, property: string, value: unknown): void {
    useAllChannels.setState((s) => {
      const c = s.byId?.[streamId];
      if (!s.byId || !c) return s;
      return { byId: { ...s.byId, [streamId]: { ...c, [property]: value } } };
    });
  },
};
