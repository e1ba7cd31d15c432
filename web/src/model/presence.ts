// Who is online: /register's presences and presence events (the
// simplified_presence_events format: per user, last active and idle times).
import { create } from "zustand";
import type { PresenceInfo } from "../api/types.ts";

export interface PresenceState {
  byUser: Record<number, { active: number; idle: number }>;
}

export const usePresence = create<PresenceState>(() => ({ byUser: {} }));

/** Zulip's OFFLINE_THRESHOLD_SECS: a client pings each minute; past this it counts as gone. */
const OFFLINE_THRESHOLD_SECS = 140;

export const presenceStore = {
  load(presences: Record<string, PresenceInfo> | undefined): void {
    usePresence.setState({ byUser: {} });
    if (presences) this.apply(presences);
  },
  apply(presences: Record<string, PresenceInfo>): void {
    usePresence.setState((s) => {
      const byUser = { ...s.byUser };
      for (const [id, info] of Object.entries(presences)) {
        byUser[Number(id)] = { active: info.active_timestamp ?? 0, idle: info.idle_timestamp ?? 0 };
      }
      return { byUser };
    });
  },
};

export type PresenceStatus = "active" | "idle" | "offline";

export function presenceStatus(state: PresenceState, userId: number, nowSecs: number): PresenceStatus {
  const p = state.byUser[userId];
  if (!p) return "offline";
  if (nowSecs - p.active < OFFLINE_THRESHOLD_SECS) return "active";
  if (nowSecs - p.idle < OFFLINE_THRESHOLD_SECS) return "idle";
  return "offline";
}
