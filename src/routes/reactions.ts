// Emoji reactions: POST and DELETE /messages/{message_id}/reactions.
import { addReaction, removeReaction } from "../actions/reactions.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

export const reactionRoutes = [
  defineRoute({
    method: "POST",
    path: "/messages/:message_id/reactions",
    auth: "api",
    params: {
      message_id: param.int().required(),
      emoji_name: param.string().required(),
      emoji_code: param.string(),
      reaction_type: param.string(),
    },
    handler: async (request, p) => {
      await addReaction(request.services, request.realm, request.user, p.message_id, {
        emojiName: p.emoji_name,
        emojiCode: p.emoji_code,
        reactionType: p.reaction_type,
      });
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/messages/:message_id/reactions",
    auth: "api",
    params: {
      message_id: param.int().required(),
      emoji_name: param.string(),
      emoji_code: param.string(),
      reaction_type: param.string(),
    },
    handler: async (request, p) => {
      await removeReaction(request.services, request.realm, request.user, p.message_id, {
        emojiName: p.emoji_name,
        emojiCode: p.emoji_code,
        reactionType: p.reaction_type,
      });
    },
  }),
];
