// API-level tests of the event-queue endpoints: POST /register (the initial
// state per role and per client capability, parameter validation), GET
// /events (long-polling, heartbeats, acknowledgement and pruning, errors),
// DELETE /events, queue expiry, event_types filtering, capability-dependent
// events, and shutdown while a poll waits.
//
// Timing-dependent behaviour runs on separate apps with short intervals; the
// shared app keeps the defaults (45 s heartbeat), so its blocking polls are
// always ended by an event, a newer poll or a DELETE.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { assertError, assertSuccess, startTestApp, uniqueName, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

// Tests read arbitrary fields of replies.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

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
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A blocking GET /events (no dont_block), with how long it took to answer. */
async function poll(app: TestApp, user: TestUser, queueId: string, lastEventId = -1): Promise<ApiResponse & { ms: number }> {
  const started = Date.now();
  const response = await app.api(user, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId });
  return { ...response, ms: Date.now() - started };
}

/** GET /events with dont_block, unchecked. */
function peek(app: TestApp, user: TestUser, queueId: string, lastEventId = -1): Promise<ApiResponse> {
  return app.api(user, "GET", "/events", { queue_id: queueId, last_event_id: lastEventId, dont_block: true });
}

/** Waits until the server holds a waiting long-poll on the queue, so events sent next are sure to end it. */
async function untilWaiting(app: TestApp, user: TestUser, queueId: string): Promise<void> {
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    if (app.services.queues.isWaiting(queueId)) return;
    await sleep(5);
  }
  assert.fail(`no long-poll started on queue ${queueId}`);
}

/** Asserts the answer of a queue that does not exist (for this user). */
function assertBadQueue(response: ApiResponse, queueId: string): void {
  assertError(response, 400, "BAD_EVENT_QUEUE_ID", `Bad event queue ID: ${queueId}`, { queue_id: queueId });
}

async function channelId(name: string, viewer: TestUser): Promise<number> {
  return assertSuccess(await t.api(viewer, "GET", "/get_stream_id", { stream: name })).stream_id;
}

/** Creates a channel as `actor` (subscribed). */
async function newChannel(actor: TestUser, params: Record<string, unknown> = {}, prefix = "events channel"): Promise<{ id: number; name: string }> {
  const name = uniqueName(prefix);
  assertSuccess(await t.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], ...params }));
  return { id: await channelId(name, actor), name };
}

async function newGroup(actor: TestUser, members: number[]): Promise<number> {
  return assertSuccess(await t.api(actor, "POST", "/user_groups/create", { name: uniqueName("events group"), description: "", members })).group_id;
}

const TIMEZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo", "Africa/Nairobi", "Australia/Sydney", "America/Lima", "Europe/Lisbon", "Asia/Kolkata"];
let tzCounter = 0;
/** A time zone different from the last one handed out, so each PATCH /settings really changes it. */
function nextTimezone(): string {
  return TIMEZONES[tzCounter++ % TIMEZONES.length]!;
}

async function setTimezone(user: TestUser, timezone: string): Promise<void> {
  assertSuccess(await t.api(user, "PATCH", "/settings", { timezone }));
}

const ids = (list: Json[], key = "stream_id"): number[] => list.map((x) => x[key]);
const types = (events: Json[]): string[] => events.map((e) => e.type);

// ---------------------------------------------------------------------------
// 1. POST /register: the response shape and which sections are returned

