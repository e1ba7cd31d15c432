// Widgets (Zulip's zerver/lib/widget.py and the widget validators of
// zerver/lib/validator.py): which messages become polls and todo lists, the
// first ("widget") submessage they get, and what later submessages on them
// may contain. Pure rules; the messages are Zulip's, word for word, so
// clients that show them get what they would from Zulip.
import { badRequest } from "../errors.ts";
import { PY_WHITESPACE, pythonStrip } from "./text.ts";

/** Widgets a message's first word can start (Zulip's valid_widget_types). */
const CONTENT_WIDGET_TYPES = ["poll", "todo"] as const;

/** The content of a message's "widget" submessage. */
export interface WidgetContent {
  widget_type: string;
  extra_data: unknown;
}

export interface PollExtraData {
  question: string;
  options: string[];
}

export interface TodoExtraData {
  task_list_title: string;
  tasks: { task: string; desc: string }[];
}

/** Python's re.split(r"\s+|\n+", …): Unicode whitespace as Python counts it. */
const PY_SPACE_RUN = new RegExp(`${PY_WHITESPACE}+`, "u");
/** The line boundaries of Python's str.splitlines(). */
const LINE_BREAK = /\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/;
const ENDS_WITH_LINE_BREAK = /(?:\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029])$/;
/** A list marker before an option or task ("- ", "* "), removed as Zulip's re.sub(r"(\s*[-*]?\s*)", "", …, count=1) does. */
const LIST_MARKER = new RegExp(`^${PY_WHITESPACE}*[-*]?${PY_WHITESPACE}*`, "u");

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split(LINE_BREAK);
  if (ENDS_WITH_LINE_BREAK.test(text)) lines.pop();
  return lines;
}

/** The first line (the question or title) and the items after it, list markers removed, blank ones dropped. */
function titleAndItems(text: string): { title: string; items: string[] } {
  const lines = splitLines(text);
  let title = "";
  // As in Zulip, an empty first line is not a title and stays among the (skipped, blank) items.
  if (lines.length > 0 && lines[0] !== "") title = pythonStrip(lines.shift()!);
  const items = lines.map((line) => pythonStrip(line).replace(LIST_MARKER, "")).filter((item) => item !== "");
  return { title, items };
}

/**
 * The widget a message's content asks for (Zulip's get_widget_data): a
 * first word of `/poll` (question on the same line, options on the following
 * ones) or `/todo` (title, then tasks as "task: description"). Null for any
 * other message, which is nearly all of them, after one look at the first
 * character.
 */
export function widgetFromContent(content: string): WidgetContent | null {
  if (!content.startsWith("/")) return null;
  const firstWord = content.split(PY_SPACE_RUN, 1)[0]!;
  const type = firstWord.slice(1);
  if (!(CONTENT_WIDGET_TYPES as readonly string[]).includes(type)) return null;
  const { title, items } = titleAndItems(content.replace(firstWord, ""));
  if (type === "poll") {
    const extra: PollExtraData = { question: title, options: items };
    return { widget_type: "poll", extra_data: extra };
  }
  const tasks = items.map((item) => {
    const at = item.indexOf(": ");
    return at === -1 ? { task: pythonStrip(item), desc: "" } : { task: pythonStrip(item.slice(0, at)), desc: pythonStrip(item.slice(at + 2)) };
  });
  const extra: TodoExtraData = { task_list_title: title, tasks };
  return { widget_type: "todo", extra_data: extra };
}

/** The widget type named by a "widget" submessage's content, if it names one (Zulip's get_widget_type). */
export function widgetTypeOf(content: string): string | null {
  try {
    const data: unknown = JSON.parse(content);
    if (isDict(data) && typeof data.widget_type === "string") return data.widget_type;
  } catch {
    // Not JSON: no widget type.
  }
  return null;
}

// ---------------------------------------------------------------------------
// Validators with the messages of Zulip's zerver/lib/validator.py, which
// `POST /submessage` and the `widget_content` of `POST /messages` report.

type Check = (name: string, value: unknown) => void;

