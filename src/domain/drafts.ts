// Draft rules (Zulip's zerver/lib/drafts.py): the shape a draft object must
// have (DraftData), the clean-up a valid one gets before it is stored, and
// the errors. Which channels and users a draft may address is checked by the
// action, which can look them up.
import { ApiError, badRequest } from "../errors.ts";
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from "./limits.ts";
import { normalizeContent, truncate } from "./messages.ts";

/** Zulip's MAX_DRAFTS_IN_REGISTER_RESPONSE. */
export const MAX_DRAFTS_IN_REGISTER = 1000;

export const DRAFT_TYPES = ["stream", "private", ""] as const;
export type DraftType = (typeof DRAFT_TYPES)[number];

/** A draft as a client sends it, checked for shape only (the route's validator). */
export interface DraftData {
  type: DraftType;
  to: number[];
  topic: string;
  content: string;
  /** UNIX seconds, possibly fractional; undefined or null: now. */
  timestamp?: number | null;
}

/** Python's datetime cannot go past the year 9999; Zulip fails there with a server error, Parley refuses. */
const MAX_TIMESTAMP = 253402300799;

/** What a valid draft stores, before its recipient is resolved (Zulip's further_validated_draft_dict). */
export interface CleanDraft {
  type: DraftType;
  to: number[];
  topic: string;
  content: string;
  lastEditTimeMs: number;
}

/**
 * The checks and clean-up in Zulip's order: content as a message's (trailing
 * whitespace dropped, cut at 10,000 characters, no NUL), a timestamp not
 * before 1970 (default: now, kept to the microsecond as Zulip rounds it; Parley stores
 * milliseconds), and for channel drafts the topic (cut at 60 characters, no NUL) and exactly one
 * channel. Direct-message drafts keep no topic; a draft of type "" keeps neither topic nor recipients.
 */
export function cleanDraft(draft: DraftData, nowSeconds: number): CleanDraft {
  const content = normalizeContent(draft.content, MAX_MESSAGE_LENGTH);
  const timestamp = draft.timestamp ?? nowSeconds;
  if (timestamp < 0) throw badRequest("Timestamp must not be negative.");
  if (!(timestamp <= MAX_TIMESTAMP)) throw badRequest("Timestamp must not be after the year 9999.");
  const lastEditTimeMs = Math.round(timestamp * 1000);
  if (draft.type === "stream") {
    const topic = truncate(draft.topic, MAX_TOPIC_LENGTH, "...");
    if (topic.includes("\0")) throw badRequest("Topic must not contain null bytes");
    if (draft.to.length !== 1) throw badRequest("Must specify exactly 1 channel ID for channel messages");
    return { type: "stream", to: draft.to, topic, content, lastEditTimeMs };
  }
  if (draft.type === "private" && draft.to.length > 0) return { type: "private", to: [...new Set(draft.to)], topic: "", content, lastEditTimeMs };
  return { type: "", to: [], topic: "", content, lastEditTimeMs };
}

export function draftsDisabled(): ApiError {
  return badRequest("User has disabled synchronizing drafts.");
}

export function draftNotFound(): ApiError {
  return new ApiError(404, "BAD_REQUEST", "Draft does not exist");
}

/**
 * The draft object (Zulip's Draft.to_dict): `to` is the channel, or the other
 * participants of a direct-message conversation (oneself for a conversation
 * with oneself); the timestamp in whole seconds.
 */
export interface ApiDraft {
  id: number;
  type: DraftType;
  to: number[];
  topic: string;
  content: string;
  timestamp: number;
}

export function formatDraft(
  row: { id: number; user_id: number; topic: string; content: string; last_edit_time_ms: number },
  recipient: { channel_id: number | null; dm_user_ids: number[] | null } | null,
): ApiDraft {
  let type: DraftType = "";
  let to: number[] = [];
  if (recipient?.channel_id != null) {
    type = "stream";
    to = [recipient.channel_id];
  } else if (recipient?.dm_user_ids) {
    type = "private";
    const others = recipient.dm_user_ids.filter((id) => id !== row.user_id);
    to = others.length > 0 ? others : [row.user_id];
  }
  return { id: row.id, type, to, topic: row.topic, content: row.content, timestamp: Math.floor(row.last_edit_time_ms / 1000) };
}
