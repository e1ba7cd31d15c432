// The mobile push worker: runs while a push service is configured, beside
// the HTTP server, and does two things in the background, each request
// retried with bounded exponential backoff when the service is unreachable or
// answers 5xx:
// - forwards E2EE registrations (POST /mobile_push/register) to the service
//   and records its answer (actions/push-devices.ts); registrations still
//   pending at start-up are forwarded again;
// - listens to the notifier for new messages (the `message` events the send
//   path emits after its transaction commits) and asks the service to push
//   direct messages and mentions to recipients with registered devices.
// Nothing here runs inside a send or can fail it: listener work is queued,
// and its errors are only logged. Queued pushes live in memory; a push whose
// retries are still pending when the process stops is lost (Zulip keeps them
// in RabbitMQ).
import { recordRegistrationOutcome } from "../actions/push-devices.ts";
import { isMutedConversation } from "../domain/message-flags.ts";
import { pushNotificationRequest, pushTrigger, type PushContext, type PushMessage } from "../domain/push.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import type { Notification } from "../events/notifier.ts";
import { pendingPushDeviceIds, pushDeviceById, pushRecipientFacts, usersWithPushDevices } from "../queries/push-devices.ts";
import type { Services } from "../services.ts";
import { callPushService, PushServiceError } from "./push-service.ts";

/** Attempts per request, the first included; delays double from config.pushRetryBaseMs up to MAX_DELAY_MS. */
export const MAX_ATTEMPTS = 6;
const MAX_DELAY_MS = 60_000;
/** A user counts as online (for enable_online_push_notifications) when a client polled this recently (Zulip: 140 s). */
const ONLINE_WINDOW_MS = 140_000;

export interface PushNotifications {
  /** Queues the forwarding of a stored E2EE registration. */
  forwardRegistration(deviceRowId: number): void;
  /** Resolves once nothing is queued, waiting for a retry or in flight. */
  idle(): Promise<void>;
  /** Stops retrying, drops what is queued and waits for requests in flight. */
  stop(): Promise<void>;
}

interface Job {
  describe: string;
  /** One attempt; throws PushServiceError("retry") to be tried again. */
  run(): Promise<void>;
  /** After the last attempt failed. */
  giveUp?(): Promise<void>;
}

