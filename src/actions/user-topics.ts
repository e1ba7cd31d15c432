// A user's visibility policy for a topic (muted, unmuted, followed), set
// explicitly with POST /user_topics (or the legacy PATCH
// /users/me/subscriptions/muted_topics) or automatically when sending.
import type { PendingEvents } from "../events/notifier.ts";
import { channelFacts, getChannel, getChannelsByNames } from "../queries/channels.ts";
import { hasContentAccess } from "../domain/channels.ts";
import { MAX_TOPIC_LENGTH } from "../domain/limits.ts";
import { normalizeTopicName, VisibilityPolicy } from "../domain/messages.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import { badRequest } from "../errors.ts";
import type { Services } from "../services.ts";
import { isStorableId } from "../storage/database.ts";
import type { Channel, Realm, User } from "../storage/schema.ts";
import { cachedActorFor } from "./actor.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

const POLICIES = new Set<number>(Object.values(VisibilityPolicy));

/**
 * POST /user_topics. Clearing a policy (INHERIT) needs only the channel to
 * exist, so people can clean up after losing access; setting one needs
 * access to an unarchived channel. Setting the current value changes nothing.
 */
export async function updateUserTopic(services: Services, realm: Realm, user: User, channelId: number, rawTopic: string, policy: number): Promise<void> {
  if (!POLICIES.has(policy)) throw badRequest("Invalid visibility_policy");
  const topic = checkedTopic(realm, rawTopic);
  const channel = isStorableId(channelId) ? await getChannel(services.storage.db, realm.id, channelId) : undefined;
  if (!channel) throw badRequest("Invalid channel ID");
  if (policy !== VisibilityPolicy.INHERIT && !(await maySetPolicy(services, user, channel))) throw badRequest("Invalid channel ID");
  await inRealmTransaction(services, realm.id, (trx, pending) => setVisibilityPolicy(trx, pending, realm.id, user.id, channel.id, topic, policy, services.now()));
}

/** The channel of PATCH /users/me/subscriptions/muted_topics: by ID or by name, exactly one of them. */
export type MutedTopicChannel = { id: number } | { name: string };

/**
 * The legacy PATCH /users/me/subscriptions/muted_topics (Zulip's
 * update_muted_topic), mapped onto visibility policies: `add` sets MUTED as
 * POST /user_topics does ("Invalid channel ID" / "Invalid channel name 'x'"
 * for a channel the user cannot read), `remove` clears the policy and needs
 * only the channel to exist ("Topic is not muted" otherwise). As in current
 * Zulip, muting a muted topic or unmuting one that is not muted succeeds
 * without changing anything (older servers answered "Topic already muted").
 */
export async function updateMutedTopic(services: Services, realm: Realm, user: User, target: MutedTopicChannel, rawTopic: string, op: "add" | "remove"): Promise<void> {
  const topic = checkedTopic(realm, rawTopic);
  const db = services.storage.db;
  const channel = "id" in target ? await getChannel(db, realm.id, target.id) : (await getChannelsByNames(db, realm.id, [target.name]))[0];
  let policy: number;
  if (op === "add") {
    if (!channel || !(await maySetPolicy(services, user, channel))) {
      throw badRequest("id" in target ? "Invalid channel ID" : `Invalid channel name '${target.name}'`);
    }
    policy = VisibilityPolicy.MUTED;
  } else {
    if (!channel) throw badRequest("Topic is not muted");
    policy = VisibilityPolicy.INHERIT;
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

/** Zulip's check_capped_string for topics, then the empty topic's other names mean "". */
function checkedTopic(realm: Realm, rawTopic: string): string {
  if ([...rawTopic].length > MAX_TOPIC_LENGTH) throw badRequest(`topic is too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
  return normalizeTopicName(rawTopic, parseRealmSettings(realm.settings).empty_topic_display_name);
}

/** Setting a policy (other than clearing it) needs read access to an unarchived channel (access_stream_by_id). */
async function maySetPolicy(services: Services, user: User, channel: Channel): Promise<boolean> {
  const db = services.storage.db;
  if (channel.is_archived) return false;
  const subscribed = (await db.selectFrom("subscriptions").select("active").where("user_id", "=", user.id).where("channel_id", "=", channel.id).executeTakeFirst())?.active === true;
  return hasContentAccess(await cachedActorFor(services.storage, user), channelFacts(channel), subscribed);
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
