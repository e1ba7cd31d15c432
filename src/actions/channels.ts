// Administering channels: renaming, privacy, settings, archiving, default
// channels. Writes in one transaction; events after the commit.
import type { Updateable } from "kysely";
import {
  CHANNEL_GROUP_SETTING_RULES,
  SETTINGS_REQUIRING_CONTENT_ACCESS,
  canAdministerChannel,
  checkChannelDescription,
  checkChannelName,
  hasContentAccess,
  hasMetadataAccess,
  streamPostPolicy,
  type ChannelGroupSettingName,
  type TopicsPolicy,
} from "../domain/channels.ts";
import {
  canonicalGroupSetting,
  checkGroupSetting,
  encodeGroupSetting,
  hasPermission,
  sameGroupSetting,
  type Actor,
  type GroupSettingValue,
} from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_CHANNEL_SETTINGS, REALM_GROUP_SETTING_RULES } from "../domain/realm-settings.ts";
import { isAdmin, isOwner } from "../domain/roles.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import { ApiError, badRequest, mustBeAdmin, mustBeOwner } from "../errors.ts";
import { getChannelFolder } from "../queries/channel-folders.ts";
import {
  accessChannel,
  metadataAudiences,
  channelContext,
  channelFacts,
  defaultChannelIds,
  formatChannel,
  getChannel,
  getChannelsByNames,
  subscriberIds,
  subscriptionRows,
  usersWithMetadataAccess,
} from "../queries/channels.ts";
import { groupFacts, settingValueForApi, systemGroupIdsByName } from "../queries/user-groups.ts";
import { checkSettingMembers, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Channel, ChannelTable, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { defaultChannelsEvent } from "./subscriptions.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { renderDescription } from "../queries/markdown-context.ts";

export interface SettingChange {
  new: GroupSettingValue;
  old?: GroupSettingValue;
}

export interface ChannelUpdate {
  description?: string | undefined;
  newName?: string | undefined;
  isPrivate?: boolean | undefined;
  isWebPublic?: boolean | undefined;
  historyPublicToSubscribers?: boolean | undefined;
  isDefaultStream?: boolean | undefined;
  /** undefined: unchanged; null: the organization's setting. */
  messageRetentionDays?: number | null | undefined;
  isArchived?: boolean | undefined;
  topicsPolicy?: TopicsPolicy | undefined;
  /** undefined: unchanged; null: no folder. */
  folderId?: number | null | undefined;
  groupSettings: Partial<Record<ChannelGroupSettingName, SettingChange>>;
}

/**
 * The channel as an administrator addresses it: unknown and invisible
 * channels look the same ("Invalid channel ID"); visible ones the actor may
 * not administer say so.
 */
async function accessForAdministration(trx: Trx, realm: Realm, actor: Actor, channelId: number): Promise<{ channel: Channel; subscribed: boolean }> {
  const channel = await getChannel(trx, realm.id, channelId);
  if (!channel) throw badRequest("Invalid channel ID");
  const [row] = await subscriptionRows(trx, [actor.id], [channel.id]);
  const subscribed = row?.active === true;
  const facts = channelFacts(channel);
  if (canAdministerChannel(actor, facts) && (isAdmin(actor.role) || hasMetadataAccess(actor, facts, subscribed))) return { channel, subscribed };
  if (hasContentAccess(actor, facts, subscribed)) throw badRequest("You do not have permission to administer this channel.");
  throw badRequest("Invalid channel ID");
}

function streamUpdate(channel: Channel, property: string, value: unknown, extra: Record<string, unknown> = {}) {
  return { type: "stream", op: "update", stream_id: channel.id, name: channel.name, property, value, ...extra };
}

/** PATCH /streams/{stream_id}: every check and write in one transaction holding the organization's lock. */
export async function updateChannel(services: Services, realm: Realm, user: User, channelId: number, change: ChannelUpdate): Promise<void> {
  const settings = parseRealmSettings(realm.settings);
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const actor = await actorFor(trx, user);
    const { channel, subscribed } = await accessForAdministration(trx, realm, actor, channelId);
    const facts = channelFacts(channel);
    const contentAccess = hasContentAccess(actor, facts, subscribed);
    const updates: Updateable<ChannelTable> = {};
    const events: { property: string; value: unknown; extra?: Record<string, unknown> }[] = [];

    // Privacy: the combination must make sense before any permission is checked.
    const privacyGiven = change.isPrivate !== undefined || change.isWebPublic !== undefined || change.historyPublicToSubscribers !== undefined;
    const isPrivate = change.isPrivate ?? channel.invite_only;
    const isWebPublic = change.isWebPublic ?? channel.is_web_public;
    const history = change.historyPublicToSubscribers ?? (change.isPrivate !== undefined ? !change.isPrivate : channel.history_public_to_subscribers);
    const isDefault = (await defaultChannelIds(trx, realm.id)).includes(channel.id);
    if (privacyGiven) {
      if ((isWebPublic && !history) || (isWebPublic && isPrivate) || (!isPrivate && !history)) throw badRequest("Invalid parameters");
      if (isPrivate && (change.isDefaultStream ?? isDefault)) throw badRequest("A default channel cannot be private.");
      if (!isPrivate && settings.moderation_request_channel_id === channel.id) throw badRequest("Moderation request channel must be private.");
      // Opening a channel (or its history) to others is for those who can read it.
      if (!contentAccess) throw badRequest("Channel content access is required.");
      const canCreate = (name: "can_create_private_channel_group" | "can_create_public_channel_group") =>
        hasPermission(settings[name], REALM_GROUP_SETTING_RULES[name], actor);
      if (change.isPrivate === true && !canCreate("can_create_private_channel_group")) throw badRequest("Insufficient permission");
      if (change.isPrivate === false && !canCreate("can_create_public_channel_group")) throw badRequest("Insufficient permission");
      if (change.isWebPublic === true) {
        if (!settings.enable_spectator_access) throw badRequest("Web-public channels are not enabled.");
        if (!hasPermission(settings.can_create_web_public_channel_group, REALM_GROUP_SETTING_RULES.can_create_web_public_channel_group, actor)) {
          throw badRequest("Insufficient permission");
        }
      }
      if (isPrivate !== channel.invite_only || isWebPublic !== channel.is_web_public || history !== channel.history_public_to_subscribers) {
        Object.assign(updates, { invite_only: isPrivate, is_web_public: isWebPublic, history_public_to_subscribers: history });
        events.push({ property: "invite_only", value: isPrivate, extra: { history_public_to_subscribers: history, is_web_public: isWebPublic } });
      }
    }
    let defaultChange: boolean | undefined;
    if (change.isDefaultStream !== undefined) {
      if (!isAdmin(actor.role)) throw badRequest("You do not have permission to change default channels.");
      if (change.isDefaultStream && isPrivate) throw badRequest("A default channel cannot be private.");
      if (change.isDefaultStream && channel.is_archived && change.isArchived !== false) throw badRequest("Invalid channel ID");
      if (change.isDefaultStream !== isDefault) defaultChange = change.isDefaultStream;
    }
    if (change.messageRetentionDays !== undefined) {
      if (!isOwner(actor.role)) throw mustBeOwner();
      if (change.messageRetentionDays !== channel.message_retention_days) {
        updates.message_retention_days = change.messageRetentionDays;
        events.push({ property: "message_retention_days", value: change.messageRetentionDays });
      }
    }
    const unarchive = change.isArchived === false;
    if (unarchive) {
      if (!channel.is_archived) throw badRequest("Channel is not currently deactivated");
      if (channel.invite_only && (await subscriberIds(trx, channel.id)).length === 0) throw badRequest("Channel is private and have no subscribers");
    }
    if (change.topicsPolicy !== undefined && change.topicsPolicy !== channel.topics_policy) {
      if (!hasPermission(settings.can_set_topics_policy_group, REALM_GROUP_SETTING_RULES.can_set_topics_policy_group, actor)) {
        throw badRequest("Insufficient permission");
      }
      // empty_topic_only needs every message already in the empty topic; Parley stores no messages yet, so it always holds.
      updates.topics_policy = change.topicsPolicy;
      events.push({ property: "topics_policy", value: change.topicsPolicy });
    }
    if (change.description !== undefined) {
      const description = checkChannelDescription(change.description);
      if (description !== channel.description) {
        const rendered = await renderDescription(trx, services.config, realm.id, description, await compiledLinkifiersFor(services.storage, trx, realm));
        Object.assign(updates, { description, rendered_description: rendered });
        events.push({ property: "description", value: description, extra: { rendered_description: rendered } });
      }
    }
    let newName: string | undefined;
    if (change.newName !== undefined) {
      const name = change.newName.trim();
      if (name === channel.name) throw badRequest("Channel already has that name.");
      checkChannelName(name);
      const clash = await getChannelsByNames(trx, realm.id, [name]);
      if (clash.some((c) => c.id !== channel.id)) throw badRequest("Channel name is already in use.");
      newName = name;
      Object.assign(updates, { name, name_key: name.toLowerCase() });
    }
    if (change.folderId !== undefined && change.folderId !== channel.folder_id) {
      if (change.folderId !== null && !(await getChannelFolder(trx, realm.id, change.folderId))) throw badRequest("Invalid channel folder ID");
      updates.folder_id = change.folderId;
      events.push({ property: "folder_id", value: change.folderId });
    }
    const groupChanges = Object.entries(change.groupSettings) as [ChannelGroupSettingName, SettingChange][];
    if (groupChanges.length > 0) {
      const facts2 = await groupFacts(trx, realm.id);
      const systemGroups = await systemGroupIdsByName(trx, realm.id);
      const nobody = systemGroups.get(SystemGroup.NOBODY)!;
      const systemGroupName = (id: number) => [...systemGroups].find(([, gid]) => gid === id)?.[0];
      const context = await channelContext(trx, realm.id, [channel.id], services.now());
      for (const [name, { new: requested, old }] of groupChanges) {
        // Compared as clients see it: deactivated users are not shown in settings.
        const current = settingValueForApi(facts.settings[name], context.activeUserIds);
        if (old !== undefined && !sameGroupSetting(old, current)) {
          throw new ApiError(400, "EXPECTATION_MISMATCH", "'old' value does not match the expected value.", { field_name: "old" });
        }
        const value = canonicalGroupSetting(requested, nobody);
        if (sameGroupSetting(value, current)) continue;
        if (SETTINGS_REQUIRING_CONTENT_ACCESS.includes(name) && !contentAccess) throw badRequest("Channel content access is required.");
        if (
          (name === "can_delete_any_message_group" || name === "can_delete_own_message_group") &&
          !hasPermission(settings.can_set_delete_message_policy_group, REALM_GROUP_SETTING_RULES.can_set_delete_message_policy_group, actor)
        ) {
          throw badRequest("Insufficient permission");
        }
        checkGroupSetting(name, value, CHANNEL_GROUP_SETTING_RULES[name], (id) => facts2.get(id));
        if (typeof value !== "number") await checkSettingMembers(trx, realm.id, value.direct_members);
        updates[name] = encodeGroupSetting(value);
        events.push({ property: name, value });
        if (name === "can_send_message_group") {
          // The deprecated posting policy follows this setting; clients that still read it hear of changes.
          const before = streamPostPolicy(current, systemGroupName);
          const after = streamPostPolicy(value, systemGroupName);
          if (before !== after) {
            events.push({ property: "stream_post_policy", value: after });
            if ((before === 2) !== (after === 2)) events.push({ property: "is_announcement_only", value: after === 2 });
          }
        }
      }
    }

    const audienceBefore = await usersWithMetadataAccess(trx, realm.id, channel);
    if (Object.keys(updates).length > 0) await trx.updateTable("channels").set(updates).where("id", "=", channel.id).execute();
    if (unarchive) await trx.updateTable("channels").set({ is_archived: false }).where("id", "=", channel.id).execute();
    if (defaultChange === true) await trx.insertInto("default_channels").values({ realm_id: realm.id, channel_id: channel.id }).execute();
    if (defaultChange === false) await trx.deleteFrom("default_channels").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).execute();
    const updated = (await getChannel(trx, realm.id, channel.id))!;
    const audienceAfter = await usersWithMetadataAccess(trx, realm.id, updated);
    const stayed = audienceAfter.filter((id) => audienceBefore.includes(id));
    const gained = audienceAfter.filter((id) => !audienceBefore.includes(id));
    const lost = audienceBefore.filter((id) => !audienceAfter.includes(id));
    const context = await channelContext(trx, realm.id, [channel.id], services.now());
    if (lost.length > 0) pending.add(realm.id, { type: "stream", op: "delete", streams: [{ stream_id: channel.id }], stream_ids: [channel.id], for_archiving: false }, lost);
    if (gained.length > 0) {
      pending.add(realm.id, { type: "stream", op: "create", streams: [formatChannel(updated, context)], for_unarchiving: unarchive }, gained);
      // Newcomers to the channel's metadata also learn who is subscribed.
      pending.add(realm.id, { type: "subscription", op: "peer_add", stream_ids: [channel.id], user_ids: await subscriberIds(trx, channel.id) }, gained);
    }
    // Events carry the name the channel had before this change (a rename's own event included).
    for (const e of events) pending.add(realm.id, streamUpdate(channel, e.property, e.value, e.extra), stayed);
    if (newName !== undefined) pending.add(realm.id, streamUpdate(channel, "name", newName), stayed);
    if (unarchive) {
      // Clients that cannot show archived channels had dropped it: for them it is created anew.
      pending.add(realm.id, streamUpdate(updated, "is_archived", false), stayed, SHOWS_ARCHIVED);
      pending.add(realm.id, { type: "stream", op: "create", streams: [formatChannel(updated, context)], for_unarchiving: true }, stayed, { ...SHOWS_ARCHIVED, present: false });
    }
    if (defaultChange !== undefined) await defaultChannelsEvent(trx, realm, pending);
  });
}

