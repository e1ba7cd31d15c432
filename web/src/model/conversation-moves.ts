// The view and the compose box follow a conversation that moves, as in
// Zulip's web app: when the topic on screen is renamed, resolved or moved to
// another channel (update_message with propagate_mode change_all or
// change_later), the view goes to its new place, keeping the selected message
// and the unsent text; a channel's compose box aimed at the old topic takes
// the new name; the drafts of the old topic go with it. A /with/ID view
// follows its message even when only that message moved.
//
// Also notes the selected message of the view on screen, which a reload
// restores (navigation.ts: locationView).
import { requestCompose } from "./compose-requests.ts";
import { draftsStore } from "./drafts.ts";
import { messageUi, useMessageUi } from "./message-ui.ts";
import { channelName } from "./channels.ts";
import { narrowHash, narrowKey, type Narrow } from "./narrow.ts";
import { replaceView, SELECTION_STORAGE_KEY, useNavigation } from "./navigation.ts";
import { useUsers } from "./users.ts";

export interface MoveEvent {
  message_id: number;
  message_ids?: number[];
  stream_id?: number;
  new_stream_id?: number;
  subject?: string;
  orig_subject?: string;
  propagate_mode?: string;
}

/** The unsent text of a conversation goes where the conversation went. */
function moveDraft(from: string, to: string): void {
  const selfId = useUsers.getState().selfId;
  if (from === to) return;
  const draft = draftsStore.get(selfId, from);
  if (!draft) return;
  const there = draftsStore.get(selfId, to)?.text ?? "";
  draftsStore.save(selfId, to, there.trim() === "" ? draft.text : `${there.replace(/\n*$/, "")}\n${draft.text}`, draft.topic);
  draftsStore.clear(selfId, from);
}

export function followMove(event: MoveEvent): void {
  const oldStream = event.stream_id;
  const origTopic = event.orig_subject;
  if (oldStream === undefined || origTopic === undefined) return;
  const newStream = event.new_stream_id ?? oldStream;
  const newTopic = event.subject ?? origTopic;
  if (newStream === oldStream && newTopic === origTopic) return;
  const ids = event.message_ids ?? [event.message_id];
  const forward = event.propagate_mode === "change_all" || event.propagate_mode === "change_later";
  const from: Narrow = { kind: "topic", streamId: oldStream, topic: origTopic };
  const to: Narrow = { kind: "topic", streamId: newStream, topic: newTopic };
  if (forward) moveDraft(narrowKey(from), narrowKey(to));

  const view = useNavigation.getState().view;
  if (view.kind !== "messages") return;
  const narrow = view.narrow;
  if (narrow.kind === "topic" && narrowKey(narrow) === narrowKey(from)) {
    const linked = view.with === true && view.near !== undefined && ids.includes(view.near);
    if (!forward && !linked) return;
    // The selected message (or the linked one) stays selected in the new place.
    const selected = useMessageUi.getState().selectedId;
    const keep = selected !== null && ids.includes(selected) ? selected : linked ? view.near : undefined;
    if (!forward) moveDraft(narrowKey(from), narrowKey(to));
    const hash = narrowHash(to, { channelName }) + (linked ? `/with/${view.near}` : "");
    replaceView({ kind: "messages", narrow: to, ...(keep !== undefined ? { near: keep } : {}), ...(linked ? { with: true } : {}) }, hash);
    if (keep !== undefined) messageUi.select(keep);
    return;
  }
  // A channel's box writing to the renamed topic writes to its new name (a move to another channel leaves it be:
  // that box writes to this channel only).
  if (forward && narrow.kind === "channel" && narrow.streamId === oldStream && newStream === oldStream) {
    requestCompose({ key: narrowKey(narrow), topic: newTopic, ifTopic: origTopic, focus: "none" });
  }
}

// The selected message of the view on screen, for a reload to come back to.
useMessageUi.subscribe((state, previous) => {
  if (state.selectedId === previous.selectedId || state.selectedId === null || state.selectedId <= 0) return;
  if (useNavigation.getState().view.kind !== "messages") return;
  try {
    window.sessionStorage.setItem(SELECTION_STORAGE_KEY, JSON.stringify({ hash: window.location.hash, id: state.selectedId }));
  } catch {
    // Storage disabled: a reload opens at the first unread.
  }
});
