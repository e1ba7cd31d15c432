// The process's cache of authentication's rows (src/storage/row-cache.ts,
// issue 28): a warm request reads neither the organization nor the user, and
// no change to either, by this process or another, is served stale.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import pg from "pg";
import { Role } from "../src/domain/roles.ts";
import { cachedTablesWritten, copyRows, RowCache } from "../src/storage/row-cache.ts";
import { assertError, assertSuccess, DIALECT, PG_URL, startTestApp, type TestApp, type TestUser } from "./helpers.ts";
import { statementsRun, warmRowCache } from "./statement-log.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

let counter = 0;
async function freshUser(role: number = Role.MEMBER): Promise<TestUser> {
  counter += 1;
  return t.createUser(`Cached ${counter}`, role);
}

/** Polls `check` until it holds (another process's change arrives by notification), for at most 5 s. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let waited = 0; !(await check()); waited += 20) {
    if (waited > 5000) assert.fail(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("which statements drop the cache", () => {
  test("writes to realms or users, compiled or raw, schema-qualified or in a WITH clause", () => {
    const db = t.services.storage.db;
    const writes = [
      db.updateTable("users").set({ full_name: "x" }).where("id", "=", 1).compile().sql,
      db.insertInto("realms").values({ string_id: "x", name: "x" } as never).compile().sql,
      db.deleteFrom("users").where("id", "=", 1).compile().sql,
      "UPDATE users SET is_active = false",
      "update public.users set api_key = 'k'",
      'WITH changed AS (UPDATE "realms" SET name = $1 RETURNING id) SELECT id FROM changed',
      "TRUNCATE TABLE users",
      "DELETE FROM realms",
    ];
    for (const text of writes) assert.ok(cachedTablesWritten(text).length > 0, text);
    assert.deepEqual(cachedTablesWritten('WITH a AS (UPDATE "channels" SET x = 1) INSERT INTO subscriptions SELECT 1'), ["channels", "subscriptions"]);
    assert.deepEqual(cachedTablesWritten("UPDATE users SET x = 1; UPDATE users SET y = 2"), ["users"]);
    assert.deepEqual(cachedTablesWritten(db.insertInto("user_group_members").values({ group_id: 1, user_id: 1 }).compile().sql), ["user_group_members"]);
    assert.deepEqual(cachedTablesWritten(db.deleteFrom("user_group_subgroups").where("subgroup_id", "=", 1).compile().sql), ["user_group_subgroups"]);
    const others = [
      db.selectFrom("users").selectAll().where("id", "=", 1).compile().sql,
      db.selectFrom("realms").select("id").where("id", "=", 1).forUpdate().compile().sql,
      db.updateTable("user_messages").set({ flags: 1 }).where("user_id", "=", 1).compile().sql,
      db.insertInto("user_groups").values({ realm_id: 1, name: "x" } as never).compile().sql,
      "INSERT INTO presence (user_id) SELECT id FROM users ON CONFLICT (user_id) DO UPDATE SET last_active_time = 1",
      "UPDATE user_topics SET visibility_policy = 1 FROM users WHERE users.id = user_topics.user_id",
      "UPDATE users_extra SET x = 1",
      db.insertInto("channel_folders").values({ realm_id: 1, name: "x" } as never).compile().sql,
    ];
    for (const text of others) assert.deepEqual(cachedTablesWritten(text), [], text);
  });

  test("a write in a transaction drops the cache when it commits, not before; a rolled-back write does not", async () => {
    const user = await freshUser();
    const rows = t.services.storage.rows;
    const db = t.services.storage.db;
    let dropsInside = -1;
    const before = rows.stats.drops;
    await db.transaction().execute(async (trx) => {
      await trx.updateTable("users").set({ full_name: "Inside" }).where("id", "=", user.id).execute();
      dropsInside = rows.stats.drops;
    });
    assert.equal(dropsInside, before, "dropped before the commit");
    assert.equal(rows.stats.drops, before + 1);
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.updateTable("users").set({ full_name: "Rolled back" }).where("id", "=", user.id).execute();
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.equal(rows.stats.drops, before + 1);
    // Outside a transaction a write drops it at once.
    await db.updateTable("users").set({ full_name: "Outside" }).where("id", "=", user.id).execute();
    assert.equal(rows.stats.drops, before + 2);
    // Reads and other tables' writes leave it.
    await db.selectFrom("users").selectAll().where("id", "=", user.id).execute();
    await db.updateTable("user_messages").set({ flags: 0 }).where("user_id", "=", -1).execute();
    assert.equal(rows.stats.drops, before + 2);
  });
});

describe("RowCache", () => {
  test("a look-up that began before a drop of its table does not store what it read; a later one does", async () => {
    const cache = new RowCache({ trusted: true });
    let release!: () => void;
    const loading = cache.read("k", ["users"], () => new Promise<{ v: number }>((resolve) => (release = () => resolve({ v: 1 }))));
    cache.drop("users");
    release();
    assert.deepEqual(await loading, { v: 1 });
    let loads = 0;
    const load = async () => {
      loads += 1;
      return { v: 2 };
    };
    assert.deepEqual(await cache.read("k", ["users"], load), { v: 2 });
    assert.deepEqual(await cache.read("k", ["users"], load), { v: 2 });
    assert.equal(loads, 1, "the second read was not a hit");
  });

  test("a drop forgets the entries read from that table, and only those", async () => {
    const cache = new RowCache({ trusted: true });
    let loads = 0;
    const load = (v: string) => async () => (loads++, { v });
    await cache.read("user", ["users"], load("user"));
    await cache.read("subscribers", ["subscriptions", "users"], load("subscribers"));
    await cache.read("channel", ["channels"], load("channel"));
    cache.drop("subscriptions");
    await cache.read("user", ["users"], load("user"));
    await cache.read("channel", ["channels"], load("channel"));
    assert.equal(loads, 3, "a subscriptions change dropped other entries");
    await cache.read("subscribers", ["subscriptions", "users"], load("subscribers"));
    assert.equal(loads, 4);
    cache.drop("users");
    await cache.read("subscribers", ["subscriptions", "users"], load("subscribers"));
    await cache.read("user", ["users"], load("user"));
    await cache.read("channel", ["channels"], load("channel"));
    assert.equal(loads, 6);
    // A look-up running across a drop of any one of its tables stores nothing.
    let release!: () => void;
    const slow = cache.read("slow", ["subscriptions", "users"], () => new Promise<{ v: string }>((resolve) => (release = () => resolve({ v: "slow" }))));
    cache.drop("subscriptions");
    release();
    await slow;
    await cache.read("slow", ["subscriptions", "users"], load("slow"));
    assert.equal(loads, 7);
    cache.dropAll();
    await cache.read("channel", ["channels"], load("channel"));
    assert.equal(loads, 8);
  });

  test("each caller gets its own copy; absent rows and an untrusted cache keep nothing", async () => {
    const cache = new RowCache({ trusted: true });
    const first = await cache.read("k", ["realms"], async () => ({ name: "a" }));
    first!.name = "changed by a caller";
    assert.deepEqual(await cache.read("k", ["realms"], async () => ({ name: "b" })), { name: "a" });
    const list = await cache.read("list", ["subscriptions"], async () => [{ id: 1 }], copyRows);
    list![0]!.id = 99;
    list!.push({ id: 2 });
    assert.deepEqual(await cache.read("list", ["subscriptions"], async () => [], copyRows), [{ id: 1 }]);
    let loads = 0;
    await cache.read("missing", ["users"], async () => (loads++, undefined));
    await cache.read("missing", ["users"], async () => (loads++, undefined));
    assert.equal(loads, 2);
    cache.setTrusted(false);
    await cache.read("k", ["realms"], async () => (loads++, { name: "c" }));
    await cache.read("k", ["realms"], async () => (loads++, { name: "c" }));
    assert.equal(loads, 4, "kept while untrusted");
  });
});

describe("authentication from the cache", () => {
  test("a warm request reads neither the organization nor the user; a session's request neither", async () => {
    const user = await freshUser();
    await warmRowCache(t.services.storage, async () => assertSuccess(await t.api(user, "GET", "/users/me")));
    const run = await statementsRun(t.services.storage, async () => assertSuccess(await t.api(user, "GET", "/users/me")));
    const authReads = run.filter((q) => /from "(realms|users)" where "(string_id|realm_id)" = \$1/i.test(q.sql) || /from "(realms|users)" where "(string_id|realm_id)" = \?/i.test(q.sql));
    assert.deepEqual(authReads.map((q) => q.sql), []);
    const session = await t.login(user);
    await warmRowCache(t.services.storage, async () => assertSuccess(await t.json(session, "GET", "/users/me")));
    const hits = t.services.storage.rows.stats.hits;
    assertSuccess(await t.json(session, "GET", "/users/me"));
    assert.equal(t.services.storage.rows.stats.hits, hits + 2, "the organization and the user, both from the cache");
  });

  test("a name change, a new API key, a role change and a deactivation through the API apply to the very next request", async () => {
    const user = await freshUser();
    const me = async () => assertSuccess(await t.api(user, "GET", "/users/me"));
    await warmRowCache(t.services.storage, me);

    assertSuccess(await t.api(user, "PATCH", "/settings", { full_name: "Renamed Person" }));
    assert.equal((await me()).full_name, "Renamed Person");

    assertSuccess(await t.api(t.users.owner, "PATCH", `/users/${user.id}`, { role: Role.MODERATOR }));
    assert.equal((await me()).role, Role.MODERATOR);

    const oldKey = user.apiKey;
    const regenerated = assertSuccess(await t.api(user, "POST", "/users/me/api_key/regenerate"));
    assertError(await t.api(user, "GET", "/users/me"), 401, "INVALID_API_KEY");
    user.apiKey = regenerated.api_key;
    assert.notEqual(user.apiKey, oldKey);
    await me();

    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));
    assertError(await t.api(user, "GET", "/users/me"), 401, "USER_DEACTIVATED");
  });

  test("an organization change applies to the very next request", async () => {
    const name = async () => assertSuccess(await t.api(null, "GET", "/server_settings")).realm_name as string;
    await warmRowCache(t.services.storage, name);
    await warmRowCache(t.services.storage, async () => assertSuccess(await t.api(t.users.member, "GET", "/users/me")));
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { name: "Renamed Organization" }));
    assert.equal(await name(), "Renamed Organization");
  });

  test(`another process's change is seen (${DIALECT === "postgres" ? "NOTIFY from the tables' triggers" : "PRAGMA data_version"})`, async () => {
    const user = await freshUser();
    const me = async () => assertSuccess(await t.api(user, "GET", "/users/me"));
    await warmRowCache(t.services.storage, me);
    const peer = await t.startPeer();
    try {
      await warmRowCache(peer.services.storage, async () => assertSuccess(await peer.api(user, "GET", "/users/me")));
      assertSuccess(await peer.api(user, "PATCH", "/settings", { full_name: "Changed Elsewhere" }));
      assert.equal(assertSuccess(await peer.api(user, "GET", "/users/me")).full_name, "Changed Elsewhere");
      if (DIALECT === "sqlite") {
        // The other connection's commit is seen on the next look-up.
        assert.equal((await me()).full_name, "Changed Elsewhere");
      } else {
        await eventually(async () => (await me()).full_name === "Changed Elsewhere", "the peer's change reached this process");
      }
      // The other way, and a deactivation.
      assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${user.id}`));
      const refused = async () => (await peer.api(user, "GET", "/users/me")).status === 401;
      if (DIALECT === "sqlite") assert.ok(await refused());
      else await eventually(refused, "the deactivation reached the peer");
      assertError(await peer.api(user, "GET", "/users/me"), 401, "USER_DEACTIVATED");
    } finally {
      await peer.close();
    }
  });

  test("a write by another client of the database (psql, a script) is seen too", async () => {
    const user = await freshUser();
    const me = async () => assertSuccess(await t.api(user, "GET", "/users/me"));
    await warmRowCache(t.services.storage, me);
    if (DIALECT === "sqlite") {
      const peer = await t.startPeer();
      try {
        await sql`UPDATE users SET full_name = 'Raw Change' WHERE id = ${user.id}`.execute(peer.services.storage.db);
      } finally {
        await peer.close();
      }
      assert.equal((await me()).full_name, "Raw Change");
      return;
    }
    const schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(t.services.storage.db)).rows[0]!.schema;
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query("UPDATE users SET full_name = 'Raw Change' WHERE id = $1", [user.id]);
    } finally {
      await client.end();
    }
    await eventually(async () => (await me()).full_name === "Raw Change", "psql's change reached the server");
  });

  test("PostgreSQL: while the LISTEN connection is down nothing is kept; it comes back, and a change made meanwhile is seen", { skip: DIALECT !== "postgres" && "PostgreSQL only" }, async () => {
    const user = await freshUser();
    const me = async () => assertSuccess(await t.api(user, "GET", "/users/me"));
    const rows = t.services.storage.rows;
    await warmRowCache(t.services.storage, me);
    const schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(t.services.storage.db)).rows[0]!.schema;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    try {
      const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [`parley rows ${schema}`]);
      assert.equal(killed.rowCount, 1, "one listener per storage");
      await eventually(async () => !rows.trusted, "the cache noticed the lost connection");
      // Untrusted: every request reads both rows again.
      const misses = rows.stats.misses;
      await me();
      await me();
      assert.equal(rows.stats.misses, misses + 4);
      await admin.query(`UPDATE ${schema}.users SET full_name = 'While Deaf' WHERE id = $1`, [user.id]);
      assert.equal((await me()).full_name, "While Deaf");
      // It reconnects within about a second, and keeps rows again.
      await eventually(async () => rows.trusted, "the listener reconnected");
      await me();
      const hits = rows.stats.hits;
      assert.equal((await me()).full_name, "While Deaf");
      assert.equal(rows.stats.hits, hits + 2);
    } finally {
      await admin.end();
    }
  });
});

describe("a send's channel and subscribers from the cache", () => {
  async function newChannel(name: string, members: TestUser[]): Promise<number> {
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: members.map((m) => m.id) }));
    return assertSuccess(await t.api(t.users.owner, "GET", "/get_stream_id", { stream: name })).stream_id;
  }
  /** A sender and a newcomer, a channel of the sender alone, and a send to it (warm in the row cache). */
  async function channelOfOne(name: string) {
    const sender = await freshUser();
    const newcomer = await freshUser();
    const channelId = await newChannel(name, [sender]);
    const send = async () => assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channelId, topic: "t", content: "hello" })).id as number;
    await warmRowCache(t.services.storage, send);
    return { sender, newcomer, send };
  }
  const received = (user: TestUser, messageId: number) => t.eventsFor(user.id, "message").some((event) => (event as unknown as { message: { id: number } }).message.id === messageId);

  test("subscribing, unsubscribing and deactivating a user change the very next send's recipients; a subscriber change keeps authentication's rows", async () => {
    const { sender, newcomer, send } = await channelOfOne("cached recipients");
    const rows = t.services.storage.rows;
    const misses = rows.stats.misses;
    const first = await send();
    assert.equal(rows.stats.misses, misses, "a warm send missed the cache");
    assert.ok(!received(newcomer, first));

    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "cached recipients" }], principals: [newcomer.id] }));
    const hits = rows.stats.hits;
    const second = await send();
    assert.ok(received(newcomer, second), "the new subscriber missed the next message");
    // Only the subscribers were read again: the organization, the sender, the sender's groups and the channel were hits.
    assert.equal(rows.stats.hits, hits + 4);

    assertSuccess(await t.api(t.users.owner, "DELETE", "/users/me/subscriptions", { subscriptions: ["cached recipients"], principals: [newcomer.id] }));
    assert.ok(!received(newcomer, await send()), "an unsubscribed user received the next message");

    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "cached recipients" }], principals: [newcomer.id] }));
    assert.ok(received(newcomer, await send()));
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${newcomer.id}`));
    const afterDeactivation = await send();
    assert.ok(!received(newcomer, afterDeactivation), "a deactivated user received the next message");
    const flags = await t.services.storage.db.selectFrom("user_messages").select("user_id").where("message_id", "=", afterDeactivation).execute();
    assert.deepEqual(flags.map((f) => f.user_id), [sender.id]);
  });

  test("renaming and archiving the channel apply to the very next send", async () => {
    const sender = await freshUser();
    const channelId = await newChannel("cached name", [sender]);
    const byName = (name: string) => t.api(sender, "POST", "/messages", { type: "stream", to: name, topic: "t", content: "x" });
    const byId = () => t.api(sender, "POST", "/messages", { type: "stream", to: channelId, topic: "t", content: "x" });
    await warmRowCache(t.services.storage, async () => assertSuccess(await byName("cached name")));
    assertSuccess(await byId());
    assertSuccess(await t.api(t.users.admin, "PATCH", `/streams/${channelId}`, { new_name: "cached new name" }));
    assertError(await byName("cached name"), 400, "STREAM_DOES_NOT_EXIST");
    assertSuccess(await byName("cached new name"));
    assertSuccess(await t.api(t.users.admin, "DELETE", `/streams/${channelId}`));
    assertError(await byId(), 400, "BAD_REQUEST", "Not authorized to send to channel 'cached new name'");
    assertError(await byName("cached new name"), 400, "BAD_REQUEST", "Not authorized to send to channel 'cached new name'");
  });

  test("another process's subscription reaches this process's next sends", async () => {
    const { newcomer, send } = await channelOfOne("cached elsewhere");
    const peer = await t.startPeer();
    try {
      assertSuccess(await peer.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "cached elsewhere" }], principals: [newcomer.id] }));
    } finally {
      await peer.close();
    }
    if (DIALECT === "sqlite") assert.ok(received(newcomer, await send()));
    else await eventually(async () => received(newcomer, await send()), "the peer's subscription reached this process");
  });
});

describe("the groups a sender is in, from the cache", () => {
  /** A channel only `posters`' members may post to, a subscribed sender outside it, and a refused send (warm in the row cache). */
  async function guardedChannel(name: string) {
    const sender = await freshUser();
    const posters = assertSuccess(await t.api(t.users.admin, "POST", "/user_groups/create", { name: `${name} posters`, description: "", members: [] })).group_id as number;
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [sender.id], can_send_message_group: posters }));
    const send = () => t.api(sender, "POST", "/messages", { type: "stream", to: name, topic: "t", content: "hello" });
    const refused = async () => assertError(await send(), 400, "BAD_REQUEST", "You do not have permission to post in this channel.");
    await warmRowCache(t.services.storage, refused);
    return { sender, posters, send, refused };
  }

  test("joining and leaving a group, directly or through a subgroup, apply to the very next send", async () => {
    const { sender, posters, send, refused } = await guardedChannel("cached groups");
    const rows = t.services.storage.rows;
    const hits = rows.stats.hits;
    await refused();
    assert.ok(rows.stats.hits > hits, "a warm send read its sender's groups again");

    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${posters}/members`, { add: [sender.id] }));
    assertSuccess(await send());
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${posters}/members`, { delete: [sender.id] }));
    await refused();

    const inner = assertSuccess(await t.api(t.users.admin, "POST", "/user_groups/create", { name: "cached groups inner", description: "", members: [sender.id] })).group_id as number;
    await refused();
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${posters}/subgroups`, { add: [inner] }));
    assertSuccess(await send());
    assertSuccess(await t.api(t.users.admin, "POST", `/user_groups/${posters}/subgroups`, { delete: [inner] }));
    await refused();
  });

  test(`a membership written by another client of the database is seen (${DIALECT === "postgres" ? "migration 0033's triggers" : "PRAGMA data_version"})`, async () => {
    const { sender, posters, send, refused } = await guardedChannel("cached groups elsewhere");
    if (DIALECT === "sqlite") {
      const peer = await t.startPeer();
      try {
        await sql`INSERT INTO user_group_members (group_id, user_id) VALUES (${posters}, ${sender.id})`.execute(peer.services.storage.db);
      } finally {
        await peer.close();
      }
      assertSuccess(await send());
      return;
    }
    const schema = (await sql<{ schema: string }>`SELECT current_schema() AS schema`.execute(t.services.storage.db)).rows[0]!.schema;
    const client = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
    await client.connect();
    try {
      await client.query("INSERT INTO user_group_members (group_id, user_id) VALUES ($1, $2)", [posters, sender.id]);
      await eventually(async () => (await send()).status === 200, "the new membership reached the server");
      await client.query("DELETE FROM user_group_members WHERE group_id = $1 AND user_id = $2", [posters, sender.id]);
      await eventually(async () => (await send()).status === 400, "the removed membership reached the server");
      await refused();
    } finally {
      await client.end();
    }
  });
});

