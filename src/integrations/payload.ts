// Reading third-party payloads: the shape checks Zulip's WildValue.tame()
// makes, failing with a message naming the field instead of a crash.

export class PayloadError extends Error {}

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
