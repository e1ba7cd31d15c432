import { registerQueue, type RegisterOptions } from "../actions/events.ts";
import { ApiError, badRequest } from "../errors.ts";
import { parseNarrow, type NarrowTerm } from "../domain/narrow.ts";
import { MAX_ITEMS_PER_REQUEST } from "../domain/limits.ts";
import { QUEUE_NARROW_IS_OPERANDS, QUEUE_NARROW_OPERATORS } from "../events/filter.ts";
import { CAPABILITY_NAMES, type CapabilityName } from "../events/notifier.ts";
import { QueueError, type OpenedQueue } from "../events/backend.ts";
import { check, param, type Validator } from "../http/params.ts";
import { DeferredJson, defineRoute } from "../http/route.ts";

function badQueue(error: unknown, queueId: string): never {
  if (error instanceof QueueError) {
    if (error.kind === "unknown") throw new ApiError(400, "BAD_EVENT_QUEUE_ID", error.message, { queue_id: queueId });
    throw badRequest(error.message);
  }
  throw error;
}

/** Zulip's narrow for queues: [operator, operand] pairs, or {operator, operand, negated} objects. */
const narrowTerms: Validator<NarrowTerm[]> = (value, name) =>
  parseNarrow(value, name).map((term) => {
    if (!(QUEUE_NARROW_OPERATORS as readonly string[]).includes(term.operator)) throw badRequest(`Invalid narrow operator: ${term.operator}`);
    if (term.operator === "is" && !(QUEUE_NARROW_IS_OPERANDS as readonly string[]).includes(String(term.operand))) {
      throw badRequest(`Invalid narrow operand: ${String(term.operand)}`);
    }
    return term;
  });

/** client_capabilities: known keys are booleans; unknown ones are ignored, as Zulip does. */
const capabilities: Validator<Record<CapabilityName, boolean>> = (value, name) => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw badRequest(`${name} is not a dict`);
  const record = value as Record<string, unknown>;
  const out = {} as Record<CapabilityName, boolean>;
  for (const capability of CAPABILITY_NAMES) {
    out[capability] = record[capability] === undefined ? false : check.bool(record[capability], `${name}["${capability}"]`);
  }
  return out;
};

const includeSubscribers: Validator<boolean | "partial"> = (value, name) => {
  if (value === "partial" || typeof value === "boolean") return value;
  throw badRequest(`Invalid ${name}`);
};

export const eventsRoutes = [
  defineRoute({
    method: "POST",
    path: "/register",
    auth: "api",
    params: {
      event_types: param.json(check.nullable(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST }))),
      fetch_event_types: param.json(check.nullable(check.list(check.string, { max: MAX_ITEMS_PER_REQUEST }))),
      narrow: param.json(narrowTerms).default([]),
      all_public_streams: param.bool(),
      client_capabilities: param.json(capabilities),
      apply_markdown: param.bool().default(false),
      client_gravatar: param.bool().default(true),
      slim_presence: param.bool().default(false),
      include_subscribers: param.jsonOrString(includeSubscribers).default(false),
      presence_history_limit_days: param.int(),
      queue_lifespan_secs: param.int().default(0),
    },
    handler: async (request, p) => {
      const options: RegisterOptions = {
        eventTypes: p.event_types ?? null,
        fetchEventTypes: p.fetch_event_types ?? p.event_types ?? null,
        narrow: p.narrow,
        allPublicStreams: p.all_public_streams,
        capabilities: p.client_capabilities ?? capabilities({}, "client_capabilities"),
        applyMarkdown: p.apply_markdown,
        clientGravatar: p.client_gravatar,
        slimPresence: p.slim_presence,
        presenceHistoryLimitDays: p.presence_history_limit_days,
        includeSubscribers: p.include_subscribers,
        lifespanSecs: p.queue_lifespan_secs,
      };
      return registerQueue(request.services, request.realm, request.user, options);
    },
  }),
  defineRoute({
    method: "GET",
    path: "/events",
    auth: "api",
    rateLimitBucket: "events",
    params: {
      queue_id: param.string(),
      last_event_id: param.int(),
      dont_block: param.bool().default(false),
    },
    handler: async (request, { queue_id, last_event_id, dont_block }) => {
      // Zulip reports these two as plain errors (its view declares them optional).
      if (queue_id === undefined) throw badRequest("Missing 'queue_id' argument");
      if (last_event_id === undefined) throw badRequest("Missing 'last_event_id' argument");
      const { queues } = request.services;
      let queue: OpenedQueue;
      try {
        const opening = queues.open(queue_id, request.user.id, last_event_id, dont_block);
        queue = opening instanceof Promise ? await opening : opening;
      } catch (error) {
        badQueue(error, queue_id);
      }
      const socket = request.http.raw.socket;
      const queueIdJson = JSON.stringify(queue_id);
      // The events are JSON text already (serialized once per event, not once
      // per queue): the reply is put together as text and written when the
      // queue has something, without a promise or a Fastify reply per poll.
      return new DeferredJson((send) => {
        let cancel: (() => void) | undefined;
        // A client that hangs up mid-poll frees the queue for its next poll.
        const hangUp = () => cancel?.();
        cancel = queues.wait(queue, dont_block, (eventsJson) => {
          if (cancel) socket.off("close", hangUp);
          send(`"events":${eventsJson},"queue_id":${queueIdJson}`, queues.closed);
        });
        if (cancel) socket.once("close", hangUp);
      });
    },
  }),
  defineRoute({
    method: "DELETE",
    path: "/events",
    auth: "api",
    rateLimitBucket: "events",
    params: { queue_id: param.string().required() },
    handler: async (request, { queue_id }) => {
      const { queues } = request.services;
      try {
        await queues.remove(queue_id, request.user.id);
      } catch (error) {
        badQueue(error, queue_id);
      }
    },
  }),
];
