// Versioned migrations, run at start-up (and by `parley migrate`). Each file in
// migrations/ is listed here so the set is the same under tsx and compiled JS.
import { Migrator, type Kysely, type Migration, type MigrationResultSet } from "kysely";
import type { Dialect, Storage } from "./database.ts";
import * as m0001 from "./migrations/0001_foundation.ts";

interface MigrationFile {
  up(db: Kysely<unknown>, dialect: Dialect): Promise<void>;
}

const MIGRATIONS: Record<string, MigrationFile> = {
  "0001_foundation": m0001,
};

export async function migrateToLatest(storage: Storage): Promise<string[]> {
  const migrations: Record<string, Migration> = {};
  for (const [name, file] of Object.entries(MIGRATIONS)) {
    migrations[name] = { up: (db) => file.up(db, storage.dialect) };
  }
  const migrator = new Migrator({
    db: storage.db,
    provider: { getMigrations: async () => migrations },
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === "Error")?.migrationName ?? "unknown";
    throw new Error(`migration ${failed} failed: ${String(result.error)}`, { cause: result.error });
  }
  return (result.results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
