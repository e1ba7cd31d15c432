// Mobile push rules (Zulip's zerver/lib/push_notifications.py and
// views/push_notifications.py), pure: which token strings and registration
// fields are valid, who gets a push for a new message, and what the push
// says. docs/zulip-behaviour/mobile-push.md lists the sources.
import { ApiError, badRequest } from "../errors.ts";
import { notificationCandidates, notificationTrigger } from "./notifications.ts";

/** Zulip's PushDeviceToken.kind values, which the push service protocol uses too. */
export const TokenKind = { APNS: 1, FCM: 2 } as const;
export type LegacyTokenKind = (typeof TokenKind)[keyof typeof TokenKind];

/** token_kind of POST /mobile_push/register. */
export const E2EE_TOKEN_KINDS = ["android_push", "ios_push"] as const;
export type E2eeTokenKind = (typeof E2EE_TOKEN_KINDS)[number];

/** Zulip's validate_token: the same checks when adding and when removing a token. */
export function checkLegacyToken(token: string, kind: LegacyTokenKind): void {
  if (token === "" || token.length > 4096) throw badRequest("Empty or invalid length token");
  // APNs tokens are hex (Zulip decodes them with unhexlify to check).
  if (kind === TokenKind.APNS && !/^(?:[0-9a-fA-F]{2})+$/.test(token)) throw badRequest("Invalid APNS token");
}

/** typed_endpoint's ApnsAppId: a bundle ID such as org.zulip.Zulip. */
export function checkApnsAppId(appid: string): string {
  if (!/^[.a-zA-Z0-9-]+$/.test(appid)) throw badRequest("Invalid appid");
  return appid;
}

/** RFC 4648 standard base64 (with padding, no line breaks), non-empty. */
export function isStandardBase64(value: string): boolean {
  return value.length > 0 && /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(value);
}

export function checkBase64Field(value: string, name: string): string {
  if (!isStandardBase64(value)) throw badRequest(`Invalid ${name}`);
  return value;
}

/** Zulip's InvalidPushDeviceTokenError: the token is not one of the user's. */
export function unknownPushDevice(): ApiError {
  return new ApiError(400, "INVALID_PUSH_DEVICE_TOKEN", "Device not recognized");
}

/** Zulip's InvalidRemotePushDeviceTokenError: the push service does not know the device. */
export function unknownRemotePushDevice(): ApiError {
  return new ApiError(400, "INVALID_REMOTE_PUSH_DEVICE_TOKEN", "Device not recognized by the push bouncer");
}

/** Zulip's PushServiceNotConfiguredError (HTTP 400). */
export function pushServiceNotConfigured(): ApiError {
  return new ApiError(400, "PUSH_SERVICE_NOT_CONFIGURED", "Server is not configured to use push notification service.");
}

/** Status of an E2EE registration as POST /register's push_devices and push_device events show it. */
export type PushDeviceStatus = "pending" | "active" | "failed";

export function pushDeviceStatus(device: { bouncer_device_id: number | null; error_code: string | null }): PushDeviceStatus {
  if (device.error_code !== null) return "failed";
  return device.bouncer_device_id !== null ? "active" : "pending";
}

/** Zulip's NotificationTriggers for the pushes Parley sends. */
export type PushTrigger = "direct_message" | "mentioned" | "stream_wildcard_mentioned" | "topic_wildcard_mentioned";

/** What decides whether one recipient of a new message gets a push. */
export interface PushRecipientState {
  /** API flag names the recipient has on the message. */
  flags: readonly string[];
  isDirectMessage: boolean;
  enableOfflinePush: boolean;
  enableOnlinePush: boolean;
  /** Has a client polling for events right now. */
  online: boolean;
  /** The channel or topic is muted for the recipient. */
  muted: boolean;
  /** wildcard_mentions_notify after the subscription's override. */
  wildcardMentionsNotify: boolean;
}

