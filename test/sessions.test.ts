// Browser sessions (issue 20): POST /json/login, GET /json/session, POST
// /json/logout, and every API route served at /json with the session cookie
// and CSRF checks, over real HTTP.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { buildApp } from "../src/app.ts";
import { openServices } from "../src/server.ts";
import { assertError, assertSuccess, basicAuth, type BrowserSession, type TestApp, type TestUser, startTestApp } from "./helpers.ts";

const NOT_LOGGED_IN = "Not logged in: API authentication or user session required";
const AUTH_FAILED = "Your username or password is incorrect";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

let counter = 0;
async function freshUser(): Promise<TestUser> {
  counter += 1;
  return t.createUser(`Session User ${counter}`);
}

function setCookie(headers: Headers): string {
  const value = headers.get("set-cookie");
  assert.ok(value, "no Set-Cookie header");
  return value;
}

describe("POST /json/login", () => {
  test("right password: 200 with user_id, email and csrf_token, and an HttpOnly SameSite=Lax cookie for /", async () => {
    const user = await freshUser();
    const reply = await t.json(null, "POST", "/login", { username: user.email, password: user.password });
    const body = assertSuccess(reply);
    assert.deepEqual(Object.keys(body).sort(), ["csrf_token", "email", "msg", "result", "user_id"]);
    assert.equal(body.user_id, user.id);
    assert.equal(body.email, user.email);
    assert.match(body.csrf_token, /^[A-Za-z0-9_-]{43}$/);
    assert.ok(!JSON.stringify(body).includes(user.apiKey), "the API key reached the page");
    const cookie = setCookie(reply.headers);
    assert.match(cookie, /^parley_session=[A-Za-z0-9_-]{43}; /);
    const attributes = cookie.split("; ").slice(1);
    assert.ok(attributes.includes("HttpOnly"), cookie);
    assert.ok(attributes.includes("SameSite=Lax"), cookie);
    assert.ok(attributes.includes("Path=/"), cookie);
    assert.ok(attributes.includes(`Max-Age=${14 * 24 * 3600}`), cookie);
    assert.ok(!attributes.includes("Secure"), "Secure over plain HTTP");
  });

  test("the token is stored hashed: the database never holds the cookie's value", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const token = session.cookie.split("=")[1]!;
    const rows = await t.services.storage.db.selectFrom("sessions").selectAll().where("user_id", "=", user.id).execute();
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0]!.token_hash, token);
    assert.match(rows[0]!.token_hash, /^[0-9a-f]{64}$/);
    assert.equal(rows[0]!.csrf_token, session.csrfToken);
  });

  test("JSON body works like a form", async () => {
    const user = await freshUser();
    const body = assertSuccess(await t.json(null, "POST", "/login", { username: user.email, password: user.password }, { encoding: "json" }));
    assert.equal(body.user_id, user.id);
  });

  test("wrong password, unknown user, bot: fetch_api_key's 401 AUTHENTICATION_FAILED, no cookie", async () => {
    const user = await freshUser();
    for (const [username, password] of [
      [user.email, "wrong"],
      ["nobody@example.com", "x"],
      [t.users.bot.email, "x"],
    ] as const) {
      const reply = await t.json(null, "POST", "/login", { username, password });
      assertError(reply, 401, "AUTHENTICATION_FAILED", AUTH_FAILED);
      assert.equal(reply.headers.get("set-cookie"), null);
      const api = await t.api(null, "POST", "/fetch_api_key", { username, password });
      assert.deepEqual(reply.body, api.body);
    }
  });

  test("missing parameters: 400 REQUEST_VARIABLE_MISSING", async () => {
    assertError(await t.json(null, "POST", "/login", { username: "a@example.com" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'password' argument", { var_name: "password" });
    assertError(await t.json(null, "POST", "/login", { password: "x" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'username' argument", { var_name: "username" });
  });

  test("deactivated account: 401 USER_DEACTIVATED (after the password check)", async () => {
    const user = await freshUser();
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${user.id}`));
    assertError(await t.json(null, "POST", "/login", { username: user.email, password: user.password }), 401, "USER_DEACTIVATED");
  });

  test("GET /json/login: 405; the API-key endpoints are not served under /json", async () => {
    assertError(await t.json(null, "GET", "/login"), 405, "METHOD_NOT_ALLOWED");
    const user = await freshUser();
    assertError(await t.json(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }), 404, "BAD_REQUEST", "Endpoint not found");
    assertError(await t.json(null, "POST", "/dev_fetch_api_key", { username: user.email }), 404, "BAD_REQUEST");
    assertError(await t.json(null, "POST", "/invites/join/somekey", { full_name: "X", password: "secret-pass" }), 405, "METHOD_NOT_ALLOWED");
    // Nor are the browser endpoints under /api/v1.
    assertError(await t.api(null, "POST", "/login", { username: user.email, password: user.password }), 404, "BAD_REQUEST");
    assertError(await t.api(user, "GET", "/session"), 404, "BAD_REQUEST");
  });

  test("a sign-in another site makes the browser send (Sec-Fetch-Site: cross-site): 403 CSRF_FAILED, no cookie", async () => {
    const user = await freshUser();
    const cross = await t.json(null, "POST", "/login", { username: user.email, password: user.password }, { headers: { "sec-fetch-site": "cross-site" } });
    assertError(cross, 403, "CSRF_FAILED", "CSRF error: Cross-site sign-in refused.");
    assert.equal(cross.headers.get("set-cookie"), null);
    for (const site of ["same-origin", "same-site", "none"]) {
      assertSuccess(await t.json(null, "POST", "/login", { username: user.email, password: user.password }, { headers: { "sec-fetch-site": site } }));
    }
  });

  test("signing in again with a cookie ends the old session", async () => {
    const user = await freshUser();
    const first = await t.login(user);
    const reply = await t.json(first, "POST", "/login", { username: user.email, password: user.password });
    assertSuccess(reply);
    assertError(await t.json(first, "GET", "/session"), 401, "UNAUTHORIZED", NOT_LOGGED_IN);
  });
});

describe("GET /json/session and POST /json/logout", () => {
  test("session: who is signed in, with the CSRF token", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const body = assertSuccess(await t.json(session, "GET", "/session"));
    assert.deepEqual(body, { result: "success", msg: "", user_id: user.id, email: user.email, full_name: `Session User ${counter}`, csrf_token: session.csrfToken });
  });

  test("no cookie, a made-up cookie: 401 UNAUTHORIZED with a Session challenge; a bad cookie is cleared", async () => {
    const none = await t.json(null, "GET", "/session");
    assertError(none, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    assert.equal(none.headers.get("www-authenticate"), 'Session realm="zulip"');
    assert.equal(none.headers.get("set-cookie"), null);
    for (const value of ["x".repeat(43), "garbage", ""]) {
      const fake = await t.json({ userId: 0, cookie: `parley_session=${value}`, csrfToken: "x" }, "GET", "/session");
      assertError(fake, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
      assert.match(setCookie(fake.headers), /^parley_session=; Max-Age=0; /);
    }
  });

  test("Basic auth is not accepted under /json", async () => {
    const reply = await t.json(null, "GET", "/users/me", {}, { headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) } });
    assertError(reply, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
  });

  test("logout needs the CSRF token, ends this session only, and clears the cookie", async () => {
    const user = await freshUser();
    const a = await t.login(user);
    const b = await t.login(user);
    assertError(await t.json(a, "POST", "/logout", {}, { csrf: null }), 403, "CSRF_FAILED", "CSRF error: CSRF token missing.");
    assertSuccess(await t.json(a, "GET", "/session"));
    const reply = await t.json(a, "POST", "/logout");
    assert.deepEqual(assertSuccess(reply), { result: "success", msg: "" });
    assert.match(setCookie(reply.headers), /^parley_session=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=\/; HttpOnly; SameSite=Lax$/);
    assertError(await t.json(a, "GET", "/session"), 401, "UNAUTHORIZED");
    assertError(await t.json(a, "POST", "/logout"), 401, "UNAUTHORIZED");
    assertSuccess(await t.json(b, "GET", "/session"));
    // The API key is untouched.
    assertSuccess(await t.api(user, "GET", "/users/me"));
  });
});

describe("/json mirrors /api/v1", () => {
  let user: TestUser;
  let session: BrowserSession;
  before(async () => {
    user = await freshUser();
    session = await t.login(user);
  });

  test("GET: the same reply as /api/v1", async () => {
    const api = assertSuccess(await t.api(user, "GET", "/users/me"));
    const json = assertSuccess(await t.json(session, "GET", "/users/me"));
    assert.deepEqual(json, api);
    const apiChannels = assertSuccess(await t.api(user, "GET", "/streams"));
    assert.deepEqual(assertSuccess(await t.json(session, "GET", "/streams")), apiChannels);
  });

  test("POST, PATCH, DELETE go to the same handlers (drafts)", async () => {
    const draft = { type: "", to: [], topic: "", content: "from the browser", timestamp: 1_700_000_000 };
    const created = assertSuccess(await t.json(session, "POST", "/drafts", { drafts: [draft] }));
    assert.equal(created.ids.length, 1);
    const id = created.ids[0];
    assertSuccess(await t.json(session, "PATCH", `/drafts/${id}`, { draft: { ...draft, content: "edited" } }));
    const listed = assertSuccess(await t.api(user, "GET", "/drafts"));
    assert.equal(listed.drafts.find((d: { id: number }) => d.id === id).content, "edited");
    assertSuccess(await t.json(session, "DELETE", `/drafts/${id}`));
    assert.equal(assertSuccess(await t.api(user, "GET", "/drafts")).drafts.length, 0);
    // Errors are the same too.
    const apiError = await t.api(user, "DELETE", `/drafts/${id}`);
    const jsonError = await t.json(session, "DELETE", `/drafts/${id}`);
    assert.equal(jsonError.status, apiError.status);
    assert.deepEqual(jsonError.body, apiError.body);
  });

  test("unsafe methods without the CSRF token, or with a wrong one: 403 CSRF_FAILED, nothing changes", async () => {
    for (const [method, path] of [
      ["POST", "/drafts"],
      ["PATCH", "/settings"],
      ["DELETE", "/drafts/1"],
    ]) {
      const missing = await t.json(session, method!, path!, { full_name: "Changed" }, { csrf: null });
      assertError(missing, 403, "CSRF_FAILED", "CSRF error: CSRF token missing.", { reason: "CSRF token missing." });
      const wrong = await t.json(session, method!, path!, { full_name: "Changed" }, { csrf: "x".repeat(43) });
      assertError(wrong, 403, "CSRF_FAILED", "CSRF error: CSRF token incorrect.", { reason: "CSRF token incorrect." });
    }
    // Another session's token is wrong for this one.
    const other = await t.login(await freshUser());
    assertError(await t.json(session, "PATCH", "/settings", { full_name: "Changed" }, { csrf: other.csrfToken }), 403, "CSRF_FAILED");
    assert.notEqual(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Changed");
    // With it, the change goes through.
    assertSuccess(await t.json(session, "PATCH", "/settings", { full_name: "Changed" }));
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Changed");
  });

  test("no cookie: 401 before the CSRF check, for every method", async () => {
    for (const method of ["GET", "POST", "PATCH", "DELETE"]) {
      assertError(await t.json(null, method, "/users/me/subscriptions"), 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    }
  });

  test("public endpoints are served too, without a session", async () => {
    const api = assertSuccess(await t.api(null, "GET", "/server_settings"));
    assert.deepEqual(assertSuccess(await t.json(null, "GET", "/server_settings")), api);
  });

  test("unknown path under /json: 404 JSON", async () => {
    assertError(await t.json(session, "GET", "/nope"), 404, "BAD_REQUEST", "Endpoint not found");
  });
});

describe("how sessions end", () => {
  test("a session expires SESSION_AGE_SECONDS after sign-in: 401 and the cookie cleared", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const realNow = t.services.now;
    const start = realNow();
    try {
      t.services.now = () => start + 14 * 24 * 3600 - 5;
      assertSuccess(await t.json(session, "GET", "/session"));
      t.services.now = () => start + 14 * 24 * 3600 + 1;
      const expired = await t.json(session, "GET", "/users/me");
      assertError(expired, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
      assert.match(setCookie(expired.headers), /^parley_session=; Max-Age=0/);
      // A new sign-in then clears out the expired rows.
      await t.login(await freshUser());
      const left = await t.services.storage.db.selectFrom("sessions").select("token_hash").where("user_id", "=", user.id).execute();
      assert.equal(left.length, 0);
    } finally {
      t.services.now = realNow;
    }
  });

  test("SESSION_AGE_SECONDS sets the cookie's Max-Age and the session's life", async () => {
    const app = await startTestApp({ sessionAgeSeconds: 120 });
    try {
      const session = await app.login(app.users.member);
      const reply = await app.json(null, "POST", "/login", { username: app.users.member.email, password: app.users.member.password });
      assert.match(setCookie(reply.headers), /; Max-Age=120; /);
      const realNow = app.services.now;
      const start = realNow();
      app.services.now = () => start + 121;
      assertError(await app.json(session, "GET", "/session"), 401, "UNAUTHORIZED");
      app.services.now = realNow;
    } finally {
      await app.close();
    }
  });

  test("changing the password at /json/settings ends every other session; the one that asked stays", async () => {
    const user = await freshUser();
    const asking = await t.login(user);
    const other = await t.login(user);
    assertSuccess(await t.json(asking, "PATCH", "/settings", { old_password: user.password, new_password: "a-new-password" }));
    assertSuccess(await t.json(asking, "GET", "/session"));
    assertError(await t.json(other, "GET", "/session"), 401, "UNAUTHORIZED");
    // The new password signs in; the old one no longer does.
    assertSuccess(await t.json(null, "POST", "/login", { username: user.email, password: "a-new-password" }));
    assertError(await t.json(null, "POST", "/login", { username: user.email, password: user.password }), 401, "AUTHENTICATION_FAILED");
  });

  test("changing the password with the API key ends every session; other settings end none; a wrong old password ends none", async () => {
    const user = await freshUser();
    const a = await t.login(user);
    assertSuccess(await t.api(user, "PATCH", "/settings", { full_name: "Renamed Member" }));
    assertSuccess(await t.json(a, "GET", "/session"));
    assertError(await t.api(user, "PATCH", "/settings", { old_password: "wrong", new_password: "another-password" }), 400, "BAD_REQUEST", "Wrong password!");
    assertSuccess(await t.json(a, "GET", "/session"));
    const b = await t.login(user);
    assertSuccess(await t.api(user, "PATCH", "/settings", { old_password: user.password, new_password: "another-password" }));
    assertError(await t.json(a, "GET", "/session"), 401, "UNAUTHORIZED");
    assertError(await t.json(b, "GET", "/session"), 401, "UNAUTHORIZED");
    // The API key still works (Zulip keeps it on a password change).
    assertSuccess(await t.api(user, "GET", "/users/me"));
  });

  test("deactivation ends the user's sessions and those of the bots they own; reactivation does not bring them back", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const bystander = await t.login(await freshUser());
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${user.id}`));
    assertError(await t.json(session, "GET", "/session"), 401, "UNAUTHORIZED");
    assertSuccess(await t.json(bystander, "GET", "/session"));
    assertSuccess(await t.api(t.users.owner, "POST", `/users/${user.id}/reactivate`));
    assertError(await t.json(session, "GET", "/session"), 401, "UNAUTHORIZED");
    assertSuccess(await t.json(null, "POST", "/login", { username: user.email, password: user.password }));
  });

  test("deactivating one's own account from the browser (DELETE /json/users/me) signs it out", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    assertSuccess(await t.json(session, "DELETE", "/users/me"));
    assertError(await t.json(session, "GET", "/session"), 401, "UNAUTHORIZED");
  });

  test("sessions live in the database: a second server process on it accepts the cookie (and sees logouts)", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const services = await openServices(t.services.config, t.services.storage);
    const app = await buildApp(services);
    try {
      const reply = await app.inject({ method: "GET", url: "/json/session", headers: { cookie: session.cookie } });
      assert.equal(reply.statusCode, 200, reply.body);
      assert.equal(JSON.parse(reply.body).user_id, user.id);
      const post = await app.inject({
        method: "POST",
        url: "/json/logout",
        headers: { cookie: session.cookie, "x-csrftoken": session.csrfToken },
      });
      assert.equal(post.statusCode, 200, post.body);
      assertError(await t.json(session, "GET", "/session"), 401, "UNAUTHORIZED");
    } finally {
      services.queues.close();
      await app.close();
    }
  });
});

