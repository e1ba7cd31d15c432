// Muted users: POST/DELETE /users/me/muted_users/{muted_user_id}, Zulip's
// errors, the `muted_users` event (to the muter alone) and /register's
// muted_users; muting marks the muted user's messages read (with an
// update_message_flags event), and their new messages arrive read for the
// muter only — mentions included — while everyone else is unaffected.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

const NOW = 1_750_000_000;

let t: TestApp;
before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const fresh = (role: number = Role.MEMBER, name = "Muter") => t.createUser(uniqueName(name), role);
const mute = (user: TestUser, id: number | string) => t.api(user, "POST", `/users/me/muted_users/${id}`);
const unmute = (user: TestUser, id: number | string) => t.api(user, "DELETE", `/users/me/muted_users/${id}`);
const mutedList = async (user: TestUser) => (await t.register(user, { fetch_event_types: ["muted_users"] })).muted_users;
const mutedEvents = () => t.events.filter((n) => n.event.type === "muted_users").map((n) => ({ event: n.event, userIds: [...n.userIds] }));

async function flagsOf(user: TestUser, id: number): Promise<string[]> {
  return assertSuccess(await t.api(user, "GET", `/messages/${id}`)).message.flags;
}

async function newChannel(members: TestUser[]): Promise<string> {
  const name = uniqueName("muting");
  assertSuccess(
    await t.api(t.users.admin, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: members.map((m) => m.id),
      send_new_subscription_messages: false,
    }),
  );
  return name;
}

const sendToChannel = async (sender: TestUser, channel: string, content = "Spam in channel") =>
  assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel, topic: "t", content })).id as number;
const sendDm = async (sender: TestUser, to: TestUser[], content = "Spam in direct message") =>
  assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((u) => u.id), content })).id as number;

/** The flags the `message` event gave `userId` for message `id`. */
function eventFlags(id: number, userId: number): readonly string[] | undefined {
  const n = t.events.find((e) => e.event.type === "message" && (e.event.message as { id: number }).id === id);
  return n?.message?.flags[userId];
}

