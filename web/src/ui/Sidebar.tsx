// Left sidebar: the views, your recent direct conversations (DmSection.tsx),
// and your channels with unread counts (and the open channel's topics).
import { useEffect, useMemo, useState } from "react";
import type { Subscription } from "../api/types.ts";
import { t } from "../i18n.ts";
import { useChannelFolders, visibleFolders } from "../model/channel-folders.ts";
import { isTopicMuted, useChannels } from "../model/channels.ts";
import { useLayout } from "../model/layout.ts";
import { hrefFor } from "../model/navigation.ts";
import { narrowKey, type Narrow, type View } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { topicsStore, useTopics } from "../model/topics.ts";
import { useUnreads } from "../model/unreads.ts";
import { useUsers } from "../model/users.ts";
import { useScheduled } from "../model/scheduled.ts";
import { DmSection } from "./DmSection.tsx";

function Count({ n, label }: { n: number; label?: string }) {
  if (n <= 0) return null;
  return (
    <span className="unread-count" aria-label={`${n} ${label ?? "unread"}`}>
      {n}
    </span>
  );
}

function isCurrent(view: View, narrow: Narrow | "inbox"): boolean {
  if (narrow === "inbox") return view.kind === "inbox";
  return view.kind === "messages" && narrowKey(view.narrow) === narrowKey(narrow);
}

function ViewLink({ view, target, label, count, countLabel }: { view: View; target: Narrow | "inbox"; label: string; count?: number; countLabel?: string }) {
  const href = target === "inbox" ? "#inbox" : hrefFor({ kind: "messages", narrow: target });
  return (
    <li className={isCurrent(view, target) ? "current" : undefined}>
      <a href={href} aria-current={isCurrent(view, target) ? "page" : undefined}>
        {label}
      </a>
      <Count n={count ?? 0} label={countLabel} />
    </li>
  );
}

function TopicList({ streamId, view }: { streamId: number; view: View }) {
  const topics = useTopics((s) => s.byStream[streamId]);
  const unreadTopics = useUnreads((s) => s.counts.byTopic[streamId]);
  const channels = useChannels();
  useEffect(() => {
    void topicsStore.fetch(streamId);
  }, [streamId, topics]);
  const shown = useMemo(() => {
    const list = [...(topics ?? [])];
    // Unread topics the list has not heard of yet (a fetch in flight) are shown too.
    for (const t of Object.values(unreadTopics ?? {})) {
      if (!list.some((x) => x.name.toLowerCase() === t.topic.toLowerCase())) list.push({ name: t.topic, maxId: 0 });
    }
    return list.slice(0, 30);
  }, [topics, unreadTopics]);
  if (shown.length === 0) return null;
  return (
    <ul className="topic-list" aria-label={t("Topics")}>
      {shown.map((t) => {
        const narrow: Narrow = { kind: "topic", streamId, topic: t.name };
        const muted = isTopicMuted(channels, streamId, t.name);
        const resolved = t.name.startsWith("✔ ");
        const count = unreadTopics?.[t.name.toLowerCase()]?.count ?? 0;
        return (
          <li key={t.name} className={[isCurrent(view, narrow) ? "current" : "", muted ? "muted" : "", resolved ? "resolved" : ""].join(" ").trim() || undefined}>
            <a href={hrefFor({ kind: "messages", narrow })} aria-current={isCurrent(view, narrow) ? "page" : undefined} className={t.name === "" ? "empty-topic" : undefined}>
              {topicDisplayName(t.name)}
            </a>
            {!muted && <Count n={count} />}
          </li>
        );
      })}
    </ul>
  );
}

function sortChannels(subs: Subscription[]): Subscription[] {
  return subs.sort((a, b) => Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name));
}