function isDict(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const checkString: Check = (name, value) => {
  if (typeof value !== "string") throw new WidgetDataError(`${name} is not a string`);
};

// Python's isinstance(True, int) holds, so Zulip would take `true` for 1; Parley
// refuses booleans, which no client sends and none could read back as a number.
const checkInt: Check = (name, value) => {
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new WidgetDataError(`${name} is not an integer`);
};

const checkBool: Check = (name, value) => {
  if (typeof value !== "boolean") throw new WidgetDataError(`${name} is not a boolean`);
};

function checkIntIn(allowed: readonly number[]): Check {
  return (name, value) => {
    checkInt(name, value);
    if (!allowed.includes(value as number)) throw new WidgetDataError(`Invalid ${name}`);
  };
}

function checkIntRange(low: number, high: number): Check {
  return (name, value) => {
    checkInt(name, value);
    if ((value as number) < low) throw new WidgetDataError(`${name} is too small`);
    if ((value as number) > high) throw new WidgetDataError(`${name} is too large`);
  };
}

function checkList(item: Check): Check {
  return (name, value) => {
    if (!Array.isArray(value)) throw new WidgetDataError(`${name} is not a list`);
    value.forEach((v, i) => item(`${name}[${i}]`, v));
  };
}

/** check_dict: required keys in order, then (for check_dict_only) no others. */
function checkDict(required: [string, Check][], options: { onlyListed?: boolean } = {}): Check {
  return (name, value) => {
    if (!isDict(value)) throw new WidgetDataError(`${name} is not a dict`);
    for (const [key, check] of required) {
      if (!Object.hasOwn(value, key)) throw new WidgetDataError(`${key} key is missing from ${name}`);
      check(`${name}["${key}"]`, value[key]);
    }
    if (options.onlyListed) {
      const extra = Object.keys(value).filter((key) => !required.some(([k]) => k === key));
      if (extra.length > 0) throw new WidgetDataError(`Unexpected arguments: ${extra.join(", ")}`);
    }
  };
}

/** A Django ValidationError of these validators: the message, for the caller to wrap. */
export class WidgetDataError extends Error {}

/** The highest option index (and todo task key) clients use (Zulip's MAX_IDX). */
export const MAX_IDX = 1000;

/**
 * `widget_content` of POST /messages (Zulip's check_widget_content): only
 * zform widgets may be given this way; polls and todo lists come from the
 * message's content.
 */
export function checkWidgetContent(value: unknown): WidgetContent {
  if (!isDict(value)) throw new WidgetDataError("widget_content is not a dict");
  if (!Object.hasOwn(value, "widget_type")) throw new WidgetDataError("widget_type is not in widget_content");
  if (!Object.hasOwn(value, "extra_data")) throw new WidgetDataError("extra_data is not in widget_content");
  const widgetType = value.widget_type;
  const extraData = value.extra_data;
  if (!isDict(extraData)) throw new WidgetDataError("extra_data is not a dict");
  if (widgetType === "zform") {
    if (!Object.hasOwn(extraData, "type")) throw new WidgetDataError("zform is missing type field");
    if (extraData.type === "choices") {
      const choice = checkDict([
        ["short_name", checkString],
        ["long_name", checkString],
        ["reply", checkString],
      ]);
      checkDict([
        ["type", checkString],
        ["heading", checkString],
        ["choices", checkList(choice)],
      ])("extra_data", extraData);
      return { widget_type: "zform", extra_data: extraData };
    }
    throw new WidgetDataError(`unknown zform type: ${stringOf(extraData.type)}`);
  }
  throw new WidgetDataError(`unknown widget type: ${stringOf(widgetType)}`);
}

/** A value in an error message, as Python's str() would show a JSON value. */
function stringOf(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A submessage on a poll (Zulip's validate_poll_data): a vote, a new option, or (by its author) a new question. */
export function validatePollData(data: unknown, isWidgetAuthor: boolean): void {
  checkDict([["type", checkString]])("poll data", data);
  const type = (data as Record<string, unknown>).type as string;
  if (type === "vote") {
    checkDict(
      [
        ["type", checkString],
        ["key", checkString],
        ["vote", checkIntIn([1, -1])],
      ],
      { onlyListed: true },
    )("poll data", data);
    return;
  }
  if (type === "question") {
    if (!isWidgetAuthor) throw new WidgetDataError("You can't edit a question unless you are the author.");
    checkDict(
      [
        ["type", checkString],
        ["question", checkString],
      ],
      { onlyListed: true },
    )("poll data", data);
    return;
  }
  if (type === "new_option") {
    checkDict(
      [
        ["type", checkString],
        ["option", checkString],
        ["idx", checkIntRange(0, MAX_IDX)],
      ],
      { onlyListed: true },
    )("poll data", data);
    return;
  }
  throw new WidgetDataError(`Unknown type for poll data: ${type}`);
}

/** A submessage on a todo list (Zulip's validate_todo_data): a new task, a strike, or (by its author) a new title. */
export function validateTodoData(data: unknown, isWidgetAuthor: boolean): void {
  checkDict([["type", checkString]])("todo data", data);
  const type = (data as Record<string, unknown>).type as string;
  if (type === "new_task") {
    checkDict(
      [
        ["type", checkString],
        ["key", checkIntRange(0, MAX_IDX)],
        ["task", checkString],
        ["desc", checkString],
        ["completed", checkBool],
      ],
      { onlyListed: true },
    )("todo data", data);
    return;
  }
  if (type === "strike") {
    checkDict(
      [
        ["type", checkString],
        ["key", checkString],
      ],
      { onlyListed: true },
    )("todo data", data);
    return;
  }
  if (type === "new_task_list_title") {
    if (!isWidgetAuthor) throw new WidgetDataError("You can't edit the task list title unless you are the author.");
    checkDict(
      [
        ["type", checkString],
        ["title", checkString],
      ],
      { onlyListed: true },
    )("todo data", data);
    return;
  }
  throw new WidgetDataError(`Unknown type for todo data: ${type}`);
}

/** `widget_content` of a send, parsed and checked, with Zulip's "Widgets: …" errors. */
export function parseWidgetContent(raw: string): WidgetContent {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest("Widgets: API programmer sent invalid JSON content");
  }
  try {
    return checkWidgetContent(value);
  } catch (error) {
    if (error instanceof WidgetDataError) throw badRequest(`Widgets: ${error.message}`);
    throw error;
  }
}

/**
 * JSON text as Python's json.dumps writes it by default, which is how Zulip
 * stores the widget submessage it makes: ", " and ": " separators, every
 * character outside printable ASCII escaped.
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(", ")}]`;
  if (isDict(value)) return `{${Object.entries(value).map(([k, v]) => `${pythonJsonDumps(k)}: ${pythonJsonDumps(v)}`).join(", ")}}`;
  if (typeof value === "string") {
    return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  return JSON.stringify(value);
}
