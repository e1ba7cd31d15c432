// Weekly digest emails on the job queue (Zulip's enqueue_digest_emails cron
// and digest_emails queue, zerver/lib/digest.py). Two jobs:
// - digest_check: once a day (domain/digest.ts DIGEST_CHECK_HOUR_UTC). It
//   records its UTC day in digest_days (a second check of the same day does
//   nothing), queues digest_email jobs for each organization whose
//   digest_weekday is today, and queues the next day's check unless one is
//   queued already; all of it commits with the check's end. The chain is one
//   keyed job for the cluster, seeded at server start when none is queued
//   (ensureDigestCheck) and again after a check fails for good.
// - digest_email: up to 30 users of one organization. Each user still owed a
//   digest is marked sent in user_digests (a conditional upsert, so two runs
//   never both win) before the email goes out: a retry or a second job sends
//   nothing twice; an email that could be neither sent nor filed in the
//   outbox is lost for that week rather than sent twice.
import type { Kysely } from "kysely";
import { unsubscribeUrl } from "../actions/email-unsubscribe.ts";
import {
  DIGEST_CUTOFF_DAYS,
  DIGEST_USERS_PER_JOB,
  SAMPLE_MESSAGES,
  digestEmail,
  digestWeekday,
  enoughTraffic,
  firstCheckAt,
  hotTopics,
  nextCheckAt,
  utcDay,
  type DigestConversation,
  type DigestTopic,
} from "../domain/digest.ts";
import { messageLinkUrl } from "../domain/message-links.ts";
import { canAccessAllUsers, parseRealmSettings } from "../domain/realm-settings.ts";
import { isGuest } from "../domain/roles.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { DIGEST_CHECK_JOB, DIGEST_CHECK_JOB_KEY, DIGEST_EMAIL_JOB, type DigestCheckJob, type DigestEmailJob } from "../jobs/names.ts";
import { enqueueJob, enqueueJobs } from "../jobs/queue.ts";
import type { JobRunner, Worker } from "../jobs/runner.ts";
import { sendEmail } from "../mail.ts";
import { encodeChannel } from "../markdown/links.ts";
import { groupIdsOfUser } from "../queries/user-groups.ts";
import type { Services } from "../services.ts";
import type { Database } from "../storage/schema.ts";

type Db = Kysely<Database>;

/** Registers the digest workers on `runner`. */
export function registerDigestWorkers(runner: JobRunner, services: Services, log: (error: unknown, what: string) => void): void {
  runner.register(DIGEST_CHECK_JOB, checkWorker(services, log));
  // One at a time: digests are no hurry, and the message reads they make are the heaviest of any job.
  runner.register(DIGEST_EMAIL_JOB, { ...emailWorker(services, log), concurrency: 1, leaseMs: 10 * 60_000 });
}

/** Queues the next digest check unless one is queued (or running) already. */
async function queueCheckUnlessQueued(trx: Db, services: Services, pending: { afterCommit(c: () => void): void }, runAt: number, notBefore: number): Promise<void> {
  const queued = await trx.selectFrom("jobs").select("id").where("name", "=", DIGEST_CHECK_JOB).where("status", "<>", "failed").where("run_at", ">=", notBefore).executeTakeFirst();
  if (queued) return;
  const payload: DigestCheckJob = { day: utcDay(runAt) };
  await enqueueJob(trx, pending, services, DIGEST_CHECK_JOB, payload, { key: DIGEST_CHECK_JOB_KEY, runAt });
}

/**
 * Seeds the daily check at server start when no check is queued, for the
 * next check time. Two processes starting together may both seed; their
 * checks share a key, so they run one after the other and the second finds
 * the day done and the next day's check queued.
 */
export async function ensureDigestCheck(services: Services): Promise<void> {
  const afterCommit: (() => void)[] = [];
  await services.storage.db.transaction().execute(async (trx) => {
    await queueCheckUnlessQueued(trx, services, { afterCommit: (c) => afterCommit.push(c) }, firstCheckAt(services.nowMs()), 0);
  });
  for (const c of afterCommit) c();
}

