// Unsubscribe links of notification emails, as Zulip's
// /accounts/unsubscribe/<email_type>/<token>: opening the link turns that
// kind of email off without signing in and says so; POST does the same for
// mail clients' one-click unsubscribe (RFC 8058, the List-Unsubscribe-Post
// header). A bad link answers Zulip's error page, with status 200 as Zulip's.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { unsubscribe } from "../actions/email-unsubscribe.ts";
import { isUnsubscribeType, type UnsubscribeType } from "../domain/email-notifications.ts";
import { escapeHtml, page } from "../http/pages.ts";
import { limitByIp, type MethodTable } from "../http/route.ts";
import type { Services } from "../services.ts";

const PATH = "/accounts/unsubscribe/:type/:token";

const DESCRIPTIONS: Record<UnsubscribeType, string> = {
  missed_messages: "emails about direct messages and mentions you missed",
  followed_topics: "emails about new messages in topics you follow",
  digest: "digest emails",
};

type UnsubscribeRequest = FastifyRequest<{ Params: { type: string; token: string } }>;

export function emailUnsubscribeRoutes(app: FastifyInstance, services: Services, methods: MethodTable): void {
  methods.add(PATH, "GET");
  methods.add(PATH, "POST");
  const handle = async (request: UnsubscribeRequest, reply: FastifyReply) => {
    // Tokens are guessed by address like every unauthenticated call.
    await limitByIp(services, request, reply);
    const { type, token } = request.params;
    const done = isUnsubscribeType(type) ? await unsubscribe(services, type, token) : undefined;
    if (!done) {
      return page(
        reply,
        200,
        "Unknown email unsubscribe request",
        `<p class="error">This unsubscribe link is not valid. You can manage your email notifications in your personal settings after signing in.</p>`,
      );
    }
    return page(
      reply,
      200,
      "Email settings updated",
      `<p>You will no longer receive ${escapeHtml(DESCRIPTIONS[type as UnsubscribeType])} from ${escapeHtml(done.realmName)}.</p>
<p>You can turn them back on in your <a href="/#settings/notifications">notification settings</a>.</p>`,
    );
  };
  app.get<{ Params: { type: string; token: string } }>(PATH, handle);
  app.post<{ Params: { type: string; token: string } }>(PATH, handle);
}
