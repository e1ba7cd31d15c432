// Recent conversations, the inbox and the sidebar's direct message section
// in a real browser (Debian's Chromium), as in Zulip's web app: a "Recent
// conversations" view of topics and direct conversations by their latest
// message (participants, unread counts, time; participated / unread /
// include muted filters; "Load more"), selectable as the home view; the
// inbox collapsing per channel, filtering by text and marking a row or
// everything read, with a lock for private channels (defect 11); the left
// sidebar keeping read direct conversations by recency (defect 3), with
// "More conversations". Muted topics, channels and users are respected.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { axeFindings, BrowserHarness, sidebar, waitFor } from "./browser.ts";
import { assertSuccess, type TestUser } from "./helpers.ts";

const h = new BrowserHarness();
const SHOTS = process.env.SCREENSHOT_DIR;
before(() => h.start());
after(() => h.close());

async function dm(from: TestUser, to: TestUser[], content: string): Promise<number> {
  return assertSuccess(await h.t.api(from, "POST", "/messages", { type: "private", to: to.map((u) => u.id), content })).id as number;
}

function recentTable(page: Page) {
  return page.getByRole("main", { name: "Recent conversations" }).getByRole("table");
}

/**
 * The conversation column's text of each row, top to bottom, leaving out the
 * Notification Bot's "you were subscribed" messages new users get.
 */
async function recentOrder(page: Page): Promise<string[]> {
  return (await recentTable(page).locator("tbody tr td.recent-what a").allTextContents()).map((s) => s.trim()).filter((s) => s !== "Notification Bot");
}

function recentRow(page: Page, conversation: string) {
  return recentTable(page)
    .getByRole("row")
    .filter({ has: page.getByRole("link", { name: conversation, exact: true }) });
}

async function unreadOf(t: typeof h.t, user: TestUser): Promise<number[]> {
  const reply = assertSuccess(await t.api(user, "GET", "/messages", { anchor: "newest", num_before: 200, num_after: 0, narrow: [{ operator: "is", operand: "unread" }] }));
  return (reply.messages as { id: number }[]).map((m) => m.id);
}

