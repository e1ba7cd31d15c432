// What Zulip does to every incoming-webhook message after the integration's
// handler: check_send_webhook_message replaces the topic with the `topic`
// parameter when one is given (channel messages only), then the send path
// (zerver/lib/addressee.py and zerver/actions/message_send.py check_message,
// zerver/lib/message.py normalize_body/truncate_topic) strips the topic,
// turns "(no topic)" and "general chat" into the empty topic, cuts a topic
// over 60 code points to 57 + "...", and drops trailing whitespace and leading
// newlines of the content, cutting it at 10000 code points with
// "\n[message truncated]". The send action applies the same rules again (they
// are idempotent); having them here lets an integration's output be compared
// with Zulip's expected strings without a server.
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from "../domain/limits.ts";
import { EMPTY_TOPIC_FALLBACK_NAME, truncate } from "../domain/messages.ts";
import { isPyWhitespaceUnit, pythonStrip } from "../domain/text.ts";
import type { WebhookMessage } from "./integration.ts";

/** Zulip's Message.EMPTY_TOPIC_FALLBACK_NAME and the legacy "(no topic)": both mean the empty topic. */
const EMPTY_TOPIC_NAMES: ReadonlySet<string> = new Set(["(no topic)", EMPTY_TOPIC_FALLBACK_NAME]);

/** A topic as Zulip stores a webhook's: stripped, empty-topic names mapped to "", cut to 60 code points with "...". */
export function normalizeWebhookTopic(topic: string): string {
  const stripped = pythonStrip(topic);
  const named = EMPTY_TOPIC_NAMES.has(stripped) ? "" : stripped;
  return truncate(named, MAX_TOPIC_LENGTH, "...");
}

/**
 * Content as Zulip stores a webhook's: Python's rstrip() (Unicode whitespace)
 * and lstrip("\n"), then cut to 10000 code points ending "\n[message truncated]".
 * May return "": Zulip then refuses the send ("Message must not be empty").
 */
export function normalizeWebhookContent(content: string): string {
  const stripped = pythonRstrip(content).replace(/^\n+/, "");
  return truncate(stripped, MAX_MESSAGE_LENGTH, "\n[message truncated]");
}

/**
 * A message's content written piece by piece, which knows when it has
 * enough: once a character other than whitespace stands past `limit` code
 * points (leading newlines aside), normalizeWebhookContent is certain to cut
 * the content before it, so nothing written later can change the message.
 * From then on writes are dropped and `full` is true, and formatters that can
 * produce far more than a message (json.ts's pretty-printing: indentation
 * grows with depth) stop there. The content is the same as if everything had
 * been written: normalizeWebhookContent keeps the first `limit` - 20 code
 * points, which were all written, and adds "\n[message truncated]".
 */
export class MessageText {
  readonly #pieces: string[] = [];
  /** Code points written after the leading newlines. */
  #length = 0;
  #leadingNewlines = true;
  #full = false;
  /** The last UTF-16 unit written: a surrogate pair may straddle two pieces. */
  #previousUnit = 0;

  constructor(readonly limit: number = MAX_MESSAGE_LENGTH) {}

  get full(): boolean {
    return this.#full;
  }

  write(piece: string): void {
    if (this.#full) return;
    this.#pieces.push(piece);
    for (let i = 0; i < piece.length; i++) {
      const unit = piece.charCodeAt(i);
      const previous = this.#previousUnit;
      this.#previousUnit = unit;
      if (this.#leadingNewlines && unit === 0x0a) continue;
      this.#leadingNewlines = false;
      // The second half of a surrogate pair is the same code point.
      if (unit >= 0xdc00 && unit <= 0xdfff && previous >= 0xd800 && previous <= 0xdbff) continue;
      if (this.#length++ >= this.limit && !isPyWhitespaceUnit(unit)) {
        this.#full = true;
        return;
      }
    }
  }

  toString(): string {
    return this.#pieces.join("");
  }
}

/**
 * One message as it would be posted. `userTopic` is the request's `topic`
 * parameter: when given it replaces the integration's topic, as
 * check_send_webhook_message does for channel messages.
 */
export function normalizeWebhookMessage(message: WebhookMessage, userTopic?: string): WebhookMessage {
  return {
    topic: normalizeWebhookTopic(userTopic ?? message.topic),
    content: normalizeWebhookContent(message.content),
  };
}

const PY_TRAILING_WHITESPACE = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/u;

function pythonRstrip(text: string): string {
  return text.replace(PY_TRAILING_WHITESPACE, "");
}
