// API-level tests of the subscription endpoints: POST /users/me/subscriptions
// (subscribing, creating channels with every option, principals, colours,
// events), GET /users/me/subscriptions, DELETE /users/me/subscriptions,
// PATCH /users/me/subscriptions, the personal properties endpoints, GET
// /users/{user_id}/subscriptions/{stream_id}, and a permission matrix of
// every role against public and private channels.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Notification } from "../src/events/notifier.ts";
import { assertError, assertSuccess, expectedChannel, startTestApp, sortedIds, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

/** Every write in these tests happens at this UNIX time, so date_created is exact. */
const NOW = 1_750_000_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** Zulip's STREAM_ASSIGNMENT_COLORS, in order. */
const PALETTE = [
  "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
  "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
  "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
];

let t: TestApp;
let sys: Record<string, number>;

before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
  sys = await t.systemGroupIds();
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers


const u = () => t.users;
let counter = 0;
function uniqueName(prefix = "channel"): string {
  counter += 1;
  return `${prefix} ${counter}`;
}

const sorted = sortedIds;

/** A new member; new users join the default channels, so tests that need a user without subscriptions keep none around. */
async function newUser(prefix = "User"): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${counter}`);
}

async function freshUser(prefix: string): Promise<TestUser> {
  const user = await newUser(prefix);
  assert.deepEqual(await mySubscriptions(user), [], "no default channels left behind");
  return user;
}

async function clearDefaults(): Promise<void> {
  for (const id of await defaultIds()) assertSuccess(await t.api(u().admin, "DELETE", "/default_streams", { stream_id: id }));
}

async function findChannelId(name: string): Promise<number | undefined> {
  const row = await t.services.storage.db
    .selectFrom("channels")
    .select("id")
    .where("realm_id", "=", t.realm.id)
    .where("name_key", "=", name.toLowerCase())
    .executeTakeFirst();
  return row?.id;
}

async function channelId(name: string): Promise<number> {
  const id = await findChannelId(name);
  assert.ok(id !== undefined, `channel ${name} exists`);
  return id;
}

function subscribe(actor: TestUser, params: Record<string, unknown>): Promise<ApiResponse> {
  return t.api(actor, "POST", "/users/me/subscriptions", params);
}

/** Creates a channel as `actor` (subscribed unless principals say otherwise). */
async function newChannel(actor: TestUser, params: Record<string, unknown> = {}, prefix = "channel"): Promise<{ id: number; name: string }> {
  const name = uniqueName(prefix);
  assertSuccess(await subscribe(actor, { subscriptions: [{ name }], ...params }));
  return { id: await channelId(name), name };
}

function unsubscribe(actor: TestUser, params: Record<string, unknown>): Promise<ApiResponse> {
  return t.api(actor, "DELETE", "/users/me/subscriptions", params);
}

async function getStream(viewer: TestUser, id: number): Promise<Json> {
  return assertSuccess(await t.api(viewer, "GET", `/streams/${id}`)).stream;
}

async function mySubscriptions(user: TestUser, params: Record<string, unknown> = {}): Promise<Json[]> {
  return assertSuccess(await t.api(user, "GET", "/users/me/subscriptions", params)).subscriptions;
}

async function mySubscription(user: TestUser, id: number): Promise<Json> {
  return (await mySubscriptions(user)).find((s) => s.stream_id === id);
}

async function isSubscribed(userId: number, channel: number): Promise<boolean> {
  return assertSuccess(await t.api(u().owner, "GET", `/users/${userId}/subscriptions/${channel}`)).is_subscribed;
}

async function subscriberIds(channel: number): Promise<number[]> {
  const rows = await t.services.storage.db
    .selectFrom("subscriptions")
    .select("user_id")
    .where("channel_id", "=", channel)
    .where("active", "=", true)
    .execute();
  return sorted(rows.map((r) => r.user_id));
}

async function setRealmSetting(key: string, value: unknown): Promise<void> {
  const db = t.services.storage.db;
  const row = await db.selectFrom("realms").select("settings").where("id", "=", t.realm.id).executeTakeFirstOrThrow();
  const settings = JSON.parse(row.settings) as Record<string, unknown>;
  settings[key] = value;
  await db.updateTable("realms").set({ settings: JSON.stringify(settings) }).where("id", "=", t.realm.id).execute();
}

async function nonGuestIds(): Promise<number[]> {
  const rows = await t.services.storage.db
    .selectFrom("users")
    .select(["id", "role"])
    .where("realm_id", "=", t.realm.id)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .execute();
  return sorted(rows.filter((r) => r.role !== 600).map((r) => r.id));
}

async function defaultIds(): Promise<number[]> {
  const rows = await t.services.storage.db.selectFrom("default_channels").select("channel_id").where("realm_id", "=", t.realm.id).execute();
  return sorted(rows.map((r) => r.channel_id));
}

function notifications(type: string, op?: string): Notification[] {
  return t.events.filter((n) => n.event.type === type && (op === undefined || n.event.op === op));
}

function onlyNotification(type: string, op?: string): Notification {
  const sent = notifications(type, op);
  assert.equal(sent.length, 1, `one ${type}/${op} event: ${JSON.stringify(sent.map((n) => n.event))}`);
  return sent[0]!;
}

function recipients(type: string, op?: string): number[] {
  return sorted(notifications(type, op).flatMap((n) => [...n.userIds]));
}


function expectedSubscription(channel: Record<string, unknown>, color: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...channel,
    color,
    is_muted: false,
    in_home_view: true,
    pin_to_top: false,
    desktop_notifications: null,
    audible_notifications: null,
    push_notifications: null,
    email_notifications: null,
    wildcard_mentions_notify: null,
    ...extra,
  };
}

const INVALID_ID = (r: ApiResponse) => assertError(r, 400, "BAD_REQUEST", "Invalid channel ID");
const INSUFFICIENT = (r: ApiResponse) => assertError(r, 400, "BAD_REQUEST", "Insufficient permission");
const GUESTS_NOT_ALLOWED = (r: ApiResponse) => assertError(r, 400, "BAD_REQUEST", "Not allowed for guest users");

// ---------------------------------------------------------------------------

describe("POST /users/me/subscriptions: the response", () => {
  test("subscribed and already_subscribed, keyed by user ID, with the stored channel names", async () => {
    const a = uniqueName("Resp A");
    const b = uniqueName("Resp B");
    const first = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: a }, { name: b }] }));
    assert.deepEqual(first, { result: "success", msg: "", subscribed: { [u().member.id]: [a, b] }, already_subscribed: {}, new_subscription_messages_sent: true });
    const again = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: ` ${a.toUpperCase()} ` }, { name: b.toLowerCase() }] }));
    assert.deepEqual(again, { result: "success", msg: "", subscribed: {}, already_subscribed: { [u().member.id]: [a, b] }, new_subscription_messages_sent: true });
    const c = uniqueName("Resp C");
    const mixed = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: a }, { name: c }] }));
    assert.deepEqual(mixed.subscribed, { [u().member.id]: [c] });
    assert.deepEqual(mixed.already_subscribed, { [u().member.id]: [a] });
    assert.equal("unauthorized" in mixed, false);
  });

  test("a request naming one channel twice (any case) subscribes once", async () => {
    const name = uniqueName("Twice");
    const body = assertSuccess(await subscribe(u().member, { subscriptions: [{ name }, { name: name.toUpperCase() }] }));
    assert.deepEqual(body.subscribed, { [u().member.id]: [name] });
    const rows = await t.services.storage.db.selectFrom("channels").select("id").where("name_key", "=", name.toLowerCase()).execute();
    assert.equal(rows.length, 1);
  });

  test("existing private channels without access: fatal error by default; listed in `unauthorized` otherwise", async () => {
    const priv = await newChannel(u().moderator, { invite_only: true }, "Closed");
    const fresh = uniqueName("Fresh");
    assertError(
      await subscribe(u().member, { subscriptions: [{ name: fresh }, { name: priv.name }] }),
      400,
      "BAD_REQUEST",
      `Unable to access channel (${priv.name}).`,
    );
    assert.equal(await findChannelId(fresh), undefined, "nothing was created");
    assertError(
      await subscribe(u().member, { subscriptions: [{ name: priv.name }], authorization_errors_fatal: true }),
      400,
      "BAD_REQUEST",
      `Unable to access channel (${priv.name}).`,
    );

    const body = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: fresh }, { name: priv.name.toUpperCase() }], authorization_errors_fatal: false }));
    assert.deepEqual(body, { result: "success", msg: "", subscribed: { [u().member.id]: [fresh] }, already_subscribed: {}, unauthorized: [priv.name], new_subscription_messages_sent: true });
    assert.equal(await isSubscribed(u().member.id, priv.id), false);

    const none = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: fresh }], authorization_errors_fatal: false }));
    assert.deepEqual(none, { result: "success", msg: "", subscribed: {}, already_subscribed: { [u().member.id]: [fresh] }, unauthorized: [], new_subscription_messages_sent: true });
  });

  test("organization administrators get no content access to private channels by role", async () => {
    const priv = await newChannel(u().member, { invite_only: true });
    for (const key of ["admin", "owner"] as const) {
      assertError(await subscribe(u()[key], { subscriptions: [{ name: priv.name }] }), 400, "BAD_REQUEST", `Unable to access channel (${priv.name}).`);
      // Nor may they subscribe others to it.
      assertError(
        await subscribe(u()[key], { subscriptions: [{ name: priv.name }], principals: [u().moderator.id] }),
        400,
        "BAD_REQUEST",
        `Unable to access channel (${priv.name}).`,
      );
    }
    assert.deepEqual(await subscriberIds(priv.id), [u().member.id]);
  });

  test("guests may not use the endpoint at all, even for themselves", async () => {
    const pub = await newChannel(u().member);
    GUESTS_NOT_ALLOWED(await subscribe(u().guest, { subscriptions: [{ name: pub.name }] }));
    GUESTS_NOT_ALLOWED(await subscribe(u().guest, { subscriptions: [{ name: pub.name }], principals: [u().guest.id] }));
    const fresh = uniqueName("Guest made");
    GUESTS_NOT_ALLOWED(await subscribe(u().guest, { subscriptions: [{ name: fresh }] }));
    assert.equal(await findChannelId(fresh), undefined);
    assert.equal(await isSubscribed(u().guest.id, pub.id), false);
  });
});

describe("POST /users/me/subscriptions: names and descriptions", () => {
  test("channel name rules", async () => {
    const cases: [string, string][] = [
      ["", "Channel name can't be empty."],
      ["   ", "Channel name can't be empty."],
      ["n".repeat(61), "Channel name too long (limit: 60 characters)."],
      ["ab\u0007", "Invalid character in channel name, at position 3."],
      ["\ufdd0x", "Invalid character in channel name, at position 1."],
      ["ok\uffff", "Invalid character in channel name, at position 3."],
    ];
    for (const [name, msg] of cases) {
      assertError(await subscribe(u().member, { subscriptions: [{ name }] }), 400, "BAD_REQUEST", msg);
    }
    const long = "\u{1F600}".repeat(59) + "a";
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: long }] }));
    assert.equal((await getStream(u().member, await channelId(long))).name, long);
    const padded = uniqueName("Padded");
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: `  ${padded}  ` }] }));
    assert.equal((await getStream(u().member, await channelId(padded))).name, padded);
  });

  test("descriptions: newlines become spaces, rendered, at most 1024 characters, used only for new channels", async () => {
    const name = uniqueName("Described");
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name, description: "one\ntwo & <three>" }] }));
    const id = await channelId(name);
    const stream = await getStream(u().member, id);
    assert.equal(stream.description, "one two & <three>");
    assert.equal(stream.rendered_description, "<p>one two &amp; &lt;three&gt;</p>");
    // An existing channel keeps its description.
    assertSuccess(await subscribe(u().moderator, { subscriptions: [{ name, description: "ignored" }] }));
    assert.equal((await getStream(u().member, id)).description, "one two & <three>");

    const tooLong = uniqueName("Too long");
    assertError(await subscribe(u().member, { subscriptions: [{ name: tooLong, description: "d".repeat(1025) }] }), 400, "BAD_REQUEST", /too long \(limit: 1024 characters\)/);
    assert.equal(await findChannelId(tooLong), undefined);
    const max = uniqueName("Max");
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: max, description: "d".repeat(1024) }] }));
    assert.equal((await getStream(u().member, await channelId(max))).description, "d".repeat(1024));
  });
});

describe("POST /users/me/subscriptions: creating channels with options", () => {
  test("a new channel has the documented defaults", async () => {
    const { id, name } = await newChannel(u().member);
    assert.deepEqual(await getStream(u().member, id), channelWithDefaults(id, name, u().member.id));
  });

  test("invite_only and history_public_to_subscribers (forced true for public channels)", async () => {
    const priv = await newChannel(u().member, { invite_only: true });
    assert.deepEqual(await getStream(u().member, priv.id), channelWithDefaults(priv.id, priv.name, u().member.id, { invite_only: true, history_public_to_subscribers: false }));
    const shared = await newChannel(u().member, { invite_only: true, history_public_to_subscribers: true });
    assert.equal((await getStream(u().member, shared.id)).history_public_to_subscribers, true);
    const pub = await newChannel(u().member, { invite_only: false, history_public_to_subscribers: false });
    const stream = await getStream(u().member, pub.id);
    assert.equal(stream.invite_only, false);
    assert.equal(stream.history_public_to_subscribers, true);
    const explicitNull = await newChannel(u().member, { invite_only: true, history_public_to_subscribers: null });
    assert.equal((await getStream(u().member, explicitNull.id)).history_public_to_subscribers, false);
  });

  test("creating a channel needs the organization's can_create_public/private_channel_group", async () => {
    const name = uniqueName("Restricted");
    await setRealmSetting("can_create_private_channel_group", sys["role:administrators"]);
    try {
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name }], invite_only: true }));
      assert.equal(await findChannelId(name), undefined);
      const pub = await newChannel(u().member);
      assert.equal((await getStream(u().member, pub.id)).invite_only, false);
      const priv = await newChannel(u().admin, { invite_only: true });
      assert.equal((await getStream(u().admin, priv.id)).invite_only, true);
    } finally {
      await setRealmSetting("can_create_private_channel_group", sys["role:members"]);
    }
    await setRealmSetting("can_create_public_channel_group", sys["role:moderators"]);
    try {
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name }] }));
      INSUFFICIENT(await subscribe(u().bot, { subscriptions: [{ name }] }));
      assert.equal(await findChannelId(name), undefined);
      // Existing channels can still be joined.
      const existing = await newChannel(u().moderator);
      assertSuccess(await subscribe(u().member, { subscriptions: [{ name: existing.name }] }));
    } finally {
      await setRealmSetting("can_create_public_channel_group", sys["role:members"]);
    }
  });

  test("is_default_stream: administrators only; never private; announced", async () => {
    try {
      await defaultStreamCreation();
    } finally {
      await clearDefaults();
    }
  });

  async function defaultStreamCreation(): Promise<void> {
    const refused = uniqueName("Not default");
    for (const key of ["member", "moderator"] as const) {
      INSUFFICIENT(await subscribe(u()[key], { subscriptions: [{ name: refused }], is_default_stream: true }));
    }
    assert.equal(await findChannelId(refused), undefined);
    assertError(
      await subscribe(u().admin, { subscriptions: [{ name: refused }], is_default_stream: true, invite_only: true }),
      400,
      "BAD_REQUEST",
      "A default channel cannot be private.",
    );
    t.clearEvents();
    const { id } = await newChannel(u().admin, { is_default_stream: true });
    assert.equal((await defaultIds()).includes(id), true);
    const n = onlyNotification("default_streams");
    assert.deepEqual(n.event, { type: "default_streams", default_streams: await defaultIds() });
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());
    // Only channels created by the request become defaults.
    const existing = await newChannel(u().member);
    const other = uniqueName("Also default");
    assertSuccess(await subscribe(u().admin, { subscriptions: [{ name: existing.name }, { name: other }], is_default_stream: true }));
    assert.equal((await defaultIds()).includes(existing.id), false);
    assert.equal((await defaultIds()).includes(await channelId(other)), true);
    // New users join the default channels.
    const newcomer = await newUser("Newcomer");
    assert.deepEqual(sorted((await mySubscriptions(newcomer)).map((s) => s.stream_id)), sorted([id, await channelId(other)]));
  }

  test("is_web_public: refused while spectator access is off; then only owners (can_create_web_public_channel_group)", async () => {
    const name = uniqueName("Web");
    assertError(await subscribe(u().owner, { subscriptions: [{ name }], is_web_public: true }), 400, "BAD_REQUEST", "Web-public channels are not enabled.");
    await setRealmSetting("enable_spectator_access", true);
    try {
      INSUFFICIENT(await subscribe(u().admin, { subscriptions: [{ name }], is_web_public: true }));
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name }], is_web_public: true }));
      assert.equal(await findChannelId(name), undefined);
      assertSuccess(await subscribe(u().owner, { subscriptions: [{ name }], is_web_public: true }));
      const id = await channelId(name);
      assert.deepEqual(await getStream(u().guest, id), channelWithDefaults(id, name, u().owner.id, { is_web_public: true }));
    } finally {
      await setRealmSetting("enable_spectator_access", false);
    }
  });

  test("message_retention_days: owners only; unlimited → -1, days, realm_default → null", async () => {
    const name = uniqueName("Retained");
    for (const key of ["admin", "moderator", "member"] as const) {
      assertError(await subscribe(u()[key], { subscriptions: [{ name }], message_retention_days: 30 }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
      assertError(await subscribe(u()[key], { subscriptions: [{ name }], message_retention_days: "unlimited" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    }
    assert.equal(await findChannelId(name), undefined);
    const byMember = await newChannel(u().member, { message_retention_days: "realm_default" });
    assert.equal((await getStream(u().member, byMember.id)).message_retention_days, null);
    const days = await newChannel(u().owner, { message_retention_days: 30 });
    assert.equal((await getStream(u().owner, days.id)).message_retention_days, 30);
    const forever = await newChannel(u().owner, { message_retention_days: "unlimited" });
    assert.equal((await getStream(u().owner, forever.id)).message_retention_days, -1);
    const quoted = await newChannel(u().owner, { message_retention_days: JSON.stringify("unlimited") });
    assert.equal((await getStream(u().owner, quoted.id)).message_retention_days, -1);
    // Subscribing to existing channels only: the option is not checked.
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: days.name }], message_retention_days: 5 }));
    assert.equal((await getStream(u().owner, days.id)).message_retention_days, 30);
  });

  test("creation permission errors come in Zulip's order (kind of channel before retention)", async () => {
    // check_channel_creation_permissions: default channel (admins) is checked before retention (owners).
    INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name: uniqueName("Order") }], is_default_stream: true, message_retention_days: 30 }));
    assertError(
      await subscribe(u().admin, { subscriptions: [{ name: uniqueName("Order") }], is_default_stream: true, invite_only: true, message_retention_days: 30 }),
      400,
      "BAD_REQUEST",
      "A default channel cannot be private.",
    );
  });

  test("topics_policy: each value, raw or JSON-encoded; unknown values refused; needs can_set_topics_policy_group", async () => {
    for (const policy of ["inherit", "allow_empty_topic", "disable_empty_topic", "empty_topic_only"]) {
      const raw = await newChannel(u().member, { topics_policy: policy });
      assert.equal((await getStream(u().member, raw.id)).topics_policy, policy);
      const encoded = await newChannel(u().member, { topics_policy: JSON.stringify(policy) });
      assert.equal((await getStream(u().member, encoded.id)).topics_policy, policy);
    }
    const name = uniqueName("Policy");
    assertError(await subscribe(u().member, { subscriptions: [{ name }], topics_policy: "bogus" }), 400, "BAD_REQUEST", "Invalid topics_policy");
    await setRealmSetting("can_set_topics_policy_group", sys["role:administrators"]);
    try {
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name }], topics_policy: "allow_empty_topic" }));
      assert.equal(await findChannelId(name), undefined);
      const inherit = await newChannel(u().member, { topics_policy: "inherit" });
      assert.equal((await getStream(u().member, inherit.id)).topics_policy, "inherit");
    } finally {
      await setRealmSetting("can_set_topics_policy_group", sys["role:members"]);
    }
  });

  test("folder_id files the new channel; unknown folders are refused", async () => {
    const folder = assertSuccess(await t.api(u().admin, "POST", "/channel_folders/create", { name: uniqueName("Folder"), description: "" })).channel_folder_id;
    const filed = await newChannel(u().member, { folder_id: folder });
    assert.equal((await getStream(u().member, filed.id)).folder_id, folder);
    const name = uniqueName("Unfiled");
    assertError(await subscribe(u().member, { subscriptions: [{ name }], folder_id: 999999 }), 400, "BAD_REQUEST", "Invalid channel folder ID");
    assert.equal(await findChannelId(name), undefined);
    const none = await newChannel(u().member, { folder_id: null });
    assert.equal((await getStream(u().member, none.id)).folder_id, null);
  });

  test("every can_*_group can be given as a group-setting value", async () => {
    const values: Record<string, unknown> = {
      can_add_subscribers_group: sys["role:members"],
      can_remove_subscribers_group: sys["role:moderators"],
      can_administer_channel_group: { direct_members: [u().member.id], direct_subgroups: [sys["role:moderators"]] },
      can_delete_any_message_group: sys["role:administrators"],
      can_delete_own_message_group: sys["role:everyone"],
      can_move_messages_out_of_channel_group: sys["role:fullmembers"],
      can_move_messages_within_channel_group: sys["role:members"],
      can_resolve_topics_group: sys["role:moderators"],
      can_send_message_group: sys["role:moderators"],
      can_subscribe_group: sys["role:fullmembers"],
    };
    const { id, name } = await newChannel(u().admin, values);
    assert.deepEqual(await getStream(u().admin, id), channelWithDefaults(id, name, u().admin.id, { ...values, stream_post_policy: 4 }));
  });

  test("group-setting values are normalized and validated at creation", async () => {
    const one = await newChannel(u().admin, { can_resolve_topics_group: { direct_members: [], direct_subgroups: [sys["role:moderators"]] } });
    assert.equal((await getStream(u().admin, one.id)).can_resolve_topics_group, sys["role:moderators"]);
    const empty = await newChannel(u().admin, { can_administer_channel_group: { direct_members: [], direct_subgroups: [] } });
    assert.equal((await getStream(u().admin, empty.id)).can_administer_channel_group, sys["role:nobody"]);
    const dedup = await newChannel(u().admin, { can_administer_channel_group: { direct_members: [u().member.id, u().admin.id, u().member.id], direct_subgroups: [] } });
    assert.deepEqual((await getStream(u().admin, dedup.id)).can_administer_channel_group, { direct_members: sorted([u().admin.id, u().member.id]), direct_subgroups: [] });

    const name = uniqueName("Bad setting");
    for (const setting of ["can_add_subscribers_group", "can_administer_channel_group", "can_subscribe_group"]) {
      assertError(
        await subscribe(u().admin, { subscriptions: [{ name }], [setting]: sys["role:everyone"] }),
        400,
        "BAD_REQUEST",
        `'${setting}' setting cannot be set to 'role:everyone' group.`,
      );
    }
    assertError(
      await subscribe(u().admin, { subscriptions: [{ name }], can_send_message_group: sys["role:internet"] }),
      400,
      "BAD_REQUEST",
      "'can_send_message_group' setting cannot be set to 'role:internet' group.",
    );
    assertError(await subscribe(u().admin, { subscriptions: [{ name }], can_send_message_group: 999999 }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(
      await subscribe(u().admin, { subscriptions: [{ name }], can_send_message_group: { direct_members: [999999], direct_subgroups: [] } }),
      400,
      "BAD_REQUEST",
      "Invalid user ID: 999999",
    );
    // The delete-message settings need can_set_delete_message_policy_group (moderators).
    for (const setting of ["can_delete_any_message_group", "can_delete_own_message_group"]) {
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name }], [setting]: sys["role:members"] }));
    }
    assert.equal(await findChannelId(name), undefined);
  });
});

describe("POST /users/me/subscriptions: principals", () => {
  test("by user ID and by API email (the `email` of GET /users/me)", async () => {
    const a = await newUser("Principal");
    const b = await newUser("Principal");
    const aEmail = assertSuccess(await t.api(a, "GET", "/users/me")).email;
    const bEmail = assertSuccess(await t.api(b, "GET", "/users/me")).email;
    assert.equal(typeof aEmail, "string");
    const pub = await newChannel(u().moderator);
    const byEmail = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [aEmail, bEmail] }));
    assert.deepEqual(byEmail, { result: "success", msg: "", subscribed: { [a.id]: [pub.name], [b.id]: [pub.name] }, already_subscribed: {}, new_subscription_messages_sent: true });
    const c = await newUser("Principal");
    const byId = assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [a.id, c.id] }));
    assert.deepEqual(byId.subscribed, { [c.id]: [pub.name] });
    assert.deepEqual(byId.already_subscribed, { [a.id]: [pub.name] });
    assert.deepEqual(await subscriberIds(pub.id), sorted([u().moderator.id, a.id, b.id, c.id]));
    // A new channel with principals: the creator is not subscribed unless listed.
    const fresh = uniqueName("For others");
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: fresh }], principals: [a.id] }));
    assert.deepEqual(await subscriberIds(await channelId(fresh)), [a.id]);
  });

  test("unknown and deactivated principals", async () => {
    const pub = await newChannel(u().moderator);
    for (const principals of [[999999], ["nobody@example.com"], [u().member.id, 999999]]) {
      assertError(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals }), 400, "BAD_REQUEST", "No such user");
    }
    const gone = await newUser("Gone");
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${gone.id}`));
    assertError(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [gone.id] }), 400, "BAD_REQUEST", "User is deactivated");
    assert.deepEqual(await subscriberIds(pub.id), [u().moderator.id]);
  });

  test("subscribing others needs the organization's can_add_subscribers_group (role:members by default)", async () => {
    const other = await newUser("Added");
    const pub = await newChannel(u().moderator);
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [other.id] }));
    assertSuccess(await subscribe(u().bot, { subscriptions: [{ name: pub.name }], principals: [u().guest.id] }));
    assert.deepEqual(await subscriberIds(pub.id), sorted([u().moderator.id, other.id, u().guest.id]));

    await setRealmSetting("can_add_subscribers_group", sys["role:administrators"]);
    try {
      const target = await newUser("Target");
      INSUFFICIENT(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [target.id] }));
      INSUFFICIENT(await subscribe(u().bot, { subscriptions: [{ name: pub.name }], principals: [target.id] }));
      // Subscribing oneself needs nothing.
      assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [u().member.id] }));
      // Channel administrators, members of the channel's can_add_subscribers_group and organization administrators may.
      assertSuccess(await subscribe(u().moderator, { subscriptions: [{ name: pub.name }], principals: [target.id] }));
      const adder = await newChannel(u().admin, { can_add_subscribers_group: { direct_members: [u().member.id], direct_subgroups: [] } });
      assertSuccess(await subscribe(u().member, { subscriptions: [{ name: adder.name }], principals: [target.id] }));
      const plain = await newChannel(u().owner);
      assertSuccess(await subscribe(u().admin, { subscriptions: [{ name: plain.name }], principals: [target.id] }));
      assert.equal(await isSubscribed(target.id, pub.id), true);
      assert.equal(await isSubscribed(target.id, adder.id), true);
      assert.equal(await isSubscribed(target.id, plain.id), true);
    } finally {
      await setRealmSetting("can_add_subscribers_group", sys["role:members"]);
    }
  });

  test("private channels: can_subscribe_group lets a user join; can_add_subscribers_group lets a user add others", async () => {
    const joiner = await newUser("Joiner");
    const adder = await newUser("Adder");
    const target = await newUser("Target");
    const priv = await newChannel(u().moderator, {
      invite_only: true,
      can_subscribe_group: { direct_members: [joiner.id], direct_subgroups: [] },
      can_add_subscribers_group: { direct_members: [adder.id], direct_subgroups: [] },
    });
    assertError(await subscribe(u().member, { subscriptions: [{ name: priv.name }] }), 400, "BAD_REQUEST", `Unable to access channel (${priv.name}).`);
    const joined = assertSuccess(await subscribe(joiner, { subscriptions: [{ name: priv.name }] }));
    assert.deepEqual(joined.subscribed, { [joiner.id]: [priv.name] });
    const added = assertSuccess(await subscribe(adder, { subscriptions: [{ name: priv.name }], principals: [target.id] }));
    assert.deepEqual(added.subscribed, { [target.id]: [priv.name] });
    assert.deepEqual(await subscriberIds(priv.id), sorted([u().moderator.id, joiner.id, target.id]));
    // A subscriber (content access) may add others under the organization's default policy.
    assertSuccess(await subscribe(target, { subscriptions: [{ name: priv.name }], principals: [u().member.id] }));
    assert.equal(await isSubscribed(u().member.id, priv.id), true);
  });
});

