// The message list of a narrow: virtualized (only the rows on screen are in
// the DOM), opened at the first unread, older pages fetched when scrolled
// near the top, kept at the bottom as messages arrive when it was there, and
// marking what is seen as read.
import "../styles/message-list.css";
import "../styles/search.css";
import { useVirtualizer } from "@tanstack/react-virtual";
import { isSameDay } from "date-fns";
import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { api } from "../api/client.ts";
import { formatDate, formatDateTime, formatTime, t, useLanguage } from "../i18n.ts";
import type { Message, Reaction } from "../api/types.ts";
import { useChannels } from "../model/channels.ts";
import { moveMessages, RESOLVED_TOPIC_PREFIX, toggleResolved } from "../model/message-actions.ts";
import { messageUi, useMessageUi } from "../model/message-ui.ts";
import { canMoveTopic, canResolveTopic, usePermissions } from "../model/permissions.ts";
import { messagesStore, useMessages, type OutboxMessage, type SearchMatch } from "../model/messages.ts";
import { hrefFor } from "../model/navigation.ts";
import { reading } from "../model/reading.ts";
import { conversationNarrow, messageMatches, narrowKey, type Narrow } from "../model/narrow.ts";
import { topicDisplayName, useRealm } from "../model/realm.ts";
import { unreadsStore, useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";
import { Avatar } from "./Avatar.tsx";
import { EmptyNarrow, FailedSend } from "./ConversationStates.tsx";
import { openSenderCard } from "./UserCard.tsx";
import { InlineEditForm } from "./InlineEdit.tsx";
import { ReactionGlyph } from "./Emoji.tsx";
import { MessageControls } from "./MessageActions.tsx";
import { MessageEditor } from "./MessageEditor.tsx";
import { prepareHtml } from "./rendered.ts";
import { MessageWidget } from "./Widgets.tsx";
import { CollapsibleContent, MutedMessage } from "./MessageBody.tsx";
import { TopicMenu } from "./TopicMenu.tsx";
import { useMuting } from "../model/muting.ts";
import { usePlaygrounds } from "../model/playgrounds.ts";

interface Row {
  key: string;
  message: Message;
  local?: OutboxMessage;
  /** In a search: the message's content and topic with the matched words highlighted. */
  match?: SearchMatch;
  showHeader: boolean;
  showSender: boolean;
  showDate: boolean;
}

function conversationOf(m: Message): string {
  if (m.type === "stream") return `s:${m.stream_id}:${m.subject.toLowerCase()}`;
  const ids = Array.isArray(m.display_recipient) ? m.display_recipient.map((r) => r.id).sort((a, b) => a - b) : [];
  return `d:${ids.join(",")}`;
}

function buildRows(messages: { message: Message; local?: OutboxMessage; match?: SearchMatch }[]): Row[] {
  const rows: Row[] = [];
  let prev: Message | undefined;
  for (const { message, local, match } of messages) {
    const date = new Date(message.timestamp * 1000);
    const showDate = !prev || !isSameDay(new Date(prev.timestamp * 1000), date);
    const showHeader = !prev || showDate || conversationOf(prev) !== conversationOf(message);
    const showSender = showHeader || !prev || prev.sender_id !== message.sender_id || message.timestamp - prev.timestamp > 600;
    rows.push({ key: local ? `local-${local.localId}` : String(message.id), message, local, match, showHeader, showSender, showDate });
    prev = message;
  }
  return rows;
}

/** The topic's own actions in its header, for those allowed: rename in place, mark resolved. */
function TopicActions({ message, onEdit }: { message: Message; onEdit: () => void }) {
  const [error, setError] = useState<string | null>(null);
  // Drawn again when the rules they read change (realm and user group events).
  usePermissions((s) => s.settings);
  usePermissions((s) => s.groups);
  useChannels((s) => (message.stream_id !== undefined ? s.subscriptions[message.stream_id] : undefined));
  const resolved = message.subject.startsWith(RESOLVED_TOPIC_PREFIX);
  return (
    <span className="topic-actions">
      {canResolveTopic(message) && (
        <button
          type="button"
          className="topic-action"
          aria-label={resolved ? t("Mark as unresolved") : t("Mark as resolved")}
          title={resolved ? t("Mark as unresolved") : t("Mark as resolved")}
          onClick={() => toggleResolved(message).then(() => setError(null), (e: Error) => setError(e.message))}
        >
          ✔
        </button>
      )}
      {canMoveTopic(message) && (
        <button type="button" className="topic-action" aria-label={t("Edit topic")} title={t("Edit topic")} onClick={onEdit}>
          ✎
        </button>
      )}
      {error && (
        <span className="topic-error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

/** Renames the topic from this message on (Zulip's inline topic edit: change_later, the server's notices). */
function TopicEditor({ message, onDone }: { message: Message; onDone: () => void }) {
  const [error, setError] = useState<string | null>(null);
  const save = (topic: string) => {
    if (topic.trim() === "" || topic === message.subject) return onDone();
    moveMessages(message, { topic }, "change_later").then(onDone, (err: Error) => setError(err.message));
  };
  return <InlineEditForm className="topic-editor" initial={message.subject} label={t("New topic name")} maxLength={useRealm.getState().maxTopicLength} error={error} onSave={save} onCancel={onDone} />;
}

function RecipientHeader({ message, selfId, sticky, matchSubject }: { message: Message; selfId: number; sticky?: boolean; matchSubject?: string }) {
  const sub = useChannels((s) => (message.stream_id !== undefined ? s.subscriptions[message.stream_id] : undefined));
  const [editing, setEditing] = useState(false);
  const date = formatDate(new Date(message.timestamp * 1000));
  if (message.type === "stream" && message.stream_id !== undefined) {
    const channel: Narrow = { kind: "channel", streamId: message.stream_id };
    const name = sub?.name ?? (typeof message.display_recipient === "string" ? message.display_recipient : "");
    return (
      <div className={sticky ? "recipient-header stream sticky" : "recipient-header stream"} style={{ borderColor: sub?.color }}>
        <a className="recipient-channel" href={hrefFor({ kind: "messages", narrow: channel })} style={{ background: sub?.color }}>
          #{name}
        </a>
        <span className="recipient-sep" aria-hidden="true">
          ›
        </span>
        {editing ? (
          <TopicEditor message={message} onDone={() => setEditing(false)} />
        ) : (
          <>
            {matchSubject !== undefined && message.subject !== "" ? (
              // The server's escaped topic with its matches in <span class="highlight">.
              <a className="recipient-topic" href={hrefFor({ kind: "messages", narrow: conversationNarrow(message, selfId) })} dangerouslySetInnerHTML={{ __html: matchSubject }} />
            ) : (
              <a className="recipient-topic" href={hrefFor({ kind: "messages", narrow: conversationNarrow(message, selfId) })}>
                {topicDisplayName(message.subject)}
              </a>
            )}
            <TopicActions message={message} onEdit={() => setEditing(true)} />
            <TopicMenu streamId={message.stream_id} topic={message.subject} />
          </>
        )}
        <span className="recipient-date">{date}</span>
      </div>
    );
  }
  const others = Array.isArray(message.display_recipient) ? message.display_recipient.filter((r) => r.id !== selfId) : [];
  const label = others.length === 0 ? t("You (notes to self)") : t("You and {{names}}", { names: others.map((r) => userName(r.id) || r.full_name).join(", ") });
  return (
    <div className={sticky ? "recipient-header dm sticky" : "recipient-header dm"}>
      <a className="recipient-topic" href={hrefFor({ kind: "messages", narrow: conversationNarrow(message, selfId) })}>
        {label}
      </a>
      <span className="recipient-date">{date}</span>
    </div>
  );
}

function Reactions({ message, selfId }: { message: Message; selfId: number }) {
  const groups = useMemo(() => {
    const map = new Map<string, { reaction: Reaction; users: number[] }>();
    for (const r of message.reactions) {
      const key = `${r.reaction_type}:${r.emoji_code}`;
      const g = map.get(key) ?? { reaction: r, users: [] };
      g.users.push(r.user_id);
      map.set(key, g);
    }
    return [...map.values()];
  }, [message.reactions]);
  if (groups.length === 0) return null;
  const toggle = (r: Reaction, mine: boolean) => {
    const params = { emoji_name: r.emoji_name, emoji_code: r.emoji_code, reaction_type: r.reaction_type };
    void (mine ? api.delete(`/messages/${message.id}/reactions`, params) : api.post(`/messages/${message.id}/reactions`, params)).catch(() => undefined);
  };
  return (
    <div className="reactions">
      {groups.map(({ reaction, users }) => {
        const mine = users.includes(selfId);
        return (
          <button
            type="button"
            key={`${reaction.reaction_type}:${reaction.emoji_code}`}
            className={mine ? "reaction mine" : "reaction"}
            aria-pressed={mine}
            title={t("{{names}} reacted with {{emoji}}", { names: users.map(userName).join(", "), emoji: `:${reaction.emoji_name}:`, count: users.length })}
            aria-label={`${reaction.emoji_name}: ${users.length}`}
            onClick={() => toggle(reaction, mine)}
          >
            <ReactionGlyph reaction={reaction} /> {users.length}
          </button>
        );
      })}
    </div>
  );
}

const MessageRow = memo(function MessageRow({ row, selfId }: { row: Row; selfId: number }) {
  const { message, local, match } = row;
  const mentionsMe = message.flags.some((f) => f === "mentioned" || f === "stream_wildcard_mentioned" || f === "topic_wildcard_mentioned");
  const playgrounds = usePlaygrounds((s) => s.list);
  // Times are shown in the 12/24-hour style of the moment (also those inside the message: <time>).
  const twentyFourHour = useLanguage((s) => s.twentyFourHour);
  // A search shows the server's highlighted version (match_content), other views the message as it is.
  const content = match?.content ?? message.content;
  const html = useMemo(() => prepareHtml(content, selfId, mentionsMe, { codeButtons: true }), [content, selfId, mentionsMe, playgrounds, twentyFourHour]); // eslint-disable-line react-hooks/exhaustive-deps
  // A muted sender's message is hidden until shown (Zulip's "Muted user" rows).
  const hidden = useMuting((s) => message.sender_id !== selfId && s.mutedUsers[message.sender_id] !== undefined && !s.revealed[message.id]);
  const time = new Date(message.timestamp * 1000);
  const unread = useUnreads(() => message.id > 0 && unreadsStore.isUnread(message.id));
  const selected = useMessageUi((s) => s.selectedId === message.id && message.id > 0);
  const editing = useMessageUi((s) => s.editingId === message.id && message.id > 0);
  const classes = ["message", row.showSender ? "with-sender" : "continued", unread ? "unread" : "", mentionsMe ? "mentioned" : "", local ? `local ${local.state}` : "", selected ? "selected" : ""];
  return (
    <div className="message-row">
      {row.showHeader && <RecipientHeader message={message} selfId={selfId} matchSubject={match?.subject} />}
      <article className={classes.join(" ").replace(/\s+/g, " ").trim()} data-message-id={message.id > 0 ? message.id : undefined} aria-label={t("Message from {{name}}", { name: message.sender_full_name })} aria-current={selected ? "true" : undefined} tabIndex={message.id > 0 ? -1 : undefined} onClick={message.id > 0 ? () => messageUi.select(message.id) : undefined}>
        <div className="message-gutter">{row.showSender && !hidden && <span className="sender-avatar" onClick={(e) => openSenderCard(e, message.sender_id)}><Avatar url={message.avatar_url} name={message.sender_full_name} /></span>}</div>
        <div className="message-main">
          {row.showSender && (
            <div className="message-meta">
              {hidden ? (
                <span className="sender-name">{t("Muted user")}</span>
              ) : (
                <button type="button" className="sender-name" aria-haspopup="dialog" onClick={(e) => openSenderCard(e, message.sender_id)}>{message.sender_full_name}</button>
              )}
              <time className="message-time" dateTime={time.toISOString()} title={formatDateTime(time)}>
                {formatTime(time)}
              </time>
              {message.last_edit_timestamp !== undefined && <span className="edited">{t("(edited)")}</span>}
              {message.last_edit_timestamp === undefined && message.last_moved_timestamp !== undefined && <span className="edited">{t("(moved)")}</span>}
              {message.flags.includes("starred") && (
                <span className="starred" aria-label={t("Starred")}>
                  ★
                </span>
              )}
            </div>
          )}
          {!row.showSender && (
            <time className="message-time side" dateTime={time.toISOString()} title={formatDateTime(time)}>
              {formatTime(time)}
            </time>
          )}
          {editing ? (
            <MessageEditor message={message} />
          ) : hidden ? (
            <MutedMessage messageId={message.id} />
          ) : (
            <CollapsibleContent messageId={message.id}>
              <MessageWidget message={message} selfId={selfId}>
                <div className="message_content rendered_markdown" dangerouslySetInnerHTML={{ __html: html }} />
              </MessageWidget>
            </CollapsibleContent>
          )}
          {!row.showSender && message.last_edit_timestamp !== undefined && <span className="edited">{t("(edited)")}</span>}
          {!row.showSender && message.flags.includes("starred") && (
            <span className="starred side" aria-label={t("Starred")}>
              ★
            </span>
          )}
          <Reactions message={message} selfId={selfId} />
          <MessageControls message={message} />
          {local?.state === "sending" && <div className="send-state">{t("Sending…")}</div>}
          {local?.state === "failed" && <FailedSend local={local} />}
        </div>
      </article>
    </div>
  );
});

export function MessageList({ narrow, near }: { narrow: Narrow; near?: number }) {
  const key = narrowKey(narrow);
  const list = useMessages((s) => s.lists[key]);
  const byId = useMessages((s) => s.byId);
  const outbox = useMessages((s) => s.outbox);
  const selfId = useUsers((s) => s.selfId);
  const scrollRef = useRef<HTMLDivElement>(null);
  const atBottom = useRef(true);
  const scrolledFor = useRef<string | null>(null);

  // Fetched when first shown, and again whenever the store dropped it (a new event queue, a move or star it could not apply in place).
  const missing = list === undefined;
  useEffect(() => {
    messagesStore.shown(key);
    if (missing) void messagesStore.open(narrow, false, near);
  }, [key, missing]); // eslint-disable-line react-hooks/exhaustive-deps
  // Another narrow is read from its opening position.
  useEffect(() => messagesStore.following(key, true), [key]);

  const rows = useMemo(() => {
    if (!list) return [];
    const items: { message: Message; local?: OutboxMessage; match?: SearchMatch }[] = [];
    for (const id of list.ids) {
      const m = byId[id];
      if (m) items.push({ message: m, match: list.matches[id] });
    }
    if (list.foundNewest) {
      for (const o of outbox) {
        if (o.messageId !== undefined && byId[o.messageId]) continue;
        if (messageMatches(narrow, o.draft, selfId) === true) items.push({ message: o.draft, local: o });
      }
    }
    return buildRows(items);
  }, [list, byId, outbox, narrow, selfId]);

  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: (i) => (rows[i]?.showHeader ? 96 : rows[i]?.showSender ? 64 : 32),
    getItemKey: (i) => rows[i]?.key ?? i,
    overscan: 8,
  });

  // Opening: scroll to the anchor (first unread at the top, or the newest at the bottom), once per list.
  useLayoutEffect(() => {
    if (!list || list.loading || scrolledFor.current === key || rows.length === 0) return;
    scrolledFor.current = key;
    const index = list.anchorId === null ? -1 : rows.findIndex((r) => r.message.id === list.anchorId);
    if (near !== undefined && list.anchorId === near && index >= 0) {
      // Opened around a linked message: it goes in the middle, selected.
      atBottom.current = false;
      messageUi.select(near);
      virtualizer.scrollToIndex(index, { align: "center" });
      return;
    }
    const anchorIsLast = index === rows.length - 1 || index < 0;
    atBottom.current = anchorIsLast;
    virtualizer.scrollToIndex(anchorIsLast ? rows.length - 1 : index, { align: anchorIsLast ? "end" : "start" });
  }, [list, key, rows, virtualizer]);

  // A /near/ID link: that message selected and scrolled to, the list fetched around it unless it holds it.
  const nearDone = useRef<string | null>(null);
  useLayoutEffect(() => {
    if (near === undefined || !list || list.loading) return;
    const target = `${key}@${near}`;
    if (nearDone.current === target) return;
    nearDone.current = target;
    const index = rows.findIndex((r) => r.message.id === near);
    if (index < 0) {
      // Not held (or scrolled far from it): the list around it, whose opening scrolls there.
      scrolledFor.current = null;
      void messagesStore.open(narrow, true, near);
      return;
    }
    scrolledFor.current = key;
    atBottom.current = false;
    messageUi.select(near);
    virtualizer.scrollToIndex(index, { align: "center" });
  }, [near, key, list, rows, virtualizer]); // eslint-disable-line react-hooks/exhaustive-deps

  // Rows added or let go above the view (older pages, a trimmed list) keep the rows on screen where
  // they were: the first row showing is noted at each scroll, and put back at its place when the
  // list's first row changes. (Rows measured later above the view are the virtualizer's to adjust.)
  const pinned = useRef<{ list: string; key: string; offset: number } | null>(null);
  const pinFirstVisible = () => {
    const el = scrollRef.current;
    if (!el) return;
    const item = virtualizer.getVirtualItems().find((i) => i.end > el.scrollTop);
    pinned.current = item ? { list: key, key: String(item.key), offset: item.start - el.scrollTop } : null;
  };
  const firstKey = useRef<string | null>(null);
  useLayoutEffect(() => {
    const previous = firstKey.current;
    firstKey.current = rows[0]?.key ?? null;
    // (A pin noted in another narrow's list says nothing about this one.)
    if (previous === null || previous === firstKey.current || scrolledFor.current !== key || pinned.current?.list !== key) return;
    const index = rows.findIndex((r) => r.key === pinned.current!.key);
    if (index < 0) return;
    const start = virtualizer.getOffsetForIndex(index, "start")?.[0];
    if (start !== undefined) virtualizer.scrollToOffset(start - pinned.current.offset);
  }, [rows, key, virtualizer]);

  // New messages at the end: follow them when the view was at the bottom.
  const lastKey = rows.at(-1)?.key;
  useLayoutEffect(() => {
    if (atBottom.current && rows.length > 0 && scrolledFor.current === key) virtualizer.scrollToIndex(rows.length - 1, { align: "end" });
  }, [lastKey, key]); // eslint-disable-line react-hooks/exhaustive-deps

  const items = virtualizer.getVirtualItems();

  const checkSeen = useCallback(() => {
    const el = scrollRef.current;
    if (!el || document.visibilityState !== "visible" || messageUi.isReadingPaused(key)) return;
    const top = el.scrollTop;
    const bottom = top + el.clientHeight;
    const seen: number[] = [];
    for (const item of virtualizer.getVirtualItems()) {
      // Seen: the message's bottom is on screen (or it is taller than the screen and fills it).
      if (item.end <= bottom + 2 && item.end > top) {
        const id = rows[item.index]?.message.id;
        if (id !== undefined && id > 0 && unreadsStore.isUnread(id)) seen.push(id);
      }
    }
    if (seen.length > 0) reading.seen(seen);
  }, [rows, virtualizer, key]);

  // The selected message (arrow keys) is kept on screen.
  const selectedId = useMessageUi((s) => s.selectedId);
  useEffect(() => {
    if (selectedId === null) return;
    const index = rows.findIndex((r) => r.message.id === selectedId);
    if (index >= 0) virtualizer.scrollToIndex(index, { align: "auto" });
  }, [selectedId]); // eslint-disable-line react-hooks/exhaustive-deps

  const unreadVersion = useUnreads((s) => s.version);
  useEffect(() => {
    if (list && !list.loading) checkSeen();
  }, [items.length, list, checkSeen, unreadVersion]);
  useEffect(() => {
    const onVisible = () => checkSeen();
    document.addEventListener("visibilitychange", onVisible);
    window.addEventListener("focus", onVisible);
    return () => {
      document.removeEventListener("visibilitychange", onVisible);
      window.removeEventListener("focus", onVisible);
    };
  }, [checkSeen]);

  // The recipient header of the conversation at the top of the view stays there while its messages scroll (Zulip's sticky header).
  const [stickyIndex, setStickyIndex] = useState<number | null>(null);
  const updateSticky = () => {
    const el = scrollRef.current;
    if (!el) return;
    const top = el.scrollTop;
    const item = top > 0 ? virtualizer.getVirtualItems().find((i) => i.end > top) : undefined;
    const row = item ? rows[item.index] : undefined;
    // Not while the row's own header is still in view at its top.
    setStickyIndex(item && row && !(row.showHeader && item.start >= top) ? item.index : null);
  };
  useLayoutEffect(updateSticky, [rows, items.length]); // eslint-disable-line react-hooks/exhaustive-deps
  const stickyRow = stickyIndex !== null ? rows[stickyIndex] : undefined;

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    updateSticky();
    atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    messagesStore.following(key, atBottom.current);
    pinFirstVisible();
    if (el.scrollTop < 400 && list && !list.foundOldest) void messagesStore.loadOlder(key);
    if (atBottom.current && list && !list.foundNewest) void messagesStore.loadNewer(key);
    checkSeen();
  };

  // Spoilers open and close on their header (event delegation: the HTML is the server's).
  const onClick = (e: React.MouseEvent) => {
    const header = (e.target as HTMLElement).closest(".spoiler-header");
    if (header && !(e.target as HTMLElement).closest("a")) header.parentElement?.classList.toggle("spoiler-open");
  };

  if (!list || list.loading) {
    return (
      <div className="message-list loading" aria-busy="true">
        {t("Loading messages…")}
      </div>
    );
  }
  return (
    <div className="message-list" ref={scrollRef} onScroll={onScroll} onClick={onClick} role="log" aria-label={t("Messages")}>
      {list.error && (
        <div className="list-error" role="alert">
          <span>{t("Could not load messages: {{error}}", { error: list.error })}</span>
          <button type="button" onClick={() => void messagesStore.open(narrow, true)}>
            {t("Retry")}
          </button>
        </div>
      )}
      {list.foundOldest && list.foundNewest && rows.length === 0 && <EmptyNarrow narrow={narrow} selfId={selfId} />}
      {stickyRow && (
        <div className="sticky-recipient">
          <RecipientHeader key={conversationOf(stickyRow.message)} message={stickyRow.message} selfId={selfId} sticky matchSubject={stickyRow.match?.subject} />
        </div>
      )}
      <div className="message-list-inner" style={{ height: virtualizer.getTotalSize() }}>
        {list.loadingOlder && <div className="loading-older">{t("Loading older messages…")}</div>}
        <div className="message-window" style={{ transform: `translateY(${items[0]?.start ?? 0}px)` }}>
          {items.map((item) => (
            <div key={item.key} data-index={item.index} ref={virtualizer.measureElement}>
              <MessageRow row={rows[item.index]!} selfId={selfId} />
            </div>
          ))}
        </div>
      </div>
    </div>
  );
}
