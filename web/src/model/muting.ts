// Muting and following, as Zulip's web app does it: muted users (from
// /register's muted_users, then `muted_users` events), and the actions that
// change muting — a topic's visibility policy (POST /user_topics), a
// channel's is_muted subscription property, a user's mute. Topic policies
// and channel mutes live in the channels store (channels.ts).
import { create } from "zustand";
import { api } from "../api/client.ts";
import { isTopicMuted, topicPolicyKey, useChannels } from "./channels.ts";

export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

export interface MutingState {
  /** Muted user ids (and when they were muted, seconds). */
  mutedUsers: Record<number, number>;
  /** Messages of muted users the reader chose to show (for this session, as in Zulip). */
  revealed: Record<number, true>;
}

export const useMuting = create<MutingState>(() => ({ mutedUsers: {}, revealed: {} }));

export const mutingStore = {
  load(muted: { id: number; timestamp: number }[] | undefined): void {
    useMuting.setState({ mutedUsers: Object.fromEntries((muted ?? []).map((m) => [m.id, m.timestamp])) });
  },
  /** A `muted_users` event: the whole list. */
  apply(muted: { id: number; timestamp: number }[]): void {
    this.load(muted);
  },
  reveal(messageId: number): void {
    useMuting.setState((s) => ({ revealed: { ...s.revealed, [messageId]: true } }));
  },
};

export function isUserMuted(userId: number): boolean {
  return useMuting.getState().mutedUsers[userId] !== undefined;
}

export function topicPolicy(streamId: number, topic: string): number {
  return useChannels.getState().topicPolicies[topicPolicyKey(streamId, topic)] ?? VisibilityPolicy.INHERIT;
}

/** Whether a channel message is muted for you: its topic muted, or its channel muted and the topic not unmuted or followed. */
export function isStreamMessageMuted(streamId: number, topic: string): boolean {
  return isTopicMuted(useChannels.getState(), streamId, topic);
}

export function setTopicPolicy(streamId: number, topic: string, policy: number): Promise<unknown> {
  return api.post("/user_topics", { stream_id: streamId, topic, visibility_policy: policy });
}

export function setChannelMuted(streamId: number, muted: boolean): Promise<unknown> {
  return api.post("/users/me/subscriptions/properties", { subscription_data: [{ stream_id: streamId, property: "is_muted", value: muted }] });
}

export function setUserMuted(userId: number, muted: boolean): Promise<unknown> {
  return muted ? api.post(`/users/me/muted_users/${userId}`) : api.delete(`/users/me/muted_users/${userId}`);
}
