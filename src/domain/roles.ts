import { badRequest } from "../errors.ts";

// Organization roles and the checks built on them. Lower number, more power.

export const Role = {
  OWNER: 100,
  ADMINISTRATOR: 200,
  MODERATOR: 300,
  MEMBER: 400,
  GUEST: 600,
} as const;

export type RoleValue = (typeof Role)[keyof typeof Role];

export const ALL_ROLES: readonly RoleValue[] = [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST];

export function isRole(value: number): value is RoleValue {
  return (ALL_ROLES as readonly number[]).includes(value);
}

export const isOwner = (role: number): boolean => role === Role.OWNER;
export const isAdmin = (role: number): boolean => role <= Role.ADMINISTRATOR;
export const isModerator = (role: number): boolean => role <= Role.MODERATOR;
export const isGuest = (role: number): boolean => role === Role.GUEST;

export const BotType = {
  GENERIC: 1,
  INCOMING_WEBHOOK: 2,
  OUTGOING_WEBHOOK: 3,
  EMBEDDED: 4,
} as const;

export function isBotType(value: number): boolean {
  return value >= BotType.GENERIC && value <= BotType.EMBEDDED;
}

/** Zulip's require_non_guest_user. */
export function requireNonGuest(user: { role: number }): void {
  if (isGuest(user.role)) throw badRequest("Not allowed for guest users");
}
