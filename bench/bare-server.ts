// The yardstick: a bare Fastify route returning a Zulip-shaped success body,
// run as its own process so that it gets a core to itself like Parley does.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.get("/bare", async () => ({ result: "success", msg: "" }));
const port = Number(process.env.PORT ?? 19990);
await app.listen({ host: "127.0.0.1", port });
process.stdout.write(`listening ${port}\n`);
