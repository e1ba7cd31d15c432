// The server's rendered content in a real browser, as Zulip's web app shows
// it: polls and todo lists as live widgets between two people (votes, new
// options, ticks, new tasks by POST /submessage, seen by the other through
// `submessage` events), KaTeX math in KaTeX's fonts, spoilers that open by
// click and keyboard, custom emoji images in messages and reactions, an
// uploaded image in a lightbox, tables and highlighted code, light and dark;
// the images the page's CSP lets in from elsewhere (avatars at EXTERNAL_URL,
// YouTube thumbnails) load under it.
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, channelLink, waitFor } from "./browser.ts";
import { assertSuccess, basicAuth } from "./helpers.ts";

const h = new BrowserHarness();
// The image-proxy case's "other site" is a server on this machine: the proxy is told it may reach it.
// Link previews are on, for the same reason reaching that same kind of server.
before(async () => {
  await h.start({ externalContentAllowInternal: true, inlineUrlEmbedPreview: true });
  assertSuccess(await h.t.api(h.t.users.owner, "PATCH", "/realm", { inline_url_embed_preview: true }));
});
after(() => h.close());

// A 16×16 PNG: a red disc on yellow.
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAPklEQVR4nGP4f8GAJMRAHQ0PHBwgiLAGuFJkhFMDVtVoehiIUY2sh1wNBFXD9dBNA+09TU48kBPT5KQlgggA6aSz6fa/K90AAAAASUVORK5CYII=",
  "base64",
);
const SHOTS = process.env.SCREENSHOT_DIR;

async function postFile(path: string, user: { email: string; apiKey: string }, name: string): Promise<Record<string, unknown>> {
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(PNG)], { type: "image/png" }), name);
  const response = await fetch(`${h.t.url}/api/v1${path}`, { method: "POST", body: form, headers: { authorization: basicAuth(user.email, user.apiKey) } });
  const body = (await response.json()) as Record<string, unknown>;
  assert.equal(body.result, "success", JSON.stringify(body));
  return body;
}

async function openTopic(page: Page, channel: string, topic: string): Promise<void> {
  await channelLink(page, channel).click();
  await page.locator(".recipient-topic", { hasText: topic }).first().waitFor();
}

