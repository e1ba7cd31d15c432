// Personal settings (Zulip's UserBaseSettings): their defaults, what each
// accepts, and which legacy event each belongs to. users.settings stores only
// the values a user (or the organization's defaults at sign-up) set; the rest
// take the defaults here, so a setting added later needs no data migration.
// email_address_visibility and timezone are columns of their own (they change
// what others see) and are not handled here.
import { badRequest } from "../errors.ts";

type Kind = { type: "bool" } | { type: "int"; allowed?: readonly number[]; min?: number; max?: number } | { type: "string"; allowed: readonly string[] };

const bool = { type: "bool" } as const;
const intIn = (...allowed: number[]) => ({ type: "int", allowed }) as const;
const oneOf = (...allowed: string[]) => ({ type: "string", allowed }) as const;

/** Emoji sets Zulip offers, with their labels (user_settings.emojiset_choices). */
export const EMOJISET_CHOICES = [
  { key: "google", text: "Google" },
  { key: "twitter", text: "Twitter" },
  { key: "text", text: "Plain text" },
  { key: "google-blob", text: "Google blobs" },
];

/** Sounds a client may play; Zulip lists the files it ships. */
export const NOTIFICATION_SOUNDS = ["chime", "ding", "zulip"];

/** Languages a user may pick, with the names user_settings events carry. */
export const LANGUAGES: Readonly<Record<string, string>> = {
  en: "English",
  de: "Deutsch",
  es: "Español",
  fr: "Français",
  it: "Italiano",
  ja: "日本語",
  nl: "Nederlands",
  pl: "Polski",
  pt: "Português",
  ru: "Русский",
  "zh-hans": "简体中文",
};

/** Every setting with its kind and Zulip's default, in Zulip's order. */
const SETTINGS = {
  // Display settings (Zulip's display_settings_legacy).
  color_scheme: { kind: intIn(1, 2, 3), default: 1, legacy: "display" },
  default_language: { kind: oneOf(...Object.keys(LANGUAGES)), default: "en", legacy: "display" },
  web_home_view: { kind: oneOf("recent_topics", "inbox", "all_messages"), default: "inbox", legacy: "display" },
  demote_inactive_streams: { kind: intIn(1, 2, 3), default: 1, legacy: "display" },
  emojiset: { kind: oneOf(...EMOJISET_CHOICES.map((c) => c.key)), default: "google", legacy: "display" },
  enable_drafts_synchronization: { kind: bool, default: true, legacy: "display" },
  enter_sends: { kind: bool, default: false, legacy: "display" },
  fluid_layout_width: { kind: bool, default: false, legacy: "display" },
  high_contrast_mode: { kind: bool, default: false, legacy: "display" },
  left_side_userlist: { kind: bool, default: false, legacy: "display" },
  starred_message_counts: { kind: bool, default: true, legacy: "display" },
  translate_emoticons: { kind: bool, default: false, legacy: "display" },
  twenty_four_hour_time: { kind: bool, default: false, legacy: "display" },
  // Notification settings (notification_settings_legacy).
  desktop_icon_count_display: { kind: intIn(1, 2, 3, 4), default: 1, legacy: "notifications" },
  email_notifications_batching_period_seconds: { kind: { type: "int", min: 1, max: 604800 }, default: 120, legacy: "notifications" },
  enable_desktop_notifications: { kind: bool, default: true, legacy: "notifications" },
  enable_digest_emails: { kind: bool, default: true, legacy: "notifications" },
  enable_login_emails: { kind: bool, default: true, legacy: "notifications" },
  enable_marketing_emails: { kind: bool, default: true, legacy: "notifications" },
  enable_offline_email_notifications: { kind: bool, default: true, legacy: "notifications" },
  enable_offline_push_notifications: { kind: bool, default: true, legacy: "notifications" },
  enable_online_push_notifications: { kind: bool, default: true, legacy: "notifications" },
  enable_sounds: { kind: bool, default: true, legacy: "notifications" },
  enable_stream_audible_notifications: { kind: bool, default: false, legacy: "notifications" },
  enable_stream_desktop_notifications: { kind: bool, default: false, legacy: "notifications" },
  enable_stream_email_notifications: { kind: bool, default: false, legacy: "notifications" },
  enable_stream_push_notifications: { kind: bool, default: false, legacy: "notifications" },
  message_content_in_email_notifications: { kind: bool, default: true, legacy: "notifications" },
  notification_sound: { kind: oneOf(...NOTIFICATION_SOUNDS, "none"), default: "zulip", legacy: "notifications" },
  pm_content_in_desktop_notifications: { kind: bool, default: true, legacy: "notifications" },
  presence_enabled: { kind: bool, default: true, legacy: "notifications" },
  realm_name_in_email_notifications_policy: { kind: intIn(1, 2, 3), default: 1, legacy: "notifications" },
  wildcard_mentions_notify: { kind: bool, default: true, legacy: "notifications" },
  // Settings added since: only user_settings events.
  enable_followed_topic_desktop_notifications: { kind: bool, default: true, legacy: null },
  enable_followed_topic_email_notifications: { kind: bool, default: true, legacy: null },
  enable_followed_topic_push_notifications: { kind: bool, default: true, legacy: null },
  enable_followed_topic_audible_notifications: { kind: bool, default: true, legacy: null },
  enable_followed_topic_wildcard_mentions_notify: { kind: bool, default: true, legacy: null },
  automatically_follow_topics_policy: { kind: intIn(1, 2, 3, 4), default: 3, legacy: null },
  automatically_unmute_topics_in_muted_streams_policy: { kind: intIn(1, 2, 3, 4), default: 2, legacy: null },
  automatically_follow_topics_where_mentioned: { kind: bool, default: true, legacy: null },
  display_emoji_reaction_users: { kind: bool, default: true, legacy: null },
  web_escape_navigates_to_home_view: { kind: bool, default: true, legacy: null },
  receives_typing_notifications: { kind: bool, default: true, legacy: null },
  send_private_typing_notifications: { kind: bool, default: true, legacy: null },
  send_read_receipts: { kind: bool, default: true, legacy: null },
  send_stream_typing_notifications: { kind: bool, default: true, legacy: null },
  allow_private_data_export: { kind: bool, default: false, legacy: null },
  web_mark_read_on_scroll_policy: { kind: intIn(1, 2, 3), default: 1, legacy: null },
  web_channel_default_view: { kind: intIn(1, 2, 3, 4), default: 1, legacy: null },
  user_list_style: { kind: intIn(1, 2, 3), default: 3, legacy: null },
  web_animate_image_previews: { kind: oneOf("always", "on_hover", "never"), default: "on_hover", legacy: null },
  web_stream_unreads_count_display_policy: { kind: intIn(1, 2, 3), default: 2, legacy: null },
  web_font_size_px: { kind: { type: "int", min: 12, max: 24 }, default: 16, legacy: null },
  web_line_height_percent: { kind: { type: "int", min: 122, max: 158 }, default: 140, legacy: null },
  web_navigate_to_sent_message: { kind: bool, default: true, legacy: null },
  web_suggest_update_timezone: { kind: bool, default: true, legacy: null },
  hide_ai_features: { kind: bool, default: false, legacy: null },
  resolved_topic_notice_auto_read_policy: { kind: oneOf("always", "except_followed", "never"), default: "except_followed", legacy: null },
  web_left_sidebar_unreads_count_summary: { kind: bool, default: true, legacy: null },
  web_left_sidebar_show_channel_folders: { kind: bool, default: true, legacy: null },
  web_inbox_show_channel_folders: { kind: bool, default: true, legacy: null },
} as const satisfies Record<string, { kind: Kind; default: boolean | number | string; legacy: "display" | "notifications" | null }>;

