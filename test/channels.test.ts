// API-level tests of the channel endpoints: GET /streams (every filter),
// GET /streams/{id}, GET /get_stream_id, PATCH /streams/{id} (name,
// description, privacy, default, retention, topics policy, folder, group
// settings, permissions), DELETE /streams/{id} (archive) and unarchiving,
// GET /streams/{id}/members, GET /streams/{id}/email_address, POST/DELETE
// /default_streams, and who receives the stream events.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Notification } from "../src/events/notifier.ts";
import { assertError, assertSuccess, expectedChannel, startTestApp, uniqueName, sortedIds, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

/** Every write in these tests happens at this UNIX time, so date_created is exact. */
const NOW = 1_750_000_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

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
const sorted = sortedIds;

async function channelId(app: TestApp, name: string): Promise<number> {
  const row = await app.services.storage.db
    .selectFrom("channels")
    .select("id")
    .where("realm_id", "=", app.realm.id)
    .where("name_key", "=", name.toLowerCase())
    .executeTakeFirstOrThrow();
  return row.id;
}

/** Creates a channel through POST /users/me/subscriptions (the actor subscribes unless principals say otherwise). */
async function createChannel(app: TestApp, actor: TestUser, name: string, params: Record<string, unknown> = {}): Promise<number> {
  assertSuccess(await app.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], ...params }));
  return channelId(app, name);
}

async function newChannel(actor: TestUser, params: Record<string, unknown> = {}, prefix = "channel"): Promise<{ id: number; name: string }> {
  const name = uniqueName(prefix);
  return { id: await createChannel(t, actor, name, params), name };
}

async function subscribeUsers(app: TestApp, actor: TestUser, name: string, userIds: number[]): Promise<void> {
  assertSuccess(await app.api(actor, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: userIds }));
}

async function listStreams(app: TestApp, viewer: TestUser, params: Record<string, unknown> = {}): Promise<Json[]> {
  return assertSuccess(await app.api(viewer, "GET", "/streams", params)).streams;
}

async function getStream(viewer: TestUser, id: number, app: TestApp = t): Promise<Json> {
  return assertSuccess(await app.api(viewer, "GET", `/streams/${id}`)).stream;
}

function patch(actor: TestUser, id: number, params: Record<string, unknown>, app: TestApp = t): Promise<ApiResponse> {
  return app.api(actor, "PATCH", `/streams/${id}`, params);
}

async function setRealmSetting(app: TestApp, key: string, value: unknown): Promise<void> {
  const db = app.services.storage.db;
  const row = await db.selectFrom("realms").select("settings").where("id", "=", app.realm.id).executeTakeFirstOrThrow();
  const settings = JSON.parse(row.settings) as Record<string, unknown>;
  settings[key] = value;
  await db.updateTable("realms").set({ settings: JSON.stringify(settings) }).where("id", "=", app.realm.id).execute();
}

/** Active users of the organization other than its system bots: who may receive events. */
async function activeUsers(app: TestApp): Promise<{ id: number; role: number }[]> {
  return app.services.storage.db
    .selectFrom("users")
    .select(["id", "role"])
    .where("realm_id", "=", app.realm.id)
    .where("is_active", "=", true)
    .where("is_system_bot", "=", false)
    .orderBy("id")
    .execute();
}

async function nonGuestIds(app: TestApp = t): Promise<number[]> {
  return (await activeUsers(app)).filter((x) => x.role !== 600).map((x) => x.id);
}

async function allUserIds(app: TestApp = t): Promise<number[]> {
  return (await activeUsers(app)).map((x) => x.id);
}

async function defaultIds(app: TestApp = t): Promise<number[]> {
  const rows = await app.services.storage.db.selectFrom("default_channels").select("channel_id").where("realm_id", "=", app.realm.id).execute();
  return sorted(rows.map((r) => r.channel_id));
}

function notifications(type: string, op?: string, app: TestApp = t): Notification[] {
  return app.events.filter((n) => n.event.type === type && (op === undefined || n.event.op === op));
}

/** The one notification of this type/op sent since the last clearEvents. */
function onlyNotification(type: string, op?: string, app: TestApp = t): Notification {
  const sent = notifications(type, op, app);
  assert.equal(sent.length, 1, `one ${type}/${op} event: ${JSON.stringify(sent.map((n) => n.event))}`);
  return sent[0]!;
}

/** Who received the events of this type/op, each user once per event. */
function recipients(type: string, op?: string, app: TestApp = t): number[] {
  return sorted(notifications(type, op, app).flatMap((n) => [...n.userIds]));
}


function streamUpdate(id: number, name: string, property: string, value: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: "stream", op: "update", stream_id: id, name, property, value, ...extra };
}

function streamDelete(id: number): Record<string, unknown> {
  return { type: "stream", op: "delete", streams: [{ stream_id: id }], stream_ids: [id], for_archiving: false };
}

const INVALID_ID = (r: ApiResponse) => assertError(r, 400, "BAD_REQUEST", "Invalid channel ID");
const CANNOT_ADMINISTER = (r: ApiResponse) => assertError(r, 400, "BAD_REQUEST", "You do not have permission to administer this channel.");

// ---------------------------------------------------------------------------

describe("channel object", () => {
  test("GET /streams and GET /streams/{id} show a new public channel with every field, exact values and types", async () => {
    const name = uniqueName("Fields");
    const id = await createChannel(t, u().member, name, { subscriptions: [{ name, description: "Plans & <ideas>" }] });
    const expected = channelWithDefaults(id, name, u().member.id, {
      description: "Plans & <ideas>",
      rendered_description: "<p>Plans &amp; &lt;ideas&gt;</p>",
    });
    const listed = (await listStreams(t, u().member)).find((s) => s.stream_id === id);
    assert.deepEqual(listed, expected);
    assert.deepEqual(await getStream(u().member, id), expected);
    assert.deepEqual(await getStream(u().owner, id), expected);
    // Types, spelled out (deepEqual above already pins them).
    assert.ok(Number.isInteger(listed.stream_id) && Number.isInteger(listed.date_created) && Number.isInteger(listed.subscriber_count));
    assert.equal(typeof listed.can_send_message_group, "number");
    assert.equal(listed.stream_weekly_traffic, null);
    assert.equal("is_default" in listed, false, "is_default only with include_default");
  });

  test("a new private channel keeps history from new subscribers and is administered by its creator only", async () => {
    const { id, name } = await newChannel(u().moderator, { invite_only: true });
    assert.deepEqual(
      await getStream(u().moderator, id),
      channelWithDefaults(id, name, u().moderator.id, { invite_only: true, history_public_to_subscribers: false }),
    );
  });

  test("stream_weekly_traffic is null during the first week and 0 afterwards (no messages)", async () => {
    const { id } = await newChannel(u().member);
    try {
      t.services.now = () => NOW + 7 * 86400 - 1;
      assert.equal((await getStream(u().member, id)).stream_weekly_traffic, null);
      t.services.now = () => NOW + 7 * 86400;
      assert.equal((await getStream(u().member, id)).stream_weekly_traffic, 0);
      t.services.now = () => NOW + 60 * 86400;
      assert.equal((await getStream(u().member, id)).stream_weekly_traffic, 0);
    } finally {
      t.services.now = () => NOW;
    }
  });

  test("stream_post_policy and is_announcement_only follow can_send_message_group", async () => {
    const cases: [unknown, number][] = [
      [sys["role:everyone"], 1],
      [sys["role:administrators"], 2],
      [sys["role:fullmembers"], 3],
      [sys["role:moderators"], 4],
      [sys["role:members"], 1],
      [sys["role:owners"], 1],
      [{ direct_members: [u().member.id], direct_subgroups: [sys["role:administrators"]] }, 1],
    ];
    for (const [group, policy] of cases) {
      const { id } = await newChannel(u().admin, { can_send_message_group: group });
      const stream = await getStream(u().admin, id);
      assert.deepEqual(stream.can_send_message_group, group);
      assert.equal(stream.stream_post_policy, policy, JSON.stringify(group));
      assert.equal(stream.is_announcement_only, policy === 2, JSON.stringify(group));
    }
  });

  test("lists are sorted by name in code-point order (uppercase before lowercase, astral after BMP)", async () => {
    const viewer = await t.createUser("Sorting Viewer");
    const names = ["zz sort b", "ZZ sort a", "\uff3a sort wide", "\u{1F600} sort smile", "Zz sort c"];
    for (const name of names) await createChannel(t, viewer, name);
    const got = (await listStreams(t, viewer, { include_public: false })).map((s) => s.name);
    assert.deepEqual(got, ["ZZ sort a", "Zz sort c", "zz sort b", "\uff3a sort wide", "\u{1F600} sort smile"]);
  });
});

