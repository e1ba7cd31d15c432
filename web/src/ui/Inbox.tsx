// The inbox, as Zulip's: every conversation with unread messages, direct
// ones first (most recent first), then each channel (pinned first, then by
// name) with its topics (most recent first). Each section collapses; a row,
// a channel, the direct messages or everything is marked read with a
// button; a text filter narrows the rows. Muted topics, channels and
// conversations with muted users are left out, as their counts are.
import { useMemo, useState, type ReactNode } from "react";
import type { Subscription } from "../api/types.ts";
import { t } from "../i18n.ts";
import { isTopicMuted, useChannels } from "../model/channels.ts";
import { useDmConversations } from "../model/dm-conversations.ts";
import { inboxStore, useInbox, type InboxSection } from "../model/inbox.ts";
import { markAllRead, markConversationRead } from "../model/mark-read.ts";
import { hrefFor } from "../model/navigation.ts";
import type { Narrow } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { ChannelIcon } from "./ChannelIcon.tsx";
import { Dialog, DialogFooter } from "./Dialog.tsx";
import "../styles/recent-inbox.css";
import { ErrorLine } from "./StatusLine.tsx";

function Count({ n }: { n: number }) {
  if (n <= 0) return null;
  return (
    <span className="unread-count" aria-label={t("{{count}} unread", { count: n })}>
      {n}
    </span>
  );
}

interface Row {
  key: string;
  narrow: Narrow;
  label: string;
  /** What the mark-as-read button names. */
  conversation: string;
  count: number;
  emptyTopic?: boolean;
}

function MarkReadButton({ what, narrow, onError }: { what: string; narrow: Narrow; onError: (message: string) => void }) {
  const [busy, setBusy] = useState(false);
  return (
    <button
      type="button"
      className="inbox-mark-read"
      aria-label={t("Mark {{conversation}} as read", { conversation: what })}
      title={t("Mark as read")}
      disabled={busy}
      onClick={() => {
        setBusy(true);
        markConversationRead(narrow)
          .catch(() => onError(t("Could not mark {{conversation}} as read.", { conversation: what })))
          .finally(() => setBusy(false));
      }}
    >
      <span aria-hidden="true">✓</span>
    </button>
  );
}

