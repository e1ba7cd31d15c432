// Custom profile fields: the pure rules (Zulip's models/custom_profile_fields.py,
// views/custom_profile_fields.py, lib/external_accounts.py and the validators
// of lib/validator.py). Checks that need the database (label uniqueness, the
// summary limit, user IDs of a person picker) live in the actions; every
// message here is Zulip's, word for word.
import { badRequest } from "../errors.ts";
import { pythonStrip } from "./text.ts";
import { checkListLength, MAX_USER_IDS } from "./limits.ts";

export const FieldType = {
  SHORT_TEXT: 1,
  LONG_TEXT: 2,
  SELECT: 3,
  DATE: 4,
  URL: 5,
  USER: 6,
  EXTERNAL_ACCOUNT: 7,
  PRONOUNS: 8,
} as const;

export const FIELD_TYPES: readonly number[] = Object.values(FieldType);

export const NAME_MAX_LENGTH = 40;
export const HINT_MAX_LENGTH = 80;
export const MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS = 2;
/** check_short_string / check_long_string. */
export const SHORT_VALUE_MAX_LENGTH = 50;
export const LONG_VALUE_MAX_LENGTH = 500;

/** The external accounts Zulip knows: their label and URL come from here, not from the request. */
export const DEFAULT_EXTERNAL_ACCOUNTS: Readonly<Record<string, { text: string; name: string; hint: string; url_pattern: string }>> = {
  twitter: { text: "Twitter", name: "Twitter username", hint: "", url_pattern: "https://twitter.com/%(username)s" },
  github: { text: "GitHub", name: "GitHub username", hint: "", url_pattern: "https://github.com/%(username)s" },
};

/** Zulip's ProfileFieldData: option key → {text, order}, or {subtype, url_pattern?}. */
export type FieldData = Record<string, unknown>;

/** Values whose Markdown is rendered (Zulip's is_renderable). */
export function isRenderable(fieldType: number): boolean {
  return fieldType === FieldType.SHORT_TEXT || fieldType === FieldType.LONG_TEXT;
}

/** Fields that store field_data (the others keep ""). */
export function hasFieldData(fieldType: number): boolean {
  return fieldType === FieldType.SELECT || fieldType === FieldType.EXTERNAL_ACCOUNT;
}

/** Length as Python counts it: code points. */
const length = (s: string): number => [...s].length;

function cappedString(value: unknown, name: string, max: number): string {
  if (typeof value !== "string") throw badRequest(`${name} is not a string`);
  if (length(value) > max) throw badRequest(`${name} is too long (limit: ${max} characters)`);
  return value;
}

function requiredString(value: unknown, name: string): string {
  if (typeof value !== "string") throw badRequest(`${name} is not a string`);
  if (pythonStrip(value) === "") throw badRequest(`${name} cannot be blank.`);
  return value;
}

/** check_dict_only: required and optional keys checked in order, then no other keys. */
function dictOnly(value: unknown, name: string, required: [string, (v: unknown, n: string) => unknown][], optional: [string, (v: unknown, n: string) => unknown][] = []): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
  const record = value as Record<string, unknown>;
  for (const [key, check] of required) {
    if (!Object.hasOwn(record, key)) throw badRequest(`${key} key is missing from ${name}`);
    check(record[key], `${name}["${key}"]`);
  }
  for (const [key, check] of optional) if (Object.hasOwn(record, key)) check(record[key], `${name}["${key}"]`);
  const known = new Set([...required, ...optional].map(([k]) => k));
  const extra = Object.keys(record).filter((k) => !known.has(k));
  if (extra.length > 0) throw badRequest(`Unexpected arguments: ${extra.join(", ")}`);
  return record;
}

/**
 * Django's URLValidator, as used by check_url: http(s) or ftp(s), a host that
 * is a domain with a top-level domain, localhost or an IP address, an optional
 * port, and no whitespace.
 */
