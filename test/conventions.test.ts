// Request conventions, authentication, API-key endpoints, server settings and
// the public images, checked over real HTTP against a running server.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { SERVICE_FEATURE_LEVEL, SERVICE_MERGE_BASE, SERVICE_VERSION } from "../src/version.ts";
import {
  assertError,
  assertSuccess,
  basicAuth,
  startTestApp,
  type ApiResponse,
  type TestApp,
  type TestUser,
} from "./helpers.ts";

const REALM_URL = "http://parley.test";
const BASIC_CHALLENGE = 'Basic realm="zulip"';
const NOT_LOGGED_IN = "Not logged in: API authentication or user session required";
const AUTH_FAILED = "Your username or password is incorrect";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

/** A request with a hand-made URL, headers and body, for what t.api cannot express. */
async function raw(
  app: TestApp,
  method: string,
  urlPath: string,
  init: { headers?: Record<string, string>; body?: string | FormData } = {},
): Promise<ApiResponse> {
  const response = await fetch(app.url + urlPath, { method, headers: init.headers ?? {}, body: init.body ?? null });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: the text itself is what the test looks at.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };

async function me(user: TestUser, app: TestApp = t) {
  return assertSuccess(await app.api(user, "GET", "/users/me"));
}

/** A fresh user that a test may change or deactivate without affecting others. */
let counter = 0;
async function freshUser(app: TestApp = t, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return app.createUser(`Temp User ${counter}`, role);
}

async function deactivate(app: TestApp, user: TestUser): Promise<void> {
  assertSuccess(await app.api(app.users.owner, "DELETE", `/users/${user.id}`));
}

function assertNoIgnored(body: Record<string, unknown>): void {
  assert.equal("ignored_parameters_unsupported" in body, false, JSON.stringify(body));
}

// ---------------------------------------------------------------------------
// 1. Request conventions
// ---------------------------------------------------------------------------

