// How actions write: one transaction that first locks the organization (so
// rules that read before they write hold under concurrent requests), with the
// events it causes sent only after the commit.
//
// Group commit: writes to one organization that arrive in the same turn of
// the event loop (or while an earlier batch is committing) share one
// transaction and one durable commit, each in its own savepoint. A commit
// with its fsync costs more than the rest of a message send, so this is what
// lets concurrent sends go faster than the disk's commit rate without giving
// up durability: nobody is answered before the commit that holds their write
// is on disk (on SQLite, once the WAL's fsync after it has finished).
//
// On PostgreSQL a savepoint is a round trip while the lock is held, and the
// batch's round trips bound how fast an organization writes. So a batch of
// writes that can be run again from the start (the message send) runs them
// together without savepoints; if one fails, the transaction is rolled back
// and the batch is run again, each write in its own savepoint. Writes that
// begin with the same kind of statement (a message's INSERT) may share it: it
// runs once for the whole batch, before their bodies (SharedWrite).
import { sql, type Transaction } from "kysely";
import { PendingEvents } from "../events/notifier.ts";
import type { Services } from "../services.ts";
import { lockRealm, type Dialect, type Storage } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

export type Trx = Transaction<Database>;

type Body<T, L = undefined> = (trx: Trx, pending: PendingEvents, lead: L) => Promise<T>;

/**
 * A statement that writes for several jobs at once: `run` gets one parameter per job, in batch
 * order, and returns one result per job in the same order. A batch run together (PostgreSQL, every
 * write rerunnable) runs it once for all the jobs that lead with it, before any of their bodies; so
 * it must not depend on what another job's body writes. Run alone (one job, or in a savepoint) it
 * gets one parameter.
 */
export interface SharedWrite<P, R> {
  run(trx: Trx, params: readonly P[]): Promise<R[]>;
}

interface Lead {
  write: SharedWrite<unknown, unknown>;
  params: unknown;
}

interface Job {
  body: Body<unknown, unknown>;
  lead: Lead | undefined;
  /** Replaced when the batch is run again: an attempt that rolled back sends nothing. */
  pending: PendingEvents;
  rerunnable: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export interface RealmTransactionOptions<L = undefined, P = unknown> {
  /**
   * `body` acts only through `trx` and `pending` (no other state, no I/O of its own), so it may be
   * run again from the start after an attempt that rolled back.
   */
  rerunnable?: boolean;
  /** Run `write` with `params` first, in the transaction; its result is `body`'s third argument. */
  lead?: { write: SharedWrite<P, L>; params: P };
}

/** The writes waiting for one organization's next transaction. */
interface RealmWrites {
  waiting: Job[];
  /** A batch is scheduled or running (on PostgreSQL, until it has run its writes); the next takes up whatever is waiting then. */
  busy: boolean;
  /** Settles when the latest batch has told its callers: each batch tells its own after, in commit order. */
  told: Promise<void>;
}

/** Bounds how long the organization's lock is held and how much one failed commit takes down. */
const MAX_BATCH = 64;

/** How many transactions committed how many writes: the batching that group commit achieved. */
export interface GroupCommitStats {
  transactions: number;
  writes: number;
  /** Batches run together without savepoints that a failed write made run again with them. */
  reruns: number;
}

interface StorageWrites {
  realms: Map<number, RealmWrites>;
  stats: GroupCommitStats;
}

const writesByStorage = new WeakMap<Storage, StorageWrites>();

function storageWrites(storage: Storage): StorageWrites {
  let writes = writesByStorage.get(storage);
  if (!writes) writesByStorage.set(storage, (writes = { realms: new Map(), stats: { transactions: 0, writes: 0, reruns: 0 } }));
  return writes;
}

export function groupCommitStats(storage: Storage): Readonly<GroupCommitStats> {
  return { ...storageWrites(storage).stats };
}

/** How many writes wait for the organization's next transaction (not yet taken by one). */
export function waitingWrites(storage: Storage, realmId: number): number {
  return storageWrites(storage).realms.get(realmId)?.waiting.length ?? 0;
}

function realmWrites(storage: Storage, realmId: number): RealmWrites {
  const { realms } = storageWrites(storage);
  let writes = realms.get(realmId);
  if (!writes) realms.set(realmId, (writes = { waiting: [], busy: false, told: Promise.resolve() }));
  return writes;
}

/**
 * Runs `body` in a transaction holding the organization's lock, then sends
 * what it queued. Inside `body`, every query must use `trx`: on SQLite a query
 * on the root database would wait forever for Kysely's single connection. For
 * the same reason `body` must not start another realm transaction and wait
 * for it.
 *
 * `body` may share its transaction with other writes to the organization: if
 * it throws, only its own writes are undone (a savepoint, or the batch run
 * again without it) and only its caller sees the error.
 */
export function inRealmTransaction<T, L = undefined, P = unknown>(
  services: Services,
  realmId: number,
  body: Body<T, L>,
  options: RealmTransactionOptions<L, P> = {},
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const writes = realmWrites(services.storage, realmId);
    writes.waiting.push({
      body: body as Body<unknown, unknown>,
      lead: options.lead as Lead | undefined,
      pending: new PendingEvents(),
      rerunnable: options.rerunnable === true,
      resolve: resolve as (value: unknown) => void,
      reject,
    });
    if (!writes.busy) {
      writes.busy = true;
      // Let the other requests read in this turn reach their writes first.
      setImmediate(() => void runBatches(services, realmId, writes));
    }
  });
}

