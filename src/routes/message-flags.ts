import { markAllAsRead, markChannelAsRead, updateMessageFlags, updateMessageFlagsForNarrow } from "../actions/message-flags.ts";
import { badRequest } from "../errors.ts";
import { check, param } from "../http/params.ts";
import { MAX_MESSAGE_IDS } from "../domain/limits.ts";
import { defineRoute } from "../http/route.ts";
import { anchor, narrow, nonNegative } from "./messages.ts";

/** Zulip's MAX_MESSAGES_PER_UPDATE: one narrow update touches at most this many messages besides the anchor. */
export const MAX_MESSAGES_PER_UPDATE = 5000;

/**
 * Zulip's clamp: num_before yields to num_after but keeps at least half the
 * budget, num_after takes what is left; a request is never refused for size.
 */
export function clampUpdateRange(numBefore: number, numAfter: number): { numBefore: number; numAfter: number } {
  const before = Math.min(numBefore, Math.max(MAX_MESSAGES_PER_UPDATE - numAfter, MAX_MESSAGES_PER_UPDATE / 2));
  return { numBefore: before, numAfter: Math.min(numAfter, MAX_MESSAGES_PER_UPDATE - before) };
}

export const messageFlagsRoutes = [
  defineRoute({
    method: "POST",
    path: "/messages/flags",
    auth: "api",
    params: {
      messages: param.json(check.list(check.int, { max: MAX_MESSAGE_IDS })).required(),
      op: param.string().required(),
      flag: param.string().required(),
    },
    handler: async (request, p) => {
      const { ignoredChannels } = await updateMessageFlags(request.services, request.realm, request.user, p.op, p.flag, p.messages);
      // Zulip answers with the IDs as sent ("useless, but included for backwards compatibility").
      return { messages: p.messages, ...(ignoredChannels ? { ignored_because_not_subscribed_channels: ignoredChannels } : {}) };
    },
  }),

  defineRoute({
    method: "POST",
    path: "/messages/flags/narrow",
    auth: "api",
    params: {
      anchor: param.jsonOrString(anchor).required(),
      include_anchor: param.bool().default(true),
      num_before: param.int().required(),
      num_after: param.int().required(),
      narrow: param.json(check.nullable(narrow)).required(),
      op: param.string().required(),
      flag: param.string().required(),
    },
    handler: async (request, p) => {
      const numBefore = nonNegative("num_before", p.num_before);
      const numAfter = nonNegative("num_after", p.num_after);
      if (numBefore > 0 && numAfter > 0 && !p.include_anchor) throw badRequest("The anchor can only be excluded at an end of the range");
      const range = { anchor: p.anchor, includeAnchor: p.include_anchor, ...clampUpdateRange(numBefore, numAfter), narrow: p.narrow ?? [] };
      return { ...(await updateMessageFlagsForNarrow(request.services, request.realm, request.user, range, p.op, p.flag)) };
    },
  }),

  defineRoute({
    method: "POST",
    path: "/mark_all_as_read",
    auth: "api",
    params: {},
    handler: async (request) => {
      await markAllAsRead(request.services, request.realm, request.user);
      // Zulip stops after 50 seconds with complete: false; one UPDATE always finishes.
      return { complete: true };
    },
  }),

  defineRoute({
    method: "POST",
    path: "/mark_stream_as_read",
    auth: "api",
    params: { stream_id: param.int().required() },
    handler: async (request, p) => {
      await markChannelAsRead(request.services, request.realm, request.user, p.stream_id);
    },
  }),

  defineRoute({
    method: "POST",
    path: "/mark_topic_as_read",
    auth: "api",
    params: { stream_id: param.int().required(), topic_name: param.string().required() },
    handler: async (request, p) => {
      await markChannelAsRead(request.services, request.realm, request.user, p.stream_id, p.topic_name);
    },
  }),
];
