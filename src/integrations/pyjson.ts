// JSON as Python's json module reads and writes it, for integrations whose
// messages print payload values the way Zulip (Python) does: integers and
// floats stay apart (1.0 prints as "1.0", 1e16 as "1e+16"), objects keep their
// key order (JavaScript objects put integer-like keys first), and dumps()
// escapes non-ASCII as json.dumps(ensure_ascii=True) does.
import { MAX_WEBHOOK_JSON_DEPTH } from "../domain/json.ts";

/** A JSON number written with a fraction or exponent: a Python float. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A JSON object with its keys in document order (a repeated key keeps its first place and its last value, like a dict). */
export class PyDict {
  readonly entries = new Map<string, PyValue>();
  get(key: string): PyValue | undefined {
    return this.entries.get(key);
  }
}

export type PyValue = null | boolean | number | bigint | string | PyFloat | PyDict | PyValue[];

/**
 * Parses JSON text; throws SyntaxError when it is not JSON, or nests arrays
 * and objects deeper than `maxDepth` (the parser recurses once per level;
 * the webhook route refuses deeper JSON before any integration sees it, so
 * this only meets text that is not JSON anyway). Integers too big for a
 * double stay exact (bigint).
 */
export function pyJsonLoads(text: string, maxDepth: number = MAX_WEBHOOK_JSON_DEPTH): PyValue {
  let i = 0;
  let depth = 0;
  const fail = (): never => {
    throw new SyntaxError(`Invalid JSON at position ${i}`);
  };
  const enter = () => {
    if (++depth > maxDepth) throw new SyntaxError(`JSON nested more than ${maxDepth} levels deep at position ${i}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const value = (): PyValue => {
    ws();
    const ch = text[i];
    if (ch === "{") {
      i++;
      enter();
      const dict = new PyDict();
      ws();
      if (text[i] === "}") {
        i++;
        depth--;
        return dict;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail();
        const key = string();
        ws();
        if (text[i] !== ":") fail();
        i++;
        dict.entries.set(key, value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") {
          i++;
          depth--;
          return dict;
        } else fail();
      }
    }
    if (ch === "[") {
      i++;
      enter();
      const list: PyValue[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        depth--;
        return list;
      }
      for (;;) {
        list.push(value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
          depth--;
          return list;
        } else fail();
      }
    }
    if (ch === '"') return string();
    if (text.startsWith("true", i)) return (i += 4), true;
    if (text.startsWith("false", i)) return (i += 5), false;
    if (text.startsWith("null", i)) return (i += 4), null;
    const match = /^-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
    if (!match) return fail();
    i += match[0].length;
    if (match[1] !== undefined || match[2] !== undefined) return new PyFloat(Number(match[0]));
    const n = Number(match[0]);
    return Number.isSafeInteger(n) ? n : BigInt(match[0]);
  };
  const string = (): string => {
    const start = i;
    i++;
    for (;;) {
      const c = text.charCodeAt(i);
      if (Number.isNaN(c) || c < 0x20) fail();
      if (c === 0x22) break;
      if (c === 0x5c) i++;
      i++;
    }
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const result = value();
  ws();
  if (i !== text.length) fail();
  return result;
}

/** Python's repr() of a float. */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, exp] = x.toExponential().split("e") as [string, string];
  const exponent = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (exponent >= 16 || exponent < -4) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${exponent < 0 ? "-" : "+"}${String(Math.abs(exponent)).padStart(2, "0")}`;
  }
  if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
  const intPart = digits.slice(0, exponent + 1).padEnd(exponent + 1, "0");
  const frac = digits.slice(exponent + 1);
  return `${sign}${intPart}.${frac === "" ? "0" : frac}`;
}

/** Python's str() of a parsed JSON value (what f-strings and str.format print). */
export function pyStr(value: PyValue): string {
  if (value === null) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  return pyRepr(value);
}

function pyRepr(value: PyValue): string {
  if (typeof value === "string") return `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'`;
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (value instanceof PyDict) return `{${[...value.entries].map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(", ")}}`;
  return pyStr(value);
}

function dumpString(text: string): string {
  let out = '"';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const ch = text[i]!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += ch;
  }
  return out + '"';
}

/** Where pyJsonWrite writes: a MessageText, or anything else with `write` and `full`. */
export interface TextSink {
  write(piece: string): void;
  readonly full: boolean;
}

function scalarJson(value: PyValue): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return dumpString(value);
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  if (value instanceof PyFloat) {
    const v = value.value;
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    return pyFloatRepr(v);
  }
  // An empty list or dict; json.dumps writes them without a line break.
  return Array.isArray(value) ? "[]" : "{}";
}

function isNonEmptyContainer(value: PyValue): value is PyValue[] | PyDict {
  return Array.isArray(value) ? value.length > 0 : value instanceof PyDict && value.entries.size > 0;
}

/** An open list or dict: its items are read one at a time, so a writer that stops early never touches the rest. */
interface Open {
  /** The next item (with its key, in a dict), or undefined after the last. */
  next: () => [string | undefined, PyValue] | undefined;
  close: string;
  first: boolean;
}

function open(value: PyValue[] | PyDict): Open {
  if (Array.isArray(value)) {
    let i = 0;
    return { next: () => (i < value.length ? [undefined, value[i++]!] : undefined), close: "]", first: true };
  }
  const entries = value.entries.entries();
  return { next: () => entries.next().value, close: "}", first: true };
}

/**
 * json.dumps(value, indent=indent) with Python's defaults (ensure_ascii,
 * ", " / ": " separators), written to `out` piece by piece and stopping as
 * soon as `out` is full. Iterative (the depth is the stack's, not the call
 * stack's). Returns how many values it visited: at most one more than the
 * pieces written, so bounded by what `out` takes, whatever the payload's size.
 */
export function pyJsonWrite(out: TextSink, value: PyValue, indent: number): number {
  let visited = 1;
  if (!isNonEmptyContainer(value)) {
    out.write(scalarJson(value));
    return visited;
  }
  out.write(Array.isArray(value) ? "[" : "{");
  const stack: Open[] = [open(value)];
  while (stack.length > 0 && !out.full) {
    const top = stack[stack.length - 1]!;
    const item = top.next();
    if (item === undefined) {
      stack.pop();
      out.write("\n" + " ".repeat(indent * stack.length) + top.close);
      continue;
    }
    const [key, child] = item;
    out.write((top.first ? "\n" : ",\n") + " ".repeat(indent * stack.length));
    top.first = false;
    if (key !== undefined) out.write(dumpString(key) + ": ");
    visited++;
    if (isNonEmptyContainer(child)) {
      out.write(Array.isArray(child) ? "[" : "{");
      stack.push(open(child));
    } else out.write(scalarJson(child));
  }
  return visited;
}

/** json.dumps(value, indent=indent) whole. */
export function pyJsonDumps(value: PyValue, indent: number): string {
  const pieces: string[] = [];
  pyJsonWrite({ write: (piece) => pieces.push(piece), full: false }, value, indent);
  return pieces.join("");
}
