// POST /register: a new event queue and the state it starts from.
import { badRequest } from "../errors.ts";
import { isGuest } from "../domain/roles.ts";
import type { NarrowTerm } from "../domain/narrow.ts";
import type { CapabilityName } from "../events/notifier.ts";
import { initialState } from "../queries/register.ts";
import type { Services } from "../services.ts";
import { shareRealmLock } from "../storage/database.ts";
import type { Realm, User } from "../storage/schema.ts";
import { SERVICE_FEATURE_LEVEL, SERVICE_MERGE_BASE, SERVICE_VERSION } from "../version.ts";
import { actorFor } from "./actor.ts";

export interface RegisterOptions {
  eventTypes: string[] | null;
  fetchEventTypes: string[] | null;
  narrow: NarrowTerm[];
  /** Absent: the user's default (a bot's default_all_public_streams; false for people). */
  allPublicStreams?: boolean | undefined;
  capabilities: Record<CapabilityName, boolean>;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  slimPresence: boolean;
  presenceHistoryLimitDays?: number | undefined;
  includeSubscribers: boolean | "partial";
  lifespanSecs: number;
}

/**
 * Creates the queue, then reads the state while holding the organization's
 * lock in shared mode: no change can commit in between, and every change that
 * commits afterwards reaches the queue. (A change that committed just before
 * may reach the queue too; its events are idempotent for clients.)
 */
export async function registerQueue(services: Services, realm: Realm, user: User, options: RegisterOptions): Promise<Record<string, unknown>> {
  // Guests cannot read every public channel, so they cannot ask for all of their messages.
  if (options.allPublicStreams && isGuest(user.role)) throw badRequest("User not authorized for this query");
  // A bot's defaults (Zulip's _default_all_public_streams and _default_narrow):
  // all public channels when not asked otherwise, and its default channel as
  // the narrow when none is given.
  const allPublicStreams = options.allPublicStreams ?? user.default_all_public_streams;
  const narrow =
    options.narrow.length === 0 && user.default_events_register_stream_id !== null
      ? [{ operator: "channel", operand: user.default_events_register_stream_id, negated: false }]
      : options.narrow;
  const fetchTypes = options.fetchEventTypes ?? options.eventTypes;
  const wanted = fetchTypes ? new Set(fetchTypes) : null;
  return services.storage.db.transaction().execute(async (trx) => {
    await shareRealmLock(trx, services.storage.dialect, realm.id);
    const current = await trx.selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
    const queue = await services.queues.create({
      realmId: realm.id,
      userId: user.id,
      filter: {
        eventTypes: options.eventTypes ? new Set(options.eventTypes) : null,
        narrow,
        allPublicStreams,
        applyMarkdown: options.applyMarkdown,
        capabilities: options.capabilities,
        slimPresence: options.slimPresence,
      },
      lifespanMs: options.lifespanSecs * 1000,
    });
    try {
      const state = await initialState(trx, services, realm, current, await actorFor(trx, current), {
        wants: (type) => wanted === null || wanted.has(type),
        wantsAll: wanted === null,
        capabilities: options.capabilities,
        includeSubscribers: options.includeSubscribers,
        slimPresence: options.slimPresence || options.capabilities.simplified_presence_events,
        presenceHistoryLimitDays: options.presenceHistoryLimitDays,
      });
      return {
        queue_id: queue.id,
        last_event_id: -1,
        zulip_version: SERVICE_VERSION,
        zulip_feature_level: SERVICE_FEATURE_LEVEL,
        zulip_merge_base: SERVICE_MERGE_BASE,
        service_feature_level: SERVICE_FEATURE_LEVEL,
        ...state,
      };
    } catch (error) {
      await services.queues.remove(queue.id, user.id);
      throw error;
    }
  });
}
