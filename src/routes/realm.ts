import { addLinkifier, removeLinkifier, reorderLinkifiers, updateLinkifier } from "../actions/linkifiers.ts";
import { addPlayground, removePlayground } from "../actions/playgrounds.ts";
import { realmLinkifiers } from "../queries/linkifiers.ts";
import { REALM_CHANNEL_SETTINGS, updateRealmSettings, updateUserSettingsDefaults, type PlainRealmChange } from "../actions/realm-settings.ts";
import { checkPygmentsLanguage } from "../domain/playgrounds.ts";
import { REALM_GROUP_SETTING_DEFAULTS, type RealmGroupSettingName } from "../domain/realm-settings.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { LANGUAGES } from "../domain/user-settings.ts";
import { ApiError, badRequest } from "../errors.ts";
import { check, param, type Param, type Validator } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { pythonStrip } from "../domain/text.ts";
import { personalSettingParams } from "./settings.ts";

/**
 * Zulip's RequestVariableConversionError: "Bad value for '{name}': {value}",
 * with var_name and bad_value. A list or object is quoted as JSON (no JSON
 * parameter nests deeper than http/params.ts allows) and never put in the
 * reply as a value.
 */
function badValue(name: string, value: unknown): ApiError {
  const shown = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  const scalar = value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";
  return new ApiError(400, "REQUEST_VARIABLE_INVALID", `Bad value for '${name}': ${shown}`, { var_name: name, bad_value: scalar ? value : shown });
}

/** Zulip's parse_message_time_limit_setting: "unlimited" (null) or a positive number of seconds. */
const timeLimit: Validator<number | null> = (value, name) => {
  if (value === "unlimited") return null;
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value;
  throw badValue(name, value);
};

/** "unlimited" (stored as -1) or a positive number of days. */
const retentionDays: Validator<number> = (value, name) => {
  if (value === "unlimited") return -1;
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value;
  throw badValue(name, value);
};

const nonNegativeInt: Validator<number> = (value, name) => {
  const n = check.int(value, name);
  if (n < 0) throw badRequest(`${name} is too small`);
  return n;
};

const intIn = (allowed: readonly number[]): Validator<number> => (value, name) => {
  const n = check.int(value, name);
  if (!allowed.includes(n)) throw badRequest(`Invalid ${name}`);
  return n;
};

const BOOLEAN_SETTINGS = [
  "allow_message_editing",
  "emails_restricted_to_domains",
  "disallow_disposable_email_addresses",
  "invite_required",
  "require_unique_names",
  "name_changes_disabled",
  "email_changes_disabled",
  "avatar_changes_disabled",
  "inline_image_preview",
  "inline_url_embed_preview",
  "send_welcome_emails",
  "digest_emails_enabled",
  "message_content_allowed_in_email_notifications",
  "enable_spectator_access",
  "want_advertise_in_communities_directory",
  "enable_read_receipts",
  "enable_guest_user_dm_warning",
  "enable_guest_user_indicator",
] as const;

const TIME_LIMIT_SETTINGS = [
  "message_content_edit_limit_seconds",
  "message_content_delete_limit_seconds",
  "move_messages_within_stream_limit_seconds",
  "move_messages_between_streams_limit_seconds",
] as const;

/** Zulip's OrgTypeEnum values. */
const ORG_TYPES = [0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000];

const plainParams = {
  ...Object.fromEntries(BOOLEAN_SETTINGS.map((name) => [name, param.bool()])),
  ...Object.fromEntries(TIME_LIMIT_SETTINGS.map((name) => [name, param.jsonOrString(timeLimit)])),
  ...Object.fromEntries(REALM_CHANNEL_SETTINGS.map((name) => [name, param.json(check.int)])),
  message_edit_history_visibility_policy: param.choice(["all", "moves", "none"] as const),
  topics_policy: param.choice(["allow_empty_topic", "disable_empty_topic"] as const),
  waiting_period_threshold: param.json(nonNegativeInt),
  message_retention_days: param.jsonOrString(retentionDays),
  digest_weekday: param.json(intIn([0, 1, 2, 3, 4, 5, 6])),
  video_chat_provider: param.json((value, name) => {
    const n = check.int(value, name);
    if (n !== 0 && n !== 1) throw badRequest(`Invalid video_chat_provider ${n}`);
    return n;
  }),
  org_type: param.json(intIn(ORG_TYPES)),
  default_language: param.string(),
  default_code_block_language: param.string(),
  welcome_message_custom_text: param.string(),
} as Record<string, Param<unknown>>;

