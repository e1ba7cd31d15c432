// API-level tests of the organization's settings (PATCH /realm), the personal
// settings new users start with (PATCH /realm/user_settings_defaults) and a
// user's own settings (PATCH /settings): who may change what, the values each
// accepts, the reply, the events every change sends through real event
// queues, and where the new values show up afterwards.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, sortedIds, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;

before(async () => {
  t = await startTestApp();
  sys = await t.systemGroupIds();
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

function patchRealm(user: TestUser, params: Params, app: TestApp = t): Promise<ApiResponse> {
  return app.api(user, "PATCH", "/realm", params);
}

/** A queue that takes only the given event types. */
async function queue(user: TestUser, eventTypes: string[] | null, capabilities: Record<string, boolean> = {}, app: TestApp = t): Promise<string> {
  const reply = await app.register(user, { ...(eventTypes ? { event_types: eventTypes } : {}), client_capabilities: capabilities });
  return reply.queue_id as string;
}

/** The realm-related state a client gets from POST /register. */
async function realmState(user: TestUser = u().member, app: TestApp = t): Promise<Json> {
  return app.register(user, { fetch_event_types: ["realm"], event_types: ["realm"] });
}

async function userSettingsState(user: TestUser, app: TestApp = t): Promise<Json> {
  const state = await app.register(user, { fetch_event_types: ["user_settings"], event_types: ["user_settings"], client_capabilities: { user_settings_object: true } });
  return state.user_settings;
}

async function realmName(app: TestApp = t): Promise<string> {
  const row = await app.services.storage.db.selectFrom("realms").select("name").where("id", "=", app.realm.id).executeTakeFirstOrThrow();
  return row.name;
}

async function apiEmail(user: TestUser, app: TestApp = t): Promise<string> {
  const row = await app.services.storage.db.selectFrom("users").select("email").where("id", "=", user.id).executeTakeFirstOrThrow();
  return row.email;
}

/** Asserts a success reply whose body is exactly the envelope plus `data`. */
function assertReply(response: ApiResponse, data: Record<string, unknown> = {}): void {
  assertSuccess(response);
  assert.deepEqual(response.body, { result: "success", msg: "", ...data });
}

function realmUpdate(property: string, value: unknown, id: number): Json {
  return { type: "realm", op: "update", property, value, id };
}

function realmUpdateDict(data: Record<string, unknown>, id: number): Json {
  return { type: "realm", op: "update_dict", property: "default", data, id };
}

/** Runs `action` and asserts that it told no one anything (at the notifier). */
async function assertNoEvents(action: () => Promise<void>): Promise<void> {
  t.clearEvents();
  await action();
  assert.deepEqual(t.events.map((n) => n.event), []);
}

let counter = 0;
async function newUser(prefix: string, role: number = Role.MEMBER, app: TestApp = t): Promise<TestUser> {
  counter += 1;
  return app.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

async function newChannel(actor: TestUser, params: Params = {}): Promise<ApiResponse & { name: string }> {
  const name = uniqueName("realm channel");
  const response = await t.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], ...params });
  return { ...response, name };
}

async function channelIdOf(name: string, viewer: TestUser = u().admin): Promise<number> {
  return assertSuccess(await t.api(viewer, "GET", "/get_stream_id", { stream: name })).stream_id as number;
}

// ---------------------------------------------------------------------------
// PATCH /realm: who may

