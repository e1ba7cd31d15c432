// Rules for a message's content, topic and conversation, with no I/O: what
// send, edit, scheduled delivery and narrows share.
import { createHash } from "node:crypto";
import { ApiError, badRequest } from "../errors.ts";
import type { TopicsPolicy } from "./channels.ts";
import { decodeClientJson } from "./json.ts";
import { checkListLength, MAX_USER_IDS } from "./limits.ts";

/** Zulip's LARGER_THAN_MAX_MESSAGE_ID: the anchor "newest" stands for. */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;
/** Zulip's MAX_MESSAGES_PER_FETCH. */
export const MAX_MESSAGES_PER_FETCH = 5000;
/** Zulip's WILDCARD_MENTION_THRESHOLD: larger audiences need can_mention_many_users_group. */
export const WILDCARD_MENTION_THRESHOLD = 15;

export const RESOLVED_TOPIC_PREFIX = "✔ ";

/** Zulip's visibility_policy values for a user's topic. */
export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

/** Recipient.type values. */
export const RecipientType = { CHANNEL: 2, DIRECT: 3 } as const;

/** The key of a direct-message conversation: its participants' IDs, ascending. */
export function dmKey(userIds: Iterable<number>): string {
  return [...new Set(userIds)].sort((a, b) => a - b).join(",");
}

/**
 * What a direct-message conversation is looked up by (Zulip's huddle_hash): a
 * fixed-length digest of its dm_key, since the key of a large conversation is
 * too long for a PostgreSQL index.
 */
export function dmHash(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function dmKeyUserIds(key: string): number[] {
  return key.split(",").map(Number);
}

/**
 * Whether text has more than `max` code points: Zulip's len(text) > max. Most
 * texts are decided by their UTF-16 length alone, without counting.
 */
export function longerThan(text: string, max: number): boolean {
  if (text.length <= max) return false; // UTF-16 units >= code points
  if (text.length > 2 * max) return true; // a code point is at most 2 units
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    if (++count > max) return true;
  }
  return false;
}

/** Cuts text to `max` code points, ending with `suffix` when cut (Zulip's truncate_content). */
export function truncate(text: string, max: number, suffix: string): string {
  if (!longerThan(text, max)) return text;
  return [...text].slice(0, max - [...suffix].length).join("") + suffix;
}

/**
 * POST /messages/render takes content of up to max_message_length code
 * points. Zulip declares the parameter with
 * StringConstraints(max_length=settings.MAX_MESSAGE_LENGTH): longer content
 * is refused, not cut as a send cuts it, so a preview never costs more
 * rendering than a message can.
 */
export function checkRenderContent(content: string, maxLength: number): void {
  if (longerThan(content, maxLength)) throw badRequest(`content is too long (limit: ${maxLength} characters)`);
}

/** Message content as stored: trailing whitespace dropped, too-long content cut as Zulip does. */
export function normalizeContent(raw: string, maxLength: number): string {
  const content = raw.trimEnd().replace(/^\n+/, "");
  if (content === "") throw badRequest("Message must not be empty");
  if (content.includes("\0")) throw badRequest("Message must not contain null bytes");
  return truncate(content, maxLength, "\n[message truncated]");
}

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME, accepted whatever the organization calls the empty topic. */
export const EMPTY_TOPIC_FALLBACK_NAME = "general chat";

/** The names clients may use for the empty topic. */
export function normalizeTopicName(topic: string, emptyTopicName: string): string {
  const trimmed = topic.trim();
  return trimmed === "(no topic)" || trimmed === emptyTopicName || trimmed === EMPTY_TOPIC_FALLBACK_NAME ? "" : trimmed;
}

/** A topic as stored: checked for bad characters, too-long topics cut as Zulip does. */
export function checkTopic(raw: string, emptyTopicName: string, maxLength: number): string {
  const topic = normalizeTopicName(raw, emptyTopicName);
  if (topic.includes("\0")) throw badRequest("Topic must not contain null bytes");
  for (const [i, ch] of [...topic].entries()) {
    if (/[\p{Cc}\p{Cs}]/u.test(ch)) throw badRequest(`Invalid character in topic, at position ${i + 1}!`);
  }
  return truncate(topic, maxLength, "...");
}

/** The channel's policy, with "inherit" resolved to the organization's. */
export function effectiveTopicsPolicy(channelPolicy: string, realmPolicy: string): TopicsPolicy {
  return (channelPolicy === "inherit" ? realmPolicy : channelPolicy) as TopicsPolicy;
}