describe("GET /streams filters", () => {
  let f: TestApp;
  let fsys: Record<string, number>;
  const ids: Record<string, number> = {};
  const fu = () => f.users;

  before(async () => {
    f = await startTestApp();
    f.services.now = () => NOW;
    fsys = await f.systemGroupIds();
    await setRealmSetting(f, "enable_spectator_access", true);
    const make = async (actor: TestUser, name: string, params: Record<string, unknown> = {}) => {
      ids[name] = await createChannel(f, actor, name, params);
    };
    await make(fu().owner, "Web", { is_web_public: true });
    await make(fu().owner, "Alpha", { principals: [fu().owner.id, fu().member.id, fu().guest.id] });
    await make(fu().admin, "beta");
    await make(fu().admin, "Default");
    assertSuccess(await f.api(fu().admin, "POST", "/default_streams", { stream_id: ids.Default }));
    await make(fu().member, "Member private", { invite_only: true });
    await make(fu().moderator, "Moderator private", { invite_only: true });
    await make(fu().moderator, "Subscribable", { invite_only: true, can_subscribe_group: fsys["role:members"] });
    await make(fu().moderator, "Administered", {
      invite_only: true,
      can_administer_channel_group: { direct_members: [fu().member.id, fu().moderator.id], direct_subgroups: [] },
    });
    await make(fu().admin, "Archived");
    assertSuccess(await f.api(fu().admin, "DELETE", `/streams/${ids.Archived}`));
  });
  after(() => f?.close());

  async function namesFor(viewer: TestUser, params: Record<string, unknown> = {}): Promise<string[]> {
    return (await listStreams(f, viewer, params)).map((s) => s.name);
  }

  const PUBLIC = ["Alpha", "Default", "Web", "beta"];

  test("defaults: public channels plus subscribed ones, archived excluded, sorted by name", async () => {
    assert.deepEqual(await namesFor(fu().member), ["Alpha", "Default", "Member private", "Web", "beta"]);
    assert.deepEqual(await namesFor(fu().admin), PUBLIC);
    assert.deepEqual(await namesFor(fu().moderator), ["Administered", "Alpha", "Default", "Moderator private", "Subscribable", "Web", "beta"]);
    // Spelled-out defaults give the same answer.
    assert.deepEqual(
      await namesFor(fu().member, {
        include_public: true,
        include_web_public: false,
        include_subscribed: true,
        exclude_archived: true,
        include_all: false,
        include_default: false,
        include_owner_subscribed: false,
        include_can_access_content: false,
        include_all_active: false,
      }),
      ["Alpha", "Default", "Member private", "Web", "beta"],
    );
  });

  test("include_public and include_subscribed select their sources; neither gives nothing", async () => {
    assert.deepEqual(await namesFor(fu().member, { include_public: false }), ["Alpha", "Member private"]);
    assert.deepEqual(await namesFor(fu().member, { include_subscribed: false }), PUBLIC);
    assert.deepEqual(await namesFor(fu().member, { include_public: false, include_subscribed: false }), []);
  });

  test("include_web_public adds web-public channels", async () => {
    assert.deepEqual(await namesFor(fu().member, { include_public: false, include_subscribed: false, include_web_public: true }), ["Web"]);
    const web = (await listStreams(f, fu().member)).find((s) => s.name === "Web");
    assert.equal(web.is_web_public, true);
    assert.equal(web.invite_only, false);
    assert.equal(web.history_public_to_subscribers, true);
  });

  test("exclude_archived=false includes archived channels", async () => {
    assert.deepEqual(await namesFor(fu().member, { exclude_archived: false }), ["Alpha", "Archived", "Default", "Member private", "Web", "beta"]);
    const archived = (await listStreams(f, fu().member, { exclude_archived: false })).find((s) => s.name === "Archived");
    assert.equal(archived.is_archived, true);
  });

  test("include_all: every channel with metadata access (administrators see every private channel)", async () => {
    assert.deepEqual(await namesFor(fu().admin, { include_all: true }), [
      "Administered",
      "Alpha",
      "Default",
      "Member private",
      "Moderator private",
      "Subscribable",
      "Web",
      "beta",
    ]);
    assert.deepEqual(await namesFor(fu().owner, { include_all: true }), await namesFor(fu().admin, { include_all: true }));
    // A member sees private channels through can_subscribe_group and can_administer_channel_group.
    assert.deepEqual(await namesFor(fu().member, { include_all: true }), ["Administered", "Alpha", "Default", "Member private", "Subscribable", "Web", "beta"]);
    assert.deepEqual(await namesFor(fu().admin, { include_all: true, exclude_archived: false }), [
      "Administered",
      "Alpha",
      "Archived",
      "Default",
      "Member private",
      "Moderator private",
      "Subscribable",
      "Web",
      "beta",
    ]);
  });

  test("include_can_access_content: channels whose messages the user may read", async () => {
    // Administering a private channel grants metadata, not content.
    assert.deepEqual(await namesFor(fu().member, { include_can_access_content: true }), ["Alpha", "Default", "Member private", "Subscribable", "Web", "beta"]);
    // Organization administrators get no private content by role (Subscribable: through role:members).
    assert.deepEqual(await namesFor(fu().admin, { include_can_access_content: true }), ["Alpha", "Default", "Subscribable", "Web", "beta"]);
  });

  test("include_default marks default channels with is_default", async () => {
    const list = await listStreams(f, fu().member, { include_default: true });
    assert.deepEqual(
      list.map((s) => [s.name, s.is_default]),
      [
        ["Alpha", false],
        ["Default", true],
        ["Member private", false],
        ["Web", false],
        ["beta", false],
      ],
    );
    for (const s of await listStreams(f, fu().member)) assert.equal("is_default" in s, false);
  });

  test("include_owner_subscribed: a bot also gets its owner's channels; a human gets nothing extra", async () => {
    assert.deepEqual(await namesFor(fu().bot), PUBLIC);
    assert.deepEqual(await namesFor(fu().bot, { include_owner_subscribed: true }), ["Alpha", "Default", "Member private", "Web", "beta"]);
    assert.deepEqual(await namesFor(fu().bot, { include_owner_subscribed: true, include_public: false, include_subscribed: false }), ["Alpha", "Member private"]);
    assert.deepEqual(await namesFor(fu().member, { include_owner_subscribed: true, include_public: false }), ["Alpha", "Member private"]);
  });

  test("include_all_active is include_all for administrators and refused to others", async () => {
    assert.deepEqual(await namesFor(fu().admin, { include_all_active: true }), await namesFor(fu().admin, { include_all: true }));
    assert.deepEqual(await namesFor(fu().owner, { include_all_active: true }), await namesFor(fu().owner, { include_all: true }));
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      assertError(await f.api(fu()[key], "GET", "/streams", { include_all_active: true }), 400, "BAD_REQUEST", "User not authorized for this query");
    }
  });

  test("guests see only their subscribed channels (and web-public ones when asked)", async () => {
    assert.deepEqual(await namesFor(fu().guest), ["Alpha"]);
    assert.deepEqual(await namesFor(fu().guest, { include_public: true }), ["Alpha"]);
    assert.deepEqual(await namesFor(fu().guest, { include_web_public: true }), ["Alpha", "Web"]);
    assert.deepEqual(await namesFor(fu().guest, { include_all: true }), ["Alpha", "Web"]);
    assert.deepEqual(await namesFor(fu().guest, { include_can_access_content: true }), ["Alpha", "Web"]);
    assert.deepEqual(await namesFor(fu().guest, { include_subscribed: false }), []);
  });

  test("a filter that is not a JSON boolean is refused", async () => {
    assertError(await f.api(fu().member, "GET", "/streams", { include_public: "yes" }), 400, "BAD_REQUEST", 'Argument "include_public" is not valid JSON.');
    assertError(await f.api(fu().member, "GET", "/streams", { include_all: 1 }), 400, "BAD_REQUEST", "include_all is not a boolean");
  });
});

