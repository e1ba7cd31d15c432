// Reading messages: the message object serializer (REST replies, `message`
// events and register all use it), access checks, and GET /messages with
// narrows and anchors.
import { sql, type AliasedSelectQueryBuilder, type Expression, type ExpressionBuilder, type Kysely, type SqlBool, type Transaction } from "kysely";
import type { Config } from "../config.ts";
import type { AvatarFields } from "../domain/avatar.ts";
import { canReadChannelHistory, hasContentAccess } from "../domain/channels.ts";
import type { Actor } from "../domain/group-settings.ts";
import { visibleEditHistory, type EditHistoryEntry } from "../domain/message-edit.ts";
import { ANY_MENTION, Flag, flagNames } from "../domain/message-flags.ts";
import {
  dmHash,
  dmKey,
  dmKeyUserIds,
  isMeMessage,
  LARGER_THAN_MAX_MESSAGE_ID,
  normalizeTopicName,
  RESOLVED_TOPIC_PREFIX,
  VisibilityPolicy,
} from "../domain/messages.ts";
import { badNarrow, dmOperandItems, HAS_OPERANDS, IS_OPERANDS, MESSAGE_NARROW_OPERATORS, type NarrowTerm } from "../domain/narrow.ts";
import { isGuest } from "../domain/roles.ts";
import { seesDeliveryEmail } from "../domain/users.ts";
import { ApiError, badRequest } from "../errors.ts";
import { topicLinks, type CompiledLinkifiers } from "../markdown/render.ts";
import { inChunks, isStorableId, isStorableText, type Dialect } from "../storage/database.ts";
import type { Channel, Database, Message, Realm } from "../storage/schema.ts";
import { channelFacts } from "./channels.ts";
import type { AudienceChannel } from "./message-audience.ts";
import { compiledLinkifiersFor } from "./linkifiers.ts";
import { avatarUrl } from "./users.ts";

type Db = Kysely<Database> | Transaction<Database>;

export interface ApiReaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

/** A submessage as message objects list it (Zulip's SubMessage.get_raw_db_rows). */
export interface ApiSubmessage {
  id: number;
  message_id: number;
  sender_id: number;
  msg_type: string;
  content: string;
}

export interface DisplayRecipientUser {
  id: number;
  email: string;
  full_name: string;
  is_mirror_dummy: boolean;
}

export interface ApiMessage {
  id: number;
  sender_id: number;
  sender_email: string;
  sender_full_name: string;
  sender_realm_str: string;
  avatar_url: string | null;
  client: string;
  content: string;
  content_type: "text/html" | "text/x-markdown";
  display_recipient: string | DisplayRecipientUser[];
  recipient_id: number;
  type: "stream" | "private";
  stream_id?: number;
  subject: string;
  topic: string;
  topic_links: { text: string; url: string }[];
  timestamp: number;
  is_me_message: boolean;
  reactions: ApiReaction[];
  submessages: ApiSubmessage[];
  flags: string[];
  last_edit_timestamp?: number;
  last_moved_timestamp?: number;
  edit_history?: unknown[];
  match_content?: string;
  match_subject?: string;
}

/** How a client wants messages shown (GET /messages parameters, a queue's registration). */
export interface MessageFormat {
  applyMarkdown: boolean;
  /** Clients without it see the empty topic under the organization's display name. */
  allowEmptyTopicName: boolean;
  emptyTopicName: string;
  editHistoryVisibility: "all" | "moves" | "none";
}

export interface SenderInfo extends AvatarFields {
  email: string;
  full_name: string;
}

/** What serializing a set of messages needs besides their rows. */
export interface MessageLookups {
  realmStringId: string;
  senders: ReadonlyMap<number, SenderInfo>;
  channelNames: ReadonlyMap<number, string>;
  /** Direct-message participants, by recipient ID, ascending by user ID. */
  dmRecipients: ReadonlyMap<number, DisplayRecipientUser[]>;
  reactions: ReadonlyMap<number, ApiReaction[]>;
  /** Each message's submessages, in ID order (clients replay them in it). */
  submessages: ReadonlyMap<number, ApiSubmessage[]>;
  /** The organization's linkifiers, for topic_links. */
  linkifiers: CompiledLinkifiers;
}

export type MessageRow = Message & { dm_key?: string | null };

/** topic_links once per topic of a page of messages (most share a few topics). */
const topicLinksMemo = new WeakMap<MessageLookups, Map<string, { text: string; url: string }[]>>();

function topicLinksOf(lookups: MessageLookups, topic: string): { text: string; url: string }[] {
  if (lookups.linkifiers.length === 0) return topicLinks(topic);
  let memo = topicLinksMemo.get(lookups);
  if (!memo) topicLinksMemo.set(lookups, (memo = new Map()));
  let links = memo.get(topic);
  if (!links) memo.set(topic, (links = topicLinks(topic, lookups.linkifiers)));
  return links;
}

/** The message object, as GET /messages and `message` events carry it. */
export function formatMessage(config: Config, row: MessageRow, lookups: MessageLookups, flags: number | null, format: MessageFormat): ApiMessage {
  const sender = lookups.senders.get(row.sender_id)!;
  const isChannel = row.channel_id !== null;
  const topic = isChannel && row.topic === "" && !format.allowEmptyTopicName ? format.emptyTopicName : row.topic;
  const message: ApiMessage = {
    id: row.id,
    sender_id: row.sender_id,
    sender_email: sender.email,
    sender_full_name: sender.full_name,
    sender_realm_str: lookups.realmStringId,
    avatar_url: avatarUrl(config, sender),
    client: row.sending_client,
    content: format.applyMarkdown ? row.rendered_content : row.content,
    content_type: format.applyMarkdown ? "text/html" : "text/x-markdown",
    display_recipient: isChannel ? lookups.channelNames.get(row.channel_id!)! : lookups.dmRecipients.get(row.recipient_id)!,
    recipient_id: row.recipient_id,
    type: isChannel ? "stream" : "private",
    ...(isChannel ? { stream_id: row.channel_id! } : {}),
    subject: topic,
    topic,
    topic_links: isChannel ? topicLinksOf(lookups, row.topic) : [],
    timestamp: row.date_sent,
    is_me_message: isMeMessage(row.content, row.rendered_content),
    reactions: lookups.reactions.get(row.id) ?? [],
    submessages: lookups.submessages.get(row.id) ?? [],
    // No flags row: a message the user reads through the channel's public history.
    flags: flags === null ? ["read", "historical"] : flagNames(flags),
  };
  if (row.last_edit_time !== null) message.last_edit_timestamp = row.last_edit_time;
  if (row.last_moved_time !== null) message.last_moved_timestamp = row.last_moved_time;
  if (row.edit_history !== null && format.editHistoryVisibility !== "none") {
    message.edit_history = visibleEditHistory(JSON.parse(row.edit_history) as EditHistoryEntry[], format.editHistoryVisibility);
  }
  return message;
}

