// A reaction's emoji: the character for Unicode emoji, the image for the
// organization's custom emoji (register's realm_emoji, kept by model/emoji.ts),
// Zulip's own extra emoji (:zulip:) from the server's static images.
import type { Reaction } from "../api/types.ts";
import { useEmoji } from "../model/emoji.ts";
import { emojiFromCode } from "./rendered.ts";

export function ReactionGlyph({ reaction }: { reaction: Reaction }) {
  const custom = useEmoji((s) => (reaction.reaction_type === "realm_emoji" ? s.realm[reaction.emoji_code] : undefined));
  if (reaction.reaction_type === "unicode_emoji") {
    return <span aria-hidden="true">{emojiFromCode(reaction.emoji_code) ?? `:${reaction.emoji_name}:`}</span>;
  }
  if (custom) return <img className="emoji reaction-emoji" src={custom.source_url} alt="" aria-hidden="true" />;
  if (reaction.reaction_type === "zulip_extra_emoji") return <img className="emoji reaction-emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" alt="" aria-hidden="true" />;
  return <span aria-hidden="true">:{reaction.emoji_name}:</span>;
}
