// The initial state POST /register returns, section by section as Zulip's
// fetch_initial_state_data builds it. Each section uses the serializer that
// the REST endpoints and the events use, so state and events agree.
// Sections for features Parley does not have yet return Zulip's empty shape.
import { INTEGRATIONS } from "../integrations/index.ts";
import { botsForUser } from "./bots.ts";
import type { Kysely } from "kysely";
import { hasPermission, type Actor, type GroupSettingRule } from "../domain/group-settings.ts";
import { CHANNEL_GROUP_SETTING_DEFAULTS, CHANNEL_GROUP_SETTING_RULES, hasMetadataAccess } from "../domain/channels.ts";
import { REPORT_MESSAGE_REASONS } from "../domain/message-reports.ts";
import { USER_GROUP_SETTING_DEFAULTS, USER_GROUP_SETTING_RULES } from "../domain/user-groups.ts";
import {
  MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
  MAX_CHANNEL_FOLDER_NAME_LENGTH,
  MAX_MESSAGE_LENGTH,
  MAX_STREAM_DESCRIPTION_LENGTH,
  MAX_STREAM_NAME_LENGTH,
  MAX_TOPIC_LENGTH,
} from "../domain/limits.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_DEFAULTS, REALM_GROUP_SETTING_RULES, type RealmGroupSettingName, type RealmSettings } from "../domain/realm-settings.ts";
import { isAdmin, isGuest, isModerator, isOwner } from "../domain/roles.ts";
import { MAX_AVATAR_FILE_SIZE_MIB, MAX_ICON_FILE_SIZE_MIB } from "../domain/avatar.ts";
import { MAX_REMINDER_NOTE_LENGTH } from "../domain/scheduled-messages.ts";
import { OFFLINE_THRESHOLD_SECS, PRESENCE_PING_INTERVAL_SECS } from "../domain/presence.ts";
import { EMOJISET_CHOICES, legacyEventOf, NOTIFICATION_SOUNDS, parseUserSettings, USER_SETTING_DEFAULTS, USER_SETTING_NAMES } from "../domain/user-settings.ts";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../domain/users.ts";
import type { CapabilityName } from "../events/notifier.ts";
import type { Services } from "../services.ts";
import type { Database, Realm, User } from "../storage/schema.ts";
import { alertWordsOf } from "./alert-words.ts";
import { presenceServerTimestamp, presenceVisibleTo, realmPresence } from "./presence.ts";
import { listChannelFolders } from "./channel-folders.ts";
import { realmEmojiDict } from "./realm-emoji.ts";
import { savedSnippetsOf } from "./saved-snippets.ts";
import { MAX_DRAFTS_IN_REGISTER } from "../domain/drafts.ts";
import { recentDraftsOf } from "./drafts.ts";
import { mutedUsersOf } from "./muted-users.ts";
import { userStatusState } from "./user-status.ts";
import { navigationViewsOf } from "./navigation-views.ts";
import { pushDevicesState } from "./push-devices.ts";
import { realmLinkifiers } from "./linkifiers.ts";
import { realmPlaygrounds } from "./playgrounds.ts";
import { maxMessageId, mutedTopics, recentPrivateConversations, starredMessageIds, unreadMessages, userTopics } from "./message-state.ts";
import { channelContext, channelFacts, defaultChannelIds, formatChannel, formatSubscription, listRealmChannels, subscriberIds, subscriptionsOfUser } from "./channels.ts";
import { serverEmojiDataUrl } from "./emoji-data.ts";
import { realmIconUrl } from "./server-settings.ts";
import { undeliveredReminders, undeliveredScheduledMessages } from "./scheduled-messages.ts";
import { activeUserIdsAmong, settingValueForApi, userGroupObjects } from "./user-groups.ts";
import { avatarUrl, formatUser } from "./users.ts";
import { listApiFields, profileDataByUser } from "./custom-profile-fields.ts";
import { compareCodePoints } from "../domain/text.ts";

type Db = Kysely<Database>;
type State = Record<string, unknown>;

