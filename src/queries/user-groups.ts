// Reading user groups: recursive membership (through subgroups, cycle-safe
// because UNION drops repeats), group objects, and group-setting resolution.
import { sql, type Kysely, type Transaction } from "kysely";
import { decodeGroupSetting, type GroupFacts, type GroupSettingValue } from "../domain/group-settings.ts";
import type { Database, UserGroup } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Every group the user is in, directly or through subgroups. Empty for deactivated users. */
export async function groupIdsOfUser(db: Db, userId: number): Promise<Set<number>> {
  const result = await sql<{ id: number }>`
    WITH RECURSIVE member_of(id) AS (
      SELECT m.group_id FROM user_group_members m JOIN users u ON u.id = m.user_id
      WHERE m.user_id = ${userId} AND u.is_active = ${true}
      UNION
      SELECT s.supergroup_id FROM user_group_subgroups s JOIN member_of ON s.subgroup_id = member_of.id
    )
    SELECT id FROM member_of`.execute(db);
  return new Set(result.rows.map((r) => Number(r.id)));
}

/** The group and every group below it (its subgroups, recursively). */
export async function groupAndDescendants(db: Db, groupIds: readonly number[]): Promise<number[]> {
  if (groupIds.length === 0) return [];
  const result = await sql<{ id: number }>`
    WITH RECURSIVE below(id) AS (
      SELECT id FROM user_groups WHERE id IN (${sql.join(groupIds)})
      UNION
      SELECT s.subgroup_id FROM user_group_subgroups s JOIN below ON s.supergroup_id = below.id
    )
    SELECT id FROM below`.execute(db);
  return result.rows.map((r) => Number(r.id));
}

/** Active users in a group-setting value, through subgroups. */
export async function usersInSetting(db: Db, value: GroupSettingValue): Promise<number[]> {
  const direct = typeof value === "number" ? [] : value.direct_members;
  const groups = await groupAndDescendants(db, typeof value === "number" ? [value] : value.direct_subgroups);
  const viaGroups =
    groups.length === 0
      ? []
      : await db
          .selectFrom("user_group_members")
          .innerJoin("users", "users.id", "user_group_members.user_id")
          .select("user_group_members.user_id")
          .distinct()
          .where("user_group_members.group_id", "in", groups)
          .where("users.is_active", "=", true)
          .execute();
  const activeDirect =
    direct.length === 0
      ? []
      : await db.selectFrom("users").select("id").where("id", "in", direct).where("is_active", "=", true).execute();
  return [...new Set([...viaGroups.map((r) => r.user_id), ...activeDirect.map((r) => r.id)])];
}

export async function getGroup(db: Db, realmId: number, groupId: number): Promise<UserGroup | undefined> {
  return db.selectFrom("user_groups").selectAll().where("realm_id", "=", realmId).where("id", "=", groupId).executeTakeFirst();
}

export async function getGroupByName(db: Db, realmId: number, name: string): Promise<UserGroup | undefined> {
  return db
    .selectFrom("user_groups")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where(sql<string>`lower(name)`, "=", name.toLowerCase())
    .executeTakeFirst();
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

export function formatGroup(group: UserGroup, members: number[], subgroups: number[]): ApiUserGroup {
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

/** Group objects of the organization, with direct members (active users) and direct subgroups. */
export async function listGroups(db: Db, realmId: number, options: { includeDeactivated: boolean; ids?: number[] }): Promise<ApiUserGroup[]> {
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
  for (const m of members) membersOf.set(m.group_id, [...(membersOf.get(m.group_id) ?? []), m.user_id]);
  const subgroupsOf = new Map<number, number[]>();
  for (const s of subgroups) subgroupsOf.set(s.supergroup_id, [...(subgroupsOf.get(s.supergroup_id) ?? []), s.subgroup_id]);
  return groups.map((g) => formatGroup(g, membersOf.get(g.id) ?? [], subgroupsOf.get(g.id) ?? []));
}