export type UserSettingName = keyof typeof SETTINGS;
export type UserSettingValue = boolean | number | string;
export type UserSettings = { [K in UserSettingName]: (typeof SETTINGS)[K]["default"] extends boolean ? boolean : (typeof SETTINGS)[K]["default"] extends number ? number : string };

export const USER_SETTING_NAMES = Object.keys(SETTINGS) as UserSettingName[];

export const USER_SETTING_DEFAULTS: Readonly<UserSettings> = Object.freeze(
  Object.fromEntries(USER_SETTING_NAMES.map((name) => [name, SETTINGS[name].default])) as UserSettings,
);

/** The legacy event (update_display_settings / update_global_notifications) a setting also sends, if any. */
export function legacyEventOf(name: UserSettingName): "display" | "notifications" | null {
  return SETTINGS[name].legacy;
}

/** Checks a decoded value for a setting with Zulip's messages, returning it. */
export function checkUserSetting(name: UserSettingName, value: unknown): UserSettingValue {
  const kind: Kind = SETTINGS[name].kind;
  switch (kind.type) {
    case "bool":
      if (typeof value !== "boolean") throw badRequest(`${name} is not a boolean`);
      return value;
    case "int":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) throw badRequest(`${name} is not an integer`);
      if (name === "email_notifications_batching_period_seconds" && (value < kind.min! || value > kind.max!)) {
        throw badRequest(`Invalid email batching period: ${value} seconds`);
      }
      if ((kind.allowed && !kind.allowed.includes(value)) || (kind.min !== undefined && value < kind.min) || (kind.max !== undefined && value > kind.max)) {
        throw badRequest(`Invalid ${name}: Value error, Not in the list of possible values`);
      }
      return value;
    case "string":
      if (typeof value !== "string") throw badRequest(`${name} is not a string`);
      if (!kind.allowed.includes(value)) {
        if (name === "default_language") throw badRequest("Invalid default_language");
        if (name === "notification_sound") throw badRequest(`Invalid notification sound '${value}'`);
        if (name === "resolved_topic_notice_auto_read_policy") throw badRequest(`Invalid ${name}`);
        throw badRequest(`Invalid ${name}: Value error, Not in the list of possible values`);
      }
      return value;
  }
}

/** Whether a setting travels JSON-encoded (booleans, integers) or as a raw string. */
export function isStringSetting(name: UserSettingName): boolean {
  return SETTINGS[name].kind.type === "string";
}

/** Effective settings from the stored JSON (missing keys take the defaults). */
export function parseUserSettings(stored: string): UserSettings {
  return { ...USER_SETTING_DEFAULTS, ...(JSON.parse(stored) as Partial<UserSettings>) };
}
