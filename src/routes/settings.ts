import { changeOwnSettings } from "../actions/users.ts";
import { isStringSetting, USER_SETTING_NAMES, type UserSettingName } from "../domain/user-settings.ts";
import { check, param, type Param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

/** Every personal setting as a parameter: strings raw, the rest JSON-encoded; checked by the action. */
export const personalSettingParams = Object.fromEntries(
  USER_SETTING_NAMES.map((name) => [name, isStringSetting(name) ? param.string() : param.json((value) => value)]),
) as Record<UserSettingName, Param<unknown>>;

/**
 * PATCH /settings, and its legacy aliases /settings/display and
 * /settings/notifications: Zulip routes all three to the same view
 * (json_change_settings), so each accepts every parameter.
 */
export const settingsRoutes = ["/settings", "/settings/display", "/settings/notifications"].map((path) =>
  defineRoute({
    method: "PATCH",
    path,
    auth: "api",
    params: {
      full_name: param.string(),
      old_password: param.string(),
      new_password: param.string(),
      timezone: param.string(),
      email_address_visibility: param.json(check.int),
      ...personalSettingParams,
    },
    handler: async (request, { full_name, old_password, new_password, timezone, email_address_visibility, ...settings }) => {
      await changeOwnSettings(request.services, request.realm, request.user, {
        fullName: full_name,
        oldPassword: old_password,
        newPassword: new_password,
        keepSession: request.session?.tokenHash,
        timezone,
        emailAddressVisibility: email_address_visibility,
        settings,
      });
    },
  }),
);
