// Row types of the database, shared by both dialects. Times are UNIX seconds;
// JSON-valued columns are stored as text.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";

export interface RealmTable {
  id: Generated<number>;
  /** Subdomain; '' for the organization at the server's root. */
  string_id: string;
  name: string;
  /** Markdown source of the organization description. */
  description: string;
  /** Its HTML (queries/markdown-context.ts renderDescription), kept with it as for channels. */
  rendered_description: ColumnType<string, string | undefined, string>;
  date_created: number;
  deactivated: ColumnType<boolean, boolean | undefined, boolean>;
  /** JSON object of organization settings; keys not present take the defaults in domain/realm-settings. */
  settings: string;
  /** 'G': the generated default icon, 'U': uploaded. */
  icon_source: ColumnType<string, string | undefined, string>;
  /** Incremented by every icon change: the ?version= of the icon's URL. */
  icon_version: ColumnType<number, number | undefined, number>;
  /** Incremented by every linkifier change: what keeps per-process compiled linkifiers current (queries/linkifiers.ts). */
  linkifiers_version: ColumnType<number, number | undefined, number>;
}

export interface UserTable {
  id: Generated<number>;
  realm_id: number;
  /** API email: the real address, or the fake user{id}@domain one when it is hidden. */
  email: string;
  delivery_email: string;
  /** email and delivery_email lowercased (in JavaScript): what lookups and uniqueness use. */
  email_key: string;
  delivery_email_key: string;
  full_name: string;
  password_hash: string | null;
  api_key: string;
  role: number;
  is_active: ColumnType<boolean, boolean | undefined, boolean>;
  is_bot: ColumnType<boolean, boolean | undefined, boolean>;
  bot_type: number | null;
  bot_owner_id: number | null;
  /** Notification Bot, Welcome Bot: owned by the server, not listed with the organization's users. */
  is_system_bot: ColumnType<boolean, boolean | undefined, boolean>;
  timezone: string;
  /** 'G': the generated default avatar, 'U': uploaded. */
  avatar_source: string;
  avatar_version: number;
  /** The uploaded avatar's random file name (avatars/{realm_id}/{avatar_hash}.png); null for the default. */
  avatar_hash: ColumnType<string | null, string | null | undefined, string | null>;
  email_address_visibility: number;
  date_joined: number;
  /** JSON object of personal settings that differ from the defaults in domain/user-settings. */
  settings: ColumnType<string, string | undefined, string>;
  /** A bot's default channel for messages sent without one (Zulip's default_sending_stream); NULL otherwise. */
  default_sending_stream_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** A bot's default channel for event queues registered without a narrow; NULL otherwise. */
  default_events_register_stream_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** A bot's queues see every public channel's messages by default. */
  default_all_public_streams: ColumnType<boolean, boolean | undefined, boolean>;
}

/** A group-setting value as stored: JSON text of a group ID or of {direct_members, direct_subgroups}. */
export type StoredGroupSetting = string;

export interface UserGroupTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  description: string;
  is_system_group: ColumnType<boolean, boolean | undefined, boolean>;
  creator_id: number | null;
  date_created: number | null;
  deactivated: ColumnType<boolean, boolean | undefined, boolean>;
  can_add_members_group: StoredGroupSetting | null;
  can_join_group: StoredGroupSetting | null;
  can_leave_group: StoredGroupSetting | null;
  can_manage_group: StoredGroupSetting | null;
  can_mention_group: StoredGroupSetting | null;
  can_remove_members_group: StoredGroupSetting | null;
}

