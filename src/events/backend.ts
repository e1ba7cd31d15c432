// What GET /events, POST /register and DELETE /events need from wherever the
// event queues live: this process's memory (queues.ts, the default) or Redis
// (redis-queues.ts, when REDIS_URL is set, shared by every process). Both are
// fed by the process's Notifier and behave the same for clients.
import type { QueueFilter } from "./filter.ts";

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

/** Writes a poll's reply, given the events held as a JSON array. Must not throw. */
export type Answer = (eventsJson: string) => void;

export class QueueError extends Error {
  constructor(
    readonly kind: "unknown" | "pruned",
    message: string,
  ) {
    super(message);
  }
}

/** A queue a poll has opened (found and acknowledged), ready to wait on. */
export interface OpenedQueue {
  readonly id: string;
}

/**
 * Methods may answer at once or with a promise: the memory backend answers
 * at once, so its path has no promise per poll; callers await only promises.
 */
export interface EventQueueBackend {
  /** Closed for shutdown: polls are answered at once, and their connections should close. */
  readonly closed: boolean;
  readonly timings: QueueTimings;
  create(spec: NewQueue): OpenedQueue | Promise<OpenedQueue>;
  /**
   * GET /events, first step: the caller's queue, with the events through
   * `lastEventId` dropped. Throws (or rejects with) a QueueError: "unknown"
   * for a queue that does not exist or is someone else's, "pruned" for an
   * ID that cannot be right. `dontBlock`: the poll will not wait (so it
   * does not count as waiting).
   */
  open(queueId: string, userId: number, lastEventId: number, dontBlock: boolean): OpenedQueue | Promise<OpenedQueue>;
  /**
   * GET /events, second step: `answer` gets the events held — at once when
   * there are some, when the client may not block, or when closing; else
   * when an event arrives or the heartbeat is due. Returns the function that
   * ends the wait unanswered when the client hangs up, or undefined when the
   * answer was given at once.
   */
  wait(queue: OpenedQueue, dontBlock: boolean, answer: Answer): (() => void) | undefined;
  /** DELETE /events (and a failed POST /register): a waiting poll is answered. Throws a QueueError "unknown". */
  remove(queueId: string, userId: number): void | Promise<void>;
  /** The JSON of the events a queue holds, without acknowledging any; undefined: no such queue. */
  peek(queueId: string): string[] | undefined | Promise<string[] | undefined>;
  /** Whether a poll served by this process waits on the queue. */
  isWaiting(queueId: string): boolean;
  /** IDs of a user's queues (all of their clients). */
  queueIdsOf(userId: number): string[] | Promise<string[]>;
  /** Whether one of the user's queues is being polled or was within `windowMs` (the user is online). */
  recentlyPolled(userId: number, windowMs: number): boolean | Promise<boolean>;
  /**
   * When notifications are written asynchronously (Redis): a promise that
   * settles once those notified so far are in the queues; undefined when
   * none is in flight.
   */
  settled(): Promise<void> | undefined;
  /** Removes queues nobody has polled for their lifespan; returns how many this call removed. */
  sweep(): number | Promise<number>;
  /** Shutdown, first step: answers every waiting poll now; events keep arriving into the queues. */
  close(): void;
  /** Shutdown, last step (no request runs any more): stops listening and releases connections. */
  shutdown(): Promise<void>;
}
