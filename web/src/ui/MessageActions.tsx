// Per-message actions. Each message row has two buttons, shown on hover, on
// focus and on the selected message (and always reachable by Tab): "Add emoji
// reaction" and "Message actions". The menu, the emoji picker and the dialogs
// are drawn once, by MessageActionsHost, so they survive the virtualized row
// scrolling out of the DOM.
import { lazy, Suspense, useEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { create } from "zustand";
import { ApiError } from "../api/client.ts";
import type { Message } from "../api/types.ts";
import { useChannels } from "../model/channels.ts";
import {
  copyLink,
  deleteMessage,
  fetchHistory,
  hasOwnReaction,
  markUnreadFrom,
  moveMessages,
  quoteAndReply,
  replyTo,
  reportMessage,
  setStarred,
  toggleReaction,
  type HistoryEntry,
  type PropagateMode,
} from "../model/message-actions.ts";
import { messageUi, useMessageUi } from "../model/message-ui.ts";
import { useMessages } from "../model/messages.ts";
import { useNavigation } from "../model/navigation.ts";
import { formatDateTime, t } from "../i18n.ts";
import { isUserMuted, setUserMuted } from "../model/muting.ts";
import { useUsers } from "../model/users.ts";
import { canDelete, canEditContent, canMoveChannel, canMoveTopic, canReport, canSeeHistory, usePermissions } from "../model/permissions.ts";
import { topicDisplayName, useRealm } from "../model/realm.ts";
import { userName } from "../model/users.ts";
import { Dialog, DialogFooter } from "./Dialog.tsx";
import { NewDmDialog } from "./NewDmDialog.tsx";
import { RemindDialog } from "./RemindDialog.tsx";
import { Popover } from "./Popover.tsx";
import { prepareHtml } from "./rendered.ts";
import { ErrorLine } from "./StatusLine.tsx";

const EmojiPicker = lazy(() => import("./EmojiPicker.tsx"));

function errorText(error: unknown): string {
  return error instanceof ApiError || error instanceof Error ? error.message : String(error);
}

/** A dialog's action: busy while it runs; done, the dialog closes (then `after`); failed, it stays open with the error. */
function useDialogAction(): { error: string | null; setError: (error: string | null) => void; busy: boolean; run: (action: () => Promise<unknown>, after?: () => void) => void } {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = (action: () => Promise<unknown>, after?: () => void) => {
    setBusy(true);
    action().then(
      () => {
        messageUi.closeDialog();
        after?.();
      },
      (e: unknown) => {
        setBusy(false);
        setError(errorText(e));
      },
    );
  };
  return { error, setError, busy, run };
}

/** A short notice for failed actions (the menu is gone by then). */
function notify(text: string): void {
  useActionNotice.setState({ text, at: Date.now() });
}
const useActionNotice = create<{ text: string | null; at: number }>(() => ({ text: null, at: 0 }));

function run(action: () => Promise<unknown>, what: string): void {
  action().catch((error: unknown) => notify(`${what}: ${errorText(error)}`));
}

export function MessageControls({ message }: { message: Message }) {
  if (message.id <= 0) return null;
  return (
    <div className="message-controls">
      <button
        type="button"
        className="message-control emoji-button"
        aria-label={t("Add emoji reaction")}
        title={t("Add emoji reaction")}
        aria-haspopup="dialog"
        onClick={(e) => messageUi.openPopup("emoji", message.id, e.currentTarget)}
      >
        <span aria-hidden="true">☺</span>
      </button>
      <button
        type="button"
        className="message-control message-actions-button"
        aria-label={t("Message actions")}
        title={t("Message actions")}
        aria-haspopup="menu"
        onClick={(e) => messageUi.openPopup("menu", message.id, e.currentTarget)}
      >
        <span aria-hidden="true">⋮</span>
      </button>
    </div>
  );
}

interface MenuItem {
  label: string;
  act: () => void;
  danger?: boolean;
}

function menuItems(message: Message): MenuItem[] {
  const items: MenuItem[] = [];
  const close = () => messageUi.closePopup(false);
  const narrow = useNavigation.getState().view;
  const starred = message.flags.includes("starred");
  items.push({ label: t("Add emoji reaction"), act: () => {
    const anchor = useMessageUi.getState().popup?.anchor;
    if (anchor) messageUi.openPopup("emoji", message.id, anchor);
  } });
  items.push({ label: t("Reply"), act: () => (close(), replyTo(message)) });
  items.push({ label: t("Quote and reply"), act: () => (close(), run(() => quoteAndReply(message), t("Could not quote the message"))) });
  if (canEditContent(message)) items.push({ label: t("Edit message"), act: () => (close(), messageUi.edit(message.id)) });
  if (canMoveTopic(message) || canMoveChannel(message)) items.push({ label: t("Move messages"), act: () => messageUi.openDialog("move", message.id) });
  items.push({ label: starred ? t("Unstar message") : t("Star message"), act: () => (messageUi.closePopup(), run(() => setStarred(message, !starred), t("Could not star the message"))) });
  if (narrow.kind === "messages") {
    items.push({ label: t("Mark as unread from here"), act: () => (messageUi.closePopup(), run(() => markUnreadFrom(message, narrow.narrow), t("Could not mark as unread"))) });
  }
  items.push({ label: t("Copy link to message"), act: () => (messageUi.closePopup(), run(async () => {
    await copyLink(message);
    notify(t("Link copied."));
  }, t("Could not copy the link"))) });
  items.push({ label: t("Remind me about this"), act: () => messageUi.openDialog("remind", message.id) });
  if (canSeeHistory(message)) items.push({ label: t("View edit history"), act: () => messageUi.openDialog("history", message.id) });
  if (canDelete(message)) items.push({ label: t("Delete message"), danger: true, act: () => messageUi.openDialog("delete", message.id) });
  if (canReport(message)) items.push({ label: t("Report message"), act: () => messageUi.openDialog("report", message.id) });
  if (message.sender_id !== useUsers.getState().selfId) {
    const muted = isUserMuted(message.sender_id);
    items.push({ label: muted ? t("Unmute this user") : t("Mute this user"), act: () => (messageUi.closePopup(), run(() => setUserMuted(message.sender_id, !muted), muted ? t("Could not unmute the user") : t("Could not mute the user"))) });
  }
  return items;
}

function ActionsMenu({ message, anchor }: { message: Message; anchor: HTMLElement }) {
  // Recomputed when permissions or the message change while open.
  usePermissions((s) => s.settings);
  const items = menuItems(message);
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    ref.current?.querySelector<HTMLButtonElement>("[role=menuitem]")?.focus();
  }, []);
  const onKey = (e: KeyboardEvent) => {
    const list = [...(ref.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]") ?? [])];
    const index = list.indexOf(document.activeElement as HTMLButtonElement);
    const move = (i: number) => list[(i + list.length) % list.length]?.focus();
    if (e.key === "ArrowDown") move(index + 1);
    else if (e.key === "ArrowUp") move(index - 1);
    else if (e.key === "Home") move(0);
    else if (e.key === "End") move(list.length - 1);
    else if (e.key === "Tab") messageUi.closePopup(false);
    else return;
    if (e.key !== "Tab") e.preventDefault();
  };
  return (
    <Popover anchor={anchor} onClose={() => messageUi.closePopup()} label={t("Message actions")} className="actions-popover">
      <div className="menu actions-menu" role="menu" aria-label={t("Message actions")} ref={ref} onKeyDown={onKey}>
        {items.map((item) => (
          <button key={item.label} type="button" role="menuitem" className={item.danger ? "danger" : undefined} onClick={item.act}>
            {item.label}
          </button>
        ))}
      </div>
    </Popover>
  );
}

