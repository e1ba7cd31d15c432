// `parley import slack`: a Slack workspace export, written here as a zip in
// the layout Slack documents (users.json, channels.json, groups.json,
// dms.json, mpims.json, a directory of per-day message files for each
// conversation), imported into a fresh database; the organization is then
// checked through the API. Files are served by a local HTTP server.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { test, type TestContext } from "node:test";
import { importSlack } from "../src/import/slack.ts";
import { ImportFormatError } from "../src/import/tarball.ts";
import { unpackZip } from "../src/import/zip.ts";
import { getDefaultRealm } from "../src/queries/users.ts";
import { closeServices, startServer } from "../src/server.ts";
import { emptyServices, getAs, storedKeys } from "./helpers.ts";
import { zipFile } from "./zip-writer.ts";

const REPORT = "Q3 numbers: up and to the right.\n";

type Row = Record<string, unknown>;

function exportFiles(fileServer: string): Map<string, string> {
  const user = (id: string, name: string, real_name: string, extra: Row = {}): Row => ({
    id,
    team_id: "T1",
    name,
    deleted: false,
    real_name,
    tz: "Europe/Berlin",
    is_admin: false,
    is_owner: false,
    is_primary_owner: false,
    is_restricted: false,
    is_ultra_restricted: false,
    is_bot: false,
    is_app_user: false,
    profile: { real_name, display_name: name, email: `${name}@acme.example` },
    ...extra,
  });
  const users = [
    user("U01ANN", "ann", "Ann Owner", { is_admin: true, is_owner: true, is_primary_owner: true }),
    user("U02BOB", "bob", "Bob Admin", { is_admin: true }),
    user("U03CAT", "cat", "Cat Member"),
    user("U04DAN", "dan", "Dan Gone", { deleted: true }),
    user("U05BOT", "deploybot", "Deploy Bot", { is_bot: true, profile: { real_name: "Deploy Bot", bot_id: "B05" } }),
    user("U06EVE", "eve", "Eve Guest", { is_restricted: true }),
    // Two people with one name: mentions of them carry the user ID.
    user("U07SAM", "sam", "Sam Twin"),
    user("U08SAM", "sam.b", "Sam Twin"),
  ];
  const channels = [
    { id: "C01GEN", name: "general", created: 1599990000, creator: "U01ANN", is_archived: false, is_general: true, members: ["U01ANN", "U02BOB", "U03CAT", "U04DAN", "U05BOT", "U06EVE"], topic: { value: "" }, purpose: { value: "Company-wide *news*" } },
    { id: "C02OLD", name: "old-project", created: 1599990001, creator: "U02BOB", is_archived: true, is_general: false, members: ["U02BOB"], topic: { value: "" }, purpose: { value: "" } },
  ];
  const groups = [{ id: "G01SEC", name: "secret", created: 1599990002, creator: "U01ANN", is_archived: false, members: ["U01ANN", "U02BOB"], purpose: { value: "Plans" } }];
  const dms = [{ id: "D01", created: 1599990003, members: ["U01ANN", "U03CAT"] }];
  const mpims = [{ id: "G02MP", name: "mpdm-ann--bob--cat-1", created: 1599990004, creator: "U02BOB", is_archived: false, members: ["U01ANN", "U02BOB", "U03CAT"] }];
  const general = [
    {
      type: "message",
      user: "U01ANN",
      text: "Welcome <@U03CAT>! See <#G01SEC|secret> and <https://example.org/a?b=1&amp;c=2|the site>. *Bold* _it_ ~old~ `*as is*` 1 &lt; 2",
      ts: "1600000000.000100",
      reactions: [
        { name: "thumbsup", users: ["U02BOB", "U03CAT"], count: 2 },
        { name: "tada::skin-tone-2", users: ["U02BOB"], count: 1 },
        { name: "partyparrot", users: ["U02BOB"], count: 1 },
      ],
    },
    { type: "message", subtype: "channel_join", user: "U06EVE", text: "<@U06EVE> has joined the channel", ts: "1600000050.000100" },
    { type: "message", user: "U02BOB", text: "Lunch?", ts: "1600000100.000200", thread_ts: "1600000100.000200", reply_count: 1, replies: [{ user: "U03CAT", ts: "1600000200.000300" }] },
    { type: "message", user: "U03CAT", text: "Yes <!here>", ts: "1600000200.000300", thread_ts: "1600000100.000200", parent_user_id: "U02BOB" },
    {
      type: "message",
      user: "U01ANN",
      text: "The report",
      ts: "1600000300.000400",
      files: [
        { id: "F01", name: "report.txt", title: "Q3 report", mimetype: "text/plain", size: REPORT.length, url_private: `${fileServer}/files/report.txt` },
        { id: "F02", name: "deck.pdf", title: "Old deck", mimetype: "application/pdf", size: 10, url_private: `${fileServer}/files/gone.pdf` },
      ],
    },
    { type: "message", subtype: "bot_message", bot_id: "B05", username: "deploybot", text: "Deployed `v1.2` to <https://prod.example>", ts: "1600000400.000500" },
    {
      type: "message",
      subtype: "bot_message",
      bot_id: "B99",
      username: "ci-hook",
      text: "",
      ts: "1600000410.000500",
      blocks: [{ type: "section", text: { type: "mrkdwn", text: "Build *passed*" } }],
      attachments: [{ title: "Build 42", title_link: "https://ci.example/42", text: "All green" }],
    },
    { type: "message", user: "U04DAN", text: "Bye all", ts: "1600000500.000600" },
  ];
  return new Map([
    ["users.json", JSON.stringify(users)],
    ["channels.json", JSON.stringify(channels)],
    ["groups.json", JSON.stringify(groups)],
    ["dms.json", JSON.stringify(dms)],
    ["mpims.json", JSON.stringify(mpims)],
    ["general/2020-09-13.json", JSON.stringify(general)],
    ["secret/2020-09-13.json", JSON.stringify([{ type: "message", user: "U02BOB", text: "Private plans for <#C01GEN>", ts: "1600000600.000700" }])],
    ["D01/2020-09-13.json", JSON.stringify([{ type: "message", user: "U03CAT", text: "Hi Ann, ask <@U08SAM>", ts: "1600000700.000800" }])],
    ["mpdm-ann--bob--cat-1/2020-09-14.json", JSON.stringify([{ type: "message", user: "U02BOB", text: "Group hello", ts: "1600100800.000900" }])],
  ]);
}

