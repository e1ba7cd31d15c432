// API-level tests of the user endpoints: reading users (GET /users, /users/me,
// /users/{id|email}), creating, updating, deactivating and reactivating them,
// PATCH /settings, and the system groups that follow roles.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../src/config.ts";
import { Role } from "../src/domain/roles.ts";
import type { ClientEvent, Notification } from "../src/events/notifier.ts";
import { assertError, assertSuccess, startTestApp, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let startedAtMs: number;

before(async () => {
  startedAtMs = Date.now();
  t = await startTestApp();
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

const FAKE_DOMAIN = "parley.test";
const fakeEmail = (id: number): string => `user${id}@${FAKE_DOMAIN}`;
const avatarUrlOf = (id: number): string => `http://parley.test/user_avatars/${t.realm.id}/default/${id}.png?version=1`;

let counter = 0;
/** A unique, valid full name (no digits right after a '|'). */
function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`;
}

async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  return t.createUser(uniqueName(prefix), role);
}

async function newBot(prefix: string, ownerId: number): Promise<TestUser> {
  return t.createUser(uniqueName(prefix), Role.MEMBER, { bot: true, botOwnerId: ownerId });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function getUser(viewer: TestUser, idOrEmail: number | string, params: Record<string, unknown> = {}): Promise<any> {
  return assertSuccess(await t.api(viewer, "GET", `/users/${encodeURIComponent(String(idOrEmail))}`, params)).user;
}

async function dbUser(id: number) {
  return t.services.storage.db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}


async function systemGroupIds(): Promise<Map<string, number>> {
  const rows = await t.services.storage.db
    .selectFrom("user_groups")
    .select(["id", "name"])
    .where("realm_id", "=", t.realm.id)
    .where("is_system_group", "=", true)
    .execute();
  return new Map(rows.map((r) => [r.name, r.id]));
}

/** Names of the groups `userId` is a direct member of, sorted. */
async function directGroupNames(userId: number): Promise<string[]> {
  const rows = await t.services.storage.db
    .selectFrom("user_group_members")
    .innerJoin("user_groups", "user_groups.id", "user_group_members.group_id")
    .select("user_groups.name")
    .where("user_group_members.user_id", "=", userId)
    .execute();
  return rows.map((r) => r.name).sort();
}

function notificationsOf(type: string, op?: string): Notification[] {
  return t.events.filter((n) => n.event.type === type && (op === undefined || n.event.op === op));
}

const sortedIds = (ids: readonly number[]): number[] => [...ids].sort((a, b) => a - b);

async function fetchApiKey(username: string, password: string): Promise<ApiResponse> {
  return t.api(null, "POST", "/fetch_api_key", { username, password });
}

/** The user object a viewer with full access expects for one of the fixture humans. */
function expectedHuman(user: TestUser, fullName: string, role: number, deliveryEmail: string | null, dateJoined: string) {
  return {
    user_id: user.id,
    email: fakeEmail(user.id),
    delivery_email: deliveryEmail,
    full_name: fullName,
    date_joined: dateJoined,
    is_active: true,
    is_owner: role === Role.OWNER,
    is_admin: role === Role.OWNER || role === Role.ADMINISTRATOR,
    is_guest: role === Role.GUEST,
    is_bot: false,
    bot_type: null,
    role,
    timezone: "",
    avatar_url: avatarUrlOf(user.id),
    avatar_version: 1,
  };
}

const HUMANS = [
  { key: "owner", name: "Olivia Owner", role: Role.OWNER },
  { key: "admin", name: "Adam Admin", role: Role.ADMINISTRATOR },
  { key: "moderator", name: "Mona Moderator", role: Role.MODERATOR },
  { key: "member", name: "Max Member", role: Role.MEMBER },
  { key: "guest", name: "Gus Guest", role: Role.GUEST },
] as const;

const ALL_FIXTURES = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;

const ISO_8601_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?\+00:00$/;

// ---------------------------------------------------------------------------
// 1. GET /users/{user_id} and GET /users/{email}

describe("GET /users/{user_id}", () => {
  test("the fake email domain is the EXTERNAL_URL host when it is a domain name", () => {
    assert.equal(t.services.config.fakeEmailDomain, FAKE_DOMAIN);
    assert.equal(loadConfig({ EXTERNAL_URL: "https://Chat.Example.COM:8443" }).fakeEmailDomain, "chat.example.com");
    assert.equal(loadConfig({ EXTERNAL_URL: "http://127.0.0.1:9991" }).fakeEmailDomain, "parley.invalid");
    assert.equal(loadConfig({ EXTERNAL_URL: "http://localhost:9991" }).fakeEmailDomain, "parley.invalid");
    assert.equal(loadConfig({ EXTERNAL_URL: "http://localhost:9991", FAKE_EMAIL_DOMAIN: "fake.example" }).fakeEmailDomain, "fake.example");
  });

  test("returns exactly the contract's fields for every human role, as seen by the owner", async () => {
    for (const { key, name, role } of HUMANS) {
      const user = t.users[key];
      const got = await getUser(t.users.owner, user.id);
      assert.equal(typeof got.date_joined, "string", key);
      assert.deepEqual(got, expectedHuman(user, name, role, user.email, got.date_joined), key);
      // Flags are consistent with the role.
      if (got.is_owner) assert.equal(got.is_admin, true, key);
      assert.equal(got.is_guest, role === Role.GUEST, key);
      assert.equal("bot_owner_id" in got, false, `${key}: humans have no bot_owner_id`);
      assert.equal("profile_data" in got, false, `${key}: profile_data only on request`);
      assert.equal("is_system_bot" in got, false, key);
      assert.equal("is_billing_admin" in got, false, key);
    }
  });

  test("returns the bot's fields: real email, bot_type 1, bot_owner_id of its owner", async () => {
    const bot = t.users.bot;
    for (const viewer of [t.users.owner, t.users.guest]) {
      const got = await getUser(viewer, bot.id);
      assert.deepEqual(got, {
        user_id: bot.id,
        email: "bob-bot@example.com",
        delivery_email: "bob-bot@example.com",
        full_name: "Bob Bot",
        date_joined: got.date_joined,
        is_active: true,
        is_owner: false,
        is_admin: false,
        is_guest: false,
        is_bot: true,
        bot_type: 1,
        bot_owner_id: t.users.member.id,
        role: Role.MEMBER,
        timezone: "",
        avatar_url: avatarUrlOf(bot.id),
        avatar_version: 1,
      });
    }
  });

  test("date_joined is an ISO 8601 UTC timestamp of the account's creation", async () => {
    for (const key of ALL_FIXTURES) {
      const got = await getUser(t.users.admin, t.users[key].id);
      assert.match(got.date_joined, ISO_8601_UTC, key);
      const joined = Date.parse(got.date_joined);
      assert.ok(Number.isFinite(joined), key);
      // Second (or minute) precision: allow for truncation.
      assert.ok(joined >= startedAtMs - 61_000, `${key}: ${got.date_joined} is before the test started`);
      assert.ok(joined <= Date.now() + 1000, `${key}: ${got.date_joined} is in the future`);
    }
  });

  test("delivery_email is visible to owners, administrators and the user; bots' always", async () => {
    for (const viewerKey of ALL_FIXTURES) {
      const viewer = t.users[viewerKey];
      const privileged = viewerKey === "owner" || viewerKey === "admin";
      for (const { key } of HUMANS) {
        const target = t.users[key];
        const got = await getUser(viewer, target.id);
        const expected = privileged || viewer.id === target.id ? target.email : null;
        assert.equal(got.delivery_email, expected, `${viewerKey} viewing ${key}`);
        assert.equal(got.email, fakeEmail(target.id), `${viewerKey} viewing ${key}`);
      }
      const bot = await getUser(viewer, t.users.bot.id);
      assert.equal(bot.delivery_email, t.users.bot.email, `${viewerKey} viewing bot`);
      assert.equal(bot.email, t.users.bot.email, `${viewerKey} viewing bot`);
    }
  });

  test("profile_data is included only with include_custom_profile_fields=true, and only for humans", async () => {
    const withFields = await getUser(t.users.member, t.users.admin.id, { include_custom_profile_fields: true });
    assert.deepEqual(withFields.profile_data, {});
    const without = await getUser(t.users.member, t.users.admin.id, { include_custom_profile_fields: false });
    assert.equal("profile_data" in without, false);
    const bot = await getUser(t.users.member, t.users.bot.id, { include_custom_profile_fields: true });
    assert.equal("profile_data" in bot, false);
    assertError(
      await t.api(t.users.member, "GET", `/users/${t.users.admin.id}`, { include_custom_profile_fields: "yes" }),
      400,
      "BAD_REQUEST",
      'Argument "include_custom_profile_fields" is not valid JSON.',
    );
  });

  test("client_gravatar and client_external_avatar are accepted; avatar_url stays the local URL", async () => {
    const id = t.users.moderator.id;
    for (const params of [
      { client_gravatar: true },
      { client_gravatar: false },
      { client_external_avatar: true },
      { client_external_avatar: false },
      { client_gravatar: true, client_external_avatar: true },
    ]) {
      for (const viewer of [t.users.admin, t.users.member, t.users.moderator]) {
        const response = await t.api(viewer, "GET", `/users/${id}`, params);
        const body = assertSuccess(response);
        assert.equal(body.user.avatar_url, avatarUrlOf(id), JSON.stringify(params));
        assert.equal(body.user.avatar_version, 1);
        assert.equal("ignored_parameters_unsupported" in body, false, JSON.stringify(params));
      }
    }
    assertError(
      await t.api(t.users.admin, "GET", `/users/${id}`, { client_gravatar: "maybe" }),
      400,
      "BAD_REQUEST",
      'Argument "client_gravatar" is not valid JSON.',
    );
  });

  test("an unknown ID or email gives 400 No such user", async () => {
    const memberId = t.users.member.id;
    for (const path of [
      "/users/999999",
      "/users/0",
      "/users/abc",
      `/users/${encodeURIComponent(fakeEmail(999999))}`,
      `/users/${encodeURIComponent(`user${memberId}@elsewhere.example`)}`,
      `/users/${encodeURIComponent("nobody@example.com")}`,
    ]) {
      assertError(await t.api(t.users.admin, "GET", path), 400, "BAD_REQUEST", "No such user", {});
      assertError(await t.api(t.users.member, "GET", path), 400, "BAD_REQUEST", "No such user");
    }
  });

  test("GET /users/{email}: the fake API email finds the user for everyone", async () => {
    for (const viewerKey of ALL_FIXTURES) {
      for (const { key } of HUMANS) {
        const target = t.users[key];
        const byEmail = await getUser(t.users[viewerKey], fakeEmail(target.id));
        const byId = await getUser(t.users[viewerKey], target.id);
        assert.deepEqual(byEmail, byId, `${viewerKey} looking up ${key}`);
      }
    }
    // Case does not matter.
    const upper = await getUser(t.users.member, fakeEmail(t.users.guest.id).toUpperCase());
    assert.equal(upper.user_id, t.users.guest.id);
  });

  test("GET /users/{email}: the real email works only for viewers who may see it", async () => {
    const target = t.users.moderator;
    for (const viewerKey of ["owner", "admin"] as const) {
      const got = await getUser(t.users[viewerKey], target.email);
      assert.equal(got.user_id, target.id, viewerKey);
      assert.equal(got.delivery_email, target.email, viewerKey);
      // Case-insensitive, like every email lookup.
      assert.equal((await getUser(t.users[viewerKey], target.email.toUpperCase())).user_id, target.id, viewerKey);
    }
    for (const viewerKey of ["member", "guest", "bot"] as const) {
      assertError(
        await t.api(t.users[viewerKey], "GET", `/users/${encodeURIComponent(target.email)}`),
        400,
        "BAD_REQUEST",
        "No such user",
      );
    }
    // A moderator cannot see an admins-only address either.
    assertError(await t.api(t.users.moderator, "GET", `/users/${encodeURIComponent(t.users.member.email)}`), 400, "BAD_REQUEST", "No such user");
    // A bot's address is its API email and is never hidden.
    assert.equal((await getUser(t.users.guest, t.users.bot.email)).user_id, t.users.bot.id);
  });

  test("system bots exist but are not listed by GET /users", async () => {
    const rows = await t.services.storage.db
      .selectFrom("users")
      .select(["id", "full_name", "delivery_email", "is_bot", "is_system_bot", "bot_type", "bot_owner_id", "is_active"])
      .where("realm_id", "=", t.realm.id)
      .where("is_system_bot", "=", true)
      .orderBy("id")
      .execute();
    assert.deepEqual(
      rows.map((r) => ({ ...r, id: 0 })),
      [
        { id: 0, full_name: "Notification Bot", delivery_email: "notification-bot@zulip.com", is_bot: true, is_system_bot: true, bot_type: 1, bot_owner_id: null, is_active: true },
        { id: 0, full_name: "Welcome Bot", delivery_email: "welcome-bot@zulip.com", is_bot: true, is_system_bot: true, bot_type: 1, bot_owner_id: null, is_active: true },
      ],
    );
    const members = assertSuccess(await t.api(t.users.admin, "GET", "/users")).members as { user_id: number; full_name: string }[];
    const listed = new Set(members.map((m) => m.user_id));
    for (const row of rows) assert.equal(listed.has(row.id), false, `${row.full_name} is listed`);
    assert.equal(members.some((m) => m.full_name === "Notification Bot" || m.full_name === "Welcome Bot"), false);

    // Fetched by ID they are system bots with no owner (Zulip's cross-realm bot shape).
    const notificationBot = await getUser(t.users.member, rows[0]!.id);
    assert.equal(notificationBot.is_system_bot, true);
    assert.equal(notificationBot.bot_owner_id, null);
    assert.equal(notificationBot.email, "notification-bot@zulip.com");
    assert.equal(notificationBot.delivery_email, "notification-bot@zulip.com");
    assert.equal(notificationBot.is_bot, true);
  });
});

// ---------------------------------------------------------------------------
// 2. GET /users and GET /users/me

describe("GET /users and GET /users/me", () => {
  test("GET /users lists every human and bot, deactivated ones included, sorted by ID, in the GET /users/{id} shape", async () => {
    const gone = await newUser("Gone Member");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${gone.id}`));

    const expectedIds = (
      await t.services.storage.db
        .selectFrom("users")
        .select("id")
        .where("realm_id", "=", t.realm.id)
        .where("is_system_bot", "=", false)
        .orderBy("id")
        .execute()
    ).map((r) => r.id);
    for (const viewerKey of ["owner", "member", "guest", "bot"] as const) {
      const viewer = t.users[viewerKey];
      const body = assertSuccess(await t.api(viewer, "GET", "/users"));
      assert.deepEqual(Object.keys(body).sort(), ["members", "msg", "result"]);
      const members = body.members as { user_id: number }[];
      assert.deepEqual(
        members.map((m) => m.user_id),
        expectedIds,
        viewerKey,
      );
      for (const key of ALL_FIXTURES) assert.ok(expectedIds.includes(t.users[key].id), key);
      for (const m of members) assert.deepEqual(m, await getUser(viewer, m.user_id), `${viewerKey}: user ${m.user_id}`);
      const goneEntry = members.find((m) => m.user_id === gone.id) as { is_active: boolean } | undefined;
      assert.equal(goneEntry?.is_active, false, viewerKey);
    }
  });

  test("GET /users with include_custom_profile_fields gives humans profile_data {} and bots none", async () => {
    const members = assertSuccess(await t.api(t.users.member, "GET", "/users", { include_custom_profile_fields: true })).members as {
      is_bot: boolean;
      profile_data?: unknown;
    }[];
    assert.ok(members.length >= 6);
    for (const m of members) {
      if (m.is_bot) assert.equal("profile_data" in m, false);
      else assert.deepEqual(m.profile_data, {});
    }
    const plain = assertSuccess(await t.api(t.users.member, "GET", "/users")).members as object[];
    for (const m of plain) assert.equal("profile_data" in m, false);
  });

  test("GET /users/me returns the user's own fields at the top level, plus max_message_id -1, for every role", async () => {
    for (const key of ALL_FIXTURES) {
      const user = t.users[key];
      const body = assertSuccess(await t.api(user, "GET", "/users/me"));
      // As Zulip's get_profile_backend, the caller's own profile_data is always included (humans only).
      const own = await getUser(user, user.id, { include_custom_profile_fields: true });
      assert.deepEqual(body, { result: "success", msg: "", ...own, max_message_id: -1 }, key);
      assert.equal(body.user_id, user.id, key);
      assert.equal(body.role, user.role, key);
      assert.equal(body.delivery_email, user.email, `${key} sees its own real email`);
      assert.equal(body.email, key === "bot" ? user.email : fakeEmail(user.id), key);
      assert.equal(body.is_bot, key === "bot", key);
      assert.equal("user" in body, false, key);
      assert.equal("profile_data" in body, key !== "bot", key);
    }
    const bot = assertSuccess(await t.api(t.users.bot, "GET", "/users/me"));
    assert.equal(bot.bot_type, 1);
    assert.equal(bot.bot_owner_id, t.users.member.id);
  });

  test("every endpoint here needs credentials", async () => {
    for (const path of ["/users", "/users/me", `/users/${t.users.member.id}`]) {
      const response = await t.api(null, "GET", path);
      assertError(response, 401, "UNAUTHORIZED", "Not logged in: API authentication or user session required");
    }
  });
});