function EmojiPopover({ message, anchor }: { message: Message; anchor: HTMLElement }) {
  return (
    <Popover anchor={anchor} onClose={() => messageUi.closePopup()} label={t("Emoji picker")} role="dialog" className="emoji-popover">
      <Suspense fallback={<p className="emoji-loading">{t("Loading emoji…")}</p>}>
        <EmojiPicker
          isChosen={(emoji) => hasOwnReaction(message, emoji)}
          onPick={(emoji) => {
            messageUi.closePopup();
            run(() => toggleReaction(message, emoji), t("Could not react"));
          }}
        />
      </Suspense>
    </Popover>
  );
}

function DeleteDialog({ message }: { message: Message }) {
  const { error, busy, run } = useDialogAction();
  const confirm = () => run(() => deleteMessage(message));
  return (
    <Dialog title={t("Delete message?")} onClose={() => messageUi.closeDialog()}>
      <p>{t("Deleting a message removes it for everyone, for good.")}</p>
      <DialogFooter error={error} onCancel={() => messageUi.closeDialog()} action={{ label: t("Delete"), danger: true, onClick: confirm, disabled: busy }} />
    </Dialog>
  );
}

function HistoryDialog({ message }: { message: Message }) {
  const [entries, setEntries] = useState<HistoryEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const subs = useChannels((s) => s.subscriptions);
  useEffect(() => {
    fetchHistory(message).then(setEntries, (e: unknown) => setError(errorText(e)));
  }, [message.id, message.last_edit_timestamp, message.last_moved_timestamp]); // eslint-disable-line react-hooks/exhaustive-deps
  const selfId = useUsers((s) => s.selfId);
  const channel = (id: number) => `#${subs[id]?.name ?? `channel ${id}`}`;
  return (
    <Dialog title={t("Message edit history")} onClose={() => messageUi.closeDialog()} className="history-dialog">
      <ErrorLine error={error} />
      {!entries && !error && <p>{t("Loading…")}</p>}
      {entries && (
        <ol className="history-list">
          {entries.map((entry, i) => (
            <li key={i} className="history-entry">
              <div className="history-meta">
                {(() => {
                  const what = i === 0 ? t("Posted") : entry.prev_content !== undefined ? t("Edited") : t("Moved");
                  const when = formatDateTime(new Date(entry.timestamp * 1000));
                  return (
                    <>
                      <strong>{what}</strong>{" "}
                      <time dateTime={new Date(entry.timestamp * 1000).toISOString()}>
                        {entry.user_id !== null ? t("by {{name}} on {{date}}", { name: userName(entry.user_id), date: when }) : t("on {{date}}", { date: when })}
                      </time>
                    </>
                  );
                })()}
              </div>
              {entry.prev_topic !== undefined && (
                <div className="history-move">
                  {t("Topic: {{from}} → {{to}}", { from: topicDisplayName(entry.prev_topic), to: topicDisplayName(entry.topic ?? "") })}
                </div>
              )}
              {entry.prev_stream !== undefined && entry.stream !== undefined && (
                <div className="history-move">
                  {t("Channel: {{from}} → {{to}}", { from: channel(entry.prev_stream), to: channel(entry.stream) })}
                </div>
              )}
              {(i === 0 || entry.prev_content !== undefined) && (
                <div
                  className="message_content rendered_markdown history-content"
                  // The server's rendered HTML (with its diff markup for edits), shown as-is like the message itself.
                  dangerouslySetInnerHTML={{ __html: prepareHtml((i === 0 ? entry.rendered_content : (entry.content_html_diff ?? entry.rendered_content)) ?? "", selfId, false) }}
                />
              )}
            </li>
          ))}
        </ol>
      )}
      <div className="dialog-buttons">
        <button type="button" onClick={() => messageUi.closeDialog()}>
          {t("Close")}
        </button>
      </div>
    </Dialog>
  );
}

