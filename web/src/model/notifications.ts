// Desktop notifications for messages that mention you, direct messages and
// followed topics, shown while the tab is hidden (Zulip's web app does the
// same), when the browser allows them and your settings ask for them; muted
// users, topics and channels stay quiet.
import type { Message } from "../api/types.ts";
import { isStreamMessageMuted, isUserMuted, topicPolicy, VisibilityPolicy } from "./muting.ts";
import { useSettings } from "./settings.ts";

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
    // Never for muted senders; in a muted topic or channel only a mention of you by name; a followed topic's
    // every message when enable_followed_topic_desktop_notifications is on (as Zulip's message_is_notifiable).
    if (isUserMuted(message.sender_id)) return;
    const direct = flags.includes("mentioned");
    const mentioned = direct || flags.includes("wildcard_mentioned") || flags.includes("stream_wildcard_mentioned") || flags.includes("topic_wildcard_mentioned");
    if (message.type !== "private") {
      const stream = message.stream_id ?? 0;
      if (isStreamMessageMuted(stream, message.subject) && !direct) return;
      const followed = topicPolicy(stream, message.subject) === VisibilityPolicy.FOLLOWED && useSettings.getState().settings.enable_followed_topic_desktop_notifications !== false;
      if (!mentioned && !followed) return;
    }
    const text = new DOMParser().parseFromString(message.content, "text/html").body.textContent ?? "";
    const notification = new Notification(`${message.sender_full_name} (${title})`, { body: text.slice(0, 300), tag: `message-${message.id}` });
    notification.onclick = () => {
      window.focus();
      notification.close();
    };
  },
};
