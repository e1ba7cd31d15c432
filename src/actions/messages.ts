// Sending messages (POST /messages, and later scheduled delivery and bots):
// resolve the conversation, check every rule, render the Markdown, then one
// transaction writes the message, its recipients' flag rows and its
// attachment links; the `message` events go out after the commit.
import { sql, type Insertable, type Kysely } from "kysely";
import { containsAlertWord, visibleText } from "../domain/alert-words.ts";
import { checkCanPost, hasContentAccess } from "../domain/channels.ts";
import { hasPermission, type Actor } from "../domain/group-settings.ts";
import { flagNames, Flag } from "../domain/message-flags.ts";
import {
  checkTopic,
  checkTopicAllowed,
  defaultReadBySender,
  dmHash,
  dmKey,
  effectiveTopicsPolicy,
  normalizeContent,
  parseChannelIndicator,
  parseDirectRecipients,
  RecipientType,
  streamWildcardNotAllowed,
  topicWildcardNotAllowed,
  VisibilityPolicy,
  WILDCARD_MENTION_THRESHOLD,
} from "../domain/messages.ts";
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from "../domain/limits.ts";
import { OUTGOING_WEBHOOK_BOT, serviceBotTriggers } from "../domain/outgoing-webhooks.ts";
import { canAccessAllUsers, parseRealmSettings, REALM_GROUP_SETTING_RULES, type RealmSettings } from "../domain/realm-settings.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import { USER_GROUP_SETTING_RULES } from "../domain/user-groups.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { escapeHtml } from "../domain/text.ts";
import { parseWidgetContent, pythonJsonDumps, widgetFromContent } from "../domain/widgets.ts";
import { ApiError, badRequest } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { renderMarkdown, type RenderedMessage } from "../markdown/render.ts";
import { alertWordsByUser } from "../queries/alert-words.ts";
import { attachmentObjects, canAccessAttachment, uploadSpaceUsed } from "../queries/attachments.ts";
import { channelFacts } from "../queries/channels.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { markdownContextFor } from "../queries/markdown-context.ts";
import type { MarkdownContext } from "../markdown/render.ts";
import { formatMessage, orderDisplayRecipient, visibleTopicMessages, type ApiSubmessage, type MessageLookups } from "../queries/messages.ts";
import { notificationRecipientFacts } from "../queries/notification-recipients.ts";
import { sendFacts, type SendFacts } from "../queries/send-facts.ts";
import { recursiveMemberIds } from "../queries/user-groups.ts";
import { cachedUserById, usersSharingAConversation } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId, type Storage } from "../storage/database.ts";
import { copyRows } from "../storage/row-cache.ts";
import type { Attachment, Channel, Database, MessageTable, Realm, User } from "../storage/schema.ts";
import { preparedQuery } from "../storage/compiled.ts";
import { actorFor, cachedActorFor } from "./actor.ts";
import { inRealmTransaction, type SharedWrite, type Trx } from "./transaction.ts";
import { enqueueLinkPreviews, linkPreviewsOn } from "./link-previews.ts";
import { PUSH_MESSAGE_JOB, type PushMessageJob } from "../jobs/names.ts";
import { missedMessageEmailsOwed, owedEmailArrays, withOwedEmailWrites, writeMissedMessageEmails, type OwedEmail, type OwedEmailArrays } from "./missed-message-emails.ts";
import { enqueueJob, wakeAfterCommit } from "../jobs/queue.ts";
import { pushCandidates, pushMessageOf } from "../domain/push.ts";
import { notificationCandidates } from "../domain/notifications.ts";
import { enqueueOutgoingWebhooks } from "./outgoing-webhooks.ts";
import { setVisibilityPolicy } from "./user-topics.ts";

type Db = Kysely<Database> | Trx;

export interface SendRequest {
  kind: "channel" | "direct";
  /** `to` as the client sent it (name, ID, JSON list, comma-separated emails). */
  to: string | undefined;
  content: string;
  topic: string | undefined;
  queueId?: string | undefined;
  localId?: string | undefined;
  readBySender?: boolean | undefined;
  clientName: string;
  /** A message the server itself sends (Notification Bot): no posting, direct-message or mention permission checks. */
  internal?: boolean;
  /** Recipients whose flags row starts read (Zulip's mark_as_read_for_acting_user and resolve-notice rules). */
  readBy?: ReadonlySet<number> | undefined;
  /** JSON text of an explicit widget (Zulip's undocumented widget_content); overrides a /poll or /todo in the content. */
  widgetContent?: string | undefined;
  /**
   * An outgoing-webhook bot's reply in the conversation that triggered it:
   * no check that the bot may post in the channel (Zulip's skip_stream_access_check).
   */
  skipChannelAccessCheck?: boolean;
}

export interface SendResult {
  id: number;
  automatic_new_visibility_policy?: number;
}

interface RecipientUser {
  id: number;
  email: string;
  full_name: string;
  is_active: boolean;
  is_bot: boolean;
  avatar_version: number;
}

/** Who gets a flags row, and the conversation's recipient row. */
interface Conversation {
  recipientId: number;
  channel: Channel | null;
  topic: string;
  /** Users who receive the message (get a flags row and a `message` event). */
  recipients: RecipientUser[];
  /** Direct messages: every participant, for display_recipient. */
  participants: RecipientUser[];
  /** Direct messages: the outgoing-webhook bots among the recipients, the sender excepted. */
  outgoingBotIds?: number[];
}

// No settings: reading every subscriber's settings JSON was a large part of a send to a big channel.
const RECIPIENT_COLUMNS = ["users.id", "users.email", "users.full_name", "users.is_active", "users.is_bot", "users.avatar_version"] as const;

