// Avatars, the organization icon and the emoji data document:
// - default avatars and the default icon are PNG images of Zulip's sizes
//   (100×100, 500×500 at the -medium.png URL clients derive), public,
//   cacheable (Cache-Control, ETag, 304) and versioned by avatar_version;
// - POST/DELETE /users/me/avatar: the upload decoded and resized whatever its
//   declared type, the user object and `realm_user` events updated, every
//   error of Zulip's with its status, code and message, avatar_changes_disabled;
// - POST/DELETE /realm/icon for administrators only, with `realm` events;
// - /avatar/{id}: the authenticated redirect;
// - server_emoji_data_url: Zulip's code_to_names document, without credentials.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { after, before, describe, test } from "node:test";
import sharp from "sharp";
import { nameToCode } from "../src/markdown/emoji.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, storedBytes, storedKeys, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;
const u = () => t.users;
const EXTERNAL = "http://parley.test";
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

// ---------------------------------------------------------------------------
// Helpers

/** A test image: `width`×`height`, left half red and right half blue, in `format`. */
async function image(width: number, height: number, format: "png" | "jpeg" | "webp" | "gif" = "jpeg"): Promise<Buffer> {
  const half = Math.floor(width / 2);
  const left = await sharp({ create: { width: half, height, channels: 3, background: "#ff0000" } }).png().toBuffer();
  return sharp({ create: { width, height, channels: 3, background: "#0000ff" } })
    .composite([{ input: left, left: 0, top: 0 }])
    .toFormat(format)
    .toBuffer();
}

/**
 * A PNG whose header claims `width`×`height` pixels over a tiny body: a
 * decompression bomb as far as anything that trusts headers is concerned.
 */
async function pngClaiming(width: number, height: number): Promise<Buffer> {
  const png = Buffer.from(await image(4, 4, "png"));
  // IHDR: length (4) "IHDR" (4) width (4) height (4) … then a CRC over type and data.
  png.writeUInt32BE(width, 16);
  png.writeUInt32BE(height, 20);
  png.writeUInt32BE(zlib.crc32(png.subarray(12, 29)), 29);
  return png;
}

interface FilePart {
  field?: string;
  name?: string;
  content: Buffer | string;
  type?: string;
}

async function postFiles(user: TestUser | null, urlPath: string, files: FilePart[], method = "POST"): Promise<ApiResponse> {
  const form = new FormData();
  for (const f of files) {
    const bytes = typeof f.content === "string" ? f.content : new Uint8Array(f.content);
    form.append(f.field ?? "file", new Blob([bytes], f.type === undefined ? {} : { type: f.type }), f.name ?? "avatar.jpg");
  }
  const headers: Record<string, string> = user ? { authorization: basicAuth(user.email, user.apiKey) } : {};
  const response = await fetch(`${t.url}/api/v1${urlPath}`, { method, body: form, headers });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body };
}

const uploadAvatar = (user: TestUser, files: FilePart[]) => postFiles(user, "/users/me/avatar", files);
const uploadIcon = (user: TestUser, files: FilePart[]) => postFiles(user, "/realm/icon", files);
const jpegPart = async (width = 300, height = 200): Promise<FilePart> => ({ content: await image(width, height), type: "image/jpeg", name: "me.jpg" });

/** Fetches an absolute URL the API handed out, from the test server. */
async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  assert.ok(url.startsWith(EXTERNAL), url);
  const response = await fetch(t.url + url.slice(EXTERNAL.length), { headers, redirect: "manual" });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Asserts a PNG of `size`×`size`, checked by decoding it. */
async function assertPng(bytes: Buffer, size: number, context = ""): Promise<void> {
  assert.deepEqual([...bytes.subarray(0, 8)], PNG_SIGNATURE, `PNG signature ${context}`);
  const meta = await sharp(bytes).metadata();
  assert.equal(meta.format, "png", context);
  assert.deepEqual([meta.width, meta.height], [size, size], context);
}

