// What every importer (Zulip and Slack) writes with: one transaction
// for all rows, the organization's own ID sequences (old IDs are only keys of
// the maps kept here), files put into the file store and removed again if the
// transaction fails, message content rendered by Parley's Markdown renderer,
// and a count per table printed as progress.
import crypto from "node:crypto";
import { createReadStream } from "node:fs";
import { recipientIdFor } from "../actions/messages.ts";
import type { Trx } from "../actions/transaction.ts";
import { CHANNEL_GROUP_SETTING_DEFAULTS, CHANNEL_GROUP_SETTING_NAMES, type ChannelGroupSettingName } from "../domain/channels.ts";
import { encodeGroupSetting } from "../domain/group-settings.ts";
import { dmKey } from "../domain/messages.ts";
import { Flag } from "../domain/message-flags.ts";
import { makePathId } from "../domain/uploads.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { markdownContextFor, renderDescription } from "../queries/markdown-context.ts";
import type { Services } from "../services.ts";
import type { Realm } from "../storage/schema.ts";

/** The personal flag bits Parley stores; they sit where Zulip's UserMessage.flags has them. */
const KNOWN_FLAGS =
  Flag.READ | Flag.STARRED | Flag.COLLAPSED | Flag.MENTIONED | Flag.STREAM_WILDCARD_MENTIONED | Flag.TOPIC_WILDCARD_MENTIONED | Flag.GROUP_MENTIONED | Flag.HAS_ALERT_WORD | Flag.HISTORICAL | Flag.IS_PRIVATE;

export interface ImportedMessage {
  senderId: number;
  /** A channel message, or a direct message among these users (sender included). */
  to: { channelId: number } | { userIds: number[] };
  topic: string;
  content: string;
  dateSent: number;
  sendingClient: string;
  lastEditTime: number | null;
  editHistory: string | null;
  /** user ID → flags (Zulip's bit layout). */
  recipients: Map<number, number>;
}

export interface ImportedChannel {
  name: string;
  description: string;
  dateCreated: number;
  creatorId: number | undefined;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublicToSubscribers: boolean;
  messageRetentionDays: number | null;
  topicsPolicy: string;
  isArchived: boolean;
}

export interface ImportedSubscription {
  active: boolean;
  color: string | undefined;
  isMuted: boolean;
  pinToTop: boolean;
  desktopNotifications?: boolean | null;
  audibleNotifications?: boolean | null;
  pushNotifications?: boolean | null;
  emailNotifications?: boolean | null;
  wildcardMentionsNotify?: boolean | null;
}

/**
 * Runs an import in one transaction; `body` hands over its writer as soon as it has one
 * (`started.writer`) so that the files it stored are removed if the transaction fails.
 */
export async function inOneTransaction<T>(services: Services, body: (trx: Trx, started: { writer?: ImportWriter }) => Promise<T>): Promise<T> {
  const started: { writer?: ImportWriter } = {};
  try {
    return await services.storage.db.transaction().execute((trx) => body(trx, started));
  } catch (error) {
    // The rows are rolled back; the files the store already has go too, so that a retry starts clean.
    await started.writer?.removeFiles();
    throw error;
  }
}

export class ImportWriter {
  readonly ids = {
    users: new Map<number, number>(),
    channels: new Map<number, number>(),
    messages: new Map<number, number>(),
    groups: new Map<number, number>(),
    emoji: new Map<number, number>(),
  };
  readonly counts = new Map<string, number>();
  /** File store keys written, removed if the import fails. */
  readonly storedKeys: string[] = [];
  private linkifiers: Awaited<ReturnType<typeof compiledLinkifiersFor>> | undefined;
  private readonly firstMessage = new Set<number>();
  private systemGroups: Map<string, number> | undefined;
  /** Recipient row IDs by channel ("c" + ID) or DM key, found or made during this import's transaction. */
  private readonly recipients = new Map<string, number>();

  constructor(
    readonly services: Services,
    readonly trx: Trx,
    readonly realm: Realm,
    private readonly log: (line: string) => void,
  ) {}

  count(table: string, n = 1): void {
    this.counts.set(table, (this.counts.get(table) ?? 0) + n);
  }

  progress(table: string): void {
    this.log(`${table}: ${this.counts.get(table) ?? 0}`);
  }

  mapped(kind: keyof ImportWriter["ids"], oldId: number | null | undefined): number | undefined {
    return oldId === null || oldId === undefined ? undefined : this.ids[kind].get(oldId);
  }

  /** Puts a file from disk into the file store under `key`. */
  async putFile(key: string, file: string): Promise<void> {
    await this.services.files.put(key, createReadStream(file));
    this.storedKeys.push(key);
  }

  newUploadPathId(fileName: string): string {
    return makePathId(this.realm.id, fileName, crypto.randomBytes(19));
  }

  /** Removes the files written so far: called when the transaction failed. */
  async removeFiles(): Promise<void> {
    for (const key of this.storedKeys) await this.services.files.delete(key).catch(() => {});
  }

  /** The organization's system groups by name (role:everyone, role:nobody, …). */
  async systemGroupIds(): Promise<Map<string, number>> {
    this.systemGroups ??= new Map(
      (await this.trx.selectFrom("user_groups").select(["id", "name"]).where("realm_id", "=", this.realm.id).where("is_system_group", "=", true).execute()).map((g) => [g.name, g.id]),
    );
    return this.systemGroups;
  }

