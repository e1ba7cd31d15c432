// Declared request parameters, Zulip style: each endpoint lists its parameters
// once (type, required or default) and this module converts the raw strings,
// fills defaults and produces Zulip's error messages. Lists, objects and
// booleans arrive JSON-encoded; integers as decimal strings; strings raw.
import { checkListLength, MAX_GROUP_IDS, MAX_USER_IDS, type ListBound } from "../domain/limits.ts";
import { containsNul, decodeClientJson, tooDeeplyNested, valueNestingExceeds } from "../domain/json.ts";
import { requiredText } from "../domain/text.ts";
import { badRequest, missingArgument } from "../errors.ts";

/** Checks a JSON-decoded value and returns it typed; `name` is used in error messages. */
export type Validator<T> = (value: unknown, name: string) => T;

/** A group-setting value: a group ID, or {direct_members, direct_subgroups}. */
const groupSettingValue: Validator<number | { direct_members: number[]; direct_subgroups: number[] }> = (value, name) => {
  if (typeof value === "number") return check.int(value, name);
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return check.object({
      direct_members: check.list(check.int, { max: MAX_USER_IDS }),
      direct_subgroups: check.list(check.int, { max: MAX_GROUP_IDS }),
    })(value, name);
  }
  throw badRequest(`${name} does not have the expected format`);
};

/** NUL cannot be stored in PostgreSQL text and means nothing in any Zulip field: refuse it everywhere. */
function checkNoNul(value: string, name: string): string {
  if (value.includes("\u0000")) throw containsNul(name);
  return value;
}

export { checkListLength, type ListBound };

export const check = {
  int: ((value, name) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) throw badRequest(`${name} is not an integer`);
    return value;
  }) as Validator<number>,

  bool: ((value, name) => {
    if (typeof value !== "boolean") throw badRequest(`${name} is not a boolean`);
    return value;
  }) as Validator<boolean>,

  string: ((value, name) => {
    if (typeof value !== "string") throw badRequest(`${name} is not a string`);
    return checkNoNul(value, name);
  }) as Validator<string>,

  /** A JSON list; `bound` is required, so that every list parameter has a documented upper bound. */
  list<T>(item: Validator<T>, bound: ListBound): Validator<T[]> {
    return (value, name) => {
      if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
      checkListLength(value, name, bound);
      return value.map((v, i) => item(v, `${name}[${i}]`));
    };
  },

  /** A JSON object with declared keys; unknown keys are rejected, as Zulip's validators do. */
  object<S extends Record<string, Validator<unknown>>>(
    shape: S,
    optional: ReadonlyArray<keyof S> = [],
  ): Validator<{ [K in keyof S]: ReturnType<S[K]> }> {
    return (value, name) => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
      const record = value as Record<string, unknown>;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(record)) {
        if (!Object.hasOwn(shape, key)) throw badRequest(`${name} has an unexpected key '${key}'`);
      }
      for (const [key, validate] of Object.entries(shape)) {
        if (record[key] === undefined) {
          if (optional.includes(key)) continue;
          throw badRequest(`${name} is missing key '${key}'`);
        }
        out[key] = validate(record[key], `${name}["${key}"]`);
      }
      return out as { [K in keyof S]: ReturnType<S[K]> };
    };
  },

  nullable<T>(inner: Validator<T>): Validator<T | null> {
    return (value, name) => (value === null ? null : inner(value, name));
  },

  groupSetting: groupSettingValue,

  /** PATCH form of a group setting: {new, old?}; `old` guards against concurrent edits. */
  groupSettingChange: ((value, name) => {
    if (typeof value !== "object" || value === null || Array.isArray(value) || !("new" in value)) {
      throw badRequest(`${name} does not have the expected format`);
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key !== "new" && key !== "old") throw badRequest(`${name} does not have the expected format`);
    }
    return {
      new: groupSettingValue(record.new, `${name}.new`),
      ...(record.old !== undefined ? { old: groupSettingValue(record.old, `${name}.old`) } : {}),
    };
  }) as Validator<{
    new: number | { direct_members: number[]; direct_subgroups: number[] };
    old?: number | { direct_members: number[]; direct_subgroups: number[] };
  }>,

  oneOf<T extends string | number>(allowed: readonly T[]): Validator<T> {
    return (value, name) => {
      if (!allowed.includes(value as T)) throw badRequest(`Invalid ${name}`);
      return value as T;
    };
  },
};

type Mode = "required" | "default" | "optional";

/** One declared parameter: how to convert the raw string, and what to do when it is absent. */
export class Param<T, M extends Mode = "optional"> {
  constructor(
    readonly convert: (raw: string, name: string) => T,
    readonly mode: M,
    readonly defaultValue?: T,
  ) {}

