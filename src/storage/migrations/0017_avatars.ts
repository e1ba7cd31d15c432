// Uploaded avatars and organization icons. A user's uploaded avatar is stored
// under a random name (avatar_hash, like Zulip's salted user_avatar_hash) so
// that nobody can fetch avatars by guessing URLs; NULL while the avatar is the
// generated default. The organization's icon: its source ('G' generated
// default, 'U' uploaded) and a version that every change increments, as
// Zulip's Realm.icon_source / icon_version.
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("users").addColumn("avatar_hash", "text").execute();
  await db.schema.alterTable("realms").addColumn("icon_source", "text", (c) => c.notNull().defaultTo("G")).execute();
  await db.schema.alterTable("realms").addColumn("icon_version", "integer", (c) => c.notNull().defaultTo(1)).execute();
}
