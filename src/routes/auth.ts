import { devFetchApiKey, fetchApiKey, realmForRequest } from "../actions/auth.ts";
import { isAdmin } from "../domain/roles.ts";
import { badRequest } from "../errors.ts";
import { param } from "../http/params.ts";
import { defineRoute, type PublicRequest } from "../http/route.ts";
import { listDevLoginUsers } from "../queries/users.ts";

function requireDevMode({ services }: PublicRequest): void {
  if (!services.config.devMode) throw badRequest("DevAuthBackend not enabled.");
}

export const authRoutes = [
  defineRoute({
    method: "POST",
    path: "/fetch_api_key",
    auth: "none",
    // An API key never reaches a page: browsers sign in at /json/login instead.
    surface: "api",
    params: { username: param.string().required(), password: param.string().required() },
    handler: async ({ services }, { username, password }) => ({ ...(await fetchApiKey(services, username, password)) }),
  }),
  defineRoute({
    method: "POST",
    path: "/dev_fetch_api_key",
    auth: "none",
    surface: "api",
    params: { username: param.string().required() },
    handler: async (request, { username }) => {
      requireDevMode(request);
      return { ...(await devFetchApiKey(request.services, username)) };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/dev_list_users",
    auth: "none",
    params: {},
    handler: async (request) => {
      requireDevMode(request);
      const { services } = request;
      const realm = await realmForRequest(services);
      const users = await listDevLoginUsers(services.storage.db, realm.id);
      const entry = (email: string) => ({ email, realm_url: services.config.externalUrl, realm_uri: services.config.externalUrl });
      return {
        direct_admins: users.filter((u) => isAdmin(u.role)).map((u) => entry(u.delivery_email)),
        direct_users: users.filter((u) => !isAdmin(u.role)).map((u) => entry(u.delivery_email)),
      };
    },
  }),
];
