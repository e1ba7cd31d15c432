// `parley import zulip`: a small but complete Zulip export tarball, written
// here with tar-stream in the layout of Zulip's zerver/lib/export.py, imported
// into a fresh database; the organization is then checked through the API.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { test, type TestContext } from "node:test";
import { createGzip } from "node:zlib";
import tar from "tar-stream";
import { RealmExistsError } from "../src/actions/realm.ts";
import { ImportFormatError } from "../src/import/tarball.ts";
import { importZulip } from "../src/import/zulip.ts";
import { getDefaultRealm } from "../src/queries/users.ts";
import { closeServices, startServer } from "../src/server.ts";
import { basicAuth, emptyServices, getAs, storedKeys } from "./helpers.ts";

const TOP = "zulip-export-q1w2e3";
const NOTES = "These are the meeting notes.\n";
const PARROT = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");

const AVATAR = Buffer.from("89504e470d0a1a0a00000000avatar", "utf8");

type Row = Record<string, unknown>;

function realmJson(): Record<string, Row[]> {
  const user = (id: number, email: string, full_name: string, role: number, extra: Row = {}): Row => ({
    id,
    realm: 7,
    email,
    delivery_email: email,
    full_name,
    role,
    is_active: true,
    is_bot: false,
    bot_type: null,
    bot_owner: null,
    api_key: "zulip-key-not-carried",
    password: "argon2$argon2id$v=19$m=102400,t=2,p=8$c2FsdA$aGFzaA",
    timezone: "Europe/Berlin",
    date_joined: 1600000000.25,
    enter_sends: false,
    twenty_four_hour_time: false,
    ...extra,
  });
  return {
    zerver_realm: [
      {
        id: 7,
        string_id: "zteam",
        name: "Zulip Team",
        description: "Where the **team** talks",
        date_created: 1590000000.5,
        waiting_period_threshold: 3,
        message_content_edit_limit_seconds: 900,
        default_language: "de",
        inline_image_preview: false,
        new_stream_announcements_stream: 30,
      },
    ],
    zerver_userprofile: [
      user(20, "iago@zulip.example", "Iago", 100, { twenty_four_hour_time: true }),
      user(21, "hamlet@zulip.example", "King Hamlet", 400, { enter_sends: true }),
      user(22, "othello@zulip.example", "Othello", 600),
      user(23, "cordelia@zulip.example", "Cordelia", 400, { is_active: false }),
      user(24, "welcome-bot@zulip.com", "Welcome Bot", 400, { is_bot: true, bot_type: 1 }),
      user(25, "helper-bot@zulip.example", "Helper Bot", 400, { is_bot: true, bot_type: 1, bot_owner: 21 }),
    ],
    zerver_userprofile_crossrealm: [{ id: 5, email: "notification-bot@zulip.com" }, { id: 6, email: "emailgateway@zulip.com" }],
    zerver_userprofile_mirrordummy: [user(26, "irc-user@zulip.example", "IRC User", 400, { is_active: false })],
    zerver_stream: [
      { id: 30, realm: 7, name: "Denmark", description: "A **royal** channel", invite_only: false, is_web_public: false, history_public_to_subscribers: true, date_created: 1590000001, deactivated: false, creator: 20, recipient: 40, message_retention_days: null },
      { id: 31, realm: 7, name: "Secret", description: "", invite_only: true, is_web_public: false, history_public_to_subscribers: false, date_created: 1590000002, deactivated: false, creator: 20, recipient: 41, message_retention_days: 30 },
    ],
    zerver_recipient: [
      { id: 40, type: 2, type_id: 30 },
      { id: 41, type: 2, type_id: 31 },
      { id: 42, type: 1, type_id: 20 },
      { id: 43, type: 1, type_id: 21 },
      { id: 44, type: 1, type_id: 22 },
      { id: 45, type: 3, type_id: 50 },
    ],
    zerver_huddle: [{ id: 50, huddle_hash: "0123456789abcdef", recipient: 45 }],
    zerver_subscription: [
      { id: 1, user_profile: 20, recipient: 40, active: true, color: "#76ce90", is_muted: false, pin_to_top: true, desktop_notifications: true, audible_notifications: null, push_notifications: null, email_notifications: false, wildcard_mentions_notify: null },
      { id: 2, user_profile: 21, recipient: 40, active: true, color: "#e79ab5", is_muted: true, pin_to_top: false },
      { id: 3, user_profile: 22, recipient: 40, active: true, color: "#a6c7e5", is_muted: false, pin_to_top: false },
      { id: 4, user_profile: 20, recipient: 41, active: true, color: "#f5ce6e", is_muted: false, pin_to_top: false },
      { id: 5, user_profile: 21, recipient: 41, active: true, color: "#f5ce6e", is_muted: false, pin_to_top: false },
      { id: 6, user_profile: 20, recipient: 42, active: true, color: "#c2c2c2" },
      { id: 7, user_profile: 21, recipient: 43, active: true, color: "#c2c2c2" },
      { id: 8, user_profile: 22, recipient: 44, active: true, color: "#c2c2c2" },
      { id: 9, user_profile: 20, recipient: 45, active: true, color: "#c2c2c2" },
      { id: 10, user_profile: 21, recipient: 45, active: true, color: "#c2c2c2" },
      { id: 11, user_profile: 22, recipient: 45, active: true, color: "#c2c2c2" },
    ],
    zerver_defaultstream: [{ id: 1, realm: 7, stream: 30 }],
    zerver_usergroup: [{ id: 60 }, { id: 61 }, { id: 62 }],
    zerver_namedusergroup: [
      { usergroup_ptr: 60, name: "role:owners", description: "Owners", is_system_group: true, realm_for_sharding: 7 },
      { usergroup_ptr: 61, name: "role:members", description: "Members", is_system_group: true, realm_for_sharding: 7 },
      { usergroup_ptr: 62, name: "support", description: "The support team", is_system_group: false, realm_for_sharding: 7, creator: 20, date_created: 1590000003, deactivated: false },
    ],
    zerver_usergroupmembership: [
      { id: 1, user_group: 60, user_profile: 20 },
      { id: 2, user_group: 62, user_profile: 20 },
      { id: 3, user_group: 62, user_profile: 21 },
    ],
    zerver_groupgroupmembership: [],
    zerver_reaction: [
      { id: 1, message: 1001, user_profile: 20, emoji_name: "+1", emoji_code: "1f44d", reaction_type: "unicode_emoji" },
      { id: 2, message: 1002, user_profile: 21, emoji_name: "parrot", emoji_code: "70", reaction_type: "realm_emoji" },
    ],
    zerver_usertopic: [{ id: 1, user_profile: 21, stream: 30, recipient: 40, topic_name: "greetings", last_updated: 1600000500, visibility_policy: 1 }],
    zerver_customprofilefield: [
      { id: 90, realm: 7, name: "Team", hint: "Which team", field_type: 1, field_data: "", order: 1, display_in_profile_summary: true, required: false, editable_by_user: true },
      { id: 91, realm: 7, name: "Mentor", hint: "", field_type: 6, field_data: "", order: 2, display_in_profile_summary: false, required: false, editable_by_user: true },
    ],
    zerver_customprofilefieldvalue: [
      { id: 1, user_profile: 21, field: 90, value: "**Support**", rendered_value: "<p>untrusted</p>" },
      { id: 2, user_profile: 21, field: 91, value: "[20]", rendered_value: null },
    ],
    zerver_realmemoji: [{ id: 70, realm: 7, name: "parrot", file_name: "parrot.png", author: 20, deactivated: false }],
  };
}