export async function loadMessageLookups(db: Db, realm: Realm, rows: readonly MessageRow[]): Promise<MessageLookups> {
  const senderIds = new Set<number>();
  const channelIds = new Set<number>();
  const dmRecipientIds = new Set<number>();
  for (const row of rows) {
    senderIds.add(row.sender_id);
    if (row.channel_id !== null) channelIds.add(row.channel_id);
    else dmRecipientIds.add(row.recipient_id);
  }
  const ids = rows.map((r) => r.id);
  const usersByIds = (userIds: Iterable<number>) => db.selectFrom("users").select(["id", "realm_id", "email", "full_name", "avatar_source", "avatar_version", "avatar_hash"]).where("id", "in", [...userIds]).execute();
  // The senders are read with the rest; other direct-message participants need a second round trip.
  const [dmRows, channelRows, reactionRows, submessageRows, senders] = await Promise.all([
    dmRecipientIds.size === 0 ? [] : db.selectFrom("recipients").select(["id", "dm_key"]).where("id", "in", [...dmRecipientIds]).execute(),
    channelIds.size === 0 ? [] : db.selectFrom("channels").select(["id", "name"]).where("id", "in", [...channelIds]).execute(),
    ids.length === 0
      ? []
      : db
          .selectFrom("reactions")
          .select(["reactions.message_id", "reactions.emoji_name", "reactions.emoji_code", "reactions.reaction_type", "reactions.user_id"])
          .where("reactions.message_id", "in", ids)
          .orderBy("reactions.id")
          .execute(),
    ids.length === 0 ? [] : submessagesOf(db, ids),
    senderIds.size === 0 ? [] : usersByIds(senderIds),
  ]);
  const linkifiers = rows.some((r) => r.channel_id !== null) ? await compiledLinkifiersFor(db, db, realm) : [];
  const otherParticipants = new Set<number>();
  for (const r of dmRows) for (const id of dmKeyUserIds(r.dm_key!)) if (!senderIds.has(id)) otherParticipants.add(id);
  const users = otherParticipants.size === 0 ? senders : [...senders, ...(await usersByIds(otherParticipants))];
  const byId = new Map(users.map((u) => [u.id, u]));
  const dmRecipients = new Map<number, DisplayRecipientUser[]>();
  for (const r of dmRows) {
    const list = dmKeyUserIds(r.dm_key!).map((id) => {
      const u = byId.get(id)!;
      return { id: u.id, email: u.email, full_name: u.full_name, is_mirror_dummy: false };
    });
    dmRecipients.set(r.id, orderDisplayRecipient(list));
  }
  const reactions = new Map<number, ApiReaction[]>();
  for (const r of reactionRows) {
    let list = reactions.get(r.message_id);
    if (!list) reactions.set(r.message_id, (list = []));
    list.push({ emoji_name: r.emoji_name, emoji_code: r.emoji_code, reaction_type: r.reaction_type, user_id: r.user_id });
  }
  const submessages = new Map<number, ApiSubmessage[]>();
  for (const r of submessageRows) {
    let list = submessages.get(r.message_id);
    if (!list) submessages.set(r.message_id, (list = []));
    list.push(r);
  }
  return {
    realmStringId: realm.string_id,
    senders: byId,
    channelNames: new Map(channelRows.map((c) => [c.id, c.name])),
    dmRecipients,
    reactions,
    submessages,
    linkifiers,
  };
}

/** The submessages of some messages, in ID order: one query for a whole page. */
export async function submessagesOf(db: Db, messageIds: readonly number[]): Promise<ApiSubmessage[]> {
  return db
    .selectFrom("submessages")
    .select(["id", "message_id", "sender_id", "msg_type", "content"])
    .where("message_id", "in", [...messageIds])
    .orderBy("message_id")
    .orderBy("id")
    .execute();
}

/** Zulip lists the two people of a 1:1 conversation by API email; larger groups by ID. */
export function orderDisplayRecipient(list: DisplayRecipientUser[]): DisplayRecipientUser[] {
  return list.length === 2 ? [...list].sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0)) : list;
}

/** Serializes rows with their flags for one viewer. */
export async function messageObjects(
  db: Db,
  config: Config,
  realm: Realm,
  rows: readonly (MessageRow & { flags: number | null })[],
  format: MessageFormat,
): Promise<ApiMessage[]> {
  const lookups = await loadMessageLookups(db, realm, rows);
  return rows.map((row) => formatMessage(config, row, lookups, row.flags, format));
}

// ---------------------------------------------------------------------------
// Access

export interface ReadableMessage {
  row: MessageRow;
  /** The viewer's flags row, or null when they read it through channel history. */
  flags: number | null;
}

/**
 * A message the user may read, or undefined (Zulip's has_message_access):
 * direct messages they received; channel messages only while they have
 * content access to the channel, and then any of them if its history is
 * public to subscribers, else only those they received.
 */
export async function readableMessage(db: Db, realmId: number, actor: Actor, messageId: number): Promise<ReadableMessage | undefined> {
  if (!isStorableId(messageId)) return undefined;
  const row = await db
    .selectFrom("messages as m")
    .leftJoin("user_messages as um", (j) => j.onRef("um.message_id", "=", "m.id").on("um.user_id", "=", actor.id))
    .selectAll("m")
    .select("um.flags")
    .where("m.id", "=", messageId)
    .where("m.realm_id", "=", realmId)
    .executeTakeFirst();
  if (!row) return undefined;
  const { flags, ...message } = row;
  if (message.channel_id === null) return flags === null ? undefined : { row: message, flags };
  const channel = await db.selectFrom("channels").selectAll().where("id", "=", message.channel_id).executeTakeFirstOrThrow();
  const facts = channelFacts(channel);
  const subscribed = await isSubscribed(db, actor.id, channel.id);
  if (!hasContentAccess(actor, facts, subscribed)) return undefined;
  if (flags === null && !channel.history_public_to_subscribers) return undefined;
  return { row: message, flags };
}

/** A message to act on, with its channel as the audience of the change and the actor's own subscription need it. */
export interface ModifiableMessage extends ReadableMessage {
  channel: (AudienceChannel & { is_muted_for_user: boolean | null }) | null;
}

/**
 * Zulip's access_message(..., is_modifying_message=True), for reactions and
 * submessages: a message the user can read, not in an archived channel;
 * anything else is "Invalid message(s)". `is_muted_for_user` is null when
 * the user is not subscribed.
 */
export async function modifiableMessage(db: Db, realmId: number, actor: Actor, messageId: number): Promise<ModifiableMessage> {
  const found = await readableMessage(db, realmId, actor, messageId);
  if (!found) throw badRequest("Invalid message(s)");
  if (found.row.channel_id === null) return { ...found, channel: null };
  const channel = await db
    .selectFrom("channels")
    .leftJoin("subscriptions as s", (j) => j.onRef("s.channel_id", "=", "channels.id").on("s.user_id", "=", actor.id).on("s.active", "=", true))
    .select(["channels.id", "channels.invite_only", "channels.history_public_to_subscribers", "channels.is_archived", "s.is_muted"])
    .where("channels.id", "=", found.row.channel_id)
    .executeTakeFirstOrThrow();
  if (channel.is_archived) throw badRequest("Invalid message(s)");
  return { ...found, channel: { id: channel.id, invite_only: channel.invite_only, history_public_to_subscribers: channel.history_public_to_subscribers, is_muted_for_user: channel.is_muted ?? null } };
}

