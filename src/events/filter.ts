// Which events a queue takes: its event_types, its narrow (message events
// only, as in Zulip's narrow_predicate) and the client's capabilities.
import { dmOperandItems, type NarrowTerm } from "../domain/narrow.ts";
import type { CapabilityName, ClientEvent, MessageDelivery } from "./notifier.ts";

export interface QueueFilter {
  /** Event types the client asked for; null: all. */
  eventTypes: ReadonlySet<string> | null;
  narrow: readonly NarrowTerm[];
  /** Message events of every public channel, not just subscribed ones. */
  allPublicStreams: boolean;
  /** Message content as HTML (true) or as the Markdown source. */
  applyMarkdown: boolean;
  capabilities: Readonly<Record<CapabilityName, boolean>>;
  /** POST /register's slim_presence: legacy presence events come without `email`. */
  slimPresence: boolean;
}

/** Operators an event-queue narrow may use: those that can be decided from one message event. */
export const QUEUE_NARROW_OPERATORS = ["channel", "topic", "sender", "is", "dm"] as const;

/** `is:` operands decidable from a message event and its flags. */
export const QUEUE_NARROW_IS_OPERANDS = ["dm", "private", "starred", "mentioned", "alerted", "unread", "resolved"] as const;

export function acceptsEvent(filter: QueueFilter, event: ClientEvent, userId: number): boolean {
  if (event.type === "message") return acceptsMessage(filter, event.message as MessageFields, (event.flags as string[] | undefined) ?? [], userId);
  if (filter.eventTypes !== null && !filter.eventTypes.has(event.type)) return false;
  // Clients that know user_topic get no legacy muted_topics events (Zulip's accepts_event).
  if (event.type === "muted_topics" && filter.eventTypes?.has("user_topic")) return false;
  // Channel typing events go only to clients that said they can show them.
  if (event.type === "typing" && event.message_type === "stream" && !filter.capabilities.stream_typing_notifications) return false;
  return true;
}

/** The fields of a message (as a queue's client gets it) that a narrow looks at. */
export interface MessageFields {
  type: "stream" | "private";
  stream_id?: number;
  display_recipient: string | { id: number; email: string }[];
  subject: string;
  sender_id: number;
  sender_email: string;
}

/**
 * acceptsEvent for a `message` event, given its parts: the fan-out asks this
 * for every queue without building each queue's event object.
 */
export function acceptsMessage(filter: QueueFilter, message: MessageFields, flags: readonly string[], userId: number): boolean {
  if (filter.eventTypes !== null && !filter.eventTypes.has("message")) return false;
  return filter.narrow.length === 0 || filter.narrow.every((term) => termMatches(term, message, flags, userId) !== term.negated);
}

const RESOLVED_PREFIX = "✔ ";

function termMatches(term: NarrowTerm, message: MessageFields, flags: readonly string[], userId: number): boolean {
  const operand = typeof term.operand === "string" ? term.operand.toLowerCase() : term.operand;
  switch (term.operator) {
    case "channel":
      if (message.type !== "stream") return false;
      return typeof operand === "number" ? message.stream_id === operand : String(message.display_recipient).toLowerCase() === operand;
    case "topic":
      return message.type === "stream" && message.subject.toLowerCase() === operand;
    case "sender":
      return typeof operand === "number" ? message.sender_id === operand : message.sender_email.toLowerCase() === operand;
    case "dm": {
      if (message.type !== "private" || !Array.isArray(message.display_recipient)) return false;
      const wanted = new Set(dmOperandItems(term.operand).map(String));
      const others = message.display_recipient.filter((r) => r.id !== userId || message.display_recipient.length === 1);
      return others.length === wanted.size && others.every((r) => wanted.has(String(r.id)) || wanted.has(r.email.toLowerCase()));
    }
    case "is":
      switch (operand) {
        case "dm":
        case "private":
          return message.type === "private";
        case "starred":
          return flags.includes("starred");
        case "mentioned":
          return flags.includes("mentioned") || flags.includes("wildcard_mentioned");
        case "alerted":
          return flags.includes("has_alert_word");
        case "unread":
          return !flags.includes("read");
        case "resolved":
          return message.type === "stream" && message.subject.startsWith(RESOLVED_PREFIX);
      }
      return false;
  }
  return false;
}

/** A message as one kind of queue gets it: the fields a narrow looks at, and its JSON. */
export interface MessageForm {
  message: MessageFields;
  json: string;
}

/**
 * The forms of a `message` event's message, built and serialized once each
 * when a queue first needs it: HTML or Markdown (apply_markdown), the empty
 * topic or its display name (empty_topic_name). Both queue backends use it.
 */
export function messageForms(event: ClientEvent, delivery: MessageDelivery): (filter: QueueFilter) => MessageForm {
  const canonical = event.message as Record<string, unknown>;
  // Indexed by (HTML ? 2 : 0) + (empty topic shown by its name ? 1 : 0).
  const forms: (MessageForm | undefined)[] = [];
  return (filter) => {
    const html = filter.applyMarkdown;
    const emptyTopic = canonical.subject === "" && canonical.type === "stream" && !filter.capabilities.empty_topic_name;
    const key = (html ? 2 : 0) + (emptyTopic ? 1 : 0);
    let form = forms[key];
    if (!form) {
      const message = { ...canonical };
      if (!html) {
        message.content = delivery.rawContent;
        message.content_type = "text/x-markdown";
      }
      if (emptyTopic) message.subject = message.topic = delivery.emptyTopicName;
      form = forms[key] = { message: message as unknown as MessageFields, json: JSON.stringify(message) };
    }
    return form;
  };
}
