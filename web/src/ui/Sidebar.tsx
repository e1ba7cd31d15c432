// Left sidebar: the views, your channels with unread counts (and the open
// channel's topics), and direct conversations with unreads.
import { useEffect, useMemo } from "react";
import type { Subscription } from "../api/types.ts";
import { useChannelFolders, visibleFolders } from "../model/channel-folders.ts";
import { isTopicMuted, useChannels } from "../model/channels.ts";
import { hrefFor } from "../model/navigation.ts";
import { narrowKey, type Narrow, type View } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { topicsStore, useTopics } from "../model/topics.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { PeopleList } from "./PeopleList.tsx";

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
    <ul className="topic-list" aria-label="Topics">
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
  // A channel's count leaves out its muted topics, as Zulip's does.
  const channelCount = (streamId: number) =>
    Object.values(counts.byTopic[streamId] ?? {}).reduce((sum, t) => sum + (isTopicMuted(channelState, streamId, t.topic) ? 0 : t.count), 0);
  useUsers((s) => s.byId);
  const channels = useMemo(() => sortChannels(Object.values(subscriptions)), [subscriptions]);
  const openStream = view.kind === "messages" && (view.narrow.kind === "channel" || view.narrow.kind === "topic") ? view.narrow.streamId : null;
  const dmKeys = Object.keys(counts.byDm).filter((k) => (counts.byDm[k] ?? 0) > 0);
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
    <nav className="sidebar" aria-label="Sidebar">
      <ul className="views" aria-label="Views">
        <ViewLink view={view} target="inbox" label="Inbox" count={counts.total} />
        <ViewLink view={view} target={{ kind: "all" }} label="All messages" />
        <ViewLink view={view} target={{ kind: "mentions" }} label="Mentions" count={counts.mentions} />
        <ViewLink view={view} target={{ kind: "starred" }} label="Starred" />
        <ViewLink view={view} target={{ kind: "all-dms" }} label="Direct messages" count={counts.dmTotal} />
        <li className={view.kind === "people" ? "current" : undefined}>
          <a href="#people" aria-current={view.kind === "people" ? "page" : undefined}>
            People
          </a>
        </li>
      </ul>
      {dmKeys.length > 0 && (
        <ul className="dm-list" aria-label="Direct message conversations">
          {dmKeys.map((key) => {
            const narrow: Narrow = { kind: "dm", userIds: key.split(",").map(Number) };
            return <ViewLink key={key} view={view} target={narrow} label={narrow.userIds.map(userName).join(", ")} count={counts.byDm[key]} />;
          })}
        </ul>
      )}
      <h3 className="sidebar-heading" id="channels-heading">
        Channels
        <a href="#channels/all" className="sidebar-heading-link" aria-current={view.kind === "channels" ? "page" : undefined}>
          Browse channels
        </a>
      </h3>
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
          Other channels
        </h4>
      )}
      <ul className="channel-list" aria-labelledby={folders.some((f) => channels.some((sub) => sub.folder_id === f.id)) ? "other-channels-heading" : "channels-heading"}>
        {channels.filter((sub) => !folders.some((f) => f.id === sub.folder_id)).map(channelItem)}
      </ul>
      <PeopleList view={view} />
    </nav>
  );
}