/**
 * The messages of a channel topic that the user can see: all of them when
 * they may read the channel's history, else those they received. Select
 * from it (`m` is the message table).
 */
export async function visibleTopicMessages(db: Db, actor: Actor, channel: Channel, topicKey: string) {
  const facts = { ...channelFacts(channel), history_public_to_subscribers: channel.history_public_to_subscribers };
  const history = canReadChannelHistory(actor, facts, await isSubscribed(db, actor.id, channel.id));
  const query = db.selectFrom("messages as m").where("m.channel_id", "=", channel.id).where("m.topic_key", "=", topicKey);
  return history
    ? query
    : query.where((eb) => eb.exists(eb.selectFrom("user_messages as um").select("um.message_id").whereRef("um.message_id", "=", "m.id").where("um.user_id", "=", actor.id)));
}

async function isSubscribed(db: Db, userId: number, channelId: number): Promise<boolean> {
  const sub = await db.selectFrom("subscriptions").select("active").where("user_id", "=", userId).where("channel_id", "=", channelId).executeTakeFirst();
  return sub?.active === true;
}

// ---------------------------------------------------------------------------
// Narrows

type Eb = ExpressionBuilder<Database & { m: Database["messages"]; um: Database["user_messages"] }, "m" | "um">;
type Condition = (eb: Eb) => Expression<SqlBool>;

/** A narrow resolved against the database: SQL conditions, and whether channel history may be included. */
export interface ResolvedNarrow {
  conditions: Condition[];
  /** Zulip's ok_to_include_history: read messages (not only flags rows) of the narrowed channel(s). */
  includeHistory: boolean;
  /** Words of search terms, for highlighting. */
  searchWords: string[];
  /** The narrow asks about flags, so only messages with a flags row can match. */
  needsFlags: boolean;
  /** It names a channel the user cannot read: Zulip answers with no messages rather than an error. */
  inaccessible: boolean;
  /** Every condition reads only the user's flags row (or there is none): flag rows can be read before messages. */
  flagsOnly: boolean;
  /** The conditions of every term but the searches for words (not negated): for queries led by the full-text index. */
  nonSearchConditions: Condition[];
  /**
   * A term picks out few messages (a topic, a conversation, a sender, an ID, a flag): its own index
   * should lead a search, not the full-text index, which would read matches until enough of them are in it.
   */
  selective: boolean;
  /** The recipient of the channel a (non-negated) channel term names: one index probe tells whether a message is in it. */
  channelRecipientId: number | undefined;
}

interface NarrowContext {
  db: Db;
  dialect: Dialect;
  realmId: number;
  actor: Actor;
  /** The organization's name for the empty topic, which a topic operand may use. */
  emptyTopicName: string;
}

async function userIdFor(ctx: NarrowContext, operand: string | number): Promise<number | undefined> {
  if (typeof operand === "number") {
    if (!isStorableId(operand)) return undefined;
    const row = await ctx.db.selectFrom("users").select("id").where("realm_id", "=", ctx.realmId).where("id", "=", operand).executeTakeFirst();
    return row?.id;
  }
  const key = operand.trim().toLowerCase();
  if (key === "me") return ctx.actor.id;
  const row = await ctx.db.selectFrom("users").select("id").where("realm_id", "=", ctx.realmId).where("email_key", "=", key).executeTakeFirst();
  if (row) return row.id;
  // A person's real address works too when the searcher may see it, as Zulip's get_user_by_delivery_email check does.
  const real = await ctx.db
    .selectFrom("users")
    .select(["id", "is_bot", "email_address_visibility"])
    .where("realm_id", "=", ctx.realmId)
    .where("delivery_email_key", "=", key)
    .executeTakeFirst();
  return real && seesDeliveryEmail(real, ctx.actor) ? real.id : undefined;
}

/** userIdFor for a dm operand's items, looked up in chunks; the first unknown item (in order) is returned as `unknown`. */
async function userIdsFor(ctx: NarrowContext, items: readonly (string | number)[]): Promise<{ ids: number[] } | { unknown: string | number }> {
  const byId = new Set<number>();
  for (const chunk of inChunks([...new Set(items.filter((i): i is number => typeof i === "number"))].filter(isStorableId))) {
    const rows = await ctx.db.selectFrom("users").select("id").where("realm_id", "=", ctx.realmId).where("id", "in", chunk).execute();
    for (const row of rows) byId.add(row.id);
  }
  const keyOf = (email: string) => email.trim().toLowerCase();
  const emailKeys = [...new Set(items.filter((i): i is string => typeof i === "string").map(keyOf))].filter((k) => k !== "me" && isStorableText(k));
  const byEmail = new Map<string, number>();
  for (const chunk of inChunks(emailKeys)) {
    const rows = await ctx.db.selectFrom("users").select(["id", "email_key"]).where("realm_id", "=", ctx.realmId).where("email_key", "in", chunk).execute();
    for (const row of rows) byEmail.set(row.email_key, row.id);
  }
  const ids: number[] = [];
  for (const item of items) {
    const id = typeof item === "number" ? (byId.has(item) ? item : undefined) : keyOf(item) === "me" ? ctx.actor.id : byEmail.get(keyOf(item));
    if (id === undefined) return { unknown: item };
    ids.push(id);
  }
  return { ids };
}

async function channelFor(ctx: NarrowContext, operand: string | number) {
  const query = ctx.db.selectFrom("channels").selectAll().where("realm_id", "=", ctx.realmId);
  if (typeof operand === "number") return isStorableId(operand) ? query.where("id", "=", operand).executeTakeFirst() : undefined;
  // A channel ID given as a string is accepted too, as Zulip does.
  if (/^\d+$/.test(operand)) return channelFor(ctx, Number(operand));
  return query.where("name_key", "=", operand.trim().toLowerCase()).executeTakeFirst();
}

const never: Condition = () => sql<SqlBool>`1 = 0`;

function flagSet(bits: number): Condition {
  return (eb) => eb(sql<number>`(${eb.ref("um.flags")} & ${sql.lit(bits)})`, "<>", 0);
}

/** Words of a search operand, for the full-text index and highlighting. */
export function searchWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}_]+/u)
    .filter((w) => w !== "");
}

function searchCondition(dialect: Dialect, words: string[]): Condition {
  if (words.length === 0) return () => sql<SqlBool>`1 = 1`;
  if (dialect === "postgres") {
    const query = words.join(" ");
    return () => sql<SqlBool>`m.search_tsv @@ plainto_tsquery('simple', ${query})`;
  }
  return (eb) => eb("m.id", "in", sql<number>`(SELECT rowid FROM messages_fts WHERE messages_fts MATCH ${ftsMatch(words)})`);
}

/** An FTS5 query for messages holding every word (each quoted, so none is read as an operator). */
function ftsMatch(words: readonly string[]): string {
  return words.map((w) => `"${w.replace(/"/g, '""')}"`).join(" ");
}

