// Realm linkifiers (Zulip's RealmFilter): one row per linkifier, its pattern
// unique in the organization as in Zulip, applied in `order` (then id).
//
// realms.linkifiers_version counts the organization's linkifier changes. The
// realm row is read on every request, so a process can tell from it, at no
// extra cost, whether the linkifiers it compiled are still the current ones
// (queries/linkifiers.ts), even when another process changed them.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .createTable("realm_linkifiers")
    .addColumn("id", id.type, id.build)
    .addColumn("realm_id", "integer", (c) => c.notNull().references("realms.id"))
    .addColumn("pattern", "text", (c) => c.notNull())
    .addColumn("url_template", "text", (c) => c.notNull())
    .addColumn("order", "integer", (c) => c.notNull().defaultTo(0))
    .addUniqueConstraint("realm_linkifiers_realm_pattern", ["realm_id", "pattern"])
    .execute();
  await db.schema.alterTable("realms").addColumn("linkifiers_version", "integer", (c) => c.notNull().defaultTo(0)).execute();
}
