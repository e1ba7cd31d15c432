// Rules about user groups that do not need the database.
import { badRequest } from "../errors.ts";
import { DEFAULT_RULE, type GroupSettingRule } from "./group-settings.ts";
import { SystemGroup } from "./system-groups.ts";

/** The permission settings every user group has. */
export const USER_GROUP_SETTING_NAMES = [
  "can_add_members_group",
  "can_join_group",
  "can_leave_group",
  "can_manage_group",
  "can_mention_group",
  "can_remove_members_group",
] as const;

export type UserGroupSettingName = (typeof USER_GROUP_SETTING_NAMES)[number];

export const USER_GROUP_SETTING_RULES: Record<UserGroupSettingName, GroupSettingRule> = {
  can_add_members_group: { ...DEFAULT_RULE, allowEveryone: false },
  can_join_group: { ...DEFAULT_RULE, allowEveryone: false },
  can_leave_group: DEFAULT_RULE,
  can_manage_group: { ...DEFAULT_RULE, allowEveryone: false },
  can_mention_group: DEFAULT_RULE,
  can_remove_members_group: { ...DEFAULT_RULE, allowEveryone: false },
};

export const MAX_GROUP_NAME_LENGTH = 100;
const RESERVED_PREFIXES = ["@", "role:", "user:", "stream:", "channel:"];

export function checkGroupName(raw: string): string {
  const name = raw.trim();
  if (name === "") throw badRequest("User group name can't be empty!");
  if (name.length > MAX_GROUP_NAME_LENGTH) throw badRequest(`User group name cannot exceed ${MAX_GROUP_NAME_LENGTH} characters.`);
  for (const prefix of RESERVED_PREFIXES) {
    if (name.startsWith(prefix)) throw badRequest(`User group name cannot start with '${prefix}'.`);
  }
  return name;
}

/**
 * What a user-created group's settings start as when the request does not
 * set them (Zulip's default_group_name); "group_creator" is an anonymous
 * group of just the creator, a separate one per setting.
 */
export const USER_GROUP_SETTING_DEFAULTS: Record<UserGroupSettingName, "group_creator" | (typeof SystemGroup)[keyof typeof SystemGroup]> = {
  can_add_members_group: "group_creator",
  can_join_group: SystemGroup.NOBODY,
  can_leave_group: SystemGroup.EVERYONE,
  can_manage_group: "group_creator",
  can_mention_group: SystemGroup.EVERYONE,
  can_remove_members_group: SystemGroup.NOBODY,
};

/**
 * System groups a setting may not name beyond what USER_GROUP_SETTING_RULES
 * says. The contract forbids role:owners for can_mention_group (Zulip did
 * before feature level 326).
 */
export const FORBIDDEN_SYSTEM_GROUPS: Partial<Record<UserGroupSettingName, readonly string[]>> = {
  can_mention_group: [SystemGroup.OWNERS],
};
