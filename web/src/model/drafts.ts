// Unsent compose text per conversation, kept in this browser across reloads
// (localStorage, per signed-in user), as Zulip's web app keeps its drafts.
// Only message text is stored here: never credentials.

const PREFIX = "parley-drafts:";
const MAX_AGE_MS = 30 * 24 * 3600 * 1000;

interface Stored {
  [conversation: string]: { text: string; topic?: string; at: number };
}

function storageKey(selfId: number): string {
  return `${PREFIX}${selfId}`;
}

function read(selfId: number): Stored {
  try {
    const raw = window.localStorage.getItem(storageKey(selfId));
    return raw ? (JSON.parse(raw) as Stored) : {};
  } catch {
    return {};
  }
}

function write(selfId: number, drafts: Stored): void {
  try {
    window.localStorage.setItem(storageKey(selfId), JSON.stringify(drafts));
  } catch {
    // Storage full or disabled: drafts then last as long as the page.
  }
}

export const draftsStore = {
  get(selfId: number, conversation: string): { text: string; topic?: string } | undefined {
    const entry = read(selfId)[conversation];
    if (!entry || Date.now() - entry.at > MAX_AGE_MS) return undefined;
    return { text: entry.text, topic: entry.topic };
  },
  save(selfId: number, conversation: string, text: string, topic?: string): void {
    const drafts = read(selfId);
    if (text.trim() === "") delete drafts[conversation];
    else drafts[conversation] = { text, topic, at: Date.now() };
    // Old drafts go, so storage does not grow without end.
    for (const [key, entry] of Object.entries(drafts)) if (Date.now() - entry.at > MAX_AGE_MS) delete drafts[key];
    write(selfId, drafts);
  },
  clear(selfId: number, conversation: string): void {
    this.save(selfId, conversation, "");
  },
};
