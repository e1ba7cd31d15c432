// The message list's interaction state, shared by the list, its rows, the
// actions menu and the keyboard shortcuts: the selected message (moved with
// the arrow keys, acted on by `r`), the message being edited in place, and
// the narrow in which reading is paused after "Mark as unread from here"
// (until you leave it, as in Zulip).
import { create } from "zustand";
import { useNavigation } from "./navigation.ts";
import { narrowKey } from "./narrow.ts";

export type MessageDialog = "delete" | "history" | "report" | "move" | "new-dm" | "remind";

export interface MessageUiState {
  selectedId: number | null;
  editingId: number | null;
  /** The list key in which seen messages are not marked read. */
  readingPausedFor: string | null;
  /** The open actions menu or emoji picker, beside the button that opened it. */
  popup: { kind: "menu" | "emoji"; messageId: number; anchor: HTMLElement } | null;
  /** The open dialog and the message it is about (0 for new-dm). */
  dialog: { kind: MessageDialog; messageId: number } | null;
  /** Where focus goes back when the popup or dialog closes. */
  returnFocus: HTMLElement | null;
}

export const useMessageUi = create<MessageUiState>(() => ({ selectedId: null, editingId: null, readingPausedFor: null, popup: null, dialog: null, returnFocus: null }));

/** Focus back to the button that opened a popup, or to its message when the row was redrawn meanwhile. */
function restoreFocus(element: HTMLElement | null, messageId: number | null): void {
  requestAnimationFrame(() => {
    if (element?.isConnected) element.focus();
    else if (messageId) document.querySelector<HTMLElement>(`[data-message-id="${messageId}"] .message-actions-button`)?.focus();
  });
}

export const messageUi = {
  select(id: number | null): void {
    if (useMessageUi.getState().selectedId !== id) useMessageUi.setState({ selectedId: id });
  },
  edit(id: number | null): void {
    useMessageUi.setState({ editingId: id });
  },
  openPopup(kind: "menu" | "emoji", messageId: number, anchor: HTMLElement): void {
    useMessageUi.setState({ popup: { kind, messageId, anchor }, returnFocus: anchor, selectedId: messageId });
  },
  closePopup(refocus = true): void {
    const { popup } = useMessageUi.getState();
    if (!popup) return;
    useMessageUi.setState({ popup: null });
    if (refocus) restoreFocus(popup.anchor, popup.messageId);
  },
  openDialog(kind: MessageDialog, messageId: number): void {
    const { popup } = useMessageUi.getState();
    const returnFocus = popup?.anchor ?? (document.activeElement instanceof HTMLElement ? document.activeElement : null);
    useMessageUi.setState({ popup: null, dialog: { kind, messageId }, returnFocus });
  },
  closeDialog(): void {
    const { dialog, returnFocus } = useMessageUi.getState();
    if (!dialog) return;
    useMessageUi.setState({ dialog: null, returnFocus: null });
    if (dialog.kind !== "new-dm") restoreFocus(returnFocus, dialog.messageId);
  },
  pauseReading(key: string): void {
    useMessageUi.setState({ readingPausedFor: key });
  },
  isReadingPaused(key: string): boolean {
    return useMessageUi.getState().readingPausedFor === key;
  },
};

// Leaving a narrow resumes reading there, and forgets the edit in progress.
let lastKey: string | null = null;
useNavigation.subscribe((s) => {
  const key = s.view.kind === "messages" ? narrowKey(s.view.narrow) : "inbox";
  if (key === lastKey) return;
  lastKey = key;
  useMessageUi.setState({ readingPausedFor: null, editingId: null, popup: null });
});
