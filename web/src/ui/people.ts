// Small facts about people the pages share: roles as Zulip numbers them, yourself.
import { t } from "../i18n.ts";
import { useUsers } from "../model/users.ts";

export const ROLES: { value: number; label: string }[] = [
  { value: 100, get label() { return t("Owner"); } },
  { value: 200, get label() { return t("Administrator"); } },
  { value: 300, get label() { return t("Moderator"); } },
  { value: 400, get label() { return t("Member"); } },
  { value: 600, get label() { return t("Guest"); } },
];

export function roleLabel(role: number | undefined): string {
  return ROLES.find((r) => r.value === role)?.label ?? t("Member");
}

export function isAdminRole(role: number | undefined): boolean {
  return role === 100 || role === 200;
}

export function useSelf() {
  return useUsers((s) => s.byId[s.selfId]);
}
