// Links to conversations and messages in the text the server itself writes
// (Notification Bot notices, reminders), as Zulip's topic_link_util and
// message_link_url build them.
import { encodeChannel, hashUtilEncode } from "../markdown/links.ts";
import { EMPTY_TOPIC_FALLBACK_NAME } from "./messages.ts";

interface ChannelRef {
  id: number;
  name: string;
}

/**
 * `#**channel>topic**` (with `@message_id` when linking a message), or a
 * Markdown link when a name would break that syntax (Zulip's
 * get_stream_topic_link_syntax / get_message_link_syntax).
 */
export function topicLinkSyntax(channel: ChannelRef, topic: string, messageId?: number): string {
  const unsafe = /[`>*&[\]]|\$\$/;
  if (!unsafe.test(channel.name) && !unsafe.test(topic)) return `#**${channel.name}>${topic}${messageId === undefined ? "" : `@${messageId}`}**`;
  const esc = (s: string) =>
    s.replace(/&/g, "&amp;").replace(/`/g, "&#96;").replace(/>/g, "&gt;").replace(/\*/g, "&#42;").replace(/\$\$/g, "&#36;&#36;").replace(/\[/g, "&#91;").replace(/\]/g, "&#93;");
  const label = `#${esc(channel.name)} > ${esc(topic === "" ? EMPTY_TOPIC_FALLBACK_NAME : topic)}`;
  const href = `#narrow/channel/${encodeChannel(channel.id, channel.name)}/topic/${hashUtilEncode(topic)}`;
  return messageId === undefined ? `[${label}](${href})` : `[${label} @ 💬](${href}/near/${messageId})`;
}

/** The absolute URL of a message in the web app (Zulip's message_link_url). */
export function messageLinkUrl(externalUrl: string, messageId: number, conversation: { channel: ChannelRef; topic: string } | { participantIds: readonly number[] }): string {
  if ("channel" in conversation) {
    return `${externalUrl}/#narrow/channel/${encodeChannel(conversation.channel.id, conversation.channel.name)}/topic/${hashUtilEncode(conversation.topic)}/near/${messageId}`;
  }
  const ids = [...conversation.participantIds].sort((a, b) => a - b);
  return `${externalUrl}/#narrow/dm/${ids.join(",")}${ids.length >= 3 ? "-group" : ""}/near/${messageId}`;
}