export interface StateRequest {
  /** Whether a section was asked for (fetch_event_types, else event_types, else everything). */
  wants(type: string): boolean;
  /** No list of types was given: every section. */
  wantsAll: boolean;
  capabilities: Readonly<Record<CapabilityName, boolean>>;
  includeSubscribers: boolean | "partial";
  slimPresence: boolean;
  /** presence_history_limit_days: presences of users connected in the last N days (default 14). */
  presenceHistoryLimitDays?: number | undefined;
}

/** Typing notification timing clients use (Zulip's defaults). */
export const TYPING_TIMINGS = {
  server_typing_started_expiry_period_milliseconds: 45000,
  server_typing_stopped_wait_period_milliseconds: 12000,
  server_typing_started_wait_period_milliseconds: 30000,
};

/** Clients use this as the HTTP timeout of GET /events; larger than any heartbeat wait. */
export function longpollTimeoutSeconds(services: Services): number {
  return Math.max(90, Math.ceil(services.config.eventHeartbeatMs / 1000) * 2);
}

const CUSTOM_PROFILE_FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: "Text (short)" },
  LONG_TEXT: { id: 2, name: "Text (long)" },
  SELECT: { id: 3, name: "List of options" },
  DATE: { id: 4, name: "Date" },
  URL: { id: 5, name: "Link" },
  USER: { id: 6, name: "Users" },
  EXTERNAL_ACCOUNT: { id: 7, name: "External account" },
  PRONOUNS: { id: 8, name: "Pronouns" },
};

/** Plain settings clients read as realm_<name>; the rest are internal or reported differently. */
const INTERNAL_REALM_SETTINGS = new Set(["default_email_address_visibility", "authentication_methods", "user_settings_defaults"]);

