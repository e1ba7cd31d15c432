// Presence reports, batched. Every open client reports once a minute, and
// each report more than 55 s after the last moves the user's row, so presence
// is a steady stream of one-row reads and writes (10,000 users: 167 a
// second). Alone, each write would be a commit with its fsync, and each would
// bump the organization's presence sequence, whose row lock is held until
// commit: the writers of an organization would queue behind each other's
// fsyncs.
//
// So the reports that arrive together (in one turn of the event loop, while
// the previous batch runs, or within GATHER_MS after it) share one read of
// their users' rows and one transaction for the rows that move: one sequence
// number for the whole batch, one multi-row INSERT for first reports and one
// multi-row UPDATE for the others, one commit, and nobody is answered before
// it. Sharing a number is fine for the last_update_id protocol: the rows are
// committed together, so a client sees all of them or none. The batch is only
// a queue of reports waiting; nothing is kept between batches, each write is
// guarded by the times read (another process may have moved the row: the
// report is then planned again from a fresh read), and processes sharing a
// database serialize on the sequence row.
//
// Reports come one at a time at a steady pace (10,000 users: one every 6 ms),
// so without a wait each batch would be one report, its own read and its own
// transaction. A report arriving within GATHER_MS of the last batch's end
// waits for the rest of that window and goes out with those that came
// meanwhile, as PostgreSQL's commit_delay gathers commits; one arriving later
// than that goes at once. A report only delays its own reply (a client's
// background ping); the events a write may send wait at most as long.
import { sql, type Kysely } from "kysely";
import type { PresencePlan, PresenceTimes } from "../domain/presence.ts";
import { presenceReportRows, type PresenceReportRow } from "../queries/presence.ts";
import { preparedQuery } from "../storage/compiled.ts";
import type { Storage } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database>;

export interface PresenceWrite {
  userId: number;
  realmId: number;
  /** The row as read before deciding to write (undefined: no row, insert one). The write happens only if it still holds. */
  expected: PresenceTimes | undefined;
  times: PresenceTimes;
}

/** Bounds the statements' parameters and how long the sequence row stays locked. */
export const MAX_BATCH = 500;

/** How long after a batch's commit the next batch gathers reports (see above). */
const GATHER_MS = 50;

const bumpSequence = preparedQuery((db, a: { realmId: number }) =>
  db
    .insertInto("presence_sequences")
    .values({ realm_id: a.realmId, last_update_id: 1 })
    .onConflict((oc) => oc.column("realm_id").doUpdateSet({ last_update_id: sql<number>`presence_sequences.last_update_id + 1` }))
    .returning("last_update_id"),
);

/** The organization's next presence number. The sequence row stays locked until the transaction commits, so numbers become visible in order. */
async function nextUpdateId(trx: Db, realmId: number): Promise<number> {
  const bumped = await bumpSequence.executeTakeFirst(trx, { realmId });
  return Number(bumped!.last_update_id);
}

/** One row's update, guarded by the times read: the common batch of one report. */
const updateOneRow = preparedQuery((db, a: { userId: number; lastUpdateId: number; connected: number | null; active: number | null; expectedConnected: number | null; expectedActive: number | null }) =>
  db
    .updateTable("user_presence")
    .set({ last_connected_time: a.connected, last_active_time: a.active, last_update_id: a.lastUpdateId })
    .where("user_id", "=", a.userId)
    .where("last_connected_time", "is not distinct from", a.expectedConnected)
    .where("last_active_time", "is not distinct from", a.expectedActive)
    .returning("user_id"),
);

/**
 * Gives a user's row (if they have one) a new number without changing its
 * times, in `trx`: their account was deactivated or reactivated, which
 * changes whether they are in the organization's presence. Every process's
 * presence snapshot (queries/presence-snapshot.ts) rereads rows numbered
 * after its own, so each drops or adds the user on its next reply.
 */
export async function renumberPresence(trx: Db, realmId: number, userId: number): Promise<void> {
  const row = await trx.selectFrom("user_presence").select("user_id").where("user_id", "=", userId).executeTakeFirst();
  if (row === undefined) return;
  const lastUpdateId = await nextUpdateId(trx, realmId);
  await trx.updateTable("user_presence").set({ last_update_id: lastUpdateId }).where("user_id", "=", userId).execute();
}

/**
 * Writes rows in `trx` under one new sequence number; returns the IDs of the
 * users whose row was written (not those a concurrent writer changed first).
 * At most one write per user.
 */
