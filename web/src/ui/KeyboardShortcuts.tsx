// Zulip's main keyboard shortcuts, for the whole page: Up/Down (and k/j)
// move the selected message, Home/End go to the first/last one, r or Enter
// replies to it, e edits it, : reacts to it, c starts a new topic in the
// current channel, x a new direct message, n goes to the next unread topic,
// / searches, Escape leaves the compose box; ? lists them all, q and w go to
// the channel and people filters, A/D to the previous/next channel, P to all
// direct messages, t to recent conversations, Shift+I to the inbox, * to
// starred messages, = reacts +1, s and S narrow to the
// selected message's conversation and topic. None of them fire while you
// type in a field, or while a dialog or menu is open. Moving the selection
// moves keyboard focus with it, so a screen reader reads the message.
import { useEffect, useState } from "react";
import { t } from "../i18n.ts";
import { PHONE_QUERY, userList } from "../model/user-list.ts";
import { isTopicMuted, useChannels } from "../model/channels.ts";
import { requestCompose } from "../model/compose-requests.ts";
import { replyTo, toggleReaction } from "../model/message-actions.ts";
import { messageUi, useMessageUi } from "../model/message-ui.ts";
import { useMessages } from "../model/messages.ts";
import { locationView, navigate } from "../model/navigation.ts";
import { narrowKey, type Narrow } from "../model/narrow.ts";
import { canEditContent } from "../model/permissions.ts";
import { useTopics } from "../model/topics.ts";
import { useUnreads } from "../model/unreads.ts";
import { useUsers } from "../model/users.ts";
import { Dialog } from "./Dialog.tsx";
import { openSearch } from "./SearchBox.tsx";

function currentNarrow(): Narrow | null {
  // The address, not the store: a key pressed right after another navigated finds the new hash
  // before its hashchange event has reached the store.
  const view = locationView(useUsers.getState().selfId);
  return view.kind === "messages" ? view.narrow : null;
}

function currentIds(): number[] {
  const narrow = currentNarrow();
  if (!narrow) return [];
  return useMessages.getState().lists[narrowKey(narrow)]?.ids ?? [];
}

/** The selected message when it is in the open list; else none. */
function selectedInList(): number | null {
  const id = useMessageUi.getState().selectedId;
  return id !== null && currentIds().includes(id) ? id : null;
}

/** The message the selection starts at: where the list opened (first unread) or the newest. */
function defaultSelection(): number | null {
  const narrow = currentNarrow();
  if (!narrow) return null;
  const list = useMessages.getState().lists[narrowKey(narrow)];
  if (!list || list.ids.length === 0) return null;
  return list.anchorId !== null && list.ids.includes(list.anchorId) ? list.anchorId : list.ids.at(-1)!;
}

function moveSelection(step: number | "first" | "last"): void {
  const ids = currentIds();
  if (ids.length === 0) return;
  const current = selectedInList();
  let index: number;
  if (step === "first") index = 0;
  else if (step === "last") index = ids.length - 1;
  else if (current === null) index = ids.indexOf(defaultSelection() ?? ids.at(-1)!);
  else index = Math.min(ids.length - 1, Math.max(0, ids.indexOf(current) + step));
  messageUi.select(ids[index]!);
  focusMessage(ids[index]!);
}

/** Keyboard focus to the message's row once the list has scrolled it into view (it may render a few frames later). */
function focusMessage(id: number, framesLeft = 20): void {
  requestAnimationFrame(() => {
    const row = document.querySelector<HTMLElement>(`article[data-message-id="${id}"]`);
    if (row) row.focus({ preventScroll: true });
    else if (framesLeft > 0) focusMessage(id, framesLeft - 1);
  });
}

/** A/D: the channel above or below the open one in the sidebar's order, wrapping around. */
function adjacentChannel(step: 1 | -1): Narrow | null {
  const order = sortedChannels();
  if (order.length === 0) return null;
  const narrow = currentNarrow();
  const here = narrow && (narrow.kind === "channel" || narrow.kind === "topic") ? order.indexOf(narrow.streamId) : -1;
  const index = here < 0 ? (step === 1 ? 0 : order.length - 1) : (here + step + order.length) % order.length;
  return { kind: "channel", streamId: order[index]! };
}

/** s: the selected message's channel, or its direct conversation; S: its topic. */
function conversationOf(topic: boolean): Narrow | null {
  const m = selectedMessage();
  if (!m) return null;
  if (m.type === "stream") return topic ? { kind: "topic", streamId: m.stream_id!, topic: m.subject } : { kind: "channel", streamId: m.stream_id! };
  const selfId = useUsers.getState().selfId;
  const others = (m.display_recipient as { id: number }[]).map((r) => r.id).filter((id) => id !== selfId);
  return { kind: "dm", userIds: others.length > 0 ? others.sort((a, b) => a - b) : [selfId!] };
}

