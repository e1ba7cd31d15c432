// Rules that must hold under concurrent requests and unusual input: one owner
// always remains, system groups follow roles, emails match case-insensitively
// beyond ASCII, and IDs too large for the database are simply unknown.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

async function directSystemGroups(userId: number): Promise<string[]> {
  const rows = await t.services.storage.db
    .selectFrom("user_group_members")
    .innerJoin("user_groups", "user_groups.id", "user_group_members.group_id")
    .select("user_groups.name")
    .where("user_group_members.user_id", "=", userId)
    .where("user_groups.is_system_group", "=", true)
    .orderBy("user_groups.name")
    .execute();
  return rows.map((r) => r.name);
}

const GROUPS_OF_ROLE: Record<number, string[]> = {
  [Role.OWNER]: ["role:owners"],
  [Role.ADMINISTRATOR]: ["role:administrators"],
  [Role.MODERATOR]: ["role:moderators"],
  [Role.MEMBER]: ["role:fullmembers", "role:members"],
  [Role.GUEST]: ["role:everyone"],
};

describe("concurrent changes", () => {
  test("racing role changes leave the system groups matching the final role", async () => {
    const target = await t.createUser("Race Target");
    for (let round = 0; round < 8; round++) {
      const [a, b] = await Promise.all([
        t.api(t.users.admin, "PATCH", `/users/${target.id}`, { role: Role.MODERATOR }),
        t.api(t.users.owner, "PATCH", `/users/${target.id}`, { role: Role.GUEST }),
      ]);
      assertSuccess(a);
      assertSuccess(b);
      const me = assertSuccess(await t.api(t.users.admin, "GET", `/users/${target.id}`)).user;
      assert.deepEqual(await directSystemGroups(target.id), GROUPS_OF_ROLE[me.role], `round ${round}, role ${me.role}`);
      assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${target.id}`, { role: Role.MEMBER }));
    }
  });

  test("two owners demoting or deactivating each other at once leave one owner", async () => {
    for (const action of ["demote", "deactivate"] as const) {
      const app = await startTestApp();
      try {
        const second = await app.createUser(`Second Owner ${action}`, Role.OWNER);
        const first = app.users.owner;
        const hit = (actor: TestUser, target: TestUser) =>
          action === "demote"
            ? app.api(actor, "PATCH", `/users/${target.id}`, { role: Role.MEMBER })
            : app.api(actor, "DELETE", `/users/${target.id}`);
        const results = await Promise.all([hit(first, second), hit(second, first)]);
        const owners = (assertSuccess(await app.api(app.users.admin, "GET", "/users")).members as { role: number; is_active: boolean; is_bot: boolean }[]).filter(
          (u) => u.role === Role.OWNER && u.is_active && !u.is_bot,
        );
        assert.equal(owners.length, 1, `${action}: ${JSON.stringify(results.map((r) => r.body))}`);
        // Exactly one request won; the other was refused (or could no longer authenticate).
        assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body)));
      } finally {
        await app.close();
      }
    }
  });
});

describe("emails beyond ASCII", () => {
  test("case-insensitive on every database: login, authentication and uniqueness", async () => {
    const created = assertSuccess(await t.api(t.users.admin, "POST", "/users", { email: "Ärger@example.com", full_name: "Ärger Umlaut", password: "umlaut-pass" }));
    const grant = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: "ärger@example.com", password: "umlaut-pass" }));
    assert.equal(grant.user_id, created.user_id);
    assert.equal(grant.email, "Ärger@example.com");
    const me = await t.api({ id: created.user_id, email: "äRGER@EXAMPLE.COM", apiKey: grant.api_key, role: Role.MEMBER, password: "" }, "GET", "/users/me");
    assert.equal(assertSuccess(me).user_id, created.user_id);
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: "ärger@example.com", full_name: "Second Umlaut", password: "umlaut-pass" }),
      400,
      "BAD_REQUEST",
      "Email 'ärger@example.com' already in use",
    );
  });

  test("addresses in the fake-email domain cannot be taken", async () => {
    const me = assertSuccess(await t.api(t.users.member, "GET", "/users/me"));
    assert.match(me.email, /^user\d+@parley\.test$/);
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: me.email, full_name: "Impostor Person", password: "impostor-pass" }),
      400,
      "BAD_REQUEST",
      `Email '${me.email}' not allowed in this organization`,
    );
    // The member still logs in with the API email.
    assert.equal(assertSuccess(await t.api({ ...t.users.member, email: me.email }, "GET", "/users/me")).user_id, t.users.member.id);
  });
});

describe("out-of-range and odd input", () => {
  test("user IDs beyond 32 bits are unknown users, not server errors", async () => {
    for (const id of ["2147483648", "99999999999999"]) {
      assertError(await t.api(t.users.admin, "GET", `/users/${id}`), 400, "BAD_REQUEST", "No such user");
      assertError(await t.api(t.users.admin, "PATCH", `/users/${id}`, { full_name: "Nobody Here" }), 400, "BAD_REQUEST", "No such user");
      assertError(await t.api(t.users.admin, "DELETE", `/users/${id}`), 400, "BAD_REQUEST", "No such user");
    }
  });

  test("time zones must be spelled exactly; aliases are accepted", async () => {
    const user = await t.createUser("Zone Speller");
    for (const bad of ["europe/paris", "UTC ", "Mars/Olympus"]) {
      assertError(await t.api(user, "PATCH", "/settings", { timezone: bad }), 400, "BAD_REQUEST", "timezone is not a recognized time zone");
    }
    for (const good of ["Europe/Paris", "UTC", "US/Eastern", ""]) {
      assertSuccess(await t.api(user, "PATCH", "/settings", { timezone: good }));
      assert.equal(assertSuccess(await t.api(user, "GET", "/users/me")).timezone, good);
    }
  });

  test("passwords longer than 100 characters are refused", async () => {
    assertError(
      await t.api(t.users.admin, "POST", "/users", { email: "long.pass@example.com", full_name: "Long Pass", password: "p".repeat(101) }),
      400,
      "BAD_REQUEST",
      "The password is too weak.",
    );
  });
});

describe("default channels", () => {
  test("a new account is subscribed to the default channels, with events", async () => {
    const created = assertSuccess(
      await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "welcome hall" }], is_default_stream: true }),
    );
    assert.deepEqual(created.subscribed, { [String(t.users.admin.id)]: ["welcome hall"] });
    const [channel] = assertSuccess(await t.api(t.users.admin, "GET", "/streams")).streams.filter((s: { name: string }) => s.name === "welcome hall");
    t.clearEvents();
    const newcomer = await t.createUser("New Comer");
    const subs = assertSuccess(await t.api(newcomer, "GET", "/users/me/subscriptions")).subscriptions;
    assert.deepEqual(subs.map((s: { name: string }) => s.name), ["welcome hall"]);
    assert.equal(subs[0].color, "#76ce90");
    const [add] = t.eventsFor(newcomer.id, "subscription", "add");
    assert.deepEqual((add!.subscriptions as { stream_id: number }[]).map((s) => s.stream_id), [channel.stream_id]);
    const peers = t.eventsFor(t.users.admin.id, "subscription", "peer_add");
    assert.deepEqual(peers.map((e) => [e.stream_ids, e.user_ids]), [[[channel.stream_id], [newcomer.id]]]);
    // Archived default channels are not joined: archiving also drops the channel from the defaults.
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${channel.stream_id}`));
    const later = await t.createUser("Late Comer");
    assert.deepEqual(assertSuccess(await t.api(later, "GET", "/users/me/subscriptions")).subscriptions, []);
  });
});
