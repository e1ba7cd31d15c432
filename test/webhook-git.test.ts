// Zulip's own GitHub and GitLab webhook tests (test/fixtures/zulip-webhook-cases.json, a copy of shared/fixtures/…)
// run straight through the integrations' handle() and Zulip's topic/content
// normalisation, without HTTP: each case's topic and content must match byte
// for byte, and ignored events must post nothing. Plus the error paths the
// table does not cover (missing header, malformed payloads, bad parameters,
// unsupported events).
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { FnmatchPattern } from "../src/integrations/fnmatch.ts";
import { github, githubSponsors } from "../src/integrations/github.ts";
import { gitlab } from "../src/integrations/gitlab.ts";
import type { Integration, WebhookRequest, WebhookResult } from "../src/integrations/integration.ts";
import { normalizeWebhookMessage } from "../src/integrations/normalize.ts";
import { integrationNamed } from "../src/integrations/index.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
// A copy of the project's shared/fixtures/ table, so the suite runs from a clean clone.
const TABLE = path.resolve(here, "fixtures/zulip-webhook-cases.json");

interface Case {
  name: string;
  url: string;
  url_template?: string;
  headers: Record<string, string>;
  query?: Record<string, string>;
  body_encoding: "json" | "raw";
  payload: unknown;
  expect: "message" | "messages" | "no_message" | "error";
  expected_topic: string | null;
  expected_content: string | null;
  expected_response_msg_contains?: string[];
}

interface Table {
  integrations: Record<string, { cases: Case[] }>;
}

const table = JSON.parse(fs.readFileSync(TABLE, "utf8")) as Table;

function requestFor(c: Case): { integration: Integration; request: WebhookRequest } {
  const url = new URL(c.url.replace("{api_key}", "KEY").replace("{stream}", "s"), "http://x");
  const name = url.pathname.split("/").pop()!;
  const integration = integrationNamed(name);
  assert.ok(integration, `${name} is registered`);
  const query: Record<string, string> = {};
  let userTopic: string | undefined;
  for (const [k, v] of url.searchParams) {
    if (k === "topic") userTopic = v;
    else if (k !== "api_key" && k !== "stream") query[k] = v;
  }
  for (const [k, v] of Object.entries(c.query ?? {})) {
    if (k === "topic") userTopic = v;
    else if (k !== "api_key" && k !== "stream") query[k] = v;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) headers[k.toLowerCase()] = v;
  const rawBody = c.body_encoding === "raw" ? String(c.payload) : JSON.stringify(c.payload);
  const payload = c.body_encoding === "raw" ? undefined : c.payload;
  return { integration, request: { payload, rawBody, headers, query, userTopic } };
}

function check(c: Case): void {
  const { integration, request } = requestFor(c);
  const result = integration.handle(request);
  if (c.expect === "no_message") {
    const msgs = c.expected_response_msg_contains ?? [];
    if (msgs.length > 0) {
      assert.equal(result.kind, "unsupported", JSON.stringify(result));
    } else {
      assert.equal(result.kind, "ignore", JSON.stringify(result));
    }
    return;
  }
  assert.equal(result.kind, "messages", JSON.stringify(result));
  const messages = (result as Extract<WebhookResult, { kind: "messages" }>).messages;
  assert.equal(messages.length, 1);
  const got = normalizeWebhookMessage(messages[0]!, request.userTopic);
  assert.equal(got.topic, c.expected_topic);
  assert.equal(got.content, c.expected_content);
  assert.equal(typeof messages[0]!.eventType, "string", "every message names its Zulip event, for only_events/exclude_events");
}

for (const name of ["github", "gitlab"]) {
  describe(`Zulip's ${name} webhook table`, () => {
    for (const c of table.integrations[name]!.cases) {
      test(c.name, () => check(c));
    }
  });
}

// ---------------------------------------------------------------------------
// What the table does not cover: refusals and unsupported events.
// ---------------------------------------------------------------------------

function run(integration: Integration, payload: unknown, headers: Record<string, string>, query: Record<string, string> = {}, userTopic?: string) {
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return integration.handle({
    payload,
    rawBody: payload === undefined ? "not json" : JSON.stringify(payload),
    headers: lower,
    query,
    userTopic,
  });
}

function fixture(integration: string, caseName: string): Case {
  const c = table.integrations[integration]!.cases.find((x) => x.name === caseName);
  assert.ok(c, caseName);
  return c;
}

const PUSH = fixture("github", "test_push_1_commit");
const GL_PUSH = fixture("gitlab", "test_push_event_message");

