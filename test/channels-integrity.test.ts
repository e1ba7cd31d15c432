// Channel rules under concurrent requests and unusual input: no 500s from
// races, oversized IDs or NUL characters, and history is opened only by
// those who can read the channel.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

async function channelId(name: string): Promise<number> {
  const streams = assertSuccess(await t.api(t.users.admin, "GET", "/streams", { include_all: true })).streams as { name: string; stream_id: number }[];
  const found = streams.find((s) => s.name === name);
  assert.ok(found, `no channel ${name}`);
  return found.stream_id;
}

describe("concurrent requests", () => {
  test("four users creating the same channel at once: one creates it, everyone is subscribed", async () => {
    const users = [t.users.owner, t.users.admin, t.users.moderator, t.users.member];
    const results = await Promise.all(users.map((u) => t.api(u, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "stampede" }] })));
    for (const r of results) assertSuccess(r);
    const id = await channelId("stampede");
    const members = assertSuccess(await t.api(t.users.admin, "GET", `/streams/${id}/members`)).subscribers;
    assert.deepEqual(members, users.map((u) => u.id).sort((a, b) => a - b));
    const creates = t.events.filter((n) => n.event.type === "stream" && n.event.op === "create");
    assert.ok(creates.length >= 1);
  });

  test("the same user subscribing four times at once", async () => {
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "repeat joins" }] }));
    const results = await Promise.all([1, 2, 3, 4].map(() => t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "repeat joins" }] })));
    const bodies = results.map((r) => assertSuccess(r));
    assert.equal(bodies.filter((b) => b.subscribed[String(t.users.member.id)]).length, 1, JSON.stringify(bodies));
    assert.equal(bodies.filter((b) => b.already_subscribed[String(t.users.member.id)]).length, 3, JSON.stringify(bodies));
  });

  test("three channels renamed to one name at once: one wins, the others are refused", async () => {
    for (const name of ["rename a", "rename b", "rename c"]) {
      assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
    }
    const ids = await Promise.all(["rename a", "rename b", "rename c"].map(channelId));
    const results = await Promise.all(ids.map((id) => t.api(t.users.admin, "PATCH", `/streams/${id}`, { new_name: "the one name" })));
    assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body)));
    for (const r of results.filter((r) => r.status !== 200)) assertError(r, 400, "BAD_REQUEST", "Channel name is already in use.");
  });

  test("default channel added three times at once: one event, no error", async () => {
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "default race" }] }));
    const id = await channelId("default race");
    t.clearEvents();
    const results = await Promise.all([1, 2, 3].map(() => t.api(t.users.admin, "POST", "/default_streams", { stream_id: id })));
    for (const r of results) assertSuccess(r);
    assert.equal(t.eventsFor(t.users.member.id, "default_streams").length, 1);
  });

  test("two {new, old} updates with the same old value: the second is refused", async () => {
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "cas channel" }] }));
    const id = await channelId("cas channel");
    const stream = assertSuccess(await t.api(t.users.admin, "GET", `/streams/${id}`)).stream;
    const groups = await t.services.storage.db.selectFrom("user_groups").select(["id", "name"]).where("realm_id", "=", t.realm.id).execute();
    const groupId = (name: string) => groups.find((g) => g.name === name)!.id;
    const old = stream.can_remove_subscribers_group;
    const results = await Promise.all(
      [groupId("role:moderators"), groupId("role:members")].map((value) =>
        t.api(t.users.admin, "PATCH", `/streams/${id}`, { can_remove_subscribers_group: { new: value, old } }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 1, JSON.stringify(results.map((r) => r.body)));
    const refused = results.find((r) => r.status !== 200)!;
    assertError(refused, 400, "EXPECTATION_MISMATCH", "'old' value does not match the expected value.", { field_name: "old" });
  });
});

describe("input that must not reach the database", () => {
  test("channel IDs beyond 32 bits are unknown channels", async () => {
    const huge = 3000000000;
    assertError(await t.api(t.users.admin, "GET", `/streams/${huge}`), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(t.users.admin, "PATCH", `/streams/${huge}`, { description: "x" }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(t.users.admin, "DELETE", `/streams/${huge}`), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(t.users.admin, "POST", "/default_streams", { stream_id: huge }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await t.api(t.users.admin, "DELETE", "/default_streams", { stream_id: huge }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(
      await t.api(t.users.member, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: huge, property: "pin_to_top", value: true }] }),
      400,
      "BAD_REQUEST",
      "Invalid channel ID",
    );
    assertError(
      await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "folder huge" }], folder_id: huge }),
      400,
      "BAD_REQUEST",
      "Invalid channel folder ID",
    );
  });

  test("NUL characters are refused in descriptions and names", async () => {
    assertError(
      await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "nul desc", description: "a\u0000b" }] }),
      400,
      "BAD_REQUEST",
      'subscriptions[0]["description"] contains a NUL character',
    );
    assertError(
      await t.api(t.users.member, "POST", "/user_groups/create", { name: "nul\u0000group", description: "", members: [] }),
      400,
      "BAD_REQUEST",
      "name contains a NUL character",
    );
  });
});