// ---------------------------------------------------------------------------
// 3. POST /users

describe("POST /users", () => {
  test("an administrator creates a member who can then log in with the password", async () => {
    const body = assertSuccess(
      await t.api(t.users.admin, "POST", "/users", { email: "nina.new@example.com", password: "nina-secret", full_name: "  Nina New  " }),
    );
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "user_id"]);
    assert.equal(typeof body.user_id, "number");
    const id = body.user_id as number;

    const got = await getUser(t.users.admin, id);
    assert.deepEqual(got, {
      user_id: id,
      email: fakeEmail(id),
      delivery_email: "nina.new@example.com",
      full_name: "Nina New",
      date_joined: got.date_joined,
      is_active: true,
      is_owner: false,
      is_admin: false,
      is_guest: false,
      is_bot: false,
      bot_type: null,
      role: Role.MEMBER,
      timezone: "",
      avatar_url: avatarUrlOf(id),
      avatar_version: 1,
    });
    assert.match(got.date_joined, ISO_8601_UTC);

    const grant = assertSuccess(await fetchApiKey("nina.new@example.com", "nina-secret"));
    assert.equal(grant.user_id, id);
    assert.equal(grant.email, "nina.new@example.com");
    assert.equal(typeof grant.api_key, "string");
    assert.ok(grant.api_key.length > 0);
    const nina: TestUser = { id, email: "nina.new@example.com", apiKey: grant.api_key, role: Role.MEMBER, password: "nina-secret" };
    assert.equal(assertSuccess(await t.api(nina, "GET", "/users/me")).user_id, id);
    assertError(await fetchApiKey("nina.new@example.com", "wrong-secret"), 401, "AUTHENTICATION_FAILED");
    // A member, with the member system groups.
    assert.deepEqual(await directGroupNames(id), ["role:fullmembers", "role:members"]);
  });

  test("an owner can create users too", async () => {
    const body = assertSuccess(await t.api(t.users.owner, "POST", "/users", { email: "otto.created@example.com", password: "otto-secret", full_name: "Otto Created" }));
    const got = await getUser(t.users.owner, body.user_id);
    assert.equal(got.role, Role.MEMBER);
    assert.equal(got.full_name, "Otto Created");
    assert.equal(got.delivery_email, "otto.created@example.com");
  });

  test("moderators, members, guests and bots may not create users", async () => {
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      const email = `denied-${key}@example.com`;
      assertError(
        await t.api(t.users[key], "POST", "/users", { email, password: "long-enough", full_name: "Denied User" }),
        400,
        "UNAUTHORIZED_PRINCIPAL",
        "Must be an organization administrator",
      );
      const row = await t.services.storage.db.selectFrom("users").select("id").where("delivery_email", "=", email).executeTakeFirst();
      assert.equal(row, undefined, key);
    }
  });

  test("an email already in use is refused, whatever its case", async () => {
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: t.users.member.email, password: "long-enough", full_name: "Copy Cat" }),
      400,
      "BAD_REQUEST",
      `Email '${t.users.member.email}' already in use`,
    );
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: "MAX-MEMBER@Example.com", password: "long-enough", full_name: "Copy Cat" }),
      400,
      "BAD_REQUEST",
      "Email 'MAX-MEMBER@Example.com' already in use",
    );
    // Bots' addresses count too.
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: t.users.bot.email, password: "long-enough", full_name: "Copy Cat" }),
      400,
      "BAD_REQUEST",
      `Email '${t.users.bot.email}' already in use`,
    );
  });

  test("invalid emails, names and passwords are refused with Zulip's messages", async () => {
    const before = (await t.services.storage.db.selectFrom("users").select("id").execute()).length;
    const create = (params: Record<string, unknown>) =>
      t.api(t.users.admin, "POST", "/users", { email: "valid.person@example.com", password: "long-enough", full_name: "Valid Person", ...params });
    for (const email of ["not-an-email", "two@@example.com", "spaces in@example.com", "nodomain@", "@example.com"]) {
      assertError(await create({ email }), 400, "BAD_REQUEST", "Bad name or username", {});
    }
    assertError(await create({ full_name: "A" }), 400, "BAD_REQUEST", "Name too short!");
    assertError(await create({ full_name: "   " }), 400, "BAD_REQUEST", "Name too short!");
    assertError(await create({ full_name: "x".repeat(101) }), 400, "BAD_REQUEST", "Name too long!");
    assertError(await create({ full_name: "Foo@Bar" }), 400, "BAD_REQUEST", "Invalid characters in name!");
    assertError(await create({ full_name: "Foo *Bar*" }), 400, "BAD_REQUEST", "Invalid characters in name!");
    assertError(await create({ full_name: "Foo|12" }), 400, "BAD_REQUEST", "Invalid format!");
    assertError(await create({ password: "abc" }), 400, "BAD_REQUEST", "The password is too weak.");
    const afterCount = (await t.services.storage.db.selectFrom("users").select("id").execute()).length;
    assert.equal(afterCount, before, "no user was created");
    // A 100-character name is fine.
    const ok = assertSuccess(await create({ email: "long.name@example.com", full_name: "y".repeat(100) }));
    assert.equal((await getUser(t.users.admin, ok.user_id)).full_name, "y".repeat(100));
  });

  test("missing parameters give REQUEST_VARIABLE_MISSING", async () => {
    const full = { email: "missing.param@example.com", password: "long-enough", full_name: "Missing Param" };
    for (const name of ["email", "password", "full_name"] as const) {
      const params: Record<string, unknown> = { ...full };
      delete params[name];
      assertError(await t.api(t.users.admin, "POST", "/users", params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${name}' argument`, {
        var_name: name,
      });
    }
  });

  test("creation sends realm_user add to every active user, with the real email only to those who may see it", async () => {
    t.clearEvents();
    const body = assertSuccess(await t.api(t.users.owner, "POST", "/users", { email: "eve.event@example.com", password: "eve-secret", full_name: "Eve Event" }));
    const id = body.user_id as number;
    const adds = notificationsOf("realm_user", "add");
    assert.equal(adds.length, 2, JSON.stringify(adds));
    const recipients = sortedIds(adds.flatMap((n) => n.userIds));
    assert.deepEqual(recipients, await t.activeUserIds(), "every active user gets exactly one event");
    assert.ok(recipients.includes(id), "the new user is told too");

    const eventFor = (userId: number): ClientEvent => {
      const found = adds.filter((n) => n.userIds.includes(userId));
      assert.equal(found.length, 1, `one add event for ${userId}`);
      return found[0]!.event;
    };
    const asAdmin = await getUser(t.users.admin, id);
    for (const key of ["owner", "admin"] as const) {
      assert.deepEqual(eventFor(t.users[key].id), { type: "realm_user", op: "add", person: asAdmin }, key);
    }
    assert.deepEqual(eventFor(id), { type: "realm_user", op: "add", person: asAdmin }, "self");
    const asMember = await getUser(t.users.member, id);
    assert.equal(asMember.delivery_email, null);
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      const event = eventFor(t.users[key].id);
      assert.deepEqual(event, { type: "realm_user", op: "add", person: asMember }, key);
      assert.equal((event.person as { delivery_email: unknown }).delivery_email, null, key);
    }
    assert.equal((asAdmin as { delivery_email: string }).delivery_email, "eve.event@example.com");
  });
});

