// Zulip's "JSON formatter" integration (zerver/webhooks/json): any JSON body,
// posted as a ```json code block of Python's json.dumps(payload, indent=2)
// (key order kept, non-ASCII escaped), in the topic "JSON".
import { malformedJson, type Integration } from "./integration.ts";
import { pyJsonDumps, pyJsonLoads, type PyValue } from "./pyjson.ts";

export const json: Integration = {
  name: "json",
  displayName: "JSON",
  handle(request) {
    let payload: PyValue;
    try {
      payload = pyJsonLoads(request.rawBody);
    } catch {
      return malformedJson();
    }
    return { kind: "messages", messages: [{ topic: "JSON", content: "```json\n" + pyJsonDumps(payload, 2) + "\n```" }] };
  },
};