// The statements of every channel send, compiled once (storage/compiled.ts): building and compiling
// their query trees anew was about a tenth of a send's CPU.
const channelById = preparedQuery((db, a: { realmId: number; id: number }) => db.selectFrom("channels").selectAll().where("realm_id", "=", a.realmId).where("id", "=", a.id));
const channelByNameKey = preparedQuery((db, a: { realmId: number; nameKey: string }) =>
  db.selectFrom("channels").selectAll().where("realm_id", "=", a.realmId).where("name_key", "=", a.nameKey),
);
const activeSubscribers = preparedQuery((db, a: { channelId: number }) =>
  db
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select(RECIPIENT_COLUMNS)
    .where("subscriptions.channel_id", "=", a.channelId)
    .where("subscriptions.active", "=", true)
    .where("users.is_active", "=", true),
);
// Outside a transaction, the channel and its active subscribers come from the process's row cache
// (storage/row-cache.ts), dropped by any committed change to channels, subscriptions or users.
// Inside one they are read: a transaction sees its own writes, and the cache must never hold them.
function channelWithId(storage: Storage, db: Db, realmId: number, id: number): Promise<Channel | undefined> {
  const load = () => channelById.executeTakeFirst(db, { realmId, id });
  return db.isTransaction ? load() : storage.rows.read(`channel ${realmId} ${id}`, ["channels"], load);
}
function channelWithNameKey(storage: Storage, db: Db, realmId: number, nameKey: string): Promise<Channel | undefined> {
  const load = () => channelByNameKey.executeTakeFirst(db, { realmId, nameKey });
  return db.isTransaction ? load() : storage.rows.read(`channel-name ${realmId} ${nameKey}`, ["channels"], load);
}
async function activeSubscribersOf(storage: Storage, db: Db, channelId: number): Promise<RecipientUser[]> {
  const load = () => activeSubscribers.execute(db, { channelId });
  if (db.isTransaction) return load();
  return (await storage.rows.read(`subscribers ${channelId}`, ["subscriptions", "users"], load, copyRows))!;
}
type NewMessage = Omit<Insertable<MessageTable>, "id" | "has_attachment" | "has_image" | "has_link"> & { has_attachment: boolean; has_image: boolean; has_link: boolean };
/** A new message's columns, as both databases' inserts write them. */
const MESSAGE_COLUMN_NAMES = [
  "realm_id",
  "sender_id",
  "recipient_id",
  "channel_id",
  "topic",
  "topic_key",
  "content",
  "rendered_content",
  "date_sent",
  "sending_client",
  "last_edit_time",
  "last_moved_time",
  "edit_history",
  "has_attachment",
  "has_image",
  "has_link",
] as const satisfies readonly (keyof NewMessage)[];
// Every column of a new message is listed (a compile error names the one missing).
const everyMessageColumn: Exclude<keyof NewMessage, (typeof MESSAGE_COLUMN_NAMES)[number]> extends never ? true : never = true;
void everyMessageColumn;
/** A new message's row, as both databases' inserts write it (the prepared query's placeholders stand for each column). */
const messageValues = (a: Required<NewMessage>): Required<NewMessage> => Object.fromEntries(MESSAGE_COLUMN_NAMES.map((c) => [c, a[c]])) as Required<NewMessage>;
const insertMessageSqlite = preparedQuery((db, a: Required<NewMessage>) => db.insertInto("messages").values(messageValues(a)).returning("id"));
/** A message's row, its flags rows and the emails it owes: what one send writes first on PostgreSQL. */
interface MessageWrite {
  row: Required<NewMessage>;
  flagsByUser: ReadonlyMap<number, number>;
  owedEmails: readonly OwedEmail[];
  /** UNIX ms, when the send was checked: the email jobs' created_at (the batch's latest). */
  now: number;
}
type MessageArrays = { [K in keyof Required<NewMessage> as `${K}s`]: Required<NewMessage>[K][] };
const messageArrays = (rows: readonly Required<NewMessage>[]): MessageArrays =>
  Object.fromEntries(MESSAGE_COLUMN_NAMES.map((c) => [`${c}s`, rows.map((r) => r[c])])) as MessageArrays;
// PostgreSQL: the messages of a batch of sends, their flags rows and the emails they owe in one
// statement (one round trip while the organization's lock is held, whatever the batch's size). The IDs
// are drawn in the batch's order before the rows are written, so message IDs follow the order the
// callers are told in; `ord` ties each flags row and owed email to its message. The flags rows' key
// checks run at the statement's end, when the messages are there; with no email owed, the email parts
// read and write nothing.
const MESSAGE_COLUMNS = sql.raw(MESSAGE_COLUMN_NAMES.join(", "));
const insertMessagesPostgres = preparedQuery((db, a: MessageArrays & { flagOrds: number[]; userIds: number[]; flags: number[] } & OwedEmailArrays) =>
  withOwedEmailWrites(
    db
      .with(
        "input",
        () => sql`(SELECT ${MESSAGE_COLUMNS}, ord FROM unnest(
          ${a.realm_ids}::integer[], ${a.sender_ids}::integer[], ${a.recipient_ids}::integer[], ${a.channel_ids}::integer[],
          ${a.topics}::text[], ${a.topic_keys}::text[], ${a.contents}::text[], ${a.rendered_contents}::text[], ${a.date_sents}::bigint[],
          ${a.sending_clients}::text[], ${a.last_edit_times}::bigint[], ${a.last_moved_times}::bigint[], ${a.edit_historys}::text[],
          ${a.has_attachments}::boolean[], ${a.has_images}::boolean[], ${a.has_links}::boolean[]
        ) WITH ORDINALITY AS t(${MESSAGE_COLUMNS}, ord))`,
      )
      // Materialized (it is volatile and read three times): each message's ID is drawn once, in order.
      .with("ids", () => sql`(SELECT nextval(pg_get_serial_sequence('messages', 'id'))::integer AS id, ord FROM (SELECT ord FROM input ORDER BY ord) o)`)
      .with("m", () => sql`(INSERT INTO messages (id, ${MESSAGE_COLUMNS}) SELECT ids.id, ${MESSAGE_COLUMNS} FROM input JOIN ids USING (ord))`)
      .with(
        "f",
        () => sql`(INSERT INTO user_messages (user_id, message_id, flags)
          SELECT t.u, ids.id, t.f FROM unnest(${a.flagOrds}::bigint[], ${a.userIds}::integer[], ${a.flags}::integer[]) AS t(o, u, f) JOIN ids ON ids.ord = t.o)`,
      ),
    a,
  )
    .selectFrom("ids")
    .select(["ids.id", (eb) => eb.selectFrom("email_jobs").select((e) => e.fn.countAll<number>().as("n")).as("email_jobs")])
    .orderBy("ids.ord"),
);
const messageWrite = (services: Services, row: Required<NewMessage>, notices: Pick<MessageWrite, "flagsByUser" | "owedEmails">): MessageWrite => ({
  row,
  flagsByUser: notices.flagsByUser,
  owedEmails: notices.owedEmails,
  now: services.nowMs(),
});
interface MessageWritten {
  id: number;
  /** Jobs were queued for missed-message emails (by this statement, for any of its messages). */
  emailJobs: boolean;
}
/** A batch's message writes in one statement; each send gets its message's ID, and whether jobs were queued for emails. */
const messageWritesPostgres: SharedWrite<MessageWrite, MessageWritten> = {
  async run(trx, writes) {
    const flagOrds: number[] = [];
    const userIds: number[] = [];
    const flags: number[] = [];
    writes.forEach((w, k) => {
      for (const [userId, bits] of w.flagsByUser) {
        flagOrds.push(k + 1);
        userIds.push(userId);
        flags.push(bits);
      }
    });
    const rows = await insertMessagesPostgres.execute(trx, {
      ...messageArrays(writes.map((w) => w.row)),
      flagOrds,
      userIds,
      flags,
      ...owedEmailArrays(
        writes.map((w) => w.owedEmails),
        Math.max(...writes.map((w) => w.now)),
      ),
    });
    if (rows.length !== writes.length) throw new Error(`${writes.length} messages written, ${rows.length} IDs returned`);
    return rows.map((r) => ({ id: r.id, emailJobs: Number(r.email_jobs) > 0 }));
  },
};
const insertFlagRowsSqlite = preparedQuery(
  (_db, a: { messageId: number; rows: string }) =>
    sql<never>`INSERT INTO user_messages (user_id, message_id, flags) SELECT json_extract(value, '$[0]'), ${a.messageId}, json_extract(value, '$[1]') FROM json_each(${a.rows})`,
);

