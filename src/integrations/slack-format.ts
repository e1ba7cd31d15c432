// Slack message formatting to Zulip Markdown, as Zulip's
// zerver/data_import/slack_message_conversion.py does it for the
// slack_incoming integration: Block Kit blocks and legacy attachments
// rendered to Markdown, Slack links (<url|text>, <mailto:…>) and Slack's
// *bold*, ~strike~ and _italic_ converted.
import { isDict, PayloadError, truthy, type Dict } from "./payload.ts";

const LINK = /(<)(http:\/\/www\.|https:\/\/www\.|http:\/\/|https:\/\/|ftp:\/\/)?([a-z0-9]+([\-.]{1}[a-z0-9]+)*)(\.)([a-z]{2,63}(:[0-9]{1,5})?)(\/[^>]*)?(\|)?(?:\|([^>]+))?(>)/g;
const MAILTO = /<((mailto:)?([\p{L}\p{N}_.-]+@[\p{L}\p{N}_.-]+(\.[\p{L}\p{N}_]+)+))(\|)?([\p{L}\p{N}_.-]+@[\p{L}\p{N}_.-]+(\.[\p{L}\p{N}_]+)+)?>/gu;

/** Slack's emphasis: the marker must follow a start of line, punctuation, space or symbol, and be followed by one or an end of line. */
function emphasis(marker: string): RegExp {
  const m = marker === "*" ? "\\*" : marker;
  return new RegExp(`((?![${m}\`@\\\\\\p{Pf}\\p{Pe}])[\\p{P}\\p{Zs}\\p{S}]|^)(${m})([^${m}]+)(${m})((?![${m}\`@\\\\\\p{Pi}\\p{Ps}])(?=[\\p{P}\\p{Zs}\\p{S}]|$))`, "gmu");
}

const BOLD = emphasis("*");
const STRIKE = emphasis("~");
const ITALIC = emphasis("_");

/** Slack's *bold*, ~strike~ and _italic_ as Zulip's **bold**, ~~strike~~ and *italic*. */
export function convertSlackFormatting(text: string): string {
  const convert = (input: string, pattern: RegExp, keyword: string) => input.replace(pattern, (_m, before: string, _o, inner: string) => before + keyword + inner + keyword);
  return convert(convert(convert(text, BOLD, "**"), STRIKE, "~~"), ITALIC, "*");
}

/** <https://foo.com|foo> → [foo](https://foo.com), <https://foo.com> → https://foo.com, <mailto:a@b.c|…> → mailto:a@b.c. */
export function replaceLinks(text: string): string {
  let out = text;
  for (const match of text.matchAll(LINK)) {
    const slackUrl = match[0];
    const parts = slackUrl.slice(1, -1).split("|");
    const converted = parts.length >= 2 ? `[${parts.slice(1).join("|")}](${parts[0]})` : parts[0]!;
    out = out.split(slackUrl).join(converted);
  }
  const afterLinks = out;
  for (const match of afterLinks.matchAll(MAILTO)) out = out.split(match[0]).join(match[1]!);
  return out;
}

function str(value: unknown, name: string): string {
  if (typeof value !== "string") throw new PayloadError(`${name} is not a string`);
  return value;
}

/** A text object: {"type": "plain_text" | "mrkdwn", "text": …}. */
function textBlock(value: unknown, name: string, plainOnly = false): string {
  if (!isDict(value)) throw new PayloadError(`${name} is not a dict`);
  const type = str(value.type, `${name}["type"]`);
  if (type !== "plain_text" && (plainOnly || type !== "mrkdwn")) throw new PayloadError(`${name}["type"] is not allowed`);
  return str(value.text, `${name}["text"]`);
}

function joinPieces(pieces: readonly string[]): string {
  return pieces
    .map((p) => p.trim())
    .filter((p) => p !== "")
    .join("\n\n");
}

function renderBlockElement(element: Dict): string {
  if (element.type === "image") return `[${str(element.alt_text, "alt_text")}](${str(element.image_url, "image_url")})`;
  return "";
}

