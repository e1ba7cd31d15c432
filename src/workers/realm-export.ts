// Organization exports on the job queue (Zulip runs them in its deferred_work
// queue): the export job writes the tarball (actions/realm-export.ts), and
// when its one attempt fails — the database or the file store gave up — the
// export is marked failed and administrators are told, so they can ask again.
// The expiry job deletes a finished export's tarball when it is due.
import { expireRealmExport, markRealmExportFailed, runRealmExport } from "../actions/realm-export.ts";
import type { RealmExportExpireJob, RealmExportJob } from "../jobs/names.ts";
import type { Worker } from "../jobs/runner.ts";
import type { Services } from "../services.ts";

export function realmExportWorker(services: Services, log: (error: unknown, what: string) => void): Worker<RealmExportJob> {
  return {
    run: ({ realm_id, export_id }) => runRealmExport(services, realm_id, export_id),
    onFailure: async ({ realm_id, export_id }, error) => {
      log(error, `data export ${export_id} failed`);
      await markRealmExportFailed(services, realm_id, export_id);
    },
    // One export at a time per process: each reads the whole organization.
    concurrency: 1,
    // A large organization takes a while; another process takes the job over only if this one died.
    leaseMs: 60 * 60_000,
  };
}

export function realmExportExpireWorker(services: Services): Worker<RealmExportExpireJob> {
  return { run: ({ realm_id, export_id }) => expireRealmExport(services, realm_id, export_id) };
}
