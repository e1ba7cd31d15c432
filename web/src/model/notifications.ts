// Desktop notifications for messages that mention you and direct messages,
// shown while the tab is hidden (Zulip's web app does the same), when the
// browser allows them and your settings ask for them.
import type { Message } from "../api/types.ts";

let desktopEnabled = true;

export const notificationsStore = {
  /** From /register's user_settings (and user_settings events). */
  setEnabled(enabled: boolean): void {
    desktopEnabled = enabled;
  },
  supported(): boolean {
    return typeof Notification !== "undefined";
  },
  permission(): NotificationPermission | "unsupported" {
    return this.supported() ? Notification.permission : "unsupported";
  },
  async requestPermission(): Promise<NotificationPermission | "unsupported"> {
    if (!this.supported()) return "unsupported";
    return Notification.requestPermission();
  },
  /** Called for each new message event. */
  notice(message: Message, flags: string[], selfId: number, title: string): void {
    if (!desktopEnabled || !this.supported() || Notification.permission !== "granted") return;
    if (!document.hidden || message.sender_id === selfId) return;
    const mentioned = flags.includes("mentioned") || flags.includes("wildcard_mentioned");
    if (message.type !== "private" && !mentioned) return;
    const text = new DOMParser().parseFromString(message.content, "text/html").body.textContent ?? "";
    const notification = new Notification(`${message.sender_full_name} (${title})`, { body: text.slice(0, 300), tag: `message-${message.id}` });
    notification.onclick = () => {
      window.focus();
      notification.close();
    };
  },
};
