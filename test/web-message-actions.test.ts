// The web client's message actions and keyboard shortcuts in a real browser
// (Debian's Chromium driven by playwright-core, against a real server on the
// test database): an edit, a deletion, a reaction and a move by one person
// seen live by another in a second browser context; edit history; star;
// mark as unread from here; quote and reply; report; the keyboard (arrows,
// r, c, x, n, /, Escape) and the search box. Screenshots of the menu, the
// emoji picker and the history dialog go to $SCREENSHOT_DIR (default: the
// system's temporary directory).
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Locator, Page } from "playwright-core";
import { BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess, type TestApp, type TestUser } from "./helpers.ts";

const SCREENSHOTS = process.env.SCREENSHOT_DIR ?? path.join(os.tmpdir(), "parley-web-screenshots");
const h = new BrowserHarness();
let t: TestApp;
const pageErrors = h.pageErrors;
before(async () => {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await h.start();
  t = h.t;
});
after(() => h.close());
// The clipboard is read back by the copy-link test.
const newPage = (options: { width?: number; height?: number } = {}) => h.newPage({ ...options, permissions: ["clipboard-read", "clipboard-write"] });
const logIn = (page: Page, user: TestUser, hash = "") => h.logIn(page, user, hash);
const createChannel = (name: string, members: TestUser[], options: Record<string, unknown> = {}) => h.createChannel(name, members, options);
const send = (user: TestUser, streamId: number, topic: string, content: string) => h.send(user, streamId, topic, content);

function messageRow(page: Page, id: number): Locator {
  return page.locator(`article.message[data-message-id="${id}"]`);
}

/** Opens a message's actions menu the way a mouse user does: hover, then the button. */
async function openMenu(page: Page, id: number): Promise<Locator> {
  const row = messageRow(page, id);
  await row.hover();
  await row.getByRole("button", { name: "Message actions" }).click();
  const menu = page.getByRole("menu", { name: "Message actions" });
  await menu.waitFor();
  return menu;
}

async function fetchMessage(user: TestUser, id: number) {
  return assertSuccess(await t.api(user, "GET", `/messages/${id}`, {})).message;
}

function hashOf(streamId: number, name: string, topic?: string): string {
  return `#narrow/channel/${streamId}-${name}${topic === undefined ? "" : `/topic/${topic}`}`;
}

