// API-level tests of uploaded files: POST /user_uploads, the file URLs
// (/user_uploads/{path_id}, its download form and temporary signed URLs from
// GET /api/v1/user_uploads/…), GET /attachments and DELETE /attachments/{id}:
// reply shapes, Zulip's errors, who may download what (uploader, readers of a
// message linking the file, everyone else), `attachment` events through real
// event queues, the size limit, and that no URL reaches outside the uploads
// directory.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, basicAuth, startTestApp, storedBytes, uniqueName, type ApiResponse, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
let dataDir: string;

before(async () => {
  // Uploads go under the data directory: a temporary one, removed afterwards.
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-uploads-"));
  t = await startTestApp({ dataDir });
});
after(async () => {
  await t?.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// Helpers

const u = () => t.users;
const db = () => t.services.storage.db;

let counter = 0;
async function newUser(prefix: string, role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`${prefix} ${String.fromCharCode(65 + (counter % 26))}${counter}`, role);
}

interface FilePart {
  field?: string;
  name: string;
  content: string | Buffer;
  type?: string;
}

function formOf(files: FilePart[], fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  for (const f of files) {
    const bytes = typeof f.content === "string" ? f.content : new Uint8Array(f.content);
    form.append(f.field ?? "file", new Blob([bytes], f.type === undefined ? {} : { type: f.type }), f.name);
  }
  return form;
}

async function parse(response: Response): Promise<ApiResponse> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the test looks at the text.
  }
  return { status: response.status, headers: response.headers, body };
}

function authHeaders(user: TestUser | null): Record<string, string> {
  return user ? { authorization: basicAuth(user.email, user.apiKey) } : {};
}

/** POST /api/v1/user_uploads with a hand-made multipart body. */
async function postUpload(user: TestUser | null, body: FormData | string, headers: Record<string, string> = {}, app: TestApp = t): Promise<ApiResponse> {
  return parse(await fetch(`${app.url}/api/v1/user_uploads`, { method: "POST", body, headers: { ...authHeaders(user), ...headers } }));
}

interface Uploaded {
  uri: string;
  url: string;
  filename: string;
  pathId: string;
  id: number;
}

/** Uploads one file (asserting success) and returns its URL, path_id and attachment ID. */
async function upload(user: TestUser, name = "notes.txt", content: string | Buffer = "some notes", type?: string, app: TestApp = t): Promise<Uploaded> {
  const body = assertSuccess(await postUpload(user, formOf([{ name, content, ...(type === undefined ? {} : { type }) }]), {}, app));
  const pathId = (body.url as string).slice("/user_uploads/".length);
  const row = await app.services.storage.db.selectFrom("attachments").select("id").where("path_id", "=", pathId).executeTakeFirstOrThrow();
  return { uri: body.uri, url: body.url, filename: body.filename, pathId, id: row.id };
}

interface FileResponse {
  status: number;
  headers: Headers;
  bytes: Buffer;
  text: string;
}

/** GET of a URL outside /api/v1 (a file URL), with the user's API credentials if any. */
async function getFile(user: TestUser | null, urlPath: string, extraHeaders: Record<string, string> = {}): Promise<FileResponse> {
  const response = await fetch(t.url + urlPath, { headers: { ...authHeaders(user), ...extraHeaders } });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes, text: bytes.toString("utf8") };
}

/**
 * GET with the path sent exactly as written: fetch would resolve "..", so
 * traversal attempts go through node:http.
 */
function rawGet(urlPath: string, user: TestUser | null): Promise<FileResponse> {
  const target = new URL(t.url);
  return new Promise((resolve, reject) => {
    const request = http.request({ host: target.hostname, port: target.port, path: urlPath, method: "GET", headers: authHeaders(user) }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (c: Buffer) => chunks.push(c));
      response.on("end", () => {
        const bytes = Buffer.concat(chunks);
        const headers = new Headers();
        for (const [k, v] of Object.entries(response.headers)) if (typeof v === "string") headers.set(k, v);
        resolve({ status: response.statusCode ?? 0, headers, bytes, text: bytes.toString("utf8") });
      });
    });
    request.on("error", reject);
    request.end();
  });
}

function assertNotFoundPage(response: FileResponse, context = ""): void {
  assert.equal(response.status, 404, `${context}: ${response.text}`);
  assert.equal(response.text, "<p>This file does not exist or has been deleted.</p>", context);
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
}

function assertForbiddenPage(response: FileResponse, context = ""): void {
  assert.equal(response.status, 403, `${context}: ${response.text}`);
  assert.equal(response.text, "<p>You are not authorized to view this file.</p>", context);
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
}

/** Asserts a user can download the file, with its exact bytes. */
async function assertCanDownload(user: TestUser, file: Uploaded, content: string | Buffer, context = ""): Promise<void> {
  const response = await getFile(user, file.url);
  assert.equal(response.status, 200, `${context}: ${response.text}`);
  assert.deepEqual(response.bytes, Buffer.from(content), context);
}

async function assertCannotDownload(user: TestUser, file: Uploaded, context = ""): Promise<void> {
  assertForbiddenPage(await getFile(user, file.url), context);
  assertError(await t.api(user, "GET", file.url), 403, "BAD_REQUEST", "You are not authorized to view this file.");
}

async function attachmentsOf(user: TestUser) {
  return assertSuccess(await t.api(user, "GET", "/attachments"));
}