describe("GET /streams/{stream_id}", () => {
  test("answers {stream} to anyone who may see the channel", async () => {
    const { id, name } = await newChannel(u().moderator);
    const body = assertSuccess(await t.api(u().member, "GET", `/streams/${id}`));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "stream"]);
    assert.deepEqual(body.stream, channelWithDefaults(id, name, u().moderator.id));
    assert.deepEqual(await getStream(u().bot, id), channelWithDefaults(id, name, u().moderator.id));
  });

  test("a private channel: subscribers and administrators see it; others get Invalid channel ID", async () => {
    const { id, name } = await newChannel(u().moderator, { invite_only: true });
    const expected = channelWithDefaults(id, name, u().moderator.id, { invite_only: true, history_public_to_subscribers: false });
    assert.deepEqual(await getStream(u().moderator, id), expected);
    assert.deepEqual(await getStream(u().admin, id), expected);
    assert.deepEqual(await getStream(u().owner, id), expected);
    for (const key of ["member", "guest", "bot"] as const) INVALID_ID(await t.api(u()[key], "GET", `/streams/${id}`));
  });

  test("a guest named in a private channel's group settings gets no access from them", async () => {
    const { id } = await newChannel(u().moderator, {
      invite_only: true,
      can_subscribe_group: { direct_members: [u().guest.id, u().member.id], direct_subgroups: [] },
      can_administer_channel_group: { direct_members: [u().guest.id, u().moderator.id], direct_subgroups: [] },
    });
    INVALID_ID(await t.api(u().guest, "GET", `/streams/${id}`));
    INVALID_ID(await patch(u().guest, id, { description: "no" }));
    assert.equal((await getStream(u().member, id)).stream_id, id);
  });

  test("guests get Invalid channel ID for public channels they are not in", async () => {
    const { id, name } = await newChannel(u().member);
    INVALID_ID(await t.api(u().guest, "GET", `/streams/${id}`));
    await subscribeUsers(t, u().member, name, [u().guest.id]);
    assert.equal((await getStream(u().guest, id)).stream_id, id);
  });

  test("unknown channel IDs", async () => {
    INVALID_ID(await t.api(u().admin, "GET", "/streams/987654"));
    INVALID_ID(await t.api(u().admin, "GET", "/streams/99999999999"));
  });
});

describe("GET /get_stream_id", () => {
  test("finds a channel by name, case-insensitively and ignoring surrounding spaces", async () => {
    const name = uniqueName("Lookup Me");
    const id = await createChannel(t, u().member, name);
    for (const query of [name, name.toUpperCase(), name.toLowerCase(), `  ${name}  `]) {
      const body = assertSuccess(await t.api(u().moderator, "GET", "/get_stream_id", { stream: query }));
      assert.deepEqual(body, { result: "success", msg: "", stream_id: id });
    }
  });

  test("unknown names and channels without content access look alike", async () => {
    assertError(await t.api(u().member, "GET", "/get_stream_id", { stream: "No such channel" }), 400, "BAD_REQUEST", "Invalid channel name 'No such channel'");
    const { id, name } = await newChannel(u().moderator, { invite_only: true }, "Hidden");
    assertError(await t.api(u().member, "GET", "/get_stream_id", { stream: name }), 400, "BAD_REQUEST", `Invalid channel name '${name}'`);
    // Administrators may see the metadata, but the lookup needs content access.
    assertError(await t.api(u().admin, "GET", "/get_stream_id", { stream: name.toUpperCase() }), 400, "BAD_REQUEST", `Invalid channel name '${name.toUpperCase()}'`);
    assert.equal(assertSuccess(await t.api(u().moderator, "GET", "/get_stream_id", { stream: name })).stream_id, id);
    const pub = await newChannel(u().member);
    assertError(await t.api(u().guest, "GET", "/get_stream_id", { stream: pub.name }), 400, "BAD_REQUEST", `Invalid channel name '${pub.name}'`);
    assertError(await t.api(u().member, "GET", "/get_stream_id"), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream' argument");
    // Archived channels are not found by name.
    assertSuccess(await t.api(u().member, "DELETE", `/streams/${pub.id}`));
    assertError(await t.api(u().member, "GET", "/get_stream_id", { stream: pub.name }), 400, "BAD_REQUEST", `Invalid channel name '${pub.name}'`);
  });
});

describe("PATCH /streams/{stream_id}: name", () => {
  test("renaming sends stream update with the old name in `name`, to everyone who sees the channel", async () => {
    const { id, name } = await newChannel(u().member, {}, "Before");
    const newName = uniqueName("After");
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { new_name: newName }));
    assert.equal((await getStream(u().member, id)).name, newName);
    const n = onlyNotification("stream", "update");
    assert.deepEqual(n.event, streamUpdate(id, name, "name", newName));
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());
    assertError(await t.api(u().member, "GET", "/get_stream_id", { stream: name }), 400, "BAD_REQUEST", `Invalid channel name '${name}'`);
    assert.equal(assertSuccess(await t.api(u().member, "GET", "/get_stream_id", { stream: newName })).stream_id, id);
  });

  test("a change of case only is a rename; surrounding spaces are trimmed", async () => {
    const { id, name } = await newChannel(u().member, {}, "casey");
    assertSuccess(await patch(u().member, id, { new_name: name.toUpperCase() }));
    assert.equal((await getStream(u().member, id)).name, name.toUpperCase());
    assertSuccess(await patch(u().member, id, { new_name: `  ${name}  ` }));
    assert.equal((await getStream(u().member, id)).name, name);
  });

  test("name errors", async () => {
    const { id, name } = await newChannel(u().member, {}, "Named");
    const taken = await newChannel(u().admin, {}, "Taken");
    const cases: [string, string][] = [
      [name, "Channel already has that name."],
      [` ${name} `, "Channel already has that name."],
      [taken.name, "Channel name is already in use."],
      [taken.name.toUpperCase(), "Channel name is already in use."],
      ["", "Channel name can't be empty."],
      ["   ", "Channel name can't be empty."],
      ["x".repeat(61), "Channel name too long (limit: 60 characters)."],
      ["ab\u0001cd", "Invalid character in channel name, at position 3."],
    ];
    t.clearEvents();
    for (const [newName, msg] of cases) assertError(await patch(u().member, id, { new_name: newName }), 400, "BAD_REQUEST", msg);
    assert.equal((await getStream(u().member, id)).name, name);
    assert.deepEqual(notifications("stream"), []);
    // 60 characters (code points, even astral ones) is fine.
    assertSuccess(await patch(u().member, id, { new_name: "\u{1F600}".repeat(60) }));
    assert.equal((await getStream(u().member, id)).name, "\u{1F600}".repeat(60));
  });

  test("a taken name of an archived channel is still taken", async () => {
    const archived = await newChannel(u().member, {}, "Gone");
    assertSuccess(await t.api(u().member, "DELETE", `/streams/${archived.id}`));
    const { id } = await newChannel(u().member);
    assertError(await patch(u().member, id, { new_name: archived.name }), 400, "BAD_REQUEST", "Channel name is already in use.");
  });
});

