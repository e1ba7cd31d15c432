import { addAlertWords, removeAlertWords } from "../actions/alert-words.ts";
import { sendMessage } from "../actions/messages.ts";
import { alertWordsOf } from "../queries/alert-words.ts";
import { updateMutedTopic, updateUserTopic } from "../actions/user-topics.ts";
import { actorFor } from "../actions/actor.ts";
import { checkRenderContent, clientName, LARGER_THAN_MAX_MESSAGE_ID, MAX_MESSAGES_PER_FETCH, topicOrSubject } from "../domain/messages.ts";
import { parseNarrow, type NarrowTerm } from "../domain/narrow.ts";
import { MAX_ITEMS_PER_REQUEST, MAX_MESSAGE_LENGTH } from "../domain/limits.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { ApiError, badRequest, incompatibleParameters } from "../errors.ts";
import { check, param, type Validator } from "../http/params.ts";
import { defineRoute, type ApiRequest } from "../http/route.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { markdownContextFor } from "../queries/markdown-context.ts";
import { readReceipts } from "../queries/read-receipts.ts";
import { accessibleMessage, channelTopics, fetchMessages, fetchMessagesByIds, formatMessage, loadMessageLookups, matchingMessages, type Anchor, type MessageFormat } from "../queries/messages.ts";

export const narrow: Validator<NarrowTerm[]> = (value, name) => parseNarrow(value, name);

/** anchor: a message ID, or "newest", "oldest", "first_unread" (Zulip's parse_anchor_value). */
export const anchor: Validator<Anchor> = (value) => {
  if (value === "newest" || value === "oldest" || value === "first_unread") return value;
  const text = typeof value === "number" && Number.isInteger(value) ? BigInt(value).toString() : typeof value === "string" ? value.trim() : "";
  if (!/^-?\d+$/.test(text)) throw badRequest("Invalid anchor");
  // Negative anchors mean the oldest message, huge ones the newest, as Zulip clamps them.
  const id = BigInt(text);
  if (id < 0n) return 0;
  return id >= BigInt(LARGER_THAN_MAX_MESSAGE_ID) ? LARGER_THAN_MAX_MESSAGE_ID : Number(id);
};

export const nonNegative = (name: string, value: number | undefined): number => {
  if (value !== undefined && value < 0) throw badRequest(`${name} is too small`);
  return value ?? 0;
};

function messageFormat(request: ApiRequest, applyMarkdown: boolean, allowEmptyTopicName: boolean): MessageFormat {
  const settings = parseRealmSettings(request.realm.settings);
  return {
    applyMarkdown,
    allowEmptyTopicName,
    emptyTopicName: settings.empty_topic_display_name,
    editHistoryVisibility: settings.message_edit_history_visibility_policy,
  };
}

