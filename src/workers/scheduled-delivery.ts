// Delivers scheduled messages and reminders when they fall due: each row has
// a job on the queue due at its time (queued with the row, and again when its
// time is edited), so what fell due while every server was down goes out at
// the next start, and one process in the cluster sends each. Exactly-once is
// also the delivery's own: it re-checks and marks its row in the transaction
// that sends it (deliverScheduledRow), so a job for an old time, or a second
// run after a crash, finds nothing to do.
import { deliverScheduledRow } from "../actions/scheduled-messages.ts";
import { SCHEDULED_MESSAGE_JOB, type ScheduledMessageJob } from "../jobs/names.ts";
import type { JobRunner, Worker } from "../jobs/runner.ts";
import type { Services } from "../services.ts";

export function scheduledMessageWorker(services: Services, log: (error: unknown, what: string) => void): Worker<ScheduledMessageJob> {
  return {
    // One at a time, so messages due together go out in the order they were due (and then scheduled), as before.
    concurrency: 1,
    run: async ({ id, realm_id }) => {
      await deliverScheduledRow(services, id, realm_id, (error) => log(error, `scheduled message ${id} failed`));
    },
  };
}

export interface DeliveryReport {
  delivered: number;
  failed: number;
}

/** Runs the deliveries due now in this process and waits for them (tests, the command line); throws the first error a delivery met. */
export async function deliverDueMessages(services: Services): Promise<DeliveryReport> {
  const runner: JobRunner | undefined = services.jobs;
  if (!runner) throw new Error("the job runner is not started");
  const report = await runner.drain([SCHEDULED_MESSAGE_JOB]);
  if (report.errors.length > 0) throw report.errors[0];
  return { delivered: report.completed, failed: report.failed };
}