describe("POST /register: shape and sections", () => {
  test("a fresh queue: queue_id, last_event_id -1, version keys", async () => {
    const reply = await t.register(u().member);
    assert.equal(typeof reply.queue_id, "string");
    assert.ok(reply.queue_id.length > 0);
    assert.equal(reply.last_event_id, -1);
    assert.equal(typeof reply.zulip_version, "string");
    assert.ok(Number.isInteger(reply.zulip_feature_level) && reply.zulip_feature_level > 0, String(reply.zulip_feature_level));
    assert.equal(typeof reply.zulip_merge_base, "string");
    assert.equal("ignored_parameters_unsupported" in reply, false);
    // Every registration gets a queue of its own.
    const second = await t.register(u().member);
    assert.notEqual(second.queue_id, reply.queue_id);
    // The queue exists and is empty.
    assert.deepEqual(assertSuccess(await peek(t, u().member, reply.queue_id)).events, []);
  });

  test("with event_types null, every section Parley serves is present", async () => {
    const reply = await t.register(u().member, { event_types: null });
    const sections = [
      "alert_words",
      "custom_profile_fields",
      "custom_profile_field_types",
      "onboarding_steps",
      "max_message_id",
      "drafts",
      "saved_snippets",
      "navigation_views",
      "scheduled_messages",
      "reminders",
      "user_topics",
      "muted_users",
      "presences",
      "server_timestamp",
      "presence_last_update_id",
      "realm_user_groups",
      "realm_user_settings_defaults",
      "realm_domains",
      "realm_emoji",
      "realm_linkifiers",
      "realm_filters",
      "realm_playgrounds",
      "realm_users",
      "realm_non_active_users",
      "cross_realm_bots",
      "realm_bots",
      "realm_embedded_bots",
      "realm_incoming_webhook_bots",
      "recent_private_conversations",
      "starred_messages",
      "subscriptions",
      "unsubscribed",
      "never_subscribed",
      "unread_msgs",
      "streams",
      "realm_default_streams",
      "realm_default_stream_groups",
      "channel_folders",
      "user_settings",
      "user_status",
      "has_zoom_token",
      "giphy_api_key",
      "push_devices",
    ];
    for (const key of sections) assert.ok(key in reply, `missing section ${key}`);

    assert.equal(reply.max_message_id, -1);
    assert.deepEqual(reply.unread_msgs, { pms: [], streams: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false });
    for (const key of ["alert_words", "drafts", "scheduled_messages", "reminders", "starred_messages", "recent_private_conversations", "realm_filters"]) {
      assert.deepEqual(reply[key], [], key);
    }
    assert.deepEqual(reply.realm_emoji, {});
    assert.deepEqual(reply.presences, {});
    assert.equal(typeof reply.server_timestamp, "number");
    assert.ok(Math.abs(reply.server_timestamp - Date.now() / 1000) < 60);
    assert.equal(reply.custom_profile_field_types.PRONOUNS.id, 8);
    assert.equal(reply.custom_profile_field_types.SHORT_TEXT.id, 1);
    assert.ok(Array.isArray(reply.realm_user_groups));
    assert.ok(Array.isArray(reply.channel_folders));
    assert.equal(reply.user_settings.timezone, "");
    assert.equal(reply.user_settings.enter_sends, false);
    assert.ok(Array.isArray(reply.user_settings.emojiset_choices));
    assert.ok(Array.isArray(reply.user_settings.available_notification_sounds));
    assert.equal(reply.realm_user_settings_defaults.enter_sends, false);
    assert.equal("timezone" in reply.realm_user_settings_defaults, false);
  });

  test("the realm section: names, limits, policies, typing timings, long-poll timeout", async () => {
    const reply = await t.register(u().member);
    assert.equal(reply.realm_name, "Test Org");
    assert.equal(reply.realm_url, "http://parley.test");
    assert.equal(reply.realm_uri, "http://parley.test");
    assert.equal(reply.max_stream_name_length, 60);
    assert.equal(reply.max_stream_description_length, 1024);
    assert.equal(reply.max_topic_length, 60);
    assert.equal(reply.max_message_length, 10000);
    assert.equal(reply.max_channel_folder_description_length, 1024);
    assert.equal(typeof reply.max_channel_folder_name_length, "number");
    assert.equal(reply.max_bulk_new_subscription_messages, 100);
    assert.equal(typeof reply.max_file_upload_size_mib, "number");
    assert.equal(reply.max_avatar_file_size_mib, 5);
    assert.equal(reply.realm_empty_topic_display_name, "general chat");
    assert.equal(reply.realm_topics_policy, "allow_empty_topic");
    assert.equal(reply.realm_mandatory_topics, false);
    assert.equal(reply.realm_message_edit_history_visibility_policy, "all");
    assert.equal(reply.realm_allow_edit_history, true);
    assert.equal(reply.server_typing_started_expiry_period_milliseconds, 45000);
    assert.equal(reply.server_typing_stopped_wait_period_milliseconds, 12000);
    assert.equal(reply.server_typing_started_wait_period_milliseconds, 30000);
    assert.equal(reply.realm_new_stream_announcements_stream_id, -1);
    assert.equal(reply.realm_signup_announcements_stream_id, -1);
    assert.equal(reply.realm_create_public_stream_policy, 1);
    assert.equal(reply.realm_create_web_public_stream_policy, 7);
    assert.equal(typeof reply.server_generation, "number");
    assert.ok(reply.server_supported_permission_settings.realm.can_create_public_channel_group);
    // Clients use it as the HTTP timeout of GET /events: it must outlast a heartbeat wait.
    assert.ok(Number.isInteger(reply.event_queue_longpoll_timeout_seconds));
    assert.ok(reply.event_queue_longpoll_timeout_seconds > t.services.config.eventHeartbeatMs / 1000, String(reply.event_queue_longpoll_timeout_seconds));
    // Keys modern servers no longer send.
    for (const key of ["realm_email_address_visibility", "realm_notifications_stream_id", "stream_name_max_length"]) assert.equal(key in reply, false, key);
  });

  test("realm_can_*_group settings hold the default system groups' IDs", async () => {
    const reply = await t.register(u().member);
    // Zulip's defaults for a new (non-education) organization.
    const expected: Record<string, string> = {
      create_multiuse_invite_group: "role:administrators",
      can_access_all_users_group: "role:everyone",
      can_add_subscribers_group: "role:members",
      can_add_custom_emoji_group: "role:members",
      can_create_bots_group: "role:members",
      can_create_groups: "role:members",
      can_create_public_channel_group: "role:members",
      can_create_private_channel_group: "role:members",
      can_create_web_public_channel_group: "role:owners",
      can_create_write_only_bots_group: "role:members",
      can_delete_any_message_group: "role:administrators",
      can_delete_own_message_group: "role:everyone",
      can_invite_users_group: "role:members",
      can_manage_all_groups: "role:owners",
      can_manage_billing_group: "role:administrators",
      can_mention_many_users_group: "role:administrators",
      can_move_messages_between_channels_group: "role:members",
      can_move_messages_between_topics_group: "role:everyone",
      can_resolve_topics_group: "role:everyone",
      can_set_delete_message_policy_group: "role:moderators",
      can_set_topics_policy_group: "role:members",
      can_summarize_topics_group: "role:everyone",
      direct_message_initiator_group: "role:everyone",
      direct_message_permission_group: "role:everyone",
    };
    for (const [setting, group] of Object.entries(expected)) {
      assert.equal(reply[`realm_${setting}`], sys[group], `realm_${setting}`);
    }
    // The system groups in realm_user_groups carry the same IDs.
    const byName = Object.fromEntries(reply.realm_user_groups.filter((g: Json) => g.is_system_group).map((g: Json) => [g.name, g.id]));
    for (const name of ["role:everyone", "role:members", "role:administrators", "role:owners", "role:moderators", "role:nobody"]) {
      assert.equal(byName[name], sys[name], name);
    }
  });

  test("muted_topics is returned along with user_topics when no event types are given (Zulip)", async () => {
    // events.py: want("muted_topics") and (event_types is None or not want("user_topic")).
    const all = await t.register(u().member);
    assert.deepEqual(all.muted_topics, [], "muted_topics with event_types null");
    assert.deepEqual(all.user_topics, []);
    const legacyOnly = await t.register(u().member, { fetch_event_types: ["muted_topics"] });
    assert.deepEqual(legacyOnly.muted_topics, []);
    assert.equal("user_topics" in legacyOnly, false);
    const both = await t.register(u().member, { fetch_event_types: ["muted_topics", "user_topic"] });
    assert.equal("muted_topics" in both, false);
    assert.deepEqual(both.user_topics, []);
  });

  test("fetch_event_types limits the sections; unknown names are ignored", async () => {
    const reply = await t.register(u().member, { fetch_event_types: ["realm_user", "no_such_event_type"] });
    for (const key of ["realm_users", "realm_non_active_users", "cross_realm_bots", "user_id", "is_admin", "full_name"]) assert.ok(key in reply, key);
    for (const key of ["streams", "subscriptions", "realm_name", "user_settings", "realm_user_groups", "realm_bots", "max_message_id", "unread_msgs"]) {
      assert.equal(key in reply, false, key);
    }
    assert.equal(reply.last_event_id, -1);
    assert.equal("ignored_parameters_unsupported" in reply, false);

    const streamsOnly = await t.register(u().member, { fetch_event_types: ["stream"] });
    assert.ok("streams" in streamsOnly);
    assert.equal("realm_users" in streamsOnly, false);
    assert.equal("subscriptions" in streamsOnly, false);

    const nothing = await t.register(u().member, { fetch_event_types: [] });
    assert.equal("realm_users" in nothing, false);
    assert.equal("streams" in nothing, false);
    assert.equal(typeof nothing.queue_id, "string");
    assert.equal(typeof nothing.zulip_feature_level, "number");
  });

  test("event_types doubles as the fetch list when fetch_event_types is absent", async () => {
    const reply = await t.register(u().member, { event_types: ["subscription"] });
    for (const key of ["subscriptions", "unsubscribed", "never_subscribed"]) assert.ok(key in reply, key);
    assert.equal("streams" in reply, false);
    assert.equal("realm_users" in reply, false);
    // fetch_event_types wins over event_types for the state.
    const fetched = await t.register(u().member, { event_types: ["subscription"], fetch_event_types: ["realm_user"] });
    assert.ok("realm_users" in fetched);
    assert.equal("subscriptions" in fetched, false);
  });

  test("unread_msgs only when both message and update_message_flags are wanted", async () => {
    const onlyMessage = await t.register(u().member, { fetch_event_types: ["message"] });
    assert.equal("unread_msgs" in onlyMessage, false);
    assert.equal(onlyMessage.max_message_id, -1);
    const onlyFlags = await t.register(u().member, { fetch_event_types: ["update_message_flags"] });
    assert.equal("unread_msgs" in onlyFlags, false);
    assert.equal("max_message_id" in onlyFlags, false);
    const both = await t.register(u().member, { fetch_event_types: ["message", "update_message_flags"] });
    assert.deepEqual(both.unread_msgs, { pms: [], streams: [], huddles: [], mentions: [], count: 0, old_unreads_missing: false });
  });

  test("legacy top-level settings follow update_display_settings / update_global_notifications, not user_settings (Zulip)", async () => {
    // events.py: the legacy keys are written under want("update_display_settings") and
    // want("update_global_notifications") when user_settings_object is false.
    const display = await t.register(u().member, { fetch_event_types: ["update_display_settings"] });
    assert.equal(display.enter_sends, false, "enter_sends under update_display_settings");
    assert.equal(display.timezone, "");
    assert.ok(Array.isArray(display.emojiset_choices));
    assert.equal("enable_sounds" in display, false);
    assert.equal("user_settings" in display, false);

    const notifications = await t.register(u().member, { fetch_event_types: ["update_global_notifications"] });
    assert.equal(notifications.enable_sounds, true, "enable_sounds under update_global_notifications");
    assert.ok(Array.isArray(notifications.available_notification_sounds));
    assert.equal("enter_sends" in notifications, false);

    const modern = await t.register(u().member, { fetch_event_types: ["user_settings"] });
    assert.equal(modern.user_settings.enter_sends, false);
    assert.equal("enter_sends" in modern, false, "no top-level legacy keys for user_settings alone");
    assert.equal("timezone" in modern, false);
  });
});

