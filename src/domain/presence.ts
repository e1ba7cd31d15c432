// Presence rules, as Zulip's zerver/actions/presence.py and lib/presence.py:
// when a client's report changes the stored row, when it is worth an event,
// and the two API formats of a row. Pure: times are UNIX seconds passed in.

/** How often clients report presence (register: server_presence_ping_interval_seconds). */
export const PRESENCE_PING_INTERVAL_SECS = 60;

/** A user not heard from for this long is offline (register: server_presence_offline_threshold_seconds). */
export const OFFLINE_THRESHOLD_SECS = 200;

/**
 * A report moves a stored time only when it is this much newer: several open
 * clients of one user, each pinging every minute, cost one write a minute.
 */
export const PRESENCE_UPDATE_MIN_FREQ_SECONDS = 55;

/** Legacy format: "active" while last_active_time is within this of last_connected_time. */
export const PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS = 70;

/**
 * Above this many recipients, coming online sends no event (Zulip's
 * USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS): in a big organization such
 * events are quadratic work and clients learn the news at their next ping.
 */
export const USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS = 100;

/** Without history_limit_days, an organization's presence covers the last 14 days. */
export const DEFAULT_PRESENCE_HISTORY_DAYS = 14;

/**
 * How far back presence_enabled=false moves the user's times, so that every
 * client shows them offline at once (and for as long as the setting stays off).
 */
export const PRESENCE_DISABLED_BACKDATE_SECS = OFFLINE_THRESHOLD_SECS + PRESENCE_UPDATE_MIN_FREQ_SECONDS + 10;

export type PresenceStatus = "active" | "idle";

export const PRESENCE_STATUSES: readonly PresenceStatus[] = ["active", "idle"];

/** The stored times of a user's presence; null means never. */
export interface PresenceTimes {
  lastConnectedTime: number | null;
  lastActiveTime: number | null;
}

/** What a report does to a row: a new row, new times for an existing one, or nothing. */
export type PresencePlan =
  | { kind: "create"; times: PresenceTimes; becameOnline: true }
  | { kind: "update"; times: PresenceTimes; becameOnline: boolean }
  | { kind: "none"; becameOnline: boolean };

/** A time that was never set counts as a day old, as in Zulip: its user is newly online. */
const NEVER_AGE = 86400;

/**
 * Zulip's do_update_user_presence: a report of `status` at `now` against the
 * stored row (undefined: none yet). `becameOnline` says whether the change is
 * worth an immediate event: the user is active again after missing enough
 * pings to risk being shown offline before the next one (or has a first row).
 */
export function planPresenceUpdate(current: PresenceTimes | undefined, status: PresenceStatus, now: number): PresencePlan {
  const active = status === "active";
  if (current === undefined) {
    return { kind: "create", times: { lastConnectedTime: now, lastActiveTime: active ? now : null }, becameOnline: true };
  }
  const sinceActive = current.lastActiveTime === null ? NEVER_AGE : now - current.lastActiveTime;
  const sinceConnected = current.lastConnectedTime === null ? NEVER_AGE : now - current.lastConnectedTime;
  const becameOnline = active && sinceActive > OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10;
  const times = { ...current };
  let changed = false;
  if (sinceConnected > PRESENCE_UPDATE_MIN_FREQ_SECONDS) {
    times.lastConnectedTime = now;
    changed = true;
  }
  if (active && sinceActive > PRESENCE_UPDATE_MIN_FREQ_SECONDS) {
    times.lastActiveTime = now;
    // last_connected_time is never older than last_active_time.
    if (times.lastConnectedTime === null || now > times.lastConnectedTime) times.lastConnectedTime = now;
    changed = true;
  }
  return changed ? { kind: "update", times, becameOnline } : { kind: "none", becameOnline };
}

/**
 * Turning presence_enabled off: the stored times move back far enough that
 * the user shows as offline, never forward (a row already that old stays as
 * it is). Returns undefined when nothing changes.
 */
export function backdatedForInvisibility(current: PresenceTimes, now: number): PresenceTimes | undefined {
  const limit = now - PRESENCE_DISABLED_BACKDATE_SECS;
  const back = (time: number | null) => (time === null ? null : Math.min(time, limit));
  const times = { lastConnectedTime: back(current.lastConnectedTime), lastActiveTime: back(current.lastActiveTime) };
  return times.lastConnectedTime === current.lastConnectedTime && times.lastActiveTime === current.lastActiveTime ? undefined : times;
}

/** Modern format (keyed by user ID): the two times, "never" shown as the date the user joined. */
export interface ModernPresence {
  active_timestamp: number;
  idle_timestamp: number;
}

export function modernPresence(times: PresenceTimes, dateJoined: number): ModernPresence {
  return { active_timestamp: times.lastActiveTime ?? dateJoined, idle_timestamp: times.lastConnectedTime ?? dateJoined };
}

/**
 * One client's entry of the legacy format. Zulip stopped recording clients
 * (feature level 178): the one entry is always "website", never pushable.
 */
export interface LegacyClientPresence {
  client: "website";
  status: PresenceStatus;
  timestamp: number;
  pushable: false;
}

/** Zulip's format_legacy_presence_dict: active if active recently enough before the last connection. */
export function legacyClientPresence(times: PresenceTimes, dateJoined: number): LegacyClientPresence {
  const { active_timestamp: lastActive, idle_timestamp: lastConnected } = modernPresence(times, dateJoined);
  const active = lastActive + PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS >= lastConnected;
  return { client: "website", status: active ? "active" : "idle", timestamp: active ? lastActive : lastConnected, pushable: false };
}

/** Legacy format (keyed by email): `aggregated` (really the most recent client) and the one client. */
export interface LegacyPresence {
  aggregated: { client: "website"; status: PresenceStatus; timestamp: number };
  website: LegacyClientPresence;
}

export function legacyPresence(times: PresenceTimes, dateJoined: number): LegacyPresence {
  const website = legacyClientPresence(times, dateJoined);
  return { aggregated: { client: website.client, status: website.status, timestamp: website.timestamp }, website };
}

/**
 * GET /users/{user}/presence's legacy form: without `client` and `pushable`,
 * and `aggregated` offline once its time is older than the offline threshold.
 */
export function singleUserLegacyPresence(times: PresenceTimes, dateJoined: number, now: number): Record<string, { status: string; timestamp: number }> {
  const { aggregated, website } = legacyPresence(times, dateJoined);
  const offline = now - aggregated.timestamp > OFFLINE_THRESHOLD_SECS;
  return {
    aggregated: { status: offline ? "offline" : aggregated.status, timestamp: aggregated.timestamp },
    website: { status: website.status, timestamp: website.timestamp },
  };
}
