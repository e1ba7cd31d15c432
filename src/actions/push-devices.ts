// Mobile push registrations (Zulip's zerver/lib/push_notifications.py
// add/remove_push_device_token and views/push_notifications.py
// register_push_device):
// - legacy APNs/FCM tokens: stored per user; with a push service configured
//   the registration is first forwarded to it and a refusal fails the request
//   (nothing is stored), as Zulip does;
// - E2EE registrations: stored per (user, push_account_id) as pending, then
//   forwarded in the background by the push worker, which records the
//   service's answer and tells the user's clients with a push_device event.
import { badRequest, humansOnly } from "../errors.ts";
import {
  PUSH_MAX_ATTEMPTS,
  pushDeviceStatus,
  pushServiceNotConfigured,
  testNotificationRequest,
  TokenKind,
  unknownPushDevice,
  unknownRemotePushDevice,
  type E2eeTokenKind,
  type LegacyTokenKind,
  type PushContext,
} from "../domain/push.ts";
import { legacyTokensOf, pushDeviceById, pushDeviceOf } from "../queries/push-devices.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { callPushService, PushServiceError } from "../outbound/push-service.ts";
import { PUSH_REGISTER_JOB, type PushRegisterJob } from "../jobs/names.ts";
import { enqueueJob } from "../jobs/queue.ts";
import { inRealmTransaction } from "./transaction.ts";

async function forwardLegacy(services: Services, endpoint: "push/register" | "push/unregister", body: Record<string, unknown>): Promise<void> {
  try {
    await callPushService(services.config, endpoint, body, "form");
  } catch (error) {
    if (error instanceof PushServiceError) throw error.toApiError();
    throw error;
  }
}

/** POST /users/me/ios_device_token and /users/me/android_gcm_reg_id (token already checked). */
export async function addLegacyToken(services: Services, realm: Realm, user: User, kind: LegacyTokenKind, token: string, iosAppId: string | null): Promise<void> {
  if (user.is_bot) throw humansOnly();
  if (services.config.pushServiceUrl !== undefined) {
    await forwardLegacy(services, "push/register", {
      realm_id: realm.id,
      user_id: user.id,
      token,
      token_kind: kind,
      ...(kind === TokenKind.APNS ? { ios_app_id: iosAppId } : {}),
    });
  }
  await inRealmTransaction(services, realm.id, async (trx) => {
    // Another account left signed in on the same device gives its token up (Zulip does the same).
    await trx.deleteFrom("push_device_tokens").where("kind", "=", kind).where("token", "=", token).where("user_id", "!=", user.id).execute();
    const now = services.now();
    const existing = await trx.selectFrom("push_device_tokens").select("id").where("user_id", "=", user.id).where("kind", "=", kind).where("token", "=", token).executeTakeFirst();
    if (existing) {
      await trx.updateTable("push_device_tokens").set({ last_updated: now, ios_app_id: iosAppId }).where("id", "=", existing.id).execute();
    } else {
      await trx.insertInto("push_device_tokens").values({ user_id: user.id, kind, token, ios_app_id: iosAppId, last_updated: now }).execute();
    }
  });
}

/**
 * DELETE /users/me/ios_device_token and /users/me/android_gcm_reg_id. An
 * unknown token is an error unless a push service is configured: then the
 * service answers for it (it may know tokens registered before this server
 * stored them), as in Zulip.
 */
export async function removeLegacyToken(services: Services, realm: Realm, user: User, kind: LegacyTokenKind, token: string): Promise<void> {
  if (user.is_bot) throw humansOnly();
  const configured = services.config.pushServiceUrl !== undefined;
  await inRealmTransaction(services, realm.id, async (trx) => {
    const deleted = await trx.deleteFrom("push_device_tokens").where("user_id", "=", user.id).where("kind", "=", kind).where("token", "=", token).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0 && !configured) throw badRequest("Token does not exist");
  });
  if (configured) await forwardLegacy(services, "push/unregister", { realm_id: realm.id, user_id: user.id, token, token_kind: kind });
}

export interface E2eeRegistration {
  tokenKind: E2eeTokenKind;
  pushAccountId: number;
  pushPublicKey: string;
  bouncerPublicKey: string;
  encryptedPushRegistration: string;
}

/**
 * POST /mobile_push/register (fields already checked). Registering the same
 * device again with the same values changes nothing; different values (or a
 * retry after a failure) replace the registration and forward it again.
 */
