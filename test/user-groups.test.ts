// API-level tests of the user-group endpoints: listing, creating, editing,
// deactivating and reactivating groups, members and subgroups (with their
// permission rules and cycle checks), the membership reads, and the events
// every change sends.
import { CHANNEL_GROUP_SETTING_NAMES } from "../src/domain/channels.ts";
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import type { ClientEvent } from "../src/events/notifier.ts";
import { assertError, assertSuccess, startTestApp, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;

before(async () => {
  t = await startTestApp();
  const rows = await t.services.storage.db
    .selectFrom("user_groups")
    .select(["id", "name"])
    .where("realm_id", "=", t.realm.id)
    .where("is_system_group", "=", true)
    .execute();
  sys = Object.fromEntries(rows.map((r) => [r.name, r.id]));
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

const SETTINGS = [
  "can_add_members_group",
  "can_join_group",
  "can_leave_group",
  "can_manage_group",
  "can_mention_group",
  "can_remove_members_group",
] as const;
type SettingName = (typeof SETTINGS)[number];

/** Key order of Zulip's user_groups_in_realm_serialized. */
const GROUP_KEYS = [
  "id",
  "name",
  "creator_id",
  "date_created",
  "description",
  "members",
  "direct_subgroup_ids",
  "is_system_group",
  ...SETTINGS,
  "deactivated",
];

/** Key order of the group in a user_group/add event. */
const ADD_EVENT_KEYS = [
  "name",
  "creator_id",
  "date_created",
  "members",
  "description",
  "id",
  "is_system_group",
  "direct_subgroup_ids",
  ...SETTINGS,
  "deactivated",
];

let counter = 0;
function uniqueName(prefix = "group"): string {
  counter += 1;
  return `${prefix} ${counter}`;
}

async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (++counter % 26))}${counter}`, role);
}

const u = () => t.users;
const db = () => t.services.storage.db;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function createGroup(actor: TestUser, params: Record<string, unknown> = {}): Promise<number> {
  const body = assertSuccess(
    await t.api(actor, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: [], ...params }),
  );
  assert.equal(typeof body.group_id, "number");
  return body.group_id;
}

async function listGroups(viewer: TestUser = u().owner, params: Record<string, unknown> = {}): Promise<Json[]> {
  return assertSuccess(await t.api(viewer, "GET", "/user_groups", params)).user_groups;
}

async function getGroup(id: number): Promise<Json> {
  const group = (await listGroups(u().owner, { include_deactivated_groups: true })).find((g: Json) => g.id === id);
  assert.ok(group, `group ${id} is listed`);
  return group;
}

function patch(actor: TestUser, id: number, params: Record<string, unknown>): Promise<ApiResponse> {
  return t.api(actor, "PATCH", `/user_groups/${id}`, params);
}

function members(actor: TestUser, id: number, params: Record<string, unknown>): Promise<ApiResponse> {
  return t.api(actor, "POST", `/user_groups/${id}/members`, params);
}

function subgroups(actor: TestUser, id: number, params: Record<string, unknown>): Promise<ApiResponse> {
  return t.api(actor, "POST", `/user_groups/${id}/subgroups`, params);
}

function deactivate(actor: TestUser, id: number): Promise<ApiResponse> {
  return t.api(actor, "POST", `/user_groups/${id}/deactivate`);
}

async function memberIds(id: number, direct = false): Promise<number[]> {
  return assertSuccess(await t.api(u().owner, "GET", `/user_groups/${id}/members`, { direct_member_only: direct })).members;
}

async function subgroupIds(id: number, direct = false): Promise<number[]> {
  return assertSuccess(await t.api(u().owner, "GET", `/user_groups/${id}/subgroups`, { direct_subgroup_only: direct })).subgroups;
}


/** user_group events notified since the last clearEvents, with their recipients. */
function groupNotifications(): { event: ClientEvent; userIds: number[] }[] {
  return t.events.filter((n) => n.event.type === "user_group").map((n) => ({ event: n.event, userIds: [...n.userIds].sort((a, b) => a - b) }));
}

/** Asserts the user_group events sent since the last clearEvents, each to every active user. */
async function assertGroupEvents(expected: ClientEvent[]): Promise<void> {
  const got = groupNotifications();
  assert.deepEqual(
    got.map((n) => n.event),
    expected,
  );
  const everyone = await t.activeUserIds();
  for (const n of got) assert.deepEqual(n.userIds, everyone, `recipients of ${JSON.stringify(n.event)}`);
}

async function setRealmSetting(name: string, value: unknown): Promise<unknown> {
  const row = await db().selectFrom("realms").select("settings").where("id", "=", t.realm.id).executeTakeFirstOrThrow();
  const settings = JSON.parse(row.settings) as Record<string, unknown>;
  const old = settings[name];
  settings[name] = value;
  await db().updateTable("realms").set({ settings: JSON.stringify(settings) }).where("id", "=", t.realm.id).execute();
  return old;
}

/** Runs `body` with a realm setting changed, then restores it. */
async function withRealmSetting(name: string, value: unknown, body: () => Promise<void>): Promise<void> {
  const old = await setRealmSetting(name, value);
  try {
    await body();
  } finally {
    await setRealmSetting(name, old);
  }
}

async function deactivateUser(user: TestUser): Promise<void> {
  assertSuccess(await t.api(u().owner, "DELETE", `/users/${user.id}`));
}

/** A second organization with one group and one user, straight in the database (the API serves one). */
let otherRealm: { groupId: number; userId: number } | undefined;
async function otherRealmObjects(): Promise<{ groupId: number; userId: number }> {
  if (otherRealm) return otherRealm;
  const { id: realmId } = await db()
    .insertInto("realms")
    .values({ string_id: "other", name: "Other", description: "", date_created: 0, settings: "{}" })
    .returning("id")
    .executeTakeFirstOrThrow();
  const { id: groupId } = await db()
    .insertInto("user_groups")
    .values({
      realm_id: realmId,
      name: "elsewhere",
      description: "",
      is_system_group: false,
      creator_id: null,
      date_created: 0,
      ...Object.fromEntries(SETTINGS.map((s) => [s, "1"])),
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  const { id: userId } = await db()
    .insertInto("users")
    .values({
      realm_id: realmId,
      email: "stranger@other.example",
      delivery_email: "stranger@other.example",
      email_key: "stranger@other.example",
      delivery_email_key: "stranger@other.example",
      full_name: "Stranger",
      password_hash: null,
      api_key: "x".repeat(32),
      role: Role.MEMBER,
      timezone: "",
      avatar_source: "G",
      avatar_version: 1,
      email_address_visibility: 1,
      date_joined: 0,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  otherRealm = { groupId, userId };
  return otherRealm;
}

async function systemBotId(): Promise<number> {
  const row = await db().selectFrom("users").select("id").where("realm_id", "=", t.realm.id).where("is_system_bot", "=", true).executeTakeFirstOrThrow();
  return row.id;
}

/** Inserts a channel whose settings are all `setting` except those in `overrides`. */
async function insertChannel(name: string, overrides: Record<string, unknown>, archived = false): Promise<number> {
  const nobody = String(sys["role:nobody"]);
  const columns = CHANNEL_GROUP_SETTING_NAMES;
  const settings = Object.fromEntries(columns.map((c) => [c, overrides[c] === undefined ? nobody : JSON.stringify(overrides[c])])) as Record<
    (typeof columns)[number],
    string
  >;
  const { id } = await db()
    .insertInto("channels")
    .values({
      realm_id: t.realm.id,
      name,
      name_key: name.toLowerCase(),
      description: "",
      rendered_description: "",
      date_created: 0,
      creator_id: null,
      topics_policy: "inherit",
      is_archived: archived,
      ...settings,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return id;
}

const anon = (direct_members: number[], direct_subgroups: number[] = []) => ({ direct_members, direct_subgroups });

// ---------------------------------------------------------------------------
// GET /user_groups

describe("GET /user_groups", () => {
  test("lists the system groups with every field, in ID order", async () => {
    const groups = await listGroups();
    const names = ["role:nobody", "role:owners", "role:administrators", "role:moderators", "role:fullmembers", "role:members", "role:everyone", "role:internet"];
    const systemGroups = groups.filter((g: Json) => g.is_system_group);
    assert.deepEqual(
      systemGroups.map((g: Json) => g.name),
      names,
    );
    assert.deepEqual(
      groups.map((g: Json) => g.id),
      [...groups.map((g: Json) => g.id)].sort((a, b) => a - b),
    );
    const descriptions: Record<string, string> = {
      "role:nobody": "Nobody",
      "role:owners": "Owners of this organization",
      "role:administrators": "Administrators of this organization, including owners",
      "role:moderators": "Moderators of this organization, including administrators",
      "role:fullmembers": "Members of this organization, not including new accounts and guests",
      "role:members": "Members of this organization, not including guests",
      "role:everyone": "Everyone in this organization, including guests",
      "role:internet": "Everyone on the Internet",
    };
    const subgroupOf: Record<string, string[]> = {
      "role:nobody": [],
      "role:owners": [],
      "role:administrators": ["role:owners"],
      "role:moderators": ["role:administrators"],
      "role:fullmembers": ["role:moderators"],
      "role:members": ["role:fullmembers"],
      "role:everyone": ["role:members"],
      "role:internet": ["role:everyone"],
    };
    for (const g of systemGroups) {
      assert.deepEqual(Object.keys(g), GROUP_KEYS, g.name);
      const expectedMembers: Record<string, number[]> = {
        "role:nobody": [],
        "role:owners": [u().owner.id],
        "role:administrators": [u().admin.id],
        "role:moderators": [u().moderator.id],
        "role:everyone": [u().guest.id],
        "role:internet": [],
      };
      const membersOf = expectedMembers[g.name];
      assert.deepEqual(
        g,
        {
          id: sys[g.name],
          name: g.name,
          creator_id: null,
          date_created: null,
          description: descriptions[g.name],
          members: membersOf ?? g.members,
          direct_subgroup_ids: subgroupOf[g.name]!.map((n) => sys[n]),
          is_system_group: true,
          ...Object.fromEntries(SETTINGS.map((s) => [s, sys["role:nobody"]])),
          deactivated: false,
        },
        g.name,
      );
      assert.deepEqual(g.members, [...g.members].sort((a: number, b: number) => a - b), `${g.name} members sorted`);
    }
    const membersGroup = systemGroups.find((g: Json) => g.name === "role:members");
    assert.ok(membersGroup.members.includes(u().member.id));
    assert.ok(membersGroup.members.includes(u().bot.id));
    assert.ok(!membersGroup.members.includes(u().guest.id));
    assert.ok(!membersGroup.members.includes(u().owner.id));
  });

  test("guests may not list groups; bots and every other role may", async () => {
    assertError(await t.api(u().guest, "GET", "/user_groups"), 400, "BAD_REQUEST", "Not allowed for guest users");
    // The guest check comes before parameter parsing, as in Zulip.
    assertError(await t.api(u().guest, "GET", "/user_groups", { include_deactivated_groups: "nope" }), 400, "BAD_REQUEST", "Not allowed for guest users");
    for (const key of ["owner", "admin", "moderator", "member", "bot"] as const) {
      const groups = await listGroups(u()[key]);
      assert.ok(groups.length >= 8, key);
    }
  });

  test("include_deactivated_groups: deactivated groups only on request; bad values rejected", async () => {
    const id = await createGroup(u().member);
    assertSuccess(await deactivate(u().member, id));
    assert.equal((await listGroups()).some((g: Json) => g.id === id), false);
    assert.equal((await listGroups(u().owner, { include_deactivated_groups: false })).some((g: Json) => g.id === id), false);
    const withDeactivated = await listGroups(u().owner, { include_deactivated_groups: true });
    assert.equal(withDeactivated.find((g: Json) => g.id === id).deactivated, true);
    assertError(
      await t.api(u().owner, "GET", "/user_groups", { include_deactivated_groups: "yes" }),
      400,
      "BAD_REQUEST",
      'Argument "include_deactivated_groups" is not valid JSON.',
    );
    assertError(await t.api(u().owner, "GET", "/user_groups", { include_deactivated_groups: 1 }), 400, "BAD_REQUEST", "include_deactivated_groups is not a boolean");
  });

  test("unknown parameters are reported as ignored", async () => {
    const body = assertSuccess(await t.api(u().member, "GET", "/user_groups", { frobnicate: 1 }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["frobnicate"]);
  });

  test("unauthenticated requests get 401", async () => {
    const response = await t.api(null, "GET", "/user_groups");
    assert.equal(response.status, 401);
  });
});

// ---------------------------------------------------------------------------
// POST /user_groups/create

describe("POST /user_groups/create", () => {
  test("creates a group with the creator's defaults and returns its ID; the group object has every field", async () => {
    const before = Math.floor(Date.now() / 1000);
    t.clearEvents();
    const name = uniqueName("support");
    const response = await t.api(u().member, "POST", "/user_groups/create", {
      name,
      description: "Support team",
      members: [u().admin.id, u().member.id, u().bot.id],
    });
    const body = assertSuccess(response);
    assert.deepEqual(Object.keys(body).sort(), ["group_id", "msg", "result"]);
    const id = body.group_id;
    const group = await getGroup(id);
    assert.deepEqual(Object.keys(group), GROUP_KEYS);
    assert.ok(group.date_created >= before - 1 && group.date_created <= Math.floor(Date.now() / 1000) + 1, String(group.date_created));
    assert.deepEqual(group, {
      id,
      name,
      creator_id: u().member.id,
      date_created: group.date_created,
      description: "Support team",
      members: [u().admin.id, u().member.id, u().bot.id].sort((a, b) => a - b),
      direct_subgroup_ids: [],
      is_system_group: false,
      can_add_members_group: anon([u().member.id]),
      can_join_group: sys["role:nobody"],
      can_leave_group: sys["role:everyone"],
      can_manage_group: anon([u().member.id]),
      can_mention_group: sys["role:everyone"],
      can_remove_members_group: sys["role:nobody"],
      deactivated: false,
    });

    const events = groupNotifications();
    assert.equal(events.length, 1);
    const event = events[0]!.event;
    assert.deepEqual(Object.keys(event), ["type", "op", "group"]);
    assert.deepEqual(Object.keys(event.group as object), ADD_EVENT_KEYS);
    const { id: _id, ...rest } = group;
    void _id;
    assert.deepEqual(event, { type: "user_group", op: "add", group: { ...rest, id } });
    assert.deepEqual(events[0]!.userIds, await t.activeUserIds());
    assert.ok(events[0]!.userIds.includes(u().guest.id));
  });

  test("the two creator defaults are separate anonymous groups", async () => {
    const id = await createGroup(u().moderator);
    const row = await db().selectFrom("user_groups").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.can_manage_group!), anon([u().moderator.id]));
    assert.deepEqual(JSON.parse(row.can_add_members_group!), anon([u().moderator.id]));
  });

  test("subgroups are added at creation, with an add_subgroups event after the add event", async () => {
    const a = await createGroup(u().member);
    const b = await createGroup(u().member);
    t.clearEvents();
    const id = await createGroup(u().admin, { members: [u().moderator.id], subgroups: [b, a, sys["role:moderators"]!, a] });
    const group = await getGroup(id);
    assert.deepEqual(group.direct_subgroup_ids, [a, b, sys["role:moderators"]].sort((x, y) => x! - y!));
    const events = groupNotifications().map((n) => n.event);
    assert.equal(events.length, 2);
    assert.equal(events[0]!.op, "add");
    assert.deepEqual((events[0]!.group as Json).direct_subgroup_ids, []);
    assert.deepEqual((events[0]!.group as Json).members, [u().moderator.id]);
    assert.deepEqual(events[1], { type: "user_group", op: "add_subgroups", group_id: id, direct_subgroup_ids: group.direct_subgroup_ids });
  });

  test("subgroups can be added even by a creator without other permissions on them", async () => {
    const theirs = await createGroup(u().admin);
    const id = await createGroup(u().member, { subgroups: [theirs], can_add_members_group: sys["role:nobody"], can_manage_group: sys["role:nobody"] });
    assert.deepEqual((await getGroup(id)).direct_subgroup_ids, [theirs]);
  });

  test("explicit settings: group IDs, anonymous groups, and their canonical forms", async () => {
    const sub = await createGroup(u().member);
    const id = await createGroup(u().member, {
      can_add_members_group: sys["role:moderators"],
      can_join_group: anon([], [sub]),
      can_leave_group: anon([], []),
      can_manage_group: anon([u().admin.id, u().member.id, u().admin.id], [sub]),
      can_mention_group: anon([u().member.id], []),
      can_remove_members_group: sys["role:nobody"],
    });
    const group = await getGroup(id);
    assert.equal(group.can_add_members_group, sys["role:moderators"]);
    assert.equal(group.can_join_group, sub, "one subgroup and no members is that group");
    assert.equal(group.can_leave_group, sys["role:nobody"], "an empty anonymous group is role:nobody");
    assert.deepEqual(group.can_manage_group, anon([u().admin.id, u().member.id].sort((a, b) => a - b), [sub]));
    assert.deepEqual(group.can_mention_group, anon([u().member.id]));
    assert.equal(group.can_remove_members_group, sys["role:nobody"]);
  });

  test("which system groups each setting accepts", async () => {
    const forbid = (setting: SettingName, group: string) =>
      t.api(u().owner, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: [], [setting]: sys[group] });
    for (const setting of SETTINGS) {
      assertError(await forbid(setting, "role:internet"), 400, "BAD_REQUEST", `'${setting}' setting cannot be set to 'role:internet' group.`);
      assertSuccess(await forbid(setting, "role:nobody"));
      assertSuccess(await forbid(setting, "role:members"));
    }
    for (const setting of ["can_add_members_group", "can_join_group", "can_manage_group", "can_remove_members_group"] as const) {
      assertError(await forbid(setting, "role:everyone"), 400, "BAD_REQUEST", `'${setting}' setting cannot be set to 'role:everyone' group.`);
      assertSuccess(await forbid(setting, "role:owners"));
    }
    for (const setting of ["can_leave_group", "can_mention_group"] as const) assertSuccess(await forbid(setting, "role:everyone"));
    // The contract: can_mention_group cannot be role:owners.
    assertError(await forbid("can_mention_group", "role:owners"), 400, "BAD_REQUEST", "'can_mention_group' setting cannot be set to 'role:owners' group.");
    assertSuccess(await forbid("can_leave_group", "role:owners"));
  });

  test("invalid setting values", async () => {
    const create = (params: Record<string, unknown>) =>
      t.api(u().member, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: [], ...params });
    const deactivated = await createGroup(u().member);
    assertSuccess(await deactivate(u().member, deactivated));
    const { groupId: foreign } = await otherRealmObjects();
    const gone = await newUser("Gone");
    await deactivateUser(gone);

    assertError(await create({ can_manage_group: 999999 }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await create({ can_manage_group: foreign }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await create({ can_manage_group: anon([], [999999]) }), 400, "BAD_REQUEST", "Invalid user group", {});
    assertError(await create({ can_manage_group: anon([u().member.id], [999999]) }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(await create({ can_manage_group: anon([u().member.id], [foreign]) }), 400, "BAD_REQUEST", `Invalid user group ID: ${foreign}`);
    assertError(await create({ can_manage_group: deactivated }), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await create({ can_manage_group: anon([u().member.id], [deactivated]) }), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await create({ can_manage_group: anon([888888]) }), 400, "BAD_REQUEST", "Invalid user ID: 888888");
    assertError(await create({ can_manage_group: anon([u().member.id, gone.id]) }), 400, "BAD_REQUEST", `Invalid user ID: ${gone.id}`);
    // Members are checked before subgroups.
    assertError(await create({ can_manage_group: anon([888888], [999999]) }), 400, "BAD_REQUEST", "Invalid user ID: 888888");

    assertError(await create({ can_manage_group: "x" }), 400, "BAD_REQUEST", 'Argument "can_manage_group" is not valid JSON.');
    assertError(await create({ can_manage_group: [1] }), 400, "BAD_REQUEST", "can_manage_group does not have the expected format");
    assertError(await create({ can_manage_group: "true" }), 400, "BAD_REQUEST", "can_manage_group does not have the expected format");
    assertError(await create({ can_manage_group: { direct_members: [] } }), 400, "BAD_REQUEST", /direct_subgroups/);
    assertError(await create({ can_manage_group: { direct_members: ["a"], direct_subgroups: [] } }), 400, "BAD_REQUEST", /not an integer/);
    assertError(await create({ can_manage_group: { new: 1 } }), 400, "BAD_REQUEST", /unexpected key 'new'/);
  });

  test("member list: unknown, other-organization, deactivated and system-bot IDs are refused; the first in request order is named", async () => {
    const create = (memberList: unknown) =>
      t.api(u().member, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: memberList });
    const { userId: foreignUser } = await otherRealmObjects();
    const gone = await newUser("Gone");
    await deactivateUser(gone);
    assertError(await create([u().admin.id, 1111]), 400, "BAD_REQUEST", "Invalid user ID: 1111");
    assertError(await create([2222, 1111]), 400, "BAD_REQUEST", "Invalid user ID: 2222");
    assertError(await create([foreignUser]), 400, "BAD_REQUEST", `Invalid user ID: ${foreignUser}`);
    assertError(await create([gone.id]), 400, "BAD_REQUEST", `Invalid user ID: ${gone.id}`);
    assertError(await create([await systemBotId()]), 400, "BAD_REQUEST", `Invalid user ID: ${await systemBotId()}`);
    assertError(await create([-5]), 400, "BAD_REQUEST", "Invalid user ID: -5");
    assertError(await create([99999999999]), 400, "BAD_REQUEST", "Invalid user ID: 99999999999");
    assertError(await create("1,2"), 400, "BAD_REQUEST", 'Argument "members" is not valid JSON.');
    assertError(await create({ a: 1 }), 400, "BAD_REQUEST", "members is not a list");
    assertError(await create(["x"]), 400, "BAD_REQUEST", "members[0] is not an integer");
    assertError(await create([1.5]), 400, "BAD_REQUEST", "members[0] is not an integer");
    // Duplicates are harmless; guests and bots can be members.
    const id = await createGroup(u().member, { members: [u().guest.id, u().guest.id, u().bot.id] });
    assert.deepEqual((await getGroup(id)).members, [u().guest.id, u().bot.id].sort((a, b) => a - b));
  });

  test("missing parameters", async () => {
    for (const missing of ["name", "description", "members"]) {
      const params: Record<string, unknown> = { name: uniqueName(), description: "d", members: [] };
      delete params[missing];
      assertError(await t.api(u().member, "POST", "/user_groups/create", params), 400, "REQUEST_VARIABLE_MISSING", `Missing '${missing}' argument`, {
        var_name: missing,
      });
    }
    // An empty description is fine.
    assertSuccess(await t.api(u().member, "POST", "/user_groups/create", { name: uniqueName(), description: "", members: [] }));
  });

  test("group names: empty, too long, reserved prefixes", async () => {
    const create = (name: string) => t.api(u().member, "POST", "/user_groups/create", { name, description: "", members: [] });
    assertError(await create(""), 400, "BAD_REQUEST", "User group name can't be empty!");
    assertError(await create("   "), 400, "BAD_REQUEST", "User group name can't be empty!");
    assertError(await create("x".repeat(101)), 400, "BAD_REQUEST", "User group name cannot exceed 100 characters.");
    const suffix = String(++counter);
    assertSuccess(await create("y".repeat(100 - suffix.length) + suffix));
    for (const prefix of ["@", "role:", "user:", "stream:", "channel:"]) {
      assertError(await create(`${prefix}team`), 400, "BAD_REQUEST", `User group name cannot start with '${prefix}'.`);
    }
    assertSuccess(await create(`Role:${++counter}`));
    assertSuccess(await create(`team @${++counter}`));
  });

  test("duplicate names: exact match, deactivated groups included; case matters", async () => {
    const name = uniqueName("Dup");
    const id = await createGroup(u().member, { name });
    const create = (n: string) => t.api(u().admin, "POST", "/user_groups/create", { name: n, description: "", members: [] });
    assertError(await create(name), 400, "BAD_REQUEST", `User group '${name}' already exists.`);
    assertError(await create("role:members".replace("role:", "role:")), 400, "BAD_REQUEST", "User group name cannot start with 'role:'.");
    assertSuccess(await create(name.toUpperCase()));
    assertSuccess(await deactivate(u().member, id));
    assertError(await create(name), 400, "BAD_REQUEST", `User group '${name}' already exists.`);
  });

  test("who may create groups: guests and bots never; otherwise the realm's can_create_groups", async () => {
    const params = () => ({ name: uniqueName(), description: "", members: [] });
    assertError(await t.api(u().guest, "POST", "/user_groups/create", params()), 400, "BAD_REQUEST", "Not allowed for guest users");
    // The role checks come before parameters are parsed.
    assertError(await t.api(u().guest, "POST", "/user_groups/create", {}), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await t.api(u().bot, "POST", "/user_groups/create", params()), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await t.api(u().bot, "POST", "/user_groups/create", {}), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    for (const key of ["owner", "admin", "moderator", "member"] as const) assertSuccess(await t.api(u()[key], "POST", "/user_groups/create", params()));

    await withRealmSetting("can_create_groups", sys["role:administrators"], async () => {
      for (const key of ["moderator", "member"] as const) {
        assertError(await t.api(u()[key], "POST", "/user_groups/create", params()), 400, "BAD_REQUEST", "Insufficient permission");
        assertError(await t.api(u()[key], "POST", "/user_groups/create", {}), 400, "BAD_REQUEST", "Insufficient permission");
      }
      for (const key of ["owner", "admin"] as const) assertSuccess(await t.api(u()[key], "POST", "/user_groups/create", params()));
    });
    await withRealmSetting("can_create_groups", anon([u().member.id], [sys["role:owners"]!]), async () => {
      assertSuccess(await t.api(u().member, "POST", "/user_groups/create", params()));
      assertSuccess(await t.api(u().owner, "POST", "/user_groups/create", params()));
      assertError(await t.api(u().admin, "POST", "/user_groups/create", params()), 400, "BAD_REQUEST", "Insufficient permission");
    });
    await withRealmSetting("can_create_groups", sys["role:nobody"], async () => {
      assertError(await t.api(u().owner, "POST", "/user_groups/create", params()), 400, "BAD_REQUEST", "Insufficient permission");
    });
  });

  test("a failure after the group is written (bad subgroup) rolls everything back and sends nothing", async () => {
    const deactivated = await createGroup(u().member);
    assertSuccess(await deactivate(u().member, deactivated));
    const name = uniqueName("rollback");
    t.clearEvents();
    const create = (subs: unknown) => t.api(u().member, "POST", "/user_groups/create", { name, description: "", members: [u().member.id], subgroups: subs });
    assertError(await create([999999]), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(await create([sys["role:members"], 999998, 999999]), 400, "BAD_REQUEST", "Invalid user group ID: 999998");
    assertError(await create([deactivated]), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await create("[1"), 400, "BAD_REQUEST", 'Argument "subgroups" is not valid JSON.');
    assert.deepEqual(groupNotifications(), []);
    const rows = await db().selectFrom("user_groups").select("id").where("name", "=", name).execute();
    assert.deepEqual(rows, []);
    // The name is still free.
    assertSuccess(await create([]));
  });
});

// ---------------------------------------------------------------------------
// PATCH /user_groups/{id}

describe("PATCH /user_groups/{user_group_id}", () => {
  test("renames and re-describes, one update event per changed field; unchanged values send nothing", async () => {
    const id = await createGroup(u().member, { description: "old" });
    const name = uniqueName("renamed");
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { name, description: "new **text**" }));
    await assertGroupEvents([
      { type: "user_group", op: "update", group_id: id, data: { name } },
      { type: "user_group", op: "update", group_id: id, data: { description: "new **text**" } },
    ]);
    const group = await getGroup(id);
    assert.equal(group.name, name);
    assert.equal(group.description, "new **text**");

    t.clearEvents();
    assertSuccess(await patch(u().member, id, { name, description: "new **text**" }));
    assert.deepEqual(groupNotifications(), []);
    assertSuccess(await patch(u().member, id, { description: "" }));
    assert.equal((await getGroup(id)).description, "");
  });

  test("No new data supplied; names validated like creation; duplicates refused", async () => {
    const id = await createGroup(u().member);
    const other = uniqueName("taken");
    await createGroup(u().member, { name: other });
    assertError(await patch(u().member, id, {}), 400, "BAD_REQUEST", "No new data supplied");
    assertError(await patch(u().member, id, { unknown: 1 }), 400, "BAD_REQUEST", "No new data supplied");
    assertError(await patch(u().member, id, { name: "" }), 400, "BAD_REQUEST", "User group name can't be empty!");
    assertError(await patch(u().member, id, { name: "z".repeat(101) }), 400, "BAD_REQUEST", "User group name cannot exceed 100 characters.");
    assertError(await patch(u().member, id, { name: "@x" }), 400, "BAD_REQUEST", "User group name cannot start with '@'.");
    assertError(await patch(u().member, id, { name: other }), 400, "BAD_REQUEST", `User group '${other}' already exists.`);
    assertError(await patch(u().member, id, { name: "role:members" }), 400, "BAD_REQUEST", "User group name cannot start with 'role:'.");
    assertError(await patch(u().member, id, { deactivated: "no" }), 400, "BAD_REQUEST", 'Argument "deactivated" is not valid JSON.');
  });

  test("unknown, other-organization and system groups", async () => {
    const { groupId: foreign } = await otherRealmObjects();
    assertError(await patch(u().owner, 999999, { name: "x" }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await patch(u().owner, foreign, { name: "x" }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await patch(u().owner, 99999999999, { name: "x" }), 400, "BAD_REQUEST", "Invalid user group");
    for (const name of ["role:members", "role:nobody", "role:owners"]) {
      assertError(await patch(u().owner, sys[name]!, { description: "x" }), 400, "BAD_REQUEST", "Insufficient permission", {});
    }
    const notFound = await t.api(u().owner, "PATCH", "/user_groups/abc", { name: "x" });
    assert.equal(notFound.status, 404);
    assert.equal(notFound.body.result, "error");
  });

  test("permission: can_manage_group (the creator by default) or the realm's can_manage_all_groups (owners)", async () => {
    const creator = await newUser("Creator");
    const id = await createGroup(creator);
    const attempt = (actor: TestUser) => patch(actor, id, { description: `by ${actor.id}` });
    assertSuccess(await attempt(creator));
    assertSuccess(await attempt(u().owner));
    for (const key of ["admin", "moderator", "member", "bot"] as const) {
      assertError(await attempt(u()[key]), 400, "BAD_REQUEST", "Insufficient permission");
    }
    assertError(await attempt(u().guest), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await patch(u().guest, id, {}), 400, "BAD_REQUEST", "Not allowed for guest users");

    await withRealmSetting("can_manage_all_groups", sys["role:administrators"], async () => {
      assertSuccess(await attempt(u().admin));
      assertError(await attempt(u().moderator), 400, "BAD_REQUEST", "Insufficient permission");
    });
    await withRealmSetting("can_manage_all_groups", sys["role:moderators"], async () => {
      assertSuccess(await attempt(u().moderator));
      assertError(await attempt(u().member), 400, "BAD_REQUEST", "Insufficient permission");
    });
    // Guests never qualify for can_manage_all_groups, whatever it names.
    await withRealmSetting("can_manage_all_groups", anon([u().guest.id]), async () => {
      assertError(await attempt(u().guest), 400, "BAD_REQUEST", "Not allowed for guest users");
    });

    // Through a subgroup of can_manage_group, recursively.
    const inner = await createGroup(u().owner, { members: [u().moderator.id] });
    const outer = await createGroup(u().owner, { subgroups: [inner] });
    assertSuccess(await patch(creator, id, { can_manage_group: { new: anon([creator.id], [outer]) } }));
    assertSuccess(await attempt(u().moderator));
    // A bot can manage a group it is allowed to.
    assertSuccess(await patch(creator, id, { can_manage_group: { new: anon([u().bot.id]) } }));
    assertSuccess(await attempt(u().bot));
    assertError(await attempt(creator), 400, "BAD_REQUEST", "Insufficient permission");
    // Other settings do not grant editing.
    const other = await createGroup(creator, { can_add_members_group: sys["role:members"], can_remove_members_group: sys["role:members"] });
    assertError(await patch(u().member, other, { name: uniqueName() }), 400, "BAD_REQUEST", "Insufficient permission");
  });

  test("settings: {new, old}, canonical values, one event per changed setting, no-ops", async () => {
    const id = await createGroup(u().member);
    const sub = await createGroup(u().member);
    t.clearEvents();
    assertSuccess(
      await patch(u().member, id, {
        can_mention_group: { new: sys["role:members"], old: sys["role:everyone"] },
        can_join_group: { new: anon([], [sub]) },
        can_leave_group: { new: anon([u().admin.id, u().member.id], []), old: sys["role:everyone"] },
        can_remove_members_group: { new: anon([], []) },
      }),
    );
    await assertGroupEvents([
      { type: "user_group", op: "update", group_id: id, data: { can_join_group: sub } },
      { type: "user_group", op: "update", group_id: id, data: { can_leave_group: anon([u().admin.id, u().member.id].sort((a, b) => a - b)) } },
      { type: "user_group", op: "update", group_id: id, data: { can_mention_group: sys["role:members"] } },
    ]);
    const group = await getGroup(id);
    assert.equal(group.can_join_group, sub);
    assert.equal(group.can_mention_group, sys["role:members"]);
    assert.equal(group.can_remove_members_group, sys["role:nobody"]);

    // old compares as sets; an equal new value is a no-op.
    t.clearEvents();
    assertSuccess(
      await patch(u().member, id, {
        can_leave_group: { new: anon([u().member.id, u().admin.id]), old: anon([u().member.id, u().admin.id, u().member.id]) },
      }),
    );
    assert.deepEqual(groupNotifications(), []);
    // old given as {[], [X]} means X.
    assertSuccess(await patch(u().member, id, { can_join_group: { new: sys["role:members"], old: anon([], [sub]) } }));
    assert.equal((await getGroup(id)).can_join_group, sys["role:members"]);
  });

  test("a stale old value is refused with EXPECTATION_MISMATCH and changes nothing", async () => {
    const id = await createGroup(u().member);
    const name = uniqueName("kept");
    t.clearEvents();
    assertError(
      await patch(u().member, id, { name, can_mention_group: { new: sys["role:members"], old: sys["role:moderators"] } }),
      400,
      "EXPECTATION_MISMATCH",
      "'old' value does not match the expected value.",
      { field_name: "old" },
    );
    assertError(
      await patch(u().member, id, { can_manage_group: { new: sys["role:members"], old: anon([u().member.id, u().admin.id]) } }),
      400,
      "EXPECTATION_MISMATCH",
      "'old' value does not match the expected value.",
      { field_name: "old" },
    );
    assert.deepEqual(groupNotifications(), []);
    const group = await getGroup(id);
    assert.notEqual(group.name, name, "the rename in the same request was rolled back");
    assert.equal(group.can_mention_group, sys["role:everyone"]);
  });

  test("setting values are validated like at creation; the bare form is refused", async () => {
    const id = await createGroup(u().member);
    assertError(await patch(u().member, id, { can_manage_group: sys["role:members"] }), 400, "BAD_REQUEST", "can_manage_group does not have the expected format");
    assertError(await patch(u().member, id, { can_join_group: anon([u().member.id]) }), 400, "BAD_REQUEST", "can_join_group does not have the expected format");
    assertError(await patch(u().member, id, { can_join_group: { old: 1 } }), 400, "BAD_REQUEST", "can_join_group does not have the expected format");
    assertError(await patch(u().member, id, { can_join_group: { new: 1, extra: 1 } }), 400, "BAD_REQUEST", "can_join_group does not have the expected format");
    assertError(await patch(u().member, id, { can_join_group: { new: 999999 } }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await patch(u().member, id, { can_join_group: { new: sys["role:everyone"] } }), 400, "BAD_REQUEST", "'can_join_group' setting cannot be set to 'role:everyone' group.");
    assertError(await patch(u().member, id, { can_mention_group: { new: sys["role:internet"] } }), 400, "BAD_REQUEST", "'can_mention_group' setting cannot be set to 'role:internet' group.");
    assertError(await patch(u().member, id, { can_mention_group: { new: sys["role:owners"] } }), 400, "BAD_REQUEST", "'can_mention_group' setting cannot be set to 'role:owners' group.");
    assertError(await patch(u().member, id, { can_mention_group: { new: anon([777777]) } }), 400, "BAD_REQUEST", "Invalid user ID: 777777");
    assertError(await patch(u().member, id, { can_mention_group: { new: anon([u().member.id], [777777]) } }), 400, "BAD_REQUEST", "Invalid user group ID: 777777");
  });

  test("a deactivated group can still be edited; deactivated=false reactivates it with update and add events", async () => {
    const sub = await createGroup(u().member);
    const id = await createGroup(u().member, { members: [u().admin.id, u().member.id], subgroups: [sub] });
    assertSuccess(await deactivate(u().member, id));
    const name = uniqueName("edited while off");
    assertSuccess(await patch(u().member, id, { name, can_mention_group: { new: sys["role:members"] } }));
    assert.equal((await getGroup(id)).name, name);

    // deactivated=true on a deactivated group does nothing.
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { deactivated: true }));
    assert.deepEqual(groupNotifications(), []);

    assertSuccess(await patch(u().member, id, { deactivated: false }));
    const group = await getGroup(id);
    assert.equal(group.deactivated, false);
    const { id: _id, ...rest } = group;
    void _id;
    await assertGroupEvents([
      { type: "user_group", op: "update", group_id: id, data: { deactivated: false } },
      { type: "user_group", op: "add", group: { ...rest, id } },
    ]);
    assert.deepEqual(Object.keys(groupNotifications()[1]!.event.group as object), ADD_EVENT_KEYS);
    assert.deepEqual(group.members, [u().admin.id, u().member.id].sort((a, b) => a - b));
    assert.deepEqual(group.direct_subgroup_ids, [sub]);
    assert.ok((await listGroups()).some((g: Json) => g.id === id));

    // deactivated=false on an active group does nothing.
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { deactivated: false }));
    assert.deepEqual(groupNotifications(), []);
  });

  test("switching a setting between anonymous and named values", async () => {
    const id = await createGroup(u().member);
    assertSuccess(await patch(u().member, id, { can_manage_group: { new: sys["role:moderators"], old: anon([u().member.id]) } }));
    assert.equal((await getGroup(id)).can_manage_group, sys["role:moderators"]);
    assertSuccess(await patch(u().moderator, id, { can_manage_group: { new: anon([u().member.id], [sys["role:moderators"]!]) } }));
    assert.deepEqual((await getGroup(id)).can_manage_group, anon([u().member.id], [sys["role:moderators"]!]));
    assertSuccess(await patch(u().member, id, { can_manage_group: { new: anon([u().admin.id], [sys["role:moderators"]!]) } }));
    assert.deepEqual((await getGroup(id)).can_manage_group, anon([u().admin.id], [sys["role:moderators"]!]));
  });
});

// ---------------------------------------------------------------------------
// POST /user_groups/{id}/deactivate

describe("POST /user_groups/{user_group_id}/deactivate", () => {
  test("deactivates: update then remove events; memberships are kept; reads of the group then fail", async () => {
    const id = await createGroup(u().member, { members: [u().member.id] });
    t.clearEvents();
    const body = assertSuccess(await deactivate(u().member, id));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    await assertGroupEvents([
      { type: "user_group", op: "update", group_id: id, data: { deactivated: true } },
      { type: "user_group", op: "remove", group_id: id },
    ]);
    const group = await getGroup(id);
    assert.equal(group.deactivated, true);
    assert.deepEqual(group.members, [u().member.id]);
    assertError(await deactivate(u().member, id), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members`), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/subgroups`), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members/${u().member.id}`), 400, "BAD_REQUEST", "User group is deactivated.");
  });

  test("permission and unknown groups", async () => {
    const id = await createGroup(u().member);
    for (const key of ["admin", "moderator", "bot", "guest"] as const) {
      assertError(await deactivate(u()[key], id), 400, "BAD_REQUEST", "Insufficient permission");
    }
    assertError(await deactivate(u().guest, 999999), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await deactivate(u().owner, 999999), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await deactivate(u().owner, (await otherRealmObjects()).groupId), 400, "BAD_REQUEST", "Invalid user group");
    for (const name of Object.keys(sys)) assertError(await deactivate(u().owner, sys[name]!), 400, "BAD_REQUEST", "Insufficient permission");
    assert.equal((await t.api(u().owner, "POST", "/user_groups/x1/deactivate")).status, 404);
    assertSuccess(await deactivate(u().owner, id));
  });

  test("a group in use cannot be deactivated; objections list every use", async () => {
    const target = await createGroup(u().member);
    const supergroup = await createGroup(u().member, { subgroups: [target] });
    const user1 = await createGroup(u().member, { can_mention_group: target, can_join_group: anon([u().admin.id], [target]) });
    const user2 = await createGroup(u().member, { can_leave_group: anon([], [target]) });
    const channel = await insertChannel(uniqueName("chan"), { can_send_message_group: target, can_add_subscribers_group: anon([u().member.id], [target]) });
    await insertChannel(uniqueName("archived"), { can_send_message_group: target }, true);
    await insertChannel(uniqueName("unrelated"), {});
    const oldRealm = await setRealmSetting("can_create_groups", anon([u().member.id], [target]));
    const oldRealm2 = await setRealmSetting("can_add_custom_emoji_group", target);
    try {
      t.clearEvents();
      assertError(await deactivate(u().member, target), 400, "CANNOT_DEACTIVATE_GROUP_IN_USE", "Cannot deactivate user group in use.", {
        objections: [
          { type: "subgroup", supergroup_ids: [supergroup] },
          { type: "channel", channel_id: channel, settings: ["can_add_subscribers_group", "can_send_message_group"] },
          { type: "user_group", group_id: user1, settings: ["can_join_group", "can_mention_group"] },
          { type: "user_group", group_id: user2, settings: ["can_leave_group"] },
          { type: "realm", settings: ["can_add_custom_emoji_group", "can_create_groups"] },
        ],
      });
      assert.deepEqual(groupNotifications(), []);
      assert.equal((await getGroup(target)).deactivated, false);
    } finally {
      await setRealmSetting("can_create_groups", oldRealm);
      await setRealmSetting("can_add_custom_emoji_group", oldRealm2);
    }
    // Uses by deactivated groups and archived channels do not count.
    assertSuccess(await deactivate(u().member, supergroup));
    assertSuccess(await deactivate(u().member, user1));
    assertSuccess(await deactivate(u().member, user2));
    await db().updateTable("channels").set({ is_archived: true }).where("id", "=", channel).execute();
    assertSuccess(await deactivate(u().member, target));
  });

  test("a group whose own setting names itself objects to its own deactivation", async () => {
    const id = await createGroup(u().member);
    assertSuccess(await patch(u().member, id, { can_mention_group: { new: id } }));
    assertError(await deactivate(u().member, id), 400, "CANNOT_DEACTIVATE_GROUP_IN_USE", "Cannot deactivate user group in use.", {
      objections: [{ type: "user_group", group_id: id, settings: ["can_mention_group"] }],
    });
  });
});