describe("PATCH /streams/{stream_id}: description", () => {
  test("the description is stored on one line, rendered, and announced with rendered_description", async () => {
    const { id, name } = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { description: "First line\nsecond & <third>" }));
    const stream = await getStream(u().member, id);
    assert.equal(stream.description, "First line second & <third>");
    assert.equal(stream.rendered_description, "<p>First line second &amp; &lt;third&gt;</p>");
    const n = onlyNotification("stream", "update");
    assert.deepEqual(
      n.event,
      streamUpdate(id, name, "description", "First line second & <third>", { rendered_description: "<p>First line second &amp; &lt;third&gt;</p>" }),
    );
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());

    assertSuccess(await patch(u().member, id, { description: "" }));
    const cleared = await getStream(u().member, id);
    assert.equal(cleared.description, "");
    assert.equal(cleared.rendered_description, "");
  });

  test("descriptions are limited to 1024 characters", async () => {
    const { id } = await newChannel(u().member);
    assertError(await patch(u().member, id, { description: "d".repeat(1025) }), 400, "BAD_REQUEST", "description is too long (limit: 1024 characters)");
    assertSuccess(await patch(u().member, id, { description: "d".repeat(1024) }));
    assert.equal((await getStream(u().member, id)).description, "d".repeat(1024));
  });
});

describe("PATCH /streams/{stream_id}: privacy", () => {
  test("public → private: history defaults to protected; people who lose sight get stream delete", async () => {
    const { id, name } = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { is_private: true }));
    const stream = await getStream(u().member, id);
    assert.equal(stream.invite_only, true);
    assert.equal(stream.history_public_to_subscribers, false);
    assert.equal(stream.is_web_public, false);

    const update = onlyNotification("stream", "update");
    assert.deepEqual(update.event, streamUpdate(id, name, "invite_only", true, { history_public_to_subscribers: false, is_web_public: false }));
    assert.deepEqual(sorted(update.userIds), sorted([u().owner.id, u().admin.id, u().member.id]));
    const removed = onlyNotification("stream", "delete");
    assert.deepEqual(removed.event, streamDelete(id));
    const stayed = new Set([u().owner.id, u().admin.id, u().member.id]);
    assert.deepEqual(sorted(removed.userIds), (await nonGuestIds()).filter((x) => !stayed.has(x)));
    assert.equal(recipients("stream").includes(u().guest.id), false);
  });

  test("private → public: history becomes shared; people who gain sight get stream create", async () => {
    const { id, name } = await newChannel(u().member, { invite_only: true });
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { is_private: false }));
    const stream = await getStream(u().moderator, id);
    assert.deepEqual(stream, channelWithDefaults(id, name, u().member.id));
    const update = onlyNotification("stream", "update");
    assert.deepEqual(update.event, streamUpdate(id, name, "invite_only", false, { history_public_to_subscribers: true, is_web_public: false }));
    assert.deepEqual(sorted(update.userIds), sorted([u().owner.id, u().admin.id, u().member.id]));
    const created = onlyNotification("stream", "create");
    assert.deepEqual(created.event, { type: "stream", op: "create", streams: [stream], for_unarchiving: false });
    const before = new Set([u().owner.id, u().admin.id, u().member.id]);
    assert.deepEqual(sorted(created.userIds), (await nonGuestIds()).filter((x) => !before.has(x)));
    // They also learn who is subscribed.
    const peer = onlyNotification("subscription", "peer_add");
    assert.deepEqual(peer.event, { type: "subscription", op: "peer_add", stream_ids: [id], user_ids: [u().member.id] });
    assert.deepEqual(sorted(peer.userIds), sorted(created.userIds));
  });

  test("history_public_to_subscribers can be changed on a private channel", async () => {
    const { id, name } = await newChannel(u().member, { invite_only: true });
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { history_public_to_subscribers: true }));
    assert.equal((await getStream(u().member, id)).history_public_to_subscribers, true);
    assert.deepEqual(
      onlyNotification("stream", "update").event,
      streamUpdate(id, name, "invite_only", true, { history_public_to_subscribers: true, is_web_public: false }),
    );
  });

  test("incompatible combinations are Invalid parameters", async () => {
    const priv = await newChannel(u().owner, { invite_only: true });
    const pub = await newChannel(u().owner);
    const cases: [number, Record<string, unknown>][] = [
      [priv.id, { is_private: false, history_public_to_subscribers: false }],
      [pub.id, { history_public_to_subscribers: false }],
      [pub.id, { is_web_public: true, is_private: true }],
      [pub.id, { is_web_public: true, history_public_to_subscribers: false }],
      [priv.id, { is_web_public: true }],
    ];
    for (const [id, params] of cases) assertError(await patch(u().owner, id, params), 400, "BAD_REQUEST", "Invalid parameters");
    assert.equal((await getStream(u().owner, priv.id)).invite_only, true);
    assert.equal((await getStream(u().owner, pub.id)).invite_only, false);
  });

  test("web-public: refused while spectator access is off; needs can_create_web_public_channel_group (owners)", async () => {
    const { id, name } = await newChannel(u().owner);
    assertError(await patch(u().owner, id, { is_web_public: true }), 400, "BAD_REQUEST", "Web-public channels are not enabled.");
    await setRealmSetting(t, "enable_spectator_access", true);
    try {
      assertError(await patch(u().admin, id, { is_web_public: true }), 400, "BAD_REQUEST", "Insufficient permission");
      t.clearEvents();
      assertSuccess(await patch(u().owner, id, { is_web_public: true }));
      assert.equal((await getStream(u().owner, id)).is_web_public, true);
      const update = onlyNotification("stream", "update");
      assert.deepEqual(update.event, streamUpdate(id, name, "invite_only", false, { history_public_to_subscribers: true, is_web_public: true }));
      // Guests now see it too: they are told it exists.
      const created = onlyNotification("stream", "create");
      assert.deepEqual(created.userIds, [u().guest.id]);
      assert.equal((await getStream(u().guest, id)).is_web_public, true);
      assertSuccess(await patch(u().owner, id, { is_web_public: false }));
      assert.equal((await getStream(u().owner, id)).is_web_public, false);
    } finally {
      await setRealmSetting(t, "enable_spectator_access", false);
    }
  });

  test("making a channel private or public needs the organization's channel-creation permission of that kind", async () => {
    const pub = await newChannel(u().member);
    const priv = await newChannel(u().member, { invite_only: true });
    await setRealmSetting(t, "can_create_private_channel_group", sys["role:administrators"]);
    await setRealmSetting(t, "can_create_public_channel_group", sys["role:administrators"]);
    try {
      assertError(await patch(u().member, pub.id, { is_private: true }), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await patch(u().member, priv.id, { is_private: false }), 400, "BAD_REQUEST", "Insufficient permission");
      assert.equal((await getStream(u().member, pub.id)).invite_only, false);
      assert.equal((await getStream(u().member, priv.id)).invite_only, true);
    } finally {
      await setRealmSetting(t, "can_create_private_channel_group", sys["role:members"]);
      await setRealmSetting(t, "can_create_public_channel_group", sys["role:members"]);
    }
    assertSuccess(await patch(u().member, pub.id, { is_private: true }));
  });

  test("changing privacy needs content access, even for administrators", async () => {
    const { id } = await newChannel(u().member, { invite_only: true });
    assertError(await patch(u().admin, id, { is_private: false }), 400, "BAD_REQUEST", "Channel content access is required.");
    assert.equal((await getStream(u().admin, id)).invite_only, true);
  });
});