// ---------------------------------------------------------------------------
// 2. The state per role: privacy and consistency with the REST endpoints

describe("POST /register: state per role", () => {
  let secret: { id: number; name: string };
  let open: { id: number; name: string };

  before(async () => {
    secret = await newChannel(u().admin, { invite_only: true }, "events secret");
    open = await newChannel(u().admin, {}, "events open");
    assertSuccess(await t.api(u().admin, "POST", "/default_streams", { stream_id: open.id }));
  });

  test("a private channel is in its creator's streams and subscriptions only", async () => {
    const admin = await t.register(u().admin);
    assert.ok(ids(admin.streams).includes(secret.id));
    const sub = admin.subscriptions.find((s: Json) => s.stream_id === secret.id);
    assert.ok(sub, "admin subscribed");
    assert.equal(sub.invite_only, true);
    assert.equal(admin.streams.find((s: Json) => s.stream_id === secret.id).invite_only, true);

    for (const who of ["member", "guest", "moderator"] as const) {
      const state = await t.register(u()[who]);
      for (const key of ["streams", "subscriptions", "unsubscribed", "never_subscribed"]) {
        assert.equal(ids(state[key]).includes(secret.id), false, `${who}: ${key}`);
      }
    }
  });

  test("public channels: a member sees them (never_subscribed), a guest does not", async () => {
    const member = await t.register(u().member);
    assert.ok(ids(member.streams).includes(open.id));
    assert.ok(ids(member.never_subscribed).includes(open.id));
    assert.equal(ids(member.subscriptions).includes(open.id), false);
    const guest = await t.register(u().guest);
    assert.equal(ids(guest.streams).includes(open.id), false);
    assert.equal(ids(guest.never_subscribed).includes(open.id), false);
  });

  test("realm_default_streams: channel IDs, and [] for guests", async () => {
    const member = await t.register(u().member);
    assert.ok(member.realm_default_streams.includes(open.id), JSON.stringify(member.realm_default_streams));
    assert.ok(member.realm_default_streams.every((id: unknown) => typeof id === "number"));
    const guest = await t.register(u().guest);
    assert.deepEqual(guest.realm_default_streams, []);
    assert.deepEqual(guest.realm_default_stream_groups, []);
  });

  test("a channel left is in unsubscribed, not in subscriptions or never_subscribed", async () => {
    const left = await newChannel(u().member, {}, "events left");
    assertSuccess(await t.api(u().member, "DELETE", "/users/me/subscriptions", { subscriptions: [left.name] }));
    const state = await t.register(u().member);
    assert.ok(ids(state.unsubscribed).includes(left.id));
    assert.equal(ids(state.subscriptions).includes(left.id), false);
    assert.equal(ids(state.never_subscribed).includes(left.id), false);
    assert.ok(ids(state.streams).includes(left.id));
  });

  test("role flags and channel-creation rights per role", async () => {
    const expected = {
      owner: { is_owner: true, is_admin: true, is_moderator: false, is_guest: false, pub: true, priv: true, web: true, invite: true },
      admin: { is_owner: false, is_admin: true, is_moderator: false, is_guest: false, pub: true, priv: true, web: false, invite: true },
      moderator: { is_owner: false, is_admin: false, is_moderator: true, is_guest: false, pub: true, priv: true, web: false, invite: true },
      member: { is_owner: false, is_admin: false, is_moderator: false, is_guest: false, pub: true, priv: true, web: false, invite: true },
      guest: { is_owner: false, is_admin: false, is_moderator: false, is_guest: true, pub: false, priv: false, web: false, invite: false },
      bot: { is_owner: false, is_admin: false, is_moderator: false, is_guest: false, pub: true, priv: true, web: false, invite: true },
    };
    for (const [who, want] of Object.entries(expected)) {
      const user = u()[who as keyof typeof expected];
      const state = await t.register(user, { fetch_event_types: ["realm_user"] });
      const actual = {
        is_owner: state.is_owner,
        is_admin: state.is_admin,
        is_moderator: state.is_moderator,
        is_guest: state.is_guest,
        pub: state.can_create_public_streams,
        priv: state.can_create_private_streams,
        web: state.can_create_web_public_streams,
        invite: state.can_invite_others_to_realm,
      };
      assert.deepEqual(actual, want, who);
      assert.equal(state.can_create_streams, want.pub || want.priv || want.web, `${who}: can_create_streams`);
      // The current-user keys agree with GET /users/me.
      const me = assertSuccess(await t.api(user, "GET", "/users/me"));
      assert.equal(state.user_id, user.id, who);
      assert.equal(state.user_id, me.user_id, who);
      assert.equal(state.email, me.email, who);
      assert.equal(state.delivery_email, user.email, who);
      assert.equal(state.full_name, me.full_name, who);
      assert.equal(typeof state.avatar_url, "string");
    }
  });

  test("realm_bots: the bots one owns, every bot for administrators", async () => {
    const member = await t.register(u().member, { fetch_event_types: ["realm_bot"] });
    assert.deepEqual(ids(member.realm_bots, "user_id"), [u().bot.id]);
    const bot = member.realm_bots[0];
    assert.equal(bot.owner_id, u().member.id);
    assert.equal(bot.api_key, u().bot.apiKey);
    assert.equal(bot.is_active, true);
    assert.equal(bot.full_name, "Bob Bot");
    for (const key of ["bot_type", "default_sending_stream", "default_events_register_stream", "default_all_public_streams", "avatar_url", "services", "email"]) {
      assert.ok(key in bot, key);
    }
    const moderator = await t.register(u().moderator, { fetch_event_types: ["realm_bot"] });
    assert.deepEqual(moderator.realm_bots, []);
    const guest = await t.register(u().guest, { fetch_event_types: ["realm_bot"] });
    assert.deepEqual(guest.realm_bots, []);
    for (const who of ["admin", "owner"] as const) {
      const state = await t.register(u()[who], { fetch_event_types: ["realm_bot"] });
      assert.ok(ids(state.realm_bots, "user_id").includes(u().bot.id), who);
    }
  });

  test("subscriptions match GET /users/me/subscriptions", async () => {
    await newChannel(u().admin, {}, "events another");
    for (const who of ["admin", "member"] as const) {
      const user = u()[who];
      const state = await t.register(user, { fetch_event_types: ["subscription"], include_subscribers: true, client_capabilities: { notification_settings_null: true } });
      const rest = assertSuccess(await t.api(user, "GET", "/users/me/subscriptions", { include_subscribers: true })).subscriptions;
      assert.deepEqual(state.subscriptions, rest, who);
      const plain = await t.register(user, { fetch_event_types: ["subscription"], client_capabilities: { notification_settings_null: true } });
      const restPlain = assertSuccess(await t.api(user, "GET", "/users/me/subscriptions")).subscriptions;
      assert.deepEqual(plain.subscriptions, restPlain, `${who} without subscribers`);
      for (const s of plain.subscriptions) assert.equal("subscribers" in s, false);
    }
    assert.ok((await t.register(u().admin, { fetch_event_types: ["subscription"] })).subscriptions.length >= 3);
  });

  test("include_subscribers adds subscribers to every list; 'partial' is accepted", async () => {
    const state = await t.register(u().member, { fetch_event_types: ["subscription"], include_subscribers: true });
    const never = state.never_subscribed.find((s: Json) => s.stream_id === open.id);
    assert.deepEqual(never.subscribers, [u().admin.id]);
    // "partial" may send partial_subscribers instead (Zulip does on large channels).
    const partial = await t.register(u().member, { fetch_event_types: ["subscription"], include_subscribers: "partial" });
    const partialEntry = partial.never_subscribed.find((s: Json) => s.stream_id === open.id);
    assert.ok(Array.isArray(partialEntry.subscribers ?? partialEntry.partial_subscribers), JSON.stringify(partialEntry));
    const without = await t.register(u().member, { fetch_event_types: ["subscription"] });
    assert.equal("subscribers" in without.never_subscribed.find((s: Json) => s.stream_id === open.id), false);
  });

  test("streams match GET /streams for a member", async () => {
    const state = await t.register(u().member, { fetch_event_types: ["stream"] });
    const rest = assertSuccess(await t.api(u().member, "GET", "/streams")).streams;
    const byId = (list: Json[]) => [...list].sort((a, b) => a.stream_id - b.stream_id);
    assert.deepEqual(byId(state.streams), byId(rest));
  });

  test("realm_users and realm_non_active_users match GET /users (without is_active)", async () => {
    const gone = await t.createUser(uniqueName("Events Gone"));
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${gone.id}`));
    for (const who of ["member", "guest", "admin"] as const) {
      const state = await t.register(u()[who], { fetch_event_types: ["realm_user"] });
      // Zulip's register always includes profile_data (for humans).
      const members = assertSuccess(await t.api(u()[who], "GET", "/users", { include_custom_profile_fields: true })).members;
      const strip = ({ is_active: _active, ...rest }: Json) => rest;
      assert.deepEqual(state.realm_users, members.filter((m: Json) => m.is_active).map(strip), who);
      assert.deepEqual(state.realm_non_active_users, members.filter((m: Json) => !m.is_active).map(strip), who);
      assert.ok(ids(state.realm_non_active_users, "user_id").includes(gone.id));
      assert.equal(ids(state.realm_users, "user_id").includes(gone.id), false);
      for (const person of [...state.realm_users, ...state.realm_non_active_users]) assert.equal("is_active" in person, false);
      // Ascending by user_id.
      const userIds = ids(state.realm_users, "user_id");
      assert.deepEqual(userIds, [...userIds].sort((a, b) => a - b));
    }
  });

  test("cross_realm_bots: the system bots, flagged, not among realm_users", async () => {
    const state = await t.register(u().member, { fetch_event_types: ["realm_user"] });
    assert.ok(state.cross_realm_bots.length > 0);
    for (const bot of state.cross_realm_bots) {
      assert.equal(bot.is_system_bot, true);
      assert.equal(bot.is_bot, true);
      assert.equal("is_active" in bot, false);
    }
    const botIds = ids(state.cross_realm_bots, "user_id");
    assert.equal(ids(state.realm_users, "user_id").some((id) => botIds.includes(id)), false);
    const names = state.cross_realm_bots.map((b: Json) => b.full_name);
    assert.deepEqual(names, [...names].sort());
  });
});

// ---------------------------------------------------------------------------
// 3. Client capabilities and the initial state

describe("POST /register: client capabilities", () => {
  test("archived channels only with archived_channels", async () => {
    const channel = await newChannel(u().member, {}, "events archived");
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${channel.id}`));
    const plain = await t.register(u().member);
    for (const key of ["streams", "subscriptions", "unsubscribed", "never_subscribed"]) {
      assert.equal(ids(plain[key]).includes(channel.id), false, key);
    }
    const capable = await t.register(u().member, { client_capabilities: { notification_settings_null: true, archived_channels: true } });
    const stream = capable.streams.find((s: Json) => s.stream_id === channel.id);
    assert.ok(stream, "in streams");
    assert.equal(stream.is_archived, true);
    const sub = capable.subscriptions.find((s: Json) => s.stream_id === channel.id);
    assert.ok(sub, "in subscriptions");
    assert.equal(sub.is_archived, true);
    // The admin (not subscribed) sees it in streams too, only with the capability.
    const admin = await t.register(u().admin, { fetch_event_types: ["stream"], client_capabilities: { archived_channels: true } });
    assert.ok(ids(admin.streams).includes(channel.id));
    const adminPlain = await t.register(u().admin, { fetch_event_types: ["stream"] });
    assert.equal(ids(adminPlain.streams).includes(channel.id), false);
  });

  test("deactivated groups only with include_deactivated_groups", async () => {
    const groupId = await newGroup(u().owner, [u().member.id]);
    assertSuccess(await t.api(u().owner, "POST", `/user_groups/${groupId}/deactivate`));
    const plain = await t.register(u().member, { fetch_event_types: ["realm_user_groups"] });
    assert.equal(ids(plain.realm_user_groups, "id").includes(groupId), false);
    const capable = await t.register(u().member, { fetch_event_types: ["realm_user_groups"], client_capabilities: { include_deactivated_groups: true } });
    const group = capable.realm_user_groups.find((g: Json) => g.id === groupId);
    assert.ok(group);
    assert.equal(group.deactivated, true);
    assert.deepEqual(group.members, [u().member.id]);
    // Same as GET /user_groups with include_deactivated_groups.
    const rest = assertSuccess(await t.api(u().member, "GET", "/user_groups", { include_deactivated_groups: true })).user_groups;
    assert.deepEqual(capable.realm_user_groups, rest);
    const restPlain = assertSuccess(await t.api(u().member, "GET", "/user_groups")).user_groups;
    assert.deepEqual(plain.realm_user_groups, restPlain);
  });

  test("notification_settings_null: null (inherit) with it, the user's booleans without", async () => {
    const channel = await newChannel(u().moderator, {}, "events notify");
    const keys = ["desktop_notifications", "audible_notifications", "push_notifications", "email_notifications", "wildcard_mentions_notify"];
    const withNull = await t.register(u().moderator, { fetch_event_types: ["subscription"], client_capabilities: { notification_settings_null: true } });
    const subNull = withNull.subscriptions.find((s: Json) => s.stream_id === channel.id);
    for (const key of keys) assert.equal(subNull[key], null, key);
    const legacy = await t.register(u().moderator, { fetch_event_types: ["subscription"], client_capabilities: { notification_settings_null: false } });
    const sub = legacy.subscriptions.find((s: Json) => s.stream_id === channel.id);
    // A new user's stream notification defaults: off, except wildcard mentions.
    assert.deepEqual(Object.fromEntries(keys.map((k) => [k, sub[k]])), {
      desktop_notifications: false,
      audible_notifications: false,
      push_notifications: false,
      email_notifications: false,
      wildcard_mentions_notify: true,
    });
    // Omitting client_capabilities is the same as notification_settings_null false.
    const omitted = await t.register(u().moderator, { fetch_event_types: ["subscription"] });
    assert.equal(omitted.subscriptions.find((s: Json) => s.stream_id === channel.id).desktop_notifications, false);
    // The user's own setting shows through.
    assertSuccess(await t.api(u().moderator, "PATCH", "/settings", { enable_stream_desktop_notifications: true }));
    const changed = await t.register(u().moderator, { fetch_event_types: ["subscription"] });
    assert.equal(changed.subscriptions.find((s: Json) => s.stream_id === channel.id).desktop_notifications, true);
    assertSuccess(await t.api(u().moderator, "PATCH", "/settings", { enable_stream_desktop_notifications: false }));
  });

  test("user_settings_object false: legacy settings at the top level too", async () => {
    const legacy = await t.register(u().member, { client_capabilities: { notification_settings_null: true, user_settings_object: false } });
    assert.equal(legacy.enter_sends, legacy.user_settings.enter_sends);
    assert.equal(legacy.enable_sounds, legacy.user_settings.enable_sounds);
    assert.equal(legacy.emojiset, legacy.user_settings.emojiset);
    assert.equal(legacy.timezone, legacy.user_settings.timezone);
    assert.deepEqual(legacy.emojiset_choices, legacy.user_settings.emojiset_choices);
    assert.deepEqual(legacy.available_notification_sounds, legacy.user_settings.available_notification_sounds);
    const modern = await t.register(u().member, { client_capabilities: { notification_settings_null: true, user_settings_object: true } });
    assert.ok("user_settings" in modern);
    for (const key of ["enter_sends", "enable_sounds", "emojiset", "timezone", "emojiset_choices", "available_notification_sounds"]) {
      assert.equal(key in modern, false, key);
    }
  });

  test("client_capabilities must be a JSON object of booleans", async () => {
    for (const value of [[], 5, "\"yes\"", null]) {
      assertError(await t.api(u().member, "POST", "/register", { client_capabilities: value }), 400, "BAD_REQUEST", "client_capabilities is not a dict");
    }
    assertError(
      await t.api(u().member, "POST", "/register", { client_capabilities: { notification_settings_null: true, archived_channels: "yes" } }),
      400,
      "BAD_REQUEST",
      'client_capabilities["archived_channels"] is not a boolean',
    );
    assertError(
      await t.api(u().member, "POST", "/register", { client_capabilities: { notification_settings_null: 1 } }),
      400,
      "BAD_REQUEST",
      'client_capabilities["notification_settings_null"] is not a boolean',
    );
    assertError(await t.api(u().member, "POST", "/register", { client_capabilities: "{nope" }), 400, "BAD_REQUEST", 'Argument "client_capabilities" is not valid JSON.');
    // Unknown capabilities are ignored.
    const reply = await t.register(u().member, { fetch_event_types: [], client_capabilities: { notification_settings_null: true, no_such_capability: true } });
    assert.equal(typeof reply.queue_id, "string");
  });
});