describe("the Secure flag", () => {
  test("an https:// EXTERNAL_URL makes the cookie Secure (login and logout)", async () => {
    const app = await startTestApp({ externalUrl: "https://parley.test" });
    try {
      const reply = await app.json(null, "POST", "/login", { username: app.users.member.email, password: app.users.member.password });
      assert.ok(setCookie(reply.headers).split("; ").includes("Secure"));
      const session = await app.login(app.users.member);
      assert.ok(setCookie((await app.json(session, "POST", "/logout")).headers).split("; ").includes("Secure"));
    } finally {
      await app.close();
    }
  });

  test("X-Forwarded-Proto: https counts only from a trusted proxy", async () => {
    const trusting = await startTestApp({ trustedProxies: ["127.0.0.1"] });
    try {
      const login = (app: TestApp) =>
        app.json(null, "POST", "/login", { username: app.users.member.email, password: app.users.member.password }, { headers: { "x-forwarded-proto": "https" } });
      assert.ok(setCookie((await login(trusting)).headers).split("; ").includes("Secure"));
      // The shared test app trusts no proxy: the header is anyone's to send.
      assert.ok(!setCookie((await login(t)).headers).split("; ").includes("Secure"));
    } finally {
      await trusting.close();
    }
  });
});

describe("the browser's other requests", () => {
  test("long-poll GET /json/events waits and answers like /api/v1/events", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const registered = assertSuccess(await t.json(session, "POST", "/register", { event_types: ["message"] }));
    const poll = t.json(session, "GET", "/events", { queue_id: registered.queue_id, last_event_id: registered.last_event_id });
    // The poll waits until an event arrives.
    const deadline = Date.now() + 5000;
    while (!t.services.queues.isWaiting(registered.queue_id)) {
      assert.ok(Date.now() < deadline, "no long-poll started");
      await new Promise((r) => setTimeout(r, 5));
    }
    assertSuccess(await t.api(t.users.owner, "POST", "/messages", { type: "direct", to: JSON.stringify([user.id]), content: "hello browser" }));
    const events = assertSuccess(await poll).events;
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0].type, "message");
    assert.equal(events[0].message.content, "hello browser");
  });

  test("an upload sent from the browser is downloaded with the cookie; without it 401; the avatar redirect too", async () => {
    const user = await freshUser();
    const session = await t.login(user);
    const form = new FormData();
    form.append("file", new Blob(["browser notes"], { type: "text/plain" }), "notes.txt");
    const missingCsrf = await fetch(`${t.url}/json/user_uploads`, { method: "POST", body: form, headers: { cookie: session.cookie } });
    assert.equal(missingCsrf.status, 403);
    const uploaded = await fetch(`${t.url}/json/user_uploads`, { method: "POST", body: form, headers: { cookie: session.cookie, "x-csrftoken": session.csrfToken } });
    const body = await uploaded.json();
    assert.equal(uploaded.status, 200, JSON.stringify(body));
    assert.match(body.url, /^\/user_uploads\/\d+\/.+\/notes\.txt$/);

    const withCookie = await fetch(`${t.url}${body.url}`, { headers: { cookie: session.cookie } });
    assert.equal(withCookie.status, 200);
    assert.equal(await withCookie.text(), "browser notes");
    const download = await fetch(`${t.url}${body.url.replace("/user_uploads/", "/user_uploads/download/")}`, { headers: { cookie: session.cookie } });
    assert.equal(download.status, 200);
    assert.match(download.headers.get("content-disposition") ?? "", /^attachment/);
    const anonymous = await fetch(`${t.url}${body.url}`);
    assert.equal(anonymous.status, 401);
    const stale = await fetch(`${t.url}${body.url}`, { headers: { cookie: `parley_session=${"y".repeat(43)}` } });
    assert.equal(stale.status, 401);
    // Someone else's session: the file was never shared with them.
    const stranger = await t.login(await freshUser());
    assert.equal((await fetch(`${t.url}${body.url}`, { headers: { cookie: stranger.cookie } })).status, 403);
    // Basic auth still works on the file routes.
    assert.equal((await fetch(`${t.url}${body.url}`, { headers: { authorization: basicAuth(user.email, user.apiKey) } })).status, 200);

    const avatar = await fetch(`${t.url}/avatar/${user.id}`, { headers: { cookie: session.cookie }, redirect: "manual" });
    assert.equal(avatar.status, 302);
    assert.equal((await fetch(`${t.url}/avatar/${user.id}`, { redirect: "manual" })).status, 401);
  });
});