function checkWorker(services: Services, log: (error: unknown, what: string) => void): Worker<DigestCheckJob> {
  return {
    run: async (_payload, job) => {
      const db = services.storage.db;
      const nowMs = services.nowMs();
      const day = utcDay(nowMs);
      const weekday = digestWeekday(nowMs);
      const cutoff = Math.floor(nowMs / 1000) - DIGEST_CUTOFF_DAYS * 86_400;
      const afterCommit: (() => void)[] = [];
      const pending = { afterCommit: (c: () => void) => afterCommit.push(c) };
      await db.transaction().execute(async (trx) => {
        const first = await trx.insertInto("digest_days").values({ day, checked_at: nowMs }).onConflict((oc) => oc.column("day").doNothing()).returning("day").execute();
        if (first.length > 0) {
          const realms = await trx.selectFrom("realms").select(["id", "settings"]).where("deactivated", "=", false).execute();
          for (const realm of realms) {
            const settings = parseRealmSettings(realm.settings);
            if (!settings.digest_emails_enabled || settings.digest_weekday !== weekday) continue;
            const userIds = await digestCandidates(trx, realm.id, cutoff);
            const jobs: { name: string; payload: DigestEmailJob }[] = [];
            for (let i = 0; i < userIds.length; i += DIGEST_USERS_PER_JOB) {
              const payload: DigestEmailJob = { realm_id: realm.id, user_ids: userIds.slice(i, i + DIGEST_USERS_PER_JOB), cutoff };
              jobs.push({ name: DIGEST_EMAIL_JOB, payload });
            }
            await enqueueJobs(trx, pending, services, jobs);
          }
        }
        // A check queued for a later day already (a second chain's, or this chain's re-seed) carries on instead.
        const next = nextCheckAt(nowMs);
        await queueCheckUnlessQueued(trx, services, pending, next, next);
        await job.completeIn(trx);
      });
      for (const c of afterCommit) c();
    },
    onFailure: async () => {
      // The chain must not end with a failed check: tomorrow's is queued (today's, if it never ran, is lost).
      try {
        const afterCommit: (() => void)[] = [];
        await services.storage.db.transaction().execute(async (trx) => {
          const next = nextCheckAt(services.nowMs());
          await queueCheckUnlessQueued(trx, services, { afterCommit: (c) => afterCommit.push(c) }, next, next);
        });
        for (const c of afterCommit) c();
      } catch (error) {
        log(error, "queueing the next digest check failed");
      }
    },
  };
}

/**
 * Zulip's _enqueue_emails_for_realm: active people (not bots) with digests on,
 * not active since the cutoff and not sent a digest since it. Zulip's
 * "active" is UserActivityInterval; Parley's closest record is presence's
 * last_active_time. Someone who joined after the cutoff is left out too: in
 * Zulip signing up is activity, and a newcomer has their welcome emails.
 */
async function digestCandidates(db: Db, realmId: number, cutoff: number): Promise<number[]> {
  const rows = await db
    .selectFrom("users")
    .leftJoin("user_presence", "user_presence.user_id", "users.id")
    .leftJoin("user_digests", "user_digests.user_id", "users.id")
    .select(["users.id", "users.settings"])
    .where("users.realm_id", "=", realmId)
    .where("users.is_active", "=", true)
    .where("users.is_bot", "=", false)
    .where("users.date_joined", "<=", cutoff)
    .where((eb) => eb.or([eb("user_presence.last_active_time", "is", null), eb("user_presence.last_active_time", "<=", cutoff)]))
    .where((eb) => eb.or([eb("user_digests.last_sent_at", "is", null), eb("user_digests.last_sent_at", "<=", cutoff)]))
    .orderBy("users.id")
    .execute();
  return rows.filter((r) => parseUserSettings(r.settings).enable_digest_emails).map((r) => r.id);
}

interface RealmFacts {
  id: number;
  name: string;
  settings: ReturnType<typeof parseRealmSettings>;
  /** Channels created since the cutoff, not archived. */
  newChannels: { id: number; name: string; invite_only: boolean; is_web_public: boolean }[];
  /** People (not bots) who joined since the cutoff and are still active. */
  newUsers: { id: number; full_name: string }[];
  /** The last message sent before the cutoff: later ones have greater IDs. */
  lastOldMessageId: number;
}