// ---------------------------------------------------------------------------
// 4. POST /register parameter errors

describe("POST /register: parameter errors", () => {
  const register = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/register", params);

  test("event_types / fetch_event_types: JSON, a list, of strings", async () => {
    for (const name of ["event_types", "fetch_event_types"]) {
      assertError(await register(u().member, { [name]: "[message" }), 400, "BAD_REQUEST", `Argument "${name}" is not valid JSON.`);
      assertError(await register(u().member, { [name]: { message: true } }), 400, "BAD_REQUEST", `${name} is not a list`);
      assertError(await register(u().member, { [name]: "\"message\"" }), 400, "BAD_REQUEST", `${name} is not a list`);
      assertError(await register(u().member, { [name]: ["message", 5] }), 400, "BAD_REQUEST", `${name}[1] is not a string`);
    }
    // JSON null means "not given".
    const reply = await t.register(u().member, { event_types: null, fetch_event_types: null });
    assert.ok("realm_users" in reply && "streams" in reply);
  });

  test("narrow: shape, operators and operands", async () => {
    assertError(await register(u().member, { narrow: "[[" }), 400, "BAD_REQUEST", 'Argument "narrow" is not valid JSON.');
    assertError(await register(u().member, { narrow: { stream: "x" } }), 400, "BAD_REQUEST", "narrow is not a list");
    assertError(await register(u().member, { narrow: [5] }), 400, "BAD_REQUEST", "narrow[0] is not a list");
    assertError(await register(u().member, { narrow: [["stream"]] }), 400, "BAD_REQUEST", "narrow[0] should have exactly 2 items");
    assertError(await register(u().member, { narrow: [["stream", "a", "b"]] }), 400, "BAD_REQUEST", "narrow[0] should have exactly 2 items");
    // Channel operands may be IDs; a topic must be a string.
    assertError(await register(u().member, { narrow: [["topic", 5]] }), 400, "BAD_REQUEST", 'narrow[0]["operand"] is not a string');
    // Parley's wording; Zulip says "Operator search not supported." / "Operand followed not supported."
    assertError(await register(u().member, { narrow: [["search", "hello"]] }), 400, "BAD_REQUEST", "Invalid narrow operator: search");
    assertError(await register(u().member, { narrow: [["stream", "x"], ["near", "5"]] }), 400, "BAD_REQUEST", "Invalid narrow operator: near");
    assertError(await register(u().member, { narrow: [["is", "followed"]] }), 400, "BAD_REQUEST", "Invalid narrow operand: followed");
    // Valid narrows.
    for (const narrow of [[], [["stream", "general"]], [["channel", "x"], ["topic", "y"]], [["is", "dm"]], [["sender", "someone@example.com"]], [{ operator: "is", operand: "starred" }]]) {
      const reply = await t.register(u().member, { narrow, fetch_event_types: [] });
      assert.equal(typeof reply.queue_id, "string", JSON.stringify(narrow));
    }
  });

  test("include_subscribers: true, false or partial; anything else is 'Invalid include_subscribers' (Zulip)", async () => {
    for (const value of ["true", "false", "partial", true, false]) {
      assert.equal(typeof (await t.register(u().member, { include_subscribers: value, fetch_event_types: [] })).queue_id, "string", String(value));
    }
    assertError(await register(u().member, { include_subscribers: "sometimes" }), 400, "BAD_REQUEST", "Invalid include_subscribers");
    assertError(await register(u().member, { include_subscribers: 1 }), 400, "BAD_REQUEST", "Invalid include_subscribers");
  });

  test("other parameter types", async () => {
    assertError(await register(u().member, { apply_markdown: "yes" }), 400, "BAD_REQUEST", 'Argument "apply_markdown" is not valid JSON.');
    assertError(await register(u().member, { apply_markdown: 1 }), 400, "BAD_REQUEST", "apply_markdown is not a boolean");
    assertError(await register(u().member, { all_public_streams: "\"true\"" }), 400, "BAD_REQUEST", "all_public_streams is not a boolean");
    assertError(await register(u().member, { queue_lifespan_secs: "abc" }), 400, "BAD_REQUEST", "queue_lifespan_secs is not an integer");
    assertError(await register(u().member, { queue_lifespan_secs: 1.5 }), 400, "BAD_REQUEST", "queue_lifespan_secs is not an integer");
  });

  test("all_public_streams: allowed for members, refused for guests without creating a queue", async () => {
    assert.equal(typeof (await t.register(u().member, { all_public_streams: true, fetch_event_types: [] })).queue_id, "string");
    const before = (await t.services.queues.queueIdsOf(u().guest.id)).length;
    assertError(await register(u().guest, { all_public_streams: true }), 400, "BAD_REQUEST", "User not authorized for this query");
    assert.equal((await t.services.queues.queueIdsOf(u().guest.id)).length, before);
    assert.equal(typeof (await t.register(u().guest, { all_public_streams: false, fetch_event_types: [] })).queue_id, "string");
  });

  test("unknown parameters are listed in ignored_parameters_unsupported", async () => {
    const reply = await t.register(u().member, { fetch_event_types: [], no_such_parameter: "x", idle_queue_timeout: 5 });
    assert.deepEqual([...reply.ignored_parameters_unsupported].sort(), ["idle_queue_timeout", "no_such_parameter"]);
    assert.equal(typeof reply.queue_id, "string");
  });

  test("without credentials: 401", async () => {
    const response = await t.api(null, "POST", "/register", {});
    assertError(response, 401, "UNAUTHORIZED");
    assertError(await t.api({ ...u().member, apiKey: "wrong" }, "POST", "/register", {}), 401, "INVALID_API_KEY");
  });
});