describe("request conventions", () => {
  test("success envelope: result success, msg empty, HTTP 200, JSON content type", async () => {
    const response = await t.api(t.users.member, "GET", "/users/me");
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(response.body.result, "success");
    assert.equal(response.body.msg, "");
    assert.equal(response.body.user_id, t.users.member.id);
    assertNoIgnored(response.body);
  });

  test("GET parameters are read from the query string", async () => {
    const target = t.users.moderator;
    const withFields = assertSuccess(
      await t.api(t.users.member, "GET", `/users/${target.id}`, { include_custom_profile_fields: true, client_gravatar: false }),
    );
    assert.equal(withFields.user.user_id, target.id);
    assert.deepEqual(withFields.user.profile_data, {});
    assertNoIgnored(withFields);
    const without = assertSuccess(await t.api(t.users.member, "GET", `/users/${target.id}`, { include_custom_profile_fields: false }));
    assert.equal("profile_data" in without.user, false);
    const byDefault = assertSuccess(await t.api(t.users.member, "GET", `/users/${target.id}`));
    assert.equal("profile_data" in byDefault.user, false);
  });

  for (const encoding of ["query", "form", "multipart", "json"] as const) {
    test(`PATCH /settings reads full_name from ${encoding} parameters`, async () => {
      const user = await freshUser();
      const name = `Renamed Via ${encoding}`;
      const body = assertSuccess(await t.api(user, "PATCH", "/settings", { full_name: name }, { encoding }));
      assertNoIgnored(body);
      assert.equal((await me(user)).full_name, name);
    });

    test(`PATCH /settings reads timezone from ${encoding} parameters`, async () => {
      const user = await freshUser();
      assertSuccess(await t.api(user, "PATCH", "/settings", { timezone: "Europe/Paris" }, { encoding }));
      assert.equal((await me(user)).timezone, "Europe/Paris");
    });

    test(`POST /users reads email/password/full_name from ${encoding} parameters`, async () => {
      const email = `created-${encoding}@example.com`;
      const full = `Created ${encoding}`;
      const body = assertSuccess(
        await t.api(t.users.owner, "POST", "/users", { email, password: "long-enough-password", full_name: full }, { encoding }),
      );
      assert.equal(typeof body.user_id, "number");
      assertNoIgnored(body);
      const fetched = assertSuccess(await t.api(t.users.owner, "GET", `/users/${body.user_id}`));
      assert.equal(fetched.user.full_name, full);
      assert.equal(fetched.user.delivery_email, email);
      assert.equal(fetched.user.role, Role.MEMBER);
      // The password given works.
      const key = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: email, password: "long-enough-password" }));
      assert.equal(key.user_id, body.user_id);
    });

    test(`PATCH /users/{id} reads role from ${encoding} parameters`, async () => {
      const user = await freshUser();
      assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${user.id}`, { role: Role.MODERATOR }, { encoding }));
      const fetched = assertSuccess(await t.api(t.users.owner, "GET", `/users/${user.id}`));
      assert.equal(fetched.user.role, Role.MODERATOR);
    });

    test(`DELETE /users/{id} reads parameters from ${encoding} (unknown one reported)`, async () => {
      const user = await freshUser();
      const body = assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${user.id}`, { stray: "x" }, { encoding }));
      assert.deepEqual(body.ignored_parameters_unsupported, ["stray"]);
      const fetched = assertSuccess(await t.api(t.users.owner, "GET", `/users/${user.id}`));
      assert.equal(fetched.user.is_active, false);
    });
  }

  test("a body value wins over the same name in the query string", async () => {
    const user = await freshUser();
    const response = await raw(t, "PATCH", `/api/v1/settings?full_name=${encodeURIComponent("From Query")}`, {
      headers: { ...FORM, authorization: basicAuth(user.email, user.apiKey) },
      body: new URLSearchParams({ full_name: "From Body" }).toString(),
    });
    assertSuccess(response);
    assert.equal((await me(user)).full_name, "From Body");
  });

  test("repeated form key: the last value wins", async () => {
    const user = await freshUser();
    const response = await raw(t, "PATCH", "/api/v1/settings", {
      headers: { ...FORM, authorization: basicAuth(user.email, user.apiKey) },
      body: "full_name=First+Name&full_name=Second+Name&full_name=Third+Name",
    });
    const body = assertSuccess(response);
    assertNoIgnored(body);
    assert.equal((await me(user)).full_name, "Third Name");
  });

  test("repeated query key: the last value wins", async () => {
    const response = await raw(t, "GET", `/api/v1/users/${t.users.admin.id}?include_custom_profile_fields=true&include_custom_profile_fields=false`, {
      headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) },
    });
    const body = assertSuccess(response);
    assert.equal("profile_data" in body.user, false);
    const reversed = await raw(t, "GET", `/api/v1/users/${t.users.admin.id}?include_custom_profile_fields=false&include_custom_profile_fields=true`, {
      headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) },
    });
    assert.deepEqual(assertSuccess(reversed).user.profile_data, {});
  });

  test("booleans are JSON: true/false accepted, anything else rejected", async () => {
    const path = `/users/${t.users.admin.id}`;
    const user = t.users.member;
    assertSuccess(await t.api(user, "GET", path, { include_custom_profile_fields: "true", client_gravatar: "false" }));
    assertError(
      await t.api(user, "GET", path, { include_custom_profile_fields: "yes" }),
      400,
      "BAD_REQUEST",
      'Argument "include_custom_profile_fields" is not valid JSON.',
    );
    assertError(
      await t.api(user, "GET", path, { include_custom_profile_fields: "True" }),
      400,
      "BAD_REQUEST",
      'Argument "include_custom_profile_fields" is not valid JSON.',
    );
    assertError(
      await t.api(user, "GET", path, { include_custom_profile_fields: "1" }),
      400,
      "BAD_REQUEST",
      "include_custom_profile_fields is not a boolean",
    );
    assertError(
      await t.api(user, "GET", path, { include_custom_profile_fields: '"true"' }),
      400,
      "BAD_REQUEST",
      "include_custom_profile_fields is not a boolean",
    );
    assertError(
      await t.api(user, "GET", path, { client_gravatar: "yes" }),
      400,
      "BAD_REQUEST",
      'Argument "client_gravatar" is not valid JSON.',
    );
    assertError(await t.api(user, "GET", path, { client_gravatar: "null" }), 400, "BAD_REQUEST", "client_gravatar is not a boolean");
  });

  test("integers: non-JSON role is rejected, an unknown role code is invalid, nothing changes", async () => {
    const user = await freshUser();
    const path = `/users/${user.id}`;
    const response = await t.api(t.users.owner, "PATCH", path, { role: "abc" });
    assertError(response, 400, "BAD_REQUEST", 'Argument "role" is not valid JSON.');
    assertNoIgnored(response.body);
    assertError(await t.api(t.users.owner, "PATCH", path, { role: 250 }), 400, "BAD_REQUEST", "Invalid role");
    assertError(await t.api(t.users.owner, "PATCH", path, { role: 250 }, { encoding: "json" }), 400, "BAD_REQUEST", "Invalid role");
    const fetched = assertSuccess(await t.api(t.users.owner, "GET", path));
    assert.equal(fetched.user.role, Role.MEMBER);
  });

  test("missing required parameter: REQUEST_VARIABLE_MISSING with var_name", async () => {
    assertError(
      await t.api(t.users.owner, "POST", "/users", { password: "long-enough-password", full_name: "No Email" }),
      400,
      "REQUEST_VARIABLE_MISSING",
      "Missing 'email' argument",
      { var_name: "email" },
    );
    assertError(
      await t.api(t.users.owner, "POST", "/users", { email: "nopassword@example.com", full_name: "No Password" }),
      400,
      "REQUEST_VARIABLE_MISSING",
      "Missing 'password' argument",
      { var_name: "password" },
    );
    assertError(
      await t.api(t.users.owner, "POST", "/users", { email: "noname@example.com", password: "long-enough-password" }),
      400,
      "REQUEST_VARIABLE_MISSING",
      "Missing 'full_name' argument",
      { var_name: "full_name" },
    );
    // Nothing was created.
    const list = assertSuccess(await t.api(t.users.owner, "GET", "/users"));
    const emails = list.members.map((m: { delivery_email: string | null }) => m.delivery_email);
    assert.equal(emails.includes("nopassword@example.com"), false);
    assert.equal(emails.includes("noname@example.com"), false);
  });

  test("unknown parameters are listed, sorted, in ignored_parameters_unsupported", async () => {
    const user = await freshUser();
    const body = assertSuccess(
      await t.api(user, "PATCH", "/settings", { zeta: "1", full_name: "Ignored Params", alpha: "2", beta: "3" }),
    );
    assert.deepEqual(body.ignored_parameters_unsupported, ["alpha", "beta", "zeta"]);
    assert.equal((await me(user)).full_name, "Ignored Params");

    const viaQuery = assertSuccess(await t.api(t.users.member, "GET", `/users/${t.users.admin.id}`, { mystery: "x", another: "y" }));
    assert.deepEqual(viaQuery.ignored_parameters_unsupported, ["another", "mystery"]);

    const viaJson = assertSuccess(await t.api(user, "PATCH", "/settings", { timezone: "UTC", unknown_flag: true }, { encoding: "json" }));
    assert.deepEqual(viaJson.ignored_parameters_unsupported, ["unknown_flag"]);

    // Path parameters and declared ones are never reported.
    assertNoIgnored(assertSuccess(await t.api(t.users.member, "GET", `/users/${t.users.admin.id}`, { client_gravatar: true })));
    assertNoIgnored(assertSuccess(await t.api(t.users.member, "GET", "/users/me")));
  });

  test("error replies do not carry ignored_parameters_unsupported", async () => {
    const user = await freshUser();
    const response = await t.api(user, "PATCH", "/settings", { timezone: "Not/AZone", stray: "1" });
    assertError(response, 400, "BAD_REQUEST", "timezone is not a recognized time zone");
    assertNoIgnored(response.body);
  });

  test("unknown endpoint under /api/v1: 404 JSON Endpoint not found", async () => {
    for (const method of ["GET", "POST"]) {
      const response = await raw(t, method, "/api/v1/nope");
      assert.equal(response.status, 404, JSON.stringify(response.body));
      assert.deepEqual(response.body, { result: "error", msg: "Endpoint not found", code: "BAD_REQUEST" });
    }
    // With valid credentials too.
    const authed = await t.api(t.users.member, "GET", "/nope");
    assert.equal(authed.status, 404);
    assert.deepEqual(authed.body, { result: "error", msg: "Endpoint not found", code: "BAD_REQUEST" });
  });

  test("unknown path outside /api/v1: 404 JSON Endpoint not found", async () => {
    for (const path of ["/nope", "/api/v2/users/me", "/avatars-unknown/1"]) {
      const response = await raw(t, "GET", path);
      assert.equal(response.status, 404, path);
      assert.deepEqual(response.body, { result: "error", msg: "Endpoint not found", code: "BAD_REQUEST" }, path);
    }
  });

  test("405 for a known path with the wrong method, with allowed_methods and Allow header", async () => {
    const response = await raw(t, "DELETE", "/api/v1/server_settings");
    assertError(response, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed");
    assert.deepEqual([...response.body.allowed_methods].sort(), ["GET", "HEAD"]);
    const allow = response.headers.get("allow");
    assert.ok(allow !== null, "Allow header present");
    assert.deepEqual(allow.split(/,\s*/).sort(), [...response.body.allowed_methods].sort());
  });

  test("405 happens before authentication", async () => {
    const anonymous = await raw(t, "PUT", "/api/v1/users/me");
    assertError(anonymous, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed");
    const methods: string[] = anonymous.body.allowed_methods;
    for (const m of ["GET", "HEAD", "DELETE"]) assert.ok(methods.includes(m), `${m} in ${JSON.stringify(methods)}`);
    assert.equal(methods.includes("PUT"), false);
    assert.equal(methods.includes("POST"), false);
    assert.deepEqual((anonymous.headers.get("allow") ?? "").split(/,\s*/).sort(), [...methods].sort());
    assert.equal(anonymous.headers.get("www-authenticate"), null);

    // Wrong credentials: still 405, not 401.
    const badAuth = await raw(t, "PUT", "/api/v1/users/me", { headers: { authorization: basicAuth("nobody@example.com", "wrong") } });
    assertError(badAuth, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed");

    const fetchKey = await raw(t, "GET", "/api/v1/fetch_api_key");
    assertError(fetchKey, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed", { allowed_methods: ["POST"] });
    assert.equal(fetchKey.headers.get("allow"), "POST");
  });

  test("oversized request body: 413 JSON error", async () => {
    const small = await startTestApp({ bodyLimitBytes: 2048 });
    try {
      const big = "x".repeat(5000);
      const form = await raw(small, "POST", "/api/v1/fetch_api_key", {
        headers: FORM,
        body: new URLSearchParams({ username: small.users.member.email, password: big }).toString(),
      });
      assertError(form, 413, "BAD_REQUEST", "Request body is too large");

      const json = await raw(small, "POST", "/api/v1/fetch_api_key", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ username: small.users.member.email, password: big }),
      });
      assertError(json, 413, "BAD_REQUEST", "Request body is too large");

      const other = await raw(small, "POST", "/api/v1/fetch_api_key", { headers: { "content-type": "text/plain" }, body: big });
      assertError(other, 413, "BAD_REQUEST", "Request body is too large");

      // Multipart bodies are counted too (Fastify's own limit does not cover them).
      const multipart = await small.api(null, "POST", "/fetch_api_key", { username: small.users.member.email, password: big }, { encoding: "multipart" });
      assertError(multipart, 413, "BAD_REQUEST", "Request body is too large");
      const authedMultipart = await small.api(small.users.member, "PATCH", "/settings", { full_name: "Max Multi", pad: big }, { encoding: "multipart" });
      assertError(authedMultipart, 413, "BAD_REQUEST", "Request body is too large");
      // Without credentials the body is never read: the answer is 401, not 413.
      const anonymous = await small.api(null, "PATCH", "/settings", { full_name: "Max Multi", pad: big }, { encoding: "multipart" });
      assertError(anonymous, 401, "UNAUTHORIZED");

      // A body under the limit is fine on the same server.
      const ok = assertSuccess(
        await small.api(null, "POST", "/fetch_api_key", { username: small.users.member.email, password: small.users.member.password }),
      );
      assert.equal(ok.user_id, small.users.member.id);
    } finally {
      await small.close();
    }
  });

  test("unexpected exception: 500 with a generic message and no details", async () => {
    const storage = t.services.storage;
    const realDb = storage.db;
    const secret = "SECRET-DETAIL-4711";
    storage.db = new Proxy(
      {},
      {
        get() {
          throw new Error(`simulated database failure ${secret}`);
        },
      },
    ) as unknown as typeof realDb;
    let response: ApiResponse;
    try {
      response = await t.api(t.users.member, "GET", "/users/me");
    } finally {
      storage.db = realDb;
    }
    assert.equal(response.status, 500, JSON.stringify(response.body));
    assert.deepEqual(response.body, { result: "error", msg: "Internal server error", code: "INTERNAL_SERVER_ERROR" });
    const text = JSON.stringify(response.body);
    assert.equal(text.includes(secret), false);
    assert.equal(/\bat\s.+:\d+:\d+/.test(text), false, "no stack trace");
    // The server keeps working afterwards.
    assert.equal((await me(t.users.member)).user_id, t.users.member.id);
  });
});

