// Event queues in one process: POST /register creates one per client, the
// notifier's fan-out appends to the queues of the users an event is for, and
// GET /events long-polls one. Like Zulip's tornado/event_queue.py: events get
// per-queue increasing IDs, acknowledged ones are dropped, an idle poll ends
// with a heartbeat, and queues nobody polls expire.
import crypto from "node:crypto";
import { meetsCapabilities, type ClientEvent, type MessageDelivery, type Notification, type Notifier } from "./notifier.ts";
import { acceptsEvent, acceptsMessage, messageForms, type QueueFilter } from "./filter.ts";
import { HEARTBEAT_EVENT, messageEvent, SerializedEvent } from "./serialized.ts";
import { QueueError, type Answer, type EventQueueBackend, type OpenedQueue, type NewQueue, type QueueTimings } from "./backend.ts";

/** An event a queue holds: its ID in this queue and its JSON as the client gets it, `id` included. */
export interface QueuedEvent {
  id: number;
  json: string;
}

interface Waiter {
  answer: Answer;
  /** The heartbeat. */
  timer: NodeJS.Timeout;
}

export class EventQueue implements OpenedQueue {
  readonly events: QueuedEvent[] = [];
  /** ID of the next event; the first is 0, so a fresh client's last_event_id is -1. */
  nextEventId = 0;
  /** The newest ID dropped by acknowledgement, to detect clients that skipped ahead. */
  newestPrunedId = -1;
  lastPolledAt: number;
  /** The poll waiting for events, if any. */
  waiter: Waiter | undefined;
  /** A wake-up of the waiting poll is scheduled. */
  waking = false;

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

  /** Appends an event (EventQueues then wakes the waiting poll). */
  push(event: SerializedEvent): void {
    const id = this.nextEventId++;
    this.events.push({ id, json: event.withId(id) });
  }

  /** The events held, as the JSON array a GET /events reply carries. */
  eventsJson(): string {
    const { events } = this;
    if (events.length === 1) return `[${events[0]!.json}]`;
    let json = "[";
    for (let i = 0; i < events.length; i++) json += i === 0 ? events[i]!.json : `,${events[i]!.json}`;
    return `${json}]`;
  }

  /** Drops the events the client has acknowledged. */
  prune(lastEventId: number): void {
    let dropped = 0;
    while (dropped < this.events.length && this.events[dropped]!.id <= lastEventId) dropped++;
    if (dropped > 0) this.newestPrunedId = this.events[dropped - 1]!.id;
    this.events.splice(0, dropped);
  }
}

/** Every queue of this process, indexed by ID and by user for fan-out. */
export class EventQueues implements EventQueueBackend {
  readonly #byId = new Map<string, EventQueue>();
  readonly #byUser = new Map<number, Set<EventQueue>>();
  /** Queues that asked for every public channel's messages. */
  readonly #allPublic = new Set<EventQueue>();
  readonly #unsubscribe: () => void;
  readonly #sweeper: NodeJS.Timeout;
  #closed = false;
  /** Queues whose waiting poll is to be answered by the next #wakeAll. */
  readonly #toWake: EventQueue[] = [];

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

