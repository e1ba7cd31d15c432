// Bot accounts (Zulip's bot fields of UserProfile, Service, BotStorageData and
// BotConfigData). A bot is a users row with is_bot; these tables hold what only
// bots have:
// - users.default_sending_stream_id / default_events_register_stream_id /
//   default_all_public_streams: a bot's defaults (Zulip's UserProfile fields of
//   the same names), NULL / false for everyone else.
// - bot_services: an outgoing-webhook or embedded bot's service (Zulip's
//   Service): name (service_name), base_url (payload_url), the random token sent
//   with every outgoing-webhook request, interface 1 generic / 2 Slack-compatible.
// - bot_storage: the key/value store of GET/PUT/DELETE /bot_storage (Zulip's
//   BotStorageData), one row per (bot, key).
// - bot_config: an embedded bot's config_data (Zulip's BotConfigData), one row
//   per (bot, key).
import type { Kysely } from "kysely";
import type { Dialect } from "../database.ts";
import { idColumnType } from "./helpers.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const id = idColumnType(dialect);
  await db.schema
    .alterTable("users")
    .addColumn("default_sending_stream_id", "integer", (c) => c.references("channels.id"))
    .execute();
  await db.schema
    .alterTable("users")
    .addColumn("default_events_register_stream_id", "integer", (c) => c.references("channels.id"))
    .execute();
  await db.schema
    .alterTable("users")
    .addColumn("default_all_public_streams", "boolean", (c) => c.notNull().defaultTo(false))
    .execute();

  await db.schema
    .createTable("bot_services")
    .addColumn("id", id.type, id.build)
    .addColumn("user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("base_url", "text", (c) => c.notNull())
    .addColumn("token", "text", (c) => c.notNull())
    .addColumn("interface", "integer", (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.createIndex("bot_services_user").on("bot_services").columns(["user_id", "id"]).execute();

  await db.schema
    .createTable("bot_storage")
    .addColumn("bot_user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("value", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("bot_storage_pkey", ["bot_user_id", "key"])
    .execute();

  await db.schema
    .createTable("bot_config")
    .addColumn("bot_user_id", "integer", (c) => c.notNull().references("users.id"))
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("value", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("bot_config_pkey", ["bot_user_id", "key"])
    .execute();
}
