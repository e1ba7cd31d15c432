// The document /register advertises as server_emoji_data_url: Zulip's
// emoji_api.json, `{"code_to_names": {code: [canonical name, aliases…]}}`,
// made from the same emoji tables the Markdown renderer uses, so that a
// client's picker and autocomplete offer exactly the names messages accept.
// Built once, on first use; its URL carries a hash of its contents, as
// Zulip's content-hashed static URL does, so it can be cached for good.
import crypto from "node:crypto";
import zlib from "node:zlib";
import { emojiCodeToNames } from "../markdown/emoji.ts";

export interface EmojiDataFile {
  json: Buffer;
  /** The same bytes gzipped, for clients that accept it (they all do). */
  gzip: Buffer;
  /** 16 hex digits of SHA-256 of `json`: part of the URL, and the ETag. */
  hash: string;
}

let built: EmojiDataFile | undefined;

export function emojiDataFile(): EmojiDataFile {
  if (!built) {
    const json = Buffer.from(JSON.stringify({ code_to_names: emojiCodeToNames() }));
    built = { json, gzip: zlib.gzipSync(json, { level: 9 }), hash: crypto.createHash("sha256").update(json).digest("hex").slice(0, 16) };
  }
  return built;
}

export const EMOJI_DATA_PATH = "/static/generated/emoji";

/** server_emoji_data_url: the versioned URL of the current document. */
export function serverEmojiDataUrl(externalUrl: string): string {
  return `${externalUrl}${EMOJI_DATA_PATH}/emoji_api.${emojiDataFile().hash}.json`;
}
