// A user's alert words (POST/DELETE /users/me/alert_words). Each change sends
// the whole list to the user's clients in an `alert_words` event.
import { cleanAlertWords } from "../domain/alert-words.ts";
import { badRequest } from "../errors.ts";
import { alertWordsOf } from "../queries/alert-words.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction } from "./transaction.ts";

/** Zulip's AlertWord.MAX_ALERT_WORD_LENGTH. */
export const MAX_ALERT_WORD_LENGTH = 100;

export async function addAlertWords(services: Services, realm: Realm, user: User, words: readonly string[]): Promise<string[]> {
  words.forEach((word, i) => {
    if ([...word].length > MAX_ALERT_WORD_LENGTH) throw badRequest(`alert_words[${i}] is too long (limit: ${MAX_ALERT_WORD_LENGTH} characters)`);
  });
  const cleaned = cleanAlertWords(words);
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (cleaned.length > 0) {
      await trx
        .insertInto("alert_words")
        .values(cleaned.map((word) => ({ user_id: user.id, word, word_key: word.toLowerCase() })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
    const all = await alertWordsOf(trx, user.id);
    pending.add(realm.id, { type: "alert_words", alert_words: all }, [user.id]);
    return all;
  });
}

export async function removeAlertWords(services: Services, realm: Realm, user: User, words: readonly string[]): Promise<string[]> {
  const keys = cleanAlertWords(words).map((w) => w.toLowerCase());
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (keys.length > 0) await trx.deleteFrom("alert_words").where("user_id", "=", user.id).where("word_key", "in", keys).execute();
    const all = await alertWordsOf(trx, user.id);
    pending.add(realm.id, { type: "alert_words", alert_words: all }, [user.id]);
    return all;
  });
}
