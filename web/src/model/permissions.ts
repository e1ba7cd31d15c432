// What you may do to a message: the organization's message settings and
// permission groups from /register (realm_* settings, realm_user_groups),
// kept current by realm and user_group events.
// The server decides in the end; these rules only decide which actions the
// menu offers, the way Zulip's web app does.
import { create } from "zustand";
import type { Message, RegisterResponse } from "../api/types.ts";
import { useChannels } from "./channels.ts";
import { useRealm } from "./realm.ts";
import { useUsers } from "./users.ts";

/** A group-setting value: a group's id, or an anonymous group of users and subgroups. */
export type GroupSetting = number | { direct_members: number[]; direct_subgroups: number[] };

export interface UserGroup {
  id: number;
  name: string;
  members: number[];
  direct_subgroup_ids: number[];
  deactivated?: boolean;
}

export interface ReportType {
  key: string;
  name: string;
}

export interface PermissionsState {
  /** realm_* settings by name without the prefix (only the ones read here). */
  settings: Record<string, unknown>;
  groups: Record<number, UserGroup>;
  reportTypes: ReportType[];
  /** Deactivated users (realm_non_active_users; realm_user events), who cannot be written to. */
  deactivated: Record<number, true>;
}

const SETTINGS = [
  "allow_message_editing",
  "message_content_edit_limit_seconds",
  "message_content_delete_limit_seconds",
  "move_messages_within_stream_limit_seconds",
  "move_messages_between_streams_limit_seconds",
  "message_edit_history_visibility_policy",
  "allow_edit_history",
  "moderation_request_channel_id",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_between_channels_group",
  "can_move_messages_between_topics_group",
  "can_resolve_topics_group",
  "topics_policy",
  "mandatory_topics",
];

export const usePermissions = create<PermissionsState>(() => ({ settings: {}, groups: {}, reportTypes: [], deactivated: {} }));

export const permissionsStore = {
  load(initial: RegisterResponse): void {
    const raw = initial as unknown as Record<string, unknown>;
    const settings: Record<string, unknown> = {};
    for (const name of SETTINGS) if (`realm_${name}` in raw) settings[name] = raw[`realm_${name}`];
    const groups: Record<number, UserGroup> = {};
    for (const g of (raw.realm_user_groups as UserGroup[] | undefined) ?? []) groups[g.id] = g;
    usePermissions.setState({
      settings,
      groups,
      reportTypes: (raw.server_report_message_types as ReportType[] | undefined) ?? [],
      deactivated: Object.fromEntries(((raw.realm_non_active_users as { user_id: number }[] | undefined) ?? []).map((u) => [u.user_id, true as const])),
    });
  },

  /** The events that change what these rules read; the rest are ignored. */
  applyEvent(event: { type: string; op?: string; [key: string]: any }): void {
    switch (event.type) {
      case "realm":
        if (event.op === "update" && SETTINGS.includes(event.property)) this.setSetting(event.property, event.value);
        if (event.op === "update_dict") for (const [k, v] of Object.entries((event.data ?? {}) as Record<string, unknown>)) if (SETTINGS.includes(k)) this.setSetting(k, v);
        break;
      case "realm_user":
        if (event.op === "remove" || (event.op === "update" && event.person?.is_active === false)) this.setDeactivated(event.person.user_id, true);
        if ((event.op === "update" && event.person?.is_active === true) || event.op === "add") this.setDeactivated(event.person.user_id, false);
        break;
      case "user_group":
        this.applyGroupEvent(event);
        break;
    }
  },

  setDeactivated(userId: number, deactivated: boolean): void {
    usePermissions.setState((s) => {
      const next = { ...s.deactivated };
      if (deactivated) next[userId] = true;
      else delete next[userId];
      return { deactivated: next };
    });
  },

  setSetting(name: string, value: unknown): void {
    usePermissions.setState((s) => ({ settings: { ...s.settings, [name]: value } }));
  },

  applyGroupEvent(event: { op?: string; [key: string]: any }): void {
    usePermissions.setState((s) => {
      const groups = { ...s.groups };
      const id = (event.group_id ?? event.group?.id) as number;
      const g = groups[id];
      switch (event.op) {
        case "add":
          groups[event.group.id] = event.group;
          break;
        case "remove":
          delete groups[id];
          break;
        case "update":
          if (g) groups[id] = { ...g, ...event.data };
          break;
        case "add_members":
          if (g) groups[id] = { ...g, members: [...new Set([...g.members, ...event.user_ids])] };
          break;
        case "remove_members":
          if (g) groups[id] = { ...g, members: g.members.filter((m) => !event.user_ids.includes(m)) };
          break;
        case "add_subgroups":
          if (g) groups[id] = { ...g, direct_subgroup_ids: [...new Set([...g.direct_subgroup_ids, ...event.direct_subgroup_ids])] };
          break;
        case "remove_subgroups":
          if (g) groups[id] = { ...g, direct_subgroup_ids: g.direct_subgroup_ids.filter((m) => !event.direct_subgroup_ids.includes(m)) };
          break;
        default:
          return s;
      }
      return { groups };
    });
  },
};

