// A message whose send failed stays in the list (Zulip's failed local echo)
// with Retry and Cancel. Cancel gives its text back: into the compose box
// when the open view's box writes to that conversation, otherwise into the
// conversation's draft, so nothing typed is lost.
import { draftsStore } from "./drafts.ts";
import { requestCompose } from "./compose-requests.ts";
import { messagesStore } from "./messages.ts";
import { dmNarrow, narrowKey, type Narrow } from "./narrow.ts";
import { useNavigation } from "./navigation.ts";
import { useUsers } from "./users.ts";
import { useConnection } from "./connection.ts";

export function retryFailed(localId: string): void {
  void messagesStore.retry(localId, useConnection.getState().queueId);
}

/** The key of the compose box on screen when it writes to `conversation` (for a channel's box, with which topic). */
function composeOnScreen(conversation: Narrow): string | null {
  const view = useNavigation.getState().view;
  if (view.kind !== "messages") return null;
  const open = view.narrow;
  if (narrowKey(open) === narrowKey(conversation)) return narrowKey(open);
  // A channel's box writes to any of its topics (the topic field is set with the text).
  if (open.kind === "channel" && conversation.kind === "topic" && open.streamId === conversation.streamId) return narrowKey(open);
  return null;
}

export function cancelFailed(localId: string): void {
  const entry = messagesStore.cancel(localId);
  if (!entry) return;
  const selfId = useUsers.getState().selfId;
  const { target, content } = entry;
  const conversation: Narrow = target.type === "stream" ? { kind: "topic", streamId: target.streamId, topic: target.topic } : dmNarrow(target.userIds, selfId);
  const topic = target.type === "stream" ? target.topic : undefined;
  const onScreen = composeOnScreen(conversation);
  if (onScreen !== null) {
    requestCompose({ key: onScreen, ...(useNavigation.getState().view.kind === "messages" && topic !== undefined && onScreen.startsWith("channel:") ? { topic } : {}), insert: content, focus: "message" });
    return;
  }
  // No box for it on screen: the conversation's draft takes the text (after any draft already there).
  const key = narrowKey(conversation);
  const existing = draftsStore.get(selfId, key)?.text ?? "";
  draftsStore.save(selfId, key, existing.trim() === "" ? content : `${existing.replace(/\n*$/, "")}\n${content}`);
}
