// Rules of editing and moving messages, pure (Zulip's actions/message_edit.py
// and lib/topic.py): resolving topics, time limits, the stored edit history
// and the snapshots GET /messages/{id}/history builds from it.
import { diffArrays } from "diff";
import { badRequest } from "../errors.ts";
import { isModerator } from "./roles.ts";
import { EMPTY_TOPIC_FALLBACK_NAME, RESOLVED_TOPIC_PREFIX } from "./messages.ts";

export const PROPAGATE_MODES = ["change_one", "change_later", "change_all"] as const;
export type PropagateMode = (typeof PROPAGATE_MODES)[number];

/** Zulip adds this grace to every edit and move limit (not to the delete limit). */
export const EDIT_LIMIT_BUFFER_SECONDS = 20;

/** Undoing a resolve within this many seconds deletes the notice instead of posting another (Zulip's production value). */
export const RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS = 60;

/** One stored edit (Zulip's Message.edit_history entry); the list is kept newest first. */
export interface EditHistoryEntry {
  user_id: number | null;
  timestamp: number;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_rendered_content_version?: number;
  prev_topic?: string;
  topic?: string;
  prev_stream?: number;
  stream?: number;
}

export type ResolveToggle = "resolved" | "unresolved" | null;

/**
 * Whether changing `orig` to `target` (as truncated; `requested` before
 * truncation) marks the topic resolved or unresolved (Zulip's
 * build_message_edit_request). Unresolving strips every leading "✔" and space.
 */
export function resolveToggle(orig: string, requested: string, target: string): ResolveToggle {
  const isResolved = (t: string) => t.startsWith(RESOLVED_TOPIC_PREFIX);
  if (isResolved(target) && !isResolved(orig) && [...requested].slice(2).join("") === orig) return "resolved";
  if (isResolved(orig) && !isResolved(target) && orig.replace(/^[✔ ]+/u, "") === target) return "unresolved";
  return null;
}

/** Zulip's topic_resolve_toggled, on stored history (a pure resolve is not a move). */
export function topicResolveToggled(topic: string, prevTopic: string, maxTopicLength: number): boolean {
  const resolved = (t: string) => t.startsWith(RESOLVED_TOPIC_PREFIX);
  const rest = (t: string) => [...t].slice(2).join("");
  if (resolved(prevTopic) && !resolved(topic)) return rest(prevTopic) === topic;
  if (resolved(topic) && !resolved(prevTopic)) {
    if ([...prevTopic].length <= maxTopicLength - 2) return rest(topic) === prevTopic;
    return topic.endsWith("...") && prevTopic.startsWith(rest(topic).slice(0, -3));
  }
  return false;
}

/** The request topic "✔" or "✔ general chat": the empty topic cannot be resolved. */
export function checkResolvable(requestedTopic: string): void {
  if (requestedTopic === RESOLVED_TOPIC_PREFIX.trim() || requestedTopic === RESOLVED_TOPIC_PREFIX + EMPTY_TOPIC_FALLBACK_NAME) {
    throw badRequest("General chat cannot be marked as resolved");
  }
}

/** Past an edit or move limit (null: no limit), with Zulip's grace. */
export function pastEditLimit(dateSent: number, now: number, limitSeconds: number | null): boolean {
  return limitSeconds !== null && now - dateSent > limitSeconds + EDIT_LIMIT_BUFFER_SECONDS;
}

/**
 * Zulip's validate_user_can_edit_message: content edits need the
 * organization to allow editing, the editor to be the sender, and the edit
 * limit not passed (`bufferSeconds` of grace: 20 for edits, none for the
 * editing-typing notification).
 */
export function checkCanEditContent(
  settings: { allow_message_editing: boolean; message_content_edit_limit_seconds: number | null },
  message: { sender_id: number; date_sent: number },
  editorId: number,
  now: number,
  bufferSeconds: number = EDIT_LIMIT_BUFFER_SECONDS,
): void {
  if (!settings.allow_message_editing) throw badRequest("Your organization has turned off message editing");
  if (message.sender_id !== editorId) throw badRequest("You don't have permission to edit this message");
  const limit = settings.message_content_edit_limit_seconds;
  if (limit !== null && now - message.date_sent > limit + bufferSeconds) throw badRequest("The time limit for editing this message has passed");
}

