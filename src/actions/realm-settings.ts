// PATCH /realm: organization administrators change the organization's
// settings. Unlike Zulip, which saves setting by setting, every value is
// checked first and all are written in one transaction.
import { ApiError, badRequest, mustBeAdmin, mustBeOwner } from "../errors.ts";
import { canonicalGroupSetting, checkGroupSetting, sameGroupSetting, type GroupSettingValue } from "../domain/group-settings.ts";
import {
  checkRealmName,
  MAX_REALM_DESCRIPTION_LENGTH,
  MAX_REALM_NAME_LENGTH,
  OWNER_ONLY_REALM_SETTINGS,
  parseRealmSettings,
  REALM_CHANNEL_SETTINGS,
  REALM_GROUP_SETTING_RULES,
  type PlainRealmSettings,
  type RealmGroupSettingName,
  type RealmSettings,
} from "../domain/realm-settings.ts";
import { isAdmin, isOwner, Role } from "../domain/roles.ts";
import { isFullMember, SystemGroup } from "../domain/system-groups.ts";
import { checkUserSetting, USER_SETTING_DEFAULTS, type UserSettingName } from "../domain/user-settings.ts";
import { checkEmailVisibility } from "../domain/users.ts";
import { metadataAudiences, getChannel } from "../queries/channels.ts";
import { activeUserIdsAmong, groupFacts, settingValueForApi, systemGroupIdsByName } from "../queries/user-groups.ts";
import { checkSettingMembers, listActiveUsers } from "../queries/users.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { announceAudienceChanges } from "./channels.ts";
import type { PendingEvents } from "../events/notifier.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { renderDescription } from "../queries/markdown-context.ts";

export { REALM_CHANNEL_SETTINGS };

export type PlainRealmChange = Partial<Pick<PlainRealmSettings, Exclude<keyof PlainRealmSettings, "authentication_methods" | "default_email_address_visibility" | "user_settings_defaults">>>;

export interface RealmChange {
  name?: string | undefined;
  description?: string | undefined;
  plain: PlainRealmChange;
  groups: Partial<Record<RealmGroupSettingName, { new: GroupSettingValue; old?: GroupSettingValue | undefined }>>;
}

/** Settings Zulip reports with update_dict; the rest use a plain update event. */
const UPDATE_DICT_SETTINGS = new Set(["allow_message_editing", "message_content_edit_limit_seconds"]);

