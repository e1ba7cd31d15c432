// Zulip's keyboard shortcuts beyond the basics (test/web-message-actions.test.ts
// has r, c, x, n, /, arrows), in Debian's Chromium: ? lists them in a dialog,
// j/k move keyboard focus with the selection (what a screen reader follows),
// q focuses the channel filter, A/D walk the channels, P opens all direct
// messages, * the starred ones, = reacts 👍, s and S narrow to the selected
// message's channel and topic.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, sidebar, waitFor } from "./browser.ts";
import { assertSuccess, type TestApp } from "./helpers.ts";

const h = new BrowserHarness();
let t: TestApp;
before(async () => {
  await h.start();
  t = h.t;
});
after(() => h.close());

function focusedMessageId(page: Page): Promise<number | null> {
  return page.evaluate(() => {
    const el = document.activeElement;
    return el instanceof HTMLElement && el.matches("article.message") ? Number(el.dataset.messageId) : null;
  });
}

describe("web client: keyboard shortcuts", () => {
  test("? opens the list of shortcuts as a dialog; Escape closes it", async () => {
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await page.keyboard.press("?");
    const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await dialog.waitFor();
    // Each shortcut this client has is listed with its key.
    for (const name of ["Reply to the selected message", "Filter channels", "Previous / next channel", "Starred messages", "React with 👍"]) {
      await dialog.getByRole("cell", { name, exact: true }).waitFor();
    }
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    // While typing, ? is a character, not a shortcut.
    await page.keyboard.press("/");
    await page.keyboard.type("why?");
    assert.equal(await page.getByRole("dialog", { name: "Keyboard shortcuts" }).count(), 0);
    assert.deepEqual(h.pageErrors, []);
  });

  test("j/k move the selection and keyboard focus with it; = reacts 👍 to the selected message; s and S narrow to its channel and topic", async () => {
    const name = "kbd-focus";
    const channel = await h.createChannel(name, [t.users.member, t.users.admin]);
    const ids: number[] = [];
    for (const [topic, text] of [["alpha", "one"], ["alpha", "two"], ["beta", "three"]] as const) ids.push(await h.send(t.users.admin, channel, topic, text));
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `#narrow/channel/${channel}-${name}`);
    await page.locator(`article.message[data-message-id="${ids[2]}"]`).waitFor();
    await page.locator("body").click({ position: { x: 5, y: 5 } });
    // The first j selects where the list opened (the first unread), then each j/k moves one message.
    await page.keyboard.press("j");
    await waitFor("focus on a message", async () => (await focusedMessageId(page)) !== null);
    const start = (await focusedMessageId(page))!;
    const at = ids.indexOf(start);
    assert.ok(at >= 0, `focus on ${start}`);
    await page.keyboard.press(at < 2 ? "j" : "k");
    const next = ids[at < 2 ? at + 1 : at - 1]!;
    await waitFor("focus to follow the selection", async () => (await focusedMessageId(page)) === next);
    assert.equal(await page.locator(`article.message[data-message-id="${next}"]`).getAttribute("aria-current"), "true");
    // Select "two" (alpha) with k/j from wherever we are, then react and narrow.
    while ((await focusedMessageId(page)) !== ids[1]) {
      const here = ids.indexOf((await focusedMessageId(page))!);
      await page.keyboard.press(here > 1 ? "k" : "j");
      await waitFor("the selection to move", async () => (await focusedMessageId(page)) !== ids[here]);
    }
    await page.keyboard.press("=");
    await waitFor("the 👍 reaction on the server", async () => {
      const m = assertSuccess(await t.api(t.users.member, "GET", `/messages/${ids[1]}`, {})).message as { reactions: { emoji_code: string; user_id: number }[] };
      return m.reactions.some((r) => r.emoji_code === "1f44d" && r.user_id === t.users.member.id);
    });
    await page.locator(`article.message[data-message-id="${ids[1]}"] .reaction`).first().waitFor();
    // = again takes it back, as clicking your own reaction does.
    await page.keyboard.press("=");
    await waitFor("the reaction to go", async () => {
      const m = assertSuccess(await t.api(t.users.member, "GET", `/messages/${ids[1]}`, {})).message as { reactions: unknown[] };
      return m.reactions.length === 0;
    });
    await page.keyboard.press("Shift+S");
    await page.waitForURL((url) => decodeURIComponent(url.hash).endsWith("/topic/alpha"));
    await page.locator(`article.message[data-message-id="${ids[2]}"]`).waitFor({ state: "detached" });
    await page.locator(`article.message[data-message-id="${ids[0]}"]`).waitFor();
    await page.keyboard.press("s");
    await page.waitForURL((url) => url.hash === `#narrow/channel/${channel}-${name}`);
    await page.locator(`article.message[data-message-id="${ids[2]}"]`).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("q focuses the channel filter, which filters the sidebar; A/D go to the previous/next channel; P and * open their views", async () => {
    const names = ["kbd-apple", "kbd-banana", "kbd-cherry"];
    const ids: number[] = [];
    for (const name of names) ids.push(await h.createChannel(name, [t.users.guest]));
    const page = await h.newPage();
    await h.logIn(page, t.users.guest, `#narrow/channel/${ids[1]}-${names[1]}`);
    await page.locator("body").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("q");
    const filter = sidebar(page).getByRole("searchbox", { name: "Filter channels" });
    await waitFor("the filter to have focus", () => filter.evaluate((el) => el === document.activeElement));
    await page.keyboard.type("cher");
    await sidebar(page).getByRole("link", { name: "kbd-cherry", exact: true }).waitFor();
    await sidebar(page).getByRole("link", { name: "kbd-apple", exact: true }).waitFor({ state: "detached" });
    // Escape clears the filter and leaves it.
    await page.keyboard.press("Escape");
    await sidebar(page).getByRole("link", { name: "kbd-apple", exact: true }).waitFor();
    assert.equal(await filter.inputValue(), "");
    // The guest's channels, in sidebar order, are exactly these three: D and A move between them, wrapping around.
    await page.keyboard.press("Shift+D");
    await page.waitForURL((url) => url.hash === `#narrow/channel/${ids[2]}-${names[2]}`);
    await page.keyboard.press("Shift+D");
    await page.waitForURL((url) => url.hash === `#narrow/channel/${ids[0]}-${names[0]}`);
    await page.keyboard.press("Shift+A");
    await page.waitForURL((url) => url.hash === `#narrow/channel/${ids[2]}-${names[2]}`);
    await page.keyboard.press("Shift+P");
    await page.waitForURL((url) => url.hash === "#narrow/is/dm");
    await page.keyboard.press("*");
    await page.waitForURL((url) => url.hash === "#narrow/is/starred");
    assert.deepEqual(h.pageErrors, []);
  });
});
