// Organization data exports: POST/GET /export/realm, DELETE
// /export/realm/{export_id}, GET /export/realm/consents — reply shapes,
// Zulip's errors, who may (administrators), the realm_export and
// realm_export_consent events; the export job writing a Zulip-format tarball
// into the file store, read back here (gunzip + tar) for what a public and a
// full export with consent contain; the tarball's download for
// administrators only; deletion; a failed export; and `parley export`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { after, before, describe, test } from "node:test";
import * as tar from "tar-stream";
import { exportRealmToFile } from "../src/actions/realm-export.ts";
import { EXPORT_LIMIT, EXPORT_RETENTION_SECONDS, ExportStatus, ExportType, MESSAGE_CHUNK_SIZE } from "../src/domain/realm-export.ts";
import { REALM_EXPORT_EXPIRE_JOB, REALM_EXPORT_JOB } from "../src/jobs/names.ts";
import { SERVICE_VERSION } from "../src/version.ts";
import { assertError, assertSuccess, basicAuth, createChannel, dropPgSchema, jobsSettled, sortedIds, startTestApp, type Params, type TestApp, type TestUser } from "./helpers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PG_URL = process.env.DATABASE_URL;

let t: TestApp;
const u = () => t.users;
const db = () => t.services.storage.db;

/** The tarball's files by name (without the top directory), gunzipped and untarred. */
async function untar(gz: Buffer): Promise<{ top: Set<string>; files: Map<string, Buffer> }> {
  const files = new Map<string, Buffer>();
  const top = new Set<string>();
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (header, stream, next) => {
      const pieces: Buffer[] = [];
      stream.on("data", (piece: unknown) => pieces.push(piece as Buffer));
      stream.on("end", () => {
        const [dir, ...rest] = header.name.split("/");
        top.add(dir!);
        files.set(rest.join("/"), Buffer.concat(pieces));
        next();
      });
      stream.on("error", reject);
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  Readable.from([gunzipSync(gz)]).pipe(extract);
  await done;
  return { top, files };
}

const jsonOf = (files: Map<string, Buffer>, name: string): Json => {
  const body = files.get(name);
  assert.ok(body, `${name} is in the tarball`);
  return JSON.parse(body.toString("utf8"));
};

/** All zerver_message and zerver_usermessage rows of the messages-NNNNNN.json files, checking their names and order. */
function messagesOf(files: Map<string, Buffer>): { messages: Json[]; userMessages: Json[]; chunks: number } {
  const names = [...files.keys()].filter((n) => /^messages-\d{6}\.json$/.test(n)).sort();
  names.forEach((name, i) => assert.equal(name, `messages-${String(i + 1).padStart(6, "0")}.json`));
  const messages: Json[] = [];
  const userMessages: Json[] = [];
  for (const name of names) {
    const chunk = jsonOf(files, name);
    assert.ok(chunk.zerver_message.length <= MESSAGE_CHUNK_SIZE);
    messages.push(...chunk.zerver_message);
    userMessages.push(...chunk.zerver_usermessage);
  }
  const ids = messages.map((m) => m.id);
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b), "message ids ascend");
  return { messages, userMessages, chunks: names.length };
}

async function download(user: TestUser | null, url: string): Promise<Response> {
  return fetch(url.replace("http://parley.test", t.url), { headers: user ? { authorization: basicAuth(user.email, user.apiKey) } : {} });
}

const newChannel = (creator: TestUser, subscribers: TestUser[], params: Params = {}) => createChannel(t, creator, subscribers, "export channel", params);

const sendChannel = async (user: TestUser, channelId: number, content: string) =>
  assertSuccess(await t.api(user, "POST", "/messages", { type: "channel", to: channelId, topic: "export", content })).id as number;
const sendDirect = async (user: TestUser, to: TestUser[], content: string) =>
  assertSuccess(await t.api(user, "POST", "/messages", { type: "direct", to: JSON.stringify(to.map((r) => r.id)), content })).id as number;

const setConsent = async (user: TestUser, value: boolean) => assertSuccess(await t.api(user, "PATCH", "/settings", { allow_private_data_export: value }));

/** Asks for an export and waits for its job; returns the export object as GET /export/realm lists it. */
async function exportAndWait(user: TestUser, exportType?: number): Promise<Json> {
  const body = assertSuccess(await t.api(user, "POST", "/export/realm", exportType === undefined ? {} : { export_type: exportType }));
  assert.equal(typeof body.id, "number");
  await jobsSettled(t.services, [REALM_EXPORT_JOB]);
  const list = assertSuccess(await t.api(user, "GET", "/export/realm")).exports as Json[];
  return list.find((e) => e.id === body.id);
}

/** Exports of the last week are limited: tests that ask for many clear the older ones. */
async function forgetExports(): Promise<void> {
  await db().updateTable("realm_exports").set({ date_requested: 0 }).execute();
}

let adminIds: number[];
let ids: Record<string, number>;
/** A file attached to a public message, and one to a private message. */
let publicUpload: { url: string; pathId: string };
let privateUpload: { url: string; pathId: string };