function focusFilter(selector: string): boolean {
  const input = document.querySelector<HTMLElement>(selector);
  if (!input) return false;
  input.focus();
  return true;
}

/** What ? lists: Zulip's keyboard shortcuts that Parley has, in its groups. */
function shortcutGroups(): { title: string; keys: [string, string][] }[] {
  return [
    {
      title: t("The basics"),
      keys: [
        ["r, Enter", t("Reply to the selected message")],
        ["c", t("New topic")],
        ["x", t("New direct message")],
        ["Esc", t("Leave the compose box, or clear the selection")],
        ["/", t("Search messages")],
        ["?", t("Show keyboard shortcuts")],
      ],
    },
    {
      title: t("Navigation"),
      keys: [
        ["q", t("Filter channels")],
        ["w", t("Filter people")],
        ["↑, k / ↓, j", t("Previous / next message")],
        ["Home / End", t("First / last message")],
        ["n", t("Next unread topic")],
        ["A / D", t("Previous / next channel")],
        ["P", t("All direct messages")],
        ["t", t("Recent conversations")],
        ["Shift + I", t("Inbox")],
        ["*", t("Starred messages")],
        ["s", t("Go to the selected message's channel or conversation")],
        ["S", t("Go to the selected message's topic")],
      ],
    },
    {
      title: t("Message actions"),
      keys: [
        ["e", t("Edit the selected message")],
        [":", t("React with an emoji")],
        ["=", t("React with 👍")],
      ],
    },
  ];
}