/** Clients registered with archived_channels keep archived channels; others are told they are gone. */
const SHOWS_ARCHIVED = { name: "archived_channels", present: true } as const;

/** DELETE /streams/{stream_id}: archive. Subscriptions stay; the channel stops being a default. */
export async function archiveChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { channel } = await accessForAdministration(trx, realm, await actorFor(trx, user), channelId);
    if (channel.is_archived) throw badRequest("Channel is already deactivated");
    const audience = await usersWithMetadataAccess(trx, realm.id, channel);
    await trx.updateTable("channels").set({ is_archived: true }).where("id", "=", channel.id).execute();
    const wasDefault = await trx.deleteFrom("default_channels").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).executeTakeFirst();
    pending.add(realm.id, streamUpdate(channel, "is_archived", true), audience, SHOWS_ARCHIVED);
    pending.add(realm.id, { type: "stream", op: "delete", streams: [{ stream_id: channel.id }], stream_ids: [channel.id], for_archiving: true }, audience, { ...SHOWS_ARCHIVED, present: false });
    if (Number(wasDefault.numDeletedRows) > 0) await defaultChannelsEvent(trx, realm, pending);
    await unsetRealmChannelSettings(trx, realm.id, channel.id, pending);
  });
}

/**
 * Organization settings naming an archived channel (the moderation request
 * channel, announcement channels) go back to none, with one update_dict event
 * (Zulip's maybe_set_moderation_or_announcement_channels_none).
 */
