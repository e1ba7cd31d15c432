// Outgoing webhooks (Zulip's zerver/lib/outgoing_webhook.py), the pure part:
// which sends trigger which bots, the request bodies of both interfaces, how
// a reply is read, and the texts the bot writes when a delivery fails. The
// queue and the HTTP calls are in workers/outgoing-webhooks.ts.

/** users.bot_type of an outgoing-webhook bot (Zulip's UserProfile.OUTGOING_WEBHOOK_BOT). */
export const OUTGOING_WEBHOOK_BOT = 3;
/** bot_services.interface values (Zulip's Service.GENERIC / Service.SLACK). */
export const GENERIC_INTERFACE = 1;
export const SLACK_INTERFACE = 2;
/** Zulip's MAX_REQUEST_RETRIES: a request that timed out or could not connect is tried again this many times. */
export const MAX_REQUEST_RETRIES = 3;
/** The client name of the bot's replies (Zulip's get_client("OutgoingWebhookResponse")). */
export const RESPONSE_CLIENT = "OutgoingWebhookResponse";

/**
 * What the bot says (in the conversation, and to its owner) when its URL is
 * an internal address the operator has not allowed: Zulip's text for the 407
 * its outgoing proxy (Smokescreen) answers in that case.
 */
export const DISALLOWED_NETWORK = "The URL configured for the webhook is for a private or disallowed network.";
/** The most of a failed reply's body shown to the bot's owner (bytes, or characters of a text reply); the rest is counted, not shown. */
export const MAX_PAYLOAD_EXCERPT = 500;

export type Trigger = "mention" | "direct_message";

export interface BotTrigger {
  botId: number;
  trigger: Trigger;
}

/**
 * Zulip's get_service_bot_events: nothing when a bot sent the message (no bot
 * loops); in a channel, each outgoing-webhook bot mentioned (by name, or as a
 * member of a mentioned group it is subscribed to) that can read the channel;
 * in a direct message, each outgoing-webhook bot among the recipients.
 */
export function serviceBotTriggers(input: {
  senderIsBot: boolean;
  isChannel: boolean;
  /** Outgoing-webhook bots mentioned in the channel message that can read it. */
  mentionedBotIds: Iterable<number>;
  /** Outgoing-webhook bots among a direct message's recipients, the sender excepted. */
  recipientBotIds: Iterable<number>;
}): BotTrigger[] {
  if (input.senderIsBot) return [];
  const ids = new Set(input.isChannel ? input.mentionedBotIds : input.recipientBotIds);
  const trigger: Trigger = input.isChannel ? "mention" : "direct_message";
  return [...ids].sort((a, b) => a - b).map((botId) => ({ botId, trigger }));
}

/** The message object as Zulip's queue event carries it (MessageDict.finalize_payload, apply_markdown=False, keep_rendered_content=True). */
export type PayloadMessage = Record<string, unknown> & {
  id: number;
  content: string;
  sender_id: number;
  sender_full_name: string;
  type: "stream" | "private";
  timestamp: number;
  display_recipient: string | { id: number; email: string; full_name: string }[];
  stream_id?: number;
  subject: string;
};

/** The JSON body POSTed to a generic (Zulip-format) service. */
export function genericRequestBody(bot: { email: string; full_name: string }, token: string, trigger: Trigger, message: PayloadMessage): Record<string, unknown> {
  return {
    data: message.content,
    message,
    bot_email: bot.email,
    bot_full_name: bot.full_name,
    token,
    trigger,
  };
}

/**
 * The form fields POSTed to a Slack-compatible service (Slack's legacy
 * outgoing webhooks, with Zulip's T/C/U prefixes on the IDs). Channel
 * messages only: Zulip refuses direct messages for this interface.
 */
export function slackRequestBody(realm: { id: number; host: string }, botId: number, token: string, trigger: Trigger, message: PayloadMessage): [string, string][] {
  return [
    ["token", token],
    ["team_id", `T${realm.id}`],
    ["team_domain", realm.host],
    ["channel_id", `C${message.stream_id}`],
    ["channel_name", String(message.display_recipient)],
    ["thread_ts", String(message.timestamp)],
    ["timestamp", String(message.timestamp)],
    ["user_id", `U${message.sender_id}`],
    ["user_name", message.sender_full_name],
    ["text", message.content],
    ["trigger_word", trigger],
    ["service_id", String(botId)],
  ];
}

/** A reply Zulip refuses (its JsonableError in process_success_response). */
export class ReplyError extends Error {}

export interface ReplyMessage {
  content: string;
  /** JSON text of a widget, as the generic interface's `widget_content` (Zulip passes it to check_send_message). */
  widgetContent?: string | undefined;
}

/**
 * What the bot answers, from a 2xx reply's body (Zulip's
 * process_success_response and each interface's process_success): nothing
 * (null) for response_not_required, for the JSON string "" that old
 * botservers send, or for empty content.
 */