function ShortcutsDialog({ onClose }: { onClose: () => void }) {
  return (
    <Dialog title={t("Keyboard shortcuts")} onClose={onClose} className="shortcuts-dialog">
      {shortcutGroups().map((group) => (
        <table key={group.title} className="shortcuts-table">
          <caption>{group.title}</caption>
          <tbody>
            {group.keys.map(([keys, what]) => (
              <tr key={keys}>
                <td>{what}</td>
                <td>
                  <kbd>{keys}</kbd>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
      <div className="dialog-buttons">
        <button type="button" className="primary" onClick={onClose} autoFocus>
          {t("Close")}
        </button>
      </div>
    </Dialog>
  );
}

function selectedMessage() {
  const id = selectedInList() ?? defaultSelection();
  return id === null ? undefined : useMessages.getState().byId[id];
}

/** c: a new topic in the open channel (or the selected message's channel). */
function newTopic(): void {
  const narrow = currentNarrow();
  let streamId: number | undefined;
  if (narrow?.kind === "channel" || narrow?.kind === "topic") streamId = narrow.streamId;
  else {
    const m = selectedMessage();
    if (m?.type === "stream") streamId = m.stream_id;
  }
  if (streamId === undefined) return;
  const channel: Narrow = { kind: "channel", streamId };
  if (!narrow || narrowKey(narrow) !== narrowKey(channel)) navigate({ kind: "messages", narrow: channel });
  requestCompose({ key: narrowKey(channel), topic: "", focus: "topic" });
}

function sortedChannels(): number[] {
  return Object.values(useChannels.getState().subscriptions)
    .sort((a, b) => Number(b.pin_to_top) - Number(a.pin_to_top) || a.name.localeCompare(b.name))
    .map((s) => s.stream_id);
}

/** n: the next topic with unread messages: after the open one in its channel, then in the channels below it (sidebar order), wrapping around. */
export function nextUnreadTopic(): Narrow | null {
  const channels = useChannels.getState();
  const byTopic = useUnreads.getState().counts.byTopic;
  const known = useTopics.getState().byStream;
  const order: { streamId: number; topic: string; recency: number }[] = [];
  for (const streamId of sortedChannels()) {
    if (channels.subscriptions[streamId]?.is_muted) continue;
    // Zulip's order: channels as the sidebar lists them, topics most recent first (the topic's newest
    // message when the channel's topics were fetched, else its newest unread).
    const latest = new Map((known[streamId] ?? []).map((t) => [t.name.toLowerCase(), t.maxId]));
    const topics = Object.values(byTopic[streamId] ?? {})
      .filter((t) => t.count > 0 && !isTopicMuted(channels, streamId, t.topic))
      .map((t) => ({ topic: t.topic, recency: Math.max(t.maxId, latest.get(t.topic.toLowerCase()) ?? 0) }))
      .sort((a, b) => b.recency - a.recency);
    for (const { topic, recency } of topics) order.push({ streamId, topic, recency });
  }
  if (order.length === 0) return null;
  const narrow = currentNarrow();
  let start = 0;
  if (narrow?.kind === "topic") {
    const here = order.findIndex((o) => o.streamId === narrow.streamId && o.topic.toLowerCase() === narrow.topic.toLowerCase());
    if (here >= 0) start = here + 1;
    else {
      const channelOrder = sortedChannels();
      // The open topic has nothing unread: the next one after it (less recent in its channel, then the next channels).
      const openRecency = known[narrow.streamId]?.find((t) => t.name.toLowerCase() === narrow.topic.toLowerCase())?.maxId ?? Infinity;
      const after = order.findIndex(
        (o) => (o.streamId === narrow.streamId && o.recency < openRecency) || channelOrder.indexOf(o.streamId) > channelOrder.indexOf(narrow.streamId),
      );
      start = after >= 0 ? after : 0;
    }
  } else if (narrow?.kind === "channel") {
    const inChannel = order.findIndex((o) => o.streamId === narrow.streamId);
    if (inChannel >= 0) start = inChannel;
  }
  const next = order[start % order.length]!;
  return { kind: "topic", streamId: next.streamId, topic: next.topic };
}

function isTyping(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement;
}

function openEmojiPickerFor(messageId: number): void {
  const button = document.querySelector<HTMLElement>(`[data-message-id="${messageId}"] .emoji-button`);
  if (button) messageUi.openPopup("emoji", messageId, button);
}

export function KeyboardShortcuts() {
  const [showList, setShowList] = useState(false);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
      const ui = useMessageUi.getState();
      if (ui.dialog || ui.popup || document.querySelector("dialog[open]")) return;
      if (isTyping(e.target)) {
        // Escape in the compose box leaves it (Zulip closes the box); the search box and editors handle their own.
        const el = e.target as HTMLElement;
        if (e.key === "Escape" && el.closest(".compose")) {
          e.preventDefault();
          el.blur();
        }
        return;
      }
      // Keys on a focused button or link keep their own meaning.
      const onControl = e.target instanceof HTMLElement && e.target.closest("button, a, [role=menuitem]") !== null;
      const narrow = currentNarrow();
      switch (e.key) {
        case "/":
          e.preventDefault();
          openSearch();
          return;
        case "ArrowDown":
        case "j":
          if (!narrow) return;
          e.preventDefault();
          moveSelection(1);
          return;
        case "ArrowUp":
        case "k":
          if (!narrow) return;
          e.preventDefault();
          moveSelection(-1);
          return;
        case "Home":
          if (!narrow) return;
          e.preventDefault();
          moveSelection("first");
          return;
        case "End":
          if (!narrow) return;
          e.preventDefault();
          moveSelection("last");
          return;
        case "Enter":
        case "r": {
          if (e.key === "Enter" && onControl) return;
          const m = selectedMessage();
          if (!m) return;
          e.preventDefault();
          replyTo(m);
          return;
        }
        case "e": {
          const m = selectedMessage();
          if (!m || !canEditContent(m)) return;
          e.preventDefault();
          messageUi.select(m.id);
          messageUi.edit(m.id);
          return;
        }
        case ":": {
          const m = selectedMessage();
          if (!m) return;
          e.preventDefault();
          messageUi.select(m.id);
          requestAnimationFrame(() => openEmojiPickerFor(m.id));
          return;
        }
        case "c":
          e.preventDefault();
          newTopic();
          return;
        case "x":
          e.preventDefault();
          messageUi.openDialog("new-dm", 0);
          return;
        case "n": {
          const next = nextUnreadTopic();
          if (!next) return;
          e.preventDefault();
          navigate({ kind: "messages", narrow: next });
          return;
        }
        case "Escape":
          if (useMessageUi.getState().selectedId !== null && !onControl) messageUi.select(null);
          return;
        case "?":
          e.preventDefault();
          setShowList(true);
          return;
        case "q":
          if (focusFilter('[data-shortcut="channel-filter"]')) e.preventDefault();
          return;
        case "w":
          // The user list opens first when it is hidden (or a closed drawer), as Zulip's does.
          e.preventDefault();
          userList.show(window.matchMedia(PHONE_QUERY).matches);
          requestAnimationFrame(() => focusFilter('[data-shortcut="user-filter"]'));
          return;
        case "A":
        case "D": {
          const next = adjacentChannel(e.key === "D" ? 1 : -1);
          if (!next) return;
          e.preventDefault();
          navigate({ kind: "messages", narrow: next });
          return;
        }
        case "t":
          e.preventDefault();
          navigate({ kind: "recent" });
          return;
        case "I":
          e.preventDefault();
          navigate({ kind: "inbox" });
          return;
        case "P":
          e.preventDefault();
          navigate({ kind: "messages", narrow: { kind: "all-dms" } });
          return;
        case "*":
          e.preventDefault();
          navigate({ kind: "messages", narrow: { kind: "starred" } });
          return;
        case "=": {
          const m = selectedMessage();
          if (!m || m.id <= 0) return;
          e.preventDefault();
          void toggleReaction(m, { emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" });
          return;
        }
        case "s":
        case "S": {
          const target = conversationOf(e.key === "S");
          if (!target) return;
          e.preventDefault();
          const selected = selectedMessage();
          navigate({ kind: "messages", narrow: target, near: selected?.id });
          return;
        }
      }
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, []);
  return showList ? <ShortcutsDialog onClose={() => setShowList(false)} /> : null;
}
