import { actorFor } from "../actions/actor.ts";
import {
  changeSubscriptionProperties,
  changeSubscriptions,
  subscribe,
  unsubscribe,
  type SubscribeInput,
} from "../actions/subscriptions.ts";
import { CHANNEL_GROUP_SETTING_NAMES, HEX_COLOR, TOPICS_POLICIES, type ChannelGroupSettingName } from "../domain/channels.ts";
import type { GroupSettingValue } from "../domain/group-settings.ts";
import { decodeClientJson } from "../domain/json.ts";
import { MAX_ITEMS_PER_REQUEST, MAX_PRINCIPALS } from "../domain/limits.ts";
import { badRequest } from "../errors.ts";
import { check, checkListLength, param, type ParamsOf, type Validator } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { isUserSubscribed, listSubscriptions } from "../queries/channels.ts";
import { retentionDays } from "./channels.ts";

const color: Validator<string> = (value, name) => {
  if (typeof value !== "string" || !HEX_COLOR.test(value)) throw badRequest(`${name} is not a valid hex color code`);
  return value;
};

const subscriptionRequest = check.object(
  { name: check.string, description: check.string, color },
  ["description", "color"],
);

/** User IDs, or API email addresses (the older form). */
const principals: Validator<(number | string)[]> = (value, name) => {
  if (!Array.isArray(value)) throw badRequest(`${name} is not a list`);
  checkListLength(value, name, { max: MAX_PRINCIPALS });
  if (value.every((v) => typeof v === "string")) return value as string[];
  return check.list(check.int, { max: MAX_PRINCIPALS })(value, name);
};

/** The parameters that configure channels created by a subscribe request. */
const newChannelParams = {
  announce: param.bool().default(false),
  invite_only: param.bool().default(false),
  is_web_public: param.bool().default(false),
  is_default_stream: param.bool().default(false),
  history_public_to_subscribers: param.json(check.nullable(check.bool)),
  message_retention_days: param.jsonOrString(retentionDays),
  // Zulip takes this one JSON-encoded here; the bare name is accepted too.
  topics_policy: param.jsonOrString(check.oneOf(TOPICS_POLICIES)),
  folder_id: param.json(check.nullable(check.int)),
  ...(Object.fromEntries(CHANNEL_GROUP_SETTING_NAMES.map((name) => [name, param.json(check.groupSetting)])) as Record<
    ChannelGroupSettingName,
    ReturnType<typeof param.json<GroupSettingValue>>
  >),
};

function newChannelOptions(p: ParamsOf<typeof newChannelParams>): Omit<SubscribeInput, "subscriptions" | "principals" | "authorizationErrorsFatal"> {
  const groupSettings: Partial<Record<ChannelGroupSettingName, GroupSettingValue>> = {};
  for (const name of CHANNEL_GROUP_SETTING_NAMES) {
    const value = p[name];
    if (value !== undefined) groupSettings[name] = value;
  }
  return {
    announce: p.announce,
    inviteOnly: p.invite_only,
    isWebPublic: p.is_web_public,
    isDefaultStream: p.is_default_stream,
    historyPublicToSubscribers: p.history_public_to_subscribers ?? null,
    messageRetentionDays: p.message_retention_days === undefined ? null : p.message_retention_days,
    topicsPolicy: p.topics_policy ?? "inherit",
    folderId: p.folder_id ?? null,
    groupSettings,
  };
}

