// The user-group endpoints (Zulip's zerver/views/user_groups.py).
import {
  createUserGroup,
  deactivateUserGroup,
  groupMembers,
  groupSubgroups,
  isGroupMember,
  listUserGroups,
  requireGroupCreatePermission,
  updateGroupMembership,
  updateGroupSubgroups,
  updateUserGroup,
} from "../actions/user-groups.ts";
import { requireNonGuest } from "../domain/roles.ts";
import { MAX_GROUP_IDS, MAX_USER_IDS } from "../domain/limits.ts";
import { USER_GROUP_SETTING_NAMES, type UserGroupSettingName } from "../domain/user-groups.ts";
import { ApiError } from "../errors.ts";
import { check, param, parseParams, type Param, type ParamShape, type ParamsOf } from "../http/params.ts";
import { defineRoute, type ApiRequest, type HttpMethod, type ReplyData, type Route } from "../http/route.ts";

/**
 * Zulip checks a view's role decorators (guests, bots, can_create_groups)
 * before it parses the parameters, so a guest gets "Not allowed for guest
 * users" even for a malformed request. The route declares the parameters as
 * raw strings (so unknown ones are still reported as ignored), runs the
 * guard, then parses them by the real declaration.
 */
function guardedRoute<S extends ParamShape>(spec: {
  method: HttpMethod;
  path: string;
  params: S;
  /** Path segments that must be digits (checked first: otherwise the URL names no endpoint). */
  pathIds?: readonly (keyof S & string)[];
  guard?: (request: ApiRequest) => void | Promise<void>;
  handler: (request: ApiRequest, params: ParamsOf<S>) => Promise<ReplyData | void>;
}): Route {
  const raw: Record<string, Param<string>> = {};
  for (const name of Object.keys(spec.params)) raw[name] = param.string();
  return defineRoute({
    method: spec.method,
    path: spec.path,
    auth: "api",
    params: raw,
    handler: async (request, values) => {
      for (const name of spec.pathIds ?? []) pathId(values[name] ?? "");
      await spec.guard?.(request);
      const present: Record<string, string> = {};
      for (const [name, value] of Object.entries(values)) if (value !== undefined) present[name] = value;
      return spec.handler(request, parseParams(spec.params, present).values);
    },
  });
}

const nonGuest = (request: ApiRequest): void => requireNonGuest(request.user);

/**
 * A numeric path segment. Zulip's URL patterns take only digits there
 * (`<int:user_group_id>`), so anything else is an unknown endpoint.
 */
function pathId(raw: string): number {
  if (!/^\d+$/.test(raw)) throw new ApiError(404, "BAD_REQUEST", "Endpoint not found");
  const value = Number(raw);
  // Too large to be any row's ID: look-ups will say it does not exist.
  return Number.isSafeInteger(value) ? value : -1;
}

/** A list of user IDs (members) or of group IDs (subgroups). */
const userIds = () => param.json(check.list(check.int, { max: MAX_USER_IDS }));
const groupIds = () => param.json(check.list(check.int, { max: MAX_GROUP_IDS }));

const createSettingParams = Object.fromEntries(USER_GROUP_SETTING_NAMES.map((name) => [name, param.json(check.groupSetting)])) as Record<
  UserGroupSettingName,
  Param<ReturnType<typeof check.groupSetting>>
>;

const changeSettingParams = Object.fromEntries(USER_GROUP_SETTING_NAMES.map((name) => [name, param.json(check.groupSettingChange)])) as Record<
  UserGroupSettingName,
  Param<ReturnType<typeof check.groupSettingChange>>
>;

function pick<T>(values: Record<string, unknown>): Partial<Record<UserGroupSettingName, T>> {
  return Object.fromEntries(USER_GROUP_SETTING_NAMES.map((name) => [name, values[name] as T | undefined]));
}

