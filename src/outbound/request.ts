// The one guarded request to other sites, for everything the server fetches
// or sends on someone's behalf (the image proxy, link previews, outgoing
// webhooks): http(s) only; the address checked when the connection is made
// (so a name that resolves to this machine or a private network is refused,
// whatever it resolved to earlier), unless the operator allows internal
// addresses; redirects either not followed or followed a few times with each
// hop checked as the first; one time limit for the whole exchange, body
// included, and optionally shorter ones for the site to start answering and
// for its body to stall; and helpers to read at most so many bytes.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { Transform, type TransformCallback } from "node:stream";
import type { Config } from "../config.ts";
import { isAllowedAddress, isLocalhostName, MAX_EXTERNAL_REDIRECTS, type AddressPolicy } from "../domain/external-content.ts";

/**
 * Why a request to another site came to nothing:
 * - refused: the address is internal and the operator has not allowed it;
 * - bad_url: not an http(s) URL (or one with credentials, where the caller refuses them);
 * - timeout: the time limit passed (connecting, waiting or reading);
 * - connection: no connection or it broke (refused, reset, no such name);
 * - too_large: the answer is bigger than the caller reads;
 * - bad_answer: an answer the caller cannot use (status, type, too many redirects).
 */
export type OutboundFailure = "refused" | "bad_url" | "timeout" | "connection" | "too_large" | "bad_answer";