describe("POST /users/me/subscriptions: colours", () => {
  test("new subscriptions take the first palette colours the user does not use yet; re-subscribing keeps the colour", async () => {
    const user = await freshUser("Colourful");
    const names = [uniqueName("Col"), uniqueName("Col"), uniqueName("Col")];
    for (const name of names) assertSuccess(await subscribe(user, { subscriptions: [{ name }] }));
    const ids = await Promise.all(names.map((n) => channelId(n)));
    const colorOf = async (id: number) => (await mySubscription(user, id)).color;
    assert.deepEqual(await Promise.all(ids.map(colorOf)), PALETTE.slice(0, 3));

    // Several in one request: in channel ID order, whatever the request order.
    const lowId = await newChannel(u().member, {}, "Col x");
    const highId = await newChannel(u().member, {}, "Col y");
    assert.ok(lowId.id < highId.id);
    assertSuccess(await subscribe(user, { subscriptions: [{ name: highId.name }, { name: lowId.name }] }));
    assert.equal(await colorOf(lowId.id), PALETTE[3]);
    assert.equal(await colorOf(highId.id), PALETTE[4]);

    // Leaving and coming back keeps the colour; the old colour still counts as used meanwhile.
    assertSuccess(await unsubscribe(user, { subscriptions: [names[0]] }));
    const next = uniqueName("Col next");
    assertSuccess(await subscribe(user, { subscriptions: [{ name: next }] }));
    assert.equal(await colorOf(await channelId(next)), PALETTE[5]);
    assertSuccess(await subscribe(user, { subscriptions: [{ name: names[0], color: "#000000" }] }));
    assert.equal(await colorOf(ids[0]!), PALETTE[0]);
  });

  test("a requested colour is used for a new subscription and counts as used", async () => {
    const user = await freshUser("Chooser");
    const a = uniqueName("Chosen");
    const b = uniqueName("Chosen");
    assertSuccess(await subscribe(user, { subscriptions: [{ name: a, color: PALETTE[0] }, { name: b, color: "#ABCDEF" }] }));
    assert.equal((await mySubscription(user, await channelId(a))).color, PALETTE[0]);
    assert.equal((await mySubscription(user, await channelId(b))).color, "#ABCDEF");
    const c = uniqueName("Chosen");
    assertSuccess(await subscribe(user, { subscriptions: [{ name: c }] }));
    assert.equal((await mySubscription(user, await channelId(c))).color, PALETTE[1]);
    const bad = uniqueName("Bad colour");
    assertError(await subscribe(user, { subscriptions: [{ name: bad, color: "red" }] }), 400, "BAD_REQUEST", /is not a valid hex color code$/);
    assertError(await subscribe(user, { subscriptions: [{ name: bad, color: "#1234567" }] }), 400, "BAD_REQUEST", /is not a valid hex color code$/);
    assert.equal(await findChannelId(bad), undefined);
  });

  test("once the palette is used up, colours repeat by channel ID", async () => {
    const user = await freshUser("Palette");
    const names = Array.from({ length: 25 }, () => uniqueName("Pal"));
    assertSuccess(await subscribe(user, { subscriptions: names.slice(0, 24).map((name) => ({ name })) }));
    const ids = await Promise.all(names.slice(0, 24).map((n) => channelId(n)));
    const subs = await mySubscriptions(user);
    assert.deepEqual(
      sorted(ids).map((id) => subs.find((s) => s.stream_id === id).color),
      PALETTE,
    );
    assertSuccess(await subscribe(user, { subscriptions: [{ name: names[24]! }] }));
    const last = await channelId(names[24]!);
    assert.equal((await mySubscription(user, last)).color, PALETTE[last % 24]);
  });
});

