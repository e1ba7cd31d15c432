// Mobile push on the job queue, while a push service is configured. Three
// jobs, each request retried with bounded exponential backoff while the
// service is unreachable or answers 5xx (PUSH_MAX_ATTEMPTS, delays doubling
// from PUSH_RETRY_BASE_MS):
// - push_register: forwards an E2EE registration (POST /mobile_push/register,
//   queued with it) and records the service's answer (actions/push-devices.ts);
//   after the last attempt the registration fails with REQUEST_EXPIRED;
// - push_message: queued with a new message for its recipients who may get a
//   push (a DM, a mention); decides per recipient from their settings, devices
//   and whether they are online, and queues one push_notify each;
// - push_notify: one push/notify request.
// Nothing here runs inside a send or can fail it; a process that dies leaves
// its jobs to another (or to itself after a restart).
import { recordRegistrationOutcome } from "../actions/push-devices.ts";
import { isMutedConversation } from "../domain/message-flags.ts";
import { PUSH_MAX_ATTEMPTS, pushNotificationRequest, pushRetryDelayMs, pushTrigger, type PushContext } from "../domain/push.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import {
  PUSH_MESSAGE_JOB,
  PUSH_NOTIFY_JOB,
  PUSH_REGISTER_JOB,
  type PushMessageJob,
  type PushNotifyJob,
  type PushRegisterJob,
} from "../jobs/names.ts";
import { enqueueJobs } from "../jobs/queue.ts";
import { PermanentJobFailure, type JobRunner, type Worker } from "../jobs/runner.ts";
import { callPushService, PushServiceError } from "../outbound/push-service.ts";
import { idleAmong, notificationRecipientFacts } from "../queries/notification-recipients.ts";
import { pushDeviceById, usersWithPushDevices } from "../queries/push-devices.ts";
import type { Services } from "../services.ts";

/** Registers the push workers on `runner`. */
export function registerPushWorkers(runner: JobRunner, services: Services): void {
  const { config } = services;
  const backoffMs = (attempt: number) => pushRetryDelayMs(config.pushRetryBaseMs, attempt);
  // A refusal (4xx) will not change by asking again; everything else may.
  const call = async (endpoint: string, body: Record<string, unknown>, encoding: "form" | "json") => {
    try {
      return await callPushService(config, endpoint, body, encoding);
    } catch (error) {
      if (error instanceof PushServiceError && error.kind === "refused") throw new PermanentJobFailure(error.message, { cause: error });
      throw error;
    }
  };

  const register: Worker<PushRegisterJob> = {
    backoffMs,
    run: async ({ device_row_id, registration }) => {
      const device = await pushDeviceById(services.storage.db, device_row_id);
      // Replaced or answered meanwhile: a newer job forwards the newer registration.
      if (!device || device.bouncer_device_id !== null || device.error_code !== null || device.encrypted_push_registration !== registration) return;
      let outcome: { deviceId: number } | { errorCode: string };
      try {
        const reply = await callPushService(
          config,
          "push/e2ee/register",
          {
            realm_id: device.realm_id,
            push_account_id: device.push_account_id,
            encrypted_push_registration: registration,
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
      await recordRegistrationOutcome(services, device_row_id, registration, outcome);
    },
    // Zulip's REQUEST_EXPIRED: the service stayed unreachable through every retry.
    onFailure: ({ device_row_id, registration }) => recordRegistrationOutcome(services, device_row_id, registration, { errorCode: "REQUEST_EXPIRED" }),
  };

  const message: Worker<PushMessageJob> = {
    run: async ({ realm_id, message, candidates }, job) => {
      const db = services.storage.db;
      const ids = Object.keys(candidates).map(Number);
      const withDevices = [...(await usersWithPushDevices(db, ids))];
      if (withDevices.length === 0) return;
      const isDirectMessage = message.type === "private";
      const channel = !isDirectMessage && message.stream_id !== undefined ? { channelId: message.stream_id, topicKey: message.subject.toLowerCase() } : null;
      const facts = await notificationRecipientFacts(services.storage, db, withDevices, channel);
      const idle = await idleAmong(services, facts);
      const realm = await db.selectFrom("realms").select(["id", "name"]).where("id", "=", realm_id).executeTakeFirst();
      if (!realm) return;
      const ctx: PushContext = { realmId: realm.id, realmName: realm.name, realmUrl: config.externalUrl, server: new URL(config.externalUrl).host };
      const pushes: { name: string; payload: PushNotifyJob; options: { maxAttempts: number } }[] = [];
      for (const userId of withDevices) {
        const f = facts.get(userId);
        if (!f || f.isBot || !f.isActive) continue;
        const settings = parseUserSettings(f.settings);
        const flags = candidates[userId] ?? [];
        const trigger = pushTrigger({
          flags,
          isDirectMessage,
          enableOfflinePush: settings.enable_offline_push_notifications,
          enableOnlinePush: settings.enable_online_push_notifications,
          online: !idle.has(userId),
          muted: channel !== null && isMutedConversation(f.channelMuted, f.topicPolicy),
          wildcardMentionsNotify: f.wildcardOverride ?? settings.wildcard_mentions_notify,
        });
        if (trigger === null) continue;
        const body = pushNotificationRequest(ctx, userId, message, trigger);
        pushes.push({ name: PUSH_NOTIFY_JOB, payload: { user_id: userId, message_id: message.id, body }, options: { maxAttempts: PUSH_MAX_ATTEMPTS } });
      }
      // One job per push, so one recipient's retries never repeat another's push; queued as this job ends, so never twice.
      if (pushes.length > 0) {
        const afterCommit: (() => void)[] = [];
        await db.transaction().execute(async (trx) => {
          await enqueueJobs(trx, { afterCommit: (c) => afterCommit.push(c) }, services, pushes);
          await job.completeIn(trx);
        });
        for (const c of afterCommit) c();
      }
    },
  };

  const notify: Worker<PushNotifyJob> = {
    backoffMs,
    run: async ({ body }) => {
      await call("push/notify", body, "json");
    },
  };

  runner.register(PUSH_REGISTER_JOB, register);
  runner.register(PUSH_MESSAGE_JOB, message);
  runner.register(PUSH_NOTIFY_JOB, notify);
}

