import { badRequest } from "../errors.ts";
const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]!);
}

/** Unicode noncharacters: U+FDD0..U+FDEF and the last two code points of every plane. */
function isNonCharacter(codePoint: number): boolean {
  return (codePoint >= 0xfdd0 && codePoint <= 0xfdef) || (codePoint & 0xfffe) === 0xfffe;
}

/**
 * 1-based code-point position of the first character Zulip calls
 * unprintable (control characters, lone surrogates, noncharacters), or null.
 */
export function unprintablePosition(text: string): number | null {
  let position = 0;
  for (const ch of text) {
    position += 1;
    if (/[\p{Cc}\p{Cs}]/u.test(ch) || isNonCharacter(ch.codePointAt(0)!)) return position;
  }
  return null;
}

/** Orders strings by code point, as Python sorts them (JavaScript's < compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** What Python's str.strip() removes (and pydantic's strip_whitespace): Unicode whitespace, which differs a little from JavaScript's trim(). */
export const PY_WHITESPACE = "[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const PY_STRIP = new RegExp(`^${PY_WHITESPACE}+|${PY_WHITESPACE}+$`, "gu");

/** Whether a UTF-16 code unit is one of PY_WHITESPACE's characters (all of them are in the BMP). */
export function isPyWhitespaceUnit(unit: number): boolean {
  return (
    (unit >= 0x09 && unit <= 0x0d) ||
    (unit >= 0x1c && unit <= 0x20) ||
    unit === 0x85 ||
    unit === 0xa0 ||
    unit === 0x1680 ||
    (unit >= 0x2000 && unit <= 0x200a) ||
    unit === 0x2028 ||
    unit === 0x2029 ||
    unit === 0x202f ||
    unit === 0x205f ||
    unit === 0x3000
  );
}

export function pythonStrip(text: string): string {
  return text.replace(PY_STRIP, "");
}

/**
 * A `StringConstraints(strip_whitespace=True, min_length=1, max_length=…)`
 * parameter: stripped, then checked, with typed_endpoint's messages. Lengths
 * count code points, as Python's len() does.
 */
export function requiredText(raw: string, name: string, maxLength?: number): string {
  const value = pythonStrip(raw);
  if (value === "") throw badRequest(`${name} cannot be blank`);
  if (maxLength !== undefined && [...value].length > maxLength) throw badRequest(`${name} is too long (limit: ${maxLength} characters)`);
  return value;
}
