// Bot accounts over the API (Zulip's add_bot_backend, patch_bot_backend,
// deactivate_bot_backend, regenerate_*_api_key and zerver/actions/bots.py):
// permission checks, the writes in one transaction, then the events —
// realm_user for everyone, realm_bot for those who see the bot in realm_bots
// (its owner and the administrators, queries/bots.ts botWatchers).
import {
  BotType,
  botEmail,
  checkBotCreationPolicy,
  checkInterfaceType,
  checkServiceUrl,
  checkShortName,
  checkValidBotType,
} from "../domain/bots.ts";
import { hasPermission, type Actor } from "../domain/group-settings.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES } from "../domain/realm-settings.ts";
import { isGuest, Role } from "../domain/roles.ts";
import { checkFullName, isValidEmail } from "../domain/users.ts";
import { ApiError, badRequest, humansOnly, insufficientPermission } from "../errors.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { botDefaultChannelNames, botServices, botWatchers, formatBot, ownActiveBots, serviceDicts } from "../queries/bots.ts";
import { channelIdByName } from "../queries/channels.ts";
import { avatarUrl, getUserByDeliveryEmail, getUserById, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Kysely } from "kysely";
import type { Database, Realm, User, UserUpdate } from "../storage/schema.ts";
import { outboundSettings } from "../outbound/request.ts";
import { actorFor } from "./actor.ts";
import { discardPreparedAvatar, prepareAvatar, removeAvatarFiles, setAvatarInTransaction, type ImageUpload, type PreparedAvatar } from "./avatars.ts";
import { generateApiKey } from "./credentials.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { announceNewUser, changeRoleAsActor, deactivateWithBots, insertUser } from "./users.ts";

/** Zulip's require_member_or_admin: guests and bots may not manage bots. */
export function requireMemberOrAdmin(user: User): void {
  if (isGuest(user.role)) throw badRequest("Not allowed for guest users");
  if (user.is_bot) throw humansOnly();
}

type Db = Kysely<Database> | Trx;

function noSuchBot(): ApiError {
  return badRequest("No such bot");
}

/**
 * Zulip's access_bot_by_id: a bot of the organization (active or not) that
 * the actor administers — its owner, or an organization administrator.
 */
async function accessBot(trx: Trx, realm: Realm, actor: User, botId: number): Promise<User> {
  const bot = await getUserById(trx, realm.id, botId);
  if (!bot || !bot.is_bot || bot.is_system_bot) throw noSuchBot();
  const administers = actor.role <= Role.ADMINISTRATOR || (bot.bot_owner_id === actor.id && !actor.is_bot);
  if (!administers) throw insufficientPermission();
  return bot;
}

/** Zulip's check_bot_name_available: no active account may already have the name. */
async function nameInUse(trx: Db, realmId: number, fullName: string, exceptId?: number): Promise<boolean> {
  let query = trx.selectFrom("users").select("id").where("realm_id", "=", realmId).where("full_name", "=", fullName).where("is_active", "=", true);
  if (exceptId !== undefined) query = query.where("id", "!=", exceptId);
  return (await query.executeTakeFirst()) !== undefined;
}

async function creationRights(services: Services, realm: Realm, user: User): Promise<{ all: boolean; writeOnly: boolean }> {
  const actor: Actor = await actorFor(services.storage.db, user);
  const settings = parseRealmSettings(realm.settings);
  return {
    all: hasPermission(settings.can_create_bots_group, REALM_GROUP_SETTING_RULES.can_create_bots_group, actor),
    writeOnly: hasPermission(settings.can_create_write_only_bots_group, REALM_GROUP_SETTING_RULES.can_create_write_only_bots_group, actor),
  };
}

/**
 * Reactivating a bot (POST /users/{id}/reactivate, in users.ts): Zulip's
 * check_bot_creation_policy for the bot's type and check_bot_name_available
 * with its reactivation message.
 */
