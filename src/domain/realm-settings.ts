// Organization settings and the defaults Zulip gives a new organization. The
// realms.settings column stores a JSON object; a key missing there takes the
// default here, so a setting added later needs no data migration.
import { badRequest } from "../errors.ts";
import { DEFAULT_RULE, hasPermission, type Actor, type GroupSettingRule, type GroupSettingValue } from "./group-settings.ts";
import { isGuest } from "./roles.ts";
import { SystemGroup, type SystemGroupName } from "./system-groups.ts";
import type { UserSettings } from "./user-settings.ts";
import { EmailVisibility } from "./users.ts";


/** Plain (non-group) settings, with Zulip's defaults for a new organization. */
export const REALM_SETTING_DEFAULTS = {
  invite_required: true,
  emails_restricted_to_domains: false,
  disallow_disposable_email_addresses: true,
  waiting_period_threshold: 0,
  allow_message_editing: true,
  message_content_edit_limit_seconds: 600 as number | null,
  message_content_delete_limit_seconds: 600 as number | null,
  move_messages_within_stream_limit_seconds: 604800 as number | null,
  move_messages_between_streams_limit_seconds: 604800 as number | null,
  message_edit_history_visibility_policy: "all" as "all" | "moves" | "none",
  allow_edit_history: true,
  topics_policy: "allow_empty_topic" as "allow_empty_topic" | "disable_empty_topic",
  mandatory_topics: false,
  message_retention_days: -1,
  default_language: "en",
  default_code_block_language: "",
  enable_spectator_access: false,
  enable_read_receipts: true,
  enable_guest_user_indicator: true,
  enable_guest_user_dm_warning: true,
  require_unique_names: false,
  send_welcome_emails: true,
  digest_emails_enabled: false,
  digest_weekday: 1,
  message_content_allowed_in_email_notifications: true,
  inline_image_preview: true,
  inline_url_embed_preview: false,
  name_changes_disabled: false,
  email_changes_disabled: false,
  avatar_changes_disabled: false,
  presence_disabled: false,
  welcome_message_custom_text: "",
  video_chat_provider: 1,
  jitsi_server_url: null as string | null,
  org_type: 0,
  want_advertise_in_communities_directory: false,
  new_stream_announcements_stream_id: -1,
  signup_announcements_stream_id: -1,
  zulip_update_announcements_stream_id: -1,
  moderation_request_channel_id: -1,
  /** Shown by clients for the empty-string topic. */
  empty_topic_display_name: "general chat",
  /**
   * Default email_address_visibility of new users (a RealmUserDefault in Zulip):
   * admins only, Zulip's default for a new organization of unspecified type.
   */
  default_email_address_visibility: EmailVisibility.ADMINS as number,
  /** Which login methods the organization accepts. */
  authentication_methods: { Email: true, Dev: true } as Record<string, boolean>,
  /** Personal settings new users start with, where they differ from Zulip's defaults (RealmUserDefault). */
  user_settings_defaults: {} as Partial<UserSettings>,
};

/** Settings only organization owners may change (Zulip's update_realm checks). */
/** Settings that point at a channel; -1 means none. Archiving the channel resets them. */
export const REALM_CHANNEL_SETTINGS = [
  "new_stream_announcements_stream_id",
  "signup_announcements_stream_id",
  "zulip_update_announcements_stream_id",
  "moderation_request_channel_id",
] as const;

export const OWNER_ONLY_REALM_SETTINGS: ReadonlySet<string> = new Set([
  "invite_required",
  "emails_restricted_to_domains",
  "disallow_disposable_email_addresses",
  "waiting_period_threshold",
  "message_retention_days",
  "create_multiuse_invite_group",
  "can_create_groups",
  "can_invite_users_group",
  "can_manage_all_groups",
  "can_manage_billing_group",
]);

export type PlainRealmSettings = typeof REALM_SETTING_DEFAULTS;

/** Each organization-level can_*_group setting and the system group it starts as. */
export const REALM_GROUP_SETTING_DEFAULTS = {
  can_access_all_users_group: SystemGroup.EVERYONE,
  can_add_custom_emoji_group: SystemGroup.MEMBERS,
  can_add_subscribers_group: SystemGroup.MEMBERS,
  can_create_bots_group: SystemGroup.MEMBERS,
  can_create_groups: SystemGroup.MEMBERS,
  can_create_private_channel_group: SystemGroup.MEMBERS,
  can_create_public_channel_group: SystemGroup.MEMBERS,
  can_create_web_public_channel_group: SystemGroup.OWNERS,
  can_create_write_only_bots_group: SystemGroup.MEMBERS,
  can_delete_any_message_group: SystemGroup.ADMINISTRATORS,
  can_delete_own_message_group: SystemGroup.EVERYONE,
  can_invite_users_group: SystemGroup.MEMBERS,
  can_manage_all_groups: SystemGroup.OWNERS,
  can_manage_billing_group: SystemGroup.ADMINISTRATORS,
  can_mention_many_users_group: SystemGroup.ADMINISTRATORS,
  can_move_messages_between_channels_group: SystemGroup.MEMBERS,
  can_move_messages_between_topics_group: SystemGroup.EVERYONE,
  can_resolve_topics_group: SystemGroup.EVERYONE,
  can_set_delete_message_policy_group: SystemGroup.MODERATORS,
  can_set_topics_policy_group: SystemGroup.MEMBERS,
  can_summarize_topics_group: SystemGroup.EVERYONE,
  create_multiuse_invite_group: SystemGroup.ADMINISTRATORS,
  direct_message_initiator_group: SystemGroup.EVERYONE,
  direct_message_permission_group: SystemGroup.EVERYONE,
  workplace_users_group: SystemGroup.EVERYONE,
} satisfies Record<string, SystemGroupName>;

