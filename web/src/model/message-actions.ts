// What the message actions do, through the server's API. None of these change
// a store directly: the server's events (reaction, update_message,
// delete_message, update_message_flags) bring the result to every client,
// this one included.
import { api } from "../api/client.ts";
import type { Message, Reaction } from "../api/types.ts";
import { channelName } from "./channels.ts";
import { requestCompose } from "./compose-requests.ts";
import { messageUi } from "./message-ui.ts";
import { navigate, useNavigation } from "./navigation.ts";
import { apiNarrow, conversationNarrow, narrowHash, narrowKey, sameNarrow, type Narrow } from "./narrow.ts";
import { useUsers } from "./users.ts";

export interface EmojiChoice {
  emoji_name: string;
  emoji_code: string;
  reaction_type: Reaction["reaction_type"];
}

function selfId(): number {
  return useUsers.getState().selfId;
}

export function hasOwnReaction(message: Message, emoji: { emoji_code: string; reaction_type: string }): boolean {
  const me = selfId();
  return message.reactions.some((r) => r.user_id === me && r.emoji_code === emoji.emoji_code && r.reaction_type === emoji.reaction_type);
}

/** Adds the reaction, or takes yours away when you already gave it (as clicking a reaction does). */
export async function toggleReaction(message: Message, emoji: EmojiChoice): Promise<void> {
  const params = { emoji_name: emoji.emoji_name, emoji_code: emoji.emoji_code, reaction_type: emoji.reaction_type };
  if (hasOwnReaction(message, emoji)) await api.delete(`/messages/${message.id}/reactions`, params);
  else await api.post(`/messages/${message.id}/reactions`, params);
}

export async function setStarred(message: Message, starred: boolean): Promise<void> {
  await api.post("/messages/flags", { messages: [message.id], op: starred ? "add" : "remove", flag: "starred" });
}

/**
 * Marks this message and every later one of the narrow unread (Zulip's "Mark as
 * unread from here"), in pages of the server's limit, and pauses marking read
 * in this narrow until you leave it.
 */
export async function markUnreadFrom(message: Message, narrow: Narrow): Promise<void> {
  messageUi.pauseReading(narrowKey(narrow));
  let anchor = message.id;
  let includeAnchor = true;
  for (let page = 0; page < 20; page++) {
    const reply = await api.post<{ found_newest: boolean; last_processed_id: number | null }>("/messages/flags/narrow", {
      anchor: String(anchor),
      include_anchor: includeAnchor,
      num_before: 0,
      num_after: 1000,
      narrow: apiNarrow(narrow),
      op: "remove",
      flag: "read",
    });
    if (reply.found_newest || reply.last_processed_id === null) return;
    anchor = reply.last_processed_id;
    includeAnchor = false;
  }
}

/** The message's permanent link, as Zulip writes it: its conversation's narrow plus /near/ID. */
export function messageLink(message: Message): string {
  const hash = narrowHash(conversationNarrow(message, selfId()), { channelName });
  return `${window.location.origin}/${hash}/near/${message.id}`;
}

export async function copyLink(message: Message): Promise<void> {
  const link = messageLink(message);
  try {
    await navigator.clipboard.writeText(link);
  } catch {
    // Without clipboard access (an insecure origin, a denied permission), the old way.
    const area = document.createElement("textarea");
    area.value = link;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    document.execCommand("copy");
    area.remove();
  }
}

/** The message's Markdown source. */
export async function fetchRawContent(messageId: number): Promise<string> {
  const reply = await api.get<{ raw_content?: string; message?: { content: string } }>(`/messages/${messageId}`, { apply_markdown: false });
  return reply.raw_content ?? reply.message?.content ?? "";
}

