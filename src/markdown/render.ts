// Zulip-flavoured Markdown -> Zulip's rendered_content HTML.
// Pure and synchronous; the caller supplies the users, groups and channels a
// message may name through MarkdownContext (use referencedNames() to load only
// those). See docs/markdown.md.

import MarkdownIt from "markdown-it";
import type { MarkdownContext, RenderedMessage } from "./types.ts";
import { topicLinks as topicLinksImpl, type CompiledLinkifiers } from "./linkifiers.ts";
import { isFenceCandidate, zulipPlugin, type ZulipEnv } from "./zulip-rules.ts";

export type { MarkdownContext, MentionUser, RenderedMessage } from "./types.ts";
export { compileLinkifiers, type CompiledLinkifiers, type Linkifier } from "./linkifiers.ts";

// One instance for the process: rules are set up once, per-message state
// travels in `env`. Made with the first message rendered: setting it up
// (markdown-it compiles its linkify patterns even when linkify is off) is
// start-up time and memory a server that renders nothing yet need not spend.
let md: MarkdownIt | undefined;

function markdownIt(): MarkdownIt {
  if (!md) {
    md = new MarkdownIt("default", {
      html: false, // raw HTML is always escaped
      linkify: false, // Zulip's own bare-URL rules are used instead
      typographer: false,
      breaks: true,
      xhtmlOut: false,
    });
    md.use(zulipPlugin);
  }
  return md;
}

// ------------------------------------------------------------ preprocessing