function ReportDialog({ message }: { message: Message }) {
  const types = usePermissions((s) => s.reportTypes);
  const [type, setType] = useState(types[0]?.key ?? "spam");
  const [description, setDescription] = useState("");
  const { error, busy, run } = useDialogAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    run(
      () => reportMessage(message, type, description),
      () => notify(t("Thank you: the moderators have your report.")),
    );
  };
  return (
    <Dialog title={t("Report message")} onClose={() => messageUi.closeDialog()}>
      <form onSubmit={submit} className="dialog-form">
        <p>
          {t("Report this message from {{name}} to the organization's moderators.", { name: message.sender_full_name })}
        </p>
        <label htmlFor="report-type">{t("Reason")}</label>
        <select id="report-type" value={type} onChange={(e) => setType(e.target.value)}>
          {types.map((t) => (
            <option key={t.key} value={t.key}>
              {t.name}
            </option>
          ))}
        </select>
        <label htmlFor="report-description">{type === "other" ? t("Explanation") : t("Explanation (optional)")}</label>
        <textarea id="report-description" rows={3} maxLength={1000} value={description} onChange={(e) => setDescription(e.target.value)} required={type === "other"} />
        <DialogFooter error={error} onCancel={() => messageUi.closeDialog()} action={{ label: t("Report"), disabled: busy }} />
      </form>
    </Dialog>
  );
}

