// Unicode emoji names as Zulip uses them: Zulip's own name table
// (zulip-emoji-names.json, Apache-2.0; its `source` field names where it
// comes from), 1,826 canonical names with their codes and 1,061 aliases. It
// is THE name table of the server: Markdown `:name:`, reactions, user status
// emoji and server_emoji_data_url all read it, so every name a Zulip client,
// bot or user types means what it means on Zulip. A Unicode emoji whose code
// is not in the table is not an emoji here either (Zulip leaves it as text
// and refuses it as a reaction).
// Emoji codes are Zulip's: dash-separated lowercase hex without U+FE0F
// (`1f44d`, `2764`, `0023-20e3`, `1f441-200d-1f5e8`), as Zulip's renderer
// writes them; the table spells ten ZWJ sequences with their U+FE0F
// (`1f441-fe0f-200d-1f5e8-fe0f`), so codes are read without it, and a client
// may send either spelling (see unicodeEmojiCode).

import table from "./zulip-emoji-names.json" with { type: "json" };

export const ZULIP_EXTRA_EMOJI_URL = "/static/generated/emoji/images/emoji/unicode/zulip.png";

/** Every accepted `:name:` (canonical names and aliases) -> emoji code. */
export const nameToCode = new Map<string, string>();
/** Emoji code -> canonical name (used for Unicode emoji typed directly). */
export const codeToName = new Map<string, string>();
/** Emoji code -> its aliases, in the table's order. */
const codeToAliases = new Map<string, readonly string[]>();
/** A Unicode emoji code as the tables key it: lowercase, every U+FE0F (`-fe0f`) removed. */
export function unicodeEmojiCode(code: string): string {
  return code
    .toLowerCase()
    .split("-")
    .filter((part) => part !== "fe0f")
    .join("-");
}

for (const entry of (table as { emoji: { name: string; code: string; aliases: string[] }[] }).emoji) {
  const { name, aliases } = entry;
  const code = unicodeEmojiCode(entry.code);
  codeToName.set(code, name);
  codeToAliases.set(code, aliases);
  nameToCode.set(name, code);
  for (const alias of aliases) nameToCode.set(alias, code);
}

/**
 * Every emoji code with all the names that mean it, the canonical one first:
 * the `code_to_names` of Zulip's emoji_api.json (server_emoji_data_url), which
 * clients use for their emoji picker and autocomplete.
 */
export function emojiCodeToNames(): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const [code, canonical] of codeToName) result[code] = [canonical, ...(codeToAliases.get(code) ?? [])];
  return result;
}

/** Emoji code of an emoji character sequence: hex code points, U+FE0F dropped. */
export function emojiCodeOf(sequence: string): string {
  const parts: string[] = [];
  for (const ch of sequence) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0xfe0f) continue;
    parts.push(cp.toString(16).padStart(4, "0"));
  }
  return parts.join("-");
}

// Possible emoji sequences (UTS #51 EBNF), as Zulip's POSSIBLE_EMOJI_RE.
const EMOJI_ELEMENT =
  String.raw`\p{RI}\p{RI}|\p{Emoji}(?:\p{Emoji_Modifier}|\uFE0F\u20E3?|[\u{E0020}-\u{E007E}]+\u{E007F})?`;
export const POSSIBLE_EMOJI_RE = new RegExp(`(?:${EMOJI_ELEMENT})(?:\\u200D(?:${EMOJI_ELEMENT}))*`, "uy");
// Things like ↔ or a bare digit are emoji with text presentation: not emoji here.
export const TEXT_PRESENTATION_RE = /^\P{Emoji_Presentation}\u20E3?$/u;

// Zulip's emoticon translations (user setting translate_emoticons).
export const EMOTICONS: Readonly<Record<string, string>> = {
  ":)": "smile",
  "(:": "smile",
  ":(": "frown",
  "<3": "heart",
  ":|": "neutral",
  ":/": "confused",
  ";)": "wink",
  ":D": "big_smile",
  ":o": "open_mouth",
  ":O": "open_mouth",
  ":p": "stuck_out_tongue",
  ":P": "stuck_out_tongue",
};