/**
 * Zulip's notification rules for mobile push (domain/notifications.ts),
 * limited to direct messages and mentions: a direct message always
 * qualifies; personal and group mentions qualify even in muted
 * conversations; wildcard mentions only outside muted conversations and when
 * the recipient wants wildcard mentions notified. All of them need
 * enable_offline_push_notifications; users with an active client need
 * enable_online_push_notifications as well.
 */
export function pushTrigger(state: PushRecipientState): PushTrigger | null {
  if (state.online && !state.enableOnlinePush) return null;
  const trigger = notificationTrigger({
    flags: state.flags,
    isDirectMessage: state.isDirectMessage,
    dmMentionEnabled: state.enableOfflinePush,
    followedTopicEnabled: false,
    channelEnabled: false,
    channelMuted: state.muted,
    topicPolicy: null,
    wildcardMentionsNotify: state.wildcardMentionsNotify,
    followedTopicWildcardMentionsNotify: false,
    alertWordsAsMentions: false,
  });
  return trigger === "direct_message" || trigger === "mentioned" || trigger === "topic_wildcard_mentioned" || trigger === "stream_wildcard_mentioned" ? trigger : null;
}

/** The new message as the `message` event carries it (apply_markdown form). */
export interface PushMessage {
  id: number;
  sender_id: number;
  sender_email: string;
  sender_full_name: string;
  avatar_url: string | null;
  type: string;
  display_recipient: string | readonly { id: number; email: string; full_name: string }[];
  stream_id?: number;
  subject: string;
  content: string;
  timestamp: number;
}

export interface PushContext {
  /** The organization's URL (realm_url). */
  realmUrl: string;
  realmId: number;
  realmName: string;
  /** The server's host name, Zulip's EXTERNAL_HOST. */
  server: string;
}

/** Zulip's get_mobile_push_content, simplified: the rendered message as plain text. */
export function plainTextOf(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|li|h[1-6]|blockquote|pre|tr)>/gi, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/\n{2,}/g, "\n")
    .trim();
}

/** Zulip's truncate_content: 200 characters, with an ellipsis when cut. */
export function truncatedContent(text: string): { content: string; truncated: boolean } {
  if (text.length <= 200) return { content: text, truncated: false };
  return { content: `${text.slice(0, 200)}…`, truncated: true };
}

function recipientFields(message: PushMessage): Record<string, unknown> {
  if (message.type === "stream") {
    return { recipient_type: "stream", stream: message.display_recipient as string, stream_id: message.stream_id, topic: message.subject };
  }
  const users = message.display_recipient as readonly { id: number }[];
  if (users.length <= 2) return { recipient_type: "private" };
  return { recipient_type: "private", pm_users: users.map((u) => u.id).sort((a, b) => a - b).join(",") };
}

/** Zulip's get_base_payload: who the push is for, on which server and organization. */
function userPayload(ctx: PushContext, userId: number): Record<string, unknown> {
  return {
    server: ctx.server,
    realm_id: ctx.realmId,
    realm_name: ctx.realmName,
    realm_uri: ctx.realmUrl,
    realm_url: ctx.realmUrl,
    user_id: userId,
  };
}

/**
 * The push service's test_notification request for one legacy device, as
 * Zulip's send_test_push_notification: the service builds the test
 * notification ("Test notification", event "test") from base_payload.
 */
export function testNotificationRequest(ctx: PushContext, userId: number, device: { token: string; kind: LegacyTokenKind }): Record<string, unknown> {
  return { realm_id: ctx.realmId, user_id: userId, token: device.token, token_kind: device.kind, base_payload: userPayload(ctx, userId) };
}

function basePayload(ctx: PushContext, userId: number, message: PushMessage): Record<string, unknown> {
  return {
    ...userPayload(ctx, userId),
    sender_id: message.sender_id,
    sender_email: message.sender_email,
    time: message.timestamp,
    ...recipientFields(message),
  };
}

