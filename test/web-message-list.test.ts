// The message list's reading aids and muting in a real browser (Debian's
// Chromium), as in Zulip's web app: the recipient header of the conversation
// at the top stays while scrolling; long messages are condensed behind "Show
// more"; code blocks have "Copy code" and, where the organization has a
// playground for their language (live by realm_playgrounds events), "View in
// playground"; the lightbox moves between the narrow's images; topics are
// muted and followed, channels and users muted from the UI, and the counts,
// the sidebar and the message list respect it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, channelLink, sidebar, waitFor } from "./browser.ts";
import { assertSuccess, basicAuth } from "./helpers.ts";

const h = new BrowserHarness();
const SHOTS = process.env.SCREENSHOT_DIR;
before(() => h.start());
after(() => h.close());

// A 16×16 PNG.
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAPklEQVR4nGP4f8GAJMRAHQ0PHBwgiLAGuFJkhFMDVtVoehiIUY2sh1wNBFXD9dBNA+09TU48kBPT5KQlgggA6aSz6fa/K90AAAAASUVORK5CYII=",
  "base64",
);

async function upload(name: string): Promise<string> {
  const user = h.t.users.admin;
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(PNG)], { type: "image/png" }), name);
  const response = await fetch(`${h.t.url}/api/v1/user_uploads`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as Record<string, unknown>;
  assert.equal(body.result, "success", JSON.stringify(body));
  return String(body.url ?? body.uri);
}

function row(page: Page, id: number) {
  return page.locator(`article.message[data-message-id="${id}"]`);
}

