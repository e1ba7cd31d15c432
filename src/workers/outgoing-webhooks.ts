// The outgoing-webhook worker (Zulip's OutgoingWebhookWorker with do_rest_call),
// on the job queue: each delivery is a job queued in the send's transaction
// (actions/outgoing-webhooks.ts), claimed by one process in the cluster, and
// POSTed to the bot's services, never inside a transaction and never on a
// request's path.
//
// One delivery per bot at a time, across every process, in the order the
// messages were sent: a bot's jobs share a key, and the queue runs the jobs
// of a key one at a time, oldest first. So a slow or dead endpoint delays
// only its own bot's answers; other bots' jobs take the other slots.
//
// Per request, as Zulip does: a timeout (config.outgoingWebhookTimeoutMs,
// Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS = 10) or a connection error is
// retried, immediately, up to MAX_REQUEST_RETRIES times, then the bot posts
// "Failure! Bot is unavailable" and tells its owner; any other non-2xx answer
// fails at once ("Failure! Third party responded with N" plus the owner's
// notice); a 2xx answer's JSON reply is posted back as the bot.
//
// Requests go through the guarded request to other sites (outbound/): an
// internal address the operator has not allowed is refused at connect time,
// for the URL and for every redirect; that is not retried, and the bot says
// its URL is on a private or disallowed network.
import { failWithMessage, jobContext, notifyBotOwner, sendResponseMessage, type JobContext } from "../actions/outgoing-webhooks.ts";
import { DISALLOWED_NETWORK, genericRequestBody, replyFromBody, ReplyError, SLACK_INTERFACE, slackRequestBody } from "../domain/outgoing-webhooks.ts";
import { ApiError } from "../errors.ts";
import type { OutgoingWebhookJob } from "../jobs/names.ts";
import { RetryJob, type Worker } from "../jobs/runner.ts";
import { outboundSettings, openOutbound, OutboundError, readOutboundBody } from "../outbound/request.ts";
import type { Services } from "../services.ts";
import { SERVICE_VERSION } from "../version.ts";

/** Deliveries one process runs at once, each for a different bot: only as many bots all hanging at once fill them. */
const CONCURRENCY = 32;
/** The most of a reply read; a bigger one is refused (Zulip's bot replies are messages of at most 10,000 characters). */
const MAX_RESPONSE_BYTES = 1024 * 1024;

type Log = (error: unknown, what: string) => void;

/** The outcome of one request to a service. */
type CallOutcome =
  | { kind: "response"; status: number; body: Uint8Array }
  | { kind: "timeout" }
  /** The address is internal and the operator has not allowed it: not retried, as it will not change by itself. */
  | { kind: "refused"; message: string }
  | { kind: "connection"; error: unknown }
  | { kind: "exception"; type: string; message: string };

export function outgoingWebhookWorker(services: Services, log: Log): Worker<OutgoingWebhookJob> {
  const timeoutSeconds = Math.ceil(services.config.outgoingWebhookTimeoutMs / 1000);
  return {
    concurrency: CONCURRENCY,
    // Long enough for a bot with a few services that all time out; a job whose process died is taken again after it.
    leaseMs: (60 + 4 * timeoutSeconds) * 1000,
    // Zulip retries a timed-out or unreachable request at once.
    backoffMs: () => 0,
    run: (job, context) => deliver(services, job, context.lastAttempt, log),
  };
}

/** One job: every service of the bot gets the request; a timeout or connection error retries the job, or after the last attempt reports the bot unavailable. */
async function deliver(services: Services, job: OutgoingWebhookJob, lastAttempt: boolean, log: Log): Promise<void> {
  const ctx = await jobContext(services, job);
  if (ctx === null) return;
  const retryMessages: string[] = [];
  for (const service of ctx.services) {
    const failure = await callService(services, ctx, service, log);
    if (failure !== null) retryMessages.push(failure);
  }
  if (retryMessages.length === 0) return;
  if (!lastAttempt) throw new RetryJob(retryMessages.join(" "), 0);
  // Zulip's failure_processor once the retries are spent.
  log(null, `outgoing webhook: maximum retries exceeded for bot ${ctx.bot.email}, message ${ctx.message.id}`);
  await failWithMessage(services, ctx, "Bot is unavailable", log);
  for (const failureMessage of retryMessages) await notifyBotOwner(services, ctx, { failureMessage }, log);
}

/**
 * One request to one service and what follows from its answer (Zulip's
 * do_rest_call). Returns the failure message when the request should be
 * retried (timeout, connection error), else null.
 */