describe("rate limits of /json/login", () => {
  let rl: TestApp;
  before(async () => {
    rl = await startTestApp({ rateLimiting: true, apiRateLimitPerMinute: 5 });
  });
  after(() => rl.close());

  test("failed logins count with fetch_api_key's, per username, in the database", async () => {
    const victim = await rl.createUser("Login Victim");
    for (let i = 0; i < 3; i++) assertError(await rl.json(null, "POST", "/login", { username: victim.email, password: `guess-${i}` }), 401, "AUTHENTICATION_FAILED");
    for (let i = 0; i < 2; i++) assertError(await rl.api(null, "POST", "/fetch_api_key", { username: victim.email, password: `guess-${i}` }), 401, "AUTHENTICATION_FAILED");
    const limited = await rl.json(null, "POST", "/login", { username: victim.email, password: victim.password });
    assertError(limited, 429, "RATE_LIMIT_HIT", "API usage exceeded rate limit");
    assert.ok(limited.body["retry-after"] > 1700);
    assert.equal(limited.headers.get("set-cookie"), null);
    assertError(await rl.api(null, "POST", "/fetch_api_key", { username: victim.email, password: victim.password }), 429, "RATE_LIMIT_HIT");
  });

  /** Runs `body` with the limiter's clock standing still, so no budget refills between calls on a slow machine. */
  async function frozen(body: () => Promise<void>): Promise<void> {
    const limiter = rl.services.apiLimiter;
    const clock = limiter.clock;
    const now = clock();
    limiter.clock = () => now;
    try {
      await body();
    } finally {
      limiter.clock = clock;
    }
  }

  test("signed-in calls count against the user's budget, shared between /json and /api/v1", async () => {
    const user = await rl.createUser("Budget User");
    const session = await rl.login(user);
    await frozen(async () => {
      // API_RATE_LIMIT_PER_MINUTE is 5 here: two calls each way, then a fifth (on the edge), use it up for both ways.
      for (let i = 0; i < 2; i++) {
        assertSuccess(await rl.json(session, "GET", "/users/me"));
        assertSuccess(await rl.api(user, "GET", "/users/me"));
      }
      await rl.json(session, "GET", "/users/me");
      assertError(await rl.json(session, "GET", "/users/me"), 429, "RATE_LIMIT_HIT");
      assertError(await rl.api(user, "GET", "/users/me"), 429, "RATE_LIMIT_HIT");
    });
  });

  // Last: it uses up the address's budget.
  test("per IP address: /json/login shares the budget of the other unauthenticated calls", () =>
    frozen(async () => {
      let calls = 0;
      while ((await rl.json(null, "GET", "/server_settings")).status === 200) {
        calls += 1;
        assert.ok(calls <= 100, "the per-IP limit never hit");
      }
      assert.ok(calls > 50, `only ${calls} calls before the limit`);
      const login = await rl.json(null, "POST", "/login", { username: "someone@example.com", password: "x" });
      assertError(login, 429, "RATE_LIMIT_HIT");
      assertError(await rl.api(null, "POST", "/fetch_api_key", { username: "someone@example.com", password: "x" }), 429, "RATE_LIMIT_HIT");
      assertError(await rl.json(null, "GET", "/session"), 429, "RATE_LIMIT_HIT");
    }));
});
