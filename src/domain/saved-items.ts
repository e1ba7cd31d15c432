// Pure rules of two per-user features: saved snippets (Zulip's
// models/saved_snippets.py) and navigation views (views/navigation_views.py):
// the text constraints typed_endpoint applies to their parameters, the
// built-in view fragments, and the errors Zulip gives.
import { ApiError, badRequest } from "../errors.ts";
import { MAX_MESSAGE_LENGTH } from "./limits.ts";

/** Zulip's SavedSnippet.MAX_TITLE_LENGTH. */
export const MAX_SNIPPET_TITLE_LENGTH = 60;
/** A snippet's content is limited like a message (settings.MAX_MESSAGE_LENGTH). */
export const MAX_SNIPPET_CONTENT_LENGTH = MAX_MESSAGE_LENGTH;

/**
 * Views the web app has built in (Zulip's BUILT_IN_VIEW_FRAGMENTS). A user's
 * row for one of them only configures it, so it may not have a name.
 */
export const BUILT_IN_VIEW_FRAGMENTS: readonly string[] = [
  "inbox",
  "recent",
  "feed",
  "drafts",
  // Reactions
  "narrow/has/reaction/sender/me",
  // Mentions
  "narrow/is/mentioned",
  // Starred messages
  "narrow/is/starred",
  "scheduled",
  "reminders",
];

export function isBuiltInViewFragment(fragment: string): boolean {
  return BUILT_IN_VIEW_FRAGMENTS.includes(fragment);
}

export function savedSnippetNotFound(): ApiError {
  return new ApiError(404, "BAD_REQUEST", "Saved snippet does not exist.");
}

export function navigationViewNotFound(): ApiError {
  return new ApiError(404, "BAD_REQUEST", "Navigation view does not exist.");
}

export function navigationViewExists(): ApiError {
  return badRequest("Navigation view already exists.");
}

/**
 * The most bytes a view's fragment may have. Zulip sets no limit (a
 * TextField), but the fragment is unique per user, and PostgreSQL refuses an
 * index entry over about 2,700 bytes: past it the insert failed with a 500.
 * A channel-and-topic fragment, percent-encoded, stays well within it.
 */
export const MAX_VIEW_FRAGMENT_BYTES = 2000;

export function checkViewFragment(fragment: string): void {
  if (Buffer.byteLength(fragment, "utf8") > MAX_VIEW_FRAGMENT_BYTES) throw badRequest(`fragment is too long (limit: ${MAX_VIEW_FRAGMENT_BYTES} bytes)`);
}

/** A new view: built-in ones take no name, custom ones need one. */
export function checkNewViewName(fragment: string, name: string | undefined): void {
  if (isBuiltInViewFragment(fragment)) {
    if (name !== undefined) throw badRequest("Built-in views cannot have a custom name.");
  } else if (name === undefined) {
    throw badRequest("Custom views must have a valid name.");
  }
}

/** A rename: built-in views take no name (checked before the view is looked up, as in Zulip). */
export function checkViewRename(fragment: string, name: string | undefined): void {
  if (name !== undefined && isBuiltInViewFragment(fragment)) throw badRequest("Built-in views cannot have a custom name.");
}
