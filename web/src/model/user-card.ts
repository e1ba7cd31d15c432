// The user card (Zulip's user popover): whose card is open, and the element
// it was opened from, which gets the focus back when the card closes.
import { create } from "zustand";

export interface UserCardState {
  userId: number | null;
  anchor: HTMLElement | null;
}

export const useUserCard = create<UserCardState>(() => ({ userId: null, anchor: null }));

export const userCard = {
  /** Opens `userId`'s card beside `anchor`; the same card again closes it (a second click on the name). */
  toggle(userId: number, anchor: HTMLElement): void {
    const current = useUserCard.getState();
    if (current.userId === userId && current.anchor === anchor) this.close();
    else useUserCard.setState({ userId, anchor });
  },
  /**
   * Closes the card. The focus goes back to where it was opened from, unless
   * the click that closed it put the focus somewhere else (looked at once
   * that click's own focus change is done).
   */
  close(): void {
    const { anchor } = useUserCard.getState();
    useUserCard.setState({ userId: null, anchor: null });
    setTimeout(() => {
      const active = document.activeElement;
      if (anchor?.isConnected && (active === null || active === document.body)) anchor.focus({ preventScroll: true });
    }, 0);
  },
};
