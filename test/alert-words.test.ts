// Alert words: GET/POST/DELETE /users/me/alert_words, their `alert_words`
// events and /register state, and the has_alert_word flag sending sets.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const words = (user: TestUser) => t.api(user, "GET", "/users/me/alert_words");
const add = (user: TestUser, list: unknown) => t.api(user, "POST", "/users/me/alert_words", { alert_words: list });
const remove = (user: TestUser, list: unknown) => t.api(user, "DELETE", "/users/me/alert_words", { alert_words: list });

async function flagsOf(user: TestUser, id: number): Promise<string[]> {
  return assertSuccess(await t.api(user, "GET", `/messages/${id}`)).message.flags;
}

describe("/users/me/alert_words", () => {
  test("add, list and remove: the whole list back each time, unique ignoring case, trimmed", async () => {
    const user = await t.createUser(uniqueName("Alerted"), Role.MEMBER);
    assert.deepEqual(assertSuccess(await words(user)).alert_words, []);
    assert.deepEqual(assertSuccess(await add(user, ["Deploy", " outage ", "deploy", ""])).alert_words, ["Deploy", "outage"]);
    assert.deepEqual(assertSuccess(await add(user, ["OUTAGE", "release"])).alert_words, ["Deploy", "outage", "release"]);
    assert.deepEqual(assertSuccess(await remove(user, ["DEPLOY", "never-added"])).alert_words, ["outage", "release"]);
    assert.deepEqual(assertSuccess(await words(user)).alert_words, ["outage", "release"]);
  });

  test("bad input: missing, not a list, not strings, too long", async () => {
    const user = t.users.member;
    assertError(await t.api(user, "POST", "/users/me/alert_words", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'alert_words' argument");
    assertError(await add(user, "deploy"), 400, "BAD_REQUEST");
    assertError(await add(user, [5]), 400, "BAD_REQUEST");
    assertError(await add(user, ["x".repeat(101)]), 400, "BAD_REQUEST", "alert_words[0] is too long (limit: 100 characters)");
    assertError(await t.api(user, "DELETE", "/users/me/alert_words", {}), 400, "REQUEST_VARIABLE_MISSING");
  });

  test("alert_words events to the user's own queues, and the list in /register", async () => {
    const user = await t.createUser(uniqueName("Evented"), Role.MEMBER);
    const queue = (await t.register(user, { event_types: ["alert_words"] })).queue_id as string;
    const other = (await t.register(t.users.admin, { event_types: ["alert_words"] })).queue_id as string;
    assertSuccess(await add(user, ["ping"]));
    assertSuccess(await remove(user, ["ping"]));
    assert.deepEqual(
      (await t.queuedEvents(user, queue)).map((e) => ({ type: e.type, alert_words: e.alert_words })),
      [
        { type: "alert_words", alert_words: ["ping"] },
        { type: "alert_words", alert_words: [] },
      ],
    );
    assert.deepEqual(await t.queuedEvents(t.users.admin, other), []);
    assertSuccess(await add(user, ["pong"]));
    assert.deepEqual((await t.register(user, { fetch_event_types: ["alert_words"] })).alert_words, ["pong"]);
  });
});

describe("has_alert_word", () => {
  test("set for recipients whose word appears as a whole word in the text, not in code, not for the sender", async () => {
    const watcher = await t.createUser(uniqueName("Watcher"), Role.MEMBER);
    const other = await t.createUser(uniqueName("Other"), Role.MEMBER);
    const sender = await t.createUser(uniqueName("Sender"), Role.MEMBER);
    assertSuccess(await add(watcher, ["Deploy"]));
    assertSuccess(await add(sender, ["deploy"]));
    const name = uniqueName("Alerts");
    assertSuccess(await t.api(t.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [watcher.id, other.id, sender.id], send_new_subscription_messages: false }));
    const send = async (content: string) => assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: name, topic: "t", content })).id as number;

    const hit = await send("We **deploy** at noon");
    assert.deepEqual(await flagsOf(watcher, hit), ["has_alert_word"]);
    assert.deepEqual(await flagsOf(other, hit), []);
    assert.ok(!(await flagsOf(sender, hit)).includes("has_alert_word"));
    assert.deepEqual(await flagsOf(watcher, await send("redeployment later")), [], "part of a word is no match");
    assert.deepEqual(await flagsOf(watcher, await send("run `deploy` now")), [], "code is not text");
    const dm = assertSuccess(await t.api(other, "POST", "/messages", { type: "direct", to: JSON.stringify([watcher.id]), content: "DEPLOY!" })).id as number;
    assert.deepEqual(await flagsOf(watcher, dm), ["has_alert_word"]);
    // is:alerted finds them.
    const alerted = assertSuccess(await t.api(watcher, "GET", "/messages", { anchor: "newest", num_before: 10, num_after: 0, narrow: [["is", "alerted"]] }));
    assert.deepEqual(alerted.messages.map((m: { id: number }) => m.id), [hit, dm]);
  });
});
