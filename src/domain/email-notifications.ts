// Missed-message emails, pure (Zulip's zerver/lib/email_notifications.py):
// what one email about one conversation says, in HTML and plain text, and
// the signed unsubscribe links. docs/zulip-behaviour/email-notifications.md
// describes the whole feature.
import crypto from "node:crypto";
import { escapeHtml } from "./text.ts";
import { plainTextOf } from "./push.ts";

/** The kinds of email an unsubscribe link turns off, and the personal setting each one clears. */
export const UNSUBSCRIBE_TYPES = {
  missed_messages: "enable_offline_email_notifications",
  followed_topics: "enable_followed_topic_email_notifications",
  digest: "enable_digest_emails",
} as const;
export type UnsubscribeType = keyof typeof UNSUBSCRIBE_TYPES;

export function isUnsubscribeType(value: string): value is UnsubscribeType {
  return Object.hasOwn(UNSUBSCRIBE_TYPES, value);
}

function unsubscribeMac(key: Buffer, type: UnsubscribeType, userId: number): string {
  return crypto.createHmac("sha256", key).update(`email_unsubscribe:${type}:${userId}`).digest("base64url");
}

/** The token of an unsubscribe link: the user's ID and a MAC over it and the email kind. */
export function unsubscribeToken(key: Buffer, type: UnsubscribeType, userId: number): string {
  return `${userId}.${unsubscribeMac(key, type, userId)}`;
}

/** The user a token was made for, or undefined when it is malformed or forged. */
export function verifyUnsubscribeToken(key: Buffer, type: UnsubscribeType, token: string): number | undefined {
  const match = /^([1-9][0-9]{0,9})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return undefined;
  const userId = Number(match[1]);
  const expected = Buffer.from(unsubscribeMac(key, type, userId));
  const given = Buffer.from(match[2]!);
  return expected.length === given.length && crypto.timingSafeEqual(expected, given) ? userId : undefined;
}

/** The email kind whose setting brought these triggers: followed-topic emails have their own switch. */
export function unsubscribeTypeFor(triggers: readonly string[]): UnsubscribeType {
  return triggers.length > 0 && triggers.every((t) => t === "followed_topic") ? "followed_topics" : "missed_messages";
}

/**
 * The personal setting that must still be on when the batch goes out for an
 * email owed for `trigger` (an unsubscribe meanwhile stops it); channel
 * notifications have a per-channel override, checked when they were owed.
 */
export function settingForTrigger(trigger: string): "enable_offline_email_notifications" | "enable_followed_topic_email_notifications" | undefined {
  if (trigger === "followed_topic") return "enable_followed_topic_email_notifications";
  if (trigger === "stream_notify") return undefined;
  return "enable_offline_email_notifications";
}

/**
 * Zulip's relative_to_full_url: links and images in rendered message HTML
 * point at the server (`/user_uploads/…`, `#narrow/…`); an email needs them
 * absolute. Only href and src attributes are rewritten; absolute URLs and
 * mailto: stay as they are.
 */
export function absoluteUrls(html: string, externalUrl: string): string {
  const base = `${externalUrl.replace(/\/+$/, "")}/`;
  return html.replace(/\b(href|src)="([^"]*)"/g, (whole, attr: string, value: string) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(value)) return whole;
    const raw = value.replace(/&amp;/g, "&");
    let absolute: string;
    try {
      absolute = value.startsWith("#") ? `${base}${raw}` : new URL(raw, base).toString();
    } catch {
      return whole;
    }
    return `${attr}="${escapeHtml(absolute)}"`;
  });
}

export interface EmailConversation {
  kind: "channel" | "direct";
  /** Channel name (channel messages). */
  channelName?: string;
  topic?: string;
  /** Direct messages: the other participants' names, the recipient excluded. */
  otherNames?: readonly string[];
}

export interface EmailMessagePart {
  id: number;
  senderName: string;
  /** The message's rendered HTML. */
  html: string;
  trigger: string;
}

export interface MissedMessageEmailInput {
  realmName: string;
  includeRealmName: boolean;
  /** False when the organization or the user keeps message content out of emails. */
  showContent: boolean;
  /** Why content is hidden, for the explanation. */
  hiddenBy?: "user" | "realm";
  conversation: EmailConversation;
  messages: readonly EmailMessagePart[];
  externalUrl: string;
  /** The conversation in the web client. */
  conversationUrl: string;
  unsubscribeUrl: string;
  /** The settings page of the web client, for "manage your notifications". */
  settingsUrl: string;
}

