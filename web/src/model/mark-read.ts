// Marking a whole conversation, channel or everything read at once (the
// inbox's and recent conversations' buttons), as Zulip's web app does:
// POST /messages/flags/narrow over the narrow's unread messages, page after
// page of the server's limit. The counts change when the server's
// update_message_flags events come back, as for every other device.
import { api } from "../api/client.ts";
import { apiNarrow, type Narrow } from "./narrow.ts";

type Operator = { operator: string; operand: string | number | number[] };

async function markNarrowRead(narrow: Operator[]): Promise<void> {
  let anchor = "oldest";
  let includeAnchor = true;
  // Bounded: a conversation never has more unread messages than this many pages.
  for (let page = 0; page < 100; page++) {
    const reply = await api.post<{ found_newest: boolean; last_processed_id: number | null }>("/messages/flags/narrow", {
      anchor,
      include_anchor: includeAnchor,
      num_before: 0,
      num_after: 1000,
      narrow: [...narrow, { operator: "is", operand: "unread" }],
      op: "add",
      flag: "read",
    });
    if (reply.found_newest || reply.last_processed_id === null) return;
    anchor = String(reply.last_processed_id);
    includeAnchor = false;
  }
}

/** A topic, a channel or a direct conversation. */
export function markConversationRead(narrow: Narrow): Promise<void> {
  return markNarrowRead(apiNarrow(narrow));
}

/** Every unread message (Zulip's "Mark all messages as read"). */
export function markAllRead(): Promise<void> {
  return markNarrowRead([]);
}
