// GET/PUT/DELETE /bot_storage (Zulip's zerver/views/storage.py and
// zerver/lib/bot_storage.py): a per-account store of string keys and values,
// `storage` a JSON object of strings, `keys` a JSON list; Zulip's "Key does
// not exist." for any missing key (and then nothing is removed); the size
// limit of 10,000,000 characters over keys and values, counted in code
// points; each account its own storage; no events.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, uniqueName, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());
beforeEach(() => t.clearEvents());

const u = () => t.users;
const put = (user: TestUser, storage: unknown) => t.api(user, "PUT", "/bot_storage", { storage });
const get = (user: TestUser, keys?: unknown) => t.api(user, "GET", "/bot_storage", keys === undefined ? {} : { keys });
const remove = (user: TestUser, keys?: unknown) => t.api(user, "DELETE", "/bot_storage", keys === undefined ? {} : { keys });
const stored = async (user: TestUser) => assertSuccess(await get(user)).storage;

/** A fresh bot (so every test starts from empty storage). */
async function freshBot(): Promise<TestUser> {
  const short = `store${Math.floor(Math.random() * 1e9)}`;
  const body = assertSuccess(await t.api(u().member, "POST", "/bots", { full_name: uniqueName("Storage Bot"), short_name: short }));
  return { id: body.user_id, email: `${short}-bot@${t.services.config.fakeEmailDomain}`, apiKey: body.api_key, role: Role.MEMBER, password: "" };
}

describe("PUT and GET /bot_storage", () => {
  test("put, read everything and read some keys: Zulip's reply shapes; overwriting a key replaces its value", async () => {
    const bot = await freshBot();
    t.clearEvents();
    assert.deepEqual(assertSuccess(await get(bot)), { result: "success", msg: "", storage: {} });
    const reply = assertSuccess(await put(bot, { "entry 1": "value 1", "entry 2": "value 2", "entry 3": "value 3" }));
    assert.deepEqual(reply, { result: "success", msg: "" });
    assert.deepEqual(await stored(bot), { "entry 1": "value 1", "entry 2": "value 2", "entry 3": "value 3" });
    assert.deepEqual(assertSuccess(await get(bot, ["entry 1", "entry 3"])).storage, { "entry 1": "value 1", "entry 3": "value 3" });
    // An empty list means every key, as in Zulip (`keys or all keys`).
    assert.deepEqual(Object.keys(assertSuccess(await get(bot, [])).storage).sort(), ["entry 1", "entry 2", "entry 3"]);
    assertSuccess(await put(bot, { "entry 2": "new", "": "empty key", "ключ": "значение 🎉" }));
    assert.deepEqual(await stored(bot), { "": "empty key", "entry 1": "value 1", "entry 2": "new", "entry 3": "value 3", "ключ": "значение 🎉" });
    // The zulip_bots StateHandler stores JSON text as values.
    assertSuccess(await put(bot, { state: JSON.stringify({ count: 3, items: ["a"] }) }));
    assert.deepEqual(JSON.parse(assertSuccess(await get(bot, ["state"])).storage.state), { count: 3, items: ["a"] });
    assert.equal(t.events.length, 0, "storage changes send no events");
  });

  test("keys travel in the query string of GET and in the body of DELETE, as the Python bindings send them", async () => {
    const bot = await freshBot();
    assertSuccess(await put(bot, { a: "1", b: "2" }));
    assert.deepEqual(assertSuccess(await t.api(bot, "GET", "/bot_storage", { keys: ["b"] }, { encoding: "query" })).storage, { b: "2" });
    assert.deepEqual(assertSuccess(await t.api(bot, "PUT", "/bot_storage", { storage: { c: "3" } }, { encoding: "multipart" })), { result: "success", msg: "" });
    assertSuccess(await t.api(bot, "DELETE", "/bot_storage", { keys: ["a"] }, { encoding: "form" }));
    assert.deepEqual(await stored(bot), { b: "2", c: "3" });
  });

  test("a missing key: 400 Key does not exist.", async () => {
    const bot = await freshBot();
    assertSuccess(await put(bot, { here: "yes" }));
    assertError(await get(bot, ["here", "gone"]), 400, "BAD_REQUEST", "Key does not exist.");
    assertError(await get(bot, ["gone"]), 400, "BAD_REQUEST", "Key does not exist.");
  });

  test("bad input: Zulip's validator messages", async () => {
    const bot = await freshBot();
    assertError(await t.api(bot, "PUT", "/bot_storage", {}), 400, "REQUEST_VARIABLE_MISSING", "Missing 'storage' argument", { var_name: "storage" });
    assertError(await put(bot, "not json"), 400, "BAD_REQUEST", 'Argument "storage" is not valid JSON.');
    assertError(await put(bot, ["a"]), 400, "BAD_REQUEST", "storage is not a dict");
    assertError(await put(bot, { a: 1 }), 400, "BAD_REQUEST", 'storage["a"] is not a string');
    assertError(await put(bot, { a: null }), 400, "BAD_REQUEST", 'storage["a"] is not a string');
    assertError(await get(bot, "a"), 400, "BAD_REQUEST", 'Argument "keys" is not valid JSON.');
    assertError(await get(bot, { a: 1 }), 400, "BAD_REQUEST", "keys is not a list");
    assertError(await get(bot, [1]), 400, "BAD_REQUEST", "keys[0] is not a string");
    assertError(await remove(bot, [true]), 400, "BAD_REQUEST", "keys[0] is not a string");
    assert.deepEqual(await stored(bot), {}, "nothing was stored by refused requests");
  });

  test("the size limit: keys and values together at most 10,000,000 characters, counted in code points", async () => {
    const bot = await freshBot();
    // Nine million nine hundred ninety-nine thousand nine hundred ninety characters, put there directly.
    await t.services.storage.db.insertInto("bot_storage").values({ bot_user_id: bot.id, key: "big", value: "x".repeat(9_999_990) }).execute();
    // big: 3 + 9,999,990 = 9,999,993; k + 7 characters = 8 more: 10,000,001.
    assertError(await put(bot, { k: "1234567" }), 400, "BAD_REQUEST", "Request exceeds storage limit by 1 characters. The limit is 10000000 characters.");
    assertError(await put(bot, { k: "1234567", l: "12" }), 400, "BAD_REQUEST", "Request exceeds storage limit by 4 characters. The limit is 10000000 characters.");
    assertError(await get(bot, ["k"]), 400, "BAD_REQUEST", "Key does not exist.");
    // Exactly at the limit is allowed.
    assertSuccess(await put(bot, { k: "123456" }));
    // Replacing a value counts only the difference.
    assertSuccess(await put(bot, { k: "654321" }));
    // Six emoji are six characters (not twelve UTF-16 units, not twenty-four bytes).
    assertSuccess(await put(bot, { k: "😀😀😀😀😀😀" }));
    assertError(await put(bot, { k: "😀😀😀😀😀😀😀" }), 400, "BAD_REQUEST", "Request exceeds storage limit by 1 characters. The limit is 10000000 characters.");
    // Freeing space makes room again.
    assertSuccess(await remove(bot, ["big"]));
    assertSuccess(await put(bot, { more: "y".repeat(1000) }));
  });
});

