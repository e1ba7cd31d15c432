// Reading channels and subscriptions, and the serializers of the channel and
// subscription objects (REST replies, events and register all use these).
import type { Kysely, Transaction } from "kysely";
import {
  CHANNEL_GROUP_SETTING_NAMES,
  channelSetting,
  hasContentAccess,
  hasMetadataAccess,
  METADATA_GRANTING_SETTINGS,
  streamPostPolicy,
  type ChannelFacts,
  type ChannelGroupSettingName,
} from "../domain/channels.ts";
import type { Actor, GroupSettingValue } from "../domain/group-settings.ts";
import { isAdmin, isGuest } from "../domain/roles.ts";
import { compareCodePoints } from "../domain/text.ts";
import type { Channel, Database, Subscription } from "../storage/schema.ts";
import { badRequest } from "../errors.ts";
import { IDS_PER_STATEMENT, inChunks, isStorableId } from "../storage/database.ts";
import { settingValueForApi, usersInSetting } from "./user-groups.ts";

type Db = Kysely<Database> | Transaction<Database>;

export function channelFacts(channel: Channel): ChannelFacts {
  const settings = {} as Record<ChannelGroupSettingName, GroupSettingValue>;
  for (const name of CHANNEL_GROUP_SETTING_NAMES) settings[name] = channelSetting(channel[name]);
  return { invite_only: channel.invite_only, is_web_public: channel.is_web_public, is_archived: channel.is_archived, settings };
}

export interface ApiChannel {
  stream_id: number;
  name: string;
  is_archived: boolean;
  description: string;
  rendered_description: string;
  date_created: number;
  creator_id: number | null;
  invite_only: boolean;
  is_web_public: boolean;
  stream_post_policy: number;
  is_announcement_only: boolean;
  message_retention_days: number | null;
  history_public_to_subscribers: boolean;
  topics_policy: string;
  first_message_id: number | null;
  folder_id: number | null;
  is_recently_active: boolean;
  can_add_subscribers_group: GroupSettingValue;
  can_remove_subscribers_group: GroupSettingValue;
  can_administer_channel_group: GroupSettingValue;
  can_delete_any_message_group: GroupSettingValue;
  can_delete_own_message_group: GroupSettingValue;
  can_move_messages_out_of_channel_group: GroupSettingValue;
  can_move_messages_within_channel_group: GroupSettingValue;
  can_resolve_topics_group: GroupSettingValue;
  can_send_message_group: GroupSettingValue;
  can_subscribe_group: GroupSettingValue;
  stream_weekly_traffic: number | null;
  subscriber_count: number;
  is_default?: boolean;
}

export interface ChannelContext {
  now: number;
  /** Name of a system group by ID (for the deprecated stream_post_policy). */
  systemGroupName: (id: number) => string | undefined;
  subscriberCounts: ReadonlyMap<number, number>;
  /** Active users, so deactivated ones drop out of anonymous group settings. */
  activeUserIds: ReadonlySet<number>;
}

/**
 * Average weekly messages over the last four weeks; null for channels younger
 * than a week, as in Zulip. Parley stores no messages yet, so older channels
 * have had no traffic.
 */
function weeklyTraffic(channel: Channel, now: number): number | null {
  return now - channel.date_created < 7 * 86400 ? null : 0;
}