export const subscriptionsRoutes = [
  defineRoute({
    method: "GET",
    path: "/users/me/subscriptions",
    auth: "api",
    // "partial" (Zulip 10+) asks for a subset on large channels; Parley sends every subscriber.
    params: { include_subscribers: param.choice(["true", "false", "partial"] as const).default("false") },
    handler: async ({ services, realm, user }, { include_subscribers }) => ({
      subscriptions: await listSubscriptions(services.storage.db, realm.id, user.id, include_subscribers !== "false", services.now()),
    }),
  }),
  defineRoute({
    method: "POST",
    path: "/users/me/subscriptions",
    auth: "api",
    params: {
      subscriptions: param.json(check.list(subscriptionRequest, { max: MAX_ITEMS_PER_REQUEST })).required(),
      principals: param.json(principals),
      authorization_errors_fatal: param.bool().default(true),
      send_new_subscription_messages: param.bool().default(true),
      ...newChannelParams,
    },
    handler: async ({ services, realm, user }, p) => ({
      ...(await subscribe(services, realm, user, {
        subscriptions: p.subscriptions,
        principals: p.principals,
        authorizationErrorsFatal: p.authorization_errors_fatal,
        sendNewSubscriptionMessages: p.send_new_subscription_messages,
        ...newChannelOptions(p),
      })),
    }),
  }),
  defineRoute({
    method: "DELETE",
    path: "/users/me/subscriptions",
    auth: "api",
    params: { subscriptions: param.json(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST })).required(), principals: param.json(principals) },
    handler: async ({ services, realm, user }, p) => ({ ...(await unsubscribe(services, realm, user, p.subscriptions, p.principals)) }),
  }),
  defineRoute({
    method: "PATCH",
    path: "/users/me/subscriptions",
    auth: "api",
    params: {
      add: param.json(check.list(subscriptionRequest, { max: MAX_ITEMS_PER_REQUEST })),
      delete: param.json(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST })),
    },
    handler: async ({ services, realm, user }, p) => {
      const add = p.add ?? [];
      const remove = p.delete ?? [];
      if (add.length === 0 && remove.length === 0) throw badRequest('Nothing to do. Specify at least one of "add" or "delete".');
      // Channels created here get the defaults: this endpoint takes no channel options.
      const defaults: Omit<SubscribeInput, "subscriptions" | "principals" | "authorizationErrorsFatal"> = {
        announce: false,
        sendNewSubscriptionMessages: false,
        inviteOnly: false,
        isWebPublic: false,
        isDefaultStream: false,
        historyPublicToSubscribers: null,
        messageRetentionDays: null,
        topicsPolicy: "inherit",
        folderId: null,
        groupSettings: {},
      };
      const addInput = add.length > 0 ? { subscriptions: add, principals: undefined, authorizationErrorsFatal: true, ...defaults } : undefined;
      return { ...(await changeSubscriptions(services, realm, user, addInput, remove.length > 0 ? remove : undefined)) };
    },
  }),
  defineRoute({
    method: "POST",
    path: "/users/me/subscriptions/properties",
    auth: "api",
    params: {
      subscription_data: param
        .json(check.list(check.object({ stream_id: check.int, property: check.string, value: (v: unknown) => v }), { max: MAX_ITEMS_PER_REQUEST }))
        .required(),
    },
    handler: async ({ services, realm, user }, { subscription_data }) => {
      await changeSubscriptionProperties(services, realm, user, subscription_data);
    },
  }),
  ...(["PATCH", "POST"] as const).map((method) =>
    // Legacy single-property form; Zulip routes it as PATCH, its docs call it POST.
    defineRoute({
      method,
      path: "/users/me/subscriptions/:stream_id",
      auth: "api",
      params: {
        stream_id: param.int().required(),
        property: param.string().required(),
        value: param.string().required(),
      },
      handler: async ({ services, realm, user }, { stream_id, property, value }) => {
        // JSON, or a raw string (e.g. a colour).
        const decoded = decodeClientJson(value, "value");
        await changeSubscriptionProperties(services, realm, user, [{ stream_id, property, value: decoded === undefined ? value : decoded }]);
      },
    }),
  ),
  defineRoute({
    method: "GET",
    path: "/users/:user_id/subscriptions/:stream_id",
    auth: "api",
    params: { user_id: param.int().required(), stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { user_id, stream_id }) => ({
      is_subscribed: await isUserSubscribed(services.storage.db, realm.id, await actorFor(services.storage.db, user), user_id, stream_id),
    }),
  }),
];
