// Prometheus Alertmanager (zerver/webhooks/alertmanager): alerts grouped by
// the `name` label or annotation (URL parameter `name`, default "instance"),
// one message per topic and status, each alert a line of its `desc` field
// (default "alertname") with a link to its graph.
import { malformedJson, type Integration, type WebhookMessage } from "./integration.ts";
import { asDict, asList, asString, PayloadError } from "./payload.ts";

export const alertmanager: Integration = {
  name: "alertmanager",
  displayName: "Alertmanager",
  handle(request) {
    if (request.payload === undefined) return malformedJson();
    try {
      const nameField = request.query.name ?? "instance";
      const descField = request.query.desc ?? "alertname";
      const topics = new Map<string, { firing: string[]; resolved: string[] }>();
      for (const [i, raw] of asList(asDict(request.payload, "payload").alerts, 'payload["alerts"]').entries()) {
        const alert = asDict(raw, `payload["alerts"][${i}]`);
        const labels = alert.labels === undefined ? {} : asDict(alert.labels, "labels");
        const annotations = alert.annotations === undefined ? {} : asDict(alert.annotations, "annotations");
        const name = asString(labels[nameField] ?? annotations[nameField] ?? "(unknown)", nameField);
        const desc = asString(labels[descField] ?? annotations[descField] ?? `<missing field: ${descField}>`, descField);
        const url = asString(alert.generatorURL, "generatorURL").replaceAll("tab=1", "tab=0");
        const status = asString(alert.status, "status");
        if (status !== "firing" && status !== "resolved") throw new PayloadError(`Unknown alert status '${status}'`);
        let entry = topics.get(name);
        if (!entry) topics.set(name, (entry = { firing: [], resolved: [] }));
        entry[status].push(`${desc} ([source](${url}))`);
      }
      const messages: WebhookMessage[] = [];
      for (const [topic, statuses] of topics) {
        for (const status of ["firing", "resolved"] as const) {
          const lines = statuses[status];
          if (lines.length === 0) continue;
          const head = status === "firing" ? ":alert: **FIRING**" : ":squared_ok: **Resolved**";
          const content = lines.length === 1 ? `${head} ${lines[0]}` : `${head}\n${lines.map((l) => `* ${l}`).join("\n")}`;
          messages.push({ topic, content });
        }
      }
      return { kind: "messages", messages };
    } catch (error) {
      if (error instanceof PayloadError) return { kind: "error", message: error.message };
      throw error;
    }
  },
};
