// The right sidebar (Zulip's buddy list): everyone in the organization,
// grouped by whether they are active now, idle or offline (presence, kept
// live by presence events), with their status, filtered by a search box.
// A name opens the person's user card. Collapsible on a wide screen; a drawer
// on a phone-sized one, opened by the header's user-list button.
import { useEffect, useMemo, useState, useSyncExternalStore } from "react";
import { t } from "../i18n.ts";
import { availability, useAvailabilityFacts, type Availability } from "../model/availability.ts";
import { hrefFor } from "../model/navigation.ts";
import { userCard } from "../model/user-card.ts";
import { PHONE_QUERY, userList, useUserList } from "../model/user-list.ts";
import { useUnreads } from "../model/unreads.ts";
import { useUsers } from "../model/users.ts";
import { StatusEmoji } from "./StatusEmoji.tsx";
import { availabilityLabel } from "./UserCard.tsx";

/** Rows drawn per group; a filter finds the rest (organizations can be large). */
const MAX_ROWS = 300;

const GROUPS: { id: Availability; heading: () => string }[] = [
  { id: "active", heading: () => t("Active now") },
  { id: "idle", heading: () => t("Idle") },
  { id: "offline", heading: () => t("Offline") },
];

function subscribePhone(onChange: () => void): () => void {
  const query = window.matchMedia(PHONE_QUERY);
  query.addEventListener("change", onChange);
  return () => query.removeEventListener("change", onChange);
}

/** Whether the page has the phone-sized layout. */
export function usePhoneLayout(): boolean {
  return useSyncExternalStore(subscribePhone, () => window.matchMedia(PHONE_QUERY).matches);
}

/** Whether someone's name matches the filter: the start of any word of it, or of their visible email. */
function matches(query: string, name: string, email: string | null | undefined): boolean {
  if (query === "") return true;
  const lower = name.toLowerCase();
  return lower.startsWith(query) || lower.split(/\s+/).some((w) => w.startsWith(query)) || lower.includes(query) || Boolean(email?.toLowerCase().startsWith(query));
}

/** The header's button that shows or hides the user list. */
export function UserListToggle() {
  const phone = usePhoneLayout();
  const { hidden, drawerOpen } = useUserList();
  const shown = phone ? drawerOpen : !hidden;
  return (
    <button type="button" className="user-list-toggle" aria-controls="user-list" aria-expanded={shown} aria-label={shown ? t("Hide user list") : t("Show user list")} title={shown ? t("Hide user list") : t("Show user list")} onClick={() => userList.toggle(phone)}>
      <svg aria-hidden="true" width="18" height="18" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
        <circle cx="9" cy="8" r="3.5" />
        <path d="M2.5 20c0-3.6 2.9-6 6.5-6s6.5 2.4 6.5 6" />
        <circle cx="17" cy="9" r="2.8" />
        <path d="M16.5 14.2c2.9.2 5 2.3 5 5.3" />
      </svg>
    </button>
  );
}

