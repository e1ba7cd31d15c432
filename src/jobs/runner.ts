// Runs the durable job queue's workers in this process (jobs/queue.ts). Each
// worker is registered at start-up by name with what it does with a payload;
// the runner claims due jobs of the registered names — at once when this
// process committed one (wake), and every poll interval for jobs queued by
// other processes, due for a retry, or left by a process that died — runs
// them a few at a time, never inside a transaction nor on a request's path,
// and finishes, retries (with backoff) or fails each one.
import type { Kysely } from "kysely";
import type { Dialect } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";
import { claimJobs, completeJob, dueJobNames, failJob, nextRunAt, releaseJob, retryJobAt, type ClaimedJob, type JobWaker } from "./queue.ts";

/** Thrown by a worker to retry its job after `delayMs` instead of the worker's own backoff. */
export class RetryJob extends Error {
  constructor(
    message: string,
    readonly delayMs: number,
  ) {
    super(message);
  }
}

/** Thrown by a worker when trying again is pointless: the job fails at once. */
export class PermanentJobFailure extends Error {}

export interface JobContext {
  /** The attempt this is, from 1. */
  attempt: number;
  /** Whether this is the last attempt the job gets. */
  lastAttempt: boolean;
  /**
   * Ends the job inside the worker's own transaction, so what it wrote (the
   * jobs it queued, say) commits with the job's end or not at all, and a
   * crash in between cannot make it run again.
   */
  completeIn(trx: Kysely<Database>): Promise<void>;
}

export interface Worker<P = unknown> {
  /** Does the job; throwing retries it (with backoff) until its attempts run out. */
  run(payload: P, context: JobContext): Promise<void>;
  /** After the last attempt failed, or on a PermanentJobFailure: tell someone. */
  onFailure?(payload: P, error: unknown): Promise<void>;
  /** Jobs of this name run at once by this process (default 4). */
  concurrency?: number;
  /** How long a claim lasts before another process may take the job (default 60 s): longer than a run can take. */
  leaseMs?: number;
  /** Delay before attempt n + 1 after attempt n failed (default: 1 s doubling, at most 10 minutes). */
  backoffMs?(attempt: number): number;
}

export interface JobRunnerOptions {
  db: Kysely<Database>;
  dialect: Dialect;
  nowMs(): number;
  /** How often the queue is read for jobs this process was not told of. */
  pollMs?: number;
  log(error: unknown, what: string): void;
}

export const DEFAULT_LEASE_MS = 60_000;

function defaultBackoff(attempt: number): number {
  return Math.min(1000 * 2 ** (attempt - 1), 10 * 60_000);
}

function describe(error: unknown): string {
  return (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, 2000);
}