export async function initialState(db: Db, services: Services, realm: Realm, user: User, actor: Actor, request: StateRequest): Promise<State> {
  const state: State = {};
  const settings = parseRealmSettings(realm.settings);
  const { wants } = request;

  if (wants("alert_words")) state.alert_words = await alertWordsOf(db, user.id);
  if (wants("custom_profile_fields")) {
    state.custom_profile_fields = await listApiFields(db, realm.id);
    state.custom_profile_field_types = CUSTOM_PROFILE_FIELD_TYPES;
  }
  if (wants("onboarding_steps")) state.onboarding_steps = [];
  if (wants("message")) state.max_message_id = await maxMessageId(db, user.id);
  // Synchronization off leaves no drafts on the server, so this is [] then too.
  if (wants("drafts")) state.drafts = await recentDraftsOf(db, user.id, MAX_DRAFTS_IN_REGISTER);
  if (wants("saved_snippets")) state.saved_snippets = await savedSnippetsOf(db, user.id);
  if (wants("navigation_views")) state.navigation_views = await navigationViewsOf(db, user.id);
  if (wants("push_device")) state.push_devices = await pushDevicesState(db, user.id);
  if (wants("scheduled_messages")) state.scheduled_messages = await undeliveredScheduledMessages(db, user.id);
  if (wants("reminders")) state.reminders = await undeliveredReminders(db, user.id);
  // The legacy form, for clients that do not ask for user_topic (and for those that ask for everything).
  if (wants("muted_topics") && (request.wantsAll || !wants("user_topic"))) state.muted_topics = await mutedTopics(db, user.id);
  // Clients without the empty_topic_name capability see the empty topic under its display name.
  const emptyTopicName = request.capabilities.empty_topic_name ? null : settings.empty_topic_display_name;
  if (wants("user_topic")) state.user_topics = await userTopics(db, user.id, emptyTopicName);
  if (wants("muted_users")) state.muted_users = await mutedUsersOf(db, user.id);
  if (wants("presence")) {
    const now = services.now();
    const visible = await presenceVisibleTo(db, settings, user);
    const presence = await realmPresence(db, realm.id, settings, { slim: request.slimPresence, historyLimitDays: request.presenceHistoryLimitDays, now, visible });
    state.presences = presence.presences;
    state.presence_last_update_id = presence.lastUpdateId;
    state.server_timestamp = presenceServerTimestamp(now);
  }
  if (wants("realm_user_groups")) {
    state.realm_user_groups = await userGroupObjects(db, realm.id, { includeDeactivated: request.capabilities.include_deactivated_groups });
  }
  if (wants("realm")) Object.assign(state, await realmState(db, services, realm, settings));
  if (wants("realm_user_settings_defaults")) {
    state.realm_user_settings_defaults = {
      ...USER_SETTING_DEFAULTS,
      ...settings.user_settings_defaults,
      email_address_visibility: settings.default_email_address_visibility,
      emojiset_choices: EMOJISET_CHOICES,
      available_notification_sounds: NOTIFICATION_SOUNDS,
    };
  }
  if (wants("realm_domains")) state.realm_domains = [];
  if (wants("realm_emoji")) state.realm_emoji = await realmEmojiDict(db, realm.id);
  // Clients that do not understand URL templates get none (Zulip's linkifier_url_template capability).
  if (wants("realm_linkifiers")) state.realm_linkifiers = request.capabilities.linkifier_url_template ? await realmLinkifiers(db, realm.id) : [];
  if (wants("realm_filters")) state.realm_filters = [];
  if (wants("realm_playgrounds")) state.realm_playgrounds = await realmPlaygrounds(db, realm.id);
  if (wants("realm_user")) Object.assign(state, await usersState(db, services, realm, user, actor, settings));
  if (wants("realm_bot")) state.realm_bots = await botsForUser(db, services.config.externalUrl, realm.id, user);
  // Parley runs no embedded bots (Zulip's EMBEDDED_BOTS_ENABLED off), so none can be chosen.
  if (wants("realm_embedded_bots")) state.realm_embedded_bots = [];
  // The integrations served at /api/v1/external/<name> (Zulip lists every webhook integration; none of ours take configuration).
  if (wants("realm_incoming_webhook_bots")) {
    state.realm_incoming_webhook_bots = INTEGRATIONS.map((integration) => ({ name: integration.name, display_name: integration.displayName, all_event_types: null, config_options: [] }));
  }
  if (wants("recent_private_conversations")) state.recent_private_conversations = await recentPrivateConversations(db, user.id);
  if (wants("starred_messages")) state.starred_messages = await starredMessageIds(db, user.id);
  if (wants("subscription")) Object.assign(state, await subscriptionState(db, services, realm, user, actor, request));
  if (wants("update_message_flags") && wants("message")) {
    state.unread_msgs = await unreadMessages(db, user.id, emptyTopicName);
  }
  if (wants("stream")) state.streams = await streamsState(db, services, realm, actor, request);
  if (wants("default_streams")) state.realm_default_streams = isGuest(user.role) ? [] : await defaultChannelIds(db, realm.id);
  if (wants("default_stream_groups")) state.realm_default_stream_groups = [];
  if (wants("channel_folders")) state.channel_folders = await listChannelFolders(db, realm.id, { includeArchived: true });
  if (wants("user_settings")) state.user_settings = userSettingsObject(user);
  if (!request.capabilities.user_settings_object) {
    // Clients from before the user_settings object read the settings at the top level.
    if (wants("update_display_settings")) Object.assign(state, legacySettings(user, "display"));
    if (wants("update_global_notifications")) Object.assign(state, legacySettings(user, "notifications"));
  }
  if (wants("user_status")) state.user_status = await userStatusState(db, realm.id);
  if (wants("video_calls")) state.has_zoom_token = false;
  if (wants("giphy")) state.giphy_api_key = "";
  return state;
}