describe("privacy changes need content access", () => {
  test("an administrator not in a protected-history private channel cannot open its history", async () => {
    assertSuccess(
      await t.api(t.users.member, "POST", "/users/me/subscriptions", {
        subscriptions: [{ name: "secret history" }],
        invite_only: true,
        history_public_to_subscribers: false,
      }),
    );
    const streams = assertSuccess(await t.api(t.users.admin, "GET", "/streams", { include_all: true })).streams as { name: string; stream_id: number; history_public_to_subscribers: boolean }[];
    const channel = streams.find((s) => s.name === "secret history")!;
    assert.equal(channel.history_public_to_subscribers, false);
    assertError(
      await t.api(t.users.admin, "PATCH", `/streams/${channel.stream_id}`, { history_public_to_subscribers: true }),
      400,
      "BAD_REQUEST",
      "Channel content access is required.",
    );
    // The creator, a subscriber, may.
    assertSuccess(await t.api(t.users.member, "PATCH", `/streams/${channel.stream_id}`, { history_public_to_subscribers: true }));
    const after = assertSuccess(await t.api(t.users.member, "GET", `/streams/${channel.stream_id}`)).stream;
    assert.equal(after.history_public_to_subscribers, true);
    assert.equal(after.invite_only, true);
  });
});

describe("gaining or losing sight of channels through groups and roles", () => {
  test("joining a group named in a private channel's can_subscribe_group announces the channel; leaving takes it away", async () => {
    const outsider = await t.createUser("Group Outsider");
    const group = assertSuccess(await t.api(t.users.admin, "POST", "/user_groups/create", { name: "door keepers", description: "", members: [] })).group_id;
    assertSuccess(
      await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "keyed room" }], invite_only: true, can_subscribe_group: group }),
    );
    const id = await channelId("keyed room");
    assertError(await t.api(outsider, "GET", `/streams/${id}`), 400, "BAD_REQUEST", "Invalid channel ID");

    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group}/members`, { add: [outsider.id] }));
    const [create] = t.eventsFor(outsider.id, "stream", "create");
    assert.deepEqual((create!.streams as { stream_id: number }[]).map((s) => s.stream_id), [id]);
    const [peers] = t.eventsFor(outsider.id, "subscription", "peer_add");
    assert.deepEqual(peers!.stream_ids, [id]);
    assert.deepEqual(peers!.user_ids, [t.users.admin.id]);
    assertSuccess(await t.api(outsider, "GET", `/streams/${id}`));
    // Nobody else's view changed.
    assert.deepEqual(t.eventsFor(t.users.member.id, "stream", "create"), []);

    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${group}/members`, { delete: [outsider.id] }));
    const [removed] = t.eventsFor(outsider.id, "stream", "delete");
    assert.deepEqual(removed!.stream_ids, [id]);
    assertError(await t.api(outsider, "GET", `/streams/${id}`), 400, "BAD_REQUEST", "Invalid channel ID");
  });

  test("promotion to administrator shows private channels; demotion hides them; a guest made member sees public ones", async () => {
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "members only room" }], invite_only: true }));
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "open square" }] }));
    const privateId = await channelId("members only room");
    const publicId = await channelId("open square");
    const climber = await t.createUser("Role Climber");

    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${climber.id}`, { role: Role.ADMINISTRATOR }));
    const created = t.eventsFor(climber.id, "stream", "create").flatMap((e) => (e.streams as { stream_id: number }[]).map((s) => s.stream_id));
    assert.ok(created.includes(privateId), JSON.stringify(created));
    assert.ok(!created.includes(publicId), "public channels were visible already");

    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${climber.id}`, { role: Role.MEMBER }));
    const deleted = t.eventsFor(climber.id, "stream", "delete").flatMap((e) => e.stream_ids as number[]);
    assert.ok(deleted.includes(privateId), JSON.stringify(deleted));

    const visitor = await t.createUser("Guest Visitor", Role.GUEST);
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/users/${visitor.id}`, { role: Role.MEMBER }));
    const seen = t.eventsFor(visitor.id, "stream", "create").flatMap((e) => (e.streams as { stream_id: number }[]).map((s) => s.stream_id));
    assert.ok(seen.includes(publicId), JSON.stringify(seen));
    assert.ok(!seen.includes(privateId));
  });
});
