// API-level tests of channel folders: POST /channel_folders/create,
// GET /channel_folders, PATCH /channel_folders/{id} (rename, describe,
// archive, unarchive) and PATCH /channel_folders (reorder), with their
// permissions, errors and channel_folder events.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Notification } from "../src/events/notifier.ts";
import { CHANNEL_GROUP_SETTING_NAMES as CHANNEL_GROUP_SETTING_COLUMNS } from "../src/domain/channels.ts";
import type { ApiChannelFolder } from "../src/queries/channel-folders.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, sortedIds, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

/** Every write in these tests happens at this UNIX time, so date_created is exact. */
const NOW = 1_750_000_000;

let t: TestApp;

before(async () => {
  t = await startTestApp();
  t.services.now = () => NOW;
});
after(() => t?.close());

// ---------------------------------------------------------------------------
// Helpers

const ADMINS = ["owner", "admin"] as const;
const NON_ADMINS = ["moderator", "member", "guest", "bot"] as const;
const EVERYONE = [...ADMINS, ...NON_ADMINS] as const;
const OBJECT_KEYS = ["id", "name", "description", "rendered_description", "order", "date_created", "creator_id", "is_archived"];


type ExpectedFolder = ApiChannelFolder;

function expectedFolder(id: number, name: string, description: string, rendered: string, creatorId: number, extra: Partial<ExpectedFolder> = {}): ExpectedFolder {
  return { id, name, description, rendered_description: rendered, order: id, date_created: NOW, creator_id: creatorId, is_archived: false, ...extra };
}

