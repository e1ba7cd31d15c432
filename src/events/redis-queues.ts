// Event queues in Redis, shared by every Parley process (REDIS_URL): any
// process serves GET /events for any queue, a notify() in any process reaches
// every matching queue, and a queue outlives the process that registered it.
// The layout, the wake-ups and the garbage collection are described in
// docs/scale-out.md ("Events in Redis"). Behaviour for clients is that of the
// memory backend (queues.ts); test/event-queues-backends.test.ts runs one set
// of cases against both.
import crypto from "node:crypto";
import type { Redis } from "../redis.ts";
import { QueueError, type Answer, type EventQueueBackend, type NewQueue, type OpenedQueue, type QueueTimings } from "./backend.ts";
import { acceptsEvent, acceptsMessage, messageForms, type MessageForm, type QueueFilter } from "./filter.ts";
import { meetsCapabilities, type Notification, type Notifier } from "./notifier.ts";
import { idTemplate, messageEventFlags, messageEventHead } from "./serialized.ts";
import type { NarrowTerm } from "../domain/narrow.ts";

/** A queue's hash fields: u user, r realm, f filter (JSON), l lifespan ms, n next event ID, p newest pruned ID, t last polled (ms), s poll counter, w the waiting poll's number. */
const QUEUE_FIELDS = ["u", "r", "f"] as const;

/**
 * GET /events, first step, atomically: the caller's queue, acknowledged
 * events trimmed, the events held read, the poll numbered and (when it will
 * wait) marked as waiting, the expiry pushed back. A poll that was waiting
 * on the queue (in any process) is told to end: a newer one replaces it.
 */
const OPEN_SCRIPT = `
local p, q = ARGV[1], ARGV[2]
local key = p .. 'q:' .. q
local skey = key .. ':e'
local h = redis.call('HMGET', key, 'u', 'p', 'n', 'l', 'w')
if not h[1] or h[1] ~= ARGV[3] then return {'unknown'} end
local last = tonumber(ARGV[4])
local pruned = tonumber(h[2])
local nextId = tonumber(h[3])
if last < pruned then return {'old'} end
if last > pruned and pruned + 1 <= nextId - 1 then
  local newest = math.min(last, nextId - 1)
  redis.call('XTRIM', skey, 'MINID', (newest + 1) .. '-0')
  redis.call('HSET', key, 'p', newest)
  pruned = newest
end
if last ~= pruned then return {'notin'} end
local seq = redis.call('HINCRBY', key, 's', 1)
local entries = redis.call('XRANGE', skey, '-', '+')
local now = tonumber(ARGV[5])
local blocking = #entries == 0 and ARGV[6] == '0'
local wait = 0
if blocking then
  redis.call('HSET', key, 'w', seq, 't', now)
  wait = 2 * tonumber(ARGV[7])
else
  redis.call('HSET', key, 't', now)
  redis.call('HDEL', key, 'w')
end
redis.call('ZADD', p .. 'expiry', now + wait + tonumber(h[4]), q)
if h[5] then redis.call('PUBLISH', p .. 'wake', 'r ' .. q .. ' ' .. seq) end
local out = {'ok', seq}
for _, e in ipairs(entries) do out[#out + 1] = e[2][2] end
return out
`;

/**
 * A waiting poll's read: mode 0 after a wake-up, 1 at its heartbeat (which
 * is appended first), 2 when its client hung up (nothing read). A poll that
 * ends marks the queue polled now and no longer waiting.
 */
const READ_SCRIPT = `
local p, q = ARGV[1], ARGV[2]
local key = p .. 'q:' .. q
local skey = key .. ':e'
local h = redis.call('HMGET', key, 'l', 'w')
if not h[1] then return {'gone'} end
if h[2] ~= ARGV[3] then return {'replaced'} end
local mode = ARGV[5]
if mode == '1' then
  local id = redis.call('HINCRBY', key, 'n', 1) - 1
  redis.call('XADD', skey, id .. '-1', 'e', '{"type":"heartbeat","id":' .. id .. '}')
end
local out = {'ok'}
if mode ~= '2' then
  local entries = redis.call('XRANGE', skey, '-', '+')
  if #entries == 0 then return out end
  for _, e in ipairs(entries) do out[#out + 1] = e[2][2] end
end
local now = tonumber(ARGV[4])
redis.call('HDEL', key, 'w')
redis.call('HSET', key, 't', now)
redis.call('ZADD', p .. 'expiry', now + tonumber(h[1]), q)
return out
`;