function Section({
  id,
  section,
  heading,
  count,
  markRead,
  link,
  rows,
  onError,
}: {
  id: string;
  section: InboxSection;
  heading: ReactNode;
  count: number;
  markRead: { what: string; narrow: Narrow };
  link?: { href: string; label: string };
  rows: Row[];
  onError: (message: string) => void;
}) {
  const collapsed = useInbox((s) => s.collapsed[section] === true);
  // A filter shows what matches even in a collapsed section.
  const filtering = useInbox((s) => s.filter.trim() !== "");
  const open = !collapsed || filtering;
  return (
    <div className={open ? "inbox-group" : "inbox-group collapsed"}>
      <div className="inbox-header">
        <h3>
          <button type="button" className="inbox-toggle" aria-expanded={open} aria-controls={id} onClick={() => inboxStore.toggle(section)} disabled={filtering}>
            <span className="inbox-chevron" aria-hidden="true">
              ▾
            </span>
            {heading}
          </button>
        </h3>
        {link && (
          <a className="inbox-channel-link" href={link.href} aria-label={link.label} title={link.label}>
            <span aria-hidden="true">→</span>
          </a>
        )}
        <Count n={count} />
        <MarkReadButton what={markRead.what} narrow={markRead.narrow} onError={onError} />
      </div>
      {open && (
        <ul id={id}>
          {rows.map((row) => (
            <li key={row.key}>
              <a href={hrefFor({ kind: "messages", narrow: row.narrow })} className={row.emptyTopic ? "empty-topic" : undefined}>
                {row.label}
              </a>
              <Count n={row.count} />
              <MarkReadButton what={row.conversation} narrow={row.narrow} onError={onError} />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function sortChannels(a: Subscription, b: Subscription): number {
  return Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name);
}

export function Inbox() {
  const counts = useUnreads((s) => s.counts);
  const channelState = useChannels();
  const subscriptions = channelState.subscriptions;
  const dmOrder = useDmConversations((s) => s.conversations);
  const filter = useInbox((s) => s.filter);
  useUsers((s) => s.byId);
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const needle = filter.trim().toLowerCase();
  const matches = (...texts: string[]) => needle === "" || texts.some((text) => text.toLowerCase().includes(needle));

  const dmRows = useMemo(() => {
    const recency = new Map(dmOrder.map((c) => [c.key, c.maxId]));
    return Object.entries(counts.byDm)
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => (recency.get(b) ?? 0) - (recency.get(a) ?? 0))
      .map(([key, n]): Row => {
        const userIds = key.split(",").map(Number);
        const label = userIds.map(userName).join(", ");
        return { key, narrow: { kind: "dm", userIds }, label, conversation: label, count: n };
      });
  }, [counts.byDm, dmOrder]);

  const channels = useMemo(
    () =>
      Object.entries(counts.byTopic)
        .map(([id, topics]) => {
          const streamId = Number(id);
          const rows = Object.values(topics)
            .filter((topic) => topic.count > 0 && !isTopicMuted(channelState, streamId, topic.topic))
            .sort((a, b) => b.maxId - a.maxId)
            .map(
              (topic): Row => ({
                key: topic.topic.toLowerCase(),
                narrow: { kind: "topic", streamId, topic: topic.topic },
                label: topicDisplayName(topic.topic),
                conversation: `#${subscriptions[streamId]?.name ?? ""} > ${topicDisplayName(topic.topic)}`,
                count: topic.count,
                emptyTopic: topic.topic === "",
              }),
            );
          return { sub: subscriptions[streamId], rows };
        })
        .filter((c): c is { sub: Subscription; rows: Row[] } => c.sub !== undefined && c.rows.length > 0)
        .sort((a, b) => sortChannels(a.sub, b.sub)),
    [counts.byTopic, channelState, subscriptions],
  );

  const shownDms = dmRows.filter((row) => matches(row.label));
  const shownChannels = channels
    .map((c) => ({ ...c, rows: matches(c.sub.name) ? c.rows : c.rows.filter((row) => matches(row.label)) }))
    .filter((c) => c.rows.length > 0);
  const nothingUnread = dmRows.length === 0 && channels.length === 0;

  return (
    <section className="inbox" aria-label={t("Inbox")}>
      {!nothingUnread && (
        <div className="inbox-toolbar">
          <input
            type="search"
            className="inbox-filter"
            aria-label={t("Filter conversations")}
            placeholder={t("Filter conversations")}
            value={filter}
            onChange={(e) => inboxStore.setFilter(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape" && filter !== "") {
                e.stopPropagation();
                inboxStore.setFilter("");
              }
            }}
          />
          <button type="button" className="inbox-mark-all" onClick={() => setConfirming(true)}>
            {t("Mark all as read")}
          </button>
        </div>
      )}
      <ErrorLine error={error} />
      {nothingUnread ? (
        <div className="inbox-empty">
          <p>{t("You have no unread messages.")}</p>
          <p>
            <a href="#recent">{t("View recent conversations")}</a>
          </p>
        </div>
      ) : shownDms.length === 0 && shownChannels.length === 0 ? (
        <p className="inbox-empty">{t("No unread conversations match “{{filter}}”.", { filter: filter.trim() })}</p>
      ) : null}
      {shownDms.length > 0 && (
        <Section
          id="inbox-dms"
          section="dm"
          heading={t("Direct messages")}
          count={counts.dmTotal}
          markRead={{ what: t("direct messages"), narrow: { kind: "all-dms" } }}
          rows={shownDms}
          onError={setError}
        />
      )}
      {shownChannels.map(({ sub, rows }) => (
        <Section
          key={sub.stream_id}
          id={`inbox-channel-${sub.stream_id}`}
          section={`channel:${sub.stream_id}`}
          heading={
            <>
              <ChannelIcon sub={sub} />
              <span className="inbox-channel-name">{sub.name}</span>
            </>
          }
          count={counts.byStream[sub.stream_id] ?? 0}
          markRead={{ what: `#${sub.name}`, narrow: { kind: "channel", streamId: sub.stream_id } }}
          link={{ href: hrefFor({ kind: "messages", narrow: { kind: "channel", streamId: sub.stream_id } }), label: t("Go to #{{channel}}", { channel: sub.name }) }}
          rows={rows}
          onError={setError}
        />
      ))}
      {confirming && (
        <Dialog title={t("Mark all messages as read?")} onClose={() => setConfirming(false)}>
          <p>{t("This marks every unread message read, in every channel and conversation, muted or not.")}</p>
          <DialogFooter
            onCancel={() => setConfirming(false)}
            action={{
              label: t("Mark all as read"),
              onClick: () => {
                setConfirming(false);
                markAllRead().catch(() => setError(t("Could not mark all messages as read.")));
              },
            }}
          />
        </Dialog>
      )}
    </section>
  );
}
