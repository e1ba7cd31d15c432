// Mobile push (issue 8):
// - push_device_tokens: the legacy registrations (POST /users/me/ios_device_token,
//   POST /users/me/android_gcm_reg_id), as Zulip's PushDeviceToken: kind 1 = APNs
//   (token as hex, with the app ID), kind 2 = FCM. One row per (user, kind, token).
// - push_devices: end-to-end-encrypted registrations (POST /mobile_push/register),
//   as Zulip 11's PushDevice: one per (user, push_account_id). The encrypted
//   registration is kept until the push service has accepted it; its state is
//   pending (bouncer_device_id and error_code NULL), active (bouncer_device_id
//   set) or failed (error_code set).
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("push_device_tokens")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("kind", "integer", (c) => c.notNull())
    .addColumn("token", "text", (c) => c.notNull())
    .addColumn("ios_app_id", "text")
    .addColumn("last_updated", "bigint", (c) => c.notNull())
    .addUniqueConstraint("push_device_tokens_user_kind_token", ["user_id", "kind", "token"])
    .execute();
  // Another account signing in on the same device takes its token over: looked up by token.
  await db.schema.createIndex("push_device_tokens_token").on("push_device_tokens").columns(["kind", "token"]).execute();

  await db.schema
    .createTable("push_devices")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("push_account_id", "bigint", (c) => c.notNull())
    .addColumn("token_kind", "text", (c) => c.notNull())
    .addColumn("push_public_key", "text", (c) => c.notNull())
    .addColumn("bouncer_public_key", "text", (c) => c.notNull())
    .addColumn("encrypted_push_registration", "text", (c) => c.notNull())
    // The push service's ID for the device once it accepted the registration.
    .addColumn("bouncer_device_id", "bigint")
    // Zulip's PushDevice.error_code: why the push service refused the registration.
    .addColumn("error_code", "text")
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .addUniqueConstraint("push_devices_user_account", ["user_id", "push_account_id"])
    .execute();
}