describe("GitHub refusals", () => {
  test("no X-GitHub-Event header: MISSING_HTTP_EVENT_HEADER naming the header", () => {
    assert.deepEqual(run(github, PUSH.payload, {}), {
      kind: "error",
      message: "Missing the HTTP event header 'X-GitHub-Event'",
      code: "MISSING_HTTP_EVENT_HEADER",
      extra: { header: "X-GitHub-Event" },
    });
  });

  test("a body that is not JSON: Malformed JSON", () => {
    assert.deepEqual(run(github, undefined, { "X-GitHub-Event": "push" }), { kind: "error", message: "Malformed JSON", code: "INVALID_JSON" });
  });

  test("an event GitHub sends that Zulip does not handle: unsupported with event:action", () => {
    assert.deepEqual(run(github, { action: "created" }, { "X-GitHub-Event": "sponsorship_thing" }), {
      kind: "unsupported",
      event: "sponsorship_thing:created",
    });
    assert.deepEqual(run(github, {}, { "X-GitHub-Event": "code_scanning_alert" }), {
      kind: "unsupported",
      event: "code_scanning_alert:???",
    });
  });

  test("a team action newer than Zulip's list: unsupported", () => {
    assert.deepEqual(run(github, { action: "archived", team: { name: "t" } }, { "X-GitHub-Event": "team" }), {
      kind: "unsupported",
      event: "unsupported team action archived",
    });
  });

  test("a payload missing a field or with the wrong type: 400 naming the path", () => {
    const payload = structuredClone(PUSH.payload) as Record<string, unknown>;
    delete payload["compare"];
    assert.deepEqual(run(github, payload, { "X-GitHub-Event": "push" }), {
      kind: "error",
      message: "request['compare'] is missing",
    });
    (payload as Record<string, unknown>)["compare"] = 5;
    assert.deepEqual(run(github, payload, { "X-GitHub-Event": "push" }), {
      kind: "error",
      message: "request['compare'] is not a string",
    });
    assert.deepEqual(run(github, [1, 2], { "X-GitHub-Event": "push" }), { kind: "error", message: "request is not a dict" });
    const badCommit = structuredClone(PUSH.payload) as { commits: Array<Record<string, unknown>> };
    badCommit.commits[0]!["id"] = null;
    assert.deepEqual(run(github, badCommit, { "X-GitHub-Event": "push" }), {
      kind: "error",
      message: "request['commits'][0]['id'] is not a string",
    });
  });

  test("ignore_private_repositories must be a JSON boolean", () => {
    const h = { "X-GitHub-Event": "push" };
    assert.deepEqual(run(github, PUSH.payload, h, { ignore_private_repositories: "yes" }), {
      kind: "error",
      message: "ignore_private_repositories is not valid JSON",
    });
    assert.deepEqual(run(github, PUSH.payload, h, { ignore_private_repositories: "1" }), {
      kind: "error",
      message: "ignore_private_repositories is not a boolean",
    });
    // A public repository is posted even with the flag.
    assert.equal(run(github, PUSH.payload, h, { ignore_private_repositories: "true" }).kind, "messages");
  });

  test("branches: a comma list, spaces around names ignored; tags are never filtered", () => {
    const h = { "X-GitHub-Event": "push" };
    assert.equal(run(github, PUSH.payload, h, { branches: " changes , main" }).kind, "messages");
    assert.equal(run(github, PUSH.payload, h, { branches: "main" }).kind, "ignore");
    const tag = fixture("github", "test_push_tag_msg");
    assert.equal(run(github, tag.payload, h, { branches: "main" }).kind, "messages");
  });

  test("messages carry Zulip's event name, which only_events/exclude_events match", () => {
    const cases: Array<[string, string]> = [
      ["test_pull_request_opened_msg", "opened_pull_request"],
      ["test_push_1_commit", "push_commits"],
      ["test_push_tag_msg", "push_tags"],
      ["test_issue_comment_msg", "issue_comment"],
      ["test_cancelled_message", "cancelled"],
    ];
    for (const [name, eventType] of cases) {
      const { integration, request } = requestFor(fixture("github", name));
      const result = integration.handle(request);
      assert.equal(result.kind === "messages" && result.messages[0]!.eventType, eventType, name);
    }
  });

  test("only_events/exclude_events patterns match exactly as CPython's fnmatch.fnmatchcase does", () => {
    // Names each pattern matches among NAMES, as computed by CPython 3.11 (whose
    // fnmatch.translate builds the same sets as 3.12's): sets with `]` first,
    // out-of-order ranges dropped (an emptied set never matches, an emptied
    // negated one matches anything), unclosed `[` literal, `-` at either end
    // literal, `&~|\` literal, no escaping, stars anywhere.
    const NAMES = ["opened_pull_request", "push_commits", "]", "-", "z", "a", "b", "!", "&", "\\", "[", "^", "", "abc", "aXbYc", "aaab", "aab", "push_tags", "[x", "*x"];
    const PYTHON: Array<[string, string[]]> = [
      ["[z-a]", []],
      ["[]]", ["]"]],
      ["[!]]", ["-", "z", "a", "b", "!", "&", "\\", "[", "^"]],
      ["[z-a!]", ["]", "-", "z", "a", "b", "!", "&", "\\", "[", "^"]],
      ["[!z-a]", ["]", "-", "z", "a", "b", "!", "&", "\\", "[", "^"]],
      ["[a-z-0]", ["-", "z", "a", "b"]],
      ["[a-c-e]", ["-", "a", "b"]],
      ["[&~|]", ["&"]],
      ["[\\]", ["\\"]],
      ["[]-a]", ["]", "a", "^"]],
      ["[--0]", ["-"]],
      ["[!", []],
      ["[a-]", ["-", "a"]],
      ["[-a]", ["-", "a"]],
      ["[z-ad-c]", []],
      ["*_pull_request", ["opened_pull_request"]],
      ["opened_*", ["opened_pull_request"]],
      ["*pull*", ["opened_pull_request"]],
      ["?pened_pull_request", ["opened_pull_request"]],
      ["[o]pened_*", ["opened_pull_request"]],
      ["[!o]pened_*", []],
      ["push_*s", ["push_commits", "push_tags"]],
      ["*[!s]", ["opened_pull_request", "]", "-", "z", "a", "b", "!", "&", "\\", "[", "^", "abc", "aXbYc", "aaab", "aab", "[x", "*x"]],
      ["a*b*c", ["abc", "aXbYc"]],
      ["*a*a*a*b", ["aaab"]],
      ["[[]*", ["[", "[x"]],
      ["*]", ["]"]],
      ["[^a]*", ["a", "^", "abc", "aXbYc", "aaab", "aab"]],
      ["\\*", ["\\"]],
      ["[*]*", ["*x"]],
    ];
    for (const [pattern, expected] of PYTHON) {
      const compiled = new FnmatchPattern(pattern);
      assert.deepEqual(
        NAMES.filter((name) => compiled.matches(name)),
        expected,
        pattern,
      );
    }
    // Astral characters are one character each, as in Python.
    assert.equal(new FnmatchPattern("?").matches("\u{1F600}"), true);
    assert.equal(new FnmatchPattern("[\u{1F600}-\u{1F64F}]").matches("\u{1F610}"), true);
  });

  test("githubsponsors is the same handler under its own name", () => {
    assert.equal(githubSponsors.name, "githubsponsors");
    assert.equal(githubSponsors.handle, github.handle);
  });
});

