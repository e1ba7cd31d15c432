// Missed-message emails on the job queue (Zulip's missedmessage_emails queue
// and ScheduledMessageNotificationEmail). Who is owed an email is decided in
// the send's transaction (actions/missed-message-emails.ts), which writes the
// missed_message_emails rows and queues the user's job:
// - missed_message_email: a user's due rows. Messages read or deleted
//   meanwhile are left out; the rest go out as one email per conversation.
import { unsubscribeUrl } from "../actions/email-unsubscribe.ts";
import { recordMissedMessageEmails } from "../actions/missed-message-emails.ts";
import { includeRealmName, missedMessageEmail, settingForTrigger, unsubscribeTypeFor, type EmailConversation } from "../domain/email-notifications.ts";
import { Flag } from "../domain/message-flags.ts";
import { messageLinkUrl } from "../domain/message-links.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { MISSED_MESSAGE_CHECK_JOB, MISSED_MESSAGE_EMAIL_JOB, type MissedMessageCheckJob, type MissedMessageEmailJob } from "../jobs/names.ts";
import type { JobRunner, Worker } from "../jobs/runner.ts";
import { sendEmail } from "../mail.ts";
import type { Services } from "../services.ts";

/** Registers the missed-message email workers on `runner`. */
export function registerMissedMessageEmailWorkers(runner: JobRunner, services: Services, log: (error: unknown, what: string) => void): void {
  runner.register(MISSED_MESSAGE_CHECK_JOB, checkWorker(services));
  runner.register(MISSED_MESSAGE_EMAIL_JOB, emailWorker(services, log));
}

/** A check queued by an earlier version, which decided after the commit: the same decision, ending with the job. */
function checkWorker(services: Services): Worker<MissedMessageCheckJob> {
  return {
    run: async (check, job) => {
      const afterCommit: (() => void)[] = [];
      await services.storage.db.transaction().execute(async (trx) => {
        await recordMissedMessageEmails(services, trx, { afterCommit: (c) => afterCommit.push(c) }, check);
        await job.completeIn(trx);
      });
      for (const c of afterCommit) c();
    },
  };
}

interface DueRow {
  id: number;
  message_id: number;
  trigger: string;
}