const groupParams = Object.fromEntries(
  Object.keys(REALM_GROUP_SETTING_DEFAULTS).map((name) => [name, param.json(check.groupSettingChange)]),
) as Record<RealmGroupSettingName, Param<{ new: number | { direct_members: number[]; direct_subgroups: number[] }; old?: number | { direct_members: number[]; direct_subgroups: number[] } }>>;

export const realmRoutes = [
  defineRoute({
    method: "PATCH",
    path: "/realm",
    auth: "api",
    adminOnly: true,
    params: { name: param.string(), description: param.string(), ...plainParams, ...groupParams },
    handler: async (request, all) => {
      const { name, description } = all as { name?: string; description?: string };
      const plain: Record<string, unknown> = {};
      for (const key of Object.keys(plainParams)) if ((all as Record<string, unknown>)[key] !== undefined) plain[key] = (all as Record<string, unknown>)[key];
      if (typeof plain.default_language === "string" && !(plain.default_language in LANGUAGES)) throw badRequest(`Invalid language '${plain.default_language}'`);
      if (typeof plain.welcome_message_custom_text === "string" && plain.welcome_message_custom_text.length > 8000) {
        throw badRequest("welcome_message_custom_text is too long (limit: 8000 characters)");
      }
      const groups: Record<string, unknown> = {};
      for (const key of Object.keys(groupParams)) if ((all as Record<string, unknown>)[key] !== undefined) groups[key] = (all as Record<string, unknown>)[key];
      return updateRealmSettings(request.services, request.realm, request.user, {
        name,
        description,
        plain: plain as PlainRealmChange,
        groups: groups as Parameters<typeof updateRealmSettings>[3]["groups"],
      });
    },
  }),
  defineRoute({
    method: "PATCH",
    path: "/realm/user_settings_defaults",
    auth: "api",
    adminOnly: true,
    params: { ...personalSettingParams, email_address_visibility: param.json(check.int) },
    handler: async (request, changes) => {
      await updateUserSettingsDefaults(request.services, request.realm, request.user, changes);
    },
  }),

  // Code playgrounds (Zulip's realm_playgrounds views): administrators only, checked before the parameters.
  defineRoute({
    method: "POST",
    path: "/realm/playgrounds",
    auth: "api",
    adminOnly: true,
    params: {
      name: param.string().required(),
      url_template: param.string().required(),
      pygments_language: param.string().required(),
    },
    handler: async ({ services, realm }, p) => {
      const pygmentsLanguage = checkPygmentsLanguage(p.pygments_language);
      const id = await addPlayground(services, realm, {
        name: pythonStrip(p.name),
        pygmentsLanguage: pythonStrip(pygmentsLanguage),
        urlTemplate: pythonStrip(p.url_template),
      });
      return { id };
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/realm/playgrounds/:playground_id",
    auth: "api",
    adminOnly: true,
    params: { playground_id: param.int().required() },
    handler: async ({ services, realm }, p) => {
      await removePlayground(services, realm, p.playground_id);
    },
  }),

  // Linkifiers (Zulip's realm_linkifiers views): anyone may list them; changes
  // are for administrators, checked before the parameters. Values are stripped
  // as Zulip's actions do.
  defineRoute({
    method: "GET",
    path: "/realm/linkifiers",
    auth: "api",
    params: {},
    handler: async ({ services, realm }) => ({ linkifiers: await realmLinkifiers(services.storage.db, realm.id) }),
  }),
  defineRoute({
    method: "POST",
    path: "/realm/filters",
    auth: "api",
    adminOnly: true,
    params: { pattern: param.string().required(), url_template: param.string().required() },
    handler: async ({ services, realm }, p) => {
      const id = await addLinkifier(services, realm, { pattern: pythonStrip(p.pattern), urlTemplate: pythonStrip(p.url_template) });
      return { id };
    },
  }),
  defineRoute({
    method: "PATCH",
    path: "/realm/filters/:filter_id",
    auth: "api",
    adminOnly: true,
    params: { filter_id: param.int().required(), pattern: param.string().required(), url_template: param.string().required() },
    handler: async ({ services, realm }, p) => {
      await updateLinkifier(services, realm, p.filter_id, { pattern: pythonStrip(p.pattern), urlTemplate: pythonStrip(p.url_template) });
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/realm/filters/:filter_id",
    auth: "api",
    adminOnly: true,
    params: { filter_id: param.int().required() },
    handler: async ({ services, realm }, p) => {
      await removeLinkifier(services, realm, p.filter_id);
    },
  }),
  defineRoute({
    method: "PATCH",
    path: "/realm/linkifiers",
    auth: "api",
    adminOnly: true,
    params: { ordered_linkifier_ids: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async ({ services, realm }, p) => {
      await reorderLinkifiers(services, realm, p.ordered_linkifier_ids);
    },
  }),
];