/** Resolves each term; unknown operators, channels and users are Zulip's BAD_NARROW errors. */
export async function resolveNarrow(ctx: NarrowContext, narrowAsGiven: readonly NarrowTerm[]): Promise<ResolvedNarrow> {
  const narrow = await replaceWithOperator(ctx, narrowAsGiven);
  checkChannelAndDirect(narrow);
  const conditions: Condition[] = [];
  const nonSearchConditions: Condition[] = [];
  let includeHistory = false;
  let needsFlags = false;
  let inaccessible = false;
  let flagsOnly = true;
  let selective = false;
  let channelRecipientId: number | undefined;
  const words: string[] = [];
  for (const term of narrow) {
    if (!MESSAGE_NARROW_OPERATORS.has(term.operator)) throw badNarrow(`unknown operator ${term.operator}`);
    let condition: Condition;
    const operand = term.operand;
    switch (term.operator) {
      case "channel": {
        if (Array.isArray(operand)) throw badNarrow("unknown channel");
        const channel = await channelFor(ctx, operand);
        if (!channel) throw badNarrow(`unknown channel ${String(operand)}`);
        // By recipient: never NULL (so NOT keeps direct messages), and the key of the
        // (recipient_id, id) and (recipient_id, topic_key, id) indexes that narrows walk.
        const [recipient, subscribed] = await Promise.all([
          ctx.db.selectFrom("recipients").select("id").where("channel_id", "=", channel.id).executeTakeFirst(),
          term.negated ? false : isSubscribed(ctx.db, ctx.actor.id, channel.id),
        ]);
        condition = recipient ? (eb) => eb("m.recipient_id", "=", recipient.id) : never;
        if (!term.negated) {
          channelRecipientId = recipient?.id;
          const facts = channelFacts(channel);
          if (!hasContentAccess(ctx.actor, facts, subscribed)) inaccessible = true;
          includeHistory = canReadChannelHistory(ctx.actor, { ...facts, history_public_to_subscribers: channel.history_public_to_subscribers }, subscribed);
        }
        break;
      }
      case "channels": {
        if (operand !== "public" && operand !== "web-public") throw badNarrow(`unknown 'channels' operand ${String(operand)}`);
        const rows = await ctx.db
          .selectFrom("channels")
          .select("id")
          .where("realm_id", "=", ctx.realmId)
          .where("invite_only", "=", false)
          .$if(operand === "web-public", (q) => q.where("is_web_public", "=", true))
          .execute();
        const ids = rows.map((r) => r.id);
        condition = ids.length === 0 ? never : (eb) => eb.and([eb("m.channel_id", "is not", null), eb("m.channel_id", "in", ids)]);
        if (!term.negated && operand === "public" && !isGuest(ctx.actor.role)) includeHistory = true;
        break;
      }
      case "topic": {
        const topicKey = normalizeTopicName(String(operand), ctx.emptyTopicName).toLowerCase();
        condition = (eb) => eb.and([eb("m.channel_id", "is not", null), eb("m.topic_key", "=", topicKey)]);
        break;
      }
      case "sender": {
        if (Array.isArray(operand)) throw badNarrow("unknown user");
        const id = await userIdFor(ctx, operand);
        if (id === undefined) throw badNarrow(`unknown user ${String(operand)}`);
        condition = (eb) => eb("m.sender_id", "=", id);
        break;
      }
      case "dm": {
        const resolved = await userIdsFor(ctx, dmOperandItems(operand));
        if ("unknown" in resolved) throw badNarrow(`unknown user in ${String(operand)}`);
        const ids = resolved.ids;
        if (ids.length === 0) throw badNarrow("unknown user");
        const recipient = await ctx.db
          .selectFrom("recipients")
          .select("id")
          .where("realm_id", "=", ctx.realmId)
          .where("dm_hash", "=", dmHash(dmKey([...ids, ctx.actor.id])))
          .executeTakeFirst();
        condition = recipient ? (eb) => eb("m.recipient_id", "=", recipient.id) : never;
        break;
      }
      case "dm-including":
      case "group-pm-with": {
        if (Array.isArray(operand)) throw badNarrow("unknown user");
        const id = await userIdFor(ctx, operand);
        if (id === undefined) throw badNarrow(`unknown user ${String(operand)}`);
        // group-pm-with (deprecated): only conversations of three or more.
        const groupOnly = term.operator === "group-pm-with";
        condition = (eb) =>
          eb.and([
            eb("m.channel_id", "is", null),
            groupOnly
              ? eb.exists(eb.selectFrom("recipients as r").select("r.id").whereRef("r.id", "=", "m.recipient_id").where("r.dm_key", "like", "%,%,%"))
              : sql<SqlBool>`1 = 1`,
            id === ctx.actor.id
              ? sql<SqlBool>`1 = 1`
              : eb.exists(
                  eb
                    .selectFrom("user_messages as other")
                    .select("other.message_id")
                    .whereRef("other.message_id", "=", "m.id")
                    .where("other.user_id", "=", id),
                ),
          ]);
        break;
      }
      case "is": {
        const name = String(operand);
        if (!IS_OPERANDS.has(name)) throw badNarrow(`unknown 'is' operand ${name}`);
        condition = isCondition(ctx, name);
        if (name !== "resolved" && name !== "followed") needsFlags = true;
        break;
      }
      case "has": {
        const name = String(operand);
        if (!HAS_OPERANDS.has(name)) throw badNarrow(`unknown 'has' operand ${name}`);
        condition =
          name === "reaction"
            ? (eb) => eb.exists(eb.selectFrom("reactions as r").select("r.id").whereRef("r.message_id", "=", "m.id"))
            : (eb) => eb(name === "link" ? "m.has_link" : name === "image" ? "m.has_image" : "m.has_attachment", "=", true);
        break;
      }
      case "search": {
        const found = searchWords(String(operand));
        if (!term.negated) words.push(...found);
        condition = searchCondition(ctx.dialect, found);
        break;
      }
      case "id": {
        const id = typeof operand === "number" ? operand : /^\d+$/.test(String(operand)) ? Number(operand) : NaN;
        if (!Number.isSafeInteger(id)) throw badNarrow("Invalid message ID");
        condition = isStorableId(id) ? (eb) => eb("m.id", "=", id) : never;
        break;
      }
      case "in": {
        if (operand === "all") continue;
        if (operand !== "home") throw badNarrow(`unknown 'in' operand ${String(operand)}`);
        const muted = isCondition(ctx, "muted");
        // Zulip's in:home: everything but muted channels and topics.
        condition = (eb) => eb.not(muted(eb));
        break;
      }
      default:
        // "near" and "with" only steer the anchor and the conversation (routes/messages resolves "with").
        continue;
    }
    const final: Condition = term.negated ? (eb) => eb.not(condition(eb)) : condition;
    conditions.push(final);
    if (term.operator !== "search" || term.negated) nonSearchConditions.push(final);
    const flagTerm = term.operator === "is" && FLAG_IS_OPERANDS.has(String(operand));
    if (!flagTerm) flagsOnly = false;
    if (!term.negated && (flagTerm || SELECTIVE_OPERATORS.has(term.operator))) selective = true;
  }
  if (needsFlags) includeHistory = false;
  return { conditions, includeHistory, searchWords: words, needsFlags, inaccessible, flagsOnly, nonSearchConditions, selective, channelRecipientId };
}