// ---------------------------------------------------------------------------
// 4. PATCH /users/{user_id}

describe("PATCH /users/{user_id}", () => {
  test("an administrator renames a user: realm_user update with the new full_name", async () => {
    const user = await newUser("Rename Me");
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name: "  Renamed Person  " }));
    assert.equal((await getUser(t.users.member, user.id)).full_name, "Renamed Person");
    assert.equal(t.events.length, 1, JSON.stringify(t.events));
    const n = t.events[0]!;
    assert.deepEqual(n.event, { type: "realm_user", op: "update", person: { user_id: user.id, full_name: "Renamed Person" } });
    assert.deepEqual(sortedIds(n.userIds), await t.activeUserIds());

    // Same name again: nothing happens.
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name: "Renamed Person" }));
    assert.equal(t.events.length, 0);
  });

  test("a blank full_name is ignored", async () => {
    const user = await newUser("Keep Name");
    const before = (await getUser(t.users.admin, user.id)).full_name;
    t.clearEvents();
    for (const full_name of ["", "   "]) {
      assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name }));
    }
    assert.equal((await getUser(t.users.admin, user.id)).full_name, before);
    assert.equal(t.events.length, 0);
  });

  test("invalid names are refused and change nothing", async () => {
    const user = await newUser("Valid Name");
    const before = (await getUser(t.users.admin, user.id)).full_name;
    t.clearEvents();
    const cases: [string, string][] = [
      ["A", "Name too short!"],
      ["z".repeat(101), "Name too long!"],
      ["Bad@Name", "Invalid characters in name!"],
      ["Bad*Name", "Invalid characters in name!"],
      ['Bad"Name', "Invalid characters in name!"],
      ["Foo|12", "Invalid format!"],
    ];
    for (const [full_name, msg] of cases) {
      assertError(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name }), 400, "BAD_REQUEST", msg);
    }
    // A valid role change alongside an invalid name is not applied either.
    assertError(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name: "X", role: Role.MODERATOR }), 400, "BAD_REQUEST", "Name too short!");
    const after = await getUser(t.users.admin, user.id);
    assert.equal(after.full_name, before);
    assert.equal(after.role, Role.MEMBER);
    assert.equal(t.events.length, 0);
  });

  test("an administrator makes a member a moderator: role event, system groups and their events", async () => {
    const user = await newUser("Future Moderator");
    const groups = await systemGroupIds();
    const members = groups.get("role:members")!;
    const fullMembers = groups.get("role:fullmembers")!;
    const moderators = groups.get("role:moderators")!;
    assert.deepEqual(await directGroupNames(user.id), ["role:fullmembers", "role:members"]);

    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.MODERATOR }));
    const got = await getUser(t.users.member, user.id);
    assert.equal(got.role, Role.MODERATOR);
    assert.equal(got.is_admin, false);
    assert.equal(got.is_owner, false);
    assert.deepEqual(await directGroupNames(user.id), ["role:moderators"]);
    const rows = await t.services.storage.db.selectFrom("user_group_members").select("group_id").where("user_id", "=", user.id).execute();
    assert.deepEqual(rows.map((r) => r.group_id), [moderators]);

    const recipients = await t.activeUserIds();
    const byType = (type: string) => t.events.filter((n) => n.event.type === type);
    assert.deepEqual(
      byType("realm_user").map((n) => n.event),
      [{ type: "realm_user", op: "update", person: { user_id: user.id, role: Role.MODERATOR } }],
    );
    const groupEvents = byType("user_group").map((n) => n.event);
    const removed = groupEvents.filter((e) => e.op === "remove_members");
    const added = groupEvents.filter((e) => e.op === "add_members");
    assert.equal(groupEvents.length, 3, JSON.stringify(groupEvents));
    assert.deepEqual(
      removed.map((e) => e.group_id).sort(),
      [members, fullMembers].sort(),
    );
    for (const e of removed) assert.deepEqual(e, { type: "user_group", op: "remove_members", group_id: e.group_id, user_ids: [user.id] });
    assert.deepEqual(added, [{ type: "user_group", op: "add_members", group_id: moderators, user_ids: [user.id] }]);
    for (const n of t.events) assert.deepEqual(sortedIds(n.userIds), recipients, JSON.stringify(n.event));

    // Setting the role it already has changes nothing.
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.MODERATOR }));
    assert.equal(t.events.length, 0);

    // And back to member: the member groups return.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.MEMBER }));
    assert.deepEqual(await directGroupNames(user.id), ["role:fullmembers", "role:members"]);
  });

  test("role changes to guest and administrator move the user between the right groups", async () => {
    const user = await newUser("Role Hopper");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.GUEST }));
    const guest = await getUser(t.users.admin, user.id);
    assert.equal(guest.is_guest, true);
    assert.equal(guest.role, Role.GUEST);
    assert.deepEqual(await directGroupNames(user.id), ["role:everyone"]);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.ADMINISTRATOR }));
    const admin = await getUser(t.users.member, user.id);
    assert.equal(admin.is_admin, true);
    assert.equal(admin.is_guest, false);
    assert.equal(admin.is_owner, false);
    assert.deepEqual(await directGroupNames(user.id), ["role:administrators"]);
  });

  test("only an owner may make or unmake owners", async () => {
    const user = await newUser("Not Owner");
    assertError(
      await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: Role.OWNER }),
      400,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
    assertError(
      await t.api(t.users.admin, "PATCH", `/users/${t.users.owner.id}`, { role: Role.ADMINISTRATOR }),
      400,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization owner",
    );
    assert.equal((await getUser(t.users.admin, user.id)).role, Role.MEMBER);
    assert.equal((await getUser(t.users.admin, t.users.owner.id)).role, Role.OWNER);
    // Renaming an owner is fine for an administrator.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${t.users.owner.id}`, { full_name: "Olivia Renamed" }));
    assert.equal((await getUser(t.users.member, t.users.owner.id)).full_name, "Olivia Renamed");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${t.users.owner.id}`, { full_name: "Olivia Owner" }));
    assert.equal((await getUser(t.users.member, t.users.owner.id)).full_name, "Olivia Owner");
  });

  test("an owner promotes a user to owner and demotes another owner", async () => {
    const user = await newUser("Co Owner");
    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${user.id}`, { role: Role.OWNER }));
    const promoted = await getUser(t.users.admin, user.id);
    assert.equal(promoted.role, Role.OWNER);
    assert.equal(promoted.is_owner, true);
    assert.equal(promoted.is_admin, true);
    assert.deepEqual(await directGroupNames(user.id), ["role:owners"]);
    assert.deepEqual(
      notificationsOf("realm_user", "update").map((n) => n.event),
      [{ type: "realm_user", op: "update", person: { user_id: user.id, role: Role.OWNER } }],
    );

    // With two owners, one owner demotes the other.
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${user.id}`, { role: Role.MEMBER }));
    const demoted = await getUser(t.users.admin, user.id);
    assert.equal(demoted.role, Role.MEMBER);
    assert.equal(demoted.is_owner, false);
    assert.equal(demoted.is_admin, false);
    assert.deepEqual(await directGroupNames(user.id), ["role:fullmembers", "role:members"]);
  });

  test("the only owner cannot lose the owner role", async () => {
    t.clearEvents();
    for (const role of [Role.ADMINISTRATOR, Role.MEMBER, Role.GUEST]) {
      assertError(
        await t.api(t.users.owner, "PATCH", `/users/${t.users.owner.id}`, { role }),
        400,
        "BAD_REQUEST",
        "The owner permission cannot be removed from the only organization owner.",
      );
    }
    assert.equal((await getUser(t.users.admin, t.users.owner.id)).role, Role.OWNER);
    assert.deepEqual(await directGroupNames(t.users.owner.id), ["role:owners"]);
    assert.equal(t.events.length, 0);
  });

  test("moderators, members, guests and bots may not change other humans", async () => {
    const target = await newUser("Target Human");
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      for (const params of [{ full_name: "Hacked Name" }, { role: Role.ADMINISTRATOR }]) {
        assertError(await t.api(t.users[key], "PATCH", `/users/${target.id}`, params), 400, "BAD_REQUEST", "Insufficient permission");
      }
      // Not even themselves, through this endpoint.
      assertError(await t.api(t.users[key], "PATCH", `/users/${t.users[key].id}`, { full_name: "Self Rename" }), 400, "BAD_REQUEST", "Insufficient permission");
    }
    const got = await getUser(t.users.admin, target.id);
    assert.equal(got.role, Role.MEMBER);
    assert.notEqual(got.full_name, "Hacked Name");
  });

  test("a bot's owner may rename the bot but not change its role", async () => {
    const owner = await newUser("Bot Keeper");
    const bot = await newBot("Keeper Bot", owner.id);
    t.clearEvents();
    assertSuccess(await t.api(owner, "PATCH", `/users/${bot.id}`, { full_name: "Renamed Keeper Bot" }));
    assert.equal((await getUser(owner, bot.id)).full_name, "Renamed Keeper Bot");
    assert.deepEqual(
      notificationsOf("realm_user", "update").map((n) => n.event),
      [{ type: "realm_user", op: "update", person: { user_id: bot.id, full_name: "Renamed Keeper Bot" } }],
    );
    assertError(await t.api(owner, "PATCH", `/users/${bot.id}`, { role: Role.MODERATOR }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    assertError(await t.api(owner, "PATCH", `/users/${bot.id}`, { role: Role.OWNER }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assert.equal((await getUser(owner, bot.id)).role, Role.MEMBER);
    // Someone else's bot is off limits.
    assertError(await t.api(t.users.member, "PATCH", `/users/${bot.id}`, { full_name: "Stolen Bot" }), 400, "BAD_REQUEST", "Insufficient permission");
    // An administrator may change a bot's role.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${bot.id}`, { role: Role.MODERATOR }));
    assert.equal((await getUser(owner, bot.id)).role, Role.MODERATOR);
  });

  test("an invalid role, an unknown user and a system bot are refused", async () => {
    const user = await newUser("Role Check");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: 250 }), 400, "BAD_REQUEST", "Invalid role");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: 0 }), 400, "BAD_REQUEST", "Invalid role");
    assertError(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { role: "admin" }), 400, "BAD_REQUEST", 'Argument "role" is not valid JSON.');
    assert.equal((await getUser(t.users.admin, user.id)).role, Role.MEMBER);
    assertError(await t.api(t.users.admin, "PATCH", "/users/999999", { full_name: "Nobody Here" }), 400, "BAD_REQUEST", "No such user");
    assertError(
      await t.api(t.users.admin, "PATCH", `/users/${encodeURIComponent(fakeEmail(999999))}`, { full_name: "Nobody Here" }),
      400,
      "BAD_REQUEST",
      "No such user",
    );
    const systemBot = await t.services.storage.db
      .selectFrom("users")
      .select("id")
      .where("delivery_email", "=", "welcome-bot@zulip.com")
      .executeTakeFirstOrThrow();
    assertError(await t.api(t.users.owner, "PATCH", `/users/${systemBot.id}`, { full_name: "Hijacked Bot" }), 400, "BAD_REQUEST", "No such user");
  });

  test("PATCH /users/{email} accepts the fake API email (and, for admins, the real one)", async () => {
    const user = await newUser("Email Patch");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${encodeURIComponent(fakeEmail(user.id))}`, { full_name: "Patched By Fake" }));
    assert.equal((await getUser(t.users.admin, user.id)).full_name, "Patched By Fake");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${encodeURIComponent(user.email)}`, { full_name: "Patched By Real" }));
    assert.equal((await getUser(t.users.admin, user.id)).full_name, "Patched By Real");
  });

  test("undeclared parameters are reported as ignored", async () => {
    const user = await newUser("Ignored Params");
    const body = assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${user.id}`, { full_name: "Still Renamed", zzz_unknown: 1, aaa_unknown: "x" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["aaa_unknown", "zzz_unknown"]);
    assert.equal((await getUser(t.users.admin, user.id)).full_name, "Still Renamed");
  });
});

// ---------------------------------------------------------------------------
// 5. DELETE /users/{user_id}

describe("DELETE /users/{user_id}", () => {
  test("an administrator deactivates a member and the member's bots", async () => {
    const user = await newUser("Leaving Member");
    const bot = await newBot("Leaving Bot", user.id);
    const otherBot = await newBot("Staying Bot", t.users.member.id);
    assertSuccess(await t.api(user, "GET", "/users/me"));
    t.clearEvents();

    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));

    assert.equal((await getUser(t.users.admin, user.id)).is_active, false);
    assert.equal((await getUser(t.users.member, bot.id)).is_active, false);
    assert.equal((await getUser(t.users.member, otherBot.id)).is_active, true);

    const recipients = await t.activeUserIds();
    assert.equal(recipients.includes(user.id), false);
    assert.equal(recipients.includes(bot.id), false);
    const updates = notificationsOf("realm_user", "update");
    assert.deepEqual(
      updates.map((n) => n.event),
      [
        { type: "realm_user", op: "update", person: { user_id: user.id, is_active: false } },
        { type: "realm_user", op: "update", person: { user_id: bot.id, is_active: false } },
      ],
    );
    for (const n of updates) assert.deepEqual(sortedIds(n.userIds), recipients);

    for (const account of [user, bot]) {
      assertError(await t.api(account, "GET", "/users/me"), 401, "USER_DEACTIVATED", "Account is deactivated");
    }
    assertError(await fetchApiKey(user.email, user.password), 401, "USER_DEACTIVATED", "Account is deactivated");
  });

  test("moderators, members, guests and bots may not deactivate anyone", async () => {
    const target = await newUser("Safe Member");
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await t.api(t.users[key], "DELETE", `/users/${target.id}`), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    // Not even their own bot.
    assertError(await t.api(t.users.member, "DELETE", `/users/${t.users.bot.id}`), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    assert.equal((await getUser(t.users.admin, target.id)).is_active, true);
    assert.equal((await getUser(t.users.admin, t.users.bot.id)).is_active, true);
  });

  test("an administrator may not deactivate an owner", async () => {
    assertError(await t.api(t.users.admin, "DELETE", `/users/${t.users.owner.id}`), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assert.equal((await getUser(t.users.admin, t.users.owner.id)).is_active, true);
  });

  test("an owner may deactivate another owner", async () => {
    const second = await newUser("Second Owner");
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${second.id}`, { role: Role.OWNER }));
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${second.id}`));
    assert.equal((await getUser(t.users.owner, second.id)).is_active, false);
  });

  test("deactivating a deactivated user, a bot, or nobody is refused", async () => {
    const user = await newUser("Twice Gone");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));
    assertError(await t.api(t.users.admin, "DELETE", `/users/${user.id}`), 400, "BAD_REQUEST", "User is deactivated");
    assertError(await t.api(t.users.admin, "DELETE", `/users/${t.users.bot.id}`), 400, "BAD_REQUEST", "No such user");
    assertError(await t.api(t.users.owner, "DELETE", `/users/${t.users.bot.id}`), 400, "BAD_REQUEST", "No such user");
    assert.equal((await getUser(t.users.admin, t.users.bot.id)).is_active, true);
    assertError(await t.api(t.users.admin, "DELETE", "/users/999999"), 400, "BAD_REQUEST", "No such user");
  });

  test("DELETE /users/{email} works with the fake API email", async () => {
    const user = await newUser("Email Delete");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${encodeURIComponent(fakeEmail(user.id))}`));
    assert.equal((await getUser(t.users.admin, user.id)).is_active, false);
  });

  test("the only owner cannot deactivate themselves by ID", async () => {
    t.clearEvents();
    assertError(await t.api(t.users.owner, "DELETE", `/users/${t.users.owner.id}`), 400, "BAD_REQUEST", "Cannot deactivate the only organization owner");
    assert.equal((await getUser(t.users.admin, t.users.owner.id)).is_active, true);
    assert.equal(t.events.length, 0);
  });
});

