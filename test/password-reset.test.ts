// Password reset by email (issue 20): the request page, the email in the
// outbox, the one-time link's page, and what setting a password through it
// does (sessions, other links, signing the browser in).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { assertError, assertSuccess, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

let counter = 0;
async function freshUser(): Promise<TestUser> {
  counter += 1;
  return t.createUser(`Reset User ${counter}`);
}

interface Page {
  status: number;
  headers: Headers;
  text: string;
}

async function get(urlPath: string): Promise<Page> {
  const response = await fetch(t.url + urlPath, { redirect: "manual" });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

async function post(urlPath: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> {
  const response = await fetch(t.url + urlPath, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function outboxTo(address: string): any[] {
  const dir = path.join(t.services.config.dataDir, "outbox");
  if (!fs.existsSync(dir)) return [];
  // A file being written in the background may not parse yet: it is counted once it does.
  const parsed = (f: string) => {
    try {
      return JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
    } catch {
      return undefined;
    }
  };
  return fs
    .readdirSync(dir)
    .sort()
    .map(parsed)
    .filter((m) => m?.to === address);
}

/** The emails to `address` once `count` have arrived (they are sent after the reply). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function waitForMail(address: string, count: number): Promise<any[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const mails = outboxTo(address);
    if (mails.length >= count) return mails;
    assert.ok(Date.now() < deadline, `${mails.length} emails to ${address}, expected ${count}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Nothing more arrives for `address` (after a pause long enough for a background send). */
async function assertNoMoreMail(address: string, count: number): Promise<void> {
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(outboxTo(address).length, count);
}

const RESET = "/accounts/password/reset/";

async function requestLink(user: TestUser, expected: number): Promise<string> {
  const page = await post(RESET, { email: user.email });
  assert.equal(page.status, 200);
  const mails = await waitForMail(user.email, expected);
  const mail = mails[expected - 1];
  const match = /http:\/\/parley\.test(\/accounts\/password\/reset\/([A-Za-z0-9_-]{43})\/)/.exec(mail.text);
  assert.ok(match, mail.text);
  return match[1]!;
}

function sessionCookie(page: Page): string {
  const cookie = /^parley_session=[A-Za-z0-9_-]{43}/.exec(page.headers.get("set-cookie") ?? "")?.[0];
  assert.ok(cookie, page.headers.get("set-cookie") ?? "no Set-Cookie");
  return cookie;
}

describe("asking for a link", () => {
  test("GET: the form, as a no-store page that cannot be framed and sends no Referer", async () => {
    const page = await get(RESET);
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    assert.ok(page.text.includes('name="email"'), page.text);
    assert.equal(page.headers.get("cache-control"), "no-store");
    assert.equal(page.headers.get("x-frame-options"), "DENY");
    assert.equal(page.headers.get("referrer-policy"), "no-referrer");
    assert.match(page.headers.get("content-security-policy") ?? "", /frame-ancestors 'none'/);
    // Without the trailing slash too.
    assert.equal((await get("/accounts/password/reset")).status, 200);
  });

  test("a known address gets an email with a one-time link; the token is stored hashed", async () => {
    const user = await freshUser();
    const page = await post(RESET, { email: user.email.toUpperCase() });
    assert.equal(page.status, 200);
    assert.ok(page.text.includes("Check your email"), page.text);
    const [mail] = await waitForMail(user.email, 1);
    assert.equal(mail.kind, "password_reset");
    assert.equal(mail.subject, "Reset your password for Test Org");
    assert.match(mail.from, /^noreply@/);
    const token = /reset\/([A-Za-z0-9_-]{43})\//.exec(mail.text)![1]!;
    const rows = await t.services.storage.db.selectFrom("password_reset_tokens").selectAll().where("user_id", "=", user.id).execute();
    assert.equal(rows.length, 1);
    assert.match(rows[0]!.token_hash, /^[0-9a-f]{64}$/);
    assert.notEqual(rows[0]!.token_hash, token);
    assert.equal(rows[0]!.expires_at - rows[0]!.created_at, 24 * 3600);
  });

  test("an unknown address gets the same page and no email", async () => {
    const known = await freshUser();
    const unknown = "nobody-here@example.com";
    const a = await post(RESET, { email: unknown });
    const b = await post(RESET, { email: known.email });
    assert.equal(a.status, b.status);
    assert.equal(a.text.replace(unknown, "X"), b.text.replace(known.email, "X"));
    await waitForMail(known.email, 1);
    await assertNoMoreMail(unknown, 0);
  });

  test("bots and deactivated accounts get no email (and the same page)", async () => {
    const gone = await freshUser();
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${gone.id}`));
    for (const address of [gone.email, t.users.bot.email]) {
      const page = await post(RESET, { email: address });
      assert.equal(page.status, 200);
      assert.ok(page.text.includes("Check your email"));
    }
    await assertNoMoreMail(gone.email, 0);
    assert.equal(outboxTo(t.users.bot.email).length, 0);
  });

  test("no address: the form again with a 400 and an error", async () => {
    for (const fields of [{}, { email: "  " }] as Record<string, string>[]) {
      const page = await post(RESET, fields);
      assert.equal(page.status, 400);
      assert.ok(page.text.includes("Please enter your email address."), page.text);
    }
  });

  test("at most 2 emails an hour per account; the rest get the same page and no email", async () => {
    const user = await freshUser();
    await requestLink(user, 1);
    await requestLink(user, 2);
    const third = await post(RESET, { email: user.email });
    assert.equal(third.status, 200);
    await assertNoMoreMail(user.email, 2);
  });

  test("the address is escaped on the page", async () => {
    const page = await post(RESET, { email: "<script>x</script>@example.com" });
    assert.ok(!page.text.includes("<script>x"), page.text);
    assert.ok(page.text.includes("&lt;script&gt;"));
  });
});

describe("using the link", () => {
  test("GET shows the form (without using the link up); POST sets the password, signs in, 303 to /", async () => {
    const user = await freshUser();
    const other = await t.login(user);
    const link = await requestLink(user, 1);
    for (let i = 0; i < 2; i++) {
      const form = await get(link);
      assert.equal(form.status, 200);
      assert.ok(form.text.includes(user.email) && form.text.includes('name="new_password"'), form.text);
      assert.equal(form.headers.get("referrer-policy"), "no-referrer");
    }
    const done = await post(link, { new_password: "brand-new-pass", new_password_confirm: "brand-new-pass" });
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), "/");
    const cookie = sessionCookie(done);
    const session = assertSuccess(await t.json({ userId: user.id, cookie, csrfToken: "" }, "GET", "/session"));
    assert.equal(session.user_id, user.id);
    // Other sessions ended; the new password works, the old one not.
    assertError(await t.json(other, "GET", "/session"), 401, "UNAUTHORIZED");
    assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: "brand-new-pass" }));
    assertError(await t.api(null, "POST", "/fetch_api_key", { username: user.email, password: user.password }), 401, "AUTHENTICATION_FAILED");
    // Single use.
    const again = await get(link);
    assert.equal(again.status, 404);
    assert.ok(again.text.includes("has expired, has already been used, or is not valid"), again.text);
    assert.equal((await post(link, { new_password: "third-password", new_password_confirm: "third-password" })).status, 404);
  });

  test("using one link ends the account's other links", async () => {
    const user = await freshUser();
    const first = await requestLink(user, 1);
    const second = await requestLink(user, 2);
    assert.equal((await post(second, { new_password: "second-link", new_password_confirm: "second-link" })).status, 303);
    assert.equal((await get(first)).status, 404);
  });

  test("a password changed in the settings ends the links already sent", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    assertSuccess(await t.api(user, "PATCH", "/settings", { old_password: user.password, new_password: "changed-elsewhere" }));
    assert.equal((await get(link)).status, 404);
  });

  test("passwords that differ or are too short: the form again with a 400, the link still good", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    const differ = await post(link, { new_password: "password-one", new_password_confirm: "password-two" });
    assert.equal(differ.status, 400);
    assert.ok(differ.text.includes("The two password fields didn&#39;t match."), differ.text);
    const short = await post(link, { new_password: "abc", new_password_confirm: "abc" });
    assert.equal(short.status, 400);
    assert.ok(short.text.includes("The password is too weak."), short.text);
    const missing = await post(link, {});
    assert.equal(missing.status, 400);
    assert.equal(missing.headers.get("set-cookie"), null);
    assert.equal((await post(link, { new_password: "good-password", new_password_confirm: "good-password" })).status, 303);
  });

  test("a link expires after 24 hours", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    const realNow = t.services.now;
    const start = realNow();
    try {
      t.services.now = () => start + 24 * 3600 - 10;
      assert.equal((await get(link)).status, 200);
      t.services.now = () => start + 24 * 3600 + 1;
      assert.equal((await get(link)).status, 404);
      assert.equal((await post(link, { new_password: "too-late-pass", new_password_confirm: "too-late-pass" })).status, 404);
    } finally {
      t.services.now = realNow;
    }
  });

  test("a link of an account deactivated since does not work", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${user.id}`));
    assert.equal((await get(link)).status, 404);
    assert.equal((await post(link, { new_password: "deactivated-pass", new_password_confirm: "deactivated-pass" })).status, 404);
  });

  test("made-up tokens: the invalid-link page", async () => {
    for (const token of ["x".repeat(43), "short", "%00", "a".repeat(300)]) {
      const page = await get(`${RESET}${token}/`);
      assert.equal(page.status, 404, token);
      assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
    }
  });

  test("a post another site makes the browser send (Sec-Fetch-Site: cross-site) is refused", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    const cross = await post(link, { new_password: "cross-site-pass", new_password_confirm: "cross-site-pass" }, { "sec-fetch-site": "cross-site" });
    assert.equal(cross.status, 403);
    assert.equal(JSON.parse(cross.text).code, "CSRF_FAILED");
    assert.equal((await post(link, { new_password: "same-site-pass", new_password_confirm: "same-site-pass" }, { "sec-fetch-site": "same-origin" })).status, 303);
  });

  test("two posts of one link at once: exactly one sets the password", async () => {
    const user = await freshUser();
    const link = await requestLink(user, 1);
    const replies = await Promise.all(
      ["racer-one-pass", "racer-two-pass", "racer-three-pass"].map((p) => post(link, { new_password: p, new_password_confirm: p })),
    );
    assert.deepEqual(replies.map((r) => r.status).sort(), [303, 404, 404]);
  });
});
