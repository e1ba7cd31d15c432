// URL templates (RFC 6570) of linkifiers and code playgrounds: Zulip's
// url_template_validator, which both models use, with Parley's scheme rule
// added, and the length bound both share.

/**
 * Longest URL template of a linkifier or a playground. Zulip's fields are
 * unbounded text; every client gets every template in /register and events,
 * so Parley bounds them (Django's max_length message past it).
 */
export const MAX_URL_TEMPLATE_LENGTH = 1024;

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

export const INVALID_URL_TEMPLATE = "Invalid URL template.";
export const URL_TEMPLATE_SCHEME_NOT_HTTP = "The URL template's scheme must be http or https.";
export const URL_TEMPLATE_SCHEME_FROM_VARIABLE = "The URL template's scheme must not come from a variable.";

/** A scheme as RFC 3986 spells it: a letter, then letters, digits, `+`, `-` and `.`. */
const SCHEME_CHARS = /^[A-Za-z][A-Za-z0-9+.-]*/;

/**
 * Zulip's url_template_validator (a valid RFC 6570 template), then the
 * scheme of the links it makes: http or https, or none at all (a link
 * relative to this server, or one the renderer completes with http://). A
 * scheme that depends on a variable (`{url}`, `java{x}:…`) is refused too,
 * since the matched text would choose it. Zulip checks no scheme (its
 * renderer drops unsafe links, as Parley's does); Parley refuses them where
 * they are made, so `javascript:` and `data:` templates are never stored.
 * The scheme is read as browsers read one: tabs and newlines anywhere, and
 * leading control characters and spaces, do not count. Returns the error
 * message, or undefined when the template is acceptable.
 */
export function urlTemplateError(template: string): string | undefined {
  if (uriTemplateVariables(template) === null) return INVALID_URL_TEMPLATE;
  const text = template.replace(/[\t\n\r]/g, "").replace(/^[\u0000-\u0020]+/, "");
  const scheme = SCHEME_CHARS.exec(text)?.[0] ?? "";
  const next = text[scheme.length];
  if (next === "{") return URL_TEMPLATE_SCHEME_FROM_VARIABLE;
  if (next === ":" && scheme !== "" && !["http", "https"].includes(scheme.toLowerCase())) return URL_TEMPLATE_SCHEME_NOT_HTTP;
  return undefined;
}
