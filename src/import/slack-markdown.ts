// Slack's mrkdwn as Zulip Markdown, following Zulip's
// zerver/data_import/slack_message_conversion.py: *bold* → **bold**,
// _italic_ → *italic*, ~strike~ → ~~strike~~, <@U123> → @**Full Name**,
// <#C123|name> → #**name**, <http://url|text> → [text](http://url),
// <!here>/<!channel>/<!everyone> → @**all**; code spans and blocks are kept
// as they are. Reactions' Slack emoji names (Slack uses iamcal's emoji-data
// short names) become Zulip's names through the emoji's code point.
import iamcal from "emojibase-data/en/shortcodes/iamcal.json" with { type: "json" };
import { convertSlackFormatting } from "../integrations/slack-format.ts";
import { codeToName, nameToCode, unicodeEmojiCode } from "../markdown/emoji.ts";

export interface SlackNames {
  /** Slack user ID → Parley user and how a mention names them (`Name`, or `Name|id` when two share the name). */
  users: Map<string, { id: number; mentionName: string }>;
  /** Slack channel ID → name. */
  channels: Map<string, string>;
}

export interface ConvertedText {
  content: string;
  /** Parley user IDs mentioned by name. */
  mentioned: Set<number>;
  /** <!here>, <!channel> or <!everyone>. */
  wildcard: boolean;
}

const decodeEntities = (text: string): string => text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

function convertPlain(text: string, names: SlackNames, out: ConvertedText): string {
  // Emphasis as the slack_incoming integration converts it (the same rules as Zulip's importer).
  return decodeEntities(convertSlackFormatting(text).replace(/<([^<>\n]+)>/g, (whole, body: string) => {
    const [target = "", label] = body.split("|", 2) as [string, string | undefined];
    if (target.startsWith("@")) {
      const user = names.users.get(target.slice(1));
      if (!user) return label ? `@${label}` : whole;
      out.mentioned.add(user.id);
      return `@**${user.mentionName}**`;
    }
    if (target.startsWith("#")) {
      const name = names.channels.get(target.slice(1)) ?? label;
      return name ? `#**${name}**` : whole;
    }
    if (target.startsWith("!")) {
      const special = target.slice(1).split("^")[0];
      if (special === "here" || special === "channel" || special === "everyone") {
        out.wildcard = true;
        return "@**all**";
      }
      return label ? label : whole;
    }
    const url = decodeEntities(target);
    if (url.startsWith("mailto:")) return label ? decodeEntities(label) : url.slice("mailto:".length);
    if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return label && label !== target ? `[${decodeEntities(label)}](${url})` : url;
    return whole;
  }));
}

export function slackToMarkdown(text: string, names: SlackNames): ConvertedText {
  const out: ConvertedText = { content: "", mentioned: new Set(), wildcard: false };
  // Code blocks (```…```) and spans (`…`) are copied as they are, their entities decoded.
  const parts = text.split(/(```[\s\S]*?```|`[^`\n]+`)/);
  out.content = parts
    .map((part, i) => {
      if (i % 2 === 0) return convertPlain(part, names, out);
      if (part.startsWith("```")) {
        const inner = part.slice(3, -3).replace(/^\n/, "").replace(/\n$/, "");
        return `\n\`\`\`\n${decodeEntities(inner)}\n\`\`\`\n`;
      }
      return decodeEntities(part);
    })
    .join("")
    .replace(/^\n+|\n+$/g, "");
  return out;
}

/** Slack short name (without colons) → code point, from iamcal's emoji-data, which is what Slack uses. */
const slackNameToCode = new Map<string, string>();
for (const [code, shortcodes] of Object.entries(iamcal as Record<string, string | string[]>)) {
  for (const name of Array.isArray(shortcodes) ? shortcodes : [shortcodes]) slackNameToCode.set(name, unicodeEmojiCode(code));
}

/** A Slack reaction's emoji under Zulip's name and code; undefined for Slack custom emoji (not in exports). */
export function slackEmojiToZulip(slackName: string): { name: string; code: string } | undefined {
  // Skin tones come as "thumbsup::skin-tone-2"; Zulip reacts with the base emoji.
  const base = slackName.split("::")[0]!;
  const code = slackNameToCode.get(base) ?? nameToCode.get(base);
  if (code === undefined) return undefined;
  const name = codeToName.get(code) ?? (nameToCode.has(base) ? base : undefined);
  return name === undefined ? undefined : { name, code };
}
