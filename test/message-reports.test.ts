// Reporting messages: the organization's moderation request channel (PATCH
// /realm moderation_request_channel_id: private channels only, -1 turns
// reporting off, events and register state; archiving the channel or making
// it public), and POST /messages/{message_id}/report: Zulip's errors in its
// order, who may report what, and the Notification Bot's report with its
// exact text, topic and channel for channel messages, direct messages to
// one person, to oneself and to groups. See docs/zulip-behaviour/widgets-reports.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, sortedIds, startTestApp, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
/** The moderation request channel most tests report to: private, admin and moderator subscribed. */
let moderation: Channel;

before(async () => {
  t = await startTestApp();
  moderation = await newChannel(t.users.admin, [t.users.moderator], { invite_only: true });
  assertSuccess(await patchRealm(t.users.admin, { moderation_request_channel_id: moderation.id }));
});
after(() => t?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const u = () => t.users;
const db = () => t.services.storage.db;
const REALM_URL = "http://parley.test";

let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  return t.createUser(unique(prefix), role);
}

interface Channel {
  id: number;
  name: string;
}

async function newChannel(creator: TestUser, others: TestUser[] = [], options: Params = {}): Promise<Channel> {
  const name = unique("reports");
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...others.map((o) => o.id)],
      send_new_subscription_messages: false,
      ...options,
    }),
  );
  const row = await db().selectFrom("channels").select("id").where("realm_id", "=", t.realm.id).where("name", "=", name).executeTakeFirstOrThrow();
  return { id: row.id, name };
}

const patchRealm = (user: TestUser, params: Params): Promise<ApiResponse> => t.api(user, "PATCH", "/realm", params);

async function send(sender: TestUser, channel: Channel, content: string, topic = "civilized discussions"): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.id, topic, content })).id as number;
}

async function sendDm(sender: TestUser, to: TestUser[], content: string): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: to.map((x) => x.id), content })).id as number;
}

const report = (user: TestUser, messageId: number | string, params: Params): Promise<ApiResponse> => t.api(user, "POST", `/messages/${messageId}/report`, params);

async function person(user: TestUser): Promise<{ id: number; name: string; mention: string }> {
  const row = await db().selectFrom("users").select(["id", "full_name"]).where("id", "=", user.id).executeTakeFirstOrThrow();
  return { id: row.id, name: row.full_name, mention: `@_**${row.full_name}|${row.id}**` };
}

/** `<time:…>` of a message's send time, as Zulip's datetime_to_global_time writes it. */
async function sentAt(messageId: number): Promise<string> {
  const row = await db().selectFrom("messages").select("date_sent").where("id", "=", messageId).executeTakeFirstOrThrow();
  return `<time:${new Date(Number(row.date_sent) * 1000).toISOString().slice(0, 19)}+00:00>`;
}

async function notificationBotId(): Promise<number> {
  return (await db().selectFrom("users").select("id").where("realm_id", "=", t.realm.id).where("email_key", "=", "notification-bot@zulip.com").executeTakeFirstOrThrow()).id;
}

/** The newest message in the moderation channel (or `channel`), as the admin fetches it, with its raw content. */
async function latestReport(channel: Channel = moderation): Promise<Json> {
  const page = assertSuccess(await t.api(u().admin, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, apply_markdown: false, narrow: [{ operator: "channel", operand: channel.id }] }));
  return page.messages[0];
}

async function reportCount(channel: Channel = moderation): Promise<number> {
  const row = await db().selectFrom("messages").select(db().fn.countAll<number>().as("n")).where("channel_id", "=", channel.id).executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Runs `action` with reporting switched off, switching it back on after. */
async function withReportingOff(action: () => Promise<void>): Promise<void> {
  assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: -1 }));
  try {
    await action();
  } finally {
    assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: moderation.id }));
  }
}

async function realmState(user: TestUser = u().member): Promise<Json> {
  return t.register(user, { fetch_event_types: ["realm"], event_types: ["realm"] });
}

// ---------------------------------------------------------------------------