  /** Closed for shutdown: polls are answered at once, and their connections should close. */
  get closed(): boolean {
    return this.#closed;
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

  open(queueId: string, userId: number, lastEventId: number): EventQueue {
    const queue = this.get(queueId, userId);
    this.acknowledge(queue, lastEventId);
    return queue;
  }

  remove(queueId: string, userId: number): void {
    this.delete(this.get(queueId, userId));
  }

  peek(queueId: string): string[] | undefined {
    return this.#byId.get(queueId)?.events.map((e) => e.json);
  }

  isWaiting(queueId: string): boolean {
    return this.#byId.get(queueId)?.waiter !== undefined;
  }

  queueIdsOf(userId: number): string[] {
    return [...this.queuesOf(userId)].map((q) => q.id);
  }

  recentlyPolled(userId: number, windowMs: number): boolean {
    const now = this.clock();
    for (const queue of this.queuesOf(userId)) {
      if (queue.waiter !== undefined || now - queue.lastPolledAt < windowMs) return true;
    }
    return false;
  }

  delete(queue: EventQueue): void {
    this.#byId.delete(queue.id);
    this.#allPublic.delete(queue);
    const mine = this.#byUser.get(queue.userId);
    mine?.delete(queue);
    if (mine?.size === 0) this.#byUser.delete(queue.userId);
    if (queue.waiter) this.#answer(queue, queue.waiter);
  }

  /** Queues of a user (all of their clients). */
  queuesOf(userId: number): ReadonlySet<EventQueue> {
    return this.#byUser.get(userId) ?? new Set();
  }

  /**
   * GET /events, first step: drops the events the client has seen (through
   * `lastEventId`). Throws a QueueError when that ID cannot be right.
   */
  acknowledge(queue: EventQueue, lastEventId: number): void {
    if (lastEventId < queue.newestPrunedId) throw new QueueError("pruned", `An event newer than ${lastEventId} has already been pruned!`);
    queue.prune(lastEventId);
    // Acknowledging an ID the queue never handed out would silently drop events.
    if (lastEventId !== queue.newestPrunedId) throw new QueueError("pruned", `Event ${lastEventId} was not in this queue`);
  }

  /**
   * GET /events, second step: `answer` gets the events held — at once when
   * there are some, when the client may not block, or when closing; else
   * when an event arrives or the heartbeat is due. Returns the function that
   * ends the wait unanswered when the client hangs up, or undefined when the
   * answer was given at once.
   */
  wait(opened: OpenedQueue, dontBlock: boolean, answer: Answer): (() => void) | undefined {
    // This backend opens only its own EventQueue objects.
    const queue = opened as EventQueue;
    queue.lastPolledAt = this.clock();
    // A client has one poll at a time; a newer one replaces an older, which ends with what the queue holds.
    if (queue.waiter) this.#answer(queue, queue.waiter);
    if (queue.events.length > 0 || dontBlock || this.#closed) {
      answer(queue.eventsJson());
      return undefined;
    }
    const waiter: Waiter = { answer, timer: setTimeout(() => this.#push(queue, HEARTBEAT_EVENT), this.timings.heartbeatMs) };
    queue.waiter = waiter;
    return () => {
      if (queue.waiter !== waiter) return;
      queue.waiter = undefined;
      clearTimeout(waiter.timer);
      queue.lastPolledAt = this.clock();
    };
  }

  /** Ends a queue's wait with what the queue holds. */
  #answer(queue: EventQueue, waiter: Waiter): void {
    queue.waiter = undefined;
    clearTimeout(waiter.timer);
    queue.lastPolledAt = this.clock();
    waiter.answer(queue.eventsJson());
  }

  /** Appends an event to a queue and schedules the answer to its waiting poll. */
  #push(queue: EventQueue, event: SerializedEvent): void {
    queue.push(event);
    if (!queue.waiter || queue.waking) return;
    queue.waking = true;
    this.#toWake.push(queue);
    if (this.#toWake.length === 1) setImmediate(this.#wakeAll);
  }

  /**
   * Answers the polls woken since the last call — on a later turn of the
   * event loop, so the request that caused the events gets its reply first
   * and the events of one action are answered together. One callback for a
   * whole fan-out, each reply written in turn: no timer or promise per poll.
   */
  readonly #wakeAll = (): void => {
    let failure: { error: unknown } | undefined;
    for (const queue of this.#toWake.splice(0)) {
      queue.waking = false;
      if (!queue.waiter || queue.events.length === 0) continue;
      try {
        this.#answer(queue, queue.waiter);
      } catch (error) {
        failure ??= { error };
      }
    }
    // An answer that throws is a bug: reported like any throwing callback, once every other poll has its reply.
    if (failure) throw failure.error;
  };

  /**
   * Fan-out: each queue of each addressed user that accepts the event gets
   * it. The event is serialized once, when the first queue takes it; the
   * queues share that text.
   */
  deliver({ realmId, event, userIds, capability, message }: Notification): void {
    if (message) {
      this.#deliverMessage(realmId, event, userIds, message);
      return;
    }
    let serialized: SerializedEvent | undefined;
    for (const userId of userIds) {
      const queues = this.#byUser.get(userId);
      if (!queues) continue;
      for (const queue of queues) {
        if (queue.realmId !== realmId) continue;
        if (!meetsCapabilities(queue.filter, capability)) continue;
        if (acceptsEvent(queue.filter, event, userId)) this.#push(queue, (serialized ??= SerializedEvent.of(event)));
      }
    }
  }

  /**
   * A message event: each queue gets the message in its client's form
   * (HTML or Markdown; the empty topic or its display name), built and
   * serialized once per form, with its user's flags and, for the sender's own
   * queue, local_id. Only the flags (and local_id) are serialized per queue.
   */
  #deliverMessage(realmId: number, event: ClientEvent, userIds: readonly number[], delivery: MessageDelivery): void {
    const formFor = messageForms(event, delivery);
    const reached = new Set<EventQueue>();
    const offer = (queue: EventQueue, userId: number, flags: readonly string[]) => {
      if (queue.realmId !== realmId || reached.has(queue)) return;
      reached.add(queue);
      const form = formFor(queue.filter);
      if (!acceptsMessage(queue.filter, form.message, flags, userId)) return;
      // The contract names it local_id; Zulip's clients read local_message_id.
      const localId = delivery.localId && delivery.localId.queueId === queue.id ? delivery.localId.localId : undefined;
      this.#push(queue, messageEvent(form.json, flags, localId));
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
  sweep(): number {
    const now = this.clock();
    let removed = 0;
    for (const queue of this.#byId.values()) {
      if (!queue.waiter && now - queue.lastPolledAt > queue.lifespanMs) {
        this.delete(queue);
        removed++;
      }
    }
    return removed;
  }

  /** Ends every waiting poll (for shutdown); events still arrive until shutdown(). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const queue of this.#byId.values()) if (queue.waiter) this.#answer(queue, queue.waiter);
  }

  /** Delivery is synchronous: nothing is ever in flight. */
  settled(): undefined {
    return undefined;
  }

  /** Stops listening; the queues die with the process. */
  async shutdown(): Promise<void> {
    this.close();
    this.#unsubscribe();
  }
}
