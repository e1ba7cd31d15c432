// What the server's rendered HTML does when used, as in Zulip's web app:
// spoilers open from the keyboard too (the click itself is handled by the
// message list) and say whether they are open; inline images open in a
// lightbox (a modal <dialog>: Escape or a click closes it).

function syncSpoiler(header: HTMLElement): void {
  const block = header.closest(".spoiler-block");
  if (!block) return;
  const open = block.classList.contains("spoiler-open");
  header.setAttribute("aria-expanded", String(open));
  block.querySelector(".spoiler-content")?.setAttribute("aria-hidden", String(!open));
}

let dialog: HTMLDialogElement | null = null;

function lightbox(src: string, alt: string, href: string): void {
  if (!dialog) {
    dialog = document.createElement("dialog");
    dialog.className = "lightbox";
    dialog.setAttribute("aria-label", "Image viewer");
    dialog.innerHTML =
      '<div class="lightbox-bar"><a class="lightbox-open" target="_blank" rel="noopener noreferrer">Open original</a><button type="button" class="lightbox-close" aria-label="Close image viewer">✕</button></div><img class="lightbox-image">';
    dialog.addEventListener("click", (e) => {
      const t = e.target as HTMLElement;
      if (t === dialog || t.closest(".lightbox-close")) dialog!.close();
    });
    document.body.append(dialog);
  }
  const img = dialog.querySelector<HTMLImageElement>(".lightbox-image")!;
  img.src = src;
  img.alt = alt;
  dialog.querySelector<HTMLAnchorElement>(".lightbox-open")!.href = href;
  dialog.showModal();
  dialog.querySelector<HTMLButtonElement>(".lightbox-close")!.focus();
}

export function installRenderedBehaviour(): void {
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
    const link = target.closest<HTMLAnchorElement>(".rendered_markdown .message_inline_image:not(.youtube-video) a");
    const img = link?.querySelector("img");
    if (link && img && !e.ctrlKey && !e.metaKey && !e.shiftKey && e.button === 0) {
      e.preventDefault();
      lightbox(img.dataset.srcFullsize ?? link.href, link.title || img.alt || "Image", link.href);
    }
  });
}
