// What the page shows: the view named by the location hash.
import { create } from "zustand";
import { api } from "../api/client.ts";
import type { Message } from "../api/types.ts";
import { channelName } from "./channels.ts";
import { useMessages } from "./messages.ts";
import { conversationNarrow, narrowHash, parseHash, sameNarrow, viewHash, type View } from "./narrow.ts";
import { useSettings } from "./settings.ts";
import { useUsers } from "./users.ts";

export interface NavigationState {
  view: View;
}

export const useNavigation = create<NavigationState>(() => ({ view: { kind: "inbox" } }));

/** Where an empty location leads: the user's home view (web_home_view), as Zulip's web app does. */
const HOME_VIEW_HASHES: Record<string, string> = { inbox: "#inbox", recent_topics: "#recent", all_messages: "#all_messages" };

/** Where the selected message of the view on screen is noted (conversation-moves.ts writes it), for a reload to restore. */
export const SELECTION_STORAGE_KEY = "parley-selected";

/**
 * The view the location names. A message list reloaded (or registered
 * again) opens around the message that was selected in it, as Zulip's web
 * app keeps its selected message across a reload.
 */
/** The hash of the user's home view (web_home_view), kept by user_settings events: where the logo and an empty location lead. */
export function homeHash(setting: unknown): string {
  return HOME_VIEW_HASHES[String(setting)] ?? "#inbox";
}

export function useHomeHash(): string {
  return useSettings((s) => homeHash(s.settings.web_home_view));
}

export function locationView(selfId: number): View {
  let hash = window.location.hash;
  if (hash === "" || hash === "#") hash = homeHash(useSettings.getState().settings.web_home_view);
  const view = parseHash(hash, selfId);
  if (view.kind !== "messages" || view.near !== undefined) return view;
  try {
    const noted = JSON.parse(window.sessionStorage.getItem(SELECTION_STORAGE_KEY) ?? "null") as { hash: string; id: number } | null;
    if (noted && noted.hash === window.location.hash && Number.isSafeInteger(noted.id) && noted.id > 0) return { ...view, near: noted.id };
  } catch {
    // Storage disabled or garbled: the view opens at its first unread.
  }
  return view;
}

export function readLocation(): void {
  const view = locationView(useUsers.getState().selfId);
  useNavigation.setState({ view });
  if (view.kind === "messages" && view.with) void followWithLink(view);
}

/** Shows `view` in place of the one on screen, writing its hash without a new history entry. */
export function replaceView(view: View, hash: string): void {
  useNavigation.setState({ view });
  window.history.replaceState(window.history.state, "", hash);
}

/** A /with/ID link follows the message to the conversation it is in now (it may have moved since the link was made). */
async function followWithLink(view: Extract<View, { kind: "messages" }>): Promise<void> {
  const id = view.near!;
  let message: Message | undefined = useMessages.getState().byId[id];
  if (!message) {
    try {
      message = (await api.get<{ message: Message }>(`/messages/${id}`, { apply_markdown: true })).message;
    } catch {
      // Not readable (or gone): the link's own conversation stays on screen.
      return;
    }
  }
  if (useNavigation.getState().view !== view) return;
  const conversation = conversationNarrow(message, useUsers.getState().selfId);
  if (sameNarrow(conversation, view.narrow)) return;
  replaceView({ kind: "messages", narrow: conversation, near: id, with: true }, `${narrowHash(conversation, { channelName })}/with/${id}`);
}

export function hrefFor(view: View): string {
  return viewHash(view, { channelName });
}

export function navigate(view: View): void {
  window.location.hash = hrefFor(view);
}
