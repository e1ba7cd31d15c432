// GET /health for load balancers (Zulip's /health): the database answers,
// Redis answers when configured, the migrations are this code's; 200 with
// each check's state, or 503 SERVER_NOT_READY naming what failed. Runs on
// SQLite, PostgreSQL, or PostgreSQL with Redis, as the environment says.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { openServices, startServer, type RunningServer } from "../src/server.ts";
import { startTestApp, type TestApp } from "./helpers.ts";

interface HealthReply {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

async function health(url: string, init: RequestInit = {}): Promise<HealthReply> {
  const response = await fetch(`${url}/health`, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) };
}

/** A TCP port on this machine that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A second server process on `t`'s database (which it does not close), with config overrides. */
async function secondServer(t: TestApp, overrides: Partial<TestApp["services"]["config"]> = {}): Promise<RunningServer> {
  const services = await openServices({ ...t.services.config, ...overrides }, { ...t.services.storage, close: async () => {} });
  return startServer(services);
}

describe("GET /health", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp({ rateLimiting: true });
  });
  after(() => t.close());

  test("healthy: 200 with each check's state; Redis is checked only when configured", async () => {
    const reply = await health(t.url);
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.deepEqual(reply.body, {
      result: "success",
      msg: "",
      database: "ok",
      redis: t.services.config.redisUrl === undefined ? "not configured" : "ok",
      migrations: "current",
    });
    assert.equal(reply.headers.get("cache-control"), "no-store");
    assert.match(reply.headers.get("content-type") ?? "", /^application\/json/);
  });

  test("no credentials needed, never rate limited (150 checks from one address, whose limit is 100 calls a minute)", async () => {
    for (let i = 0; i < 150; i++) {
      const reply = await health(t.url);
      assert.equal(reply.status, 200, `check ${i}: ${JSON.stringify(reply.body)}`);
      assert.equal(reply.headers.get("x-ratelimit-limit"), null);
    }
    // The address's budget is untouched.
    const settings = await fetch(`${t.url}/api/v1/server_settings`);
    assert.equal(settings.status, 200);
    assert.equal(settings.headers.get("x-ratelimit-remaining"), "99");
  });

  test("HEAD answers like GET without a body; other methods get the 405 with Allow", async () => {
    const head = await fetch(`${t.url}/health`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    const post = await health(t.url, { method: "POST" });
    assert.equal(post.status, 405);
    assert.equal(post.body.code, "METHOD_NOT_ALLOWED");
    assert.equal(post.headers.get("allow"), "GET, HEAD");
  });

  test("migrations behind the code (a migration row missing): 503 SERVER_NOT_READY; ahead (a newer release migrated): still healthy", async () => {
    const db = t.services.storage.db;
    const last = await sql<{ name: string; timestamp: string }>`SELECT name, timestamp FROM kysely_migration ORDER BY name DESC LIMIT 1`.execute(db);
    const row = last.rows[0]!;
    await sql`DELETE FROM kysely_migration WHERE name = ${row.name}`.execute(db);
    try {
      const behind = await health(t.url);
      assert.equal(behind.status, 503, JSON.stringify(behind.body));
      assert.deepEqual(behind.body, {
        result: "error",
        msg: "Database migrations are not current",
        code: "SERVER_NOT_READY",
        database: "ok",
        redis: t.services.config.redisUrl === undefined ? "not configured" : "ok",
        migrations: "behind",
      });
    } finally {
      await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${row.name}, ${row.timestamp})`.execute(db);
    }
    assert.equal((await health(t.url)).status, 200);

    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES (${"9999_from_a_newer_release"}, ${row.timestamp})`.execute(db);
    try {
      const ahead = await health(t.url);
      assert.equal(ahead.status, 200, JSON.stringify(ahead.body));
      assert.equal(ahead.body.migrations, "ahead");
    } finally {
      await sql`DELETE FROM kysely_migration WHERE name = ${"9999_from_a_newer_release"}`.execute(db);
    }
    assert.equal((await health(t.url)).body.migrations, "current");
  });

  test("draining (SIGTERM): 503 SERVER_NOT_READY at once, whatever the checks would say", async () => {
    const second = await secondServer(t);
    try {
      assert.equal((await health(second.url)).status, 200);
      // The drain's first step (app.ts's preClose hook): the event queues close and waiting polls are answered.
      second.services.queues.close();
      const reply = await health(second.url);
      assert.equal(reply.status, 503, JSON.stringify(reply.body));
      assert.equal(reply.headers.get("cache-control"), "no-store");
      assert.deepEqual(reply.body, { result: "error", msg: "The server is shutting down", code: "SERVER_NOT_READY", shutting_down: true });
    } finally {
      await second.close();
    }
  });

  test("draining: a request that was arriving when the drain began is served and closes its connection; GET /health so arriving answers 503", async () => {
    const second = await secondServer(t);
    const member = t.users.member!;
    const auth = Buffer.from(`${member.email}:${member.apiKey}`).toString("base64");
    // Each request's headers are sent but for their last line: the connection is busy, not idle, so the drain does not drop it.
    const arriving = await Promise.all(
      [`GET /health HTTP/1.1\r\nHost: parley\r\n`, `GET /api/v1/users/me HTTP/1.1\r\nHost: parley\r\nAuthorization: Basic ${auth}\r\n`].map(async (head) => {
        const socket = net.connect(new URL(second.url).port as unknown as number, "127.0.0.1");
        await new Promise((resolve) => socket.once("connect", resolve));
        let text = "";
        socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        const ended = new Promise<string>((resolve) => socket.once("close", () => resolve(text)));
        await new Promise((resolve) => socket.write(head, resolve));
        return { socket, ended };
      }),
    );
    // The bytes are in the kernel; a turn of the event loop (which this server shares) lets it read them and begin both requests.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const closed = second.close();
    // The drain has begun once the event queues are closed (its first step).
    while (!second.services.queues.closed) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const { socket } of arriving) socket.write("\r\n");
    const [healthText, meText] = await Promise.all(arriving.map((a) => a.ended));
    await closed;
    const parse = (text: string | undefined) => {
      assert.ok(text, "no reply");
      const [head, body] = text.split("\r\n\r\n", 2) as [string, string];
      return { status: Number(head.split(" ")[1]), head: head.toLowerCase(), body: JSON.parse(body) };
    };
    const healthReply = parse(healthText);
    assert.equal(healthReply.status, 503, healthText);
    assert.deepEqual(healthReply.body, { result: "error", msg: "The server is shutting down", code: "SERVER_NOT_READY", shutting_down: true });
    assert.match(healthReply.head, /\r\nconnection: close/);
    // Served as usual (not refused): the load balancer sent it here before the process was taken out.
    const me = parse(meText);
    assert.equal(me.status, 200, meText);
    assert.equal(me.body.user_id, member.id);
    assert.match(me.head, /\r\nconnection: close/);
  });

  test("draining: a response already under way when the drain began (sent keep-alive) ends its connection once it is read, and the drain ends", async () => {
    const second = await secondServer(t);
    const member = t.users.member!;
    const auth = Buffer.from(`${member.email}:${member.apiKey}`).toString("base64");
    // Larger than the loopback socket buffers: the server cannot finish writing it while the client does not read.
    const size = 48 * 1024 * 1024;
    const form = new FormData();
    form.append("file", new Blob([Buffer.alloc(size, 7)], { type: "application/octet-stream" }), "big.bin");
    const posted = await fetch(`${second.url}/api/v1/user_uploads`, { method: "POST", body: form, headers: { authorization: `Basic ${auth}` } });
    const { url } = (await posted.json()) as { url: string };
    const socket = net.connect(new URL(second.url).port as unknown as number, "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    let head = "";
    let bodyBytes = 0;
    const headRead = new Promise<void>((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        if (!head.includes("\r\n\r\n")) {
          head += chunk.toString("latin1");
          const end = head.indexOf("\r\n\r\n");
          if (end < 0) return;
          bodyBytes = Buffer.byteLength(head.slice(end + 4), "latin1");
          head = head.slice(0, end + 4);
          // Stop reading: the rest of the body waits in the server's buffers.
          socket.pause();
          resolve();
        } else bodyBytes += chunk.length;
      });
    });
    const socketClosed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(`GET ${url} HTTP/1.1\r\nHost: parley\r\nAuthorization: Basic ${auth}\r\n\r\n`);
    await headRead;
    assert.match(head, /^HTTP\/1\.1 200/);
    assert.doesNotMatch(head.toLowerCase(), /\r\nconnection: close/, "the headers went out before the drain: keep-alive");
    const closed = second.close();
    while (!second.services.queues.closed) await new Promise((resolve) => setTimeout(resolve, 5));
    socket.resume();
    // The whole body arrives, then the server ends the idle connection and the drain completes.
    await socketClosed;
    assert.ok(head.toLowerCase().includes(`content-length: ${size}`), head);
    assert.equal(bodyBytes, size);
    await closed;
  });

  test("Redis unreachable (a second server configured with a port nothing listens on): 503 naming Redis", async () => {
    const second = await secondServer(t, { redisUrl: `redis://127.0.0.1:${await closedPort()}` });
    try {
      const reply = await health(second.url);
      assert.equal(reply.status, 503, JSON.stringify(reply.body));
      assert.deepEqual(reply.body, {
        result: "error",
        msg: "Cannot query redis",
        code: "SERVER_NOT_READY",
        database: "ok",
        redis: "unreachable",
        migrations: "current",
      });
      // Asked again while the connection retries, it answers at once with the same verdict.
      assert.equal((await health(second.url)).body.redis, "unreachable");
    } finally {
      await second.close();
    }
  });
});

describe("GET /health with the database gone", () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(() => t.close());

  test("the database closed under the server: 503 naming the database, migrations unknown", async () => {
    await t.services.storage.close();
    const reply = await health(t.url);
    assert.equal(reply.status, 503, JSON.stringify(reply.body));
    assert.deepEqual(reply.body, {
      result: "error",
      msg: "Cannot query the database",
      code: "SERVER_NOT_READY",
      database: "unreachable",
      redis: t.services.config.redisUrl === undefined ? "not configured" : "ok",
      migrations: "unknown",
    });
  });
});
