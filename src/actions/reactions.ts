// Emoji reactions (Zulip's zerver/views/reactions.py and actions/reactions.py):
// POST and DELETE /messages/{message_id}/reactions, with the `reaction`
// event (op add/remove) to everyone who can see the message.
import { Flag } from "../domain/message-flags.ts";
import { checkEmojiRequest, emojiDataForName, normalizeReactionType, ReactionType } from "../domain/emoji.ts";
import { ApiError, badRequest } from "../errors.ts";
import { unicodeEmojiCode } from "../markdown/emoji.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { messageAudience } from "../queries/message-audience.ts";
import { modifiableMessage, type ModifiableMessage } from "../queries/messages.ts";
import { customEmojiFacts } from "../queries/realm-emoji.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { cachedActorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { followOnParticipation } from "./user-topics.ts";

export interface AddReactionRequest {
  emojiName: string;
  emojiCode?: string | undefined;
  reactionType?: string | undefined;
}

export interface RemoveReactionRequest {
  emojiName?: string | undefined;
  emojiCode?: string | undefined;
  reactionType?: string | undefined;
}

type Reacted = ModifiableMessage;

async function findReaction(trx: Trx, messageId: number, userId: number, emojiCode: string, reactionType: string) {
  return trx
    .selectFrom("reactions")
    .selectAll()
    .where("message_id", "=", messageId)
    .where("user_id", "=", userId)
    .where("emoji_code", "=", emojiCode)
    .where("reaction_type", "=", reactionType)
    .executeTakeFirst();
}

/**
 * The `reaction` event, to the users who can see the message
 * (queries/message-audience) and the reacting user, who may see it through
 * channel history without being subscribed (Zulip sends it to them too:
 * they now have a flags row).
 */
async function notifyReaction(
  trx: Trx,
  pending: PendingEvents,
  realmId: number,
  user: User,
  reacted: Reacted,
  op: "add" | "remove",
  reaction: { emoji_name: string; emoji_code: string; reaction_type: string },
): Promise<void> {
  const audience = new Set(await messageAudience(trx, [reacted.row.id], reacted.channel));
  audience.add(user.id);
  const event = {
    type: "reaction",
    op,
    user_id: user.id,
    // Deprecated in Zulip in favour of user_id; clients from before it still read it.
    user: { user_id: user.id, email: user.email, full_name: user.full_name, is_mirror_dummy: false },
    message_id: reacted.row.id,
    emoji_name: reaction.emoji_name,
    emoji_code: reaction.emoji_code,
    reaction_type: reaction.reaction_type,
  };
  pending.add(realmId, event, [...audience].sort((a, b) => a - b));
}

/**
 * POST /messages/{message_id}/reactions (Zulip's check_add_reaction). Without
 * emoji_code or reaction_type, the name's current meaning fills them in. A
 * reaction someone already made with the same code and type is a vote for
 * it: it keeps that reaction's name, unchecked (its custom emoji may have
 * been deactivated since). A new reaction must name a valid emoji.
 */
export async function addReaction(services: Services, realm: Realm, user: User, messageId: number, request: AddReactionRequest): Promise<void> {
  const actor = await cachedActorFor(services.storage, user);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const reacted = await modifiableMessage(trx, realm.id, actor, messageId);
    let emojiName = request.emojiName;
    let emojiCode = request.emojiCode;
    let reactionType = request.reactionType === undefined ? undefined : normalizeReactionType(request.reactionType);
    const custom = await customEmojiFacts(trx, realm.id);
    if (emojiCode === undefined || reactionType === undefined) {
      const data = emojiDataForName(emojiName, custom.activeByName);
      emojiCode ??= data.emojiCode;
      reactionType ??= data.reactionType;
    }
    if (reactionType === ReactionType.UNICODE) emojiCode = unicodeEmojiCode(emojiCode);
    if (await findReaction(trx, messageId, user.id, emojiCode, reactionType)) {
      throw new ApiError(400, "REACTION_ALREADY_EXISTS", "Reaction already exists.");
    }
    const existing = await trx
      .selectFrom("reactions")
      .select("emoji_name")
      .where("message_id", "=", messageId)
      .where("emoji_code", "=", emojiCode)
      .where("reaction_type", "=", reactionType)
      .orderBy("id")
      .limit(1)
      .executeTakeFirst();
    if (existing) emojiName = existing.emoji_name;
    else checkEmojiRequest(emojiName, emojiCode, reactionType, custom.byId);

    // Zulip's create_historical_user_messages: a message read through channel history gets a flags row.
    if (reacted.flags === null) {
      await trx
        .insertInto("user_messages")
        .values({ user_id: user.id, message_id: messageId, flags: Flag.READ | Flag.HISTORICAL })
        .onConflict((oc) => oc.columns(["user_id", "message_id"]).doNothing())
        .execute();
    }
    const reaction = { message_id: messageId, user_id: user.id, emoji_name: emojiName, emoji_code: emojiCode, reaction_type: reactionType };
    await trx.insertInto("reactions").values(reaction).execute();
    await followOnParticipation(trx, pending, realm.id, user, reacted.channel, reacted.row.topic, services.now());
    await notifyReaction(trx, pending, realm.id, user, reacted, "add", reaction);
  });
}

/**
 * DELETE /messages/{message_id}/reactions (Zulip's remove_reaction). The
 * reaction is found by code and type (reaction_type defaults to
 * unicode_emoji); with only a name, the name's current code is used. Removing
 * needs no valid emoji: a deactivated custom emoji's reaction can go.
 */
export async function removeReaction(services: Services, realm: Realm, user: User, messageId: number, request: RemoveReactionRequest): Promise<void> {
  const actor = await cachedActorFor(services.storage, user);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const reacted = await modifiableMessage(trx, realm.id, actor, messageId);
    let emojiCode = request.emojiCode;
    let reactionType = request.reactionType === undefined ? undefined : normalizeReactionType(request.reactionType);
    if (emojiCode === undefined) {
      if (request.emojiName === undefined) throw badRequest("At least one of the following arguments must be present: emoji_name, emoji_code");
      const data = emojiDataForName(request.emojiName, (await customEmojiFacts(trx, realm.id)).activeByName);
      emojiCode = data.emojiCode;
      // Zulip keeps the default unicode_emoji here, so a custom emoji named without its type is never found;
      // Parley takes the type the name stands for (documented in docs/zulip-behaviour/reactions-emoji.md).
      reactionType ??= data.reactionType;
    }
    reactionType ??= ReactionType.UNICODE;
    if (reactionType === ReactionType.UNICODE) emojiCode = unicodeEmojiCode(emojiCode);
    const reaction = await findReaction(trx, messageId, user.id, emojiCode, reactionType);
    if (!reaction) throw new ApiError(400, "REACTION_DOES_NOT_EXIST", "Reaction doesn't exist.");
    await trx.deleteFrom("reactions").where("id", "=", reaction.id).execute();
    await notifyReaction(trx, pending, realm.id, user, reacted, "remove", reaction);
  });
}
