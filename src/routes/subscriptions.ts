import type { Route } from "../http/route.ts";

export const subscriptionsRoutes: Route[] = [];
