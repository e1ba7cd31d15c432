// Decoding JSON that clients send, safely: a bounded nesting depth (checked on
// the text, before JSON.parse, so nothing downstream — validators, settings
// merges, JSON.stringify — ever walks a value deep enough to exhaust the
// stack) and no NUL characters in decoded strings or object keys (PostgreSQL
// cannot store or compare NUL in text; no Zulip field means anything by it).
import { badRequest, type ApiError } from "../errors.ts";

/**
 * The deepest nesting of arrays and objects a JSON parameter may have. Zulip
 * has no such bound; the deepest value any endpoint takes (a group setting
 * change, {"new": {"direct_members": [1]}}) is 3 levels.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * The deepest nesting an incoming webhook's payload may have. Third parties'
 * payloads are deeper than client parameters (GitHub's and Sentry's nest
 * about 10 levels), and Zulip reads them with Python's json module, which
 * gives up near Python's recursion limit, 1000: a payload Zulip can read
 * passes, and the integrations' recursive code (pretty-printing, cloning,
 * JSON.stringify) stays far from exhausting the stack (it does past about
 * 2,000 levels).
 */
export const MAX_WEBHOOK_JSON_DEPTH = 1000;

const OPEN_BRACKET = 0x5b; // [
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACKET = 0x5d; // ]
const CLOSE_BRACE = 0x7d; // }
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * Whether JSON text nests arrays and objects more than `limit` deep. A single
 * pass over the text (brackets inside strings do not count); it does not check
 * that the text is valid JSON, which JSON.parse does afterwards.
 */
export function jsonNestingExceeds(text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return false;
}

/** Whether a decoded value nests arrays and objects more than `limit` deep (iteratively: the value may be arbitrarily deep). */
export function valueNestingExceeds(value: unknown, limit: number = MAX_JSON_DEPTH): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    if (depth + 1 > limit) return true;
    const children = Array.isArray(current) ? current : Object.values(current);
    for (const child of children) if (typeof child === "object" && child !== null) stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/**
 * Where a decoded JSON value holds a NUL character (in a string, or in an
 * object key), named as the validators name parts of a parameter
 * (`name[0]["key"]`; for a key, the object holding it); undefined if nowhere.
 * Iterative, first in document order.
 */
export function nulLocation(value: unknown, name: string): string | undefined {
  const stack: { value: unknown; path: string }[] = [{ value, path: name }];
  while (stack.length > 0) {
    const { value: current, path } = stack.pop()!;
    if (typeof current === "string") {
      if (current.includes("\u0000")) return path;
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: `${path}[${i}]` });
    } else if (typeof current === "object" && current !== null) {
      const entries = Object.entries(current);
      if (entries.some(([key]) => key.includes("\u0000"))) return path;
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i]![1], path: `${path}["${entries[i]![0]}"]` });
    }
  }
  return undefined;
}

/** A raw NUL, or a \u0000 escape that JSON.parse would turn into one. */
const NUL_IN_TEXT = /\u0000|\\u0000/i;

export function tooDeeplyNested(name: string, limit: number = MAX_JSON_DEPTH): ApiError {
  return badRequest(`${name} is nested too deeply (limit: ${limit} levels)`);
}

export function containsNul(name: string): ApiError {
  return badRequest(`${name} contains a NUL character`);
}

/**
 * JSON.parse for a client's parameter `name`: too deep → 400 naming it;
 * invalid JSON → `invalid()`'s error (or `undefined` is returned when
 * `invalid` is omitted, for values that may also be bare strings); a decoded
 * NUL anywhere → 400 naming where (`subscriptions[0]["description"]`), as
 * the validators would.
 */
export function decodeClientJson(text: string, name: string, invalid?: () => ApiError): unknown {
  if (jsonNestingExceeds(text)) throw tooDeeplyNested(name);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    if (invalid) throw invalid();
    return undefined;
  }
  // Only text with a NUL or a \u0000 escape can decode to a NUL: the common case costs one regex test.
  if (NUL_IN_TEXT.test(text)) {
    const where = nulLocation(value, name);
    if (where !== undefined) throw containsNul(where);
  }
  return value;
}
