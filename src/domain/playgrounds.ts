// Code playgrounds (Zulip's RealmPlayground): the organization's links that
// open a code block's content in an external playground. Pure rules: the
// parameter checks of Zulip's add_realm_playground view and the model
// validation (Django's full_clean) behind it, with their messages.
import { ApiError, badRequest } from "../errors.ts";

/** Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;

/** The characters a code block's language may have (the fence regex), and so a playground's. */
const PYGMENTS_LANGUAGE_RE = /^[ a-zA-Z0-9_+\-./#]*$/;

/** The view's check_pygments_language, on the value as sent (before stripping). */
export function checkPygmentsLanguage(value: string): string {
  if ([...value].length > MAX_PYGMENTS_LANGUAGE_LENGTH) throw badRequest(`pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`);
  if (!PYGMENTS_LANGUAGE_RE.test(value)) throw badRequest("Invalid characters in pygments language");
  return value;
}

/** RFC 6570 operators; `=`, `,`, `!`, `@`, `|` are reserved for future use and refused. */
const OPERATORS = new Set(["+", "#", ".", "/", ";", "?", "&"]);
/** varspec: varname (varchars, dots between them) with an optional prefix (:1-9999) or explode (*) modifier. */
const VARCHAR = "(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})";
const VARSPEC_RE = new RegExp(`^(${VARCHAR}+(?:\\.${VARCHAR}+)*)(?::[1-9][0-9]{0,3}|\\*)?$`);

/**
 * The variable names of an RFC 6570 URI template (level 4), each once, or
 * null when it is not a valid template. Literal text is taken as it is (as
 * Zulip's uri_template library does); only braces must pair up.
 */
export function uriTemplateVariables(template: string): string[] | null {
  const names: string[] = [];
  let rest = template;
  for (;;) {
    const open = rest.indexOf("{");
    const close = rest.indexOf("}");
    if (open === -1) return close === -1 ? names : null;
    if (close !== -1 && close < open) return null;
    const end = rest.indexOf("}", open);
    if (end === -1) return null;
    let expression = rest.slice(open + 1, end);
    if (expression.includes("{")) return null;
    if (OPERATORS.has(expression[0] ?? "")) expression = expression.slice(1);
    if (expression === "") return null;
    for (const varspec of expression.split(",")) {
      const m = VARSPEC_RE.exec(varspec);
      if (!m) return null;
      if (!names.includes(m[1]!)) names.push(m[1]!);
    }
    rest = rest.slice(end + 1);
  }
}

export interface PlaygroundInput {
  /** Each stripped, as the view does before validating the model. */
  name: string;
  pygmentsLanguage: string;
  urlTemplate: string;
}

const BLANK = "This field cannot be blank.";

/**
 * Django's full_clean of a RealmPlayground, as Zulip reports it
 * (ValidationFailureError): every field's errors in field order
 * (url_template, name, pygments_language), then the model's clean() under
 * "__all__", then the uniqueness of (pygments language, name) when both
 * fields passed. `msg` is the first message; `errors` all of them.
 */
export function checkPlayground(input: PlaygroundInput, nameTaken: boolean): void {
  const errors: Record<string, string[]> = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const variables = uriTemplateVariables(input.urlTemplate);
  if (input.urlTemplate === "") add("url_template", BLANK);
  else if (variables === null) add("url_template", "Invalid URL template.");
  if (input.name === "") add("name", BLANK);
  if (input.pygmentsLanguage === "") add("pygments_language", BLANK);
  // clean(): only for a template that parses (the empty one does, with no variables).
  if (variables !== null) {
    if (!variables.includes("code")) add("__all__", 'Missing the required variable "code" in the URL template');
    else if (variables.length !== 1) add("__all__", '"code" should be the only variable present in the URL template');
  }
  if (!errors.name && !errors.pygments_language && nameTaken) {
    add("__all__", "Realm playground with this Realm, Pygments language and Name already exists.");
  }
  const first = Object.values(errors)[0]?.[0];
  if (first !== undefined) throw new ApiError(400, "BAD_REQUEST", first, { errors });
}
