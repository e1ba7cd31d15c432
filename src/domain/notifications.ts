// Who is notified of a new message, and why: Zulip's
// zerver/lib/notification_data.py (UserMessageNotificationsData), pure and
// shared by mobile push (domain/push.ts) and missed-message emails
// (domain/email-notifications.ts). The caller gathers the facts; the trigger
// order is Zulip's, most salient first.
import { isMutedConversation } from "./message-flags.ts";
import { VisibilityPolicy } from "./messages.ts";

/** Zulip's NotificationTriggers (the ones Parley sends). */
export type NotificationTrigger =
  | "direct_message"
  | "mentioned"
  | "topic_wildcard_mentioned_in_followed_topic"
  | "stream_wildcard_mentioned_in_followed_topic"
  | "topic_wildcard_mentioned"
  | "stream_wildcard_mentioned"
  | "followed_topic"
  | "stream_notify";

export const NOTIFICATION_TRIGGERS: readonly NotificationTrigger[] = [
  "direct_message",
  "mentioned",
  "topic_wildcard_mentioned_in_followed_topic",
  "stream_wildcard_mentioned_in_followed_topic",
  "topic_wildcard_mentioned",
  "stream_wildcard_mentioned",
  "followed_topic",
  "stream_notify",
];

/** What decides whether one recipient of a new message is notified through one medium (push or email). */
export interface NotificationFacts {
  /** API flag names the recipient has on the message. */
  flags: readonly string[];
  isDirectMessage: boolean;
  /** The medium's switch for direct messages and mentions (enable_offline_{push,email}_notifications). */
  dmMentionEnabled: boolean;
  /** The medium's followed-topic switch (enable_followed_topic_{push,email}_notifications). */
  followedTopicEnabled: boolean;
  /** The subscription's {push,email}_notifications, else the global enable_stream_{push,email}_notifications. */
  channelEnabled: boolean;
  /** Muted channel (not unmuted topic) or muted topic. */
  channelMuted: boolean;
  topicPolicy: number | null;
  /** wildcard_mentions_notify after the subscription's override. */
  wildcardMentionsNotify: boolean;
  /** enable_followed_topic_wildcard_mentions_notify. */
  followedTopicWildcardMentionsNotify: boolean;
  /** Alert words count as a personal mention (the trigger is "mentioned"). */
  alertWordsAsMentions: boolean;
}

/**
 * Zulip's get_{push,email}_notification_trigger, without the idle check
 * (the caller's: email needs the recipient idle, push needs idle or
 * enable_online_push_notifications) and without the sender-muted check
 * (a message from a muted sender arrives read, and read messages are never
 * candidates).
 */
export function notificationTrigger(f: NotificationFacts): NotificationTrigger | null {
  if (f.flags.includes("read")) return null;
  const muted = isMutedConversation(f.channelMuted, f.topicPolicy);
  const followed = !f.isDirectMessage && f.topicPolicy === VisibilityPolicy.FOLLOWED;
  // Wildcard mentions obey the personal-mention settings, and only where the recipient hears wildcards (Zulip's user_allows_notifications_in_StreamTopic).
  const wildcardHeard = !muted && f.wildcardMentionsNotify;
  const topicWildcard = f.flags.includes("topic_wildcard_mentioned");
  const streamWildcard = f.flags.includes("stream_wildcard_mentioned");
  const mentioned = f.flags.includes("mentioned") || f.flags.includes("group_mentioned") || (f.alertWordsAsMentions && f.flags.includes("has_alert_word"));
  if (f.isDirectMessage && f.dmMentionEnabled) return "direct_message";
  if (mentioned && f.dmMentionEnabled) return "mentioned";
  if (followed && f.followedTopicWildcardMentionsNotify && f.dmMentionEnabled && topicWildcard) return "topic_wildcard_mentioned_in_followed_topic";
  if (followed && f.followedTopicWildcardMentionsNotify && f.dmMentionEnabled && streamWildcard) return "stream_wildcard_mentioned_in_followed_topic";
  if (wildcardHeard && f.dmMentionEnabled && topicWildcard) return "topic_wildcard_mentioned";
  if (wildcardHeard && f.dmMentionEnabled && streamWildcard) return "stream_wildcard_mentioned";
  if (followed && f.followedTopicEnabled) return "followed_topic";
  if (!f.isDirectMessage && !muted && f.channelEnabled) return "stream_notify";
  return null;
}

/** Zulip's idle test (receiver_is_off_zulip, or no active presence): how long ago counts as recent. */
export const IDLE_AFTER_SECONDS = 140;

/**
 * Zulip's process_message_event: a recipient is idle when no client of theirs
 * is receiving events (no event queue polled within the window) or when their
 * presence was not active within it.
 */
export function isIdle(polledRecently: boolean, lastActiveTime: number | null, now: number): boolean {
  return !polledRecently || lastActiveTime === null || lastActiveTime < now - IDLE_AFTER_SECONDS;
}

const CANDIDATE_FLAGS = new Set(["mentioned", "group_mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned", "has_alert_word"]);

/**
 * Who of a new message's recipients may be notified, with their flags: not
 * the sender, not those who have it read already, and in a channel those the
 * message mentions (an alert word counts), follow the topic, or asked for
 * the channel's messages (`channelListeners`). Their settings are looked at
 * later, by the worker.
 */
export function notificationCandidates(
  senderId: number,
  isDirectMessage: boolean,
  flagsByUser: Iterable<[number, readonly string[]]>,
  channelListeners: ReadonlySet<number> = new Set(),
): Record<string, string[]> {
  const candidates: Record<string, string[]> = {};
  for (const [userId, names] of flagsByUser) {
    if (userId === senderId || names.includes("read")) continue;
    if (isDirectMessage || channelListeners.has(userId) || names.some((f) => CANDIDATE_FLAGS.has(f))) candidates[userId] = [...names];
  }
  return candidates;
}
