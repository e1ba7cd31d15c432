// Reading third-party payloads the way Zulip's handlers do (WildValue and
// its tame() checks in zerver/lib/validator.py): a payload missing a key or
// holding the wrong type fails with a message naming the field, e.g.
// "request['pull_request']['number'] is not an integer", instead of a crash.
// Two styles: the as*() checks on plain values, and Wild, which carries the
// path it took (the git integrations use it). Also the few Python string
// behaviours Zulip's message formats depend on (str(), rstrip(), title(),
// string.punctuation), so ported formats come out byte for byte.

import { PY_WHITESPACE } from "../domain/text.ts";
import { malformedJson, type WebhookResult } from "./integration.ts";

/** A payload that does not have the shape the handler needs: a 400 with this message. */
export class PayloadError extends Error {}

/** Zulip's UnsupportedWebhookEventTypeError: HTTP 200, nothing posted, "The 'X' event isn't currently supported…". */
export class UnsupportedEventError extends Error {
  constructor(readonly event: string) {
    super(`unsupported event ${event}`);
  }
}

/** Python's repr() of a dict key, as Zulip's error messages show it. */
function pyRepr(key: string | number): string {
  if (typeof key === "number") return String(key);
  const quote = key.includes("'") && !key.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of key) {
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += "\\" + quote;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else out += ch;
  }
  return out + quote;
}

export type Dict = Record<string, unknown>;

export function isDict(value: unknown): value is Dict {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function asDict(value: unknown, name: string): Dict {
  if (!isDict(value)) throw new PayloadError(`${name} is not a dict`);
  return value;
}

export function asList(value: unknown, name: string): unknown[] {
  if (!Array.isArray(value)) throw new PayloadError(`${name} is not a list`);
  return value;
}

export function asString(value: unknown, name: string): string {
  if (typeof value !== "string") throw new PayloadError(`${name} is not a string`);
  return value;
}

/** Python truthiness of a JSON value: null, false, 0, "", [] and {} are false. */
export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (isDict(value)) return Object.keys(value).length > 0;
  return true;
}

/** Python's str() of a JSON value, as `"{}".format(x)` shows it. */
export function pyStr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  return JSON.stringify(value);
}

/** A value inside the payload, with the path that reached it. */
export class Wild {
  constructor(
    readonly varName: string,
    readonly value: unknown,
  ) {}

  static root(value: unknown): Wild {
    return new Wild("request", value);
  }

  private needDict(): Record<string, unknown> {
    if (!isDict(this.value)) throw new PayloadError(`${this.varName} is not a dict`);
    return this.value;
  }

  private needList(): unknown[] {
    if (!Array.isArray(this.value)) throw new PayloadError(`${this.varName} is not a list`);
    return this.value;
  }

  /** Python `bool(x)`. */
  get truthy(): boolean {
    return truthy(this.value);
  }

  /** `key in x` (x must be a dict). */
  has(key: string): boolean {
    return Object.hasOwn(this.needDict(), key);
  }

  /** `x[key]`: the key must exist. */
  at(key: string | number): Wild {
    const name = `${this.varName}[${pyRepr(key)}]`;
    if (typeof key === "number") {
      const list = this.needList();
      if (key >= list.length || key < -list.length) throw new PayloadError(`${name} is missing`);
      return new Wild(name, list[key < 0 ? list.length + key : key]);
    }
    const dict = this.needDict();
    if (!Object.hasOwn(dict, key)) throw new PayloadError(`${name} is missing`);
    return new Wild(name, dict[key]);
  }

  /** `x.get(key, default)`. */
  get(key: string, fallback: unknown = null): Wild {
    const dict = this.needDict();
    return new Wild(`${this.varName}[${pyRepr(key)}]`, Object.hasOwn(dict, key) ? dict[key] : fallback);
  }

  keys(): string[] {
    return Object.keys(this.needDict());
  }

  /** Iterating `for item in x` (x must be a list). */
  items(): Wild[] {
    return this.needList().map((item, i) => new Wild(`${this.varName}[${i}]`, item));
  }

  /** The number of entries of a dict or list, or characters of a string. */
  get length(): number {
    if (Array.isArray(this.value)) return this.value.length;
    if (isDict(this.value)) return Object.keys(this.value).length;
    if (typeof this.value === "string") return [...this.value].length;
    throw new PayloadError(`${this.varName} does not have a length`);
  }

  str(): string {
    if (typeof this.value !== "string") throw new PayloadError(`${this.varName} is not a string`);
    return this.value;
  }

  strOrNull(): string | null {
    return this.value === null ? null : this.str();
  }

  int(): number {
    if (typeof this.value !== "number" || !Number.isInteger(this.value)) {
      throw new PayloadError(`${this.varName} is not an integer`);
    }
    return this.value;
  }

  bool(): boolean {
    if (typeof this.value !== "boolean") throw new PayloadError(`${this.varName} is not a boolean`);
    return this.value;
  }
}

/** Parses a `Json[bool]` query parameter as Zulip's typed_endpoint does. */
export function jsonBoolParam(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined) return fallback;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new PayloadError(`${name} is not valid JSON`);
  }
  if (typeof parsed !== "boolean") throw new PayloadError(`${name} is not a boolean`);
  return parsed;
}

/** Runs a handler body, turning a malformed payload or an unsupported event into the result Zulip answers with. */
export function runHandler(body: () => WebhookResult): WebhookResult {
  try {
    return body();
  } catch (error) {
    if (error instanceof MalformedJsonError) return malformedJson();
    if (error instanceof PayloadError) return { kind: "error", message: error.message };
    if (error instanceof UnsupportedEventError) return { kind: "unsupported", event: error.event };
    throw error;
  }
}

/** The JSON body as Zulip's JsonBodyPayload reads it; a body that is not JSON gives "Malformed JSON" (see runHandler). */
export function jsonPayload(payload: unknown): Wild {
  if (payload === undefined) throw new MalformedJsonError();
  return Wild.root(payload);
}

export class MalformedJsonError extends PayloadError {
  constructor() {
    super("Malformed JSON");
  }
}

/** Zulip's MissingHTTPEventHeaderError. */
export function missingHeaderResult(header: string): WebhookResult {
  return {
    kind: "error",
    message: `Missing the HTTP event header '${header}'`,
    code: "MISSING_HTTP_EVENT_HEADER",
    extra: { header },
  };
}

// Python string behaviour -----------------------------------------------------

const TRAILING_SPACE = new RegExp(`${PY_WHITESPACE}+$`, "u");

/** Python `s.rstrip()`. */
export function pyRstrip(text: string): string {
  return text.replace(TRAILING_SPACE, "");
}

/** Python's string.punctuation. */
const PUNCTUATION = new Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");

/** Whether the last character of `text` is ASCII punctuation (`text[-1] in string.punctuation`). */
export function endsWithPunctuation(text: string): boolean {
  const chars = [...text];
  const last = chars[chars.length - 1];
  return last !== undefined && PUNCTUATION.has(last);
}

function isCased(ch: string): boolean {
  return ch.toLowerCase() !== ch.toUpperCase();
}

/** Python `s.title()`: the first cased letter of each run upper-case, the rest lower-case. */
export function pyTitle(text: string): string {
  let out = "";
  let previousCased = false;
  for (const ch of text) {
    if (isCased(ch)) {
      out += previousCased ? ch.toLowerCase() : ch.toUpperCase();
      previousCased = true;
    } else {
      out += ch;
      previousCased = false;
    }
  }
  return out;
}