/**
 * A fan-out (one or several notifications), atomically and in order: ARGV
 * holds the event texts once each (head, tail), then per queue reached its
 * ID, the text's index and its own part (a message's flags). Each existing
 * queue gets the next ID and the event; the processes are told which
 * queues have news in one message.
 */
const FANOUT_SCRIPT = `
local p = ARGV[1]
local nt = tonumber(ARGV[2])
local woken = {}
local seen = {}
for i = 3 + 2 * nt, #ARGV, 3 do
  local q = ARGV[i]
  local key = p .. 'q:' .. q
  if redis.call('EXISTS', key) == 1 then
    local k = tonumber(ARGV[i + 1])
    local id = redis.call('HINCRBY', key, 'n', 1) - 1
    redis.call('XADD', key .. ':e', id .. '-1', 'e', ARGV[3 + 2 * k] .. ARGV[i + 2] .. id .. ARGV[4 + 2 * k])
    if not seen[q] then
      seen[q] = true
      woken[#woken + 1] = q
    end
  end
end
if #woken > 0 then redis.call('PUBLISH', p .. 'wake', 'w ' .. table.concat(woken, ' ')) end
return #woken
`;

/** Removes one queue (DELETE /events) if it is the user's; waiting polls are told. */
const DELETE_SCRIPT = `
local p, q = ARGV[1], ARGV[2]
local key = p .. 'q:' .. q
local h = redis.call('HMGET', key, 'u', 'r')
if not h[1] or h[1] ~= ARGV[3] then return 0 end
redis.call('SREM', p .. 'u:' .. h[1], q)
redis.call('SREM', p .. 'pub:' .. h[2], q)
redis.call('ZREM', p .. 'expiry', q)
redis.call('DEL', key, key .. ':e')
redis.call('PUBLISH', p .. 'wake', 'd ' .. q)
return 1
`;

/**
 * Garbage collection: the expired queues (at most ARGV[3]), each taken off
 * the expiry set and removed inside this one script, so that of several
 * processes sweeping at once exactly one removes each queue.
 */
const SWEEP_SCRIPT = `
local p = ARGV[1]
local expired = redis.call('ZRANGEBYSCORE', p .. 'expiry', '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
for _, q in ipairs(expired) do
  redis.call('ZREM', p .. 'expiry', q)
  local key = p .. 'q:' .. q
  local h = redis.call('HMGET', key, 'u', 'r')
  if h[1] then
    redis.call('SREM', p .. 'u:' .. h[1], q)
    redis.call('SREM', p .. 'pub:' .. h[2], q)
  end
  redis.call('DEL', key, key .. ':e')
end
return expired
`;

/** Whether one of a user's queues is being polled or was within ARGV[4] ms. */
const RECENTLY_POLLED_SCRIPT = `
local p = ARGV[1]
local now, window = tonumber(ARGV[3]), tonumber(ARGV[4])
for _, q in ipairs(redis.call('SMEMBERS', p .. 'u:' .. ARGV[2])) do
  local h = redis.call('HMGET', p .. 'q:' .. q, 't', 'w')
  if h[1] then
    local age = now - tonumber(h[1])
    if age < window or (h[2] and age < window + 2 * tonumber(ARGV[5])) then return 1 end
  end
end
return 0
`;

const SCRIPTS = {
  parleyOpen: OPEN_SCRIPT,
  parleyRead: READ_SCRIPT,
  parleyFanout: FANOUT_SCRIPT,
  parleyDelete: DELETE_SCRIPT,
  parleySweep: SWEEP_SCRIPT,
  parleyRecentlyPolled: RECENTLY_POLLED_SCRIPT,
} as const;