async function realmFacts(db: Db, realmId: number, cutoff: number): Promise<RealmFacts | undefined> {
  const realm = await db.selectFrom("realms").select(["id", "name", "settings", "deactivated"]).where("id", "=", realmId).executeTakeFirst();
  if (!realm || realm.deactivated) return undefined;
  const newChannels = await db
    .selectFrom("channels")
    .select(["id", "name", "invite_only", "is_web_public"])
    .where("realm_id", "=", realmId)
    .where("date_created", ">", cutoff)
    .where("is_archived", "=", false)
    .orderBy("id")
    .execute();
  const newUsers = await db
    .selectFrom("users")
    .select(["id", "full_name"])
    .where("realm_id", "=", realmId)
    .where("date_joined", ">", cutoff)
    .where("is_active", "=", true)
    .where("is_bot", "=", false)
    .orderBy("id")
    .execute();
  // Walks back from the newest message over the digest's days only (messages_realm index), not the whole history.
  const old = await db.selectFrom("messages").select("id").where("realm_id", "=", realmId).where("date_sent", "<=", cutoff).orderBy("id", "desc").limit(1).executeTakeFirst();
  return { id: realm.id, name: realm.name, settings: parseRealmSettings(realm.settings), newChannels, newUsers, lastOldMessageId: old?.id ?? 0 };
}

/**
 * The user's topics since the cutoff, in the channels they are subscribed to
 * and have not muted (Zulip's get_user_stream_map), from the messages they
 * received: so a private channel's history from before they joined, or a
 * channel they are not in, never shows.
 */
async function recentTopics(db: Db, userId: number, realm: RealmFacts, cutoff: number): Promise<DigestTopic[]> {
  const rows = await db
    .selectFrom("user_messages")
    .innerJoin("messages", "messages.id", "user_messages.message_id")
    .innerJoin("subscriptions", (j) => j.onRef("subscriptions.channel_id", "=", "messages.channel_id").onRef("subscriptions.user_id", "=", "user_messages.user_id"))
    .innerJoin("channels", "channels.id", "messages.channel_id")
    .innerJoin("users", "users.id", "messages.sender_id")
    .select(["messages.id", "messages.channel_id", "messages.topic", "messages.topic_key", "channels.name as channel_name", "users.full_name", "users.is_bot"])
    .where("user_messages.user_id", "=", userId)
    .where("user_messages.message_id", ">", realm.lastOldMessageId)
    .where("messages.date_sent", ">", cutoff)
    .where("subscriptions.active", "=", true)
    .where("subscriptions.is_muted", "=", false)
    .where("channels.is_archived", "=", false)
    .orderBy("messages.id")
    .execute();
  const topics = new Map<string, DigestTopic>();
  for (const r of rows) {
    const key = `${r.channel_id}:${r.topic_key}`;
    let topic = topics.get(key);
    if (!topic) {
      topic = { channelId: r.channel_id!, channelName: r.channel_name, topic: r.topic, sampleIds: [], humanSenders: new Set(), humanMessages: 0 };
      topics.set(key, topic);
    }
    if (topic.sampleIds.length < SAMPLE_MESSAGES) topic.sampleIds.push(r.id);
    if (!r.is_bot) {
      topic.humanSenders.add(r.full_name);
      topic.humanMessages += 1;
    }
  }
  return [...topics.values()];
}