async function realmState(db: Db, services: Services, realm: Realm, settings: Readonly<RealmSettings>): Promise<State> {
  const state: State = {};
  for (const [key, value] of Object.entries(settings)) {
    if (INTERNAL_REALM_SETTINGS.has(key) || key in REALM_GROUP_SETTING_DEFAULTS) continue;
    state[`realm_${key}`] = value;
  }
  const groupSettingNames = Object.keys(REALM_GROUP_SETTING_DEFAULTS) as RealmGroupSettingName[];
  const active = await activeUserIdsAmong(
    db,
    groupSettingNames.flatMap((name) => {
      const value = settings[name];
      return typeof value === "number" ? [] : value.direct_members;
    }),
  );
  for (const name of groupSettingNames) state[`realm_${name}`] = settingValueForApi(settings[name], active);
  const url = services.config.externalUrl;
  Object.assign(state, {
    realm_name: realm.name,
    realm_description: realm.rendered_description,
    realm_date_created: realm.date_created,
    realm_allow_edit_history: settings.message_edit_history_visibility_policy !== "none",
    realm_mandatory_topics: settings.topics_policy === "disable_empty_topic",
    realm_authentication_methods: Object.fromEntries(
      Object.entries(settings.authentication_methods).map(([name, enabled]) => [
        name,
        name === "Dev" && !services.config.devMode ? { enabled: false, available: false, unavailable_reason: "Not configured on this server." } : { enabled, available: true },
      ]),
    ),
    realm_password_auth_enabled: settings.authentication_methods.Email === true,
    realm_email_auth_enabled: settings.authentication_methods.Email === true,
    realm_presence_disabled: settings.presence_disabled,
    realm_push_notifications_enabled: services.config.pushServiceUrl !== undefined,
    realm_push_notifications_enabled_end_timestamp: null,
    realm_require_e2ee_push_notifications: false,
    realm_send_channel_events_messages: false,
    realm_giphy_rating: 2,
    realm_url: url,
    realm_uri: url,
    realm_bot_domain: services.config.fakeEmailDomain,
    realm_icon_url: realmIconUrl(services, realm),
    realm_icon_source: realm.icon_source,
    realm_logo_url: `${url}/static/images/logo/zulip-org-logo.svg?version=0`,
    realm_logo_source: "D",
    realm_night_logo_url: `${url}/static/images/logo/zulip-org-logo.svg?version=0`,
    realm_night_logo_source: "D",
    realm_upload_quota_mib: null,
    realm_org_type: settings.org_type,
    realm_plan_type: 1,
    realm_available_video_chat_providers: { disabled: { name: "None", id: 0 }, jitsi_meet: { name: "Jitsi Meet", id: 1 } },
    realm_default_external_accounts: {},
    realm_empty_topic_display_name: settings.empty_topic_display_name,
    realm_topics_policy: settings.topics_policy,
    realm_moderation_request_channel_id: settings.moderation_request_channel_id,
    realm_new_stream_announcements_stream_id: settings.new_stream_announcements_stream_id,
    realm_signup_announcements_stream_id: settings.signup_announcements_stream_id,
    realm_zulip_update_announcements_stream_id: settings.zulip_update_announcements_stream_id,
    // Derived from the group settings, for clients older than them.
    realm_create_public_stream_policy: 1,
    realm_create_private_stream_policy: 1,
    realm_create_web_public_stream_policy: 7,
    realm_wildcard_mention_policy: 5,
    zulip_plan_is_not_limited: true,
    upgrade_text_for_wide_organization_logo: "",
    max_avatar_file_size_mib: MAX_AVATAR_FILE_SIZE_MIB,
    max_icon_file_size_mib: MAX_ICON_FILE_SIZE_MIB,
    max_logo_file_size_mib: 5,
    max_file_upload_size_mib: services.config.maxFileUploadSizeMib,
    max_stream_name_length: MAX_STREAM_NAME_LENGTH,
    max_stream_description_length: MAX_STREAM_DESCRIPTION_LENGTH,
    max_channel_folder_name_length: MAX_CHANNEL_FOLDER_NAME_LENGTH,
    max_channel_folder_description_length: MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
    max_topic_length: MAX_TOPIC_LENGTH,
    max_message_length: MAX_MESSAGE_LENGTH,
    max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
    max_bulk_new_subscription_messages: 100,
    password_min_length: MIN_PASSWORD_LENGTH,
    password_max_length: MAX_PASSWORD_LENGTH,
    password_min_guesses: 0,
    server_generation: SERVER_GENERATION,
    development_environment: services.config.devMode,
    settings_send_digest_emails: false,
    server_inline_image_preview: true,
    server_inline_url_embed_preview: services.config.inlineUrlEmbedPreview,
    server_thumbnail_formats: [],
    server_avatar_changes_disabled: false,
    server_name_changes_disabled: false,
    server_web_public_streams_enabled: false,
    server_needs_upgrade: false,
    server_emoji_data_url: serverEmojiDataUrl(url),
    server_jitsi_server_url: "https://meet.jit.si",
    jitsi_server_url: settings.jitsi_server_url ?? "https://meet.jit.si",
    server_can_summarize_topics: false,
    server_report_message_types: Object.entries(REPORT_MESSAGE_REASONS).map(([key, name]) => ({ key, name })),
    server_presence_ping_interval_seconds: PRESENCE_PING_INTERVAL_SECS,
    server_presence_offline_threshold_seconds: OFFLINE_THRESHOLD_SECS,
    ...TYPING_TIMINGS,
    server_min_deactivated_realm_deletion_days: 14,
    server_max_deactivated_realm_deletion_days: null,
    server_supported_permission_settings: SUPPORTED_PERMISSION_SETTINGS,
    giphy_rating_options: { disabled: { name: "GIPHY integration disabled", id: 0 } },
    event_queue_longpoll_timeout_seconds: longpollTimeoutSeconds(services),
  });
  return state;
}

