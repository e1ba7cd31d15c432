// One durable job queue for all background work (Zulip's queue processors,
// kept in the database so a job commits with the write that causes it and
// outlives the process that queued it). See src/jobs/.
// - name: which registered worker runs it; payload: its JSON input.
// - job_key: jobs with the same key run one at a time, oldest first (an
//   outgoing-webhook bot's deliveries); NULL: no such order.
// - run_at: UNIX milliseconds from which it may be claimed; a claim moves it
//   to the end of the claim's lease, so the job of a process that died is
//   claimed again when the lease runs out.
// - attempts: claims so far; status: queued, running, or failed (kept, with
//   last_error, after its last attempt). A finished job is deleted.
// Scheduled messages and reminders not yet delivered get their delivery job
// here, so rows written before the queue existed are sent too.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("jobs")
    .addColumn("id", id.type, id.build)
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("payload", "text", (c) => c.notNull())
    .addColumn("job_key", "text")
    .addColumn("status", "text", (c) => c.notNull().defaultTo("queued"))
    .addColumn("run_at", "bigint", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("max_attempts", "integer", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  // Claims read the due jobs that are not failed, earliest first.
  await sql`CREATE INDEX jobs_due ON jobs (run_at, id) WHERE status <> 'failed'`.execute(db);
  // A keyed job waits for the older jobs of its key.
  await sql`CREATE INDEX jobs_key ON jobs (job_key, id) WHERE job_key IS NOT NULL AND status <> 'failed'`.execute(db);
  const now = Date.now();
  await sql`
    INSERT INTO jobs (name, payload, status, run_at, attempts, max_attempts, created_at)
    SELECT 'scheduled_message',
           '{"id":' || CAST(id AS TEXT) || ',"realm_id":' || CAST(realm_id AS TEXT) || '}',
           'queued', scheduled_timestamp * 1000, 0, 5, ${now}
    FROM scheduled_messages WHERE NOT delivered AND NOT failed
  `.execute(db);
}
