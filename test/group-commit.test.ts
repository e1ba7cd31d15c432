// Group commit (src/actions/transaction.ts): writes to one organization that
// arrive together share a transaction, yet each succeeds or fails on its own,
// nobody is answered before the commit, and a commit that fails fails them all.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { groupCommitStats, inRealmTransaction, type SharedWrite } from "../src/actions/transaction.ts";
import { ApiError } from "../src/errors.ts";
import { assertError, assertSuccess, PG_URL, startTestApp, uniqueName, type TestApp } from "./helpers.ts";
import { statementsRun } from "./statement-log.ts";

describe("group commit", () => {
  let t: TestApp;
  let channelId: number;
  before(async () => {
    t = await startTestApp();
    const name = uniqueName("group-commit");
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], principals: [t.users.owner.id, t.users.member.id, t.users.admin.id] }));
    channelId = assertSuccess(await t.api(t.users.owner, "GET", "/get_stream_id", { stream: name })).stream_id;
  });
  after(() => t.close());

  const snippetTitles = async (userId: number) =>
    (await t.services.storage.db.selectFrom("saved_snippets").select("title").where("user_id", "=", userId).orderBy("id").execute()).map((r) => r.title);

  /** Inserts a saved snippet for the member and queues an event for them; then fails if asked. */
  const writeSnippet = (title: string, fail = false, options: { rerunnable?: boolean } = {}) =>
    inRealmTransaction(
      t.services,
      t.realm.id,
      async (trx, pending) => {
        await trx.insertInto("saved_snippets").values({ realm_id: t.realm.id, user_id: t.users.member.id, title, content: "x", date_created: 0 }).execute();
        pending.add(t.realm.id, { type: "test_write", title }, [t.users.member.id]);
        if (fail) throw new ApiError(400, "BAD_REQUEST", `refused ${title}`);
        return title;
      },
      options,
    );

  test("writes started together share one transaction; a failing one is undone alone", async () => {
    t.clearEvents();
    const before = groupCommitStats(t.services.storage);
    const results = await Promise.allSettled([writeSnippet("first"), writeSnippet("second", true), writeSnippet("third")]);
    const after = groupCommitStats(t.services.storage);
    assert.equal(after.transactions - before.transactions, 1, "one transaction for the three writes");
    assert.equal(after.writes - before.writes, 3);

    assert.deepEqual(results[0], { status: "fulfilled", value: "first" });
    assert.equal(results[1]!.status, "rejected");
    assert.match(((results[1] as PromiseRejectedResult).reason as Error).message, /refused second/);
    assert.deepEqual(results[2], { status: "fulfilled", value: "third" });
    // The failed write's row and event are gone; the others' are there.
    assert.deepEqual(await snippetTitles(t.users.member.id), ["first", "third"]);
    assert.deepEqual(
      t.eventsFor(t.users.member.id, "test_write").map((e) => e.title),
      ["first", "third"],
    );
  });

  test("each write of a batch has its savepoint; on PostgreSQL releasing one and setting the next is one round trip", async () => {
    const run = await statementsRun(t.services.storage, () => Promise.allSettled([writeSnippet("one"), writeSnippet("two", true), writeSnippet("three")]));
    const savepoints = run.map((q) => q.sql).filter((text) => /savepoint/i.test(text));
    const next = PG_URL ? ["release savepoint parley_write; savepoint parley_write"] : ["release savepoint parley_write", "savepoint parley_write"];
    // The failed write is rolled back to its savepoint; the COMMIT releases the last one.
    assert.deepEqual(savepoints, ["savepoint parley_write", ...next, "rollback to savepoint parley_write", ...next]);
    assert.deepEqual(await snippetTitles(t.users.member.id).then((titles) => titles.slice(-2)), ["one", "three"]);
  });

  test("writes that may run again share a batch without savepoints on PostgreSQL; one failing makes the batch run again, each in its savepoint", async () => {
    const rerunnable = { rerunnable: true };
    const savepointsOf = (run: { sql: string }[]) => run.map((q) => q.sql).filter((text) => /savepoint/i.test(text));
    const next = PG_URL ? ["release savepoint parley_write; savepoint parley_write"] : ["release savepoint parley_write", "savepoint parley_write"];

    // None fails: on PostgreSQL no savepoint at all (SQLite's cost no round trip and are kept).
    t.clearEvents();
    let before = groupCommitStats(t.services.storage);
    const quiet = await statementsRun(t.services.storage, () => Promise.all([writeSnippet("r1", false, rerunnable), writeSnippet("r2", false, rerunnable)]));
    assert.deepEqual(savepointsOf(quiet), PG_URL ? [] : ["savepoint parley_write", ...next]);
    assert.equal(quiet.filter((q) => /insert into "saved_snippets"/i.test(q.sql)).length, 2, "each write ran once");
    let after = groupCommitStats(t.services.storage);
    assert.deepEqual([after.transactions - before.transactions, after.reruns - before.reruns], [1, 0]);
    assert.deepEqual(t.eventsFor(t.users.member.id, "test_write").map((e) => e.title), ["r1", "r2"]);

    // The middle one fails: on PostgreSQL the batch is rolled back and run again with savepoints; the failed
    // write is undone alone, and each of the others is kept once, with its event sent once.
    t.clearEvents();
    before = groupCommitStats(t.services.storage);
    let results: PromiseSettledResult<string>[] = [];
    const failing = await statementsRun(t.services.storage, async () => {
      results = await Promise.allSettled([writeSnippet("r3", false, rerunnable), writeSnippet("r4", true, rerunnable), writeSnippet("r5", false, rerunnable)]);
    });
    after = groupCommitStats(t.services.storage);
    assert.deepEqual(savepointsOf(failing), ["savepoint parley_write", ...next, "rollback to savepoint parley_write", ...next]);
    assert.equal(failing.filter((q) => /insert into "saved_snippets"/i.test(q.sql)).length, PG_URL ? 2 + 3 : 3, "on PostgreSQL the two before the failure ran twice");
    assert.deepEqual([after.transactions - before.transactions, after.reruns - before.reruns], [1, PG_URL ? 1 : 0]);
    assert.deepEqual(results[0], { status: "fulfilled", value: "r3" });
    assert.match(((results[1] as PromiseRejectedResult).reason as Error).message, /refused r4/);
    assert.deepEqual(results[2], { status: "fulfilled", value: "r5" });
    assert.deepEqual((await snippetTitles(t.users.member.id)).filter((title) => /^r\d$/.test(title)), ["r1", "r2", "r3", "r5"]);
    assert.deepEqual(t.eventsFor(t.users.member.id, "test_write").map((e) => e.title), ["r3", "r5"]);

    // A batch with a write that may not run again keeps savepoints.
    const mixed = await statementsRun(t.services.storage, () => Promise.all([writeSnippet("r6", false, rerunnable), writeSnippet("r7")]));
    assert.deepEqual(savepointsOf(mixed), ["savepoint parley_write", ...next]);
  });

  test("events are sent only after the commit", async () => {
    t.clearEvents();
    let seenBeforeCommit = -1;
    const written = writeSnippet("watched");
    const observer = inRealmTransaction(t.services, t.realm.id, async () => {
      // Runs after "watched" in the same transaction: its event must not be out yet.
      seenBeforeCommit = t.eventsFor(t.users.member.id, "test_write").length;
    });
    await Promise.all([written, observer]);
    assert.equal(seenBeforeCommit, 0);
    assert.equal(t.eventsFor(t.users.member.id, "test_write").length, 1);
  });

  test("PostgreSQL: the next batch begins and waits for the lock while the one before commits; callers are told in commit order", { skip: !PG_URL && "PostgreSQL only" }, async () => {
    const db = t.services.storage.db;
    // A COMMIT that takes a second: a check run at commit time that sleeps.
    await sql`CREATE FUNCTION slow_commit() RETURNS trigger AS $$ BEGIN IF NEW.title = 'slow' THEN PERFORM pg_sleep(1); END IF; RETURN NULL; END $$ LANGUAGE plpgsql`.execute(db);
    await sql`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON saved_snippets DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()`.execute(db);
    const pg = (await import("pg")).default;
    const observer = new pg.Client({ connectionString: PG_URL });
    await observer.connect();
    try {
      t.clearEvents();
      const told: string[] = [];
      let slowWritten!: () => void;
      const slowBodyDone = new Promise<void>((resolve) => (slowWritten = resolve));
      const slow = inRealmTransaction(t.services, t.realm.id, async (trx, pending) => {
        await trx.insertInto("saved_snippets").values({ realm_id: t.realm.id, user_id: t.users.member.id, title: "slow", content: "x", date_created: 0 }).execute();
        pending.add(t.realm.id, { type: "test_write", title: "slow" }, [t.users.member.id]);
        slowWritten();
        return "slow";
      }).then((value) => (told.push(value), value));
      // Once the slow batch has run its write it commits: a write that comes now is not kept waiting for that.
      await slowBodyDone;
      const next = writeSnippet("next").then((value) => (told.push(value), value));
      // Its transaction is under way, waiting for the organization's row, while the slow COMMIT still runs.
      const waiting = async () =>
        (
          await observer.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%from \"realms\"%for update%'",
          )
        ).rows[0].n as number;
      let seen = 0;
      for (let polls = 0; polls < 100 && seen === 0 && told.length === 0; polls += 1) {
        seen = await waiting();
        if (seen === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(told.length, 0, "the slow commit ended before the next batch was seen waiting");
      assert.equal(seen, 1, "the next batch was not waiting for the lock during the slow commit");
      assert.deepEqual(await Promise.all([slow, next]), ["slow", "next"]);
      assert.deepEqual(told, ["slow", "next"]);
      assert.deepEqual(t.eventsFor(t.users.member.id, "test_write").map((e) => e.title), ["slow", "next"]);
    } finally {
      await observer.end();
      await sql`DROP TRIGGER slow_commit ON saved_snippets`.execute(db);
      await sql`DROP FUNCTION slow_commit()`.execute(db);
    }
  });

  test("PostgreSQL: a batch run again stays ahead of a write that came while its first attempt ran", { skip: !PG_URL && "PostgreSQL only" }, async () => {
    t.clearEvents();
    let later: Promise<string> | undefined;
    const told: string[] = [];
    const tell = (value: string) => (told.push(value), value);
    const failing = inRealmTransaction(
      t.services,
      t.realm.id,
      async (trx) => {
        await trx.insertInto("saved_snippets").values({ realm_id: t.realm.id, user_id: t.users.member.id, title: "o2", content: "x", date_created: 0 }).execute();
        // Arrives while the first attempt runs (which then rolls back), before the rerun.
        later ??= writeSnippet("o4").then(tell);
        throw new ApiError(400, "BAD_REQUEST", "refused o2");
      },
      { rerunnable: true },
    );
    const results = await Promise.allSettled([writeSnippet("o1", false, { rerunnable: true }).then(tell), failing, writeSnippet("o3", false, { rerunnable: true }).then(tell)]);
    assert.equal(results[1].status, "rejected");
    await later;
    // The rerun committed o1 and o3 before o4: lower IDs, told first, events first.
    assert.deepEqual((await snippetTitles(t.users.member.id)).filter((title) => /^o\d$/.test(title)), ["o1", "o3", "o4"]);
    assert.deepEqual(told, ["o1", "o3", "o4"]);
    assert.deepEqual(t.eventsFor(t.users.member.id, "test_write").map((e) => e.title), ["o1", "o3", "o4"]);
  });

  test("writes leading with a shared write: one run for the batch on PostgreSQL, before the bodies; a failure runs each alone", async () => {
    t.clearEvents();
    // One INSERT for all the titles it is given; a title "bad" makes the whole statement fail.
    const runs: string[][] = [];
    const insertTitles: SharedWrite<string, number> = {
      async run(trx, titles) {
        runs.push([...titles]);
        if (titles.includes("bad")) throw new ApiError(400, "BAD_REQUEST", "refused bad");
        const rows = await trx
          .insertInto("saved_snippets")
          .values(titles.map((title) => ({ realm_id: t.realm.id, user_id: t.users.member.id, title, content: "x", date_created: 0 })))
          .returning("id")
          .execute();
        return rows.map((r) => r.id);
      },
    };
    const bodies: string[] = [];
    const write = (title: string) =>
      inRealmTransaction(
        t.services,
        t.realm.id,
        async (_trx, pending, id: number) => {
          bodies.push(title);
          pending.add(t.realm.id, { type: "test_write", title }, [t.users.member.id]);
          return { title, id };
        },
        { rerunnable: true, lead: { write: insertTitles, params: title } },
      );
    const together = await Promise.all([write("s1"), write("s2"), write("s3")]);
    assert.deepEqual(
      together.map((r) => r.title),
      ["s1", "s2", "s3"],
    );
    // Each body got its own row's ID, drawn in the batch's order.
    const stored = await t.services.storage.db.selectFrom("saved_snippets").select(["id", "title"]).where("title", "in", ["s1", "s2", "s3"]).orderBy("id").execute();
    assert.deepEqual(together, stored.map((r) => ({ title: r.title, id: r.id })));
    // SQLite runs each write in its savepoint, its lead alone; PostgreSQL runs the batch together, the lead once.
    assert.deepEqual(runs, PG_URL ? [["s1", "s2", "s3"]] : [["s1"], ["s2"], ["s3"]]);
    assert.deepEqual(bodies, ["s1", "s2", "s3"]);

    runs.length = 0;
    bodies.length = 0;
    t.clearEvents();
    const results = await Promise.allSettled([write("t1"), write("bad"), write("t3")]);
    assert.equal(results[0].status, "fulfilled");
    assert.equal(results[1].status, "rejected");
    assert.match(((results[1] as PromiseRejectedResult).reason as Error).message, /refused bad/);
    assert.equal(results[2].status, "fulfilled");
    // The shared run failed, so no body ran in that attempt; then each ran alone, the failing one undone alone.
    assert.deepEqual(runs, PG_URL ? [["t1", "bad", "t3"], ["t1"], ["bad"], ["t3"]] : [["t1"], ["bad"], ["t3"]]);
    assert.deepEqual(bodies, ["t1", "t3"]);
    assert.deepEqual((await snippetTitles(t.users.member.id)).filter((title) => /^(t\d|bad)$/.test(title)), ["t1", "t3"]);
    assert.deepEqual(t.eventsFor(t.users.member.id, "test_write").map((e) => e.title), ["t1", "t3"]);
  });

  test("a transaction that cannot begin fails the writes waiting for it, and the next ones go on", { timeout: 10_000 }, async () => {
    const storage = t.services.storage;
    const original = storage.db;
    // BEGIN (or a connection, or the lock) refused: the transaction fails before it takes its writes.
    storage.db = new Proxy(original, {
      get: (target, property) =>
        property === "transaction"
          ? () => ({ execute: () => new Promise((_resolve, reject) => setImmediate(() => reject(new Error("cannot begin")))) })
          : Reflect.get(target, property, target),
    });
    let results: PromiseSettledResult<string>[];
    try {
      results = await Promise.allSettled([writeSnippet("b1"), writeSnippet("b2", false, { rerunnable: true })]);
    } finally {
      storage.db = original;
    }
    assert.deepEqual(
      results.map((r) => r.status === "rejected" && (r.reason as Error).message),
      ["cannot begin", "cannot begin"],
    );
    assert.equal(await writeSnippet("b3"), "b3");
    assert.deepEqual((await snippetTitles(t.users.member.id)).filter((title) => /^b\d$/.test(title)), ["b3"]);
  });

  test("a commit that fails fails every write of the batch, and nothing is kept", async () => {
    const db = t.services.storage.db;
    // A check that only runs at commit time, so every statement succeeds and the COMMIT is refused.
    if (PG_URL) {
      await sql`CREATE FUNCTION refuse_commit() RETURNS trigger AS $$ BEGIN IF NEW.title = 'poison' THEN RAISE EXCEPTION 'commit refused'; END IF; RETURN NULL; END $$ LANGUAGE plpgsql`.execute(db);
      await sql`CREATE CONSTRAINT TRIGGER refuse_commit AFTER INSERT ON saved_snippets DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_commit()`.execute(db);
    }
    t.clearEvents();
    const poison = inRealmTransaction(t.services, t.realm.id, async (trx, pending) => {
      if (PG_URL) {
        await trx.insertInto("saved_snippets").values({ realm_id: t.realm.id, user_id: t.users.member.id, title: "poison", content: "x", date_created: 0 }).execute();
      } else {
        // A foreign key checked at commit: the row points at no user.
        await sql`PRAGMA defer_foreign_keys = ON`.execute(trx);
        await trx.insertInto("saved_snippets").values({ realm_id: t.realm.id, user_id: 999_999, title: "poison", content: "x", date_created: 0 }).execute();
      }
      pending.add(t.realm.id, { type: "test_write", title: "poison" }, [t.users.member.id]);
    });
    const results = await Promise.allSettled([writeSnippet("innocent"), poison]);
    if (PG_URL) {
      await sql`DROP TRIGGER refuse_commit ON saved_snippets`.execute(db);
      await sql`DROP FUNCTION refuse_commit()`.execute(db);
    }
    assert.equal(results[0].status, "rejected", "the other write was not committed, so it must not report success");
    assert.equal(results[1].status, "rejected");
    assert.equal((await db.selectFrom("saved_snippets").select("id").where("title", "in", ["innocent", "poison"]).execute()).length, 0);
    assert.equal(t.eventsFor(t.users.member.id, "test_write").length, 0);
    // The organization's writes go on.
    assert.equal(await writeSnippet("afterwards"), "afterwards");
  });

  test("concurrent sends through HTTP are batched, each gets its own ID, event and reply", async () => {
    t.clearEvents();
    const before = groupCommitStats(t.services.storage);
    const senders = [t.users.owner, t.users.admin, t.users.member];
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) => t.api(senders[i % 3]!, "POST", "/messages", { type: "channel", to: channelId, topic: "batched", content: `message ${i}` })),
    );
    const after = groupCommitStats(t.services.storage);
    const ids = replies.map((r) => assertSuccess(r).id as number);
    assert.equal(new Set(ids).size, 30);
    assert.ok(after.transactions - before.transactions < 30, `30 sends took ${after.transactions - before.transactions} transactions`);
    const messageEvents = t.events.filter((n) => n.event.type === "message");
    assert.deepEqual(messageEvents.map((n) => (n.event.message as { id: number }).id).sort((a, b) => a - b), [...ids].sort((a, b) => a - b));
    const stored = await t.api(t.users.member, "GET", "/messages", { anchor: "newest", num_before: 30, num_after: 0, narrow: JSON.stringify([{ operator: "channel", operand: channelId }, { operator: "topic", operand: "batched" }]) });
    assert.deepEqual(
      assertSuccess(stored).messages.map((m: { content: string }) => m.content).sort(),
      Array.from({ length: 30 }, (_, i) => `<p>message ${i}</p>`).sort(),
    );
  });

  test("a send refused by the rules in a batch does not disturb the others", async () => {
    const replies = await Promise.all([
      t.api(t.users.owner, "POST", "/messages", { type: "channel", to: channelId, topic: "mixed", content: "ok 1" }),
      t.api(t.users.owner, "POST", "/messages", { type: "channel", to: 999_999, topic: "mixed", content: "no such channel" }),
      t.api(t.users.member, "POST", "/messages", { type: "channel", to: channelId, topic: "mixed", content: "ok 2" }),
    ]);
    assertSuccess(replies[0]!);
    assertError(replies[1]!, 400, "STREAM_DOES_NOT_EXIST", undefined, { stream_id: 999_999 });
    assertSuccess(replies[2]!);
  });
});
