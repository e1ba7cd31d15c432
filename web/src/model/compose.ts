// Requests to the compose box from elsewhere in the page (quote and reply,
// keyboard shortcuts): the box applies a request when it sees it, then clears it.
import { create } from "zustand";

export interface ComposeRequest {
  /** Text appended to the message (a quote), or null to leave it. */
  append: string | null;
  /** A topic to put in the Topic field, or null to leave it. */
  topic: string | null;
  /** Focus the Topic field (a new topic) instead of the message. */
  focusTopic: boolean;
  seq: number;
}

export interface ComposeState {
  request: ComposeRequest | null;
}

export const useCompose = create<ComposeState>(() => ({ request: null }));

let seq = 0;

export const composeStore = {
  open(request: Partial<Omit<ComposeRequest, "seq">> = {}): void {
    seq += 1;
    useCompose.setState({ request: { append: request.append ?? null, topic: request.topic ?? null, focusTopic: request.focusTopic ?? false, seq } });
  },
  done(): void {
    useCompose.setState({ request: null });
  },
};
