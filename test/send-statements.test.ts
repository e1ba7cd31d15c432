// What a send costs in statements, counted (deterministic, unlike its time,
// which bench:messages measures): a plain message to a 10-subscriber channel,
// in a topic the sender has written in, runs a fixed list of statements on
// each database. A feature that adds work to every send (a lookup for
// something this message does not use) changes the list and fails here;
// bench/RESULTS.md accounts for each statement.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
  sql,
} from "kysely";
import { waitingWrites } from "../src/actions/transaction.ts";
import { lockRealm } from "../src/storage/database.ts";
import { missedMessageEmailJobKey } from "../src/jobs/names.ts";
import { preparedQuery } from "../src/storage/compiled.ts";
import { Role } from "../src/domain/roles.ts";
import { assertSuccess, PG_URL, startJobRunner, startTestApp, type TestApp } from "./helpers.ts";
import { statementsRun, warmRowCache } from "./statement-log.ts";

let t: TestApp;
let channelId: number;

before(async () => {
  t = await startTestApp();
  const members = [t.users.member, t.users.admin, t.users.owner, t.users.moderator];
  for (let i = 0; i < 6; i++) members.push(await t.createUser(`Reader ${i}`, Role.MEMBER));
  assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "costs" }], principals: members.map((m) => m.id) }));
  channelId = assertSuccess(await t.api(t.users.owner, "GET", "/get_stream_id", { stream: "costs" })).stream_id;
  // The sender has written in the topic before: no topic is started, nobody is followed anew.
  assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "steady", content: "first" }));
  // Authentication's organization and user, the channel and its subscribers come from the process's row cache from now on.
  await warmRowCache(t.services.storage, async () => assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "steady", content: "warm" })));
});
after(() => t?.close());

const firstIdentifier = (node: unknown) => /"kind":"IdentifierNode","name":"(\w+)"/.exec(JSON.stringify(node))?.[1] ?? "?";

/** A statement's query tree as "<kind> <first table>" (raw SQL by its first words), the names of its common table expressions first. */
function describeStatement(root: RootOperationNode): string {
  const node = root as unknown as { kind: string; sqlFragments?: string[]; with?: { expressions: { name: unknown }[] } };
  if (node.kind === "RawNode") return `raw ${(node.sqlFragments ?? []).join("?").trim().split(/\s+/).slice(0, 3).join(" ")}`;
  const statement = `${node.kind.replace(/QueryNode$/, "").toLowerCase()} ${firstIdentifier({ ...node, with: undefined })}`;
  return node.with ? `with ${node.with.expressions.map((e) => firstIdentifier(e.name)).join(", ")}: ${statement}` : statement;
}

