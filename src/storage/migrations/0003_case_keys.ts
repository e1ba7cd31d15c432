// Case-insensitive matching by stored keys, lowercased in JavaScript: SQLite's
// lower() folds only ASCII letters while PostgreSQL's follows the locale, so
// lower() in SQL made "Ärger@…" match on one database and not the other.
import { sql, type Kysely } from "kysely";

type Row = Record<string, unknown>;

async function addKey(db: Kysely<unknown>, table: string, source: string, key: string): Promise<void> {
  await db.schema.alterTable(table).addColumn(key, "text", (c) => c.notNull().defaultTo("")).execute();
  const rows = (await sql<Row>`SELECT id, ${sql.ref(source)} AS value FROM ${sql.table(table)}`.execute(db)).rows;
  for (const row of rows) {
    await sql`UPDATE ${sql.table(table)} SET ${sql.ref(key)} = ${String(row.value).toLowerCase()} WHERE id = ${row.id}`.execute(db);
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await addKey(db, "users", "delivery_email", "delivery_email_key");
  await addKey(db, "users", "email", "email_key");
  await sql`DROP INDEX users_realm_delivery_email`.execute(db);
  await sql`DROP INDEX users_realm_email`.execute(db);
  await db.schema.createIndex("users_realm_delivery_email_key").unique().on("users").columns(["realm_id", "delivery_email_key"]).execute();
  await db.schema.createIndex("users_realm_email_key").on("users").columns(["realm_id", "email_key"]).execute();

  await addKey(db, "channels", "name", "name_key");
  await sql`DROP INDEX channels_realm_name`.execute(db);
  await db.schema.createIndex("channels_realm_name_key").unique().on("channels").columns(["realm_id", "name_key"]).execute();
}