describe("PATCH /streams/{stream_id}: default channel", () => {
  test("only administrators may change is_default_stream", async () => {
    const { id } = await newChannel(u().member);
    for (const key of ["member", "moderator"] as const) {
      const channel = key === "member" ? id : (await newChannel(u().moderator)).id;
      assertError(await patch(u()[key], channel, { is_default_stream: true }), 400, "BAD_REQUEST", "You do not have permission to change default channels.");
    }
    assert.equal((await defaultIds()).includes(id), false);
    t.clearEvents();
    assertSuccess(await patch(u().admin, id, { is_default_stream: true }));
    assert.equal((await defaultIds()).includes(id), true);
    const n = onlyNotification("default_streams");
    assert.deepEqual(n.event, { type: "default_streams", default_streams: await defaultIds() });
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());
    assert.equal((await listStreams(t, u().member, { include_default: true })).find((s) => s.stream_id === id).is_default, true);
    assertSuccess(await patch(u().owner, id, { is_default_stream: false }));
    assert.equal((await defaultIds()).includes(id), false);
  });

  test("a default channel cannot be private, whichever way round", async () => {
    const priv = await newChannel(u().admin, { invite_only: true });
    assertError(await patch(u().admin, priv.id, { is_default_stream: true }), 400, "BAD_REQUEST", "A default channel cannot be private.");
    const pub = await newChannel(u().member);
    assertSuccess(await patch(u().admin, pub.id, { is_default_stream: true }));
    assertError(await patch(u().member, pub.id, { is_private: true }), 400, "BAD_REQUEST", "A default channel cannot be private.");
    assertError(await patch(u().admin, pub.id, { is_private: true }), 400, "BAD_REQUEST", "A default channel cannot be private.");
    // Both at once is fine.
    assertSuccess(await patch(u().admin, pub.id, { is_private: true, is_default_stream: false }));
    assert.equal((await getStream(u().admin, pub.id)).invite_only, true);
    assert.equal((await defaultIds()).includes(pub.id), false);
  });
});

