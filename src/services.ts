// What actions need from the outside world, passed explicitly (no globals).
import type { Config } from "./config.ts";
import type { Notifier } from "./events/notifier.ts";
import type { EventQueues } from "./events/queues.ts";
import type { MemoryRateLimiter } from "./rate-limit.ts";
import type { Storage } from "./storage/database.ts";
import type { OutgoingWebhooks } from "./workers/outgoing-webhooks.ts";
import type { PushNotifications } from "./workers/push-notifications.ts";

export interface Services {
  config: Config;
  storage: Storage;
  notifier: Notifier;
  /** This process's event queues, fed by the notifier. */
  queues: EventQueues;
  /** API calls per user and unauthenticated calls per IP address, counted in this process. */
  apiLimiter: MemoryRateLimiter;
  /** Current time in UNIX seconds; tests may replace it. */
  now(): number;
  /** The mobile push worker, while the server runs with a push service configured. */
  push?: PushNotifications | undefined;
  /** The outgoing-webhook worker, while the server runs; sends that queue a delivery wake it. */
  outgoingWebhooks?: OutgoingWebhooks | undefined;
}

export function unixNow(): number {
  return Math.floor(Date.now() / 1000);
}
