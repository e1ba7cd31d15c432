// Muted users: POST and DELETE /users/me/muted_users/{muted_user_id}. Every
// account may mute (bots too, as in Zulip).
import { muteUser, unmuteUser } from "../actions/muted-users.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const mutedUsersRoutes = [
  defineRoute({
    method: "POST",
    path: "/users/me/muted_users/:muted_user_id",
    auth: "api",
    params: { muted_user_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await muteUser(services, realm, user, p.muted_user_id);
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/users/me/muted_users/:muted_user_id",
    auth: "api",
    params: { muted_user_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await unmuteUser(services, realm, user, p.muted_user_id);
    },
  }),
];
