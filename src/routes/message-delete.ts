// DELETE /messages/{message_id}: permanently delete a message (Zulip's
// delete_message_backend). Access, permission and the deletion itself are
// actions/message-delete.ts.
import { deleteMessages } from "../actions/message-delete.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const messageDeleteRoutes = [
  defineRoute({
    method: "DELETE",
    path: "/messages/:message_id",
    auth: "api",
    params: { message_id: param.int().required() },
    handler: async (request, p) => {
      await deleteMessages(request.services, request.realm, request.user, [p.message_id]);
    },
  }),
];
