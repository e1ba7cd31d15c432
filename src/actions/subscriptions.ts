// Subscribing and unsubscribing (creating channels on the way), and personal
// subscription settings. Each public function runs one transaction and sends
// its events after the commit.
import {
  CHANNEL_GROUP_SETTING_DEFAULTS,
  CHANNEL_GROUP_SETTING_NAMES,
  CHANNEL_GROUP_SETTING_RULES,
  canSubscribeOthers,
  canUnsubscribeOthers,
  checkChannelCreation,
  checkChannelDescription,
  checkChannelName,
  hasContentAccess,
  hasMetadataAccess,
  HEX_COLOR,
  pickColors,
  type ChannelGroupSettingName,
  type TopicsPolicy,
} from "../domain/channels.ts";
import {
  canonicalGroupSetting,
  checkGroupSetting,
  encodeGroupSetting,
  hasPermission,
  type Actor,
  type GroupSettingValue,
} from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES, type RealmSettings } from "../domain/realm-settings.ts";
import { isGuest, isOwner, requireNonGuest } from "../domain/roles.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import { compareCodePoints } from "../domain/text.ts";
import { PendingEvents } from "../events/notifier.ts";
import { ApiError, badRequest, mustBeOwner, noSuchUser } from "../errors.ts";
import {
  channelContext,
  channelFacts,
  formatChannel,
  formatSubscription,
  getChannel,
  getChannelsByNames,
  subscriberIds,
  subscriptionRows,
  usersWithMetadataAccess,
} from "../queries/channels.ts";
import { groupFacts, groupIdsOfUser, groupIdsOfUsers, systemGroupIdsByName } from "../queries/user-groups.ts";
import { checkSettingMembers, listActiveUsers, usersByEmailsForViewer, usersByIds } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { inChunks } from "../storage/database.ts";
import type { Channel, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { sendNotificationBotMessage } from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { getChannelFolder } from "../queries/channel-folders.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { renderDescription } from "../queries/markdown-context.ts";


export interface SubscriptionRequest {
  name: string;
  description?: string | undefined;
  color?: string | undefined;
}

export interface NewChannelOptions {
  inviteOnly: boolean;
  isWebPublic: boolean;
  isDefaultStream: boolean;
  historyPublicToSubscribers: boolean | null;
  /** undefined: the organization's setting; -1: forever; else days. */
  messageRetentionDays: number | null;
  topicsPolicy: TopicsPolicy;
  folderId: number | null;
  groupSettings: Partial<Record<ChannelGroupSettingName, GroupSettingValue>>;
}

export interface SubscribeInput extends NewChannelOptions {
  subscriptions: SubscriptionRequest[];
  principals: (number | string)[] | undefined;
  authorizationErrorsFatal: boolean;
  /** Whether the Notification Bot should announce new channels (needs an announcements channel). */
  announce: boolean;
  /** Whether the Notification Bot tells people others subscribed that they were (Zulip's send_new_subscription_messages). */
  sendNewSubscriptionMessages?: boolean;
}

export interface SubscribeResult {
  subscribed: Record<string, string[]>;
  already_subscribed: Record<string, string[]>;
  unauthorized?: string[];
  new_subscription_messages_sent?: boolean;
}

/** What a subscribe request did, for the Notification Bot messages sent after it commits. */
interface SubscribeOutcome {
  result: SubscribeResult;
  created: Channel[];
  /** Channels newly subscribed to, per user other than the actor. */
  othersSubscribed: Map<number, { user: User; channels: Channel[] }>;
}

/** Adds `value` to the list under `key` (in place: lists here may hold a principal per request). */
function append<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** Zulip's MAX_BULK_NEW_SUBSCRIPTION_MESSAGES: above this many people, nobody is told. */
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;

/** Principals (user IDs or emails) → active users of the organization. */
async function resolvePrincipals(trx: Trx, realm: Realm, actor: User, principals: (number | string)[]): Promise<User[]> {
  // Looked up in chunks; checked in request order, so the first bad principal is the one refused.
  const byId = await usersByIds(trx, realm.id, principals.filter((p): p is number => typeof p === "number"));
  const byEmail = await usersByEmailsForViewer(trx, realm.id, principals.filter((p): p is string => typeof p === "string"), actor);
  const users = new Map<number, User>();
  for (const principal of principals) {
    const user = typeof principal === "number" ? byId.get(principal) : byEmail.get(principal);
    if (!user || user.is_system_bot) throw noSuchUser();
    if (!user.is_active) throw badRequest("User is deactivated");
    if (!users.has(user.id)) users.set(user.id, user);
  }
  return [...users.values()];
}

/** Resolves and checks the group settings of a channel about to be created. */
async function newChannelSettings(
  trx: Trx,
  realm: Realm,
  creatorId: number,
  given: NewChannelOptions["groupSettings"],
): Promise<Record<ChannelGroupSettingName, string>> {
  const systemGroups = await systemGroupIdsByName(trx, realm.id);
  const facts = await groupFacts(trx, realm.id);
  const nobody = systemGroups.get(SystemGroup.NOBODY)!;
  const result = {} as Record<ChannelGroupSettingName, string>;
  for (const name of CHANNEL_GROUP_SETTING_NAMES) {
    let value: GroupSettingValue;
    const requested = given[name];
    if (requested !== undefined) {
      value = canonicalGroupSetting(requested, nobody);
      checkGroupSetting(name, value, CHANNEL_GROUP_SETTING_RULES[name], (id) => facts.get(id));
      if (typeof value !== "number") await checkSettingMembers(trx, realm.id, value.direct_members);
    } else {
      const fallback = CHANNEL_GROUP_SETTING_DEFAULTS[name];
      value = fallback === "creator" ? { direct_members: [creatorId], direct_subgroups: [] } : systemGroups.get(fallback)!;
    }
    result[name] = encodeGroupSetting(value);
  }
  return result;
}

async function checkFolder(trx: Trx, realm: Realm, folderId: number | null): Promise<void> {
  if (folderId !== null && !(await getChannelFolder(trx, realm.id, folderId))) throw badRequest("Invalid channel folder ID");
}

/** Checks that only the organization's policy allows: topics policy, retention. */
function checkNewChannelOptions(actor: Actor, settings: Readonly<RealmSettings>, options: NewChannelOptions): void {
  if (options.topicsPolicy !== "inherit" && !hasPermission(settings.can_set_topics_policy_group, REALM_GROUP_SETTING_RULES.can_set_topics_policy_group, actor)) {
    throw badRequest("Insufficient permission");
  }
  for (const name of ["can_delete_any_message_group", "can_delete_own_message_group"] as const) {
    if (options.groupSettings[name] !== undefined && !hasPermission(settings.can_set_delete_message_policy_group, REALM_GROUP_SETTING_RULES.can_set_delete_message_policy_group, actor)) {
      throw badRequest("Insufficient permission");
    }
  }
  if (options.messageRetentionDays !== null && !isOwner(actor.role)) throw mustBeOwner();
}

/**
 * Inserts (or reactivates) subscriptions, keeping colours and personal
 * settings of earlier subscriptions. Returns, per user, the channels newly
 * subscribed to.
 */
async function addSubscriptions(trx: Trx, pairs: { user: User; channel: Channel }[], colors: ReadonlyMap<number, string>): Promise<void> {
  if (pairs.length === 0) return;
  // Batched over every user (a request may name MAX_PRINCIPALS of them): earlier rows first.
  const userIds = [...new Set(pairs.map((p) => p.user.id))];
  const channelIds = [...new Set(pairs.map((p) => p.channel.id))];
  const existing = new Set((await subscriptionRows(trx, userIds, channelIds)).map((r) => `${r.user_id}:${r.channel_id}`));
  const reactivateIn = new Map<number, number[]>();
  const freshOf = new Map<number, number[]>();
  for (const { user, channel } of pairs) {
    if (existing.has(`${user.id}:${channel.id}`)) append(reactivateIn, channel.id, user.id);
    else append(freshOf, user.id, channel.id);
  }
  for (const [channelId, users] of reactivateIn) {
    for (const chunk of inChunks(users)) {
      await trx.updateTable("subscriptions").set({ active: true }).where("channel_id", "=", channelId).where("user_id", "in", chunk).execute();
    }
  }
  if (freshOf.size === 0) return;
  const usedColors = new Map<number, string[]>();
  for (const chunk of inChunks([...freshOf.keys()])) {
    for (const row of await trx.selectFrom("subscriptions").select(["user_id", "color"]).where("user_id", "in", chunk).execute()) append(usedColors, row.user_id, row.color);
  }
  const rows: { user_id: number; channel_id: number; color: string; active: boolean }[] = [];
  for (const [userId, fresh] of freshOf) {
    const requested = new Map<number, string>();
    for (const id of fresh) {
      const color = colors.get(id);
      if (color !== undefined) requested.set(id, color);
    }
    const picked = pickColors(usedColors.get(userId) ?? [], fresh, requested);
    for (const id of fresh) rows.push({ user_id: userId, channel_id: id, color: picked.get(id)!, active: true });
  }
  for (const chunk of inChunks(rows)) await trx.insertInto("subscriptions").values(chunk).execute();
}

/** Events for newly added subscriptions: stream create to those who gain sight of the channel, subscription add, peer_add. */
async function subscriptionAddEvents(
  trx: Trx,
  realm: Realm,
  added: { user: User; channel: Channel; couldSeeBefore: boolean }[],
  now: number,
  pending: PendingEvents,
): Promise<void> {
  const channels = [...new Map(added.map((a) => [a.channel.id, a.channel])).values()];
  const context = await channelContext(trx, realm.id, channels.map((c) => c.id), now);
  const subscribersOf = new Map<number, number[]>();
  for (const c of channels) subscribersOf.set(c.id, await subscriberIds(trx, c.id));

  const byUser = new Map<number, { user: User; channels: Channel[]; newlyVisible: Channel[] }>();
  for (const a of added) {
    const entry = byUser.get(a.user.id) ?? { user: a.user, channels: [], newlyVisible: [] };
    entry.channels.push(a.channel);
    if (!a.couldSeeBefore) entry.newlyVisible.push(a.channel);
    byUser.set(a.user.id, entry);
  }
  const rowOf = new Map((await subscriptionRows(trx, [...byUser.keys()], channels.map((c) => c.id))).map((r) => [`${r.user_id}:${r.channel_id}`, r]));
  for (const { user, channels: subscribedTo, newlyVisible } of byUser.values()) {
    if (newlyVisible.length > 0) {
      pending.add(realm.id, { type: "stream", op: "create", streams: newlyVisible.map((c) => formatChannel(c, context)), for_unarchiving: false }, [user.id]);
    }
    const subscriptions = subscribedTo.map((c) => formatSubscription(formatChannel(c, context), rowOf.get(`${user.id}:${c.id}`)!, subscribersOf.get(c.id)));
    pending.add(realm.id, { type: "subscription", op: "add", subscriptions }, [user.id]);
  }
  const addedTo = new Map<number, number[]>();
  for (const a of added) append(addedTo, a.channel.id, a.user.id);
  for (const channel of channels) {
    const altered = (addedTo.get(channel.id) ?? []).sort((a, b) => a - b);
    const alteredSet = new Set(altered);
    const peers = (await usersWithMetadataAccess(trx, realm.id, channel)).filter((id) => !alteredSet.has(id));
    pending.add(realm.id, { type: "subscription", op: "peer_add", stream_ids: [channel.id], user_ids: altered }, peers);
  }
}

async function insertChannel(
  services: Services,
  trx: Trx,
  realm: Realm,
  creator: User,
  request: SubscriptionRequest,
  options: NewChannelOptions,
  settings: Record<ChannelGroupSettingName, string>,
  now: number,
): Promise<Channel> {
  const description = request.description ?? "";
  const { id } = await trx
    .insertInto("channels")
    .values({
      realm_id: realm.id,
      name: request.name,
      name_key: request.name.toLowerCase(),
      description,
      rendered_description: await renderDescription(trx, services.config, realm.id, description, await compiledLinkifiersFor(services.storage, trx, realm)),
      date_created: now,
      creator_id: creator.id,
      invite_only: options.inviteOnly,
      is_web_public: options.isWebPublic,
      // Public channels always share history with new subscribers.
      history_public_to_subscribers: options.inviteOnly ? (options.historyPublicToSubscribers ?? false) : true,
      message_retention_days: options.messageRetentionDays,
      topics_policy: options.topicsPolicy,
      folder_id: options.folderId,
      ...settings,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return (await getChannel(trx, realm.id, id))!;
}

/** The body of subscribe, inside the caller's transaction. */
async function subscribeInTransaction(
  trx: Trx,
  services: Services,
  realm: Realm,
  user: User,
  actor: Actor,
  input: SubscribeInput,
  pending: PendingEvents,
): Promise<SubscribeOutcome> {
  const settings = parseRealmSettings(realm.settings);
  const now = services.now();
  const requests = new Map<string, SubscriptionRequest>();
  for (const r of input.subscriptions) {
    const name = checkChannelName(r.name);
    const description = r.description === undefined ? undefined : checkChannelDescription(r.description, "description");
    if (!requests.has(name.toLowerCase())) requests.set(name.toLowerCase(), { name, description, color: r.color });
  }
  const targets = input.principals && input.principals.length > 0 ? await resolvePrincipals(trx, realm, user, input.principals) : [user];
  const subscribingOthers = targets.some((t) => t.id !== user.id);

  const existing = await getChannelsByNames(trx, realm.id, [...requests.keys()]);
  const existingByName = new Map(existing.map((c) => [c.name.toLowerCase(), c]));
  const toCreate = [...requests.entries()].filter(([key]) => !existingByName.has(key)).map(([, r]) => r);

  if (toCreate.length > 0) {
    // Zulip's order: the kind of channel first, then the options only some may set.
    checkChannelCreation(actor, settings, { inviteOnly: input.inviteOnly, isWebPublic: input.isWebPublic, isDefault: input.isDefaultStream }, settings.enable_spectator_access);
    checkNewChannelOptions(actor, settings, input);
    await checkFolder(trx, realm, input.folderId);
  }

  // Existing channels: subscribing needs content access (and archived ones cannot change).
  const ownSubs = new Map((await subscriptionRows(trx, [user.id], existing.map((c) => c.id))).map((s) => [s.channel_id, s.active]));
  const unauthorized: string[] = [];
  const authorized: Channel[] = [];
  for (const channel of existing) {
    const facts = channelFacts(channel);
    if (channel.is_archived || !hasContentAccess(actor, facts, ownSubs.get(channel.id) === true)) unauthorized.push(channel.name);
    else authorized.push(channel);
  }
  if (unauthorized.length > 0 && input.authorizationErrorsFatal) throw badRequest(`Unable to access channel (${unauthorized[0]}).`);
  if (subscribingOthers) {
    for (const channel of authorized) {
      if (!canSubscribeOthers(actor, channelFacts(channel), settings)) throw badRequest("Insufficient permission");
    }
  }

  const created: Channel[] = [];
  if (toCreate.length > 0) {
    const channelSettings = await newChannelSettings(trx, realm, user.id, input.groupSettings);
    for (const request of toCreate) created.push(await insertChannel(services, trx, realm, user, request, input, channelSettings, now));
    if (input.isDefaultStream) {
      await trx.insertInto("default_channels").values(created.map((c) => ({ realm_id: realm.id, channel_id: c.id }))).execute();
    }
  }
  const channels = [...authorized, ...created];

  // Which (user, channel) pairs are new; what each target could see before.
  const currentRows = await subscriptionRows(trx, targets.map((t) => t.id), channels.map((c) => c.id));
  const activePairs = new Set(currentRows.filter((r) => r.active).map((r) => `${r.user_id}:${r.channel_id}`));
  const isActive = (userId: number, channelId: number) => activePairs.has(`${userId}:${channelId}`);
  const subscribed: Record<string, string[]> = {};
  const alreadySubscribed: Record<string, string[]> = {};
  const added: { user: User; channel: Channel; couldSeeBefore: boolean }[] = [];
  const groupsOf = await groupIdsOfUsers(trx, targets.filter((t) => t.id !== user.id).map((t) => t.id));
  for (const target of targets) {
    const targetActor = target.id === user.id ? actor : { id: target.id, role: target.role, groupIds: groupsOf.get(target.id)! };
    for (const channel of channels) {
      const key = String(target.id);
      if (isActive(target.id, channel.id)) {
        (alreadySubscribed[key] ??= []).push(channel.name);
        continue;
      }
      (subscribed[key] ??= []).push(channel.name);
      const isNew = created.includes(channel);
      added.push({ user: target, channel, couldSeeBefore: !isNew && hasMetadataAccess(targetActor, channelFacts(channel), false) });
    }
  }
  const colors = new Map<number, string>();
  for (const channel of channels) {
    const color = requests.get(channel.name.toLowerCase())?.color;
    if (color !== undefined) colors.set(channel.id, color);
  }
  await addSubscriptions(trx, added, colors);

  // New channels: everyone who may see them hears of their creation (subscribers get it with their subscription).
  if (created.length > 0) {
    const context = await channelContext(trx, realm.id, created.map((c) => c.id), now);
    for (const channel of created) {
      const newSubscribers = new Set(added.filter((a) => a.channel.id === channel.id).map((a) => a.user.id));
      const audience = (await usersWithMetadataAccess(trx, realm.id, channel)).filter((id) => !newSubscribers.has(id));
      pending.add(realm.id, { type: "stream", op: "create", streams: [formatChannel(channel, context)], for_unarchiving: false }, audience);
    }
    if (input.isDefaultStream) await defaultChannelsEvent(trx, realm, pending);
  }
  if (added.length > 0) await subscriptionAddEvents(trx, realm, added, now, pending);

  const result: SubscribeResult = { subscribed, already_subscribed: alreadySubscribed };
  if (!input.authorizationErrorsFatal) result.unauthorized = unauthorized;
  const othersSubscribed = new Map<number, { user: User; channels: Channel[] }>();
  for (const { user: target, channel } of added) {
    if (target.id === user.id) continue;
    const entry = othersSubscribed.get(target.id) ?? { user: target, channels: [] };
    entry.channels.push(channel);
    othersSubscribed.set(target.id, entry);
  }
  return { result, created, othersSubscribed };
}

/**
 * After a subscribe request commits, the Notification Bot announces new
 * channels in the organization's announcements channel (when asked to) and
 * tells each person subscribed by someone else, as Zulip does.
 */
async function sendSubscribeNotifications(services: Services, realm: Realm, actor: User, input: SubscribeInput, outcome: SubscribeOutcome): Promise<void> {
  const mention = `@_**${actor.full_name}|${actor.id}**`;
  const channelLink = (c: Channel) => `#**${c.name}**`;
  const settings = parseRealmSettings(realm.settings);
  if (input.announce && outcome.created.length > 0 && settings.new_stream_announcements_stream_id !== -1) {
    const target = await getChannel(services.storage.db, realm.id, settings.new_stream_announcements_stream_id);
    if (target && !target.is_archived) {
      const links = outcome.created.map(channelLink).join(", ");
      const content = outcome.created.length > 1 ? `${mention} created the following channels: ${links}.` : `${mention} created a new channel ${links}.`;
      await sendNotificationBotMessage(services, realm, { channelId: target.id, topic: "new channels" }, content);
    }
  }
  if (input.sendNewSubscriptionMessages === false) return;
  if (outcome.othersSubscribed.size > MAX_BULK_NEW_SUBSCRIPTION_MESSAGES) {
    outcome.result.new_subscription_messages_sent = false;
    return;
  }
  for (const { user, channels } of outcome.othersSubscribed.values()) {
    if (user.is_bot) continue;
    const names = channels.map((c) => c.name).sort(compareCodePoints);
    // Zulip's you_were_just_subscribed_message (since zulip/zulip#34396): a silent
    // mention, so naming the person who acted never notifies them.
    const content =
      names.length === 1
        ? `${mention} subscribed you to #**${names[0]}**.`
        : `${mention} subscribed you to the following channels:\n\n${names.map((n) => `* #**${n}**\n`).join("")}`;
    await sendNotificationBotMessage(services, realm, { userIds: [user.id] }, content);
  }
  outcome.result.new_subscription_messages_sent = true;
}

export async function defaultChannelsEvent(trx: Trx, realm: Realm, pending: PendingEvents): Promise<void> {
  const ids = await trx.selectFrom("default_channels").select("channel_id").where("realm_id", "=", realm.id).orderBy("channel_id").execute();
  const recipients = (await listActiveUsers(trx, realm.id)).filter((u) => !isGuest(u.role)).map((u) => u.id);
  pending.add(realm.id, { type: "default_streams", default_streams: ids.map((r) => r.channel_id) }, recipients);
}


/** POST /users/me/subscriptions. */
export async function subscribe(services: Services, realm: Realm, user: User, input: SubscribeInput): Promise<SubscribeResult> {
  requireNonGuest(user);
  const outcome = await inRealmTransaction(services, realm.id, async (trx, pending) =>
    subscribeInTransaction(trx, services, realm, user, await actorFor(trx, user), input, pending),
  );
  await sendSubscribeNotifications(services, realm, user, input, outcome);
  return outcome.result;
}

export interface UnsubscribeResult {
  removed: string[];
  not_removed: string[];
}

async function unsubscribeInTransaction(
  trx: Trx,
  realm: Realm,
  user: User,
  actor: Actor,
  names: string[],
  principals: (number | string)[] | undefined,
  pending: PendingEvents,
): Promise<UnsubscribeResult> {
  const checked = names.map((n) => checkChannelName(n));
  const targets = principals && principals.length > 0 ? await resolvePrincipals(trx, realm, user, principals) : [user];
  // Removing yourself or a bot you own needs no permission; anyone else does.
  const unsubscribingOthers = targets.some((t) => t.id !== user.id && !(t.is_bot && t.bot_owner_id === user.id));
  const channels = await getChannelsByNames(trx, realm.id, checked);
  const found = new Set(channels.map((c) => c.name.toLowerCase()));
  const missing = checked.filter((n) => !found.has(n.toLowerCase()));
  if (unsubscribingOthers) {
    const ownSubs = new Map((await subscriptionRows(trx, [user.id], channels.map((c) => c.id))).map((s) => [s.channel_id, s.active]));
    for (const channel of channels) {
      if (!canUnsubscribeOthers(actor, channelFacts(channel), ownSubs.get(channel.id) === true)) throw badRequest("Insufficient permission");
    }
  }
  // The API description documents STREAM_DOES_NOT_EXIST naming the channel (Zulip's
  // NonExistingChannelNameError example); Zulip's list_to_streams itself answers
  // BAD_REQUEST "Channel(s) (…) do not exist". Parley follows the description.
  if (missing.length > 0) throw new ApiError(400, "STREAM_DOES_NOT_EXIST", `Channel '${missing[0]}' does not exist`, { stream: missing[0] });

  const rows = await subscriptionRows(trx, targets.map((t) => t.id), channels.map((c) => c.id));
  const removed: string[] = [];
  const notRemoved: string[] = [];
  const removedPairs: { user: User; channel: Channel }[] = [];
  const rowOf = new Map(rows.map((r) => [`${r.user_id}:${r.channel_id}`, r]));
  for (const target of targets) {
    for (const channel of channels) {
      const row = rowOf.get(`${target.id}:${channel.id}`);
      if (!row?.active) {
        notRemoved.push(channel.name);
        continue;
      }
      removed.push(channel.name);
      removedPairs.push({ user: target, channel });
    }
  }

  const goneOf = new Map<number, Channel[]>();
  const removedFrom = new Map<number, number[]>();
  for (const { user: target, channel } of removedPairs) {
    append(goneOf, target.id, channel);
    append(removedFrom, channel.id, target.id);
  }
  for (const [channelId, userIds] of removedFrom) {
    for (const chunk of inChunks(userIds)) {
      await trx.updateTable("subscriptions").set({ active: false }).where("channel_id", "=", channelId).where("user_id", "in", chunk).execute();
    }
  }
  const groupsOf = await groupIdsOfUsers(trx, [...goneOf.keys()]);
  for (const target of targets) {
    const gone = goneOf.get(target.id) ?? [];
    if (gone.length === 0) continue;
    pending.add(realm.id, { type: "subscription", op: "remove", subscriptions: gone.map((c) => ({ name: c.name, stream_id: c.id })) }, [target.id]);
    // Those who can no longer see a private channel are told it is gone for them.
    const targetActor = { id: target.id, role: target.role, groupIds: groupsOf.get(target.id)! };
    const lost = gone.filter((c) => !hasMetadataAccess(targetActor, channelFacts(c), false));
    if (lost.length > 0) {
      pending.add(realm.id, { type: "stream", op: "delete", streams: lost.map((c) => ({ stream_id: c.id })), stream_ids: lost.map((c) => c.id), for_archiving: false }, [target.id]);
    }
  }
  for (const channel of channels) {
    const altered = (removedFrom.get(channel.id) ?? []).sort((a, b) => a - b);
    if (altered.length === 0) continue;
    const alteredSet = new Set(altered);
    const peers = (await usersWithMetadataAccess(trx, realm.id, channel)).filter((id) => !alteredSet.has(id));
    pending.add(realm.id, { type: "subscription", op: "peer_remove", stream_ids: [channel.id], user_ids: altered }, peers);
  }
  return { removed, not_removed: notRemoved };
}

/** DELETE /users/me/subscriptions. */
export async function unsubscribe(services: Services, realm: Realm, user: User, names: string[], principals: (number | string)[] | undefined): Promise<UnsubscribeResult> {
  return inRealmTransaction(services, realm.id, async (trx, pending) =>
    unsubscribeInTransaction(trx, realm, user, await actorFor(trx, user), names, principals, pending),
  );
}

/** PATCH /users/me/subscriptions: add and delete in one transaction. */
export async function changeSubscriptions(
  services: Services,
  realm: Realm,
  user: User,
  add: SubscribeInput | undefined,
  remove: string[] | undefined,
): Promise<Partial<SubscribeResult & UnsubscribeResult>> {
  if (add) requireNonGuest(user);
  const { outcome, removed } = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const actor = await actorFor(trx, user);
    const outcome = add ? await subscribeInTransaction(trx, services, realm, user, actor, add, pending) : undefined;
    const removed = remove ? await unsubscribeInTransaction(trx, realm, user, actor, remove, undefined, pending) : { removed: [], not_removed: [] };
    return { outcome, removed };
  });
  if (add && outcome) await sendSubscribeNotifications(services, realm, user, add, outcome);
  // Zulip answers with both halves, empty when one side had nothing to do.
  return { ...(outcome?.result ?? { subscribed: {}, already_subscribed: {} }), ...removed };
}

export const SUBSCRIPTION_PROPERTIES = [
  "color",
  "is_muted",
  "in_home_view",
  "pin_to_top",
  "desktop_notifications",
  "audible_notifications",
  "push_notifications",
  "email_notifications",
  "wildcard_mentions_notify",
] as const;

export interface PropertyChange {
  stream_id: number;
  property: string;
  value: unknown;
}

/** Checks one change before anything is written; Zulip validates all items first. */
function checkPropertyChange(change: PropertyChange): void {
  if (change.property === "color") {
    if (typeof change.value !== "string" || !HEX_COLOR.test(change.value)) throw badRequest("color is not a valid hex color code");
    return;
  }
  if (!(SUBSCRIPTION_PROPERTIES as readonly string[]).includes(change.property)) {
    throw badRequest(`Unknown subscription property: ${change.property}`);
  }
  if (typeof change.value !== "boolean") throw badRequest(`${change.property} is not a boolean`);
}

/** POST /users/me/subscriptions/properties (and the legacy single-property PATCH). */
export async function changeSubscriptionProperties(services: Services, realm: Realm, user: User, changes: PropertyChange[]): Promise<void> {
  for (const change of changes) checkPropertyChange(change);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const actor = await actorFor(trx, user);
    for (const change of changes) {
      const channel = await getChannel(trx, realm.id, change.stream_id);
      const row = channel ? (await subscriptionRows(trx, [user.id], [channel.id]))[0] : undefined;
      if (!channel || channel.is_archived || !hasContentAccess(actor, channelFacts(channel), row?.active === true)) throw badRequest("Invalid channel ID");
      if (!row?.active) throw badRequest(`Not subscribed to channel ID ${channel.id}`);
      const update = (property: string, value: unknown) =>
        pending.add(realm.id, { type: "subscription", op: "update", property, value, stream_id: channel.id }, [user.id]);
      if (change.property === "is_muted" || change.property === "in_home_view") {
        // in_home_view is the legacy inverse of is_muted: store one, tell clients both.
        const muted = change.property === "is_muted" ? (change.value as boolean) : !(change.value as boolean);
        await trx.updateTable("subscriptions").set({ is_muted: muted }).where("user_id", "=", user.id).where("channel_id", "=", channel.id).execute();
        update("in_home_view", !muted);
        update("is_muted", muted);
      } else {
        await trx
          .updateTable("subscriptions")
          .set({ [change.property]: change.value })
          .where("user_id", "=", user.id)
          .where("channel_id", "=", channel.id)
          .execute();
        update(change.property, change.value);
      }
    }
  });
}

