// The emoji names a message may use: the server's emoji data
// (server_emoji_data_url, Zulip's emoji_api.json: code → names) fetched once
// when first needed, and the organization's custom emoji from /register and
// realm_emoji events.
import { create } from "zustand";

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
    if (dataUrl === null) return Promise.reject(new Error("The server did not say where its emoji data is."));
    emojiDocument ??= fetch(dataUrl, { credentials: "same-origin" })
      .then((r) => {
        if (!r.ok) throw new Error(`Emoji data: the server answered ${r.status}`);
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

/** Emoji whose name starts with (then contains) the query, custom emoji first. */
export function searchEmoji(query: string, limit = 8): EmojiEntry[] {
  const q = query.toLowerCase();
  const { unicode, realm } = useEmoji.getState();
  const custom: EmojiEntry[] = Object.values(realm)
    .filter((e) => !e.deactivated)
    .map((e) => ({ name: e.name, code: e.id, type: "realm_emoji", url: e.source_url }));
  const all = [...custom, ...(unicode ?? [])];
  const starts = all.filter((e) => e.name.startsWith(q));
  const contains = q.length >= 2 ? all.filter((e) => !e.name.startsWith(q) && e.name.includes(q)) : [];
  return [...starts, ...contains].slice(0, limit);
}
