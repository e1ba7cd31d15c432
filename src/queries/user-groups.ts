// Reading user groups: recursive membership (through subgroups, cycle-safe
// because UNION drops repeats), group objects, and group-setting resolution.
import { sql, type Kysely, type Transaction } from "kysely";
import { decodeGroupSetting, type GroupFacts, type GroupSettingValue } from "../domain/group-settings.ts";
import { USER_GROUP_SETTING_NAMES, type UserGroupSettingName } from "../domain/user-groups.ts";
import { inChunks, isStorableId, type Storage } from "../storage/database.ts";
import type { Database, UserGroup } from "../storage/schema.ts";
import { preparedQuery } from "../storage/compiled.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Every group the user is in, directly or through subgroups. Empty for deactivated users. */
// Every permission check's first statement (a send's, among others): compiled once.
const groupsOfUser = preparedQuery(
  (_db, a: { userId: number }) => sql<{ id: number }>`
    WITH RECURSIVE member_of(id) AS (
      SELECT m.group_id FROM user_group_members m JOIN users u ON u.id = m.user_id
      WHERE m.user_id = ${a.userId} AND u.is_active = ${true}
      UNION
      SELECT s.supergroup_id FROM user_group_subgroups s JOIN member_of ON s.subgroup_id = member_of.id
    )
    SELECT id FROM member_of`,
);

export async function groupIdsOfUser(db: Db, userId: number): Promise<Set<number>> {
  const rows = await groupsOfUser.execute(db, { userId });
  return new Set(rows.map((r) => Number(r.id)));
}

/**
 * groupIdsOfUser from the process's row cache (storage/row-cache.ts): dropped
 * by any committed change to users (deactivation) or to either membership
 * table, in any process. Outside a transaction only: one sees its own writes.
 */
export async function cachedGroupIdsOfUser(storage: Storage, userId: number): Promise<Set<number>> {
  const groups = await storage.rows.read(
    `groups-of ${userId}`,
    ["users", "user_group_members", "user_group_subgroups"],
    () => groupIdsOfUser(storage.db, userId),
    (ids) => new Set(ids),
  );
  return groups!;
}

/** groupIdsOfUser for many users at once, in chunks: user ID → the groups they are in (empty for deactivated users). */
export async function groupIdsOfUsers(db: Db, userIds: readonly number[]): Promise<Map<number, Set<number>>> {
  const result = new Map<number, Set<number>>(userIds.map((id) => [id, new Set<number>()]));
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    const found = await sql<{ user_id: number; id: number }>`
      WITH RECURSIVE member_of(user_id, id) AS (
        SELECT m.user_id, m.group_id FROM user_group_members m JOIN users u ON u.id = m.user_id
        WHERE m.user_id IN (${sql.join(chunk)}) AND u.is_active = ${true}
        UNION
        SELECT member_of.user_id, s.supergroup_id FROM user_group_subgroups s JOIN member_of ON s.subgroup_id = member_of.id
      )
      SELECT user_id, id FROM member_of`.execute(db);
    for (const row of found.rows) result.get(Number(row.user_id))!.add(Number(row.id));
  }
  return result;
}

/** The groups and every group below them (their subgroups, recursively), each once. */
export async function groupAndDescendants(db: Db, groupIds: readonly number[]): Promise<number[]> {
  const found = new Set<number>();
  for (const chunk of inChunks([...new Set(groupIds)].filter(isStorableId))) {
    const result = await sql<{ id: number }>`
      WITH RECURSIVE below(id) AS (
        SELECT id FROM user_groups WHERE id IN (${sql.join(chunk)})
        UNION
        SELECT s.subgroup_id FROM user_group_subgroups s JOIN below ON s.supergroup_id = below.id
      )
      SELECT id FROM below`.execute(db);
    for (const row of result.rows) found.add(Number(row.id));
  }
  return [...found];
}

/** Active users in a group-setting value, through subgroups. */
export async function usersInSetting(db: Db, value: GroupSettingValue): Promise<number[]> {
  const direct = typeof value === "number" ? [] : value.direct_members;
  const groups = await groupAndDescendants(db, typeof value === "number" ? [value] : value.direct_subgroups);
  const users = await activeUserIdsAmong(db, direct);
  for (const chunk of inChunks(groups)) {
    const rows = await db
      .selectFrom("user_group_members")
      .innerJoin("users", "users.id", "user_group_members.user_id")
      .select("user_group_members.user_id")
      .distinct()
      .where("user_group_members.group_id", "in", chunk)
      .where("users.is_active", "=", true)
      .execute();
    for (const row of rows) users.add(row.user_id);
  }
  return [...users];
}

export async function getGroup(db: Db, realmId: number, groupId: number): Promise<UserGroup | undefined> {
  return db.selectFrom("user_groups").selectAll().where("realm_id", "=", realmId).where("id", "=", groupId).executeTakeFirst();
}

export async function systemGroupIdsByName(db: Db, realmId: number): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom("user_groups")
    .select(["id", "name"])
    .where("realm_id", "=", realmId)
    .where("is_system_group", "=", true)
    .execute();
  return new Map(rows.map((r) => [r.name, r.id]));
}

