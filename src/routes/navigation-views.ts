// Navigation views: GET/POST /navigation_views, PATCH/DELETE
// /navigation_views/{fragment}. The fragment is the rest of the path, slashes
// included (clients send e.g. /navigation_views/narrow/is/alerted), and is
// used as given. Every user, guests and bots included, has their own views.
import { addNavigationView, removeNavigationView, updateNavigationView } from "../actions/navigation-views.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { navigationViewsOf } from "../queries/navigation-views.ts";

export const navigationViewsRoutes = [
  defineRoute({
    method: "GET",
    path: "/navigation_views",
    auth: "api",
    params: {},
    handler: async ({ services, user }) => ({ navigation_views: await navigationViewsOf(services.storage.db, user.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/navigation_views",
    auth: "api",
    params: {
      fragment: param.nonBlank().required(),
      is_pinned: param.bool().required(),
      name: param.nonBlank(),
    },
    handler: async ({ services, realm, user }, p) => {
      await addNavigationView(services, realm, user, { fragment: p.fragment, isPinned: p.is_pinned, name: p.name });
    },
  }),

  defineRoute({
    method: "PATCH",
    path: "/navigation_views/*",
    auth: "api",
    // "*" is the fragment: the rest of the path, URL-decoded.
    params: { "*": param.string().required(), is_pinned: param.bool(), name: param.nonBlank() },
    handler: async ({ services, realm, user }, p) => {
      await updateNavigationView(services, realm, user, p["*"], { isPinned: p.is_pinned, name: p.name });
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/navigation_views/*",
    auth: "api",
    params: { "*": param.string().required() },
    handler: async ({ services, realm, user }, p) => {
      await removeNavigationView(services, realm, user, p["*"]);
    },
  }),
];