/** Channel recipient rows never change, so they are cached for the life of the process. */
const channelRecipientCaches = new WeakMap<Storage, Map<number, number>>();

export async function recipientIdFor(storage: Storage, db: Db, realmId: number, target: { channelId: number } | { dmKey: string }): Promise<number> {
  // One cache per database: a process may open several (tests do).
  let cache = channelRecipientCaches.get(storage);
  if (!cache) channelRecipientCaches.set(storage, (cache = new Map()));
  if ("channelId" in target) {
    const cached = cache.get(target.channelId);
    if (cached !== undefined) return cached;
  }
  const find = () =>
    "channelId" in target
      ? db.selectFrom("recipients").select("id").where("channel_id", "=", target.channelId).executeTakeFirst()
      : db.selectFrom("recipients").select("id").where("realm_id", "=", realmId).where("dm_hash", "=", dmHash(target.dmKey)).executeTakeFirst();
  let row = await find();
  if (!row) {
    // Several processes may create it at once; the unique index keeps one.
    await db
      .insertInto("recipients")
      .values(
        "channelId" in target
          ? { realm_id: realmId, type: RecipientType.CHANNEL, channel_id: target.channelId, dm_key: null, dm_hash: null }
          : { realm_id: realmId, type: RecipientType.DIRECT, channel_id: null, dm_key: target.dmKey, dm_hash: dmHash(target.dmKey) },
      )
      .onConflict((oc) => oc.doNothing())
      .execute();
    row = await find();
  }
  // A row created inside a transaction may yet be rolled back: cache only what is committed.
  if ("channelId" in target && !db.isTransaction) cache.set(target.channelId, row!.id);
  return row!.id;
}

async function botOwnerActor(storage: Storage, db: Db, sender: User): Promise<Actor | undefined> {
  if (!sender.is_bot || sender.bot_owner_id === null) return undefined;
  const owner = db.isTransaction
    ? await db.selectFrom("users").select(["id", "role", "is_active"]).where("id", "=", sender.bot_owner_id).executeTakeFirst()
    : await cachedUserById(storage, sender.realm_id, sender.bot_owner_id);
  return owner?.is_active ? cachedActorFor(storage, owner, db) : undefined;
}

async function channelConversation(storage: Storage, db: Db, realm: Realm, settings: Readonly<RealmSettings>, sender: User, actor: Actor, request: SendRequest): Promise<Conversation> {
  // Without `to`, a bot posts to its default channel (Zulip's Addressee.legacy_build).
  if (request.to === undefined && sender.default_sending_stream_id === null) throw badRequest("Missing channel");
  const indicator = request.to === undefined ? sender.default_sending_stream_id! : parseChannelIndicator(request.to);
  let channel: Channel | undefined;
  if (typeof indicator === "number") {
    channel = isStorableId(indicator) ? await channelWithId(storage, db, realm.id, indicator) : undefined;
    if (!channel) throw new ApiError(400, "STREAM_DOES_NOT_EXIST", `Channel with ID '${indicator}' does not exist`, { stream_id: indicator });
  } else {
    channel = await channelWithNameKey(storage, db, realm.id, indicator.trim().toLowerCase());
    if (!channel) {
      const name = escapeHtml(indicator);
      throw new ApiError(400, "STREAM_DOES_NOT_EXIST", `Channel '${name}' does not exist`, { stream: name });
    }
  }
  if (request.topic === undefined) throw badRequest("Missing topic");
  const topic = checkTopic(request.topic, settings.empty_topic_display_name, MAX_TOPIC_LENGTH);

  const subscriberRows = await activeSubscribersOf(storage, db, channel.id);
  const subscribed = subscriberRows.some((u) => u.id === sender.id);
  const owner = await botOwnerActor(storage, db, sender);
  const facts = { ...channelFacts(channel), name: channel.name };
  // A bot may post wherever its owner may read (Zulip lets bots post to their owner's private channels).
  const ownerSubscribed = owner !== undefined && subscriberRows.some((u) => u.id === owner.id);
  // An outgoing-webhook reply skips the posting checks, but an archived channel takes no messages at all.
  if (request.skipChannelAccessCheck && channel.is_archived) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
  if (!request.internal && !request.skipChannelAccessCheck) checkCanPost(actor, facts, subscribed || (owner !== undefined && ownerSubscribed && hasContentAccess(owner, facts, true)), owner);
  checkTopicAllowed(topic, effectiveTopicsPolicy(channel.topics_policy, settings.topics_policy), settings.empty_topic_display_name);

  const recipientId = await recipientIdFor(storage, db, realm.id, { channelId: channel.id });
  return { recipientId, channel, topic, recipients: subscriberRows, participants: [] };
}