type ScriptReply = (string | number)[];
type ScriptCommands = { [name in keyof typeof SCRIPTS]: (args: (string | number)[]) => Promise<unknown> };

/** How many expired queues one sweep script removes before the next runs. */
const SWEEP_BATCH = 500;
/** Queue filters kept per process (they never change); past this many the cache starts over. */
const MAX_CACHED_QUEUES = 100_000;

/** What the fan-out needs of a queue; fixed at registration, so each process caches it. */
interface QueueMeta {
  id: string;
  realmId: number;
  userId: number;
  filter: QueueFilter;
}

/** A QueueFilter as JSON: eventTypes as a list. */
interface StoredFilter {
  eventTypes: string[] | null;
  narrow: readonly NarrowTerm[];
  allPublicStreams: boolean;
  applyMarkdown: boolean;
  capabilities: QueueFilter["capabilities"];
  slimPresence: boolean;
}

function storeFilter(filter: QueueFilter): string {
  const stored: StoredFilter = { ...filter, eventTypes: filter.eventTypes === null ? null : [...filter.eventTypes] };
  return JSON.stringify(stored);
}

function loadFilter(json: string): QueueFilter {
  const stored = JSON.parse(json) as StoredFilter;
  return { ...stored, eventTypes: stored.eventTypes === null ? null : new Set(stored.eventTypes) };
}

class RedisOpenedQueue implements OpenedQueue {
  constructor(
    readonly id: string,
    /** This poll's number on the queue: a newer poll ends older ones. */
    readonly seq: number,
    /** The events held, as a JSON array; undefined: none. */
    readonly eventsJson: string | undefined,
    /** News arrived while the queue was being opened: read again before waiting. */
    readonly woken: boolean,
  ) {}
}

interface Waiter {
  queueId: string;
  seq: number;
  answer: Answer;
  /** The heartbeat. */
  timer: NodeJS.Timeout;
  /** A read is under way; `again`: news arrived meanwhile, read once more. */
  reading: boolean;
  again: boolean;
}

export interface RedisQueueOptions {
  /** For commands (shared by every request of this process). */
  redis: Redis;
  /** For the wake-up channel: one subscriber per process, whatever the number of waiting polls. */
  subscriber: Redis;
  keyPrefix: string;
  clock?: () => number;
  /** A failed fan-out or sweep (Redis down): reported, since no caller waits for it. */
  onError?: (error: unknown, what: string) => void;
}

export class RedisEventQueues implements EventQueueBackend {
  readonly #redis: Redis & ScriptCommands;
  readonly #subscriber: Redis;
  readonly #prefix: string;
  readonly #clock: () => number;
  readonly #onError: (error: unknown, what: string) => void;
  readonly #unsubscribe: () => void;
  readonly #sweeper: NodeJS.Timeout;
  /** The subscription to the wake-up channel; undefined until asked for, or after it failed (asked again next time). */
  #subscription: Promise<unknown> | undefined;
  #closed = false;
  /** Polls of this process waiting on a queue, by queue ID. */
  readonly #waiters = new Map<string, Waiter>();
  /** Queues being opened: a wake-up that arrives meanwhile is noted. */
  readonly #opening = new Map<string, { woken: boolean }[]>();
  readonly #meta = new Map<string, QueueMeta>();
  /** Notifications not yet written, in order; one fan-out at a time keeps every queue's order. */
  #pending: Notification[] = [];
  #flushing: Promise<void> | undefined;

