// Organization data exports (Zulip's RealmExport): one row per export asked
// for with POST /export/realm (actions/realm-export.ts), run by the
// realm_export job (workers/realm-export.ts).
// - type: 1 public, 2 full with members' consent (domain/realm-export.ts);
// - status: 1 requested, 2 started, 3 succeeded, 4 failed, 5 deleted (Zulip's numbers);
// - date_*: UNIX seconds of each step, null until it happens;
// - export_path: the tarball's storage key once written (files/), kept after
//   deletion so the row still says what was there;
// - tarball_size_bytes: the tarball's size once written.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("realm_exports")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("acting_user_id", "integer", (c) => c.references("users.id"))
    .addColumn("type", "integer", (c) => c.notNull())
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("date_requested", "integer", (c) => c.notNull())
    .addColumn("date_started", "integer")
    .addColumn("date_succeeded", "integer")
    .addColumn("date_failed", "integer")
    .addColumn("date_deleted", "integer")
    .addColumn("export_path", "text")
    .addColumn("tarball_size_bytes", "bigint")
    .execute();
  // The weekly limit counts an organization's recent requests.
  await sql`CREATE INDEX realm_exports_realm_requested ON realm_exports (realm_id, date_requested)`.execute(db);
}