/** Whether a channel takes a message in this topic (Zulip's topics_policy rules). */
export function checkTopicAllowed(topic: string, policy: TopicsPolicy, emptyTopicName: string): void {
  const extra = { empty_topic_display_name: emptyTopicName };
  if (policy === "empty_topic_only" && topic !== "") throw new ApiError(400, "BAD_REQUEST", `Only the ${emptyTopicName} topic is allowed in this channel.`, extra);
  if (policy === "disable_empty_topic" && topic === "") {
    throw new ApiError(400, "BAD_REQUEST", `Sending messages to the ${emptyTopicName} is not allowed in this channel.`, extra);
  }
}

/** `topic`, or its legacy alias `subject`; both at once is Zulip's REQUEST_CONFUSING_VAR. */
export function topicOrSubject(topic: string | undefined, subject: string | undefined): string | undefined {
  if (topic !== undefined && subject !== undefined) {
    throw new ApiError(400, "REQUEST_CONFUSING_VAR", "Can't decide between 'topic' and 'subject' arguments", { var_name1: "topic", var_name2: "subject" });
  }
  return topic ?? subject;
}

export function streamWildcardNotAllowed(): ApiError {
  return new ApiError(400, "STREAM_WILDCARD_MENTION_NOT_ALLOWED", "You do not have permission to use channel wildcard mentions in this channel.");
}

export function topicWildcardNotAllowed(): ApiError {
  return new ApiError(400, "TOPIC_WILDCARD_MENTION_NOT_ALLOWED", "You do not have permission to use topic wildcard mentions in this topic.");
}

const INTERACTIVE_CLIENTS = new Set(["zulipandroid", "zulipios", "zulipdesktop", "zulipmobile", "zulipelectron", "zulipterminal", "snipe", "website", "ios", "android"]);

/**
 * Zulip's Client.default_read_by_sender: messages sent from a full UI client
 * start read for their sender; those sent by scripts and integrations with the
 * user's key (a calendar reminder, say) stay unread.
 */
export function defaultReadBySender(clientName: string): boolean {
  const name = clientName.toLowerCase();
  return INTERACTIVE_CLIENTS.has(name) || name.includes("desktop app");
}

/** The client name Zulip records: the `client` parameter, else the User-Agent's first product name. */
export function clientName(clientParam: string | undefined, userAgent: string | undefined): string {
  if (clientParam) return clientParam;
  const first = (userAgent ?? "").trim().split(/[\s/]/)[0];
  return first || "Unspecified";
}

/** `/me` messages: content starting with "/me " and rendered as one paragraph starting with it. */
export function isMeMessage(content: string, renderedContent: string): boolean {
  return content.startsWith("/me ") && renderedContent.startsWith("<p>/me ") && !content.includes("\n");
}

/** `to` decoded when it is JSON (nesting bounded, NUL refused, as for every JSON parameter), else as given. */
function parseJsonOr(raw: string): unknown {
  // Most values are bare names; a failed JSON.parse costs an exception per send.
  if (!/^\s*(?:[[{"\d-]|(?:true|false|null)\s*$)/.test(raw)) return raw;
  const decoded = decodeClientJson(raw, "to");
  return decoded === undefined ? raw : decoded;
}

/** `to` of a channel message: a name or an ID, bare or JSON, or a one-item JSON list (Zulip's extract_stream_indicator). */
export function parseChannelIndicator(raw: string): string | number {
  let data = parseJsonOr(raw);
  if (Array.isArray(data)) {
    if (data.length !== 1) throw badRequest("Expected exactly one channel");
    data = data[0];
  }
  if (typeof data === "string") return data;
  if (typeof data === "number" && Number.isSafeInteger(data)) return data;
  throw badRequest("Invalid data type for channel");
}

/** `to` of a direct message: user IDs or emails, as JSON or comma-separated (Zulip's extract_private_recipients). */
export function parseDirectRecipients(raw: string): { ids: number[] } | { emails: string[] } {
  let data = parseJsonOr(raw);
  if (typeof data === "string") data = data.split(",");
  else if (typeof data === "number") data = [data];
  if (!Array.isArray(data)) throw badRequest("Invalid data type for recipients");
  checkListLength(data, "to", { max: MAX_USER_IDS });
  if (data.length === 0) return { ids: [] };
  if (data.every((x) => typeof x === "number")) {
    if (!data.every((x) => Number.isSafeInteger(x))) throw badRequest("Invalid data type for recipients");
    return { ids: [...new Set(data as number[])] };
  }
  if (data.every((x) => typeof x === "string")) {
    const emails = (data as string[]).map((e) => e.trim()).filter((e) => e !== "");
    return { emails: [...new Set(emails)] };
  }
  if (data.every((x) => typeof x === "string" || typeof x === "number")) throw badRequest("Recipient lists may contain emails or user IDs, but not both.");
  throw badRequest("Invalid data type for recipients");
}
