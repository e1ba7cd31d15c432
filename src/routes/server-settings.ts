import { realmForRequest } from "../actions/auth.ts";
import { defineRoute } from "../http/route.ts";
import { serverSettings } from "../queries/server-settings.ts";

export const serverSettingsRoutes = [
  defineRoute({
    method: "GET",
    path: "/server_settings",
    auth: "none",
    params: {},
    handler: async ({ services, http }) => serverSettings(services, await realmForRequest(services), http.headers["user-agent"]),
  }),
];
