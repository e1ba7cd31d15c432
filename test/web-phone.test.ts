// The web client at phone size (390×844) in Debian's Chromium: the sidebar
// is a drawer opened from the header's Menu button (and closed by Escape, the
// backdrop or following a link); a message's actions appear on the message
// you tapped, not on every row; no view scrolls sideways.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, sidebar } from "./browser.ts";
import { type TestApp } from "./helpers.ts";

const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? path.join(os.tmpdir(), "parley-web-screenshots");
const PHONE = { width: 390, height: 844 };
const h = new BrowserHarness();
let t: TestApp;
before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await h.start();
  t = h.t;
});
after(() => h.close());

async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

describe("web client at phone size", () => {
  test("the sidebar is a drawer: Menu opens it, a link closes it, Escape and the backdrop close it", async () => {
    const name = "phone-drawer";
    const channel = await h.createChannel(name, [t.users.member]);
    await h.send(t.users.member, channel, "hello", "From a phone");
    const page = await h.newPage(PHONE);
    await h.logIn(page, t.users.member, "#inbox");
    const menu = page.getByRole("button", { name: "Menu" });
    // Closed: not visible, not reachable by Tab or a screen reader.
    assert.equal(await sidebar(page).count(), 0);
    await menu.click();
    await sidebar(page).waitFor();
    assert.equal(await menu.getAttribute("aria-expanded"), "true");
    await page.waitForFunction(() => getComputedStyle(document.getElementById("left-sidebar")!).transform === "none");
    await page.screenshot({ path: path.join(SCREENSHOTS, "phone-drawer.png") });
    await sidebar(page).getByRole("link", { name, exact: true }).click();
    await page.waitForURL((url) => url.hash.startsWith(`#narrow/channel/${channel}-`));
    await sidebar(page).waitFor({ state: "detached" });
    await page.getByText("From a phone").waitFor();
    await menu.click();
    await sidebar(page).waitFor();
    await page.keyboard.press("Escape");
    await sidebar(page).waitFor({ state: "detached" });
    await waitForFocus(page, "Menu");
    await menu.click();
    await sidebar(page).waitFor();
    await page.mouse.click(PHONE.width - 10, PHONE.height / 2);
    await sidebar(page).waitFor({ state: "detached" });
    assert.deepEqual(h.pageErrors, []);
  });

  test("a message's buttons show on the tapped message only; no view scrolls sideways", async () => {
    const name = "phone-wide";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    const wide = await h.send(t.users.admin, channel, "wide", "```\n" + "x".repeat(300) + "\n```\n" + "y".repeat(200) + "\n\n| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| 1111111111 | 2222222222 | 3333333333 | 4444444444 | 5555555555 | 6666666666 |");
    const other = await h.send(t.users.member, channel, "wide", "short one");
    const page = await h.newPage(PHONE);
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}/topic/wide`);
    const row = (id: number) => page.locator(`article.message[data-message-id="${id}"]`);
    await row(other).waitFor();
    for (const id of [wide, other]) assert.equal(await row(id).getByRole("button", { name: "Message actions" }).isVisible(), false);
    await row(other).getByText("short one").click();
    await row(other).getByRole("button", { name: "Message actions" }).click();
    await page.getByRole("menu", { name: "Message actions" }).waitFor();
    assert.equal(await row(wide).getByRole("button", { name: "Message actions" }).isVisible(), false);
    await page.keyboard.press("Escape");
    assert.ok((await horizontalOverflow(page)) <= 0, "the topic scrolls sideways");
    await page.screenshot({ path: path.join(SCREENSHOTS, "phone-topic.png") });
    for (const [hash, title] of [["#inbox", "Inbox"], ["#channels/all", "Channels"], ["#settings", "Personal settings"], ["#people", "People"]] as const) {
      await page.goto(`${t.url}/${hash}`);
      await page.getByRole("main", { name: title }).waitFor();
      assert.ok((await horizontalOverflow(page)) <= 0, `${hash} scrolls sideways`);
    }
    assert.deepEqual(h.pageErrors, []);
  });
});

async function waitForFocus(page: Page, name: string): Promise<void> {
  await page.waitForFunction((label) => document.activeElement?.getAttribute("aria-label") === label, name);
}
