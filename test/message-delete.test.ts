// API-level tests of DELETE /messages/{message_id} and the deleteMessages
// action behind it: who may delete what (organization and channel settings,
// roles, bots' owners, the time limit), the errors, what goes with a message
// (flag rows, reactions, attachment links, uploads nothing else links, full-
// text rows, first_message_id, topics, unread counts) and the
// `delete_message` events each client gets. Zulip's behaviour is in
// docs/zulip-behaviour/message-delete.md.
import assert from "node:assert/strict";
import { after, afterEach, before, describe, test } from "node:test";
import { deleteMessages } from "../src/actions/message-delete.ts";
import { Role } from "../src/domain/roles.ts";
import type { User } from "../src/storage/schema.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, storedBytes, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

// Tests read arbitrary fields of replies and events.
/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;
let sys: Record<string, number>;
/** The clock every send and delete sees; tests move it to age messages. */
const NOW = Math.floor(Date.now() / 1000);
let clock = NOW;

before(async () => {
  t = await startTestApp();
  t.services.now = () => clock;
  sys = await t.systemGroupIds();
});
after(() => t?.close());
afterEach(async () => {
  clock = NOW;
  // Every test starts from Zulip's defaults: any message by administrators, own messages by everyone, 600 s.
  await setRealm({ any: sys["role:administrators"]!, own: sys["role:everyone"]!, limit: 600 });
});

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
const db = () => t.services.storage.db;
const NO_PERMISSION = "You don't have permission to delete this message";
const TIME_LIMIT = "The time limit for deleting this message has passed";
const INVALID = "Invalid message(s)";

interface Channel {
  id: number;
  name: string;
}