export function formatChannel(channel: Channel, context: ChannelContext): ApiChannel {
  const facts = channelFacts(channel);
  const postPolicy = streamPostPolicy(facts.settings.can_send_message_group, context.systemGroupName);
  return {
    stream_id: channel.id,
    name: channel.name,
    is_archived: channel.is_archived,
    description: channel.description,
    rendered_description: channel.rendered_description,
    date_created: channel.date_created,
    creator_id: channel.creator_id,
    invite_only: channel.invite_only,
    is_web_public: channel.is_web_public,
    stream_post_policy: postPolicy,
    is_announcement_only: postPolicy === 2,
    message_retention_days: channel.message_retention_days,
    history_public_to_subscribers: channel.history_public_to_subscribers,
    topics_policy: channel.topics_policy,
    first_message_id: channel.first_message_id,
    folder_id: channel.folder_id,
    is_recently_active: channel.is_recently_active,
    ...(Object.fromEntries(
      CHANNEL_GROUP_SETTING_NAMES.map((name) => [name, settingValueForApi(facts.settings[name], context.activeUserIds)]),
    ) as Record<ChannelGroupSettingName, GroupSettingValue>),
    stream_weekly_traffic: weeklyTraffic(channel, context.now),
    subscriber_count: context.subscriberCounts.get(channel.id) ?? 0,
  };
}

export interface ApiSubscription extends ApiChannel {
  color: string;
  is_muted: boolean;
  in_home_view: boolean;
  pin_to_top: boolean;
  desktop_notifications: boolean | null;
  audible_notifications: boolean | null;
  push_notifications: boolean | null;
  email_notifications: boolean | null;
  wildcard_mentions_notify: boolean | null;
  subscribers?: number[];
}

export function formatSubscription(channel: ApiChannel, subscription: Subscription, subscribers?: number[]): ApiSubscription {
  return {
    ...channel,
    color: subscription.color,
    is_muted: subscription.is_muted,
    in_home_view: !subscription.is_muted,
    pin_to_top: subscription.pin_to_top,
    desktop_notifications: subscription.desktop_notifications,
    audible_notifications: subscription.audible_notifications,
    push_notifications: subscription.push_notifications,
    email_notifications: subscription.email_notifications,
    wildcard_mentions_notify: subscription.wildcard_mentions_notify,
    ...(subscribers !== undefined ? { subscribers } : {}),
  };
}

export async function getChannel(db: Db, realmId: number, channelId: number): Promise<Channel | undefined> {
  if (!isStorableId(channelId)) return undefined;
  return db.selectFrom("channels").selectAll().where("realm_id", "=", realmId).where("id", "=", channelId).executeTakeFirst();
}

/** Channel names match case-insensitively and without surrounding spaces. */
export async function getChannelsByNames(db: Db, realmId: number, names: readonly string[]): Promise<Channel[]> {
  if (names.length === 0) return [];
  return db
    .selectFrom("channels")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where("name_key", "in", names.map((n) => n.trim().toLowerCase()))
    .execute();
}

export async function listRealmChannels(db: Db, realmId: number): Promise<Channel[]> {
  return db.selectFrom("channels").selectAll().where("realm_id", "=", realmId).orderBy("id").execute();
}

/** Active subscriptions of active users, per channel. */
export async function subscriberCounts(db: Db, channelIds: readonly number[]): Promise<Map<number, number>> {
  if (channelIds.length === 0) return new Map();
  const rows = await db
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select(["subscriptions.channel_id", (eb) => eb.fn.countAll<number>().as("n")])
    .where("subscriptions.channel_id", "in", channelIds)
    .where("subscriptions.active", "=", true)
    .where("users.is_active", "=", true)
    .groupBy("subscriptions.channel_id")
    .execute();
  return new Map(rows.map((r) => [r.channel_id, Number(r.n)]));
}

export async function subscriberIds(db: Db, channelId: number): Promise<number[]> {
  const rows = await db
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select("subscriptions.user_id")
    .where("subscriptions.channel_id", "=", channelId)
    .where("subscriptions.active", "=", true)
    .where("users.is_active", "=", true)
    .orderBy("subscriptions.user_id")
    .execute();
  return rows.map((r) => r.user_id);
}

/** Subscription rows (active or not) of one user, by channel ID. */
export async function subscriptionsOfUser(db: Db, userId: number): Promise<Map<number, Subscription>> {
  const rows = await db.selectFrom("subscriptions").selectAll().where("user_id", "=", userId).execute();
  return new Map(rows.map((r) => [r.channel_id, r]));
}

