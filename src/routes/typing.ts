import { sendMessageEditTyping, sendTypingNotification } from "../actions/typing.ts";
import { MAX_USER_IDS } from "../domain/limits.ts";
import { check, param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const typingRoutes = [
  defineRoute({
    method: "POST",
    path: "/typing",
    auth: "api",
    params: {
      // "private" is no longer accepted, as in current Zulip.
      type: param.choice(["direct", "stream", "channel"] as const).default("direct"),
      op: param.choice(["start", "stop"] as const).required(),
      to: param.json(check.list(check.int, { max: MAX_USER_IDS })),
      stream_id: param.int(),
      topic: param.string(),
    },
    handler: async (request, { type, op, to, stream_id, topic }) => {
      await sendTypingNotification(
        request.services,
        request.realm,
        request.user,
        op,
        type === "direct" ? { kind: "direct", to } : { kind: "channel", channelId: stream_id, topic },
      );
    },
  }),
  defineRoute({
    method: "POST",
    path: "/messages/:message_id/typing",
    auth: "api",
    params: {
      message_id: param.int().required(),
      op: param.choice(["start", "stop"] as const).required(),
    },
    handler: async (request, { message_id, op }) => {
      await sendMessageEditTyping(request.services, request.realm, request.user, message_id, op);
    },
  }),
];
