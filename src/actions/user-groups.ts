// Every change to user groups: creating, editing, deactivating and
// reactivating them, and changing their members and subgroups. Permission
// checks, the writes in one transaction, then the events (Zulip's
// zerver/views/user_groups.py and zerver/actions/user_groups.py).
import type { Kysely, Transaction } from "kysely";
import {
  canonicalGroupSetting,
  checkGroupSetting,
  encodeGroupSetting,
  hasPermission,
  sameGroupSetting,
  type Actor,
  type GroupFacts,
  type GroupSettingValue,
} from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_DEFAULTS, REALM_GROUP_SETTING_RULES, type RealmGroupSettingName } from "../domain/realm-settings.ts";
import { requireNonGuest } from "../domain/roles.ts";
import { SystemGroup } from "../domain/system-groups.ts";
import {
  checkGroupName,
  FORBIDDEN_SYSTEM_GROUPS,
  USER_GROUP_SETTING_DEFAULTS,
  USER_GROUP_SETTING_NAMES,
  USER_GROUP_SETTING_RULES,
  type UserGroupSettingName,
} from "../domain/user-groups.ts";
import type { ClientEvent } from "../events/notifier.ts";
import { ApiError, badRequest, humansOnly, insufficientPermission, noSuchUser } from "../errors.ts";
import {
  activeRealmUsersByIds,
  activeUserIdsAmong,
  directMemberIds,
  directMembershipsOf,
  directSubgroupIds,
  activeDirectSupergroupIds,
  getGroup,
  groupAndDescendants,
  groupFacts,
  groupIdsOfUser,
  recursiveMemberIds,
  settingValueForApi,
  storedGroupSettings,
  strictSubgroupIds,
  systemGroupIdsByName,
  userGroupObjects,
  type ApiUserGroup,
} from "../queries/user-groups.ts";
import { getUserById, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import { inRealmTransaction } from "./transaction.ts";
import { announceAudienceChanges } from "./channels.ts";
import { metadataAudiences } from "../queries/channels.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { CHANNEL_GROUP_SETTING_NAMES as CHANNEL_GROUP_SETTING_COLUMNS } from "../domain/channels.ts";
import type { Database, Realm, User, UserGroup } from "../storage/schema.ts";

type Trx = Transaction<Database>;
type Db = Kysely<Database> | Trx;

// ---------------------------------------------------------------------------
// Errors and role checks

function invalidGroup(): ApiError {
  return badRequest("Invalid user group");
}

function groupDeactivated(): ApiError {
  return badRequest("User group is deactivated.");
}

function alreadyExists(name: string): ApiError {
  return badRequest(`User group '${name}' already exists.`);
}

/** Zulip's require_user_group_create_permission: a member or administrator, not a bot, in can_create_groups. */
export async function requireGroupCreatePermission(services: Services, realm: Realm, user: User): Promise<void> {
  requireNonGuest(user);
  if (user.is_bot) throw humansOnly();
  const actor = await actorIn(services.storage.db, user);
  const settings = parseRealmSettings(realm.settings);
  if (!hasPermission(settings.can_create_groups, REALM_GROUP_SETTING_RULES.can_create_groups, actor)) throw insufficientPermission();
}

// ---------------------------------------------------------------------------
// Shared helpers

/** The actor as seen by this transaction (its group memberships may have just changed). */
async function actorIn(db: Db, user: User): Promise<Actor> {
  return { id: user.id, role: user.role, groupIds: await groupIdsOfUser(db, user.id) };
}

/** Runs `work` in one transaction, then sends the events it collected (none if it failed). */
async function inTransaction<T>(
  services: Services,
  realm: Realm,
  work: (trx: Trx, events: ClientEvent[], pending: PendingEvents) => Promise<T>,
): Promise<T> {
  // Group changes in an organization run one at a time (the shared realm
  // lock), so that two concurrent subgroup additions cannot build a cycle and
  // every check sees settled data. Every group event goes to every active user.
  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const events: ClientEvent[] = [];
    const result = await work(trx, events, pending);
    await flushGroupEvents(trx, realm, events, pending);
    return result;
  });
}