// ---------------------------------------------------------------------------
// 2. Authentication on /api/v1
// ---------------------------------------------------------------------------

describe("authentication", () => {
  test("no Authorization header: 401 UNAUTHORIZED with a Basic challenge", async () => {
    const response = await t.api(null, "GET", "/users/me");
    assertError(response, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
    assert.equal(response.headers.get("www-authenticate"), BASIC_CHALLENGE);
    // An empty header counts as none.
    const empty = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: "" } });
    assertError(empty, 401, "UNAUTHORIZED", NOT_LOGGED_IN);
  });

  test("a non-Basic scheme: 401 UNAUTHORIZED", async () => {
    const response = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: "Bearer x" } });
    assertError(response, 401, "UNAUTHORIZED", "This endpoint requires HTTP basic authentication.");
    assert.equal(response.headers.get("www-authenticate"), BASIC_CHALLENGE);
  });

  test("malformed Basic header: 401 UNAUTHORIZED", async () => {
    const noColon = `Basic ${Buffer.from("just-an-email@example.com").toString("base64")}`;
    const response = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: noColon } });
    assertError(response, 401, "UNAUTHORIZED", "Invalid authorization header for basic auth");
    assert.equal(response.headers.get("www-authenticate"), BASIC_CHALLENGE);
    const noCredentials = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: "Basic" } });
    assertError(noCredentials, 401, "UNAUTHORIZED", "Invalid authorization header for basic auth");
  });

  test("wrong API key or unknown email: 401 INVALID_API_KEY with a Basic challenge", async () => {
    const member = t.users.member;
    const cases: [string, string][] = [
      [member.email, "not-the-right-key"],
      [member.email, ""],
      ["nobody@example.com", member.apiKey],
      ["nobody@example.com", "whatever"],
      // Another user's key with this user's email.
      [member.email, t.users.admin.apiKey],
    ];
    for (const [email, key] of cases) {
      const response = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: basicAuth(email, key) } });
      assertError(response, 401, "INVALID_API_KEY", "Invalid API key");
      assert.equal(response.headers.get("www-authenticate"), BASIC_CHALLENGE);
    }
  });

  test("email matching is case-insensitive; scheme name and surrounding spaces are tolerated", async () => {
    const member = t.users.member;
    const upper = { ...member, email: member.email.toUpperCase() };
    assert.equal((await me(upper)).user_id, member.id);
    const lowerScheme = `basic ${Buffer.from(`${member.email}:${member.apiKey}`).toString("base64")}`;
    const response = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: lowerScheme } });
    assert.equal(assertSuccess(response).user_id, member.id);
    const spaced = basicAuth(` ${member.email} `, ` ${member.apiKey} `);
    const trimmed = await t.api(null, "GET", "/users/me", {}, { headers: { authorization: spaced } });
    assert.equal(assertSuccess(trimmed).user_id, member.id);
  });

  test("the API email (fake address) authenticates too", async () => {
    const member = t.users.member;
    const self = await me(member);
    // Real addresses are visible to administrators only by default, so the API email is the fake one.
    assert.equal(self.email, `user${member.id}@parley.test`);
    assert.equal(self.delivery_email, member.email);
    const viaApiEmail = { ...member, email: self.email };
    assert.equal((await me(viaApiEmail)).user_id, member.id);
    const upper = { ...member, email: self.email.toUpperCase() };
    assert.equal((await me(upper)).user_id, member.id);
  });

  test("every role can authenticate", async () => {
    for (const [name, user] of Object.entries(t.users)) {
      const body = await me(user);
      assert.equal(body.user_id, user.id, name);
      assert.equal(body.role, user.role, name);
      assert.equal(body.is_bot, name === "bot", name);
    }
  });

  test("deactivated user: 401 USER_DEACTIVATED", async () => {
    const user = await freshUser();
    assert.equal((await me(user)).user_id, user.id);
    await deactivate(t, user);
    const response = await t.api(user, "GET", "/users/me");
    assertError(response, 401, "USER_DEACTIVATED", "Account is deactivated");
    // A wrong key is still just a wrong key.
    const wrongKey = await t.api({ ...user, apiKey: "wrong" }, "GET", "/users/me");
    assertError(wrongKey, 401, "INVALID_API_KEY", "Invalid API key");
  });

  test("deactivated organization: 401 REALM_DEACTIVATED", async () => {
    const db = t.services.storage.db;
    await db.updateTable("realms").set({ deactivated: true }).where("id", "=", t.realm.id).execute();
    try {
      for (const user of [t.users.owner, t.users.member, t.users.bot]) {
        assertError(await t.api(user, "GET", "/users/me"), 401, "REALM_DEACTIVATED", "This organization has been deactivated");
      }
      assertError(
        await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email, password: t.users.member.password }),
        401,
        "REALM_DEACTIVATED",
        "This organization has been deactivated",
      );
    } finally {
      await db.updateTable("realms").set({ deactivated: false }).where("id", "=", t.realm.id).execute();
    }
    assert.equal((await me(t.users.member)).user_id, t.users.member.id);
  });
});