export type RealmGroupSettingName = keyof typeof REALM_GROUP_SETTING_DEFAULTS;

const NO_EVERYONE: GroupSettingRule = { ...DEFAULT_RULE, allowEveryone: false };

/** What each organization-level setting accepts (Zulip's REALM_PERMISSION_GROUP_SETTINGS). */
export const REALM_GROUP_SETTING_RULES: Record<RealmGroupSettingName, GroupSettingRule> = {
  can_access_all_users_group: {
    ...DEFAULT_RULE,
    allowNobody: false,
    requireSystemGroup: true,
    allowedSystemGroups: [SystemGroup.EVERYONE, SystemGroup.MEMBERS],
  },
  can_add_custom_emoji_group: NO_EVERYONE,
  can_add_subscribers_group: NO_EVERYONE,
  can_create_bots_group: NO_EVERYONE,
  can_create_groups: NO_EVERYONE,
  can_create_private_channel_group: NO_EVERYONE,
  can_create_public_channel_group: NO_EVERYONE,
  can_create_web_public_channel_group: {
    ...NO_EVERYONE,
    requireSystemGroup: true,
    allowedSystemGroups: [SystemGroup.MODERATORS, SystemGroup.ADMINISTRATORS, SystemGroup.OWNERS, SystemGroup.NOBODY],
  },
  can_create_write_only_bots_group: NO_EVERYONE,
  can_delete_any_message_group: NO_EVERYONE,
  can_delete_own_message_group: DEFAULT_RULE,
  can_invite_users_group: NO_EVERYONE,
  can_manage_all_groups: { ...NO_EVERYONE, allowNobody: false },
  can_manage_billing_group: { ...NO_EVERYONE, allowNobody: false },
  can_mention_many_users_group: DEFAULT_RULE,
  can_move_messages_between_channels_group: NO_EVERYONE,
  can_move_messages_between_topics_group: DEFAULT_RULE,
  can_resolve_topics_group: DEFAULT_RULE,
  can_set_delete_message_policy_group: NO_EVERYONE,
  can_set_topics_policy_group: DEFAULT_RULE,
  can_summarize_topics_group: DEFAULT_RULE,
  create_multiuse_invite_group: NO_EVERYONE,
  direct_message_initiator_group: DEFAULT_RULE,
  direct_message_permission_group: DEFAULT_RULE,
  workplace_users_group: DEFAULT_RULE,
};

export type RealmSettings = PlainRealmSettings & Record<RealmGroupSettingName, GroupSettingValue>;

/** The settings a new organization is stored with, given the IDs of its system groups. */
export function initialRealmSettings(systemGroupIds: ReadonlyMap<SystemGroupName, number>): RealmSettings {
  const groupSettings = {} as Record<RealmGroupSettingName, GroupSettingValue>;
  for (const [name, groupName] of Object.entries(REALM_GROUP_SETTING_DEFAULTS)) {
    const id = systemGroupIds.get(groupName);
    if (id === undefined) throw new Error(`system group ${groupName} missing`);
    groupSettings[name as RealmGroupSettingName] = id;
  }
  return { ...structuredClone(REALM_SETTING_DEFAULTS), ...groupSettings };
}

/**
 * Reads the stored JSON: missing plain keys take the default. Group settings
 * are written at creation, so they are always stored.
 */
export function parseRealmSettings(stored: string): Readonly<RealmSettings> {
  const cached = parsedSettings.get(stored);
  if (cached) return cached;
  const parsed = JSON.parse(stored) as Partial<RealmSettings>;
  const settings = Object.freeze({ ...structuredClone(REALM_SETTING_DEFAULTS), ...parsed } as RealmSettings);
  // Every request reads the settings; the stored text rarely changes, so keep
  // the last few parses (frozen, so no caller can alter a shared copy).
  if (parsedSettings.size >= 16) parsedSettings.delete(parsedSettings.keys().next().value!);
  parsedSettings.set(stored, settings);
  return settings;
}

const parsedSettings = new Map<string, Readonly<RealmSettings>>();

/** Whether password login is on: Zulip's "Email" authentication method. */
/**
 * Whether a user sees every user of the organization. Only guests can be
 * limited, by can_access_all_users_group; a limited guest knows only the
 * people they share a channel or a direct-message conversation with.
 */
export function canAccessAllUsers(settings: Readonly<RealmSettings>, actor: Actor): boolean {
  return !isGuest(actor.role) || hasPermission(settings.can_access_all_users_group, REALM_GROUP_SETTING_RULES.can_access_all_users_group, actor);
}

export function passwordAuthEnabled(settings: Readonly<RealmSettings>): boolean {
  return settings.authentication_methods.Email === true;
}

export const MAX_REALM_NAME_LENGTH = 40;
export const MAX_REALM_DESCRIPTION_LENGTH = 1000;

/** Returns the stored form of an organization name, or throws. */
export function checkRealmName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0) throw badRequest("Organization name can't be empty.");
  if (name.length > MAX_REALM_NAME_LENGTH) throw badRequest(`Organization name is too long (limit: ${MAX_REALM_NAME_LENGTH} characters)`);
  return name;
}
