// Link previews (Zulip's inline URL embeds): with the server's
// INLINE_URL_EMBED_PREVIEW and the organization's inline_url_embed_preview on,
// a message linking a page on another site is sent as it is, then the page's
// Open Graph data is fetched and the message rendered again with Zulip's
// message_embed block, sent to its readers as update_message with
// rendering_only: true. Against a real local "other site".
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { extractLinkPreview } from "../src/domain/link-preview.ts";
import { renderMarkdown } from "../src/markdown/render.ts";
import { assertSuccess, startTestApp, type TestApp } from "./helpers.ts";

const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000001000000010806000000" + "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201" + "e3d0a3a10000000049454e44ae426082", "hex");
const ARTICLE = `<!doctype html><html><head><title>Ignored title</title>
<meta property="og:title" content="The Rock &amp; Roll">
<meta property="og:description" content="Description   text">
<meta property="og:image" content="/pic.png">
</head><body><h1>Body</h1></body></html>`;

let site: http.Server;
let origin: string;
const asked: string[] = [];
let releaseSlow: () => void = () => undefined;
let t: TestApp;
let off: TestApp;

before(async () => {
  site = http.createServer((request, response) => {
    const path = request.url ?? "/";
    asked.push(path);
    const page = (html: string) => response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    if (path.startsWith("/article")) return page(ARTICLE);
    if (path === "/no-image") return page("<html><head><title>Just a title</title></head><body></body></html>");
    if (path === "/text") return response.writeHead(200, { "content-type": "text/plain" }).end("og:image");
    if (path === "/error") return response.writeHead(500, { "content-type": "text/html" }).end();
    if (path === "/pic.png") return response.writeHead(200, { "content-type": "image/png" }).end(PNG);
    if (path === "/slow") {
      releaseSlow = () => {
        releaseSlow = () => undefined;
        page(ARTICLE);
      };
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  t = await startTestApp({ inlineUrlEmbedPreview: true, externalContentAllowInternal: true, externalContentTimeoutMs: 2000 });
  assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { inline_url_embed_preview: true }));
  off = await startTestApp({ externalContentAllowInternal: true });
});

after(async () => {
  releaseSlow();
  site.closeAllConnections();
  await new Promise((resolve) => site.close(resolve));
  await t?.close();
  await off?.close();
});

let channelCount = 0;
async function channel(app: TestApp): Promise<string> {
  const name = `previews ${++channelCount}`;
  assertSuccess(await app.api(app.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [app.users.member.id, app.users.admin.id] }));
  return name;
}

async function send(app: TestApp, content: string, to?: string, sender = app.users.member): Promise<number> {
  return assertSuccess(await app.api(sender, "POST", "/messages", { type: "stream", to: to ?? (await channel(app)), topic: "links", content })).id as number;
}

const rendered = async (app: TestApp, id: number) => assertSuccess(await app.api(app.users.member, "GET", `/messages/${id}`)).message.content as string;

/** The rendering-only update events of a message that reached `userId`. */
const renderingUpdates = (app: TestApp, userId: number, id: number) =>
  app.eventsFor(userId, "update_message").filter((e) => e.message_id === id && e.rendering_only === true);

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The page's preview has been asked for and stored (with or without data). */
async function previewStored(app: TestApp, url: string): Promise<void> {
  await until(`the preview of ${url}`, async () => (await app.services.storage.db.selectFrom("link_previews").select("url").where("url", "=", url).executeTakeFirst()) !== undefined);
}

