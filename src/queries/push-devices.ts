// Reads for mobile push: a user's registrations, who among a message's
// recipients has a device (what the decision needs to know is in
// queries/notification-recipients.ts, shared with missed-message emails).
import type { Kysely } from "kysely";
import { pushDeviceStatus } from "../domain/push.ts";
import type { Database, PushDevice, PushDeviceToken } from "../storage/schema.ts";

type Db = Kysely<Database>;

export async function legacyTokenOf(db: Db, userId: number, kind: number, token: string): Promise<PushDeviceToken | undefined> {
  return db.selectFrom("push_device_tokens").selectAll().where("user_id", "=", userId).where("kind", "=", kind).where("token", "=", token).executeTakeFirst();
}

export async function legacyTokensOf(db: Db, userId: number): Promise<PushDeviceToken[]> {
  return db.selectFrom("push_device_tokens").selectAll().where("user_id", "=", userId).orderBy("id").execute();
}

export async function pushDeviceOf(db: Db, userId: number, pushAccountId: number): Promise<PushDevice | undefined> {
  return db.selectFrom("push_devices").selectAll().where("user_id", "=", userId).where("push_account_id", "=", pushAccountId).executeTakeFirst();
}

export async function pushDeviceById(db: Db, id: number): Promise<PushDevice | undefined> {
  return db.selectFrom("push_devices").selectAll().where("id", "=", id).executeTakeFirst();
}

/** E2EE registrations not yet accepted or refused by the push service (forwarded again at start-up). */
export async function pendingPushDeviceIds(db: Db): Promise<number[]> {
  const rows = await db.selectFrom("push_devices").select("id").where("bouncer_device_id", "is", null).where("error_code", "is", null).orderBy("id").execute();
  return rows.map((r) => r.id);
}

/** POST /register's push_devices: each E2EE registration by push_account_id, as Zulip 11. */
export async function pushDevicesState(db: Db, userId: number): Promise<Record<string, { status: string; error_code: string | null }>> {
  const rows = await db.selectFrom("push_devices").selectAll().where("user_id", "=", userId).orderBy("id").execute();
  return Object.fromEntries(rows.map((d) => [String(d.push_account_id), { status: pushDeviceStatus(d), error_code: d.error_code }]));
}

/** Which of `userIds` have a device to push to: a legacy token, or an E2EE registration the service accepted. */
export async function usersWithPushDevices(db: Db, userIds: readonly number[]): Promise<Set<number>> {
  if (userIds.length === 0) return new Set();
  const legacy = await db.selectFrom("push_device_tokens").select("user_id").distinct().where("user_id", "in", userIds).execute();
  const e2ee = await db.selectFrom("push_devices").select("user_id").distinct().where("user_id", "in", userIds).where("bouncer_device_id", "is not", null).execute();
  return new Set([...legacy, ...e2ee].map((r) => r.user_id));
}
