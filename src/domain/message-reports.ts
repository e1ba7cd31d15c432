// Reporting a message to the organization's moderators (Zulip's
// zerver/views/message_report.py and zerver/lib/message_report.py): the
// reasons, the limits, and the Notification Bot's report text and topic.
import { MAX_MESSAGE_LENGTH } from "./limits.ts";
import { messageLinkUrl, topicLinkSyntax } from "./message-links.ts";
import { truncate } from "./messages.ts";
import { unusedFence } from "./scheduled-messages.ts";
import { compareCodePoints } from "./text.ts";

/** Zulip's Realm.REPORT_MESSAGE_REASONS: the report_type values and their names (also register's server_report_message_types). */
export const REPORT_MESSAGE_REASONS = {
  spam: "Spam",
  harassment: "Harassment",
  inappropriate: "Inappropriate content",
  norms: "Violates community norms",
  other: "Other reason",
} as const;

export type ReportType = keyof typeof REPORT_MESSAGE_REASONS;

export const REPORT_TYPES = Object.keys(REPORT_MESSAGE_REASONS) as ReportType[];

/** Zulip's Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH: the most a description may hold. */
export const MAX_REPORT_MESSAGE_EXPLANATION_LENGTH = 1000;

/** The reported message is cut to leave room for the description and the text around it (500 is Zulip's margin). */
export const MAX_REPORT_MESSAGE_SNIPPET_LENGTH = MAX_MESSAGE_LENGTH - MAX_REPORT_MESSAGE_EXPLANATION_LENGTH - 500;

interface Person {
  id: number;
  full_name: string;
}

export interface ReportedMessage {
  id: number;
  content: string;
  /** UNIX seconds. */
  dateSent: number;
  sender: Person;
  conversation: { channel: { id: number; name: string }; topic: string } | { participants: readonly Person[] };
}

/** Zulip's silent_mention_syntax_for_user. */
function silentMention(user: Person): string {
  return `@_**${user.full_name}|${user.id}**`;
}

/** Zulip's datetime_to_global_time: a `<time:…>` the clients show in each reader's time zone. */
export function globalTime(unixSeconds: number): string {
  return `<time:${new Date(unixSeconds * 1000).toISOString().replace(/\.\d+Z$/, "+00:00")}>`;
}

/** Who the report says sent the message, and to whom (Zulip's report header). */
function reportHeader(reporter: Person, message: ReportedMessage): string {
  const reporterMention = silentMention(reporter);
  const senderMention = silentMention(message.sender);
  const at = globalTime(message.dateSent);
  if ("channel" in message.conversation) return `${reporterMention} reported a message sent by ${senderMention} at ${at}.`;
  const participants = message.conversation.participants;
  if (participants.length <= 2) {
    if (message.sender.id !== reporter.id) return `${reporterMention} reported a direct message sent by ${senderMention} at ${at}.`;
    // Someone reporting their own message names who it went to (themselves, for a message to oneself).
    const recipient = participants.find((p) => p.id !== reporter.id) ?? reporter;
    return `${reporterMention} reported a direct message sent by ${senderMention} to ${silentMention(recipient)} at ${at}.`;
  }
  // Group conversations list the other participants sorted by their mention text, the last one after "and".
  const others = participants
    .filter((p) => p.id !== message.sender.id)
    .map(silentMention)
    .sort(compareCodePoints);
  const last = others.pop()!;
  const list = others.join(", ") + (others.length > 1 ? "," : "");
  return `${reporterMention} reported a direct message sent by ${senderMention} to ${list} and ${last} at ${at}.`;
}

/** The Notification Bot's report (Zulip's send_message_report), as sent to the moderation request channel. */
export function reportContent(externalUrl: string, reporter: Person, message: ReportedMessage, reportType: ReportType, description: string): string {
  const original =
    "channel" in message.conversation
      ? `Original message at ${topicLinkSyntax(message.conversation.channel, message.conversation.topic, message.id)}`
      : `[Original message](${messageLinkUrl(externalUrl, message.id, { participantIds: message.conversation.participants.map((p) => p.id) })})`;
  const quoted = truncate(message.content, MAX_REPORT_MESSAGE_SNIPPET_LENGTH, "\n[message truncated]");
  const fence = unusedFence(quoted);
  return (
    `${reportHeader(reporter, message)}\n` +
    "```quote\n" +
    `**${REPORT_MESSAGE_REASONS[reportType]}**. ${description}\n` +
    "```\n\n" +
    `${fence} spoiler ${original}\n${quoted}\n${fence}\n`
  );
}

/** The report's topic: the reported person's, or the empty topic in a channel that allows only that. */
export function reportTopic(reportedUser: Person, channelTopicsPolicy: string): string {
  return channelTopicsPolicy === "empty_topic_only" ? "" : `${reportedUser.full_name} moderation`;
}