  required(): Param<T, "required"> {
    return new Param(this.convert, "required");
  }

  default(value: T): Param<T, "default"> {
    return new Param(this.convert, "default", value);
  }

}

/** A JSON-encoded parameter: nesting bounded before parsing, NUL refused in what it decodes to. */
function parseJson(raw: string, name: string): unknown {
  return decodeClientJson(raw, name, () => badRequest(`Argument "${name}" is not valid JSON.`));
}

export const param = {
  /** Raw string, as Zulip passes strings: not JSON-decoded. */
  string(): Param<string> {
    return new Param((raw, name) => checkNoNul(raw, name), "optional");
  },

  int(): Param<number> {
    return new Param((raw, name) => {
      if (!/^-?\d+$/.test(raw.trim())) throw badRequest(`${name} is not an integer`);
      const value = Number(raw.trim());
      if (!Number.isSafeInteger(value)) throw badRequest(`${name} is not an integer`);
      return value;
    }, "optional");
  },

  bool(): Param<boolean> {
    return new Param((raw, name) => check.bool(parseJson(raw, name), name), "optional");
  },

  /** A JSON-encoded value checked by a validator (lists, objects, nullable values). */
  json<T>(validator: Validator<T>): Param<T> {
    return new Param((raw, name) => validator(parseJson(raw, name), name), "optional");
  },

  /**
   * A value clients send either JSON-encoded or as a bare string (e.g.
   * message_retention_days: 30 or "unlimited"), checked by a validator.
   */
  jsonOrString<T>(validator: Validator<T>): Param<T> {
    return new Param((raw, name) => {
      checkNoNul(raw, name);
      // Not valid JSON: a bare string.
      const decoded = decodeClientJson(raw, name);
      return validator(decoded === undefined ? raw : decoded, name);
    }, "optional");
  },

  /**
   * typed_endpoint's StringConstraints(strip_whitespace=True, min_length=1,
   * max_length=…): the endpoint gets the value stripped; blank is refused.
   */
  nonBlank(maxLength?: number): Param<string> {
    return new Param((raw, name) => requiredText(checkNoNul(raw, name), name, maxLength), "optional");
  },

  /** One of a fixed set of raw strings. */
  choice<T extends string>(allowed: readonly T[]): Param<T> {
    return new Param((raw, name) => {
      if (!allowed.includes(raw as T)) throw badRequest(`Invalid ${name}`);
      return raw as T;
    }, "optional");
  },
};

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ParamShape = Record<string, Param<any, Mode>>;

export type ParamsOf<S extends ParamShape> = {
  [K in keyof S]: S[K] extends Param<infer T, infer M> ? (M extends "optional" ? T | undefined : T) : never;
};

export interface ParsedParams<S extends ParamShape> {
  values: ParamsOf<S>;
  /** Names the request sent that the endpoint does not declare. */
  ignored: string[];
}

/**
 * Converts raw request values by the declaration. `pathParams` come from the
 * URL and are never reported as ignored.
 */
export function parseParams<S extends ParamShape>(
  shape: S,
  raw: Readonly<Record<string, string>>,
  pathParamNames: readonly string[] = [],
): ParsedParams<S> {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(shape)) {
    const rawValue = raw[name];
    if (rawValue === undefined) {
      if (spec.mode === "required") throw missingArgument(name);
      values[name] = spec.defaultValue;
      continue;
    }
    values[name] = spec.convert(rawValue, name);
  }
  const ignored = Object.keys(raw).filter((name) => !Object.hasOwn(shape, name) && !pathParamNames.includes(name));
  return { values: values as ParamsOf<S>, ignored };
}

/**
 * Flattens the query string and body into one name → raw string map. Body
 * values win over query values; for a repeated name the last value counts, as
 * in Django. A JSON request body is accepted too: its non-string values are
 * re-encoded so that they parse like form fields.
 */
export function collectRawParams(query: unknown, body: unknown, bodyIsJson: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const source of [query, body]) {
    if (typeof source !== "object" || source === null || Array.isArray(source) || Buffer.isBuffer(source)) continue;
    const repeatedAsArray = !(bodyIsJson && source === body);
    for (const [name, value] of Object.entries(source as Record<string, unknown>)) {
      const last = Array.isArray(value) && repeatedAsArray ? value[value.length - 1] : value;
      if (last === undefined) continue;
      if (typeof last === "string") out[name] = last;
      else if (Buffer.isBuffer(last)) continue; // uploaded files are read by the endpoints that take them
      // JSON.stringify recurses: a value from a JSON body is measured (iteratively) first.
      else if (valueNestingExceeds(last)) throw tooDeeplyNested(name);
      else out[name] = JSON.stringify(last);
    }
  }
  return out;
}
