// Widgets: POST /submessage.
import { addSubmessage } from "../actions/submessages.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const submessageRoutes = [
  defineRoute({
    method: "POST",
    path: "/submessage",
    auth: "api",
    // Declared in Zulip's order, so the first missing one is the one Zulip names.
    params: {
      content: param.string().required(),
      message_id: param.int().required(),
      msg_type: param.string().required(),
    },
    handler: async (request, p) => {
      await addSubmessage(request.services, request.realm, request.user, { messageId: p.message_id, msgType: p.msg_type, content: p.content });
    },
  }),
];
