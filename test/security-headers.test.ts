// The security headers (docs/security.md, "Security headers"): the web
// client's page and files carry a Content-Security-Policy that lets no other
// site frame them and runs only the page's own script files; every reply
// (API, files, other pages, errors) carries X-Frame-Options, nosniff and a
// Referrer-Policy; HSTS only when the browser reached the server over HTTPS.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ensureClientBuilt } from "./browser.ts";
import { assertSuccess, basicAuth, startTestApp, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  ensureClientBuilt();
  t = await startTestApp();
});
after(() => t.close());

/** A CSP header's directives: name → its source list. */
function directives(policy: string | null): Map<string, string[]> {
  assert.ok(policy, "no Content-Security-Policy");
  const out = new Map<string, string[]>();
  for (const part of policy.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out.set(name.toLowerCase(), sources);
  }
  return out;
}

/** The headers every reply carries, whatever it is. */
function assertCommonHeaders(headers: Headers, what: string): void {
  assert.equal(headers.get("x-frame-options"), "DENY", what);
  assert.equal(headers.get("x-content-type-options"), "nosniff", what);
  assert.equal(headers.get("cross-origin-opener-policy"), "same-origin", what);
  assert.ok(headers.get("content-security-policy"), `${what}: no Content-Security-Policy`);
  assert.equal(headers.get("strict-transport-security"), null, `${what}: HSTS over plain HTTP`);
}

/** The web client's policy: framed by no one, only its own scripts, nothing inline but style attributes. */
function assertWebClientPolicy(headers: Headers, what: string): void {
  assertCommonHeaders(headers, what);
  assert.equal(headers.get("referrer-policy"), "strict-origin-when-cross-origin", what);
  const csp = directives(headers.get("content-security-policy"));
  assert.deepEqual(csp.get("frame-ancestors"), ["'none'"], what);
  assert.deepEqual(csp.get("default-src"), ["'self'"], what);
  assert.deepEqual(csp.get("object-src"), ["'none'"], what);
  assert.deepEqual(csp.get("base-uri"), ["'none'"], what);
  assert.deepEqual(csp.get("script-src"), ["'self'"], what);
  assert.deepEqual(csp.get("style-src"), ["'self'"], what);
  assert.deepEqual(csp.get("style-src-attr"), ["'unsafe-inline'"], what);
  assert.deepEqual(csp.get("form-action"), ["'self'"], what);
  // Avatars are at the organization's URL (EXTERNAL_URL), which a browser may reach under another name.
  assert.deepEqual(csp.get("img-src"), ["'self'", "http://parley.test", "https://i.ytimg.com"], what);
  for (const [name, sources] of csp) {
    assert.ok(!sources.includes("'unsafe-eval'"), `${what}: ${name} allows eval`);
    assert.ok(!sources.includes("data:") && !sources.includes("*"), `${what}: ${name} ${sources.join(" ")}`);
    if (name !== "style-src-attr") assert.ok(!sources.includes("'unsafe-inline'"), `${what}: ${name} allows inline`);
  }
}

/** The page's scripts: each one a file (src=) or non-executable JSON data. */
function assertNoInlineScript(html: string): void {
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  assert.ok(scripts.length > 0, html);
  for (const [, attributes, body] of scripts) {
    const isFile = /\bsrc="\/assets\//.test(attributes!) && body === "";
    const isData = /\btype="application\/json"/.test(attributes!);
    assert.ok(isFile || isData, `an inline script: <script${attributes}>${body}`);
  }
  assert.ok(!/\son[a-z]+=/i.test(html), "an inline event handler");
}

describe("the web client's headers", () => {
  test("GET / for a visitor: the client's policy, framed by no one, no inline script", async () => {
    const page = await fetch(t.url + "/");
    assert.equal(page.status, 200);
    assertWebClientPolicy(page.headers, "GET /");
    assertNoInlineScript(await page.text());
  });

  test("GET / for a signed-in browser: the same policy; the session it carries is JSON data, not a script", async () => {
    const session = await t.login(t.users.member);
    const page = await fetch(t.url + "/", { headers: { cookie: session.cookie } });
    assert.equal(page.status, 200);
    assertWebClientPolicy(page.headers, "signed-in GET /");
    const html = await page.text();
    assert.match(html, /<script id="parley-session" type="application\/json">/);
    assertNoInlineScript(html);
  });

  test("every file the page names (script, stylesheet, icon, fonts) has the headers, compressed or not", async () => {
    const html = await (await fetch(t.url + "/")).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.some((a) => a.endsWith(".js")) && assets.some((a) => a.endsWith(".css")) && assets.some((a) => a.endsWith(".svg")), assets.join(", "));
    // The stylesheet's fonts (KaTeX's, bundled).
    const css = await (await fetch(t.url + assets.find((a) => a.endsWith(".css"))!)).text();
    const font = /url\((\/assets\/[^)]+\.woff2)\)/.exec(css)?.[1];
    assert.ok(font, "a bundled font");
    for (const asset of [...assets, font]) {
      for (const encoding of ["br", "identity"]) {
        const reply = await fetch(t.url + asset, { headers: { "accept-encoding": encoding } });
        assert.equal(reply.status, 200, asset);
        assertWebClientPolicy(reply.headers, `${asset} (${encoding})`);
      }
    }
    const fontReply = await fetch(t.url + font);
    assert.equal(fontReply.headers.get("content-type"), "font/woff2");
    // A name that is not a file: Zulip's JSON error, with the headers too.
    const missing = await fetch(t.url + "/assets/no-such-file.js");
    assert.equal(missing.status, 404);
    assertCommonHeaders(missing.headers, "a missing asset");
    assert.deepEqual(directives(missing.headers.get("content-security-policy")).get("default-src"), ["'none'"]);
  });

  test("the page names no data: URL (the policy allows none) and no other site's script or style", async () => {
    const html = await (await fetch(t.url + "/")).text();
    assert.ok(!html.includes("data:"), html);
    for (const [, url] of html.matchAll(/(?:src|href)="([^"]+)"/g)) assert.match(url!, /^\/assets\//, url);
  });
});

