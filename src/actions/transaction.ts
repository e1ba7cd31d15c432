// How actions write: one transaction that first locks the organization (so
// rules that read before they write hold under concurrent requests), with the
// events it causes sent only after the commit.
import type { Transaction } from "kysely";
import { PendingEvents } from "../events/notifier.ts";
import type { Services } from "../services.ts";
import { lockRealm } from "../storage/database.ts";
import type { Database } from "../storage/schema.ts";

export type Trx = Transaction<Database>;

/**
 * Runs `body` in a transaction holding the organization's lock, then sends
 * what it queued. Inside `body`, every query must use `trx`: on SQLite a query
 * on the root database would wait forever for Kysely's single connection.
 */
export async function inRealmTransaction<T>(services: Services, realmId: number, body: (trx: Trx, pending: PendingEvents) => Promise<T>): Promise<T> {
  const pending = new PendingEvents();
  const result = await services.storage.db.transaction().execute(async (trx) => {
    await lockRealm(trx, services.storage.dialect, realmId);
    return body(trx, pending);
  });
  pending.sendTo(services.notifier);
  return result;
}