/** Moderators, administrators and owners are exempt from the move time limits. */
export function exemptFromMoveLimits(role: number): boolean {
  return isModerator(role);
}

/** The timestamps message objects show (Zulip's messages_for_ids): content edits, and moves other than pure resolves. */
export function editTimestamps(history: readonly EditHistoryEntry[], maxTopicLength: number): { lastEdit: number | null; lastMoved: number | null } {
  let lastEdit: number | null = null;
  let lastMoved: number | null = null;
  for (const entry of history) {
    if (entry.prev_content !== undefined) lastEdit = Math.max(lastEdit ?? 0, entry.timestamp);
    const moved =
      entry.prev_stream !== undefined ||
      (entry.prev_topic !== undefined && !topicResolveToggled(entry.topic ?? "", entry.prev_topic, maxTopicLength));
    if (moved) lastMoved = Math.max(lastMoved ?? 0, entry.timestamp);
  }
  return { lastEdit, lastMoved };
}

/** One element of GET /messages/{id}/history's message_history. */
export interface EditSnapshot {
  topic: string;
  prev_topic?: string;
  stream?: number;
  prev_stream?: number;
  content: string;
  rendered_content: string;
  prev_content?: string;
  prev_rendered_content?: string;
  content_html_diff?: string;
  user_id: number | null;
  timestamp: number;
}

export interface CurrentMessage {
  content: string;
  rendered_content: string;
  topic: string;
  date_sent: number;
  sender_id: number;
  isChannelMessage: boolean;
}

/**
 * Snapshots oldest to newest (Zulip's fill_edit_history_entries): each holds
 * the state right after its edit and the prev_* data of what that edit changed.
 */
export function editSnapshots(message: CurrentMessage, history: readonly EditHistoryEntry[], topicName: (topic: string) => string): EditSnapshot[] {
  const shownTopic = (t: string) => (message.isChannelMessage ? topicName(t) : t);
  let content = message.content;
  let rendered = message.rendered_content;
  let topic = message.topic;
  const snapshots: EditSnapshot[] = [];
  for (const entry of history) {
    const snapshot: EditSnapshot = { topic: shownTopic(topic), content, rendered_content: rendered, user_id: entry.user_id, timestamp: entry.timestamp };
    if (entry.prev_topic !== undefined) {
      snapshot.prev_topic = shownTopic(entry.prev_topic);
      topic = entry.prev_topic;
    }
    if (entry.prev_content !== undefined) {
      snapshot.prev_content = entry.prev_content;
      snapshot.prev_rendered_content = entry.prev_rendered_content ?? "";
      snapshot.content_html_diff = htmlDiff(snapshot.prev_rendered_content, rendered);
      content = entry.prev_content;
      rendered = snapshot.prev_rendered_content;
    }
    if (entry.prev_stream !== undefined) {
      snapshot.prev_stream = entry.prev_stream;
      if (entry.stream !== undefined) snapshot.stream = entry.stream;
    }
    snapshots.push(snapshot);
  }
  snapshots.push({ topic: shownTopic(topic), content, rendered_content: rendered, user_id: message.sender_id, timestamp: message.date_sent });
  return snapshots.reverse();
}

/**
 * With the "moves" policy content edits are hidden: only move snapshots are
 * kept, and every snapshot shows the current content, which everyone sees
 * anyway (Zulip drops content-only entries and strips the content keys).
 */
export function visibleSnapshots(snapshots: readonly EditSnapshot[], stored: readonly EditHistoryEntry[], policy: "all" | "moves" | "none"): EditSnapshot[] {
  if (policy === "all") return [...snapshots];
  const current = snapshots[snapshots.length - 1]!;
  // Oldest first: the original, then one snapshot per stored entry (stored newest first).
  const entries = [...stored].reverse();
  return snapshots
    .filter((_, i) => i === 0 || entries[i - 1]!.prev_topic !== undefined || entries[i - 1]!.prev_stream !== undefined)
    .map(({ prev_content: _c, prev_rendered_content: _r, content_html_diff: _d, ...move }) => ({ ...move, content: current.content, rendered_content: current.rendered_content }));
}