let counter = 0;
async function newUser(prefix = "Deleter", role: number = Role.MEMBER, options: { bot?: boolean; botOwnerId?: number } = {}): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${counter}`, role, options);
}

function del(user: TestUser, id: number | string): Promise<ApiResponse> {
  return t.api(user, "DELETE", `/messages/${id}`);
}

async function post(user: TestUser, channel: Channel, topic: string, content = "to be deleted"): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", { type: "channel", to: channel.id, topic, content })).id as number;
}

async function dm(user: TestUser, to: TestUser[], content = "a direct message"): Promise<number> {
  return assertSuccess(await t.api(user, "POST", "/messages", { type: "direct", to: to.map((r) => r.id), content })).id as number;
}

/** Creates a channel with `creator` and `subscribers` subscribed (params: invite_only, history_public_to_subscribers…). */
async function newChannel(creator: TestUser, subscribers: TestUser[] = [], params: Params = {}): Promise<Channel> {
  const name = uniqueName("delete channel");
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...subscribers.map((s) => s.id)],
      send_new_subscription_messages: false,
      ...params,
    }),
  );
  const id = assertSuccess(await t.api(creator, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function subscribe(actor: TestUser, channel: Channel, users: TestUser[]): Promise<void> {
  assertSuccess(
    await t.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: users.map((s) => s.id), send_new_subscription_messages: false }),
  );
}

async function unsubscribe(actor: TestUser, channel: Channel, users: TestUser[]): Promise<void> {
  assertSuccess(await t.api(actor, "DELETE", "/users/me/subscriptions", { subscriptions: [channel.name], principals: users.map((s) => s.id) }));
}

async function setRealm(settings: { any?: number; own?: number; limit?: number | null }): Promise<void> {
  const params: Params = {};
  if (settings.any !== undefined) params.can_delete_any_message_group = { new: settings.any };
  if (settings.own !== undefined) params.can_delete_own_message_group = { new: settings.own };
  if (settings.limit !== undefined) params.message_content_delete_limit_seconds = settings.limit === null ? JSON.stringify("unlimited") : settings.limit;
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", params));
}

async function setChannel(channel: Channel, settings: Params): Promise<void> {
  const params: Params = {};
  for (const [name, value] of Object.entries(settings)) params[name] = { new: value };
  assertSuccess(await t.api(u().owner, "PATCH", `/streams/${channel.id}`, params));
}

async function exists(id: number): Promise<boolean> {
  return (await db().selectFrom("messages").select("id").where("id", "=", id).executeTakeFirst()) !== undefined;
}

async function userRow(user: TestUser): Promise<User> {
  return db().selectFrom("users").selectAll().where("id", "=", user.id).executeTakeFirstOrThrow();
}

/** Notifications of `delete_message` events since the last clearEvents, as the notifier saw them. */
function deleteNotifications() {
  return t.events.filter((n) => n.event.type === "delete_message");
}

/** Queued events of a type, without the queue-assigned id. */
async function queued(user: TestUser, queueId: string, type: string): Promise<any[]> {
  return (await t.queuedEvents(user, queueId)).filter((e) => e.type === type).map(({ id: _id, ...rest }) => rest);
}

async function register(user: TestUser, capabilities: Record<string, boolean>, eventTypes = ["delete_message"]): Promise<string> {
  return (await t.register(user, { event_types: eventTypes, client_capabilities: capabilities })).queue_id as string;
}

// ---------------------------------------------------------------------------

describe("DELETE /messages/{message_id}: success and errors", () => {
  let channel: Channel;
  let sender: TestUser;

  before(async () => {
    sender = await newUser("Plain Sender");
    channel = await newChannel(sender, [u().member, u().moderator]);
  });

  test("the sender deletes their own message: an empty success, and the message is gone", async () => {
    const id = await post(sender, channel, "basics");
    const reply = assertSuccess(await del(sender, id));
    assert.deepEqual(reply, { result: "success", msg: "" });
    assert.equal(await exists(id), false);
    assertError(await t.api(sender, "GET", `/messages/${id}`), 400, "BAD_REQUEST", INVALID);
  });

  test("deleting it again, or an ID that never existed: Invalid message(s)", async () => {
    const id = await post(sender, channel, "twice");
    assertSuccess(await del(sender, id));
    assertError(await del(sender, id), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().owner, 987654321), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().owner, 0), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().owner, -5), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().owner, "99999999999999999"), 400, "BAD_REQUEST", "message_id is not an integer");
  });

  test("a message_id that is not an integer", async () => {
    assertError(await del(sender, "abc"), 400, "BAD_REQUEST", "message_id is not an integer");
    assertError(await del(sender, "1.5"), 400, "BAD_REQUEST", "message_id is not an integer");
  });

  test("someone else's message without permission: HTTP 400 with the permission error, nothing deleted", async () => {
    const id = await post(sender, channel, "not yours");
    assertError(await del(u().member, id), 400, "BAD_REQUEST", NO_PERMISSION);
    assertError(await del(u().moderator, id), 400, "BAD_REQUEST", NO_PERMISSION);
    assert.equal(await exists(id), true);
  });

  test("other people's direct messages are Invalid message(s), even for the owner", async () => {
    const other = await newUser("DM Other");
    const id = await dm(sender, [other]);
    assertError(await del(u().owner, id), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().admin, id), 400, "BAD_REQUEST", INVALID);
    assert.equal(await exists(id), true);
    // A recipient who may not delete it gets the permission error: they can read it.
    assertError(await del(other, id), 400, "BAD_REQUEST", NO_PERMISSION);
    assertSuccess(await del(sender, id));
  });

  test("a private channel the administrator is not in: Invalid message(s); once subscribed, deleted", async () => {
    const closed = await newChannel(sender, [], { invite_only: true, history_public_to_subscribers: true });
    const id = await post(sender, closed, "secret");
    assertError(await del(u().admin, id), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().member, id), 400, "BAD_REQUEST", INVALID);
    await subscribe(sender, closed, [u().admin]);
    assertSuccess(await del(u().admin, id));
  });

  test("protected history: only subscribers who received the message can reach it (Zulip's unsubscribed-private-stream case)", async () => {
    const admin = await newUser("Protected Admin", Role.ADMINISTRATOR);
    const closed = await newChannel(sender, [admin], { invite_only: true, history_public_to_subscribers: false });
    const id = await post(sender, closed, "editing");
    const late = await newUser("Late Admin", Role.ADMINISTRATOR);
    await subscribe(sender, closed, [late]);
    // Joined after it was sent: no flags row, no access.
    assertError(await del(late, id), 400, "BAD_REQUEST", INVALID);
    await unsubscribe(admin, closed, [admin]);
    assertError(await del(admin, id), 400, "BAD_REQUEST", INVALID);
    assert.equal(await exists(id), true);
    await subscribe(sender, closed, [admin]);
    assertSuccess(await del(admin, id));
    assert.equal(await exists(id), false);
  });

  test("a message in an archived channel cannot be deleted: Invalid message(s)", async () => {
    const doomed = await newChannel(sender);
    const id = await post(sender, doomed, "archived");
    assertSuccess(await t.api(u().owner, "DELETE", `/streams/${doomed.id}`));
    assertError(await del(sender, id), 400, "BAD_REQUEST", INVALID);
    assertError(await del(u().owner, id), 400, "BAD_REQUEST", INVALID);
    assert.equal(await exists(id), true);
  });

  test("no credentials: 401", async () => {
    const id = await post(sender, channel, "anonymous");
    const reply = await t.api(null, "DELETE", `/messages/${id}`);
    assertError(reply, 401, "UNAUTHORIZED");
    assert.equal(await exists(id), true);
  });

  test("two deletes of one message at once: one succeeds, the other finds nothing (Invalid message(s))", async () => {
    const id = await post(sender, channel, "race");
    const replies = await Promise.all([del(sender, id), del(u().owner, id)]);
    const ok = replies.filter((r) => r.status === 200);
    const failed = replies.filter((r) => r.status !== 200);
    assert.equal(ok.length, 1, JSON.stringify(replies.map((r) => r.body)));
    assertError(failed[0]!, 400, "BAD_REQUEST", INVALID);
    assert.equal(deleteNotifications().filter((n) => (n.event.message_ids as number[] | undefined)?.includes(id)).length, 1);
  });

  test("the ID in the path decides, not a message_id parameter; unknown parameters are listed as ignored", async () => {
    const inPath = await post(sender, channel, "extra");
    const inBody = await post(sender, channel, "extra");
    const reply = assertSuccess(await t.api(sender, "DELETE", `/messages/${inPath}`, { message_id: inBody, bogus: 1 }));
    assert.ok(reply.ignored_parameters_unsupported.includes("bogus"), JSON.stringify(reply));
    assert.equal(await exists(inPath), false);
    assert.equal(await exists(inBody), true);
  });
});

// ---------------------------------------------------------------------------

describe("who may delete: organization settings, roles and bots", () => {
  let channel: Channel;
  let stranger: TestUser;
  let actors: Record<"owner" | "admin" | "moderator" | "member" | "guest" | "bot", TestUser>;

  before(async () => {
    stranger = await newUser("Matrix Stranger");
    actors = { ...u() };
    channel = await newChannel(u().owner, [u().admin, u().moderator, u().member, u().guest, u().bot, stranger]);
  });

  type Outcome = "ok" | "denied";
  /** For each actor: [deleting their own message, deleting the stranger's]. */
  type Expected = Record<keyof typeof actors, [Outcome, Outcome]>;

  async function checkMatrix(label: string, expected: Expected): Promise<void> {
    for (const [role, [own, others]] of Object.entries(expected) as [keyof Expected, [Outcome, Outcome]][]) {
      const actor = actors[role];
      const mine = await post(actor, channel, "matrix");
      const theirs = await post(stranger, channel, "matrix");
      for (const [id, outcome, what] of [
        [mine, own, "own"],
        [theirs, others, "other's"],
      ] as const) {
        const reply = await del(actor, id);
        const context = `${label}: ${role} deleting ${what} message`;
        if (outcome === "ok") {
          assert.equal(reply.status, 200, `${context}: ${JSON.stringify(reply.body)}`);
          assert.equal(await exists(id), false, context);
        } else {
          assert.equal(reply.status, 400, `${context}: ${JSON.stringify(reply.body)}`);
          assert.deepEqual([reply.body.code, reply.body.msg], ["BAD_REQUEST", NO_PERMISSION], context);
          assert.equal(await exists(id), true, context);
        }
      }
    }
  }

  test("defaults (any: administrators, own: everyone): everyone their own, administrators anything", async () => {
    await setRealm({ limit: null });
    await checkMatrix("defaults", {
      owner: ["ok", "ok"],
      admin: ["ok", "ok"],
      moderator: ["ok", "denied"],
      member: ["ok", "denied"],
      guest: ["ok", "denied"],
      bot: ["ok", "denied"],
    });
  });

  test("any: moderators, own: administrators", async () => {
    await setRealm({ any: sys["role:moderators"]!, own: sys["role:administrators"]!, limit: null });
    await checkMatrix("moderators/administrators", {
      owner: ["ok", "ok"],
      admin: ["ok", "ok"],
      moderator: ["ok", "ok"],
      member: ["denied", "denied"],
      guest: ["denied", "denied"],
      bot: ["denied", "denied"],
    });
  });

  test("any: nobody, own: nobody: not even the owner", async () => {
    await setRealm({ any: sys["role:nobody"]!, own: sys["role:nobody"]!, limit: null });
    await checkMatrix("nobody/nobody", {
      owner: ["denied", "denied"],
      admin: ["denied", "denied"],
      moderator: ["denied", "denied"],
      member: ["denied", "denied"],
      guest: ["denied", "denied"],
      bot: ["denied", "denied"],
    });
  });

  test("any: members, own: nobody: every member (bots too) deletes anything, guests nothing", async () => {
    await setRealm({ any: sys["role:members"]!, own: sys["role:nobody"]!, limit: null });
    await checkMatrix("members/nobody", {
      owner: ["ok", "ok"],
      admin: ["ok", "ok"],
      moderator: ["ok", "ok"],
      member: ["ok", "ok"],
      guest: ["denied", "denied"],
      bot: ["ok", "ok"],
    });
  });

  test("any: administrators, own: members: guests may not delete even their own", async () => {
    await setRealm({ own: sys["role:members"]!, limit: null });
    await checkMatrix("administrators/members", {
      owner: ["ok", "ok"],
      admin: ["ok", "ok"],
      moderator: ["ok", "denied"],
      member: ["ok", "denied"],
      guest: ["denied", "denied"],
      bot: ["ok", "denied"],
    });
  });

  test("can_delete_any_message_group cannot be everyone, and a guest in a user group named by it still may not delete", async () => {
    const reply = await t.api(u().owner, "PATCH", "/realm", { can_delete_any_message_group: { new: sys["role:everyone"] } });
    assertError(reply, 400, "BAD_REQUEST");
    const group = assertSuccess(
      await t.api(u().owner, "POST", "/user_groups/create", { name: uniqueName("deleters"), description: "may delete", members: [u().member.id, u().guest.id] }),
    ).group_id as number;
    await setRealm({ any: group, own: sys["role:administrators"]!, limit: null });
    await checkMatrix("user group", {
      owner: ["ok", "denied"],
      admin: ["ok", "denied"],
      moderator: ["denied", "denied"],
      member: ["ok", "ok"],
      guest: ["denied", "denied"],
      bot: ["denied", "denied"],
    });
  });

  test("a bot's owner may delete the bot's messages as their own; nobody else may", async () => {
    await setRealm({ limit: null });
    const botMessage = await post(u().bot, channel, "bot talk");
    assertError(await del(u().moderator, botMessage), 400, "BAD_REQUEST", NO_PERMISSION);
    assertError(await del(stranger, botMessage), 400, "BAD_REQUEST", NO_PERMISSION);
    assertSuccess(await del(u().member, botMessage));

    // Own messages only for administrators: the owner (a member) no longer may, nor the bot itself.
    await setRealm({ own: sys["role:administrators"]! });
    const second = await post(u().bot, channel, "bot talk");
    assertError(await del(u().member, second), 400, "BAD_REQUEST", NO_PERMISSION);
    assertError(await del(u().bot, second), 400, "BAD_REQUEST", NO_PERMISSION);
    assertSuccess(await del(u().admin, second));

    // The time limit applies to the owner as to the bot.
    await setRealm({ own: sys["role:everyone"]!, limit: 600 });
    const old = await post(u().bot, channel, "bot talk");
    clock = NOW + 601;
    assertError(await del(u().member, old), 400, "BAD_REQUEST", TIME_LIMIT);
    assertError(await del(u().bot, old), 400, "BAD_REQUEST", TIME_LIMIT);
    clock = NOW + 400;
    assertSuccess(await del(u().bot, old));
  });

  test("the bot owner's power is over their own bots only", async () => {
    await setRealm({ limit: null });
    const otherBot = await newUser("Other Bot", Role.MEMBER, { bot: true, botOwnerId: stranger.id });
    await subscribe(u().owner, channel, [otherBot]);
    const id = await post(otherBot, channel, "not yours");
    assert.equal((await userRow(otherBot)).bot_owner_id, stranger.id);
    assertError(await del(u().member, id), 400, "BAD_REQUEST", NO_PERMISSION);
    assertSuccess(await del(stranger, id));
  });

  test("direct messages follow the organization settings", async () => {
    await setRealm({ limit: null });
    const other = await newUser("DM Partner");
    const id = await dm(u().member, [other]);
    assertError(await del(other, id), 400, "BAD_REQUEST", NO_PERMISSION);
    await setRealm({ own: sys["role:nobody"]! });
    assertError(await del(u().member, id), 400, "BAD_REQUEST", NO_PERMISSION);
    await setRealm({ own: sys["role:everyone"]! });
    assertSuccess(await del(u().member, id));
  });
});

// ---------------------------------------------------------------------------

describe("the time limit (message_content_delete_limit_seconds)", () => {
  let channel: Channel;
  let sender: TestUser;

  before(async () => {
    sender = await newUser("Timed Sender");
    channel = await newChannel(sender, [u().moderator]);
  });

  test("own messages: deletable up to exactly the limit, not one second later", async () => {
    await setRealm({ limit: 240 });
    const atLimit = await post(sender, channel, "timed");
    const pastLimit = await post(sender, channel, "timed");
    clock = NOW + 240;
    assertSuccess(await del(sender, atLimit));
    clock = NOW + 241;
    assertError(await del(sender, pastLimit), 400, "BAD_REQUEST", TIME_LIMIT);
    assert.equal(await exists(pastLimit), true);
    // Administrators (can_delete_any_message_group) have no limit.
    assertSuccess(await del(u().admin, pastLimit));
  });

  test("the default limit is 600 seconds", async () => {
    const young = await post(sender, channel, "default limit");
    const old = await post(sender, channel, "default limit");
    clock = NOW + 600;
    assertSuccess(await del(sender, young));
    clock = NOW + 601;
    assertError(await del(sender, old), 400, "BAD_REQUEST", TIME_LIMIT);
  });

  test("no limit (unlimited) lets a year-old message go", async () => {
    await setRealm({ limit: null });
    const id = await post(sender, channel, "ancient");
    clock = NOW + 365 * 86400;
    assertSuccess(await del(sender, id));
  });

  test("the permission error comes before the time limit", async () => {
    await setRealm({ limit: 60 });
    const id = await post(sender, channel, "old and not yours");
    clock = NOW + 3600;
    assertError(await del(u().moderator, id), 400, "BAD_REQUEST", NO_PERMISSION);
  });

  test("whoever may delete any message has no limit, even on their own messages", async () => {
    await setRealm({ any: sys["role:moderators"]!, limit: 240 });
    const own = await post(u().moderator, channel, "moderated");
    const others = await post(sender, channel, "moderated");
    const senders = await post(sender, channel, "moderated");
    clock = NOW + 360;
    assertSuccess(await del(u().moderator, own));
    assertSuccess(await del(u().moderator, others));
    assertError(await del(sender, senders), 400, "BAD_REQUEST", TIME_LIMIT);
  });
});

// ---------------------------------------------------------------------------

describe("channel-level permissions (feature level 407)", () => {
  let sender: TestUser;
  let deleter: TestUser;
  let permissive: Channel;
  let plain: Channel;

  before(async () => {
    sender = await newUser("Channel Sender");
    deleter = await newUser("Channel Deleter");
    permissive = await newChannel(sender, [deleter]);
    plain = await newChannel(sender, [deleter]);
  });

  test("new channels grant nothing: both settings start as role:nobody", async () => {
    const stream = assertSuccess(await t.api(sender, "GET", `/streams/${plain.id}`)).stream;
    assert.equal(stream.can_delete_any_message_group, sys["role:nobody"]);
    assert.equal(stream.can_delete_own_message_group, sys["role:nobody"]);
  });

  test("can_delete_own_message_group lets members delete their own messages in that channel only, within the time limit", async () => {
    await setRealm({ own: sys["role:nobody"]!, limit: 600 });
    await setChannel(permissive, { can_delete_own_message_group: sys["role:members"] });
    const here = await post(deleter, permissive, "own here");
    const elsewhere = await post(deleter, plain, "own elsewhere");
    const notMine = await post(sender, permissive, "not mine");
    const direct = await dm(deleter, [sender]);
    assertSuccess(await del(deleter, here));
    assertError(await del(deleter, elsewhere), 400, "BAD_REQUEST", NO_PERMISSION);
    assertError(await del(deleter, notMine), 400, "BAD_REQUEST", NO_PERMISSION);
    assertError(await del(deleter, direct), 400, "BAD_REQUEST", NO_PERMISSION);
    const old = await post(deleter, permissive, "own but old");
    clock = NOW + 601;
    assertError(await del(deleter, old), 400, "BAD_REQUEST", TIME_LIMIT);
    await setChannel(permissive, { can_delete_own_message_group: sys["role:nobody"] });
  });

  test("can_delete_any_message_group lets its members delete anyone's messages in that channel, without a time limit", async () => {
    await setRealm({ own: sys["role:nobody"]!, limit: 60 });
    await setChannel(permissive, { can_delete_any_message_group: { direct_members: [deleter.id], direct_subgroups: [] } });
    const others = await post(sender, permissive, "anyone's");
    const own = await post(deleter, permissive, "own");
    const elsewhere = await post(sender, plain, "anyone's elsewhere");
    clock = NOW + 3600;
    assertSuccess(await del(deleter, others));
    assertSuccess(await del(deleter, own));
    assertError(await del(deleter, elsewhere), 400, "BAD_REQUEST", NO_PERMISSION);
    // Not for the sender, who is not in the channel's group.
    const senders = await post(sender, permissive, "sender's own");
    assertError(await del(sender, senders), 400, "BAD_REQUEST", NO_PERMISSION);
    await setChannel(permissive, { can_delete_any_message_group: sys["role:nobody"] });
  });

  test("the channel setting still needs content access to the message", async () => {
    const closed = await newChannel(sender, [], { invite_only: true, history_public_to_subscribers: true });
    await setChannel(closed, { can_delete_any_message_group: sys["role:members"] });
    const id = await post(sender, closed, "private");
    assertError(await del(deleter, id), 400, "BAD_REQUEST", INVALID);
    await subscribe(sender, closed, [deleter]);
    assertSuccess(await del(deleter, id));
  });
});

// ---------------------------------------------------------------------------

describe("what goes with a message", () => {
  let sender: TestUser;
  let reader: TestUser;
  let channel: Channel;

  before(async () => {
    sender = await newUser("Effects Sender");
    reader = await newUser("Effects Reader");
    channel = await newChannel(sender, [reader]);
  });

  test("flag rows, reactions and attachment links go; other messages keep theirs", async () => {
    const gone = await post(sender, channel, "effects", `@**${(await userRow(reader)).full_name}** look`);
    const kept = await post(sender, channel, "effects", "stays");
    await db()
      .insertInto("reactions")
      .values([gone, kept].map((id) => ({ message_id: id, user_id: reader.id, emoji_name: "smile", emoji_code: "1f604", reaction_type: "unicode_emoji" })))
      .execute();
    const count = async (table: "user_messages" | "reactions", id: number) =>
      Number((await db().selectFrom(table).select((eb) => eb.fn.countAll().as("n")).where("message_id", "=", id).executeTakeFirstOrThrow()).n);
    assert.equal(await count("user_messages", gone), 2);
    assert.equal(await count("reactions", gone), 1);
    assertSuccess(await del(sender, gone));
    assert.equal(await count("user_messages", gone), 0);
    assert.equal(await count("reactions", gone), 0);
    assert.equal(await count("user_messages", kept), 2);
    assert.equal(await count("reactions", kept), 1);
    const message = assertSuccess(await t.api(reader, "GET", `/messages/${kept}`)).message;
    assert.deepEqual(message.reactions.map((r: any) => r.emoji_name), ["smile"]);
  });

  test("GET /messages, search and message_ids no longer return it", async () => {
    const word = `zebra${counter++}x`;
    const gone = await post(sender, channel, "fetching", `a ${word} here`);
    const kept = await post(sender, channel, "fetching", `another ${word} there`);
    const fetch = async (narrow: unknown[]) =>
      (assertSuccess(await t.api(reader, "GET", "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow })).messages as any[]).map((m) => m.id);
    assert.deepEqual(await fetch([{ operator: "search", operand: word }]), [gone, kept]);
    assertSuccess(await del(sender, gone));
    assert.deepEqual(await fetch([{ operator: "search", operand: word }]), [kept]);
    assert.ok(!(await fetch([{ operator: "channel", operand: channel.id }])).includes(gone));
    const byIds = assertSuccess(await t.api(reader, "GET", "/messages", { message_ids: [gone, kept] })).messages as any[];
    assert.deepEqual(byIds.map((m) => m.id), [kept]);
  });

  test("unread counts in /register drop, mentions too", async () => {
    const state = async () => (await t.register(reader, { fetch_event_types: ["message", "update_message_flags"] })).unread_msgs;
    const before = await state();
    const mention = await post(sender, channel, "unread topic", `@**${(await userRow(reader)).full_name}** hi`);
    const plainUnread = await post(sender, channel, "unread topic", "hello");
    const direct = await dm(sender, [reader]);
    let now = await state();
    assert.equal(now.count, before.count + 3);
    assert.ok(now.mentions.includes(mention));
    assert.deepEqual(now.streams.find((s: any) => s.stream_id === channel.id && s.topic === "unread topic").unread_message_ids, [mention, plainUnread]);
    assertSuccess(await del(sender, mention));
    assertSuccess(await del(sender, direct));
    now = await state();
    assert.equal(now.count, before.count + 1);
    assert.ok(!now.mentions.includes(mention));
    assert.deepEqual(now.streams.find((s: any) => s.stream_id === channel.id && s.topic === "unread topic").unread_message_ids, [plainUnread]);
    assert.ok(!now.pms.some((p: any) => p.unread_message_ids.includes(direct)));
    assertSuccess(await del(sender, plainUnread));
    now = await state();
    assert.equal(now.count, before.count);
    assert.equal(now.streams.find((s: any) => s.stream_id === channel.id && s.topic === "unread topic"), undefined);
  });

  test("topics: the list drops a topic whose last message went, and max_id moves back", async () => {
    const topics = async () => assertSuccess(await t.api(reader, "GET", `/users/me/${channel.id}/topics`)).topics as { name: string; max_id: number }[];
    const a1 = await post(sender, channel, "topic A");
    const a2 = await post(sender, channel, "topic A");
    const b1 = await post(sender, channel, "topic B");
    assert.deepEqual((await topics()).slice(0, 2), [
      { name: "topic B", max_id: b1 },
      { name: "topic A", max_id: a2 },
    ]);
    assertSuccess(await del(sender, b1));
    assertSuccess(await del(sender, a2));
    const after = await topics();
    assert.equal(after.find((x) => x.name === "topic B"), undefined);
    assert.deepEqual(after.find((x) => x.name === "topic A"), { name: "topic A", max_id: a1 });
  });

  test("first_message_id moves to the oldest remaining message, null when none is left, with a stream update event", async () => {
    const fresh = await newChannel(sender, [reader]);
    const queue = await register(reader, {}, ["stream"]);
    const firstOf = async () => assertSuccess(await t.api(reader, "GET", `/streams/${fresh.id}`)).stream.first_message_id;
    const [m1, m2, m3] = [await post(sender, fresh, "first"), await post(sender, fresh, "first"), await post(sender, fresh, "second")];
    assert.equal(await firstOf(), m1);
    assertSuccess(await del(sender, m2));
    assert.equal(await firstOf(), m1, "deleting a later message leaves it");
    assertSuccess(await del(sender, m1));
    assert.equal(await firstOf(), m3);
    assertSuccess(await del(sender, m3));
    assert.equal(await firstOf(), null);
    const update = (value: number | null) => ({ type: "stream", op: "update", property: "first_message_id", value, stream_id: fresh.id, name: fresh.name });
    assert.deepEqual(await queued(reader, queue, "stream"), [update(m3), update(null)]);
    // A message sent after that becomes the first again.
    const m4 = await post(sender, fresh, "again");
    assert.equal(await firstOf(), m4);
  });

  test("uploads: the link goes; an upload no message links any more goes too (row and file), as in Zulip", async () => {
    const pathId = await uploadFile(sender, "report.txt", "quarterly numbers");
    const link = `[report.txt](/user_uploads/${pathId})`;
    const first = await post(sender, channel, "files", `see ${link}`);
    const second = await post(sender, channel, "files", `again ${link}`);
    const attachments = async () => assertSuccess(await t.api(sender, "GET", "/attachments")).attachments as any[];
    const mine = async () => (await attachments()).find((a) => a.path_id === pathId);
    assert.deepEqual((await mine()).messages.map((m: any) => m.id), [first, second]);
    const stored = async () => (await storedBytes(t, pathId))?.toString("utf8");
    assert.equal(await stored(), "quarterly numbers");
    t.clearEvents();

    assertSuccess(await del(sender, first));
    assert.deepEqual((await mine()).messages.map((m: any) => m.id), [second], "still linked by the other message");
    assert.equal(await stored(), "quarterly numbers");
    assert.equal((await fetchFile(reader, pathId)).status, 200);

    assertSuccess(await del(sender, second));
    assert.equal(await mine(), undefined);
    assert.equal(await db().selectFrom("attachments").select("id").where("path_id", "=", pathId).executeTakeFirst(), undefined);
    assert.equal(await stored(), undefined);
    assert.equal((await fetchFile(sender, pathId)).status, 404);
    // Zulip sends no `attachment` event for this.
    assert.deepEqual(t.events.filter((n) => n.event.type === "attachment"), []);
  });

  test("an upload never linked, and one linked by a message that stays, are untouched", async () => {
    const unlinked = await uploadFile(sender, "draft.txt", "not sent yet");
    const shared = await uploadFile(sender, "shared.txt", "shared");
    const stays = await post(sender, channel, "files", `[shared.txt](/user_uploads/${shared})`);
    const goes = await post(sender, channel, "files", `[shared.txt](/user_uploads/${shared}) and more`);
    assertSuccess(await del(sender, goes));
    const paths = (assertSuccess(await t.api(sender, "GET", "/attachments")).attachments as any[]).map((a) => a.path_id);
    assert.ok(paths.includes(unlinked));
    assert.ok(paths.includes(shared));
    assert.equal(await exists(stays), true);
  });
});

async function uploadFile(user: TestUser, name: string, content: string): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/plain" }), name);
  const response = await fetch(`${t.url}/api/v1/user_uploads`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as any;
  assert.equal(body.result, "success", JSON.stringify(body));
  return (body.url as string).slice("/user_uploads/".length);
}

async function fetchFile(user: TestUser, pathId: string): Promise<{ status: number }> {
  const response = await fetch(`${t.url}/user_uploads/${pathId}`, { headers: { authorization: basicAuth(user.email, user.apiKey) } });
  await response.arrayBuffer();
  return { status: response.status };
}

// ---------------------------------------------------------------------------

describe("delete_message events", () => {
  let sender: TestUser;
  let subscriber: TestUser;
  let outsider: TestUser;
  let channel: Channel;

  before(async () => {
    sender = await newUser("Event Sender");
    subscriber = await newUser("Event Subscriber");
    outsider = await newUser("Event Outsider");
    channel = await newChannel(sender, [subscriber]);
  });

  test("each client's form: one bulk event with message_ids, or one event per message with message_id", async () => {
    const bulk = await register(subscriber, { bulk_message_deletion: true });
    const legacy = await register(subscriber, {});
    const id = await post(sender, channel, "Event Topic");
    assertSuccess(await del(sender, id));
    assert.deepEqual(await queued(subscriber, bulk, "delete_message"), [
      { type: "delete_message", message_ids: [id], message_type: "stream", stream_id: channel.id, topic: "event topic" },
    ]);
    assert.deepEqual(await queued(subscriber, legacy, "delete_message"), [
      { type: "delete_message", message_id: id, message_type: "stream", stream_id: channel.id, topic: "event topic" },
    ]);
  });

  test("the topic is lowercased, as Zulip groups deletions by topic case-insensitively", async () => {
    t.clearEvents();
    const id = await post(sender, channel, "MiXeD Case");
    assertSuccess(await del(sender, id));
    assert.deepEqual(
      deleteNotifications().map((n) => n.event.topic),
      ["mixed case", "mixed case"],
    );
  });

  test("direct messages: message_type private, no channel or topic; only the participants hear of it", async () => {
    const other = await newUser("Event DM Partner");
    const third = await newUser("Event DM Third");
    const bulk = await register(other, { bulk_message_deletion: true });
    const legacy = await register(third, {});
    const outsiderQueue = await register(outsider, { bulk_message_deletion: true });
    const id = await dm(sender, [other, third]);
    t.clearEvents();
    assertSuccess(await del(sender, id));
    assert.deepEqual(await queued(other, bulk, "delete_message"), [{ type: "delete_message", message_ids: [id], message_type: "private" }]);
    assert.deepEqual(await queued(third, legacy, "delete_message"), [{ type: "delete_message", message_id: id, message_type: "private" }]);
    assert.deepEqual(await queued(outsider, outsiderQueue, "delete_message"), []);
    const notifications = deleteNotifications();
    assert.equal(notifications.length, 2);
    for (const n of notifications) assert.deepEqual(n.userIds, [sender.id, other.id, third.id].sort((a, b) => a - b));
  });

  test("a public channel: its subscribers and the deleting user, not other users", async () => {
    const id = await post(sender, channel, "audience");
    const outsiderQueue = await register(outsider, { bulk_message_deletion: true });
    const adminQueue = await register(u().admin, { bulk_message_deletion: true });
    t.clearEvents();
    // The administrator is not subscribed, but deleted it: their client hears of it.
    assertSuccess(await del(u().admin, id));
    const notifications = deleteNotifications();
    assert.deepEqual(
      notifications.map((n) => [n.userIds, n.capability]),
      [
        [[sender.id, subscriber.id, u().admin.id].sort((a, b) => a - b), { name: "bulk_message_deletion", present: true }],
        [[sender.id, subscriber.id, u().admin.id].sort((a, b) => a - b), { name: "bulk_message_deletion", present: false }],
      ],
    );
    assert.equal((await queued(u().admin, adminQueue, "delete_message")).length, 1);
    assert.deepEqual(await queued(outsider, outsiderQueue, "delete_message"), []);
  });

  test("a protected-history private channel: subscribers who received it, not those who joined later", async () => {
    const early = await newUser("Protected Early");
    const closed = await newChannel(sender, [early], { invite_only: true, history_public_to_subscribers: false });
    const id = await post(sender, closed, "protected");
    const late = await newUser("Protected Late");
    await subscribe(sender, closed, [late]);
    const lateQueue = await register(late, { bulk_message_deletion: true });
    const earlyQueue = await register(early, { bulk_message_deletion: true });
    t.clearEvents();
    assertSuccess(await del(sender, id));
    for (const n of deleteNotifications()) assert.deepEqual(n.userIds, [sender.id, early.id].sort((a, b) => a - b));
    assert.equal((await queued(early, earlyQueue, "delete_message")).length, 1);
    assert.deepEqual(await queued(late, lateQueue, "delete_message"), []);
  });

  test("a private channel with shared history: every subscriber, late ones too; former subscribers not", async () => {
    const early = await newUser("Shared Early");
    const leaver = await newUser("Shared Leaver");
    const closed = await newChannel(sender, [early, leaver], { invite_only: true, history_public_to_subscribers: true });
    const id = await post(sender, closed, "shared");
    const late = await newUser("Shared Late");
    await subscribe(sender, closed, [late]);
    await unsubscribe(leaver, closed, [leaver]);
    t.clearEvents();
    assertSuccess(await del(sender, id));
    for (const n of deleteNotifications()) assert.deepEqual(n.userIds, [sender.id, early.id, late.id].sort((a, b) => a - b));
  });

  test("the empty topic: clients without empty_topic_name get the organization's display name", async () => {
    const queues = {
      bulkNamed: await register(subscriber, { bulk_message_deletion: true, empty_topic_name: true }),
      bulkLegacy: await register(subscriber, { bulk_message_deletion: true }),
      singleNamed: await register(subscriber, { empty_topic_name: true }),
      singleLegacy: await register(subscriber, {}),
    };
    const id = await post(sender, channel, "");
    assertSuccess(await del(sender, id));
    const where = { message_type: "stream", stream_id: channel.id };
    assert.deepEqual(await queued(subscriber, queues.bulkNamed, "delete_message"), [{ type: "delete_message", message_ids: [id], ...where, topic: "" }]);
    assert.deepEqual(await queued(subscriber, queues.bulkLegacy, "delete_message"), [{ type: "delete_message", message_ids: [id], ...where, topic: "general chat" }]);
    assert.deepEqual(await queued(subscriber, queues.singleNamed, "delete_message"), [{ type: "delete_message", message_id: id, ...where, topic: "" }]);
    assert.deepEqual(await queued(subscriber, queues.singleLegacy, "delete_message"), [{ type: "delete_message", message_id: id, ...where, topic: "general chat" }]);
  });

  test("events go out only after the commit, and none for a refused delete", async () => {
    const id = await post(sender, channel, "refused");
    t.clearEvents();
    assertError(await del(subscriber, id), 400, "BAD_REQUEST", NO_PERMISSION);
    assert.deepEqual(t.events, []);
  });

  test("the first_message_id update comes before the delete_message event, to the same people", async () => {
    const fresh = await newChannel(sender, [subscriber]);
    const id = await post(sender, fresh, "only");
    const queue = await register(subscriber, { bulk_message_deletion: true }, ["stream", "delete_message"]);
    t.clearEvents();
    assertSuccess(await del(sender, id));
    assert.deepEqual(
      (await t.queuedEvents(subscriber, queue)).map((e) => `${e.type}/${e.op ?? ""}`),
      ["stream/update", "delete_message/"],
    );
    const [streamUpdate, deletion] = t.events;
    assert.deepEqual(streamUpdate!.userIds, deletion!.userIds);
  });
});

// ---------------------------------------------------------------------------

describe("deleteMessages with several messages (for callers such as delete-topic)", () => {
  let sender: TestUser;
  let reader: TestUser;
  let channel: Channel;

  before(async () => {
    sender = await newUser("Bulk Sender");
    reader = await newUser("Bulk Reader");
    channel = await newChannel(sender, [reader]);
  });

  const senderRow = () => userRow(sender);

  test("one event per conversation (direct messages first, then channel topics), IDs sorted; one transaction", async () => {
    const b2 = await post(sender, channel, "Topic B");
    const a1 = await post(sender, channel, "topic a");
    const b1 = await post(sender, channel, "topic b");
    const d1 = await dm(sender, [reader]);
    const a2 = await post(sender, channel, "Topic A");
    const queue = await register(reader, { bulk_message_deletion: true });
    t.clearEvents();
    await deleteMessages(t.services, t.realm, await senderRow(), [b2, a1, b1, d1, a2]);
    for (const id of [a1, a2, b1, b2, d1]) assert.equal(await exists(id), false);
    assert.deepEqual(await queued(reader, queue, "delete_message"), [
      { type: "delete_message", message_ids: [d1], message_type: "private" },
      { type: "delete_message", message_ids: [a1, a2], message_type: "stream", stream_id: channel.id, topic: "topic a" },
      { type: "delete_message", message_ids: [b2, b1].sort((x, y) => x - y), message_type: "stream", stream_id: channel.id, topic: "topic b" },
    ]);
  });

  test("one message that may not be deleted stops them all: nothing is deleted, nothing is announced", async () => {
    const mine = await post(sender, channel, "all or nothing");
    const theirs = await post(reader, channel, "all or nothing");
    t.clearEvents();
    await assert.rejects(deleteMessages(t.services, t.realm, await senderRow(), [mine, theirs]), (e: any) => e.message === NO_PERMISSION);
    assert.equal(await exists(mine), true);
    assert.equal(await exists(theirs), true);
    assert.deepEqual(t.events, []);
  });

  test("caller-checked: no permission checks, vanished IDs skipped; none left is Message already deleted", async () => {
    const theirs = await post(reader, channel, "server side");
    await deleteMessages(t.services, t.realm, null, [theirs, 987654321], { permission: "caller-checked" });
    assert.equal(await exists(theirs), false);
    await assert.rejects(deleteMessages(t.services, t.realm, null, [theirs], { permission: "caller-checked" }), (e: any) => e.message === "Message already deleted");
  });

  test("caller-checked with an acting user who cannot read the messages: they get no event", async () => {
    const other = await newUser("Bulk Other");
    const id = await dm(reader, [other]);
    t.clearEvents();
    await deleteMessages(t.services, t.realm, await userRow(u().admin), [id], { permission: "caller-checked" });
    assert.equal(await exists(id), false);
    for (const n of deleteNotifications()) assert.deepEqual(n.userIds, [reader.id, other.id].sort((a, b) => a - b));
  });
});
