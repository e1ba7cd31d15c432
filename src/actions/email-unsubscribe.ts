// Signed unsubscribe links of notification emails (Zulip's
// /accounts/unsubscribe/<type>/<token>): following one turns that kind of
// email off for its user without signing in, as PATCH /settings would (same
// events). The key is derived from the server's upload-signing secret, as the
// image proxy's is (actions/external-content.ts), so every process agrees.
import crypto from "node:crypto";
import { UNSUBSCRIBE_TYPES, unsubscribeToken, verifyUnsubscribeToken, type UnsubscribeType } from "../domain/email-notifications.ts";
import type { FileStore } from "../files/store.ts";
import type { Services } from "../services.ts";
import { inRealmTransaction } from "./transaction.ts";
import { uploadSigningKey } from "./uploads.ts";
import { changePersonalSetting } from "./users.ts";

const keys = new WeakMap<FileStore, Promise<Buffer>>();

function unsubscribeKey(files: FileStore): Promise<Buffer> {
  let key = keys.get(files);
  if (!key) {
    key = uploadSigningKey(files).then((secret) => crypto.createHmac("sha256", secret).update("email_unsubscribe").digest());
    key.catch(() => keys.delete(files));
    keys.set(files, key);
  }
  return key;
}

/** The absolute unsubscribe URL for `userId`'s emails of `type`. */
export async function unsubscribeUrl(services: Services, type: UnsubscribeType, userId: number): Promise<string> {
  const token = unsubscribeToken(await unsubscribeKey(services.files), type, userId);
  return `${services.config.externalUrl}/accounts/unsubscribe/${type}/${token}`;
}

/**
 * Turns the setting behind `type` off for the token's user. Returns the
 * user's realm name when done, undefined when the token is forged or its
 * user is gone or deactivated.
 */
export async function unsubscribe(services: Services, type: UnsubscribeType, token: string): Promise<{ realmName: string } | undefined> {
  const userId = verifyUnsubscribeToken(await unsubscribeKey(services.files), type, token);
  if (userId === undefined) return undefined;
  const db = services.storage.db;
  const user = await db.selectFrom("users").selectAll().where("id", "=", userId).executeTakeFirst();
  if (!user || !user.is_active) return undefined;
  const realm = await db.selectFrom("realms").selectAll().where("id", "=", user.realm_id).executeTakeFirst();
  if (!realm || realm.deactivated) return undefined;
  await inRealmTransaction(services, realm.id, (trx, pending) => changePersonalSetting(trx, services, pending, realm, user, UNSUBSCRIBE_TYPES[type], false));
  return { realmName: realm.name };
}
