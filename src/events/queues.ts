// Event queues in one process: POST /register creates one per client, the
// notifier's fan-out appends to the queues of the users an event is for, and
// GET /events long-polls one. Like Zulip's tornado/event_queue.py: events get
// per-queue increasing IDs, acknowledged ones are dropped, an idle poll ends
// with a heartbeat, and queues nobody polls expire.
import crypto from "node:crypto";
import { meetsCapabilities, type ClientEvent, type MessageDelivery, type Notification, type Notifier } from "./notifier.ts";
import { acceptsEvent, type QueueFilter } from "./filter.ts";

export interface QueuedEvent extends ClientEvent {
  id: number;
}

export interface QueueTimings {
  /** How long an idle GET /events waits before answering with a heartbeat. */
  heartbeatMs: number;
  /** Default lifespan of a queue nobody polls. */
  idleTimeoutMs: number;
  /** Longest lifespan a client may ask for. */
  maxLifespanMs: number;
  /** How often expired queues are looked for. */
  sweepIntervalMs: number;
}

export interface NewQueue {
  realmId: number;
  userId: number;
  filter: QueueFilter;
  /** Lifespan asked for by the client; undefined or 0: the default. */
  lifespanMs?: number | undefined;
}

interface Waiter {
  /** Ends the wait; the poll then answers with what the queue holds. */
  resolve(): void;
  timer: NodeJS.Timeout;
  /** A wake-up is scheduled. */
  waking?: boolean;
}

export class EventQueue {
  readonly events: QueuedEvent[] = [];
  /** ID of the next event; the first is 0, so a fresh client's last_event_id is -1. */
  nextEventId = 0;
  /** The newest ID dropped by acknowledgement, to detect clients that skipped ahead. */
  newestPrunedId = -1;
  lastPolledAt: number;
  waiter: Waiter | undefined;

  constructor(
    readonly id: string,
    readonly realmId: number,
    readonly userId: number,
    readonly filter: QueueFilter,
    readonly lifespanMs: number,
    now: number,
  ) {
    this.lastPolledAt = now;
  }

  push(event: ClientEvent): void {
    this.events.push({ ...event, id: this.nextEventId++ });
    this.wake();
  }

  /** Drops the events the client has acknowledged. */
  prune(lastEventId: number): void {
    let dropped = 0;
    while (dropped < this.events.length && this.events[dropped]!.id <= lastEventId) dropped++;
    if (dropped > 0) this.newestPrunedId = this.events[dropped - 1]!.id;
    this.events.splice(0, dropped);
  }

  /**
   * Answers a waiting poll with what the queue holds — on a later turn of the
   * event loop, so the request that caused the events gets its reply first
   * instead of waiting for every woken poll to be written, and events of one
   * action are answered together.
   */
  wake(): void {
    const waiter = this.waiter;
    if (!waiter || this.events.length === 0 || waiter.waking) return;
    waiter.waking = true;
    setImmediate(() => {
      if (this.waiter !== waiter) return;
      this.waiter = undefined;
      clearTimeout(waiter.timer);
      waiter.resolve();
    });
  }
}

export class QueueError extends Error {
  constructor(readonly kind: "unknown" | "pruned", message: string) {
    super(message);
  }
}

/** Every queue of this process, indexed by ID and by user for fan-out. */
export class EventQueues {
  readonly #byId = new Map<string, EventQueue>();
  readonly #byUser = new Map<number, Set<EventQueue>>();
  /** Queues that asked for every public channel's messages. */
  readonly #allPublic = new Set<EventQueue>();
  readonly #unsubscribe: () => void;
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;

  constructor(
    notifier: Notifier,
    readonly timings: QueueTimings,
    private readonly clock: () => number = Date.now,
  ) {
    this.#unsubscribe = notifier.subscribe((n) => this.deliver(n));
    this.#sweeper = setInterval(() => this.sweep(), timings.sweepIntervalMs);
    this.#sweeper.unref();
  }

  get size(): number {
    return this.#byId.size;
  }

  create(spec: NewQueue): EventQueue {
    // As Zulip: 0 (or nothing) means the default; any other lifespan is taken up to the maximum.
    const lifespan = spec.lifespanMs && spec.lifespanMs > 0 ? Math.min(spec.lifespanMs, this.timings.maxLifespanMs) : this.timings.idleTimeoutMs;
    const id = crypto.randomUUID();
    const queue = new EventQueue(id, spec.realmId, spec.userId, spec.filter, lifespan, this.clock());
    this.#byId.set(id, queue);
    let mine = this.#byUser.get(spec.userId);
    if (!mine) this.#byUser.set(spec.userId, (mine = new Set()));
    mine.add(queue);
    if (spec.filter.allPublicStreams) this.#allPublic.add(queue);
    return queue;
  }

  /** The caller's queue, or a QueueError saying why not. */
  get(queueId: string, userId: number): EventQueue {
    const queue = this.#byId.get(queueId);
    // Someone else's queue is reported as unknown, as current Zulip does: queue IDs reveal nothing.
    if (!queue || queue.userId !== userId) throw new QueueError("unknown", `Bad event queue ID: ${queueId}`);
    return queue;
  }

