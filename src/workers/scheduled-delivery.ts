// Delivers scheduled messages and reminders when they fall due. Every process
// runs one; each second it sends whatever is due in the database, so what fell
// due while the server was down goes out at start-up, and rows scheduled by
// another process are picked up too. Exactly-once is not this loop's job: each
// delivery re-checks and marks its row in the transaction that sends it (see
// deliverScheduledRow), so overlapping workers only waste a read.
import { deliverScheduledRow } from "../actions/scheduled-messages.ts";
import { dueScheduledRows } from "../queries/scheduled-messages.ts";
import type { Services } from "../services.ts";

const BATCH = 100;

export interface DeliveryReport {
  delivered: number;
  failed: number;
}

/** Sends every row due at services.now(), oldest due first. */
export async function deliverDueMessages(services: Services, log?: (error: unknown) => void): Promise<DeliveryReport> {
  const report: DeliveryReport = { delivered: 0, failed: 0 };
  for (;;) {
    const due = await dueScheduledRows(services.storage.db, services.now(), BATCH);
    let progress = false;
    for (const row of due) {
      const outcome = await deliverScheduledRow(services, row.id, row.realm_id, log);
      if (outcome === "skipped") continue;
      report[outcome] += 1;
      progress = true;
    }
    // A full batch may hide more due rows; rows that were skipped (another worker took them) would come back forever.
    if (due.length < BATCH || !progress) return report;
  }
}

export interface ScheduledDelivery {
  /** Stops the timer and waits for a delivery in progress. */
  stop(): Promise<void>;
}

/** Runs deliverDueMessages now and then at the start of every second. */
export function startScheduledDelivery(services: Services, log: (error: unknown) => void): ScheduledDelivery {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = deliverDueMessages(services, log)
      .catch(log)
      .finally(() => {
        // unref: the HTTP server, not this timer, keeps the process alive.
        if (!stopped) timer = setTimeout(tick, 1000 - (Date.now() % 1000)).unref();
      });
  };
  tick();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
