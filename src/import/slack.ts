// `parley import slack <export.zip>`: a Slack workspace export (users.json,
// channels.json, groups.json, dms.json, mpims.json and one directory of
// per-day message files per conversation) brought into an empty Parley
// database, with the choices of Zulip's zerver/data_import/slack.py: public
// channels and private channels (groups.json) become channels, unthreaded
// messages go to the topic "imported from Slack", each thread to a topic
// "<date> Slack thread <n>", DMs and group DMs become direct messages,
// deleted users are deactivated, bots are bot users, mrkdwn becomes Markdown
// (slack-markdown.ts), reactions take Zulip's emoji names, and every message
// is read, with the mention flags of the mentions it has. Files are
// downloaded from their url_private when reachable, otherwise linked. One
// transaction: a failure leaves the database and the file store as they were.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { insertRealm } from "../actions/realm.ts";
import { insertUser } from "../actions/users.ts";
import { Flag } from "../domain/message-flags.ts";
import { Role } from "../domain/roles.ts";
import { uploadUrl } from "../domain/uploads.ts";
import { PayloadError } from "../integrations/payload.ts";
import { renderAttachment, renderBlock } from "../integrations/slack-format.ts";
import type { Services } from "../services.ts";
import { slackEmojiToZulip, slackToMarkdown, type SlackNames } from "./slack-markdown.ts";
import { findRoot, ImportFormatError, readJson, readJsonIfPresent } from "./tarball.ts";
import { ImportWriter, inOneTransaction } from "./writer.ts";
import { unpackZip } from "./zip.ts";

interface SlackUser {
  id: string;
  name?: string;
  real_name?: string;
  deleted?: boolean;
  is_bot?: boolean;
  is_app_user?: boolean;
  is_admin?: boolean;
  is_owner?: boolean;
  is_primary_owner?: boolean;
  is_restricted?: boolean;
  is_ultra_restricted?: boolean;
  tz?: string;
  profile?: { email?: string; real_name?: string; display_name?: string; bot_id?: string };
}

interface SlackConversation {
  id: string;
  name?: string;
  created?: number;
  creator?: string;
  is_archived?: boolean;
  is_general?: boolean;
  members?: string[];
  purpose?: { value?: string };
}

interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  mode?: string;
}

interface SlackMessage {
  type?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  username?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  reactions?: { name: string; users?: string[] }[];
  files?: SlackFile[];
  /** Block Kit blocks and legacy attachments: integrations often put their whole message there. */
  blocks?: unknown[];
  attachments?: unknown[];
}

type Target = { kind: "channel"; channelId: number; members: number[] } | { kind: "direct"; userIds: number[] };

/** Slack's notices that Zulip's importer leaves out (pins, joins, leaves, renames). */
const SKIPPED_SUBTYPES = new Set(["pinned_item", "unpinned_item", "channel_join", "channel_leave", "channel_name", "group_join", "group_leave"]);
/** Slack's own bot, which writes without being in users.json. */
const SLACKBOT = "USLACKBOT";
const DOWNLOAD_TIMEOUT_MS = 30_000;

const seconds = (ts: string | number | undefined, fallback: number): number => {
  const n = Number(ts);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : fallback;
};

export interface SlackImportResult {
  realmId: number;
  counts: Map<string, number>;
}

/** The organization's name: Slack names its exports "<Workspace> Slack export <dates>.zip". */
export function workspaceName(zip: string): string {
  const match = /^(.+?) Slack export\b/i.exec(path.basename(zip));
  return match?.[1]?.trim() || "Imported from Slack";
}

export interface SlackImportOptions {
  /** A Slack token (Zulip's `--token`): sent as `Authorization: Bearer …` with each file's url_private, which Slack serves only with one. */
  token?: string;
  /** Called as each day's messages (of all conversations) are read, with their number: at most one day is held at a time. */
  onDay?: (day: string, messages: number) => void;
}