describe("POST /users/me/subscriptions: events", () => {
  test("a new public channel: stream create to non-guests, subscription add to each subscriber, peer_add to the others", async () => {
    const other = await freshUser("Peer");
    const name = uniqueName("Evented");
    t.clearEvents();
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name }], principals: [u().member.id, other.id] }));
    const id = await channelId(name);
    const channel = channelWithDefaults(id, name, u().member.id, { subscriber_count: 2 });

    assert.deepEqual(recipients("stream", "create"), await nonGuestIds());
    for (const n of notifications("stream", "create")) {
      assert.deepEqual(n.event, { type: "stream", op: "create", streams: [{ ...channel, subscriber_count: (n.event.streams as Json[])[0].subscriber_count }], for_unarchiving: false });
    }

    const adds = notifications("subscription", "add");
    assert.equal(adds.length, 2);
    const subscribers = sorted([u().member.id, other.id]);
    for (const [user, color] of [[u().member.id, null], [other.id, PALETTE[0]]] as const) {
      const n = adds.find((x) => x.userIds.includes(user))!;
      assert.deepEqual(n.userIds, [user]);
      const sub = (n.event.subscriptions as Json[])[0];
      assert.equal((n.event.subscriptions as Json[]).length, 1);
      assert.deepEqual(n.event, {
        type: "subscription",
        op: "add",
        subscriptions: [expectedSubscription(channel, color ?? sub.color, { subscribers })],
      });
    }
    // The stream create reaches each new subscriber before its subscription add.
    for (const user of subscribers) {
      const kinds = t.events.filter((n) => n.userIds.includes(user)).map((n) => `${n.event.type}/${n.event.op}`);
      assert.ok(kinds.indexOf("stream/create") < kinds.indexOf("subscription/add"), kinds.join(","));
    }

    const peer = onlyNotification("subscription", "peer_add");
    assert.deepEqual(peer.event, { type: "subscription", op: "peer_add", stream_ids: [id], user_ids: subscribers });
    assert.deepEqual(sorted(peer.userIds), (await nonGuestIds()).filter((x) => !subscribers.includes(x)));
    assert.deepEqual(t.eventsFor(u().guest.id, "stream"), []);
    assert.deepEqual(t.eventsFor(u().guest.id, "subscription"), []);
  });

  test("an existing private channel: the new subscriber is told it exists; peers are subscribers and administrators", async () => {
    const priv = await newChannel(u().moderator, { invite_only: true });
    t.clearEvents();
    assertSuccess(await subscribe(u().moderator, { subscriptions: [{ name: priv.name }], principals: [u().member.id] }));
    const create = onlyNotification("stream", "create");
    assert.deepEqual(create.userIds, [u().member.id]);
    assert.equal((create.event.streams as Json[])[0].stream_id, priv.id);
    const add = onlyNotification("subscription", "add");
    assert.deepEqual(add.userIds, [u().member.id]);
    assert.deepEqual((add.event.subscriptions as Json[])[0].subscribers, sorted([u().moderator.id, u().member.id]));
    const peer = onlyNotification("subscription", "peer_add");
    assert.deepEqual(peer.event, { type: "subscription", op: "peer_add", stream_ids: [priv.id], user_ids: [u().member.id] });
    assert.deepEqual(sorted(peer.userIds), sorted([u().owner.id, u().admin.id, u().moderator.id]));

    // An administrator already sees the channel: no stream create.
    const joinable = await newChannel(u().moderator, { invite_only: true });
    t.clearEvents();
    assertSuccess(await subscribe(u().moderator, { subscriptions: [{ name: joinable.name }], principals: [u().admin.id] }));
    assert.deepEqual(notifications("stream", "create"), []);
    assert.deepEqual(onlyNotification("subscription", "add").userIds, [u().admin.id]);
  });

  test("a guest added to a public channel is told it exists", async () => {
    const pub = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }], principals: [u().guest.id] }));
    assert.deepEqual(onlyNotification("stream", "create").userIds, [u().guest.id]);
    assert.deepEqual(onlyNotification("subscription", "add").userIds, [u().guest.id]);
    const peer = onlyNotification("subscription", "peer_add");
    assert.deepEqual(sorted(peer.userIds), (await nonGuestIds()));
  });

  test("already subscribed: no events", async () => {
    const pub = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name: pub.name }] }));
    assert.deepEqual(t.events, []);
  });
});

