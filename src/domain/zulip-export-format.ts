// Where Parley's settings differ from the fields of Zulip's models, which
// Zulip's import builds from the exported rows (`Realm(**row)`,
// `UserProfile(**row)`, `Stream(**row)`, `RealmUserDefault(**row)`): a key
// the model lacks, or a read-only property, stops the import, and a policy
// Parley keeps by name Zulip keeps as a number. Checked against
// zerver/models/realms.py, users.py and streams.py of Zulip 11.

/** Zulip's RealmTopicsPolicyEnum. */
const REALM_TOPICS_POLICY: Record<string, number> = { allow_empty_topic: 2, disable_empty_topic: 3 };
/** Zulip's StreamTopicsPolicyEnum. */
const CHANNEL_TOPICS_POLICY: Record<string, number> = { inherit: 1, allow_empty_topic: 2, disable_empty_topic: 3, empty_topic_only: 4 };
/** Zulip's MessageEditHistoryVisibilityPolicyEnum. */
const EDIT_HISTORY_POLICY: Record<string, number> = { all: 1, moves: 2, none: 3 };

/** Organization settings of Parley's that are not fields of Zulip's Realm: derived (`mandatory_topics`, `allow_edit_history`) or the server's own (`presence_disabled`, a read-only property there; `empty_topic_display_name`). */
const REALM_KEYS_NOT_IN_ZULIP = new Set(["allow_edit_history", "mandatory_topics", "presence_disabled", "empty_topic_display_name"]);

/** Fields Zulip's models have only from Zulip 12 on (feature levels 431 and 477), which a Zulip 11 import would refuse. */
const REALM_KEYS_SINCE_ZULIP_12 = new Set(["workplace_users_group"]);
const USER_KEYS_SINCE_ZULIP_12 = new Set(["web_inbox_show_channel_folders"]);

/** The major version of a Zulip version string ("11.0-parley-0.1.0" → 11), as Zulip's import compares it. */
export function zulipMajorVersion(version: string): number {
  return Number.parseInt(version.split(".")[0] ?? "", 10);
}

function code(codes: Record<string, number>, value: unknown): unknown {
  return typeof value === "string" && value in codes ? codes[value] : value;
}

function name(codes: Record<string, number>, value: unknown): unknown {
  if (typeof value !== "number") return value;
  return Object.entries(codes).find(([, n]) => n === value)?.[0] ?? value;
}

/** A `zerver_realm` row as Zulip's Realm model takes it, for a Zulip server of `major`. */
export function realmRowForZulip(row: Record<string, unknown>, major: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (REALM_KEYS_NOT_IN_ZULIP.has(key) || (major < 12 && REALM_KEYS_SINCE_ZULIP_12.has(key))) continue;
    out[key] = key === "topics_policy" ? code(REALM_TOPICS_POLICY, value) : key === "message_edit_history_visibility_policy" ? code(EDIT_HISTORY_POLICY, value) : value;
  }
  return out;
}

/** Personal settings (on `zerver_userprofile` and `zerver_realmuserdefault`) as Zulip's models take them. */
export function userSettingsForZulip<T extends Record<string, unknown>>(settings: T, major: number): Partial<T> {
  if (major >= 12) return settings;
  return Object.fromEntries(Object.entries(settings).filter(([key]) => !USER_KEYS_SINCE_ZULIP_12.has(key))) as Partial<T>;
}

export const channelTopicsPolicyForZulip = (value: unknown): unknown => code(CHANNEL_TOPICS_POLICY, value);

/** The other way: an imported `zerver_realm` row's policies by Parley's names (Zulip writes numbers; Parley's older exports wrote names). */
export function realmRowFromZulip(row: Record<string, unknown>): Record<string, unknown> {
  return {
    ...row,
    ...("topics_policy" in row ? { topics_policy: name(REALM_TOPICS_POLICY, row.topics_policy) } : {}),
    ...("message_edit_history_visibility_policy" in row ? { message_edit_history_visibility_policy: name(EDIT_HISTORY_POLICY, row.message_edit_history_visibility_policy) } : {}),
  };
}

export const channelTopicsPolicyFromZulip = (value: unknown): unknown => name(CHANNEL_TOPICS_POLICY, value);
