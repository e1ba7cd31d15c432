// Server and organization settings from /register, kept current by realm events.
import { create } from "zustand";
import type { RegisterResponse } from "../api/types.ts";

export interface RealmState {
  realmName: string;
  maxMessageLength: number;
  maxTopicLength: number;
  /** How the empty topic ("general chat") is shown. */
  emptyTopicName: string;
  realmDescription?: string;
}

export const useRealm = create<RealmState>(() => ({ realmName: "", maxMessageLength: 10000, maxTopicLength: 60, emptyTopicName: "general chat" }));

export const realmStore = {
  load(initial: RegisterResponse): void {
    useRealm.setState({
      realmName: initial.realm_name,
      maxMessageLength: initial.max_message_length ?? 10000,
      maxTopicLength: initial.max_topic_length ?? 60,
      emptyTopicName: initial.realm_empty_topic_display_name ?? "general chat",
      realmDescription: initial.realm_description ?? "",
    });
  },
  applyUpdate(property: string, value: unknown): void {
    if (property === "name" && typeof value === "string") useRealm.setState({ realmName: value });
    if (property === "description" && typeof value === "string") useRealm.setState({ realmDescription: value });
  },
  applyUpdateDict(data: Record<string, unknown>): void {
    for (const [key, value] of Object.entries(data)) this.applyUpdate(key, value);
  },
};

export function topicDisplayName(topic: string): string {
  return topic === "" ? useRealm.getState().emptyTopicName : topic;
}
