// An accessibility scan (axe-core, WCAG 2.1 A/AA and best practices) of the
// web client's main views in Debian's Chromium: no serious or critical
// finding on the inbox, a topic, compose with the typeahead open, and the
// settings page, at desktop size, at phone size and in the dark theme.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { axeFindings, BrowserHarness } from "./browser.ts";
import { type TestApp } from "./helpers.ts";

const h = new BrowserHarness();
let t: TestApp;
let channel: number;
const NAME = "a11y-room";
before(async () => {
  await h.start();
  t = h.t;
  channel = await h.createChannel(NAME, [t.users.member, t.users.admin]);
  await h.send(t.users.admin, channel, "plans", "Hello @**Max Member**, see `code` and **bold**");
  await h.send(t.users.member, channel, "plans", "```js\nconst x = 1;\n```");
  await h.send(t.users.admin, channel, "other", "A second topic, still unread");
});
after(() => h.close());

async function assertAccessible(page: Page, what: string): Promise<void> {
  const findings = await axeFindings(page);
  assert.deepEqual(findings, [], `${what}: ${JSON.stringify(findings, null, 1)}`);
}

describe("web client: accessibility scan", () => {
  for (const [size, viewport, scheme] of [
    ["desktop", { width: 1280, height: 800 }, "light"],
    ["phone", { width: 390, height: 844 }, "light"],
    ["dark", { width: 1280, height: 800 }, "dark"],
  ] as const) {
    test(`main views at ${size} size have no serious or critical finding`, async () => {
      const page = await h.newPage(viewport);
      await page.emulateMedia({ colorScheme: scheme });
      await h.logIn(page, t.users.member, "#inbox");
      await page.getByRole("main", { name: "Inbox" }).waitFor();
      await page.locator(".inbox-row, .inbox [role=row], .inbox li").first().waitFor();
      await assertAccessible(page, "inbox");

      await page.goto(`${t.url}/#narrow/channel/${channel}-${NAME}/topic/plans`);
      await page.locator("article.message").nth(1).waitFor();
      await assertAccessible(page, "topic");

      const box = page.getByRole("textbox", { name: "Message" });
      await box.click();
      await box.pressSequentially("hi @Ad");
      await page.getByRole("listbox").first().waitFor();
      await assertAccessible(page, "compose with the typeahead open");
      await box.press("Escape");

      await page.goto(`${t.url}/#settings`);
      await page.getByRole("heading", { name: "Profile" }).waitFor();
      await assertAccessible(page, "settings");
      assert.deepEqual(h.pageErrors, []);
    });
  }
});