const CHUNK_1 = {
  zerver_message: [
    { id: 1000, sender: 5, recipient: 40, realm: 7, subject: "channel events", content: "@_**Iago|20** created a new channel #**Denmark**.", date_sent: 1600000001, sending_client: 1 },
    { id: 1001, sender: 21, recipient: 40, realm: 7, subject: "greetings", content: "Hello @**Iago**! Notes: [notes.txt](/user_uploads/7/ab/xyz/notes.txt)", rendered_content: "<p>not trusted</p>", date_sent: 1600000100.5, sending_client: 1, last_edit_time: null, edit_history: null, has_attachment: true },
    { id: 1002, sender: 20, recipient: 40, realm: 7, subject: "greetings", content: "See [this](#narrow/channel/30-Denmark/topic/greetings/near/1001) :parrot:", rendered_content: "", date_sent: 1600000200, sending_client: 1, last_edit_time: 1600000250, edit_history: '[{"timestamp":1600000250,"user_id":20,"prev_content":"See"}]' },
  ],
  zerver_usermessage: [
    { id: 14, user_profile: 20, message: 1000, flags_mask: 1 },
    { id: 1, user_profile: 20, message: 1001, flags_mask: 8 },
    { id: 2, user_profile: 21, message: 1001, flags_mask: 1 },
    { id: 3, user_profile: 22, message: 1001, flags_mask: 3 },
    { id: 4, user_profile: 20, message: 1002, flags_mask: 1 },
    { id: 5, user_profile: 21, message: 1002, flags_mask: 1 },
    { id: 6, user_profile: 22, message: 1002, flags_mask: 0 },
  ],
};