export class JobRunner implements JobWaker {
  readonly #workers = new Map<string, Worker<never>>();
  readonly #running = new Map<string, number>();
  /** Names that drain() is running: the background loop does not claim them. */
  readonly #draining = new Map<string, number>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #options: JobRunnerOptions;
  #started = false;
  #stopped = false;
  #pumping = false;
  #pumpAgain = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: JobRunnerOptions) {
    this.#options = options;
  }

  /** Registers what jobs named `name` do; before start(). */
  register<P>(name: string, worker: Worker<P>): void {
    if (this.#workers.has(name)) throw new Error(`a worker for ${name} is registered already`);
    this.#workers.set(name, worker as Worker<never>);
    this.#running.set(name, 0);
  }

  get names(): string[] {
    return [...this.#workers.keys()];
  }

  /** Claims and runs due jobs now, then every poll interval. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#tick();
  }

  wake(): void {
    if (this.#started && !this.#stopped) setImmediate(() => this.#tick());
  }

  /**
   * Runs every due job of `names` (all registered names by default) in this
   * process until none is due, and waits for them: for the command line and
   * tests. Returns how many ran.
   */
  async drain(names: readonly string[] = this.names): Promise<{ completed: number; failed: number; retried: number; errors: unknown[] }> {
    const report = { completed: 0, failed: 0, retried: 0, errors: [] as unknown[] };
    // The background loop leaves these names alone meanwhile, and what it runs of them ends first: jobs run in their order.
    for (const name of names) this.#draining.set(name, (this.#draining.get(name) ?? 0) + 1);
    try {
      while (names.some((name) => (this.#running.get(name) ?? 0) > 0)) await new Promise((resolve) => setTimeout(resolve, 5));
      return await this.#drainDue(names, report);
    } finally {
      for (const name of names) this.#draining.set(name, this.#draining.get(name)! - 1);
    }
  }

  async #drainDue(names: readonly string[], report: { completed: number; failed: number; retried: number; errors: unknown[] }) {
    for (;;) {
      const now = this.#options.nowMs();
      let claimedAny = false;
      for (const name of names) {
        const claimed = await claimJobs(this.#options.db, this.#options.dialect, name, 100, now, this.#leaseOf(name));
        claimedAny ||= claimed.length > 0;
        for (const job of claimed) {
          const outcome = await this.#runOne(name, job);
          report[outcome.kind] += 1;
          if (outcome.error !== undefined) report.errors.push(outcome.error);
        }
      }
      if (!claimedAny) return report;
    }
  }

  /** Stops claiming, and waits for the jobs in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    while (this.#inFlight.size > 0 || this.#pumping) await Promise.allSettled([...this.#inFlight, new Promise((resolve) => setTimeout(resolve, 10))]);
  }

  /** Jobs running in this process now. */
  get busy(): number {
    return this.#inFlight.size;
  }

  #leaseOf(name: string): number {
    return this.#workers.get(name)?.leaseMs ?? DEFAULT_LEASE_MS;
  }

  #tick(): void {
    void this.#pump()
      .then(() => this.#nextLook())
      .catch((error: unknown) => {
        this.#options.log(error, "reading the job queue failed");
        return this.#options.pollMs ?? 1000;
      })
      .then((delay) => {
        // One timer at a time, set by the latest look; unref: the HTTP server, not this timer, keeps the process alive.
        clearTimeout(this.#timer);
        if (!this.#stopped) this.#timer = setTimeout(() => this.#tick(), delay).unref();
      });
  }

  /** Until the next look at the queue: the poll interval, or less when a job (a retry, a scheduled message) falls due sooner. */
  async #nextLook(): Promise<number> {
    const poll = this.#options.pollMs ?? 1000;
    const now = this.#options.nowMs();
    const next = await nextRunAt(this.#options.db, now);
    return next === undefined ? poll : Math.max(5, Math.min(poll, next - now));
  }

  async #pump(): Promise<void> {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        const now = this.#options.nowMs();
        const free = this.names.filter((name) => !this.#draining.get(name) && this.#running.get(name)! < (this.#workers.get(name)!.concurrency ?? 4));
        const due = await dueJobNames(this.#options.db, free, now);
        for (const name of due) {
          if (this.#stopped) return;
          const slots = (this.#workers.get(name)!.concurrency ?? 4) - this.#running.get(name)!;
          const claimed = await claimJobs(this.#options.db, this.#options.dialect, name, slots, now, this.#leaseOf(name));
          for (const job of claimed) this.#start(name, job);
        }
      } while (this.#pumpAgain && !this.#stopped);
    } catch (error) {
      this.#options.log(error, "reading the job queue failed");
    } finally {
      this.#pumping = false;
    }
  }

  #start(name: string, claimed: ClaimedJob): void {
    this.#running.set(name, this.#running.get(name)! + 1);
    const run = this.#runOne(name, claimed)
      .then(() => undefined)
      .finally(() => {
        this.#running.set(name, this.#running.get(name)! - 1);
        this.#inFlight.delete(run);
        // A slot is free, and a retry or the key's next job may be due soon.
        if (!this.#stopped) this.#tick();
      });
    this.#inFlight.add(run);
  }

  async #runOne(name: string, claimed: ClaimedJob): Promise<{ kind: "completed" | "failed" | "retried"; error?: unknown }> {
    const { db } = this.#options;
    const worker = this.#workers.get(name)!;
    const { job } = claimed;
    const lastAttempt = job.attempts >= job.max_attempts;
    let payload: never;
    try {
      payload = JSON.parse(job.payload) as never;
    } catch (error) {
      await failJob(db, claimed, `unreadable payload: ${describe(error)}`);
      return { kind: "failed", error };
    }
    try {
      await worker.run(payload, { attempt: job.attempts, lastAttempt, completeIn: (trx) => completeJob(trx, claimed) });
      await completeJob(db, claimed);
      return { kind: "completed" };
    } catch (error) {
      try {
        if (this.#stopped && !(error instanceof PermanentJobFailure) && !(error instanceof RetryJob)) {
          // Interrupted by the shutdown: another process takes it.
          await releaseJob(db, claimed, this.#options.nowMs());
          return { kind: "retried", error };
        }
        if (lastAttempt || error instanceof PermanentJobFailure) {
          this.#options.log(error, `job ${name} ${job.id} failed after ${job.attempts} attempt(s)`);
          await failJob(db, claimed, describe(error));
          if (worker.onFailure) await worker.onFailure(payload, error);
          return { kind: "failed", error };
        }
        const delay = error instanceof RetryJob ? error.delayMs : (worker.backoffMs ?? defaultBackoff)(job.attempts);
        await retryJobAt(db, claimed, this.#options.nowMs() + delay, describe(error));
        return { kind: "retried", error };
      } catch (recordError) {
        this.#options.log(recordError, `job ${name} ${job.id}: recording its outcome failed`);
        return { kind: "failed", error };
      }
    }
  }
}
