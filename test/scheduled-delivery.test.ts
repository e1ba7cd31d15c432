// Reliability of scheduled delivery: what fell due while the server was down
// goes out at start-up, a crash mid-delivery neither loses nor doubles a
// message, several workers on one database send each row once, and the timer
// sends at the right second. These tests run their own server instances over
// one database, so they can stop and start them.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { createRealm } from "../src/actions/realm.ts";
import { createUser } from "../src/actions/users.ts";
import { Role } from "../src/domain/roles.ts";
import type { Notification } from "../src/events/notifier.ts";
import { openServices, startServer, type RunningServer } from "../src/server.ts";
import type { Services } from "../src/services.ts";
import { openStorage, type Storage } from "../src/storage/database.ts";
import { deliverDueMessages } from "../src/workers/scheduled-delivery.ts";
import { assertSuccess, basicAuth, encodeValue, PG_URL, testConfig, type ApiResponse, dropPgSchema } from "./helpers.ts";

/** One database that server instances can be started on, one after another or side by side. */
class SharedDatabase {
  readonly schema = `t_${crypto.randomBytes(6).toString("hex")}`;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), "parley-delivery-"));

  open(): Promise<Storage> {
    return PG_URL ? openStorage({ databaseUrl: PG_URL, pgSchema: this.schema }) : openStorage({ sqlitePath: path.join(this.dir, "parley.sqlite3") });
  }

  async drop(): Promise<void> {
    fs.rmSync(this.dir, { recursive: true, force: true });
    if (PG_URL) await dropPgSchema(this.schema);
  }
}

interface Instance {
  services: Services;
  server: RunningServer;
  events: Notification[];
}

async function startInstance(database: SharedDatabase, now: () => number): Promise<Instance> {
  const services = await openServices(testConfig({ dataDir: database.dir }), await database.open());
  services.now = now;
  const events: Notification[] = [];
  services.notifier.subscribe((n) => events.push(n));
  return { services, server: await startServer(services), events };
}

interface Sender {
  email: string;
  apiKey: string;
  id: number;
}