function emailWorker(services: Services, log: (error: unknown, what: string) => void): Worker<MissedMessageEmailJob> {
  const { config } = services;
  return {
    run: async ({ user_id }, job) => {
      const db = services.storage.db;
      const rows: DueRow[] = await db
        .selectFrom("missed_message_emails")
        .select(["id", "message_id", "trigger"])
        .where("user_id", "=", user_id)
        .where("scheduled_at", "<=", services.nowMs())
        .orderBy("message_id")
        .execute();
      if (rows.length === 0) return;
      const user = await db.selectFrom("users").select(["id", "realm_id", "delivery_email", "settings", "is_active"]).where("id", "=", user_id).executeTakeFirst();
      const realm = user && (await db.selectFrom("realms").select(["id", "name", "settings", "deactivated"]).where("id", "=", user.realm_id).executeTakeFirst());
      const settings = user && parseUserSettings(user.settings);
      // Unread messages the user still has (a deleted message has no flags row left), whose kind of email is still wanted.
      const unread = new Map<number, { id: number; sender_id: number; channel_id: number | null; topic: string; topic_key: string; recipient_id: number; rendered_content: string }>();
      if (user && user.is_active && realm && !realm.deactivated && settings) {
        const wanted = rows.filter((r) => {
          const setting = settingForTrigger(r.trigger);
          return setting === undefined || settings[setting];
        });
        if (wanted.length > 0) {
          const found = await db
            .selectFrom("messages")
            .innerJoin("user_messages", (j) => j.onRef("user_messages.message_id", "=", "messages.id").on("user_messages.user_id", "=", user_id))
            .select(["messages.id", "messages.sender_id", "messages.channel_id", "messages.topic", "messages.topic_key", "messages.recipient_id", "messages.rendered_content", "user_messages.flags"])
            .where("messages.id", "in", wanted.map((r) => r.message_id))
            .execute();
          for (const m of found) if ((m.flags & Flag.READ) === 0) unread.set(m.id, m);
        }
      }
      // One email per conversation (Zulip buckets by channel and topic, or by direct-message conversation).
      const byConversation = new Map<string, DueRow[]>();
      for (const row of rows) {
        const m = unread.get(row.message_id);
        if (!m) continue;
        const key = m.channel_id === null ? `dm:${m.recipient_id}` : `channel:${m.channel_id}:${m.topic_key}`;
        byConversation.set(key, [...(byConversation.get(key) ?? []), row]);
      }
      if (byConversation.size > 0 && user && realm && settings) {
        const messageIds = [...byConversation.values()].flat().map((r) => r.message_id);
        const senderIds = [...new Set(messageIds.map((id) => unread.get(id)!.sender_id))];
        const names = new Map((await db.selectFrom("users").select(["id", "full_name"]).where("id", "in", senderIds).execute()).map((u) => [u.id, u.full_name]));
        const realmSettings = parseRealmSettings(realm.settings);
        const hiddenBy = !realmSettings.message_content_allowed_in_email_notifications ? "realm" : !settings.message_content_in_email_notifications ? "user" : undefined;
        for (const conversationRows of byConversation.values()) {
          const first = unread.get(conversationRows[0]!.message_id)!;
          let conversation: EmailConversation;
          let conversationUrl: string;
          if (first.channel_id !== null) {
            const channel = await db.selectFrom("channels").select(["id", "name"]).where("id", "=", first.channel_id).executeTakeFirstOrThrow();
            conversation = { kind: "channel", channelName: channel.name, topic: first.topic };
            conversationUrl = messageLinkUrl(config.externalUrl, first.id, { channel, topic: first.topic });
          } else {
            const recipient = await db.selectFrom("recipients").select("dm_key").where("id", "=", first.recipient_id).executeTakeFirstOrThrow();
            const participantIds = (recipient.dm_key ?? "").split(",").filter((s) => s !== "").map(Number);
            const others = participantIds.filter((id) => id !== user_id);
            const otherNames = others.length === 0 ? [] : (await db.selectFrom("users").select(["id", "full_name"]).where("id", "in", others).orderBy("id").execute()).map((u) => u.full_name);
            conversation = { kind: "direct", otherNames };
            conversationUrl = messageLinkUrl(config.externalUrl, first.id, { participantIds });
          }
          const type = unsubscribeTypeFor(conversationRows.map((r) => r.trigger));
          const unsubscribe = await unsubscribeUrl(services, type, user_id);
          const content = missedMessageEmail({
            realmName: realm.name,
            includeRealmName: includeRealmName(settings.realm_name_in_email_notifications_policy),
            showContent: hiddenBy === undefined,
            ...(hiddenBy ? { hiddenBy } : {}),
            conversation,
            messages: conversationRows.map((r) => {
              const m = unread.get(r.message_id)!;
              return { id: m.id, senderName: names.get(m.sender_id) ?? "Someone", html: m.rendered_content, trigger: r.trigger };
            }),
            externalUrl: config.externalUrl,
            conversationUrl,
            unsubscribeUrl: unsubscribe,
            settingsUrl: `${config.externalUrl}/#settings/notifications`,
          });
          await sendEmail(
            config,
            {
              to: user.delivery_email,
              ...content,
              headers: { "List-Unsubscribe": `<${unsubscribe}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
              kind: "missed_message",
            },
            { warn: (obj, msg) => log(obj, msg) },
          );
          // The email is with the mail server (or in the outbox): its rows go at once, so a later failure of this
          // job does not send it again. The one window left: a crash between the hand-over above and this
          // delete's commit, after which the retried job sends this conversation's email a second time
          // (SMTP has no transaction to share with the database).
          await db.deleteFrom("missed_message_emails").where("id", "in", conversationRows.map((r) => r.id)).execute();
        }
      }
      // The rest (read, deleted, no longer wanted) go with the job's end.
      const emailed = new Set([...byConversation.values()].flat().map((r) => r.id));
      const dropped = rows.filter((r) => !emailed.has(r.id)).map((r) => r.id);
      await db.transaction().execute(async (trx) => {
        if (dropped.length > 0) await trx.deleteFrom("missed_message_emails").where("id", "in", dropped).execute();
        await job.completeIn(trx);
      });
    },
  };
}
