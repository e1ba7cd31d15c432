// Channels, subscriptions, default channels, channel folders, and the
// permission settings of user groups. Group-setting values (a group ID, or
// {direct_members, direct_subgroups}) are stored as JSON text in the row
// they configure, like the organization's in realms.settings.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export const USER_GROUP_SETTING_COLUMNS = [
  "can_add_members_group",
  "can_join_group",
  "can_leave_group",
  "can_manage_group",
  "can_mention_group",
  "can_remove_members_group",
] as const;

export const CHANNEL_GROUP_SETTING_COLUMNS = [
  "can_add_subscribers_group",
  "can_remove_subscribers_group",
  "can_administer_channel_group",
  "can_delete_any_message_group",
  "can_delete_own_message_group",
  "can_move_messages_out_of_channel_group",
  "can_move_messages_within_channel_group",
  "can_resolve_topics_group",
  "can_send_message_group",
  "can_subscribe_group",
] as const;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);

  for (const column of USER_GROUP_SETTING_COLUMNS) {
    await db.schema.alterTable("user_groups").addColumn(column, "text").execute();
    // Existing (system) groups: nobody may manage, join or mention them.
    await sql`UPDATE user_groups SET ${sql.ref(column)} = (
      SELECT CAST(n.id AS TEXT) FROM user_groups n WHERE n.realm_id = user_groups.realm_id AND n.name = 'role:nobody'
    )`.execute(db);
  }

  await db.schema
    .createTable("channel_folders")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("rendered_description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("sort_order", "integer", (c) => c.notNull())
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .addColumn("creator_id", "integer", (c) => c.references("users.id"))
    .addColumn("is_archived", "boolean", (c) => c.notNull().defaultTo(false))
    .execute();
  await sql`CREATE UNIQUE INDEX channel_folders_realm_name ON channel_folders (realm_id, lower(name))`.execute(db);

  let channels = db.schema
    .createTable("channels")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("rendered_description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .addColumn("creator_id", "integer", (c) => c.references("users.id"))
    .addColumn("invite_only", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("is_web_public", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("history_public_to_subscribers", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("message_retention_days", "integer")
    .addColumn("topics_policy", "text", (c) => c.notNull().defaultTo("inherit"))
    .addColumn("folder_id", "integer", (c) => c.references("channel_folders.id"))
    .addColumn("is_archived", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("is_recently_active", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("first_message_id", "integer");
  for (const column of CHANNEL_GROUP_SETTING_COLUMNS) channels = channels.addColumn(column, "text", (c) => c.notNull());
  await channels.execute();
  await sql`CREATE UNIQUE INDEX channels_realm_name ON channels (realm_id, lower(name))`.execute(db);

  await db.schema
    .createTable("subscriptions")
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("channel_id", "integer", (c) => c.notNull().references("channels.id"))
    .addColumn("active", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("color", "text", (c) => c.notNull())
    .addColumn("is_muted", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("pin_to_top", "boolean", (c) => c.notNull().defaultTo(false))
    // NULL: follow the user's global notification settings.
    .addColumn("desktop_notifications", "boolean")
    .addColumn("audible_notifications", "boolean")
    .addColumn("push_notifications", "boolean")
    .addColumn("email_notifications", "boolean")
    .addColumn("wildcard_mentions_notify", "boolean")
    .addPrimaryKeyConstraint("subscriptions_pk", ["user_id", "channel_id"])
    .execute();
  await db.schema.createIndex("subscriptions_channel").on("subscriptions").columns(["channel_id", "active"]).execute();

  await db.schema
    .createTable("default_channels")
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("channel_id", "integer", (c) => c.notNull().references("channels.id"))
    .addPrimaryKeyConstraint("default_channels_pk", ["realm_id", "channel_id"])
    .execute();
}
