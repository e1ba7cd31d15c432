// Browser sessions (issue 20): POST /json/login, GET /json/session, POST
// /json/logout, and every API route served at /json with the session cookie
// and CSRF checks, over real HTTP.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
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
    // Nor are the browser endpoints under /api/v1.
    assertError(await t.api(null, "POST", "/login", { username: user.email, password: user.password }), 404, "BAD_REQUEST");
    assertError(await t.api(user, "GET", "/session"), 404, "BAD_REQUEST");
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
