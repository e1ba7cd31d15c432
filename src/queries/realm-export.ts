// An organization's data as a Zulip export tarball (zerver/lib/export.py's
// format, so Zulip's import and `parley import zulip` read it): one directory
// zulip-export-{random}/ holding
//   realm.json               the organization's tables, each under Zulip's table name
//                            (zerver_realm, zerver_userprofile, zerver_stream, …), rows
//                            with Zulip's field names, foreign keys as ids, times as
//                            UNIX seconds; every table Zulip's import_realm.py
//                            reads without checking for it is there, empty if Parley
//                            keeps no such data (docs/export-import.md);
//   messages-000001.json …   zerver_message and zerver_usermessage, MESSAGE_CHUNK_SIZE
//                            messages a file, ids ascending;
//   attachment.json          zerver_attachment and zerver_attachment_messages of the
//                            exported messages' files;
//   uploads/ avatars/ emoji/ the files, each directory with its records.json.
// What is in it follows the export type (domain/realm-export.ts) as Zulip's
// rules say: a public export has public channels' messages and no member's
// private data; a full export with consent adds private channels' messages
// and direct messages that consenting members sent or received, and their
// personal data (settings, topics, mutes, alert words, read state).
//
// Memory stays bounded by the organization's size, never its history:
// messages are read a page at a time by id and each page written before the
// next is read; files are streamed from the file store into the tarball.
import { createHash } from "node:crypto";
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from "kysely";
import type { Pack } from "tar-stream";
import { AvatarSource, avatarStoragePaths } from "../domain/avatar.ts";
import { emojiStoragePath } from "../domain/emoji.ts";
import { decodeGroupSetting, type GroupSettingValue } from "../domain/group-settings.ts";
import { dmKeyUserIds, RecipientType } from "../domain/messages.ts";
import { ExportStatus, ExportType, MESSAGE_CHUNK_SIZE, type ExportTypeValue } from "../domain/realm-export.ts";
import { parseRealmSettings, REALM_CHANNEL_SETTINGS } from "../domain/realm-settings.ts";
import { parseUserSettings, USER_SETTING_DEFAULTS } from "../domain/user-settings.ts";
import { Role } from "../domain/roles.ts";
import { EmailVisibility } from "../domain/users.ts";
import type { FileStore } from "../files/store.ts";
import type { Database, Realm, RealmExport, User } from "../storage/schema.ts";
import { SERVICE_VERSION } from "../version.ts";
import { channelTopicsPolicyForZulip, realmRowForZulip, userSettingsForZulip, zulipMajorVersion } from "../domain/zulip-export-format.ts";

type Row = Record<string, unknown>;

/** Zulip's Recipient.PERSONAL: each user's own recipient, which Parley does not store (its DMs are all groups). */
const PERSONAL = 1;
/** Zulip's Message.MessageType.NORMAL. */
const NORMAL_MESSAGE = 1;

export interface ExportProgress {
  (what: string): void;
}

export interface ExportStats {
  messages: number;
  messageFiles: number;
  attachments: number;
  files: number;
}

/** Members whose private data a full export with consent includes (Zulip's get_consented_user_ids): active humans who allow it. */
export async function consentingUserIds(db: Kysely<Database>, realmId: number): Promise<Set<number>> {
  const rows = await db.selectFrom("users").select(["id", "settings"]).where("realm_id", "=", realmId).where("is_active", "=", true).where("is_bot", "=", false).execute();
  return new Set(rows.filter((r) => parseUserSettings(r.settings).allow_private_data_export).map((r) => r.id));
}

/** GET /export/realm/consents: every active human and whether they allow exports of their private data. */
export async function exportConsents(db: Kysely<Database>, realmId: number): Promise<{ user_id: number; consented: boolean }[]> {
  const rows = await db.selectFrom("users").select(["id", "settings"]).where("realm_id", "=", realmId).where("is_active", "=", true).where("is_bot", "=", false).orderBy("id").execute();
  return rows.map((r) => ({ user_id: r.id, consented: parseUserSettings(r.settings).allow_private_data_export === true }));
}

