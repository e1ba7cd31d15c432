// Your channel subscriptions (and muted topics), from /register and
// subscription, stream and user_topic events.
import { create } from "zustand";
import type { RegisterResponse, Subscription } from "../api/types.ts";

export interface ChannelsState {
  subscriptions: Record<number, Subscription>;
  /** "streamId:topic lowercased" → visibility policy (1 muted, 2 unmuted, 3 followed). */
  topicPolicies: Record<string, number>;
}

export const useChannels = create<ChannelsState>(() => ({ subscriptions: {}, topicPolicies: {} }));

export function topicPolicyKey(streamId: number, topic: string): string {
  return `${streamId}:${topic.toLowerCase()}`;
}

export const channelsStore = {
  load(initial: RegisterResponse): void {
    const subscriptions: Record<number, Subscription> = {};
    for (const sub of initial.subscriptions ?? []) subscriptions[sub.stream_id] = sub;
    const topicPolicies: Record<string, number> = {};
    for (const t of initial.user_topics ?? []) topicPolicies[topicPolicyKey(t.stream_id, t.topic_name)] = t.visibility_policy;
    useChannels.setState({ subscriptions, topicPolicies });
  },
  addSubscriptions(subs: Subscription[]): void {
    useChannels.setState((s) => {
      const subscriptions = { ...s.subscriptions };
      for (const sub of subs) subscriptions[sub.stream_id] = sub;
      return { subscriptions };
    });
  },
  removeSubscriptions(streamIds: number[]): void {
    useChannels.setState((s) => {
      const subscriptions = { ...s.subscriptions };
      for (const id of streamIds) delete subscriptions[id];
      return { subscriptions };
    });
  },
  updateSubscription(streamId: number, property: string, value: unknown): void {
    useChannels.setState((s) => {
      const sub = s.subscriptions[streamId];
      if (!sub) return s;
      const key = property === "in_home_view" ? "is_muted" : property;
      const v = property === "in_home_view" ? !value : value;
      return { subscriptions: { ...s.subscriptions, [streamId]: { ...sub, [key]: v } } };
    });
  },
  /** A stream event: a channel's own property changed (name, description…), for everyone who sees it. */
  updateChannel(streamId: number, property: string, value: unknown): void {
    this.updateSubscription(streamId, property, value);
  },
  setTopicPolicy(streamId: number, topic: string, policy: number): void {
    useChannels.setState((s) => ({ topicPolicies: { ...s.topicPolicies, [topicPolicyKey(streamId, topic)]: policy } }));
  },
};

export function channelName(streamId: number): string | undefined {
  return useChannels.getState().subscriptions[streamId]?.name;
}

export function isTopicMuted(state: ChannelsState, streamId: number, topic: string): boolean {
  const policy = state.topicPolicies[topicPolicyKey(streamId, topic)];
  if (policy === 1) return true;
  if (policy === 2 || policy === 3) return false;
  return state.subscriptions[streamId]?.is_muted ?? false;
}