describe("PATCH /streams/{stream_id}: message_retention_days", () => {
  test("only organization owners may change it", async () => {
    const { id } = await newChannel(u().admin);
    assertError(await patch(u().admin, id, { message_retention_days: 30 }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    const moderated = await newChannel(u().moderator);
    assertError(await patch(u().moderator, moderated.id, { message_retention_days: 30 }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    const own = await newChannel(u().member);
    assertError(await patch(u().member, own.id, { message_retention_days: "unlimited" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assert.equal((await getStream(u().admin, id)).message_retention_days, null);
  });

  test("values: unlimited → -1, a number of days, realm_default → null; each announced", async () => {
    const { id, name } = await newChannel(u().admin);
    const cases: [unknown, number | null][] = [
      ["unlimited", -1],
      [30, 30],
      ["realm_default", null],
      [JSON.stringify("unlimited"), -1],
      ["365", 365],
      [JSON.stringify("realm_default"), null],
    ];
    for (const [value, stored] of cases) {
      t.clearEvents();
      assertSuccess(await patch(u().owner, id, { message_retention_days: value }));
      assert.equal((await getStream(u().owner, id)).message_retention_days, stored, String(value));
      const n = onlyNotification("stream", "update");
      assert.deepEqual(n.event, streamUpdate(id, name, "message_retention_days", stored));
      assert.deepEqual(sorted(n.userIds), await nonGuestIds());
    }
  });

  test("zero, negative and non-numeric values are refused", async () => {
    const { id } = await newChannel(u().owner);
    for (const value of [0, -5, "forever", "1.5"]) {
      const r = await patch(u().owner, id, { message_retention_days: value });
      assertError(r, 400, "BAD_REQUEST", /message_retention_days/);
    }
    assert.equal((await getStream(u().owner, id)).message_retention_days, null);
  });
});

describe("PATCH /streams/{stream_id}: topics_policy and folder_id", () => {
  test("every topics_policy value is accepted and announced; others are refused", async () => {
    const { id, name } = await newChannel(u().member);
    for (const policy of ["allow_empty_topic", "disable_empty_topic", "empty_topic_only", "inherit"]) {
      t.clearEvents();
      assertSuccess(await patch(u().member, id, { topics_policy: policy }));
      assert.equal((await getStream(u().member, id)).topics_policy, policy);
      assert.deepEqual(onlyNotification("stream", "update").event, streamUpdate(id, name, "topics_policy", policy));
    }
    for (const bad of ["bogus", "", "INHERIT"]) {
      assertError(await patch(u().member, id, { topics_policy: bad }), 400, "BAD_REQUEST", "Invalid topics_policy");
    }
    assert.equal((await getStream(u().member, id)).topics_policy, "inherit");
  });

  test("changing topics_policy needs the organization's can_set_topics_policy_group", async () => {
    const { id } = await newChannel(u().member);
    await setRealmSetting(t, "can_set_topics_policy_group", sys["role:administrators"]);
    try {
      assertError(await patch(u().member, id, { topics_policy: "disable_empty_topic" }), 400, "BAD_REQUEST", "Insufficient permission");
      assertSuccess(await patch(u().admin, id, { topics_policy: "disable_empty_topic" }));
      assert.equal((await getStream(u().member, id)).topics_policy, "disable_empty_topic");
    } finally {
      await setRealmSetting(t, "can_set_topics_policy_group", sys["role:members"]);
    }
  });

  test("folder_id files the channel in a folder; null takes it out; unknown folders are refused", async () => {
    const folder = assertSuccess(await t.api(u().admin, "POST", "/channel_folders/create", { name: uniqueName("Folder"), description: "" })).channel_folder_id;
    assert.equal(typeof folder, "number");
    const { id, name } = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { folder_id: folder }));
    assert.equal((await getStream(u().member, id)).folder_id, folder);
    const n = onlyNotification("stream", "update");
    assert.deepEqual(n.event, streamUpdate(id, name, "folder_id", folder));
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());

    assertError(await patch(u().member, id, { folder_id: 999999 }), 400, "BAD_REQUEST", "Invalid channel folder ID");
    assert.equal((await getStream(u().member, id)).folder_id, folder);

    t.clearEvents();
    assertSuccess(await patch(u().member, id, { folder_id: null }));
    assert.equal((await getStream(u().member, id)).folder_id, null);
    assert.deepEqual(onlyNotification("stream", "update").event, streamUpdate(id, name, "folder_id", null));
  });
});

describe("PATCH /streams/{stream_id}: group settings", () => {
  test("{new} changes a setting and announces it; {new, old} checks the old value", async () => {
    const { id, name } = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await patch(u().member, id, { can_remove_subscribers_group: { new: sys["role:moderators"] } }));
    assert.equal((await getStream(u().member, id)).can_remove_subscribers_group, sys["role:moderators"]);
    const n = onlyNotification("stream", "update");
    assert.deepEqual(n.event, streamUpdate(id, name, "can_remove_subscribers_group", sys["role:moderators"]));
    assert.deepEqual(sorted(n.userIds), await nonGuestIds());

    assertError(
      await patch(u().member, id, { can_remove_subscribers_group: { new: sys["role:members"], old: sys["role:administrators"] } }),
      400,
      "EXPECTATION_MISMATCH",
      "'old' value does not match the expected value.",
      { field_name: "old" },
    );
    assert.equal((await getStream(u().member, id)).can_remove_subscribers_group, sys["role:moderators"]);
    assertSuccess(await patch(u().member, id, { can_remove_subscribers_group: { new: sys["role:members"], old: sys["role:moderators"] } }));
    assert.equal((await getStream(u().member, id)).can_remove_subscribers_group, sys["role:members"]);

    // The anonymous default of can_administer_channel_group matches as `old`.
    assertSuccess(
      await patch(u().member, id, {
        can_administer_channel_group: { new: { direct_members: [u().moderator.id, u().member.id], direct_subgroups: [] }, old: { direct_members: [u().member.id], direct_subgroups: [] } },
      }),
    );
    assert.deepEqual((await getStream(u().member, id)).can_administer_channel_group, {
      direct_members: sorted([u().member.id, u().moderator.id]),
      direct_subgroups: [],
    });
    // The moderator is now a channel administrator.
    assertSuccess(await patch(u().moderator, id, { description: "moderated" }));
  });

  test("every channel group setting can be changed", async () => {
    const { id } = await newChannel(u().admin);
    const values: Record<string, unknown> = {
      can_add_subscribers_group: sys["role:members"],
      can_remove_subscribers_group: sys["role:moderators"],
      can_administer_channel_group: { direct_members: [u().member.id], direct_subgroups: [sys["role:moderators"]] },
      can_delete_any_message_group: sys["role:administrators"],
      can_delete_own_message_group: sys["role:everyone"],
      can_move_messages_out_of_channel_group: sys["role:fullmembers"],
      can_move_messages_within_channel_group: sys["role:members"],
      can_resolve_topics_group: sys["role:moderators"],
      can_send_message_group: sys["role:members"],
      can_subscribe_group: sys["role:fullmembers"],
    };
    for (const [setting, value] of Object.entries(values)) {
      assertSuccess(await patch(u().admin, id, { [setting]: { new: value } }));
    }
    const stream = await getStream(u().admin, id);
    for (const [setting, value] of Object.entries(values)) assert.deepEqual(stream[setting], value, setting);
  });

  test("deactivated users are left out of anonymous group settings", async () => {
    const leaving = await t.createUser("Leaving Admin");
    const { id } = await newChannel(u().admin, {
      can_administer_channel_group: { direct_members: [leaving.id, u().member.id], direct_subgroups: [sys["role:moderators"]] },
    });
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${leaving.id}`));
    assert.deepEqual((await getStream(u().admin, id)).can_administer_channel_group, { direct_members: [u().member.id], direct_subgroups: [sys["role:moderators"]] });
    assertError(
      await patch(u().admin, id, { can_resolve_topics_group: { new: { direct_members: [leaving.id], direct_subgroups: [] } } }),
      400,
      "BAD_REQUEST",
      `Invalid user ID: ${leaving.id}`,
    );
  });

  test("`old` is compared with the value clients were shown (deactivated users left out)", async () => {
    const leaving = await t.createUser("Leaving Member");
    const { id } = await newChannel(u().admin, { can_administer_channel_group: { direct_members: [leaving.id, u().member.id], direct_subgroups: [] } });
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${leaving.id}`));
    const shown = (await getStream(u().admin, id)).can_administer_channel_group;
    assert.deepEqual(shown, { direct_members: [u().member.id], direct_subgroups: [] });
    assertSuccess(await patch(u().admin, id, { can_administer_channel_group: { new: sys["role:moderators"], old: shown } }));
    assert.equal((await getStream(u().admin, id)).can_administer_channel_group, sys["role:moderators"]);
  });

  test("anonymous values are normalized: one subgroup is that group, nothing is role:nobody", async () => {
    const { id } = await newChannel(u().admin);
    assertSuccess(await patch(u().admin, id, { can_resolve_topics_group: { new: { direct_members: [], direct_subgroups: [sys["role:moderators"]] } } }));
    assert.equal((await getStream(u().admin, id)).can_resolve_topics_group, sys["role:moderators"]);
    assertSuccess(await patch(u().admin, id, { can_resolve_topics_group: { new: { direct_members: [], direct_subgroups: [] } } }));
    assert.equal((await getStream(u().admin, id)).can_resolve_topics_group, sys["role:nobody"]);
  });

  test("setting a value equal to the current one sends no event", async () => {
    const { id } = await newChannel(u().admin);
    t.clearEvents();
    assertSuccess(await patch(u().admin, id, { can_send_message_group: { new: sys["role:everyone"] } }));
    assertSuccess(await patch(u().admin, id, { can_administer_channel_group: { new: { direct_members: [u().admin.id], direct_subgroups: [] } } }));
    assert.deepEqual(notifications("stream"), []);
  });

  test("changing can_send_message_group also announces stream_post_policy and is_announcement_only", async () => {
    const { id, name } = await newChannel(u().admin);
    t.clearEvents();
    assertSuccess(await patch(u().admin, id, { can_send_message_group: { new: sys["role:administrators"] } }));
    const stream = await getStream(u().admin, id);
    assert.equal(stream.stream_post_policy, 2);
    assert.equal(stream.is_announcement_only, true);
    assert.deepEqual(
      notifications("stream", "update").map((n) => n.event),
      [
        streamUpdate(id, name, "can_send_message_group", sys["role:administrators"]),
        streamUpdate(id, name, "stream_post_policy", 2),
        streamUpdate(id, name, "is_announcement_only", true),
      ],
    );
  });

  test("values a setting does not accept", async () => {
    const { id } = await newChannel(u().admin);
    for (const setting of ["can_add_subscribers_group", "can_administer_channel_group", "can_subscribe_group"]) {
      assertError(
        await patch(u().admin, id, { [setting]: { new: sys["role:everyone"] } }),
        400,
        "BAD_REQUEST",
        `'${setting}' setting cannot be set to 'role:everyone' group.`,
      );
    }
    assertError(
      await patch(u().admin, id, { can_send_message_group: { new: sys["role:internet"] } }),
      400,
      "BAD_REQUEST",
      "'can_send_message_group' setting cannot be set to 'role:internet' group.",
    );
    assertError(await patch(u().admin, id, { can_send_message_group: { new: 999999 } }), 400, "BAD_REQUEST", "Invalid user group ID: 999999");
    assertError(
      await patch(u().admin, id, { can_send_message_group: { new: { direct_members: [], direct_subgroups: [999999] } } }),
      400,
      "BAD_REQUEST",
      "Invalid user group ID: 999999",
    );
    assertError(
      await patch(u().admin, id, { can_add_subscribers_group: sys["role:members"] }),
      400,
      "BAD_REQUEST",
      "can_add_subscribers_group does not have the expected format",
    );
    assertError(
      await patch(u().admin, id, { can_send_message_group: { old: sys["role:everyone"] } }),
      400,
      "BAD_REQUEST",
      "can_send_message_group does not have the expected format",
    );
    // Nothing changed.
    assert.deepEqual(await getStream(u().admin, id), channelWithDefaults(id, (await getStream(u().admin, id)).name, u().admin.id));
  });

  test("the delete-message settings need the organization's can_set_delete_message_policy_group (moderators)", async () => {
    const { id } = await newChannel(u().member);
    for (const setting of ["can_delete_any_message_group", "can_delete_own_message_group"]) {
      assertError(await patch(u().member, id, { [setting]: { new: sys["role:members"] } }), 400, "BAD_REQUEST", "Insufficient permission");
      assertSuccess(await patch(u().moderator, (await newChannel(u().moderator)).id, { [setting]: { new: sys["role:members"] } }));
    }
    assert.equal((await getStream(u().member, id)).can_delete_any_message_group, sys["role:nobody"]);
  });

  test("can_add_subscribers_group and can_subscribe_group need content access; other settings do not", async () => {
    const { id } = await newChannel(u().member, { invite_only: true });
    for (const setting of ["can_add_subscribers_group", "can_subscribe_group"]) {
      assertError(await patch(u().admin, id, { [setting]: { new: sys["role:administrators"] } }), 400, "BAD_REQUEST", "Channel content access is required.");
    }
    assertSuccess(await patch(u().admin, id, { can_send_message_group: { new: sys["role:administrators"] } }));
    assertSuccess(await patch(u().member, id, { can_subscribe_group: { new: sys["role:administrators"] } }));
    assert.equal((await getStream(u().admin, id)).can_subscribe_group, sys["role:administrators"]);
  });
});

describe("PATCH /streams/{stream_id}: who may administer", () => {
  test("the creator and organization administrators may; other users with access may not", async () => {
    const { id } = await newChannel(u().member);
    assertSuccess(await patch(u().member, id, { description: "by the creator" }));
    assertSuccess(await patch(u().admin, id, { description: "by an admin" }));
    assertSuccess(await patch(u().owner, id, { description: "by the owner" }));
    const other = await t.createUser("Other Member");
    for (const actor of [other, u().moderator, u().bot]) CANNOT_ADMINISTER(await patch(actor, id, { description: "no" }));
    // A guest who cannot see the channel cannot tell it exists.
    INVALID_ID(await patch(u().guest, id, { description: "no" }));
    assert.equal((await getStream(u().member, id)).description, "by the owner");
  });

  test("private channels: non-subscribers get Invalid channel ID; subscribers who are not administrators are refused", async () => {
    const { id, name } = await newChannel(u().moderator, { invite_only: true });
    for (const key of ["member", "guest", "bot"] as const) INVALID_ID(await patch(u()[key], id, { description: "no" }));
    await subscribeUsers(t, u().moderator, name, [u().member.id, u().guest.id, u().bot.id]);
    for (const key of ["member", "guest", "bot"] as const) CANNOT_ADMINISTER(await patch(u()[key], id, { description: "no" }));
    // Administrators need no subscription.
    assertSuccess(await patch(u().admin, id, { description: "admin" }));
    assert.equal((await getStream(u().moderator, id)).description, "admin");
  });

  test("metadata access through can_administer_channel_group is enough; can_subscribe_group gives access, not administration", async () => {
    const admin = await t.createUser("Channel Admin");
    const joiner = await t.createUser("Channel Joiner");
    const { id } = await newChannel(u().moderator, {
      invite_only: true,
      can_administer_channel_group: { direct_members: [admin.id], direct_subgroups: [] },
      can_subscribe_group: { direct_members: [joiner.id], direct_subgroups: [] },
    });
    assertSuccess(await patch(admin, id, { description: "administered" }));
    CANNOT_ADMINISTER(await patch(joiner, id, { description: "no" }));
    // The creator was not kept as administrator.
    CANNOT_ADMINISTER(await patch(u().moderator, id, { description: "no" }));
  });

  test("unknown channels", async () => {
    INVALID_ID(await patch(u().admin, 987654, { description: "x" }));
    INVALID_ID(await t.api(u().admin, "DELETE", "/streams/987654"));
  });
});

describe("DELETE /streams/{stream_id} (archive) and unarchiving", () => {
  test("archiving marks the channel, announces is_archived, removes it from defaults; unarchiving reverses it", async () => {
    const { id, name } = await newChannel(u().member, { principals: [u().member.id, u().moderator.id] });
    assertSuccess(await patch(u().admin, id, { is_default_stream: true }));
    t.clearEvents();
    assertSuccess(await t.api(u().member, "DELETE", `/streams/${id}`));

    const update = onlyNotification("stream", "update");
    assert.deepEqual(update.event, streamUpdate(id, name, "is_archived", true));
    assert.deepEqual(sorted(update.userIds), await nonGuestIds());
    const defaults = onlyNotification("default_streams");
    assert.deepEqual(defaults.event, { type: "default_streams", default_streams: await defaultIds() });
    assert.equal((await defaultIds()).includes(id), false);

    assert.equal((await listStreams(t, u().member)).some((s) => s.stream_id === id), false);
    const archived = (await listStreams(t, u().member, { exclude_archived: false, include_default: true })).find((s) => s.stream_id === id);
    assert.deepEqual(archived, { ...channelWithDefaults(id, name, u().member.id, { subscriber_count: 2 }), is_archived: true, is_default: false });

    assertError(await t.api(u().member, "DELETE", `/streams/${id}`), 400, "BAD_REQUEST", "Channel is already deactivated");
    assertError(await t.api(u().admin, "DELETE", `/streams/${id}`), 400, "BAD_REQUEST", "Channel is already deactivated");

    t.clearEvents();
    assertSuccess(await patch(u().member, id, { is_archived: false }));
    assert.deepEqual(onlyNotification("stream", "update").event, streamUpdate(id, name, "is_archived", false));
    const back = (await listStreams(t, u().member)).find((s) => s.stream_id === id);
    assert.deepEqual(back, channelWithDefaults(id, name, u().member.id, { subscriber_count: 2 }));
    assertError(await patch(u().member, id, { is_archived: false }), 400, "BAD_REQUEST", "Channel is not currently deactivated");
    // is_archived=true through PATCH changes nothing.
    assertSuccess(await patch(u().member, id, { is_archived: true }));
    assert.equal((await getStream(u().member, id)).is_archived, false);
  });

  test("archiving needs the right to administer the channel", async () => {
    const { id } = await newChannel(u().member);
    CANNOT_ADMINISTER(await t.api(u().moderator, "DELETE", `/streams/${id}`));
    CANNOT_ADMINISTER(await t.api(u().bot, "DELETE", `/streams/${id}`));
    INVALID_ID(await t.api(u().guest, "DELETE", `/streams/${id}`));
    const priv = await newChannel(u().member, { invite_only: true });
    INVALID_ID(await t.api(u().moderator, "DELETE", `/streams/${priv.id}`));
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${priv.id}`));
    assertSuccess(await t.api(u().owner, "DELETE", `/streams/${id}`));
  });

  test("archiving a private channel tells only those who can see it", async () => {
    const { id, name } = await newChannel(u().member, { invite_only: true });
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${id}`));
    const update = onlyNotification("stream", "update");
    assert.deepEqual(update.event, streamUpdate(id, name, "is_archived", true));
    assert.deepEqual(sorted(update.userIds), sorted([u().owner.id, u().admin.id, u().member.id]));
  });

  test("a private channel without subscribers cannot be unarchived", async () => {
    const { id, name } = await newChannel(u().member, { invite_only: true });
    assertSuccess(await t.api(u().member, "DELETE", `/streams/${id}`));
    assertSuccess(await t.api(u().member, "DELETE", "/users/me/subscriptions", { subscriptions: [name] }));
    assertError(await patch(u().admin, id, { is_archived: false }), 400, "BAD_REQUEST", "Channel is private and have no subscribers");
  });
});

