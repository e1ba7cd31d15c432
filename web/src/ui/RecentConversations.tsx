// Recent conversations, as Zulip's web app shows them: a table of topics and
// direct conversations, the most recently active first, with who took part,
// the unread count and when the last message came. Filters: only those you
// took part in, only unread ones, and muted ones included (left out
// otherwise: muted topics and channels, conversations with muted users).
// "Load more" fetches older history.
import { useEffect, useMemo, useState } from "react";
import { formatDate, formatDateTime, t, useLanguage } from "../i18n.ts";
import { isTopicMuted, useChannels } from "../model/channels.ts";
import { useMuting } from "../model/muting.ts";
import { hrefFor } from "../model/navigation.ts";
import type { Narrow } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { recentFilters, recentStore, useRecent, useRecentFilters, type RecentConversation } from "../model/recent.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { ChannelIcon } from "./ChannelIcon.tsx";
import "../styles/recent-inbox.css";

/** Avatars shown per row; the rest are counted ("+2"). */
const MAX_AVATARS = 4;

/** "Just now", "5 minutes ago", "3 hours ago", "yesterday", "4 days ago", then the date — in the user's language. */
export function relativeTime(seconds: number, now: number, language: string): string {
  const ago = Math.max(0, Math.floor(now / 1000 - seconds));
  if (ago < 60) return t("Just now");
  const format = new Intl.RelativeTimeFormat(language, { numeric: "auto" });
  if (ago < 3600) return format.format(-Math.floor(ago / 60), "minute");
  if (ago < 86_400) return format.format(-Math.floor(ago / 3600), "hour");
  const date = new Date(seconds * 1000);
  const today = new Date(now);
  today.setHours(0, 0, 0, 0);
  const days = Math.ceil((today.getTime() - date.getTime()) / 86_400_000);
  if (days < 7) return format.format(-Math.max(1, days), "day");
  return formatDate(date, new Date(now));
}

/** The current time, moving on every minute so that "5 minutes ago" stays true. */
function useNow(): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 60_000);
    return () => clearInterval(timer);
  }, []);
  return now;
}

function FilterButton({ filter, label }: { filter: "participated" | "unread" | "includeMuted"; label: string }) {
  const on = useRecentFilters((s) => s[filter]);
  return (
    <button type="button" className="recent-filter" aria-pressed={on} onClick={() => recentFilters.toggle(filter)}>
      {label}
    </button>
  );
}

function Participants({ ids }: { ids: number[] }) {
  const byId = useUsers((s) => s.byId);
  const shown = ids.slice(0, MAX_AVATARS);
  const names = ids.map(userName).join(", ");
  return (
    <span className="recent-participants" role="img" aria-label={t("Participants: {{names}}", { names })} title={names}>
      {shown.map((id) => (
        <Avatar key={id} url={byId[id]?.avatar_url ?? null} name={userName(id)} small />
      ))}
      {ids.length > shown.length && <span className="recent-more-participants">+{ids.length - shown.length}</span>}
    </span>
  );
}

function Row({ conversation, count, muted, participants, now, language }: { conversation: RecentConversation; count: number; muted: boolean; participants: number[]; now: number; language: string }) {
  const subscriptions = useChannels((s) => s.subscriptions);
  const date = new Date(conversation.timestamp * 1000);
  let place;
  let what;
  if (conversation.kind === "topic") {
    const sub = subscriptions[conversation.streamId]!;
    const narrow: Narrow = { kind: "topic", streamId: conversation.streamId, topic: conversation.topic };
    place = (
      <a href={hrefFor({ kind: "messages", narrow: { kind: "channel", streamId: sub.stream_id } })} className="recent-channel">
        <ChannelIcon sub={sub} />
        <span className="recent-channel-name">{sub.name}</span>
      </a>
    );
    what = (
      <a href={hrefFor({ kind: "messages", narrow })} className={conversation.topic === "" ? "recent-topic empty-topic" : "recent-topic"}>
        {topicDisplayName(conversation.topic)}
      </a>
    );
  } else {
    const narrow: Narrow = { kind: "dm", userIds: conversation.userIds };
    place = (
      <a href={hrefFor({ kind: "messages", narrow: { kind: "all-dms" } })} className="recent-channel">
        <span className="recent-dm-icon" aria-hidden="true">
          ✉
        </span>
        <span className="recent-channel-name">{t("Direct messages")}</span>
      </a>
    );
    what = (
      <a href={hrefFor({ kind: "messages", narrow })} className="recent-topic">
        {conversation.userIds.map(userName).join(", ")}
      </a>
    );
  }
  return (
    <tr className={[muted ? "muted" : "", count > 0 ? "unread" : ""].join(" ").trim() || undefined}>
      <td className="recent-place">{place}</td>
      <td className="recent-what">
        <span className="recent-what-inner">
          {what}
          {count > 0 && (
            <span className="unread-count" aria-label={t("{{count}} unread", { count })}>
              {count}
            </span>
          )}
        </span>
      </td>
      <td className="recent-who">
        <Participants ids={participants} />
      </td>
      <td className="recent-when">
        <time dateTime={date.toISOString()} title={formatDateTime(date)}>
          {relativeTime(conversation.timestamp, now, language)}
        </time>
      </td>
    </tr>
  );
}