function inGroup(groupId: number, userId: number, groups: Record<number, UserGroup>, seen = new Set<number>()): boolean {
  if (seen.has(groupId)) return false;
  seen.add(groupId);
  const g = groups[groupId];
  if (!g || g.deactivated) return false;
  if (g.members.includes(userId)) return true;
  return g.direct_subgroup_ids.some((sub) => inGroup(sub, userId, groups, seen));
}

/** Whether a user belongs to a group setting's group (recursively through subgroups). */
export function allowedBy(setting: unknown, userId: number, groups = usePermissions.getState().groups): boolean {
  if (typeof setting === "number") return inGroup(setting, userId, groups);
  if (setting && typeof setting === "object") {
    const s = setting as { direct_members?: number[]; direct_subgroups?: number[] };
    if (s.direct_members?.includes(userId)) return true;
    return (s.direct_subgroups ?? []).some((id) => inGroup(id, userId, groups));
  }
  return false;
}

const MODERATOR = 300;

function setting(name: string): unknown {
  return usePermissions.getState().settings[name];
}

/** null or 0 means no limit (Zulip's API). */
function withinLimit(message: Message, limit: unknown, now: number): boolean {
  if (typeof limit !== "number" || limit <= 0) return true;
  return now - message.timestamp < limit;
}

function me() {
  const { selfId, byId } = useUsers.getState();
  return { id: selfId, role: byId[selfId]?.role ?? 400 };
}

function isOwnMessage(message: Message, selfId: number): boolean {
  if (message.sender_id === selfId) return true;
  // One's bots' messages count as one's own for deletion (Zulip's rule).
  const sender = useUsers.getState().byId[message.sender_id] as { bot_owner_id?: number | null } | undefined;
  return sender?.bot_owner_id === selfId;
}

/** Message content can be edited now: the sender, editing allowed, within the edit limit. */
export function canEditContent(message: Message, now = Date.now() / 1000): boolean {
  if (message.id <= 0 || message.sender_id !== me().id) return false;
  if (setting("allow_message_editing") === false) return false;
  return withinLimit(message, setting("message_content_edit_limit_seconds"), now);
}

function channelSetting(message: Message, name: string): unknown {
  if (message.stream_id === undefined) return undefined;
  return (useChannels.getState().subscriptions[message.stream_id] as unknown as Record<string, unknown> | undefined)?.[name];
}

/** The topic can be changed (messages moved within their channel). */
export function canMoveTopic(message: Message, now = Date.now() / 1000): boolean {
  if (message.id <= 0 || message.type !== "stream") return false;
  const { id, role } = me();
  const allowed = allowedBy(setting("can_move_messages_between_topics_group"), id) || allowedBy(channelSetting(message, "can_move_messages_within_channel_group"), id);
  if (!allowed) return false;
  return role <= MODERATOR || withinLimit(message, setting("move_messages_within_stream_limit_seconds"), now);
}

/** The topic can be marked resolved or unresolved (Zulip: can_resolve_topics_group, or moving the topic). */
export function canResolveTopic(message: Message, now = Date.now() / 1000): boolean {
  if (message.id <= 0 || message.type !== "stream") return false;
  return allowedBy(setting("can_resolve_topics_group"), me().id) || canMoveTopic(message, now);
}

/** The messages can be moved to another channel. */
export function canMoveChannel(message: Message, now = Date.now() / 1000): boolean {
  if (message.id <= 0 || message.type !== "stream") return false;
  const { id, role } = me();
  const allowed = allowedBy(setting("can_move_messages_between_channels_group"), id) || allowedBy(channelSetting(message, "can_move_messages_out_of_channel_group"), id);
  if (!allowed) return false;
  return role <= MODERATOR || withinLimit(message, setting("move_messages_between_streams_limit_seconds"), now);
}

