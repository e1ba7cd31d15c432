// Personal message flags: one bit set per (user, message), as Zulip's
// UserMessage.flags. The API shows a few of the bits under Zulip's public names.
import { badRequest } from "../errors.ts";
import { VisibilityPolicy } from "./messages.ts";

export const Flag = {
  READ: 1,
  STARRED: 2,
  COLLAPSED: 4,
  /** Mentioned by name, or through a group the user belongs to. */
  MENTIONED: 8,
  STREAM_WILDCARD_MENTIONED: 16,
  TOPIC_WILDCARD_MENTIONED: 32,
  GROUP_MENTIONED: 64,
  HAS_ALERT_WORD: 512,
  /** The user was not a recipient when it was sent; the row exists because they acted on it. */
  HISTORICAL: 1024,
  /** A direct message: lets "is:dm" use the flags index alone. */
  IS_PRIVATE: 2048,
} as const;

/** Every mention bit (the partial index user_messages_mentioned covers exactly these). */
export const ANY_MENTION = Flag.MENTIONED | Flag.STREAM_WILDCARD_MENTIONED | Flag.TOPIC_WILDCARD_MENTIONED | Flag.GROUP_MENTIONED;

const API_FLAGS: readonly [number, string][] = [
  [Flag.READ, "read"],
  [Flag.STARRED, "starred"],
  [Flag.COLLAPSED, "collapsed"],
  [Flag.MENTIONED, "mentioned"],
  [Flag.STREAM_WILDCARD_MENTIONED, "stream_wildcard_mentioned"],
  [Flag.TOPIC_WILDCARD_MENTIONED, "topic_wildcard_mentioned"],
  [Flag.GROUP_MENTIONED, "group_mentioned"],
  [Flag.HAS_ALERT_WORD, "has_alert_word"],
  [Flag.HISTORICAL, "historical"],
];

/**
 * Flags as the API lists them, in Zulip's bit order (flags_list_for_flags):
 * is_private is internal, and either wildcard bit adds the deprecated
 * "wildcard_mentioned" at the end.
 */
export function flagNames(bits: number): string[] {
  const names = API_FLAGS.filter(([bit]) => bits & bit).map(([, name]) => name);
  if (bits & (Flag.STREAM_WILDCARD_MENTIONED | Flag.TOPIC_WILDCARD_MENTIONED)) names.push("wildcard_mentioned");
  return names;
}

/** Flags a user may set and clear through the API (issue: flags endpoints). */
export const EDITABLE_FLAGS: Readonly<Record<string, number>> = { read: Flag.READ, starred: Flag.STARRED, collapsed: Flag.COLLAPSED };

/**
 * Every flag name the flags endpoints know (Zulip's UserMessage.flags minus
 * NON_API_FLAGS). force_expand and force_collapse are Zulip's retired bits:
 * known, never set, not editable.
 */
const KNOWN_FLAG_NAMES: ReadonlySet<string> = new Set([
  "read",
  "starred",
  "collapsed",
  "mentioned",
  "stream_wildcard_mentioned",
  "topic_wildcard_mentioned",
  "group_mentioned",
  "force_expand",
  "force_collapse",
  "has_alert_word",
  "historical",
]);

/**
 * The bit of a flag a user may change, or Zulip's error for one they may
 * not: "Invalid flag: 'x'" for names the API does not know (is_private and
 * the old wildcard_mentioned included), "Flag not editable: 'x'" for the
 * bookkeeping ones.
 */
export function editableFlagBit(name: string): number {
  if (Object.hasOwn(EDITABLE_FLAGS, name)) return EDITABLE_FLAGS[name]!;
  if (!KNOWN_FLAG_NAMES.has(name)) throw badRequest(`Invalid flag: '${name}'`);
  throw badRequest(`Flag not editable: '${name}'`);
}

/**
 * The flags a message the user reads through channel history (no flags row)
 * counts as having (Zulip's DEFAULT_HISTORICAL_FLAGS); a row created for it
 * starts from these.
 */
export const DEFAULT_HISTORICAL_FLAGS = Flag.READ | Flag.HISTORICAL;

/**
 * Whether a channel conversation is muted for a user: the topic is muted, or
 * the channel is and the topic is not unmuted or followed.
 */
export function isMutedConversation(channelMuted: boolean, topicPolicy: number | null): boolean {
  return topicPolicy === VisibilityPolicy.MUTED || (channelMuted && topicPolicy !== VisibilityPolicy.UNMUTED && topicPolicy !== VisibilityPolicy.FOLLOWED);
}

/** Whether an unread message counts as mentioning the user: wildcards only outside muted conversations (register's unread_msgs). */
export function countsAsMention(flags: number, muted: boolean): boolean {
  return (flags & (Flag.MENTIONED | Flag.GROUP_MENTIONED)) !== 0 || (!muted && (flags & (Flag.STREAM_WILDCARD_MENTIONED | Flag.TOPIC_WILDCARD_MENTIONED)) !== 0);
}
