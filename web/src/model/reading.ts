// Marking messages read as they are seen: the message list reports what is on
// screen; this batches the ids into POST /messages/flags (op add, flag read),
// asking at most once per message. The unread counts change only when the
// server's update_message_flags event comes back, like every other device's.
import { api } from "../api/client.ts";

const pending = new Set<number>();
const requested = new Set<number>();
let timer: ReturnType<typeof setTimeout> | null = null;
const BATCH_DELAY_MS = 150;

/** Signing out: nothing more is asked (it would only come back 401) until the next registration. */
let stopped = false;
/** The flag updates on their way: signing out waits for them, so none reaches the server after the session ends. */
const inFlight = new Set<Promise<unknown>>();

function flush(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  const batch = [...pending];
  pending.clear();
  if (batch.length === 0 || stopped) return;
  for (const id of batch) requested.add(id);
  const request = api.post("/messages/flags", { messages: batch, op: "add", flag: "read" }).catch(() => {
    // Asked again when next seen.
    for (const id of batch) requested.delete(id);
  });
  inFlight.add(request);
  void request.finally(() => inFlight.delete(request));
}

export const reading = {
  seen(ids: number[]): void {
    if (stopped) return;
    for (const id of ids) if (!requested.has(id)) pending.add(id);
    if (pending.size > 0 && timer === null) timer = setTimeout(flush, BATCH_DELAY_MS);
  },
  /** Marked unread again (here or elsewhere): seeing it again marks it read again. */
  forget(ids: number[]): void {
    for (const id of ids) requested.delete(id);
  },
  reset(): void {
    stopped = false;
    pending.clear();
    requested.clear();
  },
  /** Before signing out: what was seen is sent now, and answered, and nothing more is asked. */
  async settle(): Promise<void> {
    flush();
    stopped = true;
    await Promise.all([...inFlight]);
  },
};
