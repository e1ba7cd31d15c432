// Bot accounts over REST: POST/GET /bots, PATCH/DELETE /bots/{bot_id},
// POST /bots/{bot_id}/api_key/regenerate and POST /users/me/api_key/regenerate —
// Zulip's replies, errors and permission rules (can_create_bots_group,
// can_create_write_only_bots_group, owners and administrators administer any
// bot, others their own, guests and bots none), the realm_user and realm_bot
// events, realm_bots in /register, and old API keys failing at once.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import sharp from "sharp";
import { Role } from "../src/domain/roles.ts";
import { botServices } from "../src/queries/bots.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;
before(async () => {
  t = await startTestApp();
  sys = await t.systemGroupIds();
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const u = () => t.users;
let shortCounter = 0;
const shortName = (prefix = "helper") => `${prefix}${++shortCounter}`;
const domain = () => t.services.config.fakeEmailDomain;

const createBot = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/bots", params);

/** Creates a bot as `owner` and returns its reply and a client for it. */
async function newBot(owner: TestUser, params: Record<string, unknown> = {}): Promise<{ id: number; bot: TestUser; reply: Record<string, unknown>; short: string }> {
  const short = shortName();
  const reply = assertSuccess(await createBot(owner, { full_name: uniqueName("Helper Bot"), short_name: short, ...params }));
  return { id: reply.user_id, bot: { id: reply.user_id, email: `${short}-bot@${domain()}`, apiKey: reply.api_key, role: Role.MEMBER, password: "" }, reply, short };
}

const botEvents = (op?: string) =>
  t.events.filter((n) => n.event.type === "realm_bot" && (op === undefined || n.event.op === op)).map((n) => ({ event: n.event, userIds: [...n.userIds].sort((a, b) => a - b) }));
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

async function setGroupSetting(name: string, group: string): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", { [name]: { new: sys[group] } }));
}

async function multipart(user: TestUser, method: string, urlPath: string, fields: Record<string, string>, files: { field: string; content: Buffer }[]): Promise<ApiResponse> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files) form.append(f.field, new Blob([new Uint8Array(f.content)], { type: "image/png" }), "avatar.png");
  const response = await fetch(`${t.url}/api/v1${urlPath}`, { method, body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

const apiEmail = async (userId: number) =>
  (await t.services.storage.db.selectFrom("users").select("email").where("id", "=", userId).executeTakeFirstOrThrow()).email;

const png = () => sharp({ create: { width: 40, height: 30, channels: 3, background: "#00aa00" } }).png().toBuffer();

describe("POST /bots", () => {
  test("a member creates a generic bot: Zulip's reply, the bot's address and account, and it can call the API", async () => {
    const short = shortName("Build");
    const response = await createBot(u().member, { full_name: "Build Helper", short_name: ` ${short} ` });
    const body = assertSuccess(response);
    assert.deepEqual(Object.keys(body).sort(), [
      "api_key",
      "avatar_url",
      "default_all_public_streams",
      "default_events_register_stream",
      "default_sending_stream",
      "msg",
      "result",
      "user_id",
    ]);
    assert.equal(typeof body.user_id, "number");
    assert.match(body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.match(body.avatar_url, /^https?:\/\/.+\/user_avatars\/\d+\/default\/\d+\.png\?version=1$/);
    assert.equal(body.default_sending_stream, null);
    assert.equal(body.default_events_register_stream, null);
    assert.equal(body.default_all_public_streams, false);

    const email = `${short}-bot@${domain()}`;
    const user = assertSuccess(await t.api(u().owner, "GET", `/users/${body.user_id}`)).user;
    assert.equal(user.email, email);
    assert.equal(user.delivery_email, email);
    assert.equal(user.full_name, "Build Helper");
    assert.equal(user.is_bot, true);
    assert.equal(user.bot_type, 1);
    assert.equal(user.bot_owner_id, u().member.id);
    assert.equal(user.role, Role.MEMBER);

    // The bot authenticates with its address and key.
    const me = assertSuccess(await t.api({ id: body.user_id, email, apiKey: body.api_key, role: Role.MEMBER, password: "" }, "GET", "/users/me"));
    assert.equal(me.user_id, body.user_id);
  });

  test("events: realm_user add to everyone, realm_bot add with the whole bot object to its owner and the administrators", async () => {
    const { id, reply, short } = await newBot(u().member);
    const everyone = await t.activeUserIds();
    const adds = t.events.filter((n) => n.event.type === "realm_user" && n.event.op === "add");
    assert.deepEqual(sorted(adds.flatMap((n) => [...n.userIds])), everyone);
    const person = adds[0]!.event.person as Record<string, unknown>;
    assert.equal(person.user_id, id);
    assert.equal(person.is_bot, true);
    assert.equal(person.bot_type, 1);
    assert.equal(person.bot_owner_id, u().member.id);
    // The bot joins the system groups of its role.
    assert.ok(t.events.some((n) => n.event.type === "user_group" && n.event.op === "add_members" && n.event.group_id === sys["role:members"]));

    const events = botEvents("add");
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.userIds, sorted([u().owner.id, u().admin.id, u().member.id]));
    assert.deepEqual(events[0]!.event.bot, {
      email: `${short}-bot@${domain()}`,
      user_id: id,
      full_name: (events[0]!.event.bot as { full_name: string }).full_name,
      bot_type: 1,
      is_active: true,
      api_key: reply.api_key,
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
      avatar_url: reply.avatar_url,
      services: [],
      owner_id: u().member.id,
    });
  });

  test("an outgoing webhook bot gets a service: its URL, interface and a random token, in the event and for other code", async () => {
    const { id, short } = await newBot(u().member, { bot_type: 3, payload_url: JSON.stringify("http://hooks.example.com:9/hook"), interface_type: 2 });
    const services = await botServices(t.services.storage.db, id);
    assert.equal(services.length, 1);
    assert.equal(services[0]!.name, short, "service_name defaults to the short name");
    assert.equal(services[0]!.base_url, "http://hooks.example.com:9/hook");
    assert.equal(services[0]!.interface, 2);
    assert.match(services[0]!.token, /^[A-Za-z0-9]{32}$/);
    const [event] = botEvents("add");
    assert.deepEqual((event!.event.bot as { services: unknown }).services, [{ base_url: "http://hooks.example.com:9/hook", interface: 2, token: services[0]!.token }]);
    // A named service; a bare (not JSON-encoded) URL is accepted as well.
    const named = await newBot(u().member, { bot_type: 3, payload_url: "https://example.com/x", service_name: "ci" });
    assert.equal((await botServices(t.services.storage.db, named.id))[0]!.name, "ci");
  });

  test("an incoming webhook bot has no service; the default channels and default_all_public_streams are kept", async () => {
    const channel = uniqueName("bots-home");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    const { id, reply } = await newBot(u().member, { bot_type: 2, default_sending_stream: channel, default_events_register_stream: channel, default_all_public_streams: true });
    assert.equal(reply.default_sending_stream, channel);
    assert.equal(reply.default_events_register_stream, channel);
    assert.equal(reply.default_all_public_streams, true);
    assert.deepEqual(await botServices(t.services.storage.db, id), []);
    const bots = assertSuccess(await t.api(u().member, "GET", "/bots")).bots;
    const listed = bots.find((b: { user_id: number }) => b.user_id === id);
    assert.equal(listed.default_sending_stream, channel);
    assert.equal(listed.default_all_public_streams, true);
  });

  test("an avatar file: the bot's avatar is the upload; two files are refused", async () => {
    const image = await png();
    const short = shortName();
    const body = assertSuccess(await multipart(u().member, "POST", "/bots", { full_name: uniqueName("Pic Bot"), short_name: short }, [{ field: "file", content: image }]));
    assert.match(body.avatar_url, /\/user_avatars\/\d+\/[0-9a-f]{40}\.png\?version=1$/);
    const served = await fetch(t.url + new URL(body.avatar_url).pathname);
    assert.equal(served.status, 200);
    assert.equal(served.headers.get("content-type"), "image/png");

    const two = await multipart(u().member, "POST", "/bots", { full_name: uniqueName("Pic Bot"), short_name: shortName() }, [
      { field: "a", content: image },
      { field: "b", content: image },
    ]);
    assertError(two, 400, "BAD_REQUEST", "You may only upload one file at a time");
    const broken = await multipart(u().member, "POST", "/bots", { full_name: uniqueName("Pic Bot"), short_name: shortName() }, [{ field: "file", content: Buffer.from("not an image") }]);
    assert.equal(broken.status, 400);
    assert.equal(broken.body.result, "error");
  });

  test("duplicate short names and names in use are refused with Zulip's messages; nothing is created", async () => {
    const { short } = await newBot(u().member);
    const before = (await t.activeUserIds()).length;
    assertError(await createBot(u().admin, { full_name: uniqueName("Other"), short_name: short }), 400, "BAD_REQUEST", "Username already in use");
    // Short names are matched without regard to case, like addresses.
    assertError(await createBot(u().admin, { full_name: uniqueName("Other"), short_name: short.toUpperCase() }), 400, "BAD_REQUEST", "Username already in use");
    const name = uniqueName("Taken Name");
    await newBot(u().member, { full_name: name });
    assertError(await createBot(u().member, { full_name: name, short_name: shortName() }), 400, "BAD_REQUEST", "Name is already in use!");
    // A person's name counts too.
    const personName = assertSuccess(await t.api(u().owner, "GET", `/users/${u().moderator.id}`)).user.full_name;
    assertError(await createBot(u().member, { full_name: personName, short_name: shortName() }), 400, "BAD_REQUEST", "Name is already in use!");
    assert.equal((await t.activeUserIds()).length, before + 1);
    assert.equal(botEvents("add").length, 2);
  });

  test("bad input: missing, blank, malformed and unknown values", async () => {
    const m = u().member;
    const ok = () => ({ full_name: uniqueName("Input Bot"), short_name: shortName() });
    assertError(await createBot(m, { short_name: shortName() }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'full_name' argument", { var_name: "full_name" });
    assertError(await createBot(m, { full_name: "No Short" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'short_name' argument", { var_name: "short_name" });
    assertError(await createBot(m, { ...ok(), short_name: "   " }), 400, "BAD_REQUEST", "Bad name or username");
    assertError(await createBot(m, { ...ok(), short_name: "two words" }), 400, "BAD_REQUEST", "Bad name or username");
    assertError(await createBot(m, { ...ok(), full_name: "x" }), 400, "BAD_REQUEST", "Name too short!");
    assertError(await createBot(m, { ...ok(), full_name: "a".repeat(101) }), 400, "BAD_REQUEST", "Name too long!");
    assertError(await createBot(m, { ...ok(), full_name: "Bad*Name" }), 400, "BAD_REQUEST", "Invalid characters in name!");
    assertError(await createBot(m, { ...ok(), bot_type: "generic" }), 400, "BAD_REQUEST", 'Argument "bot_type" is not valid JSON.');
    assertError(await createBot(m, { ...ok(), bot_type: "1.5" }), 400, "BAD_REQUEST", "bot_type is not an integer");
    assertError(await createBot(u().admin, { ...ok(), bot_type: 9 }), 400, "BAD_REQUEST", "Invalid bot type");
    assertError(await createBot(m, { ...ok(), bot_type: 4, service_name: "converter" }), 400, "BAD_REQUEST", "Embedded bots are not enabled.");
    assertError(await createBot(m, { ...ok(), bot_type: 3, payload_url: '"http://x.example/"', interface_type: 3 }), 400, "BAD_REQUEST", "Invalid interface type");
    assertError(await createBot(m, { ...ok(), bot_type: 3, payload_url: '"not a url"' }), 400, "BAD_REQUEST", "payload_url is not a URL");
    assertError(await createBot(m, { ...ok(), bot_type: 3, payload_url: "javascript:alert(1)" }), 400, "BAD_REQUEST", "payload_url is not a URL");
    assertError(await createBot(m, { ...ok(), config_data: "[]" }), 400, "BAD_REQUEST", "config_data is not a dict");
    assertError(await createBot(m, { ...ok(), config_data: '{"a": 1}' }), 400, "BAD_REQUEST", 'config_data["a"] is not a string');
    assertError(await createBot(m, { ...ok(), default_all_public_streams: "yes" }), 400, "BAD_REQUEST", 'Argument "default_all_public_streams" is not valid JSON.');
    assertError(await createBot(m, { ...ok(), default_sending_stream: "no such channel" }), 400, "BAD_REQUEST", "Invalid channel name 'no such channel'");
    assertError(await createBot(m, { ...ok(), bot_type: 2, service_name: "github" }), 400, "BAD_REQUEST", "Invalid integration 'github'.");
    // A private channel the creator cannot read is as unknown as a missing one.
    const secret = uniqueName("secret");
    assertSuccess(await t.api(u().admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: secret }], invite_only: true }));
    assertError(await createBot(m, { ...ok(), default_events_register_stream: secret }), 400, "BAD_REQUEST", `Invalid channel name '${secret}'`);
    // Unknown parameters are listed, as everywhere.
    const body = assertSuccess(await createBot(m, { ...ok(), colour: "blue" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["colour"]);
    assert.equal(botEvents("add").length, 1);
  });

  test("roles: owners, administrators, moderators and members may; guests and bots may not", async () => {
    for (const role of ["owner", "admin", "moderator", "member"] as const) await newBot(u()[role]);
    assertError(await createBot(u().guest, { full_name: uniqueName("G"), short_name: shortName() }), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await createBot(u().bot, { full_name: uniqueName("B"), short_name: shortName() }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });

  test("can_create_bots_group and can_create_write_only_bots_group decide who may create which bots", async () => {
    try {
      await setGroupSetting("can_create_bots_group", "role:administrators");
      const params = () => ({ full_name: uniqueName("Policy Bot"), short_name: shortName() });
      // Members may still create incoming webhook (write-only) bots…
      assertSuccess(await createBot(u().member, { ...params(), bot_type: 2 }));
      // …but no others.
      assertError(await createBot(u().member, params()), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await createBot(u().member, { ...params(), bot_type: 3, payload_url: '"http://h.example/"' }), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await createBot(u().moderator, params()), 400, "BAD_REQUEST", "Insufficient permission");
      assertSuccess(await createBot(u().admin, params()));

      await setGroupSetting("can_create_write_only_bots_group", "role:nobody");
      assertError(await createBot(u().member, { ...params(), bot_type: 2 }), 400, "BAD_REQUEST", "Insufficient permission");
      // Administrators always may.
      assertSuccess(await createBot(u().admin, { ...params(), bot_type: 2 }));

      await setGroupSetting("can_create_bots_group", "role:moderators");
      assertSuccess(await createBot(u().moderator, params()));
      assertSuccess(await createBot(u().moderator, { ...params(), bot_type: 2 }));
      assertError(await createBot(u().member, { ...params(), bot_type: 2 }), 400, "BAD_REQUEST", "Insufficient permission");
    } finally {
      await setGroupSetting("can_create_bots_group", "role:members");
      await setGroupSetting("can_create_write_only_bots_group", "role:members");
    }
  });
});

describe("GET /bots", () => {
  test("the caller's own active bots, oldest first; not other people's, not deactivated ones", async () => {
    const owner = await t.createUser(uniqueName("Bot Keeper"));
    const first = await newBot(owner);
    const second = await newBot(owner, { bot_type: 2 });
    const gone = await newBot(owner);
    assertSuccess(await t.api(owner, "DELETE", `/bots/${gone.id}`));
    await newBot(u().admin);
    const bots = assertSuccess(await t.api(owner, "GET", "/bots")).bots;
    assert.deepEqual(
      bots.map((b: { user_id: number }) => b.user_id),
      [first.id, second.id],
    );
    assert.deepEqual(bots[0], {
      username: first.bot.email,
      full_name: bots[0].full_name,
      api_key: first.bot.apiKey,
      avatar_url: first.reply.avatar_url,
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
      user_id: first.id,
    });
    // Administrators list their own bots here too, not everyone's.
    const adminBots = assertSuccess(await t.api(u().admin, "GET", "/bots")).bots;
    assert.ok(adminBots.every((b: { user_id: number }) => b.user_id !== first.id));
    assertError(await t.api(u().guest, "GET", "/bots"), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await t.api(u().bot, "GET", "/bots"), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });
});

describe("PATCH /bots/{bot_id}", () => {
  test("renaming: the reply, realm_user to everyone, realm_bot to the watchers; the same name changes nothing", async () => {
    const { id, bot } = await newBot(u().member);
    t.clearEvents();
    const name = uniqueName("Renamed Bot");
    const body = assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: ` ${name} ` }));
    assert.deepEqual(Object.keys(body).sort(), [
      "avatar_url",
      "bot_owner",
      "config_data",
      "default_all_public_streams",
      "default_events_register_stream",
      "default_sending_stream",
      "full_name",
      "msg",
      "result",
      "service_interface",
      "service_payload_url",
    ]);
    assert.equal(body.full_name, name);
    // bot_owner is the owner's API email, the one everyone sees.
    assert.equal(body.bot_owner, await apiEmail(u().member.id));
    assert.equal(body.service_interface, 1);
    assert.equal(body.service_payload_url, null);
    assert.equal(body.config_data, null);
    const userUpdate = t.events.filter((n) => n.event.type === "realm_user" && n.event.op === "update");
    assert.equal(userUpdate.length, 1);
    assert.deepEqual(userUpdate[0]!.event.person, { email: bot.email, user_id: id, full_name: name });
    assert.deepEqual(sorted([...userUpdate[0]!.userIds]), await t.activeUserIds());
    assert.deepEqual(botEvents("update"), [
      { event: { type: "realm_bot", op: "update", bot: { user_id: id, email: bot.email, full_name: name } }, userIds: sorted([u().owner.id, u().admin.id, u().member.id]) },
    ]);
    t.clearEvents();
    assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: name }));
    assert.deepEqual(botEvents(), []);
    const adminName = assertSuccess(await t.api(u().owner, "GET", `/users/${u().admin.id}`)).user.full_name;
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: adminName }), 400, "BAD_REQUEST", "Name is already in use!");
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: "a" }), 400, "BAD_REQUEST", "Name too short!");
  });

  test("who may: the owner and administrators; not moderators, other members, guests or bots; unknown and human IDs are no bot", async () => {
    const { id } = await newBot(u().member);
    const patch = (user: TestUser, botId: number | string = id) => t.api(user, "PATCH", `/bots/${botId}`, { full_name: uniqueName("Patched") });
    assertSuccess(await patch(u().member));
    assertSuccess(await patch(u().admin));
    assertSuccess(await patch(u().owner));
    assertError(await patch(u().moderator), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await patch(await t.createUser(uniqueName("Someone"))), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await patch(u().guest), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await patch(u().bot), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await patch(u().admin, 999999), 400, "BAD_REQUEST", "No such bot");
    assertError(await patch(u().admin, u().member.id), 400, "BAD_REQUEST", "No such bot");
    assertError(await patch(u().admin, "abc"), 400, "BAD_REQUEST", "bot_id is not an integer");
  });

  test("changing the owner: delete to the old owner, add to the new, update to administrators, bot_owner_id to everyone", async () => {
    const { id } = await newBot(u().member);
    const next = await t.createUser(uniqueName("New Keeper"));
    t.clearEvents();
    const body = assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { bot_owner_id: next.id }));
    assert.equal(body.bot_owner, await apiEmail(next.id));
    assert.deepEqual(botEvents("delete"), [{ event: { type: "realm_bot", op: "delete", bot: { user_id: id } }, userIds: [u().member.id] }]);
    const adds = botEvents("add");
    assert.equal(adds.length, 1);
    assert.deepEqual(adds[0]!.userIds, [next.id]);
    assert.equal((adds[0]!.event.bot as { owner_id: number }).owner_id, next.id);
    assert.deepEqual(botEvents("update"), [{ event: { type: "realm_bot", op: "update", bot: { user_id: id, owner_id: next.id } }, userIds: sorted([u().owner.id, u().admin.id]) }]);
    const person = t.events.find((n) => n.event.type === "realm_user" && n.event.op === "update")!;
    assert.deepEqual(person.event.person, { user_id: id, bot_owner_id: next.id });
    // The old owner no longer administers it; the new one does.
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: uniqueName("X") }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await t.api(next, "PATCH", `/bots/${id}`, { full_name: uniqueName("X") }));
    assert.ok(!assertSuccess(await t.api(u().member, "GET", "/bots")).bots.some((b: { user_id: number }) => b.user_id === id));
    assert.ok(assertSuccess(await t.api(next, "GET", "/bots")).bots.some((b: { user_id: number }) => b.user_id === id));
    // An administrator as new owner hears an update, not an add (administrators see every bot already).
    t.clearEvents();
    assertSuccess(await t.api(next, "PATCH", `/bots/${id}`, { bot_owner_id: u().admin.id }));
    assert.deepEqual(botEvents("add"), []);
    assert.deepEqual(botEvents("delete").map((e) => e.userIds), [[next.id]]);

    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { bot_owner_id: 999999 }), 400, "BAD_REQUEST", "Failed to change owner, no such user");
    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { bot_owner_id: u().bot.id }), 400, "BAD_REQUEST", "Failed to change owner, bots can't own other bots");
    const leaver = await t.createUser(uniqueName("Leaver"));
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${leaver.id}`));
    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { bot_owner_id: leaver.id }), 400, "BAD_REQUEST", "Failed to change owner, user is deactivated");
    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { bot_owner_id: "x" }), 400, "BAD_REQUEST", 'Argument "bot_owner_id" is not valid JSON.');
  });

  test("default channels and default_all_public_streams: set, cleared with '', realm_bot updates", async () => {
    const { id } = await newBot(u().member);
    const channel = uniqueName("bot-defaults");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    t.clearEvents();
    const body = assertSuccess(
      await t.api(u().member, "PATCH", `/bots/${id}`, { default_sending_stream: channel, default_events_register_stream: channel, default_all_public_streams: true }),
    );
    assert.equal(body.default_sending_stream, channel);
    assert.equal(body.default_events_register_stream, channel);
    assert.equal(body.default_all_public_streams, true);
    assert.deepEqual(
      botEvents("update").map((e) => e.event.bot),
      [
        { user_id: id, default_sending_stream: channel },
        { user_id: id, default_events_register_stream: channel },
        { user_id: id, default_all_public_streams: true },
      ],
    );
    const cleared = assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { default_sending_stream: "" }));
    assert.equal(cleared.default_sending_stream, null);
    assert.equal(cleared.default_events_register_stream, channel);
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { default_sending_stream: "nowhere at all" }), 400, "BAD_REQUEST", "Invalid channel name 'nowhere at all'");
  });

  test("a bot whose default channel is private is seen by its owner alone", async () => {
    const secret = uniqueName("private-home");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: secret }], invite_only: true }));
    const { id } = await newBot(u().member, { default_sending_stream: secret });
    assert.deepEqual(botEvents("add").map((e) => e.userIds), [[u().member.id]]);
    t.clearEvents();
    assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { full_name: uniqueName("Quiet") }));
    assert.deepEqual(botEvents("update").map((e) => e.userIds), [[u().member.id]]);
  });

  test("an outgoing webhook's endpoint and interface; refused for a bot without a service", async () => {
    const { id } = await newBot(u().member, { bot_type: 3, payload_url: '"http://hooks.example.com:9/old"' });
    const [before] = await botServices(t.services.storage.db, id);
    t.clearEvents();
    const body = assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { service_payload_url: '"http://hooks.example.com:9/new"', service_interface: 2 }));
    assert.equal(body.service_payload_url, "http://hooks.example.com:9/new");
    assert.equal(body.service_interface, 2);
    const [after] = await botServices(t.services.storage.db, id);
    assert.equal(after!.base_url, "http://hooks.example.com:9/new");
    assert.equal(after!.interface, 2);
    assert.equal(after!.token, before!.token);
    assert.deepEqual(botEvents("update").map((e) => e.event.bot), [{ user_id: id, services: [{ base_url: "http://hooks.example.com:9/new", interface: 2, token: before!.token }] }]);
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { service_payload_url: '"http://h.example/"', service_interface: 5 }), 400, "BAD_REQUEST", "Invalid interface type");
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { service_payload_url: '"nope"' }), 400, "BAD_REQUEST", "service_payload_url is not a URL");
    const generic = await newBot(u().member);
    assertError(await t.api(u().member, "PATCH", `/bots/${generic.id}`, { service_payload_url: '"http://h.example/"' }), 400, "BAD_REQUEST", "This bot has no outgoing webhook service");
  });

  test("role: administrators change a bot's role (owners for the owner role); the bot's owner may not", async () => {
    const { id } = await newBot(u().member);
    assertError(await t.api(u().member, "PATCH", `/bots/${id}`, { role: Role.MODERATOR }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { role: Role.OWNER }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assertError(await t.api(u().admin, "PATCH", `/bots/${id}`, { role: 250 }), 400, "BAD_REQUEST", "Invalid role");
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "PATCH", `/bots/${id}`, { role: Role.MODERATOR }));
    const update = t.events.find((n) => n.event.type === "realm_user" && n.event.op === "update")!;
    assert.deepEqual(update.event.person, { user_id: id, role: Role.MODERATOR });
    assert.equal(assertSuccess(await t.api(u().owner, "GET", `/users/${id}`)).user.role, Role.MODERATOR);
    // The same role again: nothing to check, nothing to send.
    t.clearEvents();
    assertSuccess(await t.api(u().member, "PATCH", `/bots/${id}`, { role: Role.MODERATOR }));
    assert.equal(t.events.length, 0);
  });

  test("a new avatar: realm_bot update with avatar_url; config_data is stored and echoed", async () => {
    const { id } = await newBot(u().member, { bot_type: 2, config_data: JSON.stringify({ zone: "one" }) });
    t.clearEvents();
    const body = assertSuccess(await multipart(u().member, "PATCH", `/bots/${id}`, { config_data: JSON.stringify({ zone: "two", extra: "x" }) }, [{ field: "file", content: await png() }]));
    assert.deepEqual(body.config_data, { zone: "two", extra: "x" });
    assert.match(body.avatar_url, /\/user_avatars\/\d+\/[0-9a-f]{40}\.png\?version=2$/);
    assert.deepEqual(botEvents("update").map((e) => e.event.bot), [{ user_id: id, avatar_url: body.avatar_url }]);
    const rows = await t.services.storage.db.selectFrom("bot_config").select(["key", "value"]).where("bot_user_id", "=", id).orderBy("key").execute();
    assert.deepEqual(rows, [
      { key: "extra", value: "x" },
      { key: "zone", value: "two" },
    ]);
  });
});

describe("DELETE /bots/{bot_id}", () => {
  test("deactivates: realm_user is_active false to everyone, realm_bot remove to watchers, its key stops working", async () => {
    const { id, bot } = await newBot(u().member);
    t.clearEvents();
    assertSuccess(await t.api(u().member, "DELETE", `/bots/${id}`));
    const person = t.events.find((n) => n.event.type === "realm_user" && n.event.op === "update")!;
    assert.deepEqual(person.event.person, { user_id: id, is_active: false });
    const removes = botEvents("remove");
    assert.equal(removes.length, 1);
    assert.deepEqual(removes[0]!.event.bot, { user_id: id, full_name: (await t.api(u().owner, "GET", `/users/${id}`)).body.user.full_name });
    assert.deepEqual(removes[0]!.userIds, sorted([u().owner.id, u().admin.id, u().member.id]));
    assertError(await t.api(bot, "GET", "/users/me"), 401, "USER_DEACTIVATED");
    // Again: already deactivated, nothing to do.
    t.clearEvents();
    assertSuccess(await t.api(u().member, "DELETE", `/bots/${id}`));
    assert.equal(t.events.length, 0);
    // realm_bots still lists it, inactive.
    const state = await t.register(u().member, { fetch_event_types: ["realm_bot"] });
    assert.equal(state.realm_bots.find((b: { user_id: number }) => b.user_id === id).is_active, false);
  });

  test("who may: owner and administrators; others get Zulip's errors", async () => {
    const { id } = await newBot(u().member);
    assertError(await t.api(u().moderator, "DELETE", `/bots/${id}`), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await t.api(u().guest, "DELETE", `/bots/${id}`), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await t.api(u().bot, "DELETE", `/bots/${id}`), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await t.api(u().admin, "DELETE", `/bots/${u().moderator.id}`), 400, "BAD_REQUEST", "No such bot");
    assertError(await t.api(u().admin, "DELETE", "/bots/999999"), 400, "BAD_REQUEST", "No such bot");
    assertSuccess(await t.api(u().admin, "DELETE", `/bots/${id}`));
  });

  test("reactivating a bot (POST /users/{id}/reactivate) adds it back to realm_bots; a taken name blocks it", async () => {
    const name = uniqueName("Phoenix Bot");
    const { id } = await newBot(u().member, { full_name: name });
    assertSuccess(await t.api(u().member, "DELETE", `/bots/${id}`));
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "POST", `/users/${id}/reactivate`));
    const adds = botEvents("add");
    assert.equal(adds.length, 1);
    assert.equal((adds[0]!.event.bot as { is_active: boolean }).is_active, true);
    assertSuccess(await t.api(u().member, "DELETE", `/bots/${id}`));
    await newBot(u().member, { full_name: name });
    assertError(
      await t.api(u().admin, "POST", `/users/${id}/reactivate`),
      400,
      "BAD_REQUEST",
      `There is already an active bot named "${name}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  });

  test("deactivating a person deactivates their bots, each removed from realm_bots", async () => {
    const keeper = await t.createUser(uniqueName("Short Stay"));
    const a = await newBot(keeper);
    const b = await newBot(keeper);
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${keeper.id}`));
    assert.deepEqual(
      botEvents("remove").map((e) => (e.event.bot as { user_id: number }).user_id).sort(),
      sorted([a.id, b.id]),
    );
    assertError(await t.api(a.bot, "GET", "/users/me"), 401, "USER_DEACTIVATED");
  });
});

describe("API key regeneration", () => {
  test("a bot's key: the new key works at once, the old one fails, realm_bot update with the key", async () => {
    const { id, bot } = await newBot(u().member);
    assertSuccess(await t.api(bot, "GET", "/users/me"));
    t.clearEvents();
    const body = assertSuccess(await t.api(u().member, "POST", `/bots/${id}/api_key/regenerate`));
    assert.deepEqual(Object.keys(body).sort(), ["api_key", "msg", "result"]);
    assert.match(body.api_key, /^[A-Za-z0-9]{32}$/);
    assert.notEqual(body.api_key, bot.apiKey);
    assertError(await t.api(bot, "GET", "/users/me"), 401, "INVALID_API_KEY", "Invalid API key");
    assertSuccess(await t.api({ ...bot, apiKey: body.api_key }, "GET", "/users/me"));
    assert.deepEqual(botEvents("update"), [
      { event: { type: "realm_bot", op: "update", bot: { user_id: id, api_key: body.api_key } }, userIds: sorted([u().owner.id, u().admin.id, u().member.id]) },
    ]);
    // Administrators may; others may not.
    assertSuccess(await t.api(u().admin, "POST", `/bots/${id}/api_key/regenerate`));
    assertError(await t.api(u().moderator, "POST", `/bots/${id}/api_key/regenerate`), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await t.api(u().guest, "POST", `/bots/${id}/api_key/regenerate`), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await t.api(u().bot, "POST", `/bots/${id}/api_key/regenerate`), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await t.api(u().admin, "POST", `/bots/${u().member.id}/api_key/regenerate`), 400, "BAD_REQUEST", "No such bot");
  });

  test("POST /users/me/api_key/regenerate: a person's new key works at once and the old one fails; bots may not", async () => {
    for (const role of [Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR, Role.MEMBER, Role.GUEST]) {
      const person = await t.createUser(uniqueName("Key Holder"), role);
      t.clearEvents();
      const body = assertSuccess(await t.api(person, "POST", "/users/me/api_key/regenerate"));
      assert.match(body.api_key, /^[A-Za-z0-9]{32}$/);
      assertError(await t.api(person, "GET", "/users/me"), 401, "INVALID_API_KEY");
      assertSuccess(await t.api({ ...person, apiKey: body.api_key }, "GET", "/users/me"));
      assert.equal(t.events.length, 0, "a person's key is sent to nobody");
      // What /fetch_api_key hands out from now on.
      const fetched = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: person.email, password: person.password }));
      assert.equal(fetched.api_key, body.api_key);
    }
    assertError(await t.api(u().bot, "POST", "/users/me/api_key/regenerate"), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });
});

describe("/register: realm_bots", () => {
  test("administrators see every bot, others their own, with the whole bot object and its services", async () => {
    const keeper = await t.createUser(uniqueName("Registered Keeper"));
    const outgoing = await newBot(keeper, { bot_type: 3, payload_url: '"http://hooks.example.com:9/r"' });
    const generic = await newBot(keeper);
    const [service] = await botServices(t.services.storage.db, outgoing.id);
    const mine = (await t.register(keeper, { fetch_event_types: ["realm_bot"] })).realm_bots;
    assert.deepEqual(
      mine.map((b: { user_id: number }) => b.user_id),
      [outgoing.id, generic.id],
    );
    assert.deepEqual(mine[0], {
      email: outgoing.bot.email,
      user_id: outgoing.id,
      full_name: mine[0].full_name,
      bot_type: 3,
      is_active: true,
      api_key: outgoing.bot.apiKey,
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
      avatar_url: outgoing.reply.avatar_url,
      owner_id: keeper.id,
      services: [{ base_url: "http://hooks.example.com:9/r", interface: 1, token: service!.token }],
    });
    const adminBots = (await t.register(u().admin, { fetch_event_types: ["realm_bot"] })).realm_bots.map((b: { user_id: number }) => b.user_id);
    assert.ok(adminBots.includes(outgoing.id) && adminBots.includes(u().bot.id));
    const moderatorBots = (await t.register(u().moderator, { fetch_event_types: ["realm_bot"] })).realm_bots.map((b: { user_id: number }) => b.user_id);
    assert.ok(!moderatorBots.includes(outgoing.id));
    const state = await t.register(u().member, { fetch_event_types: ["realm_embedded_bots", "realm_incoming_webhook_bots", "realm"] });
    assert.deepEqual(state.realm_embedded_bots, []);
    assert.equal(state.realm_bot_domain, domain());
    assert.equal(state.realm_can_create_bots_group, sys["role:members"]);
    assert.equal(state.realm_can_create_write_only_bots_group, sys["role:members"]);
  });

  test("a queue hears realm_bot add and update", async () => {
    const registered = await t.register(u().member, { event_types: ["realm_bot"] });
    const { id } = await newBot(u().member);
    assertSuccess(await t.api(u().member, "POST", `/bots/${id}/api_key/regenerate`));
    const events = await t.queuedEvents(u().member, registered.queue_id);
    assert.deepEqual(
      events.map((e) => [e.type, e.op, e.bot.user_id]),
      [
        ["realm_bot", "add", id],
        ["realm_bot", "update", id],
      ],
    );
  });
});

describe("a bot's defaults at work", () => {
  test("default_sending_stream: a channel message without `to` goes there; people still need `to`", async () => {
    const channel = uniqueName("bot-out");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    const { bot } = await newBot(u().member, { default_sending_stream: channel });
    const sent = assertSuccess(await t.api(bot, "POST", "/messages", { type: "stream", topic: "status", content: "all green" }));
    const message = assertSuccess(await t.api(u().member, "GET", `/messages/${sent.id}`)).message;
    assert.equal(message.display_recipient, channel);
    assert.equal(message.sender_id, bot.id);
    assertError(await t.api(u().member, "POST", "/messages", { type: "stream", topic: "status", content: "x" }), 400, "BAD_REQUEST", "Missing channel");
    const plain = await newBot(u().member);
    assertError(await t.api(plain.bot, "POST", "/messages", { type: "stream", topic: "status", content: "x" }), 400, "BAD_REQUEST", "Missing channel");
  });

  test("default_events_register_stream narrows a queue registered without a narrow; default_all_public_streams widens it", async () => {
    const home = uniqueName("bot-home");
    const elsewhere = uniqueName("bot-elsewhere");
    const unjoined = uniqueName("bot-unjoined");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: home }, { name: elsewhere }, { name: unjoined }] }));
    const narrowed = await newBot(u().member, { default_events_register_stream: home });
    const wide = await newBot(u().member, { default_all_public_streams: true });
    for (const b of [narrowed, wide]) {
      assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: home }, { name: elsewhere }], principals: [b.id] }));
    }
    const narrowQueue = (await t.register(narrowed.bot, { event_types: ["message"] })).queue_id;
    const explicitQueue = (await t.register(narrowed.bot, { event_types: ["message"], narrow: [["stream", elsewhere]] })).queue_id;
    const wideQueue = (await t.register(wide.bot, { event_types: ["message"] })).queue_id;
    const notWideQueue = (await t.register(wide.bot, { event_types: ["message"], all_public_streams: false })).queue_id;
    for (const to of [home, elsewhere, unjoined]) {
      assertSuccess(await t.api(u().member, "POST", "/messages", { type: "stream", to, topic: "t", content: `to ${to}` }));
    }
    const channels = async (user: TestUser, queue: string) => (await t.queuedEvents(user, queue)).map((e) => e.message.display_recipient);
    assert.deepEqual(await channels(narrowed.bot, narrowQueue), [home]);
    assert.deepEqual(await channels(narrowed.bot, explicitQueue), [elsewhere]);
    assert.deepEqual(await channels(wide.bot, wideQueue), [home, elsewhere, unjoined]);
    assert.deepEqual(await channels(wide.bot, notWideQueue), [home, elsewhere]);
  });
});
