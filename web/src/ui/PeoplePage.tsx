// The people page (#people): who is active now, idle or offline, with their
// status and role; a name opens the person's user card, and a link goes to a
// direct message with each.
import { useMemo, useState } from "react";
import { t } from "../i18n.ts";
import { availability, useAvailabilityFacts } from "../model/availability.ts";
import { hrefFor } from "../model/navigation.ts";
import { userCard } from "../model/user-card.ts";
import { realEmail, shownEmail, useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { StatusEmoji } from "./StatusEmoji.tsx";
import { availabilityLabel, personRole } from "./UserCard.tsx";

const ORDER = { active: 0, idle: 1, offline: 2 } as const;

export function PeoplePage() {
  const byId = useUsers((s) => s.byId);
  const facts = useAvailabilityFacts();
  const [filter, setFilter] = useState("");
  const people = useMemo(() => {
    const q = filter.trim().toLowerCase();
    return Object.values(byId)
      .filter((u) => u.is_active !== false && (q === "" || u.full_name.toLowerCase().includes(q) || shownEmail(u).toLowerCase().includes(q)))
      .map((u) => ({ user: u, status: availability(u.user_id, facts) }))
      .sort((a, b) => ORDER[a.status] - ORDER[b.status] || a.user.full_name.localeCompare(b.user.full_name));
  }, [byId, facts, filter]);
  return (
    <section className="page people" aria-label={t("People")}>
      <div className="page-toolbar">
        <label className="visually-hidden" htmlFor="people-filter">
          {t("Filter people")}
        </label>
        <input id="people-filter" placeholder={t("Filter people")} value={filter} onChange={(e) => setFilter(e.target.value)} />
      </div>
      <ul className="people-list">
        {people.map(({ user, status }) => {
          const s = facts.statuses[user.user_id];
          const email = realEmail(user);
          return (
            <li key={user.user_id} aria-label={user.full_name}>
              <span className={`presence-dot ${status}`} role="img" aria-label={availabilityLabel(status)} title={availabilityLabel(status)} />
              <button type="button" className="avatar-button" aria-label={t("{{name}}'s card", { name: user.full_name })} aria-haspopup="dialog" onClick={(e) => userCard.toggle(user.user_id, e.currentTarget)}>
                <Avatar url={user.avatar_url} name={user.full_name} small />
              </button>
              <a href={hrefFor({ kind: "messages", narrow: { kind: "dm", userIds: [user.user_id] } })}>{user.full_name}</a>
              <StatusEmoji status={s} />
              {s?.status_text && <span className="status-text">{s.status_text}</span>}
              {email && <span className="person-email muted-text">{email}</span>}
              <span className="muted-text">{personRole(user)}</span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