async function unsetRealmChannelSettings(trx: Trx, realmId: number, channelId: number, pending: PendingEvents): Promise<void> {
  const current = await trx.selectFrom("realms").select("settings").where("id", "=", realmId).executeTakeFirstOrThrow();
  const settings = parseRealmSettings(current.settings);
  const cleared = REALM_CHANNEL_SETTINGS.filter((name) => settings[name] === channelId);
  if (cleared.length === 0) return;
  const stored = JSON.parse(current.settings) as Record<string, unknown>;
  const data: Record<string, number> = {};
  for (const name of cleared) {
    stored[name] = -1;
    data[name] = -1;
  }
  await trx.updateTable("realms").set({ settings: JSON.stringify(stored) }).where("id", "=", realmId).execute();
  const everyone = (await listActiveUsers(trx, realmId)).map((u) => u.id);
  pending.add(realmId, { type: "realm", op: "update_dict", property: "default", data }, everyone);
}

/** POST /default_streams. */
export async function addDefaultChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { channel } = await accessChannel(trx, realm.id, await actorFor(trx, user), channelId, "content");
    if (channel.is_archived) throw badRequest("Invalid channel ID");
    if (channel.invite_only) throw badRequest("Private channels cannot be made default.");
    if ((await defaultChannelIds(trx, realm.id)).includes(channel.id)) return;
    await trx.insertInto("default_channels").values({ realm_id: realm.id, channel_id: channel.id }).execute();
    await defaultChannelsEvent(trx, realm, pending);
  });
}