// ---------------------------------------------------------------------------
// 5. GET /events

describe("GET /events", () => {
  test("dont_block answers at once with [] on an empty queue", async () => {
    const { queue_id } = await t.register(u().member);
    const started = Date.now();
    const reply = assertSuccess(await peek(t, u().member, queue_id));
    assert.deepEqual(reply.events, []);
    assert.ok(Date.now() - started < 2000);
  });

  test("a blocking poll is answered when an event arrives, with one action's events together", async () => {
    const { queue_id } = await t.register(u().member, { client_capabilities: { notification_settings_null: true, user_settings_object: true } });
    const pending = poll(t, u().member, queue_id);
    await untilWaiting(t, u().member, queue_id);
    const timezone = nextTimezone();
    await setTimezone(u().member, timezone);
    const reply = await pending;
    assertSuccess(reply);
    assert.ok(reply.ms < 5000);
    // PATCH /settings {timezone} sends user_settings and realm_user update: both in the one answer.
    assert.deepEqual(
      reply.body.events.map((e: Json) => e.type).sort(),
      ["realm_user", "user_settings"],
      JSON.stringify(reply.body.events),
    );
    assert.deepEqual(ids(reply.body.events, "id"), [0, 1]);
    const settingsEvent = reply.body.events.find((e: Json) => e.type === "user_settings");
    assert.deepEqual(settingsEvent, { type: "user_settings", op: "update", property: "timezone", value: timezone, id: settingsEvent.id });
    const userEvent = reply.body.events.find((e: Json) => e.type === "realm_user");
    assert.equal(userEvent.op, "update");
    assert.deepEqual(userEvent.person, { email: userEvent.person.email, user_id: u().member.id, timezone });
  });

  test("a blocking poll is answered by a subscription change", async () => {
    const { queue_id } = await t.register(u().moderator, { event_types: ["subscription"] });
    const pending = poll(t, u().moderator, queue_id);
    await untilWaiting(t, u().moderator, queue_id);
    const channel = await newChannel(u().moderator, {}, "events wake");
    const reply = await pending;
    assertSuccess(reply);
    assert.ok(reply.body.events.length > 0);
    assert.ok(reply.body.events.every((e: Json) => e.type === "subscription"), JSON.stringify(reply.body.events));
    const add = reply.body.events.find((e: Json) => e.op === "add");
    assert.ok(ids(add.subscriptions).includes(channel.id));
  });

  test("events stay until acknowledged; ids keep increasing; acknowledged ones are dropped", async () => {
    const member = u().member;
    const { queue_id } = await t.register(member, { event_types: ["user_settings"] });
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: true }));
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: false }));
    let events = await t.queuedEvents(member, queue_id);
    assert.deepEqual(events, [
      { type: "user_settings", op: "update", property: "enter_sends", value: true, id: 0 },
      { type: "user_settings", op: "update", property: "enter_sends", value: false, id: 1 },
    ]);
    // Unacknowledged events are returned again.
    assert.deepEqual(await t.queuedEvents(member, queue_id), events);
    events = await t.queuedEvents(member, queue_id, 0);
    assert.deepEqual(ids(events, "id"), [1]);
    assert.deepEqual(await t.queuedEvents(member, queue_id, 1), []);
    // Acknowledging the same id again is fine.
    assert.deepEqual(await t.queuedEvents(member, queue_id, 1), []);
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: true }));
    assert.deepEqual(await t.queuedEvents(member, queue_id, 1), [{ type: "user_settings", op: "update", property: "enter_sends", value: true, id: 2 }]);
    // A blocking poll with events waiting answers at once.
    const reply = await poll(t, member, queue_id, 1);
    assertSuccess(reply);
    assert.deepEqual(ids(reply.body.events, "id"), [2]);
    // Going back behind what was acknowledged is refused.
    assertError(await peek(t, member, queue_id, -1), 400, "BAD_REQUEST", "An event newer than -1 has already been pruned!");
    assertError(await peek(t, member, queue_id, 0), 400, "BAD_REQUEST", "An event newer than 0 has already been pruned!");
    assertError(await poll(t, member, queue_id, 0), 400, "BAD_REQUEST", "An event newer than 0 has already been pruned!");
    assert.deepEqual(await t.queuedEvents(member, queue_id, 2), []);
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: false }));
    assert.deepEqual(ids(await t.queuedEvents(member, queue_id, 2), "id"), [3]);
  });

  test("last_event_id that was never in the queue: 'Event N was not in this queue' (Zulip)", async () => {
    const member = u().member;
    const { queue_id } = await t.register(member, { event_types: ["user_settings"] });
    assertError(await peek(t, member, queue_id, 5), 400, "BAD_REQUEST", "Event 5 was not in this queue");
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: true }));
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: false }));
    assertError(await peek(t, member, queue_id, 7), 400, "BAD_REQUEST", "Event 7 was not in this queue");
  });

  test("missing parameters: queue_id, then last_event_id", async () => {
    const { queue_id } = await t.register(u().member, { fetch_event_types: [] });
    const noQueue = await t.api(u().member, "GET", "/events", { last_event_id: -1 });
    assertError(noQueue, 400, "BAD_REQUEST", "Missing 'queue_id' argument");
    assert.equal(noQueue.body.var_name, undefined);
    const noId = await t.api(u().member, "GET", "/events", { queue_id });
    assertError(noId, 400, "BAD_REQUEST", "Missing 'last_event_id' argument");
    assert.equal(noId.body.var_name, undefined);
    assertError(await t.api(u().member, "GET", "/events", { queue_id, last_event_id: "abc" }), 400, "BAD_REQUEST", "last_event_id is not an integer");
    assertError(await t.api(u().member, "GET", "/events", { queue_id, last_event_id: -1, dont_block: "maybe" }), 400, "BAD_REQUEST");
  });

  test("unknown queue, and someone else's queue: BAD_EVENT_QUEUE_ID", async () => {
    assertBadQueue(await peek(t, u().member, "no-such-queue"), "no-such-queue");
    assertBadQueue(await poll(t, u().member, "no-such-queue"), "no-such-queue");
    const { queue_id } = await t.register(u().admin, { event_types: ["user_settings"] });
    assertBadQueue(await peek(t, u().member, queue_id), queue_id);
    assertBadQueue(await poll(t, u().member, queue_id), queue_id);
    // The owner's queue is untouched by the attempt.
    assertSuccess(await t.api(u().admin, "PATCH", "/settings", { enter_sends: true }));
    assert.deepEqual(types(await t.queuedEvents(u().admin, queue_id)), ["user_settings"]);
    assertSuccess(await t.api(u().admin, "PATCH", "/settings", { enter_sends: false }));
  });

  test("a second poll on the same queue ends the first, which answers []", async () => {
    const member = u().member;
    const { queue_id } = await t.register(member, { event_types: ["user_settings"] });
    const first = poll(t, member, queue_id);
    await untilWaiting(t, member, queue_id);
    const second = poll(t, member, queue_id);
    const firstReply = await first;
    assertSuccess(firstReply);
    assert.deepEqual(firstReply.body.events, []);
    assert.ok(firstReply.ms < 5000);
    // The second one (the first has its answer) is still waiting, and gets the next event.
    await untilWaiting(t, member, queue_id);
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: true }));
    const secondReply = await second;
    assertSuccess(secondReply);
    assert.deepEqual(secondReply.body.events, [{ type: "user_settings", op: "update", property: "enter_sends", value: true, id: 0 }]);
    assertSuccess(await t.api(member, "PATCH", "/settings", { enter_sends: false }));
  });

  test("without credentials: 401", async () => {
    const { queue_id } = await t.register(u().member, { fetch_event_types: [] });
    assertError(await t.api(null, "GET", "/events", { queue_id, last_event_id: -1, dont_block: true }), 401, "UNAUTHORIZED");
    assertError(await t.api(null, "DELETE", "/events", { queue_id }), 401, "UNAUTHORIZED");
    // The queue survives.
    assertSuccess(await peek(t, u().member, queue_id));
  });
});