/** The statements whose query tree was built and compiled (prepared ones, storage/compiled.ts, are run without). */
class StatementLog implements KyselyPlugin {
  readonly compiled: string[] = [];
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.compiled.push(describeStatement(args.node));
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/** The statements `action` runs on the app's database (described), and those compiled for the occasion. */
async function logged(action: () => Promise<unknown>): Promise<{ statements: string[]; compiled: string[] }> {
  const log = new StatementLog();
  const run = await statementsRun(t.services.storage, action, log);
  return { statements: run.map((query) => describeStatement(query.query)), compiled: log.compiled };
}

/**
 * The request's own statements: the job runner is stopped meanwhile, so a job
 * the send queued (a link preview, a push) does not run inside the window.
 */
async function statementsOf(send: () => Promise<unknown>): Promise<string[]> {
  await t.services.jobs!.stop();
  try {
    return (await logged(send)).statements;
  } finally {
    t.services.jobs = startJobRunner(t.services);
  }
}

describe("prepared queries (storage/compiled.ts)", () => {
  test("compiled on first use, then run from the kept SQL with new values; results pass the database's plugins", async () => {
    const query = preparedQuery((db, a: { channelId: number; userId: number }) =>
      db.selectFrom("subscriptions").select(["user_id", "active"]).where("channel_id", "=", a.channelId).where("user_id", "=", a.userId),
    );
    const ids = [t.users.member.id, t.users.admin.id, t.users.owner.id];
    const runs: unknown[] = [];
    const log = await logged(async () => {
      for (const userId of ids) runs.push(await query.executeTakeFirst(t.services.storage.db, { channelId, userId }));
    });
    assert.deepEqual(log.statements, ["select subscriptions", "select subscriptions", "select subscriptions"]);
    assert.deepEqual(log.compiled, ["select subscriptions"]);
    // The values of each call, and SQLite's 1 read back as true as for any statement.
    assert.deepEqual(runs, ids.map((id) => ({ user_id: id, active: true })));
    // Inside a transaction too, without compiling again.
    const inTransaction = await logged(() => t.services.storage.db.transaction().execute((trx) => query.execute(trx, { channelId, userId: t.users.member.id })));
    assert.deepEqual(inTransaction.compiled, []);
    assert.ok(inTransaction.statements.includes("select subscriptions"));
  });

  test("PostgreSQL: run as statements each connection prepares once; a changed result type gets a new name", { skip: !PG_URL && "PostgreSQL only" }, async () => {
    const db = t.services.storage.db;
    await sql`CREATE TABLE named_probe (id integer, v integer)`.execute(db);
    try {
      await sql`INSERT INTO named_probe VALUES (1, 10), (2, 20)`.execute(db);
      const value = preparedQuery((_db, a: { id: number }) => sql<{ v: number }>`SELECT v FROM named_probe WHERE id = ${a.id}`);
      // Its columns from `*`: a column added would change its result type, so it is not named.
      const star = preparedQuery((_db, a: { id: number }) => sql<Record<string, unknown>>`SELECT * FROM named_probe WHERE id = ${a.id}`);
      const count = preparedQuery((_db, a: { ids: number[] }) => sql<{ n: number }>`SELECT count(*)::int AS n FROM named_probe WHERE id = ANY(${a.ids}::integer[])`, {
        namedUpToArrayLength: 100,
      });
      const firstUse = preparedQuery((_db, a: { id: number }) => sql<{ v: number }>`SELECT v + 0 AS v FROM named_probe WHERE id = ${a.id}`);
      const prepared = (conn: typeof db) =>
        sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%named_probe%'`.execute(conn).then((r) => r.rows.map((row) => row.statement).sort());
      const VALUE = "SELECT v FROM named_probe WHERE id = $1";
      const COUNT = "SELECT count(*)::int AS n FROM named_probe WHERE id = ANY($1::integer[])";
      const FIRST = "SELECT v + 0 AS v FROM named_probe WHERE id = $1";
      await db.connection().execute(async (conn) => {
        assert.deepEqual(await value.executeTakeFirst(conn, { id: 1 }), { v: 10 });
        assert.deepEqual(await value.executeTakeFirst(conn, { id: 2 }), { v: 20 });
        assert.deepEqual(await star.executeTakeFirst(conn, { id: 2 }), { id: 2, v: 20 });
        // A statement that asked for it: an array longer than 100 runs unnamed (its plan depends on the length); a short one named.
        assert.deepEqual(await count.executeTakeFirst(conn, { ids: Array.from({ length: 101 }, (_, i) => i) }), { n: 2 });
        // Prepared once on this connection, under a name; the `*` one not at all.
        assert.deepEqual(await prepared(conn), [VALUE]);
        assert.deepEqual(await count.executeTakeFirst(conn, { ids: [1, 2, 3] }), { n: 2 });
        assert.deepEqual(await prepared(conn), [COUNT, VALUE]);
        // A value node-postgres cannot send fails before anything is sent, whether the statement is prepared on this connection or not.
        const unsendable = { toPostgres: () => { throw new Error("cannot be sent"); } } as unknown as number;
        await assert.rejects(value.executeTakeFirst(conn, { id: unsendable }), /cannot be sent/);
        assert.deepEqual(await value.executeTakeFirst(conn, { id: 2 }), { v: 20 });
        await assert.rejects(firstUse.executeTakeFirst(conn, { id: unsendable }), /cannot be sent/);
        assert.deepEqual(await firstUse.executeTakeFirst(conn, { id: 2 }), { v: 20 });

        // Outside a transaction a changed result type is run again under a new name: the caller sees no error.
        await sql`ALTER TABLE named_probe ALTER COLUMN v TYPE bigint, ADD COLUMN w integer`.execute(conn);
        assert.deepEqual(await value.executeTakeFirst(conn, { id: 1 }), { v: 10 });
        assert.deepEqual(await star.executeTakeFirst(conn, { id: 1 }), { id: 1, v: 10, w: null });
        assert.deepEqual(await prepared(conn), [COUNT, FIRST, VALUE, VALUE]);
        // Inside one that call fails (the transaction is aborted); the next runs under the next name.
        await sql`ALTER TABLE named_probe ALTER COLUMN v TYPE integer`.execute(conn);
        await sql`BEGIN`.execute(conn);
        await assert.rejects(value.executeTakeFirst(conn, { id: 1 }), /cached plan must not change result type/);
        await sql`ROLLBACK`.execute(conn);
        assert.deepEqual(await value.executeTakeFirst(conn, { id: 1 }), { v: 10 });
        assert.deepEqual(await prepared(conn), [COUNT, FIRST, VALUE, VALUE, VALUE]);
      });
      // Another connection of the pool prepares the newest name at once: no failure there.
      await db.transaction().execute(async (trx) => assert.deepEqual(await value.executeTakeFirst(trx, { id: 2 }), { v: 20 }));
    } finally {
      await sql`DROP TABLE named_probe`.execute(db);
    }
  });
});

/** PostgreSQL's one statement for a message: the message, its flags rows, and the missed-message emails it owes. */
const SEND_POSTGRES = "with input, ids, m, f, owed, batched, recorded, queued, email_jobs: select ids";

describe("POST /messages: statements per send", () => {
  /** The statements that write the message: the organization's lock, then the message. */
  const durable = (): string[] => (t.services.storage.dialect === "postgres" ? ["select realms", SEND_POSTGRES] : ["insert messages", "raw INSERT INTO user_messages"]);

  test("a plain message to a 10-subscriber channel: the same fixed list every time", async () => {
    const send = () => t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "steady", content: "just **text**" }).then(assertSuccess);
    const first = await statementsOf(send);
    const expected = [
      // Authentication's organization and user: from the process's row cache (storage/row-cache.ts), no statement.
      // The groups the sender is in (may they post here), the channel and its active subscribers: from the
      // row cache too (dropped by any committed change to users, the group membership tables, channels or
      // subscriptions, in any process).
      // The recipients' alert words, who muted the sender, and the sender's own channel mute and topic
      // policy (automatic follow on sending): one statement of four indexed look-ups (queries/send-facts.ts).
      "raw SELECT 1 AS",
      // Who follows the topic or asked for the channel's emails (missed-message emails), found on two
      // partial indexes, with the facts an email decision needs about them (none here): one statement,
      // read before the organization's lock.
      "raw SELECT u.id, u.settings,",
      // The organization's lock (PostgreSQL: SELECT … FOR UPDATE; SQLite's one writer needs none), then
      // the durable part: the message and its flags (one multi-row insert). On PostgreSQL one statement
      // with the missed-message emails it owes (none here): one round trip while the lock is held.
      ...durable(),
    ];
    assert.deepEqual(first, expected);
    // Nothing is cached away on the second send, nor added.
    const second = await logged(send);
    assert.deepEqual(second.statements, expected);
    // Compiled once (issue 28): every statement runs from SQL text kept since its first use, without
    // building its query tree (the recipients' IDs travel as one array or JSON text).
    assert.deepEqual(second.compiled, []);
  });