/** `is:` operands whose condition reads only the user's flags row (isCondition). */
const FLAG_IS_OPERANDS = new Set(["dm", "starred", "mentioned", "alerted", "unread"]);
/** Operators that pick out few messages, each through an index of its own. */
const SELECTIVE_OPERATORS = new Set(["topic", "dm", "dm-including", "group-pm-with", "sender", "id"]);

const CONVERSATION_OPERATORS = new Set(["channel", "topic", "dm"]);

/** Zulip refuses narrows that ask for channel messages and direct messages at once. */
function checkChannelAndDirect(narrow: readonly NarrowTerm[]): void {
  const isDm = (t: NarrowTerm) => t.operator === "is" && t.operand === "dm";
  const channelTerm = narrow.some((t) => (!t.negated && ["channel", "channels", "topic"].includes(t.operator)) || (t.negated && isDm(t)));
  const directTerm = narrow.some((t) => !t.negated && (["dm", "dm-including", "group-pm-with"].includes(t.operator) || isDm(t)));
  if (channelTerm && directTerm) throw badNarrow("No message can be both a channel message and direct message");
}

/**
 * Zulip's "with" operator: the conversation that message is in now (it may
 * have moved), replacing the narrow's channel, topic and dm terms. A message
 * the user cannot read leaves the narrow as it is, if that names a conversation.
 */
async function replaceWithOperator(ctx: NarrowContext, narrow: readonly NarrowTerm[]): Promise<readonly NarrowTerm[]> {
  const withTerms = narrow.filter((t) => t.operator === "with");
  if (withTerms.length === 0) return narrow;
  if (withTerms.length > 1) throw new ApiError(400, "BAD_NARROW", "Invalid narrow operator combination: Duplicate 'with' operators.");
  const operand = withTerms[0]!.operand;
  const id = typeof operand === "number" ? operand : /^\d+$/.test(String(operand)) ? Number(operand) : NaN;
  const found = Number.isSafeInteger(id) ? await readableMessage(ctx.db, ctx.realmId, ctx.actor, id) : undefined;
  if (!found) {
    if (narrow.some((t) => !t.negated && CONVERSATION_OPERATORS.has(t.operator))) return narrow.filter((t) => t.operator !== "with");
    throw badNarrow("Invalid 'with' operator");
  }
  const rest = narrow.filter((t) => t.operator !== "with" && !CONVERSATION_OPERATORS.has(t.operator));
  const { row } = found;
  if (row.channel_id !== null) {
    return [{ operator: "channel", operand: row.channel_id, negated: false }, { operator: "topic", operand: row.topic, negated: false }, ...rest];
  }
  const recipient = await ctx.db.selectFrom("recipients").select("dm_key").where("id", "=", row.recipient_id).executeTakeFirstOrThrow();
  const others = dmKeyUserIds(recipient.dm_key!).filter((u) => u !== ctx.actor.id);
  return [{ operator: "dm", operand: others.length === 0 ? [ctx.actor.id] : others, negated: false }, ...rest];
}

function isCondition(ctx: NarrowContext, name: string): Condition {
  const topicPolicy = (policy: number): Condition => (eb) =>
    eb.exists(
      eb
        .selectFrom("user_topics as ut")
        .select("ut.user_id")
        .where("ut.user_id", "=", ctx.actor.id)
        .whereRef("ut.channel_id", "=", "m.channel_id")
        .whereRef("ut.topic_key", "=", "m.topic_key")
        .where("ut.visibility_policy", "=", policy),
    );
  switch (name) {
    case "dm":
      return flagSet(Flag.IS_PRIVATE);
    case "starred":
      return flagSet(Flag.STARRED);
    case "mentioned":
      return flagSet(ANY_MENTION);
    case "alerted":
      return flagSet(Flag.HAS_ALERT_WORD);
    case "unread":
      return (eb) => eb(sql<number>`(${eb.ref("um.flags")} & 1)`, "=", 0);
    case "resolved":
      return (eb) => eb("m.topic", "like", `${RESOLVED_TOPIC_PREFIX}%`);
    case "followed":
      return topicPolicy(VisibilityPolicy.FOLLOWED);
    case "muted-topic": {
      const mutedTopic = topicPolicy(VisibilityPolicy.MUTED);
      return (eb) => eb.and([eb("m.channel_id", "is not", null), mutedTopic(eb)]);
    }
    case "muted": {
      // Muted topics, and topics of muted channels that the user has not unmuted or followed.
      const mutedTopic = topicPolicy(VisibilityPolicy.MUTED);
      const unmutedTopic = topicPolicy(VisibilityPolicy.UNMUTED);
      const followedTopic = topicPolicy(VisibilityPolicy.FOLLOWED);
      return (eb) =>
        eb.and([
          eb("m.channel_id", "is not", null),
          eb.or([
            mutedTopic(eb),
            eb.and([
              eb.exists(
                eb
                  .selectFrom("subscriptions as s")
                  .select("s.user_id")
                  .where("s.user_id", "=", ctx.actor.id)
                  .whereRef("s.channel_id", "=", "m.channel_id")
                  .where("s.is_muted", "=", true),
              ),
              eb.not(unmutedTopic(eb)),
              eb.not(followedTopic(eb)),
            ]),
          ]),
        ]);
    }
    default:
      return never;
  }
}

// ---------------------------------------------------------------------------
// GET /messages

export type Anchor = number | "newest" | "oldest" | "first_unread";

export interface FetchRequest {
  anchor: Anchor;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  narrow: readonly NarrowTerm[];
  format: MessageFormat;
}

export interface FetchResult {
  messages: ApiMessage[];
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  history_limited: boolean;
}

type SelectedRow = MessageRow & { flags: number | null };

const MAX_STORABLE_ID = 2147483647;

/**
 * The anchor first_unread (Zulip's find_first_unread_anchor): the oldest
 * unread message matching the narrow, skipping muted conversations unless the
 * narrow is about direct messages (in a channel narrow, only muted topics).
 */
async function firstUnreadId(db: Db, userId: number, narrow: readonly NarrowTerm[], resolved: ResolvedNarrow, ctx: NarrowContext): Promise<number | undefined> {
  const dmNarrow = narrow.some((t) => !t.negated && (["dm", "dm-including", "group-pm-with"].includes(t.operator) || (t.operator === "is" && t.operand === "dm")));
  const channelNarrow = narrow.some((t) => !t.negated && t.operator === "channel");
  const muting: Condition[] = dmNarrow ? [] : [channelNarrow ? (eb) => eb.not(isCondition(ctx, "muted-topic")(eb)) : (eb) => eb.not(isCondition(ctx, "muted")(eb))];
  const first = await db
    .selectFrom("user_messages as um")
    .innerJoin("messages as m", "m.id", "um.message_id")
    .select("um.message_id")
    .where("um.user_id", "=", userId)
    .where((eb) => eb.and([eb(sql<number>`(${eb.ref("um.flags")} & 1)`, "=", 0), ...[...resolved.conditions, ...muting].map((c) => c(eb as unknown as Eb))]))
    .orderBy("um.message_id", "asc")
    .limit(1)
    .executeTakeFirst();
  return first?.message_id;
}