// ---------------------------------------------------------------------------
// 3. POST /fetch_api_key
// ---------------------------------------------------------------------------

describe("POST /fetch_api_key", () => {
  test("returns the API key, the real email and the user ID; the key works", async () => {
    for (const name of ["owner", "admin", "moderator", "member", "guest"] as const) {
      const user = t.users[name];
      const body = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }));
      assert.equal(body.api_key, user.apiKey, name);
      assert.equal(body.email, user.email, name);
      assert.equal(body.user_id, user.id, name);
      assertNoIgnored(body);
      const self = await me({ ...user, apiKey: body.api_key });
      assert.equal(self.user_id, user.id, name);
    }
  });

  test("username is matched case-insensitively", async () => {
    const user = t.users.member;
    const body = assertSuccess(
      await t.api(null, "POST", "/fetch_api_key", { username: user.email.toUpperCase(), password: user.password }),
    );
    assert.equal(body.user_id, user.id);
    assert.equal(body.email, user.email);
  });

  test("needs no Authorization header and ignores a bad one", async () => {
    const user = t.users.guest;
    const body = assertSuccess(
      await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }, { headers: { authorization: "Bearer junk" } }),
    );
    assert.equal(body.api_key, user.apiKey);
  });

  test("wrong password or unknown user: 401 AUTHENTICATION_FAILED", async () => {
    const user = t.users.member;
    for (const params of [
      { username: user.email, password: "wrong-password" },
      { username: user.email, password: "" },
      { username: "nobody@example.com", password: user.password },
      // The fake API email is not a login name.
      { username: `user${user.id}@parley.test`, password: user.password },
    ]) {
      const response = await t.api(null, "POST", "/fetch_api_key", params);
      assertError(response, 401, "AUTHENTICATION_FAILED", AUTH_FAILED);
      assert.equal("api_key" in response.body, false);
    }
  });

  test("missing parameters: REQUEST_VARIABLE_MISSING", async () => {
    assertError(
      await t.api(null, "POST", "/fetch_api_key", { username: t.users.member.email }),
      400,
      "REQUEST_VARIABLE_MISSING",
      "Missing 'password' argument",
      { var_name: "password" },
    );
    assertError(
      await t.api(null, "POST", "/fetch_api_key", { password: t.users.member.password }),
      400,
      "REQUEST_VARIABLE_MISSING",
      "Missing 'username' argument",
      { var_name: "username" },
    );
  });

  test("deactivated user: right password gives 401 USER_DEACTIVATED, wrong one AUTHENTICATION_FAILED", async () => {
    const user = await freshUser();
    await deactivate(t, user);
    assertError(
      await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }),
      401,
      "USER_DEACTIVATED",
      "Account is deactivated",
    );
    assertError(
      await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: "wrong-password" }),
      401,
      "AUTHENTICATION_FAILED",
      AUTH_FAILED,
    );
  });

  test("bots cannot log in with a password: 401 AUTHENTICATION_FAILED", async () => {
    const bot = t.users.bot;
    for (const password of [bot.password, "", bot.apiKey]) {
      assertError(await t.api(null, "POST", "/fetch_api_key", { username: bot.email, password }), 401, "AUTHENTICATION_FAILED", AUTH_FAILED);
    }
  });

  test("GET /fetch_api_key: 405 allowing POST", async () => {
    const response = await t.api(null, "GET", "/fetch_api_key", { username: t.users.member.email, password: t.users.member.password });
    assertError(response, 405, "METHOD_NOT_ALLOWED", "Method Not Allowed", { allowed_methods: ["POST"] });
    assert.equal(response.headers.get("allow"), "POST");
  });
});