export interface MissedMessageEmailContent {
  subject: string;
  text: string;
  html: string;
}

/** "DMs with Ann", "Group DMs with Ann and Bob", or "#channel > topic" (Zulip's missed_message subjects). */
function conversationTitle(c: EmailConversation): string {
  if (c.kind === "channel") return `#${c.channelName ?? ""} > ${c.topic ?? ""}`;
  const names = [...(c.otherNames ?? [])];
  if (names.length <= 1) return `DMs with ${names[0] ?? "yourself"}`;
  return `Group DMs with ${listOf(names)}`;
}

function listOf(names: readonly string[]): string {
  if (names.length <= 1) return names[0] ?? "";
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** What the email's opening line says happened, from the most salient trigger. */
function headline(input: MissedMessageEmailInput): string {
  const senders = [...new Set(input.messages.map((m) => m.senderName))];
  const triggers = new Set(input.messages.map((m) => m.trigger));
  const who = listOf(senders);
  if (input.conversation.kind === "direct") return input.conversation.otherNames && input.conversation.otherNames.length > 1 ? `New group direct messages from ${who}` : `New direct messages from ${who}`;
  const where = conversationTitle(input.conversation);
  if (triggers.has("mentioned")) return `${who} mentioned you in ${where}`;
  if ([...triggers].some((t) => t.includes("wildcard"))) return `${who} mentioned everyone in ${where}`;
  if (triggers.has("followed_topic")) return `New messages in a topic you follow, ${where}`;
  return `New messages in ${where}`;
}

const HIDDEN_BY = {
  user: "This email does not include message content because you have disabled message content in email notifications.",
  realm: "This email does not include message content because your organization has disabled message content in email notifications.",
};

/**
 * One email about one conversation: its subject, plain text and HTML. With
 * content hidden, neither the topic nor the messages are shown: who wrote,
 * how many, and the link.
 */
export function missedMessageEmail(input: MissedMessageEmailInput): MissedMessageEmailContent {
  const prefix = input.includeRealmName ? `[${input.realmName}] ` : "";
  const count = input.messages.length;
  const footerText = `You are receiving this because of your notification settings in ${input.realmName}. Manage them: ${input.settingsUrl}\nUnsubscribe from these emails: ${input.unsubscribeUrl}`;
  const footerHtml = `<p style="color:#666;font-size:12px">You are receiving this because of your notification settings in ${escapeHtml(input.realmName)}. <a href="${escapeHtml(input.settingsUrl)}">Manage your notifications</a> · <a href="${escapeHtml(input.unsubscribeUrl)}">Unsubscribe</a></p>`;
  if (!input.showContent) {
    const senders = listOf([...new Set(input.messages.map((m) => m.senderName))]);
    const line = count === 1 ? `You have a new message from ${senders}.` : `You have ${count} new messages from ${senders}.`;
    const why = HIDDEN_BY[input.hiddenBy ?? "user"];
    return {
      subject: `${prefix}New messages`,
      text: `${line}\n\n${why}\n\nView in ${input.realmName}: ${input.conversationUrl}\n\n${footerText}\n`,
      html: `<!doctype html><html><body><p>${escapeHtml(line)}</p><p>${escapeHtml(why)}</p><p><a href="${escapeHtml(input.conversationUrl)}">View in ${escapeHtml(input.realmName)}</a></p>${footerHtml}</body></html>`,
    };
  }
  const title = conversationTitle(input.conversation);
  const head = headline(input);
  const textParts = input.messages.map((m) => `${m.senderName}:\n${plainTextOf(m.html)}`);
  const htmlParts = input.messages.map(
    (m) => `<div style="margin:12px 0"><div style="font-weight:bold">${escapeHtml(m.senderName)}</div><div>${absoluteUrls(m.html, input.externalUrl)}</div></div>`,
  );
  return {
    subject: `${prefix}${title}`,
    text: `${head}\n\n${textParts.join("\n\n")}\n\nReply or view in ${input.realmName}: ${input.conversationUrl}\n\n${footerText}\n`,
    html: `<!doctype html><html><body><p>${escapeHtml(head)}</p>${htmlParts.join("")}<p><a href="${escapeHtml(input.conversationUrl)}">Reply or view in ${escapeHtml(input.realmName)}</a></p>${footerHtml}</body></html>`,
  };
}

/** Zulip's realm_name_in_email_notifications_policy: 1 automatic (Parley: never, one organization per account), 2 always, 3 never. */
export function includeRealmName(policy: number): boolean {
  return policy === 2;
}