/** Queues the group events gathered so far (to every active user), emptying the list. */
async function flushGroupEvents(trx: Trx, realm: Realm, events: ClientEvent[], pending: PendingEvents): Promise<void> {
  if (events.length === 0) return;
  const recipients = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
  for (const event of events.splice(0)) pending.add(realm.id, event, recipients);
}

/** The realm row as this transaction sees it (settings may have changed since the request began). */
async function currentRealm(trx: Trx, realmId: number): Promise<Realm> {
  return trx.selectFrom("realms").selectAll().where("id", "=", realmId).executeTakeFirstOrThrow();
}

const ascending = (ids: Iterable<number>): number[] => [...new Set(ids)].sort((a, b) => a - b);

/** Zulip's user_ids_to_users(allow_deactivated=False, allow_bots=True): the first unknown ID in request order fails. */
async function accessUsers(trx: Trx, realmId: number, userIds: readonly number[]): Promise<number[]> {
  const found = await activeRealmUsersByIds(trx, realmId, userIds);
  for (const id of userIds) {
    if (!found.has(id)) throw badRequest(`Invalid user ID: ${id}`);
  }
  return ascending(found.keys());
}

async function findGroup(db: Db, realmId: number, groupId: number): Promise<UserGroup | undefined> {
  return isStorableId(groupId) ? getGroup(db, realmId, groupId) : undefined;
}

/** Zulip's get_user_group_by_id_in_realm. */
async function groupInRealm(db: Db, realmId: number, groupId: number, allowDeactivated: boolean): Promise<UserGroup> {
  const group = await findGroup(db, realmId, groupId);
  if (!group) throw invalidGroup();
  if (!allowDeactivated && group.deactivated) throw groupDeactivated();
  return group;
}

/** Whether the actor may act on a group through `permission` (can_manage_group implies every other). */
function mayUpdate(group: UserGroup, realm: Realm, actor: Actor, permission: UserGroupSettingName): boolean {
  if (hasPermission(parseRealmSettings(realm.settings).can_manage_all_groups, REALM_GROUP_SETTING_RULES.can_manage_all_groups, actor)) {
    return true;
  }
  const settings = storedGroupSettings(group);
  if (hasPermission(settings.can_manage_group, USER_GROUP_SETTING_RULES.can_manage_group, actor)) return true;
  return permission !== "can_manage_group" && hasPermission(settings[permission], USER_GROUP_SETTING_RULES[permission], actor);
}

/** Zulip's access_user_group_for_update. */
async function groupForUpdate(
  trx: Trx,
  realm: Realm,
  actor: Actor,
  groupId: number,
  permission: UserGroupSettingName,
  allowDeactivated: boolean,
): Promise<UserGroup> {
  const group = await groupInRealm(trx, realm.id, groupId, allowDeactivated);
  if (group.is_system_group) throw insufficientPermission();
  if (!mayUpdate(group, realm, actor, permission)) throw insufficientPermission();
  return group;
}

/** Zulip's access_user_group_for_update(permission_setting="can_add_members_group"), for invitations' group_ids. */
export async function groupForAddingMembers(trx: Trx, realm: Realm, user: User, groupId: number): Promise<UserGroup> {
  return groupForUpdate(trx, realm, await actorIn(trx, user), groupId, "can_add_members_group", false);
}

/** Like groupForUpdate through `first`, falling back to `second` when that is refused (joining or leaving). */
async function groupForUpdateEither(
  trx: Trx,
  realm: Realm,
  actor: Actor,
  groupId: number,
  first: UserGroupSettingName,
  second: UserGroupSettingName,
): Promise<UserGroup> {
  try {
    return await groupForUpdate(trx, realm, actor, groupId, first, true);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return groupForUpdate(trx, realm, actor, groupId, second, true);
  }
}

