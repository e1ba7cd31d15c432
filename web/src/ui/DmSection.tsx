// The left sidebar's direct message section, as Zulip's: your direct
// conversations by recency, read ones too, each with its unread count. A
// few are listed (and any unread or open one beyond them); "More
// conversations" lists them all. Conversations with muted users are left out.
import { useState } from "react";
import { t } from "../i18n.ts";
import { useDmConversations } from "../model/dm-conversations.ts";
import { useMuting } from "../model/muting.ts";
import { hrefFor } from "../model/navigation.ts";
import type { View } from "../model/narrow.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import "../styles/recent-inbox.css";

/** Zulip's number of conversations listed before "More conversations". */
export const DM_SECTION_SIZE = 8;

export function DmSection({ view }: { view: View }) {
  const conversations = useDmConversations((s) => s.conversations);
  const byDm = useUnreads((s) => s.counts.byDm);
  const mutedUsers = useMuting((s) => s.mutedUsers);
  const selfId = useUsers((s) => s.selfId);
  useUsers((s) => s.byId);
  const [expanded, setExpanded] = useState(false);

  const currentKey = view.kind === "messages" && view.narrow.kind === "dm" ? view.narrow.userIds.join(",") : null;
  const keys = conversations.map((c) => c.key);
  // The open conversation, before its first message, leads; unread ones the server's recent list did not reach come last.
  if (currentKey !== null && !keys.includes(currentKey)) keys.unshift(currentKey);
  for (const key of Object.keys(byDm)) if (!keys.includes(key)) keys.push(key);
  const isMuted = (key: string) => key !== String(selfId) && key.split(",").every((id) => mutedUsers[Number(id)] !== undefined);
  const all = keys.filter((key) => key !== "" && (key === currentKey || !isMuted(key)));
  const shown = expanded ? all : all.filter((key, i) => i < DM_SECTION_SIZE || (byDm[key] ?? 0) > 0 || key === currentKey);
  if (all.length === 0) return null;

  return (
    <div className="dm-section">
      <h3 className="sidebar-heading" id="dm-section-heading">
        {t("Direct messages")}
      </h3>
      <ul className="dm-list" id="dm-section-list" aria-label={t("Direct message conversations")}>
        {shown.map((key) => {
          const userIds = key.split(",").map(Number);
          const current = key === currentKey;
          const label = key === String(selfId) ? t("{{name}} (you)", { name: userName(selfId) }) : userIds.map(userName).join(", ");
          const count = byDm[key] ?? 0;
          return (
            <li key={key} className={current ? "current" : undefined}>
              <a href={hrefFor({ kind: "messages", narrow: { kind: "dm", userIds } })} aria-current={current ? "page" : undefined} className={count > 0 ? "has-unread" : undefined}>
                {label}
              </a>
              {count > 0 && (
                <span className="unread-count" aria-label={t("{{count}} unread", { count })}>
                  {count}
                </span>
              )}
            </li>
          );
        })}
      </ul>
      {(expanded || shown.length < all.length) && (
        <button type="button" className="dm-more" aria-controls="dm-section-list" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
          {expanded ? t("Fewer conversations") : t("More conversations")}
        </button>
      )}
    </div>
  );
}