describe("the users a message mentions, from the cache", () => {
  test("a warm send reads no mentioned user; renaming or deactivating them applies to the very next send", async () => {
    const sender = await freshUser();
    const name = "Mention Target";
    const named = await t.createUser(name);
    const other = await t.createUser("Mention Other");
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "cached mentions" }], principals: [sender.id, named.id, other.id] }));
    const send = async (content: string) => {
      const id = assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: "cached mentions", topic: "t", content })).id as number;
      return assertSuccess(await t.api(sender, "GET", `/messages/${id}`)).message.content as string;
    };
    const mention = `@**${name}** and @**|${other.id}** hi`;
    await warmRowCache(t.services.storage, () => send(mention));
    const post = () => t.api(sender, "POST", "/messages", { type: "stream", to: "cached mentions", topic: "t", content: mention }).then(assertSuccess);
    const userReads = (await statementsRun(t.services.storage, post)).filter((q) => /"bot_type"/.test(q.sql));
    assert.deepEqual(userReads.map((q) => q.sql), []);
    // Entries are per name and per ID: names each seen before, in a new combination, read no user either.
    await send("@**Mention Other** alone");
    const combined = () => t.api(sender, "POST", "/messages", { type: "stream", to: "cached mentions", topic: "t", content: `@**Mention Other** @**${name}** and @**|${other.id}**` }).then(assertSuccess);
    assert.deepEqual((await statementsRun(t.services.storage, combined)).filter((q) => /"bot_type"/.test(q.sql)).map((q) => q.sql), []);
    const first = await send(mention);
    assert.match(first, new RegExp(`data-user-id="${named.id}">@${name}<`));
    assert.match(first, new RegExp(`data-user-id="${other.id}">@Mention Other<`));

    // The name as written no longer names anyone; the new one does.
    assertSuccess(await t.api(named, "PATCH", "/settings", { full_name: "Newly Named" }));
    assert.doesNotMatch(await send(mention), new RegExp(`data-user-id="${named.id}"`));
    assert.match(await send("@**Newly Named** hi"), new RegExp(`data-user-id="${named.id}">@Newly Named<`));

    // A deactivated user is mentioned by ID no more.
    assertSuccess(await t.api(t.users.admin, "DELETE", `/users/${other.id}`));
    assert.doesNotMatch(await send(mention), new RegExp(`data-user-id="${other.id}"`));
  });
});