  constructor(
    notifier: Notifier,
    readonly timings: QueueTimings,
    options: RedisQueueOptions,
  ) {
    this.#redis = options.redis as Redis & ScriptCommands;
    for (const [name, lua] of Object.entries(SCRIPTS)) {
      if (!(name in this.#redis)) this.#redis.defineCommand(name, { numberOfKeys: 0, lua });
    }
    this.#subscriber = options.subscriber;
    this.#prefix = options.keyPrefix;
    this.#clock = options.clock ?? Date.now;
    this.#onError = options.onError ?? ((error, what) => console.error(what, error));
    // The connections never keep the process alive by themselves (a command
    // or test that forgets shutdown() still ends); an operation in flight
    // does (#hold), and the HTTP server does while it runs.
    for (const connection of [this.#redis, this.#subscriber]) {
      const unref = () => (connection as unknown as { stream?: { unref?: () => void } }).stream?.unref?.();
      unref();
      connection.on("connect", unref);
    }
    this.#subscriber.on("message", this.#onWake);
    // Wake-ups published while the subscriber was reconnecting are lost: the
    // polls waiting here look at their queues again once it is back.
    this.#subscriber.on("ready", () => {
      for (const waiter of this.#waiters.values()) this.#read(waiter, 0);
    });
    void this.#subscribed().catch(() => {});
    this.#unsubscribe = notifier.subscribe((n) => this.deliver(n));
    this.#sweeper = setInterval(() => {
      Promise.resolve(this.sweep()).catch((error: unknown) => this.#onError(error, "event queue sweep failed"));
    }, timings.sweepIntervalMs);
    this.#sweeper.unref();
  }

  #inFlight = 0;
  #keepAlive: NodeJS.Timeout | undefined;

  /** Keeps the process alive until `operation` settles (the sockets are unref'd). */
  #hold<T>(operation: Promise<T>): Promise<T> {
    this.#retain();
    const release = () => this.#release();
    operation.then(release, release);
    return operation;
  }

  /** An operation in flight or a waiting poll: the process stays alive for it. */
  #retain(): void {
    if (this.#inFlight++ === 0) this.#keepAlive = setInterval(() => {}, 1 << 30);
  }

  #release(): void {
    if (--this.#inFlight === 0) clearInterval(this.#keepAlive);
  }

  /**
   * Subscribed to the wake-up channel, before any queue is created or
   * opened here. A failure (Redis down at start) fails that request and the
   * next one tries again.
   */
  #subscribed(): Promise<unknown> {
    if (!this.#subscription) {
      const subscribing = this.#hold(this.#subscriber.subscribe(`${this.#prefix}wake`));
      subscribing.catch(() => {
        if (this.#subscription === subscribing) this.#subscription = undefined;
      });
      this.#subscription = subscribing;
    }
    return this.#subscription;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #key(queueId: string): string {
    return `${this.#prefix}q:${queueId}`;
  }