describe("the moderation request channel (PATCH /realm)", () => {
  test("a private channel sets it: reply, realm update event to everyone, register state; again changes nothing; -1 turns it off", async () => {
    const channel = await newChannel(u().member, [], { invite_only: true });
    const q = (await realmState(u().guest)).queue_id as string;
    // The administrator need not be subscribed.
    const reply = await patchRealm(u().admin, { moderation_request_channel_id: channel.id });
    assert.deepEqual(reply.body, { result: "success", msg: "", moderation_request_channel_id: channel.id });
    assert.equal((await realmState()).realm_moderation_request_channel_id, channel.id);
    t.clearEvents();
    assert.deepEqual(assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: channel.id })), { result: "success", msg: "" });
    assert.equal(t.events.length, 0);
    assert.deepEqual(assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: -1 })), { result: "success", msg: "", moderation_request_channel_id: -1 });
    assert.equal((await realmState()).realm_moderation_request_channel_id, -1);
    assert.deepEqual(await t.queuedEvents(u().guest, q), [
      { type: "realm", op: "update", property: "moderation_request_channel_id", value: channel.id, id: 0 },
      { type: "realm", op: "update", property: "moderation_request_channel_id", value: -1, id: 1 },
    ]);
    const notified = t.events.find((n) => n.event.type === "realm")!;
    assert.deepEqual(sortedIds(notified.userIds), await t.activeUserIds());
    assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: moderation.id }));
  });

  test("refused: public channels, unknown and archived channels, bad JSON, non-administrators", async () => {
    const publicChannel = await newChannel(u().admin);
    const archived = await newChannel(u().admin, [], { invite_only: true });
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${archived.id}`));
    t.clearEvents();
    assertError(await patchRealm(u().admin, { moderation_request_channel_id: publicChannel.id }), 400, "BAD_REQUEST", "Moderation request channel must be private.");
    assertError(await patchRealm(u().admin, { moderation_request_channel_id: 999999 }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await patchRealm(u().admin, { moderation_request_channel_id: archived.id }), 400, "BAD_REQUEST", "Invalid channel ID");
    assertError(await patchRealm(u().admin, { moderation_request_channel_id: "abc" }), 400, "BAD_REQUEST", 'Argument "moderation_request_channel_id" is not valid JSON.');
    assertError(await patchRealm(u().admin, { moderation_request_channel_id: "1.5" }), 400, "BAD_REQUEST", "moderation_request_channel_id is not an integer");
    for (const user of [u().moderator, u().member, u().guest]) {
      assertError(await patchRealm(user, { moderation_request_channel_id: -1 }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.equal(t.events.length, 0);
    assert.equal((await realmState()).realm_moderation_request_channel_id, moderation.id);
  });

  test("the channel cannot be made public; other private channels can", async () => {
    assertError(await t.api(u().admin, "PATCH", `/streams/${moderation.id}`, { is_private: false }), 400, "BAD_REQUEST", "Moderation request channel must be private.");
    const channel = await db().selectFrom("channels").select("invite_only").where("id", "=", moderation.id).executeTakeFirstOrThrow();
    assert.equal(channel.invite_only, true);
    const other = await newChannel(u().admin, [], { invite_only: true });
    assertSuccess(await t.api(u().admin, "PATCH", `/streams/${other.id}`, { is_private: false }));
  });

  test("archiving the channel turns reporting off, with one update_dict event for every setting that named it", async () => {
    const channel = await newChannel(u().admin, [], { invite_only: true });
    assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: channel.id, signup_announcements_stream_id: channel.id }));
    const id = await send(u().member, await newChannel(u().member), "archive the channel");
    const q = (await realmState()).queue_id as string;
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${channel.id}`));
    assert.deepEqual(await t.queuedEvents(u().member, q), [
      { type: "realm", op: "update_dict", property: "default", data: { signup_announcements_stream_id: -1, moderation_request_channel_id: -1 }, id: 0 },
    ]);
    const state = await realmState();
    assert.equal(state.realm_moderation_request_channel_id, -1);
    assert.equal(state.realm_signup_announcements_stream_id, -1);
    assertError(await report(u().member, id, { report_type: "spam" }), 400, "BAD_REQUEST", "Message reporting is not enabled in this organization.");
    // Archiving a channel no setting names sends no realm event.
    const unrelated = await newChannel(u().admin);
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${unrelated.id}`));
    assert.deepEqual(
      t.events.filter((n) => n.event.type === "realm"),
      [],
    );
    assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: moderation.id }));
  });
});

describe("POST /messages/{message_id}/report: the report", () => {
  test("a channel message: the Notification Bot posts Zulip's text to the moderation channel, in the reported person's topic", async () => {
    const reporter = await newUser("Hamlet");
    const reported = await newUser("Othello");
    const denmark = await newChannel(reported, [reporter]);
    const id = await send(reported, denmark, "I squeeze toothpaste from the middle");
    const before = await reportCount();
    t.clearEvents();
    const reply = await report(reporter, id, { report_type: "harassment", description: "this is crime against food" });
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    assert.equal(await reportCount(), before + 1);
    const r = await person(reporter);
    const o = await person(reported);
    const message = await latestReport();
    assert.equal(message.sender_id, await notificationBotId());
    assert.equal(message.sender_email, "notification-bot@zulip.com");
    assert.equal(message.stream_id, moderation.id);
    assert.equal(message.subject, `${o.name} moderation`);
    assert.equal(
      message.content,
      `${r.mention} reported a message sent by ${o.mention} at ${await sentAt(id)}.\n` +
        "```quote\n**Harassment**. this is crime against food\n```\n\n" +
        `\`\`\` spoiler Original message at #**${denmark.name}>civilized discussions@${id}**\n` +
        "I squeeze toothpaste from the middle\n```",
    );
    // The link to the message renders as one.
    const rendered = assertSuccess(await t.api(u().admin, "GET", `/messages/${message.id}`)).message.content as string;
    assert.match(rendered, new RegExp(`href="[^"]*/near/${id}"`));
    // The message event goes to the moderation channel's subscribers only.
    const notes = t.events.filter((n) => n.event.type === "message");
    assert.equal(notes.length, 1);
    assert.deepEqual(sortedIds(notes[0]!.userIds), sortedIds([u().admin.id, u().moderator.id]));
    // A second report about the same person lands in the same topic.
    assertSuccess(await report(reporter, id, { report_type: "spam" }));
    const second = await latestReport();
    assert.equal(second.subject, `${o.name} moderation`);
    assert.match(second.content, /\n```quote\n\*\*Spam\*\*\. \n```\n/);
  });

  test("every report type has Zulip's name; the description is quoted as given", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "reported text");
    const names = { spam: "Spam", harassment: "Harassment", inappropriate: "Inappropriate content", norms: "Violates community norms", other: "Other reason" };
    for (const [type, name] of Object.entries(names)) {
      assertSuccess(await report(u().moderator, id, { report_type: type, description: "  why  " }));
      assert.ok((await latestReport()).content.includes(`\`\`\`quote\n**${name}**.   why  \n\`\`\``), type);
    }
    // Register lists the same types.
    const state = await t.register(u().member, { fetch_event_types: ["realm"] });
    assert.deepEqual(
      state.server_report_message_types,
      Object.entries(names).map(([key, name]) => ({ key, name })),
    );
  });

  test("direct messages: to the reporter, one's own to someone else, to oneself; an absolute link to the conversation", async () => {
    const a = await newUser("Alice");
    const b = await newUser("Bert");
    const pa = await person(a);
    const pb = await person(b);
    const ids = sortedIds([a.id, b.id]).join(",");
    const toB = await sendDm(a, [b], "I dip fries in ice cream");
    assertSuccess(await report(b, toB, { report_type: "harassment", description: "crime against food" }));
    let message = await latestReport();
    assert.equal(message.subject, `${pa.name} moderation`);
    assert.equal(
      message.content,
      `${pb.mention} reported a direct message sent by ${pa.mention} at ${await sentAt(toB)}.\n` +
        "```quote\n**Harassment**. crime against food\n```\n\n" +
        `\`\`\` spoiler [Original message](${REALM_URL}/#narrow/dm/${ids}/near/${toB})\n` +
        "I dip fries in ice cream\n```",
    );
    // Reporting one's own message names the other person.
    assertSuccess(await report(a, toB, { report_type: "norms", description: "just testing" }));
    message = await latestReport();
    assert.ok(message.content.startsWith(`${pa.mention} reported a direct message sent by ${pa.mention} to ${pb.mention} at ${await sentAt(toB)}.\n`), message.content);
    // A message to oneself.
    const self = await sendDm(a, [a], "Hi, me!");
    assertSuccess(await report(a, self, { report_type: "other", description: "just testing" }));
    message = await latestReport();
    assert.equal(
      message.content,
      `${pa.mention} reported a direct message sent by ${pa.mention} to ${pa.mention} at ${await sentAt(self)}.\n` +
        "```quote\n**Other reason**. just testing\n```\n\n" +
        `\`\`\` spoiler [Original message](${REALM_URL}/#narrow/dm/${a.id}/near/${self})\n` +
        "Hi, me!\n```",
    );
    // Someone outside the conversation cannot report it.
    assertError(await report(u().member, toB, { report_type: "spam" }), 400, "BAD_REQUEST", "Invalid message(s)");
  });

  test("group direct messages: the other participants sorted, the last after 'and'", async () => {
    const sender = await newUser("Sender");
    const zoe = await t.createUser(unique("Zoe"));
    const iago = await t.createUser(unique("Iago"));
    const hamlet = await t.createUser(unique("Hamlet"));
    const [ps, pz, pi, ph] = [await person(sender), await person(zoe), await person(iago), await person(hamlet)];
    const three = await sendDm(sender, [hamlet, iago], "I eat cereal with water");
    assertSuccess(await report(hamlet, three, { report_type: "harassment", description: "Call the police please" }));
    let message = await latestReport();
    assert.equal(
      message.content,
      `${ph.mention} reported a direct message sent by ${ps.mention} to ${ph.mention} and ${pi.mention} at ${await sentAt(three)}.\n` +
        "```quote\n**Harassment**. Call the police please\n```\n\n" +
        `\`\`\` spoiler [Original message](${REALM_URL}/#narrow/dm/${sortedIds([sender.id, hamlet.id, iago.id]).join(",")}-group/near/${three})\n` +
        "I eat cereal with water\n```",
    );
    const four = await sendDm(sender, [zoe, hamlet, iago], "Cereal, again");
    assertSuccess(await report(zoe, four, { report_type: "spam" }));
    message = await latestReport();
    assert.ok(message.content.startsWith(`${pz.mention} reported a direct message sent by ${ps.mention} to ${ph.mention}, ${pi.mention}, and ${pz.mention} at ${await sentAt(four)}.\n`), message.content);
    assert.equal(message.subject, `${ps.name} moderation`);
  });

  test("long messages are cut to leave room for the description; fences inside the message are outrun", async () => {
    const channel = await newChannel(u().member);
    const long = ".".repeat(8501);
    const id = await send(u().member, channel, long);
    assertSuccess(await report(u().moderator, id, { report_type: "spam" }));
    const content = (await latestReport()).content as string;
    assert.ok(!content.includes(long));
    assert.ok(content.endsWith(`\n${".".repeat(8500 - 20)}\n[message truncated]\n\`\`\``), content.slice(-60));
    // 8500 characters fit whole.
    const fits = await send(u().member, channel, ".".repeat(8500));
    assertSuccess(await report(u().moderator, fits, { report_type: "spam" }));
    assert.ok((await latestReport()).content.endsWith(`\n${".".repeat(8500)}\n\`\`\``));
    const fenced = await send(u().member, channel, "look:\n````python\nprint(1)\n````");
    assertSuccess(await report(u().moderator, fenced, { report_type: "spam" }));
    assert.ok((await latestReport()).content.endsWith("\n````` spoiler Original message at " + `#**${channel.name}>civilized discussions@${fenced}**\nlook:\n\`\`\`\`python\nprint(1)\n\`\`\`\`\n\`\`\`\`\``));
  });

  test("a moderation channel that allows only the empty topic gets the report there", async () => {
    const channel = await newChannel(u().admin, [], { invite_only: true });
    assertSuccess(await t.api(u().admin, "PATCH", `/streams/${channel.id}`, { topics_policy: "empty_topic_only" }));
    assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: channel.id }));
    try {
      const id = await send(u().member, await newChannel(u().member), "to the empty topic");
      assertSuccess(await report(u().member, id, { report_type: "spam" }));
      const page = assertSuccess(await t.api(u().admin, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, allow_empty_topic_name: true, narrow: [{ operator: "channel", operand: channel.id }] }));
      assert.equal(page.messages[0].subject, "");
      assert.ok(page.messages[0].content.includes("reported a message sent by"));
    } finally {
      assertSuccess(await patchRealm(u().admin, { moderation_request_channel_id: moderation.id }));
    }
  });
});

