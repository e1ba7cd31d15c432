// Prepares the server's rendered message HTML for display, the way Zulip's
// web app post-processes it: emoji spans show their character, mentions of
// you are marked, <time> shows local time, links open in a new tab.
import { format } from "date-fns";

const template = typeof document !== "undefined" ? document.createElement("template") : null;

export function emojiFromCode(code: string): string | null {
  const parts = code.split("-").map((p) => Number.parseInt(p, 16));
  if (parts.length === 0 || parts.some((n) => !Number.isFinite(n) || n < 0 || n > 0x10ffff)) return null;
  return String.fromCodePoint(...parts);
}

export function prepareHtml(html: string, selfId: number, mentionsMe: boolean): string {
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
    if (!img.alt) img.alt = img.closest("a")?.title || "Image";
  }
  for (const time of root.querySelectorAll<HTMLTimeElement>("time[datetime]")) {
    const date = new Date(time.dateTime);
    if (!Number.isNaN(date.getTime())) time.textContent = format(date, "EEE, MMM d, yyyy, HH:mm");
  }
  for (const a of root.querySelectorAll<HTMLAnchorElement>("a[href]")) {
    const href = a.getAttribute("href") ?? "";
    if (href.startsWith("#")) continue;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
  }
  return template.innerHTML;
}