/** The medium URL as zulip-flutter derives it from avatar_url: ".png" at the end of the path becomes "-medium.png". */
function mediumOf(avatarUrl: string): string {
  const url = new URL(avatarUrl);
  url.pathname = url.pathname.replace(/(?:\.png)?$/, "-medium.png");
  return url.toString();
}

async function userObject(user: TestUser, viewer: TestUser = u().owner): Promise<Json> {
  return assertSuccess(await t.api(viewer, "GET", `/users/${user.id}`)).user;
}

async function freshUser(role?: number): Promise<TestUser> {
  return t.createUser(`Avatar User ${Math.random().toString(36).slice(2, 8)}`, role);
}

const avatarsPrefix = () => `avatars/${t.realm.id}/`;
/** Names of the stored avatar files ({hash}.png, …) of the organization, in whichever file store the app uses. */
const storedAvatarFiles = async (): Promise<string[]> =>
  (await storedKeys(t, avatarsPrefix())).map((key) => key.slice(avatarsPrefix().length)).filter((name) => /^[0-9a-f]{40}[^/]*$/.test(name));
const incomingFiles = (): string[] => {
  const dir = path.join(t.services.config.uploadsDir, ".incoming");
  return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
};

async function setAvatarChangesDisabled(value: boolean): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", { avatar_changes_disabled: value }));
}

// ---------------------------------------------------------------------------