function narrowedQuery(db: Db, userId: number, resolved: ResolvedNarrow) {
  const base = resolved.includeHistory
    ? db
        .selectFrom("messages as m")
        .leftJoin("user_messages as um", (j) => j.onRef("um.message_id", "=", "m.id").on("um.user_id", "=", userId))
        // No realm filter: history is only read for narrows to this organization's channels, and
        // a realm condition would tempt the planner to walk (realm_id, id) past a quiet channel.
    : db.selectFrom("user_messages as um").innerJoin("messages as m", "m.id", "um.message_id").where("um.user_id", "=", userId);
  const query = base.selectAll("m").select("um.flags");
  return resolved.conditions.length === 0 ? query : query.where((eb) => allOf(resolved.conditions, eb));
}

/** The conditions joined with AND, in a query that has `m` and `um` (or at least the columns they use). */
function allOf(conditions: readonly Condition[], eb: unknown): Expression<SqlBool> {
  return (eb as Eb).and(conditions.map((c) => c(eb as Eb)));
}

/** Flag rows are ordered by their own key, so per-user fetches walk the (user_id, message_id) index. */
function idColumnOf(resolved: ResolvedNarrow) {
  return resolved.includeHistory ? ("m.id" as const) : ("um.message_id" as const);
}

function withColumns<Q extends ReturnType<typeof narrowedQuery>>(query: Q, columns: Columns): Q {
  return columns === "ids" ? (query.clearSelect().select(["m.id", "um.flags"]) as unknown as Q) : query;
}

type IdAndFlags = { id: number; flags: number | null };
type Columns = "ids" | "messages";

/** One side of an anchored window: up to `limit` messages beyond the bound, nearest first. */
interface Side {
  op: "<" | "<=" | ">" | ">=";
  id: number;
  order: "asc" | "desc";
  limit: number;
}

/**
 * One side of a narrow's window. Most narrows are one query walking an index in ID order
 * (narrowSide); three kinds need another shape to stay fast over a large history (each measured
 * over 1M messages with bench/messages.ts).
 */
async function readSide(db: Db, dialect: Dialect, userId: number, resolved: ResolvedNarrow, columns: Columns, side: Side): Promise<(SelectedRow | IdAndFlags)[]> {
  const search = resolved.searchWords.length > 0 && !resolved.selective;
  if (dialect === "sqlite" && search) return fullTextFirst(db, userId, resolved, columns, side);
  if (resolved.flagsOnly && !resolved.includeHistory) return withMessages(db, flagsFirst(db, userId, resolved, side), side.order, columns, userId);
  if (dialect === "postgres" && search && !resolved.includeHistory) return searchInSlices(db, userId, resolved, columns, side);
  return narrowSide(db, userId, resolved, columns, side);
}

function narrowSide(db: Db, userId: number, resolved: ResolvedNarrow, columns: Columns, side: Side, extra?: Condition): Promise<(SelectedRow | IdAndFlags)[]> {
  const idColumn = idColumnOf(resolved);
  const query = withColumns(narrowedQuery(db, userId, resolved), columns)
    .where(idColumn, side.op, side.id)
    // The bound on m.id as well: PostgreSQL does not carry a range across um.message_id = m.id, and
    // otherwise walked messages_pkey from the newest message to reach an anchor deep in the history.
    .$if(!resolved.includeHistory, (q) => q.where("m.id", side.op, side.id));
  return (extra ? query.where((eb) => allOf([extra], eb)) : query).orderBy(idColumn, side.order).limit(side.limit).execute();
}

/**
 * The IDs of flag rows first, then their messages: for narrows that ask only about flags (none,
 * is:starred, is:unread, is:mentioned, is:dm …). PostgreSQL takes `(flags & 2) <> 0` to hold for
 * nearly every row, so it merged the ~100 rows of the user_messages_starred index with a backward
 * walk of every message (61 ms p99 over 1M), and from an anchor inside the history walked the
 * (message_id) index testing every user's rows (120–900 ms). Ordered and limited in a subquery that
 * reads only message_id, the rows come from an index-only scan of the flag's partial index (or the
 * primary key) whatever the estimate, and only the 100 chosen rows are looked up.
 */
function flagsFirst(db: Db, userId: number, resolved: ResolvedNarrow, side: Side) {
  const query = db
    .selectFrom("user_messages as um")
    .select("um.message_id as id")
    .where("um.user_id", "=", userId)
    .where("um.message_id", side.op, side.id);
  return (resolved.conditions.length === 0 ? query : query.where((eb) => allOf(resolved.conditions, eb))).orderBy("um.message_id", side.order).limit(side.limit);
}

/**
 * SQLite search, led by the full-text index read in rowid order from the bound: `m.id IN (SELECT
 * rowid … MATCH …)` collected every match first (~90k rowids, 30 ms p99 for a word in 9% of
 * messages). The narrow's other terms are an EXISTS on the matching message, which SQLite answers
 * from an index where it can rather than reading each match's row; a channel is checked first on
 * messages_recipient (recipient_id, id) on its own, so that other terms (has:link) read only the
 * rows of matches in the channel. Message rows (and in channel history, the flags) are read for the
 * chosen IDs only.
 */
async function fullTextFirst(db: Db, userId: number, resolved: ResolvedNarrow, columns: Columns, side: Side): Promise<(SelectedRow | IdAndFlags)[]> {
  const conditions = resolved.nonSearchConditions;
  const matches = db
    .selectFrom(sql<{ rowid: number }>`messages_fts`.as("f"))
    .where(sql<SqlBool>`messages_fts MATCH ${ftsMatch(resolved.searchWords)}`)
    .where(sql<number>`f.rowid`, side.op, side.id)
    .$if(resolved.channelRecipientId !== undefined, (q) =>
      q.where((eb) => eb.exists(eb.selectFrom("messages as c").select(sql`1`.as("one")).where(sql<SqlBool>`c.id = f.rowid`).where("c.recipient_id", "=", resolved.channelRecipientId!))),
    )
    .$if(conditions.length > 0, (q) =>
      q.where((eb) => eb.exists(eb.selectFrom("messages as m").select(sql`1`.as("one")).where(sql<SqlBool>`m.id = f.rowid`).where((inner) => allOf(conditions, inner)))),
    )
    // By the rowid, not m.id: ordered by m.id, SQLite walks the other tables first and sorts (seconds).
    .orderBy(sql`f.rowid`, side.order)
    .limit(side.limit);
  if (resolved.includeHistory) {
    // Channel history: the user's flags (if any) are joined to the chosen IDs.
    return withMessages(db, matches.select(sql<number>`f.rowid`.as("id")), side.order, columns, userId);
  }
  const received = matches.innerJoin("user_messages as um", (j) => j.on(sql<SqlBool>`um.message_id = f.rowid`).on("um.user_id", "=", userId));
  return withMessages(db, received.select([sql<number>`f.rowid`.as("id"), "um.flags"]), side.order, columns);
}

