// Who may delete a message (Zulip's validate_can_delete_message), pure: the
// organization's can_delete_any_message_group and can_delete_own_message_group
// with message_content_delete_limit_seconds, and the channel-level
// can_delete_any_message_group / can_delete_own_message_group (feature level
// 407) that extend them for one channel. Reading the message at all (content
// access) is checked before this, by the caller.
import { badRequest } from "../errors.ts";
import { CHANNEL_GROUP_SETTING_RULES, type ChannelFacts } from "./channels.ts";
import { hasPermission, type Actor } from "./group-settings.ts";
import { REALM_GROUP_SETTING_RULES, type RealmSettings } from "./realm-settings.ts";

export const NO_DELETE_PERMISSION = "You don't have permission to delete this message";
export const DELETE_TIME_LIMIT_PASSED = "The time limit for deleting this message has passed";

export interface MessageDeleteFacts {
  actor: Actor;
  /** Sent by the actor, or by a bot the actor owns (Zulip lets owners delete their bots' messages). */
  ownMessage: boolean;
  realm: Pick<Readonly<RealmSettings>, "can_delete_any_message_group" | "can_delete_own_message_group" | "message_content_delete_limit_seconds">;
  /** The channel of a channel message; null for a direct message. */
  channel: Pick<ChannelFacts, "settings"> | null;
  /** Seconds since the message was sent. */
  ageSeconds: number;
}

export type MessageDeleteDecision = "allowed" | "no_permission" | "time_limit";

/**
 * In Zulip's order: deleting any message (organization-wide, then in this
 * channel) needs no ownership and has no time limit; otherwise the message
 * must be one's own (or one's bot's), one must be allowed to delete own
 * messages (organization-wide, or for channel messages in this channel), and
 * the message must be at most message_content_delete_limit_seconds old
 * (null: no limit).
 */
export function messageDeleteDecision(facts: MessageDeleteFacts): MessageDeleteDecision {
  const { actor, realm, channel } = facts;
  if (hasPermission(realm.can_delete_any_message_group, REALM_GROUP_SETTING_RULES.can_delete_any_message_group, actor)) return "allowed";
  if (channel && hasPermission(channel.settings.can_delete_any_message_group, CHANNEL_GROUP_SETTING_RULES.can_delete_any_message_group, actor)) {
    return "allowed";
  }
  if (!facts.ownMessage) return "no_permission";
  if (!hasPermission(realm.can_delete_own_message_group, REALM_GROUP_SETTING_RULES.can_delete_own_message_group, actor)) {
    if (!channel) return "no_permission";
    if (!hasPermission(channel.settings.can_delete_own_message_group, CHANNEL_GROUP_SETTING_RULES.can_delete_own_message_group, actor)) {
      return "no_permission";
    }
  }
  const limit = realm.message_content_delete_limit_seconds;
  // Zulip compares strictly: a message exactly `limit` seconds old may still be deleted.
  if (limit !== null && facts.ageSeconds > limit) return "time_limit";
  return "allowed";
}

/** Throws Zulip's error unless the actor may delete the message. */
export function checkCanDeleteMessage(facts: MessageDeleteFacts): void {
  const decision = messageDeleteDecision(facts);
  if (decision === "no_permission") throw badRequest(NO_DELETE_PERMISSION);
  if (decision === "time_limit") throw badRequest(DELETE_TIME_LIMIT_PASSED);
}
