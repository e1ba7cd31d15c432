// Presence: every client reports its user's presence once a minute and gets
// the organization's presence back (POST /users/me/presence); bots and other
// tools read it with GET /realm/presence and GET /users/{user}/presence.
import { reportPresence } from "../actions/presence.ts";
import { PRESENCE_STATUSES, modernPresence, singleUserLegacyPresence, type PresenceStatus } from "../domain/presence.ts";
import { parseRealmSettings } from "../domain/realm-settings.ts";
import { badRequest, humansOnly, insufficientPermission, noSuchUser } from "../errors.ts";
import { param } from "../http/params.ts";
import { JsonMembers, defineRoute, type ApiRequest } from "../http/route.ts";
import { presenceServerTimestamp, presenceTimesOf, presenceVisibleTo, type RealmPresenceRequest } from "../queries/presence.ts";
import { realmPresenceJson } from "../queries/presence-snapshot.ts";
import { getUserByApiEmail, getUserById } from "../queries/users.ts";
import type { User } from "../storage/schema.ts";

/**
 * The organization's presence as the caller may see it, with Zulip's reply
 * keys, as JSON text made from the organization's snapshot
 * (queries/presence-snapshot.ts): no presence query, no serialization of the
 * whole organization per request.
 */
async function presenceReply(request: ApiRequest, asked: Omit<RealmPresenceRequest, "now" | "visible">, withLastUpdateId: boolean): Promise<JsonMembers> {
  const { services, realm, user } = request;
  const db = services.storage.db;
  const settings = parseRealmSettings(realm.settings);
  const now = services.now();
  const visible = await presenceVisibleTo(db, settings, user);
  const { parts, lastUpdateId } = await realmPresenceJson(services.storage, db, realm.id, settings, { ...asked, now, visible }, services.nowMs());
  const timestamp = `,"server_timestamp":${JSON.stringify(presenceServerTimestamp(now))}`;
  return new JsonMembers(['"presences":', ...parts, withLastUpdateId ? `${timestamp},"presence_last_update_id":${JSON.stringify(lastUpdateId)}` : timestamp]);
}

/** GET /users/{user_id_or_email}/presence's user: active, by ID or API email (never the real one). */
async function presenceTarget(request: ApiRequest, idOrEmail: string): Promise<User> {
  const db = request.services.storage.db;
  const trimmed = idOrEmail.trim();
  const found = /^[+-]?\d+$/.test(trimmed) ? await getUserById(db, request.realm.id, Number(trimmed)) : await getUserByApiEmail(db, request.realm.id, trimmed);
  // System bots live in no organization in Zulip: unknown here too.
  if (!found || !found.is_active || found.is_system_bot) throw noSuchUser();
  return found;
}

export const presenceRoutes = [
  defineRoute({
    method: "POST",
    path: "/users/me/presence",
    auth: "api",
    params: {
      status: param.string().required(),
      ping_only: param.bool().default(false),
      // Zulip records activity intervals for its analytics with it; Parley keeps none.
      new_user_input: param.bool().default(false),
      slim_presence: param.bool().default(false),
      last_update_id: param.int(),
      history_limit_days: param.int(),
    },
    handler: async (request, p) => {
      // Zulip's @human_users_only, checked first.
      if (request.user.is_bot) throw humansOnly();
      if (!(PRESENCE_STATUSES as readonly string[]).includes(p.status)) throw badRequest(`Invalid status: ${p.status}`);
      await reportPresence(request.services, request.realm, request.user, p.status as PresenceStatus);
      if (p.ping_only) return {};
      // Sending last_update_id means speaking the modern protocol: modern format.
      return presenceReply(request, { slim: p.slim_presence || p.last_update_id !== undefined, lastUpdateId: p.last_update_id, historyLimitDays: p.history_limit_days }, true);
    },
  }),
  defineRoute({
    method: "GET",
    path: "/realm/presence",
    auth: "api",
    params: {},
    handler: async (request) => {
      // The legacy format, and no presence_last_update_id: this endpoint predates both.
      return presenceReply(request, { slim: false }, false);
    },
  }),
  defineRoute({
    method: "GET",
    path: "/users/:user_id_or_email/presence",
    auth: "api",
    params: { user_id_or_email: param.string().required(), slim_presence: param.bool().default(false) },
    handler: async (request, { user_id_or_email, slim_presence }) => {
      const { services, realm, user } = request;
      const target = await presenceTarget(request, user_id_or_email);
      if (target.is_bot) throw badRequest("Presence is not supported for bot users.");
      const visible = await presenceVisibleTo(services.storage.db, parseRealmSettings(realm.settings), user);
      if (visible !== undefined && !visible.has(target.id)) throw insufficientPermission();
      const times = await presenceTimesOf(services.storage.db, target.id);
      if (times === undefined) throw badRequest(`No presence data for ${user_id_or_email}`);
      return { presence: slim_presence ? modernPresence(times, target.date_joined) : singleUserLegacyPresence(times, target.date_joined, services.now()) };
    },
  }),
];
