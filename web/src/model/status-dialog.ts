// Whether the "Set status" dialog is open (from the personal menu, your own user card, or the user list).
import { create } from "zustand";

export const useStatusDialog = create<{ open: boolean }>(() => ({ open: false }));

export function openStatusDialog(): void {
  useStatusDialog.setState({ open: true });
}

export function closeStatusDialog(): void {
  useStatusDialog.setState({ open: false });
}
