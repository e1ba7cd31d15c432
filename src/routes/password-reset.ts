// Password reset pages (issue 20), server-rendered like the invitation page:
//   GET/POST /accounts/password/reset/          ask for a link by email
//   GET/POST /accounts/password/reset/{token}/  choose a new password
// The second signs the browser in and sends it to the web app at /.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { requestPasswordReset, resetPassword, userForResetToken } from "../actions/password-reset.ts";
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../domain/users.ts";
import { escapeHtml, formField, page } from "../http/pages.ts";
import { limitByIp, type MethodTable } from "../http/route.ts";
import { refuseCrossSiteSignIn, setSessionCookie } from "../http/session-cookie.ts";
import type { Services } from "../services.ts";

const REQUEST_PATH = "/accounts/password/reset";
const TOKEN_PATH = "/accounts/password/reset/:token";

function requestForm(reply: FastifyReply, status = 200, error?: string): FastifyReply {
  return page(
    reply,
    status,
    "Reset your password",
    `<p>Enter your email address, and we will email you a link to choose a new password.</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<form method="post">
<label for="email">Email</label><input id="email" name="email" type="email" required autocomplete="email">
<button type="submit">Send the link</button>
</form>`,
  );
}

function invalidLink(reply: FastifyReply): FastifyReply {
  return page(
    reply,
    404,
    "Link not valid",
    `<p class="error">This password reset link has expired, has already been used, or is not valid.</p>
<p><a href="${REQUEST_PATH}/">Ask for a new link</a></p>`,
  );
}

function newPasswordForm(reply: FastifyReply, email: string, status = 200, error?: string): FastifyReply {
  return page(
    reply,
    status,
    "Choose a new password",
    `<p>New password for <strong>${escapeHtml(email)}</strong>.</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<form method="post">
<label for="new_password">New password</label><input id="new_password" name="new_password" type="password" required minlength="${MIN_PASSWORD_LENGTH}" maxlength="${MAX_PASSWORD_LENGTH}" autocomplete="new-password">
<label for="new_password_confirm">Confirm the new password</label><input id="new_password_confirm" name="new_password_confirm" type="password" required autocomplete="new-password">
<button type="submit">Set the password</button>
</form>`,
  );
}

export function passwordResetPageRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  for (const path of [REQUEST_PATH, TOKEN_PATH]) {
    methods.add(path, "GET");
    methods.add(path, "POST");
  }
  // Every page counts against the address, like every unauthenticated call (reset tokens are guessed by address too).
  app.get(REQUEST_PATH, async (request, reply) => {
    await limitByIp(services, request, reply);
    return requestForm(reply);
  });
  app.post(REQUEST_PATH, async (request, reply) => {
    await limitByIp(services, request, reply);
    const email = formField(request.body, "email")?.trim() ?? "";
    if (email === "") return requestForm(reply, 400, "Please enter your email address.");
    await requestPasswordReset(services, email, request.log);
    // The same page whether or not the address has an account.
    return page(
      reply,
      200,
      "Check your email",
      `<p>If <strong>${escapeHtml(email)}</strong> is the email address of an account here, we have sent it a link to choose a new password. The link works for 24 hours.</p>`,
    );
  });

  app.get<{ Params: { token: string } }>(TOKEN_PATH, async (request, reply) => {
    await limitByIp(services, request, reply);
    // Looking does not use the link up (mail scanners open links).
    const user = await userForResetToken(services, request.params.token);
    return user ? newPasswordForm(reply, user.delivery_email) : invalidLink(reply);
  });
  app.post<{ Params: { token: string } }>(TOKEN_PATH, async (request: FastifyRequest<{ Params: { token: string } }>, reply) => {
    await limitByIp(services, request, reply);
    refuseCrossSiteSignIn(request);
    const { token } = request.params;
    const password = formField(request.body, "new_password") ?? "";
    const result = await resetPassword(services, token, password, formField(request.body, "new_password_confirm") ?? "");
    if (result.ok) {
      setSessionCookie(services.config, request, reply, result.session);
      return reply.redirect("/", 303);
    }
    if ("invalidLink" in result) return invalidLink(reply);
    const user = await userForResetToken(services, token);
    return user ? newPasswordForm(reply, user.delivery_email, 400, result.error) : invalidLink(reply);
  });
}
