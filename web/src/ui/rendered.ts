// Prepares the server's rendered message HTML for display, the way Zulip's
// web app post-processes it: emoji spans show their character, mentions of
// you are marked, <time> shows local time, links open in a new tab.
import { formatDateTime, t } from "../i18n.ts";
import { playgroundsFor } from "../model/playgrounds.ts";

const template = typeof document !== "undefined" ? document.createElement("template") : null;

export function emojiFromCode(code: string): string | null {
  const parts = code.split("-").map((p) => Number.parseInt(p, 16));
  if (parts.length === 0 || parts.some((n) => !Number.isFinite(n) || n < 0 || n > 0x10ffff)) return null;
  return String.fromCodePoint(...parts);
}

function codeButton(className: string, label: string, title: string, glyph: string): HTMLButtonElement {
  const button = document.createElement("button");
  button.type = "button";
  button.className = `code-button ${className}`;
  button.setAttribute("aria-label", label);
  button.title = title;
  const icon = document.createElement("span");
  icon.setAttribute("aria-hidden", "true");
  icon.textContent = glyph;
  button.append(icon);
  return button;
}

/**
 * `codeButtons`: code blocks get Zulip's buttons, "Copy code" and, where the
 * organization has a playground for the block's language, "View in
 * playground" (their clicks are rendered-behaviour.ts's).
 */
export function prepareHtml(html: string, selfId: number, mentionsMe: boolean, options: { codeButtons?: boolean } = {}): string {
  if (!template) return html;
  template.innerHTML = html;
  const root = template.content;
  for (const span of root.querySelectorAll<HTMLElement>("span.emoji")) {
    const code = [...span.classList].find((c) => c.startsWith("emoji-"))?.slice("emoji-".length);
    const char = code ? emojiFromCode(code) : null;
    if (char) span.textContent = char;
  }
  for (const mention of root.querySelectorAll<HTMLElement>(".user-mention, .user-group-mention, .topic-mention")) {
    const id = mention.dataset.userId;
    const isWildcard = id === "*" || mention.classList.contains("channel-wildcard-mention") || mention.classList.contains("topic-mention");
    if (mention.classList.contains("silent")) continue;
    if (id === String(selfId) || ((isWildcard || mention.classList.contains("user-group-mention")) && mentionsMe)) mention.classList.add("user-mention-me");
  }
  for (const header of root.querySelectorAll<HTMLElement>(".spoiler-header")) {
    header.tabIndex = 0;
    header.setAttribute("role", "button");
    header.setAttribute("aria-expanded", "false");
  }
  for (const img of root.querySelectorAll<HTMLImageElement>(".message_inline_image img")) {
    if (!img.alt) img.alt = img.closest("a")?.title || t("Image");
  }
  if (options.codeButtons) {
    for (const block of root.querySelectorAll<HTMLElement>("div.codehilite")) {
      const bar = document.createElement("div");
      bar.className = "code-buttons";
      const language = block.dataset.codeLanguage ?? "";
      const playgrounds = language ? playgroundsFor(language) : [];
      if (playgrounds.length > 0) {
        const title = playgrounds.length === 1 ? t("View in {{name}}", { name: playgrounds[0]!.name }) : t("View in playground");
        bar.append(codeButton("code-playground", t("View in playground"), title, "▶"));
      }
      bar.append(codeButton("copy-code", t("Copy code"), t("Copy code"), "📋"));
      block.prepend(bar);
    }
  }
  for (const time of root.querySelectorAll<HTMLTimeElement>("time[datetime]")) {
    const date = new Date(time.dateTime);
    if (!Number.isNaN(date.getTime())) time.textContent = formatDateTime(date);
  }
  for (const a of root.querySelectorAll<HTMLAnchorElement>("a[href]")) {
    const href = a.getAttribute("href") ?? "";
    if (href.startsWith("#")) continue;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
  }
  return template.innerHTML;
}