export interface ChannelFolderTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  description: string;
  rendered_description: string;
  sort_order: number;
  date_created: number;
  creator_id: number | null;
  is_archived: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface ChannelTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  /** name lowercased: channel names are unique and matched case-insensitively. */
  name_key: string;
  description: string;
  rendered_description: string;
  date_created: number;
  creator_id: number | null;
  invite_only: ColumnType<boolean, boolean | undefined, boolean>;
  is_web_public: ColumnType<boolean, boolean | undefined, boolean>;
  history_public_to_subscribers: ColumnType<boolean, boolean | undefined, boolean>;
  /** NULL: the organization's setting; -1: forever. */
  message_retention_days: number | null;
  topics_policy: string;
  folder_id: number | null;
  is_archived: ColumnType<boolean, boolean | undefined, boolean>;
  is_recently_active: ColumnType<boolean, boolean | undefined, boolean>;
  first_message_id: number | null;
  can_add_subscribers_group: StoredGroupSetting;
  can_remove_subscribers_group: StoredGroupSetting;
  can_administer_channel_group: StoredGroupSetting;
  can_delete_any_message_group: StoredGroupSetting;
  can_delete_own_message_group: StoredGroupSetting;
  can_move_messages_out_of_channel_group: StoredGroupSetting;
  can_move_messages_within_channel_group: StoredGroupSetting;
  can_resolve_topics_group: StoredGroupSetting;
  can_send_message_group: StoredGroupSetting;
  can_subscribe_group: StoredGroupSetting;
}

export interface SubscriptionTable {
  user_id: number;
  channel_id: number;
  active: ColumnType<boolean, boolean | undefined, boolean>;
  color: string;
  is_muted: ColumnType<boolean, boolean | undefined, boolean>;
  pin_to_top: ColumnType<boolean, boolean | undefined, boolean>;
  desktop_notifications: boolean | null;
  audible_notifications: boolean | null;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
}

export interface DefaultChannelTable {
  realm_id: number;
  channel_id: number;
}

export interface UserGroupMemberTable {
  group_id: number;
  user_id: number;
}

export interface UserGroupSubgroupTable {
  supergroup_id: number;
  subgroup_id: number;
}

export interface RecipientTable {
  id: Generated<number>;
  realm_id: number;
  /** RecipientType: 2 channel, 3 direct-message conversation. */
  type: number;
  channel_id: number | null;
  /** Direct messages: the participants' IDs ascending, comma-separated. */
  dm_key: string | null;
  /** Direct messages: dmHash(dm_key), the conversation's unique lookup key. */
  dm_hash: string | null;
}