/** Messages an API export request counts against the limit (Zulip estimates all messages sent). */
export async function messageCount(db: Kysely<Database>, realmId: number): Promise<number> {
  const row = await db.selectFrom("messages").select((eb) => eb.fn.countAll<number>().as("n")).where("realm_id", "=", realmId).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Bytes of uploaded files in the organization (Zulip's currently_used_upload_space_bytes). */
export async function uploadSpaceBytes(db: Kysely<Database>, realmId: number): Promise<number> {
  const row = await db.selectFrom("attachments").select((eb) => eb.fn.sum<number>("size").as("n")).where("realm_id", "=", realmId).executeTakeFirstOrThrow();
  return Number(row.n ?? 0);
}

/** Zulip's check_export_with_consent_is_usable: an owner consents, so someone's data (and an owner to import as) is in it. */
export async function ownerConsents(db: Kysely<Database>, realmId: number): Promise<boolean> {
  const owners = await db.selectFrom("users").select("settings").where("realm_id", "=", realmId).where("role", "=", Role.OWNER).where("is_active", "=", true).where("is_bot", "=", false).execute();
  return owners.some((o) => parseUserSettings(o.settings).allow_private_data_export === true);
}

/** Zulip's check_public_export_is_usable: some owner's email address is visible to administrators, so it is in a public export. */
export async function ownerEmailExportable(db: Kysely<Database>, realmId: number): Promise<boolean> {
  const owners = await db.selectFrom("users").select("email_address_visibility").where("realm_id", "=", realmId).where("role", "=", Role.OWNER).where("is_active", "=", true).where("is_bot", "=", false).execute();
  return owners.some((o) => EMAIL_VISIBLE_TO_ADMINS.has(o.email_address_visibility));
}

const EMAIL_VISIBLE_TO_ADMINS: ReadonlySet<number> = new Set([EmailVisibility.EVERYONE, EmailVisibility.MEMBERS, EmailVisibility.ADMINS]);

/** Adds one entry to the tarball; resolves once tar-stream has taken it. */
function addBuffer(pack: Pack, name: string, body: Buffer, mtime: Date): Promise<void> {
  return new Promise((resolve, reject) => {
    pack.entry({ name, size: body.length, mtime, mode: 0o644 }, body, (error) => (error ? reject(error) : resolve()));
  });
}

function addStream(pack: Pack, name: string, size: number, body: Readable, mtime: Date): Promise<void> {
  return new Promise((resolve, reject) => {
    const entry = pack.entry({ name, size, mtime, mode: 0o644 }, (error) => (error ? reject(error) : resolve()));
    entry.on("error", reject);
    body.on("error", (error) => {
      entry.destroy(error);
      reject(error);
    });
    body.pipe(entry as unknown as Writable);
  });
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value, null, 2));

/** The ids an export gives group settings: a named group's own id, an anonymous group one of its own rows. */
class GroupRows {
  readonly usergroups: Row[] = [];
  readonly memberships: Row[] = [];
  readonly subgroups: Row[] = [];
  #nextGroupId: number;
  #nextMembershipId = 1;
  #nextSubgroupId = 1;

  constructor(
    readonly realmId: number,
    maxGroupId: number,
  ) {
    this.#nextGroupId = maxGroupId + 1;
  }

  member(groupId: number, userId: number): void {
    this.memberships.push({ id: this.#nextMembershipId++, user_group: groupId, user_profile: userId });
  }

  subgroup(supergroupId: number, subgroupId: number): void {
    this.subgroups.push({ id: this.#nextSubgroupId++, supergroup: supergroupId, subgroup: subgroupId });
  }

  /** A group setting as Zulip stores it: the id of a (possibly anonymous) UserGroup row. */
  idFor(value: GroupSettingValue): number {
    if (typeof value === "number") return value;
    const id = this.#nextGroupId++;
    this.usergroups.push({ id, realm: this.realmId });
    for (const userId of value.direct_members) this.member(id, userId);
    for (const subgroupId of value.direct_subgroups) this.subgroup(id, subgroupId);
    return id;
  }

  stored(stored: string | null): number | null {
    return stored === null ? null : this.idFor(decodeGroupSetting(stored));
  }
}

/** What the export of one organization reads and writes. */
interface ExportContext {
  db: Kysely<Database>;
  files: FileStore;
  realm: Realm;
  type: ExportTypeValue;
  /** Members whose private data is included: everyone's in a full export without consent. */
  exportable: (userId: number) => boolean;
  consenting: Set<number>;
  mtime: Date;
  dir: string;
  progress: ExportProgress;
  zulipVersion: string;
}

/**
 * Writes the export of `realm` as a gzipped tarball to `sink`; the entries
 * are named under `dir`/. Resolves once the last byte is handed to the sink.
 */
export async function writeExportTarball(
  db: Kysely<Database>,
  files: FileStore,
  realm: Realm,
  type: ExportTypeValue,
  dir: string,
  sink: Writable,
  options: { nowSeconds: number; progress?: ExportProgress; zulipVersion?: string },
): Promise<ExportStats> {
  const consenting = type === ExportType.FULL_WITH_CONSENT ? await consentingUserIds(db, realm.id) : new Set<number>();
  const exportable = type === ExportType.FULL_WITHOUT_CONSENT ? () => true : (userId: number) => consenting.has(userId);
  const context: ExportContext = { db, files, realm, type, exportable, consenting, mtime: new Date(options.nowSeconds * 1000), dir, progress: options.progress ?? (() => {}), zulipVersion: options.zulipVersion ?? SERVICE_VERSION };

  // Loaded when an export runs, not at server start (test/startup-modules.test.ts).
  const { pack: createPack } = await import("tar-stream");
  const pack = createPack();
  // tar-stream's streams are streamx ones: the pipeline reports their failure, an 'error' without a listener would crash the process.
  pack.on("error", () => {});
  const piped = pipeline(pack as unknown as Readable, createGzip(), sink);
  // Whichever comes first: the entries are written, or the pipe fails (the sink's storage refused, say).
  let pipeError: unknown;
  const failed = piped.then(
    () => new Promise<never>(() => {}),
    (error: unknown) => {
      pipeError = error;
      throw error;
    },
  );
  void failed.catch(() => {});
  const writing = writeEntries(context, pack);
  // Left behind when the pipe failed first: its own error then says nothing new.
  void writing.catch(() => {});
  try {
    const stats = await Promise.race([writing, failed]);
    pack.finalize();
    await piped;
    return stats;
  } catch (error) {
    if (pipeError === undefined) pack.destroy(error as Error);
    await piped.catch(() => {});
    throw pipeError ?? error;
  }
}

/**
 * migration_status.json, which Zulip's import requires (import_realm.py's
 * check_migration_status): it refuses an export whose `zulip_version` has
 * another major version than the server's, and one listing an app whose
 * Django migrations differ from the server's; an app the export does not list
 * is only a warning. Parley has no Django migrations, so it lists none and
 * names the Zulip version whose format it writes (its own, 11.x; `parley
 * export --zulip-version` for another target).
 */
export function migrationStatus(zulipVersion: string): { migrations_by_app: Record<string, string[]>; zulip_version: string } {
  return { migrations_by_app: {}, zulip_version: zulipVersion };
}

async function writeEntries(c: ExportContext, pack: Pack): Promise<ExportStats> {
  const { db, realm } = c;
  const stats: ExportStats = { messages: 0, messageFiles: 0, attachments: 0, files: 0 };

  // Client names become zerver_client rows; messages refer to them by id.
  const clientRows = await db.selectFrom("messages").select("sending_client").distinct().where("realm_id", "=", realm.id).orderBy("sending_client").execute();
  const clientIds = new Map(clientRows.map((r, i) => [r.sending_client, i + 1]));

  const data = await realmTables(c, clientIds);
  // import_source: the one key of realm.json that is not a table; Zulip's do_import_realm pops it unconditionally. "zulip": the
  // data is a Zulip server's own (no onboarding messages are sent to the imported users).
  await addBuffer(pack, `${c.dir}/realm.json`, json({ ...data.tables, import_source: "zulip" }), c.mtime);
  c.progress("realm.json");
  await addBuffer(pack, `${c.dir}/migration_status.json`, json(migrationStatus(c.zulipVersion)), c.mtime);
  c.progress("migration_status.json");

  const attachmentIds = new Set<number>();
  let after = 0;
  let nextUserMessageId = 1;
  for (;;) {
    const messages = await db
      .selectFrom("messages as m")
      .selectAll("m")
      .where("m.realm_id", "=", realm.id)
      .where("m.id", ">", after)
      .where((eb) => messageFilter(c, eb))
      .orderBy("m.id")
      .limit(MESSAGE_CHUNK_SIZE)
      .execute();
    if (messages.length === 0) break;
    after = messages[messages.length - 1]!.id;
    const ids = messages.map((m) => m.id);
    let userMessages = db.selectFrom("user_messages").selectAll().where("message_id", "in", ids);
    // With consent, only consenting members' read state and flags (Zulip's fetch_usermessages).
    if (c.type === ExportType.FULL_WITH_CONSENT) userMessages = userMessages.where("user_id", "in", [0, ...c.consenting]);
    const umRows = await userMessages.orderBy("message_id").orderBy("user_id").execute();
    const links = await db.selectFrom("attachment_messages").select("attachment_id").where("message_id", "in", ids).execute();
    for (const l of links) attachmentIds.add(l.attachment_id);
    stats.messageFiles += 1;
    const fileName = `messages-${String(stats.messageFiles).padStart(6, "0")}.json`;
    await addBuffer(
      pack,
      `${c.dir}/${fileName}`,
      json({
        zerver_message: messages.map((m) => ({
          id: m.id,
          sender: m.sender_id,
          recipient: m.recipient_id,
          realm: m.realm_id,
          subject: m.topic,
          content: m.content,
          rendered_content: m.rendered_content,
          rendered_content_version: 1,
          date_sent: m.date_sent,
          last_edit_time: m.last_edit_time,
          last_moved_time: m.last_moved_time,
          edit_history: m.edit_history,
          has_attachment: m.has_attachment,
          has_image: m.has_image,
          has_link: m.has_link,
          sending_client: clientIds.get(m.sending_client) ?? null,
          type: NORMAL_MESSAGE,
          is_channel_message: m.channel_id !== null,
        })),
        zerver_usermessage: umRows.map((um) => ({ id: nextUserMessageId++, user_profile: um.user_id, message: um.message_id, flags_mask: um.flags })),
      }),
      c.mtime,
    );
    stats.messages += messages.length;
    c.progress(`${fileName} (${stats.messages} messages)`);
  }

  // Attachments of the exported messages, a page of ids at a time.
  const attachmentRows: Row[] = [];
  const attachmentMessageRows: Row[] = [];
  const uploads: { key: string; row: Row }[] = [];
  const sorted = [...attachmentIds].sort((a, b) => a - b);
  let linkId = 1;
  for (let i = 0; i < sorted.length; i += 500) {
    const page = sorted.slice(i, i + 500);
    const rows = await db.selectFrom("attachments").selectAll().where("id", "in", page).orderBy("id").execute();
    const links = await db
      .selectFrom("attachment_messages")
      .selectAll()
      .where("attachment_id", "in", page)
      .where("message_id", "in", db.selectFrom("messages as m").select("m.id").where("m.realm_id", "=", realm.id).where((eb) => messageFilter(c, eb)))
      .orderBy("attachment_id")
      .orderBy("message_id")
      .execute();
    for (const a of rows) {
      attachmentRows.push({
        id: a.id,
        owner: a.owner_id,
        realm: a.realm_id,
        path_id: a.path_id,
        file_name: a.file_name,
        content_type: a.content_type,
        size: a.size,
        create_time: a.create_time,
        is_realm_public: null,
        is_web_public: null,
        // Zulip's many-to-many lists, which import_realm reads from every row; zerver_attachment_messages says the same as rows.
        messages: links.filter((l) => l.attachment_id === a.id).map((l) => l.message_id),
        scheduled_messages: [],
      });
      uploads.push({ key: a.path_id, row: { realm_id: a.realm_id, user_profile_id: a.owner_id, path: a.path_id, s3_path: a.path_id, content_type: a.content_type, size: a.size, last_modified: a.create_time } });
    }
    for (const l of links) attachmentMessageRows.push({ id: linkId++, attachment: l.attachment_id, message: l.message_id });
  }
  stats.attachments = attachmentRows.length;
  await addBuffer(pack, `${c.dir}/attachment.json`, json({ zerver_attachment: attachmentRows, zerver_attachment_messages: attachmentMessageRows }), c.mtime);
  c.progress(`attachment.json (${attachmentRows.length} files)`);

  stats.files += await addFiles(c, pack, "uploads", uploads, (key) => key);
  stats.files += await addFiles(c, pack, "avatars", data.avatars, (key) => key.replace(/^avatars\//, ""));
  stats.files += await addFiles(c, pack, "emoji", data.emoji, (key) => key.replace(/^avatars\//, ""));
  c.progress(`${stats.files} files`);
  return stats;
}

/**
 * Writes each stored file as `{dir}/{area}/{path}` and `{area}/records.json`,
 * one record per file written (Zulip's export_files_from_local). A file the
 * store no longer has is left out with its record.
 */
async function addFiles(c: ExportContext, pack: Pack, area: string, files: { key: string; row: Row }[], pathOf: (key: string) => string): Promise<number> {
  const records: Row[] = [];
  for (const { key, row } of files) {
    const stored = await c.files.open(key);
    if (!stored) continue;
    const path = pathOf(key);
    await addStream(pack, `${c.dir}/${area}/${path}`, stored.size, stored.stream(), c.mtime);
    records.push({ ...row, path, s3_path: path, size: stored.size });
  }
  await addBuffer(pack, `${c.dir}/${area}/records.json`, json(records), c.mtime);
  return records.length;
}

/** The messages an export of this type contains (Zulip's export_partial_message_files), over messages aliased `m`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function messageFilter(c: ExportContext, eb: ExpressionBuilder<any, any>): Expression<SqlBool> {
  if (c.type === ExportType.FULL_WITHOUT_CONSENT) return sql<SqlBool>`1 = 1`;
  const publicChannel = eb.exists(eb.selectFrom("channels as ch").select("ch.id").whereRef("ch.id", "=", "m.channel_id").where("ch.invite_only", "=", false));
  if (c.type === ExportType.PUBLIC) return publicChannel;
  const ids = [0, ...c.consenting];
  // With consent: public channels, and what consenting members sent or received elsewhere.
  return eb.or([
    publicChannel,
    eb("m.sender_id", "in", ids),
    eb.exists(eb.selectFrom("user_messages as um").select("um.message_id").whereRef("um.message_id", "=", "m.id").where("um.user_id", "in", ids)),
  ]);
}

const SYSTEM_GROUP_SETTING = /_group$/;

/** Zulip's get_direct_message_group_hash: SHA-1 of the sorted member ids joined by commas. */
function directMessageGroupHash(userIds: readonly number[]): string {
  return createHash("sha1").update([...new Set(userIds)].sort((a, b) => a - b).join(",")).digest("hex");
}

/** realm.json's tables, and the avatar and emoji files to add. */
async function realmTables(c: ExportContext, clientIds: Map<string, number>): Promise<{ tables: Record<string, Row[]>; avatars: { key: string; row: Row }[]; emoji: { key: string; row: Row }[] }> {
  const { db } = c;
  // The organization as it is now: the Realm handed in may have been read before a settings change.
  const realm = await db.selectFrom("realms").selectAll().where("id", "=", c.realm.id).executeTakeFirstOrThrow();
  const users = await db.selectFrom("users").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const channels = await db.selectFrom("channels").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const recipients = await db.selectFrom("recipients").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const groups = await db.selectFrom("user_groups").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const groupIds = groups.map((g) => g.id);
  const maxGroup = groupIds.length === 0 ? 0 : Math.max(...groupIds);
  const groupRows = new GroupRows(realm.id, maxGroup);
  const userIds = users.map((u) => u.id);
  const inUsers = (ids: number[]) => (ids.length === 0 ? [0] : ids);

  // Personal recipients, which Parley has no rows for: ids after its own.
  const maxRecipient = recipients.reduce((max, r) => Math.max(max, r.id), 0);
  const personalRecipient = (userId: number) => maxRecipient + userId;
  const channelRecipient = new Map(recipients.filter((r) => r.type === RecipientType.CHANNEL).map((r) => [r.channel_id!, r.id]));

  const major = zulipMajorVersion(c.zulipVersion);
  const realmSettings = JSON.parse(realm.settings) as Row;
  const realmRow: Row = {
    id: realm.id,
    string_id: realm.string_id,
    name: realm.name,
    description: realm.description,
    date_created: realm.date_created,
    deactivated: realm.deactivated,
    icon_source: realm.icon_source,
    icon_version: realm.icon_version,
  };
  for (const [name, value] of Object.entries(realmSettings)) {
    // Kept in their own tables by Zulip (zerver_realmauthenticationmethod, zerver_realmuserdefault), written there below.
    if (name === "authentication_methods" || name === "user_settings_defaults" || name === "default_email_address_visibility") continue;
    if ((REALM_CHANNEL_SETTINGS as readonly string[]).includes(name)) {
      // Zulip's foreign keys are named without _id (import_realm re-maps zerver_realm["new_stream_announcements_stream"], …); -1 is none.
      realmRow[name.replace(/_id$/, "")] = value === -1 ? null : value;
      continue;
    }
    realmRow[name] = SYSTEM_GROUP_SETTING.test(name) && value !== null && (typeof value === "number" || typeof value === "object") ? groupRows.idFor(value as GroupSettingValue) : value;
  }
  const plainSettings = parseRealmSettings(realm.settings);

  const isSystemBot = (u: User) => u.is_system_bot;
  const userprofile: Row[] = [];
  const crossrealm: Row[] = [];
  const avatars: { key: string; row: Row }[] = [];
  for (const u of users) {
    if (isSystemBot(u)) {
      crossrealm.push({ id: u.id, email: u.email, recipient_id: personalRecipient(u.id) });
      continue;
    }
    const exportable = c.exportable(u.id);
    const settings = exportable ? parseUserSettings(u.settings) : { ...USER_SETTING_DEFAULTS, allow_private_data_export: parseUserSettings(u.settings).allow_private_data_export };
    // A public export has no address its owner hid from administrators (Zulip's public export rule).
    const deliveryEmail = c.type === ExportType.PUBLIC && !EMAIL_VISIBLE_TO_ADMINS.has(u.email_address_visibility) ? u.email : u.delivery_email;
    userprofile.push({
      ...userSettingsForZulip(settings, major),
      id: u.id,
      realm: u.realm_id,
      email: u.email,
      delivery_email: deliveryEmail,
      full_name: u.full_name,
      role: u.role,
      is_active: u.is_active,
      is_bot: u.is_bot,
      bot_type: u.bot_type,
      bot_owner: u.bot_owner_id,
      is_mirror_dummy: false,
      date_joined: u.date_joined,
      timezone: u.timezone,
      avatar_source: u.avatar_source,
      avatar_version: u.avatar_version,
      email_address_visibility: u.email_address_visibility,
      default_sending_stream: u.default_sending_stream_id,
      default_events_register_stream: u.default_events_register_stream_id,
      default_all_public_streams: u.default_all_public_streams,
      recipient: personalRecipient(u.id),
      // Django's permission fields, which import_realm deletes from every row without checking they are there.
      user_permissions: [],
      groups: [],
    });
    if (u.avatar_source === AvatarSource.UPLOADED && u.avatar_hash !== null) {
      const paths = avatarStoragePaths(u.realm_id, u.avatar_hash);
      for (const key of [paths.original, paths.small, paths.medium]) {
        avatars.push({ key, row: { realm_id: u.realm_id, user_profile_id: u.id, user_profile_email: u.email, content_type: key.endsWith(".png") ? "image/png" : null, last_modified: c.mtime.getTime() / 1000 } });
      }
    }
  }

  const recipientRows: Row[] = users.map((u) => ({ id: personalRecipient(u.id), type: PERSONAL, type_id: u.id }));
  const huddles: Row[] = [];
  const subscriptions: Row[] = [];
  let subscriptionId = 1;
  const activeUsers = new Set(users.filter((u) => u.is_active).map((u) => u.id));
  for (const u of users) subscriptions.push({ id: subscriptionId++, user_profile: u.id, recipient: personalRecipient(u.id), active: true, is_user_active: u.is_active, color: "#c2c2c2", is_muted: false, pin_to_top: false, desktop_notifications: null, audible_notifications: null, push_notifications: null, email_notifications: null, wildcard_mentions_notify: null });
  for (const r of recipients) {
    if (r.type === RecipientType.CHANNEL) {
      recipientRows.push({ id: r.id, type: RecipientType.CHANNEL, type_id: r.channel_id });
    } else {
      // Every Parley DM conversation, two people or more, is a group (Zulip's DirectMessageGroup; huddle id = recipient id).
      const members = dmKeyUserIds(r.dm_key!);
      // Only conversations whose messages the export may hold: none in a public export, consenting members' with consent.
      if (c.type === ExportType.PUBLIC || (c.type === ExportType.FULL_WITH_CONSENT && !members.some((id) => c.consenting.has(id)))) continue;
      recipientRows.push({ id: r.id, type: RecipientType.DIRECT, type_id: r.id });
      huddles.push({ id: r.id, huddle_hash: directMessageGroupHash(members), recipient: r.id, group_size: members.length });
      for (const userId of members) subscriptions.push({ id: subscriptionId++, user_profile: userId, recipient: r.id, active: true, is_user_active: activeUsers.has(userId), color: "#c2c2c2", is_muted: false, pin_to_top: false, desktop_notifications: null, audible_notifications: null, push_notifications: null, email_notifications: null, wildcard_mentions_notify: null });
    }
  }
  const subs = await db.selectFrom("subscriptions").selectAll().where("user_id", "in", inUsers(userIds)).orderBy("channel_id").orderBy("user_id").execute();
  for (const s of subs) {
    const recipient = channelRecipient.get(s.channel_id);
    if (recipient === undefined) continue;
    subscriptions.push({
      id: subscriptionId++,
      user_profile: s.user_id,
      recipient,
      active: s.active,
      is_user_active: activeUsers.has(s.user_id),
      color: s.color,
      is_muted: s.is_muted,
      pin_to_top: s.pin_to_top,
      desktop_notifications: s.desktop_notifications,
      audible_notifications: s.audible_notifications,
      push_notifications: s.push_notifications,
      email_notifications: s.email_notifications,
      wildcard_mentions_notify: s.wildcard_mentions_notify,
    });
  }

  const streams = channels.map((ch) => {
    const row: Row = {
      id: ch.id,
      realm: ch.realm_id,
      name: ch.name,
      description: ch.description,
      rendered_description: ch.rendered_description,
      date_created: ch.date_created,
      creator: ch.creator_id,
      invite_only: ch.invite_only,
      is_web_public: ch.is_web_public,
      history_public_to_subscribers: ch.history_public_to_subscribers,
      message_retention_days: ch.message_retention_days,
      recipient: channelRecipient.get(ch.id) ?? null,
      deactivated: ch.is_archived,
      is_recently_active: ch.is_recently_active,
      first_message_id: ch.first_message_id,
      folder: ch.folder_id,
      topics_policy: channelTopicsPolicyForZulip(ch.topics_policy),
    };
    for (const [name, value] of Object.entries(ch)) if (name.startsWith("can_") && SYSTEM_GROUP_SETTING.test(name)) row[name] = groupRows.stored(value as string);
    return row;
  });

  const named: Row[] = [];
  for (const g of groups) {
    groupRows.usergroups.push({ id: g.id, realm: g.realm_id });
    const row: Row = {
      usergroup_ptr: g.id,
      realm_for_sharding: g.realm_id,
      name: g.name,
      description: g.description,
      is_system_group: g.is_system_group,
      creator: g.creator_id,
      date_created: g.date_created,
      deactivated: g.deactivated,
    };
    for (const [name, value] of Object.entries(g)) if (name.startsWith("can_")) row[name] = groupRows.stored(value as string | null);
    named.push(row);
  }
  const members = await db.selectFrom("user_group_members").selectAll().where("group_id", "in", inUsers(groupIds)).orderBy("group_id").orderBy("user_id").execute();
  for (const m of members) groupRows.member(m.group_id, m.user_id);
  const subgroupLinks = await db.selectFrom("user_group_subgroups").selectAll().where("supergroup_id", "in", inUsers(groupIds)).orderBy("supergroup_id").orderBy("subgroup_id").execute();
  for (const s of subgroupLinks) groupRows.subgroup(s.supergroup_id, s.subgroup_id);

  const emojiRows = await db.selectFrom("realm_emoji").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const emailOf = new Map(users.map((u) => [u.id, u.email]));
  const emoji = emojiRows.map((e) => ({
    key: emojiStoragePath(e.realm_id, e.file_name),
    row: { realm_id: e.realm_id, file_name: e.file_name, name: e.name, user_profile_id: e.author_id, user_profile_email: e.author_id === null ? null : (emailOf.get(e.author_id) ?? null) },
  }));

  const fields = await db.selectFrom("custom_profile_fields").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const fieldValues = await db.selectFrom("custom_profile_field_values").selectAll().where("user_id", "in", inUsers(userIds)).orderBy("id").execute();
  const folders = await db.selectFrom("channel_folders").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const defaults = await db.selectFrom("default_channels").selectAll().where("realm_id", "=", realm.id).orderBy("channel_id").execute();
  const linkifiers = await db.selectFrom("realm_linkifiers").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();
  const playgrounds = await db.selectFrom("realm_playgrounds").selectAll().where("realm_id", "=", realm.id).orderBy("id").execute();

  // Personal data: only that of members whose data the export may include (none in a public export).
  const privateUsers = userIds.filter((id) => c.exportable(id) && c.type !== ExportType.PUBLIC);
  const userTopics = await db.selectFrom("user_topics").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("user_id").orderBy("channel_id").execute();
  const mutedUsers = await db.selectFrom("muted_users").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("user_id").orderBy("muted_user_id").execute();
  const alertWords = await db.selectFrom("alert_words").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("user_id").orderBy("word").execute();
  const savedSnippets = await db.selectFrom("saved_snippets").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("id").execute();
  const navigationViews = await db.selectFrom("navigation_views").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("id").execute();
  const statuses = await db.selectFrom("user_statuses").selectAll().where("user_id", "in", inUsers(userIds)).orderBy("user_id").execute();

  // Reactions on the messages the export contains.
  const reactions = await db
    .selectFrom("reactions")
    .selectAll()
    .where("message_id", "in", db.selectFrom("messages as m").select("m.id").where("m.realm_id", "=", realm.id).where((eb) => messageFilter(c, eb)))
    .orderBy("id")
    .execute();

  // Personal data Zulip's import_realm reads (zerver_userpresence always, the others when present).
  const presence = await db.selectFrom("user_presence").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("user_id").execute();
  const presenceSequence = await db.selectFrom("presence_sequences").selectAll().where("realm_id", "=", realm.id).executeTakeFirst();
  const exportedRecipients = new Set(recipientRows.map((r) => r.id as number));
  const drafts = (await db.selectFrom("drafts").selectAll().where("user_id", "in", inUsers(privateUsers)).orderBy("id").execute()).filter((d) => d.recipient_id === null || exportedRecipients.has(d.recipient_id));
  const scheduled = (await db.selectFrom("scheduled_messages").selectAll().where("realm_id", "=", realm.id).where("sender_id", "in", inUsers(privateUsers)).orderBy("id").execute()).filter((m) => exportedRecipients.has(m.recipient_id));
  // Bots' services, storage and configuration: organization data, left out of a public export (the services hold secrets).
  const botIds = c.type === ExportType.PUBLIC ? [] : users.filter((u) => u.is_bot && !u.is_system_bot).map((u) => u.id);
  const botServices = await db.selectFrom("bot_services").selectAll().where("user_id", "in", inUsers(botIds)).orderBy("id").execute();
  const botStorage = await db.selectFrom("bot_storage").selectAll().where("bot_user_id", "in", inUsers(botIds)).orderBy("bot_user_id").orderBy("key").execute();
  const botConfig = await db.selectFrom("bot_config").selectAll().where("bot_user_id", "in", inUsers(botIds)).orderBy("bot_user_id").orderBy("key").execute();
  const submessages = await db
    .selectFrom("submessages")
    .selectAll()
    .where("message_id", "in", db.selectFrom("messages as m").select("m.id").where("m.realm_id", "=", realm.id).where((eb) => messageFilter(c, eb)))
    .orderBy("id")
    .execute();
  // A client only scheduled messages or statuses name still needs its zerver_client row.
  const clientId = (name: string): number => {
    let id = clientIds.get(name);
    if (id === undefined) {
      id = clientIds.size + 1;
      clientIds.set(name, id);
    }
    return id;
  };

  let n = 0;
  const tables: Record<string, Row[]> = {
    zerver_realm: [realmRowForZulip(realmRow, major)],
    zerver_userprofile: userprofile,
    zerver_userprofile_crossrealm: crossrealm,
    zerver_userprofile_mirrordummy: [],
    zerver_stream: streams,
    zerver_channelfolder: folders.map((f) => ({ id: f.id, realm: f.realm_id, name: f.name, description: f.description, rendered_description: f.rendered_description, order: f.sort_order, date_created: f.date_created, creator: f.creator_id, is_archived: f.is_archived })),
    zerver_defaultstream: defaults.map((d) => ({ id: ++n, realm: d.realm_id, stream: d.channel_id })),
    zerver_recipient: recipientRows.sort((a, b) => (a.id as number) - (b.id as number)),
    zerver_huddle: huddles,
    zerver_subscription: subscriptions,
    zerver_usergroup: groupRows.usergroups.sort((a, b) => (a.id as number) - (b.id as number)),
    zerver_namedusergroup: named,
    zerver_usergroupmembership: groupRows.memberships,
    zerver_groupgroupmembership: groupRows.subgroups,
    zerver_realmemoji: emojiRows.map((e) => ({ id: e.id, realm: e.realm_id, author: e.author_id, name: e.name, file_name: e.file_name, deactivated: e.deactivated, is_animated: false })),
    zerver_customprofilefield: fields.map((f) => ({
      id: f.id,
      realm: f.realm_id,
      name: f.name,
      hint: f.hint,
      field_type: f.field_type,
      field_data: f.field_data,
      order: f.sort_order,
      display_in_profile_summary: f.display_in_profile_summary,
      required: f.required,
      editable_by_user: f.editable_by_user,
    })),
    zerver_customprofilefieldvalue: fieldValues.map((v) => ({ id: v.id, user_profile: v.user_id, field: v.field_id, value: v.value, rendered_value: v.rendered_value })),
    zerver_realmfilter: linkifiers.map((l) => ({ id: l.id, realm: l.realm_id, pattern: l.pattern, url_template: l.url_template, order: l.order })),
    zerver_realmplayground: playgrounds.map((p) => ({ id: p.id, realm: p.realm_id, name: p.name, pygments_language: p.pygments_language, url_template: p.url_template })),
    // Parley keeps no list of the organization's email domains, and no audit log: empty, as import_realm needs the first
    // (an absent zerver_realmauditlog would make it invent subscription events instead).
    zerver_realmdomain: [],
    zerver_realmauditlog: [],
    zerver_realmauthenticationmethod: Object.entries(plainSettings.authentication_methods)
      .filter(([, enabled]) => enabled)
      .map(([name], i) => ({ id: i + 1, realm: realm.id, name })),
    zerver_realmuserdefault: [{ ...userSettingsForZulip({ ...USER_SETTING_DEFAULTS, ...plainSettings.user_settings_defaults }, major), id: 1, realm: realm.id, email_address_visibility: plainSettings.default_email_address_visibility }],
    zerver_userpresence: presence.map((p, i) => ({ id: i + 1, user_profile: p.user_id, realm: p.realm_id, last_connected_time: p.last_connected_time, last_active_time: p.last_active_time, last_update_id: p.last_update_id })),
    zerver_presencesequence: presenceSequence ? [{ id: 1, realm: realm.id, last_update_id: presenceSequence.last_update_id }] : [],
    // Parley records neither: empty, as import_realm reads both unconditionally.
    zerver_useractivity: [],
    zerver_useractivityinterval: [],
    zerver_draft: drafts.map((d) => ({ id: d.id, user_profile: d.user_id, recipient: d.recipient_id, topic: d.topic, content: d.content, last_edit_time: d.last_edit_time_ms / 1000 })),
    zerver_scheduledmessage: scheduled.map((m) => ({
      id: m.id,
      sender: m.sender_id,
      recipient: m.recipient_id,
      subject: m.topic,
      content: m.content,
      rendered_content: m.rendered_content,
      sending_client: clientId(m.sending_client),
      stream: m.channel_id,
      realm: m.realm_id,
      scheduled_timestamp: m.scheduled_timestamp,
      request_timestamp: m.request_timestamp,
      read_by_sender: m.read_by_sender,
      delivered: m.delivered,
      delivered_message: m.delivered_message_id,
      has_attachment: m.content.includes("/user_uploads/"),
      failed: m.failed,
      failure_message: m.failure_message,
      delivery_type: m.delivery_type,
      reminder_target_message_id: m.reminder_target_message_id,
      reminder_note: m.reminder_note,
    })),
    zerver_submessage: submessages.map((s) => ({ id: s.id, message: s.message_id, sender: s.sender_id, msg_type: s.msg_type, content: s.content })),
    zerver_service: botServices.map((s) => ({ id: s.id, user_profile: s.user_id, name: s.name, base_url: s.base_url, token: s.token, interface: s.interface })),
    zerver_botstoragedata: botStorage.map((b, i) => ({ id: i + 1, bot_profile: b.bot_user_id, key: b.key, value: b.value })),
    zerver_botconfigdata: botConfig.map((b, i) => ({ id: i + 1, bot_profile: b.bot_user_id, key: b.key, value: b.value })),
    zerver_reaction: reactions.map((r) => ({ id: r.id, message: r.message_id, user_profile: r.user_id, emoji_name: r.emoji_name, emoji_code: r.emoji_code, reaction_type: r.reaction_type })),
    zerver_usertopic: userTopics.map((t, i) => ({ id: i + 1, user_profile: t.user_id, stream: t.channel_id, recipient: channelRecipient.get(t.channel_id) ?? null, topic_name: t.topic, visibility_policy: t.visibility_policy, last_updated: t.last_updated })),
    zerver_muteduser: mutedUsers.map((m, i) => ({ id: i + 1, user_profile: m.user_id, muted_user: m.muted_user_id, date_muted: m.date_muted })),
    zerver_alertword: alertWords.map((a, i) => ({ id: i + 1, user_profile: a.user_id, realm: realm.id, word: a.word })),
    // Zulip's SavedSnippet and NavigationView (the latter's user key is `user`, not `user_profile`).
    zerver_savedsnippet: savedSnippets.map((n) => ({ id: n.id, realm: realm.id, user_profile: n.user_id, title: n.title, content: n.content, date_created: Number(n.date_created) })),
    zerver_navigationview: navigationViews.map((v) => ({ id: v.id, user: v.user_id, fragment: v.fragment, is_pinned: Boolean(v.is_pinned), name: v.name })),
    zerver_userstatus: statuses.map((s, i) => ({ id: i + 1, user_profile: s.user_id, status_text: s.status_text, emoji_name: s.emoji_name, emoji_code: s.emoji_code, reaction_type: s.reaction_type, timestamp: s.timestamp, client: clientId(s.client) })),
  };
  // Last: the statuses and scheduled messages above may have added clients.
  tables.zerver_client = [...clientIds].map(([name, id]) => ({ id, name }));
  return { tables, avatars, emoji };
}

/** Who hears of exports and consents: active human administrators (Zulip's get_human_admin_users). */
export async function humanAdminIds(db: Kysely<Database>, realmId: number): Promise<number[]> {
  const rows = await db.selectFrom("users").select("id").where("realm_id", "=", realmId).where("is_active", "=", true).where("is_bot", "=", false).where("role", "<=", Role.ADMINISTRATOR).orderBy("id").execute();
  return rows.map((r) => r.id);
}

/** The organization's export rows, oldest first. */
export async function realmExportRows(db: Kysely<Database>, realmId: number): Promise<RealmExport[]> {
  const rows = await db.selectFrom("realm_exports").selectAll().where("realm_id", "=", realmId).orderBy("id").execute();
  return rows.map((r) => ({ ...r, tarball_size_bytes: r.tarball_size_bytes === null ? null : Number(r.tarball_size_bytes) }));
}

export async function realmExportRow(db: Kysely<Database>, realmId: number, exportId: number): Promise<RealmExport | undefined> {
  return db.selectFrom("realm_exports").selectAll().where("realm_id", "=", realmId).where("id", "=", exportId).executeTakeFirst();
}

/** Exports the organization requested since `since` (UNIX seconds), for the weekly limit. */
export async function exportsRequestedSince(db: Kysely<Database>, realmId: number, since: number): Promise<number> {
  const row = await db.selectFrom("realm_exports").select((eb) => eb.fn.countAll<number>().as("n")).where("realm_id", "=", realmId).where("date_requested", ">=", since).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Whether `key` is the tarball of one of the organization's finished (not deleted) exports: the only files its export URLs serve. */
export async function isFinishedExportPath(db: Kysely<Database>, realmId: number, key: string): Promise<boolean> {
  const row = await db.selectFrom("realm_exports").select("id").where("realm_id", "=", realmId).where("export_path", "=", key).where("status", "=", ExportStatus.SUCCEEDED).executeTakeFirst();
  return row !== undefined;
}
