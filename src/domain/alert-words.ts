// Which alert words a message's text contains (Zulip's alert word matching:
// case-insensitive, whole words, in the rendered text outside tags and code).

/** The message's visible text: tags dropped, code left out (Zulip does not alert on code). */
export function visibleText(renderedHtml: string): string {
  return renderedHtml
    .replace(/<(code|pre)\b[^>]*>[\s\S]*?<\/\1>/gi, " ")
    .replace(/<[^>]*>/g, " ")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#x27;|&#39;/g, "'");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Whether `word` appears in `text` as a whole word, ignoring case. */
export function containsAlertWord(text: string, word: string): boolean {
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(word)}(?![\\p{L}\\p{N}_])`, "iu");
  return pattern.test(text);
}

/** Alert words as stored: trimmed, empty ones dropped, one of each ignoring case (first spelling kept). */
export function cleanAlertWords(words: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const raw of words) {
    const word = raw.trim();
    if (word !== "" && !seen.has(word.toLowerCase())) seen.set(word.toLowerCase(), word);
  }
  return [...seen.values()];
}
