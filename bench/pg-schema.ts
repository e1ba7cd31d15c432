// The bench scripts each run their server in a PostgreSQL schema of their own
// and drop it before and after; this is that drop, in one place.
import pg from "pg";

/** Drops `schema` (and everything in it) if it exists; does nothing without a URL or schema. */
export async function dropPgSchema(databaseUrl: string, schema: string): Promise<void> {
  if (!databaseUrl || !schema) return;
  if (!/^\w+$/.test(schema)) throw new Error(`not a schema name: ${schema}`);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}
