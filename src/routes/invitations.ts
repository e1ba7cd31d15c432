// Invitations: POST /invites, POST /invites/multiuse, GET /invites,
// DELETE /invites/{invite_id}, DELETE /invites/multiuse/{invite_id},
// POST /invites/{invite_id}/resend (as Zulip), and signing up with an
// invitation link: GET/POST /invites/join/{key} (JSON, no authentication)
// and the page the link itself opens, GET/POST /join/{key}/ (a minimal HTML
// form over the same actions, which signs the new user's browser in).
import type { FastifyInstance, FastifyReply } from "fastify";
import { createSession } from "../actions/sessions.ts";
import {
  createMultiuseInvite,
  describeInvitation,
  inviteUsers,
  listInvites,
  resendInvitation,
  revokeInvitation,
  signUpWithInvitation,
  type InvitationOptions,
} from "../actions/invitations.ts";
import { INVITE_AS_VALUES, MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH, parseInviteeEmails } from "../domain/invitations.ts";
import { Role } from "../domain/roles.ts";
import { ApiError, badRequest } from "../errors.ts";
import { check, param } from "../http/params.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { escapeHtml, formField, page } from "../http/pages.ts";
import { defineRoute, limitByIp, type MethodTable } from "../http/route.ts";
import { refuseCrossSiteSignIn, setSessionCookie } from "../http/session-cookie.ts";
import type { Services } from "../services.ts";

/** At most 100 years: longer is "never", which is null. */
const MAX_EXPIRY_MINUTES = 100 * 365 * 24 * 60;

const optionParams = {
  invite_expires_in_minutes: param.json(check.nullable(check.int)),
  invite_as: param.int().default(Role.MEMBER),
  group_ids: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).default([]),
  include_realm_default_subscriptions: param.bool().default(false),
  welcome_message_custom_text: param.string(),
};

interface OptionValues {
  invite_expires_in_minutes: number | null | undefined;
  invite_as: number;
  group_ids: number[];
  include_realm_default_subscriptions: boolean;
  welcome_message_custom_text: string | undefined;
}

