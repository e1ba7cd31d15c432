// Whether someone is here: presence (model/presence.ts) seen through what
// they chose. Someone in invisible mode (presence_enabled off, which their
// status shows as `away`) counts as offline to others, as in Zulip; you see
// yourself as active unless you are invisible.
import { useEffect, useState } from "react";
import { presenceStatus, usePresence, type PresenceState, type PresenceStatus } from "./presence.ts";
import { useSettings } from "./settings.ts";
import { useUserStatus, type UserStatus } from "./user-status.ts";
import { useUsers } from "./users.ts";

export type Availability = PresenceStatus;

export function availability(
  userId: number,
  facts: { selfId: number; presence: PresenceState; statuses: Record<number, UserStatus>; invisible: boolean; now: number },
): Availability {
  if (userId === facts.selfId) return facts.invisible ? "offline" : "active";
  if (facts.statuses[userId]?.away) return "offline";
  return presenceStatus(facts.presence, userId, facts.now);
}

/** The facts availability() needs, kept current: presence ages, so the clock is read again each half minute. */
export function useAvailabilityFacts() {
  const selfId = useUsers((s) => s.selfId);
  const presence = usePresence();
  const statuses = useUserStatus((s) => s.byUser);
  const invisible = useSettings((s) => s.settings.presence_enabled === false);
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now() / 1000), 30_000);
    return () => clearInterval(timer);
  }, []);
  // A presence event is news from now: the clock moves with it.
  useEffect(() => setNow(Date.now() / 1000), [presence]);
  return { selfId, presence, statuses, invisible, now };
}