describe("every other reply", () => {
  test("API replies, successes and errors alike: locked-down policy, nosniff, no framing", async () => {
    const replies = {
      "GET /api/v1/users/me": await t.api(t.users.member, "GET", "/users/me"),
      "GET /api/v1/server_settings (no auth)": await t.api(null, "GET", "/server_settings"),
      "401 without credentials": await t.api(null, "GET", "/users/me"),
      "400 bad parameter": await t.api(t.users.member, "GET", "/messages", { anchor: "nowhere" }),
      "404 unknown endpoint": await t.api(t.users.member, "GET", "/no/such/endpoint"),
      "/json reply": await t.json(await t.login(t.users.member), "GET", "/users/me"),
    };
    for (const [what, reply] of Object.entries(replies)) {
      assertCommonHeaders(reply.headers, what);
      assert.equal(reply.headers.get("referrer-policy"), "strict-origin-when-cross-origin", what);
      const csp = directives(reply.headers.get("content-security-policy"));
      assert.deepEqual(csp.get("default-src"), ["'none'"], what);
      assert.deepEqual(csp.get("frame-ancestors"), ["'none'"], what);
    }
    assert.equal(replies["GET /api/v1/users/me"].status, 200);
    assert.equal(replies["401 without credentials"].status, 401);
  });

  test("the password reset page keeps its own stricter headers (no Referer: its URL holds the token) and gets the rest", async () => {
    const page = await fetch(t.url + "/accounts/password/reset/");
    assert.equal(page.status, 200);
    assertCommonHeaders(page.headers, "password reset page");
    assert.equal(page.headers.get("referrer-policy"), "no-referrer");
    const csp = directives(page.headers.get("content-security-policy"));
    assert.deepEqual(csp.get("default-src"), ["'none'"]);
    assert.deepEqual(csp.get("frame-ancestors"), ["'none'"]);
    assert.deepEqual(csp.get("form-action"), ["'self'"]);
  });

  test("an uploaded file keeps Zulip's policy for uploads and gets nosniff and no framing", async () => {
    const form = new FormData();
    form.append("file", new Blob(["some notes"], { type: "text/plain" }), "notes.txt");
    const uploaded = await fetch(t.url + "/api/v1/user_uploads", {
      method: "POST",
      headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) },
      body: form,
    });
    const url = assertSuccess({ status: uploaded.status, headers: uploaded.headers, body: await uploaded.json() }).url as string;
    const file = await fetch(t.url + url, { headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) } });
    assert.equal(file.status, 200);
    assertCommonHeaders(file.headers, "an upload");
    assert.match(file.headers.get("content-security-policy")!, /^default-src 'none'; media-src 'self'/);
  });
});

describe("Strict-Transport-Security", () => {
  const paths = ["/", "/api/v1/server_settings", "/accounts/password/reset/", "/no/such/path"];

  test("sent when a trusted proxy says the browser came over HTTPS, not for plain HTTP nor from anyone else", async () => {
    const behindProxy = await startTestApp({ trustedProxies: ["127.0.0.1"] });
    try {
      const html = await (await fetch(behindProxy.url + "/")).text();
      const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
      for (const path of [...paths, asset]) {
        const overHttps = await fetch(behindProxy.url + path, { headers: { "x-forwarded-proto": "https" } });
        assert.equal(overHttps.headers.get("strict-transport-security"), "max-age=31536000", path);
        const overHttp = await fetch(behindProxy.url + path);
        assert.equal(overHttp.headers.get("strict-transport-security"), null, path);
        const saysHttp = await fetch(behindProxy.url + path, { headers: { "x-forwarded-proto": "http" } });
        assert.equal(saysHttp.headers.get("strict-transport-security"), null, path);
      }
      // A server that trusts no proxy: the header is anyone's to send, and means nothing.
      for (const path of paths) {
        const claimed = await fetch(t.url + path, { headers: { "x-forwarded-proto": "https" } });
        assert.equal(claimed.headers.get("strict-transport-security"), null, path);
      }
    } finally {
      await behindProxy.close();
    }
  });

  test("sent when the organization's URL is https:// (a proxy in front, whether or not it is named), and the policy names that origin", async () => {
    const https = await startTestApp({ externalUrl: "https://chat.example.org" });
    try {
      for (const path of paths) {
        const reply = await fetch(https.url + path);
        assert.equal(reply.headers.get("strict-transport-security"), "max-age=31536000", path);
      }
      const csp = directives((await fetch(https.url + "/")).headers.get("content-security-policy"));
      assert.deepEqual(csp.get("img-src"), ["'self'", "https://chat.example.org", "https://i.ytimg.com"]);
    } finally {
      await https.close();
    }
  });
});