export function canDelete(message: Message, now = Date.now() / 1000): boolean {
  if (message.id <= 0) return false;
  const { id } = me();
  if (allowedBy(setting("can_delete_any_message_group"), id) || allowedBy(channelSetting(message, "can_delete_any_message_group"), id)) return true;
  if (!isOwnMessage(message, id)) return false;
  const own = allowedBy(setting("can_delete_own_message_group"), id) || allowedBy(channelSetting(message, "can_delete_own_message_group"), id);
  return own && withinLimit(message, setting("message_content_delete_limit_seconds"), now);
}

/** Edit history can be seen (the organization's message_edit_history_visibility_policy is not "none"). */
export function canSeeHistory(message: Message): boolean {
  if (message.id <= 0) return false;
  if (message.last_edit_timestamp === undefined && message.last_moved_timestamp === undefined) return false;
  const policy = setting("message_edit_history_visibility_policy");
  if (policy === "none") return false;
  if (policy === "moves" && message.last_moved_timestamp === undefined) return false;
  return setting("allow_edit_history") !== false;
}

/** Reporting needs a moderation request channel. */
export function canReport(message: Message): boolean {
  const channel = setting("moderation_request_channel_id");
  return message.id > 0 && typeof channel === "number" && channel > 0;
}

// ---- Settings and administration pages: which panels and buttons a person is offered (Zulip's rules).

const OWNER = 100;
const ADMINISTRATOR = 200;
const GUEST = 600;

function realmSetting(name: string): unknown {
  // realm.ts keeps every realm_* value, updated by realm events.
  return useRealm.getState().settings[name];
}

export function isOwner(): boolean {
  return me().role === OWNER;
}

export function isAdmin(): boolean {
  return me().role <= ADMINISTRATOR;
}

/** Custom emoji may be added by can_add_custom_emoji_group (not guests). */
export function canAddCustomEmoji(): boolean {
  const { id, role } = me();
  return role !== GUEST && allowedBy(realmSetting("can_add_custom_emoji_group"), id);
}

/** A custom emoji may be deactivated by administrators and its author. */
export function canDeactivateEmoji(authorId: number | null | undefined): boolean {
  return isAdmin() || (authorId !== null && authorId !== undefined && authorId === me().id);
}

export function canCreateGroups(): boolean {
  const { id, role } = me();
  return role !== GUEST && allowedBy(realmSetting("can_create_groups"), id);
}

/** A group's members and name may be changed: can_manage_all_groups, or the group's can_manage_group (members also by can_add_members_group). */
export function canManageGroup(group: UserGroup & { is_system_group?: boolean; can_manage_group?: unknown; can_add_members_group?: unknown }, permission: "manage" | "add_members" = "manage"): boolean {
  if (group.is_system_group) return false;
  const { id } = me();
  if (allowedBy(realmSetting("can_manage_all_groups"), id)) return true;
  if (allowedBy(group.can_manage_group, id)) return true;
  return permission === "add_members" && allowedBy(group.can_add_members_group, id);
}

/** Bots: members of can_create_bots_group any kind; of can_create_write_only_bots_group incoming webhooks only. */
export function botTypesAllowed(): number[] {
  const { id, role } = me();
  if (role === GUEST) return [];
  if (allowedBy(realmSetting("can_create_bots_group"), id)) return [1, 2, 3];
  if (allowedBy(realmSetting("can_create_write_only_bots_group"), id)) return [2];
  return [];
}

/** Roles `role` may be given by me to someone whose role is `current`: only owners touch owners. */
export function canChangeRole(current: number, next: number): boolean {
  if (!isAdmin()) return false;
  if ((current === OWNER || next === OWNER) && !isOwner()) return false;
  return true;
}

/** Someone may be deactivated or reactivated by administrators; owners only by owners. */
export function canDeactivateUser(role: number): boolean {
  if (!isAdmin()) return false;
  return role !== OWNER || isOwner();
}

/**
 * Subscribes a view to what the rules above read — the organization's
 * settings, the groups and your own role — so the buttons it offers follow
 * realm, user_group and realm_user events at once.
 */
export function usePermissionInputs(): void {
  useRealm((s) => s.settings);
  usePermissions((s) => s.groups);
  useUsers((s) => s.byId[s.selfId]?.role);
}
