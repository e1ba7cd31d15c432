// The durable job queue (Zulip's queue processors, kept in the database): an
// action enqueues a job — a name and a JSON payload — in the transaction of
// the write that causes it, so a committed write always has its jobs and a
// rolled-back one has none. Workers registered at start-up by name
// (jobs/runner.ts) claim each job once in the cluster, retry it with backoff,
// and keep it as failed, with its error, after its last attempt.
//
// Claims: a job is due when its run_at has passed and it is not failed; a
// claim moves run_at to the end of a lease (so a job whose process died is
// claimed again when the lease runs out) and counts the attempt, which is the
// claim's token: only the holder of the latest claim may finish or retry it.
// On PostgreSQL the claim skips rows another process is claiming (FOR UPDATE
// SKIP LOCKED); SQLite has one writer, so its UPDATE is atomic as it is.
// Jobs with the same key run one at a time, oldest first: a keyed job is due
// only when no older job of its key is left (queued, running or waiting for a
// retry).
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../storage/database.ts";
import type { Database, Job } from "../storage/schema.ts";

/** What a job's transaction needs: somewhere to run the insert, and a hook for after the commit. */
export interface EnqueueContext {
  afterCommit(callback: () => void): void;
}

/** Told that jobs were committed, so the runner of this process looks at the queue at once. */
export interface JobWaker {
  wake(): void;
}

export interface EnqueueOptions {
  /** Jobs with the same key run one at a time, oldest first. */
  key?: string;
  /** UNIX milliseconds before which the job is not run (default: now). */
  runAt?: number;
  /** Attempts before the job is kept as failed (default 5). */
  maxAttempts?: number;
}

export const DEFAULT_MAX_ATTEMPTS = 5;

/** Queues a job in `db`'s transaction; the local runner is woken once it commits. */
export async function enqueueJob(
  db: Kysely<Database>,
  pending: EnqueueContext,
  waker: { jobs?: JobWaker | undefined; nowMs(): number },
  name: string,
  payload: unknown,
  options: EnqueueOptions = {},
): Promise<void> {
  await enqueueJobs(db, pending, waker, [{ name, payload, options }]);
}

/** Several jobs in one insert. */
export async function enqueueJobs(
  db: Kysely<Database>,
  pending: EnqueueContext,
  waker: { jobs?: JobWaker | undefined; nowMs(): number },
  jobs: readonly { name: string; payload: unknown; options?: EnqueueOptions }[],
): Promise<void> {
  if (jobs.length === 0) return;
  const now = waker.nowMs();
  await db
    .insertInto("jobs")
    .values(
      jobs.map(({ name, payload, options = {} }) => ({
        name,
        payload: JSON.stringify(payload),
        job_key: options.key ?? null,
        run_at: options.runAt ?? now,
        max_attempts: options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
        created_at: now,
      })),
    )
    .execute();
  wakeAfterCommit(pending, waker);
}

/** After `pending`'s commit, the local runner looks at the queue: for a job inserted by other means than enqueueJobs. */
export function wakeAfterCommit(pending: EnqueueContext, waker: { jobs?: JobWaker | undefined }): void {
  pending.afterCommit(() => waker.jobs?.wake());
}

/** When the next job that is not due yet falls due (UNIX ms), if any: the runner looks again then rather than at its next poll. */
export async function nextRunAt(db: Kysely<Database>, now: number): Promise<number | undefined> {
  const row = await db.selectFrom("jobs").select((eb) => eb.fn.min("run_at").as("next")).where("status", "<>", "failed").where("run_at", ">", now).executeTakeFirst();
  return row?.next === null || row?.next === undefined ? undefined : Number(row.next);
}

/** A job this process holds until `leaseUntil`: `job.attempts` counts this claim. */
export interface ClaimedJob {
  job: Job;
  leaseUntil: number;
}

/** The names of `names` with a job due at `now`. */
export async function dueJobNames(db: Kysely<Database>, names: readonly string[], now: number): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await db.selectFrom("jobs").select("name").distinct().where("status", "<>", "failed").where("run_at", "<=", now).where("name", "in", names).execute();
  return new Set(rows.map((r) => r.name));
}

