// What the server's rendered HTML does when used, as in Zulip's web app:
// spoilers open from the keyboard too (the click itself is handled by the
// message list) and say whether they are open; inline images open in a
// lightbox (a modal <dialog>: Escape or a click closes it; previous/next and
// the arrow keys move between the open narrow's images); code blocks' "Copy
// code" and "View in playground" buttons (added by rendered.ts).
import { t } from "../i18n.ts";
import { useMessages } from "../model/messages.ts";
import { useMuting } from "../model/muting.ts";
import { narrowKey } from "../model/narrow.ts";
import { useNavigation } from "../model/navigation.ts";
import { playgroundsFor, playgroundUrl } from "../model/playgrounds.ts";

function syncSpoiler(header: HTMLElement): void {
  const block = header.closest(".spoiler-block");
  if (!block) return;
  const open = block.classList.contains("spoiler-open");
  header.setAttribute("aria-expanded", String(open));
  block.querySelector(".spoiler-content")?.setAttribute("aria-hidden", String(!open));
}

let dialog: HTMLDialogElement | null = null;

interface LightboxImage {
  src: string;
  alt: string;
  href: string;
}

/** The images of the open narrow's messages, oldest first (Zulip's lightbox moves between them). */
function narrowImages(): LightboxImage[] {
  const view = useNavigation.getState().view;
  if (view.kind !== "messages") return [];
  const { lists, byId } = useMessages.getState();
  const list = lists[narrowKey(view.narrow)];
  if (!list) return [];
  const { mutedUsers, revealed } = useMuting.getState();
  const template = document.createElement("template");
  const images: LightboxImage[] = [];
  for (const id of list.ids) {
    const message = byId[id];
    if (!message || !message.content.includes("message_inline_image")) continue;
    if (mutedUsers[message.sender_id] !== undefined && !revealed[id]) continue;
    template.innerHTML = message.content;
    for (const link of template.content.querySelectorAll<HTMLAnchorElement>(".message_inline_image:not(.youtube-video) a")) {
      const img = link.querySelector("img");
      if (!img) continue;
      // Attributes as written (relative addresses resolve against the page when shown).
      const href = link.getAttribute("href") ?? "";
      images.push({ src: img.dataset.srcFullsize ?? href, alt: link.title || img.alt || t("Image"), href });
    }
  }
  return images;
}

let images: LightboxImage[] = [];
let current = 0;

function show(index: number): void {
  if (!dialog || images.length === 0) return;
  current = (index + images.length) % images.length;
  const image = images[current]!;
  const img = dialog.querySelector<HTMLImageElement>(".lightbox-image")!;
  img.src = image.src;
  img.alt = image.alt;
  dialog.querySelector<HTMLAnchorElement>(".lightbox-open")!.href = image.href;
  const several = images.length > 1;
  for (const button of dialog.querySelectorAll<HTMLButtonElement>(".lightbox-prev, .lightbox-next")) button.hidden = !several;
  dialog.querySelector(".lightbox-position")!.textContent = several ? t("{{n}} of {{total}}", { n: current + 1, total: images.length }) : "";
}

function lightbox(src: string, alt: string, href: string): void {
  if (!dialog) {
    dialog = document.createElement("dialog");
    dialog.className = "lightbox";
    dialog.setAttribute("aria-label", t("Image viewer"));
    const bar = document.createElement("div");
    bar.className = "lightbox-bar";
    const position = document.createElement("span");
    position.className = "lightbox-position";
    position.setAttribute("aria-live", "polite");
    const open = document.createElement("a");
    open.className = "lightbox-open";
    open.target = "_blank";
    open.rel = "noopener noreferrer";
    open.textContent = t("Open original");
    const button = (className: string, label: string, glyph: string) => {
      const b = document.createElement("button");
      b.type = "button";
      b.className = className;
      b.setAttribute("aria-label", label);
      b.title = label;
      b.textContent = glyph;
      return b;
    };
    bar.append(position, open, button("lightbox-close", t("Close image viewer"), "✕"));
    const stage = document.createElement("div");
    stage.className = "lightbox-stage";
    const image = document.createElement("img");
    image.className = "lightbox-image";
    stage.append(button("lightbox-prev", t("Previous image"), "‹"), image, button("lightbox-next", t("Next image"), "›"));
    dialog.append(bar, stage);
    dialog.addEventListener("click", (e) => {
      const target = e.target as HTMLElement;
      if (target === dialog || target === stage || target.closest(".lightbox-close")) dialog!.close();
      else if (target.closest(".lightbox-prev")) show(current - 1);
      else if (target.closest(".lightbox-next")) show(current + 1);
    });
    dialog.addEventListener("keydown", (e) => {
      if (e.key === "ArrowLeft") show(current - 1);
      else if (e.key === "ArrowRight") show(current + 1);
      else return;
      e.preventDefault();
    });
    document.body.append(dialog);
  }
  images = narrowImages();
  let index = images.findIndex((i) => i.href === href && i.src === src);
  if (index < 0) index = images.findIndex((i) => i.href === href);
  if (index < 0) {
    // Not in the open narrow's messages (a preview, an edit history): shown alone.
    images = [{ src, alt, href }];
    index = 0;
  }
  show(index);
  dialog.showModal();
  dialog.querySelector<HTMLButtonElement>(".lightbox-close")!.focus();
}