const CHUNK_2 = {
  zerver_message: [
    { id: 1003, sender: 20, recipient: 43, realm: 7, subject: "", content: "A private word", date_sent: 1600000300, sending_client: 1 },
    { id: 1004, sender: 21, recipient: 45, realm: 7, subject: "", content: "Group **plans**", date_sent: 1600000400, sending_client: 1 },
    { id: 1005, sender: 20, recipient: 41, realm: 7, subject: "plans", content: "Only for the few", date_sent: 1600000450, sending_client: 1 },
  ],
  zerver_usermessage: [
    { id: 7, user_profile: 20, message: 1003, flags_mask: 2049 },
    { id: 8, user_profile: 21, message: 1003, flags_mask: 2048 },
    { id: 9, user_profile: 20, message: 1004, flags_mask: 2048 },
    { id: 10, user_profile: 21, message: 1004, flags_mask: 2049 },
    { id: 11, user_profile: 22, message: 1004, flags_mask: 2048 },
    { id: 12, user_profile: 20, message: 1005, flags_mask: 1 },
    { id: 13, user_profile: 21, message: 1005, flags_mask: 0 },
  ],
};

/** Writes the export tarball; `change` may alter or drop files. */
async function writeExport(t: TestContext, change: (files: Map<string, string | Buffer>) => void = () => {}): Promise<string> {
  const files = new Map<string, string | Buffer>([
    ["realm.json", JSON.stringify(realmJson())],
    ["messages-000001.json", JSON.stringify(CHUNK_1)],
    ["messages-000002.json", JSON.stringify(CHUNK_2)],
    ["attachment.json", JSON.stringify({ zerver_attachment: [{ id: 80, owner: 21, file_name: "notes.txt", path_id: "7/ab/xyz/notes.txt", realm: 7, create_time: 1600000050, size: NOTES.length, messages: [1001], scheduled_messages: [], content_type: "text/plain" }] })],
    ["uploads/records.json", JSON.stringify([{ path: "7/ab/xyz/notes.txt", s3_path: "7/ab/xyz/notes.txt", realm_id: 7, user_profile_id: 21, user_profile_email: "hamlet@zulip.example", size: NOTES.length, last_modified: 1600000050, content_type: "text/plain" }])],
    ["uploads/7/ab/xyz/notes.txt", NOTES],
    ["emoji/records.json", JSON.stringify([{ id: 70, realm_id: 7, name: "parrot", file_name: "parrot.png", path: "7/emoji/images/parrot.png", s3_path: "7/emoji/images/parrot.png", author: 20, deactivated: false }])],
    ["emoji/7/emoji/images/parrot.png", PARROT],
    ["avatars/records.json", JSON.stringify(["7/0123abcd.png", "7/0123abcd-medium.png", "7/0123abcd.original"].map((p) => ({ path: p, s3_path: p, realm_id: 7, user_profile_id: 21, user_profile_email: "hamlet@zulip.example", size: AVATAR.length })))],
    ["avatars/7/0123abcd.png", AVATAR],
    ["avatars/7/0123abcd-medium.png", AVATAR],
    ["avatars/7/0123abcd.original", AVATAR],
  ]);
  change(files);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "zulip-export-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, "export.tar.gz");
  const pack = tar.pack();
  for (const [name, body] of files) pack.entry({ name: `${TOP}/${name}` }, body);
  pack.finalize();
  await pipeline(pack, createGzip(), fs.createWriteStream(file));
  return file;
}