// ---------------------------------------------------------------------------
// 6. DELETE /users/me

describe("DELETE /users/me", () => {
  test("the only owner cannot deactivate their own account", async () => {
    assertError(await t.api(t.users.owner, "DELETE", "/users/me"), 400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only organization owner.", {
      is_last_owner: true,
      entity: "organization owner",
    });
    assertSuccess(await t.api(t.users.owner, "GET", "/users/me"));
  });

  test("a member deactivates their own account, and their bots with it", async () => {
    const user = await newUser("Quitting Member");
    const bot = await newBot("Quitting Bot", user.id);
    t.clearEvents();
    assertSuccess(await t.api(user, "DELETE", "/users/me"));
    assertError(await t.api(user, "GET", "/users/me"), 401, "USER_DEACTIVATED", "Account is deactivated");
    assertError(await t.api(bot, "GET", "/users/me"), 401, "USER_DEACTIVATED", "Account is deactivated");
    assert.equal((await getUser(t.users.admin, user.id)).is_active, false);
    assert.equal((await getUser(t.users.admin, bot.id)).is_active, false);
    assert.deepEqual(
      notificationsOf("realm_user", "update").map((n) => n.event),
      [
        { type: "realm_user", op: "update", person: { user_id: user.id, is_active: false } },
        { type: "realm_user", op: "update", person: { user_id: bot.id, is_active: false } },
      ],
    );
  });

  test("an owner who is not the only one may leave", async () => {
    const user = await newUser("Leaving Owner");
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${user.id}`, { role: Role.OWNER }));
    assertSuccess(await t.api(user, "DELETE", "/users/me"));
    assert.equal((await getUser(t.users.owner, user.id)).is_active, false);
  });

  test("the only user cannot deactivate their account", async () => {
    const solo = await startTestApp();
    try {
      const { owner } = solo.users;
      for (const key of ["admin", "moderator", "member", "guest"] as const) {
        assertSuccess(await solo.api(owner, "DELETE", `/users/${solo.users[key].id}`));
      }
      // The member's bot went with the member.
      assertError(await solo.api(solo.users.bot, "GET", "/users/me"), 401, "USER_DEACTIVATED");
      assertError(await solo.api(owner, "DELETE", "/users/me"), 400, "CANNOT_DEACTIVATE_LAST_USER", "Cannot deactivate the only user.", {
        is_last_owner: false,
        entity: "user",
      });
      assertSuccess(await solo.api(owner, "GET", "/users/me"));
    } finally {
      await solo.close();
    }
  });
});

// ---------------------------------------------------------------------------
// 7. POST /users/{user_id}/reactivate

describe("POST /users/{user_id}/reactivate", () => {
  test("an administrator reactivates a user, who can then authenticate again", async () => {
    const user = await newUser("Comeback Member");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));
    assertError(await t.api(user, "GET", "/users/me"), 401, "USER_DEACTIVATED");
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "POST", `/users/${user.id}/reactivate`));
    assert.equal((await getUser(t.users.admin, user.id)).is_active, true);
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).user_id, user.id);
    assert.equal(assertSuccess(await fetchApiKey(user.email, user.password)).user_id, user.id);

    const updates = notificationsOf("realm_user", "update");
    assert.equal(updates.length, 1);
    assert.deepEqual(updates[0]!.event, { type: "realm_user", op: "update", person: { user_id: user.id, is_active: true } });
    const recipients = await t.activeUserIds();
    assert.ok(recipients.includes(user.id));
    assert.deepEqual(sortedIds(updates[0]!.userIds), recipients);
  });

  test("reactivating an active user, as a non-administrator, or nobody is refused", async () => {
    const user = await newUser("Already Here");
    assertError(await t.api(t.users.admin, "POST", `/users/${user.id}/reactivate`), 400, "BAD_REQUEST", "User is already active");
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await t.api(t.users[key], "POST", `/users/${user.id}/reactivate`), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.equal((await getUser(t.users.admin, user.id)).is_active, false);
    assertError(await t.api(t.users.admin, "POST", "/users/999999/reactivate"), 400, "BAD_REQUEST", "No such user");
  });
});

// ---------------------------------------------------------------------------
// 8. PATCH /settings

describe("PATCH /settings", () => {
  test("changes the user's own full_name, with a realm_user update", async () => {
    const user = await newUser("Self Namer");
    t.clearEvents();
    const body = assertSuccess(await t.api(user, "PATCH", "/settings", { full_name: "Self Named" }));
    assert.deepEqual(body, { result: "success", msg: "" });
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Self Named");
    assert.equal(t.events.length, 1);
    assert.deepEqual(t.events[0]!.event, { type: "realm_user", op: "update", person: { user_id: user.id, full_name: "Self Named" } });
    assert.deepEqual(sortedIds(t.events[0]!.userIds), await t.activeUserIds());
    assertError(await t.api(user, "PATCH", "/settings", { full_name: "Q" }), 400, "BAD_REQUEST", "Name too short!");
    assertError(await t.api(user, "PATCH", "/settings", { full_name: "Who@Me" }), 400, "BAD_REQUEST", "Invalid characters in name!");
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Self Named");
  });

  test("a guest can change their own name", async () => {
    const guest = await newUser("Guest Namer", Role.GUEST);
    assertSuccess(await t.api(guest, "PATCH", "/settings", { full_name: "Guest Renamed" }));
    assert.equal((await getUser(t.users.admin, guest.id)).full_name, "Guest Renamed");
  });

  test("changes the time zone, reflected in /users/me and sent as an event", async () => {
    const user = await newUser("Time Traveller");
    t.clearEvents();
    assertSuccess(await t.api(user, "PATCH", "/settings", { timezone: "Europe/Paris" }));
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).timezone, "Europe/Paris");
    assert.equal((await getUser(t.users.member, user.id)).timezone, "Europe/Paris");
    // Zulip's three: the user's own user_settings and legacy display events, and realm_user for everyone.
    assert.deepEqual(
      t.events.map((n) => [n.event, n.userIds, n.capability]),
      [
        [{ type: "user_settings", op: "update", property: "timezone", value: "Europe/Paris" }, [user.id], undefined],
        [
          { type: "update_display_settings", user: `user${user.id}@parley.test`, setting_name: "timezone", setting: "Europe/Paris" },
          [user.id],
          { name: "user_settings_object", present: false },
        ],
        [{ type: "realm_user", op: "update", person: { email: `user${user.id}@parley.test`, user_id: user.id, timezone: "Europe/Paris" } }, t.events[2]!.userIds, undefined],
      ],
    );
    assert.deepEqual(sortedIds(t.events[2]!.userIds), await t.activeUserIds());

    assertError(await t.api(user, "PATCH", "/settings", { timezone: "Mars/Olympus_Mons" }), 400, "BAD_REQUEST", "timezone is not a recognized time zone");
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).timezone, "Europe/Paris");
  });

  test("a bad value changes nothing: valid name with an invalid time zone", async () => {
    const user = await newUser("Atomic Change");
    const before = assertSuccess(await t.api(user, "GET", "/users/me"));
    t.clearEvents();
    assertError(
      await t.api(user, "PATCH", "/settings", { full_name: "Should Not Stick", timezone: "Not/AZone" }),
      400,
      "BAD_REQUEST",
      "timezone is not a recognized time zone",
    );
    const after = assertSuccess(await t.api(user, "GET", "/users/me"));
    assert.equal(after.full_name, before.full_name);
    assert.equal(after.timezone, "");
    assert.equal(t.events.length, 0);
  });

  test("changes the password given the old one", async () => {
    const user = await newUser("Password Changer");
    assertSuccess(await t.api(user, "PATCH", "/settings", { old_password: user.password, new_password: "brand-new-secret" }));
    assert.equal(assertSuccess(await fetchApiKey(user.email, "brand-new-secret")).user_id, user.id);
    assertError(await fetchApiKey(user.email, user.password), 401, "AUTHENTICATION_FAILED", "Your username or password is incorrect");
    // The API key is unchanged.
    assertSuccess(await t.api(user, "GET", "/users/me"));
  });

  test("password changes need the right old password and a strong new one", async () => {
    const user = await newUser("Password Keeper");
    assertError(await t.api(user, "PATCH", "/settings", { old_password: "not-my-password", new_password: "another-secret" }), 400, "BAD_REQUEST", "Wrong password!");
    // As in Zulip, a missing old password is an empty, wrong one.
    assertError(await t.api(user, "PATCH", "/settings", { new_password: "another-secret" }), 400, "BAD_REQUEST", "Wrong password!");
    assertError(await t.api(user, "PATCH", "/settings", { old_password: user.password, new_password: "abc" }), 400, "BAD_REQUEST", "New password is too weak!");
    // Wrong old password and a bad time zone: nothing changes at all.
    assertError(
      await t.api(user, "PATCH", "/settings", { full_name: "Not Applied", old_password: "not-my-password", new_password: "another-secret" }),
      400,
      "BAD_REQUEST",
      "Wrong password!",
    );
    assert.notEqual(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Not Applied");
    // The password is still the original.
    assertSuccess(await fetchApiKey(user.email, user.password));
    assertError(await fetchApiKey(user.email, "another-secret"), 401, "AUTHENTICATION_FAILED");
  });

  test("bots may not use it", async () => {
    assertError(await t.api(t.users.bot, "PATCH", "/settings", { full_name: "Bot Renamed" }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assert.equal((await getUser(t.users.admin, t.users.bot.id)).full_name, "Bob Bot");
  });

  test("unknown parameters are listed in ignored_parameters_unsupported", async () => {
    const user = await newUser("Param Tester");
    const body = assertSuccess(await t.api(user, "PATCH", "/settings", { full_name: "Param Tested", zz_frobnicate: true, aa_mystery: "x" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["aa_mystery", "zz_frobnicate"]);
    assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).full_name, "Param Tested");
  });
});

// ---------------------------------------------------------------------------
// 9. System groups

describe("system groups", () => {
  const NAMES = [
    "role:nobody",
    "role:owners",
    "role:administrators",
    "role:moderators",
    "role:fullmembers",
    "role:members",
    "role:everyone",
    "role:internet",
  ];

  test("a new organization has the eight system groups, in Zulip's order", async () => {
    const rows = await t.services.storage.db
      .selectFrom("user_groups")
      .select(["id", "name", "description", "is_system_group", "deactivated"])
      .where("realm_id", "=", t.realm.id)
      .orderBy("id")
      .execute();
    assert.deepEqual(
      rows.map((r) => r.name),
      NAMES,
    );
    for (const r of rows) {
      assert.equal(r.is_system_group, true, r.name);
      assert.equal(r.deactivated, false, r.name);
    }
    assert.equal(rows.find((r) => r.name === "role:everyone")?.description, "Everyone in this organization, including guests");
    assert.equal(rows.find((r) => r.name === "role:nobody")?.description, "Nobody");
  });

  test("they nest: each group's only direct subgroup is the next more powerful one", async () => {
    const ids = await systemGroupIds();
    const nameOf = new Map([...ids].map(([name, id]) => [id, name]));
    const rows = await t.services.storage.db
      .selectFrom("user_group_subgroups")
      .select(["supergroup_id", "subgroup_id"])
      .where("supergroup_id", "in", [...ids.values()])
      .execute();
    const pairs = rows.map((r) => `${nameOf.get(r.supergroup_id)} ⊃ ${nameOf.get(r.subgroup_id)}`).sort();
    assert.deepEqual(
      pairs,
      [
        "role:administrators ⊃ role:owners",
        "role:everyone ⊃ role:members",
        "role:fullmembers ⊃ role:moderators",
        "role:internet ⊃ role:everyone",
        "role:members ⊃ role:fullmembers",
        "role:moderators ⊃ role:administrators",
      ].sort(),
    );
  });

  test("each user is a direct member of the groups for their role", async () => {
    const expected: Record<(typeof ALL_FIXTURES)[number], string[]> = {
      owner: ["role:owners"],
      admin: ["role:administrators"],
      moderator: ["role:moderators"],
      member: ["role:fullmembers", "role:members"],
      guest: ["role:everyone"],
      bot: ["role:fullmembers", "role:members"],
    };
    for (const key of ALL_FIXTURES) {
      assert.deepEqual(await directGroupNames(t.users[key].id), expected[key], key);
    }
    const ids = await systemGroupIds();
    for (const empty of ["role:nobody", "role:internet"]) {
      const rows = await t.services.storage.db.selectFrom("user_group_members").select("user_id").where("group_id", "=", ids.get(empty)!).execute();
      assert.deepEqual(rows, [], empty);
    }
  });
});
