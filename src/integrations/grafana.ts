// Grafana alerts (zerver/webhooks/grafana): the body is JSON whatever the
// Content-Type says. Grafana 8+ payloads (`alerts`) give one message per
// alert, topic "[alertname]" (or "[fingerprint]"); Grafana 7 payloads one
// message, topic the alert title. Values print as Python prints them.
import { malformedJson, type Integration, type WebhookMessage } from "./integration.ts";
import { PayloadError } from "./payload.ts";
import { pythonStrip } from "../domain/text.ts";
import { PyDict, PyFloat, pyJsonLoads, pyStr, type PyValue } from "./pyjson.ts";

const STATUS = (icon: string, state: string) => `${icon} **${state}**\n\n`;

function dict(value: PyValue | undefined, name: string): PyDict {
  if (!(value instanceof PyDict)) throw new PayloadError(`${name} is not a dict`);
  return value;
}

function str(value: PyValue | undefined, name: string): string {
  if (typeof value !== "string") throw new PayloadError(`${name} is not a string`);
  return value;
}

/** Python truthiness. */
function truthy(value: PyValue | undefined): boolean {
  if (value === undefined || value === null || value === false || value === 0 || value === "") return false;
  if (value instanceof PyFloat) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  if (value instanceof PyDict) return value.entries.size > 0;
  return true;
}

/** Zulip's global time syntax around the time exactly as Grafana sent it. */
export function globalTime(text: string): string {
  return `<time:${text}>`;
}

function alertMessages(payload: PyDict): WebhookMessage[] {
  const alerts = payload.get("alerts");
  if (!Array.isArray(alerts)) throw new PayloadError('payload["alerts"] is not a list');
  return alerts.map((raw, i) => {
    const alert = dict(raw, `payload["alerts"][${i}]`);
    const status = str(alert.get("status"), "status");
    if (status !== "firing" && status !== "resolved") throw new PayloadError(`status is not one of 'firing', 'resolved'`);
    let body = STATUS(status === "firing" ? ":alert:" : ":checkbox:", status.toUpperCase());
    const labels = dict(alert.get("labels"), "labels");
    let topic: string;
    if (truthy(labels.get("alertname"))) {
      const alertname = str(labels.get("alertname"), "alertname");
      topic = `[${alertname}]`;
      body += `**${alertname}**\n\n`;
    } else {
      topic = `[${str(alert.get("fingerprint"), "fingerprint")}]`;
    }
    body += `This alert was fired at ${globalTime(str(alert.get("startsAt"), "startsAt"))}.`;
    const endsAt = str(alert.get("endsAt"), "endsAt");
    if (endsAt !== "0001-01-01T00:00:00Z") body += `\n\nThis alert was resolved at ${globalTime(endsAt)}.`;
    if (labels.entries.size > 0) {
      let info = "";
      for (const [key, value] of labels.entries) info += `- ${key}: ${str(value, key)}\n`;
      body += `\n\nLabels:\n${info}\n`;
    }
    if (truthy(alert.get("values"))) {
      let info = "";
      for (const [key, value] of dict(alert.get("values"), "values").entries) info += `- ${key}: ${pyStr(value)}\n`;
      body += `Values:\n${info}\n`;
    } else if (truthy(alert.get("valueString"))) {
      body += `Values:\n${str(alert.get("valueString"), "valueString")}\n` + "\n";
    }
    if (truthy(alert.get("annotations"))) {
      let info = "";
      for (const [key, value] of dict(alert.get("annotations"), "annotations").entries) info += `- ${key}: ${str(value, key)}\n`;
      body += `Annotations:\n${info}`;
    }
    if (truthy(alert.get("generatorURL"))) body += `\n[Generator](${str(alert.get("generatorURL"), "generatorURL")})`;
    if (truthy(alert.get("silenceURL"))) body += `\n[Silence](${str(alert.get("silenceURL"), "silenceURL")})`;
    if (truthy(alert.get("imageURL"))) body += `\n[Image](${str(alert.get("imageURL"), "imageURL")})`;
    body += "\n";
    return { topic, content: body, eventType: status };
  });
}

const LEGACY_STATES = ["no_data", "paused", "alerting", "ok", "pending", "unknown"];

function legacyMessage(payload: PyDict): WebhookMessage {
  const topic = str(payload.get("title"), "title");
  let evalMatches = "";
  const matches = payload.get("evalMatches");
  if (matches !== undefined && matches !== null) {
    if (!Array.isArray(matches)) throw new PayloadError("evalMatches is not a list");
    for (const [i, raw] of matches.entries()) {
      const match = dict(raw, `evalMatches[${i}]`);
      const value = match.get("value");
      if (!(value === null || typeof value === "number" || typeof value === "bigint" || value instanceof PyFloat)) throw new PayloadError("value is not a number");
      evalMatches += `**${str(match.get("metric"), "metric")}:** ${pyStr(value)}\n`;
    }
  }
  const message = payload.get("message") !== undefined ? str(payload.get("message"), "message") + "\n\n" : "";
  const state = str(payload.get("state"), "state");
  if (!LEGACY_STATES.includes(state)) throw new PayloadError(`state is not one of ${LEGACY_STATES.map((s) => `'${s}'`).join(", ")}`);
  const icon = state === "alerting" ? ":alert:" : state === "ok" ? ":squared_ok:" : ":info:";
  let body = `${STATUS(icon, state.toUpperCase())}[${str(payload.get("ruleName"), "ruleName")}](${str(payload.get("ruleUrl"), "ruleUrl")})\n\n${message}${evalMatches}`;
  if (payload.get("imageUrl") !== undefined) body += `\n[Click to view visualization](${str(payload.get("imageUrl"), "imageUrl")})`;
  return { topic, content: pythonStrip(body), eventType: state };
}

export const grafana: Integration = {
  name: "grafana",
  displayName: "Grafana",
  handle(request) {
    let payload: PyValue;
    try {
      payload = pyJsonLoads(request.rawBody);
    } catch {
      return malformedJson();
    }
    try {
      const root = dict(payload, "payload");
      return { kind: "messages", messages: root.entries.has("alerts") ? alertMessages(root) : [legacyMessage(root)] };
    } catch (error) {
      if (error instanceof PayloadError) return { kind: "error", message: error.message };
      throw error;
    }
  },
};
