// Channel folders: create, list, update (rename, describe, archive) and reorder.
import { createChannelFolder, reorderChannelFolders, updateChannelFolder } from "../actions/channel-folders.ts";
import { check, param } from "../http/params.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { defineRoute, type Route } from "../http/route.ts";
import { listChannelFolders } from "../queries/channel-folders.ts";

export const channelFoldersRoutes: Route[] = [
  defineRoute({
    method: "POST",
    path: "/channel_folders/create",
    auth: "api",
    params: {
      name: param.string().required(),
      description: param.string().required(),
    },
    handler: async ({ services, realm, user }, { name, description }) => {
      const folder = await createChannelFolder(services, realm, user, { name, description });
      return { channel_folder_id: folder.id };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/channel_folders",
    auth: "api",
    params: { include_archived: param.bool().default(false) },
    handler: async ({ services, realm }, { include_archived }) => ({
      channel_folders: await listChannelFolders(services.storage.db, realm.id, { includeArchived: include_archived }),
    }),
  }),
  defineRoute({
    method: "PATCH",
    path: "/channel_folders",
    auth: "api",
    params: { order: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async ({ services, realm, user }, { order }) => {
      await reorderChannelFolders(services, realm, user, order);
    },
  }),
  defineRoute({
    method: "PATCH",
    path: "/channel_folders/:channel_folder_id",
    auth: "api",
    params: {
      channel_folder_id: param.int().required(),
      name: param.string(),
      description: param.string(),
      is_archived: param.bool(),
    },
    handler: async ({ services, realm, user }, { channel_folder_id, name, description, is_archived }) => {
      await updateChannelFolder(services, realm, user, channel_folder_id, { name, description, isArchived: is_archived });
    },
  }),
];