/** Zulip's get_new_messages_count: messages by people (not bots) the user received since the cutoff. */
async function newMessagesCount(db: Db, userId: number, realm: RealmFacts, cutoff: number): Promise<number> {
  const row = await db
    .selectFrom("user_messages")
    .innerJoin("messages", "messages.id", "user_messages.message_id")
    .innerJoin("users", "users.id", "messages.sender_id")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("user_messages.user_id", "=", userId)
    .where("user_messages.message_id", ">", realm.lastOldMessageId)
    .where("messages.date_sent", ">", cutoff)
    .where("users.is_bot", "=", false)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function conversationsOf(db: Db, services: Services, topics: readonly DigestTopic[]): Promise<DigestConversation[]> {
  const ids = topics.flatMap((t) => t.sampleIds);
  if (ids.length === 0) return [];
  const messages = new Map(
    (
      await db
        .selectFrom("messages")
        .innerJoin("users", "users.id", "messages.sender_id")
        .select(["messages.id", "messages.rendered_content", "users.full_name"])
        .where("messages.id", "in", ids)
        .execute()
    ).map((m) => [m.id, m]),
  );
  return topics.map((t) => ({
    channelName: t.channelName,
    topic: t.topic,
    url: messageLinkUrl(services.config.externalUrl, t.sampleIds[0]!, { channel: { id: t.channelId, name: t.channelName }, topic: t.topic }),
    messages: t.sampleIds.flatMap((id) => {
      const m = messages.get(id);
      return m ? [{ senderName: m.full_name, html: m.rendered_content }] : [];
    }),
    moreCount: Math.max(0, t.humanMessages - t.sampleIds.length),
    participants: [...t.humanSenders].sort(),
  }));
}

function emailWorker(services: Services, log: (error: unknown, what: string) => void): Worker<DigestEmailJob> {
  const { config } = services;
  return {
    run: async ({ realm_id, user_ids, cutoff }) => {
      const db = services.storage.db;
      const realm = await realmFacts(db, realm_id, cutoff);
      if (!realm || user_ids.length === 0) return;
      const users = await db
        .selectFrom("users")
        .select(["id", "role", "delivery_email", "settings", "is_active", "is_bot"])
        .where("realm_id", "=", realm_id)
        .where("id", "in", user_ids)
        .orderBy("id")
        .execute();
      for (const user of users) {
        const settings = parseUserSettings(user.settings);
        // Turned off or deactivated since the check: nothing.
        if (!user.is_active || user.is_bot || !settings.enable_digest_emails) continue;
        const showContent = realm.settings.message_content_allowed_in_email_notifications && settings.message_content_in_email_notifications;
        const hiddenBy = !realm.settings.message_content_allowed_in_email_notifications ? "realm" : !settings.message_content_in_email_notifications ? "user" : undefined;
        // Zulip's gather_new_streams: public channels, or web-public ones only for guests (who cannot see the others).
        const guest = isGuest(user.role);
        const newChannels = realm.newChannels
          .filter((c) => (guest ? c.is_web_public : !c.invite_only))
          .map((c) => ({ name: c.name, url: `${config.externalUrl}/#narrow/channel/${encodeChannel(c.id, c.name)}` }));
        const seesEveryone = !guest || canAccessAllUsers(realm.settings, { id: user.id, role: user.role, groupIds: await groupIdsOfUser(db, user.id) });
        const newUsers = seesEveryone ? realm.newUsers.filter((u) => u.id !== user.id).map((u) => u.full_name) : [];
        const conversations = showContent ? await conversationsOf(db, services, hotTopics(await recentTopics(db, user.id, realm, cutoff))) : [];
        const newMessages = showContent ? 0 : await newMessagesCount(db, user.id, realm, cutoff);
        if (!enoughTraffic({ showContent, conversations, newMessagesCount: newMessages, newChannels })) continue;
        // The mark first: of two runs for this user (a retry, a repeated check) only one gets the row.
        const now = services.now();
        const marked = await db
          .insertInto("user_digests")
          .values({ user_id: user.id, last_sent_at: now })
          .onConflict((oc) => oc.column("user_id").doUpdateSet({ last_sent_at: now }).where("user_digests.last_sent_at", "<=", cutoff))
          .returning("user_id")
          .execute();
        if (marked.length === 0) continue;
        const unsubscribe = await unsubscribeUrl(services, "digest", user.id);
        const content = digestEmail({
          realmName: realm.name,
          externalUrl: config.externalUrl,
          showContent,
          ...(hiddenBy ? { hiddenBy } : {}),
          conversations,
          newMessagesCount: newMessages,
          newChannels,
          newUsers,
          unsubscribeUrl: unsubscribe,
          settingsUrl: `${config.externalUrl}/#settings/notifications`,
        });
        try {
          await sendEmail(
            config,
            { to: user.delivery_email, ...content, headers: { "List-Unsubscribe": `<${unsubscribe}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" }, kind: "digest" },
            { warn: (obj, msg) => log(obj, msg) },
          );
        } catch (error) {
          // Neither sent nor filed: this week's digest is lost, the others in the job still go.
          log(error, `digest email to user ${user.id} could not be sent or filed`);
        }
      }
    },
  };
}
