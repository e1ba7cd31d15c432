// Setting a user's status (Zulip's do_update_user_status): POST
// /users/me/status by the user, POST /users/{user_id}/status by an
// administrator. Only what the request names changes; the `user_status`
// event (carrying just those parts) goes to everyone in the organization,
// since every user can see every other here.
import { isAdmin } from "../domain/roles.ts";
import { noNewValues, statusChange, userStatusEvent, type StatusRequest } from "../domain/user-status.ts";
import { badRequest, humansOnly, insufficientPermission, noSuchUser } from "../errors.ts";
import { customEmojiFacts } from "../queries/realm-emoji.ts";
import { getUserById, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { changePersonalSetting } from "./users.ts";

/** POST /users/me/status: humans only; `away` is the legacy inverse of presence_enabled. */
export async function updateOwnStatus(services: Services, realm: Realm, user: User, request: StatusRequest & { away?: boolean | undefined }, clientName: string): Promise<void> {
  if (user.is_bot) throw humansOnly();
  if (request.away === undefined && request.statusText === undefined && request.emojiName === undefined) throw noNewValues();
  await inRealmTransaction(services, realm.id, (trx, pending) => writeStatus(trx, pending, services, realm, user, request, request.away, clientName));
}

/**
 * POST /users/{user_id}/status (Zulip 11, feature level 407): an
 * administrator sets another human's status; no `away`. Zulip's
 * access_user_by_id(for_admin=True): bots are "No such user", deactivated
 * users are refused, and only administrators may (not even for themselves
 * otherwise).
 */
export async function updateStatusForUser(services: Services, realm: Realm, actor: User, targetId: number, request: StatusRequest, clientName: string): Promise<void> {
  const target = await getUserById(services.storage.db, realm.id, targetId);
  if (!target || target.is_bot) throw noSuchUser();
  if (!target.is_active) throw badRequest("User is deactivated");
  if (!isAdmin(actor.role)) throw insufficientPermission();
  if (request.statusText === undefined && request.emojiName === undefined) throw noNewValues();
  await inRealmTransaction(services, realm.id, (trx, pending) => writeStatus(trx, pending, services, realm, target, request, undefined, clientName));
}

async function writeStatus(
  trx: Trx,
  pending: PendingEvents,
  services: Services,
  realm: Realm,
  user: User,
  request: StatusRequest,
  away: boolean | undefined,
  clientName: string,
): Promise<void> {
  const change = statusChange(request, await customEmojiFacts(trx, realm.id));
  if (away !== undefined) await changePersonalSetting(trx, services, pending, realm, user, "presence_enabled", !away);
  const now = services.now();
  const set = {
    timestamp: now,
    client: clientName,
    ...(change.statusText !== undefined ? { status_text: change.statusText } : {}),
    ...(change.emoji !== undefined ? { emoji_name: change.emoji.name, emoji_code: change.emoji.code, reaction_type: change.emoji.reactionType } : {}),
  };
  await trx
    .insertInto("user_statuses")
    .values({ user_id: user.id, realm_id: realm.id, status_text: "", emoji_name: "", emoji_code: "", reaction_type: "unicode_emoji", ...set })
    .onConflict((oc) => oc.column("user_id").doUpdateSet(set))
    .execute();
  const recipients = (await listActiveUsers(trx, realm.id)).map((u) => u.id).sort((a, b) => a - b);
  pending.add(realm.id, userStatusEvent(user.id, change, away), recipients);
}