// On PostgreSQL the next batch does not wait for the one before to commit: it
// begins and asks for the organization's lock as soon as the one before has
// run its writes, so its BEGIN and lock round trips overlap that COMMIT, and
// PostgreSQL grants it the lock the moment the COMMIT releases it. It takes
// its writes once it holds the lock: everything that came meanwhile. (SQLite's
// one connection runs one transaction at a time; its COMMIT is cheap, the
// fsync after it is already shared: WalSync.)
async function runBatches(services: Services, realmId: number, writes: RealmWrites): Promise<void> {
  const overlap = services.storage.dialect === "postgres";
  try {
    while (writes.waiting.length > 0) {
      let wrote!: () => void;
      const written = new Promise<void>((resolve) => (wrote = resolve));
      const done = runBatch(services, realmId, writes, overlap ? wrote : undefined);
      await (overlap ? Promise.race([written, done]) : done);
    }
  } finally {
    writes.busy = false;
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Thrown inside a batch run together when one of its writes failed: rolls the transaction back. */
class RunApart extends Error {}

/**
 * A transaction's place in the order callers are told of their writes: the
 * order in which transactions took the organization's lock, which is the
 * order they committed in (so events go out in message ID order, even when
 * batches overlap).
 */
class Turn {
  readonly #previous: Promise<void>;
  #end!: () => void;

  constructor(writes: RealmWrites) {
    this.#previous = writes.told;
    writes.told = new Promise<void>((resolve) => (this.#end = resolve));
  }

  /** Runs `tell` (nothing, for a transaction that rolled back) once the transactions before have told theirs. */
  finish(tell?: () => void): void {
    void this.#previous.then(() => {
      try {
        tell?.();
      } finally {
        this.#end();
      }
    });
  }
}

interface Attempt {
  jobs: Job[];
  outcomes: Outcome[];
  turn: Turn;
}

/**
 * Runs a batch of writes in one transaction: each in its own savepoint, or
 * (`mayRunTogether`, PostgreSQL, every write rerunnable) one after another
 * without, a write that fails then throwing RunApart. `take` gives the
 * writes once the organization's lock is held; `written` is called when they
 * have run, before the COMMIT (not when they failed: a batch run again must
 * stay ahead of the next one).
 */
async function runTransaction(
  services: Services,
  realmId: number,
  writes: RealmWrites,
  take: () => Job[],
  mayRunTogether: boolean,
  written?: () => void,
): Promise<Attempt> {
  let turn: Turn | undefined;
  try {
    return await services.storage.db.transaction().execute(async (trx) => {
      await lockRealm(trx, services.storage.dialect, realmId);
      turn = new Turn(writes);
      const jobs = take();
      const outcomes = await runWrites(trx, services.storage.dialect, jobs, mayRunTogether);
      written?.();
      return { jobs, outcomes, turn };
    });
  } catch (error) {
    turn?.finish();
    throw error;
  }
}

/** Runs `job` alone: its lead write for it alone, then its body. */
async function runJob(trx: Trx, job: Job): Promise<unknown> {
  const lead = job.lead ? (await job.lead.write.run(trx, [job.lead.params]))[0] : undefined;
  return job.body(trx, job.pending, lead);
}

async function runWrites(trx: Trx, dialect: Dialect, jobs: Job[], mayRunTogether: boolean): Promise<Outcome[]> {
  // On its own, a write needs no savepoint: its error rolls back the whole transaction.
  if (jobs.length === 1) return [{ ok: true, value: await runJob(trx, jobs[0]!) }];
  // SQLite's savepoints cost no round trip: only PostgreSQL runs batches together.
  const together = mayRunTogether && dialect === "postgres" && jobs.every((job) => job.rerunnable);
  if (!together) {
    const results: Outcome[] = [];
    for (const [i, job] of jobs.entries()) results.push(await inSavepoint(trx, dialect, job, i > 0));
    return results;
  }
  try {
    const leads = await sharedLeads(trx, jobs);
    const results: Outcome[] = [];
    for (const [i, job] of jobs.entries()) results.push({ ok: true, value: await job.body(trx, job.pending, leads[i]) });
    return results;
  } catch {
    throw new RunApart();
  }
}

/** Each job's lead result: one run of each shared write for all the jobs that lead with it, in batch order. */
async function sharedLeads(trx: Trx, jobs: Job[]): Promise<unknown[]> {
  const results: unknown[] = new Array(jobs.length);
  const byWrite = new Map<SharedWrite<unknown, unknown>, number[]>();
  jobs.forEach((job, i) => {
    if (!job.lead) return;
    const indexes = byWrite.get(job.lead.write);
    if (indexes) indexes.push(i);
    else byWrite.set(job.lead.write, [i]);
  });
  for (const [write, indexes] of byWrite) {
    const values = await write.run(trx, indexes.map((i) => jobs[i]!.lead!.params));
    indexes.forEach((jobIndex, k) => (results[jobIndex] = values[k]));
  }
  return results;
}

/** Runs the next batch of the organization's waiting writes; `written`: see runTransaction. */
async function runBatch(services: Services, realmId: number, writes: RealmWrites, written?: () => void): Promise<void> {
  const { stats } = storageWrites(services.storage);
  let jobs: Job[] | undefined;
  let attempt: Attempt;
  try {
    try {
      attempt = await runTransaction(services, realmId, writes, () => (jobs = writes.waiting.splice(0, MAX_BATCH)), true, written);
    } catch (error) {
      if (!(error instanceof RunApart)) throw error;
      // Rolled back: run again, each write in its own savepoint, with what the first attempt queued dropped.
      stats.reruns += 1;
      for (const job of jobs!) job.pending = new PendingEvents();
      attempt = await runTransaction(services, realmId, writes, () => jobs!, false, written);
    }
  } catch (error) {
    // Nothing was committed: every write of the batch failed. If the
    // transaction failed before it took its writes (BEGIN, a connection, the
    // lock), they are the ones waiting: they fail too, rather than be retried
    // at once and forever.
    jobs ??= writes.waiting.splice(0, MAX_BATCH);
    written?.();
    for (const job of jobs) job.reject(error);
    return;
  }
  const { jobs: batch, outcomes, turn } = attempt;
  stats.transactions += 1;
  stats.writes += batch.length;
  const settle = () =>
    batch.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (!outcome.ok) return job.reject(outcome.error);
      try {
        job.pending.sendTo(services.notifier);
        job.resolve(outcome.value);
      } catch (error) {
        job.reject(error);
      }
    });
  // On SQLite the COMMIT was not fsynced (storage/database.ts): nobody hears
  // of the writes (events to other users' long-polls, the caller's reply)
  // until the WAL is on disk. Not awaited here: the organization's next batch
  // commits meanwhile and shares the next fsync.
  const durable = services.storage.durable();
  if (!durable) return turn.finish(settle);
  durable.then(
    () => turn.finish(settle),
    (error: unknown) => turn.finish(() => batch.forEach((job) => job.reject(error))),
  );
}

/**
 * Runs `job` in a savepoint. The savepoint of the write before it (`afterAnother`) is released as
 * this one is set, in one round trip on PostgreSQL (two statements in one simple-protocol query; the
 * batch holds the organization's lock meanwhile), and the last one is released by the COMMIT.
 */
async function inSavepoint(trx: Trx, dialect: Dialect, job: Job, afterAnother: boolean): Promise<Outcome> {
  if (afterAnother && dialect === "postgres") {
    await sql`release savepoint parley_write; savepoint parley_write`.execute(trx);
  } else {
    if (afterAnother) await sql`release savepoint parley_write`.execute(trx);
    await sql`savepoint parley_write`.execute(trx);
  }
  try {
    return { ok: true, value: await runJob(trx, job) };
  } catch (error) {
    // If even this fails the transaction is unusable, and the whole batch fails with it.
    await sql`rollback to savepoint parley_write`.execute(trx);
    return { ok: false, error };
  }
}