/** Zulip's upload_space_used: every file of the organization. */
async function realmBytes(): Promise<number> {
  const rows = await db().selectFrom("attachments").select("size").where("realm_id", "=", t.realm.id).execute();
  return rows.reduce((sum, r) => sum + Number(r.size), 0);
}

/** Where a path_id would be in the local file store's directory: a check that it stays inside. */
function storedPath(pathId: string): string {
  return path.join(t.services.config.uploadsDir, ...pathId.split("/"));
}

async function attachmentQueue(user: TestUser): Promise<string> {
  return (await t.register(user, { event_types: ["attachment"] })).queue_id as string;
}

/** Creates a channel with the given subscribers, returning its name. */
async function newChannel(creator: TestUser, subscribers: TestUser[], inviteOnly = false): Promise<string> {
  const name = uniqueName("uploads channel");
  assertSuccess(
    await t.api(creator, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      principals: [creator.id, ...subscribers.map((s) => s.id)],
      invite_only: inviteOnly,
    }),
  );
  return name;
}

async function sendToChannel(sender: TestUser, channel: string, content: string): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel, topic: "files", content })).id as number;
}

async function sendDirect(sender: TestUser, to: TestUser[], content: string): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "direct", to: JSON.stringify(to.map((r) => r.id)), content })).id as number;
}

const PATH_ID = /^(\d+)\/[0-9a-f]{1,2}\/[A-Za-z0-9_-]{24}\/(.+)$/;

// ---------------------------------------------------------------------------
// POST /user_uploads