export async function applyPresenceWrites(trx: Db, realmId: number, writes: readonly PresenceWrite[]): Promise<Set<number>> {
  const written = new Set<number>();
  if (writes.length === 0) return written;
  const lastUpdateId = await nextUpdateId(trx, realmId);
  const inserts = writes.filter((w) => w.expected === undefined);
  const updates = writes.filter((w) => w.expected !== undefined);
  if (inserts.length > 0) {
    const rows = await trx
      .insertInto("user_presence")
      .values(
        inserts.map((w) => ({
          user_id: w.userId,
          realm_id: realmId,
          last_connected_time: w.times.lastConnectedTime,
          last_active_time: w.times.lastActiveTime,
          last_update_id: lastUpdateId,
        })),
      )
      // A concurrent request created the row first: theirs stands.
      .onConflict((oc) => oc.column("user_id").doNothing())
      .returning("user_id")
      .execute();
    for (const row of rows) written.add(row.user_id);
  }
  if (updates.length === 1) {
    const [w] = updates as [PresenceWrite];
    const rows = await updateOneRow.execute(trx, {
      userId: w.userId,
      lastUpdateId,
      connected: w.times.lastConnectedTime,
      active: w.times.lastActiveTime,
      expectedConnected: w.expected!.lastConnectedTime,
      expectedActive: w.expected!.lastActiveTime,
    });
    for (const row of rows) written.add(Number(row.user_id));
  } else if (updates.length > 1) {
    // One statement for every row, each guarded by the times read: VALUES
    // columns are column1… on both dialects; the casts type PostgreSQL's
    // parameters (and are no-ops on SQLite).
    const big = (value: number | null) => sql`CAST(${value} AS bigint)`;
    const values = sql.join(
      updates.map(
        (w) => sql`(CAST(${w.userId} AS integer), ${big(w.times.lastConnectedTime)}, ${big(w.times.lastActiveTime)}, ${big(w.expected!.lastConnectedTime)}, ${big(w.expected!.lastActiveTime)})`,
      ),
    );
    const result = await sql<{ user_id: number }>`
      UPDATE user_presence
      SET last_connected_time = v.column2, last_active_time = v.column3, last_update_id = ${lastUpdateId}
      FROM (VALUES ${values}) AS v
      WHERE user_presence.user_id = v.column1
        AND user_presence.last_connected_time IS NOT DISTINCT FROM v.column4
        AND user_presence.last_active_time IS NOT DISTINCT FROM v.column5
      RETURNING user_presence.user_id`.execute(trx);
    for (const row of result.rows) written.add(Number(row.user_id));
  }
  return written;
}

/** A presence report waiting for its batch: `plan` decides from the row the batch read (undefined: the user has none). */
export interface PresenceReport {
  userId: number;
  realmId: number;
  plan(current: PresenceTimes | undefined): PresencePlan;
}

/** The times a report was planned from (the row read, or as the reports before it in the batch left it), its plan, and whether it made the write. */
export interface PresenceReportResult {
  current: PresenceTimes | undefined;
  plan: PresencePlan;
  written: boolean;
}

interface Job {
  report: PresenceReport;
  resolve(result: PresenceReportResult): void;
  reject(error: unknown): void;
}

interface Writer {
  waiting: Job[];
  /** A batch is scheduled or being written. */
  busy: boolean;
  /** The wait for the end of the window, while there is one. */
  timer: NodeJS.Timeout | undefined;
  /** performance.now() when the last batch had committed (or failed). */
  lastFlushEnd: number;
}

const writers = new WeakMap<Storage, Writer>();

/**
 * Queues a report for the next batch, which reads the rows of all its users
 * in one statement and writes those that move in one transaction; resolves
 * once that batch is done.
 */
export function reportPresenceInBatch(storage: Storage, report: PresenceReport): Promise<PresenceReportResult> {
  let writer = writers.get(storage);
  if (!writer) writers.set(storage, (writer = { waiting: [], busy: false, timer: undefined, lastFlushEnd: -Infinity }));
  const queue = writer;
  return new Promise((resolve, reject) => {
    queue.waiting.push({ report, resolve, reject });
    if (!queue.busy) {
      queue.busy = true;
      schedule(storage, queue, false);
    } else if (queue.timer !== undefined && queue.waiting.length >= MAX_BATCH) {
      // A whole batch waits: no reason to wait for the window's end.
      clearTimeout(queue.timer);
      queue.timer = undefined;
      schedule(storage, queue, true);
    }
  });
}

/**
 * The next batch: at the end of the window after the last batch; or, once the
 * other reports read in this turn reach their writes, when the window is past
 * or `now` (a whole batch waits, or reports left over from a full batch have
 * already waited their window).
 */
function schedule(storage: Storage, writer: Writer, now: boolean): void {
  const wait = now ? 0 : writer.lastFlushEnd + GATHER_MS - performance.now();
  if (wait > 0) {
    writer.timer = setTimeout(() => {
      writer.timer = undefined;
      void run(storage, writer);
    }, wait);
  } else {
    setImmediate(() => void run(storage, writer));
  }
}