/** One Block Kit block as Markdown; interactive and unknown blocks render as nothing. */
export function renderBlock(block: unknown): string {
  if (!isDict(block)) throw new PayloadError("block is not a dict");
  const type = str(block.type, 'block["type"]');
  if (type === "context" && truthy(block.elements)) {
    const pieces: string[] = [];
    for (const element of block.elements as unknown[]) {
      if (!isDict(element)) throw new PayloadError("element is not a dict");
      pieces.push(element.type === "image" ? renderBlockElement(element) : textBlock(element, "element"));
    }
    return joinPieces(pieces);
  }
  if (type === "divider") return "----";
  if (type === "header") return "## " + textBlock(block.text, 'block["text"]', true);
  if (type === "image") {
    const url = str(block.image_url, "image_url");
    let alt = str(block.alt_text, "alt_text");
    if ("title" in block) alt = textBlock(block.title, 'block["title"]', true);
    return `[${alt}](${url})`;
  }
  if (type === "section") {
    const pieces: string[] = [];
    if ("text" in block) pieces.push(textBlock(block.text, 'block["text"]'));
    if ("accessory" in block && isDict(block.accessory)) pieces.push(renderBlockElement(block.accessory));
    if ("fields" in block) {
      if (!Array.isArray(block.fields)) throw new PayloadError('block["fields"] is not a list');
      const fields = block.fields.map((f, i) => textBlock(f, `block["fields"][${i}]`));
      if (fields.length === 1) pieces.push(fields[0]!);
      else {
        const cells = fields.map((f) => f.replaceAll("\n", " ").replaceAll("|", " "));
        let table = "| | |\n|-|-|\n";
        for (let i = 0; i < cells.length; i += 2) table += `| ${cells[i]} | ${cells[i + 1] ?? ""} |\n`;
        pieces.push(table);
      }
    }
    return joinPieces(pieces);
  }
  return "";
}

/** A legacy attachment as Markdown: title (linked), pretext, text, fields, blocks, image, footer, time. */
export function renderAttachment(attachment: unknown): string {
  if (!isDict(attachment)) throw new PayloadError("attachment is not a dict");
  const pieces: string[] = [];
  if (truthy(attachment.title)) {
    const title = str(attachment.title, "title");
    pieces.push(truthy(attachment.title_link) ? `## [${title}](${str(attachment.title_link, "title_link")})` : `## ${title}`);
  }
  if (truthy(attachment.pretext)) pieces.push(str(attachment.pretext, "pretext"));
  if (truthy(attachment.text)) pieces.push(str(attachment.text, "text"));
  if ("fields" in attachment && Array.isArray(attachment.fields)) {
    const fields: string[] = [];
    for (const field of attachment.fields) {
      if (!isDict(field)) continue;
      if ("title" in field && "value" in field && truthy(field.title) && truthy(field.value)) fields.push(`*${str(field.title, "title")}*: ${str(field.value, "value")}`);
      else if (truthy(field.title)) fields.push(`*${str(field.title, "title")}*`);
      else if (truthy(field.value)) fields.push(str(field.value, "value"));
    }
    pieces.push(fields.join("\n"));
  }
  if (truthy(attachment.blocks) && Array.isArray(attachment.blocks)) pieces.push(...attachment.blocks.map(renderBlock));
  if (truthy(attachment.image_url)) pieces.push(`[](${encodeURI(str(attachment.image_url, "image_url")).replace(/%25([0-9A-Fa-f]{2})/g, "%$1")})`);
  if (truthy(attachment.footer)) pieces.push(str(attachment.footer, "footer"));
  if (truthy(attachment.ts)) {
    const ts = attachment.ts;
    let time: number;
    if (typeof ts === "number" && Number.isInteger(ts)) time = ts;
    else {
      const parsed = Number.parseFloat(str(ts, "ts"));
      if (Number.isNaN(parsed)) throw new PayloadError("ts is not an integer");
      time = Math.trunc(parsed);
    }
    pieces.push(`<time:${time}>`);
  }
  return joinPieces(pieces);
}
