// Issue 19: rendered descriptions and code playgrounds.
//
// Descriptions rendered with the Markdown renderer. Channel and
// channel folder descriptions were stored with a placeholder rendering (the
// escaped text in one <p>), and the organization's was rendered that way on
// every read: this adds the organization's rendered_description column and
// renders every non-empty description again, as the server now does when one
// is set. The renderer comes from the caller (MigrationContext), so this file
// needs neither the renderer nor the queries that feed it.
//
// Code playgrounds (Zulip's RealmPlayground): one row per playground, unique
// per (organization, language, name) as in Zulip.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";
import type { MigrationContext } from "../migrate.ts";
import type { Database } from "../schema.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect, context: MigrationContext): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("realm_playgrounds")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("pygments_language", "text", (c) => c.notNull())
    .addColumn("url_template", "text", (c) => c.notNull())
    .addUniqueConstraint("realm_playgrounds_realm_language_name", ["realm_id", "pygments_language", "name"])
    .execute();

  await db.schema.alterTable("realms").addColumn("rendered_description", "text", (c) => c.notNull().defaultTo("")).execute();
  const typed = db as unknown as Kysely<Database>;
  for (const table of ["realms", "channels", "channel_folders"] as const) {
    const rows =
      table === "realms"
        ? (await typed.selectFrom("realms").select(["id", "id as realm_id", "description"]).where("description", "!=", "").execute())
        : await typed.selectFrom(table).select(["id", "realm_id", "description"]).where("description", "!=", "").execute();
    for (const row of rows) {
      const rendered = await context.renderDescription(typed, row.realm_id, row.description);
      await typed.updateTable(table).set({ rendered_description: rendered }).where("id", "=", row.id).execute();
    }
  }
}