/** Returns what changed, as Zulip's response data: strings as "updated", other values as set. */
export async function updateRealmSettings(services: Services, realm: Realm, actor: User, change: RealmChange): Promise<Record<string, unknown>> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  const asked = [...Object.keys(change.plain), ...Object.keys(change.groups)];
  if (!isOwner(actor.role) && asked.some((name) => OWNER_ONLY_REALM_SETTINGS.has(name))) throw mustBeOwner();
  if (change.name !== undefined && change.name.length > MAX_REALM_NAME_LENGTH) throw badRequest(`name is too long (limit: ${MAX_REALM_NAME_LENGTH} characters)`);
  const name = change.name !== undefined ? checkRealmName(change.name) : undefined;
  if (change.description !== undefined && change.description.length > MAX_REALM_DESCRIPTION_LENGTH) {
    throw badRequest(`description is too long (limit: ${MAX_REALM_DESCRIPTION_LENGTH} characters)`);
  }

  return inRealmTransaction(services, realm.id, async (trx, pending) => {
    const current = (await trx.selectFrom("realms").selectAll().where("id", "=", realm.id).executeTakeFirstOrThrow()) as Realm;
    const settings = parseRealmSettings(current.settings);
    const stored = JSON.parse(current.settings) as Partial<RealmSettings>;
    const response: Record<string, unknown> = {};
    // Each event: a plain update of one property, or update_dict data (several keys that change together).
    const events: ({ property: string; value: unknown } | { data: Record<string, unknown> })[] = [];
    const rowUpdates: { name?: string; description?: string; rendered_description?: string } = {};

    if (name !== undefined && name !== current.name) {
      rowUpdates.name = name;
      response.name = "updated";
      events.push({ property: "name", value: name });
    }
    if (change.description !== undefined && change.description !== current.description) {
      rowUpdates.description = change.description;
      rowUpdates.rendered_description = await renderDescription(trx, services.config, realm.id, change.description, await compiledLinkifiersFor(services.storage, trx, realm));
      response.description = "updated";
      events.push({ property: "description", value: change.description });
    }

    for (const [key, value] of Object.entries(change.plain) as [keyof PlainRealmChange, unknown][]) {
      if ((REALM_CHANNEL_SETTINGS as readonly string[]).includes(key)) await checkRealmChannel(trx, realm.id, key, value as number);
      // Zulip always re-sends the organization type, changed or not.
      if (settings[key] === value && key !== "org_type") continue;
      (stored as Record<string, unknown>)[key] = value;
      response[key] = typeof value === "string" ? "updated" : value;
      if (key === "topics_policy") events.push({ data: { topics_policy: value, mandatory_topics: value === "disable_empty_topic" } });
      else if (UPDATE_DICT_SETTINGS.has(key)) events.push({ data: { [key]: value } });
      else events.push({ property: key, value });
    }

    const groupChanges = Object.entries(change.groups) as [RealmGroupSettingName, { new: GroupSettingValue; old?: GroupSettingValue }][];
    if (groupChanges.length > 0) {
      const facts = await groupFacts(trx, realm.id);
      const nobody = (await systemGroupIdsByName(trx, realm.id)).get(SystemGroup.NOBODY)!;
      const active = await activeUserIdsAmong(
        trx,
        groupChanges.flatMap(([setting]) => {
          const value = settings[setting];
          return typeof value === "number" ? [] : value.direct_members;
        }),
      );
      for (const [setting, { new: requested, old }] of groupChanges) {
        const currentValue = settingValueForApi(settings[setting], active);
        if (old !== undefined && !sameGroupSetting(canonicalGroupSetting(old, nobody), currentValue)) {
          throw new ApiError(400, "EXPECTATION_MISMATCH", "'old' value does not match the expected value.", { field_name: "old" });
        }
        const value = canonicalGroupSetting(requested, nobody);
        checkGroupSetting(setting, value, REALM_GROUP_SETTING_RULES[setting], (id) => facts.get(id));
        if (typeof value !== "number") await checkSettingMembers(trx, realm.id, value.direct_members);
        if (sameGroupSetting(value, currentValue)) continue;
        (stored as Record<string, unknown>)[setting] = value;
        response[setting] = value;
        events.push({ data: { [setting]: value } });
      }
    }

    if (events.length === 0) return response;
    const newSettings = JSON.stringify(stored);
    await trx.updateTable("realms").set({ ...rowUpdates, settings: newSettings }).where("id", "=", realm.id).execute();
    const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
    for (const e of events) {
      pending.add(
        realm.id,
        "data" in e ? { type: "realm", op: "update_dict", property: "default", data: e.data } : { type: "realm", op: "update", property: e.property, value: e.value },
        everyone,
      );
    }
    if (change.plain.waiting_period_threshold !== undefined && response.waiting_period_threshold !== undefined) {
      await refreshFullMembers(trx, services, { ...current, settings: newSettings }, pending);
    }
    return response;
  });
}

/** A channel an announcement setting may name: -1 for none, else a channel of the organization. */
async function checkRealmChannel(trx: Trx, realmId: number, setting: string, channelId: number): Promise<void> {
  if (channelId < 0) return;
  const channel = isStorableId(channelId) ? await getChannel(trx, realmId, channelId) : undefined;
  if (!channel || channel.is_archived) throw badRequest("Invalid channel ID");
  if (setting === "moderation_request_channel_id" && !channel.invite_only) throw badRequest("Moderation request channel must be private.");
}