/** The code of the code block `button` sits in: its <pre>'s text. */
function codeOf(button: HTMLElement): string {
  return button.closest(".codehilite")?.querySelector("pre")?.textContent ?? "";
}

function flash(button: HTMLElement, text: string): void {
  const before = button.title;
  button.title = text;
  button.classList.add("done");
  setTimeout(() => {
    button.title = before;
    button.classList.remove("done");
  }, 1500);
}

let playgroundMenu: HTMLElement | null = null;
function closePlaygroundMenu(): void {
  playgroundMenu?.remove();
  playgroundMenu = null;
}

/** "View in playground": the one playground opens at once; several are offered in a menu, as in Zulip. */
function viewInPlayground(button: HTMLElement): void {
  const language = button.closest<HTMLElement>(".codehilite")?.dataset.codeLanguage ?? "";
  const playgrounds = playgroundsFor(language);
  const code = codeOf(button);
  if (playgrounds.length === 1) {
    window.open(playgroundUrl(playgrounds[0]!, code), "_blank", "noopener,noreferrer");
    return;
  }
  closePlaygroundMenu();
  const menu = document.createElement("div");
  menu.className = "popover playground-menu menu";
  menu.setAttribute("role", "menu");
  menu.setAttribute("aria-label", t("View in playground"));
  for (const playground of playgrounds) {
    const item = document.createElement("a");
    item.setAttribute("role", "menuitem");
    item.href = playgroundUrl(playground, code);
    item.target = "_blank";
    item.rel = "noopener noreferrer";
    item.textContent = t("View in {{name}}", { name: playground.name });
    item.addEventListener("click", () => closePlaygroundMenu());
    menu.append(item);
  }
  const rect = button.getBoundingClientRect();
  menu.style.top = `${rect.bottom + 4}px`;
  menu.style.left = `${Math.max(6, rect.right - 220)}px`;
  document.body.append(menu);
  playgroundMenu = menu;
  menu.querySelector<HTMLElement>("[role=menuitem]")?.focus();
}

export function installRenderedBehaviour(): void {
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && playgroundMenu) {
      e.preventDefault();
      closePlaygroundMenu();
    }
  }, true);
  document.addEventListener("mousedown", (e) => {
    if (playgroundMenu && !playgroundMenu.contains(e.target as Node)) closePlaygroundMenu();
  });
  document.addEventListener("keydown", (e) => {
    const header = (e.target as HTMLElement).closest?.(".rendered_markdown .spoiler-header");
    if (!header || (e.key !== "Enter" && e.key !== " ")) return;
    e.preventDefault();
    (header as HTMLElement).click();
  });
  // After the message list's own click handler (React's, on its root) toggled the spoiler.
  document.addEventListener("click", (e) => {
    const target = e.target as HTMLElement;
    const header = target.closest(".rendered_markdown .spoiler-header");
    if (header) syncSpoiler(header as HTMLElement);
    const copy = target.closest<HTMLElement>(".rendered_markdown .copy-code");
    if (copy) {
      void navigator.clipboard.writeText(codeOf(copy)).then(
        () => flash(copy, t("Copied!")),
        () => flash(copy, t("Could not copy the code")),
      );
      return;
    }
    const playground = target.closest<HTMLElement>(".rendered_markdown .code-playground");
    if (playground) {
      viewInPlayground(playground);
      return;
    }
    const link = target.closest<HTMLAnchorElement>(".rendered_markdown .message_inline_image:not(.youtube-video) a");
    const img = link?.querySelector("img");
    if (link && img && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.button === 0) {
      e.preventDefault();
      const href = link.getAttribute("href") ?? "";
      lightbox(img.dataset.srcFullsize ?? href, link.title || img.alt || t("Image"), href);
    }
  });
}
