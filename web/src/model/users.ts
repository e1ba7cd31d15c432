// The people of the organization (and yourself), from realm_users and
// realm_user events.
import { create } from "zustand";
import type { RegisterResponse, User } from "../api/types.ts";
import { t } from "../i18n.ts";

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
  update(person: Partial<User> & { user_id: number; new_email?: string; custom_profile_field?: { id: number; value: string | null; rendered_value?: string } }): void {
    useUsers.setState((s) => {
      const current = s.byId[person.user_id];
      if (!current) return s;
      const { custom_profile_field: field, new_email: newEmail, ...fields } = person;
      const next = { ...current, ...fields };
      // The public (API) email switched between the real address and the fake user{id}@… one.
      if (newEmail !== undefined) next.email = newEmail;
      // One custom profile field's new value (null: removed).
      if (field) {
        const data = { ...(current.profile_data ?? {}) };
        if (field.value === null) delete data[String(field.id)];
        else data[String(field.id)] = field.rendered_value === undefined ? { value: field.value } : { value: field.value, rendered_value: field.rendered_value };
        next.profile_data = data;
      }
      return { byId: { ...s.byId, [person.user_id]: next } };
    });
  },
  remove(userId: number): void {
    this.update({ user_id: userId, is_active: false });
  },
};

export function userName(userId: number): string {
  return useUsers.getState().byId[userId]?.full_name ?? t("Unknown user");
}

/** A user's real address where you may see it (delivery_email: always your own and bots'), else null. */
export function realEmail(user: Pick<User, "delivery_email">): string | null {
  return user.delivery_email || null;
}

/**
 * The address to show for a user (Zulip's people.get_visible_email): the real
 * one where you may see it, else the public one, which is a fake
 * user{id}@… address when the user hides the real one from you.
 */
export function shownEmail(user: Pick<User, "email" | "delivery_email">): string {
  return realEmail(user) ?? user.email;
}
