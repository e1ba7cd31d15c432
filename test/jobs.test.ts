// The durable job queue (src/jobs/): jobs commit with the write that queues
// them, each is run once however many processes' runners compete, failures
// are retried with backoff and then kept with their error, jobs of one key
// run one at a time in order, and a claim whose process died is taken again
// when its lease runs out. Also: actions never reach a worker through their
// imports (the job queue is the only way from one to the other).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { inRealmTransaction } from "../src/actions/transaction.ts";
import { claimJobs, completeJob, enqueueJob } from "../src/jobs/queue.ts";
import { JobRunner, PermanentJobFailure, type Worker } from "../src/jobs/runner.ts";
import { startTestApp, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

let clock = 1_900_000_000_000;
const runners: JobRunner[] = [];

/** A runner of one worker on the test server's database, on a clock the test moves. */
function runnerWith(name: string, worker: Worker<{ n: number }>, options: { realClock?: boolean } = {}): JobRunner {
  const runner = new JobRunner({
    db: t.services.storage.db,
    dialect: t.services.storage.dialect,
    nowMs: options.realClock ? () => Date.now() : () => clock,
    pollMs: 20,
    log: () => {},
  });
  runner.register(name, worker);
  runners.push(runner);
  return runner;
}

after(async () => {
  for (const runner of runners) await runner.stop();
});

let names = 0;
const uniqueJobName = () => `test_job_${++names}`;

/** Queues jobs in one organization transaction, as an action does; `fail` rolls it back. */
async function enqueue(name: string, payloads: { n: number }[], options: { key?: string; maxAttempts?: number; runAt?: number; fail?: boolean } = {}): Promise<void> {
  await inRealmTransaction(t.services, t.realm.id, async (trx, pending) => {
    for (const payload of payloads) await enqueueJob(trx, pending, { nowMs: () => clock }, name, payload, { runAt: options.runAt ?? clock, ...options });
    if (options.fail) throw new Error("rolled back");
  });
}

async function rows(name: string) {
  return t.services.storage.db.selectFrom("jobs").selectAll().where("name", "=", name).orderBy("id").execute();
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the job queue", () => {
  test("a job commits with the transaction that queues it, and a rolled-back one leaves none", async () => {
    const name = uniqueJobName();
    await assert.rejects(enqueue(name, [{ n: 1 }], { fail: true }), /rolled back/);
    assert.deepEqual(await rows(name), []);
    await enqueue(name, [{ n: 2 }]);
    const [job] = await rows(name);
    assert.equal(JSON.parse(job!.payload).n, 2);
    assert.equal(job!.status, "queued");
    assert.equal(job!.attempts, 0);
  });

  test("runners of several processes competing run each job exactly once, then it leaves the queue", async () => {
    const name = uniqueJobName();
    const runs = new Map<number, number>();
    const worker: Worker<{ n: number }> = {
      concurrency: 3,
      run: async ({ n }) => {
        runs.set(n, (runs.get(n) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 1));
      },
    };
    await enqueue(
      name,
      Array.from({ length: 60 }, (_, n) => ({ n })),
    );
    const competing = [runnerWith(name, worker), runnerWith(name, worker), runnerWith(name, worker)];
    for (const runner of competing) runner.start();
    await until("every job to run", async () => (await rows(name)).length === 0);
    for (const runner of competing) await runner.stop();
    assert.equal(runs.size, 60);
    assert.deepEqual([...runs.values()].filter((count) => count !== 1), []);
  });

  test("a failing job is retried with growing delays, then kept as failed with its error; onFailure hears of it once", async () => {
    const name = uniqueJobName();
    const attempts: number[] = [];
    const failures: unknown[] = [];
    const runner = runnerWith(name, {
      backoffMs: (attempt) => 1000 * 2 ** (attempt - 1),
      run: async (_payload, context) => {
        attempts.push(context.attempt);
        throw new Error(`broken ${context.attempt}`);
      },
      onFailure: async (_payload, error) => {
        failures.push(error);
      },
    });
    await enqueue(name, [{ n: 1 }], { maxAttempts: 3 });
    assert.deepEqual((await runner.drain()).retried, 1);
    let [job] = await rows(name);
    assert.deepEqual([job!.status, job!.attempts, Number(job!.run_at), job!.last_error], ["queued", 1, clock + 1000, "Error: broken 1"]);
    // Not before its delay.
    clock += 999;
    assert.equal((await runner.drain()).retried, 0);
    clock += 1;
    await runner.drain();
    [job] = await rows(name);
    assert.deepEqual([job!.status, job!.attempts, Number(job!.run_at)], ["queued", 2, clock + 2000]);
    clock += 2000;
    const report = await runner.drain();
    assert.equal(report.failed, 1);
    [job] = await rows(name);
    assert.deepEqual([job!.status, job!.attempts, job!.last_error], ["failed", 3, "Error: broken 3"]);
    assert.deepEqual(attempts, [1, 2, 3]);
    assert.equal(failures.length, 1);
    // A failed job is over: never claimed again.
    clock += 3_600_000;
    assert.equal((await runner.drain()).failed + (await runner.drain()).completed, 0);
  });

  test("a worker's PermanentJobFailure fails the job at once", async () => {
    const name = uniqueJobName();
    const runner = runnerWith(name, {
      run: async () => {
        throw new PermanentJobFailure("refused for good");
      },
    });
    await enqueue(name, [{ n: 1 }], { maxAttempts: 5 });
    assert.equal((await runner.drain()).failed, 1);
    const [job] = await rows(name);
    assert.deepEqual([job!.status, job!.attempts, job!.last_error], ["failed", 1, "Error: refused for good"]);
  });

  test("jobs with one key run one at a time, in order, across runners; other keys go alongside", async () => {
    const name = uniqueJobName();
    const running = new Map<string, number>();
    const overlaps: string[] = [];
    const order = new Map<string, number[]>();
    const worker: Worker<{ n: number; key?: string }> = {
      concurrency: 4,
      run: async ({ n, key = "-" }) => {
        running.set(key, (running.get(key) ?? 0) + 1);
        if (running.get(key)! > 1) overlaps.push(`${key}:${n}`);
        order.set(key, [...(order.get(key) ?? []), n]);
        await new Promise((resolve) => setTimeout(resolve, 3));
        running.set(key, running.get(key)! - 1);
      },
    };
    for (let n = 0; n < 8; n++) {
      await enqueue(name, [{ n, key: "a" } as { n: number }], { key: "a" });
      await enqueue(name, [{ n, key: "b" } as { n: number }], { key: "b" });
    }
    const a = runnerWith(name, worker as Worker<{ n: number }>);
    const b = runnerWith(name, worker as Worker<{ n: number }>);
    a.start();
    b.start();
    await until("every keyed job", async () => (await rows(name)).length === 0);
    assert.deepEqual(overlaps, []);
    assert.deepEqual(order.get("a"), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(order.get("b"), [0, 1, 2, 3, 4, 5, 6, 7]);
  });

  test("a keyed job waiting for its retry holds back the later jobs of its key, not others", async () => {
    const name = uniqueJobName();
    const ran: string[] = [];
    const runner = runnerWith(name, {
      backoffMs: () => 60_000,
      run: async ({ n }, context) => {
        ran.push(`${n}`);
        if (n === 1 && context.attempt === 1) throw new Error("not yet");
      },
    });
    await enqueue(name, [{ n: 1 }], { key: "k" });
    await enqueue(name, [{ n: 2 }], { key: "k" });
    await enqueue(name, [{ n: 3 }], { key: "other" });
    await runner.drain();
    assert.deepEqual(ran, ["1", "3"]);
    clock += 60_000;
    await runner.drain();
    assert.deepEqual(ran, ["1", "3", "1", "2"]);
  });

  test("a claim whose process died is taken again when its lease runs out; the dead claim can no longer finish it", async () => {
    const name = uniqueJobName();
    await enqueue(name, [{ n: 7 }]);
    // The process that dies: it claimed the job and never finished it.
    const [dead] = await claimJobs(t.services.storage.db, t.services.storage.dialect, name, 1, clock, 30_000);
    assert.ok(dead);
    const ran: number[] = [];
    const runner = runnerWith(name, { leaseMs: 30_000, run: async ({ n }) => void ran.push(n) });
    assert.equal((await runner.drain()).completed, 0, "taken while its lease holds");
    clock += 30_000;
    assert.equal((await runner.drain()).completed, 1);
    assert.deepEqual(ran, [7]);
    // The first claim, coming back late, changes nothing.
    await completeJob(t.services.storage.db, dead);
    assert.deepEqual(await rows(name), []);
  });

  test("the server's runner is woken by the commit: a job queued through it runs without waiting for a poll", async () => {
    const name = uniqueJobName();
    const ran: number[] = [];
    const runner = new JobRunner({ db: t.services.storage.db, dialect: t.services.storage.dialect, nowMs: () => Date.now(), pollMs: 3_600_000, log: () => {} });
    runner.register<{ n: number }>(name, { run: async ({ n }) => void ran.push(n) });
    runners.push(runner);
    runner.start();
    await inRealmTransaction(t.services, t.realm.id, async (trx, pending) => {
      await enqueueJob(trx, pending, { jobs: runner, nowMs: () => Date.now() }, name, { n: 5 });
    });
    // The poll is an hour away: only the wake-up can run it.
    await until("the woken runner", () => ran.length === 1);
    assert.deepEqual(ran, [5]);
  });
});

describe("no import circle between actions and workers", () => {
  const SRC = path.join(import.meta.dirname, "..", "src");

  /** The project files a source file imports (relative imports only). */
  function importsOf(file: string): string[] {
    const text = fs.readFileSync(file, "utf8");
    const found: string[] = [];
    for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"(\.{1,2}\/[^"]+)"/g)) {
      found.push(path.resolve(path.dirname(file), match[1]!));
    }
    for (const match of text.matchAll(/import\("(\.{1,2}\/[^"]+)"\)/g)) found.push(path.resolve(path.dirname(file), match[1]!));
    return found;
  }

  test("nothing an action imports, directly or through other modules, is a worker", () => {
    const seen = new Set<string>();
    const via = new Map<string, string>();
    const queue = fs
      .readdirSync(path.join(SRC, "actions"))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => path.join(SRC, "actions", f));
    for (const file of queue) seen.add(file);
    while (queue.length > 0) {
      const file = queue.shift()!;
      for (const imported of importsOf(file)) {
        if (seen.has(imported) || !imported.startsWith(SRC)) continue;
        seen.add(imported);
        via.set(imported, file);
        queue.push(imported);
      }
    }
    const reached = [...seen].filter((f) => f.startsWith(path.join(SRC, "workers") + path.sep));
    const chains = reached.map((f) => {
      const chain = [f];
      while (via.has(chain[0]!)) chain.unshift(via.get(chain[0]!)!);
      return chain.map((c) => path.relative(SRC, c)).join(" → ");
    });
    assert.deepEqual(chains, []);
    // The scan saw the action files and what they import.
    assert.ok(seen.has(path.join(SRC, "jobs", "queue.ts")));
  });
});