test("a Zulip export is imported: users, channels, subscriptions, groups, messages, flags, reactions, uploads, emoji", { timeout: 120_000 }, async (t) => {
  const services = await emptyServices(t);
  const lines: string[] = [];
  await importZulip(services, await writeExport(t), (line) => lines.push(line));
  const log = lines.join("\n");
  for (const expected of ["users: 6", "channels: 2", "subscriptions: 5", "messages: 6", "user_messages: 14", "reactions: 2", "realm_emoji: 1", "attachments: 1", "user_topics: 1", "custom_profile_fields: 2", "custom_profile_field_values: 2", "avatars: 1"]) {
    assert.ok(log.includes(expected), `${expected} in\n${log}`);
  }

  const server = await startServer(services);
  t.after(() => server.close());
  const db = services.storage.db;
  const keyOf = async (email: string) => (await db.selectFrom("users").select("api_key").where("delivery_email", "=", email).executeTakeFirstOrThrow()).api_key;
  const as = (email: string) => getAs(services, server.url, email);
  const iago = await as("iago@zulip.example");
  const hamlet = await as("hamlet@zulip.example");
  const othello = await as("othello@zulip.example");

  // Users: roles, bots with their owners, deactivated users; API keys are new.
  assert.notEqual(await keyOf("iago@zulip.example"), "zulip-key-not-carried");
  const { members } = await iago("/api/v1/users");
  const byEmail = new Map<string, any>(members.map((m: any) => [m.delivery_email ?? m.email, m]));
  assert.equal(byEmail.get("iago@zulip.example").role, 100);
  assert.equal(byEmail.get("iago@zulip.example").full_name, "Iago");
  assert.equal(byEmail.get("othello@zulip.example").role, 600);
  assert.equal(byEmail.get("cordelia@zulip.example").is_active, false);
  assert.equal(byEmail.get("iago@zulip.example").timezone, "Europe/Berlin");
  const helper = byEmail.get("helper-bot@zulip.example");
  assert.equal(helper.is_bot, true);
  assert.equal(helper.bot_owner_id, byEmail.get("hamlet@zulip.example").user_id);
  const ids = { iago: byEmail.get("iago@zulip.example").user_id, hamlet: byEmail.get("hamlet@zulip.example").user_id, othello: byEmail.get("othello@zulip.example").user_id };
  // Custom profile fields, re-rendered; a person picker names the new user ID.
  const hamletProfile = (await iago(`/api/v1/users/${ids.hamlet}?include_custom_profile_fields=true`)).user.profile_data;
  const fields = (await iago("/api/v1/realm/profile_fields")).custom_fields;
  const team = fields.find((f: any) => f.name === "Team");
  const mentor = fields.find((f: any) => f.name === "Mentor");
  assert.equal(team.hint, "Which team");
  assert.deepEqual(hamletProfile[team.id], { value: "**Support**", rendered_value: "<p><strong>Support</strong></p>" });
  assert.deepEqual(hamletProfile[mentor.id], { value: JSON.stringify([ids.iago]) });
  // Hamlet's uploaded avatar.
  const avatarUrl = byEmail.get("hamlet@zulip.example").avatar_url as string;
  assert.match(avatarUrl, /\/user_avatars\//);
  const { pathname, search } = new URL(avatarUrl, "http://parley.test");
  const avatar = await fetch(`${server.url}${pathname}${search}`);
  assert.equal(avatar.status, 200);
  assert.deepEqual(Buffer.from(await avatar.arrayBuffer()), AVATAR);
  // Passwords are not carried.
  const hashes = await db.selectFrom("users").select("password_hash").where("delivery_email", "like", "%@zulip.example").execute();
  assert.ok(hashes.every((h) => h.password_hash === null));

  // Realm settings both servers have, and the personal settings.
  const state = await (await fetch(`${server.url}/api/v1/register`, { method: "POST", headers: { authorization: basicAuth("iago@zulip.example", await keyOf("iago@zulip.example")), "content-type": "application/x-www-form-urlencoded" }, body: "fetch_event_types=%5B%22realm%22%2C%22user_settings%22%2C%22user_topic%22%5D" })).json();
  assert.equal(state.result, "success", JSON.stringify(state));
  assert.equal(state.realm_name, "Zulip Team");
  assert.equal(state.realm_waiting_period_threshold, 3);
  assert.equal(state.realm_message_content_edit_limit_seconds, 900);
  assert.equal(state.realm_inline_image_preview, false);
  // Zulip's new_stream_announcements_stream (a channel's old ID) names Denmark by its new ID; the others stay unset.
  const denmarkId = (await db.selectFrom("channels").select("id").where("name", "=", "Denmark").executeTakeFirstOrThrow()).id;
  assert.equal(state.realm_new_stream_announcements_stream_id, denmarkId);
  assert.equal(state.realm_signup_announcements_stream_id, -1);
  assert.equal(state.user_settings.twenty_four_hour_time, true);
  assert.equal(state.user_settings.enter_sends, false);

  // Channels and subscriptions, with their settings.
  const { streams } = await iago("/api/v1/streams");
  const denmark = streams.find((s: any) => s.name === "Denmark");
  const secret = streams.find((s: any) => s.name === "Secret");
  assert.equal(denmark.description, "A **royal** channel");
  assert.match(denmark.rendered_description, /<strong>royal<\/strong>/);
  assert.equal(secret.invite_only, true);
  assert.equal(secret.message_retention_days, 30);
  assert.notEqual(denmark.stream_id, 30);
  const { subscriptions } = await iago("/api/v1/users/me/subscriptions");
  const denmarkSub = subscriptions.find((s: any) => s.name === "Denmark");
  assert.equal(denmarkSub.color, "#76ce90");
  assert.equal(denmarkSub.pin_to_top, true);
  assert.equal(denmarkSub.desktop_notifications, true);
  assert.equal(denmarkSub.email_notifications, false);
  assert.deepEqual(subscriptions.map((s: any) => s.name).sort(), ["Denmark", "Secret"]);
  assert.equal((await hamlet("/api/v1/users/me/subscriptions")).subscriptions.find((s: any) => s.name === "Denmark").is_muted, true);
  assert.deepEqual((await othello("/api/v1/users/me/subscriptions")).subscriptions.map((s: any) => s.name), ["Denmark"]);

  // User groups: the custom one with its members; system groups follow roles.
  const { user_groups } = await iago("/api/v1/user_groups");
  const support = user_groups.find((g: any) => g.name === "support");
  assert.deepEqual([...support.members].sort((a: number, b: number) => a - b), [ids.iago, ids.hamlet].sort((a, b) => a - b));
  assert.deepEqual(user_groups.find((g: any) => g.name === "role:owners").members, [ids.iago]);

  // Messages: re-rendered, renumbered, links rewritten, flags from Zulip's bitfield.
  const all = `/api/v1/messages?anchor=oldest&num_before=0&num_after=100&narrow=${encodeURIComponent("[]")}&apply_markdown=true`;
  const { messages } = await iago(all);
  assert.deepEqual(
    messages.map((m: any) => m.content.replace(/<[^>]+>/g, "").slice(0, 14)),
    ["Iago created a", "Hello @Iago! N", "See this ", "A private word", "Group plans", "Only for the f"],
  );
  const [created, greeting, reply, dm, groupDm, secretMessage] = messages;
  // Zulip's Notification Bot is Parley's; the silent mention names Iago's new ID.
  assert.equal(created.sender_email, "notification-bot@zulip.com");
  assert.match(created.content, new RegExp(`user-mention silent" data-user-id="${ids.iago}"`));
  assert.equal(byEmail.get("irc-user@zulip.example").is_active, false);
  assert.match(greeting.content, new RegExp(`data-user-id="${ids.iago}"`));
  assert.ok(!greeting.content.includes("not trusted"));
  assert.deepEqual(greeting.flags, ["mentioned"]);
  assert.equal(greeting.timestamp, 1600000100);
  assert.equal(greeting.subject, "greetings");
  assert.equal(greeting.stream_id, denmark.stream_id);
  assert.deepEqual(dm.flags, ["read"]);
  assert.deepEqual(dm.display_recipient.map((r: any) => r.id).sort(), [ids.iago, ids.hamlet].sort());
  assert.deepEqual(groupDm.display_recipient.map((r: any) => r.id).sort(), [ids.iago, ids.hamlet, ids.othello].sort());
  assert.equal(secretMessage.display_recipient, "Secret");
  assert.equal(reply.last_edit_timestamp, 1600000250);
  const raw = await iago(`/api/v1/messages/${reply.id}?apply_markdown=false`);
  assert.equal(raw.message.content, `See [this](#narrow/channel/${denmark.stream_id}-Denmark/topic/greetings/near/${greeting.id}) :parrot:`);
  const rawGreeting = await iago(`/api/v1/messages/${greeting.id}?apply_markdown=false`);
  const uploadPath = /\/user_uploads\/([^)]+)\)/.exec(rawGreeting.message.content)![1]!;
  assert.notEqual(uploadPath, "7/ab/xyz/notes.txt");
  assert.ok(uploadPath.endsWith("/notes.txt"));
  // Othello starred and read the greeting.
  const starred = (await othello(`/api/v1/messages?anchor=newest&num_before=10&num_after=0&narrow=${encodeURIComponent('[{"operator":"is","operand":"starred"}]')}`)).messages;
  assert.deepEqual(starred.map((m: any) => m.id), [greeting.id]);
  assert.deepEqual(starred[0].flags.sort(), ["read", "starred"]);
  // Hamlet has no access to... nothing more than he had: not the DM to Othello; unread in Secret.
  const hamletMessages = (await hamlet(all)).messages;
  assert.equal(hamletMessages.length, 5);
  assert.deepEqual(hamletMessages.find((m: any) => m.id === secretMessage.id).flags, []);
  assert.equal((await othello(all)).messages.length, 3);

  // Reactions, a custom emoji's under its new ID.
  const { emoji } = await iago("/api/v1/realm/emoji");
  const parrot = Object.values(emoji as Record<string, any>).find((e) => e.name === "parrot");
  assert.ok(parrot);
  assert.deepEqual(greeting.reactions.map((r: any) => [r.emoji_name, r.emoji_code, r.reaction_type, r.user_id]), [["+1", "1f44d", "unicode_emoji", ids.iago]]);
  assert.deepEqual(reply.reactions.map((r: any) => [r.emoji_name, r.emoji_code, r.reaction_type, r.user_id]), [["parrot", String(parrot.id), "realm_emoji", ids.hamlet]]);
  assert.match(reply.content, /<img[^>]+emoji[^>]+parrot/);
  const emojiResponse = await fetch(`${server.url}${parrot.source_url}`);
  assert.equal(emojiResponse.status, 200);
  assert.deepEqual(Buffer.from(await emojiResponse.arrayBuffer()), PARROT);

  // The upload downloads at its new path, and is listed as Hamlet's attachment on the message.
  assert.equal(await hamlet(`/user_uploads/${uploadPath}`), NOTES);
  const { attachments } = await hamlet("/api/v1/attachments");
  assert.equal(attachments.length, 1);
  assert.equal(attachments[0].name, "notes.txt");
  assert.deepEqual(attachments[0].messages.map((m: any) => m.id), [greeting.id]);

  // Hamlet's muted topic.
  const hamletState = await (await fetch(`${server.url}/api/v1/register`, { method: "POST", headers: { authorization: basicAuth("hamlet@zulip.example", await keyOf("hamlet@zulip.example")), "content-type": "application/x-www-form-urlencoded" }, body: "fetch_event_types=%5B%22user_topic%22%5D" })).json();
  assert.deepEqual(hamletState.user_topics.map((u: any) => [u.stream_id, u.topic_name, u.visibility_policy]), [[denmark.stream_id, "greetings", 1]]);

  // A second import into the same database is refused, and changes nothing.
  const before = await db.selectFrom("messages").select(db.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  await assert.rejects(importZulip(services, await writeExport(t), () => {}), RealmExistsError);
  const after = await db.selectFrom("messages").select(db.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  assert.equal(Number(after.n), Number(before.n));
  assert.equal((await db.selectFrom("realms").select("id").execute()).length, 1);
});

test("a broken export leaves the database and the file store empty, and a retry then works", { timeout: 120_000 }, async (t) => {
  const services = await emptyServices(t);
  t.after(() => closeServices(services));

  // The second chunk names a sender the export does not have: found after users, files and the first chunk are written.
  const broken = await writeExport(t, (files) => {
    const chunk = structuredClone(CHUNK_2);
    chunk.zerver_message[1]!.sender = 999;
    files.set("messages-000002.json", JSON.stringify(chunk));
  });
  await assert.rejects(importZulip(services, broken, () => {}), (error: unknown) => error instanceof ImportFormatError && /unknown sender/.test(error.message));
  assert.equal(await getDefaultRealm(services.storage.db), undefined);
  assert.equal((await services.storage.db.selectFrom("users").select("id").execute()).length, 0);
  assert.deepEqual(await storedKeys({ services }), []);

  // Not a gzip file at all.
  const garbage = path.join(path.dirname(broken), "garbage.tar.gz");
  fs.writeFileSync(garbage, "this is not a tarball");
  await assert.rejects(importZulip(services, garbage, () => {}), ImportFormatError);
  // No realm.json.
  await assert.rejects(importZulip(services, await writeExport(t, (files) => files.delete("realm.json")), () => {}), /no realm\.json/);
  assert.equal(await getDefaultRealm(services.storage.db), undefined);

  const result = await importZulip(services, await writeExport(t), () => {});
  assert.equal(result.counts.get("messages"), 6);
  assert.ok(await getDefaultRealm(services.storage.db));
  assert.equal((await storedKeys({ services })).length, 5);
});

test("zerver_directmessagegroup (Zulip's newer name for zerver_huddle); alert words, muted users, statuses, linkifiers, playgrounds, drafts and scheduled messages come in", { timeout: 120_000 }, async (t) => {
  const services = await emptyServices(t);
  const withPersonalData = (groupTable: Row[]) => (files: Map<string, string | Buffer>) => {
    const realm: Record<string, unknown> = realmJson();
    delete realm.zerver_huddle;
    realm.zerver_directmessagegroup = groupTable;
    realm.zerver_client = [{ id: 1, name: "website" }, { id: 3, name: "ZulipMobile" }];
    realm.zerver_alertword = [{ id: 1, user_profile: 21, realm: 7, word: "Elsinore" }];
    realm.zerver_muteduser = [{ id: 1, user_profile: 20, muted_user: 22, date_muted: 1600000600 }];
    realm.zerver_userstatus = [{ id: 1, user_profile: 21, status_text: "In a play", emoji_name: "parrot", emoji_code: "70", reaction_type: "realm_emoji", timestamp: 1600000700, client: 3 }];
    realm.zerver_realmfilter = [
      { id: 1, realm: 7, pattern: "#(?P<id>[0-9]+)", url_template: "https://tracker.example/{id}", order: 0 },
      { id: 2, realm: 7, pattern: "(unclosed", url_template: "https://bad.example/", order: 1 },
    ];
    realm.zerver_realmplayground = [{ id: 1, realm: 7, name: "Rust playground", pygments_language: "Rust", url_template: "https://play.rust-lang.org/?code={code}" }];
    realm.zerver_realmuserdefault = [{ id: 1, realm: 7, enter_sends: true, twenty_four_hour_time: false, email_address_visibility: 2, emojiset: "no-such-set" }];
    realm.zerver_realmauthenticationmethod = [{ id: 1, realm: 7, name: "Email" }, { id: 2, realm: 7, name: "GitHub" }];
    realm.zerver_draft = [
      { id: 1, user_profile: 20, recipient: 40, topic: "greetings", content: "half a thought", last_edit_time: 1600000800.5 },
      { id: 2, user_profile: 21, recipient: 45, topic: "", content: "to the group", last_edit_time: 1600000900 },
      { id: 3, user_profile: 21, recipient: null, topic: "", content: "to nobody yet", last_edit_time: 1600001000 },
    ];
    realm.zerver_scheduledmessage = [
      { id: 1, sender: 20, recipient: 40, subject: "plans", content: "Delivered **already**", sending_client: 3, stream: 30, realm: 7, scheduled_timestamp: 1600001100, request_timestamp: 1600001000, read_by_sender: true, delivered: true, delivered_message: 1001, failed: false, failure_message: null, delivery_type: 1, reminder_target_message_id: null, reminder_note: null },
      { id: 2, sender: 21, recipient: 44, subject: "", content: "Later, Othello", sending_client: 1, stream: null, realm: 7, scheduled_timestamp: 1900000000, request_timestamp: 1600001200, read_by_sender: true, delivered: false, delivered_message: null, failed: false, failure_message: null, delivery_type: 1, reminder_target_message_id: null, reminder_note: null },
      { id: 3, sender: 99, recipient: 40, subject: "x", content: "from nobody we know", sending_client: 1, stream: 30, realm: 7, scheduled_timestamp: 1900000000, request_timestamp: 1600001200, delivered: false, failed: false, delivery_type: 1 },
    ];
    files.set("realm.json", JSON.stringify(realm));
    const chunk = structuredClone(CHUNK_2);
    chunk.zerver_message[2]!.content = "Only for the few, see #42";
    files.set("messages-000002.json", JSON.stringify(chunk));
  };

  // A group recipient whose group the table does not have is refused, and leaves nothing behind.
  await assert.rejects(
    importZulip(services, await writeExport(t, withPersonalData([{ id: 51, huddle_hash: "fedcba", recipient: 46 }])), () => {}),
    (error: unknown) => error instanceof ImportFormatError && /unknown direct message group 50/.test(error.message),
  );
  assert.equal(await getDefaultRealm(services.storage.db), undefined);

  const lines: string[] = [];
  await importZulip(services, await writeExport(t, withPersonalData([{ id: 50, huddle_hash: "0123456789abcdef", recipient: 45, group_size: 3 }])), (line) => lines.push(line));
  const log = lines.join("\n");
  for (const expected of ["messages: 6", "alert_words: 1", "muted_users: 1", "user_statuses: 1", "linkifiers: 1", "playgrounds: 1", "drafts: 3", "scheduled_messages: 2"]) assert.ok(log.includes(expected), `${expected} in\n${log}`);
  assert.match(log, /linkifier \(unclosed left out/);

  const db = services.storage.db;
  const idOf = async (email: string) => (await db.selectFrom("users").select("id").where("delivery_email", "=", email).executeTakeFirstOrThrow()).id;
  const [iago, hamlet, othello] = [await idOf("iago@zulip.example"), await idOf("hamlet@zulip.example"), await idOf("othello@zulip.example")];
  assert.deepEqual(await db.selectFrom("alert_words").select(["user_id", "word"]).execute(), [{ user_id: hamlet, word: "Elsinore" }]);
  assert.deepEqual(await db.selectFrom("muted_users").selectAll().execute(), [{ user_id: iago, muted_user_id: othello, date_muted: 1600000600 }]);
  const parrot = await db.selectFrom("realm_emoji").select("id").where("name", "=", "parrot").executeTakeFirstOrThrow();
  const status = await db.selectFrom("user_statuses").selectAll().executeTakeFirstOrThrow();
  assert.deepEqual(
    [status.user_id, status.status_text, status.emoji_name, status.emoji_code, status.reaction_type, status.timestamp, status.client],
    [hamlet, "In a play", "parrot", String(parrot.id), "realm_emoji", 1600000700, "ZulipMobile"],
  );
  assert.deepEqual(await db.selectFrom("realm_linkifiers").select(["pattern", "url_template"]).execute(), [{ pattern: "#(?P<id>[0-9]+)", url_template: "https://tracker.example/{id}" }]);
  assert.deepEqual(await db.selectFrom("realm_playgrounds").select(["name", "pygments_language", "url_template"]).execute(), [
    { name: "Rust playground", pygments_language: "Rust", url_template: "https://play.rust-lang.org/?code={code}" },
  ]);
  // The linkifier was there when the messages were rendered.
  const linked = await db.selectFrom("messages").select("rendered_content").where("content", "=", "Only for the few, see #42").executeTakeFirstOrThrow();
  assert.match(linked.rendered_content, /href="https:\/\/tracker\.example\/42"/);

  // New users' defaults (an unknown emoji set keeps Parley's), and the login methods Parley has of those listed.
  const settings = JSON.parse((await db.selectFrom("realms").select("settings").executeTakeFirstOrThrow()).settings);
  assert.deepEqual(settings.user_settings_defaults, { enter_sends: true });
  assert.equal(settings.default_email_address_visibility, 2);
  assert.deepEqual(settings.authentication_methods, { Email: true, Dev: false });

  // Drafts: to Denmark's recipient, to the group conversation's (that of its message), and to nobody.
  const denmark = await db.selectFrom("channels").select("id").where("name", "=", "Denmark").executeTakeFirstOrThrow();
  const denmarkRecipient = await db.selectFrom("recipients").select("id").where("channel_id", "=", denmark.id).executeTakeFirstOrThrow();
  const groupMessage = await db.selectFrom("messages").select("recipient_id").where("content", "=", "Group **plans**").executeTakeFirstOrThrow();
  const drafts = await db.selectFrom("drafts").selectAll().orderBy("id").execute();
  assert.deepEqual(
    drafts.map((d) => [d.user_id, d.recipient_id, d.topic, d.content, d.last_edit_time_ms]),
    [
      [iago, denmarkRecipient.id, "greetings", "half a thought", 1600000800500],
      [hamlet, groupMessage.recipient_id, "", "to the group", 1600000900000],
      [hamlet, null, "", "to nobody yet", 1600001000000],
    ],
  );

  // Scheduled messages: the delivered one kept (as Zulip's import does) with its delivered message's new ID, the pending
  // direct one to Othello's conversation with Hamlet; the one from an unknown sender left out.
  const firstMessage = await db.selectFrom("messages").select("id").where("content", "like", "Hello @**Iago**%").executeTakeFirstOrThrow();
  const scheduled = await db.selectFrom("scheduled_messages").selectAll().orderBy("id").execute();
  assert.deepEqual(
    scheduled.map((m) => [m.sender_id, m.channel_id, m.topic, m.content, m.sending_client, m.scheduled_timestamp, m.request_timestamp, m.delivered, m.delivered_message_id, m.failed]),
    [
      [iago, denmark.id, "plans", "Delivered **already**", "ZulipMobile", 1600001100, 1600001000, true, firstMessage.id, false],
      [hamlet, null, "", "Later, Othello", "website", 1900000000, 1600001200, false, null, false],
    ],
  );
  assert.equal(scheduled[0]!.recipient_id, denmarkRecipient.id);
  assert.match(scheduled[0]!.rendered_content, /<strong>already<\/strong>/);
  const toOthello = await db.selectFrom("recipients").select("dm_key").where("id", "=", scheduled[1]!.recipient_id).executeTakeFirstOrThrow();
  assert.equal(toOthello.dm_key, [hamlet, othello].sort((a, b) => a - b).join(","));
});