export function BuddyList() {
  const phone = usePhoneLayout();
  const { hidden, drawerOpen } = useUserList();
  const byId = useUsers((s) => s.byId);
  const facts = useAvailabilityFacts();
  const dmCounts = useUnreads((s) => s.counts.byDm);
  const [filter, setFilter] = useState("");
  const shown = phone ? drawerOpen : !hidden;

  // The drawer closes with Escape or a tap beside it (not on a card opened from it), like Zulip's.
  useEffect(() => {
    if (!phone || !drawerOpen) return;
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape" && !e.defaultPrevented) userList.closeDrawer();
    };
    const onDown = (e: PointerEvent) => {
      const target = e.target as Element;
      if (target.closest?.("#user-list, .user-list-toggle, .popover, dialog")) return;
      userList.closeDrawer();
    };
    document.addEventListener("keydown", onKey);
    document.addEventListener("pointerdown", onDown);
    return () => {
      document.removeEventListener("keydown", onKey);
      document.removeEventListener("pointerdown", onDown);
    };
  }, [phone, drawerOpen]);

  const groups = useMemo(() => {
    const q = filter.trim().toLowerCase();
    const by: Record<Availability, { user: (typeof byId)[number]; status: Availability }[]> = { active: [], idle: [], offline: [] };
    for (const user of Object.values(byId)) {
      if (!user.is_active || user.is_bot || !matches(q, user.full_name, user.delivery_email)) continue;
      const status = availability(user.user_id, facts);
      by[status].push({ user, status });
    }
    for (const list of Object.values(by)) list.sort((a, b) => Number(b.user.user_id === facts.selfId) - Number(a.user.user_id === facts.selfId) || a.user.full_name.localeCompare(b.user.full_name));
    return by;
  }, [byId, facts, filter]);

  if (!shown) return <aside id="user-list" className="buddy-sidebar" aria-label={t("User list")} hidden />;
  const empty = GROUPS.every((g) => groups[g.id].length === 0);
  return (
    <>
      {phone && <div className="drawer-backdrop open" aria-hidden="true" />}
      <aside id="user-list" className={`buddy-sidebar${phone ? " drawer" : ""}`} aria-label={t("User list")}>
        <div className="buddy-top">
          <label className="visually-hidden" htmlFor="user-list-filter">
            {t("Filter users")}
          </label>
          <input id="user-list-filter" data-shortcut="user-filter" type="search" placeholder={t("Filter users")} value={filter} onChange={(e) => setFilter(e.target.value)} autoComplete="off" />
          <button type="button" className="buddy-close" aria-label={t("Hide user list")} title={t("Hide user list")} onClick={() => userList.toggle(phone)}>
            ×
          </button>
        </div>
        {empty && <p className="buddy-empty">{t("No matching users.")}</p>}
        {GROUPS.map(({ id, heading }) => {
          const people = groups[id];
          if (people.length === 0) return null;
          return (
            <section key={id} className="buddy-group">
              <h2 className="buddy-heading" id={`buddy-${id}`}>
                {heading()} <span className="buddy-count">({people.length})</span>
              </h2>
              <ul className="buddy-list" aria-labelledby={`buddy-${id}`}>
                {people.slice(0, MAX_ROWS).map(({ user, status }) => {
                  const userStatus = facts.statuses[user.user_id];
                  const unread = dmCounts[String(user.user_id)] ?? 0;
                  return (
                    <li key={user.user_id} className="buddy-row">
                      <span className={`presence-dot ${status}`} role="img" aria-label={availabilityLabel(status)} title={availabilityLabel(status)} />
                      <span className="buddy-who">
                        <span className="buddy-name-line">
                          <a
                            className="buddy-name"
                            href={hrefFor({ kind: "messages", narrow: { kind: "dm", userIds: [user.user_id] } })}
                            aria-haspopup="dialog"
                            onClick={(e) => {
                              // A plain click opens the card; a click for a new tab still follows the link (their conversation with you).
                              if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
                              e.preventDefault();
                              userCard.toggle(user.user_id, e.currentTarget);
                            }}
                          >
                            {user.full_name}
                          </a>
                          {user.user_id === facts.selfId && <span className="buddy-you">{t("(you)")}</span>}
                          <StatusEmoji status={userStatus} />
                        </span>
                        {userStatus?.status_text && <span className="buddy-status-text">{userStatus.status_text}</span>}
                      </span>
                      {unread > 0 && (
                        <span className="unread-count" aria-label={t("{{count}} unread", { count: unread })}>
                          {unread}
                        </span>
                      )}
                    </li>
                  );
                })}
              </ul>
              {people.length > MAX_ROWS && <p className="buddy-more">{t("{{count}} more: filter to find them.", { count: people.length - MAX_ROWS })}</p>}
            </section>
          );
        })}
      </aside>
    </>
  );
}
