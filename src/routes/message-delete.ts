// DELETE /messages/{message_id}: permanently delete a message (Zulip's
// delete_message_backend); POST /streams/{stream_id}/delete_topic: delete a
// topic's messages (administrators; Zulip's delete_in_topic). Access,
// permission and the deletion itself are actions/message-delete.ts.
import { deleteMessages, deleteTopic } from "../actions/message-delete.ts";
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

  defineRoute({
    method: "POST",
    path: "/streams/:stream_id/delete_topic",
    auth: "api",
    adminOnly: true,
    params: { stream_id: param.int().required(), topic_name: param.string().required() },
    handler: async (request, p) => deleteTopic(request.services, request.realm, request.user, p.stream_id, p.topic_name),
  }),
];