describe("GitLab refusals and system hooks", () => {
  test("no X-Gitlab-Event header: MISSING_HTTP_EVENT_HEADER", () => {
    assert.deepEqual(run(gitlab, GL_PUSH.payload, {}), {
      kind: "error",
      message: "Missing the HTTP event header 'X-GitLab-Event'",
      code: "MISSING_HTTP_EVENT_HEADER",
      extra: { header: "X-GitLab-Event" },
    });
  });

  test("an unknown hook or action: unsupported with Zulip's event name", () => {
    assert.deepEqual(run(gitlab, GL_PUSH.payload, { "X-Gitlab-Event": "Deployment Hook" }), {
      kind: "unsupported",
      event: "Deployment Hook",
    });
    const mr = structuredClone(fixture("gitlab", "test_merge_request_created_without_assignee_event_message").payload) as {
      object_attributes: Record<string, unknown>;
    };
    mr.object_attributes["action"] = "frobnicate";
    assert.deepEqual(run(gitlab, mr, { "X-Gitlab-Event": "Merge Request Hook" }), {
      kind: "unsupported",
      event: "Merge Request Hook frobnicate",
    });
  });

  test("a System Hook is read as the hook its event_name or object_kind names", () => {
    const direct = run(gitlab, GL_PUSH.payload, { "X-Gitlab-Event": "Push Hook" });
    const system = run(gitlab, { ...(GL_PUSH.payload as object), event_name: "push" }, { "X-Gitlab-Event": "System Hook" });
    assert.equal(direct.kind, "messages");
    assert.deepEqual(system, direct);
    const mr = fixture("gitlab", "test_merge_request_created_without_assignee_event_message");
    const viaKind = run(gitlab, mr.payload, { "X-Gitlab-Event": "System Hook" });
    assert.deepEqual(viaKind, run(gitlab, mr.payload, { "X-Gitlab-Event": "Merge Request Hook" }));
  });

  test("messages carry Zulip's GitLab event name (hook plus action or noteable type)", () => {
    const cases: Array<[string, string]> = [
      ["test_merge_request_created_without_assignee_event_message", "Merge Request Hook open"],
      ["test_push_event_message", "Push Hook"],
      ["test_note_issue_event_message", "Note Hook Issue"],
    ];
    for (const [name, eventType] of cases) {
      const { integration, request } = requestFor(fixture("gitlab", name));
      const result = integration.handle(request);
      assert.equal(result.kind === "messages" && result.messages[0]!.eventType, eventType, name);
    }
  });

  test("use_merge_request_title must be a JSON boolean", () => {
    assert.deepEqual(run(gitlab, GL_PUSH.payload, { "X-Gitlab-Event": "Push Hook" }, { use_merge_request_title: "nope" }), {
      kind: "error",
      message: "use_merge_request_title is not valid JSON",
    });
  });

  test("a malformed payload: 400 naming the path", () => {
    assert.deepEqual(run(gitlab, { ref: 7 }, { "X-Gitlab-Event": "Push Hook" }, { branches: "main" }), {
      kind: "error",
      message: "request['ref'] is not a string",
    });
    assert.deepEqual(run(gitlab, undefined, { "X-Gitlab-Event": "Push Hook" }), { kind: "error", message: "Malformed JSON", code: "INVALID_JSON" });
  });
});
