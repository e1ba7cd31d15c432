// What the page shows: the view named by the location hash.
import { create } from "zustand";
import { channelName } from "./channels.ts";
import { parseHash, viewHash, type View } from "./narrow.ts";
import { useUsers } from "./users.ts";

export interface NavigationState {
  view: View;
}

export const useNavigation = create<NavigationState>(() => ({ view: { kind: "inbox" } }));

export function readLocation(): void {
  useNavigation.setState({ view: parseHash(window.location.hash, useUsers.getState().selfId) });
}

export function hrefFor(view: View): string {
  return viewHash(view, { channelName });
}

export function navigate(view: View): void {
  window.location.hash = hrefFor(view);
}