/**
 * After the waiting period changes, members who passed (or no longer pass)
 * it join (or leave) role:fullmembers, with the group events and any change
 * in who sees which channels.
 */
async function refreshFullMembers(trx: Trx, services: Services, realm: Realm, pending: PendingEvents): Promise<void> {
  const threshold = parseRealmSettings(realm.settings).waiting_period_threshold;
  const groupId = (await systemGroupIdsByName(trx, realm.id)).get(SystemGroup.FULL_MEMBERS)!;
  const members = await trx
    .selectFrom("users")
    .select(["id", "date_joined"])
    .where("realm_id", "=", realm.id)
    .where("is_active", "=", true)
    .where("role", "=", Role.MEMBER)
    .where("is_system_bot", "=", false)
    .execute();
  const inGroup = new Set((await trx.selectFrom("user_group_members").select("user_id").where("group_id", "=", groupId).execute()).map((r) => r.user_id));
  const now = services.now();
  const joining = members.filter((u) => isFullMember(u.date_joined, threshold, now) && !inGroup.has(u.id)).map((u) => u.id);
  const leaving = members.filter((u) => !isFullMember(u.date_joined, threshold, now) && inGroup.has(u.id)).map((u) => u.id);
  if (joining.length === 0 && leaving.length === 0) return;
  const audiencesBefore = await metadataAudiences(trx, realm.id);
  // As many as the organization has members: written in chunks.
  for (const chunk of inChunks(joining)) await trx.insertInto("user_group_members").values(chunk.map((user_id) => ({ group_id: groupId, user_id }))).execute();
  for (const chunk of inChunks(leaving)) await trx.deleteFrom("user_group_members").where("group_id", "=", groupId).where("user_id", "in", chunk).execute();
  const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
  if (joining.length > 0) pending.add(realm.id, { type: "user_group", op: "add_members", group_id: groupId, user_ids: joining }, everyone);
  if (leaving.length > 0) pending.add(realm.id, { type: "user_group", op: "remove_members", group_id: groupId, user_ids: leaving }, everyone);
  await announceAudienceChanges(trx, realm, audiencesBefore, now, pending);
}

/**
 * PATCH /realm/user_settings_defaults: the personal settings new users start
 * with, including email_address_visibility.
 */
export async function updateUserSettingsDefaults(services: Services, realm: Realm, actor: User, changes: Partial<Record<UserSettingName | "email_address_visibility", unknown>>): Promise<void> {
  if (!isAdmin(actor.role)) throw mustBeAdmin();
  const checked: [string, unknown][] = [];
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) continue;
    if (key === "email_address_visibility") {
      checked.push([key, checkEmailVisibility(value)]);
    } else {
      checked.push([key, checkUserSetting(key as UserSettingName, value)]);
    }
  }
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const current = await trx.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
    const stored = JSON.parse(current.settings) as Partial<RealmSettings>;
    const settings = parseRealmSettings(current.settings);
    const defaults: Record<string, unknown> = { ...(stored.user_settings_defaults ?? {}) };
    const changed: [string, unknown][] = [];
    for (const [key, value] of checked) {
      const before = key === "email_address_visibility" ? settings.default_email_address_visibility : ({ ...USER_SETTING_DEFAULTS, ...settings.user_settings_defaults }[key as UserSettingName] as unknown);
      if (before === value) continue;
      if (key === "email_address_visibility") stored.default_email_address_visibility = value as number;
      else defaults[key] = value;
      changed.push([key, value]);
    }
    if (changed.length === 0) return;
    stored.user_settings_defaults = defaults as RealmSettings["user_settings_defaults"];
    await trx.updateTable("realms").set({ settings: JSON.stringify(stored) }).where("id", "=", realm.id).execute();
    const everyone = (await listActiveUsers(trx, realm.id)).map((u) => u.id);
    for (const [property, value] of changed) pending.add(realm.id, { type: "realm_user_settings_defaults", op: "update", property, value }, everyone);
  });
}