  delete(queue: EventQueue): void {
    this.#byId.delete(queue.id);
    this.#allPublic.delete(queue);
    const mine = this.#byUser.get(queue.userId);
    mine?.delete(queue);
    if (mine?.size === 0) this.#byUser.delete(queue.userId);
    const waiter = queue.waiter;
    if (waiter) {
      queue.waiter = undefined;
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  }

  /** Queues of a user (all of their clients). */
  queuesOf(userId: number): ReadonlySet<EventQueue> {
    return this.#byUser.get(userId) ?? new Set();
  }

  /**
   * GET /events: acknowledges through `lastEventId`, then returns the events
   * held, waiting for one (or the heartbeat) when there are none and the
   * client may block. `onAbandon` lets the caller cancel the wait when the
   * client hangs up.
   */
  poll(queue: EventQueue, lastEventId: number | undefined, dontBlock: boolean): { events: Promise<QueuedEvent[]>; cancel(): void } {
    if (lastEventId !== undefined) {
      if (lastEventId < queue.newestPrunedId) throw new QueueError("pruned", `An event newer than ${lastEventId} has already been pruned!`);
      queue.prune(lastEventId);
      // Acknowledging an ID the queue never handed out would silently drop events.
      if (lastEventId !== queue.newestPrunedId) throw new QueueError("pruned", `Event ${lastEventId} was not in this queue`);
    }
    queue.lastPolledAt = this.clock();
    // A client has one poll at a time; a newer one replaces an older, which ends empty.
    const previous = queue.waiter;
    if (previous) {
      queue.waiter = undefined;
      clearTimeout(previous.timer);
      previous.resolve();
    }
    if (queue.events.length > 0 || dontBlock || this.#closed) return { events: Promise.resolve([...queue.events]), cancel: () => {} };
    let waiter: Waiter | undefined;
    // The answer is read when the wait ends, so it holds every event queued by then.
    const events = new Promise<void>((resolve) => {
      const timer = setTimeout(() => queue.push({ type: "heartbeat" }), this.timings.heartbeatMs);
      waiter = { resolve, timer };
      queue.waiter = waiter;
    }).then(() => {
      queue.lastPolledAt = this.clock();
      return [...queue.events];
    });
    return {
      events,
      cancel: () => {
        if (queue.waiter !== waiter || !waiter) return;
        queue.waiter = undefined;
        clearTimeout(waiter.timer);
        queue.lastPolledAt = this.clock();
        waiter.resolve();
      },
    };
  }

  /** Fan-out: each queue of each addressed user that accepts the event gets a copy. */
  deliver({ realmId, event, userIds, capability, message }: Notification): void {
    if (message) {
      this.#deliverMessage(realmId, event, userIds, message);
      return;
    }
    for (const userId of userIds) {
      const queues = this.#byUser.get(userId);
      if (!queues) continue;
      for (const queue of queues) {
        if (queue.realmId !== realmId) continue;
        if (!meetsCapabilities(queue.filter.capabilities, capability)) continue;
        if (acceptsEvent(queue.filter, event, userId)) queue.push(event);
      }
    }
  }

  /**
   * A message event: each queue gets the message in its client's form
   * (HTML or Markdown; the empty topic or its display name), built once per
   * form, with its user's flags and, for the sender's own queue, local_id.
   */
  #deliverMessage(realmId: number, event: ClientEvent, userIds: readonly number[], delivery: MessageDelivery): void {
    const canonical = event.message as Record<string, unknown>;
    const forms = new Map<string, Record<string, unknown>>();
    const formFor = (queue: EventQueue): Record<string, unknown> => {
      const html = queue.filter.applyMarkdown;
      const emptyTopic = canonical.subject === "" && canonical.type === "stream" && !queue.filter.capabilities.empty_topic_name;
      const key = `${html}:${emptyTopic}`;
      let form = forms.get(key);
      if (!form) {
        form = { ...canonical };
        if (!html) {
          form.content = delivery.rawContent;
          form.content_type = "text/x-markdown";
        }
        if (emptyTopic) form.subject = form.topic = delivery.emptyTopicName;
        forms.set(key, form);
      }
      return form;
    };
    const reached = new Set<EventQueue>();
    const offer = (queue: EventQueue, userId: number, flags: readonly string[]) => {
      if (queue.realmId !== realmId || reached.has(queue)) return;
      reached.add(queue);
      const queued: ClientEvent = { type: "message", message: formFor(queue), flags };
      // The contract names it local_id; Zulip's clients read local_message_id.
      if (delivery.localId && delivery.localId.queueId === queue.id) queued.local_id = queued.local_message_id = delivery.localId.localId;
      if (acceptsEvent(queue.filter, queued, userId)) queue.push(queued);
    };
    for (const userId of userIds) {
      const queues = this.#byUser.get(userId);
      if (!queues) continue;
      const flags = delivery.flags[userId] ?? [];
      for (const queue of queues) offer(queue, userId, flags);
    }
    if (delivery.publicChannel) {
      for (const queue of this.#allPublic) offer(queue, queue.userId, delivery.flags[queue.userId] ?? []);
    }
  }

  /** Removes queues that nobody has polled for their lifespan (a waiting poll keeps a queue alive). */
  sweep(): void {
    const now = this.clock();
    for (const queue of this.#byId.values()) {
      if (!queue.waiter && now - queue.lastPolledAt > queue.lifespanMs) this.delete(queue);
    }
  }

  /** Ends every waiting poll (for shutdown) and stops listening. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#unsubscribe();
    for (const queue of this.#byId.values()) {
      const waiter = queue.waiter;
      if (!waiter) continue;
      queue.waiter = undefined;
      clearTimeout(waiter.timer);
      waiter.resolve();
    }
  }
}
