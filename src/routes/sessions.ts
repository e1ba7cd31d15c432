// Browser sign-in (issue 20), served only under /json:
// POST /json/login (username and password, as POST /api/v1/fetch_api_key, with
// its rules, errors and rate limits; answers with a session cookie instead of
// the API key), GET /json/session (who the cookie signs in, and the CSRF
// token) and POST /json/logout.
import { fetchApiKey } from "../actions/auth.ts";
import { createSession, endSession, hashToken } from "../actions/sessions.ts";
import { param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";
import { clearSessionCookie, refuseCrossSiteSignIn, sessionToken, setSessionCookie } from "../http/session-cookie.ts";

export const sessionRoutes = [
  defineRoute({
    method: "POST",
    path: "/login",
    auth: "none",
    surface: "json",
    params: { username: param.string().required(), password: param.string().required() },
    handler: async ({ services, http, reply }, { username, password }) => {
      refuseCrossSiteSignIn(http);
      const grant = await fetchApiKey(services, username, password);
      // A browser signing in again (perhaps as someone else) leaves its old session behind: end it.
      const previous = sessionToken(http);
      if (previous !== undefined) await endSession(services, hashToken(previous));
      const session = await createSession(services, grant.user_id);
      setSessionCookie(services.config, http, reply, session);
      return { user_id: grant.user_id, email: grant.email, csrf_token: session.csrfToken };
    },
  }),
  defineRoute({
    method: "GET",
    path: "/session",
    auth: "api",
    surface: "json",
    params: {},
    handler: async ({ user, session }) => ({
      user_id: user.id,
      email: user.delivery_email,
      full_name: user.full_name,
      csrf_token: session!.csrfToken,
    }),
  }),
  defineRoute({
    method: "POST",
    path: "/logout",
    auth: "api",
    surface: "json",
    params: {},
    handler: async ({ services, http, reply, session }) => {
      await endSession(services, session!.tokenHash);
      clearSessionCookie(services.config, http, reply);
    },
  }),
];
