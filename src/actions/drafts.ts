// Synchronized drafts (Zulip's zerver/lib/drafts.py): create in bulk, edit,
// delete, each with its `drafts` event (op add/update/remove) to the user's
// own clients. Every endpoint first needs enable_drafts_synchronization;
// turning it off deletes the drafts (actions/users.ts).
import { cleanDraft, draftNotFound, draftsDisabled, type CleanDraft, type DraftData } from "../domain/drafts.ts";
import { dmKey } from "../domain/messages.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import { accessChannel } from "../queries/channels.ts";
import { draftOf } from "../queries/drafts.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { recipientIdFor } from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

/** Zulip's @draft_endpoint: checked before anything else, parameters included. */
export function checkDraftsEnabled(user: User): void {
  if (!parseUserSettings(user.settings).enable_drafts_synchronization) throw draftsDisabled();
}

/**
 * The conversation a clean draft addresses, as a recipients row (created if
 * new, as Zulip's recipient_for_user_profiles does): a channel the user can
 * read ("Invalid channel ID" otherwise, archived ones included), or a
 * direct-message conversation of existing, active users ("Invalid user ID
 * N"; the send path's "no longer using Zulip" for deactivated ones and
 * system bots). Null for a draft without recipients.
 */
async function draftRecipientId(services: Services, trx: Trx, realm: Realm, user: User, draft: CleanDraft): Promise<number | null> {
  if (draft.type === "stream") {
    const channelId = draft.to[0]!;
    const { channel } = await accessChannel(trx, realm.id, await actorFor(trx, user), channelId, "content");
    if (channel.is_archived) throw badRequest("Invalid channel ID");
    return recipientIdFor(services.storage, trx, realm.id, { channelId: channel.id });
  }
  if (draft.type === "private") {
    const found = new Map<number, { id: number; email: string; is_active: boolean; is_system_bot: boolean }>();
    for (const chunk of inChunks(draft.to.filter(isStorableId))) {
      const rows = await trx.selectFrom("users").select(["id", "email", "is_active", "is_system_bot"]).where("realm_id", "=", realm.id).where("id", "in", chunk).execute();
      for (const row of rows) found.set(row.id, row);
    }
    for (const id of draft.to) if (!found.has(id)) throw badRequest(`Invalid user ID ${id}`);
    for (const target of found.values()) if (!target.is_active || target.is_system_bot) throw badRequest(`'${target.email}' is no longer using Zulip.`);
    return recipientIdFor(services.storage, trx, realm.id, { dmKey: dmKey([user.id, ...draft.to]) });
  }
  return null;
}

/** POST /drafts: each draft checked in turn, none stored unless all pass; returns their IDs in order. */
export async function createDrafts(services: Services, realm: Realm, user: User, drafts: readonly DraftData[]): Promise<number[]> {
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const ids: number[] = [];
    for (const data of drafts) {
      const draft = cleanDraft(data, services.now());
      const recipientId = await draftRecipientId(services, trx, realm, user, draft);
      const { id } = await trx
        .insertInto("drafts")
        .values({ user_id: user.id, recipient_id: recipientId, topic: draft.topic, content: draft.content, last_edit_time_ms: draft.lastEditTimeMs })
        .returning("id")
        .executeTakeFirstOrThrow();
      ids.push(id);
    }
    const created = [];
    for (const id of ids) created.push((await draftOf(trx, user.id, id))!);
    pending.add(realm.id, { type: "drafts", op: "add", drafts: created }, [user.id]);
    return ids;
  });
}

/** PATCH /drafts/{draft_id}: the draft is replaced by the one given. */
export async function editDraft(services: Services, realm: Realm, user: User, draftId: number, draft: DraftData): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (!isStorableId(draftId) || !(await draftOf(trx, user.id, draftId))) throw draftNotFound();
    const clean = cleanDraft(draft, services.now());
    const recipientId = await draftRecipientId(services, trx, realm, user, clean);
    await trx
      .updateTable("drafts")
      .set({ recipient_id: recipientId, topic: clean.topic, content: clean.content, last_edit_time_ms: clean.lastEditTimeMs })
      .where("id", "=", draftId)
      .execute();
    pending.add(realm.id, { type: "drafts", op: "update", draft: (await draftOf(trx, user.id, draftId))! }, [user.id]);
  });
}

/** DELETE /drafts/{draft_id}. */
export async function deleteDraft(services: Services, realm: Realm, user: User, draftId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    if (!isStorableId(draftId) || !(await draftOf(trx, user.id, draftId))) throw draftNotFound();
    await trx.deleteFrom("drafts").where("id", "=", draftId).execute();
    pending.add(realm.id, { type: "drafts", op: "remove", draft_id: draftId }, [user.id]);
  });
}

/** When draft synchronization is turned off: the server's copies go, without events. */
export async function discardAllDrafts(trx: Trx, userId: number): Promise<void> {
  await trx.deleteFrom("drafts").where("user_id", "=", userId).execute();
}
