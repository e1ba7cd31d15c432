// Unread messages: which messages are unread and where they live, from
// /register's unread_msgs, then kept by message, flag, deletion and move
// events (never by guesses of the client). Counts per channel, topic and
// direct conversation are kept per change: only the channels and
// conversations a change touches are counted again.
import { create } from "zustand";
import type { Message, UnreadMsgs } from "../api/types.ts";
import { isTopicMuted, useChannels } from "./channels.ts";
import { useMuting } from "./muting.ts";
import { dmNarrow, dmParticipants } from "./narrow.ts";

export type UnreadLocation = { kind: "stream"; streamId: number; topic: string } | { kind: "dm"; key: string };

export interface TopicCount {
  topic: string;
  count: number;
  /** The newest unread message's id: how recent the topic is, when its whole history is not known. */
  maxId: number;
}

export interface UnreadCounts {
  /** Unread messages outside muted topics, channels and conversations with muted users (Zulip's home count). */
  total: number;
  /** Per channel, leaving out its muted topics (and 0 for a muted channel, except its unmuted and followed topics). */
  byStream: Record<number, number>;
  /** Per channel, per lowercased topic: every unread topic, muted or not (views ask isTopicMuted). */
  byTopic: Record<number, Record<string, TopicCount>>;
  /** Per DM key (the other participants' ids joined with ","); conversations with only muted users left out. */
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

/** One topic's unread messages (keyed by its lowercased name). */
interface TopicUnreads {
  topic: string;
  ids: Set<number>;
  /** The newest unread message's id, -1 while unknown (the newest was read; see publish()); `topic` is its spelling. */
  maxId: number;
}

// The unread messages, where each lives, and the same grouped by topic and
// conversation: a change touches its own topics and conversations only, so an
// account with 50,000 unreads pays per changed message, not per unread one.
const locations = new Map<number, UnreadLocation>();
const mentions = new Set<number>();
const topics = new Map<number, Map<string, TopicUnreads>>();
const dms = new Map<string, number>();
/** What changed since the counts were last published. */
const dirtyStreams = new Set<number>();
const dirtyDms = new Set<string>();

function place(id: number, loc: UnreadLocation): void {
  unplace(id);
  locations.set(id, loc);
  if (loc.kind === "stream") {
    let byName = topics.get(loc.streamId);
    if (!byName) topics.set(loc.streamId, (byName = new Map()));
    const key = loc.topic.toLowerCase();
    let entry = byName.get(key);
    if (!entry) byName.set(key, (entry = { topic: loc.topic, ids: new Set(), maxId: 0 }));
    entry.ids.add(id);
    // Named as its newest unread message is (the same topic may be spelled in other cases).
    if (entry.maxId !== -1 && id > entry.maxId) {
      entry.maxId = id;
      entry.topic = loc.topic;
    }
    dirtyStreams.add(loc.streamId);
  } else {
    dms.set(loc.key, (dms.get(loc.key) ?? 0) + 1);
    dirtyDms.add(loc.key);
  }
}

function unplace(id: number): boolean {
  const loc = locations.get(id);
  if (!loc) return false;
  locations.delete(id);
  // Unread mentions are among the unread messages, always.
  mentions.delete(id);
  if (loc.kind === "stream") {
    const byName = topics.get(loc.streamId)!;
    const key = loc.topic.toLowerCase();
    const entry = byName.get(key)!;
    entry.ids.delete(id);
    if (entry.ids.size === 0) byName.delete(key);
    // The newest left: the topic's newest is among the rest (one topic's unreads, not everyone's).
    // The newest left: found again when the counts are published, once however many went.
    else if (id === entry.maxId) entry.maxId = -1;
    if (byName.size === 0) topics.delete(loc.streamId);
    dirtyStreams.add(loc.streamId);
  } else {
    const left = dms.get(loc.key)! - 1;
    if (left === 0) dms.delete(loc.key);
    else dms.set(loc.key, left);
    dirtyDms.add(loc.key);
  }
  return true;
}

function clearAll(): void {
  for (const id of topics.keys()) dirtyStreams.add(id);
  for (const key of dms.keys()) dirtyDms.add(key);
  locations.clear();
  mentions.clear();
  topics.clear();
  dms.clear();
}

/** A conversation whose other participants are all muted is muted (Zulip's is_dm_muted); notes to self are not. */
function dmMuted(key: string, mutedUsers: Record<number, unknown>): boolean {
  return key !== "" && key.split(",").every((u) => mutedUsers[Number(u)] !== undefined);
}

/**
 * Publishes the counts: the changed channels and conversations are counted
 * again from their topics, the rest keep their objects (so views of other
 * channels do not draw again). `everything`: muting changed, count all.
 */
function publish(everything = false): void {
  const prev = useUnreads.getState().counts;
  if (everything) {
    for (const id of Object.keys(prev.byTopic)) dirtyStreams.add(Number(id));
    for (const id of topics.keys()) dirtyStreams.add(id);
    for (const key of Object.keys(prev.byDm)) dirtyDms.add(key);
    for (const key of dms.keys()) dirtyDms.add(key);
  }
  const channels = useChannels.getState();
  const mutedUsers = useMuting.getState().mutedUsers;
  const byTopic = { ...prev.byTopic };
  const byStream = { ...prev.byStream };
  const byDm = { ...prev.byDm };
  let total = prev.total;
  let dmTotal = prev.dmTotal;
  for (const streamId of dirtyStreams) {
    total -= prev.byStream[streamId] ?? 0;
    delete byStream[streamId];
    delete byTopic[streamId];
    const byName = topics.get(streamId);
    if (!byName) continue;
    const counted: Record<string, TopicCount> = {};
    let unmuted = 0;
    for (const [key, entry] of byName) {
      if (entry.maxId === -1) {
        for (const id of entry.ids) entry.maxId = Math.max(entry.maxId, id);
        entry.topic = (locations.get(entry.maxId) as { topic: string }).topic;
      }
      counted[key] = { topic: entry.topic, count: entry.ids.size, maxId: entry.maxId };
      if (!isTopicMuted(channels, streamId, entry.topic)) unmuted += entry.ids.size;
    }
    byTopic[streamId] = counted;
    if (unmuted > 0) byStream[streamId] = unmuted;
    total += unmuted;
  }
  for (const key of dirtyDms) {
    const before = prev.byDm[key] ?? 0;
    total -= before;
    dmTotal -= before;
    delete byDm[key];
    const count = dms.get(key) ?? 0;
    if (count === 0 || dmMuted(key, mutedUsers)) continue;
    byDm[key] = count;
    total += count;
    dmTotal += count;
  }
  dirtyStreams.clear();
  dirtyDms.clear();
  const counts: UnreadCounts = { total, byStream, byTopic, byDm, dmTotal, mentions: mentions.size };
  useUnreads.setState((s) => ({ counts, version: s.version + 1 }));
}

// Muting a topic, a channel or a user changes the counts at once.
useChannels.subscribe((s, prev) => {
  if (s.topicPolicies !== prev.topicPolicies || s.subscriptions !== prev.subscriptions) publish(true);
});
useMuting.subscribe((s, prev) => {
  if (s.mutedUsers !== prev.mutedUsers) publish(true);
});

const MENTION_FLAGS = new Set(["mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"]);

export const unreadsStore = {
  load(initial: UnreadMsgs, selfId: number): void {
    clearAll();
    for (const s of initial.streams) for (const id of s.unread_message_ids) place(id, { kind: "stream", streamId: s.stream_id, topic: s.topic });
    for (const p of initial.pms) for (const id of p.unread_message_ids) place(id, { kind: "dm", key: String(p.other_user_id) });
    for (const h of initial.huddles) {
      const narrow = dmNarrow(h.user_ids_string.split(",").map(Number), selfId);
      const key = narrow.kind === "dm" ? narrow.userIds.join(",") : h.user_ids_string;
      for (const id of h.unread_message_ids) place(id, { kind: "dm", key });
    }
    for (const id of initial.mentions) if (locations.has(id)) mentions.add(id);
    publish(true);
  },
  isUnread(messageId: number): boolean {
    return locations.has(messageId);
  },
  /** A new message event. */
  addMessage(message: Message, selfId: number): void {
    if (message.flags.includes("read")) return;
    if (message.type === "stream" && message.stream_id !== undefined) {
      place(message.id, { kind: "stream", streamId: message.stream_id, topic: message.subject });
    } else {
      place(message.id, { kind: "dm", key: dmParticipants(message, selfId).join(",") });
    }
    if (message.flags.some((f) => MENTION_FLAGS.has(f))) mentions.add(message.id);
    publish();
  },
  markRead(messageIds: number[]): void {
    let changed = false;
    for (const id of messageIds) changed = unplace(id) || changed;
    if (changed) publish();
  },
  markAllRead(): void {
    clearAll();
    publish();
  },
  /** update_message_flags remove read: the event says where each message lives. */
  markUnread(details: Record<string, { type: string; stream_id?: number; topic?: string; user_ids?: number[]; mentioned?: boolean }>, selfId: number): void {
    for (const [idText, d] of Object.entries(details)) {
      const id = Number(idText);
      if (d.type === "stream" && d.stream_id !== undefined) place(id, { kind: "stream", streamId: d.stream_id, topic: d.topic ?? "" });
      else {
        const narrow = dmNarrow(d.user_ids ?? [], selfId);
        place(id, { kind: "dm", key: narrow.kind === "dm" ? narrow.userIds.join(",") : "" });
      }
      if (d.mentioned) mentions.add(id);
    }
    publish();
  },
  setMentioned(messageIds: number[], mentioned: boolean): void {
    for (const id of messageIds) {
      if (mentioned && locations.has(id)) mentions.add(id);
      else if (!mentioned) mentions.delete(id);
    }
    publish();
  },
  remove(messageIds: number[]): void {
    this.markRead(messageIds);
  },
  /** Messages moved to another channel and/or topic. */
  move(messageIds: number[], streamId: number, topic: string): void {
    let changed = false;
    for (const id of messageIds) {
      if (!locations.has(id)) continue;
      const mentioned = mentions.has(id);
      place(id, { kind: "stream", streamId, topic });
      if (mentioned) mentions.add(id);
      changed = true;
    }
    if (changed) publish();
  },
};
