// The web client in a real browser: Debian's Chromium driven by
// playwright-core against a real server (test/helpers.ts) serving the built
// client from dist/web. Signs in, chats between two people in two browser
// contexts, and watches unread counts follow what is seen and what other
// devices read. Takes the README's screenshots (docs/, with UPDATE_DOCS_SCREENSHOTS=1).
//
// Chromium comes from the system (`apt-get install chromium`); Playwright's
// own browser download is not used. Without it this file fails, loudly.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import type { Page } from "playwright-core";
import { BrowserHarness, channelLink, ROOT, sidebar, waitFor } from "./browser.ts";
import { assertSuccess, type TestApp, type TestUser } from "./helpers.ts";

const h = new BrowserHarness();
let t: TestApp;
const pageErrors = h.pageErrors;
before(async () => {
  await h.start();
  t = h.t;
});
after(() => h.close());
const newPage = (options: { width?: number; height?: number } = {}) => h.newPage(options);
const logIn = (page: Page, user: TestUser, hash = "") => h.logIn(page, user, hash);

/** The unread count beside a channel in the sidebar ("" when there is none). */
async function channelCount(page: Page, streamId: number): Promise<string> {
  const badge = sidebar(page).locator(`li[data-stream-id="${streamId}"] > .channel-row > .unread-count`);
  // allTextContents does not wait: a badge that just went away reads as "".
  return (await badge.allTextContents()).join("");
}

const createChannel = (name: string, members: TestUser[]) => h.createChannel(name, members);
const send = (user: TestUser, streamId: number, topic: string, content: string) => h.send(user, streamId, topic, content);

