// Slack-compatible incoming webhooks (zerver/webhooks/slack_incoming): the
// message JSON as the body (Content-Type application/json) or in the form
// field `payload`; blocks and attachments rendered to Markdown, else the
// icon emoji and text; Slack's link and emphasis syntax converted. Topic: the
// `topic` parameter, else the payload's channel without its # or @, else the
// empty topic. Replies are Slack's: {"ok": true} / {"ok": false, "error"}.
import type { Integration, WebhookRequest, WebhookResult } from "./integration.ts";
import { isDict, truthy } from "./payload.ts";
import { PayloadError } from "./payload.ts";
import { convertSlackFormatting, renderAttachment, renderBlock, replaceLinks } from "./slack-format.ts";
import { pythonStrip } from "../domain/text.ts";

function mediaType(request: WebhookRequest): string {
  return (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
}

export const slackIncoming: Integration = {
  name: "slack_incoming",
  displayName: "SlackIncoming",
  slackResponses: true,
  handle(request): WebhookResult {
    let text: string;
    if (mediaType(request) === "application/json") text = request.rawBody;
    else if (request.query.payload !== undefined) text = request.query.payload;
    else return { kind: "error", message: "Missing 'payload' argument", code: "REQUEST_VARIABLE_MISSING", extra: { var_name: "payload" } };
    let payload: unknown;
    try {
      payload = JSON.parse(text);
    } catch {
      return { kind: "error", message: "Malformed JSON", code: "INVALID_JSON" };
    }
    try {
      if (!isDict(payload)) throw new PayloadError("payload is not a dict");
      let topic = request.userTopic;
      if (topic === undefined && "channel" in payload) {
        if (typeof payload.channel !== "string") throw new PayloadError('payload["channel"] is not a string');
        topic = payload.channel.replace(/^[@#]/, "");
      }
      const pieces: string[] = [];
      if (truthy(payload.blocks) && Array.isArray(payload.blocks)) pieces.push(...payload.blocks.map(renderBlock));
      if (truthy(payload.attachments) && Array.isArray(payload.attachments)) pieces.push(...payload.attachments.map(renderAttachment));
      let body = pieces
        .map((p) => pythonStrip(p))
        .filter((p) => p !== "")
        .join("\n\n");
      if (body === "" && truthy(payload.text)) {
        if (truthy(payload.icon_emoji)) {
          if (typeof payload.icon_emoji !== "string") throw new PayloadError('payload["icon_emoji"] is not a string');
          body = payload.icon_emoji + " ";
        }
        if (typeof payload.text !== "string") throw new PayloadError('payload["text"] is not a string');
        body = pythonStrip(body + payload.text);
      }
      if (body === "") return { kind: "ignore" };
      body = convertSlackFormatting(pythonStrip(replaceLinks(body)));
      return { kind: "messages", messages: [{ topic: topic ?? "(no topic)", content: body }] };
    } catch (error) {
      if (error instanceof PayloadError) return { kind: "error", message: error.message };
      throw error;
    }
  },
};
