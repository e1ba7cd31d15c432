// The people of the organization (and yourself), from realm_users and
// realm_user events.
import { create } from "zustand";
import type { RegisterResponse, User } from "../api/types.ts";

export interface UsersState {
  selfId: number;
  byId: Record<number, User>;
}

export const useUsers = create<UsersState>(() => ({ selfId: 0, byId: {} }));

export const usersStore = {
  load(initial: RegisterResponse): void {
    const byId: Record<number, User> = {};
    // realm_users are the active ones, realm_non_active_users the others; the objects need not say so themselves.
    for (const user of initial.realm_users ?? []) byId[user.user_id] = { ...user, is_active: true };
    for (const user of initial.realm_non_active_users ?? []) byId[user.user_id] = { ...user, is_active: false };
    for (const user of initial.cross_realm_bots ?? []) byId[user.user_id] = { ...user, is_active: true, is_bot: true };
    useUsers.setState({ selfId: initial.user_id, byId });
  },
  add(user: User): void {
    useUsers.setState((s) => ({ byId: { ...s.byId, [user.user_id]: { ...user, is_active: user.is_active ?? true } } }));
  },
  update(person: Partial<User> & { user_id: number }): void {
    useUsers.setState((s) => {
      const current = s.byId[person.user_id];
      if (!current) return s;
      return { byId: { ...s.byId, [person.user_id]: { ...current, ...person } } };
    });
  },
  remove(userId: number): void {
    this.update({ user_id: userId, is_active: false });
  },
};

export function userName(userId: number): string {
  return useUsers.getState().byId[userId]?.full_name ?? "Unknown user";
}