async function directConversation(storage: Storage, db: Db, realm: Realm, settings: Readonly<RealmSettings>, sender: User, actor: Actor, request: SendRequest): Promise<Conversation> {
  const parsed = request.to === undefined ? { ids: [] } : parseDirectRecipients(request.to);
  const select = db.selectFrom("users").select(RECIPIENT_COLUMNS).select(["users.is_system_bot", "users.email_key", "users.bot_type"]).where("users.realm_id", "=", realm.id);
  let users: (RecipientUser & { is_system_bot: boolean; email_key: string; bot_type: number | null })[];
  if ("ids" in parsed) {
    const storable = parsed.ids.filter(isStorableId);
    const rows = [];
    for (const chunk of inChunks(storable)) rows.push(...(await select.where("users.id", "in", chunk).execute()));
    const found = new Set(rows.map((r) => r.id));
    for (const id of parsed.ids) if (!found.has(id)) throw badRequest(`Invalid user ID ${id}`);
    users = rows;
  } else {
    const keys = parsed.emails.map((e) => e.toLowerCase());
    const rows = [];
    for (const chunk of inChunks(keys)) rows.push(...(await select.where("users.email_key", "in", chunk).execute()));
    const found = new Set(rows.map((r) => r.email_key));
    for (const email of parsed.emails) if (!found.has(email.toLowerCase())) throw badRequest(`Invalid email '${email}'`);
    users = rows;
  }
  if (users.length === 0) throw badRequest("Message must have recipients");
  for (const user of users) {
    // Messages to deactivated bots are still refused; system bots cannot be written to.
    if (!user.is_active || user.is_system_bot) throw badRequest(`'${user.email}' is no longer using Zulip.`);
  }

  if (!request.internal) await checkCanAccessRecipients(db, realm.id, settings, sender, actor, users.map((u) => u.id));
  const participants = new Map<number, RecipientUser>([[sender.id, sender], ...users.map((u) => [u.id, u] as const)]);
  const key = dmKey(participants.keys());
  if (!request.internal) await checkDirectMessagePermission(db, realm.id, settings, sender, actor, [...participants.values()], key);
  const recipientId = await recipientIdFor(storage, db, realm.id, { dmKey: key });
  const sorted = [...participants.values()].sort((a, b) => a.id - b.id);
  const outgoingBotIds = users.filter((u) => u.id !== sender.id && u.bot_type === OUTGOING_WEBHOOK_BOT).map((u) => u.id);
  return { recipientId, channel: null, topic: "", recipients: sorted, participants: sorted, outgoingBotIds };
}

/**
 * Zulip's direct-message policies (check_can_send_direct_message): someone in
 * the conversation must be in direct_message_permission_group, and starting a
 * new conversation needs direct_message_initiator_group. Bots, messages to
 * oneself and messages only to bots are exempt.
 */
async function checkDirectMessagePermission(
  db: Db,
  realmId: number,
  settings: Readonly<RealmSettings>,
  sender: User,
  actor: Actor,
  participants: readonly RecipientUser[],
  key: string,
): Promise<void> {
  const others = participants.filter((u) => u.id !== sender.id);
  if (sender.is_bot || others.every((u) => u.is_bot)) return;
  const permission = settings.direct_message_permission_group;
  const rule = REALM_GROUP_SETTING_RULES.direct_message_permission_group;
  if (!hasPermission(permission, rule, actor)) {
    const otherActors = await Promise.all(
      others.map(async (u) => actorFor(db, await db.selectFrom("users").select(["id", "role"]).where("id", "=", u.id).executeTakeFirstOrThrow())),
    );
    if (!otherActors.some((a) => hasPermission(permission, rule, a))) {
      const nobody = typeof permission === "number" && (await db.selectFrom("user_groups").select("name").where("id", "=", permission).executeTakeFirst())?.name === SystemGroup.NOBODY;
      throw badRequest(nobody ? "Direct messages are disabled in this organization." : "This conversation does not include any users who can authorize it.");
    }
  }
  if (!hasPermission(settings.direct_message_initiator_group, REALM_GROUP_SETTING_RULES.direct_message_initiator_group, actor)) {
    const existing = await db
      .selectFrom("messages")
      .innerJoin("recipients", "recipients.id", "messages.recipient_id")
      .select("messages.id")
      .where("recipients.realm_id", "=", realmId)
      .where("recipients.dm_hash", "=", dmHash(key))
      .limit(1)
      .executeTakeFirst();
    if (!existing) throw badRequest("You do not have permission to initiate direct message conversations.");
  }
}

/**
 * A guest outside can_access_all_users_group knows only the people they share
 * a channel or a direct-message conversation with (Zulip's
 * get_accessible_user_ids), and may write only to them.
 */
async function checkCanAccessRecipients(db: Db, realmId: number, settings: Readonly<RealmSettings>, sender: User, actor: Actor, recipientIds: number[]): Promise<void> {
  if (canAccessAllUsers(settings, actor)) return;
  const others = recipientIds.filter((id) => id !== sender.id);
  if (others.length === 0) return;
  const accessible = await usersSharingAConversation(db, sender.id, others);
  if (!others.every((id) => accessible.has(id))) throw badRequest("You do not have permission to access some of the recipients.");
}

/** Users among `userIds` whose alert words the rendered message's visible text contains. */
export async function alertedUsers(db: Db, userIds: readonly number[], html: string): Promise<Set<number>> {
  return alertedBy(await alertWordsByUser(db, userIds), html);
}

/** The users whose alert words (`alertWords`) the rendered message's visible text contains. */
function alertedBy(alertWords: ReadonlyMap<number, readonly string[]>, html: string): Set<number> {
  const alerted = new Set<number>();
  if (alertWords.size > 0) {
    const text = visibleText(html);
    for (const [userId, words] of alertWords) if (words.some((w) => containsAlertWord(text, w))) alerted.add(userId);
  }
  return alerted;
}

