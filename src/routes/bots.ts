// Bot accounts and bot storage: POST/GET /bots, PATCH/DELETE /bots/{bot_id},
// POST /bots/{bot_id}/api_key/regenerate, POST /users/me/api_key/regenerate,
// GET/PUT/DELETE /bot_storage. POST and PATCH /bots take an avatar image as a
// multipart file (routes/uploads.ts receives it).
import { getBotStorage, putBotStorage, removeBotStorage } from "../actions/bot-storage.ts";
import { createBot, deactivateBot, listOwnBots, regenerateBotApiKey, regenerateOwnApiKey, updateBot } from "../actions/bots.ts";
import { BotType, checkUrl, ServiceInterface } from "../domain/bots.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { ALL_ROLES } from "../domain/roles.ts";
import { badRequest } from "../errors.ts";
import { check, param, type Validator } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { receivedUploads } from "./uploads.ts";

/** Zulip's check_dict(value_validator=check_string): an object whose values are strings. */
const stringDict: Validator<Record<string, string>> = (value, name) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) out[key] = check.string(item, `${name}["${key}"]`);
  return out;
};

/** Zulip's check_url, on a JSON-encoded string (a bare string is taken as it is). */
const urlValue: Validator<string> = (value, name) => checkUrl(check.string(value, name), name);

const keyList = check.list(check.string, { max: MAX_ITEMS_PER_REQUEST });

export const botRoutes = [
  defineRoute({
    method: "POST",
    path: "/bots",
    auth: "api",
    params: {
      full_name: param.string().required(),
      short_name: param.string().required(),
      bot_type: param.json(check.int).default(BotType.GENERIC),
      payload_url: param.jsonOrString(urlValue).default(""),
      service_name: param.string(),
      config_data: param.json(stringDict).default({}),
      interface_type: param.json(check.int).default(ServiceInterface.GENERIC),
      default_sending_stream: param.string(),
      default_events_register_stream: param.string(),
      default_all_public_streams: param.bool(),
    },
    handler: async (request, p) =>
      createBot(request.services, request.realm, request.user, {
        fullName: p.full_name,
        shortName: p.short_name,
        botType: p.bot_type,
        payloadUrl: p.payload_url,
        serviceName: p.service_name,
        configData: p.config_data,
        interfaceType: p.interface_type,
        defaultSendingStream: p.default_sending_stream,
        defaultEventsRegisterStream: p.default_events_register_stream,
        defaultAllPublicStreams: p.default_all_public_streams,
        upload: receivedUploads(request.http),
      }) as unknown as Promise<Record<string, unknown>>,
  }),
  defineRoute({
    method: "GET",
    path: "/bots",
    auth: "api",
    params: {},
    handler: async (request) => ({ bots: await listOwnBots(request.services, request.realm, request.user) }),
  }),
  defineRoute({
    method: "PATCH",
    path: "/bots/:bot_id",
    auth: "api",
    params: {
      bot_id: param.int().required(),
      full_name: param.string(),
      role: param.json(check.oneOf(ALL_ROLES)),
      bot_owner_id: param.json(check.int),
      config_data: param.json(stringDict),
      service_payload_url: param.jsonOrString(urlValue),
      service_interface: param.json(check.int).default(ServiceInterface.GENERIC),
      default_sending_stream: param.string(),
      default_events_register_stream: param.string(),
      default_all_public_streams: param.bool(),
    },
    handler: async (request, p) =>
      updateBot(request.services, request.realm, request.user, p.bot_id, {
        fullName: p.full_name,
        role: p.role,
        botOwnerId: p.bot_owner_id,
        configData: p.config_data,
        servicePayloadUrl: p.service_payload_url,
        serviceInterface: p.service_interface,
        defaultSendingStream: p.default_sending_stream,
        defaultEventsRegisterStream: p.default_events_register_stream,
        defaultAllPublicStreams: p.default_all_public_streams,
        upload: receivedUploads(request.http),
      }),
  }),
  defineRoute({
    method: "DELETE",
    path: "/bots/:bot_id",
    auth: "api",
    params: { bot_id: param.int().required() },
    handler: async (request, { bot_id }) => {
      await deactivateBot(request.services, request.realm, request.user, bot_id);
    },
  }),
  defineRoute({
    method: "POST",
    path: "/bots/:bot_id/api_key/regenerate",
    auth: "api",
    params: { bot_id: param.int().required() },
    handler: async (request, { bot_id }) => ({ api_key: await regenerateBotApiKey(request.services, request.realm, request.user, bot_id) }),
  }),
  defineRoute({
    method: "POST",
    path: "/users/me/api_key/regenerate",
    auth: "api",
    params: {},
    handler: async (request) => ({ api_key: await regenerateOwnApiKey(request.services, request.realm, request.user) }),
  }),
  defineRoute({
    method: "GET",
    path: "/bot_storage",
    auth: "api",
    params: { keys: param.json(keyList) },
    handler: async (request, { keys }) => ({ storage: await getBotStorage(request.services, request.user, keys) }),
  }),
  defineRoute({
    method: "PUT",
    path: "/bot_storage",
    auth: "api",
    params: { storage: param.json(stringDict).required() },
    handler: async (request, { storage }) => {
      await putBotStorage(request.services, request.realm, request.user, storage);
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/bot_storage",
    auth: "api",
    params: { keys: param.json(keyList) },
    handler: async (request, { keys }) => {
      await removeBotStorage(request.services, request.realm, request.user, keys);
    },
  }),
];
