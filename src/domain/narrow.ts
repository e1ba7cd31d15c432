// Narrows: the filters of GET /messages, /messages/matches_narrow and event
// queues. Parsing and canonical names live here; turning a narrow into SQL is
// in queries/messages.ts, into an event predicate in events/filter.ts.
import { ApiError, badRequest } from "../errors.ts";
import { checkListLength, MAX_NARROW_TERMS, MAX_USER_IDS } from "./limits.ts";

export interface NarrowTerm {
  operator: string;
  /** A name or email, an ID, or (dm) a list of user IDs. */
  operand: string | number | number[];
  negated: boolean;
}

/** Legacy operator names and the current ones (Zulip's canonicalize_operator). */
const CANONICAL_OPERATORS: Readonly<Record<string, string>> = {
  stream: "channel",
  streams: "channels",
  subject: "topic",
  "pm-with": "dm",
  pm_with: "dm",
};

/** Operators whose operand may be an integer ID. */
const ID_OPERATORS = new Set(["id", "sender", "channel", "stream", "dm-including", "group-pm-with", "with", "near"]);

export const MESSAGE_NARROW_OPERATORS = new Set([
  "channel",
  "channels",
  "topic",
  "dm",
  "dm-including",
  "group-pm-with",
  "in",
  "sender",
  "is",
  "has",
  "search",
  "id",
  "with",
  "near",
]);

export const IS_OPERANDS = new Set(["dm", "private", "starred", "mentioned", "alerted", "unread", "resolved", "followed", "muted"]);
export const HAS_OPERANDS = new Set(["link", "attachment", "image", "reaction"]);

/** Zulip's BadNarrowOperatorError: HTTP 400, code BAD_NARROW, the description in `desc`. */
export function badNarrow(description: string): ApiError {
  return new ApiError(400, "BAD_NARROW", `Invalid narrow operator: ${description}`, { desc: description });
}

export function canonicalOperator(operator: string): string {
  return CANONICAL_OPERATORS[operator] ?? operator;
}

/**
 * A narrow as clients send it: [operator, operand] pairs or
 * {operator, operand, negated} objects. Operators are canonicalized
 * ("stream" → "channel", "pm-with" → "dm", …) and "is:private" becomes "is:dm".
 */
export function parseNarrow(value: unknown, name: string): NarrowTerm[] {
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  checkListLength(value, name, { max: MAX_NARROW_TERMS });
  return value.map((item, i) => {
    const itemName = `${name}[${i}]`;
    let operator: unknown;
    let operand: unknown;
    let negated: unknown = false;
    if (Array.isArray(item)) {
      if (item.length !== 2) throw badRequest(`${itemName} should have exactly 2 items`);
      [operator, operand] = item;
    } else if (typeof item === "object" && item !== null) {
      ({ operator, operand, negated = false } = item as Record<string, unknown>);
    } else {
      throw badRequest(`${itemName} is not a list`);
    }
    if (typeof operator !== "string") throw badRequest(`${itemName}["operator"] is not a string`);
    if (typeof negated !== "boolean") throw badRequest(`${itemName}["negated"] is not a boolean`);
    const canonical = canonicalOperator(operator);
    let checked: NarrowTerm["operand"];
    if (typeof operand === "string") {
      checked = operand;
    } else if (Number.isSafeInteger(operand) && ID_OPERATORS.has(operator)) {
      checked = operand as number;
    } else if (canonical === "dm" && Array.isArray(operand) && operand.every((x) => Number.isSafeInteger(x))) {
      checked = operand as number[];
    } else {
      throw badRequest(`${itemName}["operand"] is not a string`);
    }
    // A dm operand names people, as a list of IDs or a comma-separated string.
    if (canonical === "dm") checkListLength(dmOperandItems(checked), `${itemName}["operand"]`, { max: MAX_USER_IDS });
    if (canonical === "is" && checked === "private") checked = "dm";
    return { operator: canonical, operand: checked, negated };
  });
}

/** User IDs or emails of a dm operand: a list of IDs, or a comma-separated string of emails or IDs. */
export function dmOperandItems(operand: NarrowTerm["operand"]): (number | string)[] {
  if (Array.isArray(operand)) return operand;
  if (typeof operand === "number") return [operand];
  return operand
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s.toLowerCase()));
}
