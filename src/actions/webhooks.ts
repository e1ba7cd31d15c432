// Incoming webhooks (/api/v1/external/<integration>): who is posting (the
// api_key of a bot, usually an incoming-webhook bot), where the messages go
// (a channel by name or ID, or a direct message to the bot's owner), and the
// notices Zulip's Notification Bot sends the owner when something is
// misconfigured. The integration modules themselves are pure
// (src/integrations); this is the part that touches the database.
import { ApiError, invalidApiKey, realmDeactivated, userDeactivated } from "../errors.ts";
import { normalizeWebhookMessage } from "../integrations/normalize.ts";
import type { WebhookMessage } from "../integrations/integration.ts";
import { getChannel, getChannelsByNames, subscriberCounts } from "../queries/channels.ts";
import { getUserById } from "../queries/users.ts";
import type { Services } from "../services.ts";
import type { Channel, Realm, User } from "../storage/schema.ts";
import { realmForRequest } from "./auth.ts";
import { keysEqual } from "./credentials.ts";
import { notificationBot, sendMessage, sendNotificationBotMessage } from "./messages.ts";

/** Zulip's has_api_key_format: 32 ASCII letters and digits. */
const API_KEY_FORMAT = /^[A-Za-z0-9]{32}$/;

/** Zulip's BOT_OWNER_STREAM_ALERT_WAITPERIOD: the same notice goes to an owner at most once a minute. */
const OWNER_NOTICE_WAIT_SECONDS = 60;

/**
 * Zulip's validate_api_key for webhooks: the key alone names the user (any
 * active user may post through a webhook URL; incoming-webhook bots are what
 * it is for). Whitespace around the key is ignored.
 */
export async function authenticateWebhookKey(services: Services, rawKey: string): Promise<{ user: User; realm: Realm }> {
  const apiKey = rawKey.trim();
  if (!API_KEY_FORMAT.test(apiKey)) throw new ApiError(401, "INVALID_API_KEY", "Malformed API key", {}, { "WWW-Authenticate": 'Basic realm="zulip"' });
  const realm = await realmForRequest(services);
  const user = await services.storage.db.selectFrom("users").selectAll().where("realm_id", "=", realm.id).where("api_key", "=", apiKey).executeTakeFirst();
  // The lookup is by the key itself; compare again in constant time all the same.
  if (!user || !keysEqual(user.api_key, apiKey)) throw invalidApiKey();
  if (realm.deactivated) throw realmDeactivated();
  if (!user.is_active) throw userDeactivated();
  return { user, realm };
}

export interface WebhookDelivery {
  /** The `stream` parameter: a channel name, or digits for a channel ID; undefined for a direct message to the owner. */
  stream: string | undefined;
  /** The `topic` parameter, which replaces the integration's topics in a channel. */
  userTopic: string | undefined;
  /** Zulip's client name, "Zulip<Name>Webhook". */
  clientName: string;
}

/**
 * Zulip's check_send_webhook_message for each message, in order: normalised,
 * then sent to the channel (the owner hears if it does not exist, or has no
 * subscribers) or as a direct message to the bot's owner (to the sender
 * itself when it has none: a person's own key). Returns the IDs sent.
 */
export async function deliverWebhookMessages(services: Services, realm: Realm, sender: User, messages: readonly WebhookMessage[], delivery: WebhookDelivery): Promise<number[]> {
  const ids: number[] = [];
  if (delivery.stream === undefined) {
    const ownerId = sender.bot_owner_id ?? sender.id;
    for (const message of messages) {
      const { content } = normalizeWebhookMessage(message);
      const result = await sendMessage(services, realm, sender, { kind: "direct", to: JSON.stringify([ownerId]), content, topic: undefined, clientName: delivery.clientName });
      ids.push(result.id);
    }
    return ids;
  }
  for (const message of messages) {
    const { topic, content } = normalizeWebhookMessage(message, delivery.userTopic);
    const channel = await webhookChannel(services, realm, sender, delivery.stream);
    // An unknown channel name: the owner was told, and the request still succeeds (Zulip swallows StreamDoesNotExistError).
    if (channel === undefined) continue;
    const result = await sendMessage(services, realm, sender, { kind: "channel", to: String(channel.id), topic, content, clientName: delivery.clientName });
    ids.push(result.id);
  }
  return ids;
}

/**
 * The channel a webhook names (Zulip's validate_stream_*_with_pm_notification):
 * digits are an ID, anything else a name. A missing channel or one without
 * subscribers is reported to the bot's owner; a missing ID is also an error.
 */
