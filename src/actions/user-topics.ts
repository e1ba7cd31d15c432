// A user's visibility policy for a topic (muted, unmuted, followed), set
// explicitly with POST /user_topics or automatically when sending.
import type { PendingEvents } from "../events/notifier.ts";
import { channelFacts } from "../queries/channels.ts";
import { hasContentAccess } from "../domain/channels.ts";
import { MAX_TOPIC_LENGTH } from "../domain/limits.ts";
import { normalizeTopicName, VisibilityPolicy } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { actorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

const POLICIES = new Set<number>(Object.values(VisibilityPolicy));

/**
 * POST /user_topics. Clearing a policy (INHERIT) needs only the channel to
 * exist, so people can clean up after losing access; setting one needs
 * access to an unarchived channel. Setting the current value changes nothing.
 */
export async function updateUserTopic(services: Services, realm: Realm, user: User, channelId: number, rawTopic: string, policy: number): Promise<void> {
  if (!POLICIES.has(policy)) throw badRequest("Invalid visibility_policy");
  if ([...rawTopic].length > MAX_TOPIC_LENGTH) throw badRequest(`topic is too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
  const topic = normalizeTopicName(rawTopic, parseRealmSettings(realm.settings).empty_topic_display_name);
  const db = services.storage.db;
  const channel = isStorableId(channelId) ? await db.selectFrom("channels").selectAll().where("realm_id", "=", realm.id).where("id", "=", channelId).executeTakeFirst() : undefined;
  if (!channel) throw badRequest("Invalid channel ID");
  if (policy !== VisibilityPolicy.INHERIT) {
    const subscribed = (await db.selectFrom("subscriptions").select("active").where("user_id", "=", user.id).where("channel_id", "=", channel.id).executeTakeFirst())?.active === true;
    if (channel.is_archived || !hasContentAccess(await actorFor(db, user), channelFacts(channel), subscribed)) throw badRequest("Invalid channel ID");
  }
  await inRealmTransaction(services, realm.id, (trx, pending) => setVisibilityPolicy(trx, pending, realm.id, user.id, channel.id, topic, policy, services.now()));
}

/** Zulip's AutomaticallyChangeVisibilityPolicy.ON_PARTICIPATION. */
const ON_PARTICIPATION = 1;

/**
 * Reacting and submessaging (voting) are participating (Zulip's
 * do_add_reaction, do_add_submessage): a subscriber whose automatic policy
 * is "on participation" follows the topic (or, in a muted channel, unmutes
 * it). Automatic changes only ever raise visibility. `channel` is null for a
 * direct message; its `is_muted_for_user` is null when the user is not subscribed.
 */
export async function followOnParticipation(
  trx: Trx,
  pending: PendingEvents,
  realmId: number,
  user: User,
  channel: { id: number; is_muted_for_user: boolean | null } | null,
  topic: string,
  now: number,
): Promise<void> {
  if (channel === null || user.is_bot || channel.is_muted_for_user === null) return;
  const settings = parseUserSettings(user.settings);
  let policy: number | undefined;
  if (settings.automatically_follow_topics_policy === ON_PARTICIPATION) policy = VisibilityPolicy.FOLLOWED;
  else if (channel.is_muted_for_user && settings.automatically_unmute_topics_in_muted_streams_policy === ON_PARTICIPATION) policy = VisibilityPolicy.UNMUTED;
  if (policy === undefined) return;
  await setVisibilityPolicy(trx, pending, realmId, user.id, channel.id, topic, policy, now, { unlessSet: [] });
}

/**
 * Stores the policy (INHERIT removes the row) and queues the user_topic event
 * for the user's clients.
 */
export async function setVisibilityPolicy(
  trx: Trx,
  pending: PendingEvents,
  realmId: number,
  userId: number,
  channelId: number,
  topic: string,
  policy: number,
  now: number,
  /** Leave the topic alone when its policy is one of these (FOLLOWED is always kept by automatic changes). */
  options: { unlessSet?: readonly number[] } = {},
): Promise<boolean> {
  const topicKey = topic.toLowerCase();
  const current = await trx
    .selectFrom("user_topics")
    .select(["visibility_policy", "topic"])
    .where("user_id", "=", userId)
    .where("channel_id", "=", channelId)
    .where("topic_key", "=", topicKey)
    .executeTakeFirst();
  const currentPolicy = current?.visibility_policy ?? VisibilityPolicy.INHERIT;
  if (currentPolicy === policy) return false;
  if (options.unlessSet && (currentPolicy === VisibilityPolicy.FOLLOWED || options.unlessSet.includes(currentPolicy))) return false;
  if (policy === VisibilityPolicy.INHERIT) {
    await trx.deleteFrom("user_topics").where("user_id", "=", userId).where("channel_id", "=", channelId).where("topic_key", "=", topicKey).execute();
  } else if (current) {
    await trx
      .updateTable("user_topics")
      .set({ visibility_policy: policy, last_updated: now })
      .where("user_id", "=", userId)
      .where("channel_id", "=", channelId)
      .where("topic_key", "=", topicKey)
      .execute();
  } else {
    await trx.insertInto("user_topics").values({ user_id: userId, channel_id: channelId, topic, topic_key: topicKey, visibility_policy: policy, last_updated: now }).execute();
  }
  const muted = await trx
    .selectFrom("user_topics")
    .innerJoin("channels", "channels.id", "user_topics.channel_id")
    .select(["channels.name", "user_topics.topic", "user_topics.last_updated"])
    .where("user_topics.user_id", "=", userId)
    .where("user_topics.visibility_policy", "=", VisibilityPolicy.MUTED)
    .orderBy("user_topics.last_updated")
    .execute();
  pending.add(realmId, { type: "muted_topics", muted_topics: muted.map((m) => [m.name, m.topic, m.last_updated]) }, [userId]);
  pending.add(realmId, { type: "user_topic", stream_id: channelId, topic_name: current?.topic ?? topic, last_updated: now, visibility_policy: policy }, [userId]);
  return true;
}