async function create(app: TestApp, user: TestUser, name: string, description = ""): Promise<number> {
  const body = assertSuccess(await app.api(user, "POST", "/channel_folders/create", { name, description }));
  assert.equal(typeof body.channel_folder_id, "number");
  return body.channel_folder_id as number;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function list(app: TestApp, user: TestUser, params: Record<string, unknown> = {}): Promise<any[]> {
  return assertSuccess(await app.api(user, "GET", "/channel_folders", params)).channel_folders;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function folderById(id: number): Promise<any> {
  const found = (await list(t, t.users.owner, { include_archived: true })).find((f) => f.id === id);
  assert.ok(found, `folder ${id} is listed`);
  return found;
}

async function folderRow(app: TestApp, id: number) {
  return app.services.storage.db.selectFrom("channel_folders").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

async function folderCount(app: TestApp): Promise<number> {
  const rows = await app.services.storage.db.selectFrom("channel_folders").select("id").where("realm_id", "=", app.realm.id).execute();
  return rows.length;
}



function folderNotifications(app: TestApp, op?: string): Notification[] {
  return app.events.filter((n) => n.event.type === "channel_folder" && (op === undefined || n.event.op === op));
}

/** Asserts that exactly these events were sent, in order, each to every active user. */
async function assertFolderEvents(app: TestApp, expected: readonly Record<string, unknown>[]): Promise<void> {
  const sent = folderNotifications(app);
  assert.deepEqual(
    sent.map((n) => n.event),
    expected,
  );
  const everyone = await app.activeUserIds();
  for (const n of sent) assert.deepEqual(sortedIds(n.userIds), everyone, `recipients of ${JSON.stringify(n.event)}`);
  for (const key of EVERYONE) {
    assert.equal(app.eventsFor(app.users[key].id, "channel_folder").length, expected.length, `${key} gets every event`);
  }
}

/** Inserts a channel filed in `folderId` straight into the database (channels have no API here yet). */
async function insertChannel(folderId: number | null, isArchived: boolean): Promise<number> {
  const db = t.services.storage.db;
  const group = await db
    .selectFrom("user_groups")
    .select("id")
    .where("realm_id", "=", t.realm.id)
    .where("name", "=", "role:everyone")
    .executeTakeFirstOrThrow();
  const settings = Object.fromEntries(CHANNEL_GROUP_SETTING_COLUMNS.map((c) => [c, String(group.id)])) as Record<
    (typeof CHANNEL_GROUP_SETTING_COLUMNS)[number],
    string
  >;
  const name = uniqueName("channel");
  const row = await db
    .insertInto("channels")
    .values({
      realm_id: t.realm.id,
      name,
      name_key: name.toLowerCase(),
      description: "",
      rendered_description: "",
      topics_policy: "inherit",
      date_created: NOW,
      folder_id: folderId,
      is_archived: isArchived,
      ...settings,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return row.id;
}

async function setChannelFolder(channelId: number, folderId: number | null): Promise<void> {
  await t.services.storage.db.updateTable("channels").set({ folder_id: folderId }).where("id", "=", channelId).execute();
}

function assertNotAdmin(response: ApiResponse): void {
  assertError(response, 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
}

function assertBad(response: ApiResponse, msg: string): void {
  assertError(response, 400, "BAD_REQUEST", msg);
}

/** A fresh organization for tests that need to know every folder in it. */
function freshApp(): { app: () => TestApp } {
  let app: TestApp | undefined;
  before(async () => {
    app = await startTestApp();
    app.services.now = () => NOW;
  });
  after(() => app?.close());
  return { app: () => app! };
}

// ---------------------------------------------------------------------------
// 1. POST /channel_folders/create

describe("POST /channel_folders/create", () => {
  test("an administrator creates a folder: channel_folder_id, and every field of the stored folder", async () => {
    t.clearEvents();
    const response = await t.api(t.users.admin, "POST", "/channel_folders/create", { name: "Frontend", description: "Web & mobile <clients>" });
    const body = assertSuccess(response);
    assert.deepEqual(Object.keys(body).sort(), ["channel_folder_id", "msg", "result"]);
    const id = body.channel_folder_id as number;
    assert.ok(Number.isInteger(id) && id > 0);

    const expected = expectedFolder(id, "Frontend", "Web & mobile <clients>", "<p>Web &amp; mobile &lt;clients&gt;</p>", t.users.admin.id);
    const got = await folderById(id);
    assert.deepEqual(got, expected);
    assert.deepEqual(Object.keys(got), OBJECT_KEYS);
    // The stored row agrees: order is the new ID.
    const row = await folderRow(t, id);
    assert.equal(row.sort_order, id);
    assert.equal(row.realm_id, t.realm.id);
    assert.equal(row.is_archived, false);

    await assertFolderEvents(t, [{ type: "channel_folder", op: "add", channel_folder: expected }]);
    const event = t.eventsFor(t.users.guest.id, "channel_folder", "add")[0]!;
    assert.deepEqual(Object.keys(event.channel_folder as object), OBJECT_KEYS);
  });

  test("an owner creates a folder with an empty description: rendered_description is empty", async () => {
    const name = uniqueName("Owner folder");
    const id = await create(t, t.users.owner, name, "");
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "", "", t.users.owner.id));
  });

  test("the name is stored as given, surrounding spaces included", async () => {
    const id = await create(t, t.users.admin, "  Spaced folder ", "x");
    assert.equal((await folderById(id)).name, "  Spaced folder ");
  });

  test("moderators, members, guests and bots may not create folders; nothing is stored or sent", async () => {
    const before = await folderCount(t);
    t.clearEvents();
    for (const key of NON_ADMINS) {
      assertNotAdmin(await t.api(t.users[key], "POST", "/channel_folders/create", { name: uniqueName(`By ${key}`), description: "" }));
    }
    assert.equal(await folderCount(t), before);
    assert.equal(folderNotifications(t).length, 0);
  });

  test("the event goes to every active user, bots and guests included, but not to deactivated users", async () => {
    const leaving = await t.createUser(uniqueName("Leaving User"));
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${leaving.id}`));
    t.clearEvents();
    const name = uniqueName("Announced");
    const id = await create(t, t.users.owner, name, "d");
    const adds = folderNotifications(t, "add");
    assert.equal(adds.length, 1);
    const recipients = sortedIds(adds[0]!.userIds);
    assert.deepEqual(recipients, await t.activeUserIds());
    assert.ok(!recipients.includes(leaving.id), "a deactivated user is not told");
    for (const key of EVERYONE) {
      assert.deepEqual(t.eventsFor(t.users[key].id, "channel_folder", "add"), [
        { type: "channel_folder", op: "add", channel_folder: expectedFolder(id, name, "d", "<p>d</p>", t.users.owner.id) },
      ]);
    }
  });

  test("name length: 60 characters (code points) are accepted, 61 are refused", async () => {
    const sixty = `${uniqueName("L")} `.padEnd(60, "x");
    assert.equal(sixty.length, 60);
    const id = await create(t, t.users.admin, sixty);
    assert.equal((await folderById(id)).name, sixty);
    assertBad(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: "y".repeat(61), description: "" }), "name is too long (limit: 60 characters)");
    // Emoji are one character each, as Zulip counts them, though two UTF-16 units.
    const emoji = "😀".repeat(60);
    const emojiId = await create(t, t.users.admin, emoji);
    assert.equal((await folderById(emojiId)).name, emoji);
    assertBad(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: "😃".repeat(61), description: "" }), "name is too long (limit: 60 characters)");
  });

  test("description length: 1024 characters are accepted, 1025 are refused", async () => {
    const id = await create(t, t.users.admin, uniqueName("Long description"), "d".repeat(1024));
    assert.equal((await folderById(id)).description, "d".repeat(1024));
    assertBad(
      await t.api(t.users.admin, "POST", "/channel_folders/create", { name: uniqueName("Too long description"), description: "d".repeat(1025) }),
      "description is too long (limit: 1024 characters)",
    );
  });

  test("an empty or blank name is refused", async () => {
    for (const name of ["", "   ", "\t \n"]) {
      assertBad(await t.api(t.users.admin, "POST", "/channel_folders/create", { name, description: "" }), "Channel folder name can't be empty.");
    }
  });

  test("a name with an unprintable character is refused with its 1-based position", async () => {
    const cases: [string, number][] = [
      ["abc\u0002", 4],
      ["a\u0007b", 2],
      ["\u001bescape", 1],
      ["tab\there", 4],
      ["😀\u0001", 2], // positions count code points, not UTF-16 units
      ["ok\uFFFE", 3], // a Unicode noncharacter
      ["x\uFDD0", 2],
      ["x\u007f", 2],
    ];
    for (const [name, position] of cases) {
      assertBad(
        await t.api(t.users.admin, "POST", "/channel_folders/create", { name, description: "" }),
        `Invalid character in channel folder name, at position ${position}.`,
      );
    }
  });

  test("a name in use, whatever its case and even by an archived folder, is refused", async () => {
    const name = uniqueName("Backend");
    const id = await create(t, t.users.admin, name);
    const before = await folderCount(t);
    for (const dup of [name, name.toUpperCase(), name.toLowerCase()]) {
      assertBad(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: dup, description: "" }), "Channel folder name already in use");
    }
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: true }));
    assertBad(await t.api(t.users.owner, "POST", "/channel_folders/create", { name: name.toUpperCase(), description: "" }), "Channel folder name already in use");
    assert.equal(await folderCount(t), before);
  });

  test("missing name or description gives REQUEST_VARIABLE_MISSING", async () => {
    assertError(await t.api(t.users.admin, "POST", "/channel_folders/create", { description: "" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'name' argument", {
      var_name: "name",
    });
    assertError(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: uniqueName("No description") }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'description' argument", {
      var_name: "description",
    });
  });

  test("JSON and multipart bodies work; unknown parameters are reported as ignored", async () => {
    const name = uniqueName("Multipart");
    const body = assertSuccess(await t.api(t.users.admin, "POST", "/channel_folders/create", { name, description: "m", color: "red" }, { encoding: "multipart" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["color"]);
    assert.equal((await folderById(body.channel_folder_id)).name, name);
    const jsonName = uniqueName("Json");
    const jsonBody = assertSuccess(await t.api(t.users.admin, "POST", "/channel_folders/create", { name: jsonName, description: "j" }, { encoding: "json" }));
    assert.equal((await folderById(jsonBody.channel_folder_id)).name, jsonName);
  });

  test("needs credentials", async () => {
    assertError(await t.api(null, "POST", "/channel_folders/create", { name: "x", description: "" }), 401, "UNAUTHORIZED");
  });
});

// ---------------------------------------------------------------------------
// 2. GET /channel_folders (in an organization of its own, to know every folder)

describe("GET /channel_folders", () => {
  const fresh = freshApp();

  test("an organization without folders lists none", async () => {
    const app = fresh.app();
    const body = assertSuccess(await app.api(app.users.member, "GET", "/channel_folders"));
    assert.deepEqual(body, { result: "success", msg: "", channel_folders: [] });
  });

  test("archived folders are listed only with include_archived=true; everyone may read, guests and bots included", async () => {
    const app = fresh.app();
    const a = await create(app, app.users.admin, "Alpha", "First");
    const b = await create(app, app.users.owner, "Beta", "");
    const c = await create(app, app.users.admin, "Gamma", "Third & last");
    assertSuccess(await app.api(app.users.admin, "PATCH", `/channel_folders/${b}`, { is_archived: true }));
    const alpha = expectedFolder(a, "Alpha", "First", "<p>First</p>", app.users.admin.id);
    const beta = expectedFolder(b, "Beta", "", "", app.users.owner.id, { is_archived: true });
    const gamma = expectedFolder(c, "Gamma", "Third & last", "<p>Third &amp; last</p>", app.users.admin.id);
    for (const key of EVERYONE) {
      const user = app.users[key];
      assert.deepEqual(await list(app, user), [alpha, gamma], key);
      assert.deepEqual(await list(app, user, { include_archived: false }), [alpha, gamma], key);
      assert.deepEqual(await list(app, user, { include_archived: true }), [alpha, beta, gamma], key);
    }
    for (const folder of await list(app, app.users.guest, { include_archived: true })) assert.deepEqual(Object.keys(folder), OBJECT_KEYS);
  });

  test("folders are sorted by order, then by ID", async () => {
    const app = fresh.app();
    const all = (await list(app, app.users.admin, { include_archived: true })).map((f) => f.id as number);
    assert.equal(all.length, 3);
    const [a, b, c] = all as [number, number, number];
    assertSuccess(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: [c, a, b] }));
    assert.deepEqual(
      (await list(app, app.users.guest, { include_archived: true })).map((f) => [f.id, f.order]),
      [
        [c, 0],
        [a, 1],
        [b, 2],
      ],
    );
    // Equal orders fall back to the ID.
    await app.services.storage.db.updateTable("channel_folders").set({ sort_order: 5 }).where("realm_id", "=", app.realm.id).execute();
    assert.deepEqual(
      (await list(app, app.users.member, { include_archived: true })).map((f) => f.id),
      [a, b, c],
    );
  });

  test("include_archived must be a JSON boolean", async () => {
    const app = fresh.app();
    assertBad(await app.api(app.users.member, "GET", "/channel_folders", { include_archived: "yes" }), 'Argument "include_archived" is not valid JSON.');
    assertBad(await app.api(app.users.member, "GET", "/channel_folders", { include_archived: 1 }), "include_archived is not a boolean");
    assertBad(await app.api(app.users.member, "GET", "/channel_folders", { include_archived: '"true"' }), "include_archived is not a boolean");
  });

  test("needs credentials", async () => {
    const app = fresh.app();
    assertError(await app.api(null, "GET", "/channel_folders"), 401, "UNAUTHORIZED");
  });
});

// ---------------------------------------------------------------------------
// 3. PATCH /channel_folders/{channel_folder_id}

describe("PATCH /channel_folders/{channel_folder_id}", () => {
  test("an administrator renames a folder: success, the new name, one update event to everyone", async () => {
    const id = await create(t, t.users.owner, uniqueName("Old name"), "kept");
    const name = uniqueName("New name");
    t.clearEvents();
    const body = assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { name }));
    assert.deepEqual(body, { result: "success", msg: "" });
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "kept", "<p>kept</p>", t.users.owner.id));
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { name } }]);
  });

  test("a case-only rename is allowed", async () => {
    const name = uniqueName("design");
    const id = await create(t, t.users.admin, name);
    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/channel_folders/${id}`, { name: name.toUpperCase() }));
    assert.equal((await folderById(id)).name, name.toUpperCase());
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { name: name.toUpperCase() } }]);
  });

  test("a new description: description and rendered_description change, one event with both", async () => {
    const name = uniqueName("Described");
    const id = await create(t, t.users.admin, name, "before");
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { description: "after <b>" }));
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "after <b>", "<p>after &lt;b&gt;</p>", t.users.admin.id));
    await assertFolderEvents(t, [
      { type: "channel_folder", op: "update", channel_folder_id: id, data: { description: "after <b>", rendered_description: "<p>after &lt;b&gt;</p>" } },
    ]);
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { description: "" }));
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "", "", t.users.admin.id));
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { description: "", rendered_description: "" } }]);
  });

  test("active → archived → active, with an update event for each transition", async () => {
    const name = uniqueName("Lifecycle");
    const id = await create(t, t.users.admin, name, "life");
    const active = expectedFolder(id, name, "life", "<p>life</p>", t.users.admin.id);

    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: true }));
    assert.deepEqual(await folderById(id), { ...active, is_archived: true });
    assert.ok(!(await list(t, t.users.member)).some((f) => f.id === id), "hidden from the default list");
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { is_archived: true } }]);

    // Archiving again changes nothing and sends nothing.
    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/channel_folders/${id}`, { is_archived: true }));
    assert.equal((await folderRow(t, id)).is_archived, true);
    await assertFolderEvents(t, []);

    // An archived folder can still be renamed.
    t.clearEvents();
    const renamed = uniqueName("Archived rename");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { name: renamed }));
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { name: renamed } }]);

    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/channel_folders/${id}`, { is_archived: false }));
    assert.deepEqual(await folderById(id), { ...active, name: renamed });
    assert.ok((await list(t, t.users.member)).some((f) => f.id === id), "listed again");
    await assertFolderEvents(t, [{ type: "channel_folder", op: "update", channel_folder_id: id, data: { is_archived: false } }]);

    t.clearEvents();
    assertSuccess(await t.api(t.users.owner, "PATCH", `/channel_folders/${id}`, { is_archived: false }));
    await assertFolderEvents(t, []);
  });

  test("name, description and is_archived in one call: all change, one event each, in that order", async () => {
    const id = await create(t, t.users.admin, uniqueName("Triple"), "one");
    const name = uniqueName("Triple renamed");
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { name, description: "two", is_archived: true }));
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "two", "<p>two</p>", t.users.admin.id, { is_archived: true }));
    await assertFolderEvents(t, [
      { type: "channel_folder", op: "update", channel_folder_id: id, data: { name } },
      { type: "channel_folder", op: "update", channel_folder_id: id, data: { description: "two", rendered_description: "<p>two</p>" } },
      { type: "channel_folder", op: "update", channel_folder_id: id, data: { is_archived: true } },
    ]);
  });

  test("no parameters, or values equal to the current ones, succeed without change or event", async () => {
    const name = uniqueName("Unchanged");
    const id = await create(t, t.users.admin, name, "same");
    const before = await folderById(id);
    t.clearEvents();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`));
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { name, description: "same", is_archived: false }));
    assert.deepEqual(await folderById(id), before);
    await assertFolderEvents(t, []);
  });

  test("archiving is refused while a channel, even an archived one, is in the folder", async () => {
    const name = uniqueName("In use");
    const id = await create(t, t.users.admin, name, "busy");
    const activeChannel = await insertChannel(id, false);
    const archivedChannel = await insertChannel(id, true);
    const refusal = "You need to remove all the channels from this folder to archive it.";
    t.clearEvents();
    assertBad(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: true }), refusal);

    // Only the archived channel left: still refused. Other changes in the same call are not made either.
    await setChannelFolder(activeChannel, null);
    assertBad(await t.api(t.users.owner, "PATCH", `/channel_folders/${id}`, { is_archived: true, name: uniqueName("Not applied"), description: "nor this" }), refusal);
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "busy", "<p>busy</p>", t.users.admin.id));
    await assertFolderEvents(t, []);

    // A channel in another folder does not count.
    const other = await create(t, t.users.admin, uniqueName("Other"));
    await setChannelFolder(archivedChannel, other);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: true }));
    assert.equal((await folderRow(t, id)).is_archived, true);
    // Unarchiving is never blocked by channels.
    await setChannelFolder(activeChannel, id);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: false }));
    assert.equal((await folderRow(t, id)).is_archived, false);
  });

  test("an unknown or malformed folder ID is refused", async () => {
    for (const path of ["/channel_folders/999999", "/channel_folders/0", "/channel_folders/99999999999", "/channel_folders/-3"]) {
      assertBad(await t.api(t.users.admin, "PATCH", path, { name: uniqueName("Nowhere") }), "Invalid channel folder ID");
    }
    assertBad(await t.api(t.users.admin, "PATCH", "/channel_folders/abc", { name: "x" }), "channel_folder_id is not an integer");
  });

  test("invalid names and descriptions are refused and change nothing", async () => {
    const name = uniqueName("Target");
    const id = await create(t, t.users.admin, name, "orig");
    const taken = uniqueName("Taken");
    const takenId = await create(t, t.users.admin, taken);
    const archivedName = uniqueName("Archived taken");
    const archivedId = await create(t, t.users.admin, archivedName);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${archivedId}`, { is_archived: true }));
    const before = await folderById(id);
    t.clearEvents();
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "" }, "Channel folder name can't be empty."],
      [{ name: "  " }, "Channel folder name can't be empty."],
      [{ name: "z".repeat(61) }, "name is too long (limit: 60 characters)"],
      [{ name: "bad\u0001name" }, "Invalid character in channel folder name, at position 4."],
      // NUL is refused for every text parameter (PostgreSQL cannot store it), before any field's own checks.
      [{ name: "bad\u0000name" }, "name contains a NUL character"],
      [{ description: "nul\u0000here" }, "description contains a NUL character"],
      [{ name: taken }, "Channel folder name already in use"],
      [{ name: taken.toLowerCase() }, "Channel folder name already in use"],
      [{ name: archivedName.toUpperCase() }, "Channel folder name already in use"],
      [{ description: "d".repeat(1025) }, "description is too long (limit: 1024 characters)"],
      [{ name: uniqueName("Fine"), description: "d".repeat(1025) }, "description is too long (limit: 1024 characters)"],
    ];
    for (const [params, msg] of cases) {
      assertBad(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, params), msg);
    }
    assert.deepEqual(await folderById(id), before);
    assert.equal((await folderById(takenId)).name, taken);
    await assertFolderEvents(t, []);
  });

  test("is_archived must be a JSON boolean", async () => {
    const id = await create(t, t.users.admin, uniqueName("Bool"));
    assertBad(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: "yes" }), 'Argument "is_archived" is not valid JSON.');
    assertBad(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: 1 }), "is_archived is not a boolean");
    assertBad(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { is_archived: "null" }), "is_archived is not a boolean");
    assert.equal((await folderRow(t, id)).is_archived, false);
  });

  test("moderators, members, guests and bots may not update folders; owners and administrators may", async () => {
    const name = uniqueName("Guarded");
    const id = await create(t, t.users.admin, name, "g");
    t.clearEvents();
    for (const key of NON_ADMINS) {
      for (const params of [{ name: uniqueName(key) }, { description: "changed" }, { is_archived: true }, {}]) {
        assertNotAdmin(await t.api(t.users[key], "PATCH", `/channel_folders/${id}`, params));
      }
      // The permission check comes before the folder lookup.
      assertNotAdmin(await t.api(t.users[key], "PATCH", "/channel_folders/999999", { name: "x" }));
    }
    assert.deepEqual(await folderById(id), expectedFolder(id, name, "g", "<p>g</p>", t.users.admin.id));
    await assertFolderEvents(t, []);
    for (const key of ADMINS) {
      const newName = uniqueName(`Renamed by ${key}`);
      assertSuccess(await t.api(t.users[key], "PATCH", `/channel_folders/${id}`, { name: newName }));
      assert.equal((await folderById(id)).name, newName);
    }
  });

  test("unknown parameters are reported as ignored", async () => {
    const id = await create(t, t.users.admin, uniqueName("Ignored"));
    const body = assertSuccess(await t.api(t.users.admin, "PATCH", `/channel_folders/${id}`, { description: "x", zzz: 1, aaa: "b" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["aaa", "zzz"]);
    assert.equal((await folderById(id)).description, "x");
  });

  test("needs credentials", async () => {
    assertError(await t.api(null, "PATCH", "/channel_folders/1", { name: "x" }), 401, "UNAUTHORIZED");
  });
});

