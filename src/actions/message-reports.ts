// POST /messages/{message_id}/report (Zulip's zerver/views/message_report.py
// and lib/message_report.py): the Notification Bot posts the report to the
// organization's moderation request channel, in a topic per reported person.
import { badRequest } from "../errors.ts";
import { reportContent, reportTopic, type ReportedMessage, type ReportType } from "../domain/message-reports.ts";
import { dmKeyUserIds } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { readableMessage, type MessageRow } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { notificationBot, sendMessageInTransaction } from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

export interface ReportRequest {
  messageId: number;
  reportType: ReportType;
  description: string;
}

/**
 * In Zulip's order: "other" needs a description; reporting must be on (a
 * moderation request channel set); the message must be one the reporter can
 * read (archived channels included; one's own messages too). The report is
 * sent in the same transaction as those checks.
 */
export async function reportMessage(services: Services, realm: Realm, user: User, request: ReportRequest): Promise<void> {
  if (request.reportType === "other" && request.description === "") throw badRequest("An explanation is required.");
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const current = (await trx.selectFrom("realms").selectAll().where("id", "=", realm.id).executeTakeFirstOrThrow()) as Realm;
    const channelId = parseRealmSettings(current.settings).moderation_request_channel_id;
    const channel =
      channelId < 0
        ? undefined
        : await trx.selectFrom("channels").select(["id", "topics_policy", "is_archived"]).where("realm_id", "=", realm.id).where("id", "=", channelId).executeTakeFirst();
    if (!channel || channel.is_archived) throw badRequest("Message reporting is not enabled in this organization.");

    const found = await readableMessage(trx, realm.id, await actorFor(trx, user), request.messageId);
    if (!found) throw badRequest("Invalid message(s)");
    const reported = await reportedMessage(trx, found.row);
    const content = reportContent(services.config.externalUrl, user, reported, request.reportType, request.description);
    const bot = await notificationBot(trx, realm.id);
    await sendMessageInTransaction(services, trx, pending, current, bot, {
      kind: "channel",
      to: String(channel.id),
      topic: reportTopic(reported.sender, channel.topics_policy),
      content,
      clientName: "Internal",
      internal: true,
    });
  });
}

async function reportedMessage(trx: Trx, row: MessageRow): Promise<ReportedMessage> {
  const base = { id: row.id, content: row.content, dateSent: row.date_sent };
  const sender = await trx.selectFrom("users").select(["id", "full_name"]).where("id", "=", row.sender_id).executeTakeFirstOrThrow();
  if (row.channel_id !== null) {
    const channel = await trx.selectFrom("channels").select(["id", "name"]).where("id", "=", row.channel_id).executeTakeFirstOrThrow();
    return { ...base, sender, conversation: { channel, topic: row.topic } };
  }
  const recipient = await trx.selectFrom("recipients").select("dm_key").where("id", "=", row.recipient_id).executeTakeFirstOrThrow();
  const participants = await trx.selectFrom("users").select(["id", "full_name"]).where("id", "in", dmKeyUserIds(recipient.dm_key!)).orderBy("id").execute();
  return { ...base, sender, conversation: { participants } };
}
