// What people say about themselves: status text and emoji, and "away"
// (/register's user_status, kept by user_status events).
import { create } from "zustand";

export interface UserStatus {
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
  away?: boolean;
}

export const useUserStatus = create<{ byUser: Record<number, UserStatus> }>(() => ({ byUser: {} }));

export const userStatusStore = {
  load(initial: Record<string, UserStatus> | undefined): void {
    const byUser: Record<number, UserStatus> = {};
    for (const [id, status] of Object.entries(initial ?? {})) byUser[Number(id)] = status;
    useUserStatus.setState({ byUser });
  },
  /** A user_status event: the fields it names replace the old ones ("" clears). */
  apply(event: UserStatus & { user_id: number }): void {
    useUserStatus.setState((s) => {
      const { user_id, ...fields } = event;
      const next = { ...(s.byUser[user_id] ?? {}), ...fields };
      return { byUser: { ...s.byUser, [user_id]: next } };
    });
  },
};