export interface MessageTable {
  id: Generated<number>;
  realm_id: number;
  sender_id: number;
  recipient_id: number;
  channel_id: number | null;
  topic: string;
  /** topic lowercased (in JavaScript): topics match case-insensitively. */
  topic_key: string;
  content: string;
  rendered_content: string;
  date_sent: number;
  sending_client: string;
  last_edit_time: number | null;
  last_moved_time: number | null;
  /** JSON array of edit snapshots, newest first. */
  edit_history: string | null;
  has_attachment: ColumnType<boolean, boolean | undefined, boolean>;
  has_image: ColumnType<boolean, boolean | undefined, boolean>;
  has_link: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface UserMessageTable {
  user_id: number;
  message_id: number;
  /** Bit set of domain/message-flags.ts. */
  flags: number;
}

export interface ReactionTable {
  id: Generated<number>;
  message_id: number;
  user_id: number;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

export interface SubmessageTable {
  id: Generated<number>;
  message_id: number;
  sender_id: number;
  msg_type: string;
  /** JSON text. */
  content: string;
}

export interface AttachmentTable {
  id: Generated<number>;
  realm_id: number;
  owner_id: number;
  path_id: string;
  file_name: string;
  content_type: string;
  size: number;
  /** Milliseconds. */
  create_time: number;
}

export interface AttachmentMessageTable {
  attachment_id: number;
  message_id: number;
}

export interface UserTopicTable {
  user_id: number;
  channel_id: number;
  topic: string;
  topic_key: string;
  visibility_policy: number;
  last_updated: number;
}

export interface AlertWordTable {
  user_id: number;
  word: string;
  word_key: string;
}

/** Zulip's RealmPlayground: where to open code blocks of a language. */
/** Zulip's RealmFilter: a linkifier. */
export interface RealmLinkifierTable {
  id: Generated<number>;
  realm_id: number;
  /** An RE2 regular expression whose named groups are the template's variables. */
  pattern: string;
  /** RFC 6570 URL template. */
  url_template: string;
  /** Linkifiers apply by ascending order, then ID. */
  order: ColumnType<number, number | undefined, number>;
}

export interface RealmPlaygroundTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  pygments_language: string;
  /** RFC 6570 template whose only variable is `code`. */
  url_template: string;
}

export interface RealmEmojiTable {
  id: Generated<number>;
  realm_id: number;
  /** NULL: uploader unknown. */
  author_id: number | null;
  name: string;
  /** The image's file name under avatars/{realm_id}/emoji/images/ in the uploads directory. */
  file_name: string;
  deactivated: ColumnType<boolean, boolean | undefined, boolean>;
  date_created: number;
}

export interface ScheduledMessageTable {
  id: Generated<number>;
  realm_id: number;
  sender_id: number;
  /** ScheduledDelivery: 1 send later, 2 reminder. */
  delivery_type: number;
  recipient_id: number;
  /** NULL for direct messages. */
  channel_id: number | null;
  /** "" for direct messages. */
  topic: string;
  content: string;
  rendered_content: string;
  sending_client: string;
  read_by_sender: boolean;
  scheduled_timestamp: number;
  request_timestamp: number;
  delivered: ColumnType<boolean, boolean | undefined, boolean>;
  delivered_message_id: ColumnType<number | null, number | null | undefined, number | null>;
  failed: ColumnType<boolean, boolean | undefined, boolean>;
  failure_message: ColumnType<string | null, string | null | undefined, string | null>;
  reminder_target_message_id: ColumnType<number | null, number | null | undefined, number | null>;
  reminder_note: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SavedSnippetTable {
  id: Generated<number>;
  realm_id: number;
  user_id: number;
  title: string;
  content: string;
  date_created: number;
}

/** A user's status (Zulip's UserStatus); '' means no text or no emoji. */
export interface UserStatusTable {
  user_id: number;
  realm_id: number;
  status_text: string;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  timestamp: number;
  /** Name of the client that set it. */
  client: string;
}

/** user_id muted muted_user_id (Zulip's MutedUser). */
export interface MutedUserTable {
  user_id: number;
  muted_user_id: number;
  date_muted: number;
}

/** A synchronized compose draft (Zulip's Draft). */
export interface DraftTable {
  id: Generated<number>;
  user_id: number;
  /** The conversation; NULL for a draft with no recipient. */
  recipient_id: number | null;
  topic: string;
  content: string;
  /** UNIX time in milliseconds. */
  last_edit_time_ms: number;
}

export interface NavigationViewTable {
  id: Generated<number>;
  user_id: number;
  fragment: string;
  is_pinned: boolean;
  /** NULL for built-in views. */
  name: string | null;
}

/** An email invitation or a reusable invitation link (Zulip's PreregistrationUser / MultiuseInvite). */
export interface InvitationTable {
  id: Generated<number>;
  realm_id: number;
  /** 'email' or 'multiuse'. */
  kind: string;
  email: string | null;
  email_key: string | null;
  /** The random key in the invitation link. */
  confirmation_key: string;
  referrer_id: number;
  invited_as: number;
  /** JSON list of channel IDs. */
  channel_ids: string;
  /** JSON list of user group IDs. */
  group_ids: string;
  include_realm_default_subscriptions: boolean;
  notify_referrer_on_join: boolean;
  /** NULL: the organization's default text; '': none. */
  welcome_message_custom_text: string | null;
  created_at: number;
  /** NULL: never expires. */
  expires_at: number | null;
  /** 'pending', 'used' or 'revoked'. */
  status: string;
  created_user_id: number | null;
}

/** One invitation email sent, for the daily invitation limit. */
export interface InvitationSendTable {
  id: Generated<number>;
  realm_id: number;
  invitation_id: number;
  sent_at: number;
}

/** A legacy mobile push token (Zulip's PushDeviceToken): kind 1 APNs, 2 FCM. */
export interface PushDeviceTokenTable {
  id: Generated<number>;
  user_id: number;
  kind: number;
  token: string;
  ios_app_id: string | null;
  last_updated: number;
}

/** Failed password logins for one username in its current window (Zulip's authenticate_by_username). */
/** One row per user who ever reported presence, updated in place (Zulip's UserPresence). */
export interface UserPresenceTable {
  user_id: number;
  realm_id: number;
  /** When a client last said the user was connected; NULL: never. */
  last_connected_time: number | null;
  /** When a client last said the user was actively using it; NULL: never. */
  last_active_time: number | null;
  /** The organization's presence sequence number of the row's last change. */
  last_update_id: number;
}

/** The last presence sequence number an organization handed out (Zulip's PresenceSequence). */
export interface PresenceSequenceTable {
  realm_id: number;
  last_update_id: number;
}

/** A signed-in browser (issue 20): the cookie's token is stored as its SHA-256. */
export interface SessionTable {
  token_hash: string;
  user_id: number;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

/** A one-time password reset link's token, as its SHA-256. */
export interface PasswordResetTokenTable {
  token_hash: string;
  user_id: number;
  created_at: number;
  expires_at: number;
}

/** An outgoing-webhook or embedded bot's service (Zulip's Service). */
export interface BotServiceTable {
  id: Generated<number>;
  /** The bot. */
  user_id: number;
  /** service_name: for embedded bots, which bot of zulip_bots it runs. */
  name: string;
  /** payload_url: where outgoing-webhook requests go ('' for embedded bots). */
  base_url: string;
  /** Random secret sent as `token` with every outgoing-webhook request. */
  token: string;
  /** 1 generic (Zulip's format), 2 Slack-compatible. */
  interface: ColumnType<number, number | undefined, number>;
}

/** One key of a bot's storage (Zulip's BotStorageData). */
export interface BotStorageTable {
  bot_user_id: number;
  key: string;
  value: string;
}

/** One key of an embedded bot's configuration (Zulip's BotConfigData). */
export interface BotConfigTable {
  bot_user_id: number;
  key: string;
  value: string;
}

/** What a linked page said of itself, for link previews (migration 0024). */
export interface LinkPreviewTable {
  url_hash: string;
  url: string;
  /** JSON {title, description, image}, or null: the page gave no preview. */
  data: string | null;
  fetched_at: number;
}

/** A file kept in the database by UPLOAD_STORAGE=database (migration 0025). */
export interface StoredFileTable {
  id: Generated<number>;
  /** The file's storage key (files/store.ts). */
  path: string;
  size: number;
  /** SHA-256 of the contents, hex. */
  sha256: string;
  /** Bytes in every chunk but the last. */
  chunk_size: number;
  created_at: number;
}

/** An organization data export (migration 0029 says what each column means). */
export interface RealmExportTable {
  id: Generated<number>;
  realm_id: number;
  acting_user_id: number | null;
  type: number;
  status: number;
  date_requested: number;
  date_started: ColumnType<number | null, number | null | undefined, number | null>;
  date_succeeded: ColumnType<number | null, number | null | undefined, number | null>;
  date_failed: ColumnType<number | null, number | null | undefined, number | null>;
  date_deleted: ColumnType<number | null, number | null | undefined, number | null>;
  export_path: ColumnType<string | null, string | null | undefined, string | null>;
  tarball_size_bytes: ColumnType<number | null, number | null | undefined, number | null>;
}

export type RealmExport = Selectable<RealmExportTable>;

/** One piece of a stored file's contents (migration 0025). */
export interface StoredFileChunkTable {
  file_id: number;
  /** 0, 1, 2…: chunk `seq` holds bytes seq × chunk_size onwards. */
  seq: number;
  data: Buffer;
}

/** A delivery waiting in the outgoing-webhook queue (migration 0022). */
/** A background job (src/jobs/): migration 0025 says what each column means. */
export interface JobTable {
  id: Generated<number>;
  name: string;
  payload: string;
  job_key: string | null;
  status: ColumnType<"queued" | "running" | "failed", "queued" | "running" | "failed" | undefined, "queued" | "running" | "failed">;
  run_at: number;
  attempts: ColumnType<number, number | undefined, number>;
  max_attempts: number;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: number;
}

/** A missed-message email owed for a (user, message) (migration 0028 says what each column means). */
export interface MissedMessageEmailTable {
  id: Generated<number>;
  user_id: number;
  message_id: number;
  trigger: string;
  /** UNIX milliseconds; PostgreSQL's bigint reads back as a string: read it through Number(). */
  scheduled_at: number;
}

/** A UTC day whose digest check ran (migration 0029). */
export interface DigestDayTable {
  /** YYYY-MM-DD. */
  day: string;
  /** UNIX milliseconds. */
  checked_at: number;
}

/** When a user was last sent a digest (migration 0029). */
export interface UserDigestTable {
  user_id: number;
  /** UNIX seconds; PostgreSQL's bigint reads back as a string: read it through Number(). */
  last_sent_at: number;
}

export interface LoginFailureTable {
  key: string;
  window_start: number;
  attempts: number;
}

/** A custom profile field of an organization (Zulip's CustomProfileField). */
export interface CustomProfileFieldTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  hint: ColumnType<string, string | undefined, string>;
  /** 1 short text … 8 pronouns (domain/custom-profile-fields.ts). */
  field_type: number;
  /** JSON text for list-of-options and external account fields; "" for the others. */
  field_data: ColumnType<string, string | undefined, string>;
  /** Zulip's `order`: display position. */
  sort_order: ColumnType<number, number | undefined, number>;
  display_in_profile_summary: ColumnType<boolean, boolean | undefined, boolean>;
  required: ColumnType<boolean, boolean | undefined, boolean>;
  editable_by_user: ColumnType<boolean, boolean | undefined, boolean>;
}

/** One user's value of one custom profile field (Zulip's CustomProfileFieldValue). */
export interface CustomProfileFieldValueTable {
  id: Generated<number>;
  user_id: number;
  field_id: number;
  /** Text as stored by Zulip: a person picker's user IDs as a JSON list. */
  value: string;
  /** HTML of the value for Markdown-capable types (short and long text); NULL otherwise. */
  rendered_value: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An end-to-end-encrypted push registration (Zulip's PushDevice). */
export interface PushDeviceTable {
  id: Generated<number>;
  realm_id: number;
  user_id: number;
  push_account_id: number;
  /** android_push or ios_push. */
  token_kind: string;
  push_public_key: string;
  bouncer_public_key: string;
  encrypted_push_registration: string;
  /** Set once the push service accepted the registration: the device is active. */
  bouncer_device_id: ColumnType<number | null, number | null | undefined, number | null>;
  /** Set when the push service refused it: the device failed. */
  error_code: ColumnType<string | null, string | null | undefined, string | null>;
  date_created: number;
}

export interface Database {
  realms: RealmTable;
  users: UserTable;
  user_groups: UserGroupTable;
  user_group_members: UserGroupMemberTable;
  user_group_subgroups: UserGroupSubgroupTable;
  channel_folders: ChannelFolderTable;
  channels: ChannelTable;
  subscriptions: SubscriptionTable;
  default_channels: DefaultChannelTable;
  recipients: RecipientTable;
  messages: MessageTable;
  user_messages: UserMessageTable;
  reactions: ReactionTable;
  submessages: SubmessageTable;
  attachments: AttachmentTable;
  attachment_messages: AttachmentMessageTable;
  user_topics: UserTopicTable;
  alert_words: AlertWordTable;
  realm_emoji: RealmEmojiTable;
  realm_playgrounds: RealmPlaygroundTable;
  realm_linkifiers: RealmLinkifierTable;
  scheduled_messages: ScheduledMessageTable;
  saved_snippets: SavedSnippetTable;
  navigation_views: NavigationViewTable;
  invitations: InvitationTable;
  invitation_sends: InvitationSendTable;
  push_device_tokens: PushDeviceTokenTable;
  push_devices: PushDeviceTable;
  login_failures: LoginFailureTable;
  sessions: SessionTable;
  password_reset_tokens: PasswordResetTokenTable;
  custom_profile_fields: CustomProfileFieldTable;
  custom_profile_field_values: CustomProfileFieldValueTable;
  user_statuses: UserStatusTable;
  muted_users: MutedUserTable;
  drafts: DraftTable;
  user_presence: UserPresenceTable;
  presence_sequences: PresenceSequenceTable;
  bot_services: BotServiceTable;
  bot_storage: BotStorageTable;
  bot_config: BotConfigTable;
  jobs: JobTable;
  missed_message_emails: MissedMessageEmailTable;
  digest_days: DigestDayTable;
  user_digests: UserDigestTable;
  link_previews: LinkPreviewTable;
  stored_files: StoredFileTable;
  stored_file_chunks: StoredFileChunkTable;
  realm_exports: RealmExportTable;
}

/**
 * Columns that hold booleans. SQLite has no boolean type and returns 0/1, so
 * the storage layer converts these columns back to booleans in result rows.
 * A column name here must mean a boolean in every table that has it.
 */
export const BOOLEAN_COLUMNS: ReadonlySet<string> = new Set([
  "active",
  "audible_notifications",
  "deactivated",
  "default_all_public_streams",
  "delivered",
  "desktop_notifications",
  "display_in_profile_summary",
  "editable_by_user",
  "email_notifications",
  "failed",
  "has_attachment",
  "has_image",
  "has_link",
  "history_public_to_subscribers",
  "include_realm_default_subscriptions",
  "invite_only",
  "is_active",
  "is_archived",
  "is_bot",
  "is_muted",
  "is_pinned",
  "is_recently_active",
  "is_system_bot",
  "is_system_group",
  "is_web_public",
  "notify_referrer_on_join",
  "pin_to_top",
  "push_notifications",
  "read_by_sender",
  "required",
  "wildcard_mentions_notify",
]);

export type Realm = Selectable<RealmTable>;
export type NewRealm = Insertable<RealmTable>;
export type User = Selectable<UserTable>;
export type BotService = Selectable<BotServiceTable>;
export type BotStorageRow = Selectable<BotStorageTable>;
export type BotConfigRow = Selectable<BotConfigTable>;
export type NewUser = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;
export type UserGroup = Selectable<UserGroupTable>;
export type Channel = Selectable<ChannelTable>;
export type NewChannel = Insertable<ChannelTable>;
export type Subscription = Selectable<SubscriptionTable>;
export type ChannelFolder = Selectable<ChannelFolderTable>;
export type Message = Selectable<MessageTable>;
export type Attachment = Selectable<AttachmentTable>;
export type Submessage = Selectable<SubmessageTable>;
export type RealmEmoji = Selectable<RealmEmojiTable>;
export type RealmPlayground = Selectable<RealmPlaygroundTable>;
export type ScheduledMessage = Selectable<ScheduledMessageTable>;
export type Job = Selectable<JobTable>;
export type SavedSnippet = Selectable<SavedSnippetTable>;
export type UserStatusRow = Selectable<UserStatusTable>;
export type Draft = Selectable<DraftTable>;
export type NavigationView = Selectable<NavigationViewTable>;
export type Invitation = Selectable<InvitationTable>;
export type PushDeviceToken = Selectable<PushDeviceTokenTable>;
export type PushDevice = Selectable<PushDeviceTable>;
export type CustomProfileField = Selectable<CustomProfileFieldTable>;
export type CustomProfileFieldValue = Selectable<CustomProfileFieldValueTable>;
export type Session = Selectable<SessionTable>;