/** Serves report.txt (only with `Authorization: Bearer <token>` when a token is given, as Slack's url_private), nothing else. */
async function fileServer(t: TestContext, token?: string): Promise<string> {
  const server = http.createServer((request, response) => {
    if (token !== undefined && request.headers.authorization !== `Bearer ${token}`) {
      response.writeHead(401);
      response.end();
      return;
    }
    if (request.url === "/files/report.txt") {
      response.writeHead(200, { "content-type": "text/plain" });
      response.end(REPORT);
      return;
    }
    response.writeHead(404);
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function writeZip(t: TestContext, files: Map<string, string | Buffer>, name = "Acme Slack export Sep 1 2020 - Sep 30 2020.zip"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-slack-export-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, name);
  fs.writeFileSync(file, zipFile(files));
  return file;
}

test("a Slack export is imported: users, bots, deleted users, channels, threads, mentions, reactions, files, DMs", { timeout: 120_000 }, async (t) => {
  const services = await emptyServices(t);
  const lines: string[] = [];
  const result = await importSlack(services, writeZip(t, exportFiles(await fileServer(t))), (line) => lines.push(line));
  const log = lines.join("\n");
  for (const expected of ["users: 8", "channels: 3", "messages: 10", "reactions: 3", "attachments: 1", "files linked: 1", "reactions skipped (custom Slack emoji, not in the export): 1"]) {
    assert.ok(log.includes(expected), `${expected} in\n${log}`);
  }
  // The integration that users.json does not list became a user when its first message came.
  assert.equal(result.counts.get("users"), 9);
  assert.equal(result.counts.get("files downloaded"), 1);

  const server = await startServer(services);
  t.after(() => server.close());
  const db = services.storage.db;
  const realm = await getDefaultRealm(db);
  assert.equal(realm?.name, "Acme");
  const as = (email: string) => getAs(services, server.url, email);
  const ann = await as("ann@acme.example");
  const cat = await as("cat@acme.example");
  const messages = async (get: (p: string) => Promise<any>, narrow: unknown[]): Promise<any[]> =>
    (await get(`/api/v1/messages?anchor=oldest&num_before=0&num_after=100&apply_markdown=false&narrow=${encodeURIComponent(JSON.stringify(narrow))}`)).messages;

  // Users: owner/admin/guest roles from Slack's flags, deleted users deactivated, bots (from users.json and an unlisted integration).
  const { members } = await ann("/api/v1/users");
  const byName = new Map<string, any>(members.map((m: any) => [m.full_name, m]));
  assert.equal(byName.get("Ann Owner").role, 100);
  assert.equal(byName.get("Bob Admin").role, 200);
  assert.equal(byName.get("Cat Member").role, 400);
  assert.equal(byName.get("Eve Guest").role, 600);
  assert.equal(byName.get("Dan Gone").is_active, false);
  assert.equal(byName.get("Cat Member").is_active, true);
  assert.equal(byName.get("Deploy Bot").is_bot, true);
  assert.equal(byName.get("ci-hook").is_bot, true);
  assert.equal(byName.get("Cat Member").timezone, "Europe/Berlin");

  // Channels: public and private with their members, archived ones archived, #general a default channel.
  const { streams } = await ann("/api/v1/streams?include_all=true&include_default=true&exclude_archived=false");
  const general = streams.find((s: any) => s.name === "general");
  const secret = streams.find((s: any) => s.name === "secret");
  assert.equal(general.invite_only, false);
  assert.equal(general.description, "Company-wide *news*");
  assert.equal(secret.invite_only, true);
  assert.equal(streams.find((s: any) => s.name === "old-project")?.is_archived, true);
  const { subscribers } = await ann(`/api/v1/streams/${secret.stream_id}/members`);
  assert.deepEqual(subscribers.sort(), [byName.get("Ann Owner").user_id, byName.get("Bob Admin").user_id].sort());
  assert.equal((await cat("/api/v1/users/me/subscriptions")).subscriptions.some((s: any) => s.name === "secret"), false);
  assert.deepEqual(streams.filter((s: any) => s.is_default).map((s: any) => s.name), ["general"]);

  // Channel messages: unthreaded in "imported from Slack", the thread in its own topic; joins are left out.
  const inGeneral = await messages(cat, [{ operator: "channel", operand: "general" }]);
  assert.deepEqual(
    inGeneral.map((m: any) => [m.subject, m.content]),
    [
      ["imported from Slack", "Welcome @**Cat Member**! See #**secret** and [the site](https://example.org/a?b=1&c=2). **Bold** *it* ~~old~~ `*as is*` 1 < 2"],
      ["2020-09-13 Slack thread 1", "Lunch?"],
      ["2020-09-13 Slack thread 1", "Yes @**all**"],
      ["imported from Slack", inGeneral[3].content],
      ["imported from Slack", "Deployed `v1.2` to https://prod.example"],
      ["imported from Slack", "Build **passed**\n\n## [Build 42](https://ci.example/42)\n\nAll green"],
      ["imported from Slack", "Bye all"],
    ],
  );
  const [welcome, , reply, report, deployed, ci, bye] = inGeneral;
  assert.equal(welcome.timestamp, 1600000000);
  // Mentions: the mentioned user's flag, the wildcard's for everyone in the channel; all history is read.
  assert.ok(welcome.flags.includes("mentioned"), welcome.flags);
  assert.ok(welcome.flags.includes("read"));
  assert.ok(reply.flags.includes("stream_wildcard_mentioned") || reply.flags.includes("wildcard_mentioned"), reply.flags);
  assert.equal((await messages(ann, [{ operator: "channel", operand: "general" }]))[0].flags.includes("mentioned"), false);
  const rendered = (await cat(`/api/v1/messages/${welcome.id}`)).message.content;
  assert.match(rendered, /class="user-mention" data-user-id="\d+">@Cat Member</);
  // Reactions under Zulip's names (thumbsup → +1, a skin tone dropped); Slack custom emoji skipped.
  const reactions = welcome.reactions.map((r: any) => `${r.emoji_name}:${r.emoji_code}:${r.user_id}`).sort();
  assert.deepEqual(reactions, [`+1:1f44d:${byName.get("Bob Admin").user_id}`, `+1:1f44d:${byName.get("Cat Member").user_id}`, `tada:1f389:${byName.get("Bob Admin").user_id}`].sort());
  // Senders: bots and the deleted user.
  assert.equal(deployed.sender_id, byName.get("Deploy Bot").user_id);
  assert.equal(ci.sender_id, byName.get("ci-hook").user_id);
  assert.equal(bye.sender_id, byName.get("Dan Gone").user_id);

  // Files: the reachable one is an upload now, the unreachable one a link to Slack.
  const upload = /\[Q3 report\]\((\/user_uploads\/[^)]+)\)/.exec(report.content);
  assert.ok(upload, report.content);
  assert.match(report.content, /^The report\n\[Q3 report\]\(\/user_uploads\/[^)]+\)\n\[Old deck\]\(http:\/\/127\.0\.0\.1:\d+\/files\/gone\.pdf\)$/);
  assert.equal(await cat(upload[1]!), REPORT);
  assert.equal(report.has_attachment ?? true, true);
  const { attachments } = await ann("/api/v1/attachments");
  assert.deepEqual(attachments.map((a: any) => [a.name, a.size, a.messages.map((m: any) => m.id)]), [["report.txt", REPORT.length, [report.id]]]);

  // The private channel, with a channel link by ID only.
  assert.deepEqual((await messages(ann, [{ operator: "channel", operand: "secret" }])).map((m: any) => m.content), ["Private plans for #**general**"]);
  // Direct messages and the group DM.
  const dms = await messages(ann, [{ operator: "is", operand: "dm" }]);
  assert.deepEqual(
    dms.map((m: any) => [m.content, m.display_recipient.map((r: any) => r.full_name).sort()]),
    [
      [`Hi Ann, ask @**Sam Twin|${members.find((m: any) => m.delivery_email === "sam.b@acme.example").user_id}**`, ["Ann Owner", "Cat Member"]],
      ["Group hello", ["Ann Owner", "Bob Admin", "Cat Member"]],
    ],
  );
  await closeServices(services);
});