/** Subscription rows (active or not) of these users in these channels; as many users as a request may name, in chunks. */
export async function subscriptionRows(db: Db, userIds: readonly number[], channelIds: readonly number[]): Promise<Subscription[]> {
  if (userIds.length === 0 || channelIds.length === 0) return [];
  const rows: Subscription[] = [];
  // Channel lists are bounded by MAX_ITEMS_PER_REQUEST; users fill the rest of a statement.
  for (const users of inChunks([...new Set(userIds)], Math.max(1, IDS_PER_STATEMENT - channelIds.length))) {
    rows.push(...(await db.selectFrom("subscriptions").selectAll().where("user_id", "in", users).where("channel_id", "in", channelIds).execute()));
  }
  return rows;
}

export async function defaultChannelIds(db: Db, realmId: number): Promise<number[]> {
  const rows = await db.selectFrom("default_channels").select("channel_id").where("realm_id", "=", realmId).orderBy("channel_id").execute();
  return rows.map((r) => r.channel_id);
}

/** Everything formatChannel needs besides the row, for a batch of channels. */
export async function channelContext(db: Db, realmId: number, channelIds: readonly number[], now: number): Promise<ChannelContext> {
  const groups = await db.selectFrom("user_groups").select(["id", "name"]).where("realm_id", "=", realmId).where("is_system_group", "=", true).execute();
  const names = new Map(groups.map((g) => [g.id, g.name]));
  const active = await db.selectFrom("users").select("id").where("realm_id", "=", realmId).where("is_active", "=", true).execute();
  return {
    now,
    systemGroupName: (id) => names.get(id),
    subscriberCounts: await subscriberCounts(db, channelIds),
    activeUserIds: new Set(active.map((u) => u.id)),
  };
}

/**
 * Active users who may see the channel's metadata: everyone for web-public;
 * non-guests and subscribed guests for public; subscribers, organization
 * administrators and members of the metadata-granting settings for private.
 */
export async function usersWithMetadataAccess(db: Db, realmId: number, channel: Channel): Promise<number[]> {
  const users = await db
    .selectFrom("users")
    .select(["id", "role"])
    .where("realm_id", "=", realmId)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .execute();
  const subscribers = new Set(await subscriberIds(db, channel.id));
  if (channel.is_web_public) return users.map((u) => u.id);
  if (!channel.invite_only) return users.filter((u) => !isGuest(u.role) || subscribers.has(u.id)).map((u) => u.id);
  const facts = channelFacts(channel);
  const viaGroups = new Set<number>();
  for (const name of METADATA_GRANTING_SETTINGS) {
    for (const id of await usersInSetting(db, facts.settings[name])) viaGroups.add(id);
  }
  return users.filter((u) => subscribers.has(u.id) || isAdmin(u.role) || (viaGroups.has(u.id) && !isGuest(u.role))).map((u) => u.id);
}

/**
 * For every non-archived channel of the organization, who may see its
 * metadata (the same rule as usersWithMetadataAccess, computed for all
 * channels with the users and subscriptions read once).
 */
export async function metadataAudiences(db: Db, realmId: number): Promise<Map<number, Set<number>>> {
  const [users, channels, subs] = await Promise.all([
    db.selectFrom("users").select(["id", "role"]).where("realm_id", "=", realmId).where("is_active", "=", true).where("is_system_bot", "=", false).execute(),
    db.selectFrom("channels").selectAll().where("realm_id", "=", realmId).where("is_archived", "=", false).execute(),
    db
      .selectFrom("subscriptions")
      .innerJoin("channels", "channels.id", "subscriptions.channel_id")
      .select(["subscriptions.channel_id", "subscriptions.user_id"])
      .where("channels.realm_id", "=", realmId)
      .where("subscriptions.active", "=", true)
      .execute(),
  ]);
  const subscribersOf = new Map<number, Set<number>>();
  for (const s of subs) subscribersOf.set(s.channel_id, (subscribersOf.get(s.channel_id) ?? new Set()).add(s.user_id));
  const audiences = new Map<number, Set<number>>();
  for (const channel of channels) {
    const subscribers = subscribersOf.get(channel.id) ?? new Set<number>();
    let visible: { id: number }[];
    if (channel.is_web_public) visible = users;
    else if (!channel.invite_only) visible = users.filter((u) => !isGuest(u.role) || subscribers.has(u.id));
    else {
      const facts = channelFacts(channel);
      const viaGroups = new Set<number>();
      for (const name of METADATA_GRANTING_SETTINGS) for (const id of await usersInSetting(db, facts.settings[name])) viaGroups.add(id);
      visible = users.filter((u) => subscribers.has(u.id) || isAdmin(u.role) || (viaGroups.has(u.id) && !isGuest(u.role)));
    }
    audiences.set(channel.id, new Set(visible.map((u) => u.id)));
  }
  return audiences;
}