  /** A channel with Parley's default permissions (the creator's, when known). */
  async insertChannel(c: ImportedChannel): Promise<number> {
    const { trx, services, realm } = this;
    const groups = await this.systemGroupIds();
    const permissions = Object.fromEntries(
      CHANNEL_GROUP_SETTING_NAMES.map((name) => {
        const fallback = CHANNEL_GROUP_SETTING_DEFAULTS[name];
        const value = fallback === "creator" ? { direct_members: c.creatorId === undefined ? [] : [c.creatorId], direct_subgroups: [] } : groups.get(fallback)!;
        return [name, encodeGroupSetting(value)];
      }),
    ) as Record<ChannelGroupSettingName, string>;
    const { id } = await trx
      .insertInto("channels")
      .values({
        realm_id: realm.id,
        name: c.name,
        name_key: c.name.toLowerCase(),
        description: c.description,
        rendered_description: await renderDescription(trx, services.config, realm.id, c.description),
        date_created: c.dateCreated,
        creator_id: c.creatorId ?? null,
        invite_only: c.inviteOnly,
        is_web_public: c.isWebPublic,
        history_public_to_subscribers: c.inviteOnly ? c.historyPublicToSubscribers : true,
        message_retention_days: c.messageRetentionDays,
        topics_policy: c.topicsPolicy,
        folder_id: null,
        is_archived: c.isArchived,
        ...permissions,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    this.count("channels");
    return id;
  }

  async insertSubscription(userId: number, channelId: number, sub: ImportedSubscription): Promise<void> {
    await this.trx
      .insertInto("subscriptions")
      .values({
        user_id: userId,
        channel_id: channelId,
        active: sub.active,
        color: sub.color !== undefined && /^#[0-9a-fA-F]{3,6}$/.test(sub.color) ? sub.color : "#c2c2c2",
        is_muted: sub.isMuted,
        pin_to_top: sub.pinToTop,
        desktop_notifications: sub.desktopNotifications ?? null,
        audible_notifications: sub.audibleNotifications ?? null,
        push_notifications: sub.pushNotifications ?? null,
        email_notifications: sub.emailNotifications ?? null,
        wildcard_mentions_notify: sub.wildcardMentionsNotify ?? null,
      })
      .execute();
    this.count("subscriptions");
  }

  async insertReaction(messageId: number, userId: number, emoji: { name: string; code: string; type: string }): Promise<void> {
    await this.trx.insertInto("reactions").values({ message_id: messageId, user_id: userId, emoji_name: emoji.name, emoji_code: emoji.code, reaction_type: emoji.type }).execute();
    this.count("reactions");
  }

  /** The recipient of a channel or a direct-message conversation (created if new). */
  async recipientId(to: ImportedMessage["to"]): Promise<number> {
    const target = "channelId" in to ? { channelId: to.channelId } : { dmKey: dmKey(to.userIds) };
    // recipientIdFor caches nothing inside a transaction; this import's own map saves a query per message.
    const recipientKey = "channelId" in target ? `c${target.channelId}` : target.dmKey;
    let recipientId = this.recipients.get(recipientKey);
    if (recipientId === undefined) {
      recipientId = await recipientIdFor(this.services.storage, this.trx, this.realm.id, target);
      this.recipients.set(recipientKey, recipientId);
    }
    return recipientId;
  }

  async insertMessage(message: ImportedMessage): Promise<number> {
    const { trx, services, realm } = this;
    this.linkifiers ??= await compiledLinkifiersFor(services.storage, trx, realm);
    const context = await markdownContextFor(trx, services.config, realm.id, message.content, { linkifiers: this.linkifiers });
    const rendered = renderMarkdown(message.content, context);
    const isChannel = "channelId" in message.to;
    const recipientId = await this.recipientId(message.to);
    const { id } = await trx
      .insertInto("messages")
      .values({
        realm_id: realm.id,
        sender_id: message.senderId,
        recipient_id: recipientId,
        channel_id: "channelId" in message.to ? message.to.channelId : null,
        topic: isChannel ? message.topic : "",
        topic_key: isChannel ? message.topic.toLowerCase() : "",
        content: message.content,
        rendered_content: rendered.html,
        date_sent: message.dateSent,
        sending_client: message.sendingClient,
        last_edit_time: message.lastEditTime,
        last_moved_time: null,
        edit_history: message.editHistory,
        has_attachment: /\/user_uploads\//.test(message.content),
        has_image: rendered.hasImage,
        has_link: rendered.hasLink,
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    const rows = [...message.recipients].map(([userId, flags]) => ({
      user_id: userId,
      message_id: id,
      flags: (flags & KNOWN_FLAGS) | (isChannel ? 0 : Flag.IS_PRIVATE),
    }));
    for (let i = 0; i < rows.length; i += 500) await trx.insertInto("user_messages").values(rows.slice(i, i + 500)).execute();
    if ("channelId" in message.to && !this.firstMessage.has(message.to.channelId)) {
      this.firstMessage.add(message.to.channelId);
      await trx.updateTable("channels").set({ first_message_id: id }).where("id", "=", message.to.channelId).where("first_message_id", "is", null).execute();
    }
    this.count("messages");
    this.count("user_messages", rows.length);
    return id;
  }
}

