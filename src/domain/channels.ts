// Channel rules, pure: who may see a channel's metadata or its content, who
// may administer it or change its subscribers, name and description checks,
// and the defaults and limits of channel settings. Every endpoint that touches
// channels (subscribe, send, edit, move…) asks these functions.
import { badRequest } from "../errors.ts";
import {
  DEFAULT_RULE,
  decodeGroupSetting,
  hasPermission,
  type Actor,
  type GroupSettingRule,
  type GroupSettingValue,
} from "./group-settings.ts";
import { MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH } from "./limits.ts";
import { REALM_GROUP_SETTING_RULES, type RealmSettings } from "./realm-settings.ts";
import { isAdmin, isGuest } from "./roles.ts";
import { SystemGroup, type SystemGroupName } from "./system-groups.ts";
import { unprintablePosition } from "./text.ts";

export const CHANNEL_GROUP_SETTING_NAMES = [
  "can_add_subscribers_group",
  "can_administer_channel_group",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_out_of_channel_group",
  "can_move_messages_within_channel_group",
  "can_remove_subscribers_group",
  "can_resolve_topics_group",
  "can_send_message_group",
  "can_subscribe_group",
] as const;

export type ChannelGroupSettingName = (typeof CHANNEL_GROUP_SETTING_NAMES)[number];

const NO_EVERYONE: GroupSettingRule = { ...DEFAULT_RULE, allowEveryone: false };

export const CHANNEL_GROUP_SETTING_RULES: Record<ChannelGroupSettingName, GroupSettingRule> = {
  can_add_subscribers_group: NO_EVERYONE,
  can_administer_channel_group: NO_EVERYONE,
  can_delete_any_message_group: DEFAULT_RULE,
  can_delete_own_message_group: DEFAULT_RULE,
  can_move_messages_out_of_channel_group: DEFAULT_RULE,
  can_move_messages_within_channel_group: DEFAULT_RULE,
  can_remove_subscribers_group: DEFAULT_RULE,
  can_resolve_topics_group: DEFAULT_RULE,
  can_send_message_group: DEFAULT_RULE,
  can_subscribe_group: NO_EVERYONE,
};

/** Defaults for a new channel; "creator" means an anonymous group of just the creator. */
export const CHANNEL_GROUP_SETTING_DEFAULTS: Record<ChannelGroupSettingName, SystemGroupName | "creator"> = {
  can_add_subscribers_group: SystemGroup.NOBODY,
  can_administer_channel_group: "creator",
  can_delete_any_message_group: SystemGroup.NOBODY,
  can_delete_own_message_group: SystemGroup.NOBODY,
  can_move_messages_out_of_channel_group: SystemGroup.NOBODY,
  can_move_messages_within_channel_group: SystemGroup.NOBODY,
  can_remove_subscribers_group: SystemGroup.ADMINISTRATORS,
  can_resolve_topics_group: SystemGroup.NOBODY,
  can_send_message_group: SystemGroup.EVERYONE,
  can_subscribe_group: SystemGroup.NOBODY,
};

/** Settings whose members may see a private channel's metadata. */
export const METADATA_GRANTING_SETTINGS = ["can_add_subscribers_group", "can_administer_channel_group", "can_subscribe_group"] as const;
const METADATA_GRANTING: readonly ChannelGroupSettingName[] = METADATA_GRANTING_SETTINGS;
/** Settings whose members may read a private channel (and so join it). */
const CONTENT_GRANTING: readonly ChannelGroupSettingName[] = ["can_add_subscribers_group", "can_subscribe_group"];
/** Changing these needs content access, not just the right to administer. */
export const SETTINGS_REQUIRING_CONTENT_ACCESS: readonly ChannelGroupSettingName[] = CONTENT_GRANTING;

export const TOPICS_POLICIES = ["inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only"] as const;
export type TopicsPolicy = (typeof TOPICS_POLICIES)[number];

/** What the permission rules need to know about a channel. */
export interface ChannelFacts {
  invite_only: boolean;
  is_web_public: boolean;
  is_archived: boolean;
  settings: Readonly<Record<ChannelGroupSettingName, GroupSettingValue>>;
}

