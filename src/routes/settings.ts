import { changeOwnSettings } from "../actions/users.ts";
import { isStringSetting, USER_SETTING_NAMES, type UserSettingName } from "../domain/user-settings.ts";
import { param, type Param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

/** Every personal setting as a parameter: strings raw, the rest JSON-encoded; checked by the action. */
export const personalSettingParams = Object.fromEntries(
  USER_SETTING_NAMES.map((name) => [name, isStringSetting(name) ? param.string() : param.json((value) => value)]),
) as Record<UserSettingName, Param<unknown>>;

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
      ...personalSettingParams,
    },
    handler: async (request, { full_name, old_password, new_password, timezone, ...settings }) => {
      await changeOwnSettings(request.services, request.realm, request.user, {
        fullName: full_name,
        oldPassword: old_password,
        newPassword: new_password,
        timezone,
        settings,
      });
    },
  }),
];