describe("web client recent conversations, inbox and direct message section", () => {
  test("recent conversations: topics and direct conversations by latest message, with participants, unread counts and time, kept live; filters", async () => {
    const t = h.t;
    const reader = await t.createUser("Rita Reader");
    const channel = await h.createChannel("recent-room", [reader, t.users.admin, t.users.member]);
    await h.send(t.users.admin, channel, "older plans", "An older thought");
    await h.send(t.users.member, channel, "newer plans", "A newer thought");
    // Sent as the web app sends: read by its sender.
    assertSuccess(await t.api(reader, "POST", "/messages", { type: "stream", to: channel, topic: "my own topic", content: "I said this", read_by_sender: true }));
    await dm(t.users.member, [reader], "A direct word");

    const page = await h.newPage();
    await h.logIn(page, reader, "#inbox");
    await sidebar(page).getByRole("link", { name: "Recent conversations", exact: true }).click();
    await page.waitForFunction(() => location.hash === "#recent");
    await waitFor("four conversations", async () => (await recentOrder(page)).length === 4);
    assert.deepEqual(await recentOrder(page), ["Max Member", "my own topic", "newer plans", "older plans"]);
    assert.equal(await sidebar(page).getByRole("link", { name: "Recent conversations", exact: true }).getAttribute("aria-current"), "page");

    // Who took part, the unread count and when.
    await recentRow(page, "newer plans").getByRole("img", { name: "Participants: Max Member" }).waitFor();
    await recentRow(page, "older plans").getByRole("img", { name: "Participants: Adam Admin" }).waitFor();
    assert.equal(await recentRow(page, "older plans").getByLabel("1 unread").count(), 1);
    assert.equal(await recentRow(page, "my own topic").locator(".unread-count").count(), 0);
    assert.equal(await recentRow(page, "Max Member").getByLabel("1 unread").count(), 1);
    assert.equal((await recentRow(page, "older plans").locator("time").textContent())?.trim(), "Just now");
    assert.equal((await recentRow(page, "older plans").getByRole("link", { name: "recent-room" }).getAttribute("href"))?.startsWith(`#narrow/channel/${channel}-`), true);
    assert.deepEqual(await axeFindings(page), []);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/recent-conversations.png` });

    // Live: a new message moves its topic to the top, with the new sender first and the count up.
    await h.send(t.users.member, channel, "older plans", "Coming back to this");
    await waitFor("older plans on top", async () => (await recentOrder(page))[0] === "older plans");
    await recentRow(page, "older plans").getByRole("img", { name: "Participants: Max Member, Adam Admin" }).waitFor();
    await recentRow(page, "older plans").getByLabel("2 unread").waitFor();
    // A new topic appears, and one moved elsewhere follows.
    const moved = await h.send(t.users.admin, channel, "typo topik", "Renamed soon");
    await waitFor("the new topic listed", async () => (await recentOrder(page))[0] === "typo topik");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${moved}`, { topic: "typo topic", propagate_mode: "change_all" }));
    await waitFor("the topic renamed", async () => (await recentOrder(page))[0] === "typo topic" && !(await recentOrder(page)).includes("typo topik"));

    // Filters: unread only, participated only.
    const filters = page.getByRole("group", { name: "Filters" });
    await filters.getByRole("button", { name: "Unread" }).click();
    assert.equal(await filters.getByRole("button", { name: "Unread" }).getAttribute("aria-pressed"), "true");
    await waitFor("only unread conversations", async () => !(await recentOrder(page)).includes("my own topic"));
    assert.ok((await recentOrder(page)).includes("older plans"));
    await filters.getByRole("button", { name: "Unread" }).click();
    await filters.getByRole("button", { name: "Participated" }).click();
    await waitFor("only my conversations", async () => JSON.stringify(await recentOrder(page)) === JSON.stringify(["my own topic"]));
    // Kept across a reload, as Zulip keeps them.
    await page.reload();
    await waitFor("the filter kept", async () => JSON.stringify(await recentOrder(page)) === JSON.stringify(["my own topic"]));
    await page.getByRole("group", { name: "Filters" }).getByRole("button", { name: "Participated", pressed: true }).click();
    await waitFor("all conversations again", async () => (await recentOrder(page)).length === 5);
    // The text filter.
    await page.getByRole("searchbox", { name: "Filter conversations" }).fill("plans");
    await waitFor("only the plans", async () => JSON.stringify(await recentOrder(page)) === JSON.stringify(["older plans", "newer plans"]));
    await page.getByRole("searchbox", { name: "Filter conversations" }).fill("nothing like this");
    await page.getByText("No conversations match your filters.").waitFor();
    await page.getByRole("searchbox", { name: "Filter conversations" }).fill("");

    // Muting: a muted topic and a muted user's conversation leave the view, "Include muted" brings them back.
    assertSuccess(await t.api(reader, "POST", "/user_topics", { stream_id: channel, topic: "newer plans", visibility_policy: 1 }));
    assertSuccess(await t.api(reader, "POST", `/users/me/muted_users/${t.users.member.id}`));
    await waitFor("muted conversations hidden", async () => {
      const order = await recentOrder(page);
      return !order.includes("newer plans") && !order.includes("Max Member");
    });
    // The muted user is not among the participants either.
    await recentRow(page, "older plans").getByRole("img", { name: "Participants: Adam Admin" }).waitFor();
    await page.getByRole("group", { name: "Filters" }).getByRole("button", { name: "Include muted" }).click();
    await waitFor("muted conversations shown", async () => {
      const order = await recentOrder(page);
      return order.includes("newer plans") && order.includes("Max Member");
    });
    await recentRow(page, "older plans").getByRole("img", { name: "Participants: Max Member, Adam Admin" }).waitFor();
    await page.getByRole("group", { name: "Filters" }).getByRole("button", { name: "Include muted" }).click();
    // A muted channel's topics go too, except those you follow (Zulip follows the topics you start).
    assertSuccess(await t.api(reader, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: channel, property: "is_muted", value: true }] }));
    await waitFor("the muted channel's topics hidden", async () => JSON.stringify(await recentOrder(page)) === JSON.stringify(["my own topic"]));
    assertSuccess(await t.api(reader, "POST", "/user_topics", { stream_id: channel, topic: "my own topic", visibility_policy: 0 }));
    await waitFor("no conversation left", async () => (await recentOrder(page)).length === 0);
    assert.deepEqual(h.pageErrors, []);
  });

  test("recent conversations is a home view: an empty address opens it, and a settings change elsewhere moves the logo's link", async () => {
    const t = h.t;
    const reader = await t.createUser("Hugo Home");
    const channel = await h.createChannel("home-room", [reader, t.users.admin]);
    await h.send(t.users.admin, channel, "welcome", "Hello");
    assertSuccess(await t.api(reader, "PATCH", "/settings", { web_home_view: "recent_topics" }));
    const page = await h.newPage();
    await h.logIn(page, reader);
    await page.getByRole("main", { name: "Recent conversations" }).waitFor();
    await recentRow(page, "welcome").waitFor();
    const brand = page.locator("header a.brand");
    assert.equal(await brand.getAttribute("href"), "#recent");
    // Changed in another browser: the user_settings event moves where the logo leads.
    assertSuccess(await t.api(reader, "PATCH", "/settings", { web_home_view: "all_messages" }));
    await waitFor("the logo leads to the combined feed", async () => (await brand.getAttribute("href")) === "#all_messages");
    await brand.click();
    await page.getByRole("main", { name: "All messages" }).waitFor();
    assertSuccess(await t.api(reader, "PATCH", "/settings", { web_home_view: "inbox" }));
    await waitFor("the logo leads to the inbox", async () => (await brand.getAttribute("href")) === "#inbox");
    // Zulip's keys: t for recent conversations, Shift+I for the inbox.
    await page.keyboard.press("t");
    await page.getByRole("main", { name: "Recent conversations" }).waitFor();
    await page.keyboard.press("Shift+I");
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("at phone size recent conversations and the inbox fit the screen", async () => {
    const t = h.t;
    const reader = await t.createUser("Pia Phone");
    const channel = await h.createChannel("a-channel-with-a-rather-long-name-indeed", [reader, t.users.admin, t.users.member, t.users.moderator]);
    await h.send(t.users.admin, channel, "a topic whose name is long enough to wrap on a phone screen", "Hello");
    for (const user of [t.users.member, t.users.moderator, t.users.owner]) await h.send(user, channel, "busy", "Hi");
    await dm(t.users.member, [reader, t.users.admin], "A group word");
    const page = await h.newPage({ width: 390, height: 844 });
    await h.logIn(page, reader, "#recent");
    await recentRow(page, "busy").waitFor();
    const fits = () => page.evaluate(() => [document.documentElement, ...document.querySelectorAll<HTMLElement>(".recent, .inbox")].every((el) => el.scrollWidth <= el.clientWidth));
    assert.equal(await fits(), true, "no sideways scroll in recent conversations");
    assert.deepEqual(await axeFindings(page), []);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/recent-conversations-phone.png` });
    await page.goto(`${t.url}/#inbox`);
    await page.getByRole("main", { name: "Inbox" }).getByRole("link", { name: "busy", exact: true }).waitFor();
    assert.equal(await fits(), true, "no sideways scroll in the inbox");
    assert.deepEqual(await axeFindings(page), []);
    assert.deepEqual(h.pageErrors, []);
  });

  test("recent conversations loads the newest 400 messages first and older history with Load more", async () => {
    const t = h.t;
    const reader = await t.createUser("Lena Longread");
    const channel = await h.createChannel("long-history", [reader, t.users.admin]);
    await h.send(t.users.admin, channel, "ancient topic", "From long ago");
    // 400 newer messages in another topic push it out of the first page.
    for (let i = 0; i < 400; i += 25) await Promise.all(Array.from({ length: 25 }, (_, j) => h.send(t.users.admin, channel, "busy topic", `Busy ${i + j}`)));
    const page = await h.newPage();
    await h.logIn(page, reader, "#recent");
    await waitFor("the busy topic", async () => (await recentOrder(page)).includes("busy topic"));
    assert.deepEqual(await recentOrder(page), ["busy topic"]);
    await page.getByRole("button", { name: "Load more" }).click();
    await waitFor("the ancient topic", async () => JSON.stringify(await recentOrder(page)) === JSON.stringify(["busy topic", "ancient topic"]));
    // Everything is in: no more to load.
    await waitFor("Load more gone", async () => (await page.getByRole("button", { name: "Load more" }).count()) === 0);
    assert.deepEqual(h.pageErrors, []);
  });

  test("inbox: private channels show a lock; channels and direct messages collapse; a text filter; a row, a channel and everything marked read", async () => {
    const t = h.t;
    const reader = await t.createUser("Ines Inbox");
    const open = await h.createChannel("inbox-open", [reader, t.users.admin]);
    const secret = await h.createChannel("inbox-secret", [reader, t.users.admin], { invite_only: true });
    await h.send(t.users.admin, open, "lunch", "Pizza?");
    await h.send(t.users.admin, open, "dinner", "Soup?");
    await h.send(t.users.admin, open, "muted chatter", "Blah");
    assertSuccess(await t.api(reader, "POST", "/user_topics", { stream_id: open, topic: "muted chatter", visibility_policy: 1 }));
    await h.send(t.users.admin, secret, "plans", "Hush");
    await dm(t.users.admin, [reader], "Hi Ines");

    const page = await h.newPage();
    await h.logIn(page, reader, "#inbox");
    const inbox = page.getByRole("main", { name: "Inbox" });
    const toggle = (name: string) => inbox.getByRole("button", { name, exact: true });
    await toggle("inbox-secret").waitFor();
    // Defect 11: the private channel's icon is the lock the sidebar shows, the public one's "#".
    assert.equal((await toggle("inbox-secret").locator(".channel-swatch").textContent())?.trim(), "🔒");
    assert.equal((await toggle("inbox-open").locator(".channel-swatch").textContent())?.trim(), "#");
    // The muted topic is not listed.
    await inbox.getByRole("link", { name: "lunch", exact: true }).waitFor();
    assert.equal(await inbox.getByRole("link", { name: "muted chatter" }).count(), 0);
    assert.deepEqual(await axeFindings(page), []);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/inbox.png` });

    // Collapsing a channel hides its topics, and stays collapsed after a reload.
    assert.equal(await toggle("inbox-open").getAttribute("aria-expanded"), "true");
    await toggle("inbox-open").click();
    await waitFor("inbox-open collapsed", async () => (await inbox.getByRole("link", { name: "lunch", exact: true }).count()) === 0);
    assert.equal(await toggle("inbox-open").getAttribute("aria-expanded"), "false");
    await toggle("Direct messages").click();
    await waitFor("direct messages collapsed", async () => (await inbox.getByRole("link", { name: "Adam Admin", exact: true }).count()) === 0);
    await page.reload();
    await toggle("inbox-open").waitFor();
    assert.equal(await toggle("inbox-open").getAttribute("aria-expanded"), "false");
    assert.equal(await inbox.getByRole("link", { name: "Adam Admin", exact: true }).count(), 0);
    await inbox.getByRole("link", { name: "plans", exact: true }).waitFor();
    await toggle("inbox-open").click();
    await toggle("Direct messages").click();
    await inbox.getByRole("link", { name: "lunch", exact: true }).waitFor();

    // The text filter: topics, channels and people.
    const filter = inbox.getByRole("searchbox", { name: "Filter conversations" });
    await filter.fill("din");
    await waitFor("only dinner", async () => (await inbox.getByRole("link", { name: "lunch", exact: true }).count()) === 0);
    await inbox.getByRole("link", { name: "dinner", exact: true }).waitFor();
    assert.equal(await inbox.getByRole("link", { name: "plans", exact: true }).count(), 0);
    assert.equal(await inbox.getByRole("link", { name: "Adam Admin", exact: true }).count(), 0);
    await filter.fill("secret");
    await inbox.getByRole("link", { name: "plans", exact: true }).waitFor();
    await filter.fill("");
    await inbox.getByRole("link", { name: "lunch", exact: true }).waitFor();

    // A row marked read leaves the inbox (on the server too).
    await inbox.getByRole("button", { name: "Mark #inbox-open > lunch as read" }).click();
    await waitFor("lunch read", async () => (await inbox.getByRole("link", { name: "lunch", exact: true }).count()) === 0);
    await inbox.getByRole("link", { name: "dinner", exact: true }).waitFor();
    // A whole channel.
    await inbox.getByRole("button", { name: "Mark #inbox-secret as read" }).click();
    await waitFor("the secret channel read", async () => (await toggle("inbox-secret").count()) === 0);
    // Everything, after a confirmation.
    await inbox.getByRole("button", { name: "Mark all as read" }).click();
    const dialog = page.getByRole("dialog", { name: "Mark all messages as read?" });
    await dialog.getByRole("button", { name: "Mark all as read" }).click();
    await inbox.getByText("You have no unread messages.").waitFor();
    assert.deepEqual(await unreadOf(t, reader), []);
    assert.deepEqual(h.pageErrors, []);
  });

  test("sidebar direct messages: read conversations stay, most recent first, with unread counts and More conversations (defect 3)", async () => {
    const t = h.t;
    const reader = await t.createUser("Dora Direct");
    const senders: TestUser[] = [];
    for (let i = 1; i <= 10; i++) senders.push(await t.createUser(`Sender ${String(i).padStart(2, "0")}`));
    for (const sender of senders) await dm(sender, [reader], `Hello from ${sender.email}`);
    // Reading them does not take them off the sidebar.
    assertSuccess(await t.api(reader, "POST", "/mark_all_as_read"));

    const page = await h.newPage();
    await h.logIn(page, reader, "#inbox");
    const list = sidebar(page).getByRole("list", { name: "Direct message conversations" });
    const names = async () => (await list.getByRole("link").allTextContents()).map((s) => s.trim());
    await waitFor("eight conversations", async () => (await names()).length === 8);
    assert.deepEqual(await names(), ["Sender 10", "Sender 09", "Sender 08", "Sender 07", "Sender 06", "Sender 05", "Sender 04", "Sender 03"]);
    assert.equal(await list.locator(".unread-count").count(), 0);
    const more = sidebar(page).getByRole("button", { name: "More conversations" });
    await more.click();
    await waitFor("all ten", async () => (await names()).length === 10);
    await sidebar(page).getByRole("button", { name: "Fewer conversations" }).click();
    await waitFor("eight again", async () => (await names()).length === 8);

    // A new message from the oldest conversation: at the top, with its unread count.
    await dm(senders[0]!, [reader], "Back again");
    await waitFor("Sender 01 on top", async () => (await names())[0] === "Sender 01");
    const first = list.getByRole("listitem").filter({ has: page.getByRole("link", { name: "Sender 01", exact: true }) });
    await first.getByLabel("1 unread").waitFor();
    // Read there, it stays.
    await list.getByRole("link", { name: "Sender 01", exact: true }).click();
    await page.getByText("Back again").waitFor();
    await waitFor("Sender 01's count gone", async () => (await first.locator(".unread-count").count()) === 0);
    await sidebar(page).getByRole("link", { name: "Inbox", exact: true }).click();
    await page.getByRole("main", { name: "Inbox" }).waitFor();
    assert.equal((await names())[0], "Sender 01");
    // A group conversation is one entry, named by its members.
    await dm(senders[1]!, [reader, senders[2]!], "A group hello");
    await waitFor("the group on top", async () => (await names())[0] === "Sender 02, Sender 03");
    // A muted user's conversation leaves the list.
    assertSuccess(await t.api(reader, "POST", `/users/me/muted_users/${senders[0]!.id}`));
    await waitFor("Sender 01 gone", async () => !(await names()).includes("Sender 01"));
    assert.deepEqual(await axeFindings(page, "nav#left-sidebar"), []);
    assert.deepEqual(h.pageErrors, []);
  });
});
