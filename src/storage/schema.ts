// Row types of the database, shared by both dialects. Times are UNIX seconds;
// JSON-valued columns are stored as text.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from "kysely";

export interface RealmTable {
  id: Generated<number>;
  /** Subdomain; '' for the organization at the server's root. */
  string_id: string;
  name: string;
  /** Markdown source of the organization description. */
  description: string;
  date_created: number;
  deactivated: ColumnType<boolean, boolean | undefined, boolean>;
  /** JSON object of organization settings; keys not present take the defaults in domain/realm-settings. */
  settings: string;
}

export interface UserTable {
  id: Generated<number>;
  realm_id: number;
  /** API email: the real address, or the fake user{id}@domain one when it is hidden. */
  email: string;
  delivery_email: string;
  full_name: string;
  password_hash: string | null;
  api_key: string;
  role: number;
  is_active: ColumnType<boolean, boolean | undefined, boolean>;
  is_bot: ColumnType<boolean, boolean | undefined, boolean>;
  bot_type: number | null;
  bot_owner_id: number | null;
  /** Notification Bot, Welcome Bot: owned by the server, not listed with the organization's users. */
  is_system_bot: ColumnType<boolean, boolean | undefined, boolean>;
  timezone: string;
  /** 'G': default avatar, 'U': uploaded. */
  avatar_source: string;
  avatar_version: number;
  email_address_visibility: number;
  date_joined: number;
}

export interface UserGroupTable {
  id: Generated<number>;
  realm_id: number;
  name: string;
  description: string;
  is_system_group: ColumnType<boolean, boolean | undefined, boolean>;
  creator_id: number | null;
  date_created: number | null;
  deactivated: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface UserGroupMemberTable {
  group_id: number;
  user_id: number;
}

export interface UserGroupSubgroupTable {
  supergroup_id: number;
  subgroup_id: number;
}

export interface Database {
  realms: RealmTable;
  users: UserTable;
  user_groups: UserGroupTable;
  user_group_members: UserGroupMemberTable;
  user_group_subgroups: UserGroupSubgroupTable;
}

/**
 * Columns that hold booleans. SQLite has no boolean type and returns 0/1, so
 * the storage layer converts these columns back to booleans in result rows.
 * A column name here must mean a boolean in every table that has it.
 */
export const BOOLEAN_COLUMNS: ReadonlySet<string> = new Set([
  "deactivated",
  "is_active",
  "is_bot",
  "is_system_bot",
  "is_system_group",
]);

export type Realm = Selectable<RealmTable>;
export type NewRealm = Insertable<RealmTable>;
export type User = Selectable<UserTable>;
export type NewUser = Insertable<UserTable>;
export type UserUpdate = Updateable<UserTable>;
export type UserGroup = Selectable<UserGroupTable>;
