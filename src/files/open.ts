// The file store a configuration asks for (UPLOAD_STORAGE).
import { ConfigError, type Config } from "../config.ts";
import type { Storage } from "../storage/database.ts";
import { DatabaseFileStore } from "./database-store.ts";
import { LocalFileStore } from "./local-store.ts";
import type { FileStore, UploadStorage } from "./store.ts";

export function openFileStore(config: Config, storage: Storage, backend: UploadStorage = config.uploadStorage): FileStore {
  if (backend === "local") return new LocalFileStore(config.uploadsDir);
  // On SQLite the server is one process with its own disk; and a file's
  // write, one transaction, would hold SQLite's one connection meanwhile.
  if (storage.dialect !== "postgres") throw new ConfigError("UPLOAD_STORAGE=database needs DATABASE_URL: files are kept in PostgreSQL");
  return new DatabaseFileStore(storage.db);
}