export function startPushNotifications(services: Services, log: (error: unknown, what: string) => void): PushNotifications {
  const { config } = services;
  let stopped = false;
  let outstanding = 0;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();
  let idleWaiters: (() => void)[] = [];

  const settle = () => {
    outstanding -= 1;
    if (outstanding === 0) {
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  };

  const attempt = (job: Job, n: number): void => {
    if (stopped) return settle();
    const running = job
      .run()
      .then(settle, (error: unknown) => {
        if (!stopped && error instanceof PushServiceError && error.kind === "retry" && n < MAX_ATTEMPTS) {
          const delay = Math.min(config.pushRetryBaseMs * 2 ** (n - 1), MAX_DELAY_MS);
          const timer = setTimeout(() => {
            timers.delete(timer);
            attempt(job, n + 1);
          }, delay).unref();
          timers.add(timer);
          return;
        }
        log(error, `${job.describe} failed${n > 1 ? ` after ${n} attempts` : ""}`);
        if (stopped || !job.giveUp) return settle();
        return job
          .giveUp()
          .catch((e: unknown) => log(e, `${job.describe}: recording the failure failed`))
          .finally(settle);
      })
      .finally(() => inFlight.delete(running));
    inFlight.add(running);
  };

  const enqueue = (job: Job): void => {
    if (stopped) return;
    outstanding += 1;
    attempt(job, 1);
  };

  const forwardRegistration = (deviceRowId: number): void => {
    // The registration this job forwards: a newer one replacing it is another job's.
    let forwarded: string | undefined;
    enqueue({
      describe: `push device registration ${deviceRowId}`,
      run: async () => {
        const device = await pushDeviceById(services.storage.db, deviceRowId);
        if (!device || device.bouncer_device_id !== null || device.error_code !== null) return;
        forwarded ??= device.encrypted_push_registration;
        if (device.encrypted_push_registration !== forwarded) return;
        let outcome: { deviceId: number } | { errorCode: string };
        try {
          const reply = await callPushService(
            config,
            "push/e2ee/register",
            {
              realm_id: device.realm_id,
              push_account_id: device.push_account_id,
              encrypted_push_registration: forwarded,
              bouncer_public_key: device.bouncer_public_key,
            },
            "form",
          );
          const deviceId = reply.device_id;
          outcome = typeof deviceId === "number" && Number.isSafeInteger(deviceId) ? { deviceId } : { errorCode: "BAD_REQUEST" };
        } catch (error) {
          if (!(error instanceof PushServiceError) || error.kind === "retry") throw error;
          outcome = { errorCode: error.code };
        }
        await recordRegistrationOutcome(services, deviceRowId, forwarded, outcome);
      },
      // Zulip's REQUEST_EXPIRED: the service stayed unreachable through every retry.
      giveUp: async () => {
        if (forwarded !== undefined) await recordRegistrationOutcome(services, deviceRowId, forwarded, { errorCode: "REQUEST_EXPIRED" });
      },
    });
  };

  const onMessage = async (n: Notification): Promise<void> => {
    const message = n.event.message as PushMessage | undefined;
    if (!message || !n.message) return;
    const flags = n.message.flags;
    const isDirectMessage = message.type === "private";
    const candidates = n.userIds.filter((id) => {
      if (id === message.sender_id) return false;
      const names = flags[id] ?? [];
      if (names.includes("read")) return false;
      return isDirectMessage || names.some((f) => f === "mentioned" || f === "group_mentioned" || f === "stream_wildcard_mentioned" || f === "topic_wildcard_mentioned");
    });
    if (candidates.length === 0) return;
    const db = services.storage.db;
    const withDevices = [...(await usersWithPushDevices(db, candidates))];
    if (withDevices.length === 0) return;
    const channel = !isDirectMessage && message.stream_id !== undefined ? { channelId: message.stream_id, topicKey: message.subject.toLowerCase() } : null;
    const facts = await pushRecipientFacts(db, withDevices, channel);
    const realm = await db.selectFrom("realms").select(["id", "name"]).where("id", "=", n.realmId).executeTakeFirst();
    if (!realm) return;
    const ctx: PushContext = { realmId: realm.id, realmName: realm.name, realmUrl: config.externalUrl, server: new URL(config.externalUrl).host };
    for (const userId of withDevices) {
      const f = facts.get(userId);
      if (!f || f.isBot || !f.isActive) continue;
      const settings = parseUserSettings(f.settings);
      const trigger = pushTrigger({
        flags: flags[userId] ?? [],
        isDirectMessage,
        enableOfflinePush: settings.enable_offline_push_notifications,
        enableOnlinePush: settings.enable_online_push_notifications,
        online: isOnline(services, userId),
        muted: channel !== null && isMutedConversation(f.channelMuted, f.topicPolicy),
        wildcardMentionsNotify: f.wildcardOverride ?? settings.wildcard_mentions_notify,
      });
      if (trigger === null) continue;
      const body = pushNotificationRequest(ctx, userId, message, trigger);
      enqueue({
        describe: `push notification for message ${message.id} to user ${userId}`,
        run: async () => {
          await callPushService(config, "push/notify", body, "json");
        },
      });
    }
  };

  const unsubscribe = services.notifier.subscribe((n) => {
    if (stopped || n.event.type !== "message" || !n.message) return;
    // Counted as outstanding while the recipients are looked up, so idle() covers it.
    outstanding += 1;
    const running = onMessage(n)
      .catch((error: unknown) => log(error, "push notification lookup failed"))
      .finally(() => {
        inFlight.delete(running);
        settle();
      });
    inFlight.add(running);
  });

  // Registrations left pending by a previous run (or another process that stopped).
  outstanding += 1;
  const startup = pendingPushDeviceIds(services.storage.db)
    .then((ids) => ids.forEach(forwardRegistration))
    .catch((error: unknown) => log(error, "pending push registrations lookup failed"))
    .finally(() => {
      inFlight.delete(startup);
      settle();
    });
  inFlight.add(startup);

  return {
    forwardRegistration,
    idle: () => (outstanding === 0 ? Promise.resolve() : new Promise((resolve) => idleWaiters.push(resolve))),
    stop: async () => {
      stopped = true;
      unsubscribe();
      for (const t of timers) clearTimeout(t);
      // Each cleared timer held one outstanding job.
      for (let i = 0; i < timers.size; i += 1) settle();
      timers.clear();
      await Promise.allSettled([...inFlight]);
    },
  };
}

function isOnline(services: Services, userId: number): boolean {
  const now = Date.now();
  for (const queue of services.queues.queuesOf(userId)) {
    if (queue.waiter !== undefined || now - queue.lastPolledAt < ONLINE_WINDOW_MS) return true;
  }
  return false;
}
