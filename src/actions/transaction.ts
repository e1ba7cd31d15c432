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
// and the batch is run again, each write in its own savepoint.
import { sql, type Transaction } from "kysely";
import { PendingEvents } from "../events/notifier.ts";
import type { Services } from "../services.ts";
import { lockRealm, type Dialect, type Storage } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

export type Trx = Transaction<Database>;

type Body<T> = (trx: Trx, pending: PendingEvents) => Promise<T>;

interface Job {
  body: Body<unknown>;
  /** Replaced when the batch is run again: an attempt that rolled back sends nothing. */
  pending: PendingEvents;
  rerunnable: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export interface RealmTransactionOptions {
  /**
   * `body` acts only through `trx` and `pending` (no other state, no I/O of its own), so it may be
   * run again from the start after an attempt that rolled back.
   */
  rerunnable?: boolean;
}

/** The writes waiting for one organization's next transaction. */
interface RealmWrites {
  waiting: Job[];
  /** A batch is scheduled or running; it takes up whatever is waiting when it ends. */
  busy: boolean;
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

function realmWrites(storage: Storage, realmId: number): RealmWrites {
  const { realms } = storageWrites(storage);
  let writes = realms.get(realmId);
  if (!writes) realms.set(realmId, (writes = { waiting: [], busy: false }));
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
export function inRealmTransaction<T>(services: Services, realmId: number, body: Body<T>, options: RealmTransactionOptions = {}): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const writes = realmWrites(services.storage, realmId);
    writes.waiting.push({ body, pending: new PendingEvents(), rerunnable: options.rerunnable === true, resolve: resolve as (value: unknown) => void, reject });
    if (!writes.busy) {
      writes.busy = true;
      // Let the other requests read in this turn reach their writes first.
      setImmediate(() => void runBatches(services, realmId, writes));
    }
  });
}

async function runBatches(services: Services, realmId: number, writes: RealmWrites): Promise<void> {
  try {
    while (writes.waiting.length > 0) await runBatch(services, realmId, writes.waiting.splice(0, MAX_BATCH));
  } finally {
    writes.busy = false;
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Thrown inside a batch run together when one of its writes failed: rolls the transaction back. */
class RunApart extends Error {}

/**
 * Runs the batch's writes in one transaction: each in its own savepoint, or, when `together`, one
 * after another without (a write that fails then throws RunApart).
 */
function runTransaction(services: Services, realmId: number, jobs: Job[], together: boolean): Promise<Outcome[]> {
  return services.storage.db.transaction().execute(async (trx) => {
    await lockRealm(trx, services.storage.dialect, realmId);
    // On its own, a write needs no savepoint: its error rolls back the whole transaction.
    if (jobs.length === 1) return [{ ok: true, value: await jobs[0]!.body(trx, jobs[0]!.pending) } satisfies Outcome];
    const results: Outcome[] = [];
    for (const [i, job] of jobs.entries()) {
      if (!together) {
        results.push(await inSavepoint(trx, services.storage.dialect, job, i > 0));
        continue;
      }
      try {
        results.push({ ok: true, value: await job.body(trx, job.pending) });
      } catch {
        throw new RunApart();
      }
    }
    return results;
  });
}

async function runBatch(services: Services, realmId: number, jobs: Job[]): Promise<void> {
  const { stats } = storageWrites(services.storage);
  // SQLite's savepoints cost no round trip: only PostgreSQL runs batches together.
  const together = jobs.length > 1 && services.storage.dialect === "postgres" && jobs.every((job) => job.rerunnable);
  let outcomes: Outcome[];
  try {
    try {
      outcomes = await runTransaction(services, realmId, jobs, together);
    } catch (error) {
      if (!(error instanceof RunApart)) throw error;
      // Rolled back: run again, each write in its own savepoint, with what the first attempt queued dropped.
      stats.reruns += 1;
      for (const job of jobs) job.pending = new PendingEvents();
      outcomes = await runTransaction(services, realmId, jobs, false);
    }
  } catch (error) {
    // Nothing was committed: every write of the batch failed.
    for (const job of jobs) job.reject(error);
    return;
  }
  stats.transactions += 1;
  stats.writes += jobs.length;
  const settle = () =>
    jobs.forEach((job, i) => {
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
  if (!durable) return settle();
  durable.then(settle, (error: unknown) => {
    for (const job of jobs) job.reject(error);
  });
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
    return { ok: true, value: await job.body(trx, job.pending) };
  } catch (error) {
    // If even this fails the transaction is unusable, and the whole batch fails with it.
    await sql`rollback to savepoint parley_write`.execute(trx);
    return { ok: false, error };
  }
}
