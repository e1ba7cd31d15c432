// User status rules (Zulip's zerver/lib/user_status.py and the status views
// in views/presence.py): which changes a request asks for, the emoji checks
// reactions use, and the one serializer of a status that GET
// /users/{user_id}/status, POST /register and `user_status` events share.
// "Away" is the inverse of the presence_enabled personal setting, as in
// Zulip, where it survives only for older clients.
import { badRequest, type ApiError } from "../errors.ts";
import { unicodeEmojiCode } from "../markdown/emoji.ts";
import { checkEmojiRequest, emojiDataForName, normalizeReactionType, ReactionType, type CustomEmojiFacts } from "./emoji.ts";
import { pythonStrip } from "./text.ts";

/** Zulip's limit on status_text (StringConstraints(max_length=60)). */
export const MAX_STATUS_TEXT_LENGTH = 60;

/** The status parameters as the client sent them (undefined: not sent). */
export interface StatusRequest {
  statusText?: string | undefined;
  emojiName?: string | undefined;
  emojiCode?: string | undefined;
  reactionType?: string | undefined;
}

/** What to store: only the parts the request changes. An emoji of "" clears it. */
export interface StatusChange {
  statusText?: string;
  emoji?: { name: string; code: string; reactionType: string };
}

/** status_text as typed_endpoint hands it over: stripped, then at most 60 code points. */
export function checkStatusText(raw: string): string {
  const text = pythonStrip(raw);
  if ([...text].length > MAX_STATUS_TEXT_LENGTH) throw badRequest(`status_text is too long (limit: ${MAX_STATUS_TEXT_LENGTH} characters)`);
  return text;
}

export function noNewValues(): ApiError {
  return badRequest("Client did not pass any new values.");
}

/**
 * Zulip's check_update_user_status, minus `away` (the caller checks whether
 * anything at all was sent). An empty emoji_name clears the emoji whatever
 * code and type come with it; a name alone takes its current code and type;
 * a code or type without a name is refused; a new emoji must be one a
 * reaction could use.
 */
export function statusChange(
  request: StatusRequest,
  custom: { byId: ReadonlyMap<string, CustomEmojiFacts>; activeByName: ReadonlyMap<string, CustomEmojiFacts> },
): StatusChange {
  const change: StatusChange = {};
  if (request.statusText !== undefined) change.statusText = checkStatusText(request.statusText);
  const { emojiName } = request;
  let emojiCode = request.emojiCode;
  let reactionType = request.reactionType === undefined ? undefined : normalizeReactionType(request.reactionType);
  if (emojiName === "") {
    change.emoji = { name: "", code: "", reactionType: ReactionType.UNICODE };
  } else if (emojiName !== undefined) {
    if (emojiCode === undefined || reactionType === undefined) {
      const data = emojiDataForName(emojiName, custom.activeByName);
      emojiCode ??= data.emojiCode;
      reactionType ??= data.reactionType;
    }
    checkEmojiRequest(emojiName, emojiCode, reactionType, custom.byId);
    if (reactionType === ReactionType.UNICODE) emojiCode = unicodeEmojiCode(emojiCode);
    change.emoji = { name: emojiName, code: emojiCode, reactionType };
  } else if (reactionType || emojiCode) {
    // Empty strings count as not sent here, as in Zulip (a Python truth test).
    throw badRequest("Client must pass emoji_name if they pass either emoji_code or reaction_type.");
  }
  return change;
}

/** A status as the API shows it: only what is set (Zulip's format_user_status). */
export interface ApiUserStatus {
  away?: true;
  status_text?: string;
  emoji_name?: string;
  emoji_code?: string;
  reaction_type?: string;
}

export interface StoredStatus {
  status_text: string;
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
}

export function formatUserStatus(row: StoredStatus, presenceEnabled: boolean): ApiUserStatus {
  const status: ApiUserStatus = {};
  if (!presenceEnabled) status.away = true;
  if (row.status_text !== "") status.status_text = row.status_text;
  if (row.emoji_name !== "") {
    status.emoji_name = row.emoji_name;
    status.emoji_code = row.emoji_code;
    status.reaction_type = row.reaction_type;
  }
  return status;
}

/** The `user_status` event: the user and exactly the parts the request changed. */
export function userStatusEvent(userId: number, change: StatusChange, away: boolean | undefined): Record<string, unknown> & { type: string } {
  return {
    type: "user_status",
    user_id: userId,
    ...(away !== undefined ? { away } : {}),
    ...(change.statusText !== undefined ? { status_text: change.statusText } : {}),
    ...(change.emoji !== undefined ? { emoji_name: change.emoji.name, emoji_code: change.emoji.code, reaction_type: change.emoji.reactionType } : {}),
  };
}
