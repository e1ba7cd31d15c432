// Administering channels: renaming, privacy, settings, archiving, default
// channels. Writes in one transaction; events after the commit.
import type { Transaction, Updateable } from "kysely";
import {
  CHANNEL_GROUP_SETTING_NAMES,
  CHANNEL_GROUP_SETTING_RULES,
  SETTINGS_REQUIRING_CONTENT_ACCESS,
  canAdministerChannel,
  checkChannelDescription,
  checkChannelName,
  hasContentAccess,
  hasMetadataAccess,
  type ChannelGroupSettingName,
  type TopicsPolicy,
} from "../domain/channels.ts";
import {
  checkGroupSetting,
  encodeGroupSetting,
  hasPermission,
  normalizeGroupSetting,
  sameGroupSetting,
  type Actor,
  type GroupSettingValue,
} from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES } from "../domain/realm-settings.ts";
import { isAdmin, isOwner } from "../domain/roles.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import { renderDescription } from "../domain/text.ts";
import { PendingEvents } from "../events/notifier.ts";
import { ApiError, badRequest, mustBeAdmin, mustBeOwner } from "../errors.ts";
import { channelContext, channelFacts, formatChannel, getChannel, getChannelsByNames, subscriberIds, usersWithMetadataAccess } from "../queries/channels.ts";
import { groupFacts, systemGroupIdsByName } from "../queries/user-groups.ts";
import { getUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Channel, ChannelTable, Database, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { defaultChannelsEvent } from "./subscriptions.ts";

type Trx = Transaction<Database>;

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
async function accessForAdministration(services: Services, realm: Realm, actor: Actor, channelId: number): Promise<{ channel: Channel; subscribed: boolean }> {
  const db = services.storage.db;
  const channel = await getChannel(db, realm.id, channelId);
  if (!channel) throw badRequest("Invalid channel ID");
  const sub = await db.selectFrom("subscriptions").select("active").where("user_id", "=", actor.id).where("channel_id", "=", channel.id).executeTakeFirst();
  const subscribed = sub?.active === true;
  const facts = channelFacts(channel);
  if (canAdministerChannel(actor, facts) && (isAdmin(actor.role) || hasMetadataAccess(actor, facts, subscribed))) return { channel, subscribed };
  if (hasContentAccess(actor, facts, subscribed)) throw badRequest("You do not have permission to administer this channel.");
  throw badRequest("Invalid channel ID");
}

function streamUpdate(channel: Channel, property: string, value: unknown, extra: Record<string, unknown> = {}) {
  return { type: "stream", op: "update", stream_id: channel.id, name: channel.name, property, value, ...extra };
}

/** PATCH /streams/{stream_id}. */
export async function updateChannel(services: Services, realm: Realm, user: User, channelId: number, change: ChannelUpdate): Promise<void> {
  const actor = await actorFor(services, user);
  const settings = parseRealmSettings(realm.settings);
  const { channel, subscribed } = await accessForAdministration(services, realm, actor, channelId);
  const facts = channelFacts(channel);
  const contentAccess = hasContentAccess(actor, facts, subscribed);
  const db = services.storage.db;
  const updates: Updateable<ChannelTable> = {};
  const events: { property: string; value: unknown; extra?: Record<string, unknown> }[] = [];

  // Privacy: the combination must make sense before any permission is checked.
  const privacyGiven = change.isPrivate !== undefined || change.isWebPublic !== undefined || change.historyPublicToSubscribers !== undefined;
  const isPrivate = change.isPrivate ?? channel.invite_only;
  const isWebPublic = change.isWebPublic ?? channel.is_web_public;
  const history = change.historyPublicToSubscribers ?? (change.isPrivate !== undefined ? !change.isPrivate : channel.history_public_to_subscribers);
  const defaults = await db.selectFrom("default_channels").select("channel_id").where("realm_id", "=", realm.id).execute();
  const isDefault = defaults.some((d) => d.channel_id === channel.id);
  if (privacyGiven) {
    if ((isWebPublic && !history) || (isWebPublic && isPrivate) || (!isPrivate && !history)) throw badRequest("Invalid parameters");
    if (isPrivate && (change.isDefaultStream ?? isDefault)) throw badRequest("A default channel cannot be private.");
    if (change.isPrivate !== undefined && !contentAccess) throw badRequest("Channel content access is required.");
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
    if (change.isDefaultStream !== isDefault) defaultChange = change.isDefaultStream;
  }
  if (change.messageRetentionDays !== undefined) {
    if (!isOwner(actor.role)) throw mustBeOwner();
    if (change.messageRetentionDays !== channel.message_retention_days) {
      updates.message_retention_days = change.messageRetentionDays;
      events.push({ property: "message_retention_days", value: change.messageRetentionDays });
    }
  }
  let unarchive = false;
  if (change.isArchived === false) {
    if (!channel.is_archived) throw badRequest("Channel is not currently deactivated");
    const clash = (await getChannelsByNames(db, realm.id, [channel.name])).some((c) => c.id !== channel.id && !c.is_archived);
    if (clash) throw badRequest(`Channel named ${channel.name} already exists`);
    if (channel.invite_only && (await subscriberIds(db, channel.id)).length === 0) throw badRequest("Channel is private and have no subscribers");
    unarchive = true;
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
      const rendered = renderDescription(description);
      Object.assign(updates, { description, rendered_description: rendered });
      events.push({ property: "description", value: description, extra: { rendered_description: rendered } });
    }
  }
  let newName: string | undefined;
  if (change.newName !== undefined) {
    const name = change.newName.trim();
    if (name === channel.name) throw badRequest("Channel already has that name.");
    checkChannelName(name);
    if (name.toLowerCase() !== channel.name.toLowerCase() && (await getChannelsByNames(db, realm.id, [name])).length > 0) {
      throw badRequest("Channel name is already in use.");
    }
    newName = name;
    Object.assign(updates, { name, name_key: name.toLowerCase() });
  }
  if (change.folderId !== undefined && change.folderId !== channel.folder_id) {
    if (change.folderId !== null) {
      const folder = await db.selectFrom("channel_folders").select("id").where("realm_id", "=", realm.id).where("id", "=", change.folderId).executeTakeFirst();
      if (!folder) throw badRequest("Invalid channel folder ID");
    }
    updates.folder_id = change.folderId;
    events.push({ property: "folder_id", value: change.folderId });
  }
  const groupChanges = Object.entries(change.groupSettings) as [ChannelGroupSettingName, SettingChange][];
  if (groupChanges.length > 0) {
    const [facts2, systemGroups] = await Promise.all([groupFacts(db, realm.id), systemGroupIdsByName(db, realm.id)]);
    for (const [name, { new: requested, old }] of groupChanges) {
      const current = facts.settings[name];
      if (old !== undefined && !sameGroupSetting(old, current)) {
        throw new ApiError(400, "EXPECTATION_MISMATCH", "'old' value does not match the expected value.", { field_name: "old" });
      }
      let value = normalizeGroupSetting(requested);
      if (typeof value !== "number" && value.direct_members.length === 0 && value.direct_subgroups.length === 0) value = systemGroups.get(SystemGroup.NOBODY)!;
      if (sameGroupSetting(value, current)) continue;
      if (SETTINGS_REQUIRING_CONTENT_ACCESS.includes(name) && !contentAccess) throw badRequest("Channel content access is required.");
      if (
        (name === "can_delete_any_message_group" || name === "can_delete_own_message_group") &&
        !hasPermission(settings.can_set_delete_message_policy_group, REALM_GROUP_SETTING_RULES.can_set_delete_message_policy_group, actor)
      ) {
        throw badRequest("Insufficient permission");
      }
      checkGroupSetting(name, value, CHANNEL_GROUP_SETTING_RULES[name], (id) => facts2.get(id));
      if (typeof value !== "number") {
        for (const id of value.direct_members) {
          const member = await getUserById(db, realm.id, id);
          if (!member || !member.is_active) throw badRequest(`Invalid user ID: ${id}`);
        }
      }
      updates[name] = encodeGroupSetting(value);
      events.push({ property: name, value });
    }
  }

  const pending = new PendingEvents();
  await db.transaction().execute(async (trx) => {
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
    if (gained.length > 0) pending.add(realm.id, { type: "stream", op: "create", streams: [formatChannel(updated, context)], for_unarchiving: unarchive }, gained);
    // Events carry the name the channel had before this change (a rename's own event included).
    for (const e of events) pending.add(realm.id, streamUpdate(channel, e.property, e.value, e.extra), stayed);
    if (newName !== undefined) pending.add(realm.id, streamUpdate(channel, "name", newName), stayed);
    if (unarchive) pending.add(realm.id, streamUpdate(updated, "is_archived", false), stayed);
    if (defaultChange !== undefined) await defaultChannelsEvent(trx, realm, pending);
  });
  pending.sendTo(services.notifier);
}