export class OutboundError extends Error {
  constructor(
    readonly reason: OutboundFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface OutboundRequest extends AddressPolicy {
  /** GET unless said. */
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Follow 3xx answers (each hop checked again, at most MAX_EXTERNAL_REDIRECTS); else a 3xx is the answer. */
  followRedirects: boolean;
  /** Name servers to ask ("address" or "address:port"); the system's when none. */
  dnsServers?: readonly string[] | undefined;
  /** Send user:password@ in the URL as Basic credentials (a bot server's URL may); else such a URL is bad_url. */
  allowUrlCredentials?: boolean;
  /** One limit for everything: connecting, every redirect, and reading the body. */
  timeoutMs: number;
  /**
   * How long a site may take to start answering: from sending the request
   * (name lookup and connecting included) to the answer's headers, each
   * redirect hop anew. A site that accepts connections and then says
   * nothing is given up on early, not after the whole time limit.
   */
  firstByteTimeoutMs?: number;
  /** How long the answer's body may stall (no bytes coming) before it is given up on. */
  idleTimeoutMs?: number;
}

/** An answer whose headers are in and whose body is not read yet; `url` is where it came from (after redirects). */
export type OutboundResponse = http.IncomingMessage & { url: string; signal: AbortSignal };

// Names are resolved by asking DNS directly (c-ares), not with getaddrinfo:
// that runs on libuv's four threads, which a name server that never answers
// would hold for every file read and password hash of the process.
const resolvers = new Map<string, dns.promises.Resolver>();

function resolverFor(servers: readonly string[] | undefined): dns.promises.Resolver {
  const key = (servers ?? []).join(",");
  let resolver = resolvers.get(key);
  if (!resolver) {
    resolver = new dns.promises.Resolver({ timeout: 3000, tries: 2 });
    if (servers && servers.length > 0) resolver.setServers([...servers]);
    resolvers.set(key, resolver);
  }
  return resolver;
}

async function addressesOf(hostname: string, resolver: dns.promises.Resolver): Promise<dns.LookupAddress[]> {
  if (isLocalhostName(hostname)) {
    return [
      { address: "127.0.0.1", family: 4 },
      { address: "::1", family: 6 },
    ];
  }
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
  return [
    ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
}

function guardedLookup(policy: AddressPolicy, resolver: dns.promises.Resolver): net.LookupFunction {
  return (hostname, options, callback) => {
    addressesOf(hostname, resolver).then(
      (list) => {
        if (list.length === 0) return callback(new OutboundError("connection", `${hostname} has no address`), "", 0);
        if (list.some((a) => !isAllowedAddress(a.address, policy))) {
          return callback(new OutboundError("refused", `${hostname} is an internal address`), "", 0);
        }
        const wanted = options.family === 4 || options.family === 6 ? list.filter((a) => a.family === options.family) : list;
        if (wanted.length === 0) return callback(new OutboundError("connection", `${hostname} has no IPv${options.family} address`), "", 0);
        if ((options as dns.LookupAllOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, wanted);
        return callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: Error) => callback(error as NodeJS.ErrnoException, "", 0),
    );
  };
}

// Agents of their own: no keep-alive sockets shared with anything else, and no proxy from the environment
// (which would connect to the proxy, not to the checked address).
const agents = { http: new http.Agent({ keepAlive: false }), https: new https.Agent({ keepAlive: false }) };

interface Hop {
  method: string;
  headers: Record<string, string>;
  body: string | Buffer | undefined;
}

/** The operator's settings for every request to other sites: the rule for internal addresses, and the name servers. */
export function outboundSettings(
  config: Pick<Config, "externalContentAllowInternal" | "externalContentAllowAddresses" | "externalContentDnsServers">,
): AddressPolicy & { dnsServers: readonly string[] } {
  return { allowInternal: config.externalContentAllowInternal, allowAddresses: config.externalContentAllowAddresses, dnsServers: config.externalContentDnsServers };
}

function send(url: URL, hop: Hop, request: OutboundRequest, signal: AbortSignal): Promise<OutboundResponse> {
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") return Promise.reject(new OutboundError("bad_url", "not an http(s) URL"));
  if ((url.username !== "" || url.password !== "") && !request.allowUrlCredentials) return Promise.reject(new OutboundError("bad_url", "credentials in the URL"));
  // A literal address is connected to without a lookup: checked here.
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (net.isIP(literal) && !isAllowedAddress(literal, request)) {
    return Promise.reject(new OutboundError("refused", `${literal} is an internal address`));
  }
  const secure = url.protocol === "https:";
  const headers = { ...hop.headers };
  if (hop.body !== undefined) headers["content-length"] = String(Buffer.byteLength(hop.body));
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).request(
      url,
      { method: hop.method, agent: secure ? agents.https : agents.http, headers, lookup: guardedLookup(request, resolverFor(request.dnsServers)), signal },
      (response) => {
        clearTimeout(firstByte);
        resolve(Object.assign(response, { url: url.href, signal }));
      },
    );
    const firstByteTimeoutMs = request.firstByteTimeoutMs;
    const firstByte =
      firstByteTimeoutMs === undefined ? undefined : setTimeout(() => req.destroy(new OutboundError("timeout", "the site did not start answering in time")), firstByteTimeoutMs);
    req.on("error", (error) => {
      clearTimeout(firstByte);
      reject(error);
    });
    req.end(hop.body);
  });
}

/** What a failure to get an answer was, once the signal says whether time ran out. */
function classify(error: unknown, signal: AbortSignal): OutboundError {
  if (error instanceof OutboundError) return error;
  if (signal.aborted) return new OutboundError("timeout", "the site did not answer in time");
  return new OutboundError("connection", `the connection failed: ${(error as Error).message}`);
}

/**
 * Sends a request to another site and returns its answer, whatever its
 * status (a 3xx too when redirects are not followed), once the headers are
 * in. Throws OutboundError.
 */
export async function openOutbound(url: string, request: OutboundRequest): Promise<OutboundResponse> {
  const signal = AbortSignal.timeout(request.timeoutMs);
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new OutboundError("bad_url", "not an http(s) URL");
  }
  let hop: Hop = { method: request.method ?? "GET", headers: request.headers ?? {}, body: request.body };
  for (let redirects = 0; ; redirects++) {
    let response: OutboundResponse;
    try {
      response = await send(current, hop, request, signal);
    } catch (error) {
      throw classify(error, signal);
    }
    const status = response.statusCode ?? 0;
    if (!request.followRedirects || ![301, 302, 303, 307, 308].includes(status) || !response.headers.location) {
      const idleTimeoutMs = request.idleTimeoutMs;
      // The socket's inactivity timer: no bytes for that long and the body fails with a timeout.
      if (idleTimeoutMs !== undefined) response.setTimeout(idleTimeoutMs, () => response.destroy(new OutboundError("timeout", "the site stopped sending")));
      return response;
    }
    response.resume();
    if (redirects >= MAX_EXTERNAL_REDIRECTS) throw new OutboundError("bad_answer", "too many redirects");
    try {
      current = new URL(response.headers.location, current);
    } catch {
      throw new OutboundError("bad_answer", "a redirect to a malformed address");
    }
    // As browsers do: 307 and 308 repeat the request; the others become a GET without a body.
    if (status !== 307 && status !== 308 && hop.method !== "HEAD") {
      const { "content-type": _type, ...headers } = hop.headers;
      hop = { method: "GET", headers, body: undefined };
    }
  }
}

/** Passes bytes through until more than `limit` have passed, then fails with too_large. */
export class SizeLimit extends Transform {
  private seen = 0;
  constructor(private readonly limit: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) return done(new OutboundError("too_large", `the answer is larger than ${this.limit} bytes`));
    done(null, chunk);
  }
}

/**
 * Reads an answer's body, then closes it. Past `maxBytes`: `truncate` keeps
 * the first `maxBytes` (the start of a page), `fail` throws too_large.
 */
export async function readOutboundBody(response: OutboundResponse, maxBytes: number, overflow: "truncate" | "fail"): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= maxBytes && overflow === "truncate") break;
      if (size > maxBytes) throw new OutboundError("too_large", `the answer is larger than ${maxBytes} bytes`);
    }
  } catch (error) {
    throw classify(error, response.signal);
  } finally {
    response.destroy();
  }
  return Buffer.concat(chunks).subarray(0, maxBytes);
}