/** The history entries a policy lets people see ("moves": move data only). */
export function visibleEditHistory(history: readonly EditHistoryEntry[], policy: "all" | "moves" | "none"): EditHistoryEntry[] {
  if (policy === "none") return [];
  if (policy === "all") return [...history];
  const kept: EditHistoryEntry[] = [];
  for (const entry of history) {
    if (entry.prev_topic === undefined && entry.prev_stream === undefined) continue;
    const { prev_content: _c, prev_rendered_content: _r, prev_rendered_content_version: _v, ...move } = entry;
    kept.push(move);
  }
  return kept;
}

// An HTML token: a tag, or a word with the whitespace after it.
const TOKEN = /<[^>]*>|[^<\s]+\s*|\s+/g;
/** Marks lxml's pseudo-word for a link's target, which htmldiff puts before the closing </a>. */
const LINK_MARK = "\u0000";

/** Tokens of a rendering, with a "Link: URL" pseudo-word closing each link, as lxml's htmldiff sees it. */
function htmlTokens(html: string): string[] {
  const tokens: string[] = [];
  const hrefs: string[] = [];
  for (const token of html.match(TOKEN) ?? []) {
    if (/^<a\s/i.test(token)) hrefs.push(/\shref="([^"]*)"/i.exec(token)?.[1] ?? "");
    else if (/^<\/a>/i.test(token) && hrefs.length > 0) tokens.push(`${LINK_MARK} Link: ${hrefs.pop()} . `);
    tokens.push(token);
  }
  return tokens;
}

/**
 * content_html_diff (Zulip's highlight_html_differences over lxml's
 * htmldiff): a word-level diff of two renderings, inserted words before
 * deleted ones, each run in a highlight span, wrapped in a div. A changed
 * link target shows as lxml's "Link: URL ." pseudo-text.
 */
export function htmlDiff(before: string, after: string): string {
  const isTag = (t: string) => t.startsWith("<");
  const isLink = (t: string) => t.startsWith(LINK_MARK);
  const key = (t: string) => (isTag(t) ? t : t.trim());
  const beforeTokens = htmlTokens(before);
  const afterTokens = htmlTokens(after);
  const changes = diffArrays(beforeTokens.map(key), afterTokens.map(key));
  let ai = 0;
  let bi = 0;
  let out = "";
  const span = (cls: string, words: string[]): string => {
    if (words.length === 0) return "";
    const text = words.map((w) => (isLink(w) ? w.slice(LINK_MARK.length) : w)).join("");
    const trailing = /\s*$/.exec(text)![0];
    return `<span class="${cls}">${text.slice(0, text.length - trailing.length)}</span>${trailing}`;
  };
  let inserted: string[] = [];
  let deleted: string[] = [];
  const flush = () => {
    const ins = span("highlight_text_inserted", inserted);
    const del = span("highlight_text_deleted", deleted);
    const startsWithLink = isLink(inserted[0] ?? deleted[0] ?? "");
    if (startsWithLink && out !== "" && !/\s$/.test(out)) out += " ";
    out += ins !== "" && del !== "" && !/\s$/.test(ins) ? `${ins} ${del}` : ins + del;
    inserted = [];
    deleted = [];
  };
  for (const change of changes) {
    const n = change.count ?? change.value.length;
    if (change.added) {
      for (const t of afterTokens.slice(ai, ai + n)) {
        if (isTag(t)) {
          flush();
          out += t;
        } else inserted.push(t);
      }
      ai += n;
    } else if (change.removed) {
      // Removed tags go with the removed text; only the words are shown.
      for (const t of beforeTokens.slice(bi, bi + n)) if (!isTag(t)) deleted.push(t);
      bi += n;
    } else {
      flush();
      // Unchanged link targets are not shown.
      out += afterTokens
        .slice(ai, ai + n)
        .filter((t) => !isLink(t))
        .join("");
      ai += n;
      bi += n;
    }
  }
  flush();
  return `<div>${out}</div>`;
}
