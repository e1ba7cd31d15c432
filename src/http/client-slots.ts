// Slots for work done on a client's behalf that holds something scarce for a
// while (the image proxy's fetches from other sites): a few at once per
// client network, a bounded total, so one client — signed in or not — cannot
// take them all. Past a client's share its requests wait their turn (a page
// with many images still gets them all); past its queue, or past the total,
// they are refused.
import net from "node:net";

export interface ClientSlotLimits {
  /** Slots held at once by all clients. */
  total: number;
  /** Slots held at once by one client network. */
  perClient: number;
  /** Requests of one client network waiting for one of its slots; more are refused. */
  queuedPerClient: number;
}

/** Gives a slot back (once; later calls do nothing). */
export type ReleaseSlot = () => void;

interface ClientState {
  active: number;
  waiting: (() => void)[];
}

/**
 * The network a client address stands for: the address itself for IPv4,
 * its /64 for IPv6 (one customer's allocation, in which an address of
 * one's own costs nothing). IPv4-mapped IPv6 addresses count as IPv4.
 */
export function clientNetwork(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (net.isIPv6(address)) {
    const groups = ipv6Groups(address);
    if (groups) return `${groups.slice(0, 4).map((group) => group.toString(16)).join(":")}::/64`;
  }
  return address;
}

/** The eight 16-bit groups of a valid IPv6 address (a zone index dropped). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.split("%")[0]!;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) => (part ? part.split(":").map((group) => parseInt(group, 16)) : []);
  const head = parse(halves[0]);
  const tail = halves.length === 2 ? parse(halves[1]) : [];
  const groups = halves.length === 2 ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  return groups.length === 8 && groups.every((group) => Number.isInteger(group) && group >= 0 && group <= 0xffff) ? groups : undefined;
}

export class ClientSlots {
  readonly #limits: ClientSlotLimits;
  #held = 0;
  readonly #clients = new Map<string, ClientState>();

  constructor(limits: ClientSlotLimits) {
    this.#limits = limits;
  }

  /** Slots held now, by everyone. */
  get held(): number {
    return this.#held;
  }

  /**
   * A slot for `address` (grouped by clientNetwork): at once when its share
   * and the total allow, after waiting its turn when its share is taken;
   * undefined when the total is taken, its queue is full, or `abandoned`
   * fires while it waits (the client went away).
   */
  async acquire(address: string, abandoned: AbortSignal): Promise<ReleaseSlot | undefined> {
    const network = clientNetwork(address);
    let state = this.#clients.get(network);
    if (state === undefined || state.active < this.#limits.perClient) {
      if (this.#held >= this.#limits.total) return undefined;
      if (state === undefined) {
        state = { active: 0, waiting: [] };
        this.#clients.set(network, state);
      }
      state.active += 1;
      this.#held += 1;
      return this.#releaser(network, state);
    }
    if (state.waiting.length >= this.#limits.queuedPerClient || abandoned.aborted) return undefined;
    const waiting = state.waiting;
    const granted = await new Promise<boolean>((resolve) => {
      const turn = () => {
        abandoned.removeEventListener("abort", leave);
        resolve(true);
      };
      const leave = () => {
        const index = waiting.indexOf(turn);
        if (index >= 0) waiting.splice(index, 1);
        resolve(false);
      };
      waiting.push(turn);
      abandoned.addEventListener("abort", leave, { once: true });
    });
    return granted ? this.#releaser(network, state) : undefined;
  }

  #releaser(network: string, state: ClientState): ReleaseSlot {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      // The slot passes to the client's next waiting request, if any: its count and the total stay.
      const next = state.waiting.shift();
      if (next) return next();
      state.active -= 1;
      this.#held -= 1;
      if (state.active === 0) this.#clients.delete(network);
    };
  }
}