describe("default avatars", () => {
  test("avatar_url is a versioned PNG under /user_avatars/: 100×100, and 500×500 at -medium.png", async () => {
    const user = await freshUser();
    const self = assertSuccess(await t.api(user, "GET", "/users/me"));
    assert.equal(self.avatar_url, `${EXTERNAL}/user_avatars/${t.realm.id}/default/${user.id}.png?version=1`);
    assert.equal(self.avatar_version, 1);
    assert.equal((await userObject(user)).avatar_url, self.avatar_url);

    const small = await get(self.avatar_url);
    assert.equal(small.status, 200);
    assert.equal(small.headers.get("content-type"), "image/png");
    await assertPng(small.bytes, 100, "default");
    const medium = await get(mediumOf(self.avatar_url));
    assert.equal(medium.status, 200);
    await assertPng(medium.bytes, 500, "medium");

    // /register's own avatar fields agree.
    const state = await t.register(user, { fetch_event_types: ["realm_user"] });
    assert.equal(state.avatar_source, "G");
    assert.equal(state.avatar_url, self.avatar_url);
    assert.equal(state.avatar_url_medium, mediumOf(self.avatar_url));
  });

  test("public and cacheable: long-lived Cache-Control, an ETag, 304 for a client that has it; nothing runnable", async () => {
    const user = await freshUser();
    const url = (await userObject(user)).avatar_url;
    const first = await get(url);
    assert.equal(first.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(first.headers.get("x-content-type-options"), "nosniff");
    assert.match(first.headers.get("content-security-policy") ?? "", /default-src 'none'/);
    const etag = first.headers.get("etag");
    assert.ok(etag);
    const again = await get(url, { "if-none-match": etag });
    assert.equal(again.status, 304);
    assert.equal(again.bytes.length, 0);
    assert.equal((await get(url, { "if-none-match": '"something-else"' })).status, 200);
    // The medium size is another image, with another tag.
    assert.notEqual((await get(mediumOf(url))).headers.get("etag"), etag);
  });

  test("each user has their own image, the same every time", async () => {
    const [a, b] = [await freshUser(), await freshUser()];
    const first = (await get((await userObject(a)).avatar_url)).bytes;
    assert.deepEqual((await get((await userObject(a)).avatar_url)).bytes, first);
    assert.notDeepEqual((await get((await userObject(b)).avatar_url)).bytes, first);
  });

  test("no image for users that do not exist, or names that are no avatar", async () => {
    for (const p of [`/user_avatars/${t.realm.id}/default/999999.png`, `/user_avatars/${t.realm.id}/default/abc.png`, `/user_avatars/${t.realm.id}/default/${u().member.id}.svg`, `/user_avatars/0/default/1.png`]) {
      const response = await fetch(t.url + p);
      assert.equal(response.status, 404, p);
    }
  });
});

describe("POST /users/me/avatar", () => {
  test("an upload: avatar_url and avatar_version change, realm_user event to everyone, served as PNG of both sizes", async () => {
    const user = await freshUser();
    t.clearEvents();
    const reply = await uploadAvatar(user, [await jpegPart()]);
    const body = assertSuccess(reply);
    assert.deepEqual(Object.keys(body).sort(), ["avatar_url", "msg", "result"]);
    const match = new RegExp(`^${EXTERNAL}/user_avatars/${t.realm.id}/([0-9a-f]{40})\\.png\\?version=2$`).exec(body.avatar_url);
    assert.ok(match, body.avatar_url);

    const object = await userObject(user, u().member);
    assert.equal(object.avatar_url, body.avatar_url);
    assert.equal(object.avatar_version, 2);
    const state = await t.register(user, { fetch_event_types: ["realm_user"] });
    assert.equal(state.avatar_source, "U");
    assert.equal(state.avatar_url_medium, mediumOf(body.avatar_url));

    // Zulip's notify_avatar_url_change: the avatar fields, to every active user.
    const person = { avatar_source: "U", avatar_url: body.avatar_url, avatar_url_medium: mediumOf(body.avatar_url), avatar_version: 2, user_id: user.id };
    const updates = t.events.filter((n) => n.event.type === "realm_user" && n.event.op === "update");
    assert.equal(updates.length, 1);
    assert.deepEqual(updates[0]!.event, { type: "realm_user", op: "update", person });
    assert.deepEqual([...updates[0]!.userIds].sort((a, b) => a - b), await t.activeUserIds());

    // The images: decoded and re-encoded, not the bytes sent; centre-cropped squares.
    const small = await get(body.avatar_url);
    assert.equal(small.status, 200);
    assert.equal(small.headers.get("content-type"), "image/png");
    assert.equal(small.headers.get("cache-control"), "public, max-age=31536000, immutable");
    await assertPng(small.bytes, 100, "uploaded");
    const medium = await get(mediumOf(body.avatar_url));
    await assertPng(medium.bytes, 500, "uploaded medium");
    // The 300×200 image (red left, blue right) cropped to its middle square: red at the left edge, blue at the right.
    const { data } = await sharp(small.bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const pixel = (x: number, y: number) => [...data.subarray((y * 100 + x) * 3, (y * 100 + x) * 3 + 3)];
    assert.ok(pixel(5, 50)[0]! > 200 && pixel(5, 50)[2]! < 50, `left pixel ${pixel(5, 50)}`);
    assert.ok(pixel(95, 50)[2]! > 200 && pixel(95, 50)[0]! < 50, `right pixel ${pixel(95, 50)}`);
    assert.equal((await get(body.avatar_url, { "if-none-match": small.headers.get("etag")! })).status, 304);

    // The original is kept beside them, as Zulip keeps it; nothing is left in the incoming directory.
    assert.ok(await storedBytes(t, `${avatarsPrefix()}${match[1]}.original`));
    assert.deepEqual(incomingFiles(), []);
  });

  test("a new upload replaces the old: new version and file name, the old files gone", async () => {
    const user = await freshUser();
    const first = assertSuccess(await uploadAvatar(user, [{ content: await image(64, 64, "png"), type: "image/png", name: "a.png" }])).avatar_url;
    const second = assertSuccess(await uploadAvatar(user, [{ content: await image(800, 600, "webp"), type: "image/webp", name: "b.webp" }])).avatar_url;
    assert.match(second, /\?version=3$/);
    assert.notEqual(new URL(first).pathname, new URL(second).pathname);
    assert.equal((await get(first)).status, 404);
    assert.equal((await get(mediumOf(first))).status, 404);
    await assertPng((await get(second)).bytes, 100, "second");
    const hash = (url: string) => /([0-9a-f]{40})\.png/.exec(url)![1]!;
    assert.deepEqual(
      (await storedAvatarFiles()).filter((f) => f.startsWith(hash(first)) || f.startsWith(hash(second))),
      [`${hash(second)}-medium.png`, `${hash(second)}.original`, `${hash(second)}.png`],
    );
  });

  test("the declared type is not trusted: a GIF sent as image/jpeg is decoded as what it is", async () => {
    const user = await freshUser();
    const body = assertSuccess(await uploadAvatar(user, [{ content: await image(40, 40, "gif"), type: "image/jpeg", name: "x.jpg" }]));
    await assertPng((await get(body.avatar_url)).bytes, 100, "gif");
  });

  test("without a declared type (or as application/octet-stream), the file name's decides", async () => {
    const user = await freshUser();
    assertSuccess(await uploadAvatar(user, [{ content: await image(40, 40, "png"), name: "face.png" }]));
    assertError(await uploadAvatar(user, [{ content: await image(40, 40, "png"), name: "face.txt" }]), 400, "BAD_IMAGE", "Invalid image format");
  });

  test("errors, in Zulip's words; none of them changes the user or leaves files behind", async () => {
    const user = await freshUser();
    const before = await storedAvatarFiles();
    const one = "You must upload exactly one avatar.";
    // No file at all: multipart without one, or a plain form.
    assertError(await uploadAvatar(user, []), 400, "BAD_REQUEST", one);
    assertError(await t.api(user, "POST", "/users/me/avatar", { x: "y" }), 400, "BAD_REQUEST", one);
    // Two files (in two fields, as Django counts request.FILES).
    const jpeg = await jpegPart();
    assertError(await uploadAvatar(user, [jpeg, { ...jpeg, field: "other" }]), 400, "BAD_REQUEST", one);
    // Not an image, whatever it claims.
    const undecodable = "Could not decode image; did you upload an image file?";
    assertError(await uploadAvatar(user, [{ content: "just some text", type: "image/png", name: "a.png" }]), 400, "BAD_IMAGE", undecodable);
    assertError(await uploadAvatar(user, [{ content: (await image(40, 40, "png")).subarray(0, 30), type: "image/png", name: "cut.png" }]), 400, "BAD_IMAGE");
    // SVG is never parsed: refused by its type, and by its bytes when it claims another.
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
    assertError(await uploadAvatar(user, [{ content: svg, type: "image/svg+xml", name: "a.svg" }]), 400, "BAD_IMAGE", "Invalid image format");
    assertError(await uploadAvatar(user, [{ content: svg, type: "image/png", name: "a.png" }]), 400, "BAD_IMAGE", undecodable);
    assertError(await uploadAvatar(user, [{ content: "%PDF-1.4", type: "application/pdf", name: "a.pdf" }]), 400, "BAD_IMAGE", "Invalid image format");
    // A decompression bomb: refused from its header (10,000 × 10,000 = 100 million pixels).
    assertError(await uploadAvatar(user, [{ content: await pngClaiming(10_000, 10_000), type: "image/png", name: "bomb.png" }]), 400, "BAD_IMAGE", "Image size exceeds limit.");
    // Too large: more than MAX_AVATAR_FILE_SIZE_MIB.
    const tooLarge = Buffer.concat([await image(40, 40), Buffer.alloc(5 * 1024 * 1024)]);
    assertError(await uploadAvatar(user, [{ content: tooLarge, type: "image/jpeg" }]), 400, "BAD_REQUEST", "Uploaded file is larger than the allowed limit of 5 MiB");

    const object = await userObject(user);
    assert.equal(object.avatar_version, 1);
    assert.match(object.avatar_url, /\/default\//);
    assert.deepEqual(await storedAvatarFiles(), before);
    assert.deepEqual(incomingFiles(), []);
  });

  test("avatar_changes_disabled: members may neither upload nor delete; administrators may", async () => {
    const member = await freshUser();
    const admin = await freshUser(200);
    await setAvatarChangesDisabled(true);
    try {
      const disabled = "Avatar changes are disabled in this organization.";
      assertError(await uploadAvatar(member, [await jpegPart()]), 400, "BAD_REQUEST", disabled);
      assertError(await t.api(member, "DELETE", "/users/me/avatar"), 400, "BAD_REQUEST", disabled);
      assert.equal((await userObject(member)).avatar_version, 1);
      // The file count is checked first, as Zulip does.
      assertError(await uploadAvatar(member, []), 400, "BAD_REQUEST", "You must upload exactly one avatar.");
      assertSuccess(await uploadAvatar(admin, [await jpegPart()]));
      assertSuccess(await t.api(admin, "DELETE", "/users/me/avatar"));
      assert.equal((await userObject(admin)).avatar_version, 3);
    } finally {
      await setAvatarChangesDisabled(false);
    }
    assertSuccess(await uploadAvatar(member, [await jpegPart()]));
  });

  test("a bot changing its avatar: realm_user to everyone, realm_bot to its owner and the administrators", async () => {
    t.clearEvents();
    const body = assertSuccess(await uploadAvatar(u().bot, [await jpegPart()]));
    const botEvents = t.events.filter((n) => n.event.type === "realm_bot");
    assert.equal(botEvents.length, 1);
    assert.deepEqual(botEvents[0]!.event, { type: "realm_bot", op: "update", bot: { user_id: u().bot.id, avatar_url: body.avatar_url } });
    // Its owner (the member) and every active human administrator.
    const admins = await t.services.storage.db
      .selectFrom("users")
      .select("id")
      .where("realm_id", "=", t.realm.id)
      .where("role", "<=", 200)
      .where("is_active", "=", true)
      .where("is_bot", "=", false)
      .execute();
    const expected = [u().member.id, ...admins.map((r) => r.id)].sort((a, b) => a - b);
    assert.ok(expected.includes(u().owner.id) && expected.includes(u().admin.id));
    assert.deepEqual([...botEvents[0]!.userIds].sort((a, b) => a - b), expected);
    const state = await t.register(u().member, { fetch_event_types: ["realm_bot"] });
    assert.equal(state.realm_bots.find((b: Json) => b.user_id === u().bot.id).avatar_url, body.avatar_url);
  });

  test("messages carry the sender's current avatar_url", async () => {
    const user = await freshUser();
    const body = assertSuccess(await uploadAvatar(user, [await jpegPart()]));
    const sent = assertSuccess(await t.api(user, "POST", "/messages", { type: "private", to: [u().member.id], content: "look" }));
    const fetched = assertSuccess(await t.api(user, "GET", "/messages", { anchor: sent.id, num_before: 0, num_after: 0 }));
    assert.equal(fetched.messages[0].avatar_url, body.avatar_url);
  });
});

describe("DELETE /users/me/avatar", () => {
  test("back to the default avatar: new version, event, the uploaded files gone", async () => {
    const user = await freshUser();
    const uploaded = assertSuccess(await uploadAvatar(user, [await jpegPart()])).avatar_url;
    t.clearEvents();
    const body = assertSuccess(await t.api(user, "DELETE", "/users/me/avatar"));
    const defaultUrl = `${EXTERNAL}/user_avatars/${t.realm.id}/default/${user.id}.png?version=3`;
    assert.deepEqual(body, { result: "success", msg: "", avatar_url: defaultUrl });
    assert.equal((await userObject(user)).avatar_url, defaultUrl);
    const person = { avatar_source: "G", avatar_url: defaultUrl, avatar_url_medium: mediumOf(defaultUrl), avatar_version: 3, user_id: user.id };
    assert.deepEqual(t.eventsFor(u().guest.id, "realm_user", "update"), [{ type: "realm_user", op: "update", person }]);
    assert.equal((await get(uploaded)).status, 404);
    await assertPng((await get(defaultUrl)).bytes, 100, "back to default");
  });

  test("when the avatar is the default already: the same avatar_url, nothing changes, no event", async () => {
    const user = await freshUser();
    t.clearEvents();
    const body = assertSuccess(await t.api(user, "DELETE", "/users/me/avatar"));
    assert.equal(body.avatar_url, `${EXTERNAL}/user_avatars/${t.realm.id}/default/${user.id}.png?version=1`);
    assert.equal((await userObject(user)).avatar_version, 1);
    assert.equal(t.events.length, 0);
  });
});

describe("GET /avatar/{user_id or email}", () => {
  test("redirects to the current avatar (the medium one under /medium), passing the query string on", async () => {
    const user = await freshUser();
    const url = assertSuccess(await uploadAvatar(user, [await jpegPart()])).avatar_url;
    const auth = { authorization: basicAuth(u().member.email, u().member.apiKey) };
    const redirect = async (p: string) => fetch(t.url + p, { headers: auth, redirect: "manual" });
    let response = await redirect(`/avatar/${user.id}`);
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), url);
    response = await redirect(`/avatar/${user.id}/medium?foo=bar`);
    assert.equal(response.headers.get("location"), `${mediumOf(url)}&foo=bar`);
    response = await redirect(`/avatar/${encodeURIComponent(user.email)}`);
    assert.equal(response.headers.get("location"), url);
    assertError(await (async () => {
      const r = await redirect("/avatar/999999");
      return { status: r.status, headers: r.headers, body: await r.json() };
    })(), 400, "BAD_REQUEST", "No such user");
  });

  test("needs credentials, as Zulip's does", async () => {
    const response = await fetch(`${t.url}/avatar/${u().member.id}`, { redirect: "manual" });
    assert.equal(response.status, 401);
    assert.equal((await response.json()).code, "UNAUTHORIZED");
  });
});

describe("the organization icon", () => {
  const iconUrl = async (): Promise<string> => (await t.register(u().member, { fetch_event_types: ["realm"] })).realm_icon_url;

  test("by default: a generated 100×100 PNG at a versioned URL, in /register and /server_settings", async () => {
    const state = await t.register(u().member, { fetch_event_types: ["realm"] });
    assert.equal(state.realm_icon_source, "G");
    const url: string = state.realm_icon_url;
    assert.match(url, new RegExp(`^${EXTERNAL}/user_avatars/${t.realm.id}/realm/icon\\.png\\?version=\\d+$`));
    assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).realm_icon, url);
    const icon = await get(url);
    assert.equal(icon.status, 200);
    await assertPng(icon.bytes, 100, "default icon");
    // Cached for good at the current version; at any other, to be checked again.
    assert.equal(icon.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal((await get(url.replace(/version=\d+/, "version=9999"))).headers.get("cache-control"), "public, no-cache");
    assert.equal((await get(url, { "if-none-match": icon.headers.get("etag")! })).status, 304);
  });

  test("only administrators may change it (Zulip's require_realm_admin)", async () => {
    const before = await iconUrl();
    for (const user of [u().member, u().moderator, u().guest]) {
      assertError(await uploadIcon(user, [await jpegPart()]), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      assertError(await t.api(user, "DELETE", "/realm/icon"), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
    }
    assert.equal(await iconUrl(), before);
  });

  test("an administrator uploads one and deletes it: icon_url, realm update_dict events, the image served", async () => {
    const defaultIcon = (await get(await iconUrl())).bytes;
    const version = Number(/version=(\d+)/.exec(await iconUrl())![1]);
    t.clearEvents();
    const body = assertSuccess(await uploadIcon(u().admin, [await jpegPart(120, 90)]));
    const uploadedUrl = `${EXTERNAL}/user_avatars/${t.realm.id}/realm/icon.png?version=${version + 1}`;
    assert.deepEqual(body, { result: "success", msg: "", icon_url: uploadedUrl });
    const event = { type: "realm", op: "update_dict", property: "icon", data: { icon_source: "U", icon_url: uploadedUrl } };
    const notified = t.events.filter((n) => n.event.type === "realm");
    assert.deepEqual(notified.map((n) => n.event), [event]);
    assert.deepEqual([...notified[0]!.userIds].sort((a, b) => a - b), await t.activeUserIds());
    const state = await t.register(u().member, { fetch_event_types: ["realm"] });
    assert.equal(state.realm_icon_url, uploadedUrl);
    assert.equal(state.realm_icon_source, "U");
    const uploaded = await get(uploadedUrl);
    await assertPng(uploaded.bytes, 100, "uploaded icon");
    assert.notDeepEqual(uploaded.bytes, defaultIcon);

    assertError(await uploadIcon(u().admin, []), 400, "BAD_REQUEST", "You must upload exactly one icon.");
    assertError(await uploadIcon(u().admin, [{ content: "nope", type: "image/png", name: "x.png" }]), 400, "BAD_IMAGE", "Could not decode image; did you upload an image file?");

    t.clearEvents();
    const deleted = assertSuccess(await t.api(u().owner, "DELETE", "/realm/icon"));
    const defaultUrl = uploadedUrl.replace(/version=\d+/, `version=${version + 2}`);
    assert.equal(deleted.icon_url, defaultUrl);
    assert.deepEqual(t.events.map((n) => n.event), [{ ...event, data: { icon_source: "G", icon_url: defaultUrl } }]);
    assert.deepEqual((await get(defaultUrl)).bytes, defaultIcon);
    assert.deepEqual(await storedKeys(t, `${avatarsPrefix()}realm/`), []);
  });
});

describe("server_emoji_data_url", () => {
  test("Zulip's emoji_api.json: code_to_names, canonical name first, served without credentials", async () => {
    const state = await t.register(u().member, { fetch_event_types: ["realm"] });
    const url: string = state.server_emoji_data_url;
    assert.match(url, new RegExp(`^${EXTERNAL}/static/generated/emoji/emoji_api\\.[0-9a-f]{16}\\.json$`));
    const response = await fetch(t.url + url.slice(EXTERNAL.length));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.equal(response.headers.get("cache-control"), "public, max-age=31536000, immutable");
    assert.equal(response.headers.get("access-control-allow-origin"), "*");
    const body = await response.json();
    assert.deepEqual(Object.keys(body), ["code_to_names"]);
    const codes = body.code_to_names as Record<string, string[]>;
    assert.ok(Object.keys(codes).length > 1500, `${Object.keys(codes).length} emoji`);
    assert.equal(codes["1f600"]![0], "grinning");
    assert.ok(codes["1f44d"]!.includes("+1") && codes["1f44d"]!.includes("thumbs_up"));
    assert.equal(codes["2764"]![0], "heart");
    for (const [code, names] of Object.entries(codes)) {
      assert.match(code, /^[0-9a-f]{4,5}(-[0-9a-f]{4,5})*$/, code);
      assert.ok(Array.isArray(names) && names.length > 0 && names.every((n) => typeof n === "string"), code);
      // U+FE0F never appears in a code (Zulip's unqualified codes).
      assert.ok(!code.split("-").includes("fe0f"), code);
    }
    // The names are the Markdown renderer's: every one of them means its code there.
    for (const [code, names] of Object.entries(codes)) for (const name of names) assert.equal(nameToCode.get(name), code, name);
  });

  test("cacheable: ETag and 304, gzip for clients that take it; the plain name too, to be checked again", async () => {
    const url: string = (await t.register(u().member, { fetch_event_types: ["realm"] })).server_emoji_data_url;
    const p = url.slice(EXTERNAL.length);
    const first = await fetch(t.url + p, { headers: { "accept-encoding": "gzip" } });
    assert.equal(first.headers.get("content-encoding"), "gzip");
    assert.equal(first.headers.get("vary"), "Accept-Encoding");
    const etag = first.headers.get("etag")!;
    assert.ok(etag);
    assert.ok((await first.json()).code_to_names["1f600"]);
    assert.equal((await fetch(t.url + p, { headers: { "if-none-match": etag } })).status, 304);
    const plain = await fetch(`${t.url}/static/generated/emoji/emoji_api.json`);
    assert.equal(plain.status, 200);
    assert.equal(plain.headers.get("cache-control"), "public, no-cache");
    assert.equal(plain.headers.get("etag"), etag);
    assert.equal((await fetch(`${t.url}/static/generated/emoji/other.json`)).status, 404);
  });
});