/**
 * Zulip's access_user_group_for_setting on a canonical value: a named group
 * must exist in the organization and suit the setting; an anonymous group's
 * members must be active users and its subgroups named groups.
 */
async function checkSettingValue(
  trx: Trx,
  realmId: number,
  settingName: UserGroupSettingName,
  value: GroupSettingValue,
  facts: ReadonlyMap<number, GroupFacts>,
): Promise<void> {
  const rule = USER_GROUP_SETTING_RULES[settingName];
  const lookUp = (id: number) => facts.get(id);
  if (typeof value === "number") {
    const named = facts.get(value);
    if (!named) throw invalidGroup();
    checkGroupSetting(settingName, value, rule, lookUp);
    if (named.isSystemGroup && FORBIDDEN_SYSTEM_GROUPS[settingName]?.includes(named.name)) {
      throw badRequest(`'${settingName}' setting cannot be set to '${named.name}' group.`);
    }
    return;
  }
  if (rule.requireSystemGroup) checkGroupSetting(settingName, value, rule, lookUp);
  await accessUsers(trx, realmId, value.direct_members);
  checkGroupSetting(settingName, value, rule, lookUp);
}

/** A group object from a stored row, in Zulip's key order for the `add` event. */
function addEventGroup(group: ApiUserGroup): Record<string, unknown> {
  const settings = Object.fromEntries(USER_GROUP_SETTING_NAMES.map((name) => [name, group[name]]));
  return {
    name: group.name,
    creator_id: group.creator_id,
    date_created: group.date_created,
    members: group.members,
    description: group.description,
    id: group.id,
    is_system_group: group.is_system_group,
    direct_subgroup_ids: group.direct_subgroup_ids,
    ...settings,
    deactivated: group.deactivated,
  };
}

async function groupObject(trx: Trx, realmId: number, groupId: number): Promise<ApiUserGroup> {
  const [group] = await userGroupObjects(trx, realmId, { includeDeactivated: true, ids: [groupId] });
  if (!group) throw new Error(`group ${groupId} vanished`);
  return group;
}

function updateEvent(groupId: number, data: Record<string, unknown>): ClientEvent {
  return { type: "user_group", op: "update", group_id: groupId, data };
}

// ---------------------------------------------------------------------------
// Reading

/** GET /user_groups. */
export async function listUserGroups(services: Services, realm: Realm, user: User, includeDeactivated: boolean): Promise<ApiUserGroup[]> {
  requireNonGuest(user);
  return userGroupObjects(services.storage.db, realm.id, { includeDeactivated });
}

/** GET /user_groups/{id}/members. */
export async function groupMembers(services: Services, realm: Realm, user: User, groupId: number, directOnly: boolean): Promise<number[]> {
  requireNonGuest(user);
  const db = services.storage.db;
  const group = await groupInRealm(db, realm.id, groupId, false);
  return directOnly ? directMemberIds(db, group.id) : recursiveMemberIds(db, group.id);
}

/** GET /user_groups/{id}/subgroups. */
export async function groupSubgroups(services: Services, realm: Realm, user: User, groupId: number, directOnly: boolean): Promise<number[]> {
  requireNonGuest(user);
  const db = services.storage.db;
  const group = await groupInRealm(db, realm.id, groupId, false);
  return directOnly ? directSubgroupIds(db, group.id) : strictSubgroupIds(db, group.id);
}

