// Bot accounts as other code reads them: a bot's services (outgoing-webhook
// delivery, embedded bots), its embedded-bot configuration, and the bot
// objects of GET /bots and POST /register's realm_bots.
import type { Kysely, Transaction } from "kysely";
import type { BotService, Database } from "../storage/schema.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** A bot's services (Zulip's get_bot_services), oldest first; [] for bots without one. */
export async function botServices(db: Db, botId: number): Promise<BotService[]> {
  return db.selectFrom("bot_services").selectAll().where("user_id", "=", botId).orderBy("id").execute();
}

/** An embedded bot's config_data (Zulip's get_bot_config) as a key → value object. */
export async function botConfig(db: Db, botId: number): Promise<Record<string, string>> {
  const rows = await db.selectFrom("bot_config").select(["key", "value"]).where("bot_user_id", "=", botId).orderBy("key").execute();
  const config: Record<string, string> = {};
  for (const row of rows) config[row.key] = row.value;
  return config;
}