/** DELETE /streams/{stream_id}: archive. Subscriptions stay; the channel stops being a default. */
export async function archiveChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  const actor = await actorFor(services, user);
  const { channel } = await accessForAdministration(services, realm, actor, channelId);
  if (channel.is_archived) throw badRequest("Channel is already deactivated");
  const pending = new PendingEvents();
  await services.storage.db.transaction().execute(async (trx) => {
    const audience = await usersWithMetadataAccess(trx, realm.id, channel);
    await trx.updateTable("channels").set({ is_archived: true }).where("id", "=", channel.id).execute();
    const wasDefault = await trx.deleteFrom("default_channels").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).executeTakeFirst();
    pending.add(realm.id, streamUpdate(channel, "is_archived", true), audience);
    if (Number(wasDefault.numDeletedRows) > 0) await defaultChannelsEvent(trx, realm, pending);
  });
  pending.sendTo(services.notifier);
}

/** POST /default_streams. */
export async function addDefaultChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  const actor = await actorFor(services, user);
  const channel = await getChannel(services.storage.db, realm.id, channelId);
  const sub = channel && (await services.storage.db.selectFrom("subscriptions").select("active").where("user_id", "=", user.id).where("channel_id", "=", channel.id).executeTakeFirst());
  if (!channel || channel.is_archived || !hasContentAccess(actor, channelFacts(channel), sub?.active === true)) throw badRequest("Invalid channel ID");
  if (channel.invite_only) throw badRequest("Private channels cannot be made default.");
  const pending = new PendingEvents();
  await services.storage.db.transaction().execute(async (trx) => {
    const exists = await trx.selectFrom("default_channels").select("channel_id").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).executeTakeFirst();
    if (exists) return;
    await trx.insertInto("default_channels").values({ realm_id: realm.id, channel_id: channel.id }).execute();
    await defaultChannelsEvent(trx, realm, pending);
  });
  pending.sendTo(services.notifier);
}

/** DELETE /default_streams. */
export async function removeDefaultChannel(services: Services, realm: Realm, user: User, channelId: number): Promise<void> {
  if (!isAdmin(user.role)) throw mustBeAdmin();
  const actor = await actorFor(services, user);
  const channel = await getChannel(services.storage.db, realm.id, channelId);
  if (!channel || !hasMetadataAccess(actor, channelFacts(channel), false)) throw badRequest("Invalid channel ID");
  const pending = new PendingEvents();
  await services.storage.db.transaction().execute(async (trx) => {
    const result = await trx.deleteFrom("default_channels").where("realm_id", "=", realm.id).where("channel_id", "=", channel.id).executeTakeFirst();
    if (Number(result.numDeletedRows) > 0) await defaultChannelsEvent(trx, realm, pending);
  });
  pending.sendTo(services.notifier);
}

export { CHANNEL_GROUP_SETTING_NAMES };
