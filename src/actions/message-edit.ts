// Editing and moving messages (PATCH /messages/{message_id}), as Zulip's
// check_update_message / do_update_message: check the request in Zulip's
// order, then one transaction rewrites the content (with mention flags and
// attachment links) and/or moves the messages to another topic or channel
// (flag rows, visibility policies), records the edit history and queues the
// update_message (and delete_message) events. Notification Bot notices about
// the move or the resolve are sent after the commit.
import { createHash } from "node:crypto";
import { sql } from "kysely";
import { canAdministerChannel, CHANNEL_GROUP_SETTING_RULES, hasContentAccess, type ChannelFacts } from "../domain/channels.ts";
import { hasPermission, type Actor } from "../domain/group-settings.ts";
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from "../domain/limits.ts";
import {
  checkResolvable,
  exemptFromMoveLimits,
  checkCanEditContent,
  pastEditLimit,
  resolveToggle,
  EDIT_LIMIT_BUFFER_SECONDS,
  RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS,
  type EditHistoryEntry,
  type PropagateMode,
  type ResolveToggle,
} from "../domain/message-edit.ts";
import { Flag, flagNames } from "../domain/message-flags.ts";
import { messageLinkUrl, topicLinkSyntax } from "../domain/message-links.ts";
import { checkTopic, checkTopicAllowed, effectiveTopicsPolicy, isMeMessage, normalizeContent, normalizeTopicName, VisibilityPolicy } from "../domain/messages.ts";
import { parseRealmSettings, REALM_GROUP_SETTING_RULES, type RealmSettings } from "../domain/realm-settings.ts";
import { isAdmin, isGuest, Role } from "../domain/roles.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { ApiError, badRequest } from "../errors.ts";
import type { CapabilityCondition, ClientEvent, PendingEvents } from "../events/notifier.ts";
import { topicLinks, type CompiledLinkifiers } from "../markdown/render.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { enqueueLinkPreviews, linkPreviewsOn } from "./link-previews.ts";
import { attachmentObjects, type ApiAttachment } from "../queries/attachments.ts";
import { channelFacts, subscriberCounts, usersWithMetadataAccess } from "../queries/channels.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { markdownContextFor } from "../queries/markdown-context.ts";
import { readableMessage, visibleTopicMessages } from "../queries/messages.ts";
import type { Services } from "../services.ts";
import { inChunks, isStorableId } from "../storage/database.ts";
import type { Attachment, Channel, Message, Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { deleteMessages } from "./message-delete.ts";
import {
  AutoPolicy,
  alertedUsers,
  checkWildcardMentions,
  claimableAttachments,
  groupMentionedUsers,
  linkAttachments,
  notificationBot,
  recipientIdFor,
  sendNotificationBotMessage,
  topicParticipants,
} from "./messages.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";
import { setVisibilityPolicy } from "./user-topics.ts";

export interface EditRequest {
  messageId: number;
  content?: string | undefined;
  topic?: string | undefined;
  streamId?: number | undefined;
  propagateMode: PropagateMode;
  notifyOldThread: boolean;
  notifyNewThread: boolean;
  prevContentSha256?: string | undefined;
}

export interface EditResult {
  detached_uploads: ApiAttachment[];
}

/** The flag bits a content edit recomputes. */
const MENTION_BITS = Flag.MENTIONED | Flag.STREAM_WILDCARD_MENTIONED | Flag.TOPIC_WILDCARD_MENTIONED | Flag.HAS_ALERT_WORD;

const noPermission = () => badRequest("You don't have permission to edit this message");

/** Zulip's can_move_messages_within_channel: administrators, channel administrators, the channel's group. */
function canMoveWithinChannel(actor: Actor, channel: ChannelFacts): boolean {
  return (
    isAdmin(actor.role) ||
    canAdministerChannel(actor, channel) ||
    hasPermission(channel.settings.can_move_messages_within_channel_group, CHANNEL_GROUP_SETTING_RULES.can_move_messages_within_channel_group, actor)
  );
}

/** Zulip's can_edit_topic: retopicking needs the organization's or either channel's permission (the sender has none by default). */
function canEditTopic(actor: Actor, settings: Readonly<RealmSettings>, orig: ChannelFacts, target: ChannelFacts): boolean {
  return (
    hasPermission(settings.can_move_messages_between_topics_group, REALM_GROUP_SETTING_RULES.can_move_messages_between_topics_group, actor) ||
    canMoveWithinChannel(actor, orig) ||
    canMoveWithinChannel(actor, target)
  );
}

/** Zulip's can_resolve_topics: no shortcut for administrators. */
function canResolveTopics(actor: Actor, settings: Readonly<RealmSettings>, orig: ChannelFacts, target: ChannelFacts): boolean {
  const inChannelGroup = (c: ChannelFacts) => hasPermission(c.settings.can_resolve_topics_group, CHANNEL_GROUP_SETTING_RULES.can_resolve_topics_group, actor);
  return hasPermission(settings.can_resolve_topics_group, REALM_GROUP_SETTING_RULES.can_resolve_topics_group, actor) || inChannelGroup(orig) || inChannelGroup(target);
}

/** Zulip's can_move_messages_out_of_channel. */
function canMoveOutOfChannel(actor: Actor, settings: Readonly<RealmSettings>, orig: ChannelFacts): boolean {
  return (
    isAdmin(actor.role) ||
    hasPermission(settings.can_move_messages_between_channels_group, REALM_GROUP_SETTING_RULES.can_move_messages_between_channels_group, actor) ||
    canAdministerChannel(actor, orig) ||
    hasPermission(orig.settings.can_move_messages_out_of_channel_group, CHANNEL_GROUP_SETTING_RULES.can_move_messages_out_of_channel_group, actor)
  );
}

async function isSubscribed(db: Trx, userId: number, channelId: number): Promise<boolean> {
  return (await db.selectFrom("subscriptions").select("active").where("user_id", "=", userId).where("channel_id", "=", channelId).executeTakeFirst())?.active === true;
}

/** A checked edit, ready to apply. */
interface Plan {
  message: Message;
  origChannel: Channel | null;
  targetChannel: Channel | null;
  /** New content and its rendering, when the content changes. */
  content?: { raw: string; rendered: ReturnType<typeof renderMarkdown>; mentioned: Set<number>; groupMentioned: Set<number>; participants: Set<number> };
  /** New topic, when it changes. */
  topic?: string;
  toggle: ResolveToggle;
  channelChanged: boolean;
  actor: Actor;
  /** The organization's linkifiers: for the new content and the new topic's topic_links. */
  linkifiers: CompiledLinkifiers;
}

export async function updateMessage(services: Services, realm: Realm, editor: User, request: EditRequest): Promise<EditResult> {
  const now = services.now();
  // Checks read under the organization's lock, so two edits of one message take turns (Zulip locks the message row).
  const { plan, applied } = await inRealmTransaction(services, realm.id, async (trx, pending) => {
    const realmRow = await trx.selectFrom("realms").select("settings").where("id", "=", realm.id).executeTakeFirstOrThrow();
    const settings = parseRealmSettings(realmRow.settings);
    const plan = await checkEdit(services, trx, realm, settings, editor, request, now);
    const applied = await applyEdit(services, trx, pending, realm, settings, editor, plan, request, now);
    return { plan, applied };
  });

  // After the commit: the Notification Bot's notices, resolve first (Zulip's order). One the
  // destination refuses (its topics policy) is skipped: the edit itself stands.
  const notices: (() => Promise<unknown>)[] = [];
  if (plan.topic !== undefined && plan.toggle !== null && !plan.channelChanged && !plan.content) {
    notices.push(() => sendResolveNotice(services, realm, editor, plan.origChannel!, plan.topic!, plan.toggle!, now));
  }
  if (applied.movedIds.length > 0) notices.push(...moveNotices(services, realm, editor, plan, request, applied));
  for (const notice of notices) {
    try {
      await notice();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
  }
  return { detached_uploads: applied.detachedUploads };
}

/** Zulip's check_update_message: every rule, in Zulip's order; returns what to change. */
async function checkEdit(services: Services, db: Trx, realm: Realm, settings: Readonly<RealmSettings>, editor: User, request: EditRequest, now: number): Promise<Plan> {
  const actor = await actorFor(db, editor);

  // 1. The message must be one the editor can read, in a channel that is not archived.
  const found = await readableMessage(db, realm.id, actor, request.messageId);
  if (!found) throw badRequest("Invalid message(s)");
  const message = found.row as Message;
  const origChannel = message.channel_id === null ? null : await db.selectFrom("channels").selectAll().where("id", "=", message.channel_id).executeTakeFirstOrThrow();
  if (origChannel?.is_archived) throw badRequest("Invalid message(s)");

  // 2. Content: only the sender, while the organization allows editing and within the limit.
  if (request.content !== undefined) checkCanEditContent(settings, message, editor.id, now);

  // 3. The topic as asked: the names of the empty topic mean "", the current topic means no change.
  let requestedTopic = request.topic === undefined ? undefined : normalizeTopicName(request.topic, settings.empty_topic_display_name);
  if (requestedTopic === message.topic) requestedTopic = undefined;
  // A stream_id naming the current channel changes nothing (Zulip would treat it as a move to itself).
  const streamId = request.streamId !== undefined && request.streamId !== message.channel_id ? request.streamId : undefined;

  // 4. The shape of the request.
  if (requestedTopic === undefined && request.content === undefined && streamId === undefined) throw badRequest("Nothing to change");
  if (origChannel === null) {
    if (request.streamId !== undefined) throw badRequest("Direct messages cannot be moved to channels.");
    if (request.topic !== undefined) throw badRequest("Direct messages cannot have topics.");
  }
  if (request.propagateMode !== "change_one" && requestedTopic === undefined && streamId === undefined) throw badRequest("Invalid propagate_mode without topic edit");
  if (requestedTopic !== undefined) checkResolvable(requestedTopic);
  const targetTopic = requestedTopic === undefined ? undefined : checkTopic(requestedTopic, settings.empty_topic_display_name, MAX_TOPIC_LENGTH);
  if (streamId !== undefined && request.content !== undefined) throw badRequest("Cannot change message content while changing channel");
  // A widget's content is what its submessages refer to (Zulip's is_widget_message: any submessage at all).
  if (request.content !== undefined && (await db.selectFrom("submessages").select("id").where("message_id", "=", message.id).limit(1).executeTakeFirst())) {
    throw badRequest("Widgets cannot be edited.");
  }
  if (request.prevContentSha256 !== undefined && createHash("sha256").update(message.content).digest("hex") !== request.prevContentSha256.toLowerCase()) {
    throw new ApiError(400, "EXPECTATION_MISMATCH", "'prev_content_sha256' value does not match the expected value.", { field_name: "prev_content_sha256" });
  }

  // 5. The destination.
  let targetChannel = origChannel;
  if (streamId !== undefined) {
    const channel = isStorableId(streamId) ? await db.selectFrom("channels").selectAll().where("realm_id", "=", realm.id).where("id", "=", streamId).executeTakeFirst() : undefined;
    if (!channel || channel.is_archived || !hasContentAccess(actor, channelFacts(channel), await isSubscribed(db, editor.id, channel.id))) {
      throw badRequest("Invalid channel ID");
    }
    targetChannel = channel;
  }
  const newTopic = targetTopic ?? message.topic;
  if (targetChannel) {
    const policy = effectiveTopicsPolicy(targetChannel.topics_policy, settings.topics_policy);
    if (policy === "empty_topic_only" || targetTopic !== undefined || streamId !== undefined) checkTopicAllowed(newTopic, policy, settings.empty_topic_display_name);
  }
  const origFacts = origChannel ? channelFacts(origChannel) : null;
  const targetFacts = targetChannel ? channelFacts(targetChannel) : null;

  // 6. Topic changes: resolving needs can_resolve_topics_group; anything else the move permission and its limit.
  const toggle = targetTopic !== undefined ? resolveToggle(message.topic, requestedTopic!, targetTopic) : null;
  const exempt = exemptFromMoveLimits(editor.role);
  if (targetTopic !== undefined) {
    if (toggle !== null) {
      if (!canResolveTopics(actor, settings, origFacts!, targetFacts!)) throw badRequest("You don't have permission to resolve topics in this channel.");
    } else {
      if (!canEditTopic(actor, settings, origFacts!, targetFacts!)) throw noPermission();
      if (!exempt && pastEditLimit(message.date_sent, now, settings.move_messages_within_stream_limit_seconds)) {
        throw badRequest("The time limit for editing this message's topic has passed.");
      }
    }
  }

  // 7. New content: rendered, with the mention rules of sending.
  let content: Plan["content"];
  const linkifiers = await compiledLinkifiersFor(services.storage, db, realm);
  if (request.content !== undefined) {
    const raw = normalizeContent(request.content.trimEnd() === "" ? "(deleted)" : request.content, MAX_MESSAGE_LENGTH);
    const rendered = renderMarkdown(
      raw,
      await markdownContextFor(db, services.config, realm.id, raw, {
        translateEmoticons: parseUserSettings(editor.settings).translate_emoticons,
        inlineImagePreview: settings.inline_image_preview,
        linkifiers,
        // An edit's links get previews too (Zulip queues embed_links again); made after the commit.
        urlEmbedPreview: linkPreviewsOn(services, settings, editor),
      }),
    );
    const participants = origChannel && rendered.topicWildcard ? await topicParticipants(db, origChannel.id, message.topic_key, message.sender_id) : new Set<number>();
    if (origChannel) {
      const subscribers = (await subscriberCounts(db, [origChannel.id])).get(origChannel.id) ?? 0;
      checkWildcardMentions(rendered, settings, actor, subscribers, participants);
    }
    const groupMentioned = rendered.mentionedGroupIds.length > 0 ? await groupMentionedUsers(db, realm.id, actor, rendered.mentionedGroupIds) : new Set<number>();
    content = { raw, rendered, mentioned: new Set(rendered.mentionedUserIds), groupMentioned, participants };
  }

  // 8. Channel moves: out of the old channel, into one the editor may post in, within the limit.
  if (streamId !== undefined) {
    if (!canMoveOutOfChannel(actor, settings, origFacts!)) throw badRequest("You don't have permission to move this message");
    if (!hasPermission(targetFacts!.settings.can_send_message_group, CHANNEL_GROUP_SETTING_RULES.can_send_message_group, actor)) {
      throw badRequest("You do not have permission to post in this channel.");
    }
    if (!exempt && pastEditLimit(message.date_sent, now, settings.move_messages_between_streams_limit_seconds)) {
      throw badRequest("The time limit for editing this message's channel has passed");
    }
  }

  const moved = streamId !== undefined || (targetTopic !== undefined && toggle === null);
  // 9. change_all must be able to move every message of the topic.
  if (request.propagateMode === "change_all" && !exempt && moved) {
    await checkChangeAllTimeLimit(db, actor, origChannel!, message.topic_key, settings, now, targetTopic !== undefined, streamId !== undefined);
  }

  const plan: Plan = { message, origChannel, targetChannel, toggle, channelChanged: streamId !== undefined, actor, linkifiers };
  if (content) plan.content = content;
  if (targetTopic !== undefined) plan.topic = targetTopic;
  return plan;
}

/**
 * MOVE_MESSAGES_TIME_LIMIT_EXCEEDED (Zulip's check_time_limit_for_change_all_propagate_mode):
 * every message of the topic the user can see must be within the move limit.
 */
async function checkChangeAllTimeLimit(
  db: Trx,
  actor: Actor,
  channel: Channel,
  topicKey: string,
  settings: Readonly<RealmSettings>,
  now: number,
  topicChanged: boolean,
  channelChanged: boolean,
): Promise<void> {
  const limits = [
    topicChanged ? settings.move_messages_within_stream_limit_seconds : null,
    channelChanged ? settings.move_messages_between_streams_limit_seconds : null,
  ].filter((l): l is number => l !== null);
  if (limits.length === 0) return;
  const deadline = Math.min(...limits) + EDIT_LIMIT_BUFFER_SECONDS;
  const rows = await (await visibleTopicMessages(db, actor, channel, topicKey)).select(["m.id", "m.date_sent"]).orderBy("m.id").execute();
  const allowed = rows.filter((r) => r.date_sent > now - deadline);
  if (allowed.length === rows.length) return;
  throw new ApiError(
    400,
    "MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    `You only have permission to move the ${allowed.length}/${rows.length} most recent messages in this topic.`,
    { first_message_id_allowed_to_move: allowed[0]?.id ?? null, total_messages_in_topic: rows.length, total_messages_allowed_to_move: allowed.length },
  );
}

interface Applied {
  movedIds: number[];
  /** change_all, or nothing the editor can see is left in the old topic. */
  movedAllVisible: boolean;
  detachedUploads: ApiAttachment[];
}

/** The JSON text of `entry` put first in a stored history (null or a JSON array), in SQL. */
function prependHistory(entry: EditHistoryEntry) {
  const json = JSON.stringify(entry);
  return sql<string>`CASE WHEN edit_history IS NULL THEN ${`[${json}]`} ELSE ${`[${json},`} || substr(edit_history, 2) END`;
}

async function applyEdit(
  services: Services,
  trx: Trx,
  pending: PendingEvents,
  realm: Realm,
  settings: Readonly<RealmSettings>,
  editor: User,
  plan: Plan,
  request: EditRequest,
  now: number,
): Promise<Applied> {
  const { message, origChannel, targetChannel, content, actor } = plan;
  const moving = plan.topic !== undefined || plan.channelChanged;
  // The messages that change: the target, and for a move the rest of its topic as asked.
  let movedIds: number[] = [];
  if (moving) {
    let query = trx.selectFrom("messages as m").select("m.id").where("m.channel_id", "=", origChannel!.id).where("m.topic_key", "=", message.topic_key);
    if (request.propagateMode === "change_one") query = query.where("m.id", "=", message.id);
    else if (request.propagateMode === "change_later") query = query.where("m.id", ">=", message.id);
    // Moving channels takes along only what the editor can see; a topic move keeps the topic together.
    if (plan.channelChanged && !origChannel!.history_public_to_subscribers) {
      query = query.where((eb) =>
        eb.or([
          eb("m.id", "=", message.id),
          eb.exists(eb.selectFrom("user_messages as um").select("um.message_id").whereRef("um.message_id", "=", "m.id").where("um.user_id", "=", editor.id)),
        ]),
      );
    }
    movedIds = (await query.orderBy("m.id").execute()).map((r) => r.id);
  }

  // Content.
  let detachedUploads: ApiAttachment[] = [];
  if (content) {
    const entry: EditHistoryEntry = {
      user_id: editor.id,
      timestamp: now,
      prev_content: message.content,
      prev_rendered_content: message.rendered_content,
      prev_rendered_content_version: 1,
    };
    if (plan.topic !== undefined) Object.assign(entry, { prev_topic: message.topic, topic: plan.topic });
    const attachments = await claimableAttachments(trx, realm.id, actor, content.rendered.uploadPathIds);
    await enqueueLinkPreviews(services, trx, pending, realm.id, message.id, content.raw, content.rendered.linksForPreview);
    await trx
      .updateTable("messages")
      .set({
        content: content.raw,
        rendered_content: content.rendered.html,
        has_link: content.rendered.hasLink,
        has_image: content.rendered.hasImage,
        last_edit_time: now,
        edit_history: prependHistory(entry),
      })
      .where("id", "=", message.id)
      .execute();
    detachedUploads = await relinkAttachments(trx, realm.id, message, attachments, pending);
    await updateMentionFlags(trx, message, content);
  }

  // Moves.
  const movedEntry: EditHistoryEntry = { user_id: editor.id, timestamp: now };
  if (plan.topic !== undefined) Object.assign(movedEntry, { prev_topic: message.topic, topic: plan.topic });
  if (plan.channelChanged) Object.assign(movedEntry, { prev_stream: origChannel!.id, stream: targetChannel!.id });
  let losingAccess: number[] = [];
  let targetHadMessages = false;
  if (moving) {
    const newTopic = plan.topic ?? message.topic;
    const newKey = newTopic.toLowerCase();
    targetHadMessages =
      (await trx
        .selectFrom("messages")
        .select("id")
        .where("channel_id", "=", targetChannel!.id)
        .where("topic_key", "=", newKey)
        .where((eb) => (movedIds.length > 0 ? eb("id", "not in", movedIds) : eb.lit(true)))
        .limit(1)
        .executeTakeFirst()) !== undefined;
    const recipientId = plan.channelChanged ? await recipientIdFor(services.storage, trx, realm.id, { channelId: targetChannel!.id }) : message.recipient_id;
    // The content edit already wrote the target's entry (with the topic in it).
    const others = content ? movedIds.filter((id) => id !== message.id) : movedIds;
    const realMove = plan.toggle === null || plan.channelChanged;
    for (const chunk of inChunks(movedIds, 500)) {
      await trx
        .updateTable("messages")
        .set({ topic: newTopic, topic_key: newKey, channel_id: targetChannel!.id, recipient_id: recipientId, ...(realMove ? { last_moved_time: now } : {}) })
        .where("id", "in", chunk)
        .execute();
    }
    for (const chunk of inChunks(others, 500)) {
      await trx.updateTable("messages").set({ edit_history: prependHistory(movedEntry) }).where("id", "in", chunk).execute();
    }
    if (plan.channelChanged) losingAccess = await moveFlagRows(trx, origChannel!, targetChannel!, movedIds);
    await moveFirstMessageIds(trx, pending, realm.id, origChannel!, targetChannel!, movedIds);
  }

  // Who saw the edit, and what remains of the old topic for the editor.
  let movedAllVisible = false;
  if (moving) {
    movedAllVisible = request.propagateMode === "change_all" || !(await editorSeesAnyOf(trx, actor, origChannel!, message.topic_key));
    if (movedAllVisible) await moveVisibilityPolicies(trx, pending, realm.id, plan, new Set(losingAccess), targetHadMessages, now);
    else if (!losingAccess.includes(message.sender_id)) await followOnInitiation(trx, pending, realm.id, plan, now);
  }
  if (losingAccess.length > 0) queueDeleteEvents(pending, realm.id, settings, origChannel!, message.topic, movedIds, losingAccess);
  await queueUpdateEvent(trx, pending, realm.id, settings, editor, plan, movedIds.length > 0 ? movedIds : [message.id], new Set(losingAccess), now, request.propagateMode);
  return { movedIds, movedAllVisible, detachedUploads };
}

/**
 * Re-points the message's attachment links at what the new content claims.
 * Returns the sender's uploads the edit left linked to no message (Zulip's
 * check_attachment_reference_change), for the client to offer deleting.
 */
async function relinkAttachments(trx: Trx, realmId: number, message: Message, claimed: readonly Attachment[], pending: PendingEvents): Promise<ApiAttachment[]> {
  const linked = await trx.selectFrom("attachment_messages").select("attachment_id").where("message_id", "=", message.id).execute();
  const linkedIds = new Set(linked.map((l) => l.attachment_id));
  const claimedIds = new Set(claimed.map((a) => a.id));
  const removed = [...linkedIds].filter((id) => !claimedIds.has(id));
  if (removed.length > 0) await trx.deleteFrom("attachment_messages").where("message_id", "=", message.id).where("attachment_id", "in", removed).execute();
  const added = claimed.filter((a) => !linkedIds.has(a.id));
  if (added.length > 0) await linkAttachments(trx, realmId, message.id, added, pending);
  await trx.updateTable("messages").set({ has_attachment: claimed.length > 0 }).where("id", "=", message.id).execute();
  if (removed.length === 0) return [];
  const orphans = await trx
    .selectFrom("attachments as a")
    .select("a.id")
    .where("a.id", "in", removed)
    .where("a.owner_id", "=", message.sender_id)
    .where((eb) => eb.not(eb.exists(eb.selectFrom("attachment_messages as am").select("am.message_id").whereRef("am.attachment_id", "=", "a.id"))))
    .execute();
  return attachmentObjects(trx, orphans.map((o) => o.id));
}

/** Mention, wildcard and alert-word flags of every flags row, recomputed for the new content (Zulip's update_user_message_flags). */
async function updateMentionFlags(trx: Trx, message: Message, content: NonNullable<Plan["content"]>): Promise<void> {
  const rows = await trx.selectFrom("user_messages").select("user_id").where("message_id", "=", message.id).execute();
  const alerted = await alertedUsers(trx, rows.map((r) => r.user_id).filter((id) => id !== message.sender_id), content.rendered.html);
  const isChannel = message.channel_id !== null;
  const byBits = new Map<number, number[]>();
  for (const { user_id: userId } of rows) {
    let bits = 0;
    if (content.mentioned.has(userId) || content.groupMentioned.has(userId)) bits |= Flag.MENTIONED;
    if (alerted.has(userId)) bits |= Flag.HAS_ALERT_WORD;
    if (content.rendered.channelWildcard) bits |= Flag.STREAM_WILDCARD_MENTIONED;
    if (content.rendered.topicWildcard && (!isChannel || content.participants.has(userId))) bits |= Flag.TOPIC_WILDCARD_MENTIONED;
    byBits.set(bits, [...(byBits.get(bits) ?? []), userId]);
  }
  for (const [bits, userIds] of byBits) {
    for (const chunk of inChunks(userIds, 500)) {
      await trx
        .updateTable("user_messages")
        .set({ flags: sql<number>`(flags & ${sql.lit(~MENTION_BITS)}) | ${sql.lit(bits)}` })
        .where("message_id", "=", message.id)
        .where("user_id", "in", chunk)
        .execute();
    }
  }
}

/**
 * Flag rows on a channel move (Zulip's do_update_message): people subscribed
 * (now or before) to the old channel but not to the new one lose their rows;
 * of them, those who cannot read the new channel (everyone for a private one,
 * guests for a public one) lose access. A protected-history destination gives
 * every subscriber a (read) row, since they could not read the messages otherwise.
 * Returns those who lose access.
 */
async function moveFlagRows(trx: Trx, orig: Channel, target: Channel, movedIds: number[]): Promise<number[]> {
  const oldSubscribers = await trx.selectFrom("subscriptions").select("user_id").where("channel_id", "=", orig.id).execute();
  const newSubscribers = await trx
    .selectFrom("subscriptions")
    .innerJoin("users", "users.id", "subscriptions.user_id")
    .select(["subscriptions.user_id", "users.role"])
    .where("subscriptions.channel_id", "=", target.id)
    .where("subscriptions.active", "=", true)
    .execute();
  const newIds = new Set(newSubscribers.map((s) => s.user_id));
  const losingRows = oldSubscribers.map((s) => s.user_id).filter((id) => !newIds.has(id));
  for (const chunk of inChunks(losingRows, 500)) {
    for (const ids of inChunks(movedIds, 500)) await trx.deleteFrom("user_messages").where("user_id", "in", chunk).where("message_id", "in", ids).execute();
  }
  let losingAccess = losingRows;
  if (!target.invite_only && losingRows.length > 0) {
    const guests = await trx.selectFrom("users").select("id").where("id", "in", losingRows).where("role", "=", Role.GUEST).execute();
    losingAccess = guests.map((g) => g.id);
  }
  if (!target.history_public_to_subscribers && newSubscribers.length > 0) {
    for (const ids of inChunks(movedIds, 100)) {
      const values = newSubscribers.flatMap((s) => ids.map((id) => ({ user_id: s.user_id, message_id: id, flags: Flag.READ })));
      for (const batch of inChunks(values, 500)) await trx.insertInto("user_messages").values(batch).onConflict((oc) => oc.doNothing()).execute();
    }
  }
  return losingAccess.sort((a, b) => a - b);
}

/** The channels' first_message_id after messages left one and joined the other. */
async function moveFirstMessageIds(trx: Trx, pending: PendingEvents, realmId: number, orig: Channel, target: Channel, movedIds: number[]): Promise<void> {
  if (orig.id === target.id || movedIds.length === 0) return;
  for (const channel of [orig, target]) {
    const first = await trx.selectFrom("messages").select((eb) => eb.fn.min<number>("id").as("id")).where("channel_id", "=", channel.id).executeTakeFirst();
    const value = first?.id ?? null;
    const current = (await trx.selectFrom("channels").select("first_message_id").where("id", "=", channel.id).executeTakeFirstOrThrow()).first_message_id;
    if (current === value) continue;
    await trx.updateTable("channels").set({ first_message_id: value }).where("id", "=", channel.id).execute();
    pending.add(realmId, { type: "stream", op: "update", property: "first_message_id", value, stream_id: channel.id, name: channel.name }, await usersWithMetadataAccess(trx, realmId, channel));
  }
}

/** Whether the editor can still see a message in the (old) topic. */
async function editorSeesAnyOf(trx: Trx, actor: Actor, channel: Channel, topicKey: string): Promise<boolean> {
  return (await (await visibleTopicMessages(trx, actor, channel, topicKey)).select("m.id").limit(1).executeTakeFirst()) !== undefined;
}

/**
 * A partial move that makes the sender's message the first they can see in
 * the destination topic starts that topic for them: their "on initiation"
 * automatic policies apply (Zulip's apply_automatic_unmute_follow_topics_policy).
 */
async function followOnInitiation(trx: Trx, pending: PendingEvents, realmId: number, plan: Plan, now: number): Promise<void> {
  const { message } = plan;
  const channel = plan.targetChannel!;
  const topic = plan.topic ?? message.topic;
  const sender = await trx.selectFrom("users").selectAll().where("id", "=", message.sender_id).executeTakeFirstOrThrow();
  if (sender.is_bot || !sender.is_active) return;
  const settings = parseUserSettings(sender.settings);
  const subscription = await trx.selectFrom("subscriptions").select("is_muted").where("user_id", "=", sender.id).where("channel_id", "=", channel.id).executeTakeFirst();
  let policy: number | undefined;
  if (settings.automatically_follow_topics_policy === AutoPolicy.ON_INITIATION) policy = VisibilityPolicy.FOLLOWED;
  else if (settings.automatically_unmute_topics_in_muted_streams_policy === AutoPolicy.ON_INITIATION && subscription?.is_muted === true) policy = VisibilityPolicy.UNMUTED;
  if (policy === undefined) return;
  const senderActor = await actorFor(trx, sender);
  const earlier = await (await visibleTopicMessages(trx, senderActor, channel, topic.toLowerCase())).select("m.id").where("m.id", "<", message.id).limit(1).executeTakeFirst();
  if (earlier === undefined) await setVisibilityPolicy(trx, pending, realmId, sender.id, channel.id, topic, policy, now, { unlessSet: [] });
}

/** Visibility ranked from least to most visible, for merging two topics' policies. */
const VISIBILITY_RANK: Record<number, number> = { [VisibilityPolicy.MUTED]: 0, [VisibilityPolicy.INHERIT]: 1, [VisibilityPolicy.UNMUTED]: 2, [VisibilityPolicy.FOLLOWED]: 3 };

/**
 * When a whole topic moves, its visibility policies go with it (Zulip):
 * into a new topic as they were, into an existing one merged with the
 * policy there (the more visible wins). Users who lost access lose the policy.
 */
async function moveVisibilityPolicies(trx: Trx, pending: PendingEvents, realmId: number, plan: Plan, losingAccess: ReadonlySet<number>, targetHadMessages: boolean, now: number): Promise<void> {
  const orig = plan.origChannel!;
  const target = plan.targetChannel!;
  const newTopic = plan.topic ?? plan.message.topic;
  const rows = await trx
    .selectFrom("user_topics")
    .select(["user_id", "channel_id", "topic_key", "visibility_policy"])
    .where((eb) =>
      eb.or([
        eb.and([eb("channel_id", "=", orig.id), eb("topic_key", "=", plan.message.topic_key)]),
        eb.and([eb("channel_id", "=", target.id), eb("topic_key", "=", newTopic.toLowerCase())]),
      ]),
    )
    .execute();
  const isOrig = (r: (typeof rows)[number]) => r.channel_id === orig.id && r.topic_key === plan.message.topic_key;
  const users = [...new Set(rows.map((r) => r.user_id))].sort((a, b) => a - b);
  for (const userId of users) {
    const origPolicy = rows.find((r) => r.user_id === userId && isOrig(r))?.visibility_policy ?? VisibilityPolicy.INHERIT;
    const targetPolicy = rows.find((r) => r.user_id === userId && !isOrig(r))?.visibility_policy ?? VisibilityPolicy.INHERIT;
    if (origPolicy !== VisibilityPolicy.INHERIT) {
      await setVisibilityPolicy(trx, pending, realmId, userId, orig.id, plan.message.topic, VisibilityPolicy.INHERIT, now);
    }
    if (losingAccess.has(userId)) continue;
    const wanted = !targetHadMessages ? origPolicy : VISIBILITY_RANK[origPolicy]! >= VISIBILITY_RANK[targetPolicy]! ? origPolicy : targetPolicy;
    if (wanted !== targetPolicy) await setVisibilityPolicy(trx, pending, realmId, userId, target.id, newTopic, wanted, now);
  }
}

/** Users who can no longer read the moved messages see them deleted. */
function queueDeleteEvents(pending: PendingEvents, realmId: number, settings: Readonly<RealmSettings>, channel: Channel, topic: string, ids: number[], userIds: number[]): void {
  const forms = topicForms(topic, settings.empty_topic_display_name);
  for (const form of forms) {
    const base = { type: "delete_message", message_type: "stream", stream_id: channel.id, topic: form.topic };
    pending.add(realmId, { ...base, message_ids: ids }, userIds, [{ name: "bulk_message_deletion", present: true }, ...form.capability]);
    for (const id of ids) pending.add(realmId, { ...base, message_id: id }, userIds, [{ name: "bulk_message_deletion", present: false }, ...form.capability]);
  }
}

/** A topic as clients with and without the empty_topic_name capability are told it. */
function topicForms(topic: string, emptyTopicName: string): { topic: string; capability: CapabilityCondition[] }[] {
  if (topic !== "") return [{ topic, capability: [] }];
  return [
    { topic: "", capability: [{ name: "empty_topic_name", present: true }] },
    { topic: emptyTopicName, capability: [{ name: "empty_topic_name", present: false }] },
  ];
}

/**
 * update_message to everyone who has the message (with their flags) and, for
 * a channel whose history is open to subscribers, to the other subscribers of
 * the channel(s) as read (Zulip's do_update_message recipients).
 */
async function queueUpdateEvent(
  trx: Trx,
  pending: PendingEvents,
  realmId: number,
  settings: Readonly<RealmSettings>,
  editor: User,
  plan: Plan,
  messageIds: number[],
  losingAccess: ReadonlySet<number>,
  now: number,
  propagateMode: PropagateMode,
): Promise<void> {
  const { message, origChannel, targetChannel, content } = plan;
  const rows = await trx
    .selectFrom("user_messages as um")
    .innerJoin("users as u", "u.id", "um.user_id")
    .select(["um.user_id", "um.flags"])
    .where("um.message_id", "=", message.id)
    .where("u.is_active", "=", true)
    .execute();
  const byFlags = new Map<number, number[]>();
  const told = new Set<number>();
  for (const row of rows) {
    if (losingAccess.has(row.user_id)) continue;
    byFlags.set(row.flags, [...(byFlags.get(row.flags) ?? []), row.user_id]);
    told.add(row.user_id);
  }
  if (origChannel && origChannel.history_public_to_subscribers) {
    const channelIds = [...new Set([origChannel.id, targetChannel!.id])];
    const subscribers = await trx
      .selectFrom("subscriptions as s")
      .innerJoin("users as u", "u.id", "s.user_id")
      .select(["s.user_id", "s.channel_id", "u.role"])
      .where("s.channel_id", "in", channelIds)
      .where("s.active", "=", true)
      .where("u.is_active", "=", true)
      .execute();
    const inOrig = new Set(subscribers.filter((s) => s.channel_id === origChannel.id).map((s) => s.user_id));
    const readers: number[] = [];
    for (const s of subscribers) {
      if (told.has(s.user_id) || losingAccess.has(s.user_id)) continue;
      // Guests who only see the destination get nothing (as Zulip).
      if (plan.channelChanged && s.channel_id === targetChannel!.id && isGuest(s.role) && !inOrig.has(s.user_id)) continue;
      told.add(s.user_id);
      readers.push(s.user_id);
    }
    if (readers.length > 0) byFlags.set(Flag.READ, [...(byFlags.get(Flag.READ) ?? []), ...readers]);
  }

  const event: ClientEvent = {
    type: "update_message",
    user_id: editor.id,
    edit_timestamp: now,
    message_id: message.id,
    message_ids: [...messageIds].sort((a, b) => a - b),
    rendering_only: false,
  };
  if (origChannel) Object.assign(event, { stream_name: origChannel.name, stream_id: origChannel.id });
  if (content) {
    Object.assign(event, {
      orig_content: message.content,
      orig_rendered_content: message.rendered_content,
      content: content.raw,
      rendered_content: content.rendered.html,
      is_me_message: isMeMessage(content.raw, content.rendered.html),
    });
  }
  const moving = plan.topic !== undefined || plan.channelChanged;
  if (moving) event.propagate_mode = propagateMode;
  if (plan.topic !== undefined) event.topic_links = topicLinks(plan.topic, plan.linkifiers);
  if (plan.channelChanged) event.new_stream_id = targetChannel!.id;

  const origForms = moving ? topicForms(message.topic, settings.empty_topic_display_name) : [{ topic: "", capability: [] }];
  const newForms = plan.topic !== undefined ? topicForms(plan.topic, settings.empty_topic_display_name) : [{ topic: "", capability: [] }];
  for (const [bits, userIds] of byFlags) {
    const flags = flagNames(bits);
    for (const o of origForms) {
      for (const n of newForms) {
        // Only combinations that agree on the capability reach anyone.
        const capability = [...o.capability, ...n.capability];
        if (new Set(capability.map((c) => c.present)).size > 1) continue;
        const formEvent: ClientEvent = { ...event, flags };
        if (moving) formEvent.orig_subject = o.topic;
        if (plan.topic !== undefined) formEvent.subject = n.topic;
        pending.add(realmId, formEvent, [...userIds].sort((a, b) => a - b), capability.length > 0 ? capability.slice(0, 1) : undefined);
      }
    }
  }
}

/**
 * The Notification Bot's breadcrumbs (Zulip's send_message_moved_breadcrumbs):
 * in the new topic unless this was only a resolve, then in the old one when
 * asked. Read for the mover, unread for everyone else.
 */
function moveNotices(services: Services, realm: Realm, editor: User, plan: Plan, request: EditRequest, applied: Applied): (() => Promise<unknown>)[] {
  const orig = plan.origChannel!;
  const target = plan.targetChannel!;
  const newTopic = plan.topic ?? plan.message.topic;
  const user = `@_**${editor.full_name}|${editor.id}**`;
  const count = applied.movedIds.length;
  const oldLocation = topicLinkSyntax(orig, plan.message.topic);
  const newLocation = topicLinkSyntax(target, newTopic);
  const readBy = new Set([editor.id]);
  const notices: (() => Promise<unknown>)[] = [];
  if (request.notifyNewThread && (plan.channelChanged || plan.toggle === null)) notices.push(async () => {
    let text: string;
    if (applied.movedAllVisible && !(await otherMessagesInTopic(services, plan.actor, target, newTopic.toLowerCase(), applied.movedIds))) {
      text = `This topic was moved here from ${oldLocation} by ${user}.`;
    } else if (count === 1) {
      const link = messageLinkUrl(services.config.externalUrl, plan.message.id, { channel: target, topic: newTopic });
      text = `[A message](${link}) was moved here from ${oldLocation} by ${user}.`;
    } else {
      text = `${count} messages were moved here from ${oldLocation} by ${user}.`;
    }
    await sendNotificationBotMessage(services, realm, { channelId: target.id, topic: newTopic }, text, readBy);
  });
  if (request.notifyOldThread) notices.push(async () => {
    const text = applied.movedAllVisible
      ? `This topic was moved to ${newLocation} by ${user}.`
      : count === 1
        ? `A message was moved from this topic to ${newLocation} by ${user}.`
        : `${count} messages were moved from this topic to ${newLocation} by ${user}.`;
    await sendNotificationBotMessage(services, realm, { channelId: orig.id, topic: plan.message.topic }, text, readBy);
  });
  return notices;
}

/** Messages the mover can see in the topic other than the moved ones (and resolve notices), for the "moved here" wording. */
async function otherMessagesInTopic(services: Services, actor: Actor, channel: Channel, topicKey: string, movedIds: number[]): Promise<boolean> {
  const db = services.storage.db;
  const bot = await notificationBot(db, channel.realm_id);
  const rows = await (await visibleTopicMessages(db, actor, channel, topicKey)).select(["m.id", "m.sender_id", "m.content"]).execute();
  const moved = new Set(movedIds);
  return rows.some((r) => !moved.has(r.id) && !(r.sender_id === bot.id && RESOLVE_NOTICE.test(r.content)));
}

const RESOLVE_NOTICE = /^@_\*\*.*\|\d+\*\* has marked this topic as (un)?resolved\.$/s;

/**
 * "@_**Name|id** has marked this topic as resolved." in the new topic
 * (Zulip's maybe_send_resolve_topic_notifications). Undoing a resolve within
 * the grace period deletes the previous notice instead. The notice is read
 * for the resolver and for subscribers who asked for such notices to be read
 * (resolved_topic_notice_auto_read_policy: always, or except_followed unless they follow the topic).
 */
async function sendResolveNotice(services: Services, realm: Realm, editor: User, channel: Channel, topic: string, toggle: NonNullable<ResolveToggle>, now: number): Promise<void> {
  const db = services.storage.db;
  const bot = await notificationBot(db, realm.id);
  const last = await db
    .selectFrom("messages")
    .select(["id", "sender_id", "content", "date_sent"])
    .where("channel_id", "=", channel.id)
    .where("topic_key", "=", topic.toLowerCase())
    .orderBy("id", "desc")
    .limit(1)
    .executeTakeFirst();
  if (last && last.sender_id === bot.id && RESOLVE_NOTICE.test(last.content) && now - last.date_sent <= RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS) {
    await deleteMessages(services, realm, editor, [last.id], { permission: "caller-checked" });
    return;
  }
  const subscribers = await db
    .selectFrom("subscriptions as s")
    .innerJoin("users as u", "u.id", "s.user_id")
    .leftJoin("user_topics as t", (j) => j.onRef("t.user_id", "=", "s.user_id").on("t.channel_id", "=", channel.id).on("t.topic_key", "=", topic.toLowerCase()))
    .select(["s.user_id", "u.is_bot", "u.settings", "t.visibility_policy"])
    .where("s.channel_id", "=", channel.id)
    .where("s.active", "=", true)
    .where("u.is_active", "=", true)
    .execute();
  const readBy = new Set<number>([editor.id]);
  for (const s of subscribers) {
    const policy = parseUserSettings(s.settings).resolved_topic_notice_auto_read_policy;
    const unread = !s.is_bot && (policy === "never" || (policy === "except_followed" && s.visibility_policy === VisibilityPolicy.FOLLOWED));
    if (!unread) readBy.add(s.user_id);
  }
  readBy.add(editor.id);
  const text = `@_**${editor.full_name}|${editor.id}** has marked this topic as ${toggle}.`;
  await sendNotificationBotMessage(services, realm, { channelId: channel.id, topic }, text, readBy);
}