export interface StreamFilters {
  include_public: boolean;
  include_web_public: boolean;
  include_subscribed: boolean;
  exclude_archived: boolean;
  include_all: boolean;
  include_default: boolean;
  include_owner_subscribed: boolean;
  include_can_access_content: boolean;
}

/** GET /streams: the union of the sources the filters select, sorted by name. */
export async function listStreams(db: Db, realmId: number, user: { id: number; is_bot: boolean; bot_owner_id: number | null }, actor: Actor, filters: StreamFilters, now: number): Promise<ApiChannel[]> {
  const [channels, subs, defaults] = await Promise.all([listRealmChannels(db, realmId), subscriptionsOfUser(db, actor.id), defaultChannelIds(db, realmId)]);
  const ownerSubs = filters.include_owner_subscribed && user.is_bot && user.bot_owner_id !== null ? await subscriptionsOfUser(db, user.bot_owner_id) : new Map<number, Subscription>();
  const subscribed = (c: Channel) => subs.get(c.id)?.active === true;
  const chosen = channels.filter((c) => {
    if (filters.exclude_archived && c.is_archived) return false;
    const facts = channelFacts(c);
    if (filters.include_all) return hasMetadataAccess(actor, facts, subscribed(c));
    const ownerSubscribed = ownerSubs.get(c.id)?.active === true;
    if (filters.include_can_access_content) return hasContentAccess(actor, facts, subscribed(c)) || ownerSubscribed;
    return (
      (filters.include_subscribed && subscribed(c)) ||
      // Guests cannot browse public channels.
      (filters.include_public && !isGuest(actor.role) && !c.invite_only) ||
      (filters.include_web_public && c.is_web_public) ||
      ownerSubscribed
    );
  });
  const context = await channelContext(db, realmId, chosen.map((c) => c.id), now);
  return chosen
    .sort((a, b) => compareCodePoints(a.name, b.name))
    .map((c) => ({ ...formatChannel(c, context), ...(filters.include_default ? { is_default: defaults.includes(c.id) } : {}) }));
}

/** GET /users/me/subscriptions: active subscriptions in non-archived channels, sorted by name. */
export async function listSubscriptions(db: Db, realmId: number, userId: number, includeSubscribers: boolean, now: number): Promise<ApiSubscription[]> {
  const subs = [...(await subscriptionsOfUser(db, userId)).values()].filter((s) => s.active);
  if (subs.length === 0) return [];
  const channels = (await db.selectFrom("channels").selectAll().where("id", "in", subs.map((s) => s.channel_id)).where("is_archived", "=", false).execute()).sort((a, b) =>
    compareCodePoints(a.name, b.name),
  );
  const context = await channelContext(db, realmId, channels.map((c) => c.id), now);
  const result: ApiSubscription[] = [];
  for (const channel of channels) {
    const sub = subs.find((s) => s.channel_id === channel.id)!;
    result.push(formatSubscription(formatChannel(channel, context), sub, includeSubscribers ? await subscriberIds(db, channel.id) : undefined));
  }
  return result;
}

