// Export → import round trip (issue 29): an organization exported by Parley
// (`parley export --full`, Zulip's format) and imported into an empty
// database with `parley import zulip` answers the same GET /messages, /users,
// /streams, /user_groups, reactions, flags and uploads, with its IDs
// renumbered. Everything is compared by what survives renumbering: emails,
// names, contents, topics.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { exportRealmToFile } from "../src/actions/realm-export.ts";
import { ExportType } from "../src/domain/realm-export.ts";
import { importZulip } from "../src/import/zulip.ts";
import { openServices, startServer } from "../src/server.ts";
import type { Services } from "../src/services.ts";
import { assertSuccess, basicAuth, freshStorage, startTestApp, testConfig, type TestApp, type TestUser } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let t: TestApp;
const work = fs.mkdtempSync(path.join(os.tmpdir(), "parley-roundtrip-"));
let uploadUrl: string;

async function uploadFile(user: TestUser, name: string, content: string): Promise<string> {
  const form = new FormData();
  form.append("file", new Blob([content], { type: "text/plain" }), name);
  const response = await fetch(`${t.url}/api/v1/user_uploads`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as Json;
  assert.equal(body.result, "success", JSON.stringify(body));
  return body.url as string;
}

before(async () => {
  t = await startTestApp();
  const { owner, member, guest, admin } = t.users;
  const ownerName = (await t.services.storage.db.selectFrom("users").select("full_name").where("id", "=", owner.id).executeTakeFirstOrThrow()).full_name;
  assertSuccess(await t.api(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "design", description: "How **we** build" }], principals: [owner.id, member.id, admin.id] }));
  assertSuccess(await t.api(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "secret plans" }], principals: [owner.id, member.id], invite_only: true }));
  assertSuccess(await t.api(owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "lobby" }], principals: [owner.id, guest.id] }));
  uploadUrl = await uploadFile(member, "notes.txt", "the notes, round trip");
  const send = async (user: TestUser, params: Record<string, unknown>) => assertSuccess(await t.api(user, "POST", "/messages", params)).id as number;
  const first = await send(owner, { type: "stream", to: "design", topic: "colours", content: "We use **teal** for links." });
  await send(member, { type: "stream", to: "design", topic: "colours", content: `@**${ownerName}** agreed, see [notes](${uploadUrl})` });
  await send(admin, { type: "stream", to: "design", topic: "fonts", content: "Inter everywhere?\n\n* body\n* headings" });
  await send(owner, { type: "stream", to: "secret plans", topic: "launch", content: "Tuesday." });
  await send(guest, { type: "stream", to: "lobby", topic: "hello", content: "Hi all :wave:" });
  // A poll, with a vote: its widget and vote submessages.
  const poll = await send(owner, { type: "stream", to: "design", topic: "lunch", content: "/poll Lunch?\nPizza\nSushi" });
  assertSuccess(await t.api(member, "POST", "/submessage", { message_id: poll, msg_type: "widget", content: JSON.stringify({ type: "vote", key: "canned,0", vote: 1 }) }));
  await send(member, { type: "direct", to: JSON.stringify([owner.id]), content: "a direct word" });
  await send(owner, { type: "direct", to: JSON.stringify([member.id, admin.id]), content: "a word to three" });
  assertSuccess(await t.api(member, "POST", `/messages/${first}/reactions`, { emoji_name: "thumbs_up" }));
  assertSuccess(await t.api(admin, "POST", `/messages/${first}/reactions`, { emoji_name: "heart" }));
  assertSuccess(await t.api(member, "POST", "/messages/flags", { messages: JSON.stringify([first]), op: "add", flag: "starred" }));
  assertSuccess(await t.api(owner, "POST", "/user_groups/create", { name: "designers", description: "People who draw", members: JSON.stringify([member.id, admin.id]) }));
  // Personal data and organization settings the import used to drop.
  assertSuccess(await t.api(member, "POST", "/users/me/alert_words", { alert_words: JSON.stringify(["teal", "Launch"]) }));
  assertSuccess(await t.api(member, "POST", `/users/me/muted_users/${guest.id}`));
  assertSuccess(await t.api(member, "POST", "/users/me/status", { status_text: "Drawing", emoji_name: "art" }));
  assertSuccess(await t.api(owner, "POST", "/realm/filters", { pattern: "#(?P<id>[0-9]+)", url_template: "https://tracker.example/{id}" }));
  assertSuccess(await t.api(owner, "POST", "/realm/playgrounds", { name: "Rust playground", pygments_language: "Rust", url_template: "https://play.rust-lang.org/?code={code}" }));
  assertSuccess(await t.api(owner, "PATCH", "/realm/user_settings_defaults", { enter_sends: true, email_address_visibility: 1 }));
  const design = (await t.services.storage.db.selectFrom("channels").select("id").where("name", "=", "design").executeTakeFirstOrThrow()).id;
  assertSuccess(await t.api(owner, "PATCH", "/realm", { new_stream_announcements_stream_id: design }));
  // Policies Parley keeps by name and Zulip's models as numbers.
  assertSuccess(await t.api(owner, "PATCH", "/realm", { topics_policy: "disable_empty_topic", message_edit_history_visibility_policy: "moves" }));
  assertSuccess(await t.api(owner, "PATCH", `/streams/${design}`, { topics_policy: "empty_topic_only" }));
  assertSuccess(
    await t.api(member, "POST", "/drafts", {
      drafts: JSON.stringify([
        { type: "stream", to: [design], topic: "colours", content: "maybe cyan", timestamp: 1700000000 },
        { type: "private", to: [owner.id, admin.id], topic: "", content: "to the three of us", timestamp: 1700000100 },
      ]),
    }),
  );
  assertSuccess(await t.api(member, "POST", "/users/me/presence", { status: "active", new_user_input: "true" }));
  // Scheduled messages: to a channel and to a person.
  const later = Math.floor(Date.now() / 1000) + 86400;
  assertSuccess(await t.api(member, "POST", "/scheduled_messages", { type: "stream", to: design, topic: "", content: "teal **tomorrow**", scheduled_delivery_timestamp: later }));
  assertSuccess(await t.api(member, "POST", "/scheduled_messages", { type: "direct", to: JSON.stringify([owner.id]), content: "see you", scheduled_delivery_timestamp: later + 60 }));
  // An outgoing-webhook bot with a stored value.
  const hook = assertSuccess(await t.api(member, "POST", "/bots", { full_name: "Hook Bot", short_name: "hook", bot_type: 3, payload_url: JSON.stringify("https://hooks.example/x"), interface_type: 2 }));
  const hookEmail = (await t.services.storage.db.selectFrom("users").select("email").where("id", "=", hook.user_id).executeTakeFirstOrThrow()).email;
  const stored = await fetch(`${t.url}/api/v1/bot_storage`, {
    method: "PUT",
    headers: { authorization: basicAuth(hookEmail, hook.api_key), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ storage: JSON.stringify({ count: "3" }) }),
  });
  assert.equal(stored.status, 200, await stored.text());
  assertSuccess(await t.api(member, "POST", "/saved_snippets", { title: "Greeting", content: "Welcome to **design**!" }));
  assertSuccess(await t.api(member, "POST", "/navigation_views", { fragment: "narrow/channel/design", is_pinned: "true", name: "Design" }));
});
after(async () => {
  await t?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

/** A fresh, empty database and data directory, closed at the end of the test. */
async function emptyServices(context: TestContext): Promise<Services> {
  const dataDir = fs.mkdtempSync(path.join(work, "data-"));
  const config = testConfig({ dataDir });
  const fresh = await freshStorage(config);
  const services = await openServices(config, fresh.storage);
  context.after(() => fresh.cleanup());
  return services;
}

/** GET as `email` from `url` (its API key read from `services`' database), asserting success. */
function reader(services: Services, url: string) {
  return async (email: string, urlPath: string, query: Record<string, unknown> = {}): Promise<Json> => {
    const { api_key: apiKey, email: apiEmail } = await services.storage.db.selectFrom("users").select(["api_key", "email"]).where("delivery_email", "=", email).executeTakeFirstOrThrow();
    const search = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
    // Uploads are read where messages link them; the rest is the API.
    const prefix = urlPath.startsWith("/user_uploads/") ? "" : "/api/v1";
    const response = await fetch(`${url}${prefix}${urlPath}?${search}`, { headers: { authorization: basicAuth(apiEmail, apiKey) } });
    const text = await response.text();
    assert.equal(response.status, 200, `${urlPath}: ${text}`);
    return response.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text;
  };
}

/** What a user sees of the organization, with IDs replaced by what they name. */
async function view(services: Services, url: string, email: string): Promise<Json> {
  const get = reader(services, url);
  const { members } = await get(email, "/users");
  const emailOf = new Map<number, string>(members.map((m: Json) => [m.user_id, m.delivery_email ?? m.email]));
  const people = members
    .filter((m: Json) => !m.is_system_bot)
    .map((m: Json) => ({ email: m.delivery_email ?? m.email, full_name: m.full_name, role: m.role, is_bot: m.is_bot, is_active: m.is_active }))
    .sort((a: Json, b: Json) => a.email.localeCompare(b.email));
  const { streams } = await get(email, "/streams");
  const channelNames = new Map<number, string>(streams.map((s: Json) => [s.stream_id, s.name]));
  const channels = streams.map((s: Json) => ({ name: s.name, description: s.description, invite_only: s.invite_only, topics_policy: s.topics_policy })).sort((a: Json, b: Json) => a.name.localeCompare(b.name));
  const { subscriptions } = await get(email, "/users/me/subscriptions", { include_subscribers: true });
  const subscribed = subscriptions
    .map((s: Json) => ({ name: s.name, subscribers: s.subscribers.map((id: number) => emailOf.get(id)).sort() }))
    .sort((a: Json, b: Json) => a.name.localeCompare(b.name));
  // Guests may not list user groups (Zulip's rule).
  const { user_groups: groups } = members.find((m: Json) => (m.delivery_email ?? m.email) === email)?.role === 600 ? { user_groups: [] } : await get(email, "/user_groups");
  const userGroups = groups
    .filter((g: Json) => !g.is_system_group)
    .map((g: Json) => ({ name: g.name, description: g.description, members: g.members.map((id: number) => emailOf.get(id)).sort() }));
  const { messages } = await get(email, "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow: [], apply_markdown: false });
  const history = messages.map((m: Json) => ({
    sender: m.sender_email,
    where: m.type === "stream" ? `#${channelNames.get(m.stream_id)} > ${m.subject}` : m.display_recipient.map((r: Json) => r.email).sort().join(","),
    content: m.content.replace(/\/user_uploads\/[^)\s]+/g, "/user_uploads/…"),
    flags: [...m.flags].sort(),
    reactions: m.reactions.map((r: Json) => `${r.emoji_name} by ${emailOf.get(r.user_id)}`).sort(),
    submessages: m.submessages.map((x: Json) => [emailOf.get(x.sender_id), x.msg_type, x.content]),
    timestamp: m.timestamp,
  }));
  // Personal data and organization settings, as /register gives them.
  const { api_key: apiKey, email: apiEmail, id: userId } = await services.storage.db.selectFrom("users").select(["api_key", "email", "id"]).where("delivery_email", "=", email).executeTakeFirstOrThrow();
  const types = ["alert_words", "muted_users", "user_status", "realm_linkifiers", "realm_playgrounds", "drafts", "realm_user_settings_defaults", "realm", "saved_snippets", "navigation_views"];
  const response = await fetch(`${url}/api/v1/register`, {
    method: "POST",
    headers: { authorization: basicAuth(apiEmail, apiKey), "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ fetch_event_types: JSON.stringify(types), client_capabilities: JSON.stringify({ linkifier_url_template: true }) }),
  });
  const state = (await response.json()) as Json;
  assert.equal(state.result, "success", JSON.stringify(state));
  const own = state.user_status[String(userId)] ?? {};
  const personal = {
    alertWords: [...state.alert_words].sort(),
    mutedUsers: state.muted_users.map((m: Json) => emailOf.get(m.id)).sort(),
    status: { text: own.status_text, emoji: own.emoji_name },
    linkifiers: state.realm_linkifiers.map((l: Json) => [l.pattern, l.url_template]),
    announcements: channelNames.get(state.realm_new_stream_announcements_stream_id) ?? null,
    userDefaults: { enterSends: state.realm_user_settings_defaults.enter_sends, emailVisibility: state.realm_user_settings_defaults.email_address_visibility },
    playgrounds: state.realm_playgrounds.map((p: Json) => [p.name, p.pygments_language, p.url_template]),
    drafts: state.drafts
      .map((d: Json) => ({ type: d.type, to: d.type === "stream" ? d.to.map((id: number) => channelNames.get(id)) : d.to.map((id: number) => emailOf.get(id)).sort(), topic: d.topic, content: d.content, timestamp: d.timestamp }))
      .sort((a: Json, b: Json) => a.timestamp - b.timestamp),
    policies: { topics: state.realm_topics_policy, editHistory: state.realm_message_edit_history_visibility_policy },
    savedSnippets: state.saved_snippets.map((n: Json) => ({ title: n.title, content: n.content, date_created: n.date_created })),
    navigationViews: state.navigation_views,
  };
  return { people, channels, subscribed, userGroups, history, personal };
}

test("a full export from Parley imported into an empty database answers as the original did", { timeout: 120_000 }, async (context) => {
  const file = path.join(work, "parley-export.tar.gz");
  const progress: string[] = [];
  const stats = await exportRealmToFile(t.services, t.realm, ExportType.FULL_WITHOUT_CONSENT, file, (what) => progress.push(what));
  const { n: stored } = await t.services.storage.db.selectFrom("messages").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
  assert.equal(stats.messages, Number(stored));
  assert.ok(progress.some((line) => line.includes("realm.json")), progress.join("\n"));

  const imported = await emptyServices(context);
  const lines: string[] = [];
  await importZulip(imported, file, (line) => lines.push(line));
  assert.ok(lines.some((line) => line.includes(`messages: ${stats.messages}`)), lines.join("\n"));
  const server = await startServer(imported);
  context.after(() => server.close());

  // Every user sees the same organization, history, flags and reactions (IDs renumbered).
  for (const user of [t.users.owner, t.users.member, t.users.guest]) {
    const email = (await t.services.storage.db.selectFrom("users").select("delivery_email").where("id", "=", user.id).executeTakeFirstOrThrow()).delivery_email;
    const before = await view(t.services, t.url, email);
    const afterImport = await view(imported, server.url, email);
    assert.deepEqual(afterImport.people, before.people, `users as ${email}`);
    assert.deepEqual(afterImport.channels, before.channels, `channels as ${email}`);
    assert.deepEqual(afterImport.subscribed, before.subscribed, `subscriptions as ${email}`);
    assert.deepEqual(afterImport.userGroups, before.userGroups, `user groups as ${email}`);
    assert.deepEqual(afterImport.history, before.history, `messages as ${email}`);
    assert.deepEqual(afterImport.personal, before.personal, `alert words, mutes, status, linkifiers, playgrounds, drafts, new users' defaults, saved snippets, navigation views as ${email}`);
    assert.ok(before.history.length > 0);
  }

  // The starred flag and both reactions made the trip.
  const memberEmail = (await t.services.storage.db.selectFrom("users").select("delivery_email").where("id", "=", t.users.member.id).executeTakeFirstOrThrow()).delivery_email;
  const memberView = await view(imported, server.url, memberEmail);
  // What came back is what was there, not two empty lists compared.
  assert.deepEqual(memberView.personal.alertWords, ["Launch", "teal"]);
  assert.equal(memberView.personal.mutedUsers.length, 1);
  assert.deepEqual(memberView.personal.status, { text: "Drawing", emoji: "art" });
  assert.deepEqual(memberView.personal.linkifiers, [["#(?P<id>[0-9]+)", "https://tracker.example/{id}"]]);
  assert.equal(memberView.personal.playgrounds.length, 1);
  assert.deepEqual(memberView.personal.userDefaults, { enterSends: true, emailVisibility: 1 });
  assert.deepEqual(memberView.personal.policies, { topics: "disable_empty_topic", editHistory: "moves" });
  assert.equal(memberView.channels.find((c: Json) => c.name === "design")?.topics_policy, "empty_topic_only");
  assert.deepEqual(memberView.personal.savedSnippets.map((n: Json) => [n.title, n.content]), [["Greeting", "Welcome to **design**!"]]);
  assert.deepEqual(memberView.personal.navigationViews, [{ fragment: "narrow/channel/design", is_pinned: true, name: "Design" }]);
  assert.equal(memberView.personal.announcements, "design");
  assert.deepEqual(
    memberView.personal.drafts.map((d: Json) => [d.type, d.content]),
    [
      ["stream", "maybe cyan"],
      ["private", "to the three of us"],
    ],
  );
  const lunch = memberView.history.find((m: Json) => m.content.startsWith("/poll Lunch?"));
  assert.equal(lunch.submessages.length, 2, JSON.stringify(lunch.submessages));
  const colours = memberView.history.find((m: Json) => m.content === "We use **teal** for links.");
  assert.ok(colours.flags.includes("starred"));
  assert.equal(colours.reactions.length, 2);

  // Presence, bots' services and their stored values (as the bot reads them, with its key).
  const originalRead = reader(t.services, t.url);
  const importedRead = reader(imported, server.url);
  // Keyed by each user's address (API emails can be made of renumbered IDs).
  const presenceOf = async (services: Services, read: typeof originalRead) => {
    const { presences } = await read(memberEmail, "/realm/presence");
    const users = await services.storage.db.selectFrom("users").select(["email", "delivery_email"]).execute();
    const address = new Map(users.map((u) => [u.email, u.delivery_email]));
    return Object.fromEntries(Object.entries(presences as Record<string, Json>).map(([email, p]) => [address.get(email), { status: p.aggregated.status, timestamp: p.aggregated.timestamp }]));
  };
  const presenceBefore = await presenceOf(t.services, originalRead);
  assert.equal(presenceBefore[memberEmail]?.status, "active");
  assert.deepEqual(await presenceOf(imported, importedRead), presenceBefore);
  // Services as stored (GET /bots does not list them): the endpoint and its format carried, the secret new.
  const servicesOf = async (services: Services) =>
    services.storage.db
      .selectFrom("bot_services as s")
      .innerJoin("users as u", "u.id", "s.user_id")
      .select(["u.full_name", "s.name", "s.base_url", "s.interface", "s.token"])
      .orderBy("u.full_name")
      .execute();
  const servicesBefore = await servicesOf(t.services);
  const servicesAfter = await servicesOf(imported);
  assert.deepEqual(servicesBefore.map((x) => [x.full_name, x.base_url, x.interface]), [["Hook Bot", "https://hooks.example/x", 2]]);
  assert.deepEqual(servicesAfter.map((x) => [x.full_name, x.name, x.base_url, x.interface]), servicesBefore.map((x) => [x.full_name, x.name, x.base_url, x.interface]));
  assert.notEqual(servicesAfter[0]!.token, servicesBefore[0]!.token, "a new secret, as Zulip's import gives");
  const hookRow = await imported.storage.db.selectFrom("users").select(["email", "api_key"]).where("full_name", "=", "Hook Bot").executeTakeFirstOrThrow();
  const storage = await fetch(`${server.url}/api/v1/bot_storage`, { headers: { authorization: basicAuth(hookRow.email, hookRow.api_key) } });
  assert.deepEqual(((await storage.json()) as Json).storage, { count: "3" });

  // Scheduled messages, as their sender lists them: recipients by channel name and address, IDs left out.
  const scheduledOf = async (services: Services, read: typeof originalRead) => {
    const { scheduled_messages } = await read(memberEmail, "/scheduled_messages");
    const channels = new Map((await services.storage.db.selectFrom("channels").select(["id", "name"]).execute()).map((c) => [c.id, c.name]));
    const users = new Map((await services.storage.db.selectFrom("users").select(["id", "delivery_email"]).execute()).map((u) => [u.id, u.delivery_email]));
    return (scheduled_messages as Json[]).map(({ scheduled_message_id: _id, to, ...rest }) => ({ ...rest, to: typeof to === "number" ? channels.get(to) : (to as number[]).map((id) => users.get(id)) }));
  };
  const scheduledBefore = await scheduledOf(t.services, originalRead);
  assert.equal(scheduledBefore.length, 2);
  assert.deepEqual(await scheduledOf(imported, importedRead), scheduledBefore);

  // The upload comes back under its new path, with its contents, for someone who may read it.
  const { messages } = await reader(imported, server.url)(memberEmail, "/messages", { anchor: "newest", num_before: 100, num_after: 0, narrow: [], apply_markdown: false });
  const newUrl = /\((\/user_uploads\/[^)]+)\)/.exec(messages.find((m: Json) => m.content.startsWith("@**")).content)![1]!;
  assert.equal(await reader(imported, server.url)(memberEmail, newUrl), "the notes, round trip");
});