// ---------------------------------------------------------------------------
// 4. Development login endpoints
// ---------------------------------------------------------------------------

describe("development login endpoints", () => {
  test("disabled by default: 400 DevAuthBackend not enabled.", async () => {
    assertError(
      await t.api(null, "POST", "/dev_fetch_api_key", { username: t.users.member.email }),
      400,
      "BAD_REQUEST",
      "DevAuthBackend not enabled.",
    );
    assertError(await t.api(null, "GET", "/dev_list_users"), 400, "BAD_REQUEST", "DevAuthBackend not enabled.");
    // Credentials change nothing.
    assertError(await t.api(t.users.owner, "GET", "/dev_list_users"), 400, "BAD_REQUEST", "DevAuthBackend not enabled.");
  });

  describe("with devMode", () => {
    let dev: TestApp;
    before(async () => {
      dev = await startTestApp({ devMode: true });
    });
    after(() => dev.close());

    test("dev_fetch_api_key returns any active user's key by email alone", async () => {
      for (const name of ["owner", "admin", "moderator", "member", "guest"] as const) {
        const user = dev.users[name];
        const body = assertSuccess(await dev.api(null, "POST", "/dev_fetch_api_key", { username: user.email }));
        assert.deepEqual(
          { api_key: body.api_key, email: body.email, user_id: body.user_id },
          { api_key: user.apiKey, email: user.email, user_id: user.id },
          name,
        );
        assertNoIgnored(body);
        assert.equal((await me({ ...user, apiKey: body.api_key }, dev)).user_id, user.id, name);
      }
    });

    test("dev_fetch_api_key: unknown user 401 AUTHENTICATION_FAILED, deactivated 401 USER_DEACTIVATED", async () => {
      assertError(
        await dev.api(null, "POST", "/dev_fetch_api_key", { username: "nobody@example.com" }),
        401,
        "AUTHENTICATION_FAILED",
        AUTH_FAILED,
      );
      const user = await freshUser(dev);
      await deactivate(dev, user);
      assertError(
        await dev.api(null, "POST", "/dev_fetch_api_key", { username: user.email }),
        401,
        "USER_DEACTIVATED",
        "Account is deactivated",
      );
      assertError(
        await dev.api(null, "POST", "/dev_fetch_api_key", {}),
        400,
        "REQUEST_VARIABLE_MISSING",
        "Missing 'username' argument",
        { var_name: "username" },
      );
    });

    test("dev_list_users: admins and owners apart from other humans, no bots, sorted by email", async () => {
      // A deactivated account is not listed.
      const gone = await freshUser(dev, Role.ADMINISTRATOR);
      await deactivate(dev, gone);
      const body = assertSuccess(await dev.api(null, "GET", "/dev_list_users"));
      const check = (entries: Record<string, unknown>[]) =>
        entries.map((entry) => {
          for (const key of Object.keys(entry)) assert.ok(["email", "realm_url", "realm_uri"].includes(key), `unexpected key ${key}`);
          // realm_uri is the deprecated alias, tolerated only with the same value.
          if ("realm_uri" in entry) assert.equal(entry.realm_uri, entry.realm_url);
          return { email: entry.email, realm_url: entry.realm_url };
        });
      const u = dev.users;
      assert.deepEqual(check(body.direct_admins), [
        { email: u.admin.email, realm_url: REALM_URL },
        { email: u.owner.email, realm_url: REALM_URL },
      ]);
      assert.deepEqual(check(body.direct_users), [
        { email: u.guest.email, realm_url: REALM_URL },
        { email: u.member.email, realm_url: REALM_URL },
        { email: u.moderator.email, realm_url: REALM_URL },
      ]);
    });

    test("server_settings advertises dev login", async () => {
      const body = assertSuccess(await dev.api(null, "GET", "/server_settings"));
      assert.equal(body.authentication_methods.dev, true);
      assert.equal(body.authentication_methods.password, true);
    });
  });
});

