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
  /** How often a typist renews "typing" (ms), and how long a start holds without renewal. */
  typingStartedWaitMs: number;
  typingStartedExpiryMs: number;
  /** Every realm_* value of /register by its setting name (realm_invite_required → invite_required), kept by realm events. */
  settings: Record<string, unknown>;
}

export const useRealm = create<RealmState>(() => ({ realmName: "", maxMessageLength: 10000, maxTopicLength: 60, emptyTopicName: "general chat", typingStartedWaitMs: 10_000, typingStartedExpiryMs: 45_000, settings: {} }));

export const realmStore = {
  load(initial: RegisterResponse): void {
    useRealm.setState({
      realmName: initial.realm_name,
      maxMessageLength: initial.max_message_length ?? 10000,
      maxTopicLength: initial.max_topic_length ?? 60,
      emptyTopicName: initial.realm_empty_topic_display_name ?? "general chat",
      realmDescription: initial.realm_description ?? "",
      typingStartedWaitMs: initial.server_typing_started_wait_period_milliseconds ?? 10_000,
      typingStartedExpiryMs: initial.server_typing_started_expiry_period_milliseconds ?? 45_000,
      settings: Object.fromEntries(
        Object.entries(initial)
          .filter(([key]) => key.startsWith("realm_"))
          .map(([key, value]) => [key.slice("realm_".length), value]),
      ),
    });
  },
  applyUpdate(property: string, value: unknown): void {
    useRealm.setState((s) => ({ settings: { ...s.settings, [property]: value } }));
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