/** Users mentioned through groups, after checking the sender may mention each group. */
export async function groupMentionedUsers(db: Db, realmId: number, actor: Actor | null, groupIds: readonly number[]): Promise<Set<number>> {
  const users = new Set<number>();
  for (const groupId of groupIds) {
    const group = await db.selectFrom("user_groups").select(["id", "name", "can_mention_group"]).where("id", "=", groupId).where("realm_id", "=", realmId).executeTakeFirst();
    if (!group) continue;
    const setting = group.can_mention_group === null ? null : (JSON.parse(group.can_mention_group) as number | { direct_members: number[]; direct_subgroups: number[] });
    if (actor !== null && setting !== null && !hasPermission(setting, USER_GROUP_SETTING_RULES.can_mention_group, actor)) {
      throw badRequest(`You are not allowed to mention user group '${group.name}'.`);
    }
    for (const id of await recursiveMemberIds(db, group.id)) users.add(id);
  }
  return users;
}

/** People who took part in a topic: senders of its messages and reactors to them, and the sender (Zulip's participants_for_topic). */
export async function topicParticipants(db: Db, channelId: number, topicKey: string, senderId: number): Promise<Set<number>> {
  const senders = await db.selectFrom("messages").select("sender_id").distinct().where("channel_id", "=", channelId).where("topic_key", "=", topicKey).execute();
  const reactors = await db
    .selectFrom("reactions")
    .innerJoin("messages", "messages.id", "reactions.message_id")
    .select("reactions.user_id")
    .distinct()
    .where("messages.channel_id", "=", channelId)
    .where("messages.topic_key", "=", topicKey)
    .execute();
  return new Set([senderId, ...senders.map((r) => r.sender_id), ...reactors.map((r) => r.user_id)]);
}

export function checkWildcardMentions(rendered: RenderedMessage, settings: Readonly<RealmSettings>, actor: Actor, channelSubscribers: number, participants: ReadonlySet<number>): void {
  if (hasPermission(settings.can_mention_many_users_group, REALM_GROUP_SETTING_RULES.can_mention_many_users_group, actor)) return;
  if (rendered.channelWildcard && channelSubscribers > WILDCARD_MENTION_THRESHOLD) throw streamWildcardNotAllowed();
  if (rendered.topicWildcard && participants.size > WILDCARD_MENTION_THRESHOLD) throw topicWildcardNotAllowed();
}

/** Zulip's AutomaticallyChangeVisibilityPolicy values of the two personal settings. */
export const AutoPolicy = { ON_PARTICIPATION: 1, ON_SEND: 2, ON_INITIATION: 3, NEVER: 4 } as const;

/**
 * The sender's automatic topic visibility (Zulip's get_automatic_new_visibility_policy):
 * follow (or, in a muted channel, unmute) the topic on sending, or only when
 * starting it. Only ever raises visibility. Returns the new policy, if any.
 */
async function automaticVisibilityPolicy(
  db: Db,
  sender: User,
  actor: Actor,
  channel: Channel,
  topicKey: string,
  facts: Pick<SendFacts, "senderChannelMuted" | "senderTopicPolicy">,
): Promise<number | undefined> {
  if (sender.is_bot) return undefined;
  const settings = parseUserSettings(sender.settings);
  const follow = settings.automatically_follow_topics_policy;
  const unmute = settings.automatically_unmute_topics_in_muted_streams_policy;
  if (follow === AutoPolicy.NEVER && unmute === AutoPolicy.NEVER) return undefined;
  const channelMuted = facts.senderChannelMuted;
  const currentPolicy = facts.senderTopicPolicy;
  if (currentPolicy === VisibilityPolicy.FOLLOWED) return undefined;
  const onSend = (policy: number) => policy === AutoPolicy.ON_PARTICIPATION || policy === AutoPolicy.ON_SEND;
  let wanted: number | undefined;
  if (onSend(follow)) wanted = VisibilityPolicy.FOLLOWED;
  else if (channelMuted && onSend(unmute)) wanted = VisibilityPolicy.UNMUTED;
  // A topic with a policy already has messages, so it cannot be starting now.
  if (currentPolicy === VisibilityPolicy.INHERIT && wanted !== VisibilityPolicy.FOLLOWED && (follow === AutoPolicy.ON_INITIATION || (channelMuted && unmute === AutoPolicy.ON_INITIATION))) {
    if (await isTopicInitiation(db, actor, channel, topicKey)) {
      if (follow === AutoPolicy.ON_INITIATION) wanted = VisibilityPolicy.FOLLOWED;
      else wanted ??= VisibilityPolicy.UNMUTED;
    }
  }
  return wanted === undefined || wanted === currentPolicy ? undefined : wanted;
}

/** No message in the topic that the sender can see yet: all of it when they may read the channel's history, else their own rows. */
async function isTopicInitiation(db: Db, actor: Actor, channel: Channel, topicKey: string): Promise<boolean> {
  return (await (await visibleTopicMessages(db, actor, channel, topicKey)).select("m.id").limit(1).executeTakeFirst()) === undefined;
}

export async function sendMessage(services: Services, realm: Realm, sender: User, request: SendRequest): Promise<SendResult> {
  const prepared = await checkMessage(services, services.storage.db, realm, sender, request);
  const notices = await noticesOf(services, services.storage.db, sender, prepared);
  // writeMessage acts through the transaction and `pending` alone, so a batch of sends runs without
  // savepoints. On PostgreSQL the batch's messages are written by one statement before the bodies run.
  const lead = services.storage.dialect === "postgres" ? { write: messageWritesPostgres, params: messageWrite(services, prepared.newRow, notices) } : undefined;
  return inRealmTransaction(services, realm.id, (trx, pending, written) => writeMessage(services, trx, pending, written, realm, sender, request, prepared, notices), { rerunnable: true, lead });
}

/**
 * A send inside the caller's transaction, which must hold the organization's
 * lock: scheduled delivery commits the message together with its own
 * bookkeeping, so a message is sent exactly once or not at all.
 */
export async function sendMessageInTransaction(services: Services, trx: Trx, pending: PendingEvents, realm: Realm, sender: User, request: SendRequest): Promise<SendResult> {
  const prepared = await checkMessage(services, trx, realm, sender, request);
  return writeMessage(services, trx, pending, undefined, realm, sender, request, prepared, await noticesOf(services, trx, sender, prepared));
}

