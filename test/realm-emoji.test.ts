// Custom emoji: GET /realm/emoji, POST /realm/emoji/{emoji_name} (multipart
// image upload) and DELETE /realm/emoji/{emoji_name} — reply shapes, Zulip's
// name rules and errors, who may add and who may deactivate, the file count,
// size and image checks, the image served at its source_url, the
// `realm_emoji` events (to every active user), /register's realm_emoji, and
// custom emoji in Markdown.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, basicAuth, sortedIds, startTestApp, storedKeys, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let sys: Record<string, number>;
before(async () => {
  t = await startTestApp();
  sys = await t.systemGroupIds();
});
after(() => t?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const u = () => t.users;
const db = () => t.services.storage.db;

let counter = 0;
const uniqueEmoji = (prefix = "emoji") => `${prefix}_${++counter}`;

// A 1×1 PNG and a 1×1 GIF.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");
const GIF = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]);
const WEBP = Buffer.concat([Buffer.from("RIFF"), Buffer.from([26, 0, 0, 0]), Buffer.from("WEBPVP8L"), Buffer.alloc(14)]);

interface FilePart {
  field?: string;
  name?: string;
  content: Buffer | string;
  type?: string;
}

function formOf(files: FilePart[], fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files) {
    const bytes = typeof f.content === "string" ? f.content : new Uint8Array(f.content);
    form.append(f.field ?? "file", new Blob([bytes], f.type === undefined ? {} : { type: f.type }), f.name ?? "emoji.png");
  }
  return form;
}

/** POST /api/v1/realm/emoji/{rawPath}: `rawPath` goes into the URL as given (encode it yourself). */
async function postEmoji(user: TestUser | null, rawPath: string, files: FilePart[] = [{ content: PNG, type: "image/png" }], fields: Record<string, string> = {}): Promise<ApiResponse> {
  const headers: Record<string, string> = user ? { authorization: basicAuth(user.email, user.apiKey) } : {};
  const response = await fetch(`${t.url}/api/v1/realm/emoji/${rawPath}`, { method: "POST", body: formOf(files, fields), headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body };
}

const add = (user: TestUser, name: string, files?: FilePart[]) => postEmoji(user, encodeURIComponent(name), files);
const remove = (user: TestUser, name: string) => t.api(user, "DELETE", `/realm/emoji/${encodeURIComponent(name)}`);
const list = async (user: TestUser = u().member): Promise<Record<string, Json>> => assertSuccess(await t.api(user, "GET", "/realm/emoji")).emoji;

/** The realm's emoji named `name` (the active one, if any) as GET /realm/emoji shows it. */
async function emojiNamed(name: string): Promise<Json> {
  const all = Object.values(await list()).filter((e: Json) => e.name === name);
  return all.find((e: Json) => !e.deactivated) ?? all[all.length - 1];
}

/** The organization's stored emoji images, in whichever file store the app uses. */
const storedFiles = (): Promise<string[]> => storedKeys(t, `avatars/${t.realm.id}/emoji/images/`);

async function setRealmGroupSetting(name: string, value: unknown): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", { [name]: { new: value } }));
}

// ---------------------------------------------------------------------------