export async function importSlack(services: Services, zip: string, log: (line: string) => void, options: SlackImportOptions = {}): Promise<SlackImportResult> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "parley-import-"));
  try {
    log(`Unpacking ${zip}: ${await unpackZip(zip, dir)} files`);
    const root = await findRoot(dir, "users.json", "the zip file: not a Slack export");
    return await inOneTransaction(services, async (trx, started) => {
      const { realm } = await insertRealm(trx, services, { name: workspaceName(zip), description: "", dateCreated: services.now() });
      const w = new ImportWriter(services, trx, realm, log);
      started.writer = w;
      w.count("realm");
      w.progress("realm");
      await importWorkspace(w, root, log, options);
      return { realmId: realm.id, counts: w.counts };
    });
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

function roleOf(u: SlackUser): number {
  if (u.is_primary_owner || u.is_owner) return Role.OWNER;
  if (u.is_admin) return Role.ADMINISTRATOR;
  if (u.is_restricted || u.is_ultra_restricted) return Role.GUEST;
  return Role.MEMBER;
}

async function importWorkspace(w: ImportWriter, root: string, log: (line: string) => void, options: SlackImportOptions): Promise<void> {
  const { trx, services } = w;
  const users = await readJson<SlackUser[]>(path.join(root, "users.json"));
  const channels = await readJsonIfPresent<SlackConversation[]>(path.join(root, "channels.json"), []);
  const groups = await readJsonIfPresent<SlackConversation[]>(path.join(root, "groups.json"), []);
  const dms = await readJsonIfPresent<SlackConversation[]>(path.join(root, "dms.json"), []);
  const mpims = await readJsonIfPresent<SlackConversation[]>(path.join(root, "mpims.json"), []);
  if (!Array.isArray(users)) throw new ImportFormatError("users.json is not a list of users");

  // Users. Those without an address (bots, some guests) get one under the workspace's most common domain.
  const domains = users.map((u) => u.profile?.email?.split("@")[1]).filter((d): d is string => !!d);
  const domain = domains.sort((a, b) => domains.filter((d) => d === b).length - domains.filter((d) => d === a).length)[0] ?? "slack.invalid";
  const userIds = new Map<string, number>();
  const botIds = new Map<string, number>();
  const names: SlackNames = { users: new Map(), channels: new Map() };
  const seenEmails = new Set<string>();
  const fullNames = new Map<string, number>();
  const addUser = async (slackId: string, u: SlackUser): Promise<number> => {
    const isBot = u.is_bot === true || u.id === SLACKBOT;
    let email = u.profile?.email ?? `${(u.name ?? slackId).toLowerCase().replace(/[^a-z0-9._-]/g, "")}${isBot ? "-bot" : ""}@${domain}`;
    if (seenEmails.has(email.toLowerCase())) email = `${slackId.toLowerCase()}@${domain}`;
    seenEmails.add(email.toLowerCase());
    const fullName = (u.profile?.real_name || u.real_name || u.profile?.display_name || u.name || slackId).trim();
    const user = await insertUser(trx, services, w.realm, {
      email,
      fullName,
      passwordHash: null,
      role: isBot ? Role.MEMBER : roleOf(u),
      isBot,
      botType: isBot ? 1 : null,
      timezone: typeof u.tz === "string" ? u.tz : "",
    });
    if (u.deleted === true) await trx.updateTable("users").set({ is_active: false }).where("id", "=", user.id).execute();
    userIds.set(slackId, user.id);
    if (u.profile?.bot_id) botIds.set(u.profile.bot_id, user.id);
    names.users.set(slackId, { id: user.id, mentionName: fullName });
    fullNames.set(fullName.toLowerCase(), (fullNames.get(fullName.toLowerCase()) ?? 0) + 1);
    w.count("users");
    return user.id;
  };
  // Humans first, then bots, as Zulip's importer orders them.
  for (const u of [...users.filter((u) => !u.is_bot), ...users.filter((u) => u.is_bot)]) {
    if (typeof u.id !== "string") throw new ImportFormatError("users.json: a user without an id");
    await addUser(u.id, u);
  }
  w.progress("users");
  // A name two users share is mentioned with the user's ID, as Zulip writes such mentions.
  for (const entry of names.users.values()) {
    if ((fullNames.get(entry.mentionName.toLowerCase()) ?? 0) > 1) entry.mentionName = `${entry.mentionName}|${entry.id}`;
  }
  const userFor = async (message: SlackMessage, where: string): Promise<number> => {
    if (message.user !== undefined && userIds.has(message.user)) return userIds.get(message.user)!;
    if (message.bot_id !== undefined && botIds.has(message.bot_id)) return botIds.get(message.bot_id)!;
    // Integrations post as a bot_id that users.json may not list, and Slackbot is never there: each becomes a bot.
    if (message.subtype === "bot_message" || message.user === SLACKBOT) {
      const key = message.user === SLACKBOT ? SLACKBOT : (message.bot_id ?? message.username ?? "bot");
      const id = await addUser(key, { id: key, name: message.user === SLACKBOT ? "slackbot" : (message.username ?? key), is_bot: true, real_name: message.user === SLACKBOT ? "Slackbot" : message.username });
      if (message.bot_id !== undefined) botIds.set(message.bot_id, id);
      return id;
    }
    throw new ImportFormatError(`${where}: message ${message.ts} is from ${message.user ?? "nobody"}, who is not in users.json`);
  };
  const members = (c: SlackConversation): number[] => [...new Set((c.members ?? []).map((m) => userIds.get(m)).filter((id) => id !== undefined))];

  // Channels: public (channels.json) and private (groups.json), with their members; #general and #random are default channels.
  const conversations: { dir: string; target: Target }[] = [];
  for (const [list, inviteOnly] of [
    [channels, false],
    [groups, true],
  ] as const) {
    for (const c of list) {
      if (!c.name) throw new ImportFormatError(`${inviteOnly ? "groups" : "channels"}.json: a channel without a name`);
      const channelId = await w.insertChannel({
        name: c.name,
        description: c.purpose?.value ?? "",
        dateCreated: seconds(c.created, services.now()),
        creatorId: c.creator === undefined ? undefined : userIds.get(c.creator),
        inviteOnly,
        isWebPublic: false,
        historyPublicToSubscribers: true,
        messageRetentionDays: null,
        topicsPolicy: "inherit",
        isArchived: c.is_archived === true,
      });
      names.channels.set(c.id, c.name);
      const channelMembers = members(c);
      for (const userId of channelMembers) await w.insertSubscription(userId, channelId, { active: true, color: undefined, isMuted: false, pinToTop: false });
      if (!inviteOnly && (c.is_general === true || c.name === "general" || c.name === "random")) {
        await trx.insertInto("default_channels").values({ realm_id: w.realm.id, channel_id: channelId }).execute();
      }
      conversations.push({ dir: c.name, target: { kind: "channel", channelId, members: channelMembers } });
    }
  }
  w.progress("channels");
  w.progress("subscriptions");
  // Direct messages (dms.json, directories named by ID) and group DMs (mpims.json, by name).
  for (const d of dms) conversations.push({ dir: d.id, target: { kind: "direct", userIds: members(d) } });
  for (const m of mpims) conversations.push({ dir: m.name ?? m.id, target: { kind: "direct", userIds: members(m) } });

  // Messages are read one day at a time, as Zulip's importer does (get_messages_iterator): the day files of every
  // conversation for a date, sorted by time, then the next date. Message IDs follow dates; only one day's
  // messages are held in memory, never the whole export.
  const dayFiles = new Map<string, { dir: string; target: Target }[]>();
  for (const { dir, target } of conversations) {
    const conversationDir = path.join(root, dir);
    if (path.relative(root, conversationDir).startsWith("..")) throw new ImportFormatError(`unsafe conversation name: ${dir}`);
    let days: string[];
    try {
      days = (await fs.readdir(conversationDir)).filter((f) => /^\d{4}-\d{2}-\d{2}\.json$/.test(f));
    } catch {
      continue;
    }
    for (const day of days) {
      const list = dayFiles.get(day) ?? [];
      list.push({ dir, target });
      dayFiles.set(day, list);
    }
  }
  const readDay = async (day: string): Promise<{ message: SlackMessage; target: Target; where: string }[]> => {
    const pending: { message: SlackMessage; target: Target; where: string }[] = [];
    for (const { dir, target } of dayFiles.get(day) ?? []) {
      const messages = await readJson<SlackMessage[]>(path.join(root, dir, day));
      if (!Array.isArray(messages)) throw new ImportFormatError(`${dir}/${day} is not a list of messages`);
      for (const message of messages) {
        if (message.type !== undefined && message.type !== "message") continue;
        if (message.subtype !== undefined && SKIPPED_SUBTYPES.has(message.subtype)) continue;
        pending.push({ message, target, where: `${dir}/${day}` });
      }
    }
    pending.sort((a, b) => Number(a.message.ts) - Number(b.message.ts));
    options.onDay?.(day, pending.length);
    return pending;
  };

  const threadTopics = new Map<string, string>();
  const threadsPerDay = new Map<string, number>();
  const topicOf = (message: SlackMessage): string => {
    if (message.thread_ts === undefined) return "imported from Slack";
    const known = threadTopics.get(message.thread_ts);
    if (known !== undefined) return known;
    // "2015-08-18 Slack thread 2": the date of the thread's first message and a counter among that day's threads.
    const date = new Date(seconds(message.thread_ts, 0) * 1000).toISOString().slice(0, 10);
    const n = (threadsPerDay.get(date) ?? 0) + 1;
    threadsPerDay.set(date, n);
    const topic = `${date} Slack thread ${n}`;
    threadTopics.set(message.thread_ts, topic);
    return topic;
  };

  const attachments: { messageId: number; ownerId: number; pathId: string; file: SlackFile; size: number }[] = [];
  let skippedReactions = 0;
  for (const day of [...dayFiles.keys()].sort()) for (const { message, target, where } of await readDay(day)) {
    const senderId = await userFor(message, where);
    const converted = slackToMarkdown(messageText(message), names);
    const fileLinks: string[] = [];
    const stored: { pathId: string; file: SlackFile; size: number }[] = [];
    for (const file of message.files ?? []) {
      const title = (file.title || file.name || "file").replace(/[[\]]/g, "");
      const download = file.mode === "tombstone" || file.url_private === undefined ? undefined : await downloadFile(w, file, options.token);
      if (download) {
        stored.push({ pathId: download.pathId, file, size: download.size });
        fileLinks.push(`[${title}](${uploadUrl(download.pathId)})`);
      } else if (file.url_private !== undefined) {
        fileLinks.push(`[${title}](${file.url_private})`);
        w.count("files linked");
      }
    }
    const content = [converted.content, ...fileLinks].filter((part) => part !== "").join("\n") || "(empty message)";
    const recipients = new Map<number, number>();
    const receivers = target.kind === "channel" ? target.members : target.userIds;
    for (const userId of new Set([...receivers, senderId])) {
      let flags = Flag.READ;
      if (converted.mentioned.has(userId)) flags |= Flag.MENTIONED;
      if (converted.wildcard && target.kind === "channel") flags |= Flag.STREAM_WILDCARD_MENTIONED;
      recipients.set(userId, flags);
    }
    const messageId = await w.insertMessage({
      senderId,
      to: target.kind === "channel" ? { channelId: target.channelId } : { userIds: [...new Set([...target.userIds, senderId])] },
      topic: topicOf(message),
      content,
      dateSent: seconds(message.ts, services.now()),
      sendingClient: "Slack import",
      lastEditTime: null,
      editHistory: null,
      recipients,
    });
    for (const s of stored) attachments.push({ messageId, ownerId: senderId, ...s });
    for (const reaction of message.reactions ?? []) {
      const emoji = slackEmojiToZulip(reaction.name);
      if (!emoji) {
        skippedReactions += (reaction.users ?? []).length;
        continue;
      }
      for (const slackUser of new Set(reaction.users ?? [])) {
        const userId = userIds.get(slackUser);
        if (userId !== undefined) await w.insertReaction(messageId, userId, { ...emoji, type: "unicode_emoji" });
      }
    }
    if ((w.counts.get("messages") ?? 0) % 1000 === 0) w.progress("messages");
  }
  w.progress("messages");
  w.progress("user_messages");
  w.progress("reactions");
  if (skippedReactions > 0) log(`reactions skipped (custom Slack emoji, not in the export): ${skippedReactions}`);

  for (const a of attachments) {
    const { id } = await trx
      .insertInto("attachments")
      .values({
        realm_id: w.realm.id,
        owner_id: a.ownerId,
        path_id: a.pathId,
        file_name: path.basename(a.pathId),
        content_type: a.file.mimetype ?? "application/octet-stream",
        size: a.size,
        create_time: services.now() * 1000,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    await trx.insertInto("attachment_messages").values({ attachment_id: id, message_id: a.messageId }).execute();
    w.count("attachments");
  }
  w.progress("attachments");
  w.progress("files linked");
}

/**
 * The text of a message: its `text`, or when that is empty its Block Kit blocks, and its legacy
 * attachments, rendered as the slack_incoming integration renders them (malformed ones are left out).
 */
function messageText(message: SlackMessage): string {
  const render = (items: unknown[] | undefined, one: (item: unknown) => string): string[] =>
    (Array.isArray(items) ? items : []).flatMap((item) => {
      try {
        return [one(item)];
      } catch (error) {
        if (error instanceof PayloadError) return [];
        throw error;
      }
    });
  const text = message.text ?? "";
  const pieces = [text, ...(text.trim() === "" ? render(message.blocks, renderBlock) : []), ...render(message.attachments, renderAttachment)];
  return pieces.filter((p) => p.trim() !== "").join("\n\n");
}

/** Fetches a Slack file into the file store; undefined when it cannot be reached (the message then links to Slack). */
async function downloadFile(w: ImportWriter, file: SlackFile, token: string | undefined): Promise<{ pathId: string; size: number } | undefined> {
  let body: Buffer;
  try {
    // fetch drops the Authorization header on a redirect to another origin.
    const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
    const response = await fetch(file.url_private!, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), redirect: "follow", ...(headers ? { headers } : {}) });
    if (!response.ok) {
      await response.body?.cancel();
      return undefined;
    }
    body = Buffer.from(await response.arrayBuffer());
  } catch {
    return undefined;
  }
  // A file store that fails is an import failure, not a file to link.
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "parley-slack-file-"));
  try {
    const local = path.join(tmp, "file");
    await fs.writeFile(local, body);
    const pathId = w.newUploadPathId(file.name || "file");
    await w.putFile(pathId, local);
    w.count("files downloaded");
    return { pathId, size: body.length };
  } finally {
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