export function isValidUrl(value: string): boolean {
  if (value.length > 2048 || /\s/.test(value)) return false;
  const match = /^(?:https?|ftps?):\/\/(?:[^\s:@/]+(?::[^\s:@/]*)?@)?([^/?#]+?)(?::(\d{1,5}))?(?:[/?#][^\s]*)?$/i.exec(value);
  if (!match) return false;
  const host = match[1]!;
  if (/^\[[0-9a-f:.]+\]$/i.test(host)) return host.includes(":");
  if (/^\d{1,3}(?:\.\d{1,3}){3}$/.test(host)) return host.split(".").every((part) => Number(part) <= 255);
  if (host.toLowerCase() === "localhost") return true;
  const labels = host.replace(/\.$/, "").split(".");
  if (labels.length < 2) return false;
  const tld = labels[labels.length - 1]!;
  if (!/^(?:[a-z\u00a1-\uffff]{2,63}|xn--[a-z0-9]{1,59})$/i.test(tld)) return false;
  return labels.slice(0, -1).every((l) => /^[a-z0-9\u00a1-\uffff](?:[a-z0-9\u00a1-\uffff-]{0,61}[a-z0-9\u00a1-\uffff])?$/i.test(l));
}

/** check_date: an ISO calendar date, written exactly as date.isoformat() writes it (YYYY-MM-DD). */
export function isValidDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function checkExternalUrlPattern(value: unknown, name: string): string {
  if (typeof value !== "string") throw badRequest(`${name} is not a string`);
  if (value === "") return value;
  if (value.split("%(username)s").length - 1 !== 1) throw badRequest("URL pattern must contain '%(username)s'.");
  if (!isValidUrl(value.replace("%(username)s", "username"))) throw badRequest(`${name} is not a URL`);
  return value;
}

/** validate_select_field_data: every option {text, order}, texts distinct; at least one option. */
function checkSelectFieldData(data: FieldData): void {
  if (Object.keys(data).length < 1) throw badRequest("Field must have at least one choice.");
  const texts = new Set<string>();
  for (const [key, option] of Object.entries(data)) {
    if (pythonStrip(key) === "") throw badRequest("'value' cannot be blank.");
    const valid = dictOnly(option, "field_data", [
      ["text", requiredString],
      ["order", requiredString],
    ]);
    texts.add(valid.text as string);
  }
  if (texts.size !== Object.keys(data).length) throw badRequest("Field must not have duplicate choices.");
}

/** validate_external_account_field_data. */
function checkExternalAccountFieldData(data: FieldData): void {
  dictOnly(data, "field_data", [["subtype", requiredString]], [["url_pattern", checkExternalUrlPattern]]);
  const subtype = data.subtype as string;
  if (Object.hasOwn(DEFAULT_EXTERNAL_ACCOUNTS, subtype)) return;
  if (subtype !== "custom") throw badRequest("Invalid external account type");
  if (!Object.hasOwn(data, "url_pattern")) throw badRequest("Custom external account must define URL pattern");
}

/** The field_data parameter's own shape (ProfileFieldData): an object whose values are strings or objects of strings. */
export function checkFieldDataShape(value: unknown, name: string): FieldData {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (typeof item === "string") continue;
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw badRequest(`${name}["${key}"] is not a string or a dict`);
    for (const [inner, text] of Object.entries(item as Record<string, unknown>)) {
      if (typeof text !== "string") throw badRequest(`${name}["${key}"]["${inner}"] is not a string`);
    }
  }
  return value as FieldData;
}

/** A field of type 7 whose subtype is one of DEFAULT_EXTERNAL_ACCOUNTS (label and hint fixed). */
export function isDefaultExternalField(fieldType: number, data: FieldData): boolean {
  return fieldType === FieldType.EXTERNAL_ACCOUNT && typeof data.subtype === "string" && data.subtype !== "custom";
}

export interface FieldDefinition {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: FieldData;
  displayInProfileSummary: boolean;
}

/**
 * validate_custom_profile_field, checks in Zulip's order: field data, then
 * label and hint (not for a default external account), then the type, then
 * whether the type may be shown in the profile summary.
 */
export function checkFieldDefinition(def: FieldDefinition): void {
  if (def.fieldType === FieldType.SELECT) checkSelectFieldData(def.fieldData);
  else if (def.fieldType === FieldType.EXTERNAL_ACCOUNT) checkExternalAccountFieldData(def.fieldData);
  if (!isDefaultExternalField(def.fieldType, def.fieldData)) {
    if (pythonStrip(def.name) === "") throw badRequest("Label cannot be blank.");
    cappedString(def.hint, "hint", HINT_MAX_LENGTH);
    cappedString(def.name, "name", NAME_MAX_LENGTH);
  }
  if (!FIELD_TYPES.includes(def.fieldType)) throw badRequest("Invalid field type.");
  if (def.displayInProfileSummary && (def.fieldType === FieldType.LONG_TEXT || def.fieldType === FieldType.USER)) {
    throw badRequest("Field type not supported for display in profile summary.");
  }
}

export function summaryLimitReached(): never {
  throw badRequest(`Only ${MAX_DISPLAY_IN_PROFILE_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`);
}

export const fieldNotFound = (id: number) => badRequest(`Field id ${id} not found.`);
export const labelTaken = () => badRequest("A field with that label already exists.");
export const notEditableByUser = () => badRequest("You are not allowed to change this field. Contact an administrator to update it.");

/** A value as sent: a string, or a list of user IDs for a person picker. */
export type ProfileValue = string | number[];

/**
 * Checks a value against its field, except that a person picker's IDs must
 * still be checked against the organization's users. Returns the text to
 * store. `name` is the field's label, as Zulip names it in errors.
 */
export function checkValueShape(fieldType: number, fieldData: string, name: string, value: unknown): { stored: string; userIds?: number[] } {
  switch (fieldType) {
    case FieldType.SHORT_TEXT:
    case FieldType.EXTERNAL_ACCOUNT:
    case FieldType.PRONOUNS:
      return { stored: cappedString(value, name, SHORT_VALUE_MAX_LENGTH) };
    case FieldType.LONG_TEXT:
      return { stored: cappedString(value, name, LONG_VALUE_MAX_LENGTH) };
    case FieldType.DATE:
      if (typeof value !== "string") throw badRequest(`${name} is not a string`);
      if (!isValidDate(value)) throw badRequest(`${name} is not a date`);
      return { stored: value };
    case FieldType.URL:
      if (typeof value !== "string") throw badRequest(`${name} is not a string`);
      if (!isValidUrl(value)) throw badRequest(`${name} is not a URL`);
      return { stored: value };
    case FieldType.SELECT: {
      if (typeof value !== "string") throw badRequest(`${name} is not a string`);
      const options = fieldData === "" ? {} : (JSON.parse(fieldData) as FieldData);
      if (!Object.hasOwn(options, value)) throw badRequest(`'${value}' is not a valid choice for '${name}'.`);
      return { stored: value };
    }
    case FieldType.USER: {
      if (!Array.isArray(value)) throw badRequest("User IDs is not a list");
      value.forEach((id, i) => {
        if (typeof id !== "number" || !Number.isSafeInteger(id)) throw badRequest(`User IDs[${i}] is not an integer`);
      });
      const ids = value as number[];
      return { stored: JSON.stringify(ids), userIds: ids };
    }
    default:
      throw new Error(`unknown field type ${fieldType}`);
  }
}

/** One element of PATCH …/profile_data's `data`: {id, value} with nothing else. */
export function checkProfileDataElement(allowNull: boolean) {
  return (item: unknown, name: string): { id: number; value: ProfileValue | null } => {
    if (typeof item !== "object" || item === null || Array.isArray(item)) throw badRequest(`${name} is not a dict`);
    const record = item as Record<string, unknown>;
    for (const key of ["id", "value"]) if (!Object.hasOwn(record, key)) throw badRequest(`${key} key is missing from ${name}`);
    const extra = Object.keys(record).filter((k) => k !== "id" && k !== "value");
    if (extra.length > 0) throw badRequest(`Unexpected arguments: ${extra.join(", ")}`);
    if (typeof record.id !== "number" || !Number.isSafeInteger(record.id)) throw badRequest(`${name}["id"] is not an integer`);
    const value = record.value;
    const isIdList = Array.isArray(value) && value.every((v) => typeof v === "number" && Number.isSafeInteger(v));
    if (!(typeof value === "string" || isIdList || (allowNull && value === null))) throw badRequest(`${name}["value"] is not an allowed_type`);
    if (isIdList) checkListLength(value, `${name}["value"]`, { max: MAX_USER_IDS });
    return { id: record.id, value: value as ProfileValue | null };
  };
}
