// The workers of the job queue, registered by name on this process's runner
// at start-up (server.ts). Actions only enqueue jobs by name (jobs/names.ts);
// they never import a worker.
import { LINK_PREVIEWS_JOB, OUTGOING_WEBHOOK_JOB, REALM_EXPORT_EXPIRE_JOB, REALM_EXPORT_JOB, SCHEDULED_MESSAGE_JOB } from "../jobs/names.ts";
import { JobRunner } from "../jobs/runner.ts";
import type { Services } from "../services.ts";
import { registerDigestWorkers } from "./digest-emails.ts";
import { linkPreviewsWorker } from "./link-previews.ts";
import { registerMissedMessageEmailWorkers } from "./missed-message-emails.ts";
import { outgoingWebhookWorker } from "./outgoing-webhooks.ts";
import { registerPushWorkers } from "./push-notifications.ts";
import { realmExportExpireWorker, realmExportWorker } from "./realm-export.ts";
import { scheduledMessageWorker } from "./scheduled-delivery.ts";

/** A runner with every worker this server runs, not yet started. */
export function jobRunnerFor(services: Services, log: (error: unknown, what: string) => void): JobRunner {
  const runner = new JobRunner({ db: services.storage.db, dialect: services.storage.dialect, nowMs: () => services.nowMs(), log });
  runner.register(SCHEDULED_MESSAGE_JOB, scheduledMessageWorker(services, log));
  runner.register(LINK_PREVIEWS_JOB, linkPreviewsWorker(services));
  runner.register(OUTGOING_WEBHOOK_JOB, outgoingWebhookWorker(services, log));
  registerMissedMessageEmailWorkers(runner, services, log);
  runner.register(REALM_EXPORT_JOB, realmExportWorker(services, log));
  runner.register(REALM_EXPORT_EXPIRE_JOB, realmExportExpireWorker(services));
  registerDigestWorkers(runner, services, log);
  // Without a push service, push jobs are never queued (and none are run).
  if (services.config.pushServiceUrl !== undefined) registerPushWorkers(runner, services);
  return runner;
}
