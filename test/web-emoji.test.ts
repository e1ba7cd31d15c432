// Emoji in the web client, in a real browser against a real server: the
// typeahead ranks emoji as Zulip's sort_emojis does (exact name, popular emoji,
// name prefix, word prefix; one entry per emoji), the edit history shows emoji
// and math as the message list does, and the emoji picker's category tabs fit.
// Screenshots go to $SCREENSHOT_DIR (default: the system's temporary directory).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { BrowserHarness, channelLink, waitFor } from "./browser.ts";

const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? path.join(os.tmpdir(), "parley-web-screenshots");
const h = new BrowserHarness();
before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await h.start();
});
after(() => h.close());

describe("web client: emoji", () => {
  test("the emoji typeahead ranks as Zulip: popular and exact names first, one entry per emoji", async () => {
    const t = h.t;
    await h.createChannel("emoji-rank", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await channelLink(page, "emoji-rank").click();
    const box = page.getByRole("textbox", { name: "Message", exact: true });
    const suggestions = page.getByRole("listbox", { name: "Suggestions" });
    const names = async () => (await suggestions.getByRole("option").allTextContents()).map((s) => s.trim());

    // :thu offers 👍 (popular, a word starts with "thu") before anything else.
    await box.pressSequentially(":thu");
    await suggestions.getByRole("option").first().waitFor();
    await waitFor("thumbs up first", async () => (await names())[0]?.includes(":thumbs_up:") ?? false);
    const thu = await names();
    assert.match(thu[0] ?? "", /👍/u);
    assert.ok(!thu.some((n) => n.includes("🫰") && thu.indexOf(n) < 1), `👍 before 🫰: ${thu.join(" | ")}`);
    // One entry per emoji: 👍 is offered once although it has three names.
    assert.equal(thu.filter((n) => n.includes("👍")).length, 1, thu.join(" | "));
    // Names starting with the query before names with a later word starting with it.
    const prefixAt = thu.findIndex((n) => /:thu[a-z_]*:/.test(n) && !n.includes("👍"));
    const wordAt = thu.findIndex((n) => /:[a-z]+_thu/.test(n));
    if (wordAt >= 0) assert.ok(prefixAt >= 0 && prefixAt < wordAt, thu.join(" | "));
    await box.press("Escape");
    await box.fill("");

    // An exact name comes first: :car is 🚗 before car_… and cart names.
    await box.pressSequentially(":car");
    await waitFor("an exact match first", async () => (await names())[0]?.includes(":car:") ?? false);
    const car = await names();
    assert.match(car[0] ?? "", /🚗/u, car.join(" | "));
    await box.press("Escape");
    await box.fill("");

    // Popular emoji whose word matches come before other prefixes: :ta → tada first.
    await box.pressSequentially(":ta");
    await waitFor("tada first", async () => (await names())[0]?.includes(":tada:") ?? false);
    await box.press("Escape");
    await box.fill("");
  });

  test("edit history shows emoji and math as the message list does", async () => {
    const t = h.t;
    const channel = await h.createChannel("emoji-history", [t.users.member]);
    const id = await h.send(t.users.member, channel, "launch", "Go :rocket: with $$x^2$$");
    const edited = await t.api(t.users.member, "PATCH", `/messages/${id}`, { content: "Went :rocket: with $$y^2$$ now" });
    assert.equal(edited.status, 200);
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-emoji-history/topic/launch`);
    const row = page.locator(`article.message[data-message-id="${id}"]`);
    await row.getByText("now").waitFor();
    await row.hover();
    await row.getByRole("button", { name: "Message actions" }).click();
    await page.getByRole("menu", { name: "Message actions" }).getByRole("menuitem", { name: "View edit history" }).click();
    const history = page.getByRole("dialog", { name: "Message edit history" });
    const contents = history.locator(".history-content");
    await waitFor("both versions", async () => (await contents.count()) === 2);
    await page.screenshot({ path: path.join(SCREENSHOTS, "emoji-edit-history.png") });
    for (const content of await contents.all()) {
      // What is seen: the text without KaTeX's MathML copy (for screen readers, checked below to be visually hidden).
      const text = await content.evaluate((e) => {
        const copy = e.cloneNode(true) as HTMLElement;
        for (const m of copy.querySelectorAll(".katex-mathml")) m.remove();
        return (copy.textContent ?? "").replace(/\s+/g, " ");
      });
      assert.ok(!text.includes(":rocket:"), `the emoji shows as 🚀, not its name: ${text}`);
      assert.ok(text.includes("🚀"), text);
      assert.ok(!text.includes("x^2") && !text.includes("y^2"), `no TeX source shown: ${text}`);
      // The math shows once: KaTeX's MathML copy is visually hidden, as in the message list.
      for (const mathml of await content.locator(".katex-mathml").all()) {
        const box = await mathml.boundingBox();
        assert.ok(box === null || (box.width <= 1 && box.height <= 1), `MathML hidden: ${JSON.stringify(box)}`);
      }
    }
    // Emoji as large as in the message itself.
    const inList = await row.locator(".message_content span.emoji").first().evaluate((e) => getComputedStyle(e).fontSize);
    const inHistory = await contents.first().locator("span.emoji").first().evaluate((e) => getComputedStyle(e).fontSize);
    assert.equal(inHistory, inList);
  });

  test("the emoji picker's category tabs are all visible, at desktop and phone size", async () => {
    const t = h.t;
    const channel = await h.createChannel("emoji-picker", [t.users.member]);
    const id = await h.send(t.users.member, channel, "tabs", "Pick one");
    for (const [size, viewport] of [["desktop", { width: 1280, height: 800 }], ["phone", { width: 390, height: 844 }]] as const) {
      const page = await h.newPage(viewport);
      await h.logIn(page, t.users.member, `#narrow/channel/${channel}-emoji-picker/topic/tabs`);
      const row = page.locator(`article.message[data-message-id="${id}"]`);
      await row.getByText("Pick one").waitFor();
      await row.click();
      await row.hover();
      const add = row.getByRole("button", { name: "Add emoji reaction" });
      if (await add.isVisible()) await add.click();
      else {
        await row.getByRole("button", { name: "Message actions" }).click();
        await page.getByRole("menuitem", { name: "Add emoji reaction" }).click();
      }
      const tabs = page.getByRole("toolbar", { name: "Emoji categories" });
      await tabs.getByRole("button").nth(1).waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, `emoji-picker-tabs-${size}.png`) });
      const strip = await tabs.evaluate((e) => ({ left: e.getBoundingClientRect().left, right: e.getBoundingClientRect().right, scroll: e.scrollWidth, client: e.clientWidth }));
      assert.ok(strip.scroll <= strip.client, `${size}: the tabs fit without scrolling (${strip.scroll} > ${strip.client})`);
      for (const tab of await tabs.getByRole("button").all()) {
        const box = await tab.boundingBox();
        assert.ok(box !== null && box.x >= strip.left - 0.5 && box.x + box.width <= strip.right + 0.5, `${size}: tab ${await tab.getAttribute("aria-label")} inside the strip`);
        // The whole glyph is seen: the button is not cut vertically either.
        const cut = await tab.evaluate((e) => e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1);
        assert.ok(!cut, `${size}: tab ${await tab.getAttribute("aria-label")} not clipped`);
      }
      await page.close();
    }
  });
});
