// The outgoing-webhook worker (Zulip's OutgoingWebhookWorker with do_rest_call).
// Every process runs one beside the HTTP server. It takes due jobs from the
// database queue (actions/outgoing-webhooks.ts) — at once when a send in this
// process queued one, and every second for jobs queued by other processes,
// put back for a retry, or left by a process that died mid-delivery — and
// POSTs each to the bot's services, a few at a time, never inside a
// transaction and never on a request's path: a slow or dead endpoint delays
// only its own bot's answer.
//
// Per request, as Zulip does: a timeout (config.outgoingWebhookTimeoutMs,
// Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS = 10) or a connection error is
// retried, immediately, up to MAX_REQUEST_RETRIES times, then the bot posts
// "Failure! Bot is unavailable" and tells its owner; any other non-2xx answer
// fails at once ("Failure! Third party responded with N" plus the owner's
// notice); a 2xx answer's JSON reply is posted back as the bot.
import {
  claimDueJobs,
  failWithMessage,
  finishJob,
  jobContext,
  notifyBotOwner,
  retryJob,
  sendResponseMessage,
  type ClaimedJob,
  type JobContext,
} from "../actions/outgoing-webhooks.ts";
import { genericRequestBody, replyFromBody, ReplyError, SLACK_INTERFACE, slackRequestBody } from "../domain/outgoing-webhooks.ts";
import { ApiError } from "../errors.ts";
import type { Services } from "../services.ts";
import { SERVICE_VERSION } from "../version.ts";

/** Deliveries one process runs at once. */
const CONCURRENCY = 4;
/** How often the queue is read for jobs this process was not told of. */
const POLL_MS = 1000;
/** The most of a reply read; a bigger one is refused (Zulip's bot replies are messages of at most 10,000 characters). */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface OutgoingWebhooks {
  /** A job was queued: look at the queue now rather than at the next poll. */
  wake(): void;
  /** Stops taking jobs and waits for the deliveries in progress. */
  stop(): Promise<void>;
}

type Log = (error: unknown, what: string) => void;

/** The outcome of one request to a service. */
type CallOutcome =
  | { kind: "response"; status: number; body: Uint8Array }
  | { kind: "timeout" }
  | { kind: "connection"; error: unknown }
  | { kind: "exception"; type: string; message: string };

export function startOutgoingWebhooks(services: Services, log: Log): OutgoingWebhooks {
  let stopped = false;
  let inFlight = 0;
  const running = new Set<Promise<void>>();
  let pumping = false;
  let pumpAgain = false;
  let timer: NodeJS.Timeout | undefined;
  const timeoutSeconds = Math.ceil(services.config.outgoingWebhookTimeoutMs / 1000);
  // Long enough for a bot with a few services that all time out; a job whose worker died is taken again after it.
  const leaseSeconds = 60 + 4 * timeoutSeconds;

  const pump = async (): Promise<void> => {
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        while (!stopped && inFlight < CONCURRENCY) {
          const claimed = await claimDueJobs(services, CONCURRENCY - inFlight, leaseSeconds);
          if (claimed.length === 0) break;
          for (const job of claimed) start(job);
        }
      } while (pumpAgain && !stopped);
    } catch (error) {
      log(error, "outgoing webhook queue read failed");
    } finally {
      pumping = false;
    }
  };

  const start = (claimed: ClaimedJob): void => {
    inFlight += 1;
    const delivery = deliver(services, claimed, log)
      .catch((error: unknown) => log(error, `outgoing webhook delivery of message ${claimed.job.message_id} to bot ${claimed.job.bot_id} failed`))
      .finally(() => {
        inFlight -= 1;
        running.delete(delivery);
        // A slot is free, and a retry may be due at once.
        if (!stopped) void pump();
      });
    running.add(delivery);
  };

  const tick = () => {
    void pump().finally(() => {
      // unref: the HTTP server, not this timer, keeps the process alive.
      if (!stopped) timer = setTimeout(tick, POLL_MS).unref();
    });
  };
  tick();

  return {
    wake: () => {
      if (!stopped) setImmediate(() => void pump());
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      while (running.size > 0 || pumping) await Promise.allSettled([...running, new Promise((resolve) => setTimeout(resolve, 10))]);
    },
  };
}

/** One job: every service of the bot gets the request; then the job is finished or put back for a retry. */
async function deliver(services: Services, claimed: ClaimedJob, log: Log): Promise<void> {
  const ctx = await jobContext(services, claimed.job);
  if (ctx === null) return finishJob(services, claimed);
  const retryMessages: string[] = [];
  for (const service of ctx.services) {
    const failure = await callService(services, ctx, service, log);
    if (failure !== null) retryMessages.push(failure);
  }
  if (retryMessages.length === 0) return finishJob(services, claimed);
  if (await retryJob(services, claimed)) return;
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

  const outcome = await post(service.base_url, headers, body, services.config.outgoingWebhookTimeoutMs);
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

/** POSTs `body`, reading the whole answer within `timeoutMs`. */
async function post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<CallOutcome> {
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
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(parsed, { method: "POST", headers, body, signal });
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (response.body) {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          await response.body.cancel().catch(() => {});
          return { kind: "exception", type: "ContentTooLarge", message: `The response is larger than ${MAX_RESPONSE_BYTES} bytes.` };
        }
        chunks.push(chunk);
      }
    }
    return { kind: "response", status: response.status, body: Buffer.concat(chunks) };
  } catch (error) {
    if (signal.aborted) return { kind: "timeout" };
    // fetch reports refused, reset and unresolvable connections as "fetch failed" with the cause.
    if (error instanceof TypeError) return { kind: "connection", error };
    const e = error as Error;
    return { kind: "exception", type: e.name || "Error", message: e.message };
  }
}
