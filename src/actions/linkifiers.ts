// Linkifiers (POST /realm/filters, PATCH and DELETE
// /realm/filters/{filter_id}, PATCH /realm/linkifiers; administrators,
// checked by the routes), as Zulip's do_add_linkifier, do_update_linkifier,
// do_remove_linkifier and check_reorder_linkifiers: every change sends the
// whole ordered list to the organization's active users whose clients
// understand URL templates (the linkifier_url_template capability), and
// increments the organization's linkifiers_version so that every process
// compiles the new set (queries/linkifiers.ts). Messages already sent keep
// their rendering, as in Zulip; topic_links are computed when messages are
// read, so they follow the current linkifiers.
import { checkLinkifier, checkLinkifierOrder, type LinkifierInput } from "../domain/linkifiers.ts";
import { badRequest } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { realmLinkifiers } from "../queries/linkifiers.ts";
import { listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Realm } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

async function linkifiersChanged(trx: Trx, pending: PendingEvents, realmId: number): Promise<void> {
  await trx
    .updateTable("realms")
    .set((eb) => ({ linkifiers_version: eb("linkifiers_version", "+", 1) }))
    .where("id", "=", realmId)
    .execute();
  const everyone = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "realm_linkifiers", realm_linkifiers: await realmLinkifiers(trx, realmId) }, everyone, {
    name: "linkifier_url_template",
    present: true,
  });
}

async function patternTaken(trx: Trx, realmId: number, pattern: string, exceptId?: number): Promise<boolean> {
  let query = trx.selectFrom("realm_linkifiers").select("id").where("realm_id", "=", realmId).where("pattern", "=", pattern);
  if (exceptId !== undefined) query = query.where("id", "!=", exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

/** Adds a linkifier, ordered after every other one (values already stripped); returns its ID. */
export async function addLinkifier(services: Services, realm: Realm, input: LinkifierInput): Promise<number> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    // Under the organization's lock: two requests for one pattern cannot both pass.
    checkLinkifier(input, await patternTaken(trx, realm.id, input.pattern));
    const last = await trx.selectFrom("realm_linkifiers").select((eb) => eb.fn.max("order").as("max")).where("realm_id", "=", realm.id).executeTakeFirst();
    const max = last?.max;
    const { id } = await trx
      .insertInto("realm_linkifiers")
      .values({ realm_id: realm.id, pattern: input.pattern, url_template: input.urlTemplate, order: max === null || max === undefined ? 0 : Number(max) + 1 })
      .returning("id")
      .executeTakeFirstOrThrow();
    await linkifiersChanged(trx, pending, realm.id);
    return id;
  });
}

const notFound = () => badRequest("Linkifier not found.");

export async function updateLinkifier(services: Services, realm: Realm, linkifierId: number, input: LinkifierInput): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const row = isStorableId(linkifierId)
      ? await trx.selectFrom("realm_linkifiers").select("id").where("realm_id", "=", realm.id).where("id", "=", linkifierId).executeTakeFirst()
      : undefined;
    if (!row) throw notFound();
    checkLinkifier(input, await patternTaken(trx, realm.id, input.pattern, row.id));
    await trx.updateTable("realm_linkifiers").set({ pattern: input.pattern, url_template: input.urlTemplate }).where("id", "=", row.id).execute();
    await linkifiersChanged(trx, pending, realm.id);
  });
}

export async function removeLinkifier(services: Services, realm: Realm, linkifierId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const deleted = isStorableId(linkifierId)
      ? await trx.deleteFrom("realm_linkifiers").where("realm_id", "=", realm.id).where("id", "=", linkifierId).executeTakeFirst()
      : undefined;
    if (!deleted || Number(deleted.numDeletedRows) === 0) throw notFound();
    await linkifiersChanged(trx, pending, realm.id);
  });
}

/** Puts the linkifiers in the given order (which must name each exactly once). */
export async function reorderLinkifiers(services: Services, realm: Realm, orderedIds: readonly number[]): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const existing = await trx.selectFrom("realm_linkifiers").select("id").where("realm_id", "=", realm.id).execute();
    checkLinkifierOrder(
      orderedIds,
      existing.map((r) => r.id),
    );
    // Nothing to reorder: no event, as in Zulip.
    if (existing.length === 0) return;
    for (const [order, id] of orderedIds.entries()) {
      await trx.updateTable("realm_linkifiers").set({ order }).where("realm_id", "=", realm.id).where("id", "=", id).execute();
    }
    await linkifiersChanged(trx, pending, realm.id);
  });
}
