// `parley import zulip <export.tar.gz>`: an organization exported by Zulip
// (zerver/lib/export.py) brought into an empty Parley database, as Zulip's
// zerver/lib/import_realm.py does: every row gets a new ID from Parley's own
// sequences, content is re-rendered, links to old IDs are rewritten, and the
// whole import is one transaction (files written are removed on failure).
import { generateApiKey } from "../actions/credentials.ts";
import { channelTopicsPolicyFromZulip, realmRowFromZulip } from "../domain/zulip-export-format.ts";
import crypto from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { insertRealm } from "../actions/realm.ts";
import { insertUser } from "../actions/users.ts";
import { AvatarSource, avatarStoragePaths, newAvatarHash } from "../domain/avatar.ts";
import { FieldType, isRenderable } from "../domain/custom-profile-fields.ts";
import { checkLinkifier } from "../domain/linkifiers.ts";
import { checkPlayground } from "../domain/playgrounds.ts";
import { emojiStoragePath, isEmojiFileName } from "../domain/emoji.ts";
import { encodeGroupSetting } from "../domain/group-settings.ts";
import { isRole, Role } from "../domain/roles.ts";
import { parseRealmSettings, REALM_CHANNEL_SETTINGS } from "../domain/realm-settings.ts";
import { uploadUrl } from "../domain/uploads.ts";
import { checkUserSetting, USER_SETTING_DEFAULTS, USER_SETTING_NAMES } from "../domain/user-settings.ts";
import { apiEmailFor, checkEmailVisibility } from "../domain/users.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { markdownContextFor, renderDescription } from "../queries/markdown-context.ts";
import type { Services } from "../services.ts";
import { findRoot, ImportFormatError, readJson, readJsonIfPresent, unpackTarball } from "./tarball.ts";
import { ImportWriter, inOneTransaction } from "./writer.ts";

type Row = Record<string, unknown>;
type Tables = Record<string, Row[] | undefined>;

/** Zulip's Recipient.type values. */
const RecipientType = { PERSONAL: 1, STREAM: 2, DIRECT_MESSAGE_GROUP: 3 } as const;

const num = (v: unknown): number => (typeof v === "number" ? v : Number(v));
const seconds = (v: unknown): number => Math.floor(num(v));

/** Copies the values of `source` whose key `target` has, with the same type (the settings both servers share). */
function mergeKnown(target: Record<string, unknown>, source: Row, skip: (key: string) => boolean = () => false): Record<string, unknown> {
  const out = { ...target };
  for (const [key, value] of Object.entries(source)) {
    if (!(key in target) || skip(key) || value === null) continue;
    if (typeof value === typeof target[key] && typeof value !== "object") out[key] = value;
  }
  return out;
}

/** The personal settings of a Zulip user that Parley has, each checked as the settings endpoint checks it. */
function userSettings(stored: Record<string, unknown>, u: Row): Record<string, unknown> {
  const out = { ...stored };
  for (const name of USER_SETTING_NAMES) {
    if (u[name] === undefined || u[name] === null) continue;
    try {
      out[name] = checkUserSetting(name, u[name]);
    } catch {
      // A value Parley does not offer keeps the organization's default.
    }
  }
  return out;
}

export interface ZulipImportResult {
  realmId: number;
  counts: Map<string, number>;
}