describe("web client message list", () => {
  test("the recipient header of the conversation at the top stays while scrolling", async () => {
    const t = h.t;
    const name = "sticky-headers";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    for (let i = 0; i < 30; i++) await h.send(t.users.admin, channel, "first topic", `first ${i}`);
    for (let i = 0; i < 30; i++) await h.send(t.users.admin, channel, "second topic", `second ${i}`);
    assertSuccess(await t.api(t.users.member, "POST", "/mark_all_as_read"));
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}`);
    await page.getByText("second 29", { exact: true }).waitFor();
    const list = page.getByRole("log", { name: "Messages" });
    const sticky = page.locator(".sticky-recipient");
    const scrollTo = (text: string) =>
      list.evaluate((el, text) => {
        const target = [...el.querySelectorAll(".message_content")].find((c) => c.textContent?.trim() === text);
        if (target) el.scrollTop += target.getBoundingClientRect().top - el.getBoundingClientRect().top - 4;
        return target !== undefined;
      }, text);
    // Opened at the newest: the second topic's messages fill the view, its header scrolled away above.
    await waitFor("the second topic's header stuck at the top", async () => (await sticky.count()) === 1 && (await sticky.getByRole("link", { name: "second topic" }).count()) === 1);
    // Scrolled up into the first topic: its header takes the place.
    await waitFor("the first topic's messages rendered", async () => {
      await list.evaluate((el) => (el.scrollTop = 0));
      return (await list.getByText("first 10", { exact: true }).count()) === 1;
    });
    await waitFor("scrolled to the middle of the first topic", () => scrollTo("first 10"));
    await waitFor("the first topic's header stuck at the top", async () => (await sticky.getByRole("link", { name: "first topic" }).count()) === 1);
    const [stickyBox, listBox] = [await sticky.locator(".recipient-header").boundingBox(), await list.boundingBox()];
    assert.ok(stickyBox && listBox && Math.abs(stickyBox.y - listBox.y) < 2, "the sticky header sits at the top of the list");
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/message-list-sticky.png` });
    // At the very top, the first row's own header shows: no second copy.
    await list.evaluate((el) => (el.scrollTop = 0));
    await waitFor("no sticky header at the top", async () => (await sticky.count()) === 0);
    assert.deepEqual(h.pageErrors, []);
  });

  test("long messages are condensed behind Show more; code blocks copy and open in the playground", async () => {
    const t = h.t;
    const name = "long-and-code";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    const long = await h.send(t.users.admin, channel, "reading", Array.from({ length: 60 }, (_, i) => `Line ${i} of a long message.`).join("\n\n"));
    const code = await h.send(t.users.admin, channel, "reading", "```python\nprint('hi & bye')\n```\n\n```rust\nfn main() {}\n```");
    assertSuccess(await t.api(t.users.admin, "POST", "/realm/playgrounds", { name: "Python tutor", pygments_language: "Python", url_template: `${t.url}/python-playground?code={code}` }));
    const page = await h.newPage({ permissions: ["clipboard-read", "clipboard-write"] });
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}/topic/reading`);
    await row(page, code).waitFor();

    // Long: condensed, expanded and condensed again.
    const more = row(page, long).getByRole("button", { name: "Show more" });
    await more.waitFor();
    const body = row(page, long).locator(".message-body");
    const condensedHeight = (await body.boundingBox())!.height;
    assert.equal(await more.getAttribute("aria-expanded"), "false");
    await more.click();
    const less = row(page, long).getByRole("button", { name: "Show less" });
    await less.waitFor();
    await waitFor("the whole message shown", async () => (await body.boundingBox())!.height > condensedHeight * 3);
    await less.click();
    await more.waitFor();
    // A short message has no such button.
    assert.equal(await row(page, code).getByRole("button", { name: "Show more" }).count(), 0);

    // Copy code: the block's code on the clipboard.
    const blocks = row(page, code).locator(".codehilite");
    await blocks.first().hover();
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/message-list-code.png` });
    await blocks.first().getByRole("button", { name: "Copy code" }).click();
    await waitFor("the code copied", async () => (await page.evaluate(() => navigator.clipboard.readText())).trim() === "print('hi & bye')");
    // View in playground: the Python block only; it opens the playground with the code.
    assert.equal(await blocks.nth(1).getByRole("button", { name: "View in playground" }).count(), 0);
    await blocks.first().hover();
    const [popup] = await Promise.all([page.context().waitForEvent("page"), blocks.first().getByRole("button", { name: "View in playground" }).click()]);
    await waitFor("the playground opened", async () => popup.url() !== "about:blank");
    const opened = new URL(popup.url());
    assert.equal(opened.pathname, "/python-playground");
    assert.equal(opened.searchParams.get("code")?.trim(), "print('hi & bye')");
    await popup.close();

    // A playground added while the page is open (realm_playgrounds event): the Rust block gets the button.
    assertSuccess(await t.api(t.users.admin, "POST", "/realm/playgrounds", { name: "Rust playground", pygments_language: "Rust", url_template: `${t.url}/rust?code={code}` }));
    await blocks.nth(1).getByRole("button", { name: "View in playground" }).waitFor({ state: "attached" });
    assert.deepEqual(h.pageErrors, []);
  });

  test("the lightbox moves between the narrow's images with its buttons and the arrow keys", async () => {
    const t = h.t;
    const name = "gallery";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    const uris = [await upload("one.png"), await upload("two.png"), await upload("three.png")];
    await h.send(t.users.admin, channel, "pictures", `[one.png](${uris[0]})`);
    await h.send(t.users.admin, channel, "pictures", `[two.png](${uris[1]}) and [three.png](${uris[2]})`);
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}/topic/pictures`);
    const images = page.locator(".message_inline_image img");
    await waitFor("three images", async () => (await images.count()) === 3);
    await images.nth(1).click();
    const viewer = page.getByRole("dialog", { name: "Image viewer" });
    await viewer.waitFor();
    const shown = () => viewer.locator("img.lightbox-image").getAttribute("alt");
    const open = () => viewer.getByRole("link", { name: "Open original" }).getAttribute("href");
    assert.equal(await shown(), "two.png");
    await viewer.getByText("2 of 3").waitFor();
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/message-list-lightbox.png` });
    await viewer.getByRole("button", { name: "Next image" }).click();
    assert.equal(await shown(), "three.png");
    assert.equal(await open(), uris[2]);
    await viewer.getByRole("button", { name: "Next image" }).click();
    assert.equal(await shown(), "one.png");
    await page.keyboard.press("ArrowLeft");
    assert.equal(await shown(), "three.png");
    await page.keyboard.press("ArrowLeft");
    assert.equal(await shown(), "two.png");
    await page.keyboard.press("ArrowRight");
    assert.equal(await shown(), "three.png");
    await page.keyboard.press("Escape");
    await viewer.waitFor({ state: "hidden" });
    assert.deepEqual(h.pageErrors, []);
  });
});