describe("PATCH /realm: permissions", () => {
  test("only organization administrators may call it", async () => {
    const before = await realmName();
    for (const user of [u().moderator, u().member, u().guest, u().bot]) {
      await assertNoEvents(async () => {
        assertError(await patchRealm(user, { name: "Hijacked" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
        assertError(await patchRealm(user, { allow_message_editing: false }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      });
    }
    assert.equal(await realmName(), before);
  });

  test("the role check comes before parameter validation", async () => {
    assertError(
      await patchRealm(u().member, { message_content_edit_limit_seconds: 0 }),
      400,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization administrator",
    );
    assertError(
      await patchRealm(u().moderator, { message_edit_history_visibility_policy: "sometimes" }),
      400,
      "UNAUTHORIZED_PRINCIPAL",
      "Must be an organization administrator",
    );
  });

  test("owner-only settings are refused to administrators, even with the current value", async () => {
    const ownerOnly: Params[] = [
      { invite_required: false },
      { invite_required: true },
      { emails_restricted_to_domains: true },
      { disallow_disposable_email_addresses: false },
      { waiting_period_threshold: 3 },
      { message_retention_days: 30 },
      { create_multiuse_invite_group: { new: sys["role:owners"] } },
      { can_create_groups: { new: sys["role:administrators"] } },
      { can_invite_users_group: { new: sys["role:administrators"] } },
      { can_manage_all_groups: { new: sys["role:administrators"] } },
      { can_manage_billing_group: { new: sys["role:owners"] } },
    ];
    for (const params of ownerOnly) {
      await assertNoEvents(async () => {
        assertError(await patchRealm(u().admin, params), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
      });
    }
    // Asked together with an ordinary setting, nothing is applied.
    const before = await realmName();
    await assertNoEvents(async () => {
      assertError(await patchRealm(u().admin, { name: "Half done", invite_required: false }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    });
    assert.equal(await realmName(), before);
    const state = await realmState();
    assert.equal(state.realm_invite_required, true);
    assert.equal(state.realm_can_invite_users_group, sys["role:members"]);
  });

  test("owners may change owner-only settings", async () => {
    const q = await queue(u().member, ["realm"]);
    assertReply(await patchRealm(u().owner, { invite_required: false }), { invite_required: false });
    assertReply(await patchRealm(u().owner, { can_invite_users_group: { new: sys["role:administrators"] } }), {
      can_invite_users_group: sys["role:administrators"],
    });
    assert.deepEqual(await t.queuedEvents(u().member, q), [
      realmUpdate("invite_required", false, 0),
      realmUpdateDict({ can_invite_users_group: sys["role:administrators"] }, 1),
    ]);
    const state = await realmState();
    assert.equal(state.realm_invite_required, false);
    assert.equal(state.realm_can_invite_users_group, sys["role:administrators"]);
    // Back to the defaults.
    assertSuccess(await patchRealm(u().owner, { invite_required: true, can_invite_users_group: { new: sys["role:members"] } }));
  });

  test("requires authentication", async () => {
    const response = await t.api(null, "PATCH", "/realm", { name: "Anonymous" });
    assert.equal(response.status, 401);
  });
});

// ---------------------------------------------------------------------------
// PATCH /realm: plain settings

describe("PATCH /realm: name and description", () => {
  test("name and description: reply, events to every active user, and the new state", async () => {
    const { admin, member, guest, bot, owner } = u();
    const queues = new Map<TestUser, string>();
    for (const user of [member, guest, bot, owner]) queues.set(user, await queue(user, ["realm"]));

    assertReply(await patchRealm(admin, { name: "Renamed Org", description: "All about us" }), { name: "updated", description: "updated" });

    for (const [user, q] of queues) {
      const events = await t.queuedEvents(user, q);
      assert.deepEqual(
        events.map((e: Json) => e.id),
        [0, 1],
        `user ${user.email}`,
      );
      const withoutIds = events.map(({ id, ...rest }: Json) => rest).sort((a: Json, b: Json) => a.property.localeCompare(b.property));
      assert.deepEqual(withoutIds, [
        { type: "realm", op: "update", property: "description", value: "All about us" },
        { type: "realm", op: "update", property: "name", value: "Renamed Org" },
      ]);
    }

    const state = await realmState(guest);
    assert.equal(state.realm_name, "Renamed Org");
    assert.equal(state.realm_description, "<p>All about us</p>");
    const server = assertSuccess(await t.api(null, "GET", "/server_settings"));
    assert.equal(server.realm_name, "Renamed Org");
    assert.equal(await realmName(), "Renamed Org");
  });

  test("the organization-wide events reach exactly the active users", async () => {
    t.clearEvents();
    assertSuccess(await patchRealm(u().admin, { name: "Org For All" }));
    const sent = t.events.filter((n) => n.event.type === "realm");
    assert.equal(sent.length, 1);
    assert.deepEqual(sortedIds(sent[0]!.userIds), await t.activeUserIds());
  });

  test("an unchanged value sends no event and no data key", async () => {
    const q = await queue(u().member, ["realm"]);
    const name = await realmName();
    await assertNoEvents(async () => {
      assertReply(await patchRealm(u().admin, { name }));
    });
    // Only the changed one of two is reported.
    assertReply(await patchRealm(u().admin, { name, description: "Changed again" }), { description: "updated" });
    assert.deepEqual(await t.queuedEvents(u().member, q), [realmUpdate("description", "Changed again", 0)]);
  });

  test("a name or description that is too long is refused", async () => {
    const before = await realmName();
    await assertNoEvents(async () => {
      assertError(await patchRealm(u().admin, { name: "x".repeat(41) }), 400, "BAD_REQUEST", "name is too long (limit: 40 characters)");
      assertError(await patchRealm(u().admin, { description: "x".repeat(1001) }), 400, "BAD_REQUEST", "description is too long (limit: 1000 characters)");
    });
    assert.equal(await realmName(), before);
    assertReply(await patchRealm(u().admin, { name: "y".repeat(40) }), { name: "updated" });
    assertReply(await patchRealm(u().admin, { description: "z".repeat(1000) }), { description: "updated" });
  });
});

describe("PATCH /realm: message editing settings", () => {
  test("allow_message_editing: update_dict event, reply and state", async () => {
    const { admin, member, guest } = u();
    const qm = await queue(member, ["realm"]);
    const qg = await queue(guest, ["realm"]);
    assertReply(await patchRealm(admin, { allow_message_editing: false }), { allow_message_editing: false });
    assert.deepEqual(await t.queuedEvents(member, qm), [realmUpdateDict({ allow_message_editing: false }, 0)]);
    assert.deepEqual(await t.queuedEvents(guest, qg), [realmUpdateDict({ allow_message_editing: false }, 0)]);
    assert.equal((await realmState()).realm_allow_message_editing, false);
    await assertNoEvents(async () => assertReply(await patchRealm(admin, { allow_message_editing: false })));
    assertReply(await patchRealm(admin, { allow_message_editing: true }), { allow_message_editing: true });
    assert.equal((await realmState()).realm_allow_message_editing, true);
  });

  test("allow_message_editing must be a JSON boolean", async () => {
    assertError(await patchRealm(u().admin, { allow_message_editing: "yes" }), 400, "BAD_REQUEST", 'Argument "allow_message_editing" is not valid JSON.');
    assertError(await patchRealm(u().admin, { allow_message_editing: 1 }), 400, "BAD_REQUEST", "allow_message_editing is not a boolean");
  });

  test("message_content_edit_limit_seconds: 'unlimited' is null, positive numbers are kept", async () => {
    const { admin, member } = u();
    const q = await queue(member, ["realm"]);
    // Zulip clients send the word JSON-encoded.
    assertReply(await patchRealm(admin, { message_content_edit_limit_seconds: '"unlimited"' }), { message_content_edit_limit_seconds: null });
    assert.equal((await realmState()).realm_message_content_edit_limit_seconds, null);
    // Already unlimited: nothing happens.
    await assertNoEvents(async () => assertReply(await patchRealm(admin, { message_content_edit_limit_seconds: '"unlimited"' })));
    assertReply(await patchRealm(admin, { message_content_edit_limit_seconds: 3600 }), { message_content_edit_limit_seconds: 3600 });
    await assertNoEvents(async () => assertReply(await patchRealm(admin, { message_content_edit_limit_seconds: 3600 })));
    assert.deepEqual(await t.queuedEvents(member, q), [
      realmUpdateDict({ message_content_edit_limit_seconds: null }, 0),
      realmUpdateDict({ message_content_edit_limit_seconds: 3600 }, 1),
    ]);
    assert.equal((await realmState()).realm_message_content_edit_limit_seconds, 3600);
  });

  test("message_content_edit_limit_seconds: zero, negative and other words are refused", async () => {
    const cases: [unknown, unknown][] = [
      [0, 0],
      [-5, -5],
      ['"abc"', "abc"],
    ];
    for (const [sent, bad] of cases) {
      await assertNoEvents(async () => {
        assertError(
          await patchRealm(u().admin, { message_content_edit_limit_seconds: sent }),
          400,
          "REQUEST_VARIABLE_INVALID",
          `Bad value for 'message_content_edit_limit_seconds': ${String(bad)}`,
          { var_name: "message_content_edit_limit_seconds", bad_value: bad },
        );
      });
    }
    assert.equal((await realmState()).realm_message_content_edit_limit_seconds, 3600);
  });

  test("time limits and retention given as lists: refused with the list quoted; one nested too deeply is refused before it is parsed", async () => {
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    for (const setting of ["message_content_edit_limit_seconds", "message_retention_days"]) {
      assertError(await patchRealm(u().admin, { [setting]: "[1,2]" }), 400, "REQUEST_VARIABLE_INVALID", `Bad value for '${setting}': [1,2]`, {
        var_name: setting,
        bad_value: "[1,2]",
      });
      // Refused before the validator sees it: no JSON parameter nests deeper than 32 levels.
      assertError(await patchRealm(u().admin, { [setting]: deep }), 400, "BAD_REQUEST", `${setting} is nested too deeply (limit: 32 levels)`);
    }
  });

  test("the other time limits use plain update events", async () => {
    const { admin, member } = u();
    const settings = ["message_content_delete_limit_seconds", "move_messages_within_stream_limit_seconds", "move_messages_between_streams_limit_seconds"];
    for (const setting of settings) {
      const q = await queue(member, ["realm"]);
      assertReply(await patchRealm(admin, { [setting]: 1200 }), { [setting]: 1200 });
      assertReply(await patchRealm(admin, { [setting]: '"unlimited"' }), { [setting]: null });
      await assertNoEvents(async () => assertReply(await patchRealm(admin, { [setting]: '"unlimited"' })));
      assert.deepEqual(await t.queuedEvents(member, q), [realmUpdate(setting, 1200, 0), realmUpdate(setting, null, 1)], setting);
      assert.equal((await realmState())[`realm_${setting}`], null, setting);
      assertError(await patchRealm(admin, { [setting]: 0 }), 400, "REQUEST_VARIABLE_INVALID", `Bad value for '${setting}': 0`, {
        var_name: setting,
        bad_value: 0,
      });
      assertReply(await patchRealm(admin, { [setting]: 86400 }), { [setting]: 86400 });
      assert.equal((await realmState())[`realm_${setting}`], 86400, setting);
    }
  });

  test("message_edit_history_visibility_policy takes all, moves or none", async () => {
    const { admin, member } = u();
    const q = await queue(member, ["realm"]);
    assertSuccess(await patchRealm(admin, { message_edit_history_visibility_policy: "moves" }));
    let state = await realmState();
    assert.equal(state.realm_message_edit_history_visibility_policy, "moves");
    assert.equal(state.realm_allow_edit_history, true);
    assertSuccess(await patchRealm(admin, { message_edit_history_visibility_policy: "none" }));
    state = await realmState();
    assert.equal(state.realm_message_edit_history_visibility_policy, "none");
    assert.equal(state.realm_allow_edit_history, false);
    await assertNoEvents(async () => assertSuccess(await patchRealm(admin, { message_edit_history_visibility_policy: "none" })));
    assertSuccess(await patchRealm(admin, { message_edit_history_visibility_policy: "all" }));
    assert.deepEqual(await t.queuedEvents(member, q), [
      realmUpdate("message_edit_history_visibility_policy", "moves", 0),
      realmUpdate("message_edit_history_visibility_policy", "none", 1),
      realmUpdate("message_edit_history_visibility_policy", "all", 2),
    ]);
    for (const bad of ["some", "2", ""]) {
      assertError(
        await patchRealm(admin, { message_edit_history_visibility_policy: bad }),
        400,
        "BAD_REQUEST",
        "Invalid message_edit_history_visibility_policy",
      );
    }
    assert.equal((await realmState()).realm_message_edit_history_visibility_policy, "all");
  });

  test("a failing request changes nothing, not even its valid parts", async () => {
    const before = await realmName();
    await assertNoEvents(async () => {
      assertError(
        await patchRealm(u().admin, { name: "Should not stick", allow_message_editing: false, message_content_edit_limit_seconds: 0 }),
        400,
        "REQUEST_VARIABLE_INVALID",
        "Bad value for 'message_content_edit_limit_seconds': 0",
      );
      assertError(
        await patchRealm(u().admin, { name: "Should not stick", can_create_public_channel_group: { new: 999999 } }),
        400,
        "BAD_REQUEST",
        "Invalid user group ID: 999999",
      );
      assertError(await patchRealm(u().admin, { description: "nope", new_stream_announcements_stream_id: 999999 }), 400, "BAD_REQUEST", "Invalid channel ID");
    });
    assert.equal(await realmName(), before);
    const state = await realmState();
    assert.equal(state.realm_allow_message_editing, true);
    assert.equal(state.realm_can_create_public_channel_group, sys["role:members"]);
  });
});

describe("PATCH /realm: topics_policy", () => {
  test("one update_dict event carries topics_policy and mandatory_topics", async () => {
    const { admin, member } = u();
    const q = await queue(member, ["realm"]);
    assertSuccess(await patchRealm(admin, { topics_policy: "disable_empty_topic" }));
    let state = await realmState();
    assert.equal(state.realm_topics_policy, "disable_empty_topic");
    assert.equal(state.realm_mandatory_topics, true);
    await assertNoEvents(async () => assertSuccess(await patchRealm(admin, { topics_policy: "disable_empty_topic" })));
    assertSuccess(await patchRealm(admin, { topics_policy: "allow_empty_topic" }));
    state = await realmState();
    assert.equal(state.realm_topics_policy, "allow_empty_topic");
    assert.equal(state.realm_mandatory_topics, false);
    assert.deepEqual(await t.queuedEvents(member, q), [
      realmUpdateDict({ topics_policy: "disable_empty_topic", mandatory_topics: true }, 0),
      realmUpdateDict({ topics_policy: "allow_empty_topic", mandatory_topics: false }, 1),
    ]);
  });

  test("other values are refused", async () => {
    for (const bad of ["inherit", "mandatory", "3"]) {
      assertError(await patchRealm(u().admin, { topics_policy: bad }), 400, "BAD_REQUEST", "Invalid topics_policy");
    }
  });
});

describe("PATCH /realm: announcement channels", () => {
  test("a channel ID sets it, -1 clears it, an unknown or archived channel is refused", async () => {
    const { admin, member } = u();
    const created = await newChannel(admin);
    assertSuccess(created);
    const id = await channelIdOf(created.name);
    for (const setting of ["new_stream_announcements_stream_id", "signup_announcements_stream_id", "zulip_update_announcements_stream_id"]) {
      const q = await queue(member, ["realm"]);
      assertReply(await patchRealm(admin, { [setting]: id }), { [setting]: id });
      assert.equal((await realmState())[`realm_${setting}`], id, setting);
      await assertNoEvents(async () => assertReply(await patchRealm(admin, { [setting]: id })));
      assertReply(await patchRealm(admin, { [setting]: -1 }), { [setting]: -1 });
      assert.equal((await realmState())[`realm_${setting}`], -1, setting);
      assert.deepEqual(await t.queuedEvents(member, q), [realmUpdate(setting, id, 0), realmUpdate(setting, -1, 1)], setting);
      await assertNoEvents(async () => {
        assertError(await patchRealm(admin, { [setting]: 999999 }), 400, "BAD_REQUEST", "Invalid channel ID");
        assertError(await patchRealm(admin, { [setting]: "abc" }), 400, "BAD_REQUEST", `Argument "${setting}" is not valid JSON.`);
      });
    }
    const archived = await newChannel(admin);
    const archivedId = await channelIdOf(archived.name);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${archivedId}`));
    assertError(await patchRealm(admin, { new_stream_announcements_stream_id: archivedId }), 400, "BAD_REQUEST", "Invalid channel ID");
    assert.equal((await realmState()).realm_new_stream_announcements_stream_id, -1);
  });

  test("an administrator may pick a private channel they are not subscribed to", async () => {
    const secret = await newChannel(u().member, { invite_only: true });
    assertSuccess(secret);
    const id = await channelIdOf(secret.name, u().member);
    assertReply(await patchRealm(u().admin, { signup_announcements_stream_id: id }), { signup_announcements_stream_id: id });
    assertReply(await patchRealm(u().admin, { signup_announcements_stream_id: -1 }), { signup_announcements_stream_id: -1 });
  });
});

describe("PATCH /realm: unknown parameters", () => {
  test("are ignored and listed in ignored_parameters_unsupported", async () => {
    assertReply(await patchRealm(u().admin, { name: "Org With Extras", bogus_setting: 1, email_address_visibility: 1, mandatory_topics: true }), {
      name: "updated",
      ignored_parameters_unsupported: ["bogus_setting", "email_address_visibility", "mandatory_topics"],
    });
    await assertNoEvents(async () => assertReply(await patchRealm(u().admin, { other: "x" }), { ignored_parameters_unsupported: ["other"] }));
    assert.equal((await realmState()).realm_mandatory_topics, false);
  });
});

// ---------------------------------------------------------------------------
// PATCH /realm: group settings

describe("PATCH /realm: group settings", () => {
  test("a new group: reply, update_dict event, state, and the permission takes effect", async () => {
    const { admin, member, guest } = u();
    const qm = await queue(member, ["realm"]);
    const qg = await queue(guest, ["realm"]);
    const admins = sys["role:administrators"]!;

    assertReply(await patchRealm(admin, { can_create_public_channel_group: { new: admins } }), { can_create_public_channel_group: admins });
    const expected = [realmUpdateDict({ can_create_public_channel_group: admins }, 0)];
    assert.deepEqual(await t.queuedEvents(member, qm), expected);
    assert.deepEqual(await t.queuedEvents(guest, qg), expected);
    assert.equal((await realmState()).realm_can_create_public_channel_group, admins);

    assertError(await newChannel(member), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await newChannel(admin));

    // Back, guarded by the value it should have now.
    assertReply(await patchRealm(admin, { can_create_public_channel_group: { new: sys["role:members"], old: admins } }), {
      can_create_public_channel_group: sys["role:members"],
    });
    assertSuccess(await newChannel(member));
  });

  test("an 'old' value that does not match is refused and changes nothing", async () => {
    await assertNoEvents(async () => {
      assertError(
        await patchRealm(u().admin, { can_create_public_channel_group: { new: sys["role:moderators"], old: sys["role:administrators"] } }),
        400,
        "EXPECTATION_MISMATCH",
        "'old' value does not match the expected value.",
      );
    });
    assert.equal((await realmState()).realm_can_create_public_channel_group, sys["role:members"]);
  });

  test("the current value again sends no event and no data key", async () => {
    await assertNoEvents(async () => {
      assertReply(await patchRealm(u().admin, { can_create_public_channel_group: { new: sys["role:members"] } }));
      assertReply(await patchRealm(u().admin, { can_create_public_channel_group: { new: sys["role:members"], old: sys["role:members"] } }));
    });
  });

  test("an anonymous group of members and subgroups", async () => {
    const { admin, member, moderator } = u();
    const q = await queue(member, ["realm"]);
    const value = { direct_members: [member.id], direct_subgroups: [sys["role:administrators"]] };
    assertReply(await patchRealm(admin, { can_create_private_channel_group: { new: value } }), { can_create_private_channel_group: value });
    assert.deepEqual(await t.queuedEvents(member, q), [realmUpdateDict({ can_create_private_channel_group: value }, 0)]);
    assert.deepEqual((await realmState()).realm_can_create_private_channel_group, value);

    assertSuccess(await newChannel(member, { invite_only: true }));
    assertError(await newChannel(moderator, { invite_only: true }), 400, "BAD_REQUEST", "Insufficient permission");

    // The same group again (in another order) is no change.
    await assertNoEvents(async () =>
      assertReply(await patchRealm(admin, { can_create_private_channel_group: { new: { direct_members: [member.id], direct_subgroups: [sys["role:administrators"]] }, old: value } })),
    );
    assertSuccess(await patchRealm(admin, { can_create_private_channel_group: { new: sys["role:members"], old: value } }));
  });

  test("an empty anonymous group means role:nobody", async () => {
    const q = await queue(u().member, ["realm"]);
    assertReply(await patchRealm(u().admin, { can_create_web_public_channel_group: { new: sys["role:nobody"] } }), {
      can_create_web_public_channel_group: sys["role:nobody"],
    });
    assertReply(await patchRealm(u().admin, { can_add_custom_emoji_group: { new: { direct_members: [], direct_subgroups: [] } } }), {
      can_add_custom_emoji_group: sys["role:nobody"],
    });
    assert.deepEqual(await t.queuedEvents(u().member, q), [
      realmUpdateDict({ can_create_web_public_channel_group: sys["role:nobody"] }, 0),
      realmUpdateDict({ can_add_custom_emoji_group: sys["role:nobody"] }, 1),
    ]);
    assertSuccess(await patchRealm(u().admin, { can_create_web_public_channel_group: { new: sys["role:owners"] }, can_add_custom_emoji_group: { new: sys["role:members"] } }));
  });

  test("values a setting does not allow are refused", async () => {
    const { admin, owner } = u();
    await assertNoEvents(async () => {
      assertError(
        await patchRealm(owner, { can_manage_all_groups: { new: sys["role:nobody"] } }),
        400,
        "BAD_REQUEST",
        "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.",
      );
      assertError(
        await patchRealm(admin, { can_create_public_channel_group: { new: sys["role:everyone"] } }),
        400,
        "BAD_REQUEST",
        "'can_create_public_channel_group' setting cannot be set to 'role:everyone' group.",
      );
      assertError(
        await patchRealm(admin, { can_create_web_public_channel_group: { new: sys["role:members"] } }),
        400,
        "BAD_REQUEST",
        "'can_create_web_public_channel_group' setting cannot be set to 'role:members' group.",
      );
      assertError(
        await patchRealm(admin, { can_create_web_public_channel_group: { new: { direct_members: [admin.id], direct_subgroups: [] } } }),
        400,
        "BAD_REQUEST",
        "'can_create_web_public_channel_group' must be a system user group.",
      );
      assertError(
        await patchRealm(admin, { can_access_all_users_group: { new: sys["role:nobody"] } }),
        400,
        "BAD_REQUEST",
        "'can_access_all_users_group' setting cannot be set to 'role:nobody' group.",
      );
      assertError(await patchRealm(admin, { can_create_bots_group: { new: 999999 } }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
      assertError(
        await patchRealm(admin, { can_create_bots_group: { new: { direct_members: [999999], direct_subgroups: [] } } }),
        400,
        "BAD_REQUEST",
        "Invalid user ID: 999999",
      );
      assertError(await patchRealm(admin, { can_create_bots_group: sys["role:members"] }), 400, "BAD_REQUEST");
      assertError(await patchRealm(admin, { can_create_bots_group: "abc" }), 400, "BAD_REQUEST", 'Argument "can_create_bots_group" is not valid JSON.');
    });
  });
});

// ---------------------------------------------------------------------------
// PATCH /realm: waiting_period_threshold (own organization: it moves users between system groups)

describe("PATCH /realm: waiting_period_threshold", () => {
  let w: TestApp;
  before(async () => {
    w = await startTestApp();
  });
  after(() => w?.close());

  test("owner only; raising it takes recent members out of role:fullmembers, lowering it puts them back", async () => {
    const groups = await w.systemGroupIds();
    const full = groups["role:fullmembers"]!;
    const { owner, admin, member, bot, guest } = w.users;

    assertError(await patchRealm(admin, { waiting_period_threshold: 10 }, w), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");

    const qm = await queue(member, ["realm", "user_group"], {}, w);
    const qg = await queue(guest, ["realm", "user_group"], {}, w);
    assertReply(await patchRealm(owner, { waiting_period_threshold: 10 }, w), { waiting_period_threshold: 10 });

    for (const [user, q] of [
      [member, qm],
      [guest, qg],
    ] as const) {
      const events = await w.queuedEvents(user, q);
      assert.equal(events.length, 2, JSON.stringify(events));
      assert.deepEqual(events[0], realmUpdate("waiting_period_threshold", 10, 0));
      assert.deepEqual({ ...events[1], user_ids: sortedIds(events[1].user_ids) }, {
        type: "user_group",
        op: "remove_members",
        group_id: full,
        user_ids: sortedIds([member.id, bot.id]),
        id: 1,
      });
    }
    assert.equal((await realmState(member, w)).realm_waiting_period_threshold, 10);
    const fullMembers = assertSuccess(await w.api(admin, "GET", `/user_groups/${full}/members`)).members as number[];
    assert.ok(!fullMembers.includes(member.id));
    assert.ok(!fullMembers.includes(bot.id));

    // Eleven days later the members have waited long enough.
    const realNow = w.services.now;
    try {
      w.services.now = () => realNow() + 11 * 86400;
      assertReply(await patchRealm(owner, { waiting_period_threshold: 5 }, w), { waiting_period_threshold: 5 });
      const events = await w.queuedEvents(member, qm, 1);
      assert.equal(events.length, 2, JSON.stringify(events));
      assert.deepEqual(events[0], realmUpdate("waiting_period_threshold", 5, 2));
      assert.deepEqual({ ...events[1], user_ids: sortedIds(events[1].user_ids) }, {
        type: "user_group",
        op: "add_members",
        group_id: full,
        user_ids: sortedIds([member.id, bot.id]),
        id: 3,
      });

      // Raising it to 10 again changes no one's membership now.
      assertReply(await patchRealm(owner, { waiting_period_threshold: 10 }, w), { waiting_period_threshold: 10 });
      assert.deepEqual(await w.queuedEvents(member, qm, 3), [realmUpdate("waiting_period_threshold", 10, 4)]);
    } finally {
      w.services.now = realNow;
    }
    // Unchanged: no event.
    assertReply(await patchRealm(owner, { waiting_period_threshold: 10 }, w));
    assert.deepEqual(await w.queuedEvents(member, qm, 4), []);
  });

  test("must be a non-negative integer", async () => {
    for (const bad of [-1, "abc", 1.5]) {
      const response = await patchRealm(w.users.owner, { waiting_period_threshold: bad }, w);
      assertError(response, 400, "BAD_REQUEST");
    }
  });
});

// ---------------------------------------------------------------------------
// PATCH /realm/user_settings_defaults (own organization: it changes how new users start)

describe("PATCH /realm/user_settings_defaults", () => {
  let d: TestApp;
  before(async () => {
    d = await startTestApp();
  });
  after(() => d?.close());

  const patchDefaults = (user: TestUser, params: Params) => d.api(user, "PATCH", "/realm/user_settings_defaults", params);

  test("only organization administrators may call it", async () => {
    for (const user of [d.users.moderator, d.users.member, d.users.guest, d.users.bot]) {
      assertError(await patchDefaults(user, { enter_sends: true }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    const state = await d.register(d.users.member, { fetch_event_types: ["realm_user_settings_defaults"] });
    assert.equal(state.realm_user_settings_defaults.enter_sends, false);
  });

  test("changes send realm_user_settings_defaults events to everyone and show in the state", async () => {
    const { admin, member, guest } = d.users;
    const qm = await queue(member, ["realm_user_settings_defaults"], {}, d);
    const qg = await queue(guest, ["realm_user_settings_defaults"], {}, d);
    assertReply(await patchDefaults(admin, { enter_sends: true, emojiset: "twitter", web_font_size_px: 20, email_address_visibility: 4 }));
    for (const [user, q] of [
      [member, qm],
      [guest, qg],
    ] as const) {
      const events = await d.queuedEvents(user, q);
      assert.deepEqual(
        events.map((e: Json) => e.id),
        [0, 1, 2, 3],
      );
      const withoutIds = events.map(({ id, ...rest }: Json) => rest).sort((a: Json, b: Json) => a.property.localeCompare(b.property));
      assert.deepEqual(withoutIds, [
        { type: "realm_user_settings_defaults", op: "update", property: "email_address_visibility", value: 4 },
        { type: "realm_user_settings_defaults", op: "update", property: "emojiset", value: "twitter" },
        { type: "realm_user_settings_defaults", op: "update", property: "enter_sends", value: true },
        { type: "realm_user_settings_defaults", op: "update", property: "web_font_size_px", value: 20 },
      ]);
    }
    const state = (await d.register(member, { fetch_event_types: ["realm_user_settings_defaults"] })).realm_user_settings_defaults;
    assert.equal(state.enter_sends, true);
    assert.equal(state.emojiset, "twitter");
    assert.equal(state.web_font_size_px, 20);
    assert.equal(state.email_address_visibility, 4);

    // The same values again: nothing.
    assertReply(await patchDefaults(admin, { enter_sends: true, email_address_visibility: 4 }));
    assert.deepEqual(await d.queuedEvents(member, qm, 3), []);

    // Existing users keep their own settings.
    const own = await userSettingsState(member, d);
    assert.equal(own.enter_sends, false);
    assert.equal(own.emojiset, "google");
    assert.equal(own.email_address_visibility, 3);
  });

  test("users created afterwards start with the defaults", async () => {
    const { admin } = d.users;
    const created = assertSuccess(await d.api(admin, "POST", "/users", { email: "newcomer@example.com", password: "newcomer-password-123", full_name: "New Comer" }));
    const row = await d.services.storage.db.selectFrom("users").select(["api_key", "email"]).where("id", "=", created.user_id).executeTakeFirstOrThrow();
    const newcomer: TestUser = { id: created.user_id, email: "newcomer@example.com", apiKey: row.api_key, role: Role.MEMBER, password: "newcomer-password-123" };
    const settings = await userSettingsState(newcomer, d);
    assert.equal(settings.enter_sends, true);
    assert.equal(settings.emojiset, "twitter");
    assert.equal(settings.web_font_size_px, 20);
    assert.equal(settings.email_address_visibility, 4);
    // Nobody may see the real address: the API one is the fake one.
    assert.notEqual(row.email, "newcomer@example.com");

    // The test helper creates users from the organization row it was given at
    // start; hand it the current one so that it sees the new defaults too.
    const current = await d.services.storage.db.selectFrom("realms").select("settings").where("id", "=", d.realm.id).executeTakeFirstOrThrow();
    d.realm.settings = current.settings;
    const helperMade = await newUser("Helper Made", Role.MEMBER, d);
    const helperSettings = await userSettingsState(helperMade, d);
    assert.equal(helperSettings.enter_sends, true);
    assert.equal(helperSettings.emojiset, "twitter");
    assert.equal(helperSettings.email_address_visibility, 4);
  });

  test("invalid values are refused and change nothing", async () => {
    const { admin } = d.users;
    const cases: [Params, string][] = [
      [{ emojiset: "foo" }, "Invalid emojiset: Value error, Not in the list of possible values"],
      [{ color_scheme: 5 }, "Invalid color_scheme: Value error, Not in the list of possible values"],
      [{ email_address_visibility: 9 }, "Invalid email_address_visibility: Value error, Not in the list of possible values"],
      [{ enter_sends: "yes" }, 'Argument "enter_sends" is not valid JSON.'],
      [{ enter_sends: false, emojiset: "foo" }, "Invalid emojiset: Value error, Not in the list of possible values"],
    ];
    for (const [params, msg] of cases) {
      assertError(await patchDefaults(admin, params), 400, "BAD_REQUEST", msg);
    }
    const state = (await d.register(admin, { fetch_event_types: ["realm_user_settings_defaults"] })).realm_user_settings_defaults;
    assert.equal(state.enter_sends, true);
    assert.equal(state.emojiset, "twitter");
  });

  test("unknown parameters are listed as ignored", async () => {
    assertReply(await patchDefaults(d.users.admin, { not_a_setting: true }), { ignored_parameters_unsupported: ["not_a_setting"] });
  });
});

// ---------------------------------------------------------------------------
// PATCH /settings

describe("PATCH /settings: personal settings", () => {
  const SETTINGS_EVENTS = ["user_settings", "update_display_settings", "update_global_notifications"];
  const patchSettings = (user: TestUser, params: Params) => t.api(user, "PATCH", "/settings", params);

  test("booleans, integers and strings: reply, one user_settings event each, and the state", async () => {
    const me = await newUser("Settler");
    const q = await queue(me, SETTINGS_EVENTS, { user_settings_object: true });
    const others = new Map<TestUser, string>();
    for (const user of [u().member, u().admin]) others.set(user, await queue(user, null));

    assertReply(await patchSettings(me, { enter_sends: true, web_font_size_px: 18, emojiset: "text", web_home_view: "all_messages", color_scheme: 2 }));

    const events = await t.queuedEvents(me, q);
    assert.deepEqual(
      events.map((e: Json) => e.id),
      [0, 1, 2, 3, 4],
    );
    assert.deepEqual(
      events.map(({ id, ...rest }: Json) => rest).sort((a: Json, b: Json) => a.property.localeCompare(b.property)),
      [
        { type: "user_settings", op: "update", property: "color_scheme", value: 2 },
        { type: "user_settings", op: "update", property: "emojiset", value: "text" },
        { type: "user_settings", op: "update", property: "enter_sends", value: true },
        { type: "user_settings", op: "update", property: "web_font_size_px", value: 18 },
        { type: "user_settings", op: "update", property: "web_home_view", value: "all_messages" },
      ],
    );
    for (const [user, other] of others) assert.deepEqual(await t.queuedEvents(user, other), [], `user ${user.email}`);

    const settings = await userSettingsState(me);
    assert.equal(settings.enter_sends, true);
    assert.equal(settings.web_font_size_px, 18);
    assert.equal(settings.emojiset, "text");
    assert.equal(settings.web_home_view, "all_messages");
    assert.equal(settings.color_scheme, 2);
  });

  test("an unchanged value sends no event", async () => {
    const me = await newUser("Steady");
    assertReply(await patchSettings(me, { enter_sends: true }));
    const q = await queue(me, SETTINGS_EVENTS);
    await assertNoEvents(async () => {
      assertReply(await patchSettings(me, { enter_sends: true, emojiset: "google", web_font_size_px: 16 }));
    });
    assert.deepEqual(await t.queuedEvents(me, q), []);
  });

  test("default_language adds language_name; legacy events go only to queues without user_settings_object", async () => {
    const me = await newUser("Linguist");
    const modern = await queue(me, SETTINGS_EVENTS, { user_settings_object: true });
    const legacy = await queue(me, SETTINGS_EVENTS);
    const email = await apiEmail(me);

    assertReply(await patchSettings(me, { default_language: "de" }));
    const settingsEvent = { type: "user_settings", op: "update", property: "default_language", value: "de", language_name: "Deutsch" };
    assert.deepEqual(await t.queuedEvents(me, modern), [{ ...settingsEvent, id: 0 }]);
    assert.deepEqual(await t.queuedEvents(me, legacy), [
      { ...settingsEvent, id: 0 },
      { type: "update_display_settings", user: email, setting_name: "default_language", setting: "de", language_name: "Deutsch", id: 1 },
    ]);
    assert.equal((await userSettingsState(me)).default_language, "de");
  });

  test("notification settings send update_global_notifications to legacy queues", async () => {
    const me = await newUser("Notified");
    const modern = await queue(me, SETTINGS_EVENTS, { user_settings_object: true });
    const legacy = await queue(me, SETTINGS_EVENTS);
    const email = await apiEmail(me);
    assertReply(await patchSettings(me, { enable_sounds: false }));
    assertReply(await patchSettings(me, { email_notifications_batching_period_seconds: 300 }));
    assert.deepEqual(await t.queuedEvents(me, modern), [
      { type: "user_settings", op: "update", property: "enable_sounds", value: false, id: 0 },
      { type: "user_settings", op: "update", property: "email_notifications_batching_period_seconds", value: 300, id: 1 },
    ]);
    assert.deepEqual(await t.queuedEvents(me, legacy), [
      { type: "user_settings", op: "update", property: "enable_sounds", value: false, id: 0 },
      { type: "update_global_notifications", user: email, notification_name: "enable_sounds", setting: false, id: 1 },
      { type: "user_settings", op: "update", property: "email_notifications_batching_period_seconds", value: 300, id: 2 },
      {
        type: "update_global_notifications",
        user: email,
        notification_name: "email_notifications_batching_period_seconds",
        setting: 300,
        id: 3,
      },
    ]);
  });

  test("newer settings send only the user_settings event, to every queue", async () => {
    const me = await newUser("Modern");
    const modern = await queue(me, SETTINGS_EVENTS, { user_settings_object: true });
    const legacy = await queue(me, SETTINGS_EVENTS);
    assertReply(await patchSettings(me, { receives_typing_notifications: false }));
    const expected = [{ type: "user_settings", op: "update", property: "receives_typing_notifications", value: false, id: 0 }];
    assert.deepEqual(await t.queuedEvents(me, modern), expected);
    assert.deepEqual(await t.queuedEvents(me, legacy), expected);
  });

  test("notification_sound 'none' is allowed", async () => {
    const me = await newUser("Silent");
    assertReply(await patchSettings(me, { notification_sound: "none" }));
    assert.equal((await userSettingsState(me)).notification_sound, "none");
  });

  test("invalid values are refused, and a request with one changes nothing", async () => {
    const me = await newUser("Careless");
    const q = await queue(me, SETTINGS_EVENTS);
    const cases: [Params, string][] = [
      [{ emojiset: "foo" }, "Invalid emojiset: Value error, Not in the list of possible values"],
      [{ color_scheme: 5 }, "Invalid color_scheme: Value error, Not in the list of possible values"],
      [{ enter_sends: "yes" }, 'Argument "enter_sends" is not valid JSON.'],
      [{ enter_sends: 1 }, "enter_sends is not a boolean"],
      [{ default_language: "xx" }, "Invalid default_language"],
      [{ notification_sound: "x" }, "Invalid notification sound 'x'"],
      [{ email_notifications_batching_period_seconds: 0 }, "Invalid email batching period: 0 seconds"],
      [{ email_notifications_batching_period_seconds: 604801 }, "Invalid email batching period: 604801 seconds"],
      [{ web_home_view: "foo" }, "Invalid web_home_view: Value error, Not in the list of possible values"],
      [{ user_list_style: 9 }, "Invalid user_list_style: Value error, Not in the list of possible values"],
      [{ enter_sends: true, emojiset: "foo" }, "Invalid emojiset: Value error, Not in the list of possible values"],
    ];
    for (const [params, msg] of cases) {
      await assertNoEvents(async () => {
        assertError(await patchSettings(me, params), 400, "BAD_REQUEST", msg);
      });
    }
    assert.deepEqual(await t.queuedEvents(me, q), []);
    const settings = await userSettingsState(me);
    assert.equal(settings.enter_sends, false);
    assert.equal(settings.emojiset, "google");
    assert.equal(settings.email_notifications_batching_period_seconds, 120);
  });

  test("bots may not use it", async () => {
    assertError(await patchSettings(u().bot, { enter_sends: true }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });

  test("the typing settings set here govern POST /typing", async () => {
    const me = await newUser("Typist");
    assertReply(await patchSettings(me, { send_private_typing_notifications: false }));
    assertError(await t.api(me, "POST", "/typing", { op: "start", to: [u().member.id] }), 400, "BAD_REQUEST", "User has disabled typing notifications for direct messages");
    assertReply(await patchSettings(me, { send_private_typing_notifications: true }));
    assertSuccess(await t.api(me, "POST", "/typing", { op: "start", to: [u().member.id] }));
  });
});
