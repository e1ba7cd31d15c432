// The web client through the turns a conversation takes (issue 27): a topic
// renamed, resolved or moved to another channel while it is on screen (the
// view and the compose box follow it; /with/ID links follow their message),
// a send that fails (Retry, Cancel gives the text back), what an empty view
// says, signing in and out without requests that fail, the selected message
// across a reload, and the link to the server coming back (the banner over
// the page, a retry soon after a failure and at once when the tab or the
// network comes back).
//
// "The server is unreachable" is the browser's own word here: requests the
// page makes are refused by Playwright's routing (as a stopped server refuses
// connections), so one server serves the whole file. Timers that decide when
// the client tries again run on Playwright's clock, paused, so that a wait
// that is not ended by the event under test never ends: no test depends on
// how fast the machine is.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page, Response } from "playwright-core";
import { BrowserHarness, sidebar, waitFor } from "./browser.ts";
import { assertSuccess, type TestApp } from "./helpers.ts";

const h = new BrowserHarness();
let t: TestApp;
before(async () => {
  await h.start();
  t = h.t;
});
after(() => h.close());

/** The page's hash-encoding of a topic (narrow.ts encodeHashComponent). */
function hashTopic(topic: string): string {
  return encodeURIComponent(topic).replace(/\./g, "%2E").replace(/%/g, ".");
}

function topicHash(streamId: number, name: string, topic: string): string {
  return `#narrow/channel/${streamId}-${name}/topic/${hashTopic(topic)}`;
}

/** The API's view of where a message is now. */
async function whereIs(id: number): Promise<{ stream_id: number; subject: string }> {
  return assertSuccess(await t.api(t.users.admin, "GET", `/messages/${id}`)).message as { stream_id: number; subject: string };
}

async function newestIn(streamId: number, topic: string): Promise<{ id: number; content: string } | undefined> {
  const reply = assertSuccess(
    await t.api(t.users.admin, "GET", "/messages", {
      anchor: "newest",
      num_before: 5,
      num_after: 0,
      apply_markdown: false,
      narrow: JSON.stringify([
        { operator: "channel", operand: streamId },
        { operator: "topic", operand: topic },
      ]),
    }),
  );
  return (reply.messages as { id: number; content: string }[]).at(-1);
}

/** Every answer with a 4xx or 5xx status the page receives, as "METHOD path status". */
function failedRequests(page: Page): string[] {
  const failed: string[] = [];
  page.on("response", (response: Response) => {
    if (response.status() >= 400) failed.push(`${response.request().method()} ${new URL(response.url()).pathname} ${response.status()}`);
  });
  return failed;
}

const messageBox = (page: Page) => page.getByRole("textbox", { name: "Message", exact: true });

