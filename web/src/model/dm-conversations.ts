// Your direct message conversations by recency, read or not (Zulip's
// pm_conversations): /register's recent_private_conversations, then every
// direct message event moves its conversation to the top. The left
// sidebar's direct message section and the inbox's order read it.
import { create } from "zustand";
import type { Message } from "../api/types.ts";
import { dmNarrow, dmParticipants } from "./narrow.ts";

export interface DmConversation {
  /** The other participants' ids, ascending, joined with "," (yourself alone for notes to self): the unreads store's DM key. */
  key: string;
  userIds: number[];
  maxId: number;
}

export interface DmConversationsState {
  /** Most recent first. */
  conversations: DmConversation[];
}

export const useDmConversations = create<DmConversationsState>(() => ({ conversations: [] }));

function sorted(list: DmConversation[]): DmConversation[] {
  return list.sort((a, b) => b.maxId - a.maxId);
}

export const dmConversationsStore = {
  load(recent: { user_ids: number[]; max_message_id: number }[] | undefined, selfId: number): void {
    const byKey = new Map<string, DmConversation>();
    for (const c of recent ?? []) {
      const narrow = dmNarrow(c.user_ids, selfId);
      if (narrow.kind !== "dm") continue;
      const key = narrow.userIds.join(",");
      const old = byKey.get(key);
      if (!old || old.maxId < c.max_message_id) byKey.set(key, { key, userIds: narrow.userIds, maxId: c.max_message_id });
    }
    useDmConversations.setState({ conversations: sorted([...byKey.values()]) });
  },
  /** A direct message arrived (or was sent): its conversation is the most recent. */
  noteMessage(message: Message, selfId: number): void {
    if (message.type !== "private") return;
    const userIds = dmParticipants(message, selfId);
    if (userIds.length === 0) return;
    const key = userIds.join(",");
    useDmConversations.setState((s) => {
      const old = s.conversations.find((c) => c.key === key);
      if (old && old.maxId >= message.id) return s;
      return { conversations: sorted([{ key, userIds, maxId: message.id }, ...s.conversations.filter((c) => c.key !== key)]) };
    });
  },
};
