// Invitations: POST /invites, POST /invites/multiuse, GET /invites,
// DELETE /invites/{invite_id}, DELETE /invites/multiuse/{invite_id},
// POST /invites/{invite_id}/resend (as Zulip), and signing up with an
// invitation link: GET/POST /invites/join/{key} (JSON, no authentication)
// and the page the link itself opens, GET/POST /join/{key}/ (a minimal HTML
// form over the same actions).
import type { FastifyInstance, FastifyReply } from "fastify";
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
import { defineRoute, limitByIp, type MethodTable } from "../http/route.ts";
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

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch]!);
}

function page(reply: FastifyReply, status: number, title: string, body: string): FastifyReply {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00}</style>
</head><body><h1>${escapeHtml(title)}</h1>
${body}
</body></html>
`;
  return reply.status(status).header("content-type", "text/html; charset=utf-8").header("cache-control", "no-store").send(html);
}

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

/** GET /join/{key}/: the sign-up form; POST: signs up and says how to log in. */
export function joinPageRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  const path = "/join/:key";
  methods.add(path, "GET");
  methods.add(path, "POST");
  // Invitation keys are guessed by address, like every unauthenticated call.
  app.get<{ Params: { key: string } }>(path, async (request, reply) => {
    limitByIp(services, request, reply);
    return formPage(services, reply, request.params.key);
  });
  app.post<{ Params: { key: string } }>(path, async (request, reply) => {
    limitByIp(services, request, reply);
    const body = (request.body ?? {}) as Record<string, unknown>;
    const field = (name: string) => (typeof body[name] === "string" ? (body[name] as string) : undefined);
    try {
      const created = await signUpWithInvitation(services, request.params.key, {
        fullName: field("full_name") ?? "",
        password: field("password") ?? "",
        email: field("email"),
      });
      const url = services.config.externalUrl;
      return page(
        reply,
        200,
        "Welcome!",
        `<p>Your account is ready. Log in at <a href="${escapeHtml(url)}">${escapeHtml(url)}</a> with any Zulip client, using your email address and password.</p>
<p>Your account's email address for the API: <code>${escapeHtml(created.email)}</code></p>`,
      );
    } catch (e) {
      if (e instanceof ApiError) return formPage(services, reply, request.params.key, e.message);
      throw e;
    }
  });
}
