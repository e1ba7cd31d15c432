import { changeOwnSettings } from "../actions/users.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const settingsRoutes = [
  defineRoute({
    method: "PATCH",
    path: "/settings",
    auth: "api",
    params: {
      full_name: param.string(),
      old_password: param.string(),
      new_password: param.string(),
      timezone: param.string(),
    },
    handler: async (request, { full_name, old_password, new_password, timezone }) => {
      await changeOwnSettings(request.services, request.realm, request.user, {
        fullName: full_name,
        oldPassword: old_password,
        newPassword: new_password,
        timezone,
      });
    },
  }),
];