export function Sidebar({ view }: { view: View }) {
  const channelState = useChannels();
  const subscriptions = channelState.subscriptions;
  const counts = useUnreads((s) => s.counts);
  const scheduledCount = useScheduled((s) => s.messages.length);
  // A channel's count leaves out its muted topics, as Zulip's does.
  const channelCount = (streamId: number) =>
    Object.values(counts.byTopic[streamId] ?? {}).reduce((sum, t) => sum + (isTopicMuted(channelState, streamId, t.topic) ? 0 : t.count), 0);
  useUsers((s) => s.byId);
  const [channelFilter, setChannelFilter] = useState("");
  const leftOpen = useLayout((s) => s.leftOpen);
  const channels = useMemo(() => {
    const needle = channelFilter.trim().toLowerCase();
    return sortChannels(Object.values(subscriptions)).filter((sub) => needle === "" || sub.name.toLowerCase().includes(needle));
  }, [subscriptions, channelFilter]);
  const openStream = view.kind === "messages" && (view.narrow.kind === "channel" || view.narrow.kind === "topic") ? view.narrow.streamId : null;
  const folderState = useChannelFolders((f) => f.byId);
  const folders = useMemo(() => visibleFolders(folderState), [folderState]);

  const channelItem = (sub: Subscription) => {
    const narrow: Narrow = { kind: "channel", streamId: sub.stream_id };
    const current = isCurrent(view, narrow);
    return (
      <li key={sub.stream_id} data-stream-id={sub.stream_id} className={[current ? "current" : "", sub.is_muted ? "muted" : ""].join(" ").trim() || undefined}>
        <div className="channel-row">
          <span className="channel-swatch" style={{ background: sub.color }} aria-hidden="true">
            {sub.invite_only ? "🔒" : "#"}
          </span>
          <a href={hrefFor({ kind: "messages", narrow })} aria-current={current ? "page" : undefined}>
            {sub.name}
          </a>
          {!sub.is_muted && <Count n={channelCount(sub.stream_id)} />}
        </div>
        {openStream === sub.stream_id && <TopicList streamId={sub.stream_id} view={view} />}
      </li>
    );
  };

  return (
    <nav id="left-sidebar" className={leftOpen ? "sidebar open" : "sidebar"} aria-label={t("Sidebar")}>
      <ul className="views" aria-label={t("Views")}>
        <ViewLink view={view} target="inbox" label={t("Inbox")} count={counts.total} />
        <li className={view.kind === "recent" ? "current" : undefined}>
          <a href="#recent" aria-current={view.kind === "recent" ? "page" : undefined}>
            {t("Recent conversations")}
          </a>
        </li>
        <ViewLink view={view} target={{ kind: "all" }} label={t("All messages")} />
        <ViewLink view={view} target={{ kind: "mentions" }} label={t("Mentions")} count={counts.mentions} />
        <ViewLink view={view} target={{ kind: "starred" }} label={t("Starred")} />
        <ViewLink view={view} target={{ kind: "all-dms" }} label={t("Direct messages")} count={counts.dmTotal} />
        <li className={view.kind === "drafts" ? "current" : undefined}>
          <a href="#drafts" aria-current={view.kind === "drafts" ? "page" : undefined}>
            {t("Drafts")}
          </a>
        </li>
        {(scheduledCount > 0 || view.kind === "scheduled") && (
          <li className={view.kind === "scheduled" ? "current" : undefined}>
            <a href="#scheduled" aria-current={view.kind === "scheduled" ? "page" : undefined}>
              {t("Scheduled messages")}
            </a>
            <Count n={scheduledCount} label={t("scheduled")} />
          </li>
        )}
        <li className={view.kind === "people" ? "current" : undefined}>
          <a href="#people" aria-current={view.kind === "people" ? "page" : undefined}>
            {t("People")}
          </a>
        </li>
      </ul>
      <DmSection view={view} />
      <h3 className="sidebar-heading" id="channels-heading">
        {t("Channels")}
        <a href="#channels/all" className="sidebar-heading-link" aria-current={view.kind === "channels" ? "page" : undefined}>
          {t("Browse channels")}
        </a>
      </h3>
      <input
        type="search"
        className="sidebar-filter"
        data-shortcut="channel-filter"
        aria-label={t("Filter channels")}
        placeholder={t("Filter channels")}
        value={channelFilter}
        onChange={(e) => setChannelFilter(e.target.value)}
        onKeyDown={(e) => {
          if (e.key !== "Escape") return;
          setChannelFilter("");
          e.currentTarget.blur();
        }}
      />
      {folders.map((folder) => {
        const inFolder = channels.filter((sub) => sub.folder_id === folder.id);
        if (inFolder.length === 0) return null;
        return (
          <div key={folder.id} className="channel-folder">
            <h4 className="sidebar-subheading" id={`folder-${folder.id}`}>
              {folder.name}
            </h4>
            <ul className="channel-list" aria-labelledby={`folder-${folder.id}`}>
              {inFolder.map(channelItem)}
            </ul>
          </div>
        );
      })}
      {folders.some((f) => channels.some((sub) => sub.folder_id === f.id)) && (
        <h4 className="sidebar-subheading" id="other-channels-heading">
          {t("Other channels")}
        </h4>
      )}
      <ul className="channel-list" aria-labelledby={folders.some((f) => channels.some((sub) => sub.folder_id === f.id)) ? "other-channels-heading" : "channels-heading"}>
        {channels.filter((sub) => !folders.some((f) => f.id === sub.folder_id)).map(channelItem)}
      </ul>
    </nav>
  );
}
