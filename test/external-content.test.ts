// The image proxy: /thumbnail?url=<an image on another site> redirects to a
// signed /external_content/<digest>/<hex URL>, which fetches the image on the
// reader's behalf (Zulip's camo). Against real local HTTP servers: images,
// redirects, pages that are not images, SVG, oversized and slow replies, and
// the refusal of internal addresses when the server is not told to allow them.
// Then its capacity: fetch slots per client address, the first-byte and idle
// timeouts, and the disk cache (one fetch per image, bounded, least recently
// used out, a day's life).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { ExternalContentCache } from "../src/actions/external-content-cache.ts";
import { isInternalAddress, isProxiedImageType, verifiedExternalUrl } from "../src/domain/external-content.ts";
import { clientNetwork } from "../src/http/client-slots.ts";
import { assertSuccess, basicAuth, startTestApp, type TestApp } from "./helpers.ts";

// A 1×1 PNG.
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201" + "e3d0a3a10000000049454e44ae426082", "hex");
const BIG = 10 * 1024 * 1024 + 1;

let upstream: http.Server;
let origin: string;
/** Requests the upstream received, by path. */
const hits = new Map<string, number>();
/** Requests to /stall/… the upstream holds unanswered, and whether it still holds new ones. */
const stalled: http.ServerResponse[] = [];
let stalling = true;
let t: TestApp;
let strict: TestApp;

