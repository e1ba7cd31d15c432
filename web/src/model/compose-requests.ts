// Requests to the compose box from elsewhere (reply, quote and reply, the
// `c` and `x` shortcuts): which conversation's compose box should take them,
// the topic to set, text to put in, and which field gets the focus. The
// compose box applies a request once its narrow is the one named.
import { create } from "zustand";

export interface ComposeRequest {
  seq: number;
  /** narrowKey of the compose box that should apply it. */
  key: string;
  topic?: string;
  /** Set the topic only when the box's topic is this one (a topic renamed under the box follows it). */
  ifTopic?: string;
  /** Text to add to the message (after what is there, on its own line). */
  insert?: string;
  /** Which field gets the focus; "none" leaves the focus where it is. */
  focus: "topic" | "message" | "none";
}

export const useComposeRequests = create<{ request: ComposeRequest | null }>(() => ({ request: null }));

let seq = 0;

export function requestCompose(request: Omit<ComposeRequest, "seq">): void {
  seq += 1;
  useComposeRequests.setState({ request: { ...request, seq } });
}

/** The request for the compose box of `key`, if there is one newer than `lastSeq`. */
export function takeComposeRequest(key: string, lastSeq: number): ComposeRequest | null {
  const request = useComposeRequests.getState().request;
  if (!request || request.key !== key || request.seq <= lastSeq) return null;
  return request;
}
