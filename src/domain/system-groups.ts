// The system user groups Zulip creates with every organization. Each role's
// users are direct members of exactly one of them; the groups nest so that a
// group also contains every more powerful role (owners ⊂ administrators ⊂
// moderators ⊂ full members ⊂ members ⊂ everyone ⊂ internet).
import { Role } from "./roles.ts";

export const SystemGroup = {
  INTERNET: "role:internet",
  EVERYONE: "role:everyone",
  MEMBERS: "role:members",
  FULL_MEMBERS: "role:fullmembers",
  MODERATORS: "role:moderators",
  ADMINISTRATORS: "role:administrators",
  OWNERS: "role:owners",
  NOBODY: "role:nobody",
} as const;

export type SystemGroupName = (typeof SystemGroup)[keyof typeof SystemGroup];

export interface SystemGroupDefinition {
  name: SystemGroupName;
  description: string;
  /** The group this one is a direct subgroup of, if any. */
  parent: SystemGroupName | null;
}

/** In Zulip's creation order (so IDs increase the same way); descriptions as Zulip words them. */
export const SYSTEM_GROUPS: readonly SystemGroupDefinition[] = [
  { name: SystemGroup.NOBODY, description: "Nobody", parent: null },
  { name: SystemGroup.OWNERS, description: "Owners of this organization", parent: SystemGroup.ADMINISTRATORS },
  { name: SystemGroup.ADMINISTRATORS, description: "Administrators of this organization, including owners", parent: SystemGroup.MODERATORS },
  { name: SystemGroup.MODERATORS, description: "Moderators of this organization, including administrators", parent: SystemGroup.FULL_MEMBERS },
  { name: SystemGroup.FULL_MEMBERS, description: "Members of this organization, not including new accounts and guests", parent: SystemGroup.MEMBERS },
  { name: SystemGroup.MEMBERS, description: "Members of this organization, not including guests", parent: SystemGroup.EVERYONE },
  { name: SystemGroup.EVERYONE, description: "Everyone in this organization, including guests", parent: SystemGroup.INTERNET },
  { name: SystemGroup.INTERNET, description: "Everyone on the Internet", parent: null },
];

/**
 * The system groups a user with this role is a direct member of. Members are
 * direct members of role:members and, once past the organization's waiting
 * period, of role:fullmembers too (as in Zulip).
 */
export function directSystemGroupsForRole(role: number, isFullMember: boolean): SystemGroupName[] {
  switch (role) {
    case Role.OWNER:
      return [SystemGroup.OWNERS];
    case Role.ADMINISTRATOR:
      return [SystemGroup.ADMINISTRATORS];
    case Role.MODERATOR:
      return [SystemGroup.MODERATORS];
    case Role.MEMBER:
      return isFullMember ? [SystemGroup.MEMBERS, SystemGroup.FULL_MEMBERS] : [SystemGroup.MEMBERS];
    case Role.GUEST:
      return [SystemGroup.EVERYONE];
    default:
      throw new Error(`unknown role ${role}`);
  }
}

/** Whether a member who joined at `dateJoined` is past the waiting period (in days) at `now`. */
export function isFullMember(dateJoined: number, waitingPeriodDays: number, now: number): boolean {
  return now - dateJoined >= waitingPeriodDays * 86400;
}