describe("DELETE /bot_storage", () => {
  test("removes the keys named; any missing key removes nothing; no keys removes everything", async () => {
    const bot = await freshBot();
    assertSuccess(await put(bot, { a: "1", b: "2", c: "3" }));
    assert.deepEqual(assertSuccess(await remove(bot, ["a"])), { result: "success", msg: "" });
    assert.deepEqual(await stored(bot), { b: "2", c: "3" });
    assertError(await remove(bot, ["b", "missing"]), 400, "BAD_REQUEST", "Key does not exist.");
    assertError(await remove(bot, ["a"]), 400, "BAD_REQUEST", "Key does not exist.");
    // Zulip counts the keys asked for: one named twice is one short.
    assertError(await remove(bot, ["b", "b"]), 400, "BAD_REQUEST", "Key does not exist.");
    assert.deepEqual(await stored(bot), { b: "2", c: "3" });
    assertSuccess(await remove(bot, []));
    assert.deepEqual(await stored(bot), {});
    assertSuccess(await put(bot, { d: "4" }));
    assertSuccess(await remove(bot));
    assert.deepEqual(await stored(bot), {});
    // Removing everything from empty storage is fine.
    assertSuccess(await remove(bot));
  });
});

describe("whose storage", () => {
  test("each account has its own: one bot never sees another's keys", async () => {
    const one = await freshBot();
    const two = await freshBot();
    assertSuccess(await put(one, { shared: "one's" }));
    assertSuccess(await put(two, { shared: "two's" }));
    assert.deepEqual(await stored(one), { shared: "one's" });
    assert.deepEqual(await stored(two), { shared: "two's" });
    assertSuccess(await remove(one));
    assert.deepEqual(await stored(two), { shared: "two's" });
  });

  test("every role may use its own storage, as in Zulip (bots are who use it); deactivated bots cannot", async () => {
    for (const role of ["owner", "admin", "moderator", "member", "guest", "bot"] as const) {
      const user = u()[role];
      const key = `key of ${role}`;
      assertSuccess(await put(user, { [key]: role }));
      assert.equal(assertSuccess(await get(user, [key])).storage[key], role);
      assertSuccess(await remove(user, [key]));
    }
    const bot = await freshBot();
    assertSuccess(await put(bot, { a: "1" }));
    assertSuccess(await t.api(u().member, "DELETE", `/bots/${bot.id}`));
    assertError(await get(bot), 401, "USER_DEACTIVATED");
    assertError(await t.api(null, "GET", "/bot_storage"), 401, "UNAUTHORIZED");
  });

  test("a regenerated key: the old one is refused at once, the new one reads the same storage", async () => {
    const bot = await freshBot();
    assertSuccess(await put(bot, { kept: "yes" }));
    const fresh = assertSuccess(await t.api(u().member, "POST", `/bots/${bot.id}/api_key/regenerate`)).api_key;
    assertError(await get(bot), 401, "INVALID_API_KEY");
    assert.deepEqual(await stored({ ...bot, apiKey: fresh }), { kept: "yes" });
  });
});