/** GET /user_groups/{id}/members/{user_id}. */
export async function isGroupMember(
  services: Services,
  realm: Realm,
  user: User,
  groupId: number,
  userId: number,
  directOnly: boolean,
): Promise<boolean> {
  requireNonGuest(user);
  const db = services.storage.db;
  const group = await groupInRealm(db, realm.id, groupId, false);
  // Zulip's access_user_by_id(allow_bots=True): system bots live in another realm there.
  const target = isStorableId(userId) ? await getUserById(db, realm.id, userId) : undefined;
  if (!target || target.is_system_bot) throw noSuchUser();
  if (!target.is_active) throw badRequest("User is deactivated");
  if (directOnly) return (await directMembershipsOf(db, group.id, [target.id])).has(target.id);
  return (await groupIdsOfUser(db, target.id)).has(group.id);
}

// ---------------------------------------------------------------------------
// Creating

export interface CreateGroupInput {
  name: string;
  description: string;
  members: number[];
  subgroups?: number[] | undefined;
  settings: Partial<Record<UserGroupSettingName, GroupSettingValue | undefined>>;
}

/** POST /user_groups/create. Returns the new group's ID. */
export async function createUserGroup(services: Services, realm: Realm, user: User, input: CreateGroupInput): Promise<number> {
  await requireGroupCreatePermission(services, realm, user);
  return inTransaction(services, realm, async (trx, events) => {
    const memberIds = await accessUsers(trx, realm.id, input.members);
    const name = checkGroupName(input.name);

    const facts = await groupFacts(trx, realm.id);
    const systemGroups = await systemGroupIdsByName(trx, realm.id);
    const nobodyId = systemGroups.get(SystemGroup.NOBODY)!;
    const settings = {} as Record<UserGroupSettingName, GroupSettingValue>;
    for (const settingName of USER_GROUP_SETTING_NAMES) {
      const requested = input.settings[settingName];
      if (requested === undefined) continue;
      const value = canonicalGroupSetting(requested, nobodyId);
      await checkSettingValue(trx, realm.id, settingName, value, facts);
      settings[settingName] = value;
    }
    for (const settingName of USER_GROUP_SETTING_NAMES) {
      if (settings[settingName] !== undefined) continue;
      const fallback = USER_GROUP_SETTING_DEFAULTS[settingName];
      settings[settingName] = fallback === "group_creator" ? { direct_members: [user.id], direct_subgroups: [] } : systemGroups.get(fallback)!;
    }

    const taken = await trx.selectFrom("user_groups").select("id").where("realm_id", "=", realm.id).where("name", "=", name).executeTakeFirst();
    if (taken) throw alreadyExists(name);
    const { id: groupId } = await trx
      .insertInto("user_groups")
      .values({
        realm_id: realm.id,
        name,
        description: input.description,
        is_system_group: false,
        creator_id: user.id,
        date_created: services.now(),
        deactivated: false,
        ...Object.fromEntries(USER_GROUP_SETTING_NAMES.map((s) => [s, encodeGroupSetting(settings[s])])),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await insertMembers(trx, groupId, memberIds);
    const created = await groupObject(trx, realm.id, groupId);
    events.push({ type: "user_group", op: "add", group: addEventGroup({ ...created, members: memberIds, direct_subgroup_ids: [] }) });

    if (input.subgroups && input.subgroups.length > 0) {
      const subgroupIds = await checkNewSubgroups(trx, realm.id, groupId, input.subgroups, false);
      await insertSubgroups(trx, groupId, subgroupIds, events);
    }
    return groupId;
  });
}

// ---------------------------------------------------------------------------
// Editing

export interface SettingChange {
  new: GroupSettingValue;
  old?: GroupSettingValue | undefined;
}

export interface UpdateGroupInput {
  name?: string | undefined;
  description?: string | undefined;
  deactivated?: boolean | undefined;
  settings: Partial<Record<UserGroupSettingName, SettingChange | undefined>>;
}

/** PATCH /user_groups/{id}. */
export async function updateUserGroup(services: Services, realm: Realm, user: User, groupId: number, input: UpdateGroupInput): Promise<void> {
  requireNonGuest(user);
  const nothing =
    input.name === undefined &&
    input.description === undefined &&
    input.deactivated === undefined &&
    USER_GROUP_SETTING_NAMES.every((s) => input.settings[s] === undefined);
  if (nothing) throw badRequest("No new data supplied");

  await inTransaction(services, realm, async (trx, events, pending) => {
    const freshRealm = await currentRealm(trx, realm.id);
    const actor = await actorIn(trx, user);
    let group = await groupForUpdate(trx, freshRealm, actor, groupId, "can_manage_group", true);

    if (input.name !== undefined && input.name !== group.name) {
      const name = checkGroupName(input.name);
      if (name !== group.name) {
        const taken = await trx
          .selectFrom("user_groups")
          .select("id")
          .where("realm_id", "=", realm.id)
          .where("name", "=", name)
          .executeTakeFirst();
        if (taken) throw alreadyExists(name);
        await trx.updateTable("user_groups").set({ name }).where("id", "=", group.id).execute();
        events.push(updateEvent(group.id, { name }));
      }
    }
    if (input.description !== undefined && input.description !== group.description) {
      await trx.updateTable("user_groups").set({ description: input.description }).where("id", "=", group.id).execute();
      events.push(updateEvent(group.id, { description: input.description }));
    }
    if (input.deactivated === false && group.deactivated) {
      await trx.updateTable("user_groups").set({ deactivated: false }).where("id", "=", group.id).execute();
      const recipients = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
      pending.add(realm.id, updateEvent(group.id, { deactivated: false }), recipients, LISTS_DEACTIVATED);
      pending.add(realm.id, { type: "user_group", op: "add", group: addEventGroup(await groupObject(trx, realm.id, group.id)) }, recipients, { ...LISTS_DEACTIVATED, present: false });
    }

    const changes = USER_GROUP_SETTING_NAMES.filter((s) => input.settings[s] !== undefined);
    if (changes.length === 0) return;
    group = await groupInRealm(trx, realm.id, group.id, true);
    const facts = await groupFacts(trx, realm.id);
    const nobodyId = (await systemGroupIdsByName(trx, realm.id)).get(SystemGroup.NOBODY)!;
    const stored = storedGroupSettings(group);
    const active = await activeUserIdsAmong(
      trx,
      changes.flatMap((s) => {
        const v = stored[s];
        return typeof v === "number" ? [] : v.direct_members;
      }),
    );
    for (const settingName of changes) {
      const change = input.settings[settingName]!;
      const wanted = canonicalGroupSetting(change.new, nobodyId);
      const current = settingValueForApi(stored[settingName], active);
      if (change.old !== undefined && !sameGroupSetting(canonicalGroupSetting(change.old, nobodyId), current)) {
        throw new ApiError(400, "EXPECTATION_MISMATCH", "'old' value does not match the expected value.", { field_name: "old" });
      }
      if (sameGroupSetting(current, wanted)) continue;
      await checkSettingValue(trx, realm.id, settingName, wanted, facts);
      await trx
        .updateTable("user_groups")
        .set({ [settingName]: encodeGroupSetting(wanted) })
        .where("id", "=", group.id)
        .execute();
      events.push(updateEvent(group.id, { [settingName]: wanted }));
    }
  });
}

// ---------------------------------------------------------------------------
// Deactivating

type Objection =
  | { type: "subgroup"; supergroup_ids: number[] }
  | { type: "channel"; channel_id: number; settings: string[] }
  | { type: "user_group"; group_id: number; settings: string[] }
  | { type: "realm"; settings: string[] };

/** What still uses a group: Zulip's checks in access_user_group_for_deactivation. */
async function objectionsToDeactivating(trx: Trx, realm: Realm, groupId: number): Promise<Objection[]> {
  const objections: Objection[] = [];
  // A setting uses the group when it names it, or names an anonymous group with it as a direct subgroup.
  const uses = (stored: string | null): boolean => {
    if (stored === null) return false;
    const value = JSON.parse(stored) as GroupSettingValue;
    return typeof value === "number" ? value === groupId : value.direct_subgroups.includes(groupId);
  };

  const supergroupIds = await activeDirectSupergroupIds(trx, groupId);
  if (supergroupIds.length > 0) objections.push({ type: "subgroup", supergroup_ids: supergroupIds });

  const channels = await trx
    .selectFrom("channels")
    .select(["id", ...CHANNEL_GROUP_SETTING_COLUMNS])
    .where("realm_id", "=", realm.id)
    .where("is_archived", "=", false)
    .orderBy("id")
    .execute();
  const channelSettings = [...CHANNEL_GROUP_SETTING_COLUMNS].sort();
  for (const channel of channels) {
    const settings = channelSettings.filter((s) => uses(channel[s]));
    if (settings.length > 0) objections.push({ type: "channel", channel_id: channel.id, settings });
  }

  const groups = await trx
    .selectFrom("user_groups")
    .selectAll()
    .where("realm_id", "=", realm.id)
    .where("deactivated", "=", false)
    .orderBy("id")
    .execute();
  for (const group of groups) {
    const settings = USER_GROUP_SETTING_NAMES.filter((s) => uses(group[s]));
    if (settings.length > 0) objections.push({ type: "user_group", group_id: group.id, settings });
  }

  const realmSettings = parseRealmSettings(realm.settings);
  const realmUses = (Object.keys(REALM_GROUP_SETTING_DEFAULTS) as RealmGroupSettingName[]).filter((s) => {
    const value = realmSettings[s];
    return value !== undefined && uses(JSON.stringify(value));
  });
  if (realmUses.length > 0) objections.push({ type: "realm", settings: realmUses });
  return objections;
}

/** Clients registered with include_deactivated_groups keep deactivated groups in their lists. */
const LISTS_DEACTIVATED = { name: "include_deactivated_groups", present: true } as const;

/** POST /user_groups/{id}/deactivate. */
export async function deactivateUserGroup(services: Services, realm: Realm, user: User, groupId: number): Promise<void> {
  await inTransaction(services, realm, async (trx, _events, pending) => {
    const freshRealm = await currentRealm(trx, realm.id);
    const actor = await actorIn(trx, user);
    const group = await groupForUpdate(trx, freshRealm, actor, groupId, "can_manage_group", false);
    const objections = await objectionsToDeactivating(trx, freshRealm, group.id);
    if (objections.length > 0) {
      throw new ApiError(400, "CANNOT_DEACTIVATE_GROUP_IN_USE", "Cannot deactivate user group in use.", { objections });
    }
    await trx.updateTable("user_groups").set({ deactivated: true }).where("id", "=", group.id).execute();
    // Clients that list deactivated groups hear of the change; the others see the group go.
    const recipients = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
    pending.add(realm.id, updateEvent(group.id, { deactivated: true }), recipients, LISTS_DEACTIVATED);
    pending.add(realm.id, { type: "user_group", op: "remove", group_id: group.id }, recipients, { ...LISTS_DEACTIVATED, present: false });
  });
}

// ---------------------------------------------------------------------------
// Members and subgroups

/** Direct memberships, written IDS_PER_STATEMENT rows (two values each) at a time. */
async function insertMembers(trx: Trx, groupId: number, userIds: readonly number[]): Promise<void> {
  for (const chunk of inChunks(userIds)) {
    await trx.insertInto("user_group_members").values(chunk.map((id) => ({ group_id: groupId, user_id: id }))).execute();
  }
}

async function addMembers(trx: Trx, realm: Realm, user: User, groupId: number, userIds: number[], events: ClientEvent[]): Promise<void> {
  const actor = await actorIn(trx, user);
  const joining = userIds.length === 1 && userIds[0] === user.id;
  const group = joining
    ? await groupForUpdateEither(trx, realm, actor, groupId, "can_join_group", "can_add_members_group")
    : await groupForUpdate(trx, realm, actor, groupId, "can_add_members_group", true);
  const ids = await accessUsers(trx, realm.id, userIds);
  const existing = await directMembershipsOf(trx, group.id, ids);
  for (const id of ids) {
    if (existing.has(id)) throw badRequest(`User ${id} is already a member of this group`);
  }
  await insertMembers(trx, group.id, ids);
  events.push({ type: "user_group", op: "add_members", group_id: group.id, user_ids: ids });
}

async function removeMembers(trx: Trx, realm: Realm, user: User, groupId: number, userIds: number[], events: ClientEvent[]): Promise<void> {
  const ids = await accessUsers(trx, realm.id, userIds);
  const actor = await actorIn(trx, user);
  const leaving = userIds.length === 1 && userIds[0] === user.id;
  const group = leaving
    ? await groupForUpdateEither(trx, realm, actor, groupId, "can_leave_group", "can_remove_members_group")
    : await groupForUpdate(trx, realm, actor, groupId, "can_remove_members_group", true);
  const members = new Set(await directMemberIds(trx, group.id));
  for (const id of userIds) {
    if (!members.has(id)) throw badRequest(`There is no member '${id}' in this user group`);
  }
  for (const chunk of inChunks(ids)) await trx.deleteFrom("user_group_members").where("group_id", "=", group.id).where("user_id", "in", chunk).execute();
  events.push({ type: "user_group", op: "remove_members", group_id: group.id, user_ids: ids });
}

/**
 * The named groups to add as (or remove from) subgroups: each must exist in
 * the organization and be active (Zulip's lock_subgroups_with_respect_to_supergroup).
 */
async function namedSubgroups(trx: Trx, realmId: number, requested: readonly number[]): Promise<UserGroup[]> {
  const found: UserGroup[] = [];
  for (const chunk of inChunks([...new Set(requested)].filter(isStorableId))) {
    found.push(...(await trx.selectFrom("user_groups").selectAll().where("realm_id", "=", realmId).where("id", "in", chunk).execute()));
  }
  found.sort((a, b) => a.id - b.id);
  const foundIds = new Set(found.map((g) => g.id));
  const missing = requested.find((id) => !foundIds.has(id));
  if (missing !== undefined) throw badRequest(`Invalid user group ID: ${missing}`);
  if (found.some((g) => g.deactivated)) throw groupDeactivated();
  return found;
}

/** Checks subgroups to add to `groupId`; `checkExisting` is false for a group being created. */
async function checkNewSubgroups(trx: Trx, realmId: number, groupId: number, requested: readonly number[], checkExisting: boolean): Promise<number[]> {
  const subgroups = await namedSubgroups(trx, realmId, requested);
  const ids = subgroups.map((g) => g.id);
  if (!checkExisting) return ids;
  const existing = new Set(await directSubgroupIds(trx, groupId));
  for (const id of ids) {
    if (existing.has(id)) throw badRequest(`User group ${id} is already a subgroup of this group.`);
  }
  if ((await groupAndDescendants(trx, ids)).includes(groupId)) {
    throw badRequest(`User group ${groupId} is already a subgroup of one of the passed subgroups.`);
  }
  return ids;
}

async function insertSubgroups(trx: Trx, groupId: number, subgroupIds: number[], events: ClientEvent[]): Promise<void> {
  for (const chunk of inChunks(subgroupIds)) {
    await trx
      .insertInto("user_group_subgroups")
      .values(chunk.map((id) => ({ supergroup_id: groupId, subgroup_id: id })))
      .execute();
  }
  events.push({ type: "user_group", op: "add_subgroups", group_id: groupId, direct_subgroup_ids: subgroupIds });
}

async function addSubgroups(trx: Trx, realm: Realm, user: User, groupId: number, requested: number[], events: ClientEvent[]): Promise<void> {
  const actor = await actorIn(trx, user);
  const group = await groupForUpdate(trx, realm, actor, groupId, "can_add_members_group", true);
  const ids = await checkNewSubgroups(trx, realm.id, group.id, requested, true);
  await insertSubgroups(trx, group.id, ids, events);
}

async function removeSubgroups(trx: Trx, realm: Realm, user: User, groupId: number, requested: number[], events: ClientEvent[]): Promise<void> {
  const actor = await actorIn(trx, user);
  // Removing a subgroup takes can_manage_group, not can_remove_members_group, as in Zulip.
  const group = await groupForUpdate(trx, realm, actor, groupId, "can_manage_group", true);
  const ids = (await namedSubgroups(trx, realm.id, requested)).map((g) => g.id);
  const existing = new Set(await directSubgroupIds(trx, group.id));
  for (const id of ids) {
    if (!existing.has(id)) throw badRequest(`User group ${id} is not a subgroup of this group.`);
  }
  for (const chunk of inChunks(ids)) await trx.deleteFrom("user_group_subgroups").where("supergroup_id", "=", group.id).where("subgroup_id", "in", chunk).execute();
  events.push({ type: "user_group", op: "remove_subgroups", group_id: group.id, direct_subgroup_ids: ids });
}

export interface MembershipChanges {
  add?: number[] | undefined;
  delete?: number[] | undefined;
  add_subgroups?: number[] | undefined;
  delete_subgroups?: number[] | undefined;
}

const nonEmpty = (ids: number[] | undefined): ids is number[] => ids !== undefined && ids.length > 0;

/** POST /user_groups/{id}/members: all four changes in one transaction, in Zulip's order. */
export async function updateGroupMembership(services: Services, realm: Realm, user: User, groupId: number, changes: MembershipChanges): Promise<void> {
  requireNonGuest(user);
  if (![changes.add, changes.delete, changes.add_subgroups, changes.delete_subgroups].some(nonEmpty)) {
    throw badRequest('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
  }
  await inTransaction(services, realm, async (trx, events, pending) => {
    const freshRealm = await currentRealm(trx, realm.id);
    // Group membership can grant or take away sight of private channels.
    const audiences = await metadataAudiences(trx, realm.id);
    if (nonEmpty(changes.add)) await addMembers(trx, freshRealm, user, groupId, changes.add, events);
    if (nonEmpty(changes.delete)) await removeMembers(trx, freshRealm, user, groupId, changes.delete, events);
    if (nonEmpty(changes.add_subgroups)) await addSubgroups(trx, freshRealm, user, groupId, changes.add_subgroups, events);
    if (nonEmpty(changes.delete_subgroups)) await removeSubgroups(trx, freshRealm, user, groupId, changes.delete_subgroups, events);
    // Clients hear of the membership first, then of the channels it opens or closes (Zulip's order).
    await flushGroupEvents(trx, freshRealm, events, pending);
    await announceAudienceChanges(trx, freshRealm, audiences, services.now(), pending);
  });
}

/** POST /user_groups/{id}/subgroups. */
export async function updateGroupSubgroups(
  services: Services,
  realm: Realm,
  user: User,
  groupId: number,
  changes: { add?: number[] | undefined; delete?: number[] | undefined },
): Promise<void> {
  requireNonGuest(user);
  if (!nonEmpty(changes.add) && !nonEmpty(changes.delete)) throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
  await inTransaction(services, realm, async (trx, events, pending) => {
    const freshRealm = await currentRealm(trx, realm.id);
    const audiences = await metadataAudiences(trx, realm.id);
    if (nonEmpty(changes.add)) await addSubgroups(trx, freshRealm, user, groupId, changes.add, events);
    if (nonEmpty(changes.delete)) await removeSubgroups(trx, freshRealm, user, groupId, changes.delete, events);
    await flushGroupEvents(trx, freshRealm, events, pending);
    await announceAudienceChanges(trx, freshRealm, audiences, services.now(), pending);
  });
}
