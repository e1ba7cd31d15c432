// The one way actions tell clients about a state change: notify(event, userIds).
// Event queues (POST /register, GET /events) subscribe here; so do tests.

/** An event as Zulip clients receive it, minus the queue-assigned `id`. */
export interface ClientEvent {
  type: string;
  [field: string]: unknown;
}

export interface Notification {
  realmId: number;
  event: ClientEvent;
  /** Users whose queues should receive the event. */
  userIds: readonly number[];
}

export type NotificationListener = (notification: Notification) => void;

export interface Notifier {
  notify(realmId: number, event: ClientEvent, userIds: readonly number[]): void;
  subscribe(listener: NotificationListener): () => void;
}

/** Single-process fan-out; a listener that throws does not stop the others. */
export class LocalNotifier implements Notifier {
  readonly #listeners = new Set<NotificationListener>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => {}) {}

  notify(realmId: number, event: ClientEvent, userIds: readonly number[]): void {
    if (userIds.length === 0) return;
    const notification = { realmId, event, userIds };
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

  add(realmId: number, event: ClientEvent, userIds: readonly number[]): void {
    if (userIds.length > 0) this.#items.push({ realmId, event, userIds });
  }

  sendTo(notifier: Notifier): void {
    for (const { realmId, event, userIds } of this.#items.splice(0)) notifier.notify(realmId, event, userIds);
  }
}
