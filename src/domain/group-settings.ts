// Group-setting values (every can_*_group): either the ID of a named user
// group, or an anonymous group of direct members and subgroups. One rule
// decides membership for all of them: the organization's, channels' and
// groups' settings.
import { badRequest } from "../errors.ts";
import { isGuest } from "./roles.ts";
import { SystemGroup, type SystemGroupName } from "./system-groups.ts";

export interface AnonymousGroup {
  direct_members: number[];
  direct_subgroups: number[];
}

export type GroupSettingValue = number | AnonymousGroup;

export function encodeGroupSetting(value: GroupSettingValue): string {
  return JSON.stringify(value);
}

export function decodeGroupSetting(stored: string): GroupSettingValue {
  return JSON.parse(stored) as GroupSettingValue;
}

/**
 * Whether a user belongs to the group a setting names. `userGroupIds` are all
 * the groups the user is in, directly or through subgroups (see
 * queries/user-groups groupIdsOfUser); a deactivated user is in none.
 */
export function isUserInSetting(value: GroupSettingValue, userId: number, userGroupIds: ReadonlySet<number>): boolean {
  if (typeof value === "number") return userGroupIds.has(value);
  return value.direct_members.includes(userId) || value.direct_subgroups.some((id) => userGroupIds.has(id));
}

/** An anonymous group that is exactly one named group is stored as that group, as Zulip does. */
export function normalizeGroupSetting(value: GroupSettingValue): GroupSettingValue {
  if (typeof value === "number") return value;
  const members = [...new Set(value.direct_members)].sort((a, b) => a - b);
  const subgroups = [...new Set(value.direct_subgroups)].sort((a, b) => a - b);
  if (members.length === 0 && subgroups.length === 1) return subgroups[0]!;
  return { direct_members: members, direct_subgroups: subgroups };
}

/**
 * The stored form of a requested value: normalized, and an empty anonymous
 * group becomes the role:nobody group itself, as in Zulip.
 */
export function canonicalGroupSetting(value: GroupSettingValue, nobodyGroupId: number): GroupSettingValue {
  const normalized = normalizeGroupSetting(value);
  if (typeof normalized !== "number" && normalized.direct_members.length === 0 && normalized.direct_subgroups.length === 0) return nobodyGroupId;
  return normalized;
}

export function sameGroupSetting(a: GroupSettingValue, b: GroupSettingValue): boolean {
  return encodeGroupSetting(normalizeGroupSetting(a)) === encodeGroupSetting(normalizeGroupSetting(b));
}

/** What a particular setting accepts (Zulip's GroupPermissionSetting). */
export interface GroupSettingRule {
  allowNobody: boolean;
  allowEveryone: boolean;
  allowInternet: boolean;
  /** Only named system groups (no user-defined or anonymous groups). */
  requireSystemGroup: boolean;
  /** When set, the only system groups accepted. */
  allowedSystemGroups?: readonly SystemGroupName[];
}

export const DEFAULT_RULE: GroupSettingRule = {
  allowNobody: true,
  allowEveryone: true,
  allowInternet: false,
  requireSystemGroup: false,
};

/** What the validator needs to know about a named group. */
export interface GroupFacts {
  name: string;
  isSystemGroup: boolean;
  deactivated: boolean;
}

/**
 * Checks a value against a setting's rule; `lookUp` gives facts about a group
 * ID in the organization (undefined: no such group). Throws Zulip's errors.
 */
export function checkGroupSetting(
  settingName: string,
  value: GroupSettingValue,
  rule: GroupSettingRule,
  lookUp: (groupId: number) => GroupFacts | undefined,
): void {
  const named = (groupId: number): GroupFacts => {
    const facts = lookUp(groupId);
    if (!facts) throw badRequest(`Invalid user group ID: ${groupId}`);
    if (facts.deactivated) throw badRequest("User group is deactivated.");
    return facts;
  };
  if (typeof value === "number") {
    const facts = named(value);
    if (rule.requireSystemGroup && !facts.isSystemGroup) {
      throw badRequest(`'${settingName}' must be a system user group.`);
    }
    const forbidden =
      (facts.name === SystemGroup.NOBODY && !rule.allowNobody) ||
      (facts.name === SystemGroup.EVERYONE && !rule.allowEveryone) ||
      (facts.name === SystemGroup.INTERNET && !rule.allowInternet) ||
      (facts.isSystemGroup && rule.allowedSystemGroups !== undefined && !rule.allowedSystemGroups.includes(facts.name as SystemGroupName));
    if (forbidden) throw badRequest(`'${settingName}' setting cannot be set to '${facts.name}' group.`);
    return;
  }
  if (rule.requireSystemGroup) throw badRequest(`'${settingName}' must be a system user group.`);
  for (const id of value.direct_subgroups) {
    const facts = named(id);
    if (facts.name === SystemGroup.INTERNET && !rule.allowInternet) {
      throw badRequest(`'${settingName}' setting cannot be set to '${facts.name}' group.`);
    }
  }
}

/** Who asks: enough of a user for permission checks. */
export interface Actor {
  id: number;
  role: number;
  /** Every group the actor is in, through subgroups (queries/user-groups groupIdsOfUser). */
  groupIds: ReadonlySet<number>;
}

/**
 * Whether the actor has the permission a setting grants. As in Zulip, guests
 * never qualify for a setting that may not be set to role:everyone, whatever
 * group it names.
 */
export function hasPermission(value: GroupSettingValue, rule: GroupSettingRule, actor: Actor): boolean {
  if (!rule.allowEveryone && isGuest(actor.role)) return false;
  return isUserInSetting(value, actor.id, actor.groupIds);
}