async function call(instance: Instance, user: Sender, method: string, urlPath: string, params: Record<string, unknown> = {}): Promise<ApiResponse> {
  const body = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, encodeValue(v)])).toString();
  const response = await fetch(`${instance.server.url}/api/v1${urlPath}`, {
    method,
    headers: { authorization: basicAuth(user.email, user.apiKey), "content-type": "application/x-www-form-urlencoded" },
    body: method === "GET" ? undefined : body,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Creates the organization and two users on a fresh database. */
async function setUp(database: SharedDatabase, now: () => number): Promise<{ alice: Sender; bob: Sender }> {
  const services = await openServices(testConfig({ dataDir: database.dir }), await database.open());
  services.now = now;
  try {
    const { realm } = await createRealm(services, { name: "Delivery Org", ownerEmail: "owner@example.com", ownerPassword: "owner-password", ownerFullName: "Olive Owner" });
    const make = async (name: string) => {
      const user = await createUser(services, realm, null, { email: `${name.toLowerCase()}@example.com`, fullName: name, password: `${name}-password`, role: Role.MEMBER, isBot: false });
      return { email: user.delivery_email, apiKey: user.api_key, id: user.id };
    };
    return { alice: await make("Alice"), bob: await make("Bob") };
  } finally {
    await services.storage.close();
  }
}

async function messagesWithContent(storage: Storage, content: string): Promise<{ id: number; sender_id: number }[]> {
  return storage.db.selectFrom("messages").select(["id", "sender_id"]).where("content", "=", content).orderBy("id").execute();
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("scheduled delivery across restarts", () => {
  const database = new SharedDatabase();
  const T0 = 2_000_000_000;
  let users: { alice: Sender; bob: Sender };
  before(async () => {
    users = await setUp(database, () => T0);
  });
  after(() => database.drop());

  test("a message that fell due while the server was down is sent once at start-up, and not again after the next restart", async () => {
    const first = await startInstance(database, () => T0);
    const scheduled = assertSuccess(
      await call(first, users.alice, "POST", "/scheduled_messages", { type: "direct", to: [users.bob.id], content: "sent after downtime", scheduled_delivery_timestamp: T0 + 60 }),
    );
    await first.server.close();

    // Down for an hour: at start-up the worker sends what is due.
    const second = await startInstance(database, () => T0 + 3600);
    await waitFor(async () => (await messagesWithContent(second.services.storage, "sent after downtime")).length > 0, 5000);
    const sent = await messagesWithContent(second.services.storage, "sent after downtime");
    assert.equal(sent.length, 1);
    assert.equal(sent[0]!.sender_id, users.alice.id);
    const row = await second.services.storage.db.selectFrom("scheduled_messages").selectAll().where("id", "=", scheduled.scheduled_message_id).executeTakeFirstOrThrow();
    assert.equal(row.delivered, true);
    assert.equal(row.failed, false);
    assert.equal(row.delivered_message_id, sent[0]!.id);
    // Bob's queues heard of it.
    assert.ok(second.events.some((n) => n.event.type === "message" && n.userIds.includes(users.bob.id)));
    assert.deepEqual(assertSuccess(await call(second, users.alice, "GET", "/scheduled_messages")).scheduled_messages, []);
    await second.server.close();

    const third = await startInstance(database, () => T0 + 7200);
    await deliverDueMessages(third.services);
    assert.equal((await messagesWithContent(third.services.storage, "sent after downtime")).length, 1);
    assert.equal(third.events.filter((n) => n.event.type === "message").length, 0);
    await third.server.close();
  });

  test("a message not yet due at shutdown is neither sent early nor lost", async () => {
    const first = await startInstance(database, () => T0);
    assertSuccess(await call(first, users.alice, "POST", "/scheduled_messages", { type: "direct", to: [users.bob.id], content: "not yet", scheduled_delivery_timestamp: T0 + 10_000 }));
    await first.server.close();

    const early = await startInstance(database, () => T0 + 9_999);
    await deliverDueMessages(early.services);
    assert.equal((await messagesWithContent(early.services.storage, "not yet")).length, 0);
    assert.equal(assertSuccess(await call(early, users.alice, "GET", "/scheduled_messages")).scheduled_messages.length, 1);
    await early.server.close();

    const due = await startInstance(database, () => T0 + 10_000);
    await waitFor(async () => (await messagesWithContent(due.services.storage, "not yet")).length > 0, 5000);
    await deliverDueMessages(due.services);
    assert.equal((await messagesWithContent(due.services.storage, "not yet")).length, 1);
    await due.server.close();
  });

  test("a delivery that dies before its commit leaves no message and the row pending; the next run sends it once", async () => {
    const instance = await startInstance(database, () => T0);
    const scheduled = assertSuccess(
      await call(instance, users.alice, "POST", "/scheduled_messages", { type: "direct", to: [users.bob.id], content: "survives a crash", scheduled_delivery_timestamp: T0 + 30 }),
    );
    // The crash: any write to scheduled_messages fails, so the transaction that
    // already inserted the message cannot commit (nor can the failure be recorded).
    const db = instance.services.storage.db;
    if (PG_URL) {
      await sql`CREATE FUNCTION refuse_write() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'simulated crash'; END $$ LANGUAGE plpgsql`.execute(db);
      await sql`CREATE TRIGGER crash BEFORE UPDATE ON scheduled_messages FOR EACH ROW EXECUTE FUNCTION refuse_write()`.execute(db);
    } else {
      await sql`CREATE TRIGGER crash BEFORE UPDATE ON scheduled_messages BEGIN SELECT RAISE(ABORT, 'simulated crash'); END`.execute(db);
    }
    instance.services.now = () => T0 + 31;
    await assert.rejects(deliverDueMessages(instance.services), /simulated crash/);
    assert.equal((await messagesWithContent(instance.services.storage, "survives a crash")).length, 0);
    const pending = await db.selectFrom("scheduled_messages").selectAll().where("id", "=", scheduled.scheduled_message_id).executeTakeFirstOrThrow();
    assert.equal(pending.delivered, false);
    assert.equal(pending.failed, false);
    assert.equal(instance.events.filter((n) => n.event.type === "message").length, 0);

    // The job is kept for a retry, with its error, after a backoff.
    const job = await db.selectFrom("jobs").selectAll().where("name", "=", "scheduled_message").executeTakeFirstOrThrow();
    assert.equal(job.status, "queued");
    assert.equal(job.attempts, 1);
    assert.match(job.last_error ?? "", /simulated crash/);
    assert.ok(Number(job.run_at) > (T0 + 31) * 1000);
    await deliverDueMessages(instance.services);
    assert.equal((await messagesWithContent(instance.services.storage, "survives a crash")).length, 0, "retried before its backoff");

    await sql`DROP TRIGGER crash${PG_URL ? sql` ON scheduled_messages` : sql``}`.execute(db);
    if (PG_URL) await sql`DROP FUNCTION refuse_write()`.execute(db);
    instance.services.now = () => T0 + 60;
    await deliverDueMessages(instance.services);
    await deliverDueMessages(instance.services);
    assert.equal((await messagesWithContent(instance.services.storage, "survives a crash")).length, 1);
    await instance.server.close();
  });
});

describe("several workers on one database", () => {
  const database = new SharedDatabase();
  const T0 = 2_000_000_000;
  let users: { alice: Sender; bob: Sender };
  before(async () => {
    users = await setUp(database, () => T0);
  });
  after(() => database.drop());

  test("workers racing over the same due rows send each exactly once", async () => {
    const a = await startInstance(database, () => T0);
    const count = 20;
    for (let i = 0; i < count; i++) {
      assertSuccess(await call(a, users.alice, "POST", "/scheduled_messages", { type: "direct", to: [users.bob.id], content: `race ${i}`, scheduled_delivery_timestamp: T0 + 5 }));
    }
    // On PostgreSQL a second process (its own connection pool); on SQLite, whose
    // server is one process, concurrent runs inside it.
    const b = PG_URL ? await startInstance(database, () => T0) : a;
    a.services.now = () => T0 + 5;
    b.services.now = () => T0 + 5;
    const reports = await Promise.all([deliverDueMessages(a.services), deliverDueMessages(b.services), deliverDueMessages(a.services), deliverDueMessages(b.services)]);
    // The background timers may have taken some; between all of them, each row went once.
    assert.ok(reports.every((r) => r.failed === 0), JSON.stringify(reports));
    for (let i = 0; i < count; i++) assert.equal((await messagesWithContent(a.services.storage, `race ${i}`)).length, 1, `race ${i}`);
    const rows = await a.services.storage.db.selectFrom("scheduled_messages").select(["delivered", "failed"]).execute();
    assert.equal(rows.length, count);
    assert.ok(rows.every((r) => r.delivered && !r.failed));
    const messageEvents = [...a.events, ...(b === a ? [] : b.events)].filter((n) => n.event.type === "message");
    assert.equal(messageEvents.length, count);
    if (b !== a) await b.server.close();
    await a.server.close();
  });
});

describe("the delivery timer", () => {
  const database = new SharedDatabase();
  let users: { alice: Sender; bob: Sender };
  before(async () => {
    users = await setUp(database, () => Math.floor(Date.now() / 1000));
  });
  after(() => database.drop());

  test("sends a message within the second it falls due, on the real clock", async () => {
    const instance = await startInstance(database, () => Math.floor(Date.now() / 1000));
    const due = Math.floor(Date.now() / 1000) + 2;
    assertSuccess(await call(instance, users.alice, "POST", "/scheduled_messages", { type: "direct", to: [users.bob.id], content: "on time", scheduled_delivery_timestamp: due }));
    await waitFor(async () => instance.events.some((n) => n.event.type === "message"), 5000);
    const arrived = Date.now() / 1000;
    assert.ok(arrived >= due, `sent early: ${arrived} < ${due}`);
    // The timer wakes at each second's start; the margin absorbs a loaded CI machine's event-loop delays.
    assert.ok(arrived < due + 2.5, `sent late: ${arrived} vs ${due}`);
    assert.equal((await messagesWithContent(instance.services.storage, "on time")).length, 1);
    await instance.server.close();
  });
});
