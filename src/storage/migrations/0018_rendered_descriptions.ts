// Descriptions rendered with the Markdown renderer (issue 19). Channel and
// channel folder descriptions were stored with a placeholder rendering (the
// escaped text in one <p>), and the organization's was rendered that way on
// every read: this adds the organization's rendered_description column and
// renders every non-empty description again, as the server now does when one
// is set. The renderer comes from the caller (MigrationContext), so this file
// needs neither the renderer nor the queries that feed it.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import type { MigrationContext } from "../migrate.ts";
import type { Database } from "../schema.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect, context: MigrationContext): Promise<void> {
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
