// The image proxy: /thumbnail?url=<an image on another site> redirects to a
// signed /external_content/<digest>/<hex URL>, which fetches the image on the
// reader's behalf (Zulip's camo). Against real local HTTP servers: images,
// redirects, pages that are not images, SVG, oversized and slow replies, and
// the refusal of internal addresses when the server is not told to allow them.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { isInternalAddress, isProxiedImageType, verifiedExternalUrl } from "../src/domain/external-content.ts";
import { assertSuccess, basicAuth, startTestApp, type TestApp } from "./helpers.ts";

// A 1×1 PNG.
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201" + "e3d0a3a10000000049454e44ae426082", "hex");
const BIG = 10 * 1024 * 1024 + 1;

let upstream: http.Server;
let origin: string;
let t: TestApp;
let strict: TestApp;

before(async () => {
  upstream = http.createServer((request, response) => {
    const path = request.url ?? "/";
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
    for (const path of ["/page.html", "/drawing.svg", "/broken.png", "/missing.png", "/huge.png", "/slow.png", "/bad-redirect"]) {
      const response = await fetch(t.url + (await proxied(t, origin + path)));
      assert.equal(response.status, 404, path);
      assert.deepEqual(await response.json(), { result: "error", msg: "Image not available", code: "BAD_REQUEST" }, path);
    }
    // Past the cap with no length given: the bytes stop there (the reply cannot change its status any more).
    const endless = await fetch(t.url + (await proxied(t, `${origin}/endless.png`)));
    assert.equal(endless.status, 200);
    await assert.rejects(async () => {
      const body = Buffer.from(await endless.arrayBuffer());
      assert.ok(body.length <= 10 * 1024 * 1024, `${body.length} bytes came through`);
      throw new Error("cut off");
    });
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