/** A multipart POST of one file to `urlPath` (under /api/v1), asserting success. */
async function postFile(user: TestUser, urlPath: string, name: string, content: string | Buffer, type: string): Promise<Json> {
  const form = new FormData();
  form.append("file", new Blob([typeof content === "string" ? content : new Uint8Array(content)], { type }), name);
  const response = await fetch(`${t.url}/api/v1${urlPath}`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as Json;
  assert.equal(body.result, "success", JSON.stringify(body));
  return body;
}

async function upload(user: TestUser, name: string, content: string): Promise<{ url: string; pathId: string }> {
  const body = await postFile(user, "/user_uploads", name, content, "text/plain");
  return { url: body.url, pathId: (body.url as string).slice("/user_uploads/".length) };
}

// A 1×1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");

before(async () => {
  t = await startTestApp();
  adminIds = sortedIds([u().owner.id, u().admin.id]);
  const pub = await newChannel(u().owner, [u().member, u().guest]);
  const priv = await newChannel(u().owner, [u().member], { invite_only: true });
  publicUpload = await upload(u().member, "public-notes.txt", "public file contents");
  privateUpload = await upload(u().owner, "private-notes.txt", "private file contents");
  await postFile(u().member, "/realm/emoji/export_emoji", "emoji.png", PNG, "image/png");
  await postFile(u().member, "/users/me/avatar", "avatar.png", PNG, "image/png");
  // Hidden from everyone: a public export does not have it.
  assertSuccess(await t.api(u().moderator, "PATCH", "/settings", { email_address_visibility: 4 }));
  ids = {
    publicChannel: pub.id,
    privateChannel: priv.id,
    publicMessage: await sendChannel(u().member, pub.id, `public words [notes](${publicUpload.url})`),
    privateOwner: await sendChannel(u().owner, priv.id, `private words from the owner [notes](${privateUpload.url})`),
    privateMember: await sendChannel(u().member, priv.id, "private words from the member"),
    dmOwnerMember: await sendDirect(u().owner, [u().member], "a DM between owner and member"),
    dmMemberGuest: await sendDirect(u().member, [u().guest], "a DM between member and guest"),
  };
  t.clearEvents();
});
after(() => t?.close());

describe("permissions", () => {
  for (const role of ["moderator", "member", "guest", "bot"] as const) {
    test(`a ${role} may not use any export endpoint`, async () => {
      const user = u()[role];
      for (const [method, url] of [
        ["POST", "/export/realm"],
        ["GET", "/export/realm"],
        ["GET", "/export/realm/consents"],
        ["DELETE", "/export/realm/1"],
      ] as const) {
        assertError(await t.api(user, method, url), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      }
      assert.equal(await db().selectFrom("realm_exports").select("id").where("acting_user_id", "=", user.id).executeTakeFirst(), undefined);
    });
  }

  test("without credentials: 401", async () => {
    assertError(await t.api(null, "GET", "/export/realm"), 401, "UNAUTHORIZED");
  });
});

describe("consents", () => {
  test("GET /export/realm/consents lists active humans, and a change is sent to administrators", async () => {
    await forgetExports();
    const initial = assertSuccess(await t.api(u().admin, "GET", "/export/realm/consents")).export_consents as Json[];
    const humans = sortedIds([u().owner.id, u().admin.id, u().moderator.id, u().member.id, u().guest.id]);
    assert.deepEqual(
      initial.map((c) => c.user_id),
      humans,
    );
    assert.ok(initial.every((c) => c.consented === false));

    t.clearEvents();
    await setConsent(u().member, true);
    const events = t.events.filter((n) => n.event.type === "realm_export_consent");
    assert.deepEqual(
      events.map((n) => ({ userIds: sortedIds(n.userIds), event: n.event })),
      [{ userIds: adminIds, event: { type: "realm_export_consent", user_id: u().member.id, consented: true } }],
    );
    const changed = assertSuccess(await t.api(u().owner, "GET", "/export/realm/consents")).export_consents as Json[];
    assert.deepEqual(changed.find((c) => c.user_id === u().member.id), { user_id: u().member.id, consented: true });

    // Setting the same value again changes nothing and sends nothing.
    t.clearEvents();
    await setConsent(u().member, true);
    assert.equal(t.events.filter((n) => n.event.type === "realm_export_consent").length, 0);
    await setConsent(u().member, false);
    assert.deepEqual(t.eventsFor(u().owner.id, "realm_export_consent"), [{ type: "realm_export_consent", user_id: u().member.id, consented: false }]);
  });

  test("through real event queues: an administrator's gets the event, a member's does not", async () => {
    const adminQueue = (await t.register(u().admin, { event_types: ["realm_export_consent"] })).queue_id as string;
    const memberQueue = (await t.register(u().member, { event_types: ["realm_export_consent"] })).queue_id as string;
    await setConsent(u().guest, true);
    await setConsent(u().guest, false);
    assert.deepEqual(
      (await t.queuedEvents(u().admin, adminQueue)).map(({ id: _id, ...rest }: Json) => rest),
      [
        { type: "realm_export_consent", user_id: u().guest.id, consented: true },
        { type: "realm_export_consent", user_id: u().guest.id, consented: false },
      ],
    );
    assert.deepEqual(await t.queuedEvents(u().member, memberQueue), []);
  });
});

describe("requesting an export", () => {
  test("bad export_type", async () => {
    assertError(await t.api(u().owner, "POST", "/export/realm", { export_type: 3 }), 400, "BAD_REQUEST", "Invalid export_type");
    assertError(await t.api(u().owner, "POST", "/export/realm", { export_type: 0 }), 400, "BAD_REQUEST", "Invalid export_type");
    const bad = await t.api(u().owner, "POST", "/export/realm", { export_type: "public" });
    assert.equal(bad.status, 400);
  });

  test("a full export needs an owner who consents; a public one an owner whose address administrators may see", async () => {
    await forgetExports();
    assertError(
      await t.api(u().admin, "POST", "/export/realm", { export_type: ExportType.FULL_WITH_CONSENT }),
      400,
      "BAD_REQUEST",
      "Make sure at least one Organization Owner is consenting to the export or contact your server's administrator for help.",
    );
    assertSuccess(await t.api(u().owner, "PATCH", "/settings", { email_address_visibility: 4 }));
    assertError(
      await t.api(u().admin, "POST", "/export/realm"),
      400,
      "BAD_REQUEST",
      "Make sure at least one Organization Owner allows other Administrators to see their email address or contact your server's administrator for help",
    );
    assertSuccess(await t.api(u().owner, "PATCH", "/settings", { email_address_visibility: 3 }));
    assert.equal((await db().selectFrom("realm_exports").select("id").executeTakeFirst()), undefined, "no export was recorded");
  });

  test("more than 20 GiB of uploads: a manual export is needed", async () => {
    await forgetExports();
    const { id } = await db()
      .insertInto("attachments")
      .values({ realm_id: t.realm.id, owner_id: u().member.id, path_id: `${t.realm.id}/aa/huge/huge.bin`, file_name: "huge.bin", content_type: "application/octet-stream", size: 21 * 1024 ** 3, create_time: t.services.now() })
      .returning("id")
      .executeTakeFirstOrThrow();
    try {
      for (const exportType of [ExportType.PUBLIC, ExportType.FULL_WITH_CONSENT]) {
        assertError(await t.api(u().owner, "POST", "/export/realm", { export_type: exportType }), 400, "BAD_REQUEST", "Please request a manual export from your server's administrator.");
      }
    } finally {
      await db().deleteFrom("attachments").where("id", "=", id).execute();
    }
    assert.equal(await db().selectFrom("realm_exports").select("id").executeTakeFirst(), undefined);
  });

  test("the weekly limit: five exports in seven days", async () => {
    await forgetExports();
    const now = t.services.now();
    const rows = Array.from({ length: EXPORT_LIMIT }, () => ({ realm_id: t.realm.id, acting_user_id: u().admin.id, type: 1, status: ExportStatus.FAILED, date_requested: now - 3600, date_failed: now - 3600 }));
    await db().insertInto("realm_exports").values(rows).execute();
    t.clearEvents();
    assertError(await t.api(u().owner, "POST", "/export/realm"), 400, "BAD_REQUEST", "Exceeded rate limit.");
    assert.equal(t.events.filter((n) => n.event.type === "realm_export").length, 0);
    // Older than a week: no longer counted.
    await db().updateTable("realm_exports").set({ date_requested: now - 8 * 24 * 3600 }).execute();
    await exportAndWait(u().owner);
  });
});

describe("a public export", () => {
  let exp: Json;
  let files: Map<string, Buffer>;
  let requestEvents: Json[];
  before(async () => {
    await forgetExports();
    t.clearEvents();
    exp = await exportAndWait(u().admin, ExportType.PUBLIC);
    requestEvents = t.events.filter((n) => n.event.type === "realm_export").map((n) => ({ userIds: sortedIds(n.userIds), event: n.event }));
    const response = await download(u().owner, exp.export_url);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/gzip");
    const tarball = await untar(Buffer.from(await response.arrayBuffer()));
    assert.equal(tarball.top.size, 1);
    assert.match([...tarball.top][0]!, /^zulip-export-[0-9a-f]{32}$/);
    files = tarball.files;
  });

  test("the export object, and the events: pending at the request, with its URL when done, to administrators", () => {
    assert.deepEqual(Object.keys(exp).sort(), ["acting_user_id", "deleted_timestamp", "export_time", "export_type", "export_url", "failed_timestamp", "id", "pending"]);
    assert.equal(exp.acting_user_id, u().admin.id);
    assert.equal(exp.export_type, ExportType.PUBLIC);
    assert.equal(exp.pending, false);
    assert.equal(exp.deleted_timestamp, null);
    assert.equal(exp.failed_timestamp, null);
    assert.equal(typeof exp.export_time, "number");
    assert.match(exp.export_url, new RegExp(`^http://parley\\.test/user_avatars/exports/${t.realm.id}/[0-9a-f]{32}/zulip-export-[0-9a-f]{32}\\.tar\\.gz$`));
    assert.equal(requestEvents.length, 2);
    for (const e of requestEvents) assert.deepEqual(e.userIds, adminIds);
    const first = requestEvents[0].event.exports.find((x: Json) => x.id === exp.id);
    assert.deepEqual(first, { ...exp, pending: true, export_url: null });
    assert.deepEqual(requestEvents[1].event.exports.find((x: Json) => x.id === exp.id), exp);
    assert.deepEqual(Object.keys(requestEvents[1].event), ["type", "exports"]);
  });

  test("realm.json: Zulip's tables, without anyone's private data", () => {
    const realm = jsonOf(files, "realm.json");
    for (const table of ["zerver_realm", "zerver_userprofile", "zerver_stream", "zerver_subscription", "zerver_recipient", "zerver_usergroup", "zerver_namedusergroup", "zerver_usergroupmembership", "zerver_realmemoji", "zerver_customprofilefield", "zerver_huddle", "zerver_client"]) {
      assert.ok(Array.isArray(realm[table]), table);
    }
    assert.equal(realm.zerver_realm[0].name, "Test Org");
    const users = realm.zerver_userprofile as Json[];
    const owner = users.find((x) => x.id === u().owner.id);
    assert.equal(owner.delivery_email, "owner@example.com");
    assert.equal(owner.role, 100);
    const moderator = users.find((x) => x.id === u().moderator.id);
    assert.notEqual(moderator.delivery_email, u().moderator.email);
    assert.equal(moderator.delivery_email, moderator.email);
    assert.equal(users.find((x) => x.id === u().member.id).delivery_email, u().member.email);
    for (const x of users) {
      assert.equal(x.api_key, undefined);
      assert.equal(x.password, undefined);
    }
    // System bots are cross-realm in Zulip's format.
    assert.ok((realm.zerver_userprofile_crossrealm as Json[]).some((x) => x.email === "notification-bot@zulip.com"));
    const streams = realm.zerver_stream as Json[];
    const priv = streams.find((s) => s.id === ids.privateChannel);
    assert.equal(priv.invite_only, true);
    const recipient = (realm.zerver_recipient as Json[]).find((r) => r.id === priv.recipient);
    assert.deepEqual(recipient, { id: priv.recipient, type: 2, type_id: ids.privateChannel });
    assert.ok((realm.zerver_subscription as Json[]).some((s) => s.recipient === priv.recipient && s.user_profile === u().member.id && s.active === true));
    assert.deepEqual(realm.zerver_huddle, [], "no DM conversation in a public export");
    assert.deepEqual(realm.zerver_usertopic, []);
    assert.deepEqual(realm.zerver_alertword, []);
    assert.deepEqual(realm.zerver_muteduser, []);
  });

  test("migration_status.json, which Zulip's import requires: no Django migrations, and Parley's Zulip version (major 11)", () => {
    // import_realm.py's do_import_realm stops without the file; check_migration_status compares the major version
    // (before the first dot) with the server's, and only warns about an app the export does not list.
    const status = jsonOf(files, "migration_status.json");
    assert.deepEqual(status, { migrations_by_app: {}, zulip_version: SERVICE_VERSION });
    assert.equal(status.zulip_version.split(".")[0], "11");
  });

  test("rows as Zulip 11's models take them: no key its Realm lacks, policies as numbers, no Zulip 12 field", () => {
    // Zulip's import builds Realm(**row), UserProfile(**row), Stream(**row), RealmUserDefault(**row): an unknown key stops it.
    const realm = jsonOf(files, "realm.json");
    const row = realm.zerver_realm[0];
    for (const key of ["allow_edit_history", "mandatory_topics", "presence_disabled", "empty_topic_display_name", "workplace_users_group"]) assert.ok(!(key in row), key);
    // RealmTopicsPolicyEnum.allow_empty_topic, MessageEditHistoryVisibilityPolicyEnum.all
    assert.equal(row.topics_policy, 2);
    assert.equal(row.message_edit_history_visibility_policy, 1);
    assert.ok((realm.zerver_userprofile as Json[]).length > 0);
    for (const user of [...(realm.zerver_userprofile as Json[]), realm.zerver_realmuserdefault[0]]) {
      assert.ok(!("web_inbox_show_channel_folders" in user), user.email);
      assert.ok("web_left_sidebar_unreads_count_summary" in user, user.email);
    }
    // StreamTopicsPolicyEnum.inherit
    assert.ok((realm.zerver_stream as Json[]).every((s) => s.topics_policy === 1));
  });

  test("realm.json has every key Zulip's import reads without checking for it", () => {
    // Zulip's zerver/lib/import_realm.py, do_import_realm() (and the helpers it calls: remove_denormalized_recipient_column_from_data,
    // bulk_import_client, update_model_ids, re_map_foreign_keys, fix_datetime_fields, bulk_import_model, the realm_tables loop)
    // index data["…"] for these with no `if "…" in data` guard, so a realm.json without one fails the import with a KeyError.
    // zerver_usergroupmembership and zerver_groupgroupmembership are read unguarded whenever zerver_usergroup is present.
    const REQUIRED = [
      "import_source",
      "zerver_realm",
      "zerver_userprofile",
      "zerver_userprofile_mirrordummy",
      "zerver_userprofile_crossrealm",
      "zerver_stream",
      "zerver_huddle",
      "zerver_client",
      "zerver_recipient",
      "zerver_subscription",
      "zerver_realmauthenticationmethod",
      "zerver_defaultstream",
      "zerver_realmemoji",
      "zerver_realmdomain",
      "zerver_realmfilter",
      "zerver_realmplayground",
      "zerver_userpresence",
      "zerver_useractivity",
      "zerver_useractivityinterval",
      "zerver_customprofilefield",
      "zerver_customprofilefieldvalue",
      "zerver_reaction",
      "zerver_usergroup",
      "zerver_usergroupmembership",
      "zerver_groupgroupmembership",
    ];
    const realm = jsonOf(files, "realm.json");
    for (const key of REQUIRED) assert.ok(key in realm, key);
    for (const key of REQUIRED.filter((k) => k !== "import_source")) assert.ok(Array.isArray(realm[key]), key);
    assert.equal(realm.import_source, "zulip");
    // Fields of those rows it reads unguarded: each user's Django permission lists (deleted), the realm's channel settings
    // under their foreign-key names, and each attachment's message lists (import_attachments' format_m2m_data).
    for (const x of realm.zerver_userprofile as Json[]) {
      assert.deepEqual(x.user_permissions, [], String(x.id));
      assert.deepEqual(x.groups, [], String(x.id));
    }
    const zrealm = realm.zerver_realm[0];
    for (const name of ["new_stream_announcements_stream", "signup_announcements_stream", "zulip_update_announcements_stream", "moderation_request_channel"]) {
      assert.ok(name in zrealm, name);
      assert.ok(!(`${name}_id` in zrealm), `${name}_id`);
    }
    for (const name of ["authentication_methods", "user_settings_defaults", "default_email_address_visibility"]) assert.ok(!(name in zrealm), name);
    assert.deepEqual(
      (realm.zerver_realmauthenticationmethod as Json[]).map((m) => m.name).sort(),
      ["Dev", "Email"],
    );
    const [defaults] = realm.zerver_realmuserdefault as Json[];
    assert.equal(defaults.realm, t.realm.id);
    assert.equal(defaults.email_address_visibility, 3, "admins only: the default");
    assert.equal(typeof defaults.enter_sends, "boolean");
    // The statuses' and messages' clients all have rows.
    const clients = new Set((realm.zerver_client as Json[]).map((c) => c.id));
    for (const s of realm.zerver_userstatus as Json[]) assert.ok(clients.has(s.client), JSON.stringify(s));
    const attachments = jsonOf(files, "attachment.json");
    for (const a of attachments.zerver_attachment as Json[]) {
      assert.deepEqual(a.messages, [ids.publicMessage]);
      assert.deepEqual(a.scheduled_messages, []);
    }
    // A public export has nobody's drafts, presence or scheduled messages, and no bot's secrets.
    for (const key of ["zerver_draft", "zerver_userpresence", "zerver_scheduledmessage", "zerver_service", "zerver_botstoragedata", "zerver_botconfigdata"]) assert.deepEqual(realm[key], [], key);
  });

  test("messages: public channels' only, with everyone's flags", () => {
    const { messages, userMessages } = messagesOf(files);
    const messageIds = messages.map((m) => m.id);
    assert.ok(messageIds.includes(ids.publicMessage));
    for (const hidden of [ids.privateOwner, ids.privateMember, ids.dmOwnerMember, ids.dmMemberGuest]) assert.ok(!messageIds.includes(hidden));
    const m = messages.find((x) => x.id === ids.publicMessage);
    assert.equal(m.content, `public words [notes](${publicUpload.url})`);
    assert.equal(m.has_attachment, true);
    assert.equal(m.sender, u().member.id);
    assert.equal(m.subject, "export");
    const realm = jsonOf(files, "realm.json");
    assert.ok((realm.zerver_client as Json[]).some((c) => c.id === m.sending_client));
    const readers = sortedIds(userMessages.filter((x) => x.message === ids.publicMessage).map((x) => x.user_profile));
    assert.deepEqual(readers, sortedIds([u().owner.id, u().member.id, u().guest.id]));
    assert.ok(userMessages.every((x) => typeof x.flags_mask === "number"));
    // The public message's file, not the private one's.
    const attachments = jsonOf(files, "attachment.json");
    assert.deepEqual(
      (attachments.zerver_attachment as Json[]).map((a) => [a.path_id, a.owner, a.file_name]),
      [[publicUpload.pathId, u().member.id, "public-notes.txt"]],
    );
    assert.deepEqual(
      (attachments.zerver_attachment_messages as Json[]).map((l) => l.message),
      [ids.publicMessage],
    );
    const records = jsonOf(files, "uploads/records.json") as Json[];
    assert.deepEqual(
      records.map((r) => [r.path, r.user_profile_id, r.size]),
      [[publicUpload.pathId, u().member.id, "public file contents".length]],
    );
    assert.equal(files.get(`uploads/${publicUpload.pathId}`)?.toString("utf8"), "public file contents");
    assert.equal(files.get(`uploads/${privateUpload.pathId}`), undefined);
    // The custom emoji's image, and the member's uploaded avatar (original and both sizes).
    const realmData = jsonOf(files, "realm.json");
    const emoji = (realmData.zerver_realmemoji as Json[]).find((e) => e.name === "export_emoji");
    assert.equal(emoji.author, u().member.id);
    const emojiRecords = jsonOf(files, "emoji/records.json") as Json[];
    assert.deepEqual(
      emojiRecords.map((r) => [r.path, r.file_name, r.name, r.user_profile_id]),
      [[`${t.realm.id}/emoji/images/${emoji.file_name}`, emoji.file_name, "export_emoji", u().member.id]],
    );
    assert.deepEqual(files.get(`emoji/${emojiRecords[0].path}`), PNG);
    const avatarRecords = jsonOf(files, "avatars/records.json") as Json[];
    assert.deepEqual(
      avatarRecords.map((r) => r.user_profile_id),
      [u().member.id, u().member.id, u().member.id],
    );
    assert.ok(avatarRecords.some((r) => /\.original$/.test(r.path)));
    for (const r of avatarRecords) assert.equal(files.get(`avatars/${r.path}`)?.length, r.size);
    assert.equal((realmData.zerver_userprofile as Json[]).find((x) => x.id === u().member.id).avatar_source, "U");
  });

  test("the download is for administrators only", async () => {
    assert.equal((await download(u().admin, exp.export_url)).status, 200);
    for (const role of ["moderator", "member", "guest", "bot"] as const) assert.equal((await download(u()[role], exp.export_url)).status, 403, role);
    assert.equal((await download(null, exp.export_url)).status, 401);
    assert.equal((await download(u().owner, exp.export_url.replace(/[0-9a-f]{32}\//, "0".repeat(32) + "/"))).status, 404);
  });
});

describe("a full export with consent", () => {
  test("has public messages, and private channels' messages and DMs of consenting members, with only their flags", async () => {
    await forgetExports();
    await setConsent(u().owner, true);
    const exp = await exportAndWait(u().owner, ExportType.FULL_WITH_CONSENT);
    assert.equal(exp.export_type, ExportType.FULL_WITH_CONSENT);
    const { files } = await untar(Buffer.from(await (await download(u().owner, exp.export_url)).arrayBuffer()));
    const { messages, userMessages } = messagesOf(files);
    const messageIds = new Set(messages.map((m) => m.id));
    // The owner consented: what they sent or received is in; the member–guest DM (neither consented) is not.
    for (const included of [ids.publicMessage, ids.privateOwner, ids.privateMember, ids.dmOwnerMember]) assert.ok(messageIds.has(included), String(included));
    assert.ok(!messageIds.has(ids.dmMemberGuest));
    assert.deepEqual([...new Set(userMessages.map((x) => x.user_profile))], [u().owner.id]);
    const realm = jsonOf(files, "realm.json");
    const dm = messages.find((m) => m.id === ids.dmOwnerMember);
    const huddle = (realm.zerver_huddle as Json[]).find((h) => h.recipient === dm.recipient);
    assert.equal(huddle.group_size, 2);
    assert.equal(huddle.huddle_hash, crypto.createHash("sha1").update(sortedIds([u().owner.id, u().member.id]).join(",")).digest("hex"));
    // The member–guest conversation has no consenting member: not in the export.
    const memberSets = (realm.zerver_huddle as Json[]).map((h) =>
      JSON.stringify(sortedIds((realm.zerver_subscription as Json[]).filter((s) => s.recipient === h.recipient).map((s) => s.user_profile))),
    );
    assert.ok(memberSets.includes(JSON.stringify(sortedIds([u().owner.id, u().member.id]))));
    assert.ok(!memberSets.includes(JSON.stringify(sortedIds([u().member.id, u().guest.id]))));
    const members = (realm.zerver_subscription as Json[]).filter((s) => s.recipient === dm.recipient).map((s) => s.user_profile);
    assert.deepEqual(sortedIds(members), sortedIds([u().owner.id, u().member.id]));
    const owner = (realm.zerver_userprofile as Json[]).find((x) => x.id === u().owner.id);
    assert.equal(owner.allow_private_data_export, true);
    assert.equal((realm.zerver_userprofile as Json[]).find((x) => x.id === u().moderator.id).delivery_email, u().moderator.email);
    assert.equal(files.get(`uploads/${privateUpload.pathId}`)?.toString("utf8"), "private file contents");
    await setConsent(u().owner, false);
  });
});

describe("deleting an export", () => {
  test("removes the tarball, marks it deleted, tells administrators; errors for unknown, deleted, running and failed ones", async () => {
    await forgetExports();
    const exp = await exportAndWait(u().owner);
    const key = (await db().selectFrom("realm_exports").select("export_path").where("id", "=", exp.id).executeTakeFirstOrThrow()).export_path!;
    assert.ok(await t.services.files.open(key));
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "DELETE", `/export/realm/${exp.id}`));
    assert.equal(await t.services.files.open(key), undefined);
    const listed = (assertSuccess(await t.api(u().admin, "GET", "/export/realm")).exports as Json[]).find((e) => e.id === exp.id);
    assert.equal(listed.export_url, null);
    assert.equal(typeof listed.deleted_timestamp, "number");
    const events = t.events.filter((n) => n.event.type === "realm_export");
    assert.equal(events.length, 1);
    assert.deepEqual(sortedIds(events[0]!.userIds), adminIds);
    assert.deepEqual((events[0]!.event.exports as Json[]).find((e) => e.id === exp.id), listed);
    assert.equal((await download(u().owner, exp.export_url)).status, 404);

    assertError(await t.api(u().admin, "DELETE", `/export/realm/${exp.id}`), 400, "BAD_REQUEST", "Export already deleted");
    assertError(await t.api(u().admin, "DELETE", "/export/realm/999999"), 400, "BAD_REQUEST", "Invalid data export ID");
    const { id: running } = await db()
      .insertInto("realm_exports")
      .values({ realm_id: t.realm.id, acting_user_id: u().owner.id, type: 1, status: ExportStatus.STARTED, date_requested: 0 })
      .returning("id")
      .executeTakeFirstOrThrow();
    assertError(await t.api(u().admin, "DELETE", `/export/realm/${running}`), 400, "BAD_REQUEST", "Export still in progress");
    await db().deleteFrom("realm_exports").where("id", "=", running).execute();
  });
});

describe("retention", () => {
  test("a finished export's tarball is deleted when its retention ends, as a DELETE would", async () => {
    await forgetExports();
    const exp = await exportAndWait(u().owner);
    const key = (await db().selectFrom("realm_exports").select("export_path").where("id", "=", exp.id).executeTakeFirstOrThrow()).export_path!;
    const expiry = (await db().selectFrom("jobs").selectAll().where("name", "=", REALM_EXPORT_EXPIRE_JOB).execute()).filter((j) => JSON.parse(j.payload).export_id === exp.id);
    assert.equal(expiry.length, 1);
    assert.ok(expiry[0]!.run_at >= (exp.export_time + EXPORT_RETENTION_SECONDS) * 1000);
    t.clearEvents();
    await db().updateTable("jobs").set({ run_at: 0 }).where("id", "=", expiry[0]!.id).execute();
    t.services.jobs!.wake();
    // Other exports' expiry jobs stay queued for their 30 days: wait for this one only.
    for (let i = 0; i < 3000; i++) {
      if (!(await db().selectFrom("jobs").select("id").where("id", "=", expiry[0]!.id).executeTakeFirst())) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await jobsSettled(t.services, [REALM_EXPORT_JOB]);
    await t.services.queues.settled();
    assert.equal(await t.services.files.open(key), undefined);
    const listed = (assertSuccess(await t.api(u().admin, "GET", "/export/realm")).exports as Json[]).find((e) => e.id === exp.id);
    assert.equal(typeof listed.deleted_timestamp, "number");
    assert.equal(listed.export_url, null);
    assert.deepEqual((t.eventsFor(u().admin.id, "realm_export").at(-1)!.exports as Json[]).find((e) => e.id === exp.id), listed);
  });
});

describe("a failed export", () => {
  test("the file store refuses the tarball: failed_timestamp, an event, nothing to delete", async () => {
    await forgetExports();
    const files = t.services.files;
    const originalPut = files.put.bind(files);
    files.put = async (key, body) => {
      // As a full disk would refuse it.
      if (key.startsWith("exports/")) throw new Error("No space left on device");
      return originalPut(key, body);
    };
    t.clearEvents();
    let exp: Json;
    try {
      exp = await exportAndWait(u().owner);
    } finally {
      files.put = originalPut;
    }
    assert.equal(exp.pending, false);
    assert.equal(exp.export_url, null);
    assert.equal(typeof exp.failed_timestamp, "number");
    const events = t.events.filter((n) => n.event.type === "realm_export").map((n) => (n.event.exports as Json[]).find((e) => e.id === exp.id));
    assert.deepEqual(events, [{ ...exp, pending: true, failed_timestamp: null }, exp]);
    const job = await db().selectFrom("jobs").selectAll().where("name", "=", REALM_EXPORT_JOB).where("status", "=", "failed").orderBy("id", "desc").executeTakeFirstOrThrow();
    assert.match(job.last_error ?? "", /No space left on device/);
    assertError(await t.api(u().owner, "DELETE", `/export/realm/${exp.id}`), 400, "BAD_REQUEST", "Export failed, nothing to delete");
  });
});

describe("exporting to a file", () => {
  test("the operator's full export has every message and everyone's flags, with progress", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-export-"));
    try {
      const output = path.join(dir, "org.tar.gz");
      const progress: string[] = [];
      const stats = await exportRealmToFile(t.services, t.realm, ExportType.FULL_WITHOUT_CONSENT, output, (what) => progress.push(what));
      assert.ok(progress.includes("realm.json"));
      const { top, files } = await untar(fs.readFileSync(output));
      assert.deepEqual([...top], ["org"]);
      const { messages, userMessages } = messagesOf(files);
      assert.equal(stats.messages, messages.length);
      const messageIds = new Set(messages.map((m) => m.id));
      for (const id of Object.values(ids).filter((id) => id !== ids.publicChannel && id !== ids.privateChannel)) assert.ok(messageIds.has(id));
      assert.ok(userMessages.some((x) => x.user_profile === u().guest.id && x.message === ids.dmMemberGuest));
      // Not listed by the API (no acting user), as Zulip's command-line exports are not.
      const listed = assertSuccess(await t.api(u().owner, "GET", "/export/realm")).exports as Json[];
      assert.ok(listed.every((e) => e.acting_user_id !== null));
      await assert.rejects(exportRealmToFile(t.services, t.realm, ExportType.PUBLIC, output, () => {}), /Refusing to overwrite/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the full export has drafts, presence, scheduled messages, submessages and bots' services, storage and configuration, in Zulip's tables", async () => {
    const recipient = await db().selectFrom("recipients").select("id").where("channel_id", "=", ids.publicChannel!).executeTakeFirstOrThrow();
    const now = t.services.now();
    await db().deleteFrom("user_presence").where("user_id", "=", u().member.id).execute();
    await db().insertInto("user_presence").values({ user_id: u().member.id, realm_id: t.realm.id, last_connected_time: now - 60, last_active_time: now - 120, last_update_id: 7 }).execute();
    const draft = await db().insertInto("drafts").values({ user_id: u().member.id, recipient_id: recipient.id, topic: "export", content: "unsent words", last_edit_time_ms: 1700000000500 }).returning("id").executeTakeFirstOrThrow();
    const scheduled = await db()
      .insertInto("scheduled_messages")
      .values({ realm_id: t.realm.id, sender_id: u().member.id, delivery_type: 1, recipient_id: recipient.id, channel_id: ids.publicChannel!, topic: "later", content: "words for later", rendered_content: "<p>words for later</p>", sending_client: "scheduler test client", read_by_sender: true, scheduled_timestamp: now + 3600, request_timestamp: now })
      .returning("id")
      .executeTakeFirstOrThrow();
    const submessage = await db().insertInto("submessages").values({ message_id: ids.publicMessage!, sender_id: u().member.id, msg_type: "widget", content: '{"type":"vote"}' }).returning("id").executeTakeFirstOrThrow();
    const service = await db().insertInto("bot_services").values({ user_id: u().bot.id, name: "helper", base_url: "https://bots.example/hook", token: "s3cret", interface: 1 }).returning("id").executeTakeFirstOrThrow();
    await db().insertInto("bot_storage").values({ bot_user_id: u().bot.id, key: "count", value: "3" }).execute();
    await db().insertInto("bot_config").values({ bot_user_id: u().bot.id, key: "api_key", value: "k" }).execute();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-export-"));
    try {
      const output = path.join(dir, "personal.tar.gz");
      await exportRealmToFile(t.services, t.realm, ExportType.FULL_WITHOUT_CONSENT, output, () => {});
      const { files } = await untar(fs.readFileSync(output));
      const realm = jsonOf(files, "realm.json");
      assert.deepEqual(
        (realm.zerver_userpresence as Json[]).filter((p) => p.user_profile === u().member.id).map((p) => [p.realm, p.last_connected_time, p.last_active_time, p.last_update_id]),
        [[t.realm.id, now - 60, now - 120, 7]],
      );
      assert.deepEqual((realm.zerver_draft as Json[]).find((d) => d.id === draft.id), { id: draft.id, user_profile: u().member.id, recipient: recipient.id, topic: "export", content: "unsent words", last_edit_time: 1700000000.5 });
      const sm = (realm.zerver_scheduledmessage as Json[]).find((m) => m.id === scheduled.id);
      assert.deepEqual([sm.sender, sm.recipient, sm.stream, sm.subject, sm.content, sm.scheduled_timestamp, sm.delivered, sm.has_attachment, sm.delivery_type], [u().member.id, recipient.id, ids.publicChannel, "later", "words for later", now + 3600, false, false, 1]);
      assert.equal((realm.zerver_client as Json[]).find((c) => c.id === sm.sending_client)?.name, "scheduler test client");
      assert.deepEqual((realm.zerver_submessage as Json[]).find((x) => x.id === submessage.id), { id: submessage.id, message: ids.publicMessage, sender: u().member.id, msg_type: "widget", content: '{"type":"vote"}' });
      assert.deepEqual(realm.zerver_service, [{ id: service.id, user_profile: u().bot.id, name: "helper", base_url: "https://bots.example/hook", token: "s3cret", interface: 1 }]);
      assert.deepEqual((realm.zerver_botstoragedata as Json[]).map((b) => [b.bot_profile, b.key, b.value]), [[u().bot.id, "count", "3"]]);
      assert.deepEqual((realm.zerver_botconfigdata as Json[]).map((b) => [b.bot_profile, b.key, b.value]), [[u().bot.id, "api_key", "k"]]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await db().deleteFrom("drafts").where("id", "=", draft.id).execute();
      await db().deleteFrom("scheduled_messages").where("id", "=", scheduled.id).execute();
      await db().deleteFrom("submessages").where("id", "=", submessage.id).execute();
      await db().deleteFrom("bot_services").where("id", "=", service.id).execute();
      await db().deleteFrom("bot_storage").where("bot_user_id", "=", u().bot.id).execute();
      await db().deleteFrom("bot_config").where("bot_user_id", "=", u().bot.id).execute();
    }
  });

  test("messages are written MESSAGE_CHUNK_SIZE to a file, ids ascending", async () => {
    const recipient = await db().selectFrom("recipients").select("id").where("channel_id", "=", ids.publicChannel!).executeTakeFirstOrThrow();
    const rows = Array.from({ length: MESSAGE_CHUNK_SIZE + 5 }, (_, i) => ({
      realm_id: t.realm.id,
      sender_id: u().member.id,
      recipient_id: recipient.id,
      channel_id: ids.publicChannel,
      topic: "bulk",
      topic_key: "bulk",
      content: `bulk ${i}`,
      rendered_content: `<p>bulk ${i}</p>`,
      date_sent: t.services.now(),
      sending_client: "test",
      last_edit_time: null,
      last_moved_time: null,
      edit_history: null,
    }));
    for (let i = 0; i < rows.length; i += 200) await db().insertInto("messages").values(rows.slice(i, i + 200)).execute();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-export-"));
    try {
      const output = path.join(dir, "bulk.tar.gz");
      const stats = await exportRealmToFile(t.services, t.realm, ExportType.PUBLIC, output, () => {});
      const { files } = await untar(fs.readFileSync(output));
      const { messages, chunks } = messagesOf(files);
      const total = Number((await db().selectFrom("messages").select((eb) => eb.fn.countAll<number>().as("n")).where("channel_id", "=", ids.publicChannel!).executeTakeFirstOrThrow()).n);
      assert.equal(messages.length, total);
      assert.equal(stats.messages, total);
      assert.equal(chunks, Math.ceil(total / MESSAGE_CHUNK_SIZE));
      assert.ok(chunks >= 2);
      assert.equal(jsonOf(files, "messages-000001.json").zerver_message.length, MESSAGE_CHUNK_SIZE);
      assert.equal(messages.filter((m) => m.subject === "bulk").length, MESSAGE_CHUNK_SIZE + 5);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("`parley export` on the command line", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-cli-export-"));
    const schema = PG_URL ? `cli_${crypto.randomBytes(6).toString("hex")}` : undefined;
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.homedir(), DATA_DIR: dataDir };
    if (PG_URL) Object.assign(env, { DATABASE_URL: PG_URL, PG_SCHEMA: schema });
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["--import", "tsx", "src/cli.ts", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.on("exit", (code) => resolve({ code, stdout, stderr }));
      });
    try {
      const init = await run(["init", "--org-name", "CLI Org", "--owner-email", "cli-owner@example.com", "--owner-password", "cli-owner-password-1"]);
      assert.equal(init.code, 0, init.stderr);
      const output = path.join(dataDir, "cli-export.tar.gz");
      const result = await run(["export", output, "--public"]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /wrote realm\.json/);
      assert.match(result.stdout, /Exported 0 messages/);
      const { files } = await untar(fs.readFileSync(output));
      const realm = jsonOf(files, "realm.json");
      assert.equal(realm.zerver_realm[0].name, "CLI Org");
      assert.equal(jsonOf(files, "migration_status.json").zulip_version, SERVICE_VERSION);
      // For a Zulip server of another major version.
      const forZulip12 = path.join(dataDir, "for-zulip-12.tar.gz");
      const v12 = await run(["export", forZulip12, "--zulip-version", "12.1"]);
      assert.equal(v12.code, 0, v12.stderr);
      assert.match(v12.stdout, /wrote migration_status\.json/);
      const v12Files = (await untar(fs.readFileSync(forZulip12))).files;
      assert.deepEqual(jsonOf(v12Files, "migration_status.json"), { migrations_by_app: {}, zulip_version: "12.1" });
      // The fields Zulip 12's models added are written for it.
      const v12Realm = jsonOf(v12Files, "realm.json");
      assert.equal(typeof v12Realm.zerver_realm[0].workplace_users_group, "number");
      assert.ok((v12Realm.zerver_userprofile as Json[]).every((x) => "web_inbox_show_channel_folders" in x));
      const badVersion = await run(["export", path.join(dataDir, "bad.tar.gz"), "--zulip-version", "twelve"]);
      assert.equal(badVersion.code, 2);
      assert.match(badVersion.stderr, /--zulip-version takes a Zulip version/);
      assert.ok((realm.zerver_userprofile as Json[]).some((x) => x.delivery_email === "cli-owner@example.com"));
      const again = await run(["export", output]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /Refusing to overwrite/);
      const usage = await run(["export", output, "--public", "--full"]);
      assert.equal(usage.code, 2);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (schema) await dropPgSchema(schema);
    }
  });
});
