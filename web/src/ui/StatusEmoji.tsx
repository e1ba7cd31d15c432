// Someone's status emoji (Unicode, the organization's own, or Zulip's extra), with its name for screen readers.
import type { Reaction } from "../api/types.ts";
import type { UserStatus } from "../model/user-status.ts";
import { ReactionGlyph } from "./Emoji.tsx";

/** `decorative`: beside text that says the same (a suggestion's label), hidden from screen readers. */
export function StatusEmoji({ status, decorative }: { status: UserStatus | undefined; decorative?: boolean }) {
  if (!status?.emoji_name || !status.emoji_code) return null;
  const reaction: Reaction = {
    emoji_name: status.emoji_name,
    emoji_code: status.emoji_code,
    reaction_type: (status.reaction_type ?? "unicode_emoji") as Reaction["reaction_type"],
    user_id: 0,
  };
  if (decorative) {
    return (
      <span className="status-emoji" aria-hidden="true">
        <ReactionGlyph reaction={reaction} />
      </span>
    );
  }
  return (
    <span className="status-emoji" role="img" aria-label={`:${status.emoji_name}:`} title={`:${status.emoji_name}:`}>
      <ReactionGlyph reaction={reaction} />
    </span>
  );
}
