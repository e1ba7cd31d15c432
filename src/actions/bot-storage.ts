// A bot's key/value storage (Zulip's zerver/lib/bot_storage.py and
// zerver/views/storage.py), what the zulip_bots StateHandler keeps its state
// in. Keys and values are strings; a bot's keys and values together may hold
// at most BOT_STORAGE_SIZE_LIMIT characters. As in Zulip the storage belongs
// to whoever calls (any account; bots are who use it), and no events are sent.
import { BOT_STORAGE_SIZE_LIMIT, codePointLength } from "../domain/bots.ts";
import { badRequest } from "../errors.ts";
import { botStorageEntries } from "../queries/bots.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction } from "./transaction.ts";

function keyDoesNotExist() {
  return badRequest("Key does not exist.");
}

/** GET /bot_storage: the values of `keys` (every key when none or an empty list is given). */
export async function getBotStorage(services: Services, user: User, keys: readonly string[] | undefined): Promise<Record<string, string>> {
  const wanted = keys !== undefined && keys.length > 0 ? keys : undefined;
  const entries = await botStorageEntries(services.storage.db, user.id, wanted);
  const storage: Record<string, string> = {};
  if (wanted === undefined) {
    for (const [key, value] of entries) storage[key] = value;
    return storage;
  }
  for (const key of wanted) {
    const value = entries.get(key);
    if (value === undefined) throw keyDoesNotExist();
    storage[key] = value;
  }
  return storage;
}

/** PUT /bot_storage: sets every entry, or none when the storage would exceed its limit. */
export async function putBotStorage(services: Services, realm: Realm, user: User, storage: Record<string, string>): Promise<void> {
  const entries = Object.entries(storage);
  await inRealmTransaction(services, realm.id, async (trx) => {
    const current = await botStorageEntries(trx, user.id);
    let size = 0;
    for (const [key, value] of current) size += codePointLength(key) + codePointLength(value);
    for (const [key, value] of entries) {
      const old = current.get(key);
      size += codePointLength(key) + codePointLength(value) - (old === undefined ? 0 : codePointLength(key) + codePointLength(old));
    }
    if (size > BOT_STORAGE_SIZE_LIMIT) {
      throw badRequest(`Request exceeds storage limit by ${size - BOT_STORAGE_SIZE_LIMIT} characters. The limit is ${BOT_STORAGE_SIZE_LIMIT} characters.`);
    }
    for (const [key, value] of entries) {
      if (current.has(key)) await trx.updateTable("bot_storage").set({ value }).where("bot_user_id", "=", user.id).where("key", "=", key).execute();
      else await trx.insertInto("bot_storage").values({ bot_user_id: user.id, key, value }).execute();
    }
  });
}

/** DELETE /bot_storage: removes `keys` (every key when none or an empty list is given); any missing key removes nothing. */
export async function removeBotStorage(services: Services, realm: Realm, user: User, keys: readonly string[] | undefined): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx) => {
    if (keys === undefined || keys.length === 0) {
      await trx.deleteFrom("bot_storage").where("bot_user_id", "=", user.id).execute();
      return;
    }
    const found = await botStorageEntries(trx, user.id, keys);
    // Zulip compares the rows found with the keys asked for: a key named twice counts twice.
    if (found.size < keys.length) throw keyDoesNotExist();
    await trx.deleteFrom("bot_storage").where("bot_user_id", "=", user.id).where("key", "in", [...keys]).execute();
  });
}