export const userGroupsRoutes: Route[] = [
  guardedRoute({
    method: "GET",
    path: "/user_groups",
    params: { include_deactivated_groups: param.bool().default(false) },
    guard: nonGuest,
    handler: async (request, { include_deactivated_groups }) => ({
      user_groups: await listUserGroups(request.services, request.realm, request.user, include_deactivated_groups),
    }),
  }),
  guardedRoute({
    method: "POST",
    path: "/user_groups/create",
    params: {
      name: param.string().required(),
      description: param.string().required(),
      members: userIds().required(),
      subgroups: groupIds(),
      ...createSettingParams,
    },
    guard: (request) => requireGroupCreatePermission(request.services, request.realm, request.user),
    handler: async (request, values) => {
      const groupId = await createUserGroup(request.services, request.realm, request.user, {
        name: values.name,
        description: values.description,
        members: values.members,
        subgroups: values.subgroups,
        settings: pick(values),
      });
      return { group_id: groupId };
    },
  }),
  guardedRoute({
    method: "PATCH",
    path: "/user_groups/:user_group_id",
    params: {
      user_group_id: param.string().required(),
      name: param.string(),
      description: param.string(),
      deactivated: param.bool(),
      ...changeSettingParams,
    },
    pathIds: ["user_group_id"],
    guard: nonGuest,
    handler: async (request, values) => {
      await updateUserGroup(request.services, request.realm, request.user, pathId(values.user_group_id), {
        name: values.name,
        description: values.description,
        deactivated: values.deactivated,
        settings: pick(values),
      });
    },
  }),
  guardedRoute({
    method: "POST",
    path: "/user_groups/:user_group_id/deactivate",
    params: { user_group_id: param.string().required() },
    pathIds: ["user_group_id"],
    handler: async (request, { user_group_id }) => {
      await deactivateUserGroup(request.services, request.realm, request.user, pathId(user_group_id));
    },
  }),
  guardedRoute({
    method: "POST",
    path: "/user_groups/:user_group_id/members",
    params: {
      user_group_id: param.string().required(),
      add: userIds(),
      delete: userIds(),
      add_subgroups: groupIds(),
      delete_subgroups: groupIds(),
    },
    pathIds: ["user_group_id"],
    guard: nonGuest,
    handler: async (request, values) => {
      await updateGroupMembership(request.services, request.realm, request.user, pathId(values.user_group_id), {
        add: values.add,
        delete: values.delete,
        add_subgroups: values.add_subgroups,
        delete_subgroups: values.delete_subgroups,
      });
    },
  }),
  guardedRoute({
    method: "POST",
    path: "/user_groups/:user_group_id/subgroups",
    params: { user_group_id: param.string().required(), add: groupIds(), delete: groupIds() },
    pathIds: ["user_group_id"],
    guard: nonGuest,
    handler: async (request, values) => {
      await updateGroupSubgroups(request.services, request.realm, request.user, pathId(values.user_group_id), {
        add: values.add,
        delete: values.delete,
      });
    },
  }),
  guardedRoute({
    method: "GET",
    path: "/user_groups/:user_group_id/members",
    params: { user_group_id: param.string().required(), direct_member_only: param.bool().default(false) },
    pathIds: ["user_group_id"],
    guard: nonGuest,
    handler: async (request, { user_group_id, direct_member_only }) => ({
      members: await groupMembers(request.services, request.realm, request.user, pathId(user_group_id), direct_member_only),
    }),
  }),
  guardedRoute({
    method: "GET",
    path: "/user_groups/:user_group_id/subgroups",
    params: { user_group_id: param.string().required(), direct_subgroup_only: param.bool().default(false) },
    pathIds: ["user_group_id"],
    guard: nonGuest,
    handler: async (request, { user_group_id, direct_subgroup_only }) => ({
      subgroups: await groupSubgroups(request.services, request.realm, request.user, pathId(user_group_id), direct_subgroup_only),
    }),
  }),
  guardedRoute({
    method: "GET",
    path: "/user_groups/:user_group_id/members/:user_id",
    params: {
      user_group_id: param.string().required(),
      user_id: param.string().required(),
      direct_member_only: param.bool().default(false),
    },
    pathIds: ["user_group_id", "user_id"],
    guard: nonGuest,
    handler: async (request, { user_group_id, user_id, direct_member_only }) => {
      const groupId = pathId(user_group_id);
      const userId = pathId(user_id);
      return {
        is_user_group_member: await isGroupMember(request.services, request.realm, request.user, groupId, userId, direct_member_only),
      };
    },
  }),
];