// ---------------------------------------------------------------------------
// 6. DELETE /events

describe("DELETE /events", () => {
  test("removes the queue", async () => {
    const { queue_id } = await t.register(u().member, { fetch_event_types: [] });
    const reply = assertSuccess(await t.api(u().member, "DELETE", "/events", { queue_id }));
    assert.deepEqual(reply, { result: "success", msg: "" });
    assertBadQueue(await peek(t, u().member, queue_id), queue_id);
    assertBadQueue(await t.api(u().member, "DELETE", "/events", { queue_id }), queue_id);
    // A deleted queue gets no more events (and does not break delivery to the others).
    const other = await t.register(u().member, { event_types: ["user_settings"] });
    assertSuccess(await t.api(u().member, "PATCH", "/settings", { enter_sends: true }));
    assertSuccess(await t.api(u().member, "PATCH", "/settings", { enter_sends: false }));
    assert.equal((await t.queuedEvents(u().member, other.queue_id)).length, 2);
  });

  test("unknown or someone else's queue: BAD_EVENT_QUEUE_ID, and the queue stays", async () => {
    assertBadQueue(await t.api(u().member, "DELETE", "/events", { queue_id: "nope" }), "nope");
    const { queue_id } = await t.register(u().admin, { fetch_event_types: [] });
    assertBadQueue(await t.api(u().member, "DELETE", "/events", { queue_id }), queue_id);
    assertSuccess(await peek(t, u().admin, queue_id));
    assertSuccess(await t.api(u().admin, "DELETE", "/events", { queue_id }));
  });

  test("missing queue_id: REQUEST_VARIABLE_MISSING", async () => {
    assertError(await t.api(u().member, "DELETE", "/events", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'queue_id' argument", { var_name: "queue_id" });
  });

  test("deleting a queue ends its waiting poll at once", async () => {
    const { queue_id } = await t.register(u().member, { event_types: ["user_settings"] });
    const pending = poll(t, u().member, queue_id);
    await untilWaiting(t, u().member, queue_id);
    assertSuccess(await t.api(u().member, "DELETE", "/events", { queue_id }));
    const reply = await pending;
    assertSuccess(reply);
    assert.deepEqual(reply.body.events, []);
    assert.ok(reply.ms < 5000);
  });
});

// ---------------------------------------------------------------------------
// 8. event_types filtering

describe("event_types filtering", () => {
  test("each queue gets only the types it registered for", async () => {
    const member = u().member;
    const settingsQueue = (await t.register(member, { event_types: ["user_settings"] })).queue_id;
    const usersQueue = (await t.register(member, { event_types: ["realm_user"] })).queue_id;
    const emptyQueue = (await t.register(member, { event_types: [] })).queue_id;
    const allQueue = (await t.register(member, { client_capabilities: { notification_settings_null: true, user_settings_object: true } })).queue_id;
    const adminQueue = (await t.register(u().admin, { event_types: ["realm_user", "user_settings"] })).queue_id;
    const timezone = nextTimezone();
    await setTimezone(member, timezone);

    assert.deepEqual(await t.queuedEvents(member, settingsQueue), [{ type: "user_settings", op: "update", property: "timezone", value: timezone, id: 0 }]);
    const userEvents = await t.queuedEvents(member, usersQueue);
    assert.deepEqual(types(userEvents), ["realm_user"]);
    assert.equal(userEvents[0].op, "update");
    assert.equal(userEvents[0].person.timezone, timezone);
    assert.equal(userEvents[0].id, 0);
    assert.deepEqual(await t.queuedEvents(member, emptyQueue), []);
    assert.deepEqual(types(await t.queuedEvents(member, allQueue)).sort(), ["realm_user", "user_settings"]);
    // Others hear of the time zone, not of the member's own settings.
    const adminEvents = await t.queuedEvents(u().admin, adminQueue);
    assert.deepEqual(types(adminEvents), ["realm_user"]);
    assert.equal(adminEvents[0].person.user_id, member.id);
  });

  test("a narrow does not filter events other than messages", async () => {
    const { queue_id } = await t.register(u().member, { event_types: ["user_settings"], narrow: [["stream", "nowhere"]] });
    assertSuccess(await t.api(u().member, "PATCH", "/settings", { enter_sends: true }));
    assertSuccess(await t.api(u().member, "PATCH", "/settings", { enter_sends: false }));
    assert.equal((await t.queuedEvents(u().member, queue_id)).length, 2);
  });
});

// ---------------------------------------------------------------------------
// 9. Capability-dependent events

describe("capability-dependent events", () => {
  test("archiving a channel: update is_archived with archived_channels, delete for_archiving without", async () => {
    const channel = await newChannel(u().member, {}, "events to archive");
    const capable = (await t.register(u().member, { event_types: ["stream"], client_capabilities: { notification_settings_null: true, archived_channels: true } })).queue_id;
    const plain = (await t.register(u().member, { event_types: ["stream"] })).queue_id;
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${channel.id}`));

    const capableEvents = await t.queuedEvents(u().member, capable);
    assert.deepEqual(capableEvents, [
      { type: "stream", op: "update", stream_id: channel.id, name: channel.name, property: "is_archived", value: true, id: 0 },
    ]);
    const plainEvents = await t.queuedEvents(u().member, plain);
    assert.equal(plainEvents.length, 1, JSON.stringify(plainEvents));
    assert.equal(plainEvents[0].op, "delete");
    assert.equal(plainEvents[0].for_archiving, true);
    assert.deepEqual(plainEvents[0].stream_ids, [channel.id]);
    assert.deepEqual(ids(plainEvents[0].streams), [channel.id]);
  });

  test("deactivating a group: update {deactivated: true} with include_deactivated_groups, remove without", async () => {
    const groupId = await newGroup(u().owner, [u().moderator.id]);
    const capable = (await t.register(u().member, { event_types: ["user_group"], client_capabilities: { include_deactivated_groups: true } })).queue_id;
    const plain = (await t.register(u().member, { event_types: ["user_group"] })).queue_id;
    assertSuccess(await t.api(u().owner, "POST", `/user_groups/${groupId}/deactivate`));
    assert.deepEqual(await t.queuedEvents(u().member, capable), [{ type: "user_group", op: "update", group_id: groupId, data: { deactivated: true }, id: 0 }]);
    assert.deepEqual(await t.queuedEvents(u().member, plain), [{ type: "user_group", op: "remove", group_id: groupId, id: 0 }]);
  });

  test("user_settings_object false also gets update_display_settings for a time zone change", async () => {
    const member = u().member;
    const legacy = (await t.register(member, { event_types: ["user_settings", "update_display_settings"], client_capabilities: { notification_settings_null: true, user_settings_object: false } })).queue_id;
    const modern = (await t.register(member, { event_types: ["user_settings", "update_display_settings"], client_capabilities: { notification_settings_null: true, user_settings_object: true } })).queue_id;
    const timezone = nextTimezone();
    await setTimezone(member, timezone);
    const legacyEvents = await t.queuedEvents(member, legacy);
    assert.deepEqual(types(legacyEvents).sort(), ["update_display_settings", "user_settings"]);
    const display = legacyEvents.find((e: Json) => e.type === "update_display_settings");
    assert.deepEqual(display, { type: "update_display_settings", user: display.user, setting_name: "timezone", setting: timezone, id: display.id });
    assert.equal(typeof display.user, "string");
    assert.deepEqual(await t.queuedEvents(member, modern), [{ type: "user_settings", op: "update", property: "timezone", value: timezone, id: 0 }]);
  });

  test("user_settings_object false gets update_global_notifications for a notification setting", async () => {
    const member = u().member;
    const legacy = (await t.register(member, { client_capabilities: { notification_settings_null: true, user_settings_object: false } })).queue_id;
    const modern = (await t.register(member, { client_capabilities: { notification_settings_null: true, user_settings_object: true } })).queue_id;
    assertSuccess(await t.api(member, "PATCH", "/settings", { enable_sounds: false }));
    assertSuccess(await t.api(member, "PATCH", "/settings", { enable_sounds: true }));
    const legacyEvents = await t.queuedEvents(member, legacy);
    assert.deepEqual(types(legacyEvents), ["user_settings", "update_global_notifications", "user_settings", "update_global_notifications"]);
    assert.deepEqual(legacyEvents[1], { type: "update_global_notifications", user: legacyEvents[1].user, notification_name: "enable_sounds", setting: false, id: 1 });
    assert.deepEqual(types(await t.queuedEvents(member, modern)), ["user_settings", "user_settings"]);
  });
});

// ---------------------------------------------------------------------------
// 5/7/8/10. Heartbeats, expiry and shutdown, each on an app of its own with
// short intervals. The three suites run side by side to keep the wall time low;
// within one, tests use different users so their events cannot mix.

describe("timing", { concurrency: true }, () => {
  describe("heartbeats and expiry (heartbeat 200 ms, idle lifespan 600 ms)", { concurrency: true }, () => {
    let fast: TestApp;
    before(async () => {
      fast = await startTestApp({ eventHeartbeatMs: 200, eventQueueIdleMs: 600 });
    });
    after(() => fast?.close());

    test("an idle poll ends with a heartbeat that has an id and must be acknowledged", async () => {
      const member = fast.users.admin;
      // Only the admin's own settings events: nothing the other tests here do reaches this queue.
      const { queue_id, event_queue_longpoll_timeout_seconds } = await fast.register(member, { event_types: ["user_settings"], fetch_event_types: ["realm"] });
      assert.ok(event_queue_longpoll_timeout_seconds > 0.2);
      const first = await poll(fast, member, queue_id);
      assertSuccess(first);
      assert.deepEqual(first.body.events, [{ type: "heartbeat", id: 0 }]);
      assert.ok(first.ms >= 150, `answered after ${first.ms} ms`);
      assert.ok(first.ms < 3000, `answered after ${first.ms} ms`);
      // Not acknowledged: it is returned again at once.
      const again = await poll(fast, member, queue_id, -1);
      assert.deepEqual(again.body.events, [{ type: "heartbeat", id: 0 }]);
      const second = await poll(fast, member, queue_id, 0);
      assert.deepEqual(second.body.events, [{ type: "heartbeat", id: 1 }]);
      // dont_block does not wait for one; helpers' queuedEvents ignore them.
      assert.deepEqual(assertSuccess(await peek(fast, member, queue_id, 1)).events, []);
    });

    test("event_types [] gets heartbeats and nothing else", async () => {
      const member = fast.users.member;
      const { queue_id } = await fast.register(member, { event_types: [] });
      assertSuccess(await fast.api(member, "PATCH", "/settings", { timezone: "Europe/Paris" }));
      assertSuccess(await fast.api(member, "PATCH", "/settings", { enter_sends: true }));
      const reply = await poll(fast, member, queue_id);
      assertSuccess(reply);
      assert.deepEqual(reply.body.events, [{ type: "heartbeat", id: 0 }]);
    });

    test("a queue nobody polls expires after its lifespan", async () => {
      const member = fast.users.moderator;
      const { queue_id } = await fast.register(member, { fetch_event_types: [] });
      assertSuccess(await peek(fast, member, queue_id));
      // Lifespan 600 ms, swept every 150 ms.
      await sleep(1000);
      assertBadQueue(await peek(fast, member, queue_id), queue_id);
      assertBadQueue(await fast.api(member, "DELETE", "/events", { queue_id }), queue_id);
    });

    test("queue_lifespan_secs longer than the idle lifespan keeps the queue, for that long", async () => {
      const member = fast.users.owner;
      const long = (await fast.register(member, { fetch_event_types: [], queue_lifespan_secs: 2 })).queue_id;
      const short = (await fast.register(member, { fetch_event_types: [] })).queue_id;
      await sleep(1000);
      assertBadQueue(await peek(fast, member, short), short);
      assertSuccess(await peek(fast, member, long));
      // A poll restarts the lifespan; without one it ends.
      await sleep(2500);
      assertBadQueue(await peek(fast, member, long), long);
    });
  });

  describe("expiry while a long-poll waits (heartbeat 1200 ms, idle lifespan 300 ms)", () => {
    let slow: TestApp;
    before(async () => {
      slow = await startTestApp({ eventHeartbeatMs: 1200, eventQueueIdleMs: 300 });
    });
    after(() => slow?.close());

    test("a queue with a waiting poll is not expired", async () => {
      const member = slow.users.member;
      const { queue_id } = await slow.register(member, { fetch_event_types: [] });
      const idle = (await slow.register(member, { fetch_event_types: [] })).queue_id;
      const reply = await poll(slow, member, queue_id);
      assertSuccess(reply);
      // Had the queue been collected, the poll would have ended early with [].
      assert.deepEqual(reply.body.events, [{ type: "heartbeat", id: 0 }]);
      assert.ok(reply.ms >= 1100, `answered after ${reply.ms} ms`);
      assertSuccess(await peek(slow, member, queue_id, 0));
      // The unpolled queue registered alongside has gone meanwhile.
      assertBadQueue(await peek(slow, member, idle), idle);
    });
  });

  // 10. Shutdown
  describe("shutdown", () => {
    test("closing the server answers a waiting long-poll at once, not at the heartbeat", async () => {
      const app = await startTestApp({ eventHeartbeatMs: 60_000 });
      let closed = false;
      try {
        const member = app.users.member;
        const { queue_id } = await app.register(member);
        const pending = poll(app, member, queue_id);
        await untilWaiting(app, member, queue_id);
        const closing = app.close();
        closed = true;
        const reply = await pending;
        assertSuccess(reply);
        assert.deepEqual(reply.body.events, []);
        assert.ok(reply.ms < 5000, `answered after ${reply.ms} ms`);
        // The connection is not kept alive past shutdown.
        assert.equal(reply.headers.get("connection"), "close");
        assert.match(reply.headers.get("content-type") ?? "", /^application\/json/);
        const started = Date.now();
        await closing;
        assert.ok(Date.now() - started < 5000);
      } finally {
        if (!closed) await app.close();
      }
    });
  });
});
