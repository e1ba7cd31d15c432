// The emoji names a message may use: the server's emoji data
// (server_emoji_data_url, Zulip's emoji_api.json: code → names) fetched once
// when first needed, and the organization's custom emoji from /register and
// realm_emoji events.
import { create } from "zustand";
import { t } from "../i18n.ts";

export interface EmojiEntry {
  name: string;
  /** Unicode code points ("1f600") or a custom emoji's id. */
  code: string;
  type: "unicode_emoji" | "realm_emoji";
  /** Custom emoji only. */
  url?: string;
}

export interface RealmEmoji {
  id: string;
  name: string;
  source_url: string;
  deactivated: boolean;
  still_url?: string | null;
}

export interface EmojiState {
  unicode: EmojiEntry[] | null;
  realm: Record<string, RealmEmoji>;
}

export const useEmoji = create<EmojiState>(() => ({ unicode: null, realm: {} }));

let dataUrl: string | null = null;
let loading: Promise<void> | null = null;
let emojiDocument: Promise<Record<string, string[]>> | null = null;

export const emojiStore = {
  load(serverEmojiDataUrl: string | undefined, realmEmoji: Record<string, RealmEmoji> | undefined): void {
    // Same origin as the page whatever host the server was told it is at.
    dataUrl = serverEmojiDataUrl ? new URL(serverEmojiDataUrl, window.location.href).pathname : null;
    useEmoji.setState({ realm: realmEmoji ?? {} });
  },
  setRealmEmoji(realmEmoji: Record<string, RealmEmoji>): void {
    useEmoji.setState({ realm: realmEmoji });
  },
  /** The server's emoji document (code → names), fetched once for the typeahead and the picker alike. */
  codeToNames(): Promise<Record<string, string[]>> {
    if (dataUrl === null) return Promise.reject(new Error(t("The server did not say where its emoji data is.")));
    emojiDocument ??= fetch(dataUrl, { credentials: "same-origin" })
      .then((r) => {
        if (!r.ok) throw new Error(t("Emoji data: the server answered {{status}}", { status: r.status }));
        return r.json() as Promise<{ code_to_names: Record<string, string[]> }>;
      })
      .then((data) => data.code_to_names)
      .catch((error: unknown) => {
        emojiDocument = null;
        throw error;
      });
    return emojiDocument;
  },
  /** Fetches the server's emoji names once; later calls wait for the same fetch. */
  ensureUnicode(): Promise<void> {
    if (useEmoji.getState().unicode !== null || dataUrl === null) return Promise.resolve();
    loading ??= this.codeToNames()
      .then((codeToNames) => {
        const entries: EmojiEntry[] = [];
        for (const [code, names] of Object.entries(codeToNames)) for (const name of names) entries.push({ name, code, type: "unicode_emoji" });
        entries.sort((a, b) => a.name.localeCompare(b.name));
        useEmoji.setState({ unicode: entries });
      })
      .catch(() => {
        loading = null;
      });
    return loading;
  },
};

// Zulip's popular emoji (web/src/typeahead.ts popular_emojis): +1, tada,
// slight_smile, heart, working_on_it, octopus.
const POPULAR_CODES = new Set(["1f44d", "1f389", "1f642", "2764", "1f6e0", "1f419"]);

/**
 * Emoji for a typed name, ranked as Zulip's sort_emojis: the exact name, then
 * popular emoji with a word starting with the query, then names starting with
 * the query, then names with a later word starting with it (custom emoji first
 * within each group); one entry per emoji, under its best-matching name.
 */
export function searchEmoji(query: string, limit = 8): EmojiEntry[] {
  const q = query.trim().toLowerCase().replace(/ /g, "_");
  const { unicode, realm } = useEmoji.getState();
  const custom: EmojiEntry[] = Object.values(realm)
    .filter((e) => !e.deactivated)
    .map((e) => ({ name: e.name, code: e.id, type: "realm_emoji", url: e.source_url }));
  const all = [...custom, ...(unicode ?? [])];
  const wordMatch = (name: string) => name.split("_").some((piece) => piece.startsWith(q));
  const exact: EmojiEntry[] = [];
  const popular: EmojiEntry[] = [];
  const prefix: EmojiEntry[] = [];
  const word: EmojiEntry[] = [];
  for (const e of all) {
    const name = e.name.toLowerCase();
    if (name === q) exact.push(e);
    else if (e.type === "unicode_emoji" && POPULAR_CODES.has(e.code) && wordMatch(name)) popular.push(e);
    else if (name.startsWith(q)) prefix.push(e);
    else if (wordMatch(name)) word.push(e);
  }
  const customFirst = (list: EmojiEntry[]) => [...list.filter((e) => e.type === "realm_emoji"), ...list.filter((e) => e.type !== "realm_emoji")];
  const seen = new Set<string>();
  const result: EmojiEntry[] = [];
  // A custom emoji of the same name as a Unicode one takes its place, as in Zulip.
  const customNames = new Set(custom.map((e) => e.name));
  for (const e of [...customFirst(exact), ...popular, ...customFirst(prefix), ...customFirst(word)]) {
    const key = `${e.type}:${e.code}`;
    if (seen.has(key) || (e.type === "unicode_emoji" && customNames.has(e.name))) continue;
    seen.add(key);
    result.push(e);
    if (result.length >= limit) break;
  }
  return result;
}