export function channelSetting(stored: string): GroupSettingValue {
  return decodeGroupSetting(stored);
}

function inAnySetting(actor: Actor, channel: ChannelFacts, names: readonly ChannelGroupSettingName[]): boolean {
  return names.some((name) => hasPermission(channel.settings[name], CHANNEL_GROUP_SETTING_RULES[name], actor));
}

/** May the actor know the channel exists (name, description, settings)? */
export function hasMetadataAccess(actor: Actor, channel: ChannelFacts, subscribed: boolean): boolean {
  if (channel.is_web_public || subscribed) return true;
  if (isGuest(actor.role)) return false;
  if (!channel.invite_only || isAdmin(actor.role)) return true;
  return inAnySetting(actor, channel, METADATA_GRANTING);
}

/** May the actor read the channel's messages and join it? Administrators get no private content by role. */
export function hasContentAccess(actor: Actor, channel: ChannelFacts, subscribed: boolean): boolean {
  if (channel.is_web_public || subscribed) return true;
  if (isGuest(actor.role)) return false;
  if (!channel.invite_only) return true;
  return inAnySetting(actor, channel, CONTENT_GRANTING);
}

export function canAdministerChannel(actor: Actor, channel: ChannelFacts): boolean {
  return isAdmin(actor.role) || hasPermission(channel.settings.can_administer_channel_group, CHANNEL_GROUP_SETTING_RULES.can_administer_channel_group, actor);
}

/** May the actor subscribe other users (given content access to the channel)? */
export function canSubscribeOthers(actor: Actor, channel: ChannelFacts, realm: Readonly<RealmSettings>): boolean {
  return (
    isAdmin(actor.role) ||
    hasPermission(realm.can_add_subscribers_group, REALM_GROUP_SETTING_RULES.can_add_subscribers_group, actor) ||
    canAdministerChannel(actor, channel) ||
    hasPermission(channel.settings.can_add_subscribers_group, CHANNEL_GROUP_SETTING_RULES.can_add_subscribers_group, actor)
  );
}

/** May the actor unsubscribe other users? */
export function canUnsubscribeOthers(actor: Actor, channel: ChannelFacts, subscribed: boolean): boolean {
  if (isAdmin(actor.role)) return true;
  if (isGuest(actor.role)) return false;
  if (hasPermission(channel.settings.can_administer_channel_group, CHANNEL_GROUP_SETTING_RULES.can_administer_channel_group, actor)) return true;
  const basicAccess = hasContentAccess(actor, channel, subscribed) || inAnySetting(actor, channel, METADATA_GRANTING);
  return basicAccess && hasPermission(channel.settings.can_remove_subscribers_group, CHANNEL_GROUP_SETTING_RULES.can_remove_subscribers_group, actor);
}

/**
 * May the actor post in the channel (Zulip's access_stream_for_send_message)?
 * Throws the error Zulip gives. A bot that is not in can_send_message_group
 * may still post when its owner is (`owner`).
 */
export function checkCanPost(actor: Actor, channel: ChannelFacts & { name: string; is_archived: boolean }, subscribed: boolean, owner?: Actor): void {
  const rule = CHANNEL_GROUP_SETTING_RULES.can_send_message_group;
  const value = channel.settings.can_send_message_group;
  if (!hasPermission(value, rule, actor) && !(owner && hasPermission(value, rule, owner))) {
    throw badRequest("You do not have permission to post in this channel.");
  }
  if (channel.is_archived || !hasContentAccess(actor, channel, subscribed)) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
}

export interface NewChannelKind {
  inviteOnly: boolean;
  isWebPublic: boolean;
  isDefault: boolean;
}