describe("web client: message actions and keyboard", () => {
  test("an edit, a reaction, a move and a deletion by one person are seen live by another; edit history", async () => {
    const plans = await createChannel("plans", [t.users.member, t.users.admin]);
    const first = await send(t.users.member, plans, "launch", "We launch on Monday");
    const second = await send(t.users.member, plans, "launch", "Bring snacks");
    const third = await send(t.users.admin, plans, "launch", "Who has the keys?");

    const max = await newPage();
    const adam = await newPage();
    await logIn(max, t.users.member, hashOf(plans, "plans", "launch"));
    await logIn(adam, t.users.admin, hashOf(plans, "plans", "launch"));
    await messageRow(max, third).waitFor();
    await messageRow(adam, third).waitFor();

    // Max edits his first message in place; Enter saves.
    const menu = await openMenu(max, first);
    await max.screenshot({ path: path.join(SCREENSHOTS, "actions-menu.png") });
    // Adam's message: no edit, no delete for Max (a member).
    await menu.getByRole("menuitem", { name: "Edit message" }).click();
    const editor = max.getByLabel("Edit message content");
    await waitFor("the source in the editor", async () => (await editor.inputValue()) === "We launch on Monday");
    await editor.fill("We launch on **Tuesday**");
    await editor.press("Enter");
    await adam.locator(`article.message[data-message-id="${first}"] strong`, { hasText: "Tuesday" }).waitFor();
    await messageRow(adam, first).getByText("(edited)").waitFor();
    await messageRow(max, first).locator("strong", { hasText: "Tuesday" }).waitFor();
    assert.equal((await fetchMessage(t.users.member, first)).content, "<p>We launch on <strong>Tuesday</strong></p>");

    // Escape leaves an edit without saving.
    await (await openMenu(max, first)).getByRole("menuitem", { name: "Edit message" }).click();
    await waitFor("the editor again", async () => (await max.getByLabel("Edit message content").inputValue()) !== "");
    await max.getByLabel("Edit message content").fill("Never mind");
    await max.getByLabel("Edit message content").press("Escape");
    await max.getByLabel("Edit message content").waitFor({ state: "detached" });
    assert.equal((await fetchMessage(t.users.member, first)).content, "<p>We launch on <strong>Tuesday</strong></p>");

    // Others' messages offer no edit or delete to a member.
    const othersMenu = await openMenu(max, third);
    assert.equal(await othersMenu.getByRole("menuitem", { name: "Edit message" }).count(), 0);
    assert.equal(await othersMenu.getByRole("menuitem", { name: "Delete message" }).count(), 0);
    await max.keyboard.press("Escape");
    await othersMenu.waitFor({ state: "detached" });

    // Adam looks at the edit history.
    await (await openMenu(adam, first)).getByRole("menuitem", { name: "View edit history" }).click();
    const history = adam.getByRole("dialog", { name: "Message edit history" });
    await history.getByText("Monday").first().waitFor();
    await history.getByText("Tuesday").first().waitFor();
    await adam.screenshot({ path: path.join(SCREENSHOTS, "edit-history.png") });
    await history.getByRole("button", { name: "Close" }).click();
    await history.waitFor({ state: "detached" });

    // Max reacts with the emoji picker; Adam sees it, and adds his vote by clicking the reaction.
    await messageRow(max, third).hover();
    await messageRow(max, third).getByRole("button", { name: "Add emoji reaction" }).click();
    await max.getByLabel("Search emoji").fill("tada");
    await max.getByRole("button", { name: "tada", exact: true }).waitFor();
    await max.screenshot({ path: path.join(SCREENSHOTS, "emoji-picker.png") });
    await max.getByRole("button", { name: "tada", exact: true }).click();
    await messageRow(adam, third).getByRole("button", { name: "tada: 1" }).click();
    await messageRow(max, third).getByRole("button", { name: "tada: 2" }).waitFor();
    // Clicking your own reaction takes it away.
    await messageRow(max, third).getByRole("button", { name: "tada: 2" }).click();
    await messageRow(adam, third).getByRole("button", { name: "tada: 1" }).waitFor();
    const reactions = (await fetchMessage(t.users.admin, third)).reactions;
    assert.deepEqual(reactions.map((r: { user_id: number; emoji_name: string }) => [r.user_id, r.emoji_name]), [[t.users.admin.id, "tada"]]);

    // Max deletes his second message after confirming; it goes from Adam's view.
    await (await openMenu(max, second)).getByRole("menuitem", { name: "Delete message" }).click();
    const confirm = max.getByRole("dialog", { name: "Delete message?" });
    await confirm.getByRole("button", { name: "Cancel" }).click();
    await confirm.waitFor({ state: "detached" });
    assert.equal(await messageRow(adam, second).count(), 1, "Cancel keeps it");
    await (await openMenu(max, second)).getByRole("menuitem", { name: "Delete message" }).click();
    await max.getByRole("dialog", { name: "Delete message?" }).getByRole("button", { name: "Delete" }).click();
    await messageRow(adam, second).waitFor({ state: "detached" });
    await messageRow(max, second).waitFor({ state: "detached" });
    assert.equal((await t.api(t.users.member, "GET", `/messages/${second}`, {})).status, 400);

    // Adam (an administrator) moves the topic; Max, in the channel view, sees the new topic name in place.
    await max.goto(`${t.url}/${hashOf(plans, "plans")}`);
    await messageRow(max, third).waitFor();
    await (await openMenu(adam, third)).getByRole("menuitem", { name: "Move messages" }).click();
    const move = adam.getByRole("dialog", { name: "Move messages" });
    await move.getByLabel("Topic", { exact: true }).fill("launch day");
    await move.getByLabel("Which messages").selectOption("change_all");
    await move.getByRole("button", { name: "Move" }).click();
    await move.waitFor({ state: "detached" });
    await max.locator(".recipient-topic", { hasText: "launch day" }).first().waitFor();
    assert.equal((await fetchMessage(t.users.member, first)).subject, "launch day");
    assert.deepEqual(pageErrors, []);
  });

  test("star, the starred view, mark as unread from here, copy link, quote and reply", async () => {
    const news = await createChannel("newsroom", [t.users.member, t.users.admin]);
    const ids: number[] = [];
    for (let i = 1; i <= 4; i++) ids.push(await send(t.users.admin, news, "desk", `Story number ${i}`));
    const max = await newPage();
    await logIn(max, t.users.member, hashOf(news, "newsroom", "desk"));
    await messageRow(max, ids[3]!).waitFor();
    const count = max.locator(`nav li[data-stream-id="${news}"] > .channel-row > .unread-count`);
    await count.waitFor({ state: "detached" });

    // Star from the menu: the star shows, the message is starred on the server, the starred view lists it.
    await (await openMenu(max, ids[1]!)).getByRole("menuitem", { name: "Star message" }).click();
    await messageRow(max, ids[1]!).getByLabel("Starred").waitFor();
    await waitFor("starred on the server", async () => (await fetchMessage(t.users.member, ids[1]!)).flags?.includes("starred") ?? false);
    await max.goto(`${t.url}/#narrow/is/starred`);
    await messageRow(max, ids[1]!).waitFor();
    // Unstarring in the starred view takes it out of the list at once.
    await (await openMenu(max, ids[1]!)).getByRole("menuitem", { name: "Unstar message" }).click();
    await messageRow(max, ids[1]!).waitFor({ state: "detached" });
    await max.getByText("You have no starred messages.").waitFor();

    // Mark as unread from here: this and the later messages become unread, and stay so while the view is open.
    await max.goto(`${t.url}/${hashOf(news, "newsroom", "desk")}`);
    await messageRow(max, ids[3]!).waitFor();
    await (await openMenu(max, ids[2]!)).getByRole("menuitem", { name: "Mark as unread from here" }).click();
    await waitFor("unread count 2", async () => (await count.count()) === 1 && (await count.textContent()) === "2");
    await max.waitForTimeout(600);
    assert.equal(await count.textContent(), "2", "still unread while the list is open");
    const unread = assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: ids[0], num_before: 0, num_after: 10, narrow: [{ operator: "channel", operand: news }] }));
    assert.deepEqual(
      unread.messages.filter((m: { flags: string[] }) => !m.flags.includes("read")).map((m: { id: number }) => m.id),
      [ids[2], ids[3]],
    );

    // Copy link: Zulip's permanent link, which opens the conversation.
    await (await openMenu(max, ids[0]!)).getByRole("menuitem", { name: "Copy link to message" }).click();
    await max.getByText("Link copied.").waitFor();
    const link = await max.evaluate(() => navigator.clipboard.readText());
    assert.equal(link, `${t.url}/#narrow/channel/${news}-newsroom/topic/desk/near/${ids[0]}`);

    // Quote and reply: Zulip's quote block in the compose box, focused.
    await (await openMenu(max, ids[0]!)).getByRole("menuitem", { name: "Quote and reply" }).click();
    const compose = max.getByLabel("Message", { exact: true });
    await waitFor("the quote in the compose box", async () => (await compose.inputValue()).includes("```quote"));
    assert.equal(await compose.inputValue(), `@_**Adam Admin|${t.users.admin.id}** [said](${link}):\n\`\`\`quote\nStory number 1\n\`\`\`\n`);
    // Focus follows the text by a frame (once the box is drawn).
    await waitFor("the compose box focused", async () => (await max.evaluate(() => document.activeElement?.id)) === "compose-message");
    assert.deepEqual(pageErrors, []);
  });

  test("keyboard: arrows select, r replies, c starts a topic, x a direct message, n the next unread topic, / searches, Escape leaves", async () => {
    const kb = await createChannel("keys", [t.users.member, t.users.admin]);
    const ids: number[] = [];
    for (let i = 1; i <= 3; i++) ids.push(await send(t.users.admin, kb, "shortcuts", `Shortcut line ${i}`));
    const max = await newPage();
    await logIn(max, t.users.member, hashOf(kb, "keys", "shortcuts"));
    await messageRow(max, ids[2]!).waitFor();
    await max.locator(".message-list").click({ position: { x: 5, y: 5 } });

    // Arrows move a visible selection (End: the last message).
    const selectedId = async () => Number(await max.locator("article.message.selected").getAttribute("data-message-id"));
    await max.keyboard.press("End");
    await waitFor("the last message selected", async () => (await max.locator("article.message.selected").count()) === 1 && (await selectedId()) === ids[2]);
    await max.keyboard.press("ArrowUp");
    await waitFor("selection moved up", async () => (await selectedId()) === ids[1]);
    await max.keyboard.press("ArrowUp");
    await waitFor("selection moved up again", async () => (await selectedId()) === ids[0]);
    await max.keyboard.press("ArrowUp");
    await max.waitForTimeout(100);
    assert.equal(await selectedId(), ids[0], "the first message stays selected");
    await max.keyboard.press("ArrowDown");
    await waitFor("selection on the second", async () => (await selectedId()) === ids[1]);
    await max.screenshot({ path: path.join(SCREENSHOTS, "selected.png") });

    // r: reply to it; typing does not trigger shortcuts; Enter sends to the topic.
    await max.keyboard.press("r");
    const compose = max.getByLabel("Message", { exact: true });
    await waitFor("compose focused", async () => (await max.evaluate(() => document.activeElement?.id)) === "compose-message");
    await max.keyboard.type("right, nice and clear");
    assert.equal(await compose.inputValue(), "right, nice and clear");
    await max.keyboard.press("Enter");
    await max.getByText("right, nice and clear").waitFor();
    // (The text on screen may still be the local echo: the stored message is awaited.)
    const newest = async () => assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [{ operator: "channel", operand: kb }] })).messages[0];
    await waitFor("the reply stored", async () => (await newest()).content === "<p>right, nice and clear</p>");
    assert.equal((await newest()).subject, "shortcuts");
    // Escape leaves the compose box; then c starts a new topic in the channel.
    await max.keyboard.press("Escape");
    await waitFor("compose left", async () => (await max.evaluate(() => document.activeElement?.id)) !== "compose-message");
    await max.keyboard.press("c");
    await max.waitForFunction((id) => location.hash === `#narrow/channel/${id}-keys`, kb);
    await waitFor("topic focused", async () => (await max.evaluate(() => document.activeElement?.id)) === "compose-topic");
    assert.equal(await max.getByRole("textbox", { name: "Topic" }).inputValue(), "");
    await max.keyboard.press("Escape");

    // x: a new direct message.
    await max.locator(".message-list").click({ position: { x: 5, y: 5 } });
    await max.keyboard.press("x");
    const dm = max.getByRole("dialog", { name: "New direct message" });
    await dm.getByLabel("Find people").fill("adam");
    await dm.getByRole("checkbox", { name: /Adam Admin/ }).check();
    await dm.getByRole("button", { name: "Start conversation" }).click();
    await max.waitForFunction((id) => location.hash === `#narrow/dm/${id}-dm`, t.users.admin.id);
    await waitFor("DM compose focused", async () => (await max.evaluate(() => document.activeElement?.id)) === "compose-message");
    await max.keyboard.press("Escape");

    // n: the next topic with unread messages.
    await send(t.users.admin, kb, "later", "Something unread");
    await max.locator(".message-list").click({ position: { x: 5, y: 5 } });
    await waitFor("unread arrived", async () => (await max.locator(`nav li[data-stream-id="${kb}"] .unread-count`).count()) > 0);
    await max.keyboard.press("n");
    await max.waitForFunction((id) => location.hash === `#narrow/channel/${id}-keys/topic/later`, kb);
    await max.getByText("Something unread").waitFor();

    // /: the search box, with Zulip's operators; the search narrow is in the hash.
    await max.locator(".message-list").click({ position: { x: 5, y: 5 } });
    await max.keyboard.press("/");
    const search = max.getByRole("combobox", { name: "Search" });
    await waitFor("search focused", async () => (await max.evaluate(() => document.activeElement?.id)) === "search-query");
    assert.equal(await search.inputValue(), "channel:keys topic:later ", "the open narrow's operators");
    await search.fill("channel:keys line");
    await search.press("Enter");
    await max.waitForFunction((id) => location.hash === `#narrow/channel/${id}-keys/search/line`, kb);
    await messageRow(max, ids[0]!).waitFor();
    await messageRow(max, ids[2]!).waitFor();
    assert.equal(await max.getByText("Something unread").count(), 0);
    await max.screenshot({ path: path.join(SCREENSHOTS, "search.png") });
    // sender: and a topic with a space, straight from a typed search.
    await max.keyboard.press("/");
    // The address people see (the server may hide real ones behind email_address_visibility).
    const visibleEmail = assertSuccess(await t.api(t.users.member, "GET", "/users/me", {})).email as string;
    await search.fill(`sender:${visibleEmail} right`);
    await search.press("Enter");
    await max.getByText("right, nice and clear").waitFor();
    assert.equal(await messageRow(max, ids[0]!).count(), 0);
    assert.deepEqual(pageErrors, []);
  });

  test("n visits unread topics as Zulip does: most recent first within a channel, then the next channel", async () => {
    const t = h.t;
    // Channel names sort "nx-a" before "nx-b" in the sidebar.
    // Someone with no unread messages from the other tests.
    const nora = await t.createUser("Nora Next");
    const a = await createChannel("nx-a", [nora, t.users.admin]);
    const b = await createChannel("nx-b", [nora, t.users.admin]);
    await send(t.users.admin, a, "alpha", "an older topic");
    await send(t.users.admin, a, "zulu", "the newest topic of nx-a");
    await send(t.users.admin, b, "bravo", "in the next channel");
    const max = await newPage();
    // From the inbox, which reads nothing.
    await logIn(max, nora, "#inbox");
    const hashOf = (streamId: number, name: string, topic: string) => `#narrow/channel/${streamId}-${name}/topic/${topic}`;
    const visits: string[] = [];
    for (let i = 0; i < 3; i++) {
      const before = await max.evaluate(() => location.hash);
      await max.locator("body").press("n");
      await max.waitForFunction((previous) => location.hash !== previous, before);
      // Its messages are seen (read) before n goes on.
      await waitFor("the topic read", async () => (await max.locator("article.message.unread").count()) === 0 && (await max.locator("article.message").count()) > 0);
      visits.push(await max.evaluate(() => decodeURIComponent(location.hash)));
    }
    assert.deepEqual(visits, [hashOf(a, "nx-a", "zulu"), hashOf(a, "nx-a", "alpha"), hashOf(b, "nx-b", "bravo")]);
    assert.deepEqual(pageErrors, []);
  });

  test("the topic's header: rename in place, mark resolved and unresolved; hidden from those not allowed, live", async () => {
    const t = h.t;
    const ch = await createChannel("headers", [t.users.member, t.users.admin]);
    const first = await send(t.users.admin, ch, "plans", "Plan one");
    await send(t.users.admin, ch, "plans", "Plan two");
    const adam = await newPage();
    const max = await newPage();
    await logIn(adam, t.users.admin, hashOf(ch, "headers"));
    await logIn(max, t.users.member, hashOf(ch, "headers"));
    const header = (p: Page) => p.locator(".recipient-header").first();
    await header(adam).getByRole("link", { name: "plans" }).waitFor();

    // Rename: Enter saves; everyone sees the new name; the messages moved on the server.
    await header(adam).hover();
    await header(adam).getByRole("button", { name: "Edit topic" }).click();
    const input = adam.getByRole("textbox", { name: "New topic name" });
    await input.fill("launch plans");
    await adam.screenshot({ path: path.join(SCREENSHOTS, "topic-edit.png") });
    await input.press("Enter");
    await header(max).getByRole("link", { name: "launch plans" }).waitFor();
    assert.equal((await fetchMessage(t.users.member, first)).subject, "launch plans");
    // Escape leaves the editor without a change.
    await header(adam).getByRole("button", { name: "Edit topic" }).click();
    await adam.getByRole("textbox", { name: "New topic name" }).press("Escape");
    await header(adam).getByRole("link", { name: "launch plans" }).waitFor();

    // Resolve and unresolve (Max may: resolving is open to everyone by default).
    await header(max).hover();
    await max.screenshot({ path: path.join(SCREENSHOTS, "topic-actions.png") });
    await header(max).getByRole("button", { name: "Mark as resolved" }).click();
    await header(adam).getByRole("link", { name: "✔ launch plans" }).waitFor();
    assert.equal((await fetchMessage(t.users.member, first)).subject, "✔ launch plans");
    await header(adam).hover();
    await header(adam).getByRole("button", { name: "Mark as unresolved" }).click();
    await header(max).getByRole("link", { name: "launch plans", exact: true }).waitFor();

    // The organization keeps topic moves and resolving to administrators: Max's buttons go, Adam's stay.
    const groups = await t.systemGroupIds();
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_move_messages_between_topics_group: { new: groups["role:administrators"] }, can_resolve_topics_group: { new: groups["role:administrators"] } }));
    await waitFor("Max's topic buttons gone", async () => (await header(max).locator(".topic-action").count()) === 0);
    // Adam's stay (waited for, not sampled: a list reloading after a reconnect is briefly empty on a loaded machine).
    await waitFor("Adam's Edit topic button", async () => (await header(adam).getByRole("button", { name: "Edit topic" }).count()) === 1);
    assert.deepEqual(pageErrors, []);
  });

  test("report a message to the moderators", async () => {
    const mods = await createChannel("moderation", [t.users.admin, t.users.moderator], { invite_only: true });
    assertSuccess(await t.api(t.users.admin, "PATCH", "/realm", { moderation_request_channel_id: mods }));
    const town = await createChannel("town", [t.users.member, t.users.admin]);
    const bad = await send(t.users.admin, town, "square", "Buy cheap watches now");
    const max = await newPage();
    await logIn(max, t.users.member, hashOf(town, "town", "square"));
    await (await openMenu(max, bad)).getByRole("menuitem", { name: "Report message" }).click();
    const dialog = max.getByRole("dialog", { name: "Report message" });
    await dialog.getByLabel("Reason").selectOption("spam");
    await dialog.getByLabel("Explanation (optional)").fill("Advertising");
    await dialog.getByRole("button", { name: "Report" }).click();
    await dialog.waitFor({ state: "detached" });
    await max.getByText("the moderators have your report").waitFor();
    await waitFor("the report in the moderation channel", async () => {
      const reply = assertSuccess(await t.api(t.users.admin, "GET", "/messages", { anchor: "newest", num_before: 5, num_after: 0, narrow: [{ operator: "channel", operand: mods }] }));
      return reply.messages.some((m: { content: string }) => m.content.includes("Advertising"));
    });
    assert.deepEqual(pageErrors, []);
  });
});
