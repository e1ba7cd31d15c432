import {
  createUser,
  deactivateOwnAccount,
  deactivateUser,
  reactivateUser,
  updateUser,
} from "../actions/users.ts";
import { checkProfileDataElement } from "../domain/custom-profile-fields.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { ALL_ROLES } from "../domain/roles.ts";
import { noSuchUser } from "../errors.ts";
import { check, param } from "../http/params.ts";
import { defineRoute, type ApiRequest } from "../http/route.ts";
import { profileDataByUser, profileDataOf } from "../queries/custom-profile-fields.ts";
import { formatUser, getUserById, listRealmUsers, lookUpUserForViewer, type FormatOptions } from "../queries/users.ts";
import type { User } from "../storage/schema.ts";

/** Zulip's name for the avatar flag is client_gravatar; the contract's is client_external_avatar. */
const userReadParams = {
  client_gravatar: param.bool().default(true),
  client_external_avatar: param.bool().default(true),
  include_custom_profile_fields: param.bool().default(false),
};

/** The user object, with the user's custom profile field values when asked for (bots never have them). */
async function format(request: ApiRequest, user: User, includeProfileFields: boolean) {
  const options: FormatOptions = includeProfileFields ? { profileData: await profileDataOf(request.services.storage.db, request.realm.id, user.id) } : {};
  return formatUser(request.services.config, user, request.user, options);
}

/** A path segment naming a user: an integer ID, or an email address. */
async function userFromPath(request: ApiRequest, idOrEmail: string): Promise<User> {
  const { services, realm, user } = request;
  const found = /^\d+$/.test(idOrEmail)
    ? await getUserById(services.storage.db, realm.id, Number(idOrEmail))
    : await lookUpUserForViewer(services.storage.db, realm.id, idOrEmail, user);
  if (!found) throw noSuchUser();
  return found;
}

async function userIdFromPath(request: ApiRequest, idOrEmail: string): Promise<number> {
  return (await userFromPath(request, idOrEmail)).id;
}

export const userRoutes = [
  defineRoute({
    method: "GET",
    path: "/users",
    auth: "api",
    params: userReadParams,
    handler: async (request, { include_custom_profile_fields }) => {
      const db = request.services.storage.db;
      const users = await listRealmUsers(db, request.realm.id);
      const profileData = include_custom_profile_fields ? await profileDataByUser(db, request.realm.id) : undefined;
      const options = (u: User): FormatOptions => (profileData ? { profileData: profileData.get(u.id) ?? {} } : {});
      return { members: users.map((u) => formatUser(request.services.config, u, request.user, options(u))) };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/users/me",
    auth: "api",
    params: {},
    // Zulip's get_profile_backend always includes the caller's own profile_data.
    handler: async (request) => ({
      ...(await format(request, request.user, true)),
      // Deprecated in Zulip: the newest message the user received; -1 until messages exist.
      max_message_id: -1,
    }),
  }),
  defineRoute({
    method: "GET",
    path: "/users/:user",
    auth: "api",
    params: { user: param.string().required(), ...userReadParams },
    handler: async (request, { user, include_custom_profile_fields }) => ({
      user: await format(request, await userFromPath(request, user), include_custom_profile_fields),
    }),
  }),
  defineRoute({
    method: "POST",
    path: "/users",
    auth: "api",
    params: {
      email: param.string().required(),
      password: param.string().required(),
      full_name: param.string().required(),
    },
    handler: async (request, { email, password, full_name }) => {
      const created = await createUser(request.services, request.realm, request.user, { email, password, fullName: full_name });
      return { user_id: created.id };
    },
  }),
  defineRoute({
    method: "PATCH",
    path: "/users/:user",
    auth: "api",
    params: {
      user: param.string().required(),
      full_name: param.string(),
      role: param.json(check.oneOf(ALL_ROLES)),
      // Values of custom profile fields; null, "" or [] removes one.
      profile_data: param.json(check.list(checkProfileDataElement(true), { max: MAX_ITEMS_PER_REQUEST })),
    },
    handler: async (request, { user, full_name, role, profile_data }) => {
      const targetId = await userIdFromPath(request, user);
      await updateUser(request.services, request.realm, request.user, targetId, { fullName: full_name, role, profileData: profile_data });
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/users/me",
    auth: "api",
    params: {},
    handler: async (request) => {
      await deactivateOwnAccount(request.services, request.realm, request.user);
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/users/:user",
    auth: "api",
    params: { user: param.string().required() },
    handler: async (request, { user }) => {
      await deactivateUser(request.services, request.realm, request.user, await userIdFromPath(request, user));
    },
  }),
  defineRoute({
    method: "POST",
    path: "/users/:user/reactivate",
    auth: "api",
    params: { user: param.string().required() },
    handler: async (request, { user }) => {
      await reactivateUser(request.services, request.realm, request.user, await userIdFromPath(request, user));
    },
  }),
];
