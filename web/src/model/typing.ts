// Who is typing where, from typing events. A "start" holds for the server's
// typing expiry period (register's server_typing_started_expiry_period_milliseconds)
// unless renewed or ended by "stop".
import { create } from "zustand";
import { dmNarrow, narrowKey, type Narrow } from "./narrow.ts";
import { useRealm } from "./realm.ts";

export interface TypingState {
  /** Conversation key (narrowKey of its topic or DM narrow) → ids of the people typing there. */
  byConversation: Record<string, number[]>;
}

export const useTyping = create<TypingState>(() => ({ byConversation: {} }));

const timers = new Map<string, ReturnType<typeof setTimeout>>();

function set(key: string, senderId: number, typing: boolean): void {
  const timerKey = `${key}|${senderId}`;
  const old = timers.get(timerKey);
  if (old !== undefined) clearTimeout(old);
  timers.delete(timerKey);
  if (typing) timers.set(timerKey, setTimeout(() => set(key, senderId, false), useRealm.getState().typingStartedExpiryMs));
  useTyping.setState((s) => {
    const current = s.byConversation[key] ?? [];
    const next = typing ? (current.includes(senderId) ? current : [...current, senderId]) : current.filter((id) => id !== senderId);
    if (next === current) return s;
    return { byConversation: { ...s.byConversation, [key]: next } };
  });
}

export const typingStore = {
  reset(): void {
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
    useTyping.setState({ byConversation: {} });
  },
  apply(
    event: { op?: string; message_type?: string; sender: { user_id: number }; recipients?: { user_id: number }[]; stream_id?: number; topic?: string },
    selfId: number,
  ): void {
    if (event.sender.user_id === selfId) return;
    let narrow: Narrow;
    if (event.message_type === "stream" && event.stream_id !== undefined) narrow = { kind: "topic", streamId: event.stream_id, topic: event.topic ?? "" };
    else narrow = dmNarrow((event.recipients ?? []).map((r) => r.user_id), selfId);
    set(narrowKey(narrow), event.sender.user_id, event.op === "start");
  },
};
