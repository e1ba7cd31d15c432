// People in the web client, in a real browser: the right sidebar's user list
// (active now / idle / offline from presence, live; a filter; collapsible; a
// drawer at phone size), the user card (a dialog named by the person's full
// name, from a sender's name or avatar or a name in the list), setting your
// own status and invisible mode, and the People page's styles staying on
// that page (defect 8).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, ROOT, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

const userList = (page: Page) => page.getByRole("complementary", { name: "User list" });
const group = (page: Page, name: string) => userList(page).getByRole("list", { name: new RegExp(`^${name} \\(\\d+\\)$`) });

/** axe-core's serious and critical findings on the page as it is (the scan runs through the DevTools protocol, not a page script). */
async function axeViolations(page: Page, selectors: string[]): Promise<string[]> {
  const source = fs.readFileSync(path.join(ROOT, "node_modules/axe-core/axe.min.js"), "utf8");
  await page.evaluate(source);
  const found = await page.evaluate(async (include) => {
    const axe = (window as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run({ include: include.map((s) => [s]) }, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(" ")) }));
  }, selectors);
  return found.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => `${v.id} (${v.impact}): ${v.targets.join(", ")}`);
}

describe("web client: people", () => {
  test("the user list groups people by presence, live, with their status, and filters; its rows are not the People page's (defect 8)", async () => {
    const t = h.t;
    const max = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(max, t.users.member);
    // Max's own page reported him present; nobody else has been seen.
    await group(max, "Active now").getByRole("link", { name: "Max Member", exact: true }).waitFor();
    await group(max, "Offline").getByRole("link", { name: "Adam Admin", exact: true }).waitFor();
    // Bots are not people to talk to here.
    assert.equal(await userList(max).getByRole("link", { name: "Bob Bot" }).count(), 0);

    // Adam's client pings: a presence event moves him to "Active now".
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/presence", { status: "active", new_user_input: true, slim_presence: true }));
    await group(max, "Active now").getByRole("link", { name: "Adam Admin", exact: true }).waitFor();
    // And his status arrives with a user_status event.
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/status", { status_text: "In a meeting", emoji_name: "calendar" }));
    const adamRow = group(max, "Active now").getByRole("listitem").filter({ has: max.getByRole("link", { name: "Adam Admin", exact: true }) });
    await adamRow.getByText("In a meeting").waitFor();
    await adamRow.getByRole("img", { name: ":calendar:" }).waitFor();

    // Defect 8: the People page's bold, spaced rows stay on that page.
    const name = group(max, "Active now").getByRole("link", { name: "Max Member", exact: true });
    const { weight, rowHeight, channelRowHeight } = await name.evaluate((el) => ({
      weight: getComputedStyle(el).fontWeight,
      rowHeight: el.closest("li")!.getBoundingClientRect().height,
      channelRowHeight: document.querySelector(".sidebar .views li")!.getBoundingClientRect().height,
    }));
    assert.equal(weight, "400");
    assert.ok(rowHeight <= channelRowHeight * 1.4, `a user row is ${rowHeight}px high, a sidebar row ${channelRowHeight}px`);

    // The filter: the start of a name's words.
    const filter = userList(max).getByRole("searchbox", { name: "Filter users" });
    await filter.fill("adam");
    await userList(max).getByRole("link", { name: "Max Member", exact: true }).waitFor({ state: "hidden" });
    await userList(max).getByRole("link", { name: "Adam Admin", exact: true }).waitFor();
    await filter.fill("nobody at all");
    await userList(max).getByText("No matching users.").waitFor();
    await filter.fill("");

    // Collapsible, and remembered.
    await max.getByRole("button", { name: "Hide user list" }).first().click();
    await userList(max).waitFor({ state: "hidden" });
    await max.reload();
    await max.getByRole("button", { name: "Show user list" }).click();
    await userList(max).waitFor();
    // `w` (Zulip's shortcut) opens the list if need be and puts the focus in its filter.
    await max.getByRole("button", { name: "Hide user list" }).first().click();
    await userList(max).waitFor({ state: "hidden" });
    await max.locator("body").press("w");
    await waitFor("the filter focused", () => filter.evaluate((el) => el === document.activeElement));
    assert.deepEqual(h.pageErrors, []);
  });

  test("the user card: from a sender's name, avatar or the list; role, status, local time, fields; direct message and their messages; Escape gives the focus back", async () => {
    const t = h.t;
    const channel = await h.createChannel("card corner", [t.users.member, t.users.admin]);
    assertSuccess(await t.api(t.users.admin, "PATCH", "/settings", { timezone: "Asia/Tokyo" }));
    const field = assertSuccess(await t.api(t.users.admin, "POST", "/realm/profile_fields", { name: "Team", field_type: 1, hint: "" })).id as number;
    const github = assertSuccess(await t.api(t.users.admin, "POST", "/realm/profile_fields", { name: "GitHub username", field_type: 7, field_data: JSON.stringify({ subtype: "github" }) })).id as number;
    assertSuccess(await t.api(t.users.admin, "PATCH", "/users/me/profile_data", { data: [{ id: field, value: "Platform" }, { id: github, value: "adam-gh" }] }));
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/status", { status_text: "Reviewing", emoji_name: "palm_tree" }));
    await h.send(t.users.admin, channel, "hello", "Hello from Adam");

    const max = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(max, t.users.member, `#narrow/channel/${channel}-card-corner/topic/hello`);
    const message = max.getByRole("article", { name: "Message from Adam Admin" });
    await message.getByText("Hello from Adam").waitFor();

    const sender = message.getByRole("button", { name: "Adam Admin" });
    await sender.click();
    const card = max.getByRole("dialog", { name: "Adam Admin" });
    await card.waitFor();
    await card.getByText("Administrator").waitFor();
    await card.getByText("Reviewing").waitFor();
    await card.getByText("Local time").waitFor();
    // Tokyo's time now, in Max's language and 12-hour setting (the default).
    const tokyo = new Intl.DateTimeFormat("en", { hour: "numeric", minute: "2-digit", hour12: true, timeZone: "Asia/Tokyo" });
    const shown = (await card.locator("dd").nth(0).textContent()) ?? "";
    const now = Date.now();
    assert.ok([now - 60_000, now, now + 60_000].some((when) => tokyo.format(new Date(when)) === shown), `local time ${shown}`);
    await card.getByText("Team").waitFor();
    await card.getByText("Platform").waitFor();
    assert.equal(await card.getByRole("link", { name: "adam-gh" }).getAttribute("href"), "https://github.com/adam-gh");
    // Members do not see administrators' real addresses (the organization's default visibility).
    assert.equal(await card.getByText("Email").count(), 0);
    assert.deepEqual(await axeViolations(max, [".user-card", "#user-list"]), []);

    // Escape closes it and the focus is back on the name.
    await max.keyboard.press("Escape");
    await card.waitFor({ state: "hidden" });
    await waitFor("focus back on the sender's name", () => sender.evaluate((el) => el === document.activeElement));

    // From the avatar; a click elsewhere closes it.
    await message.locator(".sender-avatar").click();
    await card.waitFor();
    await max.locator(".view-title").click();
    await card.waitFor({ state: "hidden" });

    // From a mention of him in a message.
    await h.send(t.users.member, channel, "hello", "Thanks @**Adam Admin**");
    await max.locator(".rendered_markdown .user-mention").filter({ hasText: "Adam Admin" }).click();
    await card.waitFor();
    await max.keyboard.press("Escape");
    await card.waitFor({ state: "hidden" });

    // From the list; "View messages" narrows to what Adam sent.
    await userList(max).getByRole("link", { name: "Adam Admin", exact: true }).click();
    await card.getByRole("button", { name: "View messages" }).click();
    await card.waitFor({ state: "hidden" });
    await waitFor("the sender narrow", async () => decodeURIComponent(await max.evaluate(() => location.hash)).includes("sender"));
    await max.getByRole("article", { name: "Message from Adam Admin" }).getByText("Hello from Adam").waitFor();

    // "Send direct message": the conversation with Adam, the compose box aimed at him and focused.
    await max.getByRole("article", { name: "Message from Adam Admin" }).getByRole("button", { name: "Adam Admin" }).click();
    await card.getByRole("button", { name: "Send direct message" }).click();
    await waitFor("the DM narrow", async () => (await max.evaluate(() => location.hash)) === `#narrow/dm/${t.users.admin.id}-dm`);
    const compose = max.getByRole("textbox", { name: "Message" });
    await waitFor("the compose box focused", () => compose.evaluate((el) => el === document.activeElement));
    await compose.fill("Hi Adam");
    await compose.press("Enter");
    await waitFor("the direct message sent", async () => {
      const found = assertSuccess(await t.api(t.users.admin, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: "dm", operand: [t.users.member.id] }]) }));
      return (found.messages as { content: string }[]).some((m) => m.content.includes("Hi Adam"));
    });

    // Your own card shows your address, and a live change to a field.
    await userList(max).getByRole("link", { name: "Max Member", exact: true }).click();
    const own = max.getByRole("dialog", { name: "Max Member" });
    await own.getByText(t.users.member.email).waitFor();
    await max.keyboard.press("Escape");
    await userList(max).getByRole("link", { name: "Adam Admin", exact: true }).click();
    assertSuccess(await t.api(t.users.admin, "PATCH", "/users/me/profile_data", { data: [{ id: field, value: "Infrastructure" }] }));
    await card.getByText("Infrastructure").waitFor();
    await max.keyboard.press("Escape");

    // A bot's card says it is one, and whose.
    await h.send(t.users.bot, channel, "hello", "Beep from the bot");
    await max.goto(`${t.url}/#narrow/channel/${channel}-card-corner/topic/hello`);
    await max.getByRole("article", { name: "Message from Bob Bot" }).getByRole("button", { name: "Bob Bot" }).click();
    const bot = max.getByRole("dialog", { name: "Bob Bot" });
    await bot.getByText("Bot", { exact: true }).waitFor();
    await bot.getByRole("button", { name: "Max Member" }).waitFor();
    await max.keyboard.press("Escape");
    assert.deepEqual(h.pageErrors, []);
  });

  test("your status: a suggestion, an emoji of your choice, clearing it; invisible mode", async () => {
    const t = h.t;
    const mona = await h.newPage({ width: 1280, height: 800 });
    await h.logIn(mona, t.users.moderator);
    const menu = mona.getByRole("button", { name: "Mona Moderator" }).and(mona.locator(".user-menu-button"));
    await menu.click();
    await mona.getByRole("menuitem", { name: "Set status" }).click();
    const dialog = mona.getByRole("dialog", { name: "Set status" });
    await dialog.getByRole("textbox", { name: "Status message" }).waitFor();
    assert.deepEqual(await axeViolations(mona, [".status-dialog"]), []);
    await dialog.getByRole("button", { name: "In a meeting", exact: true }).click();
    assert.equal(await dialog.getByRole("textbox", { name: "Status message" }).inputValue(), "In a meeting");
    await dialog.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ state: "hidden" });
    // The list shows it from the user_status event; the server has it.
    const row = userList(mona).getByRole("listitem").filter({ has: mona.getByRole("link", { name: "Mona Moderator", exact: true }) });
    await row.getByText("In a meeting").waitFor();
    await row.getByRole("img", { name: ":calendar:" }).waitFor();
    const status = assertSuccess(await t.api(t.users.member, "GET", `/users/${t.users.moderator.id}/status`)).status;
    assert.equal(status.status_text, "In a meeting");
    assert.equal(status.emoji_name, "calendar");

    // An emoji from the picker, and text of one's own.
    await menu.click();
    await mona.getByRole("menuitem", { name: "Edit status" }).click();
    await dialog.getByRole("button", { name: "Emoji: calendar" }).click();
    await dialog.getByRole("searchbox", { name: "Search emoji" }).fill("palm");
    await dialog.getByRole("button", { name: "palm_tree", exact: true }).click();
    await dialog.getByRole("textbox", { name: "Status message" }).fill("Back Monday");
    await dialog.getByRole("button", { name: "Save" }).click();
    await row.getByText("Back Monday").waitFor();
    await row.getByRole("img", { name: ":palm_tree:" }).waitFor();

    // Clearing it from the menu.
    await menu.click();
    await mona.getByRole("menuitem", { name: "Clear status" }).click();
    await row.getByText("Back Monday").waitFor({ state: "hidden" });
    assert.deepEqual(assertSuccess(await t.api(t.users.member, "GET", `/users/${t.users.moderator.id}/status`)).status, {});

    // Invisible mode: presence_enabled off; you see yourself offline, as others do.
    await menu.click();
    await mona.getByRole("menuitemcheckbox", { name: "Invisible mode" }).click();
    await group(mona, "Offline").getByRole("link", { name: "Mona Moderator", exact: true }).waitFor();
    const settings = assertSuccess(await t.api(t.users.moderator, "POST", "/register", { fetch_event_types: ["user_settings"] })).user_settings;
    assert.equal(settings.presence_enabled, false);
    await menu.click();
    assert.equal(await mona.getByRole("menuitemcheckbox", { name: "Invisible mode" }).getAttribute("aria-checked"), "true");
    await mona.getByRole("menuitemcheckbox", { name: "Invisible mode" }).click();
    await group(mona, "Active now").getByRole("link", { name: "Mona Moderator", exact: true }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("phone size: the user list is a drawer; the card opens from it; the title bar of a long page keeps its height (defect 8)", async () => {
    const t = h.t;
    const gus = await h.newPage({ width: 390, height: 844 });
    await h.logIn(gus, t.users.guest);
    await userList(gus).waitFor({ state: "hidden" });
    await gus.getByRole("button", { name: "Show user list" }).click();
    await userList(gus).waitFor();
    const box = (await userList(gus).boundingBox())!;
    assert.ok(box.x + box.width <= 390 + 1 && box.width < 390, `the drawer is at ${box.x}+${box.width}`);
    assert.deepEqual(await axeViolations(gus, ["#user-list"]), []);
    await userList(gus).getByRole("link", { name: "Olivia Owner", exact: true }).click();
    const card = gus.getByRole("dialog", { name: "Olivia Owner" });
    await card.getByText("Owner", { exact: true }).waitFor();
    const cardBox = (await card.boundingBox())!;
    assert.ok(cardBox.x >= 0 && cardBox.x + cardBox.width <= 390, "the card fits the screen");
    await gus.keyboard.press("Escape");
    await card.waitFor({ state: "hidden" });
    await gus.keyboard.press("Escape");
    await userList(gus).waitFor({ state: "hidden" });
    // A tap beside the drawer closes it too.
    await gus.getByRole("button", { name: "Show user list" }).click();
    await userList(gus).waitFor();
    await gus.mouse.click(20, 400);
    await userList(gus).waitFor({ state: "hidden" });
    assert.equal(await gus.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), true);

    // Defect 8: a page longer than the window scrolls under its title bar, which keeps its height.
    const olivia = await h.newPage({ width: 1280, height: 500 });
    await h.logIn(olivia, t.users.owner, "#organization/organization-profile");
    const title = olivia.locator(".view-title");
    await title.waitFor();
    await waitFor("a page longer than the window", () => olivia.locator(".page").evaluate((el) => el.scrollHeight > el.clientHeight));
    const { height, natural } = await title.evaluate((el) => ({ height: el.getBoundingClientRect().height, natural: el.scrollHeight }));
    assert.ok(height >= natural && height > 20, `the title bar is ${height}px high for ${natural}px of content`);
    assert.deepEqual(h.pageErrors, []);
  });
});