test("files behind Slack's token: fetched with --token (as a Bearer token), linked without it", { timeout: 120_000 }, async (t) => {
  const TOKEN = "xoxb-123-test-token";
  const zip = writeZip(t, exportFiles(await fileServer(t, TOKEN)));
  const withToken = await emptyServices(t);
  const lines: string[] = [];
  const result = await importSlack(withToken, zip, (line) => lines.push(line), { token: TOKEN });
  assert.equal(result.counts.get("files downloaded"), 1);
  assert.ok(!lines.join("\n").includes(TOKEN), "the token is not printed");
  const stored = await withToken.storage.db.selectFrom("attachments").select(["file_name", "size"]).execute();
  assert.deepEqual(stored.map((a) => [a.file_name, a.size]), [["report.txt", REPORT.length]]);
  const uploaded = await withToken.storage.db.selectFrom("messages").select("content").where("content", "like", "The report%").executeTakeFirstOrThrow();
  assert.match(uploaded.content, /\[Q3 report\]\(\/user_uploads\/[^)]+\/report\.txt\)/);
  assert.ok(!uploaded.content.includes("/files/report.txt"), "the message links the upload, not Slack's URL");

  const withoutToken = await emptyServices(t);
  const linked = await importSlack(withoutToken, zip, () => {});
  assert.equal(linked.counts.get("files downloaded"), undefined);
  assert.equal(linked.counts.get("files linked"), 2);
  assert.deepEqual(await withoutToken.storage.db.selectFrom("attachments").select("id").execute(), []);
  const report = await withoutToken.storage.db.selectFrom("messages").select("content").where("content", "like", "The report%").executeTakeFirstOrThrow();
  assert.match(report.content, /\[Q3 report\]\(http:\/\/127\.0\.0\.1:\d+\/files\/report\.txt\)/);
});