export type CheckedMessage = Awaited<ReturnType<typeof checkMessage>>;

/**
 * Every check and read a send needs before writing, on `db` (the root
 * database, or the caller's transaction); Zulip's check_message. Scheduling
 * uses it to refuse at once what could never be sent.
 */
export async function checkMessage(services: Services, db: Db, realm: Realm, sender: User, request: SendRequest) {
  if ((request.queueId === undefined) !== (request.localId === undefined)) {
    throw badRequest(request.queueId === undefined ? "Missing 'queue_id' argument" : "Missing 'local_id' argument");
  }
  const settings = parseRealmSettings(realm.settings);
  const actor = await cachedActorFor(services.storage, sender, db);
  const content = normalizeContent(request.content, MAX_MESSAGE_LENGTH);

  const conversation =
    request.kind === "channel"
      ? await channelConversation(services.storage, db, realm, settings, sender, actor, request)
      : await directConversation(services.storage, db, realm, settings, sender, actor, request);
  const { channel, topic } = conversation;
  const topicKey = topic.toLowerCase();
  // The widget submessage the message gets (Zulip's do_widget_post_save_actions); a look at the first character for most messages.
  const widget = request.widgetContent !== undefined ? parseWidgetContent(request.widgetContent) : widgetFromContent(content);

  const linkifiers = await compiledLinkifiersFor(services.storage, db, realm);
  const markdownContext = await markdownContextFor(db, services.config, realm.id, content, {
    translateEmoticons: parseUserSettings(sender.settings).translate_emoticons,
    inlineImagePreview: settings.inline_image_preview,
    linkifiers,
    // Notes the links that may get previews; they are made after the commit (actions/link-previews.ts).
    urlEmbedPreview: linkPreviewsOn(services, settings, sender),
  }, services.storage.rows);
  const rendered = renderMarkdown(content, markdownContext);
  // @**topic** reaches only the topic's participants (Zulip's topic_participant_user_ids).
  const participants = channel && rendered.topicWildcard ? await topicParticipants(db, channel.id, topicKey, sender.id) : new Set<number>();
  if (channel && !request.internal) checkWildcardMentions(rendered, settings, actor, conversation.recipients.length, participants);
  const groupMentioned =
    rendered.mentionedGroupIds.length > 0 ? await groupMentionedUsers(db, realm.id, request.internal ? null : actor, rendered.mentionedGroupIds) : new Set<number>();
  const mentioned = new Set(rendered.mentionedUserIds);
  // Outgoing-webhook bots this message triggers; no work for messages that mention or address no bot.
  const serviceBots = sender.is_bot
    ? []
    : serviceBotTriggers({
        senderIsBot: sender.is_bot,
        isChannel: channel !== null,
        mentionedBotIds: channel ? await mentionedOutgoingBots(db, channel, conversation.recipients, markdownContext, mentioned, groupMentioned) : [],
        recipientBotIds: conversation.outgoingBotIds ?? [],
      });

  // The recipients' alert words, who muted the sender, and the sender's own channel mute and topic
  // policy: one statement.
  const facts = await sendFacts(
    services.storage,
    db,
    sender.id,
    conversation.recipients.filter((u) => u.id !== sender.id).map((u) => u.id),
    channel && { channelId: channel.id, topicKey },
  );
  const automaticPolicy = channel ? await automaticVisibilityPolicy(db, sender, actor, channel, topicKey, facts) : undefined;
  // has_alert_word: recipients (not the sender) whose alert words the message's visible text contains.
  const alerted = alertedBy(facts.alertWords, rendered.html);
  // Recipients who muted the sender get the message already read, mentions included (Zulip's
  // muted_sender_user_ids): found by sender, whatever the number of recipients.
  const mutedBy = facts.mutedBy;
  const attachments = await claimableAttachments(db, realm.id, actor, rendered.uploadPathIds);
  // has_attachment means the message claims an upload, not merely that it links one.
  const hasAttachment = attachments.length > 0;
  const readBySender = request.readBySender ?? defaultReadBySender(request.clientName);
  const flagsOf = (user: RecipientUser): number => {
    let flags = channel ? 0 : Flag.IS_PRIVATE;
    if ((user.id === sender.id && readBySender) || request.readBy?.has(user.id) || mutedBy.has(user.id)) flags |= Flag.READ;
    if (mentioned.has(user.id)) flags |= Flag.MENTIONED;
    if (alerted.has(user.id)) flags |= Flag.HAS_ALERT_WORD;
    // Zulip counts group members as mentioned; it does not set group_mentioned when sending.
    if (groupMentioned.has(user.id)) flags |= Flag.MENTIONED;
    if (rendered.channelWildcard) flags |= Flag.STREAM_WILDCARD_MENTIONED;
    if (rendered.topicWildcard && (participants.has(user.id) || !channel)) flags |= Flag.TOPIC_WILDCARD_MENTIONED;
    return flags;
  };
  // The sender receives their own channel messages only when subscribed; direct-message senders always do.
  const recipients = conversation.recipients;
  const now = services.now();

  const newRow = {
    realm_id: realm.id,
    sender_id: sender.id,
    recipient_id: conversation.recipientId,
    channel_id: channel?.id ?? null,
    topic,
    topic_key: topicKey,
    content,
    rendered_content: rendered.html,
    date_sent: now,
    sending_client: request.clientName,
    last_edit_time: null,
    last_moved_time: null,
    edit_history: null,
    has_attachment: hasAttachment,
    has_image: rendered.hasImage,
    has_link: rendered.hasLink,
  };
  return { settings, conversation, content, rendered, topicKey, mentioned, groupMentioned, attachments, automaticPolicy, recipients, flagsOf, newRow, widget, serviceBots, linkifiers };
}

/**
 * The outgoing-webhook bots a channel message mentions that can read the
 * channel: named bots (the mention lookup already read their bot_type) that
 * are subscribed or may read it unsubscribed, and subscribed bots of mentioned
 * groups (Zulip considers only subscribers and directly named users).
 */
