// Versioned migrations, run at start-up (and by `parley migrate`). Each file in
// migrations/ is listed here so the set is the same under tsx and compiled JS.
import { DEFAULT_MIGRATION_TABLE, Migrator, sql, type Kysely, type Migration, type MigrationResultSet } from "kysely";
import type { Dialect, Storage } from "./database.ts";
import type { Database } from "./schema.ts";
import * as m0001 from "./migrations/0001_foundation.ts";
import * as m0002 from "./migrations/0002_channels_groups.ts";
import * as m0003 from "./migrations/0003_case_keys.ts";
import * as m0004 from "./migrations/0004_user_settings.ts";
import * as m0005 from "./migrations/0005_messages.ts";
import * as m0006 from "./migrations/0006_alert_words.ts";
import * as m0007 from "./migrations/0007_realm_emoji.ts";
import * as m0008 from "./migrations/0008_scheduled_snippets_views.ts";
import * as m0009 from "./migrations/0009_custom_profile_fields.ts";
import * as m0010 from "./migrations/0010_push_devices.ts";
import * as m0011 from "./migrations/0011_invitations.ts";
import * as m0012 from "./migrations/0012_mention_lookup.ts";
import * as m0013 from "./migrations/0013_dm_hash.ts";
import * as m0014 from "./migrations/0014_login_failures.ts";
import * as m0015 from "./migrations/0015_presence.ts";
import * as m0016 from "./migrations/0016_status_muted_drafts.ts";
import * as m0017 from "./migrations/0017_avatars.ts";
import * as m0018 from "./migrations/0018_descriptions_playgrounds.ts";
import * as m0019 from "./migrations/0019_submessages.ts";
import * as m0020 from "./migrations/0020_sessions.ts";
import * as m0021 from "./migrations/0021_bots.ts";
import * as m0022 from "./migrations/0022_outgoing_webhooks.ts";
import * as m0023 from "./migrations/0023_linkifiers.ts";
import * as m0024 from "./migrations/0024_link_previews.ts";
import * as m0025 from "./migrations/0025_jobs.ts";
import * as m0026 from "./migrations/0026_stored_files.ts";
import * as m0027 from "./migrations/0027_outgoing_webhooks_on_jobs.ts";
import * as m0028 from "./migrations/0028_missed_message_emails.ts";
import * as m0029 from "./migrations/0029_realm_exports.ts";
import * as m0030 from "./migrations/0030_digest_emails.ts";
import * as m0031 from "./migrations/0031_user_messages_clustered.ts";
import * as m0032 from "./migrations/0032_row_change_notifications.ts";
import * as m0033 from "./migrations/0033_group_membership_notifications.ts";
import * as m0034 from "./migrations/0034_user_messages_key_checks.ts";

/** What data migrations need from the running server. */
export interface MigrationContext {
  /** A channel, folder or organization description's HTML, as the server renders it (0018). */
  renderDescription(db: Kysely<Database>, realmId: number, description: string): Promise<string>;
}

interface MigrationFile {
  up(db: Kysely<unknown>, dialect: Dialect, context: MigrationContext): Promise<void>;
}

const MIGRATIONS: Record<string, MigrationFile> = {
  "0001_foundation": m0001,
  "0002_channels_groups": m0002,
  "0003_case_keys": m0003,
  "0004_user_settings": m0004,
  "0005_messages": m0005,
  "0006_alert_words": m0006,
  "0007_realm_emoji": m0007,
  "0008_scheduled_snippets_views": m0008,
  "0009_custom_profile_fields": m0009,
  "0010_push_devices": m0010,
  "0011_invitations": m0011,
  "0012_mention_lookup": m0012,
  "0013_dm_hash": m0013,
  "0014_login_failures": m0014,
  "0015_presence": m0015,
  "0016_status_muted_drafts": m0016,
  "0017_avatars": m0017,
  "0018_descriptions_playgrounds": m0018,
  "0019_submessages": m0019,
  "0020_sessions": m0020,
  "0021_bots": m0021,
  "0022_outgoing_webhooks": m0022,
  "0023_linkifiers": m0023,
  "0024_link_previews": m0024,
  "0025_jobs": m0025,
  "0026_stored_files": m0026,
  "0027_outgoing_webhooks_on_jobs": m0027,
  "0028_missed_message_emails": m0028,
  "0029_realm_exports": m0029,
  "0030_digest_emails": m0030,
  "0031_user_messages_clustered": m0031,
  "0032_row_change_notifications": m0032,
  "0033_group_membership_notifications": m0033,
  "0034_user_messages_key_checks": m0034,
};

export async function migrateToLatest(storage: Storage, context: MigrationContext): Promise<string[]> {
  const migrations: Record<string, Migration> = {};
  for (const [name, file] of Object.entries(MIGRATIONS)) {
    // Kysely runs SQLite migrations outside a transaction (it reports no
    // transactional DDL); SQLite has it, so a crash mid-migration rolls back.
    migrations[name] = {
      up: (db) =>
        storage.dialect === "sqlite"
          ? db.transaction().execute((trx) => file.up(trx as unknown as Kysely<unknown>, storage.dialect, context))
          : file.up(db, storage.dialect, context),
    };
  }
  // On PostgreSQL, Kysely looks for its bookkeeping tables in every schema
  // unless told which one; another Parley's tables in the same database would
  // then be mistaken for ours. Pin them to the schema our tables live in.
  const schema =
    storage.dialect === "postgres"
      ? (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(storage.db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db: storage.db,
    provider: { getMigrations: async () => migrations },
    ...(schema ? { migrationTableSchema: schema } : {}),
    // Migrations are independent of each other's order: one written on a
    // branch that lands after a higher-numbered one still runs where it is missing.
    allowUnorderedMigrations: true,
  });
  let result: MigrationResultSet = await migrator.migrateToLatest();
  // Kysely's introspection (before any migration runs) reads the catalog of
  // every schema in the database: DDL in another schema at that moment
  // (another Parley migrating, a test's cleanup dropping its schema) fails
  // that read with "schema … does not exist" (3F000) or "column … does not
  // exist" (42703) though ours is untouched. Ask again.
  for (let attempt = 1; attempt < 5 && result.results === undefined && catalogRace(result.error); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    result = await migrator.migrateToLatest();
  }
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${String(result.error)}`, { cause: result.error });
  }
  return (result.results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}

/** Errors of a catalog read that raced DDL elsewhere in the database (PostgreSQL's codes). */
const CATALOG_RACE_CODES = new Set(["3F000", "42703", "42P01", "XX000"]);

function catalogRace(error: unknown): boolean {
  return CATALOG_RACE_CODES.has(String((error as { code?: string } | undefined)?.code));
}

/**
 * How the database's applied migrations compare with this code's: "current"
 * when they are the same set; "behind" when one of ours is not applied (this
 * process would meet missing tables or columns); "ahead" when the database
 * has one this code does not know (a newer release migrated it).
 */
export type MigrationState = "current" | "behind" | "ahead";

const MIGRATION_NAMES = new Set(Object.keys(MIGRATIONS));

/** Reads the applied migrations (Kysely's table, in the schema our tables live in) and compares them with MIGRATIONS. */
export async function migrationState(storage: Storage): Promise<MigrationState> {
  const { rows } = await sql<{ name: string }>`SELECT name FROM ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(storage.db);
  let known = 0;
  for (const row of rows) if (MIGRATION_NAMES.has(row.name)) known += 1;
  if (known < MIGRATION_NAMES.size) return "behind";
  return rows.length > known ? "ahead" : "current";
}