/** A channel the actor may see, by ID; unknown and invisible look alike ("Invalid channel ID"). */
export async function accessChannel(db: Db, realmId: number, actor: Actor, channelId: number, need: "metadata" | "content"): Promise<{ channel: Channel; subscribed: boolean }> {
  const channel = await getChannel(db, realmId, channelId);
  if (!channel) throw badRequest("Invalid channel ID");
  const subscribed = (await subscriptionRows(db, [actor.id], [channel.id]))[0]?.active === true;
  const facts = channelFacts(channel);
  const allowed = need === "content" ? hasContentAccess(actor, facts, subscribed) : hasMetadataAccess(actor, facts, subscribed);
  if (!allowed) throw badRequest("Invalid channel ID");
  return { channel, subscribed };
}

/**
 * GET /streams/{stream_id}/email_address (Zulip's get_stream_email_address):
 * the address that posts to the channel through the incoming-email gateway.
 * Parley has no gateway, so the address is "" — what Zulip answers when
 * EMAIL_GATEWAY_PATTERN is unset — after Zulip's checks: content access to
 * an unarchived channel, and a `sender_id` that is the caller or a bot the
 * caller may administer (its owner, or an administrator). Zulip's default
 * sender, the Email gateway bot, does not exist here.
 */
export async function channelEmailAddress(db: Db, realmId: number, actor: Actor, channelId: number, senderId: number | undefined): Promise<string> {
  const { channel } = await accessChannel(db, realmId, actor, channelId, "content");
  if (channel.is_archived) throw badRequest("Invalid channel ID");
  if (senderId !== undefined && senderId !== actor.id) {
    const bot = isStorableId(senderId)
      ? await db.selectFrom("users").select(["id", "is_bot", "is_system_bot", "bot_owner_id"]).where("realm_id", "=", realmId).where("id", "=", senderId).executeTakeFirst()
      : undefined;
    if (!bot || !bot.is_bot || bot.is_system_bot) throw badRequest("No such bot");
    if (bot.bot_owner_id !== actor.id && !isAdmin(actor.role)) throw badRequest("Insufficient permission");
  }
  return "";
}

/**
 * GET /streams/{stream_id}/members. Whoever may see a channel may see its
 * subscribers: guests see only channels they are in (or web-public ones),
 * private channels only their subscribers, administrators and the members of
 * the groups that grant access — Zulip's separate subscriber-data rules come
 * to the same sets.
 */
export async function channelSubscribersFor(db: Db, realmId: number, actor: Actor, channelId: number): Promise<number[]> {
  const { channel } = await accessChannel(db, realmId, actor, channelId, "metadata");
  return subscriberIds(db, channel.id);
}

/** GET /get_stream_id: a channel the actor can read, by name; archived channels are not found. */
export async function channelIdByName(db: Db, realmId: number, actor: Actor, name: string): Promise<number> {
  const [channel] = await getChannelsByNames(db, realmId, [name]);
  const subscribed = channel ? (await subscriptionRows(db, [actor.id], [channel.id]))[0]?.active === true : false;
  if (!channel || channel.is_archived || !hasContentAccess(actor, channelFacts(channel), subscribed)) throw badRequest(`Invalid channel name '${name}'`);
  return channel.id;
}

/** GET /users/{user_id}/subscriptions/{stream_id}: whether a user is subscribed to a channel the actor can see. */
export async function isUserSubscribed(db: Db, realmId: number, actor: Actor, userId: number, channelId: number): Promise<boolean> {
  const target = isStorableId(userId)
    ? await db.selectFrom("users").select(["id", "is_active", "is_system_bot"]).where("realm_id", "=", realmId).where("id", "=", userId).executeTakeFirst()
    : undefined;
  if (!target || target.is_system_bot) throw badRequest("No such user");
  if (!target.is_active) throw badRequest("User is deactivated");
  const { channel } = await accessChannel(db, realmId, actor, channelId, "metadata");
  return (await subscriptionRows(db, [target.id], [channel.id]))[0]?.active === true;
}