/** A fence longer than any fence in the text, so the quote holds it whole (Zulip's get_unused_fence). */
export function unusedFence(text: string): string {
  let longest = 0;
  for (const match of text.matchAll(/^ {0,3}(`{3,})/gm)) longest = Math.max(longest, match[1]!.length);
  return "`".repeat(Math.max(3, longest + 1));
}

/** Zulip's quote-and-reply text: a silent mention of the sender, a link to the message, its source in a quote block. */
export function quoteText(message: Message, raw: string): string {
  const fence = unusedFence(raw);
  return `@_**${message.sender_full_name}|${message.sender_id}** [said](${messageLink(message)}):\n${fence}quote\n${raw}\n${fence}\n`;
}

function currentNarrow(): Narrow | null {
  const view = useNavigation.getState().view;
  return view.kind === "messages" ? view.narrow : null;
}

/**
 * Opens the compose box for the message's conversation: in place when the open
 * narrow is that conversation or its channel (with the topic set), otherwise
 * by going to the conversation.
 */
export function replyTo(message: Message, insert?: string): void {
  const conversation = conversationNarrow(message, selfId());
  const current = currentNarrow();
  let target: Narrow = conversation;
  if (current && (sameNarrow(current, conversation) || (current.kind === "channel" && message.type === "stream" && current.streamId === message.stream_id))) {
    target = current;
  } else {
    navigate({ kind: "messages", narrow: conversation });
  }
  messageUi.select(message.id);
  requestCompose({ key: narrowKey(target), topic: message.type === "stream" ? message.subject : undefined, insert, focus: "message" });
}

export async function quoteAndReply(message: Message): Promise<void> {
  const raw = await fetchRawContent(message.id);
  replyTo(message, quoteText(message, raw));
}

export async function editContent(message: Message, content: string): Promise<void> {
  await api.patch(`/messages/${message.id}`, { content });
}

export type PropagateMode = "change_one" | "change_later" | "change_all";

/** Moves messages; without `notify`, the server's defaults say which threads get a notice. */
export async function moveMessages(
  message: Message,
  change: { topic?: string; streamId?: number },
  propagateMode: PropagateMode,
  notify?: { old: boolean; new: boolean },
): Promise<void> {
  await api.patch(`/messages/${message.id}`, {
    ...(change.topic !== undefined ? { topic: change.topic } : {}),
    ...(change.streamId !== undefined ? { stream_id: change.streamId } : {}),
    propagate_mode: propagateMode,
    ...(notify ? { send_notification_to_old_thread: notify.old, send_notification_to_new_thread: notify.new } : {}),
  });
}

/** Zulip's mark for a resolved topic: the name's prefix. */
export const RESOLVED_TOPIC_PREFIX = "✔ ";

/** Marks a topic resolved (or unresolved again), as Zulip's recipient bar does: every message, a notice in the new thread. */
export async function toggleResolved(message: Message): Promise<void> {
  // Unresolving takes off every leading mark and space, as the server compares it.
  const topic = message.subject.startsWith(RESOLVED_TOPIC_PREFIX) ? message.subject.replace(/^[✔ ]+/u, "") : RESOLVED_TOPIC_PREFIX + message.subject;
  await moveMessages(message, { topic }, "change_all", { old: false, new: true });
}

export async function deleteMessage(message: Message): Promise<void> {
  await api.delete(`/messages/${message.id}`);
}

export interface HistoryEntry {
  timestamp: number;
  user_id: number | null;
  topic?: string;
  prev_topic?: string;
  stream?: number;
  prev_stream?: number;
  content?: string;
  rendered_content?: string;
  prev_content?: string;
  prev_rendered_content?: string;
  content_html_diff?: string;
}

export async function fetchHistory(message: Message): Promise<HistoryEntry[]> {
  const reply = await api.get<{ message_history: HistoryEntry[] }>(`/messages/${message.id}/history`, { allow_empty_topic_name: true });
  return reply.message_history;
}

export async function reportMessage(message: Message, reportType: string, description: string): Promise<void> {
  await api.post(`/messages/${message.id}/report`, { report_type: reportType, ...(description.trim() !== "" ? { description } : {}) });
}