async function mentionedOutgoingBots(
  db: Db,
  channel: Channel,
  subscribers: readonly RecipientUser[],
  context: MarkdownContext,
  mentioned: ReadonlySet<number>,
  groupMentioned: ReadonlySet<number>,
): Promise<number[]> {
  const bots: number[] = [];
  for (const id of mentioned) {
    if (context.userById(id)?.botType !== OUTGOING_WEBHOOK_BOT) continue;
    if (subscribers.some((u) => u.id === id)) {
      bots.push(id);
      continue;
    }
    const bot = await db.selectFrom("users").select(["id", "role"]).where("id", "=", id).executeTakeFirst();
    if (bot && hasContentAccess(await actorFor(db, bot), channelFacts(channel), false)) bots.push(id);
  }
  if (groupMentioned.size > 0) {
    const candidates = subscribers.filter((u) => u.is_bot && groupMentioned.has(u.id) && !mentioned.has(u.id)).map((u) => u.id);
    for (const chunk of inChunks(candidates)) {
      const rows = await db.selectFrom("users").select("id").where("id", "in", chunk).where("bot_type", "=", OUTGOING_WEBHOOK_BOT).execute();
      bots.push(...rows.map((r) => r.id));
    }
  }
  return bots;
}

/**
 * The message's row, one flags row per recipient, and the missed-message emails it owes (decided
 * and recorded with the message, as Zulip's Tornado decides on the message event, so no later
 * transaction is paid per send); its ID.
 *
 * The flags rows are one statement whatever the channel's size: the user IDs and flags travel as
 * arrays (PostgreSQL) or one JSON text (SQLite) rather than three bound values a row, which passed
 * SQLite's 32,766-variable limit at about 10,900 subscribers (PostgreSQL's 65,535 at 21,800) and
 * made a statement text of its own for every channel size. On PostgreSQL all of it was written
 * already, for the whole batch of sends in one statement (`written`: messageWritesPostgres).
 */
async function insertMessage(
  services: Services,
  trx: Trx,
  pending: PendingEvents,
  written: MessageWritten | undefined,
  newRow: Required<NewMessage>,
  flagsByUser: ReadonlyMap<number, number>,
  owedEmails: readonly OwedEmail[],
): Promise<number> {
  if (services.storage.dialect === "postgres") {
    const { id, emailJobs } = written ?? (await messageWritesPostgres.run(trx, [messageWrite(services, newRow, { flagsByUser, owedEmails })]))[0]!;
    if (emailJobs) wakeAfterCommit(pending, services);
    return id;
  }
  const { id } = (await insertMessageSqlite.executeTakeFirst(trx, newRow))!;
  if (flagsByUser.size > 0) await insertFlagRowsSqlite.execute(trx, { messageId: id, rows: JSON.stringify([...flagsByUser]) });
  await writeMissedMessageEmails(services, trx, pending, id, owedEmails);
  return id;
}

/** Who a message notifies and how, read before the organization's lock (as Zulip reads them before its transaction). */
interface SendNotices {
  flagsByUser: Map<number, number>;
  flags: Record<number, string[]>;
  /** Mentioned people whose settings make them follow the topic now (it is neither followed nor muted by them). */
  followers: number[];
  /** The missed-message emails owed (recorded with the message). */
  owedEmails: OwedEmail[];
}

/**
 * One statement: the settings and topic policy of the mentioned (automatic follow), and of everyone
 * who may be owed a missed-message email, the topic's listeners among them, with their presence and
 * subscription. Read before this message makes mentioned people follow the topic: as in Zulip, that
 * counts from the next message on. Outside the lock, because every round trip inside it lengthens
 * every concurrent send's wait; what a send writes from them is written right either way (the follow
 * reads the topic again inside, an email joins the batch it finds there).
 */
async function noticesOf(services: Services, db: Db, sender: User, prepared: CheckedMessage): Promise<SendNotices> {
  const { conversation, topicKey, mentioned, groupMentioned, recipients, flagsOf } = prepared;
  const { channel } = conversation;
  const flagsByUser = new Map(recipients.map((u) => [u.id, flagsOf(u)]));
  const flags: Record<number, string[]> = {};
  for (const [userId, bits] of flagsByUser) flags[userId] = flagNames(bits);
  const flagList = Object.entries(flags).map(([id, names]): [number, string[]] => [Number(id), names]);
  const mentionedHumans = channel ? recipients.filter((u) => u.id !== sender.id && !u.is_bot && (mentioned.has(u.id) || groupMentioned.has(u.id))).map((u) => u.id) : [];
  const facts = await notificationRecipientFacts(
    services.storage,
    db,
    [...new Set([...mentionedHumans, ...Object.keys(notificationCandidates(sender.id, channel === null, flagList)).map(Number)])],
    channel && { channelId: channel.id, topicKey },
    { withListeners: true },
  );
  // Zulip's automatically_follow_topics_where_mentioned: mentioned people follow the topic, unless they muted it.
  const followers = mentionedHumans
    .filter((id) => {
      const f = facts.get(id)!;
      return parseUserSettings(f.settings).automatically_follow_topics_where_mentioned && f.topicPolicy !== VisibilityPolicy.FOLLOWED && f.topicPolicy !== VisibilityPolicy.MUTED;
    })
    .sort((a, b) => a - b);
  const listeners = [...facts].filter(([, f]) => f.listening).map(([id]) => id);
  const candidates = notificationCandidates(sender.id, channel === null, flagList, new Set(listeners));
  const owedEmails =
    Object.keys(candidates).length === 0 ? [] : await missedMessageEmailsOwed(services, { channel: channel ? { id: channel.id, topic_key: topicKey, listeners } : null, candidates }, facts);
  return { flagsByUser, flags, followers, owedEmails };
}