// ---------------------------------------------------------------------------
// 5. GET /server_settings
// ---------------------------------------------------------------------------

describe("GET /server_settings", () => {
  test("needs no authentication and has every documented field", async () => {
    const body = assertSuccess(await t.api(null, "GET", "/server_settings"));
    assert.deepEqual(body.authentication_methods, {
      password: true,
      dev: false,
      email: true,
      ldap: false,
      remoteuser: false,
      saml: false,
      "openid connect": false,
      github: false,
      gitlab: false,
      azuread: false,
      google: false,
      apple: false,
    });
    assert.deepEqual(body.external_authentication_methods, []);
    assert.ok(Number.isInteger(body.service_feature_level), "service_feature_level is an integer");
    assert.equal(body.service_feature_level, SERVICE_FEATURE_LEVEL);
    assert.equal(body.zulip_feature_level, body.service_feature_level);
    assert.equal(typeof body.service_version, "string");
    assert.equal(body.service_version, SERVICE_VERSION);
    assert.match(body.service_version, /^\d+\.\d+/);
    assert.equal(body.zulip_version, body.service_version);
    assert.equal(typeof body.service_merge_base, "string");
    assert.equal(body.service_merge_base, SERVICE_MERGE_BASE);
    assert.equal(body.zulip_merge_base, body.service_merge_base);
    assert.equal(body.push_notifications_enabled, false);
    assert.equal(body.is_incompatible, false);
    assert.equal(body.email_auth_enabled, true);
    assert.equal(body.require_email_format_usernames, true);
    assert.equal(body.realm_url, REALM_URL);
    assert.equal(body.realm_uri, REALM_URL);
    assert.equal(body.realm_name, "Test Org");
    assert.equal(typeof body.realm_icon, "string");
    const icon = new URL(body.realm_icon);
    assert.equal(icon.origin, REALM_URL);
    assert.equal(typeof body.realm_description, "string");
    assert.equal(body.realm_description, "");
    assert.equal(body.realm_web_public_access_enabled, false);
    assertNoIgnored(body);
  });

  test("realm_description is the description rendered as Markdown", async () => {
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { description: "A place to **chat**" }));
    try {
      const body = assertSuccess(await t.api(null, "GET", "/server_settings"));
      assert.equal(body.realm_description, "<p>A place to <strong>chat</strong></p>");
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { description: "" }));
    }
    assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).realm_description, "");
  });

  test("is_incompatible only for the ZulipInvalid client", async () => {
    const invalid = assertSuccess(await t.api(null, "GET", "/server_settings", {}, { headers: { "user-agent": "ZulipInvalid/1.0" } }));
    assert.equal(invalid.is_incompatible, true);
    const mobile = assertSuccess(await t.api(null, "GET", "/server_settings", {}, { headers: { "user-agent": "ZulipMobile/27.230 (Android 14)" } }));
    assert.equal(mobile.is_incompatible, false);
  });

  test("works the same with a user's credentials, and with bad ones", async () => {
    const anonymous = assertSuccess(await t.api(null, "GET", "/server_settings"));
    const authed = assertSuccess(await t.api(t.users.member, "GET", "/server_settings"));
    assert.deepEqual(authed, anonymous);
    const bad = assertSuccess(
      await t.api(null, "GET", "/server_settings", {}, { headers: { authorization: basicAuth("nobody@example.com", "nope") } }),
    );
    assert.deepEqual(bad, anonymous);
  });
});