/**
 * The messages of IDs chosen by a subquery, in its order, with the user's flags: from the subquery,
 * or for `flagsOf` (a user ID) from their flags rows, when it chose messages rather than flags rows.
 */
async function withMessages<Row extends { id: number; flags?: number | null }>(
  db: Db,
  ids: { as(alias: "hit"): AliasedSelectQueryBuilder<Row, "hit">; execute(): Promise<Row[]> },
  order: "asc" | "desc",
  columns: Columns,
  flagsOf?: number,
): Promise<(SelectedRow | IdAndFlags)[]> {
  if (flagsOf === undefined) {
    if (columns === "ids") return ids.execute() as Promise<IdAndFlags[]>;
    return db.selectFrom(ids.as("hit")).innerJoin("messages as m", "m.id", "hit.id").selectAll("m").select("hit.flags").orderBy("hit.id", order).execute() as Promise<SelectedRow[]>;
  }
  const flagged = db.selectFrom(ids.as("hit")).leftJoin("user_messages as um", (j) => j.onRef("um.message_id", "=", "hit.id").on("um.user_id", "=", flagsOf));
  if (columns === "ids") return flagged.select(["hit.id", "um.flags"]).orderBy("hit.id", order).execute();
  return flagged.innerJoin("messages as m", "m.id", "hit.id").selectAll("m").select("um.flags").orderBy("hit.id", order).execute();
}

/** IDs in each slice of history that PostgreSQL searches on its own (searchInSlices). */
const SEARCH_SLICE = 25_000;

/**
 * PostgreSQL search over the user's messages. With ORDER BY id LIMIT the planner either walks the
 * primary key testing search_tsv on every message (fast for a common word) or reads every match
 * through the GIN index and sorts (fast for a rare one); a word in ~1% of messages is slow both ways
 * (~30k messages walked over 1M, 36 ms p99). Asked for a slice of SEARCH_SLICE IDs, it ANDs the GIN
 * bitmap with that ID range and reads only the slice's matches (or walks the slice, for a common
 * word). The two slices nearest the bound are asked for at once (on two connections); the rest of
 * the history only if they hold too few.
 */
async function searchInSlices(db: Db, userId: number, resolved: ResolvedNarrow, columns: Columns, side: Side): Promise<(SelectedRow | IdAndFlags)[]> {
  const desc = side.order === "desc";
  // The user's message nearest the bound: the slices start there.
  const edge = (
    await db
      .selectFrom("user_messages")
      .select((eb) => (desc ? eb.fn.max("message_id") : eb.fn.min("message_id")).as("id"))
      .where("user_id", "=", userId)
      .where("message_id", side.op, side.id)
      .executeTakeFirst()
  )?.id;
  if (edge === undefined || edge === null) return [];
  // On m.id, which the planner can AND with the GIN bitmap (um.message_id is the same value).
  const from = (near: number): Condition => (eb) => eb("m.id", desc ? "<=" : ">=", near);
  const before = (far: number): Condition => (eb) => eb("m.id", desc ? ">" : "<", far);
  const slice = (near: number, far: number) => narrowSide(db, userId, resolved, columns, side, (eb) => eb.and([from(near)(eb), before(far)(eb)]));
  const pastAllIds = (id: number) => (desc ? id < 1 : id > MAX_STORABLE_ID);
  const step = desc ? -SEARCH_SLICE : SEARCH_SLICE;
  const [first, second] = await Promise.all([slice(edge, edge + step), pastAllIds(edge + step) ? [] : slice(edge + step, edge + 2 * step)]);
  const rows = [...first, ...second].slice(0, side.limit);
  const far = edge + 2 * step;
  if (rows.length >= side.limit || pastAllIds(far)) return rows;
  const rest = await narrowSide(db, userId, resolved, columns, { ...side, op: desc ? "<=" : ">=", id: far, limit: side.limit - rows.length }, from(far));
  return [...rows, ...rest];
}

/** An anchored window of a narrow, as GET /messages and POST /messages/flags/narrow take it. */
export interface RangeRequest {
  anchor: Anchor;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  narrow: readonly NarrowTerm[];
  /** The organization's name for the empty topic, which a topic operand may use. */
  emptyTopicName: string;
}

export interface MessageRange<Row> {
  /** In ID order. */
  rows: Row[];
  anchor: number;
  found_anchor: boolean;
  found_oldest: boolean;
  found_newest: boolean;
  searchWords: string[];
}

/**
 * The messages of a narrow around an anchor (Zulip's fetch_messages): the
 * one place anchors, first_unread and found_oldest/found_newest are decided.
 * `columns` "ids" reads only each message's ID and the user's flags (for
 * callers that act on the messages rather than show them).
 */
export async function messageRange(db: Db, dialect: Dialect, realm: Realm, actor: Actor, request: RangeRequest, columns: "ids"): Promise<MessageRange<{ id: number; flags: number | null }>>;
export async function messageRange(db: Db, dialect: Dialect, realm: Realm, actor: Actor, request: RangeRequest, columns?: "messages"): Promise<MessageRange<SelectedRow>>;
export async function messageRange(
  db: Db,
  dialect: Dialect,
  realm: Realm,
  actor: Actor,
  request: RangeRequest,
  columns: "ids" | "messages" = "messages",
): Promise<MessageRange<SelectedRow | { id: number; flags: number | null }>> {
  const ctx: NarrowContext = { db, dialect, realmId: realm.id, actor, emptyTopicName: request.emptyTopicName };
  const resolved = await resolveNarrow(ctx, request.narrow);
  if (resolved.inaccessible) {
    return { rows: [], anchor: LARGER_THAN_MAX_MESSAGE_ID, found_anchor: false, found_oldest: true, found_newest: true, searchWords: [] };
  }
  let anchor: number;
  if (request.anchor === "newest") anchor = LARGER_THAN_MAX_MESSAGE_ID;
  else if (request.anchor === "oldest") anchor = 0;
  else if (request.anchor === "first_unread") anchor = (await firstUnreadId(db, actor.id, request.narrow, resolved, ctx)) ?? LARGER_THAN_MAX_MESSAGE_ID;
  else anchor = request.anchor;
  // As Zulip: the anchor 0 is the start of history, and 10^16 (or more) its end, however they were asked for.
  const anchoredToLeft = anchor === 0;
  const anchoredToRight = anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  // IDs are 32-bit columns and PostgreSQL refuses larger literals: past the largest ID, nothing is at or after the anchor.
  const beyondIds = anchor > MAX_STORABLE_ID;

  const numBefore = anchoredToLeft ? 0 : request.numBefore;
  const numAfter = anchoredToRight ? 0 : request.numAfter;
  const [before, atAnchor, after] = await Promise.all([
    numBefore > 0
      ? readSide(db, dialect, actor.id, resolved, columns, beyondIds ? { op: "<=", id: MAX_STORABLE_ID, order: "desc", limit: numBefore } : { op: "<", id: anchor, order: "desc", limit: numBefore })
      : [],
    request.includeAnchor && !anchoredToLeft && !beyondIds ? withColumns(narrowedQuery(db, actor.id, resolved), columns).where(idColumnOf(resolved), "=", anchor).execute() : [],
    numAfter > 0 && !beyondIds ? readSide(db, dialect, actor.id, resolved, columns, { op: anchoredToLeft ? ">=" : ">", id: anchor, order: "asc", limit: numAfter }) : [],
  ]);
  return {
    rows: [...(before as SelectedRow[]).reverse(), ...(atAnchor as SelectedRow[]), ...(after as SelectedRow[])],
    anchor,
    found_anchor: atAnchor.length === 1,
    found_oldest: anchoredToLeft || before.length < request.numBefore,
    found_newest: anchoredToRight || after.length < request.numAfter,
    searchWords: resolved.searchWords,
  };
}