describe("link previews", () => {
  test("a linked page's Open Graph data becomes Zulip's message_embed, its image through the proxy, sent as a rendering-only update", async () => {
    const url = `${origin}/article`;
    const before = asked.length;
    const id = await send(t, `Read ${url}`);
    // The send itself is not held up: its rendering has no preview.
    await until("the rendering-only update", () => renderingUpdates(t, t.users.member.id, id).length > 0);
    assert.deepEqual(asked.slice(before), ["/article"], "the page, once; its image only when a reader loads it");
    const html = await rendered(t, id);
    const image = /url\(&quot;(\/external_content\/[0-9a-f]{40}\/[0-9a-f]+)&quot;\)/.exec(html)?.[1];
    assert.ok(image, html);
    assert.equal(
      html,
      `<p>Read <a href="${url}">${url}</a></p>\n<div class="message_embed"><a class="message_embed_image" href="${url}" style="background-image: url(&quot;${image}&quot;)"></a>` +
        `<div class="data-container"><div class="message_embed_title"><a href="${url}" title="The Rock &amp; Roll">The Rock &amp; Roll</a></div>` +
        `<div class="message_embed_description">Description text</div></div></div>`,
    );
    // The image (relative in the page) is served by the proxy.
    assert.equal(Buffer.from(image.split("/")[3]!, "hex").toString(), `${origin}/pic.png`);
    const picture = await fetch(t.url + image);
    assert.equal(picture.status, 200);
    assert.deepEqual(Buffer.from(await picture.arrayBuffer()), PNG);

    // Zulip's event: no editor, the content and new HTML, each reader's flags.
    for (const user of [t.users.member, t.users.admin]) {
      const [event] = renderingUpdates(t, user.id, id);
      assert.ok(event, `${user.email} got the update`);
      assert.equal(event.user_id, null);
      assert.deepEqual(event.message_ids, [id]);
      assert.equal(event.content, `Read ${url}`);
      assert.equal(event.rendered_content, html);
      assert.equal(event.is_me_message, false);
      assert.equal(typeof event.edit_timestamp, "number");
      const [own] = assertSuccess(await t.api(user, "GET", "/messages", { anchor: id, num_before: 0, num_after: 0 })).messages;
      assert.deepEqual(event.flags, own.flags, "the reader's own flags");
    }
    // Not an edit: no edit history, no "edited" time.
    const message = assertSuccess(await t.api(t.users.member, "GET", `/messages/${id}`)).message;
    assert.equal(message.last_edit_timestamp, undefined);
    assert.equal(message.edit_history, undefined);
  });

  test("a page already seen is not asked again: the next message gets the stored preview", async () => {
    const url = `${origin}/article`;
    const first = await send(t, url);
    await until("the first update", () => renderingUpdates(t, t.users.member.id, first).length > 0);
    const before = asked.length;
    const second = await send(t, `again ${url}`);
    await until("the second update", () => renderingUpdates(t, t.users.member.id, second).length > 0);
    assert.match(await rendered(t, second), /class="message_embed"/);
    assert.deepEqual(asked.slice(before), []);
  });

  test("no image, not a page, the site's error, or an internal address not allowed: no preview and no update; the answer is stored", async () => {
    const strict = await startTestApp({ inlineUrlEmbedPreview: true });
    try {
      assertSuccess(await strict.api(strict.users.owner, "PATCH", "/realm", { inline_url_embed_preview: true }));
      const cases: [TestApp, string][] = [
        [t, `${origin}/no-image`],
        [t, `${origin}/text`],
        [t, `${origin}/error`],
        [t, `${origin}/missing`],
        [strict, `${origin}/article?internal`],
      ];
      for (const [app, url] of cases) {
        const id = await send(app, url);
        const html = await rendered(app, id);
        await previewStored(app, url);
        const row = await app.services.storage.db.selectFrom("link_previews").select("data").where("url", "=", url).executeTakeFirstOrThrow();
        assert.equal(row.data, null, url);
        await new Promise((r) => setTimeout(r, 50));
        assert.equal(await rendered(app, id), html, url);
        assert.deepEqual(renderingUpdates(app, app.users.member.id, id), [], url);
      }
      assert.ok(!asked.includes("/article?internal"), "the internal address was never contacted");
    } finally {
      await strict.close();
    }
  });

  test("which links: pages on other sites, outside quotes, not images or videos, not this server's, the first three", async () => {
    const before = asked.length;
    const links = [1, 2, 3, 4].map((n) => `${origin}/article?n=${n}`);
    const content = [
      `> quoted ${origin}/article?quoted`,
      "",
      `${origin}/pic.png https://www.youtube.com/watch?v=tyKJueEk0XM http://parley.test/#narrow/channel/1-x`,
      ...links,
    ].join("\n");
    const id = await send(t, content);
    await until("the update", () => renderingUpdates(t, t.users.member.id, id).length > 0);
    const html = await rendered(t, id);
    assert.equal(html.match(/class="message_embed"/g)?.length, 3);
    for (const [i, link] of links.entries()) assert.equal(html.includes(`class="message_embed_image" href="${link.replace(/&/g, "&amp;")}"`), i < 3, link);
    assert.deepEqual(asked.slice(before).sort(), ["/article?n=1", "/article?n=2", "/article?n=3"]);
  });

  test("bots' messages get none; neither does an organization with previews off, nor a server without INLINE_URL_EMBED_PREVIEW", async () => {
    const before = asked.length;
    const bot = await send(t, `${origin}/article?bot`, undefined, t.users.bot);
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { inline_url_embed_preview: false }));
    let realmOff: number;
    try {
      realmOff = await send(t, `${origin}/article?realm-off`);
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { inline_url_embed_preview: true }));
    }
    assertSuccess(await off.api(off.users.owner, "PATCH", "/realm", { inline_url_embed_preview: true }));
    const serverOff = await send(off, `${origin}/article?server-off`);
    assert.equal((await off.register(off.users.member)).server_inline_url_embed_preview, false);
    assert.equal((await t.register(t.users.member)).server_inline_url_embed_preview, true);
    // A later message that does get a preview: by the time it has, the earlier ones would have been asked too.
    const later = await send(t, `${origin}/article?later`);
    await until("the later update", () => renderingUpdates(t, t.users.member.id, later).length > 0);
    assert.deepEqual(asked.slice(before), ["/article?later"]);
    for (const [app, id] of [[t, bot], [t, realmOff], [off, serverOff]] as const) assert.ok(!(await rendered(app, id)).includes("message_embed"));
  });

  test("an edit that adds a link gets its preview; a preview that arrives after another edit changes nothing", async () => {
    const id = await send(t, "no link yet");
    assertSuccess(await t.api(t.users.member, "PATCH", `/messages/${id}`, { content: `now ${origin}/article?edited` }));
    await until("the update after the edit", () => renderingUpdates(t, t.users.member.id, id).length > 0);
    assert.match(await rendered(t, id), /class="message_embed"/);

    const slow = await send(t, `${origin}/slow`);
    await until("the slow page asked", () => asked.includes("/slow"));
    assertSuccess(await t.api(t.users.member, "PATCH", `/messages/${slow}`, { content: "changed my mind" }));
    releaseSlow();
    await previewStored(t, `${origin}/slow`);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await rendered(t, slow), "<p>changed my mind</p>");
    assert.deepEqual(renderingUpdates(t, t.users.member.id, slow), []);
  });

  test("the page's head: Open Graph first, then Twitter's tags, the <title> and the description; no image, no preview", () => {
    assert.deepEqual(extractLinkPreview(ARTICLE, "https://example.com/a/b"), { title: "The Rock & Roll", description: "Description text", image: "https://example.com/pic.png" });
    assert.deepEqual(
      extractLinkPreview('<head><title> A  title </title><meta name="description" content="Plain"><meta name="twitter:image" content="img/x.jpg"></head>', "https://example.com/a/b"),
      { title: "A title", description: "Plain", image: "https://example.com/a/img/x.jpg" },
    );
    assert.equal(extractLinkPreview("<head><title>No image</title></head>", "https://example.com/"), null);
    assert.equal(extractLinkPreview('<head><meta property="og:image" content="javascript:alert(1)"></head>', "https://example.com/"), null);
    // What the body says is not the page's own description of itself.
    assert.equal(extractLinkPreview('<head></head><body><meta property="og:image" content="/late.png"></body>', "https://example.com/"), null);
    const long = extractLinkPreview(`<head><meta property="og:image" content="/i.png"><meta property="og:title" content="${"x".repeat(400)}"></head>`, "https://example.com/");
    assert.equal(long?.title?.length, 300);
  });

  test("the renderer writes exactly Zulip's embed (its test case), and notes links only when previews are on", () => {
    const ctx = { realmUrl: "http://zulip.testserver", usersByName: () => [], userById: () => undefined, groupByName: () => undefined, channelByName: () => undefined };
    const preview = { title: "The Rock", description: "Description text", image: "http://ia.media-imdb.com/images/rock.jpg" };
    const on = renderMarkdown("http://test.org/", { ...ctx, urlEmbedPreview: true, linkPreview: (u) => (u === "http://test.org/" ? preview : undefined) });
    assert.equal(
      on.html,
      '<p><a href="http://test.org/">http://test.org/</a></p>\n<div class="message_embed"><a class="message_embed_image" href="http://test.org/" style="background-image: url(&quot;http://ia.media-imdb.com/images/rock.jpg&quot;)"></a><div class="data-container"><div class="message_embed_title"><a href="http://test.org/" title="The Rock">The Rock</a></div><div class="message_embed_description">Description text</div></div></div>',
    );
    assert.deepEqual(on.linksForPreview, ["http://test.org/"]);
    const offRender = renderMarkdown("http://test.org/", { ...ctx, linkPreview: () => preview });
    assert.equal(offRender.html, '<p><a href="http://test.org/">http://test.org/</a></p>');
    assert.deepEqual(offRender.linksForPreview, []);
    // A quote in the image URL cannot leave the CSS string or the attribute.
    const tricky = renderMarkdown("http://test.org/", { ...ctx, urlEmbedPreview: true, linkPreview: () => ({ ...preview, image: 'http://x.test/a".png' }) });
    assert.match(tricky.html, /style="background-image: url\(&quot;http:\/\/x\.test\/a\\&quot;\.png&quot;\)"/);
  });
});
