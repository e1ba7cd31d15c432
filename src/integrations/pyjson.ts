// JSON as Python's json module reads and writes it, for integrations whose
// messages print payload values the way Zulip (Python) does: integers and
// floats stay apart (1.0 prints as "1.0", 1e16 as "1e+16"), objects keep their
// key order (JavaScript objects put integer-like keys first), and dumps()
// escapes non-ASCII as json.dumps(ensure_ascii=True) does.

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

/** Parses JSON text; throws SyntaxError when it is not JSON. Integers too big for a double stay exact (bigint). */
export function pyJsonLoads(text: string): PyValue {
  let i = 0;
  const fail = (): never => {
    throw new SyntaxError(`Invalid JSON at position ${i}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const value = (): PyValue => {
    ws();
    const ch = text[i];
    if (ch === "{") {
      i++;
      const dict = new PyDict();
      ws();
      if (text[i] === "}") {
        i++;
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
          return dict;
        } else fail();
      }
    }
    if (ch === "[") {
      i++;
      const list: PyValue[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return list;
      }
      for (;;) {
        list.push(value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") {
          i++;
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

/** json.dumps(value, indent=indent) with Python's defaults (ensure_ascii, ", " / ": " separators). */
export function pyJsonDumps(value: PyValue, indent: number, level = 0): string {
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
  const inner = "\n" + " ".repeat(indent * (level + 1));
  const outer = "\n" + " ".repeat(indent * level);
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[${inner}${value.map((v) => pyJsonDumps(v, indent, level + 1)).join("," + inner)}${outer}]`;
  }
  if (value.entries.size === 0) return "{}";
  const items = [...value.entries].map(([k, v]) => `${dumpString(k)}: ${pyJsonDumps(v, indent, level + 1)}`);
  return `{${inner}${items.join("," + inner)}${outer}}`;
}