/** Throws unless the actor may create a channel of this kind (Zulip's order of checks). */
export function checkChannelCreation(actor: Actor, realm: Readonly<RealmSettings>, kind: NewChannelKind, webPublicEnabled: boolean): void {
  const allowed = (name: "can_create_private_channel_group" | "can_create_public_channel_group" | "can_create_web_public_channel_group") =>
    hasPermission(realm[name], REALM_GROUP_SETTING_RULES[name], actor);
  if (kind.inviteOnly && !allowed("can_create_private_channel_group")) throw badRequest("Insufficient permission");
  if (!kind.inviteOnly && !allowed("can_create_public_channel_group")) throw badRequest("Insufficient permission");
  if (kind.isDefault && !isAdmin(actor.role)) throw badRequest("Insufficient permission");
  if (kind.inviteOnly && kind.isDefault) throw badRequest("A default channel cannot be private.");
  if (kind.isWebPublic) {
    if (kind.inviteOnly) throw badRequest("Invalid parameters");
    if (!webPublicEnabled) throw badRequest("Web-public channels are not enabled.");
    if (!allowed("can_create_web_public_channel_group")) throw badRequest("Insufficient permission");
  }
}

export function checkChannelName(raw: string): string {
  const name = raw.trim();
  if (name === "") throw badRequest("Channel name can't be empty.");
  if ([...name].length > MAX_STREAM_NAME_LENGTH) throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
  const position = unprintablePosition(name);
  if (position !== null) throw badRequest(`Invalid character in channel name, at position ${position}.`);
  return name;
}

/** Descriptions are one line: Zulip replaces newlines with spaces. */
export function checkChannelDescription(raw: string, paramName = "description"): string {
  if ([...raw].length > MAX_STREAM_DESCRIPTION_LENGTH) {
    throw badRequest(`${paramName} is too long (limit: ${MAX_STREAM_DESCRIPTION_LENGTH} characters)`);
  }
  return raw.replace(/\r?\n/g, " ");
}

/** The deprecated stream_post_policy, derived from can_send_message_group. */
export function streamPostPolicy(canSendMessageGroup: GroupSettingValue, systemGroupName: (id: number) => string | undefined): number {
  if (typeof canSendMessageGroup !== "number") return 1;
  switch (systemGroupName(canSendMessageGroup)) {
    case SystemGroup.ADMINISTRATORS:
      return 2;
    case SystemGroup.FULL_MEMBERS:
      return 3;
    case SystemGroup.MODERATORS:
      return 4;
    default:
      return 1;
  }
}

export const STREAM_ASSIGNMENT_COLORS = [
  "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
  "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
  "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
] as const;

/** A colour for each new subscription: the first palette colours the user does not use yet, as Zulip picks them. */
export function pickColors(usedColors: readonly string[], channelIds: readonly number[], requested: ReadonlyMap<number, string>): Map<number, string> {
  const used = new Set(usedColors.map((c) => c.toLowerCase()));
  const result = new Map<number, string>();
  const others: number[] = [];
  for (const id of [...channelIds].sort((a, b) => a - b)) {
    const color = requested.get(id);
    if (color !== undefined) {
      result.set(id, color);
      used.add(color.toLowerCase());
    } else {
      others.push(id);
    }
  }
  const available = STREAM_ASSIGNMENT_COLORS.filter((c) => !used.has(c));
  others.forEach((id, i) => result.set(id, available[i] ?? STREAM_ASSIGNMENT_COLORS[id % STREAM_ASSIGNMENT_COLORS.length]!));
  return result;
}

export const HEX_COLOR = /^#([a-fA-F0-9]{3,6})$/;

/** message_retention_days as the API takes it: "realm_default" (null), "unlimited" (-1) or a positive number of days. */
export function parseRetentionDays(raw: string | number): number | null {
  if (raw === "realm_default") return null;
  if (raw === "unlimited") return -1;
  const days = typeof raw === "number" ? raw : /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(days) || days <= 0) throw badRequest(`Bad value for 'message_retention_days': ${String(raw)}`);
  return days;
}

/**
 * May the actor read messages of the channel they did not receive (sent
 * before they joined, or while not subscribed)? Only in channels whose history
 * is public to subscribers, and only with content access (Zulip's
 * can_access_stream_history).
 */
export function canReadChannelHistory(actor: Actor, channel: ChannelFacts & { history_public_to_subscribers: boolean }, subscribed: boolean): boolean {
  return channel.history_public_to_subscribers && hasContentAccess(actor, channel, subscribed);
}
