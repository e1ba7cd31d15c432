// The organization's people with their presence; each opens your direct conversation with them.
import { useEffect, useMemo, useState } from "react";
import { hrefFor } from "../model/navigation.ts";
import { narrowKey, type Narrow, type View } from "../model/narrow.ts";
import { presenceStatus, usePresence, type PresenceStatus } from "../model/presence.ts";
import { useUsers } from "../model/users.ts";

const ORDER: Record<PresenceStatus, number> = { active: 0, idle: 1, offline: 2 };
const LABEL: Record<PresenceStatus, string> = { active: "Active", idle: "Idle", offline: "Offline" };

export function PeopleList({ view }: { view: View }) {
  const { byId, selfId } = useUsers();
  const presence = usePresence();
  // Presence is a matter of time passing too: look again each half minute.
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now() / 1000), 30_000);
    return () => clearInterval(timer);
  }, []);
  const people = useMemo(
    () =>
      Object.values(byId)
        .filter((u) => u.is_active && !u.is_bot)
        .map((u) => ({ user: u, status: u.user_id === selfId ? ("active" as const) : presenceStatus(presence, u.user_id, now) }))
        .sort((a, b) => ORDER[a.status] - ORDER[b.status] || a.user.full_name.localeCompare(b.user.full_name)),
    [byId, selfId, presence, now],
  );
  const currentKey = view.kind === "messages" ? narrowKey(view.narrow) : null;
  return (
    <>
      <h3 className="sidebar-heading" id="people-heading">
        People
      </h3>
      <ul className="people-list" aria-labelledby="people-heading">
        {people.map(({ user, status }) => {
          const narrow: Narrow = { kind: "dm", userIds: [user.user_id] };
          const current = currentKey === narrowKey(narrow);
          return (
            <li key={user.user_id} className={current ? "current" : undefined}>
              <span className={`presence-dot ${status}`} role="img" aria-label={LABEL[status]} title={LABEL[status]} />
              <a href={hrefFor({ kind: "messages", narrow })} aria-current={current ? "page" : undefined}>
                {user.full_name}
                {user.user_id === selfId ? " (you)" : ""}
              </a>
            </li>
          );
        })}
      </ul>
    </>
  );
}
