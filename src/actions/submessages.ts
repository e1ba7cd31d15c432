// POST /submessage (Zulip's zerver/views/submessage.py and
// actions/submessage.py): a vote, a new option, a ticked task… attached to a
// widget message, stored in order and told to everyone who sees the message
// with a `submessage` event.
import { validatePollData, validateTodoData, widgetTypeOf, WidgetDataError } from "../domain/widgets.ts";
import { badRequest } from "../errors.ts";
import { messageAudience } from "../queries/message-audience.ts";
import { modifiableMessage } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { cachedActorFor } from "./actor.ts";
import { inRealmTransaction } from "./transaction.ts";
import { followOnParticipation } from "./user-topics.ts";

export interface SubmessageRequest {
  messageId: number;
  msgType: string;
  /** JSON text, stored as sent. */
  content: string;
}

/**
 * Zulip's process_submessage, in its order: the message must be one the user
 * can read, outside archived channels; the first submessage on a message is
 * its sender's (the widget); the content must be JSON; on a poll or todo
 * widget it must be one of that widget's events, and only the widget's
 * author may change the question or title. The organization's lock orders
 * concurrent submessages, as Zulip's row lock on the message does.
 */
export async function addSubmessage(services: Services, realm: Realm, user: User, request: SubmessageRequest): Promise<void> {
  const actor = await cachedActorFor(services.storage, user);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const message = await modifiableMessage(trx, realm.id, actor, request.messageId);
    const messageId = message.row.id;
    const senderId = message.row.sender_id;
    if (senderId !== user.id) {
      const started = await trx.selectFrom("submessages").select("id").where("message_id", "=", messageId).where("sender_id", "=", senderId).limit(1).executeTakeFirst();
      if (!started) throw badRequest("You cannot attach a submessage to this message.");
    }
    let data: unknown;
    try {
      data = JSON.parse(request.content);
    } catch {
      throw badRequest("Invalid json for submessage");
    }
    const widget = await trx
      .selectFrom("submessages")
      .select("content")
      .where("message_id", "=", messageId)
      .where("msg_type", "=", "widget")
      .orderBy("id")
      .limit(1)
      .executeTakeFirst();
    const widgetType = widget ? widgetTypeOf(widget.content) : null;
    const isWidgetAuthor = senderId === user.id;
    try {
      if (widgetType === "poll") validatePollData(data, isWidgetAuthor);
      else if (widgetType === "todo") validateTodoData(data, isWidgetAuthor);
    } catch (error) {
      if (error instanceof WidgetDataError) throw badRequest(error.message);
      throw error;
    }

    const row = { message_id: messageId, sender_id: user.id, msg_type: request.msgType, content: request.content };
    const { id } = await trx.insertInto("submessages").values(row).returning("id").executeTakeFirstOrThrow();
    // Voting is participating, as reacting is.
    await followOnParticipation(trx, pending, realm.id, user, message.channel, message.row.topic, services.now());

    // Zulip tells the users with a flags row. Parley tells everyone who can see the message
    // (as for reactions), so subscribers reading a channel's history see votes too, and the
    // voter, who may be reading a public channel without subscribing.
    const audience = new Set(await messageAudience(trx, [messageId], message.channel));
    audience.add(user.id);
    pending.add(
      realm.id,
      { type: "submessage", msg_type: request.msgType, message_id: messageId, submessage_id: id, sender_id: user.id, content: request.content },
      [...audience].sort((a, b) => a - b),
    );
  });
}