async function callService(services: Services, ctx: JobContext, service: JobContext["services"][number], log: Log): Promise<string | null> {
  const { message } = ctx;
  const headers: Record<string, string> = { "user-agent": `ZulipOutgoingWebhook/${SERVICE_VERSION}` };
  let body: string;
  if (service.interface === SLACK_INTERFACE) {
    if (message.type === "private") {
      await failWithMessage(services, ctx, "Slack outgoing webhooks don't support direct messages.", log);
      return null;
    }
    const realm = { id: ctx.realm.id, host: new URL(services.config.externalUrl).host };
    body = new URLSearchParams(slackRequestBody(realm, ctx.bot.id, service.token, ctx.trigger, message)).toString();
    headers["content-type"] = "application/x-www-form-urlencoded";
  } else {
    body = JSON.stringify(genericRequestBody(ctx.bot, service.token, ctx.trigger, message));
    headers["content-type"] = "application/json";
  }

  const outcome = await post(services, service.base_url, headers, body);
  const timeoutText = formatSeconds(services.config.outgoingWebhookTimeoutMs);
  switch (outcome.kind) {
    case "timeout":
      return `Request timed out after ${timeoutText} seconds.`;
    case "connection":
      return "A connection error occurred. Is my bot server down?";
    case "exception":
      log(outcome, `outgoing webhook request of bot ${ctx.bot.id} failed`);
      await failWithMessage(services, ctx, `An exception of type *${outcome.type}* occurred for message \`${message.content}\`! See the Zulip server logs for more information.`, log);
      await notifyBotOwner(services, ctx, { exception: { type: outcome.type, message: outcome.message } }, log);
      return null;
    case "refused":
      log(outcome, `outgoing webhook of bot ${ctx.bot.id} refused`);
      await failWithMessage(services, ctx, DISALLOWED_NETWORK, log);
      await notifyBotOwner(services, ctx, { failureMessage: DISALLOWED_NETWORK }, log);
      return null;
    case "response":
      break;
  }
  if (outcome.status < 200 || outcome.status > 299) {
    await failWithMessage(services, ctx, `Third party responded with ${outcome.status}`, log);
    await notifyBotOwner(services, ctx, { statusCode: outcome.status, responseContent: { kind: "bytes", value: outcome.body } }, log);
    return null;
  }
  const text = new TextDecoder().decode(outcome.body);
  try {
    const reply = replyFromBody(text, service.interface);
    if (reply !== null) await sendResponseMessage(services, ctx, reply);
  } catch (error) {
    // Zulip's JsonableError from reading the reply or from sending it as a message.
    if (!(error instanceof ReplyError) && !(error instanceof ApiError)) throw error;
    await failWithMessage(services, ctx, error.message, log);
    await notifyBotOwner(
      services,
      ctx,
      {
        failureMessage: `The outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> ${error.message}`,
        responseContent: { kind: "text", value: text },
      },
      log,
    );
  }
  return null;
}

/** "10" for 10 000 ms, "0.5" for 500 ms: the timeout as Zulip's message writes it. */
function formatSeconds(ms: number): string {
  return String(ms / 1000);
}

/**
 * POSTs `body` through the guarded request (outbound/request.ts): the
 * address checked at connect time against the operator's rule for internal
 * addresses, redirects followed as Zulip's requests session follows them
 * (each hop checked again), and the whole answer read within the time limit.
 */
async function post(services: Services, url: string, headers: Record<string, string>, body: string): Promise<CallOutcome> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The names Python's requests gives these errors.
    return /^[a-z][a-z0-9+.-]*:/i.test(url)
      ? { kind: "exception", type: "InvalidURL", message: `Invalid URL '${url}'` }
      : { kind: "exception", type: "MissingSchema", message: `Invalid URL '${url}': No scheme supplied. Perhaps you meant https://${url}?` };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return { kind: "exception", type: "InvalidSchema", message: `No connection adapters were found for '${url}'` };
  }
  try {
    const response = await openOutbound(parsed.href, {
      method: "POST",
      headers,
      body,
      followRedirects: true,
      allowUrlCredentials: true,
      ...outboundSettings(services.config),
      timeoutMs: services.config.outgoingWebhookTimeoutMs,
    });
    const bytes = await readOutboundBody(response, MAX_RESPONSE_BYTES, "fail");
    return { kind: "response", status: response.statusCode ?? 0, body: bytes };
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
    switch (error.reason) {
      case "refused":
        return { kind: "refused", message: error.message };
      case "timeout":
        return { kind: "timeout" };
      case "connection":
        return { kind: "connection", error };
      case "too_large":
        return { kind: "exception", type: "ContentTooLarge", message: `The response is larger than ${MAX_RESPONSE_BYTES} bytes.` };
      case "bad_url":
        return { kind: "exception", type: "InvalidURL", message: `A redirect to a URL that is not http(s): ${error.message}` };
      case "bad_answer":
        return { kind: "exception", type: error.message === "too many redirects" ? "TooManyRedirects" : "InvalidURL", message: error.message };
    }
  }
}
