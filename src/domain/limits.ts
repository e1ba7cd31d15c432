import { badRequest } from "../errors.ts";

// Length limits clients read from POST /register (max_*), as Zulip sets them.
export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;
export const MAX_STREAM_NAME_LENGTH = 60;
export const MAX_STREAM_DESCRIPTION_LENGTH = 1024;
export const MAX_CHANNEL_FOLDER_NAME_LENGTH = 60;
export const MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH = 1024;

/** Django's max_length message (MaxLengthValidator), for models whose full_clean Zulip reports; lengths in code points. */
export function maxLengthMessage(max: number, length: number): string {
  return `Ensure this value has at most ${max} characters (it has ${length}).`;
}

// Bounds on list parameters, declared with each parameter (check.list's
// `max`) and listed in docs/endpoints.md. Zulip has none of these (its only
// one is GET /messages' message_ids, MAX_MESSAGES_PER_FETCH in
// domain/messages.ts); each is far above what a client sends. Lists of IDs
// are looked up and written in chunks (storage/database.ts's inChunks), so a
// list at its bound works on SQLite (32,766 bound values per statement) and
// PostgreSQL (65,535) alike.

/** User IDs (or emails) naming people: group members, group-setting members, typing and message recipients, person-picker values, dm narrow operands. */
export const MAX_USER_IDS = 100_000;
/** User-group IDs: subgroups to add or remove, group-setting subgroups. */
export const MAX_GROUP_IDS = 100_000;
/** Message IDs of POST /messages/flags (GET /messages/matches_narrow takes MAX_MESSAGES_PER_FETCH, what one fetch returns). */
export const MAX_MESSAGE_IDS = 100_000;
/** People to subscribe or unsubscribe (principals): each is subscribed with queries of their own, so fewer than the other ID lists. */
export const MAX_PRINCIPALS = 10_000;
/**
 * Lists whose items are each checked or written with queries of their own:
 * channels to subscribe to or leave, subscription property changes,
 * invitation channels and groups, custom profile field values and orders,
 * channel folder orders, linkifier orders, alert words, event types.
 */
export const MAX_ITEMS_PER_REQUEST = 1_000;
/** Terms of a narrow: each is a condition of one statement (SQLite allows expressions 1,000 deep). */
export const MAX_NARROW_TERMS = 100;

/** The most items a list parameter may have, and optionally the error (Zulip's, where it has one) for longer lists. */
export interface ListBound {
  max: number;
  tooLong?: string;
}

/**
 * Refuses a list longer than its bound, before any item is looked at. Every
 * list parameter declares one (http/params.ts's check.list requires it), so
 * no request can make an action bind more values than it is written to handle.
 */
export function checkListLength(value: readonly unknown[], name: string, bound: ListBound): void {
  if (value.length > bound.max) throw badRequest(bound.tooLong ?? `${name} is too long (limit: ${bound.max} items)`);
}