async function run(storage: Storage, writer: Writer): Promise<void> {
  const leftOver = writer.waiting.length > MAX_BATCH;
  try {
    await flush(storage, writer.waiting.splice(0, MAX_BATCH));
  } finally {
    writer.lastFlushEnd = performance.now();
    if (writer.waiting.length > 0) schedule(storage, writer, leftOver || writer.waiting.length >= MAX_BATCH);
    else writer.busy = false;
  }
}

async function flush(storage: Storage, jobs: Job[]): Promise<void> {
  const byRealm = new Map<number, Job[]>();
  for (const job of jobs) {
    let list = byRealm.get(job.report.realmId);
    if (!list) byRealm.set(job.report.realmId, (list = []));
    list.push(job);
  }
  for (const [realmId, list] of byRealm) {
    try {
      const results = await writeReportBatch(
        storage,
        realmId,
        list.map((job) => job.report),
        (userIds) => presenceReportRows(storage.db, userIds),
      );
      list.forEach((job, i) => job.resolve(results[i]!));
    } catch (error) {
      for (const job of list) job.reject(error);
    }
  }
}

/**
 * One organization's reports: reads their users' rows with `read` (outside
 * the transaction: most reports move nothing, a user's other clients), plans
 * each report, and writes those that move in one transaction, each guarded by
 * what was read. A user who turned presence_enabled off since reporting (the
 * setting is read with the row) gets nothing written. A row another process
 * moved in between misses its guard: its user's reports are planned again
 * from a fresh read and written once more, as Zulip's row lock would have had
 * them see that write. A second miss, or a failure of that second round (the
 * first is committed), is left to the other writer or the next report (the
 * client reports again within a minute).
 */
export async function writeReportBatch(
  storage: Storage,
  realmId: number,
  reports: PresenceReport[],
  read: (userIds: number[]) => Promise<Map<number, PresenceReportRow>>,
): Promise<PresenceReportResult[]> {
  const first = planReports(realmId, reports, await read([...new Set(reports.map((r) => r.userId))]));
  const written = await writeInTransaction(storage, realmId, first.writes);
  const results = first.results(written);
  const missed = new Set([...first.writes.keys()].filter((userId) => !written.has(userId)));
  if (missed.size === 0) return results;
  const again = reports.flatMap((report, i) => (missed.has(report.userId) ? [i] : []));
  try {
    const againReports = again.map((i) => reports[i]!);
    const second = planReports(realmId, againReports, await read([...missed]));
    const secondResults = second.results(await writeInTransaction(storage, realmId, second.writes));
    again.forEach((i, k) => (results[i] = secondResults[k]!));
  } catch {
    // The others' writes are committed and they are answered; these stay as first planned, not written.
  }
  return results;
}

/**
 * Two reports of one user in one batch (two clients at once, one idle, one
 * active): each is planned from the times the ones before it planned, as if
 * they had been written (Zulip locks the row, so its second report sees the
 * first's write); the row gets the last of them, still guarded by the row
 * read. The last report that moved it is the one told it wrote (and sends any
 * event): its plan includes the others'.
 */
function planReports(realmId: number, reports: PresenceReport[], rows: Map<number, PresenceReportRow>) {
  const seen = new Map([...rows].map(([userId, row]) => [userId, row.times]));
  const writes = new Map<number, PresenceWrite>();
  const writerIndex = new Map<number, number>();
  const planned = reports.map((report, i) => {
    const { userId } = report;
    const current = seen.get(userId);
    // No such user any more, or presence turned off since the report was accepted: nothing stored.
    const plan: PresencePlan = rows.get(userId)?.presenceEnabled ? report.plan(current) : { kind: "none", becameOnline: false };
    if (plan.kind !== "none") {
      seen.set(userId, plan.times);
      writes.set(userId, { userId, realmId, expected: rows.get(userId)!.times, times: plan.times });
      writerIndex.set(userId, i);
    }
    return { current, plan };
  });
  return {
    writes,
    results: (written: Set<number>): PresenceReportResult[] =>
      planned.map((p, i) => ({ ...p, written: writerIndex.get(reports[i]!.userId) === i && written.has(reports[i]!.userId) })),
  };
}

async function writeInTransaction(storage: Storage, realmId: number, writes: Map<number, PresenceWrite>): Promise<Set<number>> {
  if (writes.size === 0) return new Set();
  return storage.db.transaction().execute((trx) => {
    const apply = () => applyPresenceWrites(trx, realmId, [...writes.values()]);
    // Presence times need no fsync before the reply (WalSync.unsynced): the next minute's ping rewrites them.
    return storage.wal ? storage.wal.unsynced(apply) : apply();
  });
}
