// User status: POST /users/me/status, GET /users/{user_id}/status, and the
// administrators' POST /users/{user_id}/status (Zulip 11, feature level 407).
import { updateOwnStatus, updateStatusForUser } from "../actions/user-status.ts";
import { clientName } from "../domain/messages.ts";
import { checkStatusText } from "../domain/user-status.ts";
import { badRequest, noSuchUser } from "../errors.ts";
import { Param, param } from "../http/params.ts";
import { defineRoute, type ApiRequest } from "../http/route.ts";
import { userStatusOf } from "../queries/user-status.ts";
import { getUserById } from "../queries/users.ts";

/** status_text: stripped, at most 60 characters, checked with the other parameters (before any look-up), as typed_endpoint does. */
const statusText = () => new Param((raw: string, name: string) => checkStatusText(param.string().convert(raw, name)), "optional");

const statusParams = {
  status_text: statusText(),
  emoji_name: param.string(),
  emoji_code: param.string(),
  reaction_type: param.string(),
};

const requestClient = (request: ApiRequest) => clientName(undefined, request.http.headers["user-agent"]);

export const userStatusRoutes = [
  defineRoute({
    method: "POST",
    path: "/users/me/status",
    auth: "api",
    params: { away: param.bool(), ...statusParams },
    handler: async (request, p) => {
      await updateOwnStatus(
        request.services,
        request.realm,
        request.user,
        { away: p.away, statusText: p.status_text, emojiName: p.emoji_name, emojiCode: p.emoji_code, reactionType: p.reaction_type },
        requestClient(request),
      );
    },
  }),

  defineRoute({
    method: "POST",
    path: "/users/:user_id/status",
    auth: "api",
    params: { user_id: param.int().required(), ...statusParams },
    handler: async (request, p) => {
      await updateStatusForUser(
        request.services,
        request.realm,
        request.user,
        p.user_id,
        { statusText: p.status_text, emojiName: p.emoji_name, emojiCode: p.emoji_code, reactionType: p.reaction_type },
        requestClient(request),
      );
    },
  }),

  defineRoute({
    method: "GET",
    path: "/users/:user_id/status",
    auth: "api",
    params: { user_id: param.int().required() },
    // Zulip's access_user_by_id(allow_bots=False): bots and unknown IDs are "No such user".
    handler: async ({ services, realm }, p) => {
      const db = services.storage.db;
      const target = await getUserById(db, realm.id, p.user_id);
      if (!target || target.is_bot) throw noSuchUser();
      if (!target.is_active) throw badRequest("User is deactivated");
      return { status: await userStatusOf(db, target.id) };
    },
  }),
];