export function replyFromBody(body: string, iface: number): ReplyMessage | null {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new ReplyError("Invalid JSON in response");
  }
  if (json === "") return null;
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new ReplyError("Invalid response format");
  const reply = json as Record<string, unknown>;
  let result: ReplyMessage | null = null;
  if (iface === SLACK_INTERFACE) {
    // Zulip takes `text` as it is; a null one is no answer.
    if ("text" in reply && reply.text !== null) result = { content: pythonStr(reply.text) };
  } else if (reply.response_not_required !== undefined && pythonTruthy(reply.response_not_required)) {
    return null;
  } else if ("response_string" in reply) {
    // Deprecated in Zulip, still honoured.
    result = { content: pythonStr(reply.response_string) };
  } else if ("content" in reply) {
    result = { content: pythonStr(reply.content) };
    if ("widget_content" in reply && reply.widget_content !== null) {
      // Zulip hands it to orjson.loads, which refuses anything but text.
      if (typeof reply.widget_content !== "string") throw new ReplyError("Widgets: API programmer sent invalid JSON content");
      result.widgetContent = reply.widget_content;
    }
  }
  if (result === null || result.content.trim() === "") return null;
  return result;
}

/** How a failed delivery is described to the bot's owner (Zulip's notify_bot_owner arguments). */
export interface OwnerNotice {
  messageUrl: string;
  botFullName: string;
  exception?: { type: string; message: string };
  failureMessage?: string;
  statusCode?: number;
  /** The reply's body: bytes for a non-2xx reply (Python shows `b'…'`), text for a refused 2xx reply. */
  responseContent?: { kind: "bytes"; value: Uint8Array } | { kind: "text"; value: string };
}

/** The direct message the bot sends its owner (Zulip's notify_bot_owner, word for word). */
export function ownerNotificationContent(notice: OwnerNotice): string {
  let text = `[A message](${notice.messageUrl}) to your bot @_**${notice.botFullName}** triggered an outgoing webhook.`;
  if (notice.exception) {
    text += `\nWhen trying to send a request to the webhook service, an exception of type ${notice.exception.type} occurred:\n${codeBlock(notice.exception.message)}`;
  } else if (notice.failureMessage) {
    text += `\n${notice.failureMessage}`;
  } else if (notice.statusCode === 407) {
    text += "\nThe URL configured for the webhook is for a private or disallowed network.";
  } else if (notice.statusCode) {
    text += `\nThe webhook got a response with status code *${notice.statusCode}*.`;
  }
  const content = notice.responseContent;
  if (content && content.value.length > 0) {
    // Python's repr (as Zulip shows it), of a bounded excerpt: one line, in a
    // code block its text cannot close, so a reply cannot write Markdown,
    // mentions or a long message into the owner's conversation.
    let shown: string;
    let cut = "";
    if (content.kind === "bytes") {
      shown = pythonBytesRepr(content.value.subarray(0, MAX_PAYLOAD_EXCERPT));
      if (content.value.length > MAX_PAYLOAD_EXCERPT) cut = `\n(The first ${MAX_PAYLOAD_EXCERPT} of ${content.value.length} bytes.)`;
    } else {
      const chars = [...content.value];
      shown = pythonStrRepr(chars.slice(0, MAX_PAYLOAD_EXCERPT).join(""));
      if (chars.length > MAX_PAYLOAD_EXCERPT) cut = `\n(The first ${MAX_PAYLOAD_EXCERPT} of ${chars.length} characters.)`;
    }
    text += `\nThe response contains the following payload:\n${codeBlock(shown)}${cut}`;
  }
  return text;
}

/** A fenced code block around `text` whose fence is longer than any run of backticks in it, so the text cannot end it. */
export function codeBlock(text: string): string {
  const longestRun = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(Math.max(3, longestRun + 1));
  return `${fence}\n${text}\n${fence}`;
}

/** The conversation's notice of a failure, sent as the bot (Zulip's fail_with_message). */
export function failureContent(failureMessage: string): string {
  return `Failure! ${failureMessage}`;
}

/** Python's truthiness of a JSON value. */
function pythonTruthy(value: unknown): boolean {
  if (value === null || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value as object).length > 0;
  return true;
}

/** Python's str() of a JSON value (Zulip calls str() on the reply's content). */
export function pythonStr(value: unknown): string {
  return typeof value === "string" ? value : pythonRepr(value);
}

/** Python's repr() of a JSON value. */
export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return pythonNumber(value);
  if (typeof value === "string") return pythonStrRepr(value);
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(", ")}]`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${pythonStrRepr(k)}: ${pythonRepr(v)}`)
    .join(", ")}}`;
}

function pythonNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e16) return String(n);
  // Python writes floats with at least one decimal and exponents as e+NN.
  const s = String(n);
  return s.includes("e") ? s.replace(/e(\d)/, "e+$1") : s;
}

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Cs}\p{Zl}\p{Zp}\p{Zs}]/u;

/** Python's repr() of a str: single quotes unless only double quotes avoid escaping. */
export function pythonStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch !== " " && NON_PRINTABLE.test(ch)) out += code <= 0xff ? `\\x${hex(code, 2)}` : code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
    else out += ch;
  }
  return out + quote;
}

/** Python's repr() of bytes: b'…' with everything outside printable ASCII as \xNN. */
export function pythonBytesRepr(bytes: Uint8Array): string {
  const hasSingle = bytes.includes(0x27);
  const quote = hasSingle && !bytes.includes(0x22) ? '"' : "'";
  let out = `b${quote}`;
  for (const b of bytes) {
    const ch = String.fromCharCode(b);
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (b < 0x20 || b >= 0x7f) out += `\\x${hex(b, 2)}`;
    else out += ch;
  }
  return out + quote;
}
