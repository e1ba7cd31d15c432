// Search in the web client, in a real browser (issue 27, defect 4): the
// matched words highlighted in a search's messages and topics (the server's
// match_content and match_subject; other views show the message as it is),
// suggestions while typing as an accessible combobox (operators, people,
// channels, the chosen channel's topics; by keyboard and by mouse), and the
// empty state of a search that finds nothing.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { axeFindings, BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess, type TestApp } from "./helpers.ts";

const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? path.join(os.tmpdir(), "parley-web-screenshots");
const h = new BrowserHarness();
let t: TestApp;
let design: number;
let logoId: number;
before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await h.start();
  t = h.t;
  design = await h.createChannel("design", [t.users.member, t.users.admin, t.users.moderator]);
  logoId = await h.send(t.users.admin, design, "new logo", "The logo is ready for review");
  await h.send(t.users.moderator, design, "colour palette", "Warm colours for the logo background");
  await h.send(t.users.moderator, design, "colour palette", "Nothing to see here");
});
after(() => h.close());

const searchBox = (page: Page) => page.getByRole("combobox", { name: "Search" });
const suggestions = (page: Page) => page.getByRole("listbox", { name: "Search suggestions" });
const option = (page: Page, name: string | RegExp) => suggestions(page).getByRole("option", { name });
const row = (page: Page, id: number) => page.locator(`article.message[data-message-id="${id}"]`);

/** The combobox's ARIA state: expanded, the listbox it controls, and the option it points at. */
async function comboState(page: Page): Promise<{ expanded: string | null; controls: string | null; active: string | null; activeText: string | null; activeSelected: string | null }> {
  return searchBox(page).evaluate((input) => {
    const active = input.getAttribute("aria-activedescendant");
    const el = active ? document.getElementById(active) : null;
    return {
      expanded: input.getAttribute("aria-expanded"),
      controls: input.getAttribute("aria-controls"),
      active,
      activeText: el?.textContent ?? null,
      activeSelected: el?.getAttribute("aria-selected") ?? null,
    };
  });
}

/** Presses ArrowDown until the option whose text starts with `text` is the active one. */
async function arrowTo(page: Page, text: string): Promise<void> {
  for (let i = 0; i < 15; i++) {
    const state = await comboState(page);
    if (state.activeText?.startsWith(text)) {
      assert.equal(state.activeSelected, "true");
      return;
    }
    await searchBox(page).press("ArrowDown");
  }
  assert.fail(`no suggestion ${text}: ${JSON.stringify(await comboState(page))}`);
}

async function typeAndWaitForOption(page: Page, text: string, wanted: string | RegExp): Promise<void> {
  await searchBox(page).pressSequentially(text);
  await option(page, wanted).waitFor();
}