export const messageRoutes = [
  defineRoute({
    method: "POST",
    path: "/messages",
    auth: "api",
    // Sending is what an incoming-webhook bot's key is for (Zulip's allow_incoming_webhooks).
    allowIncomingWebhookBots: true,
    params: {
      type: param.choice(["direct", "private", "stream", "channel"] as const).required(),
      to: param.string(),
      content: param.string().required(),
      topic: param.string(),
      subject: param.string(),
      queue_id: param.string(),
      local_id: param.string(),
      read_by_sender: param.bool(),
      client: param.string(),
      widget_content: param.string(),
    },
    handler: async (request, p) => {
      const result = await sendMessage(request.services, request.realm, request.user, {
        kind: p.type === "stream" || p.type === "channel" ? "channel" : "direct",
        to: p.to,
        content: p.content,
        topic: topicOrSubject(p.topic, p.subject),
        queueId: p.queue_id,
        localId: p.local_id,
        readBySender: p.read_by_sender,
        clientName: clientName(p.client, request.http.headers["user-agent"]),
        widgetContent: p.widget_content,
      });
      return { ...result };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/messages",
    auth: "api",
    params: {
      anchor: param.jsonOrString(anchor),
      include_anchor: param.bool().default(true),
      num_before: param.int(),
      num_after: param.int(),
      narrow: param.json(check.nullable(narrow)),
      client_gravatar: param.bool().default(true),
      apply_markdown: param.bool().default(true),
      use_first_unread_anchor: param.bool().default(false),
      allow_empty_topic_name: param.bool().default(false),
      message_ids: param.json(check.list(check.int, { max: MAX_MESSAGES_PER_FETCH, tooLong: `Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).` })),
    },
    handler: async (request, p) => {
      const db = request.services.storage.db;
      const format = messageFormat(request, p.apply_markdown, p.allow_empty_topic_name);
      const actor = await actorFor(db, request.user);
      const terms = p.narrow ?? [];
      if (p.message_ids !== undefined) {
        if (p.num_before !== undefined || p.num_after !== undefined || p.anchor !== undefined || p.use_first_unread_anchor) {
          throw badRequest("Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor");
        }
        const messages = await fetchMessagesByIds(db, request.services.storage.dialect, request.services.config, request.realm, actor, p.message_ids, terms, format);
        return { messages, found_anchor: false, found_oldest: false, found_newest: false, history_limited: false };
      }
      const chosen: Anchor | undefined = p.use_first_unread_anchor ? "first_unread" : p.anchor;
      if (chosen === undefined) throw new ApiError(400, "BAD_REQUEST", "Missing 'anchor' argument.");
      const numBefore = nonNegative("num_before", p.num_before);
      const numAfter = nonNegative("num_after", p.num_after);
      if (numBefore + numAfter > MAX_MESSAGES_PER_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
      if (numBefore > 0 && numAfter > 0 && !p.include_anchor) throw badRequest("The anchor can only be excluded at an end of the range");
      const result = await fetchMessages(db, request.services.storage.dialect, request.services.config, request.realm, actor, {
        anchor: chosen,
        includeAnchor: p.include_anchor,
        numBefore,
        numAfter,
        narrow: terms,
        format,
      });
      return { ...result };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/messages/matches_narrow",
    auth: "api",
    params: {
      // Chosen (Zulip has no bound): as many as one fetch returns, which the message-object code is built for.
      msg_ids: param.json(check.list(check.int, { max: MAX_MESSAGES_PER_FETCH })).required(),
      narrow: param.json(narrow).required(),
    },
    handler: async (request, p) => {
      const db = request.services.storage.db;
      const actor = await actorFor(db, request.user);
      const messages = await matchingMessages(db, request.services.storage.dialect, request.services.config, request.realm, actor, p.msg_ids, p.narrow, messageFormat(request, true, false));
      return { messages };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/messages/:message_id",
    auth: "api",
    params: {
      message_id: param.int().required(),
      apply_markdown: param.bool().default(true),
      allow_empty_topic_name: param.bool().default(false),
    },
    handler: async (request, p) => {
      const db = request.services.storage.db;
      const actor = await actorFor(db, request.user);
      const { row, flags } = await accessibleMessage(db, request.realm.id, actor, p.message_id);
      const lookups = await loadMessageLookups(db, request.realm, [row]);
      const message = formatMessage(request.services.config, row, lookups, flags, messageFormat(request, p.apply_markdown, p.allow_empty_topic_name));
      return { raw_content: row.content, message };
    },
  }),

  defineRoute({
    method: "POST",
    path: "/messages/render",
    auth: "api",
    params: { content: param.string().required() },
    handler: async (request, p) => {
      checkRenderContent(p.content, MAX_MESSAGE_LENGTH);
      const db = request.services.storage.db;
      const linkifiers = await compiledLinkifiersFor(request.services.storage, db, request.realm);
      const context = await markdownContextFor(db, request.services.config, request.realm.id, p.content, { linkifiers });
      return { rendered: renderMarkdown(p.content, context).html };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/users/me/:stream_id/topics",
    auth: "api",
    params: { stream_id: param.int().required(), allow_empty_topic_name: param.bool().default(false) },
    handler: async (request, p) => {
      const db = request.services.storage.db;
      const emptyTopicName = p.allow_empty_topic_name ? null : parseRealmSettings(request.realm.settings).empty_topic_display_name;
      return { topics: await channelTopics(db, request.realm.id, await actorFor(db, request.user), p.stream_id, emptyTopicName) };
    },
  }),

  defineRoute({
    method: "GET",
    path: "/users/me/alert_words",
    auth: "api",
    params: {},
    handler: async (request) => ({ alert_words: await alertWordsOf(request.services.storage.db, request.user.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/users/me/alert_words",
    auth: "api",
    params: { alert_words: param.json(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async (request, p) => ({ alert_words: await addAlertWords(request.services, request.realm, request.user, p.alert_words) }),
  }),

  defineRoute({
    method: "DELETE",
    path: "/users/me/alert_words",
    auth: "api",
    params: { alert_words: param.json(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST })).required() },
    handler: async (request, p) => ({ alert_words: await removeAlertWords(request.services, request.realm, request.user, p.alert_words) }),
  }),

  defineRoute({
    method: "GET",
    path: "/messages/:message_id/read_receipts",
    auth: "api",
    params: { message_id: param.int().required() },
    handler: async (request, p) => ({
      user_ids: await readReceipts(request.services.storage.db, request.realm, await actorFor(request.services.storage.db, request.user), p.message_id),
    }),
  }),

  defineRoute({
    method: "POST",
    path: "/user_topics",
    auth: "api",
    params: {
      stream_id: param.int().required(),
      topic: param.string().required(),
      visibility_policy: param.int().required(),
    },
    handler: async (request, p) => {
      await updateUserTopic(request.services, request.realm, request.user, p.stream_id, p.topic, p.visibility_policy);
    },
  }),

  defineRoute({
    // Legacy (before POST /user_topics, feature level 170); the mobile app still uses it on old servers.
    method: "PATCH",
    path: "/users/me/subscriptions/muted_topics",
    auth: "api",
    params: {
      stream_id: param.int(),
      stream: param.string(),
      topic: param.string().required(),
      op: param.choice(["add", "remove"] as const).required(),
    },
    handler: async (request, p) => {
      // Zulip's check_for_exactly_one_stream_arg: a plain error that reads like a missing argument.
      if (p.stream_id === undefined && p.stream === undefined) throw badRequest("Missing 'stream_id' argument");
      if (p.stream_id !== undefined && p.stream !== undefined) throw incompatibleParameters(["stream_id", "stream"]);
      const target = p.stream_id !== undefined ? { id: p.stream_id } : { name: p.stream! };
      await updateMutedTopic(request.services, request.realm, request.user, target, p.topic, p.op);
    },
  }),
];
