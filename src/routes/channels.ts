import { actorFor } from "../actions/actor.ts";
import { addDefaultChannel, archiveChannel, removeDefaultChannel, updateChannel, type SettingChange } from "../actions/channels.ts";
import { CHANNEL_GROUP_SETTING_NAMES, parseRetentionDays, TOPICS_POLICIES, type ChannelGroupSettingName } from "../domain/channels.ts";
import { isAdmin } from "../domain/roles.ts";
import { badRequest } from "../errors.ts";
import { check, param, type Validator } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { accessChannel, channelContext, channelIdByName, channelEmailAddress, channelSubscribersFor, formatChannel, listStreams } from "../queries/channels.ts";

/** message_retention_days: "realm_default", "unlimited", or a number of days. */
export const retentionDays: Validator<number | null> = (value, name) => {
  if (typeof value === "string" || typeof value === "number") return parseRetentionDays(value);
  throw badRequest(`Invalid ${name}`);
};

const groupSettingChanges = Object.fromEntries(CHANNEL_GROUP_SETTING_NAMES.map((name) => [name, param.json(check.groupSettingChange)])) as Record<
  ChannelGroupSettingName,
  ReturnType<typeof param.json<SettingChange>>
>;

export const channelsRoutes = [
  defineRoute({
    method: "GET",
    path: "/streams",
    auth: "api",
    params: {
      include_public: param.bool().default(true),
      include_web_public: param.bool().default(false),
      include_subscribed: param.bool().default(true),
      exclude_archived: param.bool().default(true),
      include_all: param.bool().default(false),
      include_all_active: param.bool().default(false),
      include_default: param.bool().default(false),
      include_owner_subscribed: param.bool().default(false),
      include_can_access_content: param.bool().default(false),
    },
    handler: async ({ services, realm, user }, p) => {
      // include_all_active is the deprecated name of include_all, for administrators only.
      if (p.include_all_active && !isAdmin(user.role)) throw badRequest("User not authorized for this query");
      const actor = await actorFor(services.storage.db, user);
      const streams = await listStreams(services.storage.db, realm.id, user, actor, { ...p, include_all: p.include_all || p.include_all_active }, services.now());
      return { streams };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/streams/:stream_id",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { stream_id }) => {
      const actor = await actorFor(services.storage.db, user);
      const { channel } = await accessChannel(services.storage.db, realm.id, actor, stream_id, "metadata");
      const context = await channelContext(services.storage.db, realm.id, [channel.id], services.now());
      return { stream: formatChannel(channel, context) };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/get_stream_id",
    auth: "api",
    params: { stream: param.string().required() },
    handler: async ({ services, realm, user }, { stream }) => ({
      stream_id: await channelIdByName(services.storage.db, realm.id, await actorFor(services.storage.db, user), stream),
    }),
  }),
  defineRoute({
    method: "PATCH",
    path: "/streams/:stream_id",
    auth: "api",
    params: {
      stream_id: param.int().required(),
      description: param.string(),
      new_name: param.string(),
      is_private: param.bool(),
      is_web_public: param.bool(),
      history_public_to_subscribers: param.bool(),
      is_default_stream: param.bool(),
      message_retention_days: param.jsonOrString(retentionDays),
      is_archived: param.bool(),
      topics_policy: param.choice(TOPICS_POLICIES),
      folder_id: param.json(check.nullable(check.int)),
      ...groupSettingChanges,
    },
    handler: async ({ services, realm, user }, p) => {
      const groupSettings: Partial<Record<ChannelGroupSettingName, SettingChange>> = {};
      for (const name of CHANNEL_GROUP_SETTING_NAMES) {
        const change = p[name];
        if (change !== undefined) groupSettings[name] = change;
      }
      await updateChannel(services, realm, user, p.stream_id, {
        description: p.description,
        newName: p.new_name,
        isPrivate: p.is_private,
        isWebPublic: p.is_web_public,
        historyPublicToSubscribers: p.history_public_to_subscribers,
        isDefaultStream: p.is_default_stream,
        messageRetentionDays: p.message_retention_days,
        isArchived: p.is_archived,
        topicsPolicy: p.topics_policy,
        folderId: p.folder_id,
        groupSettings,
      });
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/streams/:stream_id",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { stream_id }) => {
      await archiveChannel(services, realm, user, stream_id);
    },
  }),
  defineRoute({
    method: "GET",
    path: "/streams/:stream_id/members",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { stream_id }) => {
      const actor = await actorFor(services.storage.db, user);
      return { subscribers: await channelSubscribersFor(services.storage.db, realm.id, actor, stream_id) };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/streams/:stream_id/email_address",
    auth: "api",
    params: {
      stream_id: param.int().required(),
      // Zulip's Json[NonNegativeInt].
      sender_id: param.json((value, name) => {
        const id = check.int(value, name);
        if (id < 0) throw badRequest(`${name} is too small`);
        return id;
      }),
    },
    handler: async ({ services, realm, user }, { stream_id, sender_id }) => {
      const actor = await actorFor(services.storage.db, user);
      return { email: await channelEmailAddress(services.storage.db, realm.id, actor, stream_id, sender_id) };
    },
  }),
  defineRoute({
    method: "POST",
    path: "/default_streams",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { stream_id }) => {
      await addDefaultChannel(services, realm, user, stream_id);
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/default_streams",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async ({ services, realm, user }, { stream_id }) => {
      await removeDefaultChannel(services, realm, user, stream_id);
    },
  }),
];
