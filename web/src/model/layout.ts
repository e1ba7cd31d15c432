// The page's drawers at phone size: the left sidebar (views and channels)
// slides in over the messages and closes when you go somewhere.
import { create } from "zustand";
import { useNavigation } from "./navigation.ts";

export const useLayout = create<{ leftOpen: boolean }>(() => ({ leftOpen: false }));

export const layoutStore = {
  toggleLeft(): void {
    useLayout.setState((s) => ({ leftOpen: !s.leftOpen }));
  },
  close(): void {
    if (useLayout.getState().leftOpen) useLayout.setState({ leftOpen: false });
  },
};

// Following a link in a drawer opens that view: the drawer has done its job.
useNavigation.subscribe((state, previous) => {
  if (state.view !== previous.view) layoutStore.close();
});
