// The one way actions tell clients about a state change: notify(event, userIds).
// Event queues (POST /register, GET /events) subscribe here; so do tests.

/** An event as Zulip clients receive it, minus the queue-assigned `id`. */
export interface ClientEvent {
  type: string;
  [field: string]: unknown;
}

/** Client capabilities a queue was registered with (Zulip's client_capabilities). */
export const CAPABILITY_NAMES = [
  "notification_settings_null",
  "bulk_message_deletion",
  "user_avatar_url_field_optional",
  "stream_typing_notifications",
  "user_settings_object",
  "linkifier_url_template",
  "user_list_incomplete",
  "include_deactivated_groups",
  "archived_channels",
  "empty_topic_name",
  "simplified_presence_events",
] as const;

export type CapabilityName = (typeof CAPABILITY_NAMES)[number];

/**
 * What a queue was registered with that can decide which form of an event it
 * gets: a client capability, or POST /register's slim_presence (presence
 * events without `email`).
 */
export type QueueTrait = CapabilityName | "slim_presence";

/**
 * Restricts an event to the queues that have (or lack) a capability: Zulip
 * sends clients that declare one a different event for the same change.
 */
export interface CapabilityCondition {
  name: QueueTrait;
  present: boolean;
}

/** One condition, or several that must all hold (an event that differs by two capabilities). */
export type CapabilityConditions = CapabilityCondition | readonly CapabilityCondition[];

/** What a queue was registered with, as far as capability conditions look. */
export interface QueueTraits {
  capabilities: Readonly<Record<CapabilityName, boolean>>;
  slimPresence: boolean;
}

/** Whether a queue registered with `traits` takes an event sent with `condition`. */
export function meetsCapabilities(traits: QueueTraits, condition: CapabilityConditions | undefined): boolean {
  if (condition === undefined) return true;
  const all: readonly CapabilityCondition[] = "name" in condition ? [condition] : condition;
  return all.every((c) => (c.name === "slim_presence" ? traits.slimPresence : traits.capabilities[c.name]) === c.present);
}

/**
 * What a `message` event needs beyond its one message object: each queue
 * gets the message in the form its client registered for, with the flags of
 * the user it belongs to.
 */
export interface MessageDelivery {
  /** API flag names per recipient user ID. */
  flags: Readonly<Record<number, readonly string[]>>;
  /** The Markdown source, for queues registered without apply_markdown. */
  rawContent: string;
  /** The organization's name for the empty topic, for clients without the empty_topic_name capability. */
  emptyTopicName: string;
  /** The sender's local echo: the queue that sent it gets local_id. */
  localId?: { queueId: string; localId: string } | undefined;
  /** A public channel's message also goes to every all_public_streams queue of the organization. */
  publicChannel: boolean;
}

export interface Notification {
  realmId: number;
  event: ClientEvent;
  /** Users whose queues should receive the event. */
  userIds: readonly number[];
  capability?: CapabilityConditions | undefined;
  message?: MessageDelivery | undefined;
}

export type NotificationListener = (notification: Notification) => void;

export interface Notifier {
  notify(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityConditions): void;
  /** A `message` event: `event.message` is the message as apply_markdown clients see it. */
  notifyMessage(realmId: number, event: ClientEvent, userIds: readonly number[], delivery: MessageDelivery): void;
  subscribe(listener: NotificationListener): () => void;
}

/** Single-process fan-out; a listener that throws does not stop the others. */
export class LocalNotifier implements Notifier {
  readonly #listeners = new Set<NotificationListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => {}) {}

  notify(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityConditions): void {
    if (userIds.length === 0) return;
    this.#send({ realmId, event, userIds, capability });
  }

  notifyMessage(realmId: number, event: ClientEvent, userIds: readonly number[], message: MessageDelivery): void {
    this.#send({ realmId, event, userIds, message });
  }

  #send(notification: Notification): void {
    for (const listener of this.#listeners) {
      try {
        listener(notification);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  subscribe(listener: NotificationListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/**
 * Events gathered while a transaction runs, sent only once it has committed,
 * so no client hears of a change that was rolled back.
 */
export class PendingEvents {
  readonly #items: Notification[] = [];
  readonly #afterCommit: (() => void)[] = [];

  /**
   * Runs `callback` once the transaction has committed, after its events went
   * out (never if it rolled back). It must not throw: the write is done.
   */
  afterCommit(callback: () => void): void {
    this.#afterCommit.push(callback);
  }

  add(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityConditions): void {
    if (userIds.length > 0) this.#items.push({ realmId, event, userIds, capability });
  }

  addMessage(realmId: number, event: ClientEvent, userIds: readonly number[], message: MessageDelivery): void {
    this.#items.push({ realmId, event, userIds, message });
  }

  sendTo(notifier: Notifier): void {
    for (const { realmId, event, userIds, capability, message } of this.#items.splice(0)) {
      if (message) notifier.notifyMessage(realmId, event, userIds, message);
      else notifier.notify(realmId, event, userIds, capability);
    }
    for (const callback of this.#afterCommit.splice(0)) callback();
  }
}
