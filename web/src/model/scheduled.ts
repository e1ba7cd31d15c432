// Your messages scheduled to send later and your message reminders
// (/register's scheduled_messages and reminders, kept by scheduled_messages
// and reminders events), as Zulip's web app keeps them.
import { create } from "zustand";

export interface ScheduledMessage {
  scheduled_message_id: number;
  type: "stream" | "private";
  /** A channel ID, or the direct message's recipients. */
  to: number | number[];
  topic?: string;
  content: string;
  rendered_content: string;
  scheduled_delivery_timestamp: number;
  failed: boolean;
}

export interface Reminder {
  reminder_id: number;
  content: string;
  rendered_content: string;
  scheduled_delivery_timestamp: number;
  failed: boolean;
  reminder_target_message_id: number;
}

export const useScheduled = create<{ messages: ScheduledMessage[]; reminders: Reminder[] }>(() => ({ messages: [], reminders: [] }));

const byTime = <T extends { scheduled_delivery_timestamp: number }>(list: T[]) => [...list].sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp);

export const scheduledStore = {
  load(messages: ScheduledMessage[] | undefined, reminders: Reminder[] | undefined): void {
    useScheduled.setState({ messages: byTime(messages ?? []), reminders: byTime(reminders ?? []) });
  },
  /** A scheduled_messages event. */
  applyScheduled(event: { op: string; scheduled_messages?: ScheduledMessage[]; scheduled_message?: ScheduledMessage; scheduled_message_id?: number }): void {
    const { messages } = useScheduled.getState();
    if (event.op === "add" && event.scheduled_messages) {
      const ids = new Set(event.scheduled_messages.map((m) => m.scheduled_message_id));
      useScheduled.setState({ messages: byTime([...messages.filter((m) => !ids.has(m.scheduled_message_id)), ...event.scheduled_messages]) });
    } else if (event.op === "update" && event.scheduled_message) {
      const updated = event.scheduled_message;
      useScheduled.setState({ messages: byTime(messages.map((m) => (m.scheduled_message_id === updated.scheduled_message_id ? { ...m, ...updated } : m))) });
    } else if (event.op === "remove") {
      useScheduled.setState({ messages: messages.filter((m) => m.scheduled_message_id !== event.scheduled_message_id) });
    }
  },
  /** A reminders event. */
  applyReminders(event: { op: string; reminders?: Reminder[]; reminder_id?: number }): void {
    const { reminders } = useScheduled.getState();
    if (event.op === "add" && event.reminders) {
      const ids = new Set(event.reminders.map((r) => r.reminder_id));
      useScheduled.setState({ reminders: byTime([...reminders.filter((r) => !ids.has(r.reminder_id)), ...event.reminders]) });
    } else if (event.op === "remove") {
      useScheduled.setState({ reminders: reminders.filter((r) => r.reminder_id !== event.reminder_id) });
    }
  },
};