export async function importZulip(services: Services, tarball: string, log: (line: string) => void): Promise<ZulipImportResult> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "parley-import-"));
  try {
    log(`Unpacking ${tarball}: ${await unpackTarball(tarball, dir)} files`);
    const root = await findRoot(dir, "realm.json");
    const tables = await readJson<Tables>(path.join(root, "realm.json"));
    return await inOneTransaction(services, async (trx, started) => {
      const writer = await importRows(services, trx, root, tables, log, started);
      return { realmId: writer.realm.id, counts: writer.counts };
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

function table(tables: Tables, ...names: string[]): Row[] {
  for (const name of names) if (Array.isArray(tables[name])) return tables[name];
  return [];
}

async function importRows(
  services: Services,
  trx: Parameters<typeof insertRealm>[0],
  root: string,
  tables: Tables,
  log: (line: string) => void,
  started: { writer?: ImportWriter },
): Promise<ImportWriter> {
  const zrealm = table(tables, "zerver_realm")[0];
  if (!zrealm) throw new ImportFormatError("realm.json has no zerver_realm row");

  // The realm, with the settings both servers know (group settings keep Parley's defaults: they name Zulip group IDs).
  const { realm } = await insertRealm(trx, services, {
    name: String(zrealm.name ?? "Imported organization"),
    description: String(zrealm.description ?? ""),
    dateCreated: seconds(zrealm.date_created ?? services.now()),
  });
  // Channel settings name old channel IDs: set once the channels exist (below).
  const channelSetting = new Set<string>(REALM_CHANNEL_SETTINGS);
  const settings = mergeKnown(parseRealmSettings(realm.settings) as unknown as Record<string, unknown>, realmRowFromZulip(zrealm), (key) => key.endsWith("_group") || key === "id" || channelSetting.has(key));
  // The personal settings new users start with (Zulip's RealmUserDefault row), each checked as the settings endpoint checks it.
  const zdefaults = table(tables, "zerver_realmuserdefault")[0];
  if (zdefaults) {
    const defaults: Record<string, unknown> = {};
    for (const name of USER_SETTING_NAMES) {
      if (zdefaults[name] === undefined || zdefaults[name] === null) continue;
      try {
        const value = checkUserSetting(name, zdefaults[name]);
        if (value !== USER_SETTING_DEFAULTS[name]) defaults[name] = value;
      } catch {
        // A value Parley does not offer: Parley's default.
      }
    }
    settings.user_settings_defaults = defaults;
    try {
      settings.default_email_address_visibility = checkEmailVisibility(zdefaults.email_address_visibility);
    } catch {
      // Missing or unknown: Parley's default.
    }
  }
  // Login methods (Zulip's RealmAuthenticationMethod rows): those Parley has are on when listed; if none of them is, Parley's defaults stay.
  const methodNames = new Set(table(tables, "zerver_realmauthenticationmethod").map((m) => String(m.name)));
  const knownMethods = Object.keys(settings.authentication_methods as Record<string, boolean>);
  if (knownMethods.some((name) => methodNames.has(name))) settings.authentication_methods = Object.fromEntries(knownMethods.map((name) => [name, methodNames.has(name)]));
  await trx
    .updateTable("realms")
    .set({
      settings: JSON.stringify(settings),
      rendered_description: await renderDescription(trx, services.config, realm.id, realm.description),
    })
    .where("id", "=", realm.id)
    .execute();
  const w = new ImportWriter(services, trx, { ...realm, settings: JSON.stringify(settings) }, log);
  started.writer = w;
  w.count("realm");
  w.progress("realm");

  // Users: humans first, then bots (a bot names its owner).
  // Mirror dummies are ordinary (deactivated) users here, as import_realm merges them.
  const zusers = [...table(tables, "zerver_userprofile"), ...table(tables, "zerver_userprofile_mirrordummy")];
  const ordered = [...zusers.filter((u) => !u.is_bot), ...zusers.filter((u) => u.is_bot)];
  const systemBotEmails = new Set(["notification-bot@zulip.com", "welcome-bot@zulip.com"]);
  for (const u of ordered) {
    const email = String(u.delivery_email ?? u.email);
    if (systemBotEmails.has(email.toLowerCase())) {
      // Parley's own system bots stand in for Zulip's.
      const existing = await trx.selectFrom("users").select("id").where("realm_id", "=", realm.id).where("delivery_email_key", "=", email.toLowerCase()).executeTakeFirst();
      if (existing) w.ids.users.set(num(u.id), existing.id);
      continue;
    }
    const role = isRole(num(u.role)) ? num(u.role) : Role.MEMBER;
    const owner = w.mapped("users", u.bot_owner as number | null);
    // Passwords are not carried: users set a new one (password reset) or log in another way.
    const user = await insertUser(trx, services, w.realm, {
      email,
      fullName: String(u.full_name ?? email),
      passwordHash: null,
      role,
      isBot: u.is_bot === true,
      botType: u.is_bot === true ? num(u.bot_type ?? 1) : null,
      ...(owner !== undefined ? { botOwnerId: owner } : {}),
      timezone: typeof u.timezone === "string" ? u.timezone : "",
    });
    const stored = JSON.parse(user.settings) as Record<string, unknown>;
    let visibility = user.email_address_visibility;
    try {
      if (u.email_address_visibility !== undefined && u.email_address_visibility !== null) visibility = checkEmailVisibility(u.email_address_visibility);
    } catch {
      // Unknown: the organization's default for new users.
    }
    await trx
      .updateTable("users")
      .set({
        // Who may see the address is the user's own choice, not the new users' default; the API address follows it.
        email_address_visibility: visibility,
        ...(u.is_bot === true ? {} : { email: apiEmailFor(user.id, email, visibility, services.config.fakeEmailDomain), email_key: apiEmailFor(user.id, email, visibility, services.config.fakeEmailDomain).toLowerCase() }),
        is_active: u.is_active !== false,
        date_joined: seconds(u.date_joined ?? services.now()),
        settings: JSON.stringify(userSettings(stored, u)),
      })
      .where("id", "=", user.id)
      .execute();
    w.ids.users.set(num(u.id), user.id);
    w.count("users");
  }
  // Zulip's cross-realm bots (Notification Bot, Welcome Bot, Email Gateway) are the server's, not in the
  // export's users: those Parley has stand in for themselves, any other is Notification Bot.
  const systemBots = new Map(
    (await trx.selectFrom("users").select(["id", "delivery_email_key"]).where("realm_id", "=", realm.id).where("is_system_bot", "=", true).execute()).map((b) => [b.delivery_email_key, b.id]),
  );
  for (const bot of table(tables, "zerver_userprofile_crossrealm")) {
    const id = systemBots.get(String(bot.email).toLowerCase()) ?? systemBots.get("notification-bot@zulip.com");
    if (id !== undefined) w.ids.users.set(num(bot.id), id);
  }
  w.progress("users");

  // Channels, with Parley's default permissions (the creator's, when known).
  const groups = await w.systemGroupIds();
  const recipients = new Map(table(tables, "zerver_recipient").map((r) => [num(r.id), { type: num(r.type), typeId: num(r.type_id) }]));
  // Direct-message groups: Zulip's table was zerver_huddle, its model is now DirectMessageGroup; either name is read.
  // A group recipient's type_id names a row there; its members are the recipient's subscribers (as import_realm finds them).
  const dmGroupTable = tables.zerver_directmessagegroup ?? tables.zerver_huddle;
  const dmGroups = new Set(table(tables, "zerver_directmessagegroup", "zerver_huddle").map((g) => num(g.id)));
  const isKnownGroup = (typeId: number) => dmGroupTable === undefined || dmGroups.has(typeId);
  const channelOfRecipient = new Map<number, number>();
  for (const s of table(tables, "zerver_stream")) {
    const id = await w.insertChannel({
      name: String(s.name),
      description: String(s.description ?? ""),
      dateCreated: seconds(s.date_created ?? services.now()),
      creatorId: w.mapped("users", s.creator as number | null),
      inviteOnly: s.invite_only === true,
      isWebPublic: s.is_web_public === true,
      historyPublicToSubscribers: s.history_public_to_subscribers === true,
      messageRetentionDays: typeof s.message_retention_days === "number" ? s.message_retention_days : null,
      topicsPolicy: (() => {
        const policy = channelTopicsPolicyFromZulip(s.topics_policy);
        return typeof policy === "string" ? policy : "inherit";
      })(),
      isArchived: s.deactivated === true,
    });
    w.ids.channels.set(num(s.id), id);
    const recipientId = table(tables, "zerver_recipient").find((r) => num(r.type) === RecipientType.STREAM && num(r.type_id) === num(s.id))?.id;
    if (recipientId !== undefined) channelOfRecipient.set(num(recipientId), id);
  }
  w.progress("channels");
  // The organization's announcement and moderation channels (Zulip's foreign keys name them without _id), by their new IDs.
  const channelSettings: Record<string, number> = {};
  for (const name of REALM_CHANNEL_SETTINGS) {
    const mapped = w.mapped("channels", zrealm[name.replace(/_id$/, "")] as number | null | undefined);
    if (mapped !== undefined) channelSettings[name] = mapped;
  }
  if (Object.keys(channelSettings).length > 0) {
    const current = await trx.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
    await trx
      .updateTable("realms")
      .set({ settings: JSON.stringify({ ...(JSON.parse(current.settings) as Record<string, unknown>), ...channelSettings }) })
      .where("id", "=", realm.id)
      .execute();
  }
  for (const d of table(tables, "zerver_defaultstream")) {
    const channelId = w.mapped("channels", d.stream as number);
    if (channelId !== undefined) await trx.insertInto("default_channels").values({ realm_id: realm.id, channel_id: channelId }).execute();
  }

  // Subscriptions to channels; those to direct-message groups say who is in each group.
  const groupMembers = new Map<number, number[]>();
  for (const sub of table(tables, "zerver_subscription")) {
    const userId = w.mapped("users", sub.user_profile as number);
    const recipient = recipients.get(num(sub.recipient));
    if (userId === undefined || !recipient) continue;
    if (recipient.type === RecipientType.DIRECT_MESSAGE_GROUP) {
      groupMembers.set(num(sub.recipient), [...(groupMembers.get(num(sub.recipient)) ?? []), userId]);
      continue;
    }
    const channelId = channelOfRecipient.get(num(sub.recipient));
    if (recipient.type !== RecipientType.STREAM || channelId === undefined) continue;
    const optional = (v: unknown) => (typeof v === "boolean" ? v : null);
    await w.insertSubscription(userId, channelId, {
      active: sub.active !== false,
      color: typeof sub.color === "string" ? sub.color : undefined,
      isMuted: sub.is_muted === true,
      pinToTop: sub.pin_to_top === true,
      desktopNotifications: optional(sub.desktop_notifications),
      audibleNotifications: optional(sub.audible_notifications),
      pushNotifications: optional(sub.push_notifications),
      emailNotifications: optional(sub.email_notifications),
      wildcardMentionsNotify: optional(sub.wildcard_mentions_notify),
    });
  }
  w.progress("subscriptions");

  // User groups: Zulip's system groups are Parley's (membership follows roles); the others are created.
  const nobody = encodeGroupSetting(groups.get("role:nobody")!);
  const everyone = encodeGroupSetting(groups.get("role:everyone")!);
  for (const g of table(tables, "zerver_namedusergroup")) {
    const oldId = num(g.usergroup_ptr ?? g.id);
    if (g.is_system_group === true) {
      const id = groups.get(String(g.name));
      if (id !== undefined) w.ids.groups.set(oldId, id);
      continue;
    }
    const { id } = await trx
      .insertInto("user_groups")
      .values({
        realm_id: realm.id,
        name: String(g.name),
        description: String(g.description ?? ""),
        is_system_group: false,
        creator_id: w.mapped("users", g.creator as number | null) ?? null,
        date_created: g.date_created === undefined || g.date_created === null ? null : seconds(g.date_created),
        deactivated: g.deactivated === true,
        can_add_members_group: nobody,
        can_join_group: nobody,
        can_leave_group: everyone,
        can_manage_group: nobody,
        can_mention_group: everyone,
        can_remove_members_group: nobody,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    w.ids.groups.set(oldId, id);
    w.count("user_groups");
  }
  const systemGroupIds = new Set(groups.values());
  for (const m of table(tables, "zerver_usergroupmembership")) {
    const groupId = w.mapped("groups", m.user_group as number);
    const userId = w.mapped("users", m.user_profile as number);
    if (groupId === undefined || userId === undefined || systemGroupIds.has(groupId)) continue;
    await trx.insertInto("user_group_members").values({ group_id: groupId, user_id: userId }).execute();
    w.count("user_group_members");
  }
  for (const m of table(tables, "zerver_groupgroupmembership")) {
    const supergroup = w.mapped("groups", m.supergroup as number);
    const subgroup = w.mapped("groups", m.subgroup as number);
    if (supergroup === undefined || subgroup === undefined || systemGroupIds.has(supergroup)) continue;
    await trx.insertInto("user_group_subgroups").values({ supergroup_id: supergroup, subgroup_id: subgroup }).execute();
  }
  w.progress("user_groups");
  w.progress("user_group_members");

  // Custom profile fields and each user's values (a person picker's value is a list of user IDs).
  const fieldIds = new Map<number, { id: number; type: number }>();
  for (const f of table(tables, "zerver_customprofilefield")) {
    const { id } = await trx
      .insertInto("custom_profile_fields")
      .values({
        realm_id: realm.id,
        name: String(f.name),
        hint: String(f.hint ?? ""),
        field_type: num(f.field_type),
        field_data: typeof f.field_data === "string" ? f.field_data : "",
        sort_order: num(f.order ?? 0),
        display_in_profile_summary: f.display_in_profile_summary === true,
        required: f.required === true,
        editable_by_user: f.editable_by_user !== false,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    fieldIds.set(num(f.id), { id, type: num(f.field_type) });
    w.count("custom_profile_fields");
  }
  for (const v of table(tables, "zerver_customprofilefieldvalue")) {
    const field = fieldIds.get(num(v.field));
    const userId = w.mapped("users", v.user_profile as number);
    if (!field || userId === undefined) continue;
    let value = String(v.value ?? "");
    if (field.type === FieldType.USER) {
      const people = (JSON.parse(value) as number[]).map((old) => w.mapped("users", old)).filter((id) => id !== undefined);
      value = JSON.stringify(people);
    }
    const rendered = isRenderable(field.type)
      ? renderMarkdown(value, await markdownContextFor(trx, services.config, realm.id, value, { inlineImagePreview: false })).html
      : null;
    await trx.insertInto("custom_profile_field_values").values({ user_id: userId, field_id: field.id, value, rendered_value: rendered }).execute();
    w.count("custom_profile_field_values");
  }
  w.progress("custom_profile_fields");
  w.progress("custom_profile_field_values");

  // Linkifiers and code playgrounds, before the messages are rendered (they link what the linkifiers match).
  // One Parley would refuse (a pattern RE2 cannot compile, say) is left out and logged.
  for (const l of [...table(tables, "zerver_realmfilter")].sort((a, b) => num(a.order ?? 0) - num(b.order ?? 0) || num(a.id) - num(b.id))) {
    const input = { pattern: String(l.pattern ?? ""), urlTemplate: String(l.url_template ?? "") };
    const taken = (await trx.selectFrom("realm_linkifiers").select("id").where("realm_id", "=", realm.id).where("pattern", "=", input.pattern).executeTakeFirst()) !== undefined;
    try {
      checkLinkifier(input, taken);
    } catch (error) {
      log(`linkifier ${input.pattern} left out: ${(error as Error).message}`);
      continue;
    }
    await trx.insertInto("realm_linkifiers").values({ realm_id: realm.id, pattern: input.pattern, url_template: input.urlTemplate, order: num(l.order ?? 0) }).execute();
    w.count("linkifiers");
  }
  for (const p of table(tables, "zerver_realmplayground")) {
    const input = { name: String(p.name ?? ""), pygmentsLanguage: String(p.pygments_language ?? ""), urlTemplate: String(p.url_template ?? "") };
    const taken =
      (await trx.selectFrom("realm_playgrounds").select("id").where("realm_id", "=", realm.id).where("name", "=", input.name).where("pygments_language", "=", input.pygmentsLanguage).executeTakeFirst()) !== undefined;
    try {
      checkPlayground(input, taken);
    } catch (error) {
      log(`playground ${input.name} left out: ${(error as Error).message}`);
      continue;
    }
    await trx.insertInto("realm_playgrounds").values({ realm_id: realm.id, name: input.name, pygments_language: input.pygmentsLanguage, url_template: input.urlTemplate }).execute();
    w.count("playgrounds");
  }
  w.progress("linkifiers");
  w.progress("playgrounds");

  // Uploaded avatars (avatars/records.json: <hash>.png, <hash>-medium.png, <hash>.original per user), under a new hash.
  const avatarRecords = await readJsonIfPresent<Row[]>(path.join(root, "avatars", "records.json"), []);
  const avatarFiles = new Map<number, { small?: string; medium?: string; original?: string }>();
  for (const a of avatarRecords) {
    const userId = w.mapped("users", a.user_profile_id as number);
    if (userId === undefined) continue;
    const file = path.join(root, "avatars", String(a.path));
    const entry = avatarFiles.get(userId) ?? {};
    if (String(a.path).endsWith("-medium.png")) entry.medium = file;
    else if (String(a.path).endsWith(".original")) entry.original = file;
    else if (String(a.path).endsWith(".png")) entry.small = file;
    avatarFiles.set(userId, entry);
  }
  for (const [userId, files] of avatarFiles) {
    if (files.small === undefined) continue;
    const hash = newAvatarHash(crypto.randomBytes(20));
    const paths = avatarStoragePaths(realm.id, hash);
    await w.putFile(paths.small, files.small);
    await w.putFile(paths.medium, files.medium ?? files.small);
    await w.putFile(paths.original, files.original ?? files.small);
    await trx.updateTable("users").set({ avatar_source: AvatarSource.UPLOADED, avatar_hash: hash, avatar_version: 2 }).where("id", "=", userId).execute();
    w.count("avatars");
  }
  w.progress("avatars");

  // Custom emoji: emoji/records.json names the files; Parley keeps them under avatars/<realm>/emoji/images/.
  const emojiRecords = await readJsonIfPresent<Row[]>(path.join(root, "emoji", "records.json"), []);
  for (const e of emojiRecords) {
    // Parley's emoji file names are random hex and a known image extension (domain/emoji.ts).
    const fileName = `${crypto.randomBytes(8).toString("hex")}${path.extname(String(e.file_name)).toLowerCase()}`;
    if (!isEmojiFileName(fileName)) {
      log(`skipped custom emoji :${String(e.name)}:: not an image type Parley serves (${String(e.file_name)})`);
      continue;
    }
    await w.putFile(emojiStoragePath(realm.id, fileName), path.join(root, "emoji", String(e.path)));
    const { id } = await trx
      .insertInto("realm_emoji")
      .values({ realm_id: realm.id, author_id: w.mapped("users", e.author as number | null) ?? null, name: String(e.name), file_name: fileName, deactivated: e.deactivated === true, date_created: services.now() })
      .returning("id")
      .executeTakeFirstOrThrow();
    w.ids.emoji.set(num(e.id), id);
    w.count("realm_emoji");
  }
  w.progress("realm_emoji");

  // Uploads: the files first (uploads/records.json), the attachment rows once their messages exist.
  const uploadRecords = await readJsonIfPresent<Row[]>(path.join(root, "uploads", "records.json"), []);
  const attachments = table(await readJsonIfPresent<Tables>(path.join(root, "attachment.json"), {}), "zerver_attachment");
  const newPathIds = new Map<string, string>();
  for (const r of uploadRecords) {
    const oldPathId = String(r.s3_path ?? r.path);
    const newPathId = w.newUploadPathId(path.basename(oldPathId));
    await w.putFile(newPathId, path.join(root, "uploads", String(r.path)));
    newPathIds.set(oldPathId, newPathId);
    w.count("upload files");
  }
  w.progress("upload files");

  // Messages, one chunk file at a time, in the exporter's order (by ID).
  const reactions = table(tables, "zerver_reaction");
  const chunkFiles = (await fs.readdir(root)).filter((f) => /^messages-\d+\.json$/.test(f)).sort();
  const rewrite = (content: string) => rewriteContent(content, w, newPathIds);
  for (const file of chunkFiles) {
    const chunk = await readJson<Tables>(path.join(root, file));
    const flagsByMessage = new Map<number, Map<number, number>>();
    for (const um of table(chunk, "zerver_usermessage")) {
      const userId = w.mapped("users", um.user_profile as number);
      if (userId === undefined) continue;
      const messageId = num(um.message);
      if (!flagsByMessage.has(messageId)) flagsByMessage.set(messageId, new Map());
      flagsByMessage.get(messageId)!.set(userId, num(um.flags_mask ?? um.flags ?? 0));
    }
    for (const m of [...table(chunk, "zerver_message")].sort((a, b) => num(a.id) - num(b.id))) {
      const senderId = w.mapped("users", m.sender as number);
      const recipient = recipients.get(num(m.recipient));
      if (senderId === undefined || !recipient) throw new ImportFormatError(`message ${String(m.id)}: unknown sender or recipient`);
      let to: { channelId: number } | { userIds: number[] };
      if (recipient.type === RecipientType.STREAM) {
        const channelId = channelOfRecipient.get(num(m.recipient));
        if (channelId === undefined) throw new ImportFormatError(`message ${String(m.id)}: unknown channel`);
        to = { channelId };
      } else if (recipient.type === RecipientType.PERSONAL) {
        const other = w.mapped("users", recipient.typeId);
        if (other === undefined) throw new ImportFormatError(`message ${String(m.id)}: unknown recipient`);
        to = { userIds: [senderId, other] };
      } else {
        if (!isKnownGroup(recipient.typeId)) throw new ImportFormatError(`message ${String(m.id)}: unknown direct message group ${recipient.typeId}`);
        to = { userIds: [senderId, ...(groupMembers.get(num(m.recipient)) ?? [])] };
      }
      const id = await w.insertMessage({
        senderId,
        to,
        topic: String(m.subject ?? m.topic_name ?? ""),
        content: rewrite(String(m.content ?? "")),
        dateSent: seconds(m.date_sent),
        sendingClient: typeof m.sending_client === "string" ? m.sending_client : "Zulip import",
        lastEditTime: m.last_edit_time === null || m.last_edit_time === undefined ? null : seconds(m.last_edit_time),
        editHistory: typeof m.edit_history === "string" ? m.edit_history : null,
        recipients: flagsByMessage.get(num(m.id)) ?? new Map(),
      });
      w.ids.messages.set(num(m.id), id);
    }
    for (const r of table(chunk, "zerver_reaction")) reactions.push(r);
    log(`${file}: messages ${w.counts.get("messages") ?? 0}`);
  }
  w.progress("messages");
  w.progress("user_messages");

  for (const r of reactions) {
    const messageId = w.mapped("messages", r.message as number);
    const userId = w.mapped("users", r.user_profile as number);
    if (messageId === undefined || userId === undefined) continue;
    const type = String(r.reaction_type);
    // A custom emoji's code is its ID.
    const code = type === "realm_emoji" ? String(w.mapped("emoji", num(r.emoji_code)) ?? r.emoji_code) : String(r.emoji_code);
    await w.insertReaction(messageId, userId, { name: String(r.emoji_name), code, type });
  }
  w.progress("reactions");

  // Widgets' submessages (polls' votes, to-do items), as Parley's export writes them in realm.json.
  for (const sm of [...table(tables, "zerver_submessage")].sort((a, b) => num(a.id) - num(b.id))) {
    const messageId = w.mapped("messages", sm.message as number);
    const senderId = w.mapped("users", sm.sender as number);
    if (messageId === undefined || senderId === undefined || typeof sm.msg_type !== "string" || typeof sm.content !== "string") continue;
    await trx.insertInto("submessages").values({ message_id: messageId, sender_id: senderId, msg_type: sm.msg_type, content: sm.content }).execute();
    w.count("submessages");
  }
  w.progress("submessages");

  for (const a of attachments) {
    const newPathId = newPathIds.get(String(a.path_id));
    const ownerId = w.mapped("users", a.owner as number);
    if (newPathId === undefined || ownerId === undefined) continue;
    const { id } = await trx
      .insertInto("attachments")
      .values({
        realm_id: realm.id,
        owner_id: ownerId,
        path_id: newPathId,
        file_name: String(a.file_name ?? path.basename(newPathId)),
        content_type: typeof a.content_type === "string" ? a.content_type : "application/octet-stream",
        size: num(a.size ?? 0),
        // Zulip's create_time is a date; the API reports milliseconds.
        create_time: seconds(a.create_time ?? services.now()) * 1000,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    for (const oldMessage of (a.messages as number[] | undefined) ?? []) {
      const messageId = w.mapped("messages", oldMessage);
      if (messageId !== undefined) await trx.insertInto("attachment_messages").values({ attachment_id: id, message_id: messageId }).execute();
    }
    w.count("attachments");
  }
  w.progress("attachments");

  for (const t of table(tables, "zerver_usertopic")) {
    const userId = w.mapped("users", t.user_profile as number);
    const channelId = w.mapped("channels", t.stream as number);
    if (userId === undefined || channelId === undefined) continue;
    const topic = String(t.topic_name ?? "");
    await trx
      .insertInto("user_topics")
      .values({ user_id: userId, channel_id: channelId, topic, topic_key: topic.toLowerCase(), visibility_policy: num(t.visibility_policy ?? 1), last_updated: seconds(t.last_updated ?? services.now()) })
      .execute();
    w.count("user_topics");
  }
  w.progress("user_topics");

  for (const a of table(tables, "zerver_alertword")) {
    const userId = w.mapped("users", a.user_profile as number);
    const word = String(a.word ?? "").trim();
    if (userId === undefined || word === "") continue;
    const row = { user_id: userId, word, word_key: word.toLowerCase() };
    await trx.insertInto("alert_words").values(row).onConflict((oc) => oc.doNothing()).execute();
    w.count("alert_words");
  }
  w.progress("alert_words");

  for (const m of table(tables, "zerver_muteduser")) {
    const userId = w.mapped("users", m.user_profile as number);
    const mutedId = w.mapped("users", m.muted_user as number);
    if (userId === undefined || mutedId === undefined || userId === mutedId) continue;
    await trx.insertInto("muted_users").values({ user_id: userId, muted_user_id: mutedId, date_muted: seconds(m.date_muted ?? services.now()) }).onConflict((oc) => oc.doNothing()).execute();
    w.count("muted_users");
  }
  w.progress("muted_users");

  for (const n of table(tables, "zerver_savedsnippet")) {
    const userId = w.mapped("users", n.user_profile as number);
    if (userId === undefined || typeof n.title !== "string" || typeof n.content !== "string") continue;
    await trx.insertInto("saved_snippets").values({ realm_id: w.realm.id, user_id: userId, title: n.title, content: n.content, date_created: seconds(n.date_created ?? services.now()) }).execute();
    w.count("saved_snippets");
  }
  w.progress("saved_snippets");

  // NavigationView's user key is `user`.
  for (const v of table(tables, "zerver_navigationview")) {
    const userId = w.mapped("users", v.user as number);
    if (userId === undefined || typeof v.fragment !== "string" || v.fragment === "") continue;
    const name = typeof v.name === "string" ? v.name : null;
    await trx.insertInto("navigation_views").values({ user_id: userId, fragment: v.fragment, is_pinned: v.is_pinned === true, name }).onConflict((oc) => oc.doNothing()).execute();
    w.count("navigation_views");
  }
  w.progress("navigation_views");

  // Presence: the rows in the order of their sequence numbers, renumbered from 1, and the organization's sequence after them.
  const presence = table(tables, "zerver_userpresence")
    .map((p) => ({ userId: w.mapped("users", p.user_profile as number), row: p }))
    .filter((p): p is { userId: number; row: Row } => p.userId !== undefined)
    .sort((a, b) => num(a.row.last_update_id ?? 0) - num(b.row.last_update_id ?? 0) || a.userId - b.userId);
  const seen = new Set<number>();
  let lastUpdateId = 0;
  for (const { userId, row } of presence) {
    if (seen.has(userId)) continue;
    seen.add(userId);
    const time = (v: unknown) => (v === null || v === undefined ? null : seconds(v));
    await trx
      .insertInto("user_presence")
      .values({ user_id: userId, realm_id: w.realm.id, last_connected_time: time(row.last_connected_time), last_active_time: time(row.last_active_time), last_update_id: ++lastUpdateId })
      .execute();
    w.count("user_presence");
  }
  if (lastUpdateId > 0) await trx.insertInto("presence_sequences").values({ realm_id: w.realm.id, last_update_id: lastUpdateId }).execute();
  w.progress("user_presence");

  // Bots' services get new secrets, as Zulip's fix_service_tokens gives them.
  for (const svc of table(tables, "zerver_service")) {
    const botId = w.mapped("users", svc.user_profile as number);
    if (botId === undefined || typeof svc.name !== "string") continue;
    const iface = num(svc.interface ?? 1);
    await trx.insertInto("bot_services").values({ user_id: botId, name: svc.name, base_url: String(svc.base_url ?? ""), token: generateApiKey(), interface: iface === 2 ? 2 : 1 }).execute();
    w.count("bot_services");
  }
  w.progress("bot_services");
  for (const [name, target] of [
    ["zerver_botstoragedata", "bot_storage"],
    ["zerver_botconfigdata", "bot_config"],
  ] as const) {
    for (const b of table(tables, name)) {
      const botId = w.mapped("users", b.bot_profile as number);
      if (botId === undefined || typeof b.key !== "string" || typeof b.value !== "string") continue;
      await trx.insertInto(target).values({ bot_user_id: botId, key: b.key, value: b.value }).onConflict((oc) => oc.doNothing()).execute();
      w.count(target);
    }
    w.progress(target);
  }

  // Statuses name their client by zerver_client id, and a custom emoji by its id.
  const clientNames = new Map(table(tables, "zerver_client").map((c) => [num(c.id), String(c.name)]));
  for (const s of table(tables, "zerver_userstatus")) {
    const userId = w.mapped("users", s.user_profile as number);
    if (userId === undefined) continue;
    const type = typeof s.reaction_type === "string" && s.reaction_type !== "" ? s.reaction_type : "unicode_emoji";
    const code = type === "realm_emoji" && s.emoji_code ? String(w.mapped("emoji", num(s.emoji_code)) ?? s.emoji_code) : String(s.emoji_code ?? "");
    await trx
      .insertInto("user_statuses")
      .values({
        user_id: userId,
        realm_id: realm.id,
        status_text: String(s.status_text ?? ""),
        emoji_name: String(s.emoji_name ?? ""),
        emoji_code: code,
        reaction_type: type,
        timestamp: seconds(s.timestamp ?? services.now()),
        client: clientNames.get(num(s.client)) ?? "Zulip import",
      })
      .onConflict((oc) => oc.column("user_id").doNothing())
      .execute();
    w.count("user_statuses");
  }
  w.progress("user_statuses");

  // Drafts (Parley's exports have them; Zulip's do not): to a channel, a person, or a group, or to nobody yet.
  for (const d of table(tables, "zerver_draft")) {
    const userId = w.mapped("users", d.user_profile as number);
    if (userId === undefined) continue;
    let recipientId: number | null = null;
    if (d.recipient !== null && d.recipient !== undefined) {
      const recipient = recipients.get(num(d.recipient));
      if (!recipient) continue;
      if (recipient.type === RecipientType.STREAM) {
        const channelId = channelOfRecipient.get(num(d.recipient));
        if (channelId === undefined) continue;
        recipientId = await w.recipientId({ channelId });
      } else if (recipient.type === RecipientType.PERSONAL) {
        const other = w.mapped("users", recipient.typeId);
        if (other === undefined) continue;
        recipientId = await w.recipientId({ userIds: [userId, other] });
      } else {
        if (!isKnownGroup(recipient.typeId)) continue;
        recipientId = await w.recipientId({ userIds: [userId, ...(groupMembers.get(num(d.recipient)) ?? [])] });
      }
    }
    const isChannel = recipientId !== null && recipients.get(num(d.recipient))?.type === RecipientType.STREAM;
    // Zulip's last_edit_time is a date (seconds); Parley keeps milliseconds.
    const editedMs = Math.round(num(d.last_edit_time ?? services.now()) * 1000);
    await trx.insertInto("drafts").values({ user_id: userId, recipient_id: recipientId, topic: isChannel ? String(d.topic ?? "") : "", content: String(d.content ?? ""), last_edit_time_ms: editedMs }).execute();
    w.count("drafts");
  }
  w.progress("drafts");

  // Scheduled messages and reminders, delivered ones too (as Zulip's import_realm): sender, recipient, channel and
  // delivered message re-mapped, content's links rewritten and re-rendered; one whose sender, recipient or reminder
  // target did not come along is left out.
  for (const m of [...table(tables, "zerver_scheduledmessage")].sort((a, b) => num(a.id) - num(b.id))) {
    const senderId = w.mapped("users", m.sender as number);
    const recipient = recipients.get(num(m.recipient));
    if (senderId === undefined || !recipient) continue;
    let to: { channelId: number } | { userIds: number[] };
    if (recipient.type === RecipientType.STREAM) {
      const channelId = channelOfRecipient.get(num(m.recipient));
      if (channelId === undefined) continue;
      to = { channelId };
    } else if (recipient.type === RecipientType.PERSONAL) {
      const other = w.mapped("users", recipient.typeId);
      if (other === undefined) continue;
      to = { userIds: [senderId, other] };
    } else {
      if (!isKnownGroup(recipient.typeId)) continue;
      to = { userIds: [senderId, ...(groupMembers.get(num(m.recipient)) ?? [])] };
    }
    const optionalId = (table: "messages", v: unknown) => (v === null || v === undefined ? null : (w.mapped(table, num(v)) ?? undefined));
    const reminderTarget = optionalId("messages", m.reminder_target_message_id);
    if (reminderTarget === undefined) continue;
    const deliveredMessage = optionalId("messages", m.delivered_message);
    const content = rewrite(String(m.content ?? ""));
    const rendered = renderMarkdown(content, await markdownContextFor(trx, services.config, realm.id, content)).html;
    const isChannel = "channelId" in to;
    await trx
      .insertInto("scheduled_messages")
      .values({
        realm_id: realm.id,
        sender_id: senderId,
        delivery_type: num(m.delivery_type ?? 1) === 2 ? 2 : 1,
        recipient_id: await w.recipientId(to),
        channel_id: "channelId" in to ? to.channelId : null,
        topic: isChannel ? String(m.subject ?? m.topic_name ?? "") : "",
        content,
        rendered_content: rendered,
        sending_client: clientNames.get(num(m.sending_client)) ?? "Zulip import",
        read_by_sender: m.read_by_sender === true,
        scheduled_timestamp: seconds(m.scheduled_timestamp),
        request_timestamp: seconds(m.request_timestamp ?? m.scheduled_timestamp),
        delivered: m.delivered === true,
        delivered_message_id: deliveredMessage ?? null,
        failed: m.failed === true,
        failure_message: typeof m.failure_message === "string" ? m.failure_message : null,
        reminder_target_message_id: reminderTarget,
        reminder_note: typeof m.reminder_note === "string" ? m.reminder_note : null,
      })
      .execute();
    w.count("scheduled_messages");
  }
  w.progress("scheduled_messages");
  return w;
}

/**
 * Content that carries old IDs: user mentions by ID, uploads (/user_uploads/<old path_id>),
 * messages (#narrow/…/near/<id>, /with/<id>) and channels (#narrow/channel/<id>-name).
 * Messages are imported in ID order, so a link to an earlier message is rewritten.
 */
function rewriteContent(content: string, w: ImportWriter, newPathIds: ReadonlyMap<string, string>): string {
  let out = content.replace(/\/user_uploads\/([^\s)\]"'>]+)/g, (whole, pathId: string) => {
    const mapped = newPathIds.get(pathId);
    return mapped === undefined ? whole : uploadUrl(mapped);
  });
  // Mentions that name a user by ID: @**Name|id**, silent @_**Name|id**.
  out = out.replace(/(@_?\*\*[^*|\n]*\|)(\d+)(\*\*)/g, (whole, prefix: string, id: string, suffix: string) => {
    const mapped = w.mapped("users", Number(id));
    return mapped === undefined ? whole : `${prefix}${mapped}${suffix}`;
  });
  out = out.replace(/(#narrow\/[^\s)\]]*?\/(?:near|with)\/)(\d+)/g, (whole, prefix: string, id: string) => {
    const mapped = w.mapped("messages", Number(id));
    return mapped === undefined ? whole : `${prefix}${mapped}`;
  });
  out = out.replace(/(#narrow\/(?:channel|stream)\/)(\d+)(?=-|\/|$|[\s)\]])/g, (whole, prefix: string, id: string) => {
    const mapped = w.mapped("channels", Number(id));
    return mapped === undefined ? whole : `${prefix}${mapped}`;
  });
  return out;
}