describe("POST /user_uploads", () => {
  test("success: uri, url and filename; the file is stored at its path_id and listed as an attachment", async () => {
    const { member } = u();
    const realNow = t.services.now;
    const now = realNow();
    t.services.now = () => now;
    try {
      const response = await postUpload(member, formOf([{ name: "Quarterly report.pdf", content: "%PDF-1.4 pretend", type: "application/pdf" }]));
      const body = assertSuccess(response);
      assert.deepEqual(Object.keys(body).sort(), ["filename", "msg", "result", "uri", "url"]);
      assert.equal(body.uri, body.url);
      assert.equal(body.filename, "Quarterly report.pdf");
      const match = PATH_ID.exec(body.url.slice("/user_uploads/".length));
      assert.ok(match, body.url);
      assert.equal(Number(match[1]), t.realm.id);
      assert.equal(match[2], "Quarterly-report.pdf");
      const pathId = body.url.slice("/user_uploads/".length);
      assert.equal((await storedBytes(t, pathId))?.toString("utf8"), "%PDF-1.4 pretend");

      const listed = await attachmentsOf(member);
      const mine = listed.attachments.find((a: { path_id: string }) => a.path_id === pathId);
      assert.deepEqual(mine, { id: mine.id, name: "Quarterly report.pdf", path_id: pathId, size: 16, create_time: now * 1000, messages: [] });
      assert.equal(typeof mine.id, "number");
    } finally {
      t.services.now = realNow;
    }
  });

  test("the file may come under any field name; form fields beside it are reported as ignored", async () => {
    const { member } = u();
    const body = assertSuccess(await postUpload(member, formOf([{ field: "whatever", name: "a.txt", content: "a" }], { topic: "x" })));
    assert.equal(body.filename, "a.txt");
    assert.deepEqual(body.ignored_parameters_unsupported, ["topic"]);
    const plain = assertSuccess(await postUpload(member, formOf([{ field: "filename", name: "b.txt", content: "b" }])));
    assert.equal("ignored_parameters_unsupported" in plain, false);
  });

  test("names: the reply keeps the client's name, the path gets Zulip's sanitized form", async () => {
    const { member } = u();
    const cases: [string, string, string][] = [
      // sent name, reply filename, last path component
      ["my file (final) ünïcode.tar.gz", "my file (final) ünïcode.tar.gz", "my-file-final-ünïcode.tar.gz"],
      // As in Django, everything up to the last slash or backslash goes.
      ["<script>alert(1)</script>.html", "script>.html", "script.html"],
      ["& 'quoted' \"name\".md", "& 'quoted' \"name\".md", "quoted-name.md"],
      // HTML character references are decoded (Django's html.unescape).
      ["caf&#233; &amp; bar.txt", "café & bar.txt", "café-bar.txt"],
      ["a%20b%2Fc.txt", "a b/c.txt", "a-bc.txt"],
      ["dir/sub/inner.txt", "inner.txt", "inner.txt"],
      ["..\\..\\windows.txt", "windows.txt", "windows.txt"],
      ["!!!.@@", "!!!.@@", "uploaded-file"],
      ["  spaced   out  .md", "  spaced   out  .md", "spaced-out-.md"],
      ["Ａｂｃ.txt", "Ａｂｃ.txt", "Abc.txt"],
    ];
    for (const [sent, filename, component] of cases) {
      const file = await upload(member, sent, "x");
      assert.equal(file.filename, filename, sent);
      const match = PATH_ID.exec(file.pathId);
      assert.ok(match, file.pathId);
      assert.equal(match[2], component, sent);
      assert.equal((await attachmentsOf(member)).attachments.find((a: { id: number }) => a.id === file.id).name, filename);
    }
  });

  test("an overlong name is shortened in the path (keeping its extension) but kept whole as the name", async () => {
    const { member } = u();
    const name = `${"é".repeat(150)}.png`;
    const file = await upload(member, name, "x", "image/png");
    assert.equal(file.filename, name);
    const component = PATH_ID.exec(file.pathId)![2]!;
    assert.ok(Buffer.byteLength(component) <= 200, component);
    assert.ok(component.endsWith(".png"));
    await assertCanDownload(member, file, "x");
  });

  test("no file: 'You must specify a file to upload'", async () => {
    const { member } = u();
    const expected = "You must specify a file to upload";
    assertError(await postUpload(member, formOf([], { file: "not a file" })), 400, "BAD_REQUEST", expected);
    assertError(await t.api(member, "POST", "/user_uploads"), 400, "BAD_REQUEST", expected);
    assertError(await t.api(member, "POST", "/user_uploads", { file: "text" }), 400, "BAD_REQUEST", expected);
    // A file part without a usable name is not a file (Django skips it).
    assertError(await postUpload(member, formOf([{ name: "", content: "x" }])), 400, "BAD_REQUEST", expected);
    assertError(await postUpload(member, formOf([{ name: "..", content: "x" }])), 400, "BAD_REQUEST", expected);
  });

  test("two file fields: 'You may only upload one file at a time', and nothing is stored", async () => {
    const { member } = u();
    const before = (await attachmentsOf(member)).attachments.length;
    const response = await postUpload(member, formOf([{ field: "a", name: "one.txt", content: "1" }, { field: "b", name: "two.txt", content: "2" }]));
    assertError(response, 400, "BAD_REQUEST", "You may only upload one file at a time");
    assert.equal((await attachmentsOf(member)).attachments.length, before);
    assert.deepEqual(fs.readdirSync(path.join(t.services.config.uploadsDir, ".incoming")), []);
  });

  test("two files under one field name count as one, the last one sent (as Django's request.FILES does)", async () => {
    const { member } = u();
    const body = assertSuccess(await postUpload(member, formOf([{ name: "first.txt", content: "1" }, { name: "second.txt", content: "22" }])));
    assert.equal(body.filename, "second.txt");
    const response = await getFile(member, body.url);
    assert.equal(response.text, "22");
  });

  test("content type: the declared one, else guessed from the name; text gets a charset when it is UTF-8", async () => {
    const { member } = u();
    const contentTypeOf = async (pathId: string) =>
      (await db().selectFrom("attachments").select("content_type").where("path_id", "=", pathId).executeTakeFirstOrThrow()).content_type;
    assert.equal(await contentTypeOf((await upload(member, "photo.png", "png", "image/png")).pathId), "image/png");
    assert.equal(await contentTypeOf((await upload(member, "data.bin", "z", "application/x-custom")).pathId), "application/x-custom");
    assert.equal(await contentTypeOf((await upload(member, "page.html", "<p>", "text/html")).pathId), "text/html");
    assert.equal(await contentTypeOf((await upload(member, "notes.txt", "héllo", "text/plain")).pathId), "text/plain; charset=utf-8");
    assert.equal(await contentTypeOf((await upload(member, "latin1.txt", Buffer.from([0x68, 0xe9]), "text/plain")).pathId), "text/plain");
    // FormData sends a Blob without a type as application/octet-stream: kept as declared.
    assert.equal(await contentTypeOf((await upload(member, "blob.png", "x")).pathId), "application/octet-stream");
  });

  test("a part without a Content-Type header gets the type its name suggests", async () => {
    const { member } = u();
    const boundary = "----parleyboundary";
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="picture.jpg"\r\n\r\nJPEGDATA\r\n--${boundary}--\r\n`;
    const reply = assertSuccess(await postUpload(member, body, { "content-type": `multipart/form-data; boundary=${boundary}` }));
    const row = await db().selectFrom("attachments").select("content_type").where("path_id", "=", reply.url.slice("/user_uploads/".length)).executeTakeFirstOrThrow();
    assert.equal(row.content_type, "image/jpeg");
  });

  test("every kind of account may upload; credentials are required", async () => {
    const { guest, bot, owner } = u();
    for (const user of [guest, bot, owner]) {
      const file = await upload(user, "mine.txt", `by ${user.email}`);
      await assertCanDownload(user, file, `by ${user.email}`, user.email);
    }
    assertError(await postUpload(null, formOf([{ name: "a.txt", content: "a" }])), 401, "UNAUTHORIZED");
    const wrongKey = await parse(
      await fetch(`${t.url}/api/v1/user_uploads`, { method: "POST", body: formOf([{ name: "a.txt", content: "a" }]), headers: { authorization: basicAuth(owner.email, "wrong") } }),
    );
    assertError(wrongKey, 401, "INVALID_API_KEY");
  });

  test("event: `attachment` op `add` with the Attachment object, to the uploader's queues only", async () => {
    const { member, admin } = u();
    const mine = await attachmentQueue(member);
    const theirs = await attachmentQueue(admin);
    const file = await upload(member, "event.txt", "12345");
    const events = await t.queuedEvents(member, mine);
    const listed = (await attachmentsOf(member)).attachments.find((a: { id: number }) => a.id === file.id);
    assert.deepEqual(events, [{ type: "attachment", op: "add", attachment: listed, upload_space_used: await realmBytes(), id: 0 }]);
    assert.deepEqual(await t.queuedEvents(admin, theirs), []);
  });
});

// ---------------------------------------------------------------------------
// Size limit

describe("upload size limit", () => {
  let small: TestApp;
  let smallDir: string;
  before(async () => {
    smallDir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-uploads-small-"));
    small = await startTestApp({ dataDir: smallDir, maxFileUploadSizeMib: 1, bodyLimitBytes: 64 * 1024 });
  });
  after(async () => {
    await small?.close();
    fs.rmSync(smallDir, { recursive: true, force: true });
  });

  const TOO_LARGE = "File is larger than this server's configured maximum upload size (1 MiB).";

  test("a file of exactly the limit is accepted, one byte more is Zulip's error, and nothing is kept", async () => {
    const { member } = small.users;
    const exact = assertSuccess(await postUpload(member, formOf([{ name: "exact.bin", content: Buffer.alloc(1024 * 1024, 1) }]), {}, small));
    assert.equal(exact.filename, "exact.bin");
    assertError(await postUpload(member, formOf([{ name: "over.bin", content: Buffer.alloc(1024 * 1024 + 1, 1) }]), {}, small), 400, "BAD_REQUEST", TOO_LARGE);
    // Far over the limit: refused from Content-Length, before reading the body.
    assertError(await postUpload(member, formOf([{ name: "huge.bin", content: Buffer.alloc(3 * 1024 * 1024, 1) }]), {}, small), 400, "BAD_REQUEST", TOO_LARGE);
    const listed = assertSuccess(await small.api(member, "GET", "/attachments"));
    assert.deepEqual(
      listed.attachments.map((a: { name: string }) => a.name),
      ["exact.bin"],
    );
    assert.equal(listed.upload_space_used, 1024 * 1024);
    assert.deepEqual(fs.readdirSync(path.join(small.services.config.uploadsDir, ".incoming")), []);
    // The connection and the server carry on.
    assertSuccess(await small.api(member, "GET", "/users/me"));
  });

  test("the upload limit is not the body limit: other endpoints keep theirs, for files too", async () => {
    const { member } = small.users;
    // 200 KB of fields: over this server's 64 KiB body limit.
    const response = await small.api(member, "PATCH", "/settings", { full_name: "Max Member", pad: "x".repeat(200_000) }, { encoding: "multipart" });
    assertError(response, 413, "BAD_REQUEST", "Request body is too large");
    const withFile = new FormData();
    withFile.append("full_name", "Max Member");
    withFile.append("f", new Blob([Buffer.alloc(200_000)]), "f.bin");
    const fileResponse = await parse(await fetch(`${small.url}/api/v1/settings`, { method: "PATCH", body: withFile, headers: authHeaders(member) }));
    assertError(fileResponse, 413, "BAD_REQUEST", "Request body is too large");
  });

  test("a body streamed without Content-Length is counted as it arrives", async () => {
    const { member } = small.users;
    const form = formOf([{ name: "streamed.bin", content: Buffer.alloc(2 * 1024 * 1024, 7) }]);
    const encoded = new Response(form);
    const response = await parse(
      await fetch(`${small.url}/api/v1/user_uploads`, {
        method: "POST",
        body: encoded.body,
        headers: { ...authHeaders(member), "content-type": encoded.headers.get("content-type")! },
        duplex: "half",
      } as RequestInit),
    );
    assertError(response, 400, "BAD_REQUEST", TOO_LARGE);
    assertSuccess(await small.api(member, "GET", "/users/me"));
  });

  test("MAX_FILE_UPLOAD_SIZE_MIB=0 turns uploads off (an empty file still fits)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-uploads-off-"));
    const off = await startTestApp({ dataDir: dir, maxFileUploadSizeMib: 0 });
    try {
      const { member } = off.users;
      assertError(
        await postUpload(member, formOf([{ name: "a.txt", content: "a" }]), {}, off),
        400,
        "BAD_REQUEST",
        "File is larger than this server's configured maximum upload size (0 MiB).",
      );
      assertSuccess(await postUpload(member, formOf([{ name: "empty.txt", content: "" }]), {}, off));
    } finally {
      await off.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("multipart requests to other endpoints", () => {
  test("large multipart bodies under the limit go through; file parts are ignored", async () => {
    const { member } = u();
    const body = assertSuccess(await t.api(member, "PATCH", "/settings", { full_name: "Max Member", pad: "y".repeat(300_000) }, { encoding: "multipart" }));
    assert.deepEqual(body.ignored_parameters_unsupported, ["pad"]);
    const form = new FormData();
    form.append("full_name", "Max Member");
    form.append("attachment", new Blob([Buffer.alloc(500_000, 3)]), "ignored.bin");
    const withFile = assertSuccess(await parse(await fetch(`${t.url}/api/v1/settings`, { method: "PATCH", body: form, headers: authHeaders(member) })));
    assert.equal("ignored_parameters_unsupported" in withFile, false);
    assert.equal((await attachmentsOf(member)).attachments.some((a: { name: string }) => a.name === "ignored.bin"), false);
  });
});

// ---------------------------------------------------------------------------
// Serving files

describe("GET /user_uploads/{path_id}", () => {
  test("the uploader gets the bytes with Zulip's headers: inline for images, PDFs and plain text", async () => {
    const { member } = u();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]);
    const image = await upload(member, "Picture 1.png", png, "image/png");
    const response = await getFile(member, image.url);
    assert.equal(response.status, 200);
    assert.deepEqual(response.bytes, png);
    assert.equal(response.headers.get("content-type"), "image/png");
    assert.equal(response.headers.get("content-length"), String(png.length));
    assert.equal(response.headers.get("content-disposition"), 'inline; filename="Picture 1.png"');
    assert.equal(response.headers.get("cache-control"), "private, immutable");
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    assert.match(response.headers.get("content-security-policy") ?? "", /default-src 'none'/);

    const text = await getFile(member, (await upload(member, "readme.txt", "plain", "text/plain")).url);
    assert.equal(text.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(text.headers.get("content-disposition"), 'inline; filename="readme.txt"');
    const pdf = await getFile(member, (await upload(member, "doc.pdf", "%PDF", "application/pdf")).url);
    assert.equal(pdf.headers.get("content-disposition"), 'inline; filename="doc.pdf"');
  });

  test("other types are downloads; HTML and SVG are never shown inline", async () => {
    const { member } = u();
    for (const [name, type] of [
      ["archive.zip", "application/zip"],
      ["page.html", "text/html"],
      ["drawing.svg", "image/svg+xml"],
      ['a "quoted" name.bin', "application/octet-stream"],
    ] as const) {
      const file = await upload(member, name, "content", type);
      const response = await getFile(member, file.url);
      assert.equal(response.status, 200, name);
      assert.equal(response.headers.get("content-type"), type);
      const escaped = name.replace(/\\/g, "\\\\").replace(/"/g, '\\"');
      assert.equal(response.headers.get("content-disposition"), `attachment; filename="${escaped}"`);
    }
    const unicode = await upload(member, "naïve résumé.zip", "zip", "application/zip");
    assert.equal((await getFile(member, unicode.url)).headers.get("content-disposition"), "attachment; filename*=utf-8''na%C3%AFve%20r%C3%A9sum%C3%A9.zip");
  });

  test("/user_uploads/download/{path_id} always downloads", async () => {
    const { member } = u();
    const image = await upload(member, "photo.png", "png", "image/png");
    const response = await getFile(member, `/user_uploads/download/${image.pathId}`);
    assert.equal(response.status, 200);
    assert.equal(response.text, "png");
    assert.equal(response.headers.get("content-disposition"), 'attachment; filename="photo.png"');
  });

  test("a file no message links is its uploader's alone: member, admin, guest and bot get 403", async () => {
    const { member, admin, owner, guest, bot } = u();
    const file = await upload(member, "private.txt", "mine");
    await assertCanDownload(member, file, "mine");
    for (const other of [admin, owner, guest, bot]) await assertCannotDownload(other, file, other.email);
  });

  test("unknown files: 404; no or bad credentials: 401", async () => {
    const { member } = u();
    const file = await upload(member, "known.txt", "k");
    assertNotFoundPage(await getFile(member, `/user_uploads/${t.realm.id}/ab/nosuchtokennosuchtokenab/known.txt`));
    assertNotFoundPage(await getFile(member, `/user_uploads/${t.realm.id + 1}/${file.pathId.split("/").slice(1).join("/")}`));
    assertNotFoundPage(await getFile(member, `/user_uploads/download/${t.realm.id}/zz/unknown`));
    const anonymous = await getFile(null, file.url);
    assert.equal(anonymous.status, 401);
    assert.equal(JSON.parse(anonymous.text).code, "UNAUTHORIZED");
    assert.match(anonymous.headers.get("www-authenticate") ?? "", /^Basic/);
    const wrong = await getFile(null, file.url, { authorization: basicAuth(member.email, "not-the-key") });
    assert.equal(wrong.status, 401);
    assert.equal(JSON.parse(wrong.text).code, "INVALID_API_KEY");
  });

  test("a deactivated uploader cannot fetch their file", async () => {
    const leaving = await newUser("Leaving");
    const file = await upload(leaving, "left.txt", "bye");
    assertSuccess(await t.api(u().owner, "DELETE", `/users/${leaving.id}`));
    const response = await getFile(leaving, file.url);
    assert.equal(response.status, 401);
    assert.equal(JSON.parse(response.text).code, "USER_DEACTIVATED");
  });

  test("a row whose file is missing from the file store: 404 'File not found'", async () => {
    const { member } = u();
    const file = await upload(member, "vanishing.txt", "soon gone");
    await t.services.files.delete(file.pathId);
    const response = await getFile(member, file.url);
    assert.equal(response.status, 404);
    assert.equal(response.text, "<p>File not found</p>");
  });
});

// ---------------------------------------------------------------------------
// Access through messages

describe("who may download a file a message links", () => {
  test("public channel: every member, subscribed or not; guests only when subscribed", async () => {
    const sender = await newUser("Sender");
    const reader = await newUser("Reader");
    const outsider = await newUser("Outsider");
    const subscribedGuest = await newUser("Guest In", Role.GUEST);
    const otherGuest = await newUser("Guest Out", Role.GUEST);
    const channel = await newChannel(sender, [reader, subscribedGuest]);
    const file = await upload(sender, "shared.txt", "for the channel");
    await assertCannotDownload(reader, file, "before the message");
    await sendToChannel(sender, channel, `See [shared.txt](${file.url})`);
    for (const user of [sender, reader, outsider, subscribedGuest, u().bot]) await assertCanDownload(user, file, "for the channel", user.email);
    await assertCannotDownload(otherGuest, file, "guest not subscribed");
  });

  test("private channel: subscribers only", async () => {
    const sender = await newUser("Secret Sender");
    const insider = await newUser("Insider");
    const outsider = await newUser("Outsider");
    const channel = await newChannel(sender, [insider], true);
    const file = await upload(sender, "secret.txt", "classified");
    await sendToChannel(sender, channel, `[secret](${file.url})`);
    await assertCanDownload(insider, file, "classified");
    await assertCannotDownload(outsider, file, "member outside a private channel");
    // Organization administrators cannot read a private channel's messages, nor its files.
    await assertCannotDownload(u().admin, file, "admin outside a private channel");
  });

  test("direct messages: the participants only", async () => {
    const sender = await newUser("DM Sender");
    const recipient = await newUser("DM Recipient");
    const guestRecipient = await newUser("DM Guest", Role.GUEST);
    const thirdParty = await newUser("Third Party");
    const file = await upload(sender, "dm.txt", "just us");
    await sendDirect(sender, [recipient, guestRecipient], `[dm](${file.url})`);
    await assertCanDownload(recipient, file, "just us");
    await assertCanDownload(guestRecipient, file, "just us");
    await assertCannotDownload(thirdParty, file, "third party");
    await assertCannotDownload(u().owner, file, "owner outside the conversation");
  });

  test("linking someone else's file grants nothing", async () => {
    const owner = await newUser("File Owner");
    const linker = await newUser("Linker");
    const reader = await newUser("DM Reader");
    const file = await upload(owner, "owned.txt", "owned");
    await sendDirect(linker, [reader], `[not mine](${file.url})`);
    await assertCannotDownload(reader, file, "reader of a message by someone who does not own the file");
    assert.deepEqual((await attachmentsOf(owner)).attachments.find((a: { id: number }) => a.id === file.id).messages, []);
  });

  test("sending a message that links the file: `attachment` op `update` to the uploader", async () => {
    const sender = await newUser("Updater");
    const recipient = await newUser("Update Recipient");
    const file = await upload(sender, "claimed.txt", "c");
    const queue = await attachmentQueue(sender);
    const watcher = await attachmentQueue(recipient);
    const messageId = await sendDirect(sender, [recipient], `[claimed](${file.url})`);
    const listed = (await attachmentsOf(sender)).attachments.find((a: { id: number }) => a.id === file.id);
    assert.deepEqual(listed.messages.map((m: { id: number }) => m.id), [messageId]);
    assert.deepEqual(await t.queuedEvents(sender, queue), [{ type: "attachment", op: "update", attachment: listed, upload_space_used: await realmBytes(), id: 0 }]);
    assert.deepEqual(await t.queuedEvents(recipient, watcher), []);
  });

  test("GET /attachments lists the messages that link a file, with date_sent in milliseconds", async () => {
    const sender = await newUser("Lister");
    const recipient = await newUser("Listee");
    const file = await upload(sender, "listed.txt", "l");
    const first = await sendDirect(sender, [recipient], `[a](${file.url})`);
    const second = await sendDirect(sender, [recipient], `[again](${file.url})`);
    const rows = await db().selectFrom("messages").select(["id", "date_sent"]).where("id", "in", [first, second]).orderBy("id").execute();
    const listed = (await attachmentsOf(sender)).attachments.find((a: { id: number }) => a.id === file.id);
    assert.deepEqual(
      listed.messages,
      rows.map((r) => ({ id: r.id, date_sent: Number(r.date_sent) * 1000 })),
    );
  });
});

// ---------------------------------------------------------------------------
// Temporary URLs

describe("GET /api/v1/user_uploads/{realm_id}/{filename}: temporary URLs", () => {
  test("returns a URL that serves the file without credentials, for a minute", async () => {
    const { member } = u();
    const file = await upload(member, "Temp file.txt", "temporary", "text/plain");
    // The clock stands still from issue on, so a slow machine's second boundary cannot shift the window.
    const realNow = t.services.now;
    const issued = realNow();
    t.services.now = () => issued;
    try {
      const body = assertSuccess(await t.api(member, "GET", file.url));
      assert.deepEqual(Object.keys(body).sort(), ["msg", "result", "url"]);
      const lastComponent = file.pathId.split("/").pop()!;
      assert.match(body.url, new RegExp(`^/user_uploads/temporary/[^/]+/${lastComponent}$`));
      const response = await getFile(null, body.url);
      assert.equal(response.status, 200);
      assert.equal(response.text, "temporary");
      assert.equal(response.headers.get("content-type"), "text/plain; charset=utf-8");
      assert.equal(response.headers.get("content-disposition"), 'inline; filename="Temp file.txt"');
      t.services.now = () => issued + 60;
      assert.equal((await getFile(null, body.url)).status, 200);
      t.services.now = () => issued + 61;
      const expired = await getFile(null, body.url);
      assertError({ status: expired.status, headers: expired.headers, body: JSON.parse(expired.text) }, 400, "BAD_REQUEST", "Invalid token");
    } finally {
      t.services.now = realNow;
    }
  });

  test("unicode names are percent-encoded in the URL and still match", async () => {
    const { member } = u();
    const file = await upload(member, "größe.txt", "umlauts");
    const body = assertSuccess(await t.api(member, "GET", `/user_uploads/${file.pathId}`));
    assert.ok(body.url.endsWith("/gr%C3%B6%C3%9Fe.txt"), body.url);
    assert.equal((await getFile(null, body.url)).text, "umlauts");
  });

  test("bad tokens and file names: Zulip's JSON errors", async () => {
    const { member } = u();
    const file = await upload(member, "token.txt", "t");
    const other = await upload(member, "other.txt", "o");
    const url: string = assertSuccess(await t.api(member, "GET", file.url)).url;
    const [, , , token, name] = url.split("/");
    const json = (r: FileResponse): ApiResponse => ({ status: r.status, headers: r.headers, body: JSON.parse(r.text) });
    assertError(json(await getFile(null, `/user_uploads/temporary/${token}/other.txt`)), 400, "BAD_REQUEST", "Invalid filename");
    const tampered = token!.slice(0, -2) + (token!.endsWith("AA") ? "BB" : "AA");
    assertError(json(await getFile(null, `/user_uploads/temporary/${tampered}/${name}`)), 400, "BAD_REQUEST", "Invalid token");
    // The token names its attachment: pointing it at another file breaks the signature.
    const moved = token!.replace(/^\d+/, String(other.id));
    assertError(json(await getFile(null, `/user_uploads/temporary/${moved}/other.txt`)), 400, "BAD_REQUEST", "Invalid token");
    for (const junk of ["x", "0.0.x", "1.1." + "A".repeat(43), `${file.id}.1.${"A".repeat(43)}`, "%20"]) {
      assertError(json(await getFile(null, `/user_uploads/temporary/${junk}/${name}`)), 400, "BAD_REQUEST", "Invalid token");
    }
    // A deleted file's token stops working.
    assertSuccess(await t.api(member, "DELETE", `/attachments/${file.id}`));
    assertError(json(await getFile(null, url)), 400, "BAD_REQUEST", "Invalid token");
  });

  test("the same access rules as the file itself, as JSON errors", async () => {
    const { member, admin, guest } = u();
    const file = await upload(member, "api.txt", "a");
    assertError(await t.api(admin, "GET", file.url), 403, "BAD_REQUEST", "You are not authorized to view this file.");
    assertError(await t.api(guest, "GET", file.url), 403, "BAD_REQUEST", "You are not authorized to view this file.");
    assertError(await t.api(member, "GET", `/user_uploads/${t.realm.id}/00/missing/api.txt`), 404, "BAD_REQUEST", "This file does not exist or has been deleted.");
    assertError(await t.api(null, "GET", file.url), 401, "UNAUTHORIZED");
    const withExtra = assertSuccess(await t.api(member, "GET", file.url, { extra: 1 }));
    assert.deepEqual(withExtra.ignored_parameters_unsupported, ["extra"]);
  });
});

// ---------------------------------------------------------------------------
// GET /attachments and DELETE /attachments/{id}

describe("GET /attachments", () => {
  test("only the caller's own files, in upload order; upload_space_used counts the organization", async () => {
    const lister = await newUser("Own Lister");
    const otherUser = await newUser("Other Lister");
    const empty = await attachmentsOf(lister);
    assert.deepEqual(Object.keys(empty).sort(), ["attachments", "msg", "result", "upload_space_used"]);
    assert.deepEqual(empty.attachments, []);
    const a = await upload(lister, "a.txt", "aaa");
    await upload(otherUser, "theirs.txt", "zz");
    const b = await upload(lister, "b.txt", "bbbbb");
    const body = await attachmentsOf(lister);
    assert.deepEqual(
      body.attachments.map((x: { id: number; name: string; size: number }) => [x.id, x.name, x.size]),
      [
        [a.id, "a.txt", 3],
        [b.id, "b.txt", 5],
      ],
    );
    assert.equal(body.upload_space_used, await realmBytes());
    assert.deepEqual((await t.api(lister, "GET", "/attachments", { junk: "1" })).body.ignored_parameters_unsupported, ["junk"]);
  });
});

describe("DELETE /attachments/{attachment_id}", () => {
  test("the uploader deletes: bare success, row, links and file gone, `remove` event", async () => {
    const sender = await newUser("Deleter");
    const recipient = await newUser("Delete Recipient");
    const file = await upload(sender, "doomed.txt", "bye");
    await sendDirect(sender, [recipient], `[doomed](${file.url})`);
    await assertCanDownload(recipient, file, "bye");
    const queue = await attachmentQueue(sender);
    const watcher = await attachmentQueue(recipient);

    const response = await t.api(sender, "DELETE", `/attachments/${file.id}`);
    assertSuccess(response);
    assert.deepEqual(response.body, { result: "success", msg: "" });
    assert.equal(await storedBytes(t, file.pathId), undefined);
    assert.equal((await attachmentsOf(sender)).attachments.some((a: { id: number }) => a.id === file.id), false);
    assert.deepEqual(await db().selectFrom("attachment_messages").selectAll().where("attachment_id", "=", file.id).execute(), []);
    assert.deepEqual(await t.queuedEvents(sender, queue), [
      { type: "attachment", op: "remove", attachment: { id: file.id }, upload_space_used: await realmBytes(), id: 0 },
    ]);
    assert.deepEqual(await t.queuedEvents(recipient, watcher), []);
    // Gone for everyone.
    assertNotFoundPage(await getFile(sender, file.url));
    assertNotFoundPage(await getFile(recipient, file.url));
    // Deleting again: it no longer exists.
    assertError(await t.api(sender, "DELETE", `/attachments/${file.id}`), 400, "BAD_REQUEST", "Invalid attachment");
  });

  test("someone else's attachment (even for an owner) or an unknown ID: 'Invalid attachment', nothing changes", async () => {
    const { member, owner, admin } = u();
    const file = await upload(member, "keep.txt", "kept");
    t.clearEvents();
    for (const other of [owner, admin]) assertError(await t.api(other, "DELETE", `/attachments/${file.id}`), 400, "BAD_REQUEST", "Invalid attachment");
    for (const id of [999999, 2147483647, 99999999999]) assertError(await t.api(member, "DELETE", `/attachments/${id}`), 400, "BAD_REQUEST", "Invalid attachment");
    assert.deepEqual(t.events.filter((n) => n.event.type === "attachment"), []);
    await assertCanDownload(member, file, "kept");
    assertError(await t.api(member, "DELETE", "/attachments/abc"), 400, "BAD_REQUEST", "attachment_id is not an integer");
  });
});

// ---------------------------------------------------------------------------
// Path traversal

describe("no URL reaches outside the uploads directory", () => {
  test("'..' and encoded slashes in file URLs find nothing", async () => {
    const { member } = u();
    await upload(member, "anchor.txt", "anchor");
    const secret = path.join(dataDir, "secret.txt");
    fs.writeFileSync(secret, "TOP SECRET");
    const realm = t.realm.id;
    const attempts = [
      `/user_uploads/${realm}/../secret.txt`,
      `/user_uploads/${realm}/../../secret.txt`,
      `/user_uploads/${realm}/..%2F..%2Fsecret.txt`,
      `/user_uploads/${realm}/%2e%2e/%2e%2e/secret.txt`,
      `/user_uploads/${realm}/%252e%252e%252fsecret.txt`,
      `/user_uploads/..%2F${realm}/secret.txt`,
      `/user_uploads/download/${realm}/../../secret.txt`,
      `/user_uploads/${realm}/..\\..\\secret.txt`,
      `/user_uploads/${realm}/%00/../secret.txt`,
      "/user_uploads/../../etc/passwd",
    ];
    for (const attempt of attempts) {
      const response = await rawGet(attempt, member);
      assert.ok([400, 404].includes(response.status), `${attempt}: ${response.status} ${response.text}`);
      assert.doesNotMatch(response.text, /TOP SECRET|root:/, attempt);
      const api = await rawGet(`/api/v1${attempt}`, member);
      assert.ok([400, 404].includes(api.status), `api ${attempt}: ${api.status} ${api.text}`);
    }
  });

  test("even a stored path_id with '..' in it is never followed", async () => {
    const { member } = u();
    const secret = path.join(dataDir, "escape.txt");
    fs.writeFileSync(secret, "ESCAPED");
    const pathId = `${t.realm.id}/../../escape.txt`;
    const inserted = await db()
      .insertInto("attachments")
      .values({ realm_id: t.realm.id, owner_id: member.id, path_id: pathId, file_name: "escape.txt", content_type: "text/plain", size: 7, create_time: 0 })
      .returning("id")
      .executeTakeFirstOrThrow();
    const direct = await rawGet(`/user_uploads/${pathId}`, member);
    assert.doesNotMatch(direct.text, /ESCAPED/);
    const encoded = await rawGet(`/user_uploads/${t.realm.id}/..%2F..%2Fescape.txt`, member);
    assert.equal(encoded.status, 404);
    assert.doesNotMatch(encoded.text, /ESCAPED/);
    // Through the temporary URL as well: the lookup succeeds, the file is refused.
    const url: string = assertSuccess(await t.api(member, "GET", `/user_uploads/${t.realm.id}/..%2F..%2Fescape.txt`)).url;
    const temporary = await getFile(null, url);
    assert.equal(temporary.status, 404);
    assert.equal(temporary.text, "<p>File not found</p>");
    // Deleting the row leaves the outside file alone.
    assertError(await t.api(member, "DELETE", `/attachments/${inserted.id}`), 400, "BAD_REQUEST", "An error occurred while deleting the attachment. Please try again later.");
    assert.equal(fs.readFileSync(secret, "utf8"), "ESCAPED");
    await db().deleteFrom("attachments").where("id", "=", inserted.id).execute();
  });

  test("uploaded names cannot place a file outside its own directory", async () => {
    const { member } = u();
    for (const name of ["../../../escape-attempt.txt", "..%2F..%2Fescape-attempt.txt", "/etc/passwd", "C:\\Windows\\win.ini"]) {
      const file = await upload(member, name, "inside");
      const stored = storedPath(file.pathId);
      assert.ok(stored.startsWith(t.services.config.uploadsDir + path.sep), stored);
      assert.equal(file.pathId.split("/").length, 4, file.pathId);
      assert.equal((await storedBytes(t, file.pathId))?.toString("utf8"), "inside");
    }
    assert.equal(fs.existsSync(path.join(dataDir, "escape-attempt.txt")), false);
    assert.equal(fs.existsSync(path.join(t.services.config.uploadsDir, "escape-attempt.txt")), false);
  });
});