describe("POST /messages/{message_id}/report: who may report what", () => {
  test("public channels without subscribing, private channels only with access, archived channels, one's own messages", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "public words");
    const reader = await newUser("Reader");
    assertSuccess(await report(reader, id, { report_type: "spam" }));
    assertSuccess(await report(u().member, id, { report_type: "spam" }));
    const secret = await newChannel(u().member, [u().moderator], { invite_only: true });
    const secretId = await send(u().member, secret, "secret words");
    assertError(await report(reader, secretId, { report_type: "spam" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertError(await report(u().admin, secretId, { report_type: "spam" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertSuccess(await report(u().moderator, secretId, { report_type: "spam" }));
    const archived = await newChannel(u().admin, [u().member]);
    const archivedId = await send(u().member, archived, "archived words");
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${archived.id}`));
    assertSuccess(await report(u().member, archivedId, { report_type: "spam" }));
    assert.ok((await latestReport()).content.includes("archived words"));
  });

  test("guests report what they can read; bots report too", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "guest-visible?");
    assertError(await report(u().guest, id, { report_type: "spam" }), 400, "BAD_REQUEST", "Invalid message(s)");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel.name }], principals: [u().guest.id, u().bot.id] }));
    assertSuccess(await report(u().guest, id, { report_type: "inappropriate" }));
    const g = await person(u().guest);
    assert.ok((await latestReport()).content.startsWith(`${g.mention} reported a message sent by`));
    assertSuccess(await report(u().bot, id, { report_type: "spam" }));
    const b = await person(u().bot);
    assert.ok((await latestReport()).content.startsWith(`${b.mention} reported a message sent by`));
  });

  test("Zulip's errors, in its order, and nothing posted", async () => {
    const channel = await newChannel(u().member);
    const id = await send(u().member, channel, "error cases");
    const before = await reportCount();
    const bad = async (params: Params, msg: string, messageId: number | string = id) => assertError(await report(u().member, messageId, params), 400, "BAD_REQUEST", msg);
    assertError(await report(u().member, id, {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'report_type' argument", { var_name: "report_type" });
    await bad({ report_type: "rude" }, "Invalid report_type: Value error, Not in the list of possible values");
    await bad({ report_type: "Spam" }, "Invalid report_type: Value error, Not in the list of possible values");
    await bad({ report_type: "spam", description: "x".repeat(1001) }, "description is too long (limit: 1000 characters)");
    await bad({ report_type: "other" }, "An explanation is required.");
    await bad({ report_type: "other", description: "" }, "An explanation is required.");
    await bad({ report_type: "spam" }, "message_id is not an integer", "abc");
    await bad({ report_type: "spam" }, "Invalid message(s)", 999999999);
    await bad({ report_type: "spam" }, "Invalid message(s)", 99999999999999);
    await withReportingOff(async () => {
      await bad({ report_type: "spam" }, "Message reporting is not enabled in this organization.");
      // Checked before the message is looked at, after the explanation.
      await bad({ report_type: "spam" }, "Message reporting is not enabled in this organization.", 999999999);
      await bad({ report_type: "other" }, "An explanation is required.");
    });
    assertError(await t.api(null, "POST", `/messages/${id}/report`, { report_type: "spam" }), 401, "UNAUTHORIZED");
    assert.equal(await reportCount(), before);
    // A description of exactly 1000 characters is fine.
    assertSuccess(await report(u().member, id, { report_type: "other", description: "y".repeat(1000) }));
    assert.equal(await reportCount(), before + 1);
  });
});