export function RecentConversations() {
  const { conversations, status, foundOldest, loadingMore } = useRecent();
  const filters = useRecentFilters();
  const channelState = useChannels();
  const counts = useUnreads((s) => s.counts);
  const mutedUsers = useMuting((s) => s.mutedUsers);
  const selfId = useUsers((s) => s.selfId);
  useUsers((s) => s.byId);
  const language = useLanguage((s) => s.language);
  const now = useNow();

  useEffect(() => {
    if (status === "idle") void recentStore.load();
  }, [status]);

  const rows = useMemo(() => {
    const needle = filters.text.trim().toLowerCase();
    const out: { conversation: RecentConversation; count: number; muted: boolean; participants: number[] }[] = [];
    for (const c of conversations) {
      let muted: boolean;
      let count: number;
      let text: string;
      if (c.kind === "topic") {
        const sub = channelState.subscriptions[c.streamId];
        // Channels you left (or that are gone) are not shown.
        if (!sub) continue;
        muted = isTopicMuted(channelState, c.streamId, c.topic);
        count = counts.byTopic[c.streamId]?.[c.topic.toLowerCase()]?.count ?? 0;
        text = `${sub.name} ${topicDisplayName(c.topic)}`;
      } else {
        // A conversation whose other participants are all muted is muted (Zulip's is_dm_muted); notes to self are not.
        muted = !(c.userIds.length === 1 && c.userIds[0] === selfId) && c.userIds.every((id) => mutedUsers[id] !== undefined);
        count = counts.byDm[c.userIds.join(",")] ?? 0;
        text = c.userIds.map(userName).join(" ");
      }
      if (muted && !filters.includeMuted) continue;
      if (filters.unread && count === 0) continue;
      if (filters.participated && !c.participated) continue;
      if (needle !== "" && !text.toLowerCase().includes(needle)) continue;
      // Who spoke, most recent first; a direct conversation's silent members after them. Muted users only when muted conversations are shown.
      const people = c.kind === "dm" ? [...new Set([...c.senders, ...c.userIds.filter((id) => id !== selfId)])] : c.senders;
      const participants = filters.includeMuted ? people : people.filter((id) => mutedUsers[id] === undefined);
      out.push({ conversation: c, count, muted, participants });
    }
    return out;
  }, [conversations, filters, channelState, counts, mutedUsers, selfId]);

  const anyFilter = filters.participated || filters.unread || filters.text.trim() !== "";
  return (
    <section className="recent" aria-label={t("Recent conversations")}>
      <div className="recent-toolbar">
        <input
          type="search"
          className="recent-text-filter"
          aria-label={t("Filter conversations")}
          placeholder={t("Filter conversations")}
          value={filters.text}
          onChange={(e) => recentFilters.setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "Escape" && filters.text !== "") {
              e.stopPropagation();
              recentFilters.setText("");
            }
          }}
        />
        <div role="group" className="recent-filters" aria-label={t("Filters")}>
          <FilterButton filter="participated" label={t("Participated")} />
          <FilterButton filter="unread" label={t("Unread")} />
          <FilterButton filter="includeMuted" label={t("Include muted")} />
        </div>
      </div>
      {status === "error" ? (
        <div className="recent-empty" role="alert">
          <p>{t("Recent conversations could not be loaded.")}</p>
          <button type="button" onClick={() => recentStore.retry()}>
            {t("Try again")}
          </button>
        </div>
      ) : rows.length === 0 && status !== "loaded" ? (
        <p className="recent-empty" aria-busy="true">
          {t("Loading…")}
        </p>
      ) : rows.length === 0 ? (
        <p className="recent-empty">{anyFilter || conversations.length > 0 ? t("No conversations match your filters.") : t("No recent conversations.")}</p>
      ) : (
        <div className="recent-table-wrap">
          <table className="recent-table">
            <thead>
              <tr>
                <th scope="col">{t("Channel")}</th>
                <th scope="col">{t("Topic")}</th>
                <th scope="col">{t("Participants")}</th>
                <th scope="col">{t("Time")}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <Row key={row.conversation.key} {...row} now={now} language={language} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {status === "loaded" && !foundOldest && (
        <div className="recent-load-more">
          <button type="button" onClick={() => void recentStore.loadMore()} disabled={loadingMore}>
            {loadingMore ? t("Loading…") : t("Load more")}
          </button>
        </div>
      )}
    </section>
  );
}
