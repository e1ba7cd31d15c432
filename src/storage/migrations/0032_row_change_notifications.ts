// PostgreSQL: every statement that writes a table whose rows the processes
// cache (organizations, users, channels, subscriptions) notifies channel
// parley_rows with '<schema> <table>', delivered when its transaction
// commits (NOTIFY is transactional, and repeats within one transaction are
// sent once). Each server process keeps those rows between requests and
// forgets them when told (storage/row-cache.ts); a trigger hears every
// writer, other processes, CLI commands and psql included. SQLite needs
// none: a process sees another's commit in PRAGMA data_version.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect !== "postgres") return;
  await sql`CREATE FUNCTION parley_rows_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('parley_rows', TG_TABLE_SCHEMA || ' ' || TG_TABLE_NAME);
  RETURN NULL;
END
$$`.execute(db);
  for (const table of ["realms", "users", "channels", "subscriptions"]) {
    await sql`CREATE TRIGGER ${sql.id(`${table}_changed`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${sql.table(table)}
      FOR EACH STATEMENT EXECUTE FUNCTION parley_rows_changed()`.execute(db);
  }
}
