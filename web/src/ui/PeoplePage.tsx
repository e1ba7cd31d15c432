// The people page (#people): who is active now, idle or
// offline, with their status, and a link to a direct message with each.
import { useEffect, useMemo, useState } from "react";
import { hrefFor } from "../model/navigation.ts";
import { presenceStatus, usePresence } from "../model/presence.ts";
import { useUserStatus } from "../model/user-status.ts";
import { useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { emojiFromCode } from "./rendered.ts";
import { roleLabel } from "./people.ts";

const ORDER = { active: 0, idle: 1, offline: 2 } as const;
const LABEL = { active: "Active", idle: "Idle", offline: "Offline" } as const;

export function PeoplePage() {
  const byId = useUsers((s) => s.byId);
  const selfId = useUsers((s) => s.selfId);
  const presence = usePresence();
  const statuses = useUserStatus((s) => s.byUser);
  const [filter, setFilter] = useState("");
  const [now, setNow] = useState(() => Date.now() / 1000);
  // Presence ages: look again every half minute.
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now() / 1000), 30_000);
    return () => clearInterval(timer);
  }, []);
  const people = useMemo(() => {
    const q = filter.trim().toLowerCase();
    return Object.values(byId)
      .filter((u) => u.is_active !== false && (q === "" || u.full_name.toLowerCase().includes(q) || u.email.toLowerCase().includes(q)))
      .map((u) => ({ user: u, status: statuses[u.user_id]?.away ? ("offline" as const) : presenceStatus(presence, u.user_id, now) }))
      .sort((a, b) => ORDER[a.status] - ORDER[b.status] || a.user.full_name.localeCompare(b.user.full_name));
  }, [byId, presence, statuses, filter, now]);
  return (
    <section className="page people" aria-label="People">
      <div className="page-toolbar">
        <label className="visually-hidden" htmlFor="people-filter">
          Filter people
        </label>
        <input id="people-filter" placeholder="Filter people" value={filter} onChange={(e) => setFilter(e.target.value)} />
      </div>
      <ul className="people-list">
        {people.map(({ user, status }) => {
          const s = statuses[user.user_id];
          const emoji = s?.emoji_code && s.reaction_type === "unicode_emoji" ? emojiFromCode(s.emoji_code) : null;
          return (
            <li key={user.user_id} aria-label={user.full_name}>
              <span className={`presence-dot ${status}`} role="img" aria-label={LABEL[status]} title={LABEL[status]} />
              <Avatar url={user.avatar_url} name={user.full_name} small />
              <a href={hrefFor({ kind: "messages", narrow: { kind: "dm", userIds: user.user_id === selfId ? [selfId] : [user.user_id] } })}>{user.full_name}</a>
              {emoji && <span aria-hidden="true">{emoji}</span>}
              {s?.status_text && <span className="status-text">{s.status_text}</span>}
              <span className="muted-text">
                {user.is_bot ? "Bot" : roleLabel(user.role)}
              </span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
