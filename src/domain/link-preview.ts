// Link previews (Zulip's inline URL embeds): what a linked page says of itself
// in its <head> — Open Graph (og:title, og:description, og:image), else its
// <title> and meta description — as Zulip's OpenGraphParser and GenericParser
// read it. A preview is shown only with an image (Zulip's add_embed).
import { Parser } from "htmlparser2";

export interface LinkPreviewData {
  title: string | null;
  description: string | null;
  /** Absolute http(s) URL of the preview image. */
  image: string | null;
}

/** How much of a page is read: the <head> is near the start. */
export const MAX_PREVIEW_PAGE_BYTES = 512 * 1024;
/** Links previewed per message, the first ones. */
export const MAX_PREVIEWS_PER_MESSAGE = 3;
/** How long a page's preview (or its lack of one) is reused before the page is asked again. */
export const PREVIEW_CACHE_SECONDS = 24 * 3600;

const TITLE_LIMIT = 300;
const DESCRIPTION_LIMIT = 1000;

function clean(text: string | undefined, limit: number): string | null {
  const value = (text ?? "").replace(/\s+/g, " ").trim();
  if (value === "") return null;
  return value.length > limit ? `${value.slice(0, limit - 1)}…` : value;
}

function absoluteHttpUrl(value: string | undefined, base: string): string | null {
  if (!value) return null;
  try {
    const url = new URL(value.trim(), base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** The preview a page's HTML gives, or null when it names no image (then no preview is shown). */
export function extractLinkPreview(html: string, pageUrl: string): LinkPreviewData | null {
  const meta = new Map<string, string>();
  let title = "";
  let inTitle = false;
  let done = false;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if (done) return;
        if (name === "title") inTitle = true;
        if (name === "meta") {
          const key = (attributes.property ?? attributes.name ?? "").toLowerCase();
          if (key && attributes.content !== undefined && !meta.has(key)) meta.set(key, attributes.content);
        }
        // The body starts: what the head said is all there is.
        if (name === "body") done = true;
      },
      ontext(text) {
        if (inTitle && !done) title += text;
      },
      onclosetag(name) {
        if (name === "title") inTitle = false;
        if (name === "head") done = true;
      },
    },
    { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true },
  );
  parser.write(html);
  parser.end();
  const image = absoluteHttpUrl(meta.get("og:image") ?? meta.get("og:image:url") ?? meta.get("twitter:image"), pageUrl);
  if (image === null) return null;
  return {
    title: clean(meta.get("og:title") ?? meta.get("twitter:title") ?? title, TITLE_LIMIT),
    description: clean(meta.get("og:description") ?? meta.get("twitter:description") ?? meta.get("description"), DESCRIPTION_LIMIT),
    image,
  };
}