/** Changes when the server restarts; clients compare it to learn they talk to a new server. */
const SERVER_GENERATION = Math.floor(Date.now() / 1000);

async function usersState(db: Db, services: Services, realm: Realm, user: User, actor: Actor, settings: Readonly<RealmSettings>): Promise<State> {
  const all = await db.selectFrom("users").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const viewer = { id: user.id, role: user.role };
  // Zulip's register always includes every user's custom profile field values.
  const profileData = await profileDataByUser(db, realm.id);
  const entry = (u: User) => {
    const { is_active: _active, ...person } = formatUser(services.config, u, viewer, { profileData: profileData.get(u.id) ?? {} });
    return person;
  };
  const crossRealmBots = all
    .filter((u) => u.is_system_bot)
    .sort((a, b) => compareCodePoints(a.full_name, b.full_name))
    .map((u) => ({ ...entry(u), is_system_bot: true }));
  const can = (name: RealmGroupSettingName) => hasPermission(settings[name], REALM_GROUP_SETTING_RULES[name], actor);
  const canPublic = can("can_create_public_channel_group");
  const canPrivate = can("can_create_private_channel_group");
  const canWebPublic = can("can_create_web_public_channel_group");
  return {
    realm_users: all.filter((u) => u.is_active && !u.is_system_bot).map(entry),
    realm_non_active_users: all.filter((u) => !u.is_active && !u.is_system_bot).map(entry),
    cross_realm_bots: crossRealmBots,
    avatar_source: user.avatar_source,
    avatar_url: avatarUrl(services.config, user),
    avatar_url_medium: avatarUrl(services.config, user, true),
    can_create_private_streams: canPrivate,
    can_create_public_streams: canPublic,
    can_create_web_public_streams: canWebPublic,
    can_create_streams: canPublic || canPrivate || canWebPublic,
    can_invite_others_to_realm: can("can_invite_users_group"),
    is_admin: isAdmin(user.role),
    is_owner: isOwner(user.role),
    // Zulip's is_moderator is the moderator role only, not administrators.
    is_moderator: isModerator(user.role) && !isAdmin(user.role),
    is_guest: isGuest(user.role),
    user_id: user.id,
    email: user.email,
    delivery_email: user.delivery_email,
    full_name: user.full_name,
  };
}

/**
 * subscriptions (active), unsubscribed (once subscribed) and never_subscribed
 * (visible, never joined), as Zulip's gather_subscriptions_helper; archived
 * channels only for clients that can show them.
 */