describe("web client: rendered content", () => {
  test("a poll and a todo list are live widgets for two people", async () => {
    const t = h.t;
    const stream = await h.createChannel("decisions", [t.users.member, t.users.admin]);
    await h.send(t.users.admin, stream, "lunch", "/poll Where to eat?\nPizza\nSushi");
    await h.send(t.users.admin, stream, "lunch", "/todo Before lunch\nBook table: for six\nInvite guests");
    const ada = await h.newPage();
    const bob = await h.newPage();
    await h.logIn(ada, t.users.member);
    await h.logIn(bob, t.users.admin);
    await openTopic(ada, "decisions", "lunch");
    await openTopic(bob, "decisions", "lunch");

    const poll = (p: Page) => p.locator(".poll-widget");
    await poll(ada).getByRole("heading", { name: "Where to eat?" }).waitFor();
    await poll(ada).getByRole("button", { name: "Vote for Pizza (0 votes)" }).click();
    // The other person sees the vote and who voted.
    await poll(bob).getByRole("button", { name: "Vote for Pizza (1 vote)" }).waitFor();
    assert.match((await poll(bob).locator("li", { hasText: "Pizza" }).textContent()) ?? "", /\(Max Member\)/);
    await poll(ada).getByRole("button", { name: "Remove vote for Pizza (1 vote)", pressed: true }).waitFor();

    // A new option from Bob, voted for by Ada; Ada takes back her Pizza vote.
    await poll(bob).getByRole("textbox", { name: "New poll option" }).fill("Tacos");
    await poll(bob).getByRole("button", { name: "Add option" }).click();
    await poll(ada).getByRole("button", { name: "Vote for Tacos (0 votes)" }).click();
    await poll(ada).getByRole("button", { name: "Remove vote for Pizza (1 vote)" }).click();
    await poll(bob).getByRole("button", { name: "Vote for Tacos (1 vote)" }).waitFor();
    await poll(bob).getByRole("button", { name: "Vote for Pizza (0 votes)" }).waitFor();

    // The poll's author (Bob) edits its question; Ada sees it change and cannot edit it herself.
    assert.equal(await poll(ada).getByRole("button", { name: "Edit poll question" }).count(), 0);
    await poll(bob).getByRole("button", { name: "Edit poll question" }).click();
    await poll(bob).getByRole("textbox", { name: "poll question" }).fill("Where to eat on Friday?");
    await poll(bob).getByRole("button", { name: "Save" }).click();
    await poll(ada).getByRole("heading", { name: "Where to eat on Friday?" }).waitFor();
    // Escape leaves the edit without sending anything.
    await poll(bob).getByRole("button", { name: "Edit poll question" }).click();
    await poll(bob).getByRole("textbox", { name: "poll question" }).press("Escape");
    await poll(bob).getByRole("heading", { name: "Where to eat on Friday?" }).waitFor();

    const todo = (p: Page) => p.locator(".todo-widget");
    await todo(ada).getByRole("heading", { name: "Before lunch" }).waitFor();
    assert.equal(await todo(ada).getByRole("button", { name: "Edit task list title" }).count(), 0);
    await todo(bob).getByRole("button", { name: "Edit task list title" }).click();
    await todo(bob).getByRole("textbox", { name: "task list title" }).fill("Before the Friday lunch");
    await todo(bob).getByRole("textbox", { name: "task list title" }).press("Enter");
    await todo(ada).getByRole("heading", { name: "Before the Friday lunch" }).waitFor();
    const book = (p: Page) => todo(p).getByRole("checkbox", { name: "Book table: for six" });
    // A click sends the tick; the box shows it when the server's event comes back.
    await book(ada).click();
    await waitFor("Ada sees the task ticked", () => book(ada).isChecked());
    await waitFor("Bob sees the task ticked", () => book(bob).isChecked());
    assert.equal(await todo(bob).locator("li.done .todo-task").evaluate((el) => getComputedStyle(el).textDecorationLine), "line-through");
    await todo(bob).getByRole("textbox", { name: "New task", exact: true }).fill("Pay");
    await todo(bob).getByRole("textbox", { name: "New task description" }).fill("split it");
    await todo(bob).getByRole("button", { name: "Add task" }).click();
    await todo(ada).getByRole("checkbox", { name: "Pay: split it" }).waitFor();
    if (SHOTS) await ada.screenshot({ path: `${SHOTS}/widgets-light.png` });
    // The widget's text is not shown as a message.
    assert.equal(await ada.locator(".message_content", { hasText: "/poll" }).count(), 0);

    // After a reload the state comes from the messages' submessages.
    await ada.reload();
    await openTopic(ada, "decisions", "lunch");
    await poll(ada).getByRole("button", { name: "Remove vote for Tacos (1 vote)" }).waitFor();
    assert.equal(await book(ada).isChecked(), true);
    const subs = assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 5, num_after: 0, narrow: [{ operator: "channel", operand: stream }] }));
    assert.equal(subs.messages.length, 2);
    assert.ok(subs.messages[0].submessages.length >= 4, "votes and the new option were stored as submessages");
    assert.deepEqual(h.pageErrors, []);
  });

  test("an image linked from another site shows through the server's image proxy, a page's link preview appears live; the browser never asks that site", async () => {
    const t = h.t;
    const asked: string[] = [];
    const site = http.createServer((request, response) => {
      asked.push(`${request.url} from ${request.headers["user-agent"]}`);
      if (request.url === "/post") {
        return response
          .writeHead(200, { "content-type": "text/html" })
          .end('<html><head><meta property="og:title" content="A post about discs"><meta property="og:description" content="Red ones, on yellow."><meta property="og:image" content="/disc.png"></head></html>');
      }
      response.writeHead(200, { "content-type": "image/png", "content-length": PNG.length }).end(PNG);
    });
    await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
    try {
      const stream = await h.createChannel("elsewhere-pics", [t.users.member, t.users.admin]);
      const url = `http://127.0.0.1:${(site.address() as AddressInfo).port}/disc.png`;
      await h.send(t.users.admin, stream, "found", `Look: ${url}`);
      const page = await h.newPage();
      const fromBrowser: string[] = [];
      page.on("request", (request) => fromBrowser.push(request.url()));
      await h.logIn(page, t.users.member);
      await openTopic(page, "elsewhere-pics", "found");
      const img = page.locator(".message_inline_image img").first();
      await img.waitFor();
      await waitFor("the image loaded through the proxy", () => img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth === 16));
      assert.ok(fromBrowser.some((u) => new URL(u).pathname.startsWith("/external_content/")), fromBrowser.join("\n"));
      assert.ok(!fromBrowser.some((u) => u.startsWith(url)), "the browser itself never contacted the other site");
      assert.deepEqual(asked, ["/disc.png from Parley image proxy"]);

      // A page's link: the message shows at once, its preview when the server has made it (a rendering-only update).
      const pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/post`;
      await h.send(t.users.admin, stream, "found", `More at ${pageUrl}`);
      const embed = page.locator(".message_embed");
      await embed.getByRole("link", { name: "A post about discs" }).waitFor();
      assert.equal(await embed.locator(".message_embed_description").textContent(), "Red ones, on yellow.");
      const background = await embed.locator(".message_embed_image").evaluate((el) => getComputedStyle(el).backgroundImage);
      assert.match(background, /\/external_content\/[0-9a-f]{40}\/[0-9a-f]+/);
      assert.equal(await page.locator("article", { hasText: "More at" }).locator(".edited").count(), 0, "a preview is not an edit");
      await embed.screenshot({ path: `${SHOTS ?? "/tmp"}/link-preview.png` });
      assert.ok(!fromBrowser.some((u) => u.startsWith(pageUrl)), "the browser never fetched the page");
      assert.deepEqual(h.pageErrors, []);
    } finally {
      site.closeAllConnections();
      await new Promise((resolve) => site.close(resolve));
    }
  });

  test("images the policy allows from elsewhere load under it: avatars at the organization's URL, YouTube's thumbnails", async () => {
    const t = h.t;
    const stream = await h.createChannel("videos", [t.users.member, t.users.admin]);
    await h.send(t.users.admin, stream, "watch", "Have a look: https://youtu.be/dQw4w9WgXcQ");
    const page = await h.newPage();
    // Neither host resolves here: the browser's requests (made only if the policy lets them through) are answered locally.
    const thumbnails: string[] = [];
    await page.route("https://i.ytimg.com/**", (route) => {
      thumbnails.push(route.request().url());
      return route.fulfill({ status: 200, contentType: "image/png", body: PNG });
    });
    await page.route(`${t.services.config.externalUrl}/**`, async (route) => {
      const url = new URL(route.request().url());
      return route.fulfill({ response: await route.fetch({ url: t.url + url.pathname + url.search }) });
    });
    await h.logIn(page, t.users.member);
    await openTopic(page, "videos", "watch");
    const thumbnail = page.locator(".youtube-video img");
    await waitFor("the thumbnail loaded", () => thumbnail.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 16));
    assert.deepEqual(thumbnails, ["https://i.ytimg.com/vi/dQw4w9WgXcQ/default.jpg"]);
    const avatar = page.locator("article .message-gutter img.avatar").first();
    assert.match((await avatar.getAttribute("src")) ?? "", /^http:\/\/parley\.test\/user_avatars\//);
    await waitFor("the sender's avatar loaded", () => avatar.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0));
    assert.deepEqual(h.pageErrors, []);
  });

  test("a bot's zform: its heading and choices; a click sends the choice's reply to the conversation, mentioning the bot", async () => {
    const t = h.t;
    const stream = await h.createChannel("quiz", [t.users.member, t.users.admin]);
    const zform = {
      type: "choices",
      heading: "Which planet is largest?",
      choices: [
        { type: "multiple_choice", short_name: "A", long_name: "Mars", reply: "answer A" },
        { type: "multiple_choice", short_name: "B", long_name: "Jupiter", reply: "answer B" },
      ],
    };
    assertSuccess(await t.api(t.users.admin, "POST", "/messages", { type: "stream", to: stream, topic: "round 1", content: "Question 1", widget_content: JSON.stringify({ widget_type: "zform", extra_data: zform }) }));
    const ada = await h.newPage();
    await h.logIn(ada, t.users.member);
    await openTopic(ada, "quiz", "round 1");
    const form = ada.locator(".zform-widget");
    await form.getByRole("heading", { name: "Which planet is largest?" }).waitFor();
    await form.getByRole("button", { name: "A Mars" }).waitFor();
    await form.getByRole("button", { name: "B Jupiter" }).click();
    await waitFor("the reply sent to the topic", async () => {
      const newest = assertSuccess(await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 1, num_after: 0, narrow: [{ operator: "channel", operand: stream }] })).messages[0];
      // Zulip's reply_message: in a channel the reply mentions the message's sender (the bot), so it answers.
      return newest.sender_id === t.users.member.id && newest.subject === "round 1" && newest.content.includes(`data-user-id="${t.users.admin.id}"`) && newest.content.endsWith(" answer B</p>");
    });
    await ada.locator(".message_content", { hasText: "answer B" }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("math, spoilers, custom emoji, tables, code and an image, in light and dark", async () => {
    const t = h.t;
    const stream = await h.createChannel("showcase", [t.users.member, t.users.admin]);
    await postFile("/realm/emoji/parley_dot", t.users.admin, "dot.png");
    const upload = await postFile("/user_uploads", t.users.member, "diagram.png");
    const uri = String(upload.url ?? upload.uri);
    await h.send(t.users.admin, stream, "everything", "The area is $$\\pi r^2$$ and\n```math\n\\int_0^1 x^2\\,dx = \\frac{1}{3}\n```");
    await h.send(
      t.users.admin,
      stream,
      "everything",
      "```spoiler The ending\nThe butler did it.\n```\nLooks good :parley_dot: @**Max Member** @**everyone** @_**Adam Admin** #**showcase>everything** <time:2030-01-02T15:00:00Z>\n> quoted wisdom",
    );
    const msg = await h.send(t.users.admin, stream, "everything", "| Fruit | Count |\n|---|---:|\n| Apple | 3 |\n| Pear | 12 |\n\n```python\ndef greet(name):\n    return f\"hi {name}\"  # say hi\n```");
    await h.send(t.users.member, stream, "everything", `Here is the [diagram.png](${uri})`);
    assertSuccess(await t.api(t.users.member, "POST", `/messages/${msg}/reactions`, { emoji_name: "parley_dot" }));
    assertSuccess(await t.api(t.users.admin, "POST", `/messages/${msg}/reactions`, { emoji_name: "thumbs_up" }));

    const page = await h.newPage({ height: 1000 });
    await h.logIn(page, t.users.member);
    await openTopic(page, "showcase", "everything");

    // KaTeX: its spans use its fonts, which the client ships and loads.
    const katex = page.locator(".katex .katex-html").first();
    await katex.waitFor();
    assert.match(await page.locator(".katex").first().evaluate((el) => getComputedStyle(el).fontFamily), /KaTeX_Main/);
    await page.locator(".katex-display").waitFor();
    await waitFor("the KaTeX fonts loaded", () => page.evaluate(() => document.fonts.check("1em KaTeX_Main") && [...document.fonts].some((f) => f.family.includes("KaTeX") && f.status === "loaded")));

    // A spoiler: hidden, opened by click, closed by the keyboard.
    const header = page.getByRole("button", { name: "The ending" });
    const content = page.locator(".spoiler-content", { hasText: "The butler did it." });
    assert.equal(await content.isVisible(), false);
    assert.equal(await header.getAttribute("aria-expanded"), "false");
    await header.click();
    await content.waitFor();
    assert.equal(await header.getAttribute("aria-expanded"), "true");
    await header.focus();
    await page.keyboard.press("Enter");
    await content.waitFor({ state: "hidden" });
    await page.keyboard.press(" ");
    await content.waitFor();

    // The custom emoji: an image in the message and in the reaction.
    const inMessage = page.locator(".message_content img.emoji[alt=':parley_dot:']");
    await inMessage.waitFor();
    await waitFor("the message's emoji image loaded", () => inMessage.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 16));
    const reaction = page.getByRole("button", { name: "parley_dot: 1" });
    await waitFor("the reaction's emoji image loaded", () => reaction.locator("img").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 16));
    assert.equal(await page.getByRole("button", { name: "thumbs_up: 1" }).textContent(), "👍 1");
    // An emoji added while the page is open (a realm_emoji event) is in the picker at once.
    await postFile("/realm/emoji/parley_star", t.users.admin, "star.png");
    const row = page.locator(`article[data-message-id="${msg}"]`);
    await row.hover();
    await row.getByRole("button", { name: "Add emoji reaction" }).click();
    await page.getByLabel("Search emoji").fill("parley");
    await page.getByRole("button", { name: "parley_star", exact: true }).waitFor();
    await page.getByRole("button", { name: "parley_dot", exact: true }).waitFor();
    await page.keyboard.press("Escape");

    // Table and highlighted code.
    await page.locator(".rendered_markdown table td", { hasText: "Pear" }).waitFor();
    const keyword = page.locator(".codehilite .k, .codehilite .kd").first();
    const lightKeyword = await keyword.evaluate((el) => getComputedStyle(el).color);

    // The uploaded image opens in a lightbox; Escape closes it.
    const image = page.locator(".message_inline_image img").first();
    await image.waitFor();
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/rendering-light.png` });
    await image.click();
    const viewer = page.getByRole("dialog", { name: "Image viewer" });
    await viewer.waitFor();
    await waitFor("the full image loaded", () => viewer.locator("img").evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth === 16));
    await page.keyboard.press("Escape");
    await viewer.waitFor({ state: "hidden" });

    // Dark theme: code and mentions keep readable colours.
    await page.evaluate(() => document.documentElement.setAttribute("data-theme", "dark"));
    assert.notEqual(await keyword.evaluate((el) => getComputedStyle(el).color), lightKeyword);
    if (SHOTS) await page.screenshot({ path: `${SHOTS}/rendering-dark.png` });
    assert.deepEqual(h.pageErrors, []);
  });
});