// ---------------------------------------------------------------------------
// POST /user_groups/{id}/members

describe("POST /user_groups/{user_group_id}/members", () => {
  test("adds and removes members, with add_members and remove_members events", async () => {
    const id = await createGroup(u().member, { members: [u().member.id] });
    t.clearEvents();
    assertSuccess(await members(u().member, id, { add: [u().guest.id, u().admin.id, u().bot.id] }));
    const added = [u().guest.id, u().admin.id, u().bot.id].sort((a, b) => a - b);
    await assertGroupEvents([{ type: "user_group", op: "add_members", group_id: id, user_ids: added }]);
    assert.deepEqual((await getGroup(id)).members, [...added, u().member.id].sort((a, b) => a - b));

    t.clearEvents();
    assertSuccess(await members(u().member, id, { delete: [u().guest.id, u().member.id] }));
    await assertGroupEvents([{ type: "user_group", op: "remove_members", group_id: id, user_ids: [u().guest.id, u().member.id].sort((a, b) => a - b) }]);
    assert.deepEqual((await getGroup(id)).members, [u().admin.id, u().bot.id].sort((a, b) => a - b));
  });

  test("add, delete, add_subgroups and delete_subgroups together, in that order, atomically", async () => {
    const id = await createGroup(u().member, { members: [u().admin.id] });
    const a = await createGroup(u().member);
    const b = await createGroup(u().member);
    assertSuccess(await members(u().member, id, { add_subgroups: [a] }));
    t.clearEvents();
    assertSuccess(await members(u().member, id, { delete_subgroups: [a], add_subgroups: [b], delete: [u().admin.id], add: [u().moderator.id] }));
    await assertGroupEvents([
      { type: "user_group", op: "add_members", group_id: id, user_ids: [u().moderator.id] },
      { type: "user_group", op: "remove_members", group_id: id, user_ids: [u().admin.id] },
      { type: "user_group", op: "add_subgroups", group_id: id, direct_subgroup_ids: [b] },
      { type: "user_group", op: "remove_subgroups", group_id: id, direct_subgroup_ids: [a] },
    ]);
    const group = await getGroup(id);
    assert.deepEqual(group.members, [u().moderator.id]);
    assert.deepEqual(group.direct_subgroup_ids, [b]);

    // A later failure undoes the earlier parts.
    t.clearEvents();
    assertError(await members(u().member, id, { add: [u().admin.id], delete: [u().guest.id] }), 400, "BAD_REQUEST", `There is no member '${u().guest.id}' in this user group`);
    assert.deepEqual(groupNotifications(), []);
    assert.deepEqual((await getGroup(id)).members, [u().moderator.id]);
  });

  test("errors: nothing to do, unknown users, already a member, not a member, bad input", async () => {
    const id = await createGroup(u().member, { members: [u().member.id, u().admin.id] });
    const gone = await newUser("Gone");
    const nothing = 'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".';
    assertError(await members(u().member, id, {}), 400, "BAD_REQUEST", nothing);
    assertError(await members(u().member, id, { add: [], delete: [], add_subgroups: [], delete_subgroups: [] }), 400, "BAD_REQUEST", nothing);
    assertError(await members(u().member, id, { add: [123456] }), 400, "BAD_REQUEST", "Invalid user ID: 123456");
    assertError(await members(u().member, id, { add: [u().moderator.id, 123456, 123457] }), 400, "BAD_REQUEST", "Invalid user ID: 123456");
    assertError(await members(u().member, id, { add: [(await otherRealmObjects()).userId] }), 400, "BAD_REQUEST", `Invalid user ID: ${(await otherRealmObjects()).userId}`);
    assertError(await members(u().member, id, { add: [u().moderator.id, u().admin.id] }), 400, "BAD_REQUEST", `User ${u().admin.id} is already a member of this group`);
    assertError(await members(u().member, id, { delete: [123456] }), 400, "BAD_REQUEST", "Invalid user ID: 123456");
    assertError(await members(u().member, id, { delete: [u().moderator.id] }), 400, "BAD_REQUEST", `There is no member '${u().moderator.id}' in this user group`);
    assertError(await members(u().member, id, { add: "[1" }), 400, "BAD_REQUEST", 'Argument "add" is not valid JSON.');
    assertError(await members(u().member, id, { delete: 5 }), 400, "BAD_REQUEST", "delete is not a list");
    assertError(await members(u().member, id, { add_subgroups: ["a"] }), 400, "BAD_REQUEST", "add_subgroups[0] is not an integer");

    // Deactivated users can be neither added nor removed; they vanish from member lists.
    assertSuccess(await members(u().member, id, { add: [gone.id] }));
    await deactivateUser(gone);
    assert.deepEqual((await getGroup(id)).members, [u().member.id, u().admin.id].sort((a, b) => a - b));
    assertError(await members(u().member, id, { delete: [gone.id] }), 400, "BAD_REQUEST", `Invalid user ID: ${gone.id}`);
    assertError(await members(u().member, id, { add: [gone.id] }), 400, "BAD_REQUEST", `Invalid user ID: ${gone.id}`);
  });

  test("unknown, other-organization, system and non-numeric groups", async () => {
    assertError(await members(u().owner, 999999, { add: [u().admin.id] }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await members(u().owner, (await otherRealmObjects()).groupId, { add: [u().admin.id] }), 400, "BAD_REQUEST", "Invalid user group");
    for (const name of ["role:members", "role:owners", "role:nobody"]) {
      assertError(await members(u().owner, sys[name]!, { add: [u().member.id] }), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await members(u().owner, sys[name]!, { delete: [u().owner.id] }), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await members(u().owner, sys[name]!, { add_subgroups: [sys["role:nobody"]] }), 400, "BAD_REQUEST", "Insufficient permission");
    }
    assert.equal((await members(u().owner, -1 as number, { add: [1] })).status, 404);
  });

  test("guests may not use it; bots may when permitted", async () => {
    const id = await createGroup(u().member, { can_add_members_group: anon([u().bot.id]) });
    assertError(await members(u().guest, id, { add: [u().guest.id] }), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await members(u().guest, id, {}), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertSuccess(await members(u().bot, id, { add: [u().admin.id] }));
    assertError(await members(u().bot, id, { delete: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
  });

  test("adding others takes can_add_members_group; removing others takes can_remove_members_group; managing implies both", async () => {
    const manager = await newUser("Manager");
    const adder = await newUser("Adder");
    const remover = await newUser("Remover");
    const outsider = await newUser("Outsider");
    const id = await createGroup(manager, {
      can_add_members_group: anon([adder.id]),
      can_remove_members_group: anon([remover.id]),
    });
    assertError(await members(outsider, id, { add: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await members(remover, id, { add: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await members(adder, id, { add: [u().admin.id] }));
    assertError(await members(adder, id, { delete: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await members(outsider, id, { delete: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await members(remover, id, { delete: [u().admin.id] }));
    // The manager is in neither setting but can do both.
    assertSuccess(await members(manager, id, { add: [u().moderator.id, outsider.id] }));
    assertSuccess(await members(manager, id, { delete: [u().moderator.id] }));
    // The realm's can_manage_all_groups (owners) too.
    assertSuccess(await members(u().owner, id, { add: [u().moderator.id] }));
    assertSuccess(await members(u().owner, id, { delete: [u().moderator.id] }));
    for (const key of ["admin", "moderator"] as const) {
      assertError(await members(u()[key], id, { add: [u().member.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    }
    // A member is not an adder by being a member of the group.
    assertError(await members(outsider, id, { add: [u().member.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    // Permission through a subgroup of the setting's anonymous group.
    const adders = await createGroup(u().owner, { members: [u().moderator.id] });
    assertSuccess(await patch(manager, id, { can_add_members_group: { new: anon([adder.id], [adders]) } }));
    assertSuccess(await members(u().moderator, id, { add: [u().member.id] }));
  });

  test("joining and leaving yourself: can_join_group / can_leave_group, falling back to the add/remove settings", async () => {
    const joiner = await newUser("Joiner");
    const id = await createGroup(u().owner, { can_join_group: sys["role:nobody"], can_leave_group: sys["role:nobody"] });
    assertError(await members(joiner, id, { add: [joiner.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await patch(u().owner, id, { can_join_group: { new: sys["role:members"] } }));
    t.clearEvents();
    assertSuccess(await members(joiner, id, { add: [joiner.id] }));
    await assertGroupEvents([{ type: "user_group", op: "add_members", group_id: id, user_ids: [joiner.id] }]);
    // can_join_group lets you add only yourself.
    assertError(await members(joiner, id, { add: [u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await members(joiner, id, { add: [joiner.id, u().admin.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await members(joiner, id, { add: [joiner.id] }), 400, "BAD_REQUEST", `User ${joiner.id} is already a member of this group`);

    // Leaving: can_leave_group is role:nobody.
    assertError(await members(joiner, id, { delete: [joiner.id] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await patch(u().owner, id, { can_remove_members_group: { new: anon([joiner.id]) } }));
    assertSuccess(await members(joiner, id, { delete: [joiner.id] }));

    // Joining through can_add_members_group when can_join_group refuses.
    assertSuccess(await patch(u().owner, id, { can_join_group: { new: sys["role:nobody"] }, can_add_members_group: { new: anon([joiner.id]) } }));
    assertSuccess(await members(joiner, id, { add: [joiner.id] }));
    // Leaving through can_leave_group.
    assertSuccess(await patch(u().owner, id, { can_remove_members_group: { new: sys["role:nobody"] }, can_leave_group: { new: sys["role:everyone"] } }));
    assertSuccess(await members(joiner, id, { delete: [joiner.id] }));
    // The default can_leave_group (role:everyone) lets any member leave.
    const open = await createGroup(u().owner, { members: [joiner.id] });
    assertSuccess(await members(joiner, open, { delete: [joiner.id] }));
    // The self rules do not reach a missing group or a system group.
    assertError(await members(joiner, 999999, { add: [joiner.id] }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await members(u().member, sys["role:members"]!, { delete: [u().member.id] }), 400, "BAD_REQUEST", "Insufficient permission");
  });

  test("subgroups via the members endpoint: adding takes can_add_members_group, removing takes can_manage_group", async () => {
    const adder = await newUser("SubAdder");
    const id = await createGroup(u().owner, { can_add_members_group: anon([adder.id]), can_remove_members_group: anon([adder.id]) });
    const sub = await createGroup(u().owner);
    assertSuccess(await members(adder, id, { add_subgroups: [sub] }));
    assertError(await members(adder, id, { delete_subgroups: [sub] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await members(u().owner, id, { delete_subgroups: [sub] }));
  });

  test("members and subgroups can change on a deactivated group", async () => {
    const id = await createGroup(u().member);
    const sub = await createGroup(u().member);
    assertSuccess(await deactivate(u().member, id));
    assertSuccess(await members(u().member, id, { add: [u().admin.id], add_subgroups: [sub] }));
    const group = await getGroup(id);
    assert.deepEqual(group.members, [u().admin.id]);
    assert.deepEqual(group.direct_subgroup_ids, [sub]);
  });
});

// ---------------------------------------------------------------------------
// POST /user_groups/{id}/subgroups

describe("POST /user_groups/{user_group_id}/subgroups", () => {
  test("adds and removes subgroups, with events; system groups can be subgroups", async () => {
    const id = await createGroup(u().member);
    const a = await createGroup(u().member);
    const b = await createGroup(u().member);
    t.clearEvents();
    assertSuccess(await subgroups(u().member, id, { add: [b, a, sys["role:moderators"]] }));
    const added = [a, b, sys["role:moderators"]!].sort((x, y) => x - y);
    await assertGroupEvents([{ type: "user_group", op: "add_subgroups", group_id: id, direct_subgroup_ids: added }]);
    assert.deepEqual((await getGroup(id)).direct_subgroup_ids, added);
    t.clearEvents();
    assertSuccess(await subgroups(u().member, id, { delete: [a, sys["role:moderators"]] }));
    await assertGroupEvents([{ type: "user_group", op: "remove_subgroups", group_id: id, direct_subgroup_ids: [a, sys["role:moderators"]!].sort((x, y) => x - y) }]);
    assert.deepEqual((await getGroup(id)).direct_subgroup_ids, [b]);
    // add and delete together: add first.
    t.clearEvents();
    assertSuccess(await subgroups(u().member, id, { add: [a], delete: [b] }));
    assert.deepEqual(
      groupNotifications().map((n) => n.event.op),
      ["add_subgroups", "remove_subgroups"],
    );
  });

  test("errors: nothing to do, unknown or deactivated subgroups, already / not a subgroup", async () => {
    const id = await createGroup(u().member);
    const a = await createGroup(u().member);
    const off = await createGroup(u().member);
    assertSuccess(await deactivate(u().member, off));
    assertSuccess(await subgroups(u().member, id, { add: [a] }));
    const nothing = 'Nothing to do. Specify at least one of "add" or "delete".';
    assertError(await subgroups(u().member, id, {}), 400, "BAD_REQUEST", nothing);
    assertError(await subgroups(u().member, id, { add: [], delete: [] }), 400, "BAD_REQUEST", nothing);
    assertError(await subgroups(u().member, id, { add: [999999] }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(await subgroups(u().member, id, { add: [(await otherRealmObjects()).groupId] }), 400, "BAD_REQUEST", `Invalid user group ID: ${(await otherRealmObjects()).groupId}`);
    assertError(await subgroups(u().member, id, { add: [off] }), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await subgroups(u().member, id, { add: [a] }), 400, "BAD_REQUEST", `User group ${a} is already a subgroup of this group.`);
    assertError(await subgroups(u().member, id, { delete: [999999] }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(await subgroups(u().member, id, { delete: [off] }), 400, "BAD_REQUEST", "User group is deactivated.");
    assertError(await subgroups(u().member, id, { delete: [sys["role:members"]] }), 400, "BAD_REQUEST", `User group ${sys["role:members"]} is not a subgroup of this group.`);
    assertError(await subgroups(u().member, id, { add: "x" }), 400, "BAD_REQUEST", 'Argument "add" is not valid JSON.');
    assertError(await subgroups(u().member, 999999, { add: [a] }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await subgroups(u().owner, sys["role:members"]!, { add: [a] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await subgroups(u().guest, id, { add: [a] }), 400, "BAD_REQUEST", "Not allowed for guest users");
  });

  test("cycles are refused: a group in itself, directly or through deeper subgroups", async () => {
    const top = await createGroup(u().member);
    const middle = await createGroup(u().member);
    const bottom = await createGroup(u().member);
    assertSuccess(await subgroups(u().member, top, { add: [middle] }));
    assertSuccess(await subgroups(u().member, middle, { add: [bottom] }));
    const cycle = (id: number) => `User group ${id} is already a subgroup of one of the passed subgroups.`;
    assertError(await subgroups(u().member, top, { add: [top] }), 400, "BAD_REQUEST", cycle(top));
    assertError(await subgroups(u().member, middle, { add: [top] }), 400, "BAD_REQUEST", cycle(middle));
    assertError(await subgroups(u().member, bottom, { add: [top] }), 400, "BAD_REQUEST", cycle(bottom));
    assertError(await members(u().member, bottom, { add_subgroups: [middle] }), 400, "BAD_REQUEST", cycle(bottom));
    // Adding a deeper descendant directly is fine (no cycle).
    assertSuccess(await subgroups(u().member, top, { add: [bottom] }));
    assert.deepEqual(await subgroupIds(top, true), [middle, bottom].sort((a, b) => a - b));
  });

  test("adding takes can_add_members_group; removing takes can_manage_group", async () => {
    const adder = await newUser("GroupAdder");
    const id = await createGroup(u().owner, { can_add_members_group: anon([adder.id]), can_remove_members_group: anon([adder.id]) });
    const sub = await createGroup(u().owner);
    assertError(await subgroups(u().member, id, { add: [sub] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await subgroups(adder, id, { add: [sub] }));
    assertError(await subgroups(adder, id, { delete: [sub] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await subgroups(u().owner, id, { delete: [sub] }));
  });
});

// ---------------------------------------------------------------------------
// Membership reads

describe("GET /user_groups/{id}/members, /subgroups, /members/{user_id}", () => {
  test("members: recursive by default, direct on request; sorted; deactivated users left out", async () => {
    const leaf = await createGroup(u().member, { members: [u().moderator.id, u().guest.id] });
    const mid = await createGroup(u().member, { members: [u().admin.id], subgroups: [leaf] });
    const top = await createGroup(u().member, { members: [u().member.id, u().admin.id], subgroups: [mid] });
    assert.deepEqual(await memberIds(top), [u().member.id, u().admin.id, u().moderator.id, u().guest.id].sort((a, b) => a - b));
    assert.deepEqual(await memberIds(top, true), [u().member.id, u().admin.id].sort((a, b) => a - b));
    assert.deepEqual(await memberIds(leaf, true), [u().moderator.id, u().guest.id].sort((a, b) => a - b));

    const gone = await newUser("Leaving");
    assertSuccess(await members(u().member, leaf, { add: [gone.id] }));
    assert.ok((await memberIds(top)).includes(gone.id));
    await deactivateUser(gone);
    assert.ok(!(await memberIds(top)).includes(gone.id));
    assert.ok(!(await memberIds(leaf, true)).includes(gone.id));

    // System groups: recursive through the role chain.
    const everyone = await memberIds(sys["role:everyone"]!);
    for (const key of ["owner", "admin", "moderator", "member", "guest", "bot"] as const) assert.ok(everyone.includes(u()[key].id), key);
    assert.deepEqual(await memberIds(sys["role:everyone"]!, true), [u().guest.id]);
    assert.deepEqual(await memberIds(sys["role:administrators"]!), [u().owner.id, u().admin.id].sort((a, b) => a - b));
    assert.deepEqual(await memberIds(sys["role:nobody"]!), []);
  });

  test("subgroups: strict recursive by default, direct on request", async () => {
    const leaf = await createGroup(u().member);
    const mid = await createGroup(u().member, { subgroups: [leaf] });
    const top = await createGroup(u().member, { subgroups: [mid, sys["role:owners"]!] });
    assert.deepEqual(await subgroupIds(top), [leaf, mid, sys["role:owners"]!].sort((a, b) => a - b));
    assert.deepEqual(await subgroupIds(top, true), [mid, sys["role:owners"]!].sort((a, b) => a - b));
    assert.deepEqual(await subgroupIds(leaf), []);
    assert.deepEqual(await subgroupIds(sys["role:moderators"]!), [sys["role:owners"]!, sys["role:administrators"]!].sort((a, b) => a - b));
    assert.deepEqual(await subgroupIds(sys["role:moderators"]!, true), [sys["role:administrators"]]);
  });

  test("is_user_group_member: direct and recursive", async () => {
    const leaf = await createGroup(u().member, { members: [u().moderator.id, u().bot.id] });
    const top = await createGroup(u().member, { members: [u().admin.id], subgroups: [leaf] });
    const check = async (group: number, user: number, direct?: boolean) =>
      assertSuccess(await t.api(u().member, "GET", `/user_groups/${group}/members/${user}`, direct === undefined ? {} : { direct_member_only: direct }))
        .is_user_group_member;
    assert.equal(await check(top, u().admin.id), true);
    assert.equal(await check(top, u().moderator.id), true);
    assert.equal(await check(top, u().moderator.id, false), true);
    assert.equal(await check(top, u().moderator.id, true), false);
    assert.equal(await check(top, u().bot.id), true);
    assert.equal(await check(leaf, u().bot.id, true), true);
    assert.equal(await check(top, u().owner.id), false);
    assert.equal(await check(sys["role:members"]!, u().owner.id), true);
    assert.equal(await check(sys["role:members"]!, u().owner.id, true), false);
    assert.equal(await check(sys["role:members"]!, u().guest.id), false);
    const body = assertSuccess(await t.api(u().member, "GET", `/user_groups/${top}/members/${u().admin.id}`));
    assert.deepEqual(Object.keys(body).sort(), ["is_user_group_member", "msg", "result"]);
  });

  test("read errors: guests, unknown groups and users, deactivated users, bad input", async () => {
    const id = await createGroup(u().member, { members: [u().admin.id] });
    const gone = await newUser("Departed");
    await deactivateUser(gone);
    for (const path of [`/user_groups/${id}/members`, `/user_groups/${id}/subgroups`, `/user_groups/${id}/members/${u().admin.id}`]) {
      assertError(await t.api(u().guest, "GET", path), 400, "BAD_REQUEST", "Not allowed for guest users");
      assertSuccess(await t.api(u().bot, "GET", path));
    }
    assertError(await t.api(u().owner, "GET", "/user_groups/999999/members"), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await t.api(u().owner, "GET", "/user_groups/999999/subgroups"), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await t.api(u().owner, "GET", `/user_groups/999999/members/${u().admin.id}`), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await t.api(u().owner, "GET", `/user_groups/${(await otherRealmObjects()).groupId}/members`), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members/999999`), 400, "BAD_REQUEST", "No such user");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members/${(await otherRealmObjects()).userId}`), 400, "BAD_REQUEST", "No such user");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members/${gone.id}`), 400, "BAD_REQUEST", "User is deactivated");
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/members`, { direct_member_only: "x" }), 400, "BAD_REQUEST", 'Argument "direct_member_only" is not valid JSON.');
    assertError(await t.api(u().owner, "GET", `/user_groups/${id}/subgroups`, { direct_subgroup_only: 3 }), 400, "BAD_REQUEST", "direct_subgroup_only is not a boolean");
    assert.equal((await t.api(u().owner, "GET", "/user_groups/abc/members")).status, 404);
    assert.equal((await t.api(u().owner, "GET", `/user_groups/${id}/members/me`)).status, 404);
  });
});

// ---------------------------------------------------------------------------
// Deactivated users in group objects

describe("deactivated users", () => {
  test("are left out of members and of anonymous settings' direct_members in GET /user_groups", async () => {
    const gone = await newUser("Vanishing");
    const id = await createGroup(u().member, { members: [gone.id, u().member.id], can_mention_group: anon([gone.id, u().admin.id]) });
    await deactivateUser(gone);
    const group = await getGroup(id);
    assert.deepEqual(group.members, [u().member.id]);
    assert.deepEqual(group.can_mention_group, anon([u().admin.id]));
    // The API value is what `old` is compared with.
    assertSuccess(await patch(u().member, id, { can_mention_group: { new: sys["role:members"], old: anon([u().admin.id]) } }));
  });

  test("lose their permissions", async () => {
    const manager = await newUser("Manager");
    const id = await createGroup(manager);
    assertSuccess(await patch(manager, id, { description: "mine" }));
    await deactivateUser(manager);
    const reactivated = await t.api(u().owner, "POST", `/users/${manager.id}/reactivate`);
    assertSuccess(reactivated);
    // Back again: the anonymous setting still names them.
    assertSuccess(await patch(manager, id, { description: "mine again" }));
  });
});