async function subscriptionState(db: Db, services: Services, realm: Realm, user: User, actor: Actor, request: StateRequest): Promise<State> {
  const { visible: byId, subs } = await visibleChannels(db, realm, actor, request);
  const visible = byId.sort((a, b) => compareCodePoints(a.name, b.name));
  const context = await channelContext(db, realm.id, visible.map((c) => c.id), services.now());
  const withSubscribers = request.includeSubscribers !== false;
  const subscribed: State[] = [];
  const unsubscribed: State[] = [];
  const never: State[] = [];
  const settings = parseUserSettings(user.settings);
  for (const channel of visible) {
    const sub = subs.get(channel.id);
    const members = withSubscribers ? await subscriberIds(db, channel.id) : undefined;
    if (!sub) {
      never.push({ ...formatChannel(channel, context), ...(members ? { subscribers: members } : {}) });
      continue;
    }
    const formatted: State = { ...formatSubscription(formatChannel(channel, context), sub, members) };
    if (!request.capabilities.notification_settings_null) {
      // Older clients expect booleans: a channel that inherits shows the user's own setting.
      const inherit = {
        desktop_notifications: settings.enable_stream_desktop_notifications,
        audible_notifications: settings.enable_stream_audible_notifications,
        push_notifications: settings.enable_stream_push_notifications,
        email_notifications: settings.enable_stream_email_notifications,
        wildcard_mentions_notify: settings.wildcard_mentions_notify,
      };
      for (const [key, value] of Object.entries(inherit)) if (formatted[key] === null) formatted[key] = value;
    }
    (sub.active ? subscribed : unsubscribed).push(formatted);
  }
  return { subscriptions: subscribed, unsubscribed, never_subscribed: never };
}

/** streams: every channel the user can see (archived ones for clients that can show them). */
async function streamsState(db: Db, services: Services, realm: Realm, actor: Actor, request: StateRequest): Promise<State[]> {
  const { visible } = await visibleChannels(db, realm, actor, request);
  const context = await channelContext(db, realm.id, visible.map((c) => c.id), services.now());
  return visible.map((c) => ({ ...formatChannel(c, context) }));
}

/** Channels the user may see (archived ones only for clients that can show them), by ID, with the user's subscriptions. */
async function visibleChannels(db: Db, realm: Realm, actor: Actor, request: StateRequest) {
  const [channels, subs] = await Promise.all([listRealmChannels(db, realm.id), subscriptionsOfUser(db, actor.id)]);
  const visible = channels
    .filter((c) => request.capabilities.archived_channels || !c.is_archived)
    .filter((c) => hasMetadataAccess(actor, channelFacts(c), subs.get(c.id)?.active === true))
    .sort((a, b) => a.id - b.id);
  return { visible, subs };
}

function userSettingsObject(user: User): State {
  return {
    ...parseUserSettings(user.settings),
    email_address_visibility: user.email_address_visibility,
    timezone: user.timezone,
    emojiset_choices: EMOJISET_CHOICES,
    available_notification_sounds: NOTIFICATION_SOUNDS,
  };
}

/** The top-level settings of a legacy section (update_display_settings / update_global_notifications). */
function legacySettings(user: User, group: "display" | "notifications"): State {
  const settings = parseUserSettings(user.settings);
  const state: State = {};
  for (const name of USER_SETTING_NAMES) if (legacyEventOf(name) === group) state[name] = settings[name];
  if (group === "display") {
    state.timezone = user.timezone;
    state.emojiset_choices = EMOJISET_CHOICES;
  } else {
    state.available_notification_sounds = NOTIFICATION_SOUNDS;
  }
  return state;
}

/** Zulip's server_supported_permission_settings entry for one kind of object. */
function supportedSettings(rules: Record<string, GroupSettingRule>, defaults: Record<string, string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(rules).map(([name, rule]) => [
      name,
      {
        require_system_group: rule.requireSystemGroup,
        allow_internet_group: rule.allowInternet,
        allow_nobody_group: rule.allowNobody,
        allow_everyone_group: rule.allowEveryone,
        default_group_name: defaults[name],
        default_for_system_groups: null,
        allowed_system_groups: rule.allowedSystemGroups ?? [],
      },
    ]),
  );
}

const SUPPORTED_PERMISSION_SETTINGS = {
  realm: supportedSettings(REALM_GROUP_SETTING_RULES, REALM_GROUP_SETTING_DEFAULTS),
  stream: supportedSettings(CHANNEL_GROUP_SETTING_RULES, { ...CHANNEL_GROUP_SETTING_DEFAULTS, can_administer_channel_group: "channel_creator" }),
  group: supportedSettings(USER_GROUP_SETTING_RULES, USER_GROUP_SETTING_DEFAULTS),
};
