// The shapes of the server's objects this client reads (Zulip's API names).

export interface Reaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: "unicode_emoji" | "realm_emoji" | "zulip_extra_emoji";
  user_id: number;
}

export interface DisplayRecipient {
  id: number;
  email: string;
  full_name: string;
}

export interface Message {
  id: number;
  sender_id: number;
  sender_full_name: string;
  sender_email: string;
  avatar_url: string | null;
  type: "stream" | "private";
  stream_id?: number;
  subject: string;
  display_recipient: string | DisplayRecipient[];
  content: string;
  timestamp: number;
  flags: string[];
  reactions: Reaction[];
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
  /** Widget data (polls, todo lists): the first is the widget, the rest its votes, tasks… */
  submessages?: Submessage[];
  /** In a search's reply: the content and topic with the matched words highlighted (kept by the list, not the message). */
  match_content?: string;
  match_subject?: string;
}

export interface Submessage {
  id: number;
  message_id: number;
  sender_id: number;
  msg_type: string;
  content: string;
}

export interface User {
  user_id: number;
  email: string;
  full_name: string;
  avatar_url: string | null;
  is_active: boolean;
  is_bot: boolean;
  role: number;
  timezone?: string;
  /** A bot's owner. */
  bot_owner_id?: number | null;
  /** The real address, when the viewer may see it (null otherwise). */
  delivery_email?: string | null;
  /** Custom profile field values by field id. */
  profile_data?: Record<string, { value: string; rendered_value?: string }>;
}

export interface Subscription {
  stream_id: number;
  name: string;
  description: string;
  color: string;
  invite_only: boolean;
  is_muted: boolean;
  pin_to_top: boolean;
  is_archived?: boolean;
  folder_id?: number | null;
}

export interface UnreadMsgs {
  pms: { other_user_id: number; unread_message_ids: number[] }[];
  streams: { stream_id: number; topic: string; unread_message_ids: number[] }[];
  huddles: { user_ids_string: string; unread_message_ids: number[] }[];
  mentions: number[];
}

export interface RegisterResponse {
  queue_id: string;
  last_event_id: number;
  zulip_feature_level: number;
  user_id: number;
  email: string;
  full_name: string;
  realm_name: string;
  realm_users: User[];
  realm_non_active_users?: User[];
  cross_realm_bots?: User[];
  subscriptions: Subscription[];
  unread_msgs: UnreadMsgs;
  presences?: Record<string, PresenceInfo>;
  server_timestamp?: number;
  max_message_length?: number;
  server_typing_started_expiry_period_milliseconds?: number;
  server_typing_started_wait_period_milliseconds?: number;
  max_topic_length?: number;
  realm_empty_topic_display_name?: string;
  recent_private_conversations?: { user_ids: number[]; max_message_id: number }[];
  user_topics?: { stream_id: number; topic_name: string; visibility_policy: number }[];
  muted_users?: { id: number; timestamp: number }[];
  realm_playgrounds?: { id: number; name: string; pygments_language: string; url_template: string }[];
  server_emoji_data_url?: string;
  realm_emoji?: Record<string, { id: string; name: string; source_url: string; deactivated: boolean }>;
  scheduled_messages?: import("../model/scheduled.ts").ScheduledMessage[];
  reminders?: import("../model/scheduled.ts").Reminder[];
  saved_snippets?: import("../model/snippets.ts").SavedSnippet[];
  drafts?: import("../model/drafts.ts").ServerDraft[];
  user_settings?: { enable_desktop_notifications?: boolean; color_scheme?: number; [key: string]: unknown };
  user_status?: Record<string, { status_text?: string; emoji_name?: string; emoji_code?: string; reaction_type?: string; away?: boolean }>;
  realm_description?: string;
  channel_folders?: { id: number; name: string; order: number; is_archived: boolean }[];
  realm_invite_required?: boolean;
  custom_profile_fields?: import("../model/profile-fields.ts").ProfileField[];
}

/** Slim presence: per user id, the last active and last connected times (seconds). */
export interface PresenceInfo {
  active_timestamp?: number;
  idle_timestamp?: number;
  aggregated?: { status: string; timestamp: number };
}

// Events are read field by field where they are applied.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ServerEvent = { type: string; id: number; op?: string; [key: string]: any };