before(async () => {
  upstream = http.createServer((request, response) => {
    const path = request.url ?? "/";
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith("/stall/")) {
      if (stalling) stalled.push(response);
      else response.writeHead(404).end();
      return;
    }
    // Headers and the first bytes, then nothing.
    if (path === "/trickle.png") return response.writeHead(200, { "content-type": "image/png" }).write(PNG.subarray(0, 10));
    // An image of the size the name says, of the type the query says.
    const sized = /^\/sized\/(\d+)\/[a-z0-9-]+\.img(?:\?type=(.+))?$/.exec(path);
    if (sized) return response.writeHead(200, { "content-type": decodeURIComponent(sized[2] ?? "image/png") }).end(Buffer.alloc(Number(sized[1]), path));
    if (path === "/cat.png") return response.writeHead(200, { "content-type": "image/png", "content-length": PNG.length }).end(PNG);
    if (path === "/moved") return response.writeHead(302, { location: "/cat.png" }).end();
    if (path === "/loop") return response.writeHead(302, { location: "/loop" }).end();
    if (path === "/bad-redirect") return response.writeHead(302, { location: "http://[::1" }).end();
    if (path.startsWith("/long/")) return response.writeHead(200, { "content-type": "image/png" }).end(PNG);
    if (path === "/page.html") return response.writeHead(200, { "content-type": "text/html" }).end("<p>not an image</p>");
    if (path === "/drawing.svg") return response.writeHead(200, { "content-type": "image/svg+xml" }).end("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>");
    if (path === "/broken.png") return response.writeHead(500, { "content-type": "image/png" }).end();
    if (path === "/huge.png") return response.writeHead(200, { "content-type": "image/png", "content-length": BIG }).end();
    if (path === "/endless.png") {
      // No length: the proxy counts the bytes as they pass.
      response.writeHead(200, { "content-type": "image/png" });
      const chunk = Buffer.alloc(1024 * 1024);
      let sent = 0;
      const more = () => {
        while (sent < 12 && response.write(chunk)) sent++;
        if (sent < 12) response.once("drain", more);
        else response.end();
      };
      return more();
    }
    if (path === "/slow.png") return; // never answers
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  // The upstream is on this machine: the proxy is told it may reach it.
  t = await startTestApp({ externalContentAllowInternal: true, externalContentTimeoutMs: 1000 });
  strict = await startTestApp();
});

after(async () => {
  stalling = false;
  for (const response of stalled.splice(0)) response.writeHead(404).end();
  upstream.closeAllConnections();
  await new Promise((resolve) => upstream.close(resolve));
  await t?.close();
  await strict?.close();
});

/** The signed path /thumbnail redirects an external URL to. */
async function proxied(app: TestApp, url: string): Promise<string> {
  const response = await fetch(`${app.url}/thumbnail?url=${encodeURIComponent(url)}&size=thumbnail`, {
    redirect: "manual",
    headers: { authorization: basicAuth(app.users.member.email, app.users.member.apiKey) },
  });
  assert.equal(response.status, 302, url);
  const location = response.headers.get("location")!;
  assert.match(location, /^\/external_content\/[0-9a-f]{40}\/[0-9a-f]+$/, location);
  assert.equal(Buffer.from(location.split("/")[3]!, "hex").toString("utf8"), url);
  return location;
}

describe("the image proxy", () => {
  test("a message's image on another site: the preview's /thumbnail redirects to a signed path, which serves the image without sign-in", async () => {
    const channel = `pictures-${crypto.randomBytes(3).toString("hex")}`;
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    const sent = assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channel, topic: "cats", content: `${origin}/cat.png` }));
    const content = assertSuccess(await t.api(t.users.member, "GET", `/messages/${sent.id}`)).message.content as string;
    const src = /<img[^>]* src="([^"]+)"/.exec(content)?.[1]?.replace(/&amp;/g, "&");
    assert.ok(src?.startsWith("/thumbnail?"), content);
    // Only a signed-in reader gets the signed path (the cookie or HTTP Basic); nobody else can use the proxy.
    const anonymous = await fetch(t.url + src, { redirect: "manual" });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get("location"), null);
    const redirected = await fetch(t.url + src, { redirect: "manual", headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) } });
    assert.equal(redirected.status, 302);
    const location = redirected.headers.get("location")!;
    assert.equal(location, await proxied(t, `${origin}/cat.png`), "the same URL always signs the same way");

    const image = await fetch(t.url + location);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get("content-type"), "image/png");
    assert.equal(image.headers.get("content-length"), String(PNG.length));
    assert.equal(image.headers.get("cache-control"), "public, max-age=86400");
    assert.equal(image.headers.get("x-content-type-options"), "nosniff");
    assert.equal(image.headers.get("content-security-policy"), "default-src 'none'; sandbox");
    assert.equal(image.headers.get("set-cookie"), null);
    assert.deepEqual(Buffer.from(await image.arrayBuffer()), PNG);
  });

  test("long URLs (signed CDN links) go through like short ones", async () => {
    const url = `${origin}/long/${"segment-".repeat(60)}image.png?signature=${"a".repeat(200)}`;
    assert.ok(url.length > 600);
    const response = await fetch(t.url + (await proxied(t, url)));
    assert.equal(response.status, 200);
    assert.deepEqual(Buffer.from(await response.arrayBuffer()), PNG);
  });

  test("redirects are followed (and checked again), up to four", async () => {
    const moved = await fetch(t.url + (await proxied(t, `${origin}/moved`)));
    assert.equal(moved.status, 200);
    assert.deepEqual(Buffer.from(await moved.arrayBuffer()), PNG);
    const loop = await fetch(t.url + (await proxied(t, `${origin}/loop`)));
    assert.equal(loop.status, 404);
  });

  test("not an image, SVG, the site's error, no such file, too large by its length or by its bytes, too slow, a broken redirect: 404, as camo answers", async () => {
    // Past the cap with no length given (endless.png): the bytes are counted as they come, and the image is whole before the reply starts.
    for (const path of ["/page.html", "/drawing.svg", "/broken.png", "/missing.png", "/huge.png", "/endless.png", "/slow.png", "/bad-redirect"]) {
      const response = await fetch(t.url + (await proxied(t, origin + path)));
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { result: "error", msg: "Image not available", code: "BAD_REQUEST" }, path);
    }
    // Nothing of them is kept: no cached file, no partial download.
    const dir = path.join(t.services.config.dataDir, "external-content-cache");
    const kept = fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    assert.ok(kept.every((name) => !name.includes(".tmp-")), kept.join());
  });

  test("a digest that is not this server's, or a malformed path: 403, nothing fetched", async () => {
    const good = await proxied(t, `${origin}/cat.png`);
    const [, , digest, hex] = good.split("/");
    const other = Buffer.from(`${origin}/page.html`).toString("hex");
    for (const path of [
      `/external_content/${digest}/${other}`,
      `/external_content/${"0".repeat(40)}/${hex}`,
      `/external_content/${digest!.slice(0, 39)}/${hex}`,
      `/external_content/${digest}/${hex!.slice(0, -1)}`,
      `/external_content/${digest!.toUpperCase()}/${hex}`,
      `/external_content/${digest}/zz${hex}`,
    ]) {
      const response = await fetch(t.url + path);
      assert.equal(response.status, 403, path);
      assert.deepEqual(await response.json(), { result: "error", msg: "Invalid signature", code: "BAD_REQUEST" }, path);
    }
    // Another server's signature (another secret) is not this one's.
    const foreign = await proxied(strict, `${origin}/cat.png`);
    assert.equal((await fetch(t.url + foreign)).status, 403);
    assert.equal((await fetch(t.url + "/external_content/")).status, 404);
  });

  test("by default this machine and private networks are not fetched from, however the URL names them", async () => {
    for (const url of [`${origin}/cat.png`, `http://localhost:${new URL(origin).port}/cat.png`, `http://[::1]:${new URL(origin).port}/cat.png`, "http://169.254.169.254/latest/meta-data"]) {
      const response = await fetch(strict.url + (await proxied(strict, url)));
      assert.equal(response.status, 404, url);
    }
  });

  test("/thumbnail signs http(s) URLs only: other schemes, relative and credentialed forms are refused", async () => {
    for (const url of ["javascript:alert(1)", "ftp://example.com/a.png", "//example.com/a.png", "http://user:pass@example.com/a.png", "https:example.com"]) {
      const response = await fetch(`${t.url}/thumbnail?url=${encodeURIComponent(url)}`, { redirect: "manual" });
      assert.equal(response.status, 403, url);
      assert.equal(response.headers.get("location"), null, url);
    }
  });

  test("the rules: internal addresses, image types, signatures", () => {
    for (const address of ["127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "::", "fd00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::7f00:1", "64:ff9b:1::a00:1", "2002:7f00:1::", "fec0::1", "not an address"]) {
      assert.equal(isInternalAddress(address), true, address);
    }
    for (const address of ["8.8.8.8", "93.184.216.34", "2001:4860:4860::8888", "::ffff:8.8.8.8"]) assert.equal(isInternalAddress(address), false, address);
    // Fetch slots are counted per IPv4 address and per IPv6 /64.
    assert.equal(clientNetwork("203.0.113.7"), "203.0.113.7");
    assert.equal(clientNetwork("::ffff:203.0.113.7"), "203.0.113.7");
    assert.equal(clientNetwork("2001:db8:1:2::1"), "2001:db8:1:2::/64");
    assert.equal(clientNetwork("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
    assert.equal(clientNetwork("2001:0db8:0001:0002:0:0:0:1"), "2001:db8:1:2::/64");
    assert.equal(clientNetwork("::1"), "0:0:0:0::/64");
    assert.notEqual(clientNetwork("2001:db8:1:3::1"), clientNetwork("2001:db8:1:2::1"));
    for (const type of ["image/png", "image/jpeg; charset=binary", "IMAGE/GIF", "image/webp"]) assert.equal(isProxiedImageType(type), true, type);
    for (const type of ["image/svg+xml", "text/html", "", undefined, "image/", "application/octet-stream"]) assert.equal(isProxiedImageType(type), false, String(type));
    const key = crypto.randomBytes(32);
    const url = "https://example.com/a.png";
    const digest = crypto.createHmac("sha1", key).update(url).digest("hex");
    assert.equal(verifiedExternalUrl(digest, Buffer.from(url).toString("hex"), key), url);
    assert.equal(verifiedExternalUrl(digest, Buffer.from(url).toString("hex"), crypto.randomBytes(32)), undefined);
    const javascript = "javascript:alert(1)";
    const jsDigest = crypto.createHmac("sha1", key).update(javascript).digest("hex");
    assert.equal(verifiedExternalUrl(jsDigest, Buffer.from(javascript).toString("hex"), key), undefined, "signed, but not http(s)");
  });
});

/** Waits (a bounded time) until `condition` holds. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 10) {
    if (waited > 15_000) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The cache's files (name → bytes) in an app's data directory. */
function cacheFiles(app: TestApp): Map<string, number> {
  const dir = path.join(app.services.config.dataDir, "external-content-cache");
  const files = new Map<string, number>();
  if (!fs.existsSync(dir)) return files;
  for (const name of fs.readdirSync(dir)) files.set(name, fs.statSync(path.join(dir, name)).size);
  return files;
}

describe("the image proxy's capacity", () => {
  // Behind a trusted proxy (as in production behind nginx): the client address is X-Forwarded-For's.
  let patient: TestApp;
  let quick: TestApp;
  let small: TestApp;
  const CACHE_BOUND = 2500;

  before(async () => {
    const common = { externalContentAllowInternal: true, trustedProxies: ["127.0.0.1"] };
    // Time limits far beyond the test's: a fetch here ends only when its upstream answers.
    patient = await startTestApp({ ...common, externalContentTimeoutMs: 120_000, externalContentFirstByteTimeoutMs: 120_000, externalContentIdleTimeoutMs: 120_000, externalContentFetchesPerAddress: 2 });
    // A long overall limit, short first-byte and idle limits, one fetch at a time per address.
    quick = await startTestApp({ ...common, externalContentTimeoutMs: 120_000, externalContentFirstByteTimeoutMs: 300, externalContentIdleTimeoutMs: 300, externalContentFetchesPerAddress: 1 });
    small = await startTestApp({ ...common, externalContentCacheBytes: CACHE_BOUND });
  });

  after(async () => {
    releaseStalls();
    await patient?.close();
    await quick?.close();
    await small?.close();
  });

  const from = (app: TestApp, location: string, address: string) => fetch(app.url + location, { headers: { "x-forwarded-for": address } });
  /** The upstream answers the /stall/… requests it holds (404), and those that come later at once. */
  const releaseStalls = () => {
    stalling = false;
    for (const response of stalled.splice(0)) response.writeHead(404).end();
  };

  test("forty requests from one address for images that never come do not keep another address from its image", { timeout: 60_000 }, async () => {
    stalling = true;
    const locations = await Promise.all(Array.from({ length: 40 }, (_, i) => proxied(patient, `${origin}/stall/patient-${i}.png`)));
    const cat = await proxied(patient, `${origin}/cat.png`);
    const heldBefore = stalled.length;
    const statuses: number[] = [];
    const attacker = locations.map((location) =>
      from(patient, location, "203.0.113.7").then(async (response) => {
        statuses.push(response.status);
        await response.arrayBuffer();
        return response.status;
      }),
    );
    try {
      // Two fetches (its share) reach the other site, 32 more wait their turn, the last 6 are refused.
      await until(() => stalled.length - heldBefore >= 2 && statuses.length >= 6, "the address's share fetching and the rest refused");

      const other = await from(patient, cat, "198.51.100.20");
      assert.equal(other.status, 200);
      assert.deepEqual(Buffer.from(await other.arrayBuffer()), PNG);

      // The first address's requests are all still held but the refused ones, and only two reached the other site.
      assert.deepEqual(statuses, [503, 503, 503, 503, 503, 503]);
      assert.equal(stalled.length - heldBefore, 2);
      // An IPv6 client in another /64 is not held up either.
      const v6 = await from(patient, await proxied(patient, `${origin}/sized/100/v6.img`), "2001:db8:1:3::1");
      assert.equal(v6.status, 200);
      assert.equal((await v6.arrayBuffer()).byteLength, 100);
    } finally {
      // The site answers at last (404): every waiting request gets its turn and its answer.
      releaseStalls();
    }
    const final = await Promise.all(attacker);
    assert.equal(final.filter((status) => status === 503).length, 6);
    assert.equal(final.filter((status) => status === 404).length, 34);
  });

  test("a site that never starts answering is given up on after the first-byte limit, freeing the address's slot", { timeout: 60_000 }, async () => {
    stalling = true;
    const never = await proxied(quick, `${origin}/stall/quick.png`);
    const cat = await proxied(quick, `${origin}/cat.png`);
    const heldBefore = stalled.length;
    const waiting = from(quick, never, "203.0.113.8");
    try {
      await until(() => stalled.length > heldBefore, "the fetch reaching the site");
      // The address's one slot is held: this waits for it, and gets it when the first fetch gives up.
      const next = from(quick, cat, "203.0.113.8");
      const failed = await waiting;
      assert.equal(failed.status, 404);
      assert.deepEqual(await failed.json(), { result: "error", msg: "Image not available", code: "BAD_REQUEST" });
      const image = await next;
      assert.equal(image.status, 200);
      assert.deepEqual(Buffer.from(await image.arrayBuffer()), PNG);
    } finally {
      releaseStalls();
    }
  });

  test("a site that stops sending midway is given up on after the idle limit", { timeout: 60_000 }, async () => {
    const response = await from(quick, await proxied(quick, `${origin}/trickle.png`), "203.0.113.9");
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { result: "error", msg: "Image not available", code: "BAD_REQUEST" });
    assert.ok([...cacheFiles(quick).keys()].every((name) => !name.includes(".tmp-")));
  });

  test("an image is fetched once: later readers, from any address, get the kept copy with its type", async () => {
    const location = await proxied(quick, `${origin}/sized/700/once.img?type=image%2Fwebp`);
    const hitsBefore = hits.get("/sized/700/once.img?type=image%2Fwebp") ?? 0;
    const bodies: Buffer[] = [];
    for (const address of ["203.0.113.10", "203.0.113.11", "2001:db8::5"]) {
      const response = await from(quick, location, address);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("content-type"), "image/webp");
      assert.equal(response.headers.get("content-length"), "700");
      assert.equal(response.headers.get("cache-control"), "public, max-age=86400");
      assert.equal(response.headers.get("content-security-policy"), "default-src 'none'; sandbox");
      bodies.push(Buffer.from(await response.arrayBuffer()));
    }
    assert.equal(hits.get("/sized/700/once.img?type=image%2Fwebp")! - hitsBefore, 1, "one request reached the other site");
    assert.deepEqual(bodies[1], bodies[0]);
    assert.deepEqual(bodies[2], bodies[0]);
    assert.equal(bodies[0]!.length, 700);
  });

  test("the cache keeps at most its bound on disk, the least recently used image going first", async () => {
    const url = (name: string, size = 1000) => `${origin}/sized/${size}/${name}.img`;
    const get = async (name: string, size?: number) => {
      const response = await fetch(small.url + (await proxied(small, url(name, size))));
      assert.equal(response.status, 200, name);
      const body = Buffer.from(await response.arrayBuffer());
      assert.equal(body.length, size ?? 1000, name);
    };
    const hitsOf = (name: string, size = 1000) => hits.get(new URL(url(name, size)).pathname) ?? 0;
    const withinBound = () => {
      const files = cacheFiles(small);
      return [...files.values()].reduce((a, b) => a + b, 0) <= CACHE_BOUND;
    };
    // Two images of 1000 bytes (and their headers) fit, three do not.
    await get("lru-a");
    await get("lru-b");
    await get("lru-a");
    assert.equal(hitsOf("lru-a"), 1);
    await get("lru-c"); // b is the least recently used: it goes
    await until(withinBound, "the cache back within its bound");
    assert.equal(cacheFiles(small).size, 2);
    await get("lru-a");
    await get("lru-c");
    assert.deepEqual([hitsOf("lru-a"), hitsOf("lru-c")], [1, 1], "a and c were kept");
    await get("lru-b");
    assert.equal(hitsOf("lru-b"), 2, "b was fetched again");
    await until(withinBound, "the cache back within its bound");
    assert.equal(cacheFiles(small).size, 2);

    // An image bigger than the whole bound is served whole, and not kept.
    await get("lru-huge", 3000);
    await until(withinBound, "the cache back within its bound");
    await get("lru-huge", 3000);
    assert.equal(hitsOf("lru-huge", 3000), 2);
  });

  test("the cache: readers of an image being fetched share the fetch; a copy lasts its age; a restart finds the copies kept", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-image-cache-"));
    try {
      let now = 1_000_000;
      const options = { maxBytes: 10_000, maxAgeMs: 24 * 3600 * 1000, now: () => now };
      const cache = new ExternalContentCache(dir, options);
      let fetches = 0;
      let land!: () => void;
      const landed = new Promise<void>((resolve) => (land = resolve));
      const fetchImage = async () => {
        fetches += 1;
        await landed;
        return { contentType: "image/gif", body: Readable.from([Buffer.from("GIF89a"), Buffer.from("-bytes")]) };
      };
      const read = async (image: { file: import("node:fs/promises").FileHandle; bodyOffset: number; bodySize: number; contentType: string }) => {
        const bytes = Buffer.alloc(image.bodySize);
        await image.file.read(bytes, 0, image.bodySize, image.bodyOffset);
        await image.file.close();
        return `${image.contentType} ${bytes.toString()}`;
      };
      const readers = Array.from({ length: 5 }, () => cache.fetch("https://example.com/a.gif", fetchImage));
      land();
      assert.deepEqual(await Promise.all(readers.map(async (reader) => read(await reader))), Array(5).fill("image/gif GIF89a-bytes"));
      assert.equal(fetches, 1);

      now += 23 * 3600 * 1000;
      assert.equal(await read((await cache.open("https://example.com/a.gif"))!), "image/gif GIF89a-bytes");
      // Another process (or the next run) on the same directory finds it.
      const restarted = new ExternalContentCache(dir, options);
      assert.equal(await read((await restarted.open("https://example.com/a.gif"))!), "image/gif GIF89a-bytes");
      assert.equal(await restarted.open("https://example.com/other.gif"), undefined);
      // A day after it was fetched, it is fetched again.
      now += 3600 * 1000;
      assert.equal(await cache.open("https://example.com/a.gif"), undefined);
      assert.equal(await read(await cache.fetch("https://example.com/a.gif", fetchImage)), "image/gif GIF89a-bytes");
      assert.equal(fetches, 2);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
