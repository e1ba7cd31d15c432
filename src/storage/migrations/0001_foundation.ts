// Organizations, users and the user-group tables that roles are mirrored into.
import { sql, type Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

// Migrations see an untyped database: they describe the schema as it was then.
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);

  await db.schema
    .createTable("realms")
    .addColumn("id", id.type, id.build)
    .addColumn("string_id", "text", (c) => c.notNull().unique())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("date_created", "bigint", (c) => c.notNull())
    .addColumn("deactivated", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("settings", "text", (c) => c.notNull().defaultTo("{}"))
    .execute();

  await db.schema
    .createTable("users")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("email", "text", (c) => c.notNull())
    .addColumn("delivery_email", "text", (c) => c.notNull())
    .addColumn("full_name", "text", (c) => c.notNull())
    .addColumn("password_hash", "text")
    .addColumn("api_key", "text", (c) => c.notNull().unique())
    .addColumn("role", "integer", (c) => c.notNull())
    .addColumn("is_active", "boolean", (c) => c.notNull().defaultTo(true))
    .addColumn("is_bot", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("bot_type", "integer")
    .addColumn("bot_owner_id", "integer", (c) => c.references("users.id"))
    .addColumn("is_system_bot", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("timezone", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("avatar_source", "text", (c) => c.notNull().defaultTo("G"))
    .addColumn("avatar_version", "integer", (c) => c.notNull().defaultTo(1))
    .addColumn("email_address_visibility", "integer", (c) => c.notNull())
    .addColumn("date_joined", "bigint", (c) => c.notNull())
    .execute();
  // Emails match case-insensitively, as in Zulip.
  await sql`CREATE UNIQUE INDEX users_realm_delivery_email ON users (realm_id, lower(delivery_email))`.execute(db);
  await sql`CREATE INDEX users_realm_email ON users (realm_id, lower(email))`.execute(db);

  await db.schema
    .createTable("user_groups")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("description", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("is_system_group", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("creator_id", "integer", (c) => c.references("users.id"))
    .addColumn("date_created", "bigint")
    .addColumn("deactivated", "boolean", (c) => c.notNull().defaultTo(false))
    .addUniqueConstraint("user_groups_realm_name", ["realm_id", "name"])
    .execute();

  await db.schema
    .createTable("user_group_members")
    .addColumn("group_id", "integer", (c) => c.notNull().references("user_groups.id"))
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addPrimaryKeyConstraint("user_group_members_pk", ["group_id", "user_id"])
    .execute();
  await db.schema.createIndex("user_group_members_user").on("user_group_members").column("user_id").execute();

  await db.schema
    .createTable("user_group_subgroups")
    .addColumn("supergroup_id", "integer", (c) => c.notNull().references("user_groups.id"))
    .addColumn("subgroup_id", "integer", (c) => c.notNull().references("user_groups.id"))
    .addPrimaryKeyConstraint("user_group_subgroups_pk", ["supergroup_id", "subgroup_id"])
    .execute();
  await db.schema.createIndex("user_group_subgroups_sub").on("user_group_subgroups").column("subgroup_id").execute();
}
