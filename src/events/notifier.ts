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
 * Restricts an event to the queues that have (or lack) a capability: Zulip
 * sends clients that declare one a different event for the same change.
 */
export interface CapabilityCondition {
  name: CapabilityName;
  present: boolean;
}

export interface Notification {
  realmId: number;
  event: ClientEvent;
  /** Users whose queues should receive the event. */
  userIds: readonly number[];
  capability?: CapabilityCondition | undefined;
}

export type NotificationListener = (notification: Notification) => void;

export interface Notifier {
  notify(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityCondition): void;
  subscribe(listener: NotificationListener): () => void;
}

/** Single-process fan-out; a listener that throws does not stop the others. */
export class LocalNotifier implements Notifier {
  readonly #listeners = new Set<NotificationListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => {}) {}

  notify(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityCondition): void {
    if (userIds.length === 0) return;
    const notification = { realmId, event, userIds, capability };
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

  add(realmId: number, event: ClientEvent, userIds: readonly number[], capability?: CapabilityCondition): void {
    if (userIds.length > 0) this.#items.push({ realmId, event, userIds, capability });
  }

  sendTo(notifier: Notifier): void {
    for (const { realmId, event, userIds, capability } of this.#items.splice(0)) notifier.notify(realmId, event, userIds, capability);
  }
}
