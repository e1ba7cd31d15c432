const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]!);
}

/**
 * HTML of a channel, folder or organization description. Until the Markdown
 * renderer exists, the text is escaped into one paragraph; the renderer will
 * replace this one function.
 */
export function renderDescription(description: string): string {
  return description === "" ? "" : `<p>${escapeHtml(description)}</p>`;
}