describe("web client: search", () => {
  test("suggestions by keyboard build a channel, topic and word search; its matches are highlighted in content and topic, other views show the message as it is", async () => {
    const page = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(page, t.users.member, "#inbox");
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    const box = searchBox(page);
    await box.click();
    assert.equal(await box.getAttribute("aria-expanded"), "false");

    // An operator: "chan" suggests channel:, picked with the keyboard; its channels follow at once.
    await typeAndWaitForOption(page, "chan", /^channel: Messages in a channel$/);
    const open = await comboState(page);
    assert.equal(open.expanded, "true");
    assert.equal(open.controls, await suggestions(page).getAttribute("id"));
    assert.match(open.activeText ?? "", /^Search for chan/, "the text as typed comes first");
    await arrowTo(page, "channel:");
    await box.press("Enter");
    await option(page, /^channel:design Messages in #design$/).waitFor();
    assert.equal(await box.inputValue(), "channel:");
    // A channel, by name.
    await typeAndWaitForOption(page, "des", /^channel:design /);
    await arrowTo(page, "channel:design");
    await box.press("Enter");
    await suggestions(page).waitFor({ state: "detached" });
    assert.equal(await box.inputValue(), "channel:design ");
    assert.equal(await box.getAttribute("aria-expanded"), "false");
    // The chosen channel's topics (spaces written as "+").
    await typeAndWaitForOption(page, "topic:", /^topic:new\+logo Topic new logo in #design$/);
    await option(page, /^topic:colour\+palette /).waitFor();
    await arrowTo(page, "topic:new+logo");
    await box.press("Enter");
    await waitFor("topic picked", async () => (await box.inputValue()) === "channel:design topic:new+logo ");
    // Words: Enter searches what was typed (the first suggestion).
    await typeAndWaitForOption(page, "logo", /^Search for channel:design topic:new\+logo logo$/);
    await box.press("Enter");
    await page.waitForFunction((id) => location.hash === `#narrow/channel/${id}-design/topic/new.20logo/search/logo`, design);

    // The matches, highlighted in the content and in the topic header, with a visible background.
    const hit = row(page, logoId);
    await hit.locator(".message_content .highlight", { hasText: "logo" }).waitFor();
    const header = page.locator(".message-list .recipient-topic .highlight", { hasText: "logo" }).first();
    await header.waitFor();
    assert.equal(await page.locator(".message-list .recipient-topic").first().textContent(), "new logo");
    const light = await hit.locator(".highlight").first().evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(light, "rgb(255, 226, 122)");
    assert.equal(await header.evaluate((el) => getComputedStyle(el).backgroundColor), light);
    await page.screenshot({ path: path.join(SCREENSHOTS, "search-highlight.png") });

    // The same message in its topic: as it is, no highlight (the highlights belong to the search's list).
    await page.locator(".message-list .recipient-topic").first().click();
    await page.waitForFunction((id) => location.hash === `#narrow/channel/${id}-design/topic/new.20logo`, design);
    await row(page, logoId).getByText("The logo is ready for review").waitFor();
    await waitFor("no highlight outside the search", async () => (await page.locator(".message-list .highlight").count()) === 0);

    // An edit in the open search: the new text is highlighted again (GET /messages/matches_narrow).
    await page.goBack();
    await hit.locator(".message_content .highlight").waitFor();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${logoId}`, { content: "A new logo, and the old logo too" }));
    await waitFor("the edited message highlighted", async () => (await hit.locator(".message_content .highlight").allTextContents()).join(",") === "logo,logo");
    assert.equal(await hit.locator(".message_content").textContent(), "A new logo, and the old logo too");

    // Dark theme: the highlight keeps a visible background.
    await page.emulateMedia({ colorScheme: "dark" });
    await waitFor("dark highlight", async () => (await hit.locator(".highlight").first().evaluate((el) => getComputedStyle(el).backgroundColor)) === "rgb(107, 83, 0)");
    assert.deepEqual(h.pageErrors, []);
  });

  test("suggestions by mouse: a person, is: operands; Escape closes; the combobox passes an axe scan", async () => {
    const page = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(page, t.users.member, "#inbox");
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    // The address people see (the server may hide real ones behind email_address_visibility).
    const monaEmail = assertSuccess(await t.api(t.users.member, "GET", `/users/${t.users.moderator.id}`, {})).user.email as string;
    const box = searchBox(page);
    await box.click();

    // A person's name: messages sent by them, or direct messages with them.
    await typeAndWaitForOption(page, "Mona", `sender:${monaEmail} Sent by Mona Moderator`);
    await option(page, `dm:${monaEmail} Direct messages with Mona Moderator`).waitFor();
    assert.equal((await comboState(page)).expanded, "true");
    assert.equal(await suggestions(page).getByRole("option").first().getAttribute("aria-selected"), "true");
    await page.screenshot({ path: path.join(SCREENSHOTS, "search-suggestions.png") });
    const findings = await axeFindings(page);
    assert.deepEqual(findings, [], JSON.stringify(findings, null, 1));

    // Clicked: the term replaces the typed word; the box keeps its focus.
    await option(page, `sender:${monaEmail} Sent by Mona Moderator`).click();
    await suggestions(page).waitFor({ state: "detached" });
    assert.equal(await box.inputValue(), `sender:${monaEmail} `);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "search-query");

    // is: suggests its operands; Escape closes the list and keeps the text, a second Escape leaves.
    await typeAndWaitForOption(page, "is:", /^is:starred Starred messages$/);
    await option(page, /^is:mentioned /).waitFor();
    await box.press("Escape");
    await suggestions(page).waitFor({ state: "detached" });
    assert.equal(await box.getAttribute("aria-expanded"), "false");
    assert.equal(await box.inputValue(), `sender:${monaEmail} is:`);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "search-query");
    // Typing again opens it; a click on an operand completes the term.
    await typeAndWaitForOption(page, "s", /^is:starred /);
    await option(page, /^is:starred /).click();
    await waitFor("is:starred picked", async () => (await box.inputValue()) === `sender:${monaEmail} is:starred `);
    // Negated words say so.
    await typeAndWaitForOption(page, "-has:li", /^-has:link Exclude: Messages with links$/);
    await box.press("Escape");
    await box.press("Escape");
    await waitFor("search left", async () => (await page.evaluate(() => document.activeElement?.id)) !== "search-query");
    assert.deepEqual(h.pageErrors, []);
  });

  test("a search without results says so, and what was searched; the suggestions at phone size", async () => {
    const page = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(page, t.users.member, "#inbox");
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    const box = searchBox(page);
    await box.fill("channel:design zebracrossing");
    await option(page, /^Search for channel:design zebracrossing$/).waitFor();
    await box.press("Enter");
    await page.waitForFunction((id) => location.hash === `#narrow/channel/${id}-design/search/zebracrossing`, design);
    const empty = page.getByRole("status").filter({ hasText: "No search results." });
    await empty.waitFor();
    assert.deepEqual(await empty.locator(".searched-term").allTextContents(), ["channel:design", "zebracrossing"]);
    await empty.getByText("You searched for:").waitFor();
    await empty.getByText("Try other words, or fewer search terms.").waitFor();
    const findings = await axeFindings(page, ".message-list");
    assert.deepEqual(findings, [], JSON.stringify(findings, null, 1));

    // At phone size the box fills the header and its suggestions stay on the screen.
    const phone = await h.newPage({ width: 390, height: 844 });
    await h.logIn(phone, t.users.member, "#inbox");
    await searchBox(phone).click();
    await typeAndWaitForOption(phone, "is:", /^is:starred /);
    const list = await suggestions(phone).boundingBox();
    const input = await searchBox(phone).boundingBox();
    assert.ok(list && input && list.x >= 0 && list.x + list.width <= 390, JSON.stringify(list));
    assert.ok(input.width > 150, `search box ${input.width}px wide`);
    await phone.screenshot({ path: path.join(SCREENSHOTS, "search-suggestions-phone.png") });
    assert.deepEqual(h.pageErrors, []);
  });
});
