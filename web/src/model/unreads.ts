// Unread messages: which messages are unread and where they live, from
// /register's unread_msgs, then kept by message, flag, deletion and move
// events (never by guesses of the client). Counts per channel, topic and
// direct conversation are derived after each change.
import { create } from "zustand";
import type { Message, UnreadMsgs } from "../api/types.ts";
import { dmNarrow, dmParticipants } from "./narrow.ts";

export type UnreadLocation = { kind: "stream"; streamId: number; topic: string } | { kind: "dm"; key: string };

export interface TopicCount {
  topic: string;
  count: number;
  /** The newest unread message's id: how recent the topic is, when its whole history is not known. */
  maxId: number;
}

export interface UnreadCounts {
  total: number;
  byStream: Record<number, number>;
  /** Per channel, per lowercased topic. */
  byTopic: Record<number, Record<string, TopicCount>>;
  /** Per DM key (the other participants' ids joined with ","). */
  byDm: Record<string, number>;
  dmTotal: number;
  mentions: number;
}

export interface UnreadsState {
  counts: UnreadCounts;
  /** Bumped on every change: components asking unreadsStore.isUnread(id) re-render by it. */
  version: number;
}

const EMPTY: UnreadCounts = { total: 0, byStream: {}, byTopic: {}, byDm: {}, dmTotal: 0, mentions: 0 };

export const useUnreads = create<UnreadsState>(() => ({ counts: EMPTY, version: 0 }));

const locations = new Map<number, UnreadLocation>();
const mentions = new Set<number>();

function recount(): void {
  const counts: UnreadCounts = { total: 0, byStream: {}, byTopic: {}, byDm: {}, dmTotal: 0, mentions: 0 };
  for (const [id, loc] of locations) {
    counts.total += 1;
    if (mentions.has(id)) counts.mentions += 1;
    if (loc.kind === "stream") {
      counts.byStream[loc.streamId] = (counts.byStream[loc.streamId] ?? 0) + 1;
      const topics = (counts.byTopic[loc.streamId] ??= {});
      const key = loc.topic.toLowerCase();
      const entry = (topics[key] ??= { topic: loc.topic, count: 0, maxId: 0 });
      entry.count += 1;
      entry.maxId = Math.max(entry.maxId, id);
    } else {
      counts.byDm[loc.key] = (counts.byDm[loc.key] ?? 0) + 1;
      counts.dmTotal += 1;
    }
  }
  useUnreads.setState((s) => ({ counts, version: s.version + 1 }));
}

const MENTION_FLAGS = new Set(["mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"]);

export const unreadsStore = {
  load(initial: UnreadMsgs, selfId: number): void {
    locations.clear();
    mentions.clear();
    for (const s of initial.streams) for (const id of s.unread_message_ids) locations.set(id, { kind: "stream", streamId: s.stream_id, topic: s.topic });
    for (const p of initial.pms) for (const id of p.unread_message_ids) locations.set(id, { kind: "dm", key: String(p.other_user_id) });
    for (const h of initial.huddles) {
      const narrow = dmNarrow(h.user_ids_string.split(",").map(Number), selfId);
      const key = narrow.kind === "dm" ? narrow.userIds.join(",") : h.user_ids_string;
      for (const id of h.unread_message_ids) locations.set(id, { kind: "dm", key });
    }
    for (const id of initial.mentions) mentions.add(id);
    recount();
  },
  isUnread(messageId: number): boolean {
    return locations.has(messageId);
  },
  /** A new message event. */
  addMessage(message: Message, selfId: number): void {
    if (message.flags.includes("read")) return;
    if (message.type === "stream" && message.stream_id !== undefined) {
      locations.set(message.id, { kind: "stream", streamId: message.stream_id, topic: message.subject });
    } else {
      locations.set(message.id, { kind: "dm", key: dmParticipants(message, selfId).join(",") });
    }
    if (message.flags.some((f) => MENTION_FLAGS.has(f))) mentions.add(message.id);
    recount();
  },
  markRead(messageIds: number[]): void {
    let changed = false;
    for (const id of messageIds) changed = locations.delete(id) || changed;
    if (changed) recount();
  },
  markAllRead(): void {
    locations.clear();
    mentions.clear();
    recount();
  },
  /** update_message_flags remove read: the event says where each message lives. */
  markUnread(details: Record<string, { type: string; stream_id?: number; topic?: string; user_ids?: number[]; mentioned?: boolean }>, selfId: number): void {
    for (const [idText, d] of Object.entries(details)) {
      const id = Number(idText);
      if (d.type === "stream" && d.stream_id !== undefined) locations.set(id, { kind: "stream", streamId: d.stream_id, topic: d.topic ?? "" });
      else {
        const narrow = dmNarrow(d.user_ids ?? [], selfId);
        locations.set(id, { kind: "dm", key: narrow.kind === "dm" ? narrow.userIds.join(",") : "" });
      }
      if (d.mentioned) mentions.add(id);
    }
    recount();
  },
  setMentioned(messageIds: number[], mentioned: boolean): void {
    for (const id of messageIds) {
      if (mentioned) mentions.add(id);
      else mentions.delete(id);
    }
    recount();
  },
  remove(messageIds: number[]): void {
    for (const id of messageIds) mentions.delete(id);
    this.markRead(messageIds);
  },
  /** Messages moved to another channel and/or topic. */
  move(messageIds: number[], streamId: number, topic: string): void {
    let changed = false;
    for (const id of messageIds) {
      if (!locations.has(id)) continue;
      locations.set(id, { kind: "stream", streamId, topic });
      changed = true;
    }
    if (changed) recount();
  },
};