describe("GET /streams/{stream_id}/members", () => {
  test("subscribers, sorted by user ID; deactivated users left out", async () => {
    const a = await t.createUser("Member Zed");
    const b = await t.createUser("Member Amy");
    const { id } = await newChannel(u().member, { principals: [b.id, u().member.id, a.id, u().bot.id] });
    const expected = sorted([u().member.id, a.id, b.id, u().bot.id]);
    for (const viewer of [u().member, u().admin, u().moderator, a]) {
      assert.deepEqual(assertSuccess(await t.api(viewer, "GET", `/streams/${id}/members`)), { result: "success", msg: "", subscribers: expected });
    }
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${a.id}`));
    assert.deepEqual(assertSuccess(await t.api(u().member, "GET", `/streams/${id}/members`)).subscribers, expected.filter((x) => x !== a.id));
    assert.equal((await getStream(u().member, id)).subscriber_count, 3);
  });

  test("channels the user cannot see are Invalid channel ID", async () => {
    const pub = await newChannel(u().member);
    INVALID_ID(await t.api(u().guest, "GET", `/streams/${pub.id}/members`));
    const priv = await newChannel(u().member, { invite_only: true });
    INVALID_ID(await t.api(u().moderator, "GET", `/streams/${priv.id}/members`));
    INVALID_ID(await t.api(u().bot, "GET", `/streams/${priv.id}/members`));
    assert.deepEqual(assertSuccess(await t.api(u().admin, "GET", `/streams/${priv.id}/members`)).subscribers, [u().member.id]);
    INVALID_ID(await t.api(u().admin, "GET", "/streams/987654/members"));
  });
});

describe("POST and DELETE /default_streams", () => {
  test("only organization administrators", async () => {
    const { id } = await newChannel(u().member);
    for (const key of ["moderator", "member", "guest", "bot"] as const) {
      for (const method of ["POST", "DELETE"]) {
        assertError(await t.api(u()[key], method, "/default_streams", { stream_id: id }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      }
    }
    assert.equal((await defaultIds()).includes(id), false);
  });

  test("adding and removing announce default_streams to non-guests; repeating is a quiet success", async () => {
    const { id } = await newChannel(u().member);
    const before = await defaultIds();
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "POST", "/default_streams", { stream_id: id }));
    const added = onlyNotification("default_streams");
    assert.deepEqual(added.event, { type: "default_streams", default_streams: sorted([...before, id]) });
    assert.deepEqual(sorted(added.userIds), await nonGuestIds());
    assert.deepEqual(await defaultIds(), sorted([...before, id]));

    t.clearEvents();
    assertSuccess(await t.api(u().owner, "POST", "/default_streams", { stream_id: id }));
    assert.deepEqual(notifications("default_streams"), []);
    assert.deepEqual(await defaultIds(), sorted([...before, id]));

    assertSuccess(await t.api(u().admin, "DELETE", "/default_streams", { stream_id: id }));
    const removed = onlyNotification("default_streams");
    assert.deepEqual(removed.event, { type: "default_streams", default_streams: before });
    assert.deepEqual(sorted(removed.userIds), await nonGuestIds());
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", "/default_streams", { stream_id: id }));
    assert.deepEqual(notifications("default_streams"), []);
    assert.deepEqual(await defaultIds(), before);
  });

  test("private, unknown and archived channels", async () => {
    const mine = await newChannel(u().admin, { invite_only: true });
    assertError(await t.api(u().admin, "POST", "/default_streams", { stream_id: mine.id }), 400, "BAD_REQUEST", "Private channels cannot be made default.");
    const theirs = await newChannel(u().member, { invite_only: true });
    INVALID_ID(await t.api(u().admin, "POST", "/default_streams", { stream_id: theirs.id }));
    INVALID_ID(await t.api(u().admin, "POST", "/default_streams", { stream_id: 987654 }));
    const archived = await newChannel(u().admin);
    assertSuccess(await t.api(u().admin, "DELETE", `/streams/${archived.id}`));
    INVALID_ID(await t.api(u().admin, "POST", "/default_streams", { stream_id: archived.id }));
    assertError(await t.api(u().admin, "POST", "/default_streams"), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream_id' argument");
  });
});

describe("who receives channel events", () => {
  test("a new public channel: every non-guest hears of it, guests do not", async () => {
    const name = uniqueName("Announced");
    t.clearEvents();
    const id = await createChannel(t, u().member, name, { subscriptions: [{ name, description: "hi" }] });
    const creates = notifications("stream", "create");
    for (const n of creates) {
      assert.equal(n.event.for_unarchiving, false);
      assert.equal((n.event.streams as Json[]).length, 1);
      const stream = (n.event.streams as Json[])[0];
      assert.deepEqual(
        { ...stream, subscriber_count: 0 },
        channelWithDefaults(id, name, u().member.id, { description: "hi", rendered_description: "<p>hi</p>", subscriber_count: 0 }),
      );
    }
    assert.deepEqual(recipients("stream", "create"), await nonGuestIds());
    assert.deepEqual(t.eventsFor(u().guest.id, "stream"), []);
  });

  test("a new private channel: only organization administrators and the creator", async () => {
    t.clearEvents();
    const { id } = await newChannel(u().member, { invite_only: true });
    assert.deepEqual(recipients("stream", "create"), sorted([u().owner.id, u().admin.id, u().member.id]));
    for (const n of notifications("stream", "create")) assert.equal((n.event.streams as Json[])[0].stream_id, id);
  });

  test("a new private channel with can_subscribe_group = role:members: every non-guest may see it", async () => {
    t.clearEvents();
    await newChannel(u().admin, { invite_only: true, can_subscribe_group: sys["role:members"] });
    assert.deepEqual(recipients("stream", "create"), await nonGuestIds());
  });

  test("a new web-public channel: everyone, guests included", async () => {
    await setRealmSetting(t, "enable_spectator_access", true);
    try {
      t.clearEvents();
      await newChannel(u().owner, { is_web_public: true });
      assert.deepEqual(recipients("stream", "create"), await allUserIds());
    } finally {
      await setRealmSetting(t, "enable_spectator_access", false);
    }
  });

  test("updates of a private channel reach its subscribers and administrators; a guest subscriber hears of a public one", async () => {
    const priv = await newChannel(u().moderator, { invite_only: true });
    await subscribeUsers(t, u().moderator, priv.name, [u().guest.id]);
    t.clearEvents();
    assertSuccess(await patch(u().moderator, priv.id, { description: "secret" }));
    assert.deepEqual(recipients("stream", "update"), sorted([u().owner.id, u().admin.id, u().moderator.id, u().guest.id]));

    const pub = await newChannel(u().member);
    t.clearEvents();
    assertSuccess(await patch(u().member, pub.id, { description: "public" }));
    assert.deepEqual(recipients("stream", "update"), await nonGuestIds());
    await subscribeUsers(t, u().member, pub.name, [u().guest.id]);
    t.clearEvents();
    assertSuccess(await patch(u().member, pub.id, { description: "public again" }));
    assert.deepEqual(recipients("stream", "update"), sorted([...(await nonGuestIds()), u().guest.id]));
  });
});

function channelWithDefaults(id: number, name: string, creatorId: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return expectedChannel(sys, NOW, id, name, creatorId, overrides);
}

describe("GET /streams/{stream_id}/email_address", () => {
  const emailAddress = (viewer: TestUser, id: number | string, params: Record<string, unknown> = {}) => t.api(viewer, "GET", `/streams/${id}/email_address`, params);

  test("no incoming-email gateway: email is \"\", as Zulip answers without EMAIL_GATEWAY_PATTERN, for everyone who can read the channel", async () => {
    const { owner, admin, moderator, member, guest, bot } = u();
    const channel = await newChannel(member, { principals: [member.id, guest.id, bot.id] }, "mailable");
    for (const viewer of [owner, admin, moderator, member, guest, bot]) {
      const reply = assertSuccess(await emailAddress(viewer, channel.id));
      assert.deepEqual(reply, { result: "success", msg: "", email: "" });
    }
  });

  test("channels one cannot read, unknown and archived ones: Invalid channel ID", async () => {
    const { admin, member, guest } = u();
    const open = await newChannel(admin, {}, "open mail");
    INVALID_ID(await emailAddress(guest, open.id));
    const secret = await newChannel(member, { invite_only: true }, "secret mail");
    INVALID_ID(await emailAddress(admin, secret.id));
    INVALID_ID(await emailAddress(member, 999999));
    const gone = await newChannel(admin, {}, "archived mail");
    assertSuccess(await t.api(admin, "DELETE", `/streams/${gone.id}`));
    INVALID_ID(await emailAddress(admin, gone.id));
    assertError(await emailAddress(member, "abc"), 400, "BAD_REQUEST", "stream_id is not an integer");
  });

  test("sender_id: oneself, or a bot one owns (administrators: any bot); else No such bot / Insufficient permission", async () => {
    const { admin, member, moderator, bot } = u();
    const channel = await newChannel(admin, {}, "sender mail");
    assertSuccess(await emailAddress(member, channel.id, { sender_id: member.id }));
    // u().bot belongs to the member.
    assertSuccess(await emailAddress(member, channel.id, { sender_id: bot.id }));
    assertSuccess(await emailAddress(admin, channel.id, { sender_id: bot.id }));
    assertError(await emailAddress(moderator, channel.id, { sender_id: bot.id }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await emailAddress(member, channel.id, { sender_id: admin.id }), 400, "BAD_REQUEST", "No such bot");
    assertError(await emailAddress(member, channel.id, { sender_id: 999999 }), 400, "BAD_REQUEST", "No such bot");
    const notificationBot = await t.services.storage.db.selectFrom("users").select("id").where("email_key", "=", "notification-bot@zulip.com").executeTakeFirstOrThrow();
    assertError(await emailAddress(admin, channel.id, { sender_id: notificationBot.id }), 400, "BAD_REQUEST", "No such bot");
    assertError(await emailAddress(member, channel.id, { sender_id: -1 }), 400, "BAD_REQUEST", "sender_id is too small");
    assertError(await emailAddress(member, channel.id, { sender_id: "me" }), 400, "BAD_REQUEST", 'Argument "sender_id" is not valid JSON.');
    // The channel is checked first.
    INVALID_ID(await emailAddress(member, 999999, { sender_id: 999999 }));
  });
});
