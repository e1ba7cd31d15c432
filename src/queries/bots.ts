// Bot accounts as other code reads them: a bot's services (outgoing-webhook
// delivery, embedded bots), its embedded-bot configuration, the bot objects of
// POST /register's realm_bots and of realm_bot events, GET /bots, who hears
// about a bot, and its storage.
import type { Kysely, Transaction } from "kysely";
import { avatarUrl } from "../domain/avatar.ts";
import { BotType } from "../domain/roles.ts";
import { Role } from "../domain/roles.ts";
import type { BotService, Database, User } from "../storage/schema.ts";

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

export type ServiceDict = { base_url: string; interface: number; token: string } | { config_data: Record<string, string>; service_name: string };

/**
 * The `services` of a bot object (Zulip's get_service_dicts_for_bot):
 * outgoing-webhook bots list their endpoints with the token, embedded bots
 * their service name and configuration, other bots nothing.
 */
export async function serviceDicts(db: Db, bot: Pick<User, "id" | "bot_type">): Promise<ServiceDict[]> {
  if (bot.bot_type === BotType.OUTGOING_WEBHOOK) {
    return (await botServices(db, bot.id)).map((s) => ({ base_url: s.base_url, interface: s.interface, token: s.token }));
  }
  if (bot.bot_type === BotType.EMBEDDED) {
    const [service] = await botServices(db, bot.id);
    if (!service) return [];
    return [{ config_data: await botConfig(db, bot.id), service_name: service.name }];
  }
  return [];
}

/** Names of channels by ID (a bot's default channels). */
async function channelNames(db: Db, ids: readonly (number | null)[]): Promise<Map<number, string>> {
  const wanted = [...new Set(ids.filter((id): id is number => id !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await db.selectFrom("channels").select(["id", "name"]).where("id", "in", wanted).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** A bot's default channels by name, as the API shows them (null: none). */
export async function botDefaultChannelNames(db: Db, bot: User): Promise<{ default_sending_stream: string | null; default_events_register_stream: string | null }> {
  const names = await channelNames(db, [bot.default_sending_stream_id, bot.default_events_register_stream_id]);
  return {
    default_sending_stream: bot.default_sending_stream_id === null ? null : (names.get(bot.default_sending_stream_id) ?? null),
    default_events_register_stream: bot.default_events_register_stream_id === null ? null : (names.get(bot.default_events_register_stream_id) ?? null),
  };
}

export interface ApiBot {
  email: string;
  user_id: number;
  full_name: string;
  bot_type: number | null;
  is_active: boolean;
  api_key: string;
  default_sending_stream: string | null;
  default_events_register_stream: string | null;
  default_all_public_streams: boolean;
  avatar_url: string;
  owner_id?: number | null;
  services: ServiceDict[];
}

/**
 * The bot object of realm_bots and of realm_bot add events (Zulip's
 * created_bot_event / get_owned_bot_dicts); owner_id only when the bot has
 * an owner.
 */
export async function formatBot(db: Db, externalUrl: string, bot: User): Promise<ApiBot> {
  const formatted: ApiBot = {
    email: bot.email,
    user_id: bot.id,
    full_name: bot.full_name,
    bot_type: bot.bot_type,
    is_active: bot.is_active,
    api_key: bot.api_key,
    ...(await botDefaultChannelNames(db, bot)),
    default_all_public_streams: bot.default_all_public_streams,
    avatar_url: avatarUrl(externalUrl, bot),
    services: await serviceDicts(db, bot),
  };
  if (bot.bot_owner_id !== null) formatted.owner_id = bot.bot_owner_id;
  return formatted;
}

/** realm_bots: the bots a user owns, active or not; every bot of the organization for administrators. */
export async function botsForUser(db: Db, externalUrl: string, realmId: number, user: Pick<User, "id" | "role">): Promise<ApiBot[]> {
  let query = db.selectFrom("users").selectAll().where("realm_id", "=", realmId).where("is_bot", "=", true).where("is_system_bot", "=", false);
  if (user.role > Role.ADMINISTRATOR) query = query.where("bot_owner_id", "=", user.id);
  const bots = await query.orderBy("id").execute();
  const out: ApiBot[] = [];
  for (const bot of bots) out.push(await formatBot(db, externalUrl, bot));
  return out;
}

/** GET /bots: the caller's own active bots, oldest first (Zulip's get_bots_backend). */
export async function ownActiveBots(db: Db, realmId: number, ownerId: number): Promise<User[]> {
  return db
    .selectFrom("users")
    .selectAll()
    .where("realm_id", "=", realmId)
    .where("is_bot", "=", true)
    .where("is_active", "=", true)
    .where("bot_owner_id", "=", ownerId)
    .orderBy("date_joined")
    .orderBy("id")
    .execute();
}

/**
 * Who hears realm_bot events about a bot (Zulip's bot_owner_user_ids): its
 * owner, and the active human administrators unless a default channel of the
 * bot is private.
 */
export async function botWatchers(db: Db, bot: Pick<User, "realm_id" | "bot_owner_id" | "default_sending_stream_id" | "default_events_register_stream_id">): Promise<number[]> {
  const defaults = [bot.default_sending_stream_id, bot.default_events_register_stream_id].filter((id): id is number => id !== null);
  const privateDefault =
    defaults.length > 0 &&
    (await db.selectFrom("channels").select("id").where("id", "in", defaults).where("invite_only", "=", true).executeTakeFirst()) !== undefined;
  const ids = new Set<number>();
  if (!privateDefault) {
    const admins = await db
      .selectFrom("users")
      .select("id")
      .where("realm_id", "=", bot.realm_id)
      .where("role", "in", [Role.OWNER, Role.ADMINISTRATOR])
      .where("is_active", "=", true)
      .where("is_bot", "=", false)
      .execute();
    for (const a of admins) ids.add(a.id);
  }
  if (bot.bot_owner_id !== null) ids.add(bot.bot_owner_id);
  return [...ids];
}

/** A bot's stored values for the given keys (all keys when none are given), by key. */
export async function botStorageEntries(db: Db, botId: number, keys?: readonly string[]): Promise<Map<string, string>> {
  let query = db.selectFrom("bot_storage").select(["key", "value"]).where("bot_user_id", "=", botId);
  if (keys !== undefined) {
    if (keys.length === 0) return new Map();
    query = query.where("key", "in", [...keys]);
  }
  const rows = await query.orderBy("key").execute();
  return new Map(rows.map((r) => [r.key, r.value]));
}
