// The web client's languages: every user-facing string goes through t()
// (web/i18n-extract.ts finds none written around it), the German catalog has
// every key and no stale one, with the same placeholders as the English; and
// in a real browser a person's language and 12/24-hour setting turn the whole
// interface — labels, counted text, message times, dates — at once, and back.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { catalogs, extract } from "../web/i18n-extract.ts";
import { BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess } from "./helpers.ts";

/** The `{{name}}` placeholders of a text. */
function placeholders(text: string): string[] {
  return [...new Set([...text.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]!))].sort();
}

describe("web client: languages, the catalogs", () => {
  const { keys, hardCoded } = extract();
  const de = catalogs().get("de")!;

  test("no user-facing text bypasses t()", () => {
    assert.deepEqual(hardCoded, []);
    assert.ok(keys.length > 300, `only ${keys.length} keys extracted`);
  });

  test("German has every key, no unused one, and keeps each placeholder", () => {
    assert.ok(de, "web/locales/de.json");
    assert.deepEqual(
      keys.filter((k) => typeof de[k] !== "string" || de[k]!.trim() === ""),
      [],
      "keys without a German text",
    );
    assert.deepEqual(
      Object.keys(de).filter((k) => !keys.includes(k)),
      [],
      "German texts for keys the client no longer has",
    );
    const wrong: string[] = [];
    for (const key of keys) {
      const english = placeholders(key.replace(/_(one|other)$/, ""));
      const german = placeholders(de[key]!);
      // A singular may say "eine" rather than the count; nothing else may go missing or appear.
      const expected = key.endsWith("_one") ? english.filter((p) => p !== "count" || german.includes("count")) : english;
      if (german.join() !== expected.join()) wrong.push(`${key} → ${de[key]}`);
    }
    assert.deepEqual(wrong, [], "German texts whose placeholders differ from the English");
    // A translation, not a copy: words like "Name", "Status" or "Bot" are the same in both, but few are.
    const same = keys.filter((k) => de[k] === k.replace(/_(one|other)$/, ""));
    assert.ok(same.length < keys.length / 10, `${same.length} of ${keys.length} German texts are the English: ${same.join(" | ")}`);
  });
});