/** The typed_endpoint checks of the shared parameters (before any permission check, as in Zulip). */
function invitationOptions(services: Services, p: OptionValues, streamIds: number[]): InvitationOptions {
  if (!INVITE_AS_VALUES.includes(p.invite_as)) throw badRequest("Invalid invite_as");
  const minutes = p.invite_expires_in_minutes === undefined ? services.config.invitationLinkValidityMinutes : p.invite_expires_in_minutes;
  if (minutes !== null && (minutes < 0 || minutes > MAX_EXPIRY_MINUTES)) throw badRequest("Invalid invite_expires_in_minutes");
  const text = p.welcome_message_custom_text;
  if (text !== undefined && [...text].length > MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH) {
    throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_CUSTOM_TEXT_LENGTH} characters)`);
  }
  return {
    expiresInMinutes: minutes,
    invitedAs: p.invite_as,
    channelIds: streamIds,
    groupIds: p.group_ids,
    includeRealmDefaultSubscriptions: p.include_realm_default_subscriptions,
    welcomeMessageCustomText: text ?? null,
  };
}

export const invitationRoutes = [
  defineRoute({
    method: "POST",
    path: "/invites",
    auth: "api",
    params: {
      invitee_emails: param.string().required(),
      stream_ids: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).required(),
      notify_referrer_on_join: param.bool().default(true),
      ...optionParams,
    },
    handler: async ({ services, realm, user }, p) => {
      const options = invitationOptions(services, p, p.stream_ids);
      const emails = p.invitee_emails === "" ? [] : parseInviteeEmails(p.invitee_emails);
      await inviteUsers(services, realm, user, { ...options, emails, notifyReferrerOnJoin: p.notify_referrer_on_join });
    },
  }),

  defineRoute({
    method: "POST",
    path: "/invites/multiuse",
    auth: "api",
    params: { stream_ids: param.json(check.list(check.int, { max: MAX_ITEMS_PER_REQUEST })).default([]), ...optionParams },
    handler: async ({ services, realm, user }, p) => ({
      invite_link: await createMultiuseInvite(services, realm, user, invitationOptions(services, p, p.stream_ids)),
    }),
  }),

  defineRoute({
    method: "GET",
    path: "/invites",
    auth: "api",
    params: {},
    handler: async ({ services, user }) => ({ invites: await listInvites(services, user) }),
  }),

  defineRoute({
    method: "DELETE",
    path: "/invites/:invite_id",
    auth: "api",
    params: { invite_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await revokeInvitation(services, realm, user, p.invite_id, "email");
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/invites/multiuse/:invite_id",
    auth: "api",
    params: { invite_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await revokeInvitation(services, realm, user, p.invite_id, "multiuse");
    },
  }),

  defineRoute({
    method: "POST",
    path: "/invites/:invite_id/resend",
    auth: "api",
    params: { invite_id: param.int().required() },
    handler: async ({ services, realm, user }, p) => {
      await resendInvitation(services, realm, user, p.invite_id);
    },
  }),

  defineRoute({
    method: "GET",
    path: "/invites/join/:key",
    auth: "none",
    params: { key: param.string().required() },
    handler: async ({ services }, p) => ({ invitation: await describeInvitation(services, p.key) }),
  }),

  defineRoute({
    method: "POST",
    path: "/invites/join/:key",
    auth: "none",
    // Its reply holds the new account's API key, which never reaches a page: browsers sign up at /join/{key}/.
    surface: "api",
    params: {
      key: param.string().required(),
      full_name: param.string().required(),
      password: param.string().required(),
      email: param.string(),
    },
    handler: async ({ services }, p) => ({ ...(await signUpWithInvitation(services, p.key, { fullName: p.full_name, password: p.password, email: p.email })) }),
  }),
];

// ---------------------------------------------------------------------------
// The page an invitation link opens

async function formPage(services: Services, reply: FastifyReply, key: string, error?: string): Promise<FastifyReply> {
  let invitation;
  try {
    invitation = await describeInvitation(services, key);
  } catch (e) {
    if (e instanceof ApiError) return page(reply, e.status, "Invitation not valid", `<p class="error">${escapeHtml(e.message)}</p>`);
    throw e;
  }
  const emailField = invitation.is_multiuse
    ? `<label for="email">Email</label><input id="email" name="email" type="email" required autocomplete="email">`
    : `<p>Email: <strong>${escapeHtml(invitation.email ?? "")}</strong></p>`;
  return page(
    reply,
    error ? 400 : 200,
    `Join ${invitation.realm_name}`,
    `<p>${escapeHtml(invitation.invited_by)} invited you to join ${escapeHtml(invitation.realm_name)}.</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<form method="post">
${emailField}
<label for="full_name">Full name</label><input id="full_name" name="full_name" required autocomplete="name">
<label for="password">Password</label><input id="password" name="password" type="password" required minlength="6" autocomplete="new-password">
<button type="submit">Sign up</button>
</form>`,
  );
}

/** GET /join/{key}/: the sign-up form; POST: signs up, signs the browser in and sends it to the web app at /. */
export function joinPageRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const path = "/join/:key";
  methods.add(path, "GET");
  methods.add(path, "POST");
  // Invitation keys are guessed by address, like every unauthenticated call.
  app.get<{ Params: { key: string } }>(path, async (request, reply) => {
    await limitByIp(services, request, reply);
    return formPage(services, reply, request.params.key);
  });
  app.post<{ Params: { key: string } }>(path, async (request, reply) => {
    await limitByIp(services, request, reply);
    refuseCrossSiteSignIn(request);
    const field = (name: string) => formField(request.body, name);
    try {
      const created = await signUpWithInvitation(services, request.params.key, {
        fullName: field("full_name") ?? "",
        password: field("password") ?? "",
        email: field("email"),
      });
      const session = await createSession(services, created.user_id);
      setSessionCookie(services.config, request, reply, session);
      // 303: the browser GETs the app rather than posting the form again.
      return reply.redirect("/", 303);
    } catch (e) {
      if (e instanceof ApiError) return formPage(services, reply, request.params.key, e.message);
      throw e;
    }
  });
}