describe("web client", () => {
  test("GET / serves the app; its assets are precompressed and cached for good", async () => {
    const page = await fetch(t.url + "/", { headers: { "accept-encoding": "br, gzip" } });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("cache-control"), "no-cache");
    assert.equal(page.headers.get("content-encoding"), "br");
    assert.match(page.headers.get("vary") ?? "", /Cookie/);
    const html = await page.text();
    assert.ok(!html.includes("parley-session"), "no session is written into a visitor's page");
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert.ok(assets.some((s) => s.endsWith(".js")), html);
    for (const asset of assets) {
      const reply = await fetch(t.url + asset, { headers: { "accept-encoding": "gzip" } });
      assert.equal(reply.status, 200, asset);
      assert.equal(reply.headers.get("cache-control"), "public, max-age=31536000, immutable");
      assert.equal(reply.headers.get("content-encoding"), "gzip");
    }
    // The first load's JavaScript budget (issue 20): under 350 KB gzipped, counting every script the
    // browser loads to show the page (the entry and the interface it imports), not only the one the HTML names.
    const browserPage = await newPage();
    await browserPage.goto(t.url + "/");
    await browserPage.getByRole("button", { name: "Log in" }).waitFor();
    const loaded = await browserPage.evaluate(() => performance.getEntriesByType("resource").map((r) => new URL(r.name).pathname).filter((p) => p.endsWith(".js")));
    assert.ok(loaded.length >= 2, `scripts loaded: ${loaded.join(", ")}`);
    let gzipped = 0;
    for (const script of loaded) {
      const reply = await fetch(t.url + script);
      // fetch() hands back the body already decompressed: gzip it again to measure what travels.
      gzipped += gzipSync(Buffer.from(await reply.arrayBuffer())).byteLength;
    }
    assert.ok(gzipped > 0 && gzipped < 350 * 1024, `first-load JS is ${gzipped} bytes gzipped`);
    const missing = await fetch(t.url + "/assets/no-such-file.js");
    assert.equal(missing.status, 404);
    assert.equal((await missing.json()).code, "BAD_REQUEST");
    const traversal = await fetch(t.url + "/assets/..%2F..%2Fpackage.json");
    assert.equal(traversal.status, 404);
    // The API's own answers are untouched.
    const unknown = await fetch(t.url + "/json/no/such/endpoint");
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).code, "BAD_REQUEST");
  });

  test("a signed-in browser gets the page with its session written in, never cached; a stale cookie gets the plain page", async () => {
    const session = await t.login(t.users.member);
    const page = await fetch(t.url + "/", { headers: { cookie: session.cookie, "accept-encoding": "br, gzip" } });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("cache-control"), "no-store");
    assert.match(page.headers.get("vary") ?? "", /Cookie/);
    const html = await page.text();
    const written = /<script id="parley-session" type="application\/json">([^<]*)<\/script><\/head>/.exec(html);
    assert.ok(written, html);
    assert.deepEqual(JSON.parse(written[1]!), { user_id: t.users.member.id, email: t.users.member.email, csrf_token: session.csrfToken });
    assert.ok(!html.includes(t.users.member.apiKey));

    // Signed out (or a made-up cookie): the plain, cacheable page.
    assertSuccess(await t.json(session, "POST", "/logout"));
    for (const cookie of [session.cookie, "parley_session=not-a-session"]) {
      const plain = await fetch(t.url + "/", { headers: { cookie } });
      assert.equal(plain.headers.get("cache-control"), "no-cache");
      assert.ok(!(await plain.text()).includes("parley-session"));
    }

    // In the browser: a reload of a signed-in page starts without asking GET /json/session.
    const browserPage = await newPage();
    await logIn(browserPage, t.users.member);
    const asked: string[] = [];
    browserPage.on("request", (request) => asked.push(new URL(request.url()).pathname));
    await browserPage.reload();
    await sidebar(browserPage).waitFor();
    assert.ok(asked.includes("/json/register"), asked.join(", "));
    assert.ok(!asked.includes("/json/session"), asked.join(", "));
    assert.equal(await browserPage.locator("#parley-session").count(), 0, "the element is gone once read");
    assert.deepEqual(pageErrors, []);
  });

  test("the page runs under its Content-Security-Policy: no other site frames it; what the policy forbids is refused and fails the test", async () => {
    // A page of another origin frames the signed-in app (clickjacking): the browser shows nothing of it.
    const otherSite = http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(`<!doctype html><iframe src="${t.url}/" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((resolve) => otherSite.listen(0, "127.0.0.1", resolve));
    try {
      const framer = await newPage();
      await logIn(framer, t.users.member);
      await framer.goto(`http://127.0.0.1:${(otherSite.address() as AddressInfo).port}/`);
      const framed = framer.frames().find((f) => f !== framer.mainFrame());
      assert.ok(framed, "the iframe has a frame");
      assert.equal(await framed.locator("#root").count(), 0, `the app was shown in another site's frame (${framed.url()})`);
      assert.match(framed.url(), /^chrome-error:/, "Chromium's error page stands in for the refused frame");
      // The harness saw the refusal (as it would see the app break its own policy).
      await waitFor("the refusal reported", async () => pageErrors.some((e) => e.includes("frame-ancestors")));
      const refused = await h.closeExpectingViolations(framer);
      assert.ok(refused.some((v) => v.includes("frame-ancestors 'none'")), refused.join("\n"));
    } finally {
      otherSite.close();
    }

    // In the app itself, a script of no file and an image from another site are refused, and each is a page error.
    const page = await newPage();
    await logIn(page, t.users.member);
    const ran = await page.evaluate(async () => {
      const script = document.createElement("script");
      script.textContent = "window.injectedScriptRan = true";
      document.body.append(script);
      const image = document.createElement("img");
      image.src = "https://elsewhere.invalid/pixel.png";
      document.body.append(image);
      await new Promise((resolve) => setTimeout(resolve, 200));
      return (window as unknown as { injectedScriptRan?: boolean }).injectedScriptRan === true;
    });
    assert.equal(ran, false, "an inline script ran");
    await waitFor("both violations reported", async () => pageErrors.filter((e) => e.includes("CSP violation")).length >= 2);
    const violations = await h.closeExpectingViolations(page);
    assert.ok(violations.some((v) => v.includes("script-src")), violations.join("\n"));
    assert.ok(violations.some((v) => v.includes("img-src") && v.includes("elsewhere.invalid")), violations.join("\n"));
    assert.deepEqual(pageErrors, []);
  });

  test("sign-in: a wrong password is refused in place; the right one opens the chat; Log out returns to the form", async () => {
    const page = await newPage();
    await page.goto(t.url + "/");
    assert.equal(await page.getByRole("link", { name: "Forgot your password?" }).getAttribute("href"), "/accounts/password/reset/");
    await page.getByLabel("Email").fill(t.users.member.email);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Log in" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    assert.match((await alert.textContent()) ?? "", /username or password is incorrect/);
    assert.equal(await sidebar(page).count(), 0);

    await page.getByLabel("Password").fill(t.users.member.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await sidebar(page).waitFor();
    await page.getByRole("button", { name: "Max Member" }).waitFor();
    // The API key never reaches the page's storage.
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie);
    assert.ok(!stored.includes(t.users.member.apiKey), stored);

    // A reload keeps the session (the cookie), without signing in again.
    await page.reload();
    await sidebar(page).waitFor();

    await page.getByRole("button", { name: "Max Member" }).click();
    await page.getByRole("menuitem", { name: "Log out" }).click();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    await page.reload();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    assert.deepEqual(pageErrors, []);
  });

  test("the invitation link's sign-up lands in the web client signed in; Forgot your password? opens the reset form", async () => {
    const invite = assertSuccess(await t.api(t.users.admin, "POST", "/invites/multiuse", { invite_expires_in_minutes: 60, invite_as: 400 }));
    const link = new URL(invite.invite_link as string);
    const page = await newPage();
    await page.goto(t.url + link.pathname);
    await page.getByLabel("Email").fill("newcomer@example.com");
    await page.getByLabel("Full name").fill("Nina Newcomer");
    await page.getByLabel("Password").fill("a-good-long-password");
    await page.getByRole("button", { name: "Sign up" }).click();
    await sidebar(page).waitFor();
    assert.equal(new URL(page.url()).pathname, "/");
    await page.getByRole("button", { name: "Nina Newcomer" }).click();
    await page.getByRole("menuitem", { name: "Log out" }).click();
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.waitForURL(/\/accounts\/password\/reset\/$/);
    await page.getByLabel("Email").waitFor();
    assert.deepEqual(pageErrors, []);
  });

  test("two people chat in real time: local echo, live delivery, typing notices", async () => {
    const lunch = await createChannel("lunch", [t.users.member, t.users.admin]);
    const max = await newPage();
    const adam = await newPage();
    await logIn(max, t.users.member);
    await logIn(adam, t.users.admin);

    // Max opens the channel from the sidebar and starts a topic.
    await channelLink(max, "lunch").click();
    await max.waitForFunction(() => location.hash.startsWith("#narrow/channel/"));
    await max.getByRole("textbox", { name: "Topic", exact: true }).fill("pizza");
    await max.getByRole("textbox", { name: "Message", exact: true }).fill("Shall we get pizza?");
    await max.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
    assert.equal(await max.getByRole("textbox", { name: "Message", exact: true }).inputValue(), "", "Enter sends and clears the box");
    await max.getByText("Shall we get pizza?").waitFor();

    // Adam, in the same channel, sees it arrive without reloading.
    await channelLink(adam, "lunch").click();
    await adam.getByText("Shall we get pizza?").waitFor();
    // Adam goes to the topic by its header and answers there, by the Send button; Shift+Enter makes a new line.
    await adam.locator(".recipient-topic", { hasText: "pizza" }).first().click();
    await adam.waitForFunction(() => location.hash.includes("/topic/pizza"));
    await max.goto(`${t.url}/#narrow/channel/${lunch}-lunch/topic/pizza`);
    await max.locator("article.message").first().waitFor();

    await adam.getByRole("textbox", { name: "Message", exact: true }).fill("Yes!");
    await adam.getByRole("textbox", { name: "Message", exact: true }).press("Shift+Enter");
    await adam.getByRole("textbox", { name: "Message", exact: true }).pressSequentially("Margherita for me");
    // While Adam types, Max is told.
    await max.getByText("Adam Admin is typing…").waitFor();
    await adam.getByRole("button", { name: "Send", exact: true }).click();
    await max.getByText("Margherita for me").waitFor();
    await adam.getByText("Margherita for me").waitFor();
    // Sending ends the typing notice.
    await max.getByText("Adam Admin is typing…").waitFor({ state: "hidden" });

    const stored = await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 5, num_after: 0, narrow: [{ operator: "channel", operand: lunch }] });
    const contents = assertSuccess(stored).messages.map((m: { content: string }) => m.content);
    assert.deepEqual(contents.slice(-2), ["<p>Shall we get pizza?</p>", "<p>Yes!<br>\nMargherita for me</p>"]);
    // Each message once: the local echo was replaced by the real one, not added to.
    assert.equal(await max.getByText("Shall we get pizza?").count(), 1);
    assert.equal(await max.getByText("Margherita for me").count(), 1);

    // Search finds it through the server's full-text search narrow.
    await max.getByRole("combobox", { name: "Search" }).fill("margherita");
    await max.getByRole("combobox", { name: "Search" }).press("Enter");
    await max.waitForFunction(() => location.hash === "#narrow/search/margherita");
    await max.getByText("Margherita for me").waitFor();
    assert.equal(await max.getByText("Shall we get pizza?").count(), 0);
    assert.deepEqual(pageErrors, []);
  });

  test("direct messages: opened from People, echoed, counted unread for the other person, read when seen", async () => {
    const max = await newPage();
    const adam = await newPage();
    await logIn(max, t.users.member);
    await logIn(adam, t.users.admin);
    // The user list (right sidebar) opens Adam's card, whose button starts the conversation.
    await max.getByRole("complementary", { name: "User list" }).getByRole("link", { name: "Adam Admin", exact: true }).click();
    await max.getByRole("dialog", { name: "Adam Admin" }).getByRole("button", { name: "Send direct message" }).click();
    await max.waitForFunction((id) => location.hash === `#narrow/dm/${id}-dm`, t.users.admin.id);
    // No topic in a direct conversation.
    assert.equal(await max.getByRole("textbox", { name: "Topic", exact: true }).count(), 0);
    await max.getByRole("textbox", { name: "Message", exact: true }).fill("Psst, a private word");
    await max.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
    await max.getByText("Psst, a private word").waitFor();

    const dmCount = adam.getByRole("list", { name: "Views" }).getByRole("listitem").filter({ hasText: "Direct messages" }).locator(".unread-count");
    await waitFor("Adam's DM count", async () => (await dmCount.allTextContents()).join("") === "1");
    const conversation = adam.getByRole("list", { name: "Direct message conversations" }).getByRole("link", { name: "Max Member", exact: true });
    await conversation.click();
    await adam.getByText("Psst, a private word").waitFor();
    await waitFor("Adam's DM count cleared", async () => (await dmCount.allTextContents()).join("") === "");
    assert.deepEqual(pageErrors, []);
  });

  test("unread counts go down as messages are seen, and follow reads on other devices", async () => {
    const news = await createChannel("news", [t.users.member, t.users.admin]);
    const other = await createChannel("elsewhere", [t.users.member, t.users.admin]);
    for (let i = 1; i <= 5; i++) await send(t.users.admin, news, "headlines", `Headline number ${i}`);
    const otherIds = [];
    for (let i = 1; i <= 3; i++) otherIds.push(await send(t.users.admin, other, "misc", `Other thing ${i}`));

    const max = await newPage();
    await logIn(max, t.users.member);
    await waitFor("news count 5", async () => (await channelCount(max, news)) === "5");
    await waitFor("elsewhere count 3", async () => (await channelCount(max, other)) === "3");
    const unreadInTitle = async () => Number(/^\((\d+)\) /.exec(await max.title())?.[1] ?? 0);
    assert.ok((await unreadInTitle()) >= 8, await max.title());

    // Opening the channel shows the messages; seen, they become read and the count goes.
    await channelLink(max, "news").click();
    await max.getByText("Headline number 5").waitFor();
    await waitFor("news count cleared", async () => (await channelCount(max, news)) === "");
    assert.equal(await channelCount(max, other), "3");

    // A new message while the list is open and at the bottom is seen at once.
    await send(t.users.admin, news, "headlines", "Breaking: one more");
    await max.getByText("Breaking: one more").waitFor();
    await waitFor("news count stays clear", async () => (await channelCount(max, news)) === "");

    // Another device (the API) reads "elsewhere": the count follows the event, and so does the tab title.
    const before = await unreadInTitle();
    assertSuccess(await t.api(t.users.member, "POST", "/messages/flags", { messages: otherIds, op: "add", flag: "read" }));
    await waitFor("elsewhere count cleared by another device", async () => (await channelCount(max, other)) === "");
    await waitFor("title count down by 3", async () => (await unreadInTitle()) === before - 3);

    // And marking one unread elsewhere brings a count back.
    assertSuccess(await t.api(t.users.member, "POST", "/messages/flags", { messages: [otherIds[0]], op: "remove", flag: "read" }));
    await waitFor("elsewhere count back to 1", async () => (await channelCount(max, other)) === "1");
    assert.deepEqual(pageErrors, []);
  });

  test("long histories: virtualized, scrolled back page by page to the first message; the far end is let go and fetched again", async () => {
    const history = await createChannel("history", [t.users.member, t.users.admin]);
    // More than the client holds of one list (MAX_LIST_LENGTH, 1,000): scrolling back lets the newest go.
    const total = 1150;
    const idOf = new Map<number, number>();
    for (let i = 1; i <= total; i += 25) {
      await Promise.all(Array.from({ length: Math.min(25, total - i + 1) }, async (_, k) => idOf.set(i + k, await send(t.users.admin, history, "archive", `History line ${i + k}`))));
    }
    assertSuccess(await t.api(t.users.member, "POST", "/mark_stream_as_read", { stream_id: history }));
    const max = await newPage();
    await logIn(max, t.users.member);
    await max.goto(`${t.url}/#narrow/channel/${history}-history`);
    // Nothing unread: the list opens at the newest message.
    await max.getByText(`History line ${total}`, { exact: true }).waitFor();
    const rendered = () => max.locator("article.message").count();
    assert.ok((await rendered()) < 60, `${await rendered()} rows in the DOM`);
    const list = max.getByRole("log", { name: "Messages" });
    await waitFor("the first message after scrolling back", async () => {
      await list.evaluate((el) => el.scrollTo(0, 0));
      await new Promise((resolve) => setTimeout(resolve, 150));
      return (await max.getByText("History line 1", { exact: true }).count()) > 0;
    }, 60_000);
    assert.ok((await rendered()) < 60, `${await rendered()} rows in the DOM after scrolling back`);

    // Down again: the newest messages were let go, so they are asked for again (anchored after what is held).
    const askedNewer: string[] = [];
    max.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/json/messages" && Number(url.searchParams.get("num_after")) > 0) askedNewer.push(url.searchParams.get("anchor")!);
    });
    await waitFor("the newest message after scrolling down", async () => {
      await list.evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await new Promise((resolve) => setTimeout(resolve, 150));
      return (await max.getByText(`History line ${total}`, { exact: true }).count()) > 0;
    }, 60_000);
    assert.ok(askedNewer.length > 0, "the newest end was fetched again");
    assert.ok((await rendered()) < 60, `${await rendered()} rows in the DOM after scrolling down`);

    // A message's /near/ link (as "Copy link" writes it): the list around that message, which is
    // selected and on screen; in a new page, and from a list that does not hold it.
    const selected = () => max.locator("article.message.selected").getAttribute("data-message-id");
    const nearHash = (line: number) => `#narrow/channel/${history}-history/topic/archive/near/${idOf.get(line)}`;
    const onScreen = async (line: number) => {
      const box = await max.getByText(`History line ${line}`, { exact: true }).boundingBox();
      const view = await list.boundingBox();
      return box !== null && view !== null && box.y >= view.y && box.y + box.height <= view.y + view.height;
    };
    await max.evaluate((hash) => (window.location.hash = hash), nearHash(400));
    await waitFor("message 400 selected", async () => (await selected()) === String(idOf.get(400)));
    await waitFor("message 400 on screen", () => onScreen(400));
    const fresh = await newPage();
    await h.logIn(fresh, t.users.member, nearHash(777));
    await waitFor("message 777 selected in a new page", async () => (await fresh.locator("article.message.selected").getAttribute("data-message-id")) === String(idOf.get(777)));
    assert.ok(await fresh.getByText("History line 777", { exact: true }).isVisible());
    assert.deepEqual(pageErrors, []);
  });

  test("reconnects after the event queue is lost or the network breaks, then shows what it missed", async () => {
    const ops = await createChannel("ops", [t.users.member, t.users.admin]);
    const max = await newPage();
    await logIn(max, t.users.member);
    await max.goto(`${t.url}/#narrow/channel/${ops}-ops`);
    await max.locator(".compose").waitFor();
    // The server forgets every queue (as after a restart): the next poll gets BAD_EVENT_QUEUE_ID.
    const queues = t.services.queues;
    for (const queueId of await queues.queueIdsOf(t.users.member.id)) await queues.remove(queueId, t.users.member.id);
    await send(t.users.admin, ops, "status", "All systems go");
    await max.getByText("All systems go").waitFor();

    // The network breaks: polls fail, the page says it is reconnecting; when it comes back, what was sent meanwhile arrives.
    await max.route("**/json/events?*", (route) => route.abort("connectionrefused"));
    // A poll already waiting is answered by this message's event; the next one fails.
    await send(t.users.admin, ops, "status", "During the break");
    await max.getByRole("status").filter({ hasText: "Reconnecting…" }).waitFor();
    await max.unroute("**/json/events?*");
    await max.getByText("During the break").waitFor();
    await max.getByText("Reconnecting…").waitFor({ state: "hidden" });
    assert.deepEqual(pageErrors, []);
  });

  // The README's screenshots: written to docs/ with UPDATE_DOCS_SCREENSHOTS=1 (else to the temporary directory, so a test run leaves the tree as it was).
  test("screenshots of the main view: desktop, phone and dark (docs/screenshot-*.png)", async () => {
    const design = await createChannel("design", [t.users.member, t.users.admin, t.users.owner]);
    await send(t.users.owner, design, "new logo", "Here is the brief for the **new logo**:\n\n> Simple, friendly, works at 16 px.\n\nDeadline: Friday :rocket:");
    const code = await send(t.users.admin, design, "new logo", "A first sketch of the colour table:\n\n```python\nPALETTE = {\"primary\": \"#4f46e5\", \"accent\": 0xFFB020}\ndef tint(name):\n    return PALETTE[name]\n```");
    assertSuccess(await t.api(t.users.member, "POST", `/messages/${code}/reactions`, { emoji_name: "heart_eyes" }));
    assertSuccess(await t.api(t.users.owner, "POST", `/messages/${code}/reactions`, { emoji_name: "+1" }));
    await send(t.users.owner, design, "new logo", "@**Max Member** can you check it against the dark theme?");
    await send(t.users.admin, design, "fonts", "| Font | Weight |\n| --- | --- |\n| Inter | 600 |\n| Source Serif | 400 |");
    const page = await newPage({ width: 1280, height: 800 });
    await logIn(page, t.users.member);
    await page.goto(`${t.url}/#narrow/channel/${design}-design/topic/new.20logo`);
    await page.getByText("can you check it").waitFor();
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("Looks great, checking now");
    const dir = process.env.UPDATE_DOCS_SCREENSHOTS === "1" ? path.join(ROOT, "docs") : fs.mkdtempSync(path.join(os.tmpdir(), "parley-docs-"));
    const shoot = async (target: Page, name: string) => {
      // Fonts and images settled, the caret's blink aside.
      await target.evaluate(() => document.fonts.ready);
      const file = path.join(dir, name);
      await target.screenshot({ path: file, caret: "hide", animations: "disabled" });
      assert.ok(fs.statSync(file).size > 10_000, name);
    };
    await shoot(page, "screenshot-main.png");

    // Dark: the user's color_scheme setting, followed live.
    assertSuccess(await t.api(t.users.member, "PATCH", "/settings", { color_scheme: 2 }));
    await waitFor("the dark theme", async () => (await page.evaluate(() => document.documentElement.dataset.theme)) === "dark");
    await shoot(page, "screenshot-dark.png");
    assertSuccess(await t.api(t.users.member, "PATCH", "/settings", { color_scheme: 1 }));

    // Phone size: the same topic, the sidebars as closed drawers.
    const phone = await newPage({ width: 390, height: 844 });
    await logIn(phone, t.users.member, `#narrow/channel/${design}-design/topic/new.20logo`);
    await phone.getByText("can you check it").waitFor();
    await shoot(phone, "screenshot-phone.png");
    assert.deepEqual(pageErrors, []);
  });
});

