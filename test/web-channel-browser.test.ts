// The channel browser (#channels/all) in a real browser (issue 27, defect 7):
// subscriber counts follow other people's and your own subscriptions live
// ("1 subscriber" ↔ "2 subscribers", in German too), channels created and
// archived appear and go, and descriptions show as the server's rendered HTML:
// bold, links, paragraphs kept apart, long text inside the row, and raw HTML
// in a description never run.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";
import { renderDescription } from "../src/queries/markdown-context.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

const row = (page: Page, name: string) => page.locator(".channel-browser-list").getByRole("listitem", { name, exact: true });
const count = (page: Page, name: string, text: string) => row(page, name).getByText(text, { exact: true });

describe("web client: channel browser", () => {
  test("subscriber counts change live as people subscribe and leave, and as channels are created and archived", async () => {
    const t = h.t;
    await h.createChannel("garden", [t.users.admin]);
    const max = await h.newPage();
    await h.logIn(max, t.users.member, "#channels/all");
    await count(max, "garden", "1 subscriber").waitFor();

    // Another person, through the API: a peer_add, then a peer_remove.
    assertSuccess(await t.api(t.users.moderator, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "garden" }] }));
    await count(max, "garden", "2 subscribers").waitFor();
    assertSuccess(await t.api(t.users.moderator, "DELETE", "/users/me/subscriptions", { subscriptions: ["garden"] }));
    await count(max, "garden", "1 subscriber").waitFor();

    // Another person in their own browser, clicking Subscribe there: both pages follow.
    const owner = await h.newPage();
    await h.logIn(owner, t.users.owner, "#channels/all");
    await count(owner, "garden", "1 subscriber").waitFor();
    await row(owner, "garden").getByRole("button", { name: "Subscribe" }).click();
    await count(max, "garden", "2 subscribers").waitFor();
    await count(owner, "garden", "2 subscribers").waitFor();

    // Max himself: his own subscription add and remove.
    await row(max, "garden").getByRole("button", { name: "Subscribe" }).click();
    await count(max, "garden", "3 subscribers").waitFor();
    await count(owner, "garden", "3 subscribers").waitFor();
    await row(max, "garden").getByRole("button", { name: "Unsubscribe" }).click();
    await count(max, "garden", "2 subscribers").waitFor();
    await row(owner, "garden").getByRole("button", { name: "Unsubscribe" }).click();
    await count(owner, "garden", "1 subscriber").waitFor();
    await count(max, "garden", "1 subscriber").waitFor();

    // A channel created by someone else appears with its count; the
    // peer_add that follows its creation names the subscribers the count
    // already holds, so one more subscriber makes three, not five.
    const orchard = await h.createChannel("orchard", [t.users.admin, t.users.moderator]);
    await count(max, "orchard", "2 subscribers").waitFor();
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "orchard" }] }));
    await count(max, "orchard", "3 subscribers").waitFor();
    // A private channel Max cannot see never shows; archiving one he sees removes it.
    await h.createChannel("secret", [t.users.admin], { invite_only: true });
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${orchard}`));
    await row(max, "orchard").waitFor({ state: "detached" });
    assert.equal(await row(max, "secret").count(), 0);
    await count(max, "garden", "1 subscriber").waitFor();

    // German: "Abonnent:in" for one, "Abonnent:innen" for more, live as well.
    assertSuccess(await t.api(t.users.moderator, "PATCH", "/settings", { default_language: "de" }));
    const tom = await h.newPage();
    await h.logIn(tom, t.users.moderator, "#channels/all");
    await count(tom, "garden", "1 Abonnent:in").waitFor();
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "garden" }] }));
    await count(tom, "garden", "2 Abonnent:innen").waitFor();
    await count(max, "garden", "2 subscribers").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("descriptions show as rendered HTML: bold, links, two paragraphs, long text wrapped, raw HTML inert", async () => {
    const t = h.t;
    const poetry = await h.createChannel("poetry", [t.users.admin]);
    // A description with paragraphs, as one stored before newlines were
    // folded into spaces (or imported from such a server), rendered by the
    // server's own renderer.
    const description = "First **stanza** of the week.\n\nSecond stanza, from [the anthology](https://example.com/anthology).";
    const rendered = await renderDescription(t.services.storage.db, t.services.config, t.realm.id, description);
    await t.services.storage.db.updateTable("channels").set({ description, rendered_description: rendered }).where("id", "=", poetry).execute();
    // Raw HTML through the API: Markdown escapes it, and it must never run.
    await h.createChannel("recipes", [t.users.admin], {});
    const recipes = assertSuccess(await t.api(t.users.admin, "GET", "/get_stream_id", { stream: "recipes" })).stream_id as number;
    assertSuccess(
      await t.api(t.users.admin, "PATCH", `/streams/${recipes}`, {
        description: 'Share **family** recipes <img src="x" onerror="window.__injected = 1"> and see [the index](https://example.com/recipes)',
      }),
    );
    await h.createChannel("longread", [t.users.admin], {});
    const longWord = "supercalifragilistic".repeat(25);
    const longread = assertSuccess(await t.api(t.users.admin, "GET", "/get_stream_id", { stream: "longread" })).stream_id as number;
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${longread}`, { description: `${longWord} and ${"many words ".repeat(40)}` }));

    const max = await h.newPage({ width: 1000, height: 900 });
    await h.logIn(max, t.users.member, "#channels/all");
    const poem = row(max, "poetry");
    await poem.locator("strong", { hasText: "stanza" }).waitFor();
    const paragraphs = poem.locator(".channel-browser-description p");
    await waitFor("two paragraphs", async () => (await paragraphs.count()) === 2);
    const [first, second] = [await paragraphs.nth(0).boundingBox(), await paragraphs.nth(1).boundingBox()];
    assert.ok(first && second && second.y >= first.y + first.height, `the second paragraph starts below the first (${JSON.stringify([first, second])})`);
    const anthology = poem.getByRole("link", { name: "the anthology" });
    assert.equal(await anthology.getAttribute("href"), "https://example.com/anthology");
    assert.equal(await anthology.getAttribute("target"), "_blank");
    // No raw Markdown left.
    assert.equal(await poem.getByText("**stanza**").count(), 0);

    const recipe = row(max, "recipes");
    await recipe.locator("strong", { hasText: "family" }).waitFor();
    assert.equal(await recipe.getByRole("link", { name: "the index" }).getAttribute("href"), "https://example.com/recipes");
    // The tag shows as text; no element was made of it, and its handler never ran.
    await recipe.getByText('<img src="x" onerror="window.__injected = 1">').waitFor();
    assert.equal(await max.locator(".channel-browser img").count(), 0);
    assert.equal(await max.evaluate(() => (window as unknown as { __injected?: number }).__injected), undefined);

    // Long descriptions wrap inside their row: nothing sticks out, the page does not scroll sideways.
    const long = row(max, "longread");
    await long.getByText(/supercalifragilistic/).waitFor();
    const fits = await long.evaluate((li) => {
      const description = li.querySelector(".channel-browser-description")!;
      return {
        row: li.getBoundingClientRect().right,
        description: description.getBoundingClientRect().right,
        overflow: description.scrollWidth - description.clientWidth,
        pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      };
    });
    assert.ok(fits.description <= fits.row + 1, `the description ends inside its row (${JSON.stringify(fits)})`);
    assert.ok(fits.overflow <= 1 && fits.pageOverflow <= 0, `no sideways overflow (${JSON.stringify(fits)})`);

    await max.locator(".channel-browser").screenshot({ path: "/tmp/wtc-channel-browser-paragraphs.png" });

    // An administrator's edit arrives with its rendered HTML.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${poetry}`, { description: "Now *only* one stanza" }));
    await poem.locator("em", { hasText: "only" }).waitFor();
    await waitFor("one paragraph", async () => (await paragraphs.count()) === 1);

    await max.screenshot({ path: "/tmp/wtc-channel-browser.png", fullPage: true });
    assert.equal(await max.evaluate(() => (window as unknown as { __injected?: number }).__injected), undefined);
    assert.deepEqual(h.pageErrors, []);
  });
});
