// Sentry (zerver/webhooks/sentry): event alerts (an exception with its
// traceback, or a message event), issue events (created, resolved, assigned,
// ignored), the plain webhook format Sentry's legacy plugin sends (turned into
// an event), and the deprecated format. Topic: the event or issue title.
// Events of the old Raven Python SDK are unsupported, as in Zulip.
import { malformedJson, type Integration, type WebhookResult } from "./integration.ts";
import { MessageText } from "./normalize.ts";
import { asDict, asString, isDict, PayloadError, type Dict } from "./payload.ts";

class Unsupported extends Error {}

/** Sentry platform → Pygments lexer name for the traceback's code block. */
const SYNTAX_HIGHLIGHT_AS: Record<string, string> = { go: "go", java: "java", javascript: "javascript", node: "javascript", python: "python3", ruby: "ruby" };

/** "2020-04-28T13:56:05.903736Z" → "2020-04-28 13:56:05", as Zulip prints Sentry times. */
function shortTime(value: unknown, name: string): string {
  return asString(value, name).split(".")[0]!.replace("T", " ");
}

/** Python's str() for a value put in a template. */
function py(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  return String(value);
}

/** The traceback's context lines, one by one, until the message is certain to be cut (a frame may carry any number). */
function writeTracebackLines(text: MessageText, lines: unknown): void {
  if (!Array.isArray(lines)) return;
  for (const line of lines) {
    if (text.full) return;
    text.write(line === "" ? "\n" : `     ${py(line)}\n`);
  }
}

function eventMessage(event: Dict): [string, string] {
  const title = py(event.title);
  const platform = py(event.platform);
  const highlight = SYNTAX_HIGHLIGHT_AS[platform] ?? "";
  if (platform === "python" && Number.parseInt(py(event.version), 10) < 7 && title !== "This is an example Python exception") throw new Unsupported("Raven SDK");
  const level = py(event.level);
  const link = py(event.web_url);
  const datetime = shortTime(event.datetime, "datetime");
  if ("exception" in event) {
    const metadata = asDict(event.metadata, "metadata");
    const filename = metadata.filename ?? null;
    let stacktrace: Dict | null = null;
    const values = asDict(event.exception, "exception").values;
    if (Array.isArray(values)) {
      for (const value of [...values].reverse()) {
        if (isDict(value) && "stacktrace" in value) {
          stacktrace = value.stacktrace as Dict;
          break;
        }
      }
    }
    const head = `\n**New exception:** [${title}](${link})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${datetime}\n**filename:** ${py(filename)}\n\`\`\`\n`;
    if (isDict(stacktrace) && filename !== null && filename !== "" && Array.isArray(stacktrace.frames)) {
      const frame = [...stacktrace.frames].reverse().find((f) => isDict(f) && f.filename === filename) as Dict | undefined;
      if (frame && frame.context_line !== undefined && frame.context_line !== null) {
        const text = new MessageText();
        text.write(`${head}\nTraceback:\n\`\`\`${highlight}\n`);
        writeTracebackLines(text, frame.pre_context);
        text.write(`---> ${py(frame.context_line)}\n`);
        writeTracebackLines(text, frame.post_context);
        text.write("\`\`\`\n");
        return [title, text.toString()];
      }
    }
    return [title, head];
  }
  if ("logentry" in event) {
    return [title, `\n**New message event:** [${title}](${link})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${datetime}\n\`\`\`\n`];
  }
  throw new Unsupported("unknown-event type");
}

function issueMessage(action: unknown, issue: Dict, actor: unknown): [string, string] {
  const title = py(issue.title);
  const actorName = () => py(asDict(actor, "actor").name);
  let assignee = "No one";
  if (isDict(issue.assignedTo) && Object.keys(issue.assignedTo).length > 0) {
    assignee = issue.assignedTo.type === "team" ? `team ${py(issue.assignedTo.name)}` : py(issue.assignedTo.name);
  }
  switch (action) {
    case "created":
      return [title, `\n**New issue created:** ${title}\n\`\`\`quote\n**level:** ${py(issue.level)}\n**timestamp:** ${shortTime(issue.lastSeen, "lastSeen")}\n**assignee:** ${assignee}\n\`\`\`\n`];
    case "resolved":
      return [title, `\nIssue **${title}** was marked as resolved by **${actorName()}**.\n`];
    case "assigned":
      return [title, `\nIssue **${title}** has now been assigned to **${assignee}** by **${actorName()}**.\n`];
    case "ignored":
      return [title, `\nIssue **${title}** was ignored by **${actorName()}**.\n`];
    default:
      throw new Unsupported("unknown-issue-action type");
  }
}

/** Python's urljoin(base, "events/<id>/") for the URLs Sentry sends. */
function joinUrl(base: string, relative: string): string {
  try {
    return new URL(relative, base).toString();
  } catch {
    return base.replace(/[^/]*$/, "") + relative;
  }
}

/** The legacy plugin's payload (`event` at the top, no `data`) as an event alert, or null for the deprecated format. */
function webhookPayloadAsData(payload: Dict): Dict | null {
  const event = isDict(payload.event) ? payload.event : {};
  if (!event.event_id) return null;
  event.web_url = joinUrl(asString(payload.url, "url"), `events/${py(event.event_id)}/`);
  const timestamp = Number(event.timestamp ?? event.received);
  const seconds = Math.floor(timestamp);
  const micros = Math.round((timestamp - seconds) * 1e6);
  const date = new Date((seconds + (micros >= 1e6 ? 1 : 0)) * 1000);
  event.datetime = date.toISOString().replace(/\.\d{3}Z$/, `.${String(micros % 1e6).padStart(6, "0")}+00:00`);
  return payload;
}

export const sentry: Integration = {
  name: "sentry",
  displayName: "Sentry",
  handle(request): WebhookResult {
    if (request.payload === undefined) return malformedJson();
    try {
      const payload = asDict(structuredClone(request.payload), "payload");
      let data: unknown = payload.data ?? null;
      if (data === null) data = webhookPayloadAsData(payload);
      let topic: string;
      let body: string;
      if (isDict(data) && Object.keys(data).length > 0) {
        if ("event" in data) [topic, body] = eventMessage(asDict(data.event, "event"));
        else if ("issue" in data) [topic, body] = issueMessage(payload.action, asDict(data.issue, "issue"), payload.actor);
        else throw new Unsupported(`[${Object.keys(data).map((k) => `'${k}'`).join(", ")}]`);
      } else {
        topic = py(payload.project_name);
        body = `\nNew [issue](${py(payload.url)}) (level: ${asString(payload.level, "level").toUpperCase()}):\n\n\`\`\` quote\n${py(payload.message)}\n\`\`\`\n`;
      }
      return { kind: "messages", messages: [{ topic, content: body }] };
    } catch (error) {
      if (error instanceof Unsupported) return { kind: "unsupported", event: error.message };
      if (error instanceof PayloadError) return { kind: "error", message: error.message };
      throw error;
    }
  },
};
