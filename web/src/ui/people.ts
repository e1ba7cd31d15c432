// Small facts about people the pages share: roles as Zulip numbers them, yourself.
import { useUsers } from "../model/users.ts";

export const ROLES: { value: number; label: string }[] = [
  { value: 100, label: "Owner" },
  { value: 200, label: "Administrator" },
  { value: 300, label: "Moderator" },
  { value: 400, label: "Member" },
  { value: 600, label: "Guest" },
];

export function roleLabel(role: number | undefined): string {
  return ROLES.find((r) => r.value === role)?.label ?? "Member";
}

export function isAdminRole(role: number | undefined): boolean {
  return role === 100 || role === 200;
}

export function useSelf() {
  return useUsers((s) => s.byId[s.selfId]);
}