describe("web client: a conversation's turns", () => {
  test("signing out, loading signed out and signing in again: no request fails, GET /json/session is not asked", async () => {
    const channel = await h.createChannel("signing", [t.users.admin, t.users.member]);
    for (let i = 0; i < 3; i++) await h.send(t.users.admin, channel, "news", `news ${i}`);
    const page = await h.newPage();
    const failed = failedRequests(page);
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    await page.goto(t.url + "/");
    await page.getByRole("button", { name: "Log in" }).waitFor();
    assert.ok(!asked.includes("/json/session"), asked.join(" "));
    await page.getByLabel("Email").fill(t.users.member.email);
    await page.getByLabel("Password").fill(t.users.member.password);
    await page.getByRole("button", { name: "Log in" }).click();
    await sidebar(page).waitFor();
    // Reading marks messages read (POST /messages/flags) right up to signing out.
    await page.goto(t.url + "/" + topicHash(channel, "signing", "news"));
    await page.getByText("news 2").waitFor();
    await page.getByRole("button", { name: "Max Member" }).click();
    await page.getByRole("menuitem", { name: "Log out" }).click();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    await page.reload();
    await page.getByRole("button", { name: "Log in" }).waitFor();
    // Whatever was on its way when the session ended has answered by the time the sign-in form is back twice.
    await page.waitForLoadState("networkidle");
    assert.deepEqual(failed, []);
    assert.ok(!asked.includes("/json/session"), asked.join(" "));
    assert.deepEqual(h.pageErrors, []);
  });

  test("the page served to a stale session cookie takes the cookie back (the client asks nothing to learn it is signed out)", async () => {
    const session = await t.login(t.users.member);
    assertSuccess(await t.json(session, "POST", "/logout"));
    for (const cookie of [session.cookie, "parley_session=not-a-session"]) {
      const reply = await fetch(t.url + "/", { headers: { cookie } });
      assert.match(reply.headers.get("set-cookie") ?? "", /^parley_session=; Max-Age=0;/);
      assert.match(await reply.text(), /<meta name="parley-page" content="session-written-in"/);
    }
    const fresh = await fetch(t.url + "/");
    assert.equal(fresh.headers.get("set-cookie"), null, "no cookie, nothing to take back");
  });

  test("a topic renamed, resolved and moved to another channel while on screen: the view and the compose box follow it", async () => {
    const channel = await h.createChannel("planning", [t.users.admin, t.users.member]);
    const other = await h.createChannel("archive", [t.users.admin, t.users.member]);
    const first = await h.send(t.users.admin, channel, "launch", "when do we launch?");
    const page = await h.newPage();
    await h.logIn(page, t.users.member, topicHash(channel, "planning", "launch"));
    await page.getByText("when do we launch?").waitFor();
    await messageBox(page).fill("Tuesday works for me");

    // Renamed by someone else.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${first}`, { topic: "launch date", propagate_mode: "change_all" }));
    await waitFor("the view to follow the rename", async () => decodeURIComponent(new URL(page.url()).hash).includes("launch.20date"));
    await page.getByRole("heading", { name: "#planning > launch date" }).waitFor();
    await page.getByText("when do we launch?").waitFor();
    assert.equal(await messageBox(page).inputValue(), "Tuesday works for me", "the unsent text stays in the box");
    await messageBox(page).press("Enter");
    await waitFor("the reply in the new topic", async () => (await newestIn(channel, "launch date"))?.content === "Tuesday works for me");
    assert.equal(await newestIn(channel, "launch"), undefined, "the old topic is not re-created");

    // Resolved.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${first}`, { topic: "✔ launch date", propagate_mode: "change_all" }));
    await page.getByRole("heading", { name: "#planning > ✔ launch date" }).waitFor();
    await page.getByText("Tuesday works for me").waitFor();

    // Moved to another channel.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${first}`, { stream_id: other, propagate_mode: "change_all" }));
    await page.getByRole("heading", { name: "#archive > ✔ launch date" }).waitFor();
    await page.getByText("when do we launch?").waitFor();
    await messageBox(page).fill("moved along");
    await messageBox(page).press("Enter");
    await waitFor("the reply in the moved topic", async () => (await newestIn(other, "✔ launch date"))?.content === "moved along");

    // One message moved on its own (change_one): the view stays where it is.
    const loner = await h.send(t.users.admin, other, "✔ launch date", "a stray thought");
    await page.getByText("a stray thought").waitFor();
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${loner}`, { topic: "stray", propagate_mode: "change_one" }));
    await page.getByText("a stray thought").waitFor({ state: "detached" });
    await page.getByRole("heading", { name: "#archive > ✔ launch date" }).waitFor();

    // A channel's compose box aimed at a renamed topic takes the new name.
    await page.goto(t.url + `/#narrow/channel/${other}-archive`);
    await page.getByText("a stray thought").waitFor();
    const topicField = page.getByRole("textbox", { name: "Topic", exact: true });
    await topicField.fill("stray");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${loner}`, { topic: "stray thoughts", propagate_mode: "change_all" }));
    await waitFor("the topic field to follow", async () => (await topicField.inputValue()) === "stray thoughts");
    assert.deepEqual(h.pageErrors, []);
  });

  test("a /with/ID link follows its message to where it moved", async () => {
    const channel = await h.createChannel("linking", [t.users.admin, t.users.member]);
    const id = await h.send(t.users.admin, channel, "old home", "find me wherever I go");
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${id}`, { topic: "new home", propagate_mode: "change_one" }));
    const page = await h.newPage();
    await h.logIn(page, t.users.member, `${topicHash(channel, "linking", "old home")}/with/${id}`);
    await page.getByRole("heading", { name: "#linking > new home" }).waitFor();
    await page.locator(`[data-message-id="${id}"][aria-current="true"]`).waitFor();
    assert.match(new URL(page.url()).hash, new RegExp(`/topic/new.20home/with/${id}$`));

    // Moved again while the link is open: the view goes with it.
    assertSuccess(await t.api(t.users.admin, "PATCH", `/messages/${id}`, { topic: "third home", propagate_mode: "change_one" }));
    await page.getByRole("heading", { name: "#linking > third home" }).waitFor();
    await page.getByText("find me wherever I go").waitFor();
    assert.equal((await whereIs(id)).subject, "third home");
    assert.deepEqual(h.pageErrors, []);
  });

  test("a send that fails stays in the list with Retry and Cancel; Cancel gives the text back, Retry sends it", async () => {
    const channel = await h.createChannel("flaky", [t.users.admin, t.users.member]);
    await h.send(t.users.admin, channel, "wifi", "is the network up?");
    const page = await h.newPage();
    await h.logIn(page, t.users.member, topicHash(channel, "flaky", "wifi"));
    await page.getByText("is the network up?").waitFor();
    // The server cannot be reached for sending.
    const refuse = (route: import("playwright-core").Route) => (route.request().method() === "POST" ? route.abort("connectionrefused") : route.continue());
    await page.route("**/json/messages", refuse);

    await messageBox(page).fill("first try");
    await messageBox(page).press("Enter");
    const failedOne = page.locator("article.local.failed", { hasText: "first try" });
    await failedOne.getByRole("button", { name: "Cancel", exact: true }).click();
    await failedOne.waitFor({ state: "detached" });
    assert.equal(await messageBox(page).inputValue(), "first try", "Cancel puts the text back into the compose box");

    await messageBox(page).fill("second try");
    await messageBox(page).press("Enter");
    const failedTwo = page.locator("article.local.failed", { hasText: "second try" });
    await failedTwo.getByRole("button", { name: "Retry", exact: true }).waitFor();
    // Still unreachable: Retry fails again, and the message stays.
    await failedTwo.getByRole("button", { name: "Retry", exact: true }).click();
    await failedTwo.getByRole("button", { name: "Retry", exact: true }).waitFor();
    await page.unroute("**/json/messages", refuse);
    await failedTwo.getByRole("button", { name: "Retry", exact: true }).click();
    await waitFor("the retried message on the server", async () => (await newestIn(channel, "wifi"))?.content === "second try");
    await page.locator("article[data-message-id]", { hasText: "second try" }).waitFor();
    assert.equal(await page.locator("article.local").count(), 0);

    // Cancelled where no compose box writes to it (the combined feed): the text goes to its conversation's draft.
    await page.route("**/json/messages", refuse);
    await messageBox(page).fill("for later");
    await messageBox(page).press("Enter");
    await page.locator("article.local.failed", { hasText: "for later" }).getByRole("button", { name: "Retry" }).waitFor();
    // (Everything read, so the feed opens at its newest end, where unsent messages show. In the page: a reload
    // would lose what is unsent.)
    assertSuccess(await t.api(t.users.member, "POST", "/mark_all_as_read"));
    await page.evaluate(() => (window.location.hash = "#feed"));
    await page.getByRole("heading", { name: "All messages" }).waitFor();
    await page.locator("article.local.failed", { hasText: "for later" }).getByRole("button", { name: "Cancel" }).click();
    await page.locator("article.local.failed").waitFor({ state: "detached" });
    await page.evaluate((hash) => (window.location.hash = hash), topicHash(channel, "flaky", "wifi"));
    await waitFor("the draft back in the topic's box", async () => (await messageBox(page).inputValue()) === "for later");
    await page.unroute("**/json/messages", refuse);
    assert.deepEqual(h.pageErrors, []);
  });

  test("empty views say what they are", async () => {
    const channel = await h.createChannel("quiet", [t.users.admin, t.users.member]);
    const page = await h.newPage();
    await h.logIn(page, t.users.guest);
    const expectEmpty = async (hash: string, text: string) => {
      await page.goto(t.url + "/" + hash);
      await page.getByRole("status").filter({ hasText: text }).waitFor();
      assert.equal(await page.getByText("No messages here yet").count(), 0);
    };
    await expectEmpty("#narrow/is/starred", "You have no starred messages.");
    await expectEmpty("#narrow/is/mentioned", "You haven't been mentioned yet!");
    await expectEmpty("#narrow/is/dm", "You have no direct messages yet!");
    await expectEmpty(`#narrow/dm/${t.users.moderator.id}-dm`, "You have no direct messages with Mona Moderator yet.");
    await expectEmpty(`#narrow/dm/${t.users.guest.id}-dm`, "You have not sent any direct messages to yourself yet!");
    await expectEmpty("#narrow/search/zebracrossing", "No search results.");
    await page.getByRole("status").filter({ hasText: "You searched for: zebracrossing" }).waitFor();
    // A channel and a topic the guest may read (an admin adds the guest).
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "quiet" }], principals: [t.users.guest.id] }));
    await expectEmpty(`#narrow/channel/${channel}-quiet`, "There are no messages in #quiet yet.");
    await expectEmpty(topicHash(channel, "quiet", "fresh idea"), "There are no messages in fresh idea yet.");
    await page.getByText("Start a new topic").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("the selected message comes back after a reload", async () => {
    const channel = await h.createChannel("history", [t.users.admin, t.users.member]);
    const ids: number[] = [];
    for (let i = 0; i < 30; i++) ids.push(await h.send(t.users.admin, channel, "long", `line number ${i}`));
    const page = await h.newPage();
    await h.logIn(page, t.users.member, topicHash(channel, "history", "long"));
    await page.getByText("line number 5", { exact: true }).click();
    await page.locator(`[data-message-id="${ids[5]}"][aria-current="true"]`).waitFor();
    await page.reload();
    await page.locator(`[data-message-id="${ids[5]}"][aria-current="true"]`).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("losing the server: the banner moves nothing; the client tries again soon, and at once when the network or the tab comes back", async () => {
    const channel = await h.createChannel("uplink", [t.users.admin, t.users.member]);
    await h.send(t.users.admin, channel, "status", "all good");
    const page = await h.newPage();
    await page.clock.install();
    await h.logIn(page, t.users.member, topicHash(channel, "uplink", "status"));
    await page.getByText("all good").waitFor();
    const banner = page.getByRole("status").filter({ hasText: "Reconnecting…" });
    const header = page.locator(".app-header");
    const before = { header: await header.boundingBox(), list: await page.getByRole("log", { name: "Messages" }).boundingBox() };

    /** The event queue's next poll fails: the one waiting now answers an event, and the next one is refused. */
    const refuse = (route: import("playwright-core").Route) => route.abort("connectionrefused");
    const loseTheServer = async (n: number) => {
      await page.route("**/json/events*", refuse);
      await h.send(t.users.admin, channel, "status", `ping ${n}`);
      await banner.waitFor();
      await page.unroute("**/json/events*", refuse);
    };

    // Timers stand still from here: only what the test does ends a wait.
    await page.clock.pauseAt(new Date((await page.evaluate(() => Date.now())) + 1000));

    await loseTheServer(1);
    const during = { header: await header.boundingBox(), list: await page.getByRole("log", { name: "Messages" }).boundingBox() };
    assert.deepEqual(during, before, "the banner shifts nothing");
    // Soon after the first failure: within half a second.
    await page.clock.runFor(500);
    await banner.waitFor({ state: "detached" });

    await loseTheServer(2);
    await page.evaluate(() => window.dispatchEvent(new Event("online")));
    await banner.waitFor({ state: "detached" });

    await loseTheServer(3);
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await banner.waitFor({ state: "detached" });
    await page.getByText("ping 3").waitFor();
    assert.deepEqual(h.pageErrors, []);
  });
});