/** Writes a prepared message, its flags rows and links, and queues its events. */
async function writeMessage(
  services: Services,
  trx: Trx,
  pending: PendingEvents,
  written: MessageWritten | undefined,
  realm: Realm,
  sender: User,
  request: SendRequest,
  prepared: CheckedMessage,
  notices: SendNotices,
): Promise<SendResult> {
  const { settings, conversation, content, rendered, attachments, automaticPolicy, newRow, widget, serviceBots, linkifiers } = prepared;
  const { flagsByUser, flags, followers, owedEmails } = notices;
  const { channel, topic } = conversation;
  const now = newRow.date_sent;
  const messageId = await insertMessage(services, trx, pending, written, newRow, flagsByUser, owedEmails);
  await enqueueLinkPreviews(services, trx, pending, realm.id, messageId, content, rendered.linksForPreview);
  if (attachments.length > 0) await linkAttachments(trx, realm.id, messageId, attachments, pending);
  const submessages: ApiSubmessage[] = [];
  if (widget) {
    const submessage = { message_id: messageId, sender_id: sender.id, msg_type: "widget", content: pythonJsonDumps(widget) };
    const { id } = await trx.insertInto("submessages").values(submessage).returning("id").executeTakeFirstOrThrow();
    submessages.push({ id, ...submessage });
  }
  if (channel && channel.first_message_id === null) {
    await trx.updateTable("channels").set({ first_message_id: messageId }).where("id", "=", channel.id).where("first_message_id", "is", null).execute();
  }
  let automatic: number | undefined;
  if (channel && automaticPolicy !== undefined) {
    await setVisibilityPolicy(trx, pending, realm.id, sender.id, channel.id, topic, automaticPolicy, now);
    automatic = automaticPolicy;
  }
  if (channel) {
    for (const userId of followers) {
      await setVisibilityPolicy(trx, pending, realm.id, userId, channel.id, topic, VisibilityPolicy.FOLLOWED, now, { unlessSet: [VisibilityPolicy.MUTED] });
    }
  }

  const row = { ...newRow, id: messageId };
  const lookups: MessageLookups = {
    realmStringId: realm.string_id,
    senders: new Map([[sender.id, sender]]),
    channelNames: channel ? new Map([[channel.id, channel.name]]) : new Map(),
    dmRecipients: new Map([
      [conversation.recipientId, orderDisplayRecipient(conversation.participants.map((u) => ({ id: u.id, email: u.email, full_name: u.full_name, is_mirror_dummy: false })))],
    ]),
    reactions: new Map(),
    submessages: new Map([[messageId, submessages]]),
    linkifiers,
  };
  const message = formatMessage(services.config, row, lookups, 0, {
    applyMarkdown: true,
    allowEmptyTopicName: true,
    emptyTopicName: settings.empty_topic_display_name,
    editHistoryVisibility: "all",
  });
  if (serviceBots.length > 0) {
    await enqueueOutgoingWebhooks(services, trx, pending, realm.id, serviceBots, formatMessage(services.config, row, lookups, 0, {
      applyMarkdown: false,
      allowEmptyTopicName: true,
      emptyTopicName: settings.empty_topic_display_name,
      editHistoryVisibility: "all",
    }), rendered.html);
  }
  const { flags: _flags, ...eventMessage } = message;
  if (services.config.pushServiceUrl !== undefined) {
    // Mobile pushes go out from the job queue: committed with the message, decided per recipient by the worker.
    const candidates = pushCandidates(sender.id, channel === null, Object.entries(flags).map(([id, names]) => [Number(id), names]));
    if (Object.keys(candidates).length > 0) {
      const job: PushMessageJob = { realm_id: realm.id, message: pushMessageOf(eventMessage), candidates };
      await enqueueJob(trx, pending, services, PUSH_MESSAGE_JOB, job);
    }
  }
  pending.addMessage(realm.id, { type: "message", message: eventMessage }, [...flagsByUser.keys()], {
    flags,
    rawContent: content,
    emptyTopicName: settings.empty_topic_display_name,
    localId: request.queueId !== undefined && request.localId !== undefined ? { queueId: request.queueId, localId: request.localId } : undefined,
    publicChannel: channel !== null && !channel.invite_only,
  });
  return automatic === undefined ? { id: messageId } : { id: messageId, automatic_new_visibility_policy: automatic };
}

/**
 * The uploads a message links that it claims (Zulip's do_claim_attachments):
 * the sender's own files, and others' files the sender can already read
 * (resharing). A link to a file one cannot read claims nothing.
 */
export async function claimableAttachments(db: Db, realmId: number, actor: Actor, pathIds: readonly string[]): Promise<Attachment[]> {
  if (pathIds.length === 0) return [];
  const attachments = await db.selectFrom("attachments").selectAll().where("realm_id", "=", realmId).where("path_id", "in", [...new Set(pathIds)]).execute();
  const claimable: Attachment[] = [];
  for (const attachment of attachments) {
    if (attachment.owner_id === actor.id || (await canAccessAttachment(db, realmId, actor, attachment))) claimable.push(attachment);
  }
  return claimable;
}

/** Links the claimed uploads to the message; each owner hears of their file's new message. */
export async function linkAttachments(trx: Trx, realmId: number, messageId: number, attachments: readonly Attachment[], pending: PendingEvents): Promise<void> {
  await trx
    .insertInto("attachment_messages")
    .values(attachments.map((a) => ({ attachment_id: a.id, message_id: messageId })))
    .onConflict((oc) => oc.doNothing())
    .execute();
  const spaceUsed = await uploadSpaceUsed(trx, attachments[0]!.owner_id);
  const owners = new Map(attachments.map((a) => [a.id, a.owner_id]));
  for (const attachment of await attachmentObjects(trx, attachments.map((a) => a.id))) {
    pending.add(realmId, { type: "attachment", op: "update", attachment, upload_space_used: spaceUsed }, [owners.get(attachment.id)!]);
  }
}

/** Zulip's Notification Bot, which the server sends its own messages as. */
export async function notificationBot(db: Db, realmId: number): Promise<User> {
  return db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("is_system_bot", "=", true).where("email_key", "=", "notification-bot@zulip.com").executeTakeFirstOrThrow();
}

/** A message from the Notification Bot (Zulip's internal_send_*_message), to a channel topic or to users. */
export async function sendNotificationBotMessage(
  services: Services,
  realm: Realm,
  target: { channelId: number; topic: string } | { userIds: number[] },
  content: string,
  readBy?: ReadonlySet<number>,
): Promise<number> {
  const bot = await notificationBot(services.storage.db, realm.id);
  const result = await sendMessage(services, realm, bot, {
    kind: "channelId" in target ? "channel" : "direct",
    to: "channelId" in target ? String(target.channelId) : JSON.stringify(target.userIds),
    topic: "channelId" in target ? target.topic : undefined,
    content,
    clientName: "Internal",
    internal: true,
    readBy,
  });
  return result.id;
}
