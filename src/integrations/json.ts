// Zulip's "JSON formatter" integration (zerver/webhooks/json): any JSON body,
// posted as a ```json code block of Python's json.dumps(payload, indent=2)
// (key order kept, non-ASCII escaped), in the topic "JSON". The printing
// stops once the message is certain to be cut (MessageText): indentation
// grows with depth, so a payload's printed form may be many times its size.
import { malformedJson, type Integration } from "./integration.ts";
import { MessageText } from "./normalize.ts";
import { pyJsonLoads, pyJsonWrite, type PyValue } from "./pyjson.ts";

/** The message's content for a payload, written into `text` (exported to count the work: pyJsonWrite's values visited). */
export function jsonMessageContent(payload: PyValue, text: MessageText): number {
  text.write("```json\n");
  const visited = pyJsonWrite(text, payload, 2);
  text.write("\n```");
  return visited;
}

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
    const text = new MessageText();
    jsonMessageContent(payload, text);
    return { kind: "messages", messages: [{ topic: "JSON", content: text.toString() }] };
  },
};