/** A new account joins the organization's default channels (inside the creating transaction). */
export async function subscribeToDefaultChannels(trx: Trx, services: Services, realm: Realm, user: User, pending: PendingEvents): Promise<void> {
  const ids = await trx.selectFrom("default_channels").select("channel_id").where("realm_id", "=", realm.id).execute();
  await subscribeNewUser(trx, services, realm, user, ids.map((r) => r.channel_id), pending);
}

/**
 * A new account joins these channels (an invitation's; inside the creating
 * transaction). Channels archived or gone since are skipped.
 */
export async function subscribeNewUser(trx: Trx, services: Services, realm: Realm, user: User, channelIds: readonly number[], pending: PendingEvents): Promise<void> {
  if (channelIds.length === 0) return;
  const channels = await trx
    .selectFrom("channels")
    .selectAll()
    .where("realm_id", "=", realm.id)
    .where("id", "in", [...new Set(channelIds)])
    .where("is_archived", "=", false)
    .orderBy("id")
    .execute();
  if (channels.length === 0) return;
  const actor = { id: user.id, role: user.role, groupIds: await groupIdsOfUser(trx, user.id) };
  const added = channels.map((channel) => ({ user, channel, couldSeeBefore: hasMetadataAccess(actor, channelFacts(channel), false) }));
  await addSubscriptions(trx, added, new Map());
  await subscriptionAddEvents(trx, realm, added, services.now(), pending);
}
