// The compose box in a real browser: typeahead, a preview rendered by the
// server, uploads by button and by drag-and-drop (the other person opens the
// file with their session), drafts kept across reloads, and a direct message
// to several people chosen in the To field.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BrowserHarness, channelLink, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

describe("web client: compose", () => {
  test("typeahead completes @people, #channels and :emoji:, and the preview is the server's rendering", async () => {
    const t = h.t;
    await h.createChannel("garden", [t.users.member, t.users.admin]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await channelLink(page, "garden").click();
    await page.getByRole("textbox", { name: "Topic", exact: true }).fill("roses");
    const box = page.getByRole("textbox", { name: "Message", exact: true });

    await box.pressSequentially("Ask @Ada");
    const suggestions = page.getByRole("listbox", { name: "Suggestions" });
    await suggestions.getByRole("option", { name: "Adam Admin" }).waitFor();
    await box.press("Enter");
    assert.equal(await box.inputValue(), "Ask @**Adam Admin** ", "Enter picks the suggestion, it does not send");

    await box.pressSequentially("in #gar");
    await suggestions.getByRole("option", { name: "garden" }).click();
    assert.equal(await box.inputValue(), "Ask @**Adam Admin** in #**garden** ");

    await box.pressSequentially(":tada");
    await suggestions.getByRole("option", { name: "tada" }).waitFor();
    await box.press("Tab");
    assert.equal(await box.inputValue(), "Ask @**Adam Admin** in #**garden** :tada: ");
    await box.pressSequentially("**now**");

    // Escape closes a list without changing the text.
    await box.pressSequentially(" @Mon");
    await suggestions.waitFor();
    await box.press("Escape");
    await suggestions.waitFor({ state: "hidden" });
    await box.press("Backspace");
    await box.press("Backspace");
    await box.press("Backspace");
    await box.press("Backspace");
    await box.press("Backspace");

    await page.getByRole("button", { name: "Preview" }).click();
    const preview = page.getByLabel("Preview", { exact: true }).locator("strong");
    await preview.waitFor();
    assert.equal(await preview.textContent(), "now");
    assert.equal(await page.getByLabel("Preview", { exact: true }).locator(".user-mention").textContent(), "@Adam Admin");
    await page.getByRole("button", { name: "Preview" }).click();
    await box.press("Enter");
    await page.locator("article.message .user-mention", { hasText: "@Adam Admin" }).waitFor();
    let sent = { messages: [] as { content: string; subject: string }[] };
    await waitFor("the message stored", async () => {
      sent = assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, apply_markdown: false }));
      return sent.messages[0]?.content === "Ask @**Adam Admin** in #**garden** :tada: **now**";
    });
    assert.equal(sent.messages[0]!.subject, "roses");
    assert.deepEqual(h.pageErrors, []);
  });

  test("the Topic field suggests the channel's topics", async () => {
    const t = h.t;
    const stream = await h.createChannel("planning", [t.users.member, t.users.admin]);
    await h.send(t.users.admin, stream, "quarterly roadmap", "first");
    const hiring = await h.send(t.users.admin, stream, "hiring", "second");
    const page = await h.newPage();
    // The channel's topics answer only after the first letters are typed, as on a slow
    // connection: the list must appear when they arrive.
    let releaseTopics!: () => void;
    const topicsHeld = new Promise<void>((resolve) => (releaseTopics = resolve));
    let topicsAsked = false;
    await page.route(/\/users\/me\/\d+\/topics$/, async (route) => {
      topicsAsked = true;
      await topicsHeld;
      await route.continue();
    });
    await h.logIn(page, t.users.member);
    await channelLink(page, "planning").click();
    const topic = page.getByRole("textbox", { name: "Topic", exact: true });
    await topic.pressSequentially("road");
    await waitFor("the topics asked for", async () => topicsAsked);
    assert.equal(await page.getByRole("listbox", { name: "Topics" }).count(), 0);
    releaseTopics();
    await page.getByRole("listbox", { name: "Topics" }).getByRole("option", { name: "quarterly roadmap" }).click();
    assert.equal(await topic.inputValue(), "quarterly roadmap");

    // A list the user closed stays closed when a topic's rename makes the channel's topics load again.
    await topic.fill("");
    await topic.pressSequentially("hir");
    const list = page.getByRole("listbox", { name: "Topics" });
    await list.getByRole("option", { name: "hiring" }).waitFor();
    await topic.press("Escape");
    await list.waitFor({ state: "hidden" });
    const reloaded = page.waitForResponse(/\/users\/me\/\d+\/topics$/);
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${hiring}`, { topic: "hiring 2027", propagate_mode: "change_all" }));
    await reloaded;
    await page.getByRole("link", { name: "hiring 2027" }).first().waitFor();
    assert.equal(await list.count(), 0);
    assert.equal(await topic.inputValue(), "hir");
    assert.deepEqual(h.pageErrors, []);
  });

  test("files upload by button and by drop; the other person opens them with their session", async () => {
    const t = h.t;
    await h.createChannel("files", [t.users.member, t.users.admin]);
    const max = await h.newPage();
    await h.logIn(max, t.users.member);
    await channelLink(max, "files").click();
    await max.getByRole("textbox", { name: "Topic", exact: true }).fill("reports");
    const box = max.getByRole("textbox", { name: "Message", exact: true });
    await max.locator(".compose input[type=file]").setInputFiles({ name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("plain notes\n") });
    await max.waitForFunction(() => /\[notes\.txt\]\(\/user_uploads\/[^)]+\)/.test((document.querySelector("#compose-message") as HTMLTextAreaElement).value));

    // A drop of a second file onto the compose box.
    await max.evaluate(() => {
      const data = new DataTransfer();
      data.items.add(new File(["dropped data"], "dropped.csv", { type: "text/csv" }));
      const form = document.querySelector("form.compose")!;
      form.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
      form.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    });
    await max.waitForFunction(() => /\[dropped\.csv\]\(\/user_uploads\/[^)]+\)/.test((document.querySelector("#compose-message") as HTMLTextAreaElement).value));
    await box.press("Enter");

    const adam = await h.newPage();
    await h.logIn(adam, t.users.admin);
    await channelLink(adam, "files").click();
    const link = adam.locator("article.message a", { hasText: "notes.txt" });
    await link.waitFor();
    const href = (await link.getAttribute("href"))!;
    assert.match(href, /^\/user_uploads\//);
    const file = await adam.request.get(t.url + href);
    assert.equal(file.status(), 200);
    assert.equal(await file.text(), "plain notes\n");
    const dropped = await adam.request.get(t.url + (await adam.locator("article.message a", { hasText: "dropped.csv" }).getAttribute("href"))!);
    assert.equal(await dropped.text(), "dropped data");
    assert.deepEqual(h.pageErrors, []);
  });

  test("a draft stays with its conversation across navigation and reloads, and goes once sent", async () => {
    const t = h.t;
    const stream = await h.createChannel("drafts", [t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await page.goto(`${t.url}/#narrow/channel/${stream}-drafts`);
    await page.getByRole("textbox", { name: "Topic", exact: true }).fill("unfinished");
    const box = page.getByRole("textbox", { name: "Message", exact: true });
    await box.fill("Half a thought");
    await page.goto(`${t.url}/#inbox`);
    await page.reload();
    await page.goto(`${t.url}/#narrow/channel/${stream}-drafts`);
    await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
    assert.equal(await page.getByRole("textbox", { name: "Message", exact: true }).inputValue(), "Half a thought");
    assert.equal(await page.getByRole("textbox", { name: "Topic", exact: true }).inputValue(), "unfinished");
    await page.getByRole("textbox", { name: "Message", exact: true }).press("Enter");
    await page.locator("article.message", { hasText: "Half a thought" }).waitFor();
    await page.reload();
    await page.getByRole("textbox", { name: "Message", exact: true }).waitFor();
    assert.equal(await page.getByRole("textbox", { name: "Message", exact: true }).inputValue(), "");
    assert.deepEqual(h.pageErrors, []);
  });

  test("a direct message to several people, chosen in the To field", async () => {
    const t = h.t;
    const page = await h.newPage();
    await h.logIn(page, t.users.member);
    await page.goto(`${t.url}/#narrow/is/dm`);
    const to = page.getByRole("combobox", { name: "To" });
    await to.pressSequentially("Adam");
    await page.getByRole("listbox", { name: "People" }).getByRole("option", { name: "Adam Admin" }).click();
    await to.pressSequentially("Mona");
    await to.press("Enter");
    const chips = page.getByRole("list", { name: "Recipients" });
    assert.deepEqual((await chips.locator("li").allTextContents()).map((s) => s.replace("×", "")), ["Adam Admin", "Mona Moderator"]);
    await page.getByRole("textbox", { name: "Message", exact: true }).fill("A word with you both");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.locator("article.message", { hasText: "A word with you both" }).waitFor();
    // The row may be the local echo: wait for the server to have stored it.
    let received: { messages: { content: string; display_recipient: { id: number }[] }[] } = { messages: [] };
    await waitFor("the DM stored", async () => {
      received = assertSuccess(await t.api(t.users.moderator, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, apply_markdown: false }));
      return received.messages[0]?.content === "A word with you both";
    });
    assert.deepEqual(received.messages[0]!.display_recipient.map((r: { id: number }) => r.id).sort((a: number, b: number) => a - b), [t.users.admin.id, t.users.moderator.id, t.users.member.id].sort((a, b) => a - b));
    assert.deepEqual(h.pageErrors, []);
  });
});