describe("GET /users/me/subscriptions", () => {
  test("every subscription property and the channel's fields", async () => {
    const user = await freshUser("Reader");
    const name = uniqueName("Read");
    assertSuccess(await subscribe(user, { subscriptions: [{ name, description: "about" }] }));
    const id = await channelId(name);
    const body = assertSuccess(await t.api(user, "GET", "/users/me/subscriptions"));
    assert.deepEqual(body, {
      result: "success",
      msg: "",
      subscriptions: [expectedSubscription(channelWithDefaults(id, name, user.id, { description: "about", rendered_description: "<p>about</p>" }), PALETTE[0]!)],
    });
  });

  test("include_subscribers adds the sorted subscriber list", async () => {
    const user = await freshUser("Counter");
    const other = await newUser("Counted");
    const { id } = await newChannel(user, { principals: [other.id, user.id, u().bot.id] });
    const expected = sorted([user.id, other.id, u().bot.id]);
    const subs = await mySubscriptions(user, { include_subscribers: true });
    assert.deepEqual(subs.map((s) => [s.stream_id, s.subscribers, s.subscriber_count]), [[id, expected, 3]]);
    // "partial": small channels still list every subscriber.
    assert.deepEqual((await mySubscriptions(user, { include_subscribers: "partial" })).map((s) => s.subscribers), [expected]);
    for (const s of await mySubscriptions(user, { include_subscribers: false })) assert.equal("subscribers" in s, false);
    for (const s of await mySubscriptions(user)) assert.equal("subscribers" in s, false);
  });

  test("only active subscriptions in channels that are not archived, sorted by name", async () => {
    const user = await freshUser("Sorter");
    for (const name of ["b sub", "A sub", "a sub 2", "Archived sub", "Left sub"].map((n) => `${n} ${counter}`)) {
      assertSuccess(await subscribe(user, { subscriptions: [{ name }] }));
    }
    const suffix = counter;
    assertSuccess(await t.api(user, "DELETE", `/streams/${await channelId(`Archived sub ${suffix}`)}`));
    assertSuccess(await unsubscribe(user, { subscriptions: [`Left sub ${suffix}`] }));
    assert.deepEqual(
      (await mySubscriptions(user)).map((s) => s.name),
      [`A sub ${suffix}`, `a sub 2 ${suffix}`, `b sub ${suffix}`],
    );
  });
});

