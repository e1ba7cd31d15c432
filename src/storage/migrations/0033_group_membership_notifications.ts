// PostgreSQL: the groups a user is in are cached per process too (every
// permission check reads them; queries/user-groups.ts). Writes to the two
// tables that membership is read from notify parley_rows like those of
// migration 0032, through the same function.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  for (const table of ["user_group_members", "user_group_subgroups"]) {
    await sql`CREATE TRIGGER ${sql.id(`${table}_changed`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${sql.table(table)}
      FOR EACH STATEMENT EXECUTE FUNCTION parley_rows_changed()`.execute(db);
  }
}