  async create(spec: NewQueue): Promise<OpenedQueue> {
    await this.#subscribed();
    // As Zulip: 0 (or nothing) means the default; any other lifespan is taken up to the maximum.
    const lifespan = spec.lifespanMs && spec.lifespanMs > 0 ? Math.min(spec.lifespanMs, this.timings.maxLifespanMs) : this.timings.idleTimeoutMs;
    const id = crypto.randomUUID();
    const now = this.#clock();
    const p = this.#prefix;
    const multi = this.#redis
      .multi()
      .hset(this.#key(id), { u: spec.userId, r: spec.realmId, f: storeFilter(spec.filter), l: lifespan, n: 0, p: -1, t: now, s: 0 })
      .sadd(`${p}u:${spec.userId}`, id)
      .zadd(`${p}expiry`, now + lifespan, id);
    if (spec.filter.allPublicStreams) multi.sadd(`${p}pub:${spec.realmId}`, id);
    await this.#hold(multi.exec());
    this.#cacheMeta({ id, realmId: spec.realmId, userId: spec.userId, filter: spec.filter });
    return { id };
  }

  async open(queueId: string, userId: number, lastEventId: number, dontBlock: boolean): Promise<OpenedQueue> {
    await this.#subscribed();
    // Noted before the script runs: news written after it read the queue wakes this poll.
    const note = { woken: false };
    let notes = this.#opening.get(queueId);
    if (!notes) this.#opening.set(queueId, (notes = []));
    notes.push(note);
    let reply: ScriptReply;
    try {
      reply = (await this.#hold(this.#redis.parleyOpen([
        this.#prefix,
        queueId,
        userId,
        lastEventId,
        this.#clock(),
        dontBlock || this.#closed ? 1 : 0,
        this.timings.heartbeatMs,
      ]))) as ScriptReply;
    } finally {
      notes.splice(notes.indexOf(note), 1);
      if (notes.length === 0) this.#opening.delete(queueId);
    }
    switch (reply[0]) {
      case "unknown":
        throw new QueueError("unknown", `Bad event queue ID: ${queueId}`);
      case "old":
        throw new QueueError("pruned", `An event newer than ${lastEventId} has already been pruned!`);
      case "notin":
        throw new QueueError("pruned", `Event ${lastEventId} was not in this queue`);
    }
    return new RedisOpenedQueue(queueId, Number(reply[1]), reply.length > 2 ? eventsArray(reply, 2) : undefined, note.woken);
  }

  wait(opened: OpenedQueue, dontBlock: boolean, answer: Answer): (() => void) | undefined {
    // This backend opens only its own RedisOpenedQueue objects.
    const queue = opened as RedisOpenedQueue;
    if (queue.eventsJson !== undefined || dontBlock || this.#closed) {
      answer(queue.eventsJson ?? "[]");
      return undefined;
    }
    // A newer poll replaces an older one (the open script told other processes).
    const previous = this.#waiters.get(queue.id);
    if (previous) this.#end(previous, "[]");
    const waiter: Waiter = {
      queueId: queue.id,
      seq: queue.seq,
      answer,
      timer: setTimeout(() => this.#read(waiter, 1), this.timings.heartbeatMs),
      reading: false,
      again: false,
    };
    this.#waiters.set(queue.id, waiter);
    this.#retain();
    if (queue.woken) this.#read(waiter, 0);
    return () => {
      if (this.#waiters.get(queue.id) !== waiter) return;
      this.#waiters.delete(queue.id);
      this.#release();
      clearTimeout(waiter.timer);
      this.#hold(this.#redis.parleyRead([this.#prefix, queue.id, waiter.seq, this.#clock(), 2])).catch((error: unknown) => this.#onError(error, "event queue release failed"));
    };
  }

  /** Reads a waiting poll's queue (mode: 0 woken, 1 heartbeat) and answers the poll if there are events. */
  #read(waiter: Waiter, mode: 0 | 1): void {
    if (mode === 0 && waiter.reading) {
      waiter.again = true;
      return;
    }
    waiter.reading = true;
    this.#hold(this.#redis.parleyRead([this.#prefix, waiter.queueId, waiter.seq, this.#clock(), mode])).then(
      (result) => {
        const reply = result as ScriptReply;
        waiter.reading = false;
        if (this.#waiters.get(waiter.queueId) !== waiter) return;
        // Deleted, or a newer poll took over: this one ends empty, as in memory.
        if (reply[0] !== "ok") this.#end(waiter, "[]");
        else if (reply.length > 1) this.#end(waiter, eventsArray(reply, 1));
        else if (waiter.again) {
          waiter.again = false;
          this.#read(waiter, 0);
        }
      },
      (error: unknown) => {
        waiter.reading = false;
        this.#onError(error, "event queue read failed");
        // The client polls again; its events stay in Redis.
        if (this.#waiters.get(waiter.queueId) === waiter) this.#end(waiter, "[]");
      },
    );
  }

  #end(waiter: Waiter, eventsJson: string): void {
    if (this.#waiters.get(waiter.queueId) === waiter) {
      this.#waiters.delete(waiter.queueId);
      this.#release();
    }
    clearTimeout(waiter.timer);
    waiter.answer(eventsJson);
  }

  /** The wake-up channel: "w id…" news for queues, "r id n" poll n replaced older ones, "d id" deleted. */
  readonly #onWake = (_channel: string, message: string): void => {
    const kind = message[0];
    const ids = message.slice(2).split(" ");
    if (kind === "w") {
      for (const id of ids) {
        const notes = this.#opening.get(id);
        if (notes) for (const note of notes) note.woken = true;
        const waiter = this.#waiters.get(id);
        if (waiter) this.#read(waiter, 0);
      }
    } else if (kind === "r") {
      const waiter = this.#waiters.get(ids[0]!);
      if (waiter && waiter.seq < Number(ids[1])) this.#end(waiter, "[]");
    } else if (kind === "d") {
      const waiter = this.#waiters.get(ids[0]!);
      this.#meta.delete(ids[0]!);
      if (waiter) this.#end(waiter, "[]");
    }
  };

  async remove(queueId: string, userId: number): Promise<void> {
    const removed = await this.#hold(this.#redis.parleyDelete([this.#prefix, queueId, userId]));
    if (removed !== 1) throw new QueueError("unknown", `Bad event queue ID: ${queueId}`);
    this.#meta.delete(queueId);
    const waiter = this.#waiters.get(queueId);
    if (waiter) this.#end(waiter, "[]");
  }

  async peek(queueId: string): Promise<string[] | undefined> {
    const [[, exists], [, entries]] = (await this.#hold(this.#redis.multi().exists(this.#key(queueId)).xrange(`${this.#key(queueId)}:e`, "-", "+").exec())) as [
      [unknown, number],
      [unknown, [string, string[]][]],
    ];
    return exists === 1 ? entries.map(([, fields]) => fields[1]!) : undefined;
  }

  isWaiting(queueId: string): boolean {
    return this.#waiters.has(queueId);
  }

  queueIdsOf(userId: number): Promise<string[]> {
    return this.#hold(this.#redis.smembers(`${this.#prefix}u:${userId}`));
  }

  async recentlyPolled(userId: number, windowMs: number): Promise<boolean> {
    return (await this.#hold(this.#redis.parleyRecentlyPolled([this.#prefix, userId, this.#clock(), windowMs, this.timings.heartbeatMs]))) === 1;
  }

  async sweep(): Promise<number> {
    let removed = 0;
    for (;;) {
      const ids = (await this.#hold(this.#redis.parleySweep([this.#prefix, this.#clock(), SWEEP_BATCH]))) as string[];
      for (const id of ids) this.#meta.delete(id);
      removed += ids.length;
      if (ids.length < SWEEP_BATCH) return removed;
    }
  }

  settled(): Promise<void> | undefined {
    return this.#flushing;
  }

  /** The notifier's listener: notifications are written in order, those that arrive during a write together in the next. */
  deliver(notification: Notification): void {
    this.#pending.push(notification);
    this.#flushing ??= this.#hold(this.#flush());
  }

  async #flush(): Promise<void> {
    // The rest of the caller's notifications (one action's events) join this fan-out.
    await undefined;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          await this.#fanOut(batch);
        } catch (error) {
          this.#onError(error, "event fan-out to Redis failed");
        }
      }
    } finally {
      this.#flushing = undefined;
    }
  }

  /**
   * One fan-out: the queue IDs of every addressed user (one pipeline), the
   * filters of queues this process has not seen yet (one more), then every
   * event to every queue that accepts it in one script call. Each event's
   * text goes once; a message's flags are its only per-queue text.
   */
  async #fanOut(batch: Notification[]): Promise<void> {
    const p = this.#prefix;
    const users = new Set<number>();
    const realms = new Set<number>();
    for (const n of batch) {
      for (const userId of n.userIds) users.add(userId);
      if (n.message?.publicChannel) realms.add(n.realmId);
    }
    const userIds = [...users];
    const realmIds = [...realms];
    const lookup = this.#redis.pipeline();
    for (const userId of userIds) lookup.smembers(`${p}u:${userId}`);
    for (const realmId of realmIds) lookup.smembers(`${p}pub:${realmId}`);
    const found = ((await lookup.exec()) ?? []).map(([error, ids]) => {
      if (error) throw error;
      return ids as string[];
    });
    const byUser = new Map<number, string[]>();
    userIds.forEach((userId, i) => byUser.set(userId, found[i]!));
    const allPublic = new Map<number, string[]>();
    realmIds.forEach((realmId, i) => allPublic.set(realmId, found[userIds.length + i]!));
    await this.#loadMeta(found.flat());

    const args: (string | number)[] = [p, 0];
    const templates: string[] = [];
    const entries: string[] = [];
    for (const n of batch) {
      if (n.message) this.#planMessage(n, byUser, allPublic.get(n.realmId) ?? [], templates, entries);
      else this.#planEvent(n, byUser, templates, entries);
    }
    if (entries.length === 0) return;
    args[1] = templates.length / 2;
    for (const t of templates) args.push(t);
    for (const e of entries) args.push(e);
    await this.#redis.parleyFanout(args);
  }

  #planEvent({ realmId, event, userIds, capability }: Notification, byUser: Map<number, string[]>, templates: string[], entries: string[]): void {
    let index = -1;
    for (const userId of userIds) {
      for (const queueId of byUser.get(userId) ?? []) {
        const meta = this.#meta.get(queueId);
        if (!meta || meta.realmId !== realmId) continue;
        if (!meetsCapabilities(meta.filter, capability)) continue;
        if (!acceptsEvent(meta.filter, event, userId)) continue;
        if (index < 0) {
          index = templates.length / 2;
          templates.push(...idTemplate(event));
        }
        entries.push(queueId, String(index), "");
      }
    }
  }

  #planMessage(n: Notification, byUser: Map<number, string[]>, allPublic: readonly string[], templates: string[], entries: string[]): void {
    const delivery = n.message!;
    const formFor = messageForms(n.event, delivery);
    const indexes = new Map<MessageForm, number>();
    const reached = new Set<string>();
    const offer = (queueId: string, userId: number | undefined) => {
      const meta = this.#meta.get(queueId);
      if (!meta || meta.realmId !== n.realmId || reached.has(queueId)) return;
      reached.add(queueId);
      const flags = delivery.flags[userId ?? meta.userId] ?? [];
      const form = formFor(meta.filter);
      if (!acceptsMessage(meta.filter, form.message, flags, meta.userId)) return;
      let index = indexes.get(form);
      if (index === undefined) {
        index = templates.length / 2;
        indexes.set(form, index);
        templates.push(messageEventHead(form.json), "}");
      }
      // The contract names it local_id; Zulip's clients read local_message_id.
      const localId = delivery.localId && delivery.localId.queueId === queueId ? delivery.localId.localId : undefined;
      entries.push(queueId, String(index), messageEventFlags(flags, localId));
    };
    for (const userId of n.userIds) for (const queueId of byUser.get(userId) ?? []) offer(queueId, userId);
    for (const queueId of allPublic) offer(queueId, undefined);
  }

  /** Fetches the filters of queues not cached yet (registered by another process). */
  async #loadMeta(queueIds: readonly string[]): Promise<void> {
    const missing = [...new Set(queueIds.filter((id) => !this.#meta.has(id)))];
    if (missing.length === 0) return;
    const pipeline = this.#redis.pipeline();
    for (const id of missing) pipeline.hmget(this.#key(id), ...QUEUE_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    missing.forEach((id, i) => {
      const [error, fields] = replies[i]! as [Error | null, (string | null)[]];
      if (error) throw error;
      const [user, realm, filter] = fields;
      // Deleted meanwhile: its ID is still in an index until the script removing it ran.
      if (user == null || realm == null || filter == null) return;
      this.#cacheMeta({ id, userId: Number(user), realmId: Number(realm), filter: loadFilter(filter) });
    });
  }

  #cacheMeta(meta: QueueMeta): void {
    if (this.#meta.size >= MAX_CACHED_QUEUES) this.#meta.clear();
    this.#meta.set(meta.id, meta);
  }

  /** Answers every waiting poll of this process now, empty: the client polls again (elsewhere) and its events wait in Redis. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const waiter of [...this.#waiters.values()]) this.#end(waiter, "[]");
  }

  /** Writes the notifications still pending, then closes both connections. */
  async shutdown(): Promise<void> {
    this.close();
    while (this.#flushing) await this.#flushing;
    this.#unsubscribe();
    this.#subscriber.off("message", this.#onWake);
    await this.#hold(Promise.allSettled([this.#subscriber.quit(), this.#redis.quit()]));
  }
}

/** The JSON array of the event texts in a script reply from `from` on. */
function eventsArray(reply: ScriptReply, from: number): string {
  let json = "[";
  for (let i = from; i < reply.length; i++) json += i === from ? reply[i] : `,${reply[i]}`;
  return `${json}]`;
}