async function webhookChannel(services: Services, realm: Realm, sender: User, stream: string): Promise<Channel | undefined> {
  const db = services.storage.db;
  const byId = /^[0-9]+$/.test(stream);
  const channel = byId ? await getChannel(db, realm.id, Number(stream)) : (await getChannelsByNames(db, realm.id, [stream]))[0];
  const bot = `\`${sender.delivery_email}\``;
  if (channel === undefined) {
    if (byId) {
      await notifyBotOwner(services, realm, sender, `Your bot ${bot} tried to send a message to channel ID ${stream}, but there is no channel with that ID.`);
      throw new ApiError(400, "STREAM_DOES_NOT_EXIST", `Channel with ID '${stream}' does not exist`, { stream_id: Number(stream) });
    }
    const name = stream.trim();
    await notifyBotOwner(services, realm, sender, `Your bot ${bot} tried to send a message to channel #**${name}**, but that channel does not exist. Click [here](#channels/new) to create it.`);
    return undefined;
  }
  const subscribers = (await subscriberCounts(db, [channel.id])).get(channel.id) ?? 0;
  if (subscribers === 0) {
    await notifyBotOwner(services, realm, sender, `Your bot ${bot} tried to send a message to channel #**${channel.name}**. The channel exists but does not have any subscribers.`);
  }
  return channel;
}

/** Zulip's INVALID_JSON_MESSAGE, sent to the owner when an integration gets a body that is not JSON. */
export function invalidJsonNotice(displayName: string): string {
  return [
    `Hi there! It looks like you tried to set up the Zulip ${displayName} integration,`,
    "but didn't correctly configure the webhook to send data in the JSON format",
    "that this integration expects!",
  ].join("\n");
}

/**
 * Zulip's MISSING_EVENT_HEADER_MESSAGE, sent to the owner when an integration
 * that reads its event type from a header (GitHub's X-GitHub-Event…) gets a
 * request without it. Zulip names its support address; Parley has none
 * configured, so it points at the server's administrators.
 */
export function missingHeaderNotice(botName: string, path: string, header: string, displayName: string): string {
  return [
    `Hi there!  Your bot ${botName} just sent an HTTP request to ${path} that`,
    `is missing the HTTP ${header} header.  Because this header is how`,
    `${displayName} indicates the event type, this usually indicates a configuration`,
    "issue, where you either entered the URL for a different integration, or are running",
    "an older version of the third-party service that doesn't provide that header.",
    "Contact this server's administrators if you need help debugging!",
  ].join("\n");
}

/**
 * Zulip's send_rate_limited_pm_notification_to_bot_owner: a direct message
 * from the Notification Bot to the bot's owner. The same notice is not sent
 * again within a minute (looked up in the messages themselves, so every
 * server process sees it). Only bots with an active owner are reported on.
 */
export async function notifyBotOwner(services: Services, realm: Realm, sender: User, content: string): Promise<void> {
  if (!sender.is_bot || sender.bot_owner_id === null) return;
  const db = services.storage.db;
  const owner = await getUserById(db, realm.id, sender.bot_owner_id);
  if (!owner?.is_active) return;
  const bot = await notificationBot(db, realm.id);
  const recent = await db
    .selectFrom("messages")
    .innerJoin("user_messages", "user_messages.message_id", "messages.id")
    .select("messages.id")
    .where("messages.realm_id", "=", realm.id)
    .where("messages.sender_id", "=", bot.id)
    .where("messages.channel_id", "is", null)
    .where("user_messages.user_id", "=", owner.id)
    .where("messages.date_sent", ">", services.now() - OWNER_NOTICE_WAIT_SECONDS)
    .where("messages.content", "=", content)
    .limit(1)
    .executeTakeFirst();
  if (recent) return;
  await sendNotificationBotMessage(services, realm, { userIds: [owner.id] }, content);
}

/** Zulip's UnsupportedWebhookEventTypeError message, answered with HTTP 200 success. */
export function unsupportedEventMessage(event: string, displayName: string): string {
  return `The '${event}' event isn't currently supported by the ${displayName} webhook; ignoring`;
}

/** A request without credentials: Zulip's webhook_view requires api_key. */
export function missingApiKey(): ApiError {
  return new ApiError(400, "REQUEST_VARIABLE_MISSING", "Missing 'api_key' argument", { var_name: "api_key" });
}