export async function registerPushDevice(services: Services, realm: Realm, user: User, reg: E2eeRegistration): Promise<void> {
  if (user.is_bot) throw humansOnly();
  if (services.config.pushServiceUrl === undefined) throw pushServiceNotConfigured();
  const values = {
    token_kind: reg.tokenKind,
    push_public_key: reg.pushPublicKey,
    bouncer_public_key: reg.bouncerPublicKey,
    encrypted_push_registration: reg.encryptedPushRegistration,
  };
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const existing = await pushDeviceOf(trx, user.id, reg.pushAccountId);
    let deviceRowId: number;
    if (existing) {
      const same = (Object.keys(values) as (keyof typeof values)[]).every((k) => existing[k] === values[k]);
      if (same && existing.error_code === null) return;
      await trx.updateTable("push_devices").set({ ...values, bouncer_device_id: null, error_code: null }).where("id", "=", existing.id).execute();
      deviceRowId = existing.id;
    } else {
      const row = { realm_id: realm.id, user_id: user.id, push_account_id: reg.pushAccountId, ...values, date_created: services.now() };
      deviceRowId = (await trx.insertInto("push_devices").values(row).returning("id").executeTakeFirstOrThrow()).id;
    }
    // Forwarded in the background, retried while the service is unreachable; it commits with the registration.
    const job: PushRegisterJob = { device_row_id: deviceRowId, registration: reg.encryptedPushRegistration };
    await enqueueJob(trx, pending, services, PUSH_REGISTER_JOB, job, { maxAttempts: PUSH_MAX_ATTEMPTS });
  });
}

/**
 * The push service's answer to a forwarded registration: accepted with its
 * device ID, or refused with an error code. Ignored when the registration
 * was replaced meanwhile (a newer one is on its way).
 */
export async function recordRegistrationOutcome(
  services: Services,
  deviceRowId: number,
  forwarded: string,
  outcome: { deviceId: number } | { errorCode: string },
): Promise<void> {
  const device = await pushDeviceById(services.storage.db, deviceRowId);
  if (!device) return;
  await inRealmTransaction(services, device.realm_id, async (trx, pending) => {
    const current = await pushDeviceById(trx, deviceRowId);
    if (!current || current.encrypted_push_registration !== forwarded || pushDeviceStatus(current) !== "pending") return;
    const change = "deviceId" in outcome ? { bouncer_device_id: outcome.deviceId, error_code: null } : { bouncer_device_id: null, error_code: outcome.errorCode };
    await trx.updateTable("push_devices").set(change).where("id", "=", deviceRowId).execute();
    const event =
      "deviceId" in outcome
        ? { type: "push_device", push_account_id: String(current.push_account_id), status: "active" }
        : { type: "push_device", push_account_id: String(current.push_account_id), status: "failed", error_code: outcome.errorCode };
    pending.add(current.realm_id, event, [current.user_id]);
  });
}

/**
 * POST /mobile_push/test_notification (Zulip's
 * send_test_push_notification_api): asks the push service to send a test
 * notification to one of the user's legacy devices (`token`), or to all of
 * them. An unknown token: INVALID_PUSH_DEVICE_TOKEN. Without a push service
 * Parley says so (PUSH_SERVICE_NOT_CONFIGURED) rather than succeed silently
 * as a Zulip server with no push configuration does. The service's refusal
 * of a device it does not know is passed on as INVALID_REMOTE_PUSH_DEVICE_TOKEN.
 */
export async function sendTestPushNotification(services: Services, realm: Realm, user: User, token: string | undefined): Promise<void> {
  if (user.is_bot) throw humansOnly();
  const all = await legacyTokensOf(services.storage.db, user.id);
  const devices = token === undefined ? all : all.filter((d) => d.token === token).slice(0, 1);
  if (token !== undefined && devices.length === 0) throw unknownPushDevice();
  if (services.config.pushServiceUrl === undefined) throw pushServiceNotConfigured();
  const ctx: PushContext = { realmId: realm.id, realmName: realm.name, realmUrl: services.config.externalUrl, server: new URL(services.config.externalUrl).host };
  for (const device of devices) {
    try {
      await callPushService(services.config, "push/test_notification", testNotificationRequest(ctx, user.id, { token: device.token, kind: device.kind as LegacyTokenKind }), "json");
    } catch (error) {
      if (!(error instanceof PushServiceError)) throw error;
      if (error.kind === "refused" && error.code === "INVALID_REMOTE_PUSH_DEVICE_TOKEN") throw unknownRemotePushDevice();
      throw error.toApiError();
    }
  }
}
