// A channel's icon in its colour: a lock for a private channel, "#" for the
// others, the same in the sidebar, the inbox and recent conversations.
import type { Subscription } from "../api/types.ts";

export function ChannelIcon({ sub }: { sub: Pick<Subscription, "color" | "invite_only"> }) {
  return (
    <span className={sub.invite_only ? "channel-swatch private" : "channel-swatch"} style={{ background: sub.color }} aria-hidden="true">
      {sub.invite_only ? "🔒" : "#"}
    </span>
  );
}