/**
 * Claims up to `limit` due jobs named `name`, earliest first, for `leaseMs`.
 * Of several processes claiming at once, each job goes to one.
 */
export async function claimJobs(db: Kysely<Database>, dialect: Dialect, name: string, limit: number, now: number, leaseMs: number): Promise<ClaimedJob[]> {
  if (limit <= 0) return [];
  const leaseUntil = now + leaseMs;
  const due = sql`
      SELECT j.id AS picked_id, j.run_at AS due_at FROM jobs j
      WHERE j.name = ${name} AND j.status <> 'failed' AND j.run_at <= ${now}
        AND (j.job_key IS NULL OR NOT EXISTS (
          SELECT 1 FROM jobs o WHERE o.job_key = j.job_key AND o.id < j.id AND o.status <> 'failed'))
      ORDER BY j.run_at, j.id
      LIMIT ${limit}`;
  let rows: Job[];
  if (dialect === "postgres") {
    const result = await sql<Job & { due_at: number }>`
      WITH picked AS (${due} FOR UPDATE SKIP LOCKED)
      UPDATE jobs SET status = 'running', run_at = ${leaseUntil}, attempts = attempts + 1
      FROM picked WHERE jobs.id = picked.picked_id
      RETURNING jobs.*, picked.due_at`.execute(db);
    // RETURNING keeps no order: put them back in the order they fell due.
    rows = result.rows.sort((a, b) => Number(a.due_at) - Number(b.due_at) || a.id - b.id).map(({ due_at: _dueAt, ...job }) => job);
  } else {
    // One writer: the due rows read here are still due when the update runs, unless this process claimed them meanwhile (the update checks again).
    const picked = (await due.execute(db)).rows as { picked_id: number; due_at: number }[];
    if (picked.length === 0) return [];
    const order = new Map(picked.map((p, i) => [p.picked_id, i]));
    const result = await sql<Job>`
      UPDATE jobs SET status = 'running', run_at = ${leaseUntil}, attempts = attempts + 1
      WHERE id IN (${sql.join(picked.map((p) => p.picked_id))}) AND status <> 'failed' AND run_at <= ${now}
      RETURNING *`.execute(db);
    rows = result.rows.sort((a, b) => order.get(a.id)! - order.get(b.id)!);
  }
  return rows.map((job) => ({ job: { ...job, run_at: Number(job.run_at), created_at: Number(job.created_at) }, leaseUntil }));
}

/** Only the latest claim of a job may change it: a claim whose lease ran out and was taken again lost it. */
function heldBy(db: Kysely<Database>, claimed: ClaimedJob) {
  return db.updateTable("jobs").where("id", "=", claimed.job.id).where("attempts", "=", claimed.job.attempts).where("status", "=", "running");
}

/** The job is done: it leaves the queue. */
export async function completeJob(db: Kysely<Database>, claimed: ClaimedJob): Promise<void> {
  await db.deleteFrom("jobs").where("id", "=", claimed.job.id).where("attempts", "=", claimed.job.attempts).where("status", "=", "running").execute();
}

/** The attempt failed and may be tried again at `runAt`. */
export async function retryJobAt(db: Kysely<Database>, claimed: ClaimedJob, runAt: number, error: string): Promise<void> {
  await heldBy(db, claimed).set({ status: "queued", run_at: runAt, last_error: error }).execute();
}

/** The last attempt failed: the job is kept, with its error, and no longer holds back its key. */
export async function failJob(db: Kysely<Database>, claimed: ClaimedJob, error: string): Promise<void> {
  await heldBy(db, claimed).set({ status: "failed", last_error: error }).execute();
}

/** Hands a claimed job back untried (shutting down): due at once, its attempt not counted. */
export async function releaseJob(db: Kysely<Database>, claimed: ClaimedJob, now: number): Promise<void> {
  await heldBy(db, claimed).set({ status: "queued", run_at: now, attempts: claimed.job.attempts - 1 }).execute();
}
