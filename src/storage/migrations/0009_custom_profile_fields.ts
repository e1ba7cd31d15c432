// Custom profile fields (issue 8), as Zulip's CustomProfileField and
// CustomProfileFieldValue:
// - custom_profile_fields: an organization's field definitions. `field_data`
//   is the JSON text Zulip stores (options of a list-of-options field, the
//   subtype and URL pattern of an external account field), "" for the other
//   types. `sort_order` is Zulip's `order` (a reserved word in SQL). A label
//   is unique in its organization.
// - custom_profile_field_values: one user's value for one field, as text (a
//   person picker's user IDs as a JSON list), with its rendered HTML for the
//   Markdown-capable types. Deleting a field deletes its values.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("custom_profile_fields")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("hint", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("field_type", "integer", (c) => c.notNull())
    .addColumn("field_data", "text", (c) => c.notNull().defaultTo(""))
    .addColumn("sort_order", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("display_in_profile_summary", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("required", "boolean", (c) => c.notNull().defaultTo(false))
    .addColumn("editable_by_user", "boolean", (c) => c.notNull().defaultTo(true))
    .addUniqueConstraint("custom_profile_fields_realm_name", ["realm_id", "name"])
    .execute();

  await db.schema
    .createTable("custom_profile_field_values")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("field_id", "integer", (c) => c.notNull().references("custom_profile_fields.id").onDelete("cascade"))
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("rendered_value", "text")
    .addUniqueConstraint("custom_profile_field_values_user_field", ["user_id", "field_id"])
    .execute();
  // Deleting a field or dropping options finds the values by field.
  await db.schema.createIndex("custom_profile_field_values_field").on("custom_profile_field_values").columns(["field_id"]).execute();
}
