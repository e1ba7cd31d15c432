// Zulip's own incoming-webhook test table (test/fixtures/zulip-webhook-cases.json, a copy of shared/fixtures/…,
// 267 cases from zerver/webhooks/*/tests.py) driven through HTTP: each case
// posts its payload with its headers and query to /api/v1/external/<name> as
// an incoming-webhook bot, and the message(s) the bot posted are compared,
// topic and content, with what Zulip's test expects (or that nothing was
// posted, or the error reply). Every integration of the table runs: a case of
// an integration Parley does not serve fails. WEBHOOK_INTEGRATIONS=json,sentry
// runs only those (for development). The pass rate per integration is printed
// at the end and kept in docs/integrations.md.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { createUser } from "../src/actions/users.ts";
import { Role } from "../src/domain/roles.ts";
import type { User } from "../src/storage/schema.ts";
import { assertSuccess, startTestApp, type TestApp } from "./helpers.ts";

interface FixtureCase {
  name: string;
  url: string;
  headers: Record<string, string>;
  content_type: string;
  body_encoding: "json" | "raw";
  payload: unknown;
  expect: "message" | "messages" | "no_message" | "error";
  expected_topic?: string | null;
  expected_content?: string | null;
  expected_messages?: { topic: string; content: string }[];
  expected_response_json?: Record<string, unknown>;
  expected_response_msg_contains?: string[];
}

interface FixtureIntegration {
  stream: string;
  cases: FixtureCase[];
}

const here = path.dirname(fileURLToPath(import.meta.url));
const table = JSON.parse(fs.readFileSync(path.join(here, "fixtures/zulip-webhook-cases.json"), "utf8")) as {
  integrations: Record<string, FixtureIntegration>;
};
const only = process.env.WEBHOOK_INTEGRATIONS?.split(",").map((s) => s.trim()).filter((s) => s !== "");
const integrations = Object.entries(table.integrations).filter(([name]) => only === undefined || only.includes(name));

const results = new Map<string, { passed: number; total: number }>();

describe("Zulip's incoming-webhook test table", () => {
  let app: TestApp;
  let bot: User;
  let lastMessageId = 0;

  before(async () => {
    app = await startTestApp();
    bot = await createUser(app.services, app.realm, null, {
      email: "webhook-bot@example.com",
      fullName: "Webhook Bot",
      password: null,
      isBot: true,
      botType: 2,
      botOwnerId: app.users.owner.id,
      role: Role.MEMBER,
    });
    for (const [, integration] of integrations) {
      assertSuccess(await app.api(app.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name: integration.stream }] }));
    }
  });

  after(async () => {
    await app?.close();
    const lines = [...results].map(([name, r]) => `${name}: ${r.passed}/${r.total} (${((100 * r.passed) / r.total).toFixed(1)}%)`);
    const passed = [...results.values()].reduce((n, r) => n + r.passed, 0);
    const total = [...results.values()].reduce((n, r) => n + r.total, 0);
    console.log(`webhook fixture pass rate: ${passed}/${total}\n  ${lines.join("\n  ")}`);
  });

  /** The messages the bot posted since the last call, oldest first, with their channel's name. */
  async function newMessages(): Promise<{ topic: string; content: string; channel: string | null }[]> {
    const rows = await app.services.storage.db
      .selectFrom("messages")
      .leftJoin("channels", "channels.id", "messages.channel_id")
      .select(["messages.id", "messages.topic", "messages.content", "channels.name as channel"])
      .where("messages.sender_id", "=", bot.id)
      .where("messages.id", ">", lastMessageId)
      .orderBy("messages.id")
      .execute();
    if (rows.length > 0) lastMessageId = rows[rows.length - 1]!.id;
    return rows.map((r) => ({ topic: r.topic, content: r.content, channel: r.channel }));
  }

  for (const [name, integration] of integrations) {
    results.set(name, { passed: 0, total: integration.cases.length });
    describe(name, () => {
      for (const c of integration.cases) {
        test(c.name, async () => {
          await newMessages();
          const url = app.url + c.url.replaceAll("{api_key}", bot.api_key).replaceAll("{stream}", encodeURIComponent(integration.stream));
          const body = c.body_encoding === "json" ? JSON.stringify(c.payload) : (c.payload as string);
          const response = await fetch(url, { method: "POST", headers: { ...c.headers, "content-type": c.content_type }, body });
          const text = await response.text();
          const reply = JSON.parse(text) as Record<string, unknown>;
          const posted = await newMessages();
          if (c.expect === "error") {
            assert.ok(response.status >= 400, `expected an error, got ${response.status}: ${text}`);
            for (const [key, value] of Object.entries(c.expected_response_json ?? {})) assert.deepEqual(reply[key], value, `${key}: ${text}`);
            assert.deepEqual(posted, []);
          } else {
            assert.equal(response.status, 200, text);
            assert.equal(reply.result, "success", text);
            if (c.expect === "no_message") {
              assert.deepEqual(posted, []);
              for (const part of c.expected_response_msg_contains ?? []) assert.ok(String(reply.msg).includes(part), `msg ${String(reply.msg)} lacks ${part}`);
            } else {
              const expected = c.expect === "messages" ? c.expected_messages! : [{ topic: c.expected_topic!, content: c.expected_content! }];
              assert.deepEqual(
                posted,
                expected.map((m) => ({ topic: m.topic, content: m.content, channel: integration.stream })),
              );
            }
          }
          results.get(name)!.passed += 1;
        });
      }
    });
  }
});