// ---------------------------------------------------------------------------
// 4. PATCH /channel_folders (reorder), in an organization of its own

describe("PATCH /channel_folders", () => {
  const fresh = freshApp();
  let a = 0;
  let b = 0;
  let c = 0;

  async function orders(app: TestApp): Promise<[number, number][]> {
    return (await list(app, app.users.admin, { include_archived: true })).map((f) => [f.id, f.order]);
  }

  test("every folder, archived ones included, takes its index in the list; a reorder event goes to everyone", async () => {
    const app = fresh.app();
    a = await create(app, app.users.admin, "A");
    b = await create(app, app.users.admin, "B");
    c = await create(app, app.users.admin, "C");
    assertSuccess(await app.api(app.users.admin, "PATCH", `/channel_folders/${b}`, { is_archived: true }));
    app.clearEvents();
    const body = assertSuccess(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: [c, b, a] }));
    assert.deepEqual(body, { result: "success", msg: "" });
    assert.deepEqual(await orders(app), [
      [c, 0],
      [b, 1],
      [a, 2],
    ]);
    assert.deepEqual(
      (await list(app, app.users.guest)).map((f) => f.id),
      [c, a],
    );
    await assertFolderEvents(app, [{ type: "channel_folder", op: "reorder", order: [c, b, a] }]);
  });

  test("a list missing any folder, even an archived one, is refused and changes nothing", async () => {
    const app = fresh.app();
    const before = await orders(app);
    app.clearEvents();
    for (const order of [[a, c], [a], [], [a, b], [999999, a, c]]) {
      assertBad(await app.api(app.users.admin, "PATCH", "/channel_folders", { order }), "Invalid order mapping.");
    }
    assert.deepEqual(await orders(app), before);
    await assertFolderEvents(app, []);
  });

  test("unknown IDs are ignored and a repeated ID takes its last position; the event carries the list as sent", async () => {
    const app = fresh.app();
    app.clearEvents();
    assertSuccess(await app.api(app.users.owner, "PATCH", "/channel_folders", { order: [a, 999999, b, a, c] }));
    assert.deepEqual(await orders(app), [
      [b, 2],
      [a, 3],
      [c, 4],
    ]);
    await assertFolderEvents(app, [{ type: "channel_folder", op: "reorder", order: [a, 999999, b, a, c] }]);
  });

  test("a folder created after a reorder gets its ID as order", async () => {
    const app = fresh.app();
    const d = await create(app, app.users.admin, "D");
    assert.equal((await list(app, app.users.member)).find((f) => f.id === d).order, d);
    assertSuccess(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: [d, c, b, a] }));
    assert.deepEqual(await orders(app), [
      [d, 0],
      [c, 1],
      [b, 2],
      [a, 3],
    ]);
  });

  test("order is required and must be a JSON list of integers", async () => {
    const app = fresh.app();
    assertError(await app.api(app.users.admin, "PATCH", "/channel_folders", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'order' argument", { var_name: "order" });
    assertBad(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: "nope" }), 'Argument "order" is not valid JSON.');
    assertBad(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: a }), "order is not a list");
    assertBad(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: [a, "b"] }), "order[1] is not an integer");
    assertBad(await app.api(app.users.admin, "PATCH", "/channel_folders", { order: [a, 1.5] }), "order[1] is not an integer");
  });

  test("moderators, members, guests and bots may not reorder; owners and administrators may", async () => {
    const app = fresh.app();
    const before = await orders(app);
    const ids = before.map(([id]) => id);
    app.clearEvents();
    for (const key of NON_ADMINS) {
      assertNotAdmin(await app.api(app.users[key], "PATCH", "/channel_folders", { order: [...ids].reverse() }));
    }
    assert.deepEqual(await orders(app), before);
    await assertFolderEvents(app, []);
    for (const key of ADMINS) {
      assertSuccess(await app.api(app.users[key], "PATCH", "/channel_folders", { order: [...ids].reverse() }));
      ids.reverse();
    }
    assert.deepEqual(await orders(app), before);
  });

  test("needs credentials", async () => {
    const app = fresh.app();
    assertError(await app.api(null, "PATCH", "/channel_folders", { order: [] }), 401, "UNAUTHORIZED");
  });
});