function MoveDialog({ message }: { message: Message }) {
  const subs = useChannels((s) => s.subscriptions);
  const maxTopic = useRealm((s) => s.maxTopicLength);
  const emptyTopicName = useRealm((s) => s.emptyTopicName);
  const topicAllowed = canMoveTopic(message);
  const channelAllowed = canMoveChannel(message);
  const [topic, setTopic] = useState(message.subject);
  const [streamId, setStreamId] = useState(message.stream_id ?? 0);
  const [mode, setMode] = useState<PropagateMode>("change_all");
  const [notifyOld, setNotifyOld] = useState(false);
  const [notifyNew, setNotifyNew] = useState(true);
  const { error, setError, busy, run } = useDialogAction();
  const channels = useMemo(() => Object.values(subs).filter((s) => !s.is_archived).sort((a, b) => a.name.localeCompare(b.name)), [subs]);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const change: { topic?: string; streamId?: number } = {};
    if (topic.trim() !== message.subject) change.topic = topic.trim();
    if (streamId !== message.stream_id) change.streamId = streamId;
    if (change.topic === undefined && change.streamId === undefined) {
      setError(t("Nothing to change: choose another topic or channel."));
      return;
    }
    run(() => moveMessages(message, change, mode, { old: notifyOld, new: notifyNew }));
  };
  return (
    <Dialog title={t("Move messages")} onClose={() => messageUi.closeDialog()}>
      <form onSubmit={submit} className="dialog-form">
        {channelAllowed && (
          <>
            <label htmlFor="move-channel">{t("Channel")}</label>
            <select id="move-channel" value={streamId} onChange={(e) => setStreamId(Number(e.target.value))}>
              {channels.map((c) => (
                <option key={c.stream_id} value={c.stream_id}>
                  #{c.name}
                </option>
              ))}
            </select>
          </>
        )}
        <label htmlFor="move-topic">{t("Topic")}</label>
        <input id="move-topic" value={topic} placeholder={emptyTopicName} maxLength={maxTopic} onChange={(e) => setTopic(e.target.value)} disabled={!topicAllowed && !channelAllowed} autoFocus />
        <label htmlFor="move-mode">{t("Which messages")}</label>
        <select id="move-mode" value={mode} onChange={(e) => setMode(e.target.value as PropagateMode)}>
          <option value="change_one">{t("Only this message")}</option>
          <option value="change_later">{t("This and all following messages in the topic")}</option>
          <option value="change_all">{t("All messages in the topic")}</option>
        </select>
        <label className="checkbox">
          <input type="checkbox" checked={notifyOld} onChange={(e) => setNotifyOld(e.target.checked)} /> {t("Send a notice to the old topic")}
        </label>
        <label className="checkbox">
          <input type="checkbox" checked={notifyNew} onChange={(e) => setNotifyNew(e.target.checked)} /> {t("Send a notice to the new topic")}
        </label>
        <DialogFooter error={error} onCancel={() => messageUi.closeDialog()} action={{ label: t("Move"), disabled: busy }} />
      </form>
    </Dialog>
  );
}

function ActionNotice() {
  const { text, at } = useActionNotice();
  useEffect(() => {
    if (!text) return;
    const timer = setTimeout(() => useActionNotice.setState({ text: null }), 5000);
    return () => clearTimeout(timer);
  }, [text, at]);
  return (
    <div className="action-notice" role="status" aria-live="polite">
      {text}
    </div>
  );
}

/** The open menu, picker or dialog (one at a time), for the message it is about. */
export function MessageActionsHost() {
  const popup = useMessageUi((s) => s.popup);
  const dialog = useMessageUi((s) => s.dialog);
  const popupMessage = useMessages((s) => (popup ? s.byId[popup.messageId] : undefined));
  const dialogMessage = useMessages((s) => (dialog ? s.byId[dialog.messageId] : undefined));
  // A message deleted while its menu or dialog is open: they close.
  useEffect(() => {
    if (popup && !popupMessage) messageUi.closePopup(false);
    if (dialog && dialog.kind !== "new-dm" && !dialogMessage) messageUi.closeDialog();
  }, [popup, popupMessage, dialog, dialogMessage]);
  return (
    <>
      {popup && popupMessage && popup.kind === "menu" && <ActionsMenu key={popup.messageId} message={popupMessage} anchor={popup.anchor} />}
      {popup && popupMessage && popup.kind === "emoji" && <EmojiPopover key={popup.messageId} message={popupMessage} anchor={popup.anchor} />}
      {dialog && dialogMessage && dialog.kind === "delete" && <DeleteDialog message={dialogMessage} />}
      {dialog && dialogMessage && dialog.kind === "history" && <HistoryDialog message={dialogMessage} />}
      {dialog && dialogMessage && dialog.kind === "report" && <ReportDialog message={dialogMessage} />}
      {dialog && dialogMessage && dialog.kind === "move" && <MoveDialog message={dialogMessage} />}
      {dialog && dialogMessage && dialog.kind === "remind" && <RemindDialog message={dialogMessage} onDone={notify} />}
      {dialog?.kind === "new-dm" && <NewDmDialog />}
      <ActionNotice />
    </>
  );
}