describe("POST /realm/emoji/{emoji_name}", () => {
  test("a member adds one: success reply, listed by GET /realm/emoji, image served at source_url", async () => {
    const name = uniqueEmoji("party");
    const reply = await add(u().member, name);
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    const emoji = await emojiNamed(name);
    const row = await db().selectFrom("realm_emoji").selectAll().where("name", "=", name).executeTakeFirstOrThrow();
    assert.deepEqual(emoji, {
      id: String(row.id),
      name,
      source_url: `/user_avatars/${t.realm.id}/emoji/images/${row.file_name}`,
      still_url: null,
      deactivated: false,
      author_id: u().member.id,
    });
    assert.match(row.file_name, /^[0-9a-f]{16}\.png$/);
    assert.equal((await list())[String(row.id)].name, name);

    // The image: no credentials needed, exactly the uploaded bytes, nothing runnable.
    const image = await fetch(t.url + emoji.source_url);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get("content-type"), "image/png");
    assert.equal(image.headers.get("x-content-type-options"), "nosniff");
    assert.match(image.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    assert.deepEqual(Buffer.from(await image.arrayBuffer()), PNG);
  });

  test("everyone in the organization sees the list, guests and bots included", async () => {
    const name = uniqueEmoji();
    assertSuccess(await add(u().admin, name));
    const byMember = await list(u().member);
    for (const user of [u().guest, u().bot, u().owner]) assert.deepEqual(await list(user), byMember);
    assert.ok(Object.values(byMember).some((e: Json) => e.name === name));
  });

  test("names: trimmed, spaces become underscores; Zulip's messages for bad ones", async () => {
    const name = uniqueEmoji("spaced");
    assertSuccess(await postEmoji(u().member, encodeURIComponent(`  ${name.replace("_", " ")} `)));
    assert.equal((await emojiNamed(name)).name, name);
    const bad = async (rawPath: string, msg: string) => assertError(await postEmoji(u().member, rawPath), 400, "BAD_REQUEST", msg);
    const chars = "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.";
    await bad("my_em*oji", chars);
    await bad("my_EMoji", chars);
    await bad("my.emoji", chars);
    await bad("emoji%2Fslash", chars);
    await bad(encodeURIComponent("ünicode"), chars);
    await bad("my_emoji_", "Emoji names must end with either a letter or digit.");
    await bad("my-emoji-", "Emoji names must end with either a letter or digit.");
    await bad("%20", "Emoji name is missing");
    await bad("%20%20", "Emoji name is missing");
    assertSuccess(await postEmoji(u().member, `${uniqueEmoji("dash")}-x`));
    assertSuccess(await postEmoji(u().member, "42"));
  });

  test("guests and bots never; the name is not even looked at", async () => {
    for (const rawPath of [uniqueEmoji(), "Bad*Name"]) {
      assertError(await postEmoji(u().guest, rawPath), 400, "BAD_REQUEST", "Not allowed for guest users");
      assertError(await postEmoji(u().bot, rawPath), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    }
    assertError(await postEmoji(null, uniqueEmoji()), 401, "UNAUTHORIZED");
  });

  test("who may add: the organization's can_add_custom_emoji_group", async () => {
    try {
      await setRealmGroupSetting("can_add_custom_emoji_group", sys["role:administrators"]);
      for (const user of [u().member, u().moderator]) assertError(await add(user, uniqueEmoji()), 400, "BAD_REQUEST", "Insufficient permission");
      for (const user of [u().admin, u().owner]) assertSuccess(await add(user, uniqueEmoji()));

      await setRealmGroupSetting("can_add_custom_emoji_group", sys["role:moderators"]);
      assertError(await add(u().member, uniqueEmoji()), 400, "BAD_REQUEST", "Insufficient permission");
      assertSuccess(await add(u().moderator, uniqueEmoji()));

      await setRealmGroupSetting("can_add_custom_emoji_group", { direct_members: [u().member.id], direct_subgroups: [sys["role:owners"]] });
      assertSuccess(await add(u().member, uniqueEmoji()));
      assertSuccess(await add(u().owner, uniqueEmoji()));
      for (const user of [u().moderator, u().admin]) assertError(await add(user, uniqueEmoji()), 400, "BAD_REQUEST", "Insufficient permission");

      await setRealmGroupSetting("can_add_custom_emoji_group", sys["role:nobody"]);
      assertError(await add(u().owner, uniqueEmoji()), 400, "BAD_REQUEST", "Insufficient permission");
      // The name is checked first.
      assertError(await postEmoji(u().member, "Bad*Name"), 400, "BAD_REQUEST", /Emoji names must contain only/);
    } finally {
      await setRealmGroupSetting("can_add_custom_emoji_group", sys["role:members"]);
    }
    assertSuccess(await add(u().member, uniqueEmoji()));
  });

  test("an active name is taken; a deactivated one is free again", async () => {
    const name = uniqueEmoji("taken");
    assertSuccess(await add(u().member, name));
    assertError(await add(u().admin, name), 400, "BAD_REQUEST", "A custom emoji with this name already exists.");
    assertSuccess(await remove(u().member, name));
    assertSuccess(await add(u().admin, name));
    const same = Object.values(await list()).filter((e: Json) => e.name === name);
    assert.deepEqual(
      same.map((e: Json) => [e.deactivated, e.author_id]),
      [
        [true, u().member.id],
        [false, u().admin.id],
      ],
    );
    assert.notEqual(same[0].source_url, same[1].source_url);
  });

  test("exactly one file: none, or files in two fields, is an error; one field sent twice keeps the last", async () => {
    const one = "You must upload exactly one file.";
    assertError(await postEmoji(u().member, uniqueEmoji(), []), 400, "BAD_REQUEST", one);
    assertError(await postEmoji(u().member, uniqueEmoji(), [], { file: "not a file" }), 400, "BAD_REQUEST", one);
    assertError(await t.api(u().member, "POST", `/realm/emoji/${uniqueEmoji()}`, {}), 400, "BAD_REQUEST", one);
    assertError(
      await postEmoji(u().member, uniqueEmoji(), [
        { field: "f1", content: PNG, type: "image/png" },
        { field: "f2", content: PNG, type: "image/png" },
      ]),
      400,
      "BAD_REQUEST",
      one,
    );
    const name = uniqueEmoji("twice");
    assertSuccess(
      await postEmoji(u().member, name, [
        { field: "f1", content: PNG, type: "image/png", name: "a.png" },
        { field: "f1", content: GIF, type: "image/gif", name: "b.gif" },
      ]),
    );
    assert.match((await emojiNamed(name)).source_url, /\.gif$/);
  });

  test("built-in emoji names: administrators only, and then the custom one wins", async () => {
    assertError(await add(u().member, "octopus"), 400, "BAD_REQUEST", "Only administrators can override default emoji.");
    assertError(await add(u().moderator, "octopus"), 400, "BAD_REQUEST", "Only administrators can override default emoji.");
    assertSuccess(await add(u().admin, "octopus"));
    try {
      const custom = await emojiNamed("octopus");
      const channel = uniqueEmoji("channel");
      assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }], send_new_subscription_messages: false }));
      const id = assertSuccess(await t.api(u().member, "POST", "/messages", { type: "stream", to: channel, topic: "t", content: ":octopus:" })).id;
      assertSuccess(await t.api(u().member, "POST", `/messages/${id}/reactions`, { emoji_name: "octopus" }));
      const message = assertSuccess(await t.api(u().member, "GET", `/messages/${id}`)).message;
      assert.deepEqual(message.reactions, [{ emoji_name: "octopus", emoji_code: custom.id, reaction_type: "realm_emoji", user_id: u().member.id }]);
      assert.equal(message.content, `<p><img alt=":octopus:" class="emoji" src="${custom.source_url}" title="octopus"></p>`);
    } finally {
      assertSuccess(await remove(u().admin, "octopus"));
    }
    const rendered = assertSuccess(await t.api(u().member, "POST", "/messages/render", { content: ":octopus:" })).rendered;
    assert.match(rendered, /emoji-1f419/);
  });

  test("the size limit: 5 MiB is fine, a byte more is Zulip's error", async () => {
    const limit = 5 * 1024 * 1024;
    const big = (size: number) => Buffer.concat([PNG, Buffer.alloc(size - PNG.length)]);
    const name = uniqueEmoji("big");
    assertSuccess(await add(u().member, name, [{ content: big(limit), type: "image/png" }]));
    assertError(await add(u().member, uniqueEmoji(), [{ content: big(limit + 1), type: "image/png" }]), 400, "BAD_REQUEST", "Uploaded file is larger than the allowed limit of 5 MiB");
    const image = await fetch(t.url + (await emojiNamed(name)).source_url);
    assert.equal(Number(image.headers.get("content-length")), limit);
    await image.arrayBuffer();
  });

  test("image types: PNG, GIF, JPEG, WebP by declared type or file name; anything else is BAD_IMAGE", async () => {
    const ok = async (file: FilePart, extension: string, contentType: string) => {
      const name = uniqueEmoji("kind");
      assertSuccess(await add(u().member, name, [file]));
      const url = (await emojiNamed(name)).source_url as string;
      assert.ok(url.endsWith(extension), url);
      const image = await fetch(t.url + url);
      assert.equal(image.headers.get("content-type"), contentType);
      await image.arrayBuffer();
    };
    await ok({ content: GIF, type: "image/gif", name: "x.gif" }, ".gif", "image/gif");
    await ok({ content: JPEG_HEAD, type: "image/jpeg", name: "photo.jpeg" }, ".jpg", "image/jpeg");
    await ok({ content: WEBP, type: "image/webp", name: "w.webp" }, ".webp", "image/webp");
    await ok({ content: PNG, type: "image/png; charset=binary", name: "p" }, ".png", "image/png");
    // A part without a Content-Type header: the file name tells (Zulip's get_file_info).
    const guessed = uniqueEmoji("guessed");
    const boundary = "----parley-emoji-test";
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="guess.gif"\r\n\r\n`),
      GIF,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const raw = await fetch(`${t.url}/api/v1/realm/emoji/${guessed}`, {
      method: "POST",
      body,
      headers: { authorization: basicAuth(u().member.email, u().member.apiKey), "content-type": `multipart/form-data; boundary=${boundary}` },
    });
    assert.deepEqual(await raw.json(), { result: "success", msg: "" });
    assert.match((await emojiNamed(guessed)).source_url, /\.gif$/);

    const before = await storedFiles();
    const badFormat = async (file: FilePart) => assertError(await add(u().member, uniqueEmoji(), [file]), 400, "BAD_IMAGE", "Invalid image format");
    await badFormat({ content: "plain text", type: "text/plain", name: "notes.txt" });
    await badFormat({ content: PNG, type: "image/tiff", name: "x.tiff" });
    await badFormat({ content: "<svg xmlns='http://www.w3.org/2000/svg'/>", type: "image/svg+xml", name: "x.svg" });
    await badFormat({ content: PNG, type: "application/octet-stream", name: "blob" });
    await badFormat({ content: PNG, name: "no-extension" });
    const undecodable = "Could not decode image; did you upload an image file?";
    assertError(await add(u().member, uniqueEmoji(), [{ content: "not really a png", type: "image/png", name: "fake.png" }]), 400, "BAD_IMAGE", undecodable);
    assertError(await add(u().member, uniqueEmoji(), [{ content: Buffer.alloc(0), type: "image/gif", name: "empty.gif" }]), 400, "BAD_IMAGE", undecodable);
    // Nothing is stored for a refused upload.
    assert.deepEqual(await storedFiles(), before);
  });
});

describe("DELETE /realm/emoji/{emoji_name}", () => {
  test("the author or an administrator deactivates; others may not; unknown names are a 404", async () => {
    const mine = uniqueEmoji("mine");
    const theirs = uniqueEmoji("theirs");
    assertSuccess(await add(u().member, mine));
    assertSuccess(await add(u().moderator, theirs));
    const notAllowed = "Must be an organization administrator or emoji author";
    for (const user of [u().moderator, u().guest, u().bot]) assertError(await remove(user, mine), 400, "BAD_REQUEST", notAllowed);
    const reply = await remove(u().member, mine);
    assert.deepEqual(reply.body, { result: "success", msg: "" });
    assert.equal((await emojiNamed(mine)).deactivated, true);
    assertError(await remove(u().member, theirs), 400, "BAD_REQUEST", notAllowed);
    assertSuccess(await remove(u().admin, theirs));
    const owners = uniqueEmoji("owners");
    assertSuccess(await add(u().admin, owners));
    assertSuccess(await remove(u().owner, owners));

    assertError(await remove(u().admin, mine), 404, "BAD_REQUEST", `Emoji '${mine}' does not exist`);
    assertError(await remove(u().admin, "never_was"), 404, "BAD_REQUEST", "Emoji 'never_was' does not exist");
    // Existence is checked before permission.
    assertError(await remove(u().guest, "never_was"), 404, "BAD_REQUEST", "Emoji 'never_was' does not exist");
    // The image stays: old messages and reactions still show it.
    const image = await fetch(t.url + (await emojiNamed(mine)).source_url);
    assert.equal(image.status, 200);
    await image.arrayBuffer();
  });

  test("the author keeps the right after losing the role that let them add it", async () => {
    const author = await t.createUser(`Emoji Author ${++counter}`, Role.MEMBER);
    const name = uniqueEmoji("demoted");
    assertSuccess(await add(author, name));
    assertSuccess(await t.api(u().owner, "PATCH", `/users/${author.id}`, { role: Role.GUEST }));
    assertSuccess(await remove(author, name));
  });

  test("unknown methods on the emoji paths", async () => {
    const reply = await t.api(u().member, "GET", "/realm/emoji/some_name");
    assertError(reply, 405, "METHOD_NOT_ALLOWED");
    assert.equal(reply.headers.get("allow"), "POST, DELETE");
    assertError(await t.api(u().member, "POST", "/realm/emoji", {}), 405, "METHOD_NOT_ALLOWED");
  });
});

describe("custom emoji events and state", () => {
  test("realm_emoji op update with the whole object, to every active user; failures send nothing", async () => {
    const name = uniqueEmoji("evented");
    t.clearEvents();
    assertError(await add(u().member, "Bad*Name"), 400, "BAD_REQUEST");
    assertError(await add(u().member, name, [{ content: "text", type: "text/plain", name: "a.txt" }]), 400, "BAD_IMAGE");
    assertError(await remove(u().member, "never_was"), 404, "BAD_REQUEST");
    assert.deepEqual(t.events.filter((n) => n.event.type === "realm_emoji"), []);

    assertSuccess(await add(u().member, name));
    const afterAdd = await list();
    assertSuccess(await remove(u().member, name));
    const afterRemove = await list();
    const everyone = await t.activeUserIds();
    assert.deepEqual(
      t.events.filter((n) => n.event.type === "realm_emoji").map((n) => ({ userIds: sortedIds(n.userIds), event: n.event })),
      [
        { userIds: everyone, event: { type: "realm_emoji", op: "update", realm_emoji: afterAdd } },
        { userIds: everyone, event: { type: "realm_emoji", op: "update", realm_emoji: afterRemove } },
      ],
    );
    assert.equal(afterRemove[(await emojiNamed(name)).id].deactivated, true);
  });

  test("through a real queue, and /register's realm_emoji is the same object as GET /realm/emoji's", async () => {
    const queue = (await t.register(u().guest, { event_types: ["realm_emoji"] })).queue_id as string;
    const name = uniqueEmoji("queued");
    assertSuccess(await add(u().member, name));
    const events = await t.queuedEvents(u().guest, queue);
    assert.deepEqual(
      events.map(({ id: _id, ...rest }: Json) => rest),
      [{ type: "realm_emoji", op: "update", realm_emoji: await list() }],
    );
    const state = await t.register(u().member, { fetch_event_types: ["realm_emoji"] });
    assert.deepEqual(state.realm_emoji, await list());
    assert.ok(Object.values(state.realm_emoji).some((e: Json) => e.name === name));
  });
});

describe("custom emoji in Markdown", () => {
  test(":name: renders the image while the emoji is active; unknown and deactivated names stay text", async () => {
    const name = uniqueEmoji("shown");
    assertSuccess(await add(u().member, name));
    const { source_url: src } = await emojiNamed(name);
    const render = async (content: string) => assertSuccess(await t.api(u().member, "POST", "/messages/render", { content })).rendered as string;
    const title = name.replace(/_/g, " ");
    assert.equal(await render(`:${name}:`), `<p><img alt=":${name}:" class="emoji" src="${src}" title="${title}"></p>`);
    assert.equal(
      await render(`hi :${name}::${name}: :tada: :not_an_emoji:`),
      `<p>hi <img alt=":${name}:" class="emoji" src="${src}" title="${title}"><img alt=":${name}:" class="emoji" src="${src}" title="${title}"> ` +
        `<span aria-label="tada" class="emoji emoji-1f389" role="img" title="tada">:tada:</span> :not_an_emoji:</p>`,
    );
    assert.equal(await render(`\`:${name}:\``), `<p><code>:${name}:</code></p>`);
    // Sent messages store the rendering.
    const channel = uniqueEmoji("md");
    assertSuccess(await t.api(u().member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }], send_new_subscription_messages: false }));
    const id = assertSuccess(await t.api(u().member, "POST", "/messages", { type: "stream", to: channel, topic: "t", content: `:${name}:` })).id;
    assert.equal(assertSuccess(await t.api(u().member, "GET", `/messages/${id}`)).message.content, `<p><img alt=":${name}:" class="emoji" src="${src}" title="${title}"></p>`);

    assertSuccess(await remove(u().member, name));
    assert.equal(await render(`:${name}:`), `<p>:${name}:</p>`);
  });
});

describe("serving emoji images", () => {
  test("unknown files, bad names and paths outside the emoji directory are a 404", async () => {
    const name = uniqueEmoji("served");
    assertSuccess(await add(u().member, name));
    const url = (await emojiNamed(name)).source_url as string;
    const file = url.slice(url.lastIndexOf("/") + 1);
    for (const bad of [
      `/user_avatars/${t.realm.id}/emoji/images/0000000000000000.png`,
      `/user_avatars/${t.realm.id}/emoji/images/${file}.original`,
      `/user_avatars/${t.realm.id}/emoji/images/${file.replace(".png", ".svg")}`,
      `/user_avatars/${t.realm.id + 1}/emoji/images/${file}`,
      `/user_avatars/0${t.realm.id}/emoji/images/${file}`,
      `/user_avatars/${t.realm.id}/emoji/images/..%2F..%2F..%2F.signing-key`,
      `/user_avatars/${t.realm.id}/emoji/images/%2e%2e`,
    ]) {
      const response = await fetch(t.url + bad);
      assert.equal(response.status, 404, bad);
      await response.arrayBuffer();
    }
    const wrong = await fetch(t.url + url, { method: "DELETE" });
    assert.equal(wrong.status, 405);
    await wrong.arrayBuffer();
  });
});