// ---------------------------------------------------------------------------
// 6. Images outside /api/v1
// ---------------------------------------------------------------------------

describe("images", () => {
  // Clients show these without credentials; test/avatars.test.ts covers them in depth.
  test("avatar_url: a PNG under /user_avatars/, no authentication; its -medium.png too", async () => {
    const self = await me(t.users.member);
    const avatar = new URL(self.avatar_url);
    assert.equal(avatar.origin, REALM_URL);
    assert.equal(avatar.pathname, `/user_avatars/${t.realm.id}/default/${t.users.member.id}.png`);
    assert.equal(avatar.search, "?version=1");
    for (const path of [avatar.pathname, avatar.pathname.replace(/\.png$/, "-medium.png")]) {
      const response: Response = await fetch(t.url + path + avatar.search);
      assert.equal(response.status, 200, path);
      assert.equal(response.headers.get("content-type"), "image/png", path);
      assert.deepEqual([...new Uint8Array(await response.arrayBuffer()).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], path);
    }
  });

  test("realm_icon: a PNG, no authentication", async () => {
    const settings = assertSuccess(await t.api(null, "GET", "/server_settings"));
    const icon = new URL(settings.realm_icon);
    assert.equal(icon.pathname, `/user_avatars/${t.realm.id}/realm/icon.png`);
    const response = await fetch(t.url + icon.pathname + icon.search);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "image/png");
  });
});
