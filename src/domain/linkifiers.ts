// Linkifiers (Zulip's RealmFilter): the validation of Zulip's
// do_add_linkifier / do_update_linkifier (the model's full_clean), with its
// messages, and the checks of PATCH /realm/linkifiers.
import { RE2JS } from "re2js";
import { ApiError, badRequest } from "../errors.ts";
import { maxLengthMessage } from "./limits.ts";
import { MAX_URL_TEMPLATE_LENGTH, uriTemplateVariables, urlTemplateError } from "./url-templates.ts";

export interface LinkifierInput {
  /** Both stripped, as Zulip's actions do before validating. */
  pattern: string;
  urlTemplate: string;
}

// re2js reports Go's regexp/syntax errors; Zulip reports RE2's (C++), whose
// arguments are the same: only the words differ.
const RE2_ERROR_TEXTS: Record<string, string> = {
  "missing closing )": "missing )",
  "missing closing ]": "missing ]",
  "unexpected )": "unexpected )",
  "trailing backslash at end of expression": "trailing \\",
  "missing argument to repetition operator": "no argument for repetition operator",
  "invalid repeat count": "invalid repetition size",
  "invalid nested repetition operator": "bad repetition operator",
  "invalid or unsupported Perl syntax": "invalid perl operator",
  "invalid named capture": "invalid named capture group",
  "duplicate capture group name": "invalid named capture group",
  "invalid escape sequence": "invalid escape sequence",
  "invalid character class": "invalid character class",
  "invalid character class range": "invalid character class range",
  "invalid UTF-8": "invalid UTF-8",
  "expression too large": "pattern too large - compile failed",
  "expression nests too deeply": "pattern too large - compile failed",
};

/**
 * The pattern's named groups, or the error Zulip's filter_pattern_validator
 * gives: "Bad regular expression: <RE2's error>".
 */
export function linkifierPatternGroups(pattern: string): { groups: string[] } | { error: string } {
  try {
    return { groups: Object.keys(RE2JS.compile(pattern).namedGroups()) };
  } catch (e) {
    const raw = e instanceof Error ? e.message : String(e);
    // "error parsing regexp: <code>: `<argument>`" or "error parsing regexp: <code>"
    const m = /^error parsing regexp: (.*?)(?:: `([\s\S]*)`)?$/.exec(raw);
    if (!m) return { error: "Unknown regular expression error" };
    const text = RE2_ERROR_TEXTS[m[1]!] ?? m[1]!;
    return { error: `Bad regular expression: ${m[2] ? `${text}: ${m[2]}` : text}` };
  }
}

const BLANK = "This field cannot be blank.";

/**
 * Longest pattern and URL template. Zulip's fields are unbounded text, but a
 * pattern is a unique index key (PostgreSQL's B-tree keys stop near 2,700
 * bytes, and a character may take 4 bytes in UTF-8: 600 of them are 2,400)
 * and runs on every message: Django's max_length message past these.
 */
export const MAX_LINKIFIER_PATTERN_LENGTH = 600;
export const MAX_LINKIFIER_URL_TEMPLATE_LENGTH = MAX_URL_TEMPLATE_LENGTH;

/** Python's repr() of a group name (names are word characters, dots and %XX). */
function pyRepr(name: string): string {
  return name.includes("'") && !name.includes('"') ? `"${name}"` : `'${name.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** Python's min() over strings: by code point. */
function pyMin(names: string[]): string {
  return [...names].sort((a, b) => {
    const x = [...a].map((c) => c.codePointAt(0)!);
    const y = [...b].map((c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  })[0]!;
}

/**
 * Django's full_clean of a RealmFilter, as Zulip reports it
 * (ValidationFailureError): field errors in field order (pattern,
 * url_template: a valid template whose links are http(s), url-templates.ts), then the model's clean() under "__all__" (the pattern must
 * compile with RE2; the template's variables and the pattern's named groups
 * must be the same set), then the uniqueness of the pattern in the
 * organization when the pattern passed. `msg` is the first message;
 * `errors` all of them.
 */
export function checkLinkifier(input: LinkifierInput, patternTaken: boolean): void {
  const errors: Record<string, string[]> = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const patternLength = [...input.pattern].length;
  const templateLength = [...input.urlTemplate].length;
  // Too long: reported alone (nothing else is compiled or looked up for it).
  if (patternLength > MAX_LINKIFIER_PATTERN_LENGTH || templateLength > MAX_LINKIFIER_URL_TEMPLATE_LENGTH) {
    if (patternLength > MAX_LINKIFIER_PATTERN_LENGTH) add("pattern", maxLengthMessage(MAX_LINKIFIER_PATTERN_LENGTH, patternLength));
    if (templateLength > MAX_LINKIFIER_URL_TEMPLATE_LENGTH) add("url_template", maxLengthMessage(MAX_LINKIFIER_URL_TEMPLATE_LENGTH, templateLength));
    throw new ApiError(400, "BAD_REQUEST", Object.values(errors)[0]![0]!, { errors });
  }
  if (input.pattern === "") add("pattern", BLANK);
  const variables = uriTemplateVariables(input.urlTemplate);
  const templateError = urlTemplateError(input.urlTemplate);
  if (input.urlTemplate === "") add("url_template", BLANK);
  else if (templateError !== undefined) add("url_template", templateError);
  // clean()
  const compiled = linkifierPatternGroups(input.pattern);
  if ("error" in compiled) add("__all__", compiled.error);
  else if (variables !== null) {
    const groups = new Set(compiled.groups);
    const notInPattern = variables.filter((v) => !groups.has(v));
    const notInTemplate = compiled.groups.filter((g) => !variables.includes(g));
    if (notInPattern.length > 0) add("__all__", `Group ${pyRepr(pyMin(notInPattern))} in URL template is not present in linkifier pattern.`);
    else if (notInTemplate.length > 0) add("__all__", `Group ${pyRepr(pyMin(notInTemplate))} in linkifier pattern is not present in URL template.`);
  }
  if (!errors.pattern && patternTaken) add("__all__", "Realm filter with this Realm and Pattern already exists.");
  const first = Object.values(errors)[0]?.[0];
  if (first !== undefined) throw new ApiError(400, "BAD_REQUEST", first, { errors });
}

/** check_reorder_linkifiers: the new order must name every linkifier once. */
export function checkLinkifierOrder(orderedIds: readonly number[], existingIds: readonly number[]): void {
  if (new Set(orderedIds).size < orderedIds.length) throw badRequest("The ordered list must not contain duplicated linkifiers");
  const existing = new Set(existingIds);
  if (orderedIds.length !== existing.size || orderedIds.some((id) => !existing.has(id))) {
    throw badRequest("The ordered list must enumerate all existing linkifiers exactly once");
  }
}