/** Zulip's get_apns_alert_title. */
function alertTitle(message: PushMessage): string {
  if (message.type === "stream") return `#${message.display_recipient as string} > ${message.subject}`;
  const users = message.display_recipient as readonly { full_name: string }[];
  if (users.length > 2) return users.map((u) => u.full_name).sort().join(", ");
  return message.sender_full_name;
}

/** Zulip's get_apns_alert_subtitle. */
function alertSubtitle(message: PushMessage, trigger: PushTrigger): string {
  if (trigger === "mentioned") return `${message.sender_full_name} mentioned you:`;
  if (trigger === "topic_wildcard_mentioned") return `${message.sender_full_name} mentioned all topic participants:`;
  if (trigger === "stream_wildcard_mentioned") return `${message.sender_full_name} mentioned everyone:`;
  const users = message.display_recipient;
  if (message.type !== "stream" && Array.isArray(users) && users.length <= 2) return "";
  return `${message.sender_full_name}:`;
}

/**
 * The request body for the push service's notify endpoint, as Zulip's
 * send_notifications_to_bouncer: the APNs and FCM payloads for one user's
 * devices, which the service delivers to each device it holds for the user.
 */
export function pushNotificationRequest(ctx: PushContext, userId: number, message: PushMessage, trigger: PushTrigger): Record<string, unknown> {
  const { content, truncated } = truncatedContent(plainTextOf(message.content));
  const base = basePayload(ctx, userId, message);
  const gcmPayload = {
    ...base,
    event: "message",
    zulip_message_id: message.id,
    content,
    content_truncated: truncated,
    sender_full_name: message.sender_full_name,
    sender_avatar_url: message.avatar_url,
  };
  const apnsPayload = {
    alert: { title: alertTitle(message), subtitle: alertSubtitle(message, trigger), body: content },
    sound: "default",
    badge: 0,
    custom: { zulip: { ...base, message_ids: [message.id] } },
  };
  return {
    user_id: userId,
    realm_id: ctx.realmId,
    trigger,
    apns_payload: apnsPayload,
    gcm_payload: gcmPayload,
    gcm_options: { priority: "high" },
  };
}

/** Attempts per push-service request, the first included (their delays double from PUSH_RETRY_BASE_MS, at most a minute). */
export const PUSH_MAX_ATTEMPTS = 6;
export const PUSH_MAX_RETRY_DELAY_MS = 60_000;

/** The delay before attempt `attempt + 1` of a push-service request. */
export function pushRetryDelayMs(baseMs: number, attempt: number): number {
  return Math.min(baseMs * 2 ** (attempt - 1), PUSH_MAX_RETRY_DELAY_MS);
}

const MENTION_FLAGS = new Set(["mentioned", "group_mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"]);

/**
 * Who of a new message's recipients may get a push, with their flags: not
 * the sender, not those who have it read already, and in a channel only the
 * mentioned (alert words and followed topics bring no push). Their settings
 * and devices are looked at later, by the worker.
 */
export function pushCandidates(senderId: number, isDirectMessage: boolean, flagsByUser: Iterable<[number, readonly string[]]>): Record<string, string[]> {
  const candidates = notificationCandidates(senderId, isDirectMessage, flagsByUser);
  for (const [userId, names] of Object.entries(candidates)) {
    if (!isDirectMessage && !names.some((f) => MENTION_FLAGS.has(f))) delete candidates[userId];
  }
  return candidates;
}

/** The fields of a message event's message that a push is made of. */
export function pushMessageOf(message: Readonly<Record<string, unknown>> & PushMessage): PushMessage {
  const { id, sender_id, sender_email, sender_full_name, avatar_url, type, display_recipient, stream_id, subject, content, timestamp } = message;
  return { id, sender_id, sender_email, sender_full_name, avatar_url, type, display_recipient, ...(stream_id === undefined ? {} : { stream_id }), subject, content, timestamp };
}