test("a broken export leaves the database and the file store empty, and a retry then works", { timeout: 120_000 }, async (t) => {
  const services = await emptyServices(t);
  t.after(() => closeServices(services));
  const files = exportFiles(await fileServer(t));

  // The last conversation has a message from someone users.json does not have: found after the file was stored.
  const broken = new Map(files);
  broken.set("mpdm-ann--bob--cat-1/2020-09-14.json", JSON.stringify([{ type: "message", user: "U99NOBODY", text: "Who am I", ts: "1600100900.000100" }]));
  await assert.rejects(importSlack(services, writeZip(t, broken), () => {}), (error: unknown) => error instanceof ImportFormatError && /U99NOBODY, who is not in users\.json/.test(error.message));
  assert.equal(await getDefaultRealm(services.storage.db), undefined);
  assert.equal((await services.storage.db.selectFrom("users").select("id").execute()).length, 0);
  assert.equal((await services.storage.db.selectFrom("messages").select("id").execute()).length, 0);
  assert.deepEqual(await storedKeys({ services }), []);

  // Not a zip file, no users.json, a message file that is not JSON.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-slack-garbage-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "garbage.zip"), "this is not a zip file");
  await assert.rejects(importSlack(services, path.join(dir, "garbage.zip"), () => {}), /not a zip file/);
  const noUsers = new Map(files);
  noUsers.delete("users.json");
  await assert.rejects(importSlack(services, writeZip(t, noUsers), () => {}), /no users\.json in the zip file: not a Slack export/);
  const badDay = new Map(files);
  badDay.set("secret/2020-09-13.json", "[{");
  await assert.rejects(importSlack(services, writeZip(t, badDay), () => {}), /2020-09-13\.json is not valid JSON/);
  assert.equal(await getDefaultRealm(services.storage.db), undefined);
  assert.deepEqual(await storedKeys({ services }), []);

  const result = await importSlack(services, writeZip(t, files, "export.zip"), () => {});
  assert.equal(result.counts.get("messages"), 10);
  assert.equal((await getDefaultRealm(services.storage.db))?.name, "Imported from Slack");
  assert.equal((await storedKeys({ services })).length, 1);
});