describe("web client: languages, in the browser", () => {
  const h = new BrowserHarness();
  before(() => h.start());
  after(() => h.close());

  test("a person's language and 12/24-hour setting turn the interface at once, and back", async () => {
    const t = h.t;
    const de = catalogs().get("de")!;
    const max = t.users.member;
    const channelId = await h.createChannel("sprachen", [max, t.users.admin]);
    await h.send(t.users.admin, channelId, "greetings", "The meeting is at <time:2024-01-02T15:04:00Z>.");
    await h.send(t.users.admin, channelId, "greetings", "/poll Lunch?\nPizza");

    const page = await h.newPage({ width: 1280, height: 800 });
    const requested: string[] = [];
    page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    await h.logIn(page, max, `#narrow/channel/${channelId}-sprachen/topic/greetings`);
    const views = page.locator("nav#left-sidebar");
    const timeOf = (text: string) => page.getByRole("article").filter({ hasText: text }).first().locator("time.message-time");
    const inMessage = page.locator(".message_content time").first();
    const date = page.locator(".recipient-date").first();

    // English, 12-hour time (the default).
    await views.getByRole("link", { name: /^Inbox\b/ }).waitFor();
    await page.getByRole("button", { name: "Vote for Pizza (0 votes)" }).waitFor();
    assert.match(await timeOf("The meeting is at").innerText(), /^\d{1,2}:\d{2}\s?[AP]M$/);
    assert.match(await inMessage.innerText(), /^[A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2}, 2024, \d{1,2}:\d{2}\s?[AP]M$/);
    assert.match(await date.innerText(), /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [A-Z][a-z]{2} \d{1,2}(, \d{4})?$/);
    assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
    assert.equal(requested.filter((p) => /\/de-[\w-]+\.js$/.test(p)).length, 0, "the German catalog loads only when asked for");

    // German, chosen on the Settings page: the catalog loads and every view speaks it.
    await page.goto(`${t.url}/#settings/profile`);
    await page.getByRole("region", { name: "Preferences" }).getByLabel("Language").selectOption("de");
    await waitFor("the page switched language", async () => (await page.evaluate(() => document.documentElement.lang)) === "de");
    await page.getByRole("region", { name: de["Preferences"]! }).waitFor();
    assert.equal(requested.filter((p) => /\/de-[\w-]+\.js$/.test(p)).length, 1, "the German catalog, fetched once");
    await page.goto(`${t.url}/#narrow/channel/${channelId}-sprachen/topic/greetings`);
    await views.getByRole("link", { name: new RegExp(`^${de["Inbox"]!}\\b`) }).waitFor();
    assert.equal(await views.getByRole("link", { name: /^Inbox\b/ }).count(), 0);
    // Counted text takes the language's plural forms.
    const vote = (count: number) => de[`Vote for {{option}} ({{count}} votes)_${count === 1 ? "one" : "other"}`]!.replace("{{option}}", "Pizza").replace("{{count}}", String(count));
    const unvote = (count: number) => de[`Remove vote for {{option}} ({{count}} votes)_${count === 1 ? "one" : "other"}`]!.replace("{{option}}", "Pizza").replace("{{count}}", String(count));
    await page.getByRole("button", { name: vote(0), exact: true }).click();
    await page.getByRole("button", { name: unvote(1), exact: true }).waitFor();
    // Dates in German; times still 12-hour, as the setting says.
    assert.match(await date.innerText(), /^(Mo|Di|Mi|Do|Fr|Sa|So)\., \d{1,2}\. \S+( \d{4})?$/);
    assert.match(await timeOf("The meeting is at").innerText(), /^\d{1,2}:\d{2}\s?[AP]M$/);
    assert.match(await inMessage.innerText(), /^(Mo|Di|Mi|Do|Fr|Sa|So)\., \d{1,2}\. Jan\. 2024, \d{1,2}:\d{2}\s?[AP]M$/);

    // 24-hour time (from another client, say): the times turn, in place.
    assertSuccess(await t.api(max, "PATCH", "/settings", { twenty_four_hour_time: true }));
    await waitFor("24-hour message times", async () => /^\d{1,2}:\d{2}$/.test(await timeOf("The meeting is at").innerText()));
    await waitFor("24-hour time in the message", async () => /^(Mo|Di|Mi|Do|Fr|Sa|So)\., \d{1,2}\. Jan\. 2024, \d{1,2}:\d{2}$/.test(await inMessage.innerText()));
    await page.getByRole("article").first().locator("time.message-time").getAttribute("title").then((title) => assert.match(title ?? "", /\d{4}, \d{1,2}:\d{2}$/));

    // Back to English (PATCH /settings, as any client may): at once, in this page.
    assertSuccess(await t.api(max, "PATCH", "/settings", { default_language: "en" }));
    await views.getByRole("link", { name: /^Inbox\b/ }).waitFor();
    await waitFor("the page switched back", async () => (await page.evaluate(() => document.documentElement.lang)) === "en");
    await page.getByRole("button", { name: "Remove vote for Pizza (1 vote)", exact: true }).waitFor();
    assert.match(await date.innerText(), /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [A-Z][a-z]{2} \d{1,2}(, \d{4})?$/);
    assert.match(await timeOf("The meeting is at").innerText(), /^\d{1,2}:\d{2}$/);
    assertSuccess(await t.api(max, "PATCH", "/settings", { twenty_four_hour_time: false }));
    await waitFor("12-hour message times", async () => /^\d{1,2}:\d{2}\s?[AP]M$/.test(await timeOf("The meeting is at").innerText()));
    assert.deepEqual(h.pageErrors, []);
  });

  test("the sign-in page speaks the browser's language", async () => {
    const context = await h.browser.newContext({ locale: "de-DE" });
    h.contexts.push(context);
    const page: Page = await context.newPage();
    const de = catalogs().get("de")!;
    await page.goto(h.t.url + "/");
    await page.getByRole("heading", { name: de["Log in to Parley"]! }).waitFor();
    await page.getByRole("button", { name: de["Log in"]!, exact: true }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), "de");
  });
});