  test("a mention adds no read (the listeners' statement reads the mentioned person too), and on PostgreSQL no statement", async () => {
    const statements = await statementsOf(() =>
      t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "steady", content: "@**Adam Admin** look" }).then(assertSuccess),
    );
    // Adam has no client open, so he is owed a missed-message email, decided before the organization's
    // lock from the statement that finds the topic's listeners: it reads his settings, presence,
    // subscription and topic policy too, for the automatic follow and the email alike. The email's
    // writes (his pending batch, the row, and his email job unless one is queued: the Notification
    // Bot's message about his subscription queued it) are part of the message's statement on
    // PostgreSQL, and in-process statements of their own on SQLite.
    const write = statements.slice(statements.indexOf("raw SELECT u.id, u.settings,") + 1);
    const emailOwed = t.services.storage.dialect === "postgres" ? [] : ["select missed_message_emails", "insert missed_message_emails", "select jobs"];
    // Adam follows the topic now: his topic row (read, written), and his muted topics for the legacy event.
    assert.deepEqual(write, [...durable(), ...emailOwed, "select user_topics", "insert user_topics", "select user_topics"]);
    // Once he follows it, a second mention writes the message and the email only.
    const again = await statementsOf(() =>
      t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "steady", content: "@**Adam Admin** again" }).then(assertSuccess),
    );
    assert.deepEqual(again.slice(again.indexOf("raw SELECT u.id, u.settings,") + 1), [...durable(), ...emailOwed]);
  });

  test("a mention of someone with a client open: the shared statement finds them active, and no email statement runs", async () => {
    const online = await t.createUser("Olive Online");
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "costs" }], principals: [online.id] }));
    await t.register(online);
    assertSuccess(await t.api(online, "POST", "/users/me/presence", { status: "active" }));
    // A topic Adam does not follow, so Olive is the only one who may be owed an email. What follows the
    // facts is the message and the topic's automatic follows only.
    const statements = await statementsOf(() =>
      t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "elsewhere", content: "@**Olive Online** here?" }).then(assertSuccess),
    );
    const follows = ["select user_topics", "insert user_topics", "select user_topics"];
    // The sender starts the topic and follows it (their own automatic policy), then Olive follows it.
    assert.deepEqual(statements.slice(statements.indexOf("raw SELECT u.id, u.settings,") + 1), [...durable(), ...follows, ...follows]);
  });

  // SQLite's one connection cannot be held elsewhere while the sends read; it writes each send's message on its own anyway.
  test("PostgreSQL: sends that share a transaction are written by one statement, their messages, flags rows and emails, IDs in the batch's order", { skip: !PG_URL && "PostgreSQL only" }, async () => {
    const mona = await t.createUser("Mona Missed");
    assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: "costs" }], principals: [mona.id] }));
    const db = t.services.storage.db;
    const contents = ["@**Mona Missed** one", "two", "@**Mona Missed** three", "four"];
    // The Notification Bot's message about her subscription started a batch of emails for her: gone, so
    // that this statement starts her batch and queues her job.
    await db.deleteFrom("missed_message_emails").where("user_id", "=", mona.id).execute();
    await db.deleteFrom("jobs").where("job_key", "=", missedMessageEmailJobKey(mona.id)).execute();
    await t.services.jobs!.stop();
    try {
      t.clearEvents();
      let replies!: Promise<number[]>;
      // The organization's lock held elsewhere, so the four sends wait for one transaction and share it.
      const run = await statementsRun(t.services.storage, async () => {
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        const holder = db.transaction().execute(async (trx) => {
          await lockRealm(trx, t.services.storage.dialect, t.realm.id);
          await released;
        });
        replies = Promise.all(
          contents.map((content) => t.api(t.users.member, "POST", "/messages", { type: "stream", to: channelId, topic: "together", content }).then((r) => assertSuccess(r).id as number)),
        );
        for (let polls = 0; waitingWrites(t.services.storage, t.realm.id) < contents.length; polls += 1) {
          assert.ok(polls < 500, `only ${waitingWrites(t.services.storage, t.realm.id)} sends came to wait`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        release();
        await holder;
        await replies;
      });
      const ids = await replies;
      const writes = run.map((q) => describeStatement(q.query)).filter((d) => d === SEND_POSTGRES || d === "insert messages");
      assert.deepEqual(writes, [SEND_POSTGRES]);
      // IDs drawn in the order the batch took the sends, which is the order their events go out in.
      const events = t.events.filter((n) => n.event.type === "message").map((n) => n.event.message as { id: number; content: string });
      assert.deepEqual(events.map((m) => m.id), [...ids].sort((a, b) => a - b));
      const byId = new Map(events.map((m) => [m.id, m.content]));
      assert.deepEqual(ids.map((id) => byId.get(id)!.replace(/<[^>]+>/g, "")), ["@Mona Missed one", "two", "@Mona Missed three", "four"]);
      // Each message's flags rows are its own: Mona is mentioned in the first and third only.
      const monaRows = await db.selectFrom("user_messages").select(["message_id", "flags"]).where("user_id", "=", mona.id).where("message_id", "in", ids).orderBy("message_id").execute();
      assert.deepEqual(
        monaRows.map((r) => [r.message_id, (Number(r.flags) & 8) !== 0]),
        [...ids].sort((a, b) => a - b).map((id) => [id, id === ids[0] || id === ids[2]]),
      );
      const subscribers = await db.selectFrom("user_messages").select((eb) => eb.fn.countAll<number>().as("n")).where("message_id", "in", ids).groupBy("message_id").execute();
      assert.deepEqual(subscribers.map((r) => Number(r.n)), [12, 12, 12, 12]);
      // Mona is owed an email for each mention: one batch, started by the first of them, and one job.
      const owed = await db.selectFrom("missed_message_emails").select(["message_id", "scheduled_at"]).where("user_id", "=", mona.id).orderBy("message_id").execute();
      assert.deepEqual(owed.map((r) => r.message_id), [ids[0]!, ids[2]!].sort((a, b) => a - b));
      assert.equal(Number(owed[0]!.scheduled_at), Number(owed[1]!.scheduled_at));
      const jobs = await db.selectFrom("jobs").select("run_at").where("job_key", "=", missedMessageEmailJobKey(mona.id)).where("status", "=", "queued").execute();
      assert.equal(jobs.length, 1);
      assert.equal(Number(jobs[0]!.run_at), Number(owed[0]!.scheduled_at));
    } finally {
      t.services.jobs = startJobRunner(t.services);
    }
  });
});
