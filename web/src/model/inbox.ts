// What the inbox remembers about how you look at it: which channels (and
// the direct message section) are collapsed, kept in this browser across
// reloads as Zulip's web app keeps them, and the text it is filtered by,
// kept while you visit other views.
import { create } from "zustand";

const COLLAPSED_KEY = "parley-inbox-collapsed";

/** "dm" for the direct message section, "channel:<id>" for a channel. */
export type InboxSection = "dm" | `channel:${number}`;

function readCollapsed(): Record<string, true> {
  try {
    const list = JSON.parse(window.localStorage.getItem(COLLAPSED_KEY) ?? "[]") as unknown;
    return Array.isArray(list) ? Object.fromEntries(list.filter((k): k is string => typeof k === "string").map((k) => [k, true])) : {};
  } catch {
    return {};
  }
}

export interface InboxState {
  collapsed: Record<string, true>;
  filter: string;
}

export const useInbox = create<InboxState>(() => ({ collapsed: readCollapsed(), filter: "" }));

export const inboxStore = {
  toggle(section: InboxSection): void {
    useInbox.setState((s) => {
      const collapsed = { ...s.collapsed };
      if (collapsed[section]) delete collapsed[section];
      else collapsed[section] = true;
      try {
        window.localStorage.setItem(COLLAPSED_KEY, JSON.stringify(Object.keys(collapsed)));
      } catch {
        // Storage disabled: remembered for this page only.
      }
      return { collapsed };
    });
  },
  setFilter(filter: string): void {
    useInbox.setState({ filter });
  },
};
