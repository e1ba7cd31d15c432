// The compose box's features beyond typing and sending, in a real browser:
// several uploads at once (each on its own line, with a progress bar and a
// cancel button), a box that grows with its text, the formatting toolbar,
// send later and the Scheduled messages view, reminders on a message, saved
// snippets, and the Drafts view (on the server with draft synchronization
// on, in the browser with it off).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page, Route } from "playwright-core";
import { axeFindings, BrowserHarness, channelLink, sidebar, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

const messageBox = (page: Page) => page.getByRole("textbox", { name: "Message", exact: true });

/** Opens `channel` and sets the compose box's topic. */
async function openTopic(page: Page, channel: string, topic: string): Promise<void> {
  await channelLink(page, channel).click();
  await page.getByRole("textbox", { name: "Topic", exact: true }).fill(topic);
}

/** The text and selection of the message box. */
async function boxState(page: Page): Promise<{ value: string; selected: string }> {
  return messageBox(page).evaluate((el: HTMLTextAreaElement) => ({ value: el.value, selected: el.value.slice(el.selectionStart, el.selectionEnd) }));
}

describe("web client: compose features", () => {
  test("several files upload at once, each on its own line with its progress bar; cancel aborts one and removes its placeholder", async () => {
    const t = h.t;
    await h.createChannel("uploads", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "uploads", "many files");
    await messageBox(page).fill("Here they are:");

    // The upload of slow.txt is held at the network until the test is done with it.
    const held: Route[] = [];
    await page.route("**/json/user_uploads", async (route) => {
      if ((route.request().postDataBuffer() ?? Buffer.alloc(0)).includes('filename="slow.txt"')) held.push(route);
      else await route.continue();
    });
    await page.locator(".compose input[type=file]").setInputFiles([
      { name: "a.txt", mimeType: "text/plain", buffer: Buffer.from("first\n") },
      { name: "b.txt", mimeType: "text/plain", buffer: Buffer.from("second\n") },
      { name: "slow.txt", mimeType: "text/plain", buffer: Buffer.from("slow\n") },
    ]);
    const uploads = page.getByRole("list", { name: "Uploads" });
    await uploads.getByRole("progressbar", { name: "Uploading slow.txt" }).waitFor();
    await waitFor("the two quick uploads in", async () => /\[b\.txt\]\(\/user_uploads\/[^)]+\)/.test((await boxState(page)).value) && /\[a\.txt\]\(\/user_uploads\/[^)]+\)/.test((await boxState(page)).value));
    const lines = (await boxState(page)).value.split("\n");
    assert.equal(lines[0], "Here they are:");
    assert.match(lines[1]!, /^\[a\.txt\]\(\/user_uploads\/[^)]+\)$/, "each upload on a line of its own");
    assert.match(lines[2]!, /^\[b\.txt\]\(\/user_uploads\/[^)]+\)$/);
    assert.equal(lines[3], "[Uploading slow.txt…]()");
    assert.equal(await uploads.getByRole("listitem").count(), 1, "finished uploads leave the list");
    assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isDisabled(), "no sending while a file is on its way");
    assert.deepEqual(await axeFindings(page, "form.compose"), [], "the compose box with its toolbar and uploads");

    await uploads.getByRole("button", { name: "Cancel upload of slow.txt" }).click();
    await uploads.waitFor({ state: "detached" });
    const after = (await boxState(page)).value;
    assert.ok(!after.includes("slow.txt"), `the placeholder goes: ${after}`);
    assert.equal(after.split("\n").filter((l) => l !== "").length, 3);
    await page.unroute("**/json/user_uploads");
    await messageBox(page).press("Enter");
    await waitFor("the message with both files", async () => {
      const { messages } = assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, apply_markdown: false }));
      return /^Here they are:\n\[a\.txt\]\(\/user_uploads\/[^)]+\)\n\[b\.txt\]\(\/user_uploads\/[^)]+\)$/.test(messages[0]?.content ?? "");
    });
    assert.deepEqual(h.pageErrors, []);
  });

  test("an upload that finishes after the box moved to another conversation lands in its own conversation's draft", async () => {
    const t = h.t;
    await h.createChannel("upload-here", [t.users.member]);
    await h.createChannel("elsewhere", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "upload-here", "report");
    const held: Route[] = [];
    await page.route("**/json/user_uploads", (route) => void held.push(route));
    await page.locator(".compose input[type=file]").setInputFiles([{ name: "late.txt", mimeType: "text/plain", buffer: Buffer.from("late\n") }]);
    await page.getByRole("progressbar", { name: "Uploading late.txt" }).waitFor();
    await waitFor("the upload at the network", async () => held.length === 1);

    await channelLink(page, "elsewhere").click();
    await page.getByRole("main", { name: "#elsewhere" }).waitFor();
    assert.equal(await page.getByRole("list", { name: "Uploads" }).count(), 0, "the other conversation has no uploads of its own");
    assert.ok(await page.getByRole("button", { name: "Send", exact: true }).isDisabled(), "an empty box");
    const uploaded = page.waitForResponse("**/json/user_uploads");
    await held[0]!.continue();
    await uploaded;
    await page.unroute("**/json/user_uploads");
    // Finished while the box shows #elsewhere: the link goes into #upload-here's stored draft.
    await waitFor("the stored draft updated", async () => page.evaluate(() => Object.keys(localStorage).some((k) => k.startsWith("parley-drafts:") && /\[late\.txt\]\(\/user_uploads\//.test(localStorage.getItem(k) ?? ""))));
    assert.equal((await boxState(page)).value, "", "the open conversation's box is untouched");

    await channelLink(page, "upload-here").click();
    await waitFor("the link in the first conversation's draft", async () => /^\[late\.txt\]\(\/user_uploads\/[^)]+\)\n?$/.test((await boxState(page)).value));
    assert.equal((await boxState(page)).value.includes("Uploading"), false);
    assert.deepEqual(h.pageErrors, []);
  });

  test("the message box grows with its text up to a maximum, then scrolls", async () => {
    const t = h.t;
    await h.createChannel("growing", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "growing", "long");
    const box = messageBox(page);
    const size = () => box.evaluate((el: HTMLTextAreaElement) => ({ height: el.getBoundingClientRect().height, scroll: el.scrollHeight, client: el.clientHeight }));
    const one = await size();
    await box.fill("one\ntwo\nthree\nfour\nfive");
    const five = await size();
    assert.ok(five.height > one.height * 2, `five lines take more room than one: ${one.height} → ${five.height}`);
    assert.ok(five.scroll <= five.client + 1, "five lines fit without scrolling");
    await box.fill(Array.from({ length: 80 }, (_, i) => `line ${i}`).join("\n"));
    const many = await size();
    assert.ok(many.height < 800 * 0.45, `the box stops growing: ${many.height}px`);
    assert.ok(many.scroll > many.client, "past its maximum the box scrolls");
    await box.fill("short again");
    const back = await size();
    assert.ok(back.height < five.height, "and shrinks with its text");
    assert.deepEqual(h.pageErrors, []);
  });

  test("the formatting toolbar wraps the selection or inserts the syntax", async () => {
    const t = h.t;
    await h.createChannel("formats", [t.users.member, t.users.admin]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "formats", "styles");
    const box = messageBox(page);
    const toolbar = page.getByRole("toolbar", { name: "Formatting" });
    const select = (start: number, end: number) => box.evaluate((el: HTMLTextAreaElement, [s, e]) => el.setSelectionRange(s!, e!), [start, end]);

    await box.fill("make this bold");
    await select(10, 14);
    await toolbar.getByRole("button", { name: "Bold" }).click();
    assert.deepEqual(await boxState(page), { value: "make this **bold**", selected: "bold" });
    await toolbar.getByRole("button", { name: "Bold" }).click();
    assert.deepEqual(await boxState(page), { value: "make this bold", selected: "bold" }, "a second click unwraps");
    await toolbar.getByRole("button", { name: "Italic" }).click();
    assert.equal((await boxState(page)).value, "make this *bold*");

    await box.fill("keys");
    await select(0, 4);
    await box.press("Control+b");
    assert.deepEqual(await boxState(page), { value: "**keys**", selected: "keys" }, "Ctrl+B is the Bold button");
    await box.press("Control+i");
    assert.equal((await boxState(page)).value, "***keys***");

    await box.fill("Zulip");
    await select(0, 5);
    await toolbar.getByRole("button", { name: "Link" }).click();
    assert.deepEqual(await boxState(page), { value: "[Zulip](url)", selected: "url" }, "the URL is selected to be typed over");

    await box.fill("x = 1\ny = 2");
    await select(0, 11);
    await toolbar.getByRole("button", { name: "Code" }).click();
    assert.equal((await boxState(page)).value, "```\nx = 1\ny = 2\n```", "several lines become a code block");
    await box.fill("x");
    await select(0, 1);
    await toolbar.getByRole("button", { name: "Code" }).click();
    assert.equal((await boxState(page)).value, "`x`");

    await box.fill("wise words");
    await select(0, 10);
    await toolbar.getByRole("button", { name: "Quote" }).click();
    assert.equal((await boxState(page)).value, "```quote\nwise words\n```");
    await box.fill("e^{i\\pi}");
    await select(0, 8);
    await toolbar.getByRole("button", { name: "Math" }).click();
    assert.equal((await boxState(page)).value, "$$e^{i\\pi}$$");
    await box.fill("");
    await toolbar.getByRole("button", { name: "Spoiler" }).click();
    assert.equal((await boxState(page)).value, "```spoiler Header\n\n```");

    await box.fill("");
    await toolbar.getByRole("button", { name: "Poll" }).click();
    assert.deepEqual(await boxState(page), { value: "/poll Question\nOption 1\nOption 2", selected: "Question" });
    await box.fill("");
    await toolbar.getByRole("button", { name: "To-do list" }).click();
    assert.deepEqual(await boxState(page), { value: "/todo Task list\nTask 1: description\nTask 2: description", selected: "Task list" });

    // Mention: "@" at the caret, with the people typeahead open.
    await box.fill("Ask ");
    await toolbar.getByRole("button", { name: "Mention a person" }).click();
    assert.equal((await boxState(page)).value, "Ask @");
    await box.pressSequentially("Ada");
    await page.getByRole("listbox", { name: "Suggestions" }).getByRole("option", { name: "Adam Admin" }).click();
    assert.equal((await boxState(page)).value, "Ask @**Adam Admin** ");

    // Emoji: the picker, and the chosen emoji's name at the caret.
    await toolbar.getByRole("button", { name: "Add emoji" }).click();
    const picker = page.getByRole("dialog", { name: "Emoji picker" });
    await picker.getByRole("searchbox").fill("tada");
    await picker.getByRole("button", { name: "tada", exact: true }).first().click();
    await picker.waitFor({ state: "detached" });
    assert.equal((await boxState(page)).value, "Ask @**Adam Admin** :tada: ");
    assert.deepEqual(h.pageErrors, []);
  });

  test("Send later schedules the message; the Scheduled messages view edits, reschedules and deletes it, live", async () => {
    const t = h.t;
    const stream = await h.createChannel("later", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "later", "plans");
    await messageBox(page).fill("Good morning, team");
    await page.getByRole("button", { name: "Send later", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Schedule message" });
    assert.deepEqual(await axeFindings(page, "dialog[open]"), []);
    await dialog.getByRole("button", { name: /^Tomorrow at 9:00/ }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("status").filter({ hasText: "Your message is scheduled for" }).waitFor();
    assert.equal((await boxState(page)).value, "", "the box is emptied, as after sending");

    const scheduled = async () => assertSuccess(await t.api(t.users.member, "GET", "/scheduled_messages", {})).scheduled_messages as { scheduled_message_id: number; content: string; to: number; topic: string; scheduled_delivery_timestamp: number }[];
    const [first] = await scheduled();
    assert.equal(first?.content, "Good morning, team");
    assert.equal(first?.to, stream);
    assert.equal(first?.topic, "plans");
    const nineTomorrow = await page.evaluate(() => {
      const d = new Date();
      d.setDate(d.getDate() + 1);
      d.setHours(9, 0, 0, 0);
      return d.getTime() / 1000;
    });
    assert.equal(first?.scheduled_delivery_timestamp, nineTomorrow);

    await sidebar(page).getByRole("link", { name: "Scheduled messages", exact: true }).click();
    const list = page.getByRole("list", { name: "Scheduled messages" });
    const item = list.getByRole("listitem", { name: "Scheduled message to #later > plans" });
    await item.getByText("Good morning, team").waitFor();
    assert.deepEqual(await axeFindings(page), [], "the Scheduled messages view");

    // Edit the text.
    await item.getByRole("button", { name: "Edit" }).click();
    await item.getByRole("textbox", { name: "Message" }).fill("Good morning, everyone");
    await item.getByRole("button", { name: "Save" }).click();
    await item.getByText("Good morning, everyone").waitFor();
    await waitFor("the edit stored", async () => (await scheduled())[0]?.content === "Good morning, everyone");

    // Reschedule to a custom time.
    await item.getByRole("button", { name: "Reschedule" }).click();
    const picker = page.getByRole("dialog", { name: "Reschedule message" });
    const custom = await page.evaluate(() => {
      const d = new Date(Date.now() + 3 * 86400_000);
      d.setHours(14, 30, 0, 0);
      return { value: `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}T14:30`, at: d.getTime() / 1000 };
    });
    await picker.getByLabel("Custom date and time").fill(custom.value);
    await picker.getByRole("button", { name: "Reschedule" }).click();
    await picker.waitFor({ state: "detached" });
    await waitFor("the new time stored", async () => (await scheduled())[0]?.scheduled_delivery_timestamp === custom.at);

    // One scheduled from another client shows up here by its event.
    assertSuccess(await t.api(t.users.member, "POST", "/scheduled_messages", { type: "stream", to: stream, topic: "other", content: "From the API", scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 7200 }));
    await list.getByRole("listitem", { name: "Scheduled message to #later > other" }).waitFor();

    await item.getByRole("button", { name: "Delete" }).click();
    await item.waitFor({ state: "detached" });
    assert.deepEqual((await scheduled()).map((m) => m.content), ["From the API"]);
    assert.deepEqual(h.pageErrors, []);
  });

  test("Remind me about this sets a reminder on a message, listed with the scheduled messages and deletable", async () => {
    const t = h.t;
    const stream = await h.createChannel("reminders", [t.users.member, t.users.admin]);
    const id = await h.send(t.users.admin, stream, "follow-up", "Please review the budget");
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await channelLink(page, "reminders").click();
    const row = page.locator(`article.message[data-message-id="${id}"]`);
    await row.hover();
    await row.getByRole("button", { name: "Message actions" }).click();
    await page.getByRole("menu", { name: "Message actions" }).getByRole("menuitem", { name: "Remind me about this" }).click();
    const dialog = page.getByRole("dialog", { name: "Remind me about this" });
    await dialog.getByLabel("Note (optional)").fill("before Friday");
    const before = Date.now() / 1000;
    await dialog.getByRole("button", { name: "In 1 hour" }).click();
    await dialog.waitFor({ state: "detached" });
    const reminders = async () => assertSuccess(await t.api(t.users.member, "GET", "/reminders", {})).reminders as { reminder_id: number; reminder_target_message_id: number; content: string; scheduled_delivery_timestamp: number }[];
    const [reminder] = await reminders();
    assert.equal(reminder?.reminder_target_message_id, id);
    assert.match(reminder!.content, /before Friday/);
    assert.ok(reminder!.scheduled_delivery_timestamp >= before + 3500 && reminder!.scheduled_delivery_timestamp <= before + 3700, "an hour from now");

    await page.goto(`${t.url}/#scheduled`);
    const item = page.getByRole("list", { name: "Reminders" }).getByRole("listitem");
    await item.getByText("before Friday").waitFor();
    await item.getByRole("button", { name: "Delete reminder" }).click();
    await item.waitFor({ state: "detached" });
    assert.deepEqual(await reminders(), []);
    assert.deepEqual(h.pageErrors, []);
  });

  test("saved snippets: created from the picker, inserted into the message, deleted; other tabs follow", async () => {
    const t = h.t;
    await h.createChannel("snippets", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await openTopic(page, "snippets", "canned");
    const other = await h.newPage();
    await h.logIn(other, t.users.member);
    await openTopic(other, "snippets", "canned");

    await page.getByRole("button", { name: "Saved snippets" }).click();
    let picker = page.getByRole("dialog", { name: "Saved snippets" });
    await picker.getByText("You have no saved snippets.").waitFor();
    await picker.getByRole("button", { name: "Add a new saved snippet" }).click();
    await picker.getByLabel("Title").fill("Greeting");
    await picker.getByLabel("Content").fill("Welcome aboard! Read the **handbook** first.");
    await picker.getByRole("button", { name: "Save snippet" }).click();
    const snippet = picker.getByRole("button", { name: /^Greeting/ });
    await snippet.waitFor();
    assert.deepEqual(await axeFindings(page, ".snippet-popover"), []);
    const stored = assertSuccess(await t.api(t.users.member, "GET", "/saved_snippets", {})).saved_snippets as { id: number; title: string; content: string }[];
    assert.deepEqual(stored.map((s) => [s.title, s.content]), [["Greeting", "Welcome aboard! Read the **handbook** first."]]);

    await page.keyboard.press("Escape");
    await picker.waitFor({ state: "detached" });
    await messageBox(page).fill("Hi Max. ");
    await page.getByRole("button", { name: "Saved snippets" }).click();
    picker = page.getByRole("dialog", { name: "Saved snippets" });
    await picker.getByRole("button", { name: /^Greeting/ }).click();
    await picker.waitFor({ state: "detached" });
    assert.equal((await boxState(page)).value, "Hi Max. Welcome aboard! Read the **handbook** first.");

    // The other tab learnt of the snippet by its event.
    await other.getByRole("button", { name: "Saved snippets" }).click();
    const otherPicker = other.getByRole("dialog", { name: "Saved snippets" });
    await otherPicker.getByRole("button", { name: "Delete snippet Greeting" }).click();
    await otherPicker.getByText("You have no saved snippets.").waitFor();
    await page.getByRole("button", { name: "Saved snippets" }).click();
    await page.getByRole("dialog", { name: "Saved snippets" }).getByText("You have no saved snippets.").waitFor();
    assert.deepEqual(assertSuccess(await t.api(t.users.member, "GET", "/saved_snippets", {})).saved_snippets, []);
    assert.deepEqual(h.pageErrors, []);
  });

  test("Drafts view with synchronization on: drafts kept on the server, listed on another device, restored and deleted", async () => {
    const t = h.t;
    const user = t.users.admin;
    await h.createChannel("drafting", [user]);
    const page = await h.newPage();
    await h.logIn(page, user);
    await openTopic(page, "drafting", "unfinished");
    await messageBox(page).fill("Half a thought");
    const drafts = async () => assertSuccess(await t.api(user, "GET", "/drafts", {})).drafts as { id: number; type: string; topic: string; content: string }[];
    await waitFor("the draft on the server", async () => (await drafts())[0]?.content === "Half a thought");
    assert.equal((await drafts())[0]?.topic, "unfinished");
    await messageBox(page).fill("Half a thought, and more");
    await waitFor("the edit on the server", async () => (await drafts())[0]?.content === "Half a thought, and more");
    assert.equal((await drafts()).length, 1, "one draft per conversation");

    // Another device: its Drafts view lists the server's drafts, and opens one in its conversation.
    const phone = await h.newPage({ width: 390, height: 844 });
    await h.logIn(phone, user, "#drafts");
    const item = phone.getByRole("list", { name: "Drafts" }).getByRole("listitem", { name: "Draft to #drafting > unfinished" });
    await item.getByText("Half a thought, and more").waitFor();
    assert.deepEqual(await axeFindings(phone), [], "the Drafts view at phone size");
    await item.getByRole("button", { name: "Restore draft" }).click();
    await phone.getByRole("main", { name: "#drafting > unfinished" }).waitFor();
    await waitFor("the draft in the compose box", async () => (await messageBox(phone).inputValue()) === "Half a thought, and more");
    await messageBox(phone).fill("Half a thought, finished on the phone");
    await waitFor("the phone's edit on the server", async () => (await drafts())[0]?.content === "Half a thought, finished on the phone");
    assert.equal((await drafts()).length, 1, "the phone edits the same draft");

    // Deleted from the first device's Drafts view: gone from the server.
    await sidebar(page).getByRole("link", { name: "Drafts", exact: true }).click();
    const mine = page.getByRole("list", { name: "Drafts" }).getByRole("listitem", { name: "Draft to #drafting > unfinished" });
    await mine.getByText("Half a thought, finished on the phone").waitFor();
    await mine.getByRole("button", { name: "Delete draft" }).click();
    await mine.waitFor({ state: "detached" });
    assert.deepEqual(await drafts(), []);
    assert.deepEqual(h.pageErrors, []);
  });

  test("Drafts view with synchronization off: drafts stay in this browser", async () => {
    const t = h.t;
    const user = t.users.moderator;
    assertSuccess(await t.api(user, "PATCH", "/settings", { enable_drafts_synchronization: false }));
    const stream = await h.createChannel("local-drafts", [user]);
    const page = await h.newPage();
    await h.logIn(page, user);
    await openTopic(page, "local-drafts", "notes");
    await messageBox(page).fill("Only here");
    await sidebar(page).getByRole("link", { name: "Drafts", exact: true }).click();
    await page.getByText("Drafts are saved in this browser only.").waitFor();
    const item = page.getByRole("list", { name: "Drafts" }).getByRole("listitem", { name: "Draft to #local-drafts > notes" });
    await item.getByText("Only here").waitFor();
    const refused = await t.api(user, "GET", "/drafts", {});
    assert.equal(refused.status, 400, "nothing is kept on the server");

    await item.getByRole("button", { name: "Restore draft" }).click();
    await waitFor("the draft restored", async () => (await messageBox(page).inputValue()) === "Only here");
    assert.equal(await page.getByRole("textbox", { name: "Topic", exact: true }).inputValue(), "notes");
    await messageBox(page).press("Enter");
    await waitFor("the message sent", async () => {
      const { messages } = assertSuccess(await t.api(user, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [{ operator: "channel", operand: stream }] }));
      return messages[0]?.content.includes("Only here") ?? false;
    });
    await sidebar(page).getByRole("link", { name: "Drafts", exact: true }).click();
    await page.getByText("You have no drafts.", { exact: false }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });
});
