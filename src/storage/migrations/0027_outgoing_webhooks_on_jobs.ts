// Outgoing-webhook deliveries move onto the one job queue (0025): each row of
// outgoing_webhook_jobs still waiting becomes an "outgoing_webhook" job keyed
// by its bot (so a bot's deliveries still run one at a time, in order), with
// its failed tries counted as attempts; then the table goes.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  const now = Date.now();
  await sql`
    INSERT INTO jobs (name, payload, job_key, status, run_at, attempts, max_attempts, created_at)
    SELECT 'outgoing_webhook',
           '{"realm_id":' || CAST(realm_id AS TEXT) || ',"bot_id":' || CAST(bot_id AS TEXT) || ',"message_id":' || CAST(message_id AS TEXT)
             || ',"trigger":"' || trigger || '","message":' || message || '}',
           'outgoing_webhook:' || CAST(bot_id AS TEXT), 'queued', ${now}, failed_tries, 4, ${now}
    FROM outgoing_webhook_jobs ORDER BY id`.execute(db);
  await db.schema.dropTable("outgoing_webhook_jobs").execute();
}