/** Facts about every group of the organization, for validating group-setting values. */
export async function groupFacts(db: Db, realmId: number): Promise<Map<number, GroupFacts>> {
  const rows = await db
    .selectFrom("user_groups")
    .select(["id", "name", "is_system_group", "deactivated"])
    .where("realm_id", "=", realmId)
    .execute();
  return new Map(rows.map((r) => [r.id, { name: r.name, isSystemGroup: r.is_system_group, deactivated: r.deactivated }]));
}

export interface ApiUserGroup {
  id: number;
  name: string;
  description: string;
  members: number[];
  direct_subgroup_ids: number[];
  creator_id: number | null;
  date_created: number | null;
  is_system_group: boolean;
  deactivated: boolean;
  can_add_members_group: GroupSettingValue;
  can_join_group: GroupSettingValue;
  can_leave_group: GroupSettingValue;
  can_manage_group: GroupSettingValue;
  can_mention_group: GroupSettingValue;
  can_remove_members_group: GroupSettingValue;
}

function formatGroup(group: UserGroup, members: number[], subgroups: number[]): ApiUserGroup {
  const setting = (stored: string | null): GroupSettingValue => {
    if (stored === null) throw new Error(`group ${group.id} has no permission settings`);
    return decodeGroupSetting(stored);
  };
  return {
    id: group.id,
    name: group.name,
    description: group.description,
    members,
    direct_subgroup_ids: subgroups,
    creator_id: group.creator_id,
    date_created: group.date_created,
    is_system_group: group.is_system_group,
    deactivated: group.deactivated,
    can_add_members_group: setting(group.can_add_members_group),
    can_join_group: setting(group.can_join_group),
    can_leave_group: setting(group.can_leave_group),
    can_manage_group: setting(group.can_manage_group),
    can_mention_group: setting(group.can_mention_group),
    can_remove_members_group: setting(group.can_remove_members_group),
  };
}

/** Group rows with direct members (active users) and direct subgroups; userGroupObjects finishes them for the API. */
async function listGroups(db: Db, realmId: number, options: { includeDeactivated: boolean; ids?: number[] }): Promise<ApiUserGroup[]> {
  let query = db.selectFrom("user_groups").selectAll().where("realm_id", "=", realmId).orderBy("id");
  if (!options.includeDeactivated) query = query.where("deactivated", "=", false);
  if (options.ids) query = query.where("id", "in", options.ids.length > 0 ? options.ids : [-1]);
  const groups = await query.execute();
  if (groups.length === 0) return [];
  const ids = groups.map((g) => g.id);
  const members = await db
    .selectFrom("user_group_members")
    .innerJoin("users", "users.id", "user_group_members.user_id")
    .select(["user_group_members.group_id", "user_group_members.user_id"])
    .where("user_group_members.group_id", "in", ids)
    .where("users.is_active", "=", true)
    .orderBy("user_group_members.user_id")
    .execute();
  const subgroups = await db
    .selectFrom("user_group_subgroups")
    .select(["supergroup_id", "subgroup_id"])
    .where("supergroup_id", "in", ids)
    .orderBy("subgroup_id")
    .execute();
  const membersOf = new Map<number, number[]>();
  for (const m of members) {
    const list = membersOf.get(m.group_id);
    if (list) list.push(m.user_id);
    else membersOf.set(m.group_id, [m.user_id]);
  }
  const subgroupsOf = new Map<number, number[]>();
  for (const s of subgroups) {
    const list = subgroupsOf.get(s.supergroup_id);
    if (list) list.push(s.subgroup_id);
    else subgroupsOf.set(s.supergroup_id, [s.subgroup_id]);
  }
  return groups.map((g) => formatGroup(g, membersOf.get(g.id) ?? [], subgroupsOf.get(g.id) ?? []));
}

// ---------------------------------------------------------------------------
// The user-group API's read side: group objects as Zulip serializes them,
// membership lists, and the lookups the group actions validate against.

/** The subset of `userIds` that are active users (any realm: IDs are global). */
export async function activeUserIdsAmong(db: Db, userIds: readonly number[]): Promise<Set<number>> {
  const active = new Set<number>();
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    const rows = await db.selectFrom("users").select("id").where("id", "in", chunk).where("is_active", "=", true).execute();
    for (const row of rows) active.add(row.id);
  }
  return active;
}

/** A group-setting value as the API shows it: deactivated users are left out of an anonymous group's members. */
export function settingValueForApi(value: GroupSettingValue, activeUserIds: ReadonlySet<number>): GroupSettingValue {
  if (typeof value === "number") return value;
  return {
    direct_members: [...new Set(value.direct_members)].filter((id) => activeUserIds.has(id)).sort((a, b) => a - b),
    direct_subgroups: [...new Set(value.direct_subgroups)].sort((a, b) => a - b),
  };
}