describe("POST and DELETE /users/me/muted_users/{muted_user_id}", () => {
  test("muting: empty reply, the list in /register and in the event, to the muter alone", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    const othello = await fresh();
    assert.deepEqual(await mutedList(hamlet), []);
    const body = assertSuccess(await mute(hamlet, cordelia.id));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    t.services.now = () => NOW + 60;
    try {
      assertSuccess(await mute(hamlet, othello.id));
    } finally {
      t.services.now = () => NOW;
    }
    const list = [
      { id: cordelia.id, timestamp: NOW },
      { id: othello.id, timestamp: NOW + 60 },
    ];
    assert.deepEqual(await mutedList(hamlet), list);
    assert.deepEqual(mutedEvents(), [
      { event: { type: "muted_users", muted_users: [list[0]] }, userIds: [hamlet.id] },
      { event: { type: "muted_users", muted_users: list }, userIds: [hamlet.id] },
    ]);
    // Nobody else's list changed.
    assert.deepEqual(await mutedList(cordelia), []);
  });

  test("unmuting: the rest of the list in the event; muting again works", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    const othello = await fresh();
    assertSuccess(await mute(hamlet, cordelia.id));
    assertSuccess(await mute(hamlet, othello.id));
    t.clearEvents();
    const body = assertSuccess(await unmute(hamlet, cordelia.id));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    assert.deepEqual(mutedEvents(), [{ event: { type: "muted_users", muted_users: [{ id: othello.id, timestamp: NOW }] }, userIds: [hamlet.id] }]);
    assert.deepEqual(await mutedList(hamlet), [{ id: othello.id, timestamp: NOW }]);
    assertSuccess(await unmute(hamlet, othello.id));
    assert.deepEqual(await mutedList(hamlet), []);
    assertSuccess(await mute(hamlet, cordelia.id));
    assert.deepEqual(await mutedList(hamlet), [{ id: cordelia.id, timestamp: NOW }]);
  });

  test("errors, with nothing changed and no event", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    assertSuccess(await mute(hamlet, cordelia.id));
    t.clearEvents();
    assertError(await mute(hamlet, hamlet.id), 400, "BAD_REQUEST", "Cannot mute self");
    assertError(await mute(hamlet, cordelia.id), 400, "BAD_REQUEST", "User already muted");
    assertError(await mute(hamlet, 999999), 400, "BAD_REQUEST", "No such user");
    assertError(await mute(hamlet, "abc"), 400, "BAD_REQUEST", "muted_user_id is not an integer");
    assertError(await unmute(hamlet, 999999), 400, "BAD_REQUEST", "No such user");
    assertError(await unmute(hamlet, hamlet.id), 400, "BAD_REQUEST", "User is not muted");
    assertError(await unmute(hamlet, t.users.guest.id), 400, "BAD_REQUEST", "User is not muted");
    assertError(await unmute(hamlet, "abc"), 400, "BAD_REQUEST", "muted_user_id is not an integer");
    assertError(await t.api(null, "POST", `/users/me/muted_users/${cordelia.id}`), 401, "UNAUTHORIZED");
    assert.deepEqual(mutedEvents(), []);
    assert.deepEqual(await mutedList(hamlet), [{ id: cordelia.id, timestamp: NOW }]);
  });

  test("bots, deactivated users and system bots may be muted; every role, bots included, may mute", async () => {
    const hamlet = await fresh();
    const gone = await fresh();
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${gone.id}`));
    const notificationBot = await t.services.storage.db.selectFrom("users").select("id").where("realm_id", "=", t.realm.id).where("is_system_bot", "=", true).executeTakeFirstOrThrow();
    for (const id of [t.users.bot.id, gone.id, notificationBot.id]) assertSuccess(await mute(hamlet, id));
    assert.deepEqual((await mutedList(hamlet)).map((m: { id: number }) => m.id).sort(), [t.users.bot.id, gone.id, notificationBot.id].sort());
    // A deactivated user can be unmuted too.
    assertSuccess(await unmute(hamlet, gone.id));
    const target = await fresh();
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"] as const) {
      assertSuccess(await mute(t.users[role], target.id));
      assertSuccess(await unmute(t.users[role], target.id));
    }
  });
});

describe("muted senders' messages are read for the muter", () => {
  test("muting marks the muted user's unread messages read, with one update_message_flags event; others keep theirs", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    const othello = await fresh();
    const channel = await newChannel([hamlet, cordelia, othello]);
    const inChannel = await sendToChannel(cordelia, channel);
    const group = await sendDm(cordelia, [hamlet, othello], "Spam in group");
    const toHamlet = await sendDm(cordelia, [hamlet]);
    const toOthello = await sendDm(cordelia, [othello]);
    const alreadyRead = await sendDm(cordelia, [hamlet], "read already");
    const fromOthello = await sendDm(othello, [hamlet], "not muted");
    assertSuccess(await t.api(hamlet, "POST", "/messages/flags", { messages: [alreadyRead], op: "add", flag: "read" }));
    for (const id of [inChannel, group, toHamlet]) assert.deepEqual(await flagsOf(hamlet, id), []);
    t.clearEvents();

    assertSuccess(await mute(hamlet, cordelia.id));
    for (const id of [inChannel, group, toHamlet, alreadyRead]) assert.deepEqual(await flagsOf(hamlet, id), ["read"]);
    assert.deepEqual(await flagsOf(hamlet, fromOthello), []);
    for (const id of [inChannel, group, toOthello]) assert.deepEqual(await flagsOf(othello, id), []);
    const flagEvents = t.events.filter((n) => n.event.type === "update_message_flags");
    assert.deepEqual(
      flagEvents.map((n) => ({ event: n.event, userIds: n.userIds })),
      [{ event: { type: "update_message_flags", op: "add", operation: "add", flag: "read", messages: [inChannel, group, toHamlet], all: false }, userIds: [hamlet.id] }],
    );
    // The flags event comes before the muted_users event, as in Zulip.
    const types = t.events.map((n) => n.event.type);
    assert.ok(types.indexOf("update_message_flags") < types.indexOf("muted_users"));
  });

  test("muting someone with no unread messages sends no flags event", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    assertSuccess(await mute(hamlet, cordelia.id));
    assert.deepEqual(t.eventsFor(hamlet.id, "update_message_flags"), []);
  });

  test("new messages from a muted sender arrive read for the muter, mentions included, and for nobody else", async () => {
    const hamletName = uniqueName("Hamlet");
    const hamlet = await t.createUser(hamletName, Role.MEMBER);
    const cordelia = await fresh();
    const othello = await fresh();
    const channel = await newChannel([hamlet, cordelia, othello]);
    assertSuccess(await mute(hamlet, cordelia.id));
    t.clearEvents();

    const inChannel = await sendToChannel(cordelia, channel);
    const mention = await sendToChannel(cordelia, channel, "@**all** hello");
    const personalMention = await sendToChannel(cordelia, channel, `@**${hamletName}** hey`);
    const group = await sendDm(cordelia, [hamlet, othello], "Spam in group");
    const toHamlet = await sendDm(cordelia, [hamlet]);
    const toOthello = await sendDm(cordelia, [othello]);
    for (const id of [inChannel, mention, personalMention, group, toHamlet]) {
      assert.ok((await flagsOf(hamlet, id)).includes("read"), `message ${id} read for the muter`);
      assert.ok(eventFlags(id, hamlet.id)?.includes("read"), `message ${id} arrives read in the event`);
    }
    for (const id of [inChannel, mention, group, toOthello]) {
      assert.equal((await flagsOf(othello, id)).includes("read"), false, `message ${id} unread for others`);
      assert.equal(eventFlags(id, othello.id)?.includes("read"), false);
    }
    // Mentions keep their flags: only read is added.
    assert.deepEqual(await flagsOf(hamlet, personalMention), ["read", "mentioned"]);
    // The sender's own copies are as always (their client marks them read, the API leaves the default).
    assert.deepEqual(eventFlags(inChannel, cordelia.id), await flagsOf(cordelia, inChannel));
    // Hamlet's unread counts leave them out; Othello's have them.
    const unread = async (user: TestUser) => (await t.register(user, { fetch_event_types: ["message", "update_message_flags"] })).unread_msgs;
    assert.equal((await unread(hamlet)).count, 0);
    assert.deepEqual((await unread(hamlet)).mentions, []);
    assert.equal((await unread(othello)).count, 5);
    // Messages from others are unaffected for the muter.
    const fromOthello = await sendToChannel(othello, channel);
    assert.deepEqual(await flagsOf(hamlet, fromOthello), []);
  });

  test("after unmuting, earlier messages stay read and new ones arrive unread", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    const before = await sendDm(cordelia, [hamlet]);
    assertSuccess(await mute(hamlet, cordelia.id));
    const during = await sendDm(cordelia, [hamlet]);
    assertSuccess(await unmute(hamlet, cordelia.id));
    const afterwards = await sendDm(cordelia, [hamlet]);
    assert.deepEqual(await flagsOf(hamlet, before), ["read"]);
    assert.deepEqual(await flagsOf(hamlet, during), ["read"]);
    assert.deepEqual(await flagsOf(hamlet, afterwards), []);
  });

  test("a muted bot's messages arrive read", async () => {
    const hamlet = await fresh();
    const bot = await t.createUser(uniqueName("Chatty Bot"), Role.MEMBER, { bot: true, botOwnerId: hamlet.id });
    assertSuccess(await mute(hamlet, bot.id));
    const fromBot = await sendDm(bot, [hamlet], "beep");
    assert.deepEqual(await flagsOf(hamlet, fromBot), ["read"]);
  });

  test("typing notifications from a muted user still reach the muter (Zulip filters them in the client)", async () => {
    const hamlet = await fresh();
    const cordelia = await fresh();
    assertSuccess(await mute(hamlet, cordelia.id));
    t.clearEvents();
    assertSuccess(await t.api(cordelia, "POST", "/typing", { op: "start", to: [hamlet.id] }));
    assert.equal(t.eventsFor(hamlet.id, "typing").length, 1);
  });
});
