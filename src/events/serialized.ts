// Events as JSON text, serialized once per notification and shared by every
// queue the event reaches: a fan-out to 1,000 queues used to copy the event
// 1,000 times and JSON.stringify each copy again in each GET /events reply.
// A queue adds only its own event `id`; a GET /events body is the
// concatenation of the held events' text.
import type { ClientEvent } from "./notifier.ts";

/**
 * One event's JSON, waiting for the queue's `id`: `withId(id)` is exactly
 * `JSON.stringify({ ...event, id })`, the form clients have always received
 * (the queue's `id` last).
 */
export class SerializedEvent {
  private constructor(
    /** The JSON up to where the `id` value goes, i.e. without the closing brace, plus `,"id":`. */
    private readonly head: string | undefined,
    /** Kept only for an event that has its own `id` member, which `{ ...event, id }` overwrites in place. */
    private readonly event: ClientEvent | undefined,
  ) {}

  static of(event: ClientEvent): SerializedEvent {
    // No event has an `id` of its own today; if one does, it is serialized per queue as before.
    if (Object.hasOwn(event, "id")) return new SerializedEvent(undefined, event);
    // `type` is always there, so the object is never `{}` and the text ends with its one closing brace.
    return SerializedEvent.fromHead(JSON.stringify(event).slice(0, -1));
  }

  /** From the JSON text of the event object without its closing brace (and without an `id` member). */
  static fromHead(jsonWithoutClosingBrace: string): SerializedEvent {
    return new SerializedEvent(`${jsonWithoutClosingBrace},"id":`, undefined);
  }

  withId(id: number): string {
    return this.head !== undefined ? `${this.head}${id}}` : JSON.stringify({ ...this.event, id });
  }
}

export const HEARTBEAT_EVENT = SerializedEvent.of({ type: "heartbeat" });

/**
 * A `message` event for one queue: `{"type":"message","message":…,"flags":…}`
 * and, for the queue that sent it, `local_message_id` and `local_id` — the
 * members in the order the event object had them. `messageJson` is the
 * message in the queue's form, serialized once per form.
 */
export function messageEvent(messageJson: string, flags: readonly string[], localId: string | undefined): SerializedEvent {
  let head = `{"type":"message","message":${messageJson},"flags":${JSON.stringify(flags)}`;
  if (localId !== undefined) {
    const local = JSON.stringify(localId);
    // In this order, as `event.local_id = event.local_message_id = …` made them.
    head += `,"local_message_id":${local},"local_id":${local}`;
  }
  return SerializedEvent.fromHead(head);
}

/**
 * The text around an event's queue `id`: `head + id + tail` is `withId(id)`.
 * The Redis backend sends this once per fan-out and lets Redis add each
 * queue's `id`.
 */
export function idTemplate(event: ClientEvent): [head: string, tail: string] {
  if (!Object.hasOwn(event, "id")) return [`${JSON.stringify(event).slice(0, -1)},"id":`, "}"];
  // `{ ...event, id }` keeps the event's own `id` member in place: split at its value.
  const placeholder = JSON.stringify("\u0000id\u0000");
  const json = JSON.stringify({ ...event, id: "\u0000id\u0000" });
  const at = json.indexOf(placeholder);
  return [json.slice(0, at), json.slice(at + placeholder.length)];
}

/** A `message` event's text before its flags: `messageEventHead(m) + messageEventFlags(f, l) + id + "}"` is messageEvent(m, f, l).withId(id). */
export function messageEventHead(messageJson: string): string {
  return `{"type":"message","message":${messageJson}`;
}

/** The per-queue part of a `message` event, through `"id":`. */
export function messageEventFlags(flags: readonly string[], localId: string | undefined): string {
  let text = `,"flags":${JSON.stringify(flags)}`;
  if (localId !== undefined) {
    const local = JSON.stringify(localId);
    text += `,"local_message_id":${local},"local_id":${local}`;
  }
  return `${text},"id":`;
}
