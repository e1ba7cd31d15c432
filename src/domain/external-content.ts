// Images from other sites in messages go through this server, as Zulip's
// camo does: the rendered preview's /thumbnail?url=… redirects to
// /external_content/<digest>/<hex URL>, where the digest is an HMAC of the URL
// under a server secret (Zulip's get_camo_url: HMAC-SHA1, hex, then the URL's
// bytes in hex). So readers' browsers never contact the other site (it learns
// nothing of who reads), and this server fetches only URLs it signed.
import crypto from "node:crypto";
import net from "node:net";

export const EXTERNAL_CONTENT_PREFIX = "/external_content/";
/** The most bytes one proxied image may have. */
export const MAX_EXTERNAL_IMAGE_BYTES = 10 * 1024 * 1024;
/** Redirects followed from the first URL, each one checked again. */
export const MAX_EXTERNAL_REDIRECTS = 4;

/** Zulip's get_camo_url: the path a browser asks this server for, to see `url`. */
export function externalContentPath(url: string, key: Buffer): string {
  const digest = crypto.createHmac("sha1", key).update(url, "utf8").digest("hex");
  return `${EXTERNAL_CONTENT_PREFIX}${digest}/${Buffer.from(url, "utf8").toString("hex")}`;
}

/** The URL a signed path names, or undefined when the digest is not this server's (or either part is malformed). */
export function verifiedExternalUrl(digest: string, hexUrl: string, key: Buffer): string | undefined {
  if (!/^[0-9a-f]{40}$/.test(digest) || hexUrl.length === 0 || hexUrl.length % 2 !== 0 || !/^[0-9a-f]+$/.test(hexUrl)) return undefined;
  const bytes = Buffer.from(hexUrl, "hex");
  const expected = crypto.createHmac("sha1", key).update(bytes).digest();
  if (!crypto.timingSafeEqual(expected, Buffer.from(digest, "hex"))) return undefined;
  const url = bytes.toString("utf8");
  return isFetchableUrl(url) ? url : undefined;
}

/** http(s) with a host and no credentials: the only URLs worth signing or fetching. */
export function isFetchableUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.hostname !== "" && parsed.username === "" && parsed.password === "";
}

// Addresses a fetch on readers' behalf must never reach unless told to: this
// machine, private networks, link-local (cloud metadata services), and the
// like — so a message cannot make the server probe its own network.
const INTERNAL = new net.BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["::", 96],
  ["2002::", 16],
  ["fec0::", 10],
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv6");
}

/** Whether an address is internal (see INTERNAL); IPv4-mapped IPv6 addresses count as their IPv4 address. */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return INTERNAL.check(mapped[1]!, "ipv4");
  const family = net.isIP(address);
  if (family === 4) return INTERNAL.check(address, "ipv4");
  if (family === 6) return INTERNAL.check(address, "ipv6");
  return true;
}

/** Names that always mean this machine (RFC 6761): never asked of DNS, treated as 127.0.0.1 and ::1. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

/** Where requests to other sites may go: internal addresses only with the operator's opt-in, all of them or the listed ones. */
export interface AddressPolicy {
  /** Every internal address is allowed (EXTERNAL_CONTENT_ALLOW_INTERNAL). */
  allowInternal: boolean;
  /** Internal addresses or CIDR ranges allowed all the same (EXTERNAL_CONTENT_ALLOW_ADDRESSES). */
  allowAddresses?: readonly string[] | undefined;
}

const allowLists = new WeakMap<readonly string[], net.BlockList>();

/** The allow-list's entries as a BlockList; throws on an entry that is neither an address nor a CIDR range. */
export function addressList(entries: readonly string[]): net.BlockList {
  let list = allowLists.get(entries);
  if (list) return list;
  list = new net.BlockList();
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split("/");
    const family = net.isIP(address ?? "");
    const bits = prefix === undefined ? (family === 6 ? 128 : 32) : Number(prefix);
    if (family === 0 || extra !== undefined || !Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32) || (prefix !== undefined && !/^\d+$/.test(prefix))) {
      throw new Error(`not an address or CIDR range: ${entry}`);
    }
    list.addSubnet(address!, bits, family === 6 ? "ipv6" : "ipv4");
  }
  allowLists.set(entries, list);
  return list;
}

/** Whether a request may connect to `address` under `policy`. */
export function isAllowedAddress(address: string, policy: AddressPolicy): boolean {
  if (policy.allowInternal || !isInternalAddress(address)) return true;
  if (!policy.allowAddresses || policy.allowAddresses.length === 0) return false;
  const list = addressList(policy.allowAddresses);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return list.check(mapped[1]!, "ipv4");
  return list.check(address, net.isIP(address) === 6 ? "ipv6" : "ipv4");
}

/**
 * Whether a URL's host is known to be refused before any lookup: an address
 * literal (in any form the URL parser reads, 2130706433 or [::1] included)
 * or a localhost name, that the policy does not allow. Other names can only
 * be judged when they are resolved, at connect time.
 */
export function isRefusedHost(hostname: string, policy: AddressPolicy): boolean {
  const literal = hostname.replace(/^\[|\]$/g, "");
  if (net.isIP(literal)) return !isAllowedAddress(literal, policy);
  if (isLocalhostName(hostname)) return !isAllowedAddress("127.0.0.1", policy) || !isAllowedAddress("::1", policy);
  return false;
}

/** Image types passed on. SVG is not: it is a document that can carry script. */
export function isProxiedImageType(contentType: string | undefined): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return /^image\/[a-z0-9.+-]+$/.test(type) && type !== "image/svg+xml";
}