/** The six group settings of a stored group row, decoded. */
export function storedGroupSettings(group: UserGroup): Record<UserGroupSettingName, GroupSettingValue> {
  const out = {} as Record<UserGroupSettingName, GroupSettingValue>;
  for (const name of USER_GROUP_SETTING_NAMES) {
    const stored = group[name];
    if (stored === null) throw new Error(`group ${group.id} has no ${name}`);
    out[name] = decodeGroupSetting(stored);
  }
  return out;
}

/**
 * Group objects in the key order of Zulip's user_groups_in_realm_serialized
 * (GET /user_groups, and realm_user_groups in POST /register): sorted by ID,
 * direct members (active users only) and direct subgroups ascending, and
 * deactivated users left out of anonymous settings.
 */
export async function userGroupObjects(
  db: Db,
  realmId: number,
  options: { includeDeactivated: boolean; ids?: number[] },
): Promise<ApiUserGroup[]> {
  const groups = await listGroups(db, realmId, options);
  const anonymousMembers: number[] = [];
  for (const g of groups) {
    for (const name of USER_GROUP_SETTING_NAMES) {
      const value = g[name];
      if (typeof value !== "number") anonymousMembers.push(...value.direct_members);
    }
  }
  const active = await activeUserIdsAmong(db, anonymousMembers);
  return groups.map((g) => ({
    id: g.id,
    name: g.name,
    creator_id: g.creator_id,
    date_created: g.date_created,
    description: g.description,
    members: g.members,
    direct_subgroup_ids: g.direct_subgroup_ids,
    is_system_group: g.is_system_group,
    can_add_members_group: settingValueForApi(g.can_add_members_group, active),
    can_join_group: settingValueForApi(g.can_join_group, active),
    can_leave_group: settingValueForApi(g.can_leave_group, active),
    can_manage_group: settingValueForApi(g.can_manage_group, active),
    can_mention_group: settingValueForApi(g.can_mention_group, active),
    can_remove_members_group: settingValueForApi(g.can_remove_members_group, active),
    deactivated: g.deactivated,
  }));
}

/** Active direct members of a group, ascending. */
export async function directMemberIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db
    .selectFrom("user_group_members")
    .innerJoin("users", "users.id", "user_group_members.user_id")
    .select("user_group_members.user_id")
    .where("user_group_members.group_id", "=", groupId)
    .where("users.is_active", "=", true)
    .orderBy("user_group_members.user_id")
    .execute();
  return rows.map((r) => r.user_id);
}

/** Active members of a group or of any group below it, ascending. */
export async function recursiveMemberIds(db: Db, groupId: number): Promise<number[]> {
  return (await usersInSetting(db, groupId)).sort((a, b) => a - b);
}

/** Direct subgroups of a group, ascending. */
export async function directSubgroupIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db
    .selectFrom("user_group_subgroups")
    .select("subgroup_id")
    .where("supergroup_id", "=", groupId)
    .orderBy("subgroup_id")
    .execute();
  return rows.map((r) => r.subgroup_id);
}

/** Every group below a group (not the group itself), ascending. */
export async function strictSubgroupIds(db: Db, groupId: number): Promise<number[]> {
  const below = await groupAndDescendants(db, await directSubgroupIds(db, groupId));
  return [...new Set(below)].sort((a, b) => a - b);
}

/** Non-deactivated groups that have this group as a direct subgroup, ascending. */
export async function activeDirectSupergroupIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db
    .selectFrom("user_group_subgroups")
    .innerJoin("user_groups", "user_groups.id", "user_group_subgroups.supergroup_id")
    .select("user_group_subgroups.supergroup_id")
    .where("user_group_subgroups.subgroup_id", "=", groupId)
    .where("user_groups.deactivated", "=", false)
    .orderBy("user_group_subgroups.supergroup_id")
    .execute();
  return rows.map((r) => r.supergroup_id);
}

/** Which of `userIds` are direct members of the group (active or not). */
export async function directMembershipsOf(db: Db, groupId: number, userIds: readonly number[]): Promise<Set<number>> {
  const members = new Set<number>();
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    const rows = await db.selectFrom("user_group_members").select("user_id").where("group_id", "=", groupId).where("user_id", "in", chunk).execute();
    for (const row of rows) members.add(row.user_id);
  }
  return members;
}

/**
 * Users of the organization with these IDs that an API request may name:
 * active ones, humans or bots, but not the server's system bots (which in
 * Zulip live in another realm).
 */
export async function activeRealmUsersByIds(db: Db, realmId: number, userIds: readonly number[]): Promise<Map<number, { id: number; is_bot: boolean }>> {
  const found = new Map<number, { id: number; is_bot: boolean }>();
  for (const chunk of inChunks([...new Set(userIds)].filter(isStorableId))) {
    const rows = await db
      .selectFrom("users")
      .select(["id", "is_bot"])
      .where("realm_id", "=", realmId)
      .where("id", "in", chunk)
      .where("is_active", "=", true)
      .where("is_system_bot", "=", false)
      .execute();
    for (const row of rows) found.set(row.id, row);
  }
  return found;
}