export async function checkBotReactivation(trx: Trx, realm: Realm, actor: User, bot: User): Promise<void> {
  const settings = parseRealmSettings(realm.settings);
  const who = await actorFor(trx, actor);
  checkBotCreationPolicy(
    actor.role,
    bot.bot_type ?? BotType.GENERIC,
    hasPermission(settings.can_create_bots_group, REALM_GROUP_SETTING_RULES.can_create_bots_group, who),
    hasPermission(settings.can_create_write_only_bots_group, REALM_GROUP_SETTING_RULES.can_create_write_only_bots_group, who),
  );
  if (await nameInUse(trx, realm.id, bot.full_name.trim(), bot.id)) {
    throw badRequest(
      `There is already an active bot named "${bot.full_name}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  }
}

export interface CreateBotInput {
  fullName: string;
  shortName: string;
  botType: number;
  payloadUrl: string;
  serviceName?: string | undefined;
  configData: Record<string, string>;
  interfaceType: number;
  defaultSendingStream?: string | undefined;
  defaultEventsRegisterStream?: string | undefined;
  defaultAllPublicStreams?: boolean | undefined;
  upload: ImageUpload;
}

export interface CreatedBot {
  user_id: number;
  api_key: string;
  avatar_url: string;
  default_sending_stream: string | null;
  default_events_register_stream: string | null;
  default_all_public_streams: boolean;
}

/** POST /bots, in Zulip's order of checks. */
export async function createBot(services: Services, realm: Realm, actor: User, input: CreateBotInput): Promise<CreatedBot> {
  requireMemberOrAdmin(actor);
  const shortName = checkShortName(input.shortName);
  // Every bot but an incoming webhook's names its service, by default after itself.
  const serviceName = input.botType !== BotType.INCOMING_WEBHOOK ? input.serviceName || shortName : input.serviceName;
  const fullName = checkFullName(input.fullName);
  const email = botEmail(shortName, services.config.fakeEmailDomain);
  // Parley runs no embedded bots: Zulip's EMBEDDED_BOTS_ENABLED is off.
  if (input.botType === BotType.EMBEDDED) throw badRequest("Embedded bots are not enabled.");
  if (!isValidEmail(email)) throw badRequest("Bad name or username");
  const db = services.storage.db;
  if (await getUserByDeliveryEmail(db, realm.id, email)) throw badRequest("Username already in use");
  if (await nameInUse(db, realm.id, fullName)) throw badRequest("Name is already in use!");
  const rights = await creationRights(services, realm, actor);
  checkBotCreationPolicy(actor.role, input.botType, rights.all, rights.writeOnly);
  checkValidBotType(actor.role, input.botType, rights.all);
  checkInterfaceType(input.interfaceType);
  if (input.botType === BotType.OUTGOING_WEBHOOK && input.payloadUrl !== "") checkServiceUrl(input.payloadUrl, "payload_url", outboundSettings(services.config));
  if (input.upload.fieldCount > 1) throw badRequest("You may only upload one file at a time");
  const actorForChannels = await actorFor(db, actor);
  const sendingId = input.defaultSendingStream === undefined ? null : await channelIdByName(db, realm.id, actorForChannels, input.defaultSendingStream);
  const registerId =
    input.defaultEventsRegisterStream === undefined ? null : await channelIdByName(db, realm.id, actorForChannels, input.defaultEventsRegisterStream);
  // Zulip's check_valid_bot_config: an incoming webhook bot may name only an
  // integration that takes configuration options, and none of Parley's do.
  if (input.botType === BotType.INCOMING_WEBHOOK && serviceName) throw badRequest(`Invalid integration '${serviceName}'.`);

  const prepared: PreparedAvatar | undefined = input.upload.fieldCount === 1 && input.upload.file ? await prepareAvatar(services, realm, input.upload.file) : undefined;
  try {
    return await inRealmTransaction(services, realm.id, async (trx, pending) => {
      // Re-checked under the organization's lock: two requests for one short name at once.
      if (await getUserByDeliveryEmail(trx, realm.id, email)) throw badRequest("Username already in use");
      const inserted = await insertUser(trx, services, realm, {
        email,
        fullName,
        passwordHash: null,
        role: Role.MEMBER,
        isBot: true,
        botType: input.botType,
        botOwnerId: actor.id,
      });
      const changes: UserUpdate = {
        default_sending_stream_id: sendingId,
        default_events_register_stream_id: registerId,
        default_all_public_streams: input.defaultAllPublicStreams ?? false,
      };
      if (prepared) Object.assign(changes, { avatar_source: "U", avatar_hash: prepared.hash });
      await trx.updateTable("users").set(changes).where("id", "=", inserted.id).execute();
      if (input.botType === BotType.OUTGOING_WEBHOOK) {
        await trx
          .insertInto("bot_services")
          .values({ user_id: inserted.id, name: serviceName!, base_url: input.payloadUrl, token: generateApiKey(), interface: input.interfaceType })
          .execute();
      }
      if (input.botType === BotType.INCOMING_WEBHOOK) {
        const entries = Object.entries(input.configData);
        if (entries.length > 0) await trx.insertInto("bot_config").values(entries.map(([key, value]) => ({ bot_user_id: inserted.id, key, value }))).execute();
      }
      const bot = (await getUserById(trx, realm.id, inserted.id))!;
      await announceNewUser(trx, services, pending, realm, bot);
      // Zulip's notify_created_bot.
      pending.add(realm.id, { type: "realm_bot", op: "add", bot: await formatBot(trx, services.config.externalUrl, bot) }, await botWatchers(trx, bot));
      return {
        user_id: bot.id,
        api_key: bot.api_key,
        avatar_url: avatarUrl(services.config, bot),
        ...(await botDefaultChannelNames(trx, bot)),
        default_all_public_streams: bot.default_all_public_streams,
      };
    });
  } catch (error) {
    await discardPreparedAvatar(services, prepared);
    throw error;
  }
}

export interface UpdateBotInput {
  fullName?: string | undefined;
  role?: number | undefined;
  botOwnerId?: number | undefined;
  configData?: Record<string, string> | undefined;
  servicePayloadUrl?: string | undefined;
  serviceInterface: number;
  defaultSendingStream?: string | undefined;
  defaultEventsRegisterStream?: string | undefined;
  defaultAllPublicStreams?: boolean | undefined;
  upload: ImageUpload;
}

/** A realm_bot update carrying only what changed, to those who see the bot. */
async function queueBotUpdate(trx: Trx, pending: PendingEvents, bot: User, fields: Record<string, unknown>): Promise<void> {
  pending.add(bot.realm_id, { type: "realm_bot", op: "update", bot: { user_id: bot.id, ...fields } }, await botWatchers(trx, bot));
}

async function reread(trx: Trx, bot: User): Promise<User> {
  return (await getUserById(trx, bot.realm_id, bot.id))!;
}

/** Zulip's do_change_bot_owner: the old owner loses the bot, the new one gains it, the rest hear an update. */
async function changeBotOwner(trx: Trx, services: Services, pending: PendingEvents, realm: Realm, bot: User, previousOwner: User | undefined, owner: User): Promise<User> {
  await trx.updateTable("users").set({ bot_owner_id: owner.id }).where("id", "=", bot.id).execute();
  const changed = await reread(trx, bot);
  const updateUsers = new Set(await botWatchers(trx, changed));
  // Administrators see every bot in realm_bots: an update, never a removal or an addition.
  if (previousOwner && previousOwner.role > Role.ADMINISTRATOR) {
    pending.add(realm.id, { type: "realm_bot", op: "delete", bot: { user_id: bot.id } }, [previousOwner.id]);
    updateUsers.delete(previousOwner.id);
  }
  if (owner.role > Role.ADMINISTRATOR) {
    pending.add(realm.id, { type: "realm_bot", op: "add", bot: await formatBot(trx, services.config.externalUrl, changed) }, [owner.id]);
    updateUsers.delete(owner.id);
  }
  pending.add(realm.id, { type: "realm_bot", op: "update", bot: { user_id: bot.id, owner_id: owner.id } }, [...updateUsers]);
  const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
  pending.add(realm.id, { type: "realm_user", op: "update", person: { user_id: bot.id, bot_owner_id: owner.id } }, everyone);
  return changed;
}

/** PATCH /bots/{bot_id}, in Zulip's order. Returns Zulip's reply. */
export async function updateBot(services: Services, realm: Realm, actor: User, botId: number, input: UpdateBotInput): Promise<Record<string, unknown>> {
  requireMemberOrAdmin(actor);
  if (input.upload.fieldCount > 1) throw badRequest("You may only upload one file at a time");
  const prepared: PreparedAvatar | undefined = input.upload.fieldCount === 1 && input.upload.file ? await prepareAvatar(services, realm, input.upload.file) : undefined;
  let previousHash: string | null = null;
  try {
    const reply = await inRealmTransaction(services, realm.id, async (trx, pending) => {
      let bot = await accessBot(trx, realm, actor, botId);
      if (input.fullName !== undefined) {
        const fullName = checkFullName(input.fullName);
        // Clients send the name unchanged with every edit: that is no change (Zulip's check_change_bot_full_name).
        if (fullName !== bot.full_name) {
          if (await nameInUse(trx, realm.id, fullName)) throw badRequest("Name is already in use!");
          await trx.updateTable("users").set({ full_name: fullName }).where("id", "=", bot.id).execute();
          bot = await reread(trx, bot);
          const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
          pending.add(realm.id, { type: "realm_user", op: "update", person: { email: bot.email, user_id: bot.id, full_name: fullName } }, everyone);
          await queueBotUpdate(trx, pending, bot, { email: bot.email, full_name: fullName });
        }
      }
      if (input.role !== undefined) {
        await changeRoleAsActor(trx, services, pending, realm, actor, bot, input.role);
        bot = await reread(trx, bot);
      }
      if (input.botOwnerId !== undefined) {
        const owner = await getUserById(trx, realm.id, input.botOwnerId);
        if (!owner || owner.is_system_bot) throw badRequest("Failed to change owner, no such user");
        if (!owner.is_active) throw badRequest("Failed to change owner, user is deactivated");
        if (owner.is_bot) throw badRequest("Failed to change owner, bots can't own other bots");
        if (bot.bot_owner_id !== owner.id) {
          const previous = bot.bot_owner_id === null ? undefined : await getUserById(trx, realm.id, bot.bot_owner_id);
          bot = await changeBotOwner(trx, services, pending, realm, bot, previous, owner);
        }
      }
      const actorForChannels = await actorFor(trx, actor);
      for (const [value, column, field] of [
        [input.defaultSendingStream, "default_sending_stream_id", "default_sending_stream"],
        [input.defaultEventsRegisterStream, "default_events_register_stream_id", "default_events_register_stream"],
      ] as const) {
        if (value === undefined) continue;
        // "" clears the default.
        const channelId = value === "" ? null : await channelIdByName(trx, realm.id, actorForChannels, value);
        await trx.updateTable("users").set({ [column]: channelId }).where("id", "=", bot.id).execute();
        bot = await reread(trx, bot);
        await queueBotUpdate(trx, pending, bot, { [field]: value === "" ? null : (await botDefaultChannelNames(trx, bot))[field] });
      }
      if (input.defaultAllPublicStreams !== undefined) {
        await trx.updateTable("users").set({ default_all_public_streams: input.defaultAllPublicStreams }).where("id", "=", bot.id).execute();
        bot = await reread(trx, bot);
        await queueBotUpdate(trx, pending, bot, { default_all_public_streams: input.defaultAllPublicStreams });
      }
      if (input.servicePayloadUrl !== undefined) {
        checkInterfaceType(input.serviceInterface);
        checkServiceUrl(input.servicePayloadUrl, "service_payload_url", outboundSettings(services.config));
        // Zulip's do_update_outgoing_webhook_service: the bot's services get the new endpoint and format.
        if ((await botServices(trx, bot.id)).length === 0) throw badRequest("This bot has no outgoing webhook service");
        await trx.updateTable("bot_services").set({ base_url: input.servicePayloadUrl, interface: input.serviceInterface }).where("user_id", "=", bot.id).execute();
        const [service] = await botServices(trx, bot.id);
        await queueBotUpdate(trx, pending, bot, { services: [{ base_url: service!.base_url, interface: service!.interface, token: service!.token }] });
      }
      if (input.configData !== undefined) {
        // Zulip's do_update_bot_config_data: each key set; an embedded bot's watchers see its service anew.
        for (const [key, value] of Object.entries(input.configData)) {
          const updated = await trx.updateTable("bot_config").set({ value }).where("bot_user_id", "=", bot.id).where("key", "=", key).executeTakeFirst();
          if (Number(updated.numUpdatedRows) === 0) await trx.insertInto("bot_config").values({ bot_user_id: bot.id, key, value }).execute();
        }
        if (bot.bot_type === BotType.EMBEDDED) await queueBotUpdate(trx, pending, bot, { services: await serviceDicts(trx, bot) });
      }
      if (prepared) {
        const changed = await setAvatarInTransaction(trx, services, pending, realm.id, bot.id, prepared.hash);
        previousHash = changed.previousHash;
        bot = changed.user;
      }
      const result: Record<string, unknown> = {
        full_name: bot.full_name,
        avatar_url: avatarUrl(services.config, bot),
        service_interface: input.serviceInterface,
        service_payload_url: input.servicePayloadUrl ?? null,
        config_data: input.configData ?? null,
        ...(await botDefaultChannelNames(trx, bot)),
        default_all_public_streams: bot.default_all_public_streams,
      };
      if (bot.bot_owner_id !== null) {
        const owner = await getUserById(trx, realm.id, bot.bot_owner_id);
        if (owner) result.bot_owner = owner.email;
      }
      return result;
    });
    await removeAvatarFiles(services, realm.id, previousHash);
    return reply;
  } catch (error) {
    await discardPreparedAvatar(services, prepared);
    throw error;
  }
}

/** DELETE /bots/{bot_id}: deactivates the bot (already deactivated: nothing to do, as Zulip's do_deactivate_user). */
export async function deactivateBot(services: Services, realm: Realm, actor: User, botId: number): Promise<void> {
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const bot = await accessBot(trx, realm, actor, botId);
    if (!bot.is_active) return;
    await deactivateWithBots(trx, pending, realm, bot);
  });
}

/**
 * Zulip's do_regenerate_api_key: a new random key, effective at once (every
 * request reads the key from the database); the old one stops working. Push
 * notification tokens registered with the old key are dropped, as Zulip's
 * clear_push_device_tokens. A bot's watchers hear the new key.
 */
async function regenerateApiKey(trx: Trx, pending: PendingEvents, user: User): Promise<string> {
  const apiKey = generateApiKey();
  await trx.updateTable("users").set({ api_key: apiKey }).where("id", "=", user.id).execute();
  await trx.deleteFrom("push_device_tokens").where("user_id", "=", user.id).execute();
  if (user.is_bot) await queueBotUpdate(trx, pending, user, { api_key: apiKey });
  return apiKey;
}

/** POST /bots/{bot_id}/api_key/regenerate. */
export async function regenerateBotApiKey(services: Services, realm: Realm, actor: User, botId: number): Promise<string> {
  requireMemberOrAdmin(actor);
  return inRealmTransaction(services, realm.id, async (trx, pending) => regenerateApiKey(trx, pending, await accessBot(trx, realm, actor, botId)));
}

/** POST /users/me/api_key/regenerate: for people; a bot's key is regenerated by its owner. */
export async function regenerateOwnApiKey(services: Services, realm: Realm, actor: User): Promise<string> {
  if (actor.is_bot) throw humansOnly();
  return inRealmTransaction(services, realm.id, async (trx, pending) => regenerateApiKey(trx, pending, (await getUserById(trx, realm.id, actor.id))!));
}

/** GET /bots: the caller's own active bots, oldest first (Zulip's get_bots_backend); user_id added. */
export async function listOwnBots(services: Services, realm: Realm, actor: User): Promise<Record<string, unknown>[]> {
  requireMemberOrAdmin(actor);
  const db = services.storage.db;
  const out: Record<string, unknown>[] = [];
  for (const bot of await ownActiveBots(db, realm.id, actor.id)) {
    out.push({
      username: bot.email,
      full_name: bot.full_name,
      api_key: bot.api_key,
      avatar_url: avatarUrl(services.config, bot),
      ...(await botDefaultChannelNames(db, bot)),
      default_all_public_streams: bot.default_all_public_streams,
      user_id: bot.id,
    });
  }
  return out;
}