describe("web client muting and following", () => {
  test("a topic muted and followed, a channel muted from the topic menu: counts and sidebar follow", async () => {
    const t = h.t;
    const name = "mute-me";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    await h.send(t.users.admin, channel, "noisy", "noise 1");
    await h.send(t.users.admin, channel, "quiet", "calm 1");
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}/topic/noisy`);
    const header = page.locator(".message-row .recipient-header").first();
    await header.waitFor();
    const menu = page.getByRole("menu", { name: "Topic options" });
    const choose = async (item: string) => {
      await header.getByRole("button", { name: "Topic options" }).click();
      await menu.getByRole("menuitem", { name: item }).click();
    };
    // Mute the topic from its recipient header; follow it; mute it again.
    await choose("Mute topic");
    await header.getByText("Muted", { exact: true }).waitFor();
    const policy = async () => {
      const topics = assertSuccess(await t.api(t.users.member, "POST", "/register", { fetch_event_types: ["user_topic"] })).user_topics as { stream_id: number; topic_name: string; visibility_policy: number }[];
      return topics.find((x) => x.stream_id === channel && x.topic_name === "noisy")?.visibility_policy;
    };
    assert.equal(await policy(), 1);
    await header.getByRole("button", { name: "Topic options" }).click();
    await menu.waitFor();
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/message-list-topic-menu.png` });
    await page.keyboard.press("Escape");
    await choose("Follow topic");
    await header.getByText("Followed", { exact: true }).waitFor();
    assert.equal(await policy(), 3);
    await header.getByRole("button", { name: "Topic options" }).click();
    await menu.getByRole("menuitem", { name: "Unfollow topic" }).waitFor();
    await menu.getByRole("menuitem", { name: "Mute topic" }).click();
    await header.getByText("Muted", { exact: true }).waitFor();

    // New messages in both topics: only the quiet topic's count for the channel and the inbox.
    await page.goto(`${t.url}/#inbox`);
    const channelCount = channelLink(page, name).locator("xpath=..").locator(".unread-count");
    const inboxCount = sidebar(page).getByRole("link", { name: "Inbox", exact: true }).locator("xpath=..").locator(".unread-count");
    await waitFor("the quiet topic's unread counted", async () => (await channelCount.textContent()) === "1");
    const inboxBefore = Number(await inboxCount.textContent());
    await h.send(t.users.admin, channel, "noisy", "noise 2");
    await h.send(t.users.admin, channel, "quiet", "calm 2");
    await waitFor("the new quiet message counted", async () => (await channelCount.textContent()) === "2");
    assert.equal(Number(await inboxCount.textContent()), inboxBefore + 1, "the inbox count leaves out the muted topic");

    // Mute the channel: no count at all; unmute it again.
    await page.goto(`${t.url}/#narrow/channel/${channel}-${name}/topic/quiet`);
    await header.waitFor();
    await choose("Mute channel");
    const channelItem = channelLink(page, name).locator("xpath=../..");
    await waitFor("the channel muted", async () => (await channelItem.getAttribute("class"))?.includes("muted") === true);
    assert.equal(await channelItem.locator(".unread-count").count(), 0);
    const subs = assertSuccess(await t.api(t.users.member, "GET", "/users/me/subscriptions")).subscriptions as { stream_id: number; is_muted: boolean }[];
    assert.equal(subs.find((s) => s.stream_id === channel)?.is_muted, true);
    await header.getByText("Muted", { exact: true }).waitFor();
    await choose("Unmute channel");
    await waitFor("the channel unmuted", async () => (await channelItem.getAttribute("class"))?.includes("muted") !== true);
    assert.deepEqual(h.pageErrors, []);
  });

  test("a muted user's messages are hidden behind Show message, and unmuting shows them again", async () => {
    const t = h.t;
    const name = "mute-user";
    const channel = await h.createChannel(name, [t.users.member, t.users.moderator]);
    const first = await h.send(t.users.moderator, channel, "chatter", "Something only a muted user would say");
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}/topic/chatter`);
    await row(page, first).getByText("Something only a muted user would say").waitFor();
    await row(page, first).hover();
    await row(page, first).getByRole("button", { name: "Message actions" }).click();
    await page.getByRole("menu", { name: "Message actions" }).getByRole("menuitem", { name: "Mute this user" }).click();
    await row(page, first).getByText("This message was hidden because you have muted the sender.").waitFor();
    assert.equal(await row(page, first).getByText("Something only a muted user would say").count(), 0);
    await row(page, first).getByText("Muted user", { exact: true }).waitFor();
    const muted = assertSuccess(await t.api(t.users.member, "POST", "/register", { fetch_event_types: ["muted_users"] })).muted_users as { id: number }[];
    assert.deepEqual(muted.map((m) => m.id), [t.users.moderator.id]);

    // A new message from them arrives hidden, and uncounted (the server marks it read).
    const second = await h.send(t.users.moderator, channel, "chatter", "More from the muted user");
    await row(page, second).getByText("This message was hidden because you have muted the sender.").waitFor();
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/message-list-muted-user.png` });
    await row(page, second).getByRole("button", { name: "Show message" }).click();
    await row(page, second).getByText("More from the muted user").waitFor();
    assert.equal(await channelLink(page, name).locator("xpath=..").locator(".unread-count").count(), 0);

    // Unmuted: every message shows again.
    await row(page, first).hover();
    await row(page, first).getByRole("button", { name: "Message actions" }).click();
    await page.getByRole("menu", { name: "Message actions" }).getByRole("menuitem", { name: "Unmute this user" }).click();
    await row(page, first).getByText("Something only a muted user would say").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("desktop notifications: followed topics notify, muted topics only for a mention, muted users never", async () => {
    const t = h.t;
    const name = "notify-me";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin, t.users.moderator]);
    await h.send(t.users.admin, channel, "follow-me", "start");
    await h.send(t.users.admin, channel, "hush", "start");
    assertSuccess(await t.api(t.users.member, "POST", "/user_topics", { stream_id: channel, topic: "follow-me", visibility_policy: 3 }));
    assertSuccess(await t.api(t.users.member, "POST", "/user_topics", { stream_id: channel, topic: "hush", visibility_policy: 1 }));
    assertSuccess(await t.api(t.users.member, "POST", `/users/me/muted_users/${t.users.moderator.id}`));
    const page = await h.newPage();
    // A hidden tab whose browser allows notifications: what the client shows is recorded.
    // (A script text: the test's compiled functions would call helpers the page lacks.)
    await page.addInitScript(`
      window.__shown = [];
      window.Notification = function (title, options) { window.__shown.push((options && options.body) || ""); return { close() {}, onclick: null }; };
      window.Notification.permission = "granted";
      window.Notification.requestPermission = () => Promise.resolve("granted");
      Object.defineProperty(document, "hidden", { get: () => true, configurable: true });
    `);
    await h.logIn(page, t.users.member, "#inbox");
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    const dm = (from: typeof t.users.admin, content: string) => t.api(from, "POST", "/messages", { type: "direct", to: JSON.stringify([t.users.member.id]), content });
    await h.send(t.users.admin, channel, "follow-me", "followed news");
    await h.send(t.users.admin, channel, "hush", "muted chatter");
    await h.send(t.users.admin, channel, "hush", "@**Max Member** muted but mentioned");
    await h.send(t.users.admin, channel, "plain", "an ordinary message");
    assertSuccess(await dm(t.users.moderator, "from a muted user"));
    assertSuccess(await dm(t.users.admin, "the last one"));
    const shown = () => page.evaluate(() => (window as unknown as { __shown: string[] }).__shown);
    await waitFor("the last notification", async () => (await shown()).some((b) => b.includes("the last one")));
    const bodies = await shown();
    assert.deepEqual(
      bodies.map((b) => b.replace(/^@?Max Member /, "")),
      ["followed news", "muted but mentioned", "the last one"],
    );
    assert.deepEqual(h.pageErrors, []);
  });
});