describe("DELETE /users/me/subscriptions", () => {
  test("removed and not_removed", async () => {
    const a = await newChannel(u().member);
    const b = await newChannel(u().moderator);
    const body = assertSuccess(await unsubscribe(u().member, { subscriptions: [a.name.toUpperCase(), ` ${b.name} `] }));
    assert.deepEqual(body, { result: "success", msg: "", removed: [a.name], not_removed: [b.name] });
    assert.equal(await isSubscribed(u().member.id, a.id), false);
    const again = assertSuccess(await unsubscribe(u().member, { subscriptions: [a.name] }));
    assert.deepEqual(again, { result: "success", msg: "", removed: [], not_removed: [a.name] });
  });

  test("an unknown name: STREAM_DOES_NOT_EXIST naming the first one (as the API description documents); nothing is removed", async () => {
    const a = await newChannel(u().member);
    t.clearEvents();
    assertError(await unsubscribe(u().member, { subscriptions: [a.name, "nope one", "nope two"] }), 400, "STREAM_DOES_NOT_EXIST", "Channel 'nope one' does not exist", {
      stream: "nope one",
    });
    assert.equal(await isSubscribed(u().member.id, a.id), true);
    assert.deepEqual(t.events, []);
    // Names are matched as Zulip does (case, surrounding spaces); the one reported is as sent.
    assertError(await unsubscribe(u().member, { subscriptions: [` ${a.name.toUpperCase()} `, "Nope <b>"] }), 400, "STREAM_DOES_NOT_EXIST", "Channel 'Nope <b>' does not exist", {
      stream: "Nope <b>",
    });
    // Unsubscribing others: the permission check comes first, as in Zulip's list_to_streams.
    INSUFFICIENT(await unsubscribe(u().guest, { subscriptions: [a.name, "nope one"], principals: [u().member.id] }));
    // An administrator removing someone from a missing channel gets the same error.
    assertError(await unsubscribe(u().admin, { subscriptions: ["nope one"], principals: [u().member.id] }), 400, "STREAM_DOES_NOT_EXIST", "Channel 'nope one' does not exist", {
      stream: "nope one",
    });
  });

  test("removing other users: organization administrators and channel administrators may; others may not", async () => {
    const victim = await newUser("Victim");
    const { id, name } = await newChannel(u().member, { principals: [u().member.id, victim.id, u().moderator.id, u().guest.id] });
    for (const actor of [u().moderator, u().guest, u().bot]) INSUFFICIENT(await unsubscribe(actor, { subscriptions: [name], principals: [victim.id] }));
    const outsider = await newUser("Outsider");
    INSUFFICIENT(await unsubscribe(outsider, { subscriptions: [name], principals: [victim.id] }));
    assert.equal(await isSubscribed(victim.id, id), true);

    assert.deepEqual(assertSuccess(await unsubscribe(u().admin, { subscriptions: [name], principals: [victim.id] })).removed, [name]);
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name }], principals: [victim.id] }));
    // The creator administers the channel.
    assert.deepEqual(assertSuccess(await unsubscribe(u().member, { subscriptions: [name], principals: [victim.id] })).removed, [name]);
    assertSuccess(await subscribe(u().member, { subscriptions: [{ name }], principals: [victim.id] }));
    assert.deepEqual(assertSuccess(await unsubscribe(u().owner, { subscriptions: [name], principals: [victim.id] })).removed, [name]);
    // An unknown channel with an unauthorized removal: permission is checked first, as in Zulip.
    INSUFFICIENT(await unsubscribe(u().moderator, { subscriptions: [name, "missing one"], principals: [u().member.id] }));
  });

  test("can_remove_subscribers_group grants removal to users with access", async () => {
    const victim = await newUser("Victim");
    const remover = await newUser("Remover");
    const { name } = await newChannel(u().admin, { can_remove_subscribers_group: { direct_members: [remover.id], direct_subgroups: [] }, principals: [u().admin.id, victim.id] });
    assert.deepEqual(assertSuccess(await unsubscribe(remover, { subscriptions: [name], principals: [victim.id] })).removed, [name]);
    const priv = await newChannel(u().admin, { invite_only: true, can_remove_subscribers_group: { direct_members: [remover.id], direct_subgroups: [] }, principals: [u().admin.id, victim.id] });
    // No access to the private channel: not allowed.
    INSUFFICIENT(await unsubscribe(remover, { subscriptions: [priv.name], principals: [victim.id] }));
  });

  test("a user may remove their own bot; nobody else's", async () => {
    const modBot = await t.createUser(`Moderator Bot ${++counter}`, 400, { bot: true, botOwnerId: u().moderator.id });
    const { id, name } = await newChannel(u().owner, { principals: [u().owner.id, u().bot.id, modBot.id] });
    INSUFFICIENT(await unsubscribe(u().moderator, { subscriptions: [name], principals: [u().bot.id] }));
    INSUFFICIENT(await unsubscribe(u().member, { subscriptions: [name], principals: [modBot.id] }));
    INSUFFICIENT(await unsubscribe(u().member, { subscriptions: [name], principals: [u().bot.id, modBot.id] }));
    assert.deepEqual(assertSuccess(await unsubscribe(u().member, { subscriptions: [name], principals: [u().bot.id] })).removed, [name]);
    assert.deepEqual(await subscriberIds(id), sorted([u().owner.id, modBot.id]));
    assert.deepEqual(assertSuccess(await unsubscribe(u().moderator, { subscriptions: [name], principals: [modBot.id, u().moderator.id] })), {
      result: "success",
      msg: "",
      removed: [name],
      not_removed: [name],
    });
    assert.deepEqual(await subscriberIds(id), [u().owner.id]);
  });

  test("unknown and deactivated principals", async () => {
    const { name } = await newChannel(u().member);
    assertError(await unsubscribe(u().admin, { subscriptions: [name], principals: [999999] }), 400, "BAD_REQUEST", "No such user");
    assertError(await unsubscribe(u().admin, { subscriptions: [name], principals: ["nobody@example.com"] }), 400, "BAD_REQUEST", "No such user");
    const gone = await newUser("Gone");
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${gone.id}`));
    assertError(await unsubscribe(u().admin, { subscriptions: [name], principals: [gone.id] }), 400, "BAD_REQUEST", "User is deactivated");
  });

  test("events: subscription remove to the user, peer_remove to those who see the channel", async () => {
    const leaver = await newUser("Leaver");
    const { id, name } = await newChannel(u().member, { principals: [u().member.id, leaver.id] });
    t.clearEvents();
    assertSuccess(await unsubscribe(leaver, { subscriptions: [name] }));
    const removed = onlyNotification("subscription", "remove");
    assert.deepEqual(removed.event, { type: "subscription", op: "remove", subscriptions: [{ name, stream_id: id }] });
    assert.deepEqual(removed.userIds, [leaver.id]);
    const peer = onlyNotification("subscription", "peer_remove");
    assert.deepEqual(peer.event, { type: "subscription", op: "peer_remove", stream_ids: [id], user_ids: [leaver.id] });
    assert.deepEqual(sorted(peer.userIds), (await nonGuestIds()).filter((x) => x !== leaver.id));
    assert.deepEqual(notifications("stream"), []);
  });

  test("leaving a private channel: stream delete to a user who can no longer see it (not to administrators or the creator)", async () => {
    const leaver = await newUser("Private leaver");
    const priv = await newChannel(u().member, { invite_only: true, principals: [u().member.id, leaver.id, u().admin.id] });
    t.clearEvents();
    assertSuccess(await unsubscribe(leaver, { subscriptions: [priv.name] }));
    const deleted = onlyNotification("stream", "delete");
    assert.deepEqual(deleted.event, { type: "stream", op: "delete", streams: [{ stream_id: priv.id }], stream_ids: [priv.id], for_archiving: false });
    assert.deepEqual(deleted.userIds, [leaver.id]);
    const peer = onlyNotification("subscription", "peer_remove");
    assert.deepEqual(sorted(peer.userIds), sorted([u().owner.id, u().admin.id, u().member.id]));
    INVALID_ID(await t.api(leaver, "GET", `/streams/${priv.id}`));

    t.clearEvents();
    assertSuccess(await unsubscribe(u().admin, { subscriptions: [priv.name] }));
    assertSuccess(await unsubscribe(u().member, { subscriptions: [priv.name] }));
    assert.deepEqual(notifications("stream", "delete"), []);
    // The creator still administers it, so still sees it.
    assert.equal((await getStream(u().member, priv.id)).stream_id, priv.id);
  });

  test("guests may leave channels; anyone may leave an archived channel", async () => {
    const pub = await newChannel(u().member, { principals: [u().member.id, u().guest.id] });
    assert.deepEqual(assertSuccess(await unsubscribe(u().guest, { subscriptions: [pub.name] })).removed, [pub.name]);
    const archived = await newChannel(u().member);
    assertSuccess(await t.api(u().member, "DELETE", `/streams/${archived.id}`));
    assert.deepEqual(assertSuccess(await unsubscribe(u().member, { subscriptions: [archived.name] })).removed, [archived.name]);
  });
});

describe("PATCH /users/me/subscriptions", () => {
  test("add and delete in one request; the answer merges both", async () => {
    const leave = await newChannel(u().member);
    const join = uniqueName("Joined by patch");
    const body = assertSuccess(await t.api(u().member, "PATCH", "/users/me/subscriptions", { add: [{ name: join, description: "via patch" }], delete: [leave.name] }));
    assert.deepEqual(body, { result: "success", msg: "", subscribed: { [u().member.id]: [join] }, already_subscribed: {}, removed: [leave.name], not_removed: [] });
    const joined = await getStream(u().member, await channelId(join));
    assert.equal(joined.description, "via patch");
    assert.equal(await isSubscribed(u().member.id, leave.id), false);
    // Zulip composes both views: each half is present, empty when it had nothing to do.
    const onlyDelete = assertSuccess(await t.api(u().member, "PATCH", "/users/me/subscriptions", { delete: [join] }));
    assert.deepEqual(onlyDelete, { result: "success", msg: "", subscribed: {}, already_subscribed: {}, removed: [join], not_removed: [] });
    const onlyAdd = assertSuccess(await t.api(u().member, "PATCH", "/users/me/subscriptions", { add: [{ name: join }] }));
    assert.deepEqual(onlyAdd, { result: "success", msg: "", subscribed: { [u().member.id]: [join] }, already_subscribed: {}, removed: [], not_removed: [] });
  });

  test("nothing to do", async () => {
    const msg = 'Nothing to do. Specify at least one of "add" or "delete".';
    assertError(await t.api(u().member, "PATCH", "/users/me/subscriptions"), 400, "BAD_REQUEST", msg);
    assertError(await t.api(u().member, "PATCH", "/users/me/subscriptions", { add: [], delete: [] }), 400, "BAD_REQUEST", msg);
  });

  test("one transaction: a failing delete undoes the add", async () => {
    const join = uniqueName("Rolled back");
    assertError(await t.api(u().member, "PATCH", "/users/me/subscriptions", { add: [{ name: join }], delete: ["no such channel here"] }), 400, "STREAM_DOES_NOT_EXIST", "Channel 'no such channel here' does not exist", {
      stream: "no such channel here",
    });
    assert.equal(await findChannelId(join), undefined);
  });

  test("guests may not add", async () => {
    const pub = await newChannel(u().member);
    GUESTS_NOT_ALLOWED(await t.api(u().guest, "PATCH", "/users/me/subscriptions", { add: [{ name: pub.name }] }));
    GUESTS_NOT_ALLOWED(await t.api(u().guest, "PATCH", "/users/me/subscriptions", { add: [{ name: uniqueName("Guest patch") }], delete: [pub.name] }));
    assert.equal(await isSubscribed(u().guest.id, pub.id), false);
  });
});

describe("POST /users/me/subscriptions/properties", () => {
  function setProps(user: TestUser, data: unknown[]): Promise<ApiResponse> {
    return t.api(user, "POST", "/users/me/subscriptions/properties", { subscription_data: data });
  }

  test("each property is stored, read back and announced to the user alone", async () => {
    const user = await freshUser("Tweaker");
    const { id } = await newChannel(user);
    const cases: [string, unknown][] = [
      ["color", "#AbCdEf"],
      ["color", "#abc"],
      ["pin_to_top", true],
      ["desktop_notifications", true],
      ["audible_notifications", false],
      ["push_notifications", true],
      ["email_notifications", false],
      ["wildcard_mentions_notify", true],
      ["desktop_notifications", false],
    ];
    for (const [property, value] of cases) {
      t.clearEvents();
      const body = assertSuccess(await setProps(user, [{ stream_id: id, property, value }]));
      assert.deepEqual(body, { result: "success", msg: "" });
      assert.equal((await mySubscription(user, id))[property], value, property);
      const n = onlyNotification("subscription", "update");
      assert.deepEqual(n.event, { type: "subscription", op: "update", property, value, stream_id: id });
      assert.deepEqual(n.userIds, [user.id]);
    }
    const sub = await mySubscription(user, id);
    assert.deepEqual(
      [sub.color, sub.pin_to_top, sub.desktop_notifications, sub.audible_notifications, sub.push_notifications, sub.email_notifications, sub.wildcard_mentions_notify],
      ["#abc", true, false, false, true, false, true],
    );
  });

  test("is_muted and in_home_view are one setting; each change sends in_home_view then is_muted", async () => {
    const user = await freshUser("Muter");
    const { id } = await newChannel(user);
    const update = (property: string, value: boolean) => ({ type: "subscription", op: "update", property, value, stream_id: id });
    const cases: [string, boolean, boolean][] = [
      ["in_home_view", false, true],
      ["in_home_view", true, false],
      ["is_muted", true, true],
      ["is_muted", false, false],
    ];
    for (const [property, value, muted] of cases) {
      t.clearEvents();
      assertSuccess(await setProps(user, [{ stream_id: id, property, value }]));
      const sub = await mySubscription(user, id);
      assert.equal(sub.is_muted, muted);
      assert.equal(sub.in_home_view, !muted);
      assert.deepEqual(
        notifications("subscription", "update").map((n) => n.event),
        [update("in_home_view", !muted), update("is_muted", muted)],
      );
    }
  });

  test("several changes in one request", async () => {
    const user = await newUser("Batcher");
    const a = await newChannel(user);
    const b = await newChannel(user);
    assertSuccess(await setProps(user, [
      { stream_id: a.id, property: "pin_to_top", value: true },
      { stream_id: b.id, property: "color", value: "#010203" },
      { stream_id: a.id, property: "is_muted", value: true },
    ]));
    const subA = await mySubscription(user, a.id);
    const subB = await mySubscription(user, b.id);
    assert.deepEqual([subA.pin_to_top, subA.is_muted, subB.color], [true, true, "#010203"]);
  });

  test("errors", async () => {
    const user = await newUser("Erring");
    const { id } = await newChannel(user);
    const notMine = await newChannel(u().member);
    const priv = await newChannel(u().moderator, { invite_only: true });
    const archived = await newChannel(user);
    assertSuccess(await t.api(user, "DELETE", `/streams/${archived.id}`));
    const cases: [unknown, string][] = [
      [{ stream_id: id, property: "color", value: "blue" }, "color is not a valid hex color code"],
      [{ stream_id: id, property: "color", value: "#12345g" }, "color is not a valid hex color code"],
      [{ stream_id: id, property: "pin_to_top", value: "true" }, "pin_to_top is not a boolean"],
      [{ stream_id: id, property: "in_home_view", value: "#abcdef" }, "in_home_view is not a boolean"],
      [{ stream_id: id, property: "x", value: true }, "Unknown subscription property: x"],
      [{ stream_id: id, property: "name", value: "renamed" }, "Unknown subscription property: name"],
      [{ stream_id: notMine.id, property: "pin_to_top", value: true }, `Not subscribed to channel ID ${notMine.id}`],
      [{ stream_id: 987654, property: "pin_to_top", value: true }, "Invalid channel ID"],
      [{ stream_id: priv.id, property: "pin_to_top", value: true }, "Invalid channel ID"],
      [{ stream_id: archived.id, property: "pin_to_top", value: true }, "Invalid channel ID"],
    ];
    for (const [item, msg] of cases) assertError(await setProps(user, [item]), 400, "BAD_REQUEST", msg);
    assertError(await t.api(user, "POST", "/users/me/subscriptions/properties"), 400, "REQUEST_VARIABLE_MISSING", "Missing 'subscription_data' argument");
  });

  test("every item is checked before anything changes", async () => {
    const user = await newUser("Atomic");
    const { id } = await newChannel(user);
    const notMine = await newChannel(u().member);
    t.clearEvents();
    assertError(
      await setProps(user, [
        { stream_id: id, property: "pin_to_top", value: true },
        { stream_id: id, property: "bogus", value: true },
      ]),
      400,
      "BAD_REQUEST",
      "Unknown subscription property: bogus",
    );
    assertError(
      await setProps(user, [
        { stream_id: id, property: "pin_to_top", value: true },
        { stream_id: notMine.id, property: "pin_to_top", value: true },
      ]),
      400,
      "BAD_REQUEST",
      `Not subscribed to channel ID ${notMine.id}`,
    );
    assert.equal((await mySubscription(user, id)).pin_to_top, false);
    assert.deepEqual(t.events, []);
  });
});

describe("PATCH and POST /users/me/subscriptions/{stream_id}", () => {
  for (const method of ["PATCH", "POST"]) {
    test(`${method}: one property and value`, async () => {
      const user = await newUser(`Single ${method}`);
      const { id } = await newChannel(user);
      const path = `/users/me/subscriptions/${id}`;
      assertSuccess(await t.api(user, method, path, { property: "color", value: "#123abc" }));
      assertSuccess(await t.api(user, method, path, { property: "pin_to_top", value: true }));
      t.clearEvents();
      assertSuccess(await t.api(user, method, path, { property: "in_home_view", value: false }));
      assert.deepEqual(
        notifications("subscription", "update").map((n) => [n.event.property, n.event.value]),
        [
          ["in_home_view", false],
          ["is_muted", true],
        ],
      );
      const sub = await mySubscription(user, id);
      assert.deepEqual([sub.color, sub.pin_to_top, sub.is_muted, sub.in_home_view], ["#123abc", true, true, false]);
      assertError(await t.api(user, method, path, { property: "color", value: "nope" }), 400, "BAD_REQUEST", "color is not a valid hex color code");
      assertError(await t.api(user, method, path, { property: "pin_to_top", value: "yes" }), 400, "BAD_REQUEST", "pin_to_top is not a boolean");
      assertError(await t.api(user, method, path, { property: "x", value: true }), 400, "BAD_REQUEST", "Unknown subscription property: x");
      assertError(await t.api(user, method, "/users/me/subscriptions/987654", { property: "pin_to_top", value: true }), 400, "BAD_REQUEST", "Invalid channel ID");
    });
  }
});

describe("GET /users/{user_id}/subscriptions/{stream_id}", () => {
  test("is_subscribed, and its errors", async () => {
    const { id } = await newChannel(u().member);
    assert.deepEqual(assertSuccess(await t.api(u().moderator, "GET", `/users/${u().member.id}/subscriptions/${id}`)), { result: "success", msg: "", is_subscribed: true });
    assert.deepEqual(assertSuccess(await t.api(u().member, "GET", `/users/${u().moderator.id}/subscriptions/${id}`)), { result: "success", msg: "", is_subscribed: false });
    assertError(await t.api(u().member, "GET", `/users/999999/subscriptions/${id}`), 400, "BAD_REQUEST", "No such user");
    INVALID_ID(await t.api(u().member, "GET", `/users/${u().member.id}/subscriptions/987654`));
    const priv = await newChannel(u().moderator, { invite_only: true });
    INVALID_ID(await t.api(u().member, "GET", `/users/${u().moderator.id}/subscriptions/${priv.id}`));
    assert.equal(assertSuccess(await t.api(u().admin, "GET", `/users/${u().moderator.id}/subscriptions/${priv.id}`)).is_subscribed, true);
    INVALID_ID(await t.api(u().guest, "GET", `/users/${u().member.id}/subscriptions/${id}`));
  });
});

// ---------------------------------------------------------------------------
// Permission matrix: every role against public and private channels, subscribed or not.

describe("permission matrix", () => {
  const ROLES = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;
  type RoleKey = (typeof ROLES)[number];
  let creator: TestUser;
  let victim: TestUser;

  before(async () => {
    creator = await newUser("Matrix Creator");
    victim = await newUser("Matrix Victim");
  });

  const isAdminRole = (role: RoleKey) => role === "owner" || role === "admin";

  // Zulip's rules (lib/streams.py), as the expectations of each operation.
  function canSeeMetadata(role: RoleKey, isPrivate: boolean, subscribed: boolean): boolean {
    if (subscribed) return true;
    if (role === "guest") return false;
    return !isPrivate || isAdminRole(role);
  }
  function hasContent(role: RoleKey, isPrivate: boolean, subscribed: boolean): boolean {
    if (subscribed) return true;
    if (role === "guest") return false;
    return !isPrivate;
  }

  for (const role of ROLES) {
    for (const isPrivate of [false, true]) {
      for (const subscribed of [true, false]) {
        const label = `${role} × ${isPrivate ? "private" : "public"} × ${subscribed ? "subscribed" : "not subscribed"}`;
        test(label, async () => {
          const actor = u()[role];
          const name = uniqueName(`Matrix ${role}`);
          const principals = [creator.id, victim.id, ...(subscribed ? [actor.id] : [])];
          assertSuccess(await subscribe(creator, { subscriptions: [{ name }], invite_only: isPrivate, principals }));
          const id = await channelId(name);

          // List: GET /streams/{id}.
          const read = await t.api(actor, "GET", `/streams/${id}`);
          if (canSeeMetadata(role, isPrivate, subscribed)) assert.equal(assertSuccess(read).stream.stream_id, id);
          else INVALID_ID(read);

          // Administer: PATCH description.
          const administer = await t.api(actor, "PATCH", `/streams/${id}`, { description: `by ${role}` });
          if (isAdminRole(role)) assertSuccess(administer);
          else if (hasContent(role, isPrivate, subscribed)) assertError(administer, 400, "BAD_REQUEST", "You do not have permission to administer this channel.");
          else INVALID_ID(administer);
          assert.equal((await getStream(creator, id)).description, isAdminRole(role) ? `by ${role}` : "");

          // Subscribe self.
          const join = await subscribe(actor, { subscriptions: [{ name }] });
          if (role === "guest") GUESTS_NOT_ALLOWED(join);
          else if (subscribed) assert.deepEqual(assertSuccess(join).already_subscribed, { [actor.id]: [name] });
          else if (!isPrivate) assert.deepEqual(assertSuccess(join).subscribed, { [actor.id]: [name] });
          else assertError(join, 400, "BAD_REQUEST", `Unable to access channel (${name}).`);

          // Unsubscribe another subscriber.
          const remove = await unsubscribe(actor, { subscriptions: [name], principals: [victim.id] });
          if (isAdminRole(role)) assert.deepEqual(assertSuccess(remove), { result: "success", msg: "", removed: [name], not_removed: [] });
          else INSUFFICIENT(remove);
          assert.equal(await isSubscribed(victim.id, id), !isAdminRole(role));
        });
      }
    }
  }
});

function channelWithDefaults(id: number, name: string, creatorId: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return expectedChannel(sys, NOW, id, name, creatorId, overrides);
}
