// Rules of scheduled messages and message reminders (Zulip's
// zerver/actions/scheduled_messages.py, lib/reminders.py): both are rows of
// one table, told apart by delivery type.
import { badRequest, type ApiError } from "../errors.ts";
import { MAX_MESSAGE_LENGTH } from "./limits.ts";
import { messageLinkUrl, topicLinkSyntax } from "./message-links.ts";
import { truncate } from "./messages.ts";

/** Zulip's ScheduledMessage.SEND_LATER / REMIND. */
export const DeliveryType = { SEND_LATER: 1, REMIND: 2 } as const;

/** Zulip's settings.MAX_REMINDER_NOTE_LENGTH (register: max_reminder_note_length). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;

export function deliveryTimeNotInFuture(): ApiError {
  return badRequest("Scheduled delivery time must be in the future.");
}

export function checkDeliveryInFuture(timestamp: number, now: number): void {
  if (timestamp <= now) throw deliveryTimeNotInFuture();
}

/** `to` of a scheduled message: a channel ID for channel messages, a list of user IDs for direct ones (Zulip's recipient_parsing). */
export function checkScheduledRecipient(kind: "channel" | "direct", to: number | number[]): number | number[] {
  if (kind === "channel") {
    if (Array.isArray(to)) throw badRequest("Invalid data type for channel ID");
    return to;
  }
  if (!Array.isArray(to)) throw badRequest("Invalid data type for recipients");
  return [...new Set(to)];
}

/** A reminder's note as stored: trailing whitespace and leading blank lines dropped (Zulip's normalize_note_text); "" is no note. */
export function normalizeReminderNote(note: string | undefined): string | null {
  if (note === undefined) return null;
  const normalized = note.trimEnd().replace(/^\n+/, "");
  if ([...normalized].length > MAX_REMINDER_NOTE_LENGTH) throw badRequest(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return normalized === "" ? null : normalized;
}

/** A fence of backticks longer than any that opens a line of `text`, so the text cannot close it (Zulip's get_unused_fence). */
export function unusedFence(text: string): string {
  let longest = 2;
  for (const match of text.matchAll(/^ {0,3}(`{3,})/gm)) longest = Math.max(longest, match[1]!.length);
  return "`".repeat(longest + 1);
}

export interface RemindedMessage {
  id: number;
  content: string;
  sender: { id: number; full_name: string };
  conversation: { channel: { id: number; name: string }; topic: string } | { participantIds: readonly number[] };
}

/**
 * The Notification Bot's reminder text (Zulip's get_reminder_formatted_content):
 * where the message is, the note, then the message quoted with a link to it.
 */
export function reminderContent(externalUrl: string, message: RemindedMessage, note: string | null): string {
  const where =
    "channel" in message.conversation
      ? `You requested a reminder for ${topicLinkSyntax(message.conversation.channel, message.conversation.topic, message.id)}.`
      : "You requested a reminder for the following direct message.";
  const header = (note === null ? where : `${where} Note:\n > ${note}`) + "\n\n";
  const mention = `@_**${message.sender.full_name}|${message.sender.id}**`;
  const url = messageLinkUrl(externalUrl, message.id, message.conversation);
  if (message.content.startsWith("/poll")) return `${header}${mention} [sent](${url}) a poll.`;
  if (message.content.startsWith("/todo")) return `${header}${mention} [sent](${url}) a todo list.`;
  // Zulip picks the fence from the text before the quote; the quoted message is what could close it early.
  const fence = unusedFence(message.content);
  const before = `${header}${mention} [said](${url}):\n${fence}quote\n`;
  const after = `\n${fence}`;
  const room = MAX_MESSAGE_LENGTH - [...before].length - [...after].length;
  return `${before}${truncate(message.content, room, "\n[message truncated]")}${after}`;
}

/** What the Notification Bot tells a sender whose scheduled message could not be sent (Zulip's send_failed_scheduled_message_notification). */
export function deliveryFailedNotice(scheduledTimestamp: number, error: string): string {
  // Python's str() of an aware UTC datetime: "2025-06-01 14:00:00+00:00"; Zulip's text has the space after the time twice.
  const when = new Date(scheduledTimestamp * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "+00:00");
  return `The message you scheduled for <time:${when}>  was not sent because of the following error:\n\n> ${error}\n\n[View scheduled messages](#scheduled)`;
}