// Zulip's fence regex (also used to skip code while fixing up lists).
const FENCE_LINE_RE = /^ {0,3}(~{3,}|`{3,})[ ]*(?:\{?\.?([a-zA-Z0-9_+-./#]+)[ ]*([^ ~`][^~`]*)?\}?)?$/;
const LIST_ITEM_RE = /^( *)([*+-]|\d{1,9}[.)])( +|$)(.*)$/;
const HR_RE = /^ {0,3}([-*_])(?: *\1){2,} *$/;

function expandTabs(line: string): string {
  let out = "";
  for (const ch of line) {
    if (ch === "\t") out += " ".repeat(4 - (out.length % 4));
    else out += ch;
  }
  return out;
}

/**
 * Python-Markdown's whitespace normalisation plus Zulip's list conventions,
 * rewritten into CommonMark terms for markdown-it:
 *  - tabs expand to 4 columns, whitespace-only lines become empty;
 *  - nested list items are indented by 2 spaces per level, whatever the
 *    width of the parent's marker ("1. a\n  2. b" nests);
 *  - `*`, `-` and `+` items form one list;
 *  - an ordered list may start right after a paragraph line at any number
 *    (see orderedListStarts).
 */
function preprocess(content: string, orderedListStarts: Map<number, number>): string {
  let text = content.replace(/\r\n?/g, "\n");
  const hasTab = text.includes("\t");
  const lines = text.split("\n");
  const out: string[] = [];
  const fences: { fence: string; code: boolean }[] = [];
  let stack: number[] = []; // content column of each open list level
  let prevBlank = true;

  for (let raw of lines) {
    if (hasTab) raw = expandTabs(raw);
    let line = /^[ ]*$/.test(raw) ? "" : raw;

    let lead = 0;
    while (lead < 4 && line.charCodeAt(lead) === 0x20) lead++;
    const fm = lead < 4 && isFenceCandidate(line, lead, line.length) ? FENCE_LINE_RE.exec(line) : null;
    if (fm) {
      const top = fences[fences.length - 1];
      if (top && !fm[2] && fm[1] === top.fence) fences.pop();
      else if (!top || !top.code) {
        const lang = fm[2]?.toLowerCase();
        fences.push({ fence: fm[1]!, code: !(lang === "quote" || lang === "quoted" || lang === "spoiler") });
      }
    } else if (!fences[fences.length - 1]?.code) {
      // (Nothing is pushed over a code fence: one open is always on top.)
      const item = HR_RE.test(line) ? null : LIST_ITEM_RE.exec(line);
      const indent = line.length - line.trimStart().length;
      if (item && (stack.length > 0 || indent < 4)) {
        // Ordered items are all written "1." (markdown-it lets only a list
        // starting at 1 interrupt a paragraph); the number is put back as the
        // list's `start` after parsing.
        let marker = "*";
        let pad = "";
        if (/^\d/.test(item[2]!)) {
          orderedListStarts.set(out.length, Number.parseInt(item[2]!, 10));
          marker = "1" + item[2]!.slice(-1);
          pad = " ".repeat(item[2]!.length - marker.length);
        }
        const level = stack.length === 0 ? 0 : Math.min(Math.floor(indent / 2), stack.length);
        const col = level === 0 ? Math.min(indent, 3) : stack[level - 1]!;
        const spaces = item[3]!.length;
        stack.length = level;
        stack.push(col + item[2]!.length + (spaces === 0 || spaces > 4 ? 1 : spaces));
        line = " ".repeat(col) + marker + pad + item[3] + item[4];
      } else if (line !== "") {
        if (stack.length > 0) {
          if (indent < 2 && prevBlank) stack = [];
          else if (indent >= 2 && prevBlank) {
            const level = Math.min(Math.floor(indent / 2), stack.length);
            line = " ".repeat(stack[level - 1]! + indent - 2 * level) + line.trimStart();
          }
        }
      }
    }
    prevBlank = line === "";
    out.push(line);
  }
  text = out.join("\n");
  return text;
}

// ------------------------------------------------------------ public API

function realmParts(realmUrl: string): { url: string; host: string } {
  const url = realmUrl.replace(/\/+$/, "");
  const m = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/([^/?#]*)/.exec(url);
  return { url, host: m ? m[1]!.toLowerCase() : "" };
}

export function renderMarkdown(content: string, ctx: MarkdownContext): RenderedMessage {
  const realm = realmParts(ctx.realmUrl);
  const zulip: ZulipEnv = {
    ctx,
    realmUrl: realm.url,
    realmHost: realm.host,
    inQuote: false,
    mentionedUserIds: new Set(),
    mentionedGroupIds: new Set(),
    channelWildcard: false,
    topicWildcard: false,
    hasLink: false,
    hasImage: false,
    uploadPathIds: [],
    linkDepth: 0,
    orderedListStarts: new Map(),
    scans: null,
    linkifiers: ctx.linkifiers && ctx.linkifiers.length > 0 ? ctx.linkifiers : null,
    linksForPreview: [],
  };
  const source = preprocess(content, zulip.orderedListStarts);
  const html = content.trim() === "" ? "" : markdownIt().render(source, { zulip }).trim();
  const isMeMessage =
    content.startsWith("/me ") && html.startsWith("<p>") && html.endsWith("</p>") && html.indexOf("<p>", 3) === -1;
  return {
    html,
    mentionedUserIds: [...zulip.mentionedUserIds],
    mentionedGroupIds: [...zulip.mentionedGroupIds],
    channelWildcard: zulip.channelWildcard,
    topicWildcard: zulip.topicWildcard,
    isMeMessage,
    hasLink: zulip.hasLink,
    hasImage: zulip.hasImage,
    hasAttachment: zulip.uploadPathIds.length > 0,
    uploadPathIds: zulip.uploadPathIds,
    linksForPreview: zulip.linksForPreview,
  };
}

const MENTION_SCAN_RE = /(?<![^\s'"({[/<])@_?\*\*([^*]+)\*\*/gu;
const GROUP_SCAN_RE = /(?<![^\s'"({[/<])@_?\*([^*]+)\*/gu;
const CHANNEL_SCAN_RE = /(?<![^\s'"({/<])#\*\*([^*]+)\*\*/gu;
const WILDCARDS = new Set(["all", "everyone", "stream", "channel", "topic"]);

/**
 * Cheap pre-scan of the raw content: the names and ids a message may
 * reference, so the caller loads only those users/groups/channels. Like
 * Zulip's, it over-estimates (it does not know about code blocks).
 */
export function referencedNames(content: string): {
  userNames: string[];
  userIds: number[];
  groupNames: string[];
  channelNames: string[];
} {
  const userNames = new Set<string>();
  const userIds = new Set<number>();
  const groupNames = new Set<string>();
  const channelNames = new Set<string>();
  if (content.includes("@")) {
    for (const m of content.matchAll(MENTION_SCAN_RE)) {
      const text = m[1]!;
      if (WILDCARDS.has(text)) continue;
      const id = /^(.+)?\|(\d+)$/s.exec(text);
      if (id) {
        userIds.add(Number(id[2]));
        if (id[1] !== undefined) userNames.add(id[1]);
      } else {
        userNames.add(text);
      }
    }
    for (const m of content.matchAll(GROUP_SCAN_RE)) groupNames.add(m[1]!);
  }
  if (content.includes("#**")) {
    for (const m of content.matchAll(CHANNEL_SCAN_RE)) {
      const text = m[1]!;
      channelNames.add(text);
      const gt = text.indexOf(">");
      if (gt > 0) channelNames.add(text.slice(0, gt));
    }
  }
  return {
    userNames: [...userNames],
    userIds: [...userIds],
    groupNames: [...groupNames],
    channelNames: [...channelNames],
  };
}

/** Zulip's topic_links: the organization's linkifiers' links and the raw URLs in a topic name, as [{text, url}]. */
export function topicLinks(topic: string, linkifiers: CompiledLinkifiers = []): { text: string; url: string }[] {
  return topicLinksImpl(topic, linkifiers);
}
