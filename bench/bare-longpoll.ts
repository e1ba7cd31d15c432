// The yardstick for event fan-out (bench/events.ts): a bare Fastify app that
// holds GET /api/v1/events long-polls and answers all of them, with a
// Zulip-shaped reply, when PATCH /api/v1/realm arrives — no authentication,
// no database, no queues. Run as its own process, like Parley.
import crypto from "node:crypto";
import Fastify from "fastify";

const app = Fastify({ logger: false });
let waiting: ((events: object[]) => void)[] = [];
let nextId = 0;

app.get("/api/v1/events", async (request) => {
  const { queue_id: queueId } = request.query as { queue_id?: string };
  const events = await new Promise<object[]>((resolve) => waiting.push(resolve));
  return { result: "success", msg: "", events, queue_id: queueId ?? crypto.randomUUID() };
});

app.patch("/api/v1/realm", async (request) => {
  const name = new URLSearchParams(String(request.body ?? "")).get("name") ?? "";
  const event = { type: "realm", op: "update", property: "name", value: name };
  const id = nextId++;
  const woken = waiting;
  waiting = [];
  for (const resolve of woken) resolve([{ ...event, id }]);
  return { result: "success", msg: "", name: "updated" };
});

// Form bodies as text: only `name` is read.
app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_request, body, done) => done(null, body));

const port = Number(process.env.PORT ?? 19994);
await app.listen({ host: "127.0.0.1", port });
process.stdout.write(`listening ${port}\n`);
