// The topics of each channel (GET /users/me/{stream_id}/topics when a channel
// is opened), kept current by message events: a new topic appears at once.
import { create } from "zustand";
import { api } from "../api/client.ts";

export interface TopicEntry {
  name: string;
  maxId: number;
}

export interface TopicsState {
  byStream: Record<number, TopicEntry[]>;
}

export const useTopics = create<TopicsState>(() => ({ byStream: {} }));

const loading = new Set<number>();

export const topicsStore = {
  reset(): void {
    loading.clear();
    useTopics.setState({ byStream: {} });
  },
  async fetch(streamId: number): Promise<void> {
    if (loading.has(streamId) || useTopics.getState().byStream[streamId]) return;
    loading.add(streamId);
    try {
      const reply = await api.get<{ topics: { name: string; max_id: number }[] }>(`/users/me/${streamId}/topics`);
      useTopics.setState((s) => ({ byStream: { ...s.byStream, [streamId]: reply.topics.map((t) => ({ name: t.name, maxId: t.max_id })) } }));
    } catch {
      // Shown without topics; opening the channel again retries.
    } finally {
      loading.delete(streamId);
    }
  },
  /** A message in `topic`: the topic moves to the top (most recent first). */
  noteMessage(streamId: number, topic: string, messageId: number): void {
    useTopics.setState((s) => {
      const current = s.byStream[streamId];
      if (!current) return s;
      const rest = current.filter((t) => t.name.toLowerCase() !== topic.toLowerCase());
      const old = current.find((t) => t.name.toLowerCase() === topic.toLowerCase());
      return { byStream: { ...s.byStream, [streamId]: [{ name: old?.name ?? topic, maxId: Math.max(messageId, old?.maxId ?? 0) }, ...rest] } };
    });
  },
  /** Moves and deletions can empty or rename topics: fetch again when next shown. */
  invalidate(streamId: number): void {
    useTopics.setState((s) => {
      const byStream = { ...s.byStream };
      delete byStream[streamId];
      return { byStream };
    });
  },
};