test("a zip entry that leaves the directory is refused", { timeout: 60_000 }, async (t) => {
  const zip = writeZip(t, new Map([["../escaped.json", "[]"]]));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-slack-unzip-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  await assert.rejects(unpackZip(zip, path.join(dir, "inside")), /unsafe path in the zip file: \.\.\/escaped\.json/);
  assert.equal(fs.existsSync(path.join(dir, "escaped.json")), false);
  // A damaged entry (its checksum no longer matches) is refused too.
  const good = zipFile(new Map([["users.json", "[]"]]));
  good.writeUInt32LE(0xdeadbeef, good.length - 22 - 46 - "users.json".length + 16);
  const damaged = path.join(dir, "damaged.zip");
  fs.writeFileSync(damaged, good);
  await assert.rejects(unpackZip(damaged, path.join(dir, "out")), /users\.json fails its checksum/);
});

test("messages are read one day at a time, in time order across conversations; a thread's later replies keep its topic", { timeout: 120_000 }, async (t) => {
  const files = exportFiles(await fileServer(t));
  const msg = (user: string, text: string, ts: string, thread_ts?: string): Row => ({ type: "message", user, text, ts, ...(thread_ts === undefined ? {} : { thread_ts }) });
  files.set("general/2020-09-13.json", JSON.stringify([msg("U01ANN", "day 1 thread start", "1600000000.000100", "1600000000.000100"), msg("U02BOB", "day 1 plain", "1600000100.000100")]));
  files.set("secret/2020-09-13.json", JSON.stringify([msg("U02BOB", "day 1 secret", "1600000050.000100")]));
  files.set("general/2020-09-15.json", JSON.stringify([msg("U03CAT", "day 3 reply", "1600200000.000100", "1600000000.000100")]));
  files.delete("D01/2020-09-13.json");
  const services = await emptyServices(t);
  const days: [string, number][] = [];
  await importSlack(services, writeZip(t, files), () => {}, { onDay: (day, n) => days.push([day, n]) });
  // One day's files (of every conversation) at a time, never the whole export.
  assert.deepEqual(days, [["2020-09-13.json", 3], ["2020-09-14.json", 1], ["2020-09-15.json", 1]]);

  const server = await startServer(services);
  t.after(() => server.close());
  const ann = await getAs(services, server.url, "ann@acme.example");
  const { messages } = await ann(`/api/v1/messages?anchor=oldest&num_before=0&num_after=100&apply_markdown=false`);
  // Message IDs follow time across conversations and days; the reply two days later is in the thread's topic.
  assert.deepEqual(
    messages.map((m: any) => [m.content, m.subject]),
    [
      ["day 1 thread start", "2020-09-13 Slack thread 1"],
      ["day 1 secret", "imported from Slack"],
      ["day 1 plain", "imported from Slack"],
      ["Group hello", ""],
      ["day 3 reply", "2020-09-13 Slack thread 1"],
    ],
  );
  assert.deepEqual(messages.map((m: any) => m.id), [...messages.map((m: any) => m.id)].sort((a: number, b: number) => a - b));
  await closeServices(services);
});
