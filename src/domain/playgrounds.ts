// Code playgrounds (Zulip's RealmPlayground): the organization's links that
// open a code block's content in an external playground. Pure rules: the
// parameter checks of Zulip's add_realm_playground view and the model
// validation (Django's full_clean) behind it, with their messages.
import { ApiError, badRequest } from "../errors.ts";
import { maxLengthMessage } from "./limits.ts";
import { MAX_URL_TEMPLATE_LENGTH, uriTemplateVariables, urlTemplateError } from "./url-templates.ts";

/** Zulip's RealmPlayground.MAX_PYGMENTS_LANGUAGE_LENGTH. */
export const MAX_PYGMENTS_LANGUAGE_LENGTH = 40;

/**
 * Longest playground name. Zulip's name is unbounded text, but it is part of
 * a unique index key, which PostgreSQL refuses past about 2,700 bytes (a
 * 500); Parley bounds it with Django's max_length message, at Zulip's bound
 * for other display names (UserGroup.MAX_NAME_LENGTH).
 */
export const MAX_PLAYGROUND_NAME_LENGTH = 100;
export const MAX_PLAYGROUND_URL_TEMPLATE_LENGTH = MAX_URL_TEMPLATE_LENGTH;

/** The characters a code block's language may have (the fence regex), and so a playground's. */
const PYGMENTS_LANGUAGE_RE = /^[ a-zA-Z0-9_+\-./#]*$/;

/** The view's check_pygments_language, on the value as sent (before stripping). */
export function checkPygmentsLanguage(value: string): string {
  if ([...value].length > MAX_PYGMENTS_LANGUAGE_LENGTH) throw badRequest(`pygments_language is too long (limit: ${MAX_PYGMENTS_LANGUAGE_LENGTH} characters)`);
  if (!PYGMENTS_LANGUAGE_RE.test(value)) throw badRequest("Invalid characters in pygments language");
  return value;
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
 * (url_template: a valid template whose links are http(s), url-templates.ts;
 * name; pygments_language), then the model's clean() under
 * "__all__", then the uniqueness of (pygments language, name) when both
 * fields passed. `msg` is the first message; `errors` all of them.
 */
export function checkPlayground(input: PlaygroundInput, nameTaken: boolean): void {
  const errors: Record<string, string[]> = {};
  const add = (field: string, message: string) => (errors[field] ??= []).push(message);
  const templateLength = [...input.urlTemplate].length;
  const nameLength = [...input.name].length;
  // Too long: reported alone, as for linkifiers (nothing else is parsed or looked up for it).
  if (templateLength > MAX_PLAYGROUND_URL_TEMPLATE_LENGTH || nameLength > MAX_PLAYGROUND_NAME_LENGTH) {
    if (templateLength > MAX_PLAYGROUND_URL_TEMPLATE_LENGTH) add("url_template", maxLengthMessage(MAX_PLAYGROUND_URL_TEMPLATE_LENGTH, templateLength));
    if (nameLength > MAX_PLAYGROUND_NAME_LENGTH) add("name", maxLengthMessage(MAX_PLAYGROUND_NAME_LENGTH, nameLength));
    throw new ApiError(400, "BAD_REQUEST", Object.values(errors)[0]![0]!, { errors });
  }
  const variables = uriTemplateVariables(input.urlTemplate);
  const templateError = urlTemplateError(input.urlTemplate);
  if (input.urlTemplate === "") add("url_template", BLANK);
  else if (templateError !== undefined) add("url_template", templateError);
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
