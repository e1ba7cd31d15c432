// The right sidebar's user list: hidden or shown on a wide screen (the
// choice is remembered in this browser), and open or closed as a drawer on a
// phone-sized one, where it starts closed.
import { create } from "zustand";
import { useNavigation } from "./navigation.ts";

const HIDDEN_KEY = "parley.userListHidden";

function storedHidden(): boolean {
  try {
    return localStorage.getItem(HIDDEN_KEY) === "1";
  } catch {
    return false;
  }
}

export const PHONE_QUERY = "(max-width: 700px)";

export const useUserList = create<{ hidden: boolean; drawerOpen: boolean }>(() => ({ hidden: storedHidden(), drawerOpen: false }));

export const userList = {
  /** Shows or hides the list: the wide layout's column, or the phone layout's drawer. */
  toggle(phone: boolean): void {
    if (phone) {
      useUserList.setState((s) => ({ drawerOpen: !s.drawerOpen }));
      return;
    }
    const hidden = !useUserList.getState().hidden;
    useUserList.setState({ hidden });
    try {
      localStorage.setItem(HIDDEN_KEY, hidden ? "1" : "0");
    } catch {
      // Private mode: remembered for this page only.
    }
  },
  /** Shows the list (the `w` shortcut, before its filter takes the focus). */
  show(phone: boolean): void {
    if (phone) useUserList.setState({ drawerOpen: true });
    else if (useUserList.getState().hidden) this.toggle(false);
  },
  closeDrawer(): void {
    useUserList.setState({ drawerOpen: false });
  },
};

// Going somewhere from the drawer (a card's "Send direct message") closes it, as the left drawer does.
useNavigation.subscribe((state, previous) => {
  if (state.view !== previous.view && useUserList.getState().drawerOpen) userList.closeDrawer();
});