/** DELETE /default_streams. */
export async function removeDefaultChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const { channel } = await accessChannel(trx, realm.id, await actorFor(trx, user), channelId, "metadata");
    const result = await trx.deleteFrom("default_channels").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).executeTakeFirst();
    if (Number(result.numDeletedRows) > 0) await defaultChannelsEvent(trx, realm, pending);
  });
}

/**
 * After a change that can alter who sees which channels (a role, a group's
 * members or subgroups), tells those who gained sight of a channel about it
 * (stream create, then its subscribers) and those who lost it that it is gone.
 * `before` is metadataAudiences() read earlier in the same transaction.
 */
export async function announceAudienceChanges(trx: Trx, realm: Realm, before: Map<number, Set<number>>, now: number, pending: PendingEvents): Promise<void> {
  const after = await metadataAudiences(trx, realm.id);
  const gainedBy = new Map<number, number[]>();
  for (const [channelId, audience] of after) {
    const previous = before.get(channelId) ?? new Set<number>();
    const gained = [...audience].filter((id) => !previous.has(id));
    const lost = [...previous].filter((id) => !audience.has(id));
    if (gained.length > 0) gainedBy.set(channelId, gained);
    if (lost.length > 0) pending.add(realm.id, { type: "stream", op: "delete", streams: [{ stream_id: channelId }], stream_ids: [channelId], for_archiving: false }, lost);
  }
  if (gainedBy.size === 0) return;
  const context = await channelContext(trx, realm.id, [...gainedBy.keys()], now);
  for (const [channelId, gained] of gainedBy) {
    const channel = (await getChannel(trx, realm.id, channelId))!;
    pending.add(realm.id, { type: "stream", op: "create", streams: [formatChannel(channel, context)], for_unarchiving: false }, gained);
    pending.add(realm.id, { type: "subscription", op: "peer_add", stream_ids: [channelId], user_ids: await subscriberIds(trx, channelId) }, gained);
  }
}
