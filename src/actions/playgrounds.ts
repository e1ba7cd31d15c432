// Code playgrounds (POST /realm/playgrounds, DELETE
// /realm/playgrounds/{playground_id}; administrators, checked by the
// routes), as Zulip's do_add_realm_playground / do_remove_realm_playground:
// every change sends the whole list to the organization's active users.
import { checkPlayground, type PlaygroundInput } from "../domain/playgrounds.ts";
import { badRequest } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { realmPlaygrounds } from "../queries/playgrounds.ts";
import { listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Realm } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

async function notifyPlaygrounds(trx: Trx, pending: PendingEvents, realmId: number): Promise<void> {
  const everyone = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "realm_playgrounds", realm_playgrounds: await realmPlaygrounds(trx, realmId) }, everyone);
}

/** Adds a playground (values already stripped); returns its ID. */
export async function addPlayground(services: Services, realm: Realm, input: PlaygroundInput): Promise<number> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    // Under the organization's lock: two requests for one name cannot both pass.
    const taken = await trx
      .selectFrom("realm_playgrounds")
      .select("id")
      .where("realm_id", "=", realm.id)
      .where("pygments_language", "=", input.pygmentsLanguage)
      .where("name", "=", input.name)
      .executeTakeFirst();
    checkPlayground(input, taken !== undefined);
    const { id } = await trx
      .insertInto("realm_playgrounds")
      .values({ realm_id: realm.id, name: input.name, pygments_language: input.pygmentsLanguage, url_template: input.urlTemplate })
      .returning("id")
      .executeTakeFirstOrThrow();
    await notifyPlaygrounds(trx, pending, realm.id);
    return id;
  });
}

export async function removePlayground(services: Services, realm: Realm, playgroundId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const deleted = isStorableId(playgroundId)
      ? await trx.deleteFrom("realm_playgrounds").where("realm_id", "=", realm.id).where("id", "=", playgroundId).executeTakeFirst()
      : undefined;
    if (!deleted || Number(deleted.numDeletedRows) === 0) throw badRequest("Invalid playground");
    await notifyPlaygrounds(trx, pending, realm.id);
  });
}