export async function fetchMessages(
  db: Db,
  dialect: Dialect,
  config: Config,
  realm: Realm,
  actor: Actor,
  request: FetchRequest,
): Promise<FetchResult> {
  const { rows, searchWords, ...found } = await messageRange(db, dialect, realm, actor, { ...request, emptyTopicName: request.format.emptyTopicName });
  const messages = await messageObjects(db, config, realm, rows, request.format);
  if (searchWords.length > 0) {
    for (const message of messages) highlightMatches(message, searchWords, request.format.applyMarkdown);
  }
  return { messages, ...found, history_limited: false };
}

/** GET /messages with message_ids: those of the messages that the user may read and that match the narrow, in ID order. */
export async function fetchMessagesByIds(
  db: Db,
  dialect: Dialect,
  config: Config,
  realm: Realm,
  actor: Actor,
  messageIds: readonly number[],
  narrow: readonly NarrowTerm[],
  format: MessageFormat,
): Promise<ApiMessage[]> {
  const ids = [...new Set(messageIds.filter(isStorableId))];
  if (ids.length === 0) return [];
  const resolved = await resolveNarrow({ db, dialect, realmId: realm.id, actor, emptyTopicName: format.emptyTopicName }, narrow);
  if (resolved.inaccessible) return [];
  // Read through the message table with the viewer's flags, then keep what has_message_access allows.
  const rows = (await narrowedQuery(db, actor.id, { ...resolved, includeHistory: true }).where("m.realm_id", "=", realm.id).where("m.id", "in", ids).orderBy("m.id").execute()) as SelectedRow[];
  const readable: SelectedRow[] = [];
  for (const row of rows) {
    if (row.flags !== null && row.channel_id === null) readable.push(row);
    else if (resolved.needsFlags && row.flags === null) continue;
    else if (await readableMessage(db, realm.id, actor, row.id)) readable.push(row);
  }
  const messages = await messageObjects(db, config, realm, readable, format);
  if (resolved.searchWords.length > 0) for (const message of messages) highlightMatches(message, resolved.searchWords, format.applyMarkdown);
  return messages;
}

/** IDs among `messageIds` that the user may read and that match the narrow (GET /messages/matches_narrow). */
export async function matchingMessages(
  db: Db,
  dialect: Dialect,
  config: Config,
  realm: Realm,
  actor: Actor,
  messageIds: readonly number[],
  narrow: readonly NarrowTerm[],
  format: MessageFormat,
): Promise<Record<string, { match_content: string; match_subject: string }>> {
  const ids = messageIds.filter(isStorableId);
  if (ids.length === 0) return {};
  const resolved = await resolveNarrow({ db, dialect, realmId: realm.id, actor, emptyTopicName: format.emptyTopicName }, narrow);
  // Only messages the user received, as Zulip's matches_narrow does.
  const rows = (await narrowedQuery(db, actor.id, { ...resolved, includeHistory: false }).where("um.message_id", "in", ids).execute()) as SelectedRow[];
  const messages = await messageObjects(db, config, realm, rows, format);
  const result: Record<string, { match_content: string; match_subject: string }> = {};
  for (const message of messages) {
    highlightMatches(message, resolved.searchWords, format.applyMarkdown);
    result[message.id] = { match_content: message.match_content!, match_subject: message.match_subject! };
  }
  return result;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Zulip's search highlighting: matched words wrapped in <span class="highlight"> outside HTML tags. */
export function highlightMatches(message: ApiMessage, words: readonly string[], isHtml: boolean): void {
  const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const highlight = (text: string): string => {
    if (words.length === 0) return text;
    const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])(${words.map(escapeRegExp).join("|")})(?![\\p{L}\\p{N}_])`, "giu");
    // Split into tags and text so attributes are never touched.
    return text
      .split(/(<[^>]*>)/)
      .map((part) => (part.startsWith("<") ? part : part.replace(pattern, '<span class="highlight">$1</span>')))
      .join("");
  };
  message.match_content = highlight(isHtml ? message.content : escape(message.content));
  message.match_subject = highlight(escape(message.subject));
}

/** Whether `messageId` exists and the user may read it, for routes that act on one message. */
export async function accessibleMessage(db: Db, realmId: number, actor: Actor, messageId: number): Promise<ReadableMessage> {
  const found = await readableMessage(db, realmId, actor, messageId);
  if (!found) throw badRequest("Invalid message(s)");
  return found;
}


/**
 * GET /users/me/{stream_id}/topics (Zulip's get_topic_history_for_stream):
 * each topic with its newest message ID, newest first — every topic when the
 * user may read the channel's history, else those of messages they received.
 */
export async function channelTopics(db: Db, realmId: number, actor: Actor, channelId: number, emptyTopicName: string | null): Promise<{ name: string; max_id: number }[]> {
  const channel = isStorableId(channelId) ? await db.selectFrom("channels").selectAll().where("realm_id", "=", realmId).where("id", "=", channelId).executeTakeFirst() : undefined;
  if (!channel) throw badRequest("Invalid channel ID");
  const subscribed = await isSubscribed(db, actor.id, channel.id);
  const facts = channelFacts(channel);
  if (!hasContentAccess(actor, facts, subscribed)) throw badRequest("Invalid channel ID");
  const history = canReadChannelHistory(actor, { ...facts, history_public_to_subscribers: channel.history_public_to_subscribers }, subscribed);
  const rows = history
    ? await db.selectFrom("messages").select(["topic_key", (eb) => eb.fn.max("id").as("max_id")]).where("channel_id", "=", channel.id).groupBy("topic_key").execute()
    : await db
        .selectFrom("user_messages as um")
        .innerJoin("messages as m", "m.id", "um.message_id")
        .select(["m.topic_key", (eb) => eb.fn.max("m.id").as("max_id")])
        .where("um.user_id", "=", actor.id)
        .where("m.channel_id", "=", channel.id)
        .groupBy("m.topic_key")
        .execute();
  if (rows.length === 0) return [];
  // The name shown is the topic as written in its newest message.
  const names = await db.selectFrom("messages").select(["id", "topic"]).where("id", "in", rows.map((r) => r.max_id)).execute();
  const nameOf = new Map(names.map((n) => [n.id, n.topic]));
  return rows
    .map((r) => {
      const name = nameOf.get(r.max_id)!;
      return { name: name === "" && emptyTopicName !== null ? emptyTopicName : name, max_id: r.max_id };
    })
    .sort((a, b) => b.max_id - a.max_id);
}
