// The Scheduled messages view (#scheduled), loaded on demand: your messages
// waiting to be sent, soonest first, each editable, reschedulable and
// deletable, and below them your message reminders. Both lists follow
// scheduled_messages and reminders events, so a message sent at its time
// leaves the list by itself.
import { useState } from "react";
import { api } from "../api/client.ts";
import { t } from "../i18n.ts";
import { channelName } from "../model/channels.ts";
import { hrefFor } from "../model/navigation.ts";
import { topicDisplayName } from "../model/realm.ts";
import { useScheduled, type Reminder, type ScheduledMessage } from "../model/scheduled.ts";
import { useUsers, userName } from "../model/users.ts";
import { prepareHtml } from "./rendered.ts";
import { formatWhen, TimePicker } from "./TimePicker.tsx";
import "../styles/compose-features.css";
import { ErrorLine } from "./StatusLine.tsx";

function recipientLabel(m: ScheduledMessage): string {
  if (m.type === "stream") return `#${channelName(m.to as number) ?? t("unknown channel")} > ${topicDisplayName(m.topic ?? "")}`;
  return (m.to as number[]).map(userName).join(", ");
}

function ScheduledItem({ message }: { message: ScheduledMessage }) {
  const selfId = useUsers((s) => s.selfId);
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(message.content);
  const [rescheduling, setRescheduling] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const when = new Date(message.scheduled_delivery_timestamp * 1000);
  const label = recipientLabel(message);
  const conversationHref =
    message.type === "stream"
      ? hrefFor({ kind: "messages", narrow: message.topic !== undefined ? { kind: "topic", streamId: message.to as number, topic: message.topic } : { kind: "channel", streamId: message.to as number } })
      : undefined;

  const act = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
      return true;
    } catch (e) {
      setError((e as Error).message);
      return false;
    }
  };

  return (
    <li className="compose-item" aria-label={t("Scheduled message to {{recipient}}", { recipient: label })}>
      <header>
        {conversationHref ? <a href={conversationHref}>{label}</a> : <span>{label}</span>}
        <time dateTime={when.toISOString()}>{formatWhen(when)}</time>
        {message.failed && <span className="failed">{t("Could not be sent")}</span>}
      </header>
      {editing ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void act(() => api.patch(`/scheduled_messages/${message.scheduled_message_id}`, { content: text })).then((ok) => ok && setEditing(false));
          }}
        >
          <label className="visually-hidden" htmlFor={`scheduled-${message.scheduled_message_id}`}>
            {t("Message")}
          </label>
          <textarea id={`scheduled-${message.scheduled_message_id}`} value={text} onChange={(e) => setText(e.target.value)} autoFocus />
          <div className="item-actions">
            <button type="submit" disabled={text.trim() === ""}>
              {t("Save")}
            </button>
            <button type="button" onClick={() => (setEditing(false), setText(message.content))}>
              {t("Cancel")}
            </button>
          </div>
        </form>
      ) : (
        <div className="item-content rendered_markdown" dangerouslySetInnerHTML={{ __html: prepareHtml(message.rendered_content, selfId, false) }} />
      )}
      {!editing && (
        <div className="item-actions">
          <button type="button" onClick={() => (setText(message.content), setEditing(true))}>
            {t("Edit")}
          </button>
          <button type="button" onClick={() => setRescheduling(true)}>
            {t("Reschedule")}
          </button>
          <button type="button" onClick={() => void act(() => api.delete(`/scheduled_messages/${message.scheduled_message_id}`))}>
            {t("Delete")}
          </button>
        </div>
      )}
      <ErrorLine error={error} />
      {rescheduling && (
        <TimePicker
          title={t("Reschedule message")}
          kind="send"
          actionLabel={t("Reschedule")}
          onClose={() => setRescheduling(false)}
          onPick={async (timestamp) => {
            await api.patch(`/scheduled_messages/${message.scheduled_message_id}`, { scheduled_delivery_timestamp: timestamp });
            setRescheduling(false);
          }}
        />
      )}
    </li>
  );
}

function ReminderItem({ reminder }: { reminder: Reminder }) {
  const selfId = useUsers((s) => s.selfId);
  const [error, setError] = useState<string | null>(null);
  const when = new Date(reminder.scheduled_delivery_timestamp * 1000);
  return (
    <li className="compose-item" aria-label={t("Reminder for {{when}}", { when: formatWhen(when) })}>
      <header>
        <span>{t("Reminder")}</span>
        <time dateTime={when.toISOString()}>{formatWhen(when)}</time>
        {reminder.failed && <span className="failed">{t("Could not be sent")}</span>}
      </header>
      <div className="item-content rendered_markdown" dangerouslySetInnerHTML={{ __html: prepareHtml(reminder.rendered_content, selfId, false) }} />
      <div className="item-actions">
        <button
          type="button"
          onClick={() => {
            setError(null);
            api.delete(`/reminders/${reminder.reminder_id}`).catch((e: unknown) => setError((e as Error).message));
          }}
        >
          {t("Delete reminder")}
        </button>
      </div>
      <ErrorLine error={error} />
    </li>
  );
}

export default function ScheduledMessages() {
  const messages = useScheduled((s) => s.messages);
  const reminders = useScheduled((s) => s.reminders);
  return (
    <section className="compose-page" aria-label={t("Scheduled messages")}>
      {messages.length === 0 ? (
        <p className="empty">{t("You have no scheduled messages. Use the Send later button next to Send to schedule one.")}</p>
      ) : (
        <ul aria-label={t("Scheduled messages")}>
          {messages.map((m) => (
            <ScheduledItem key={m.scheduled_message_id} message={m} />
          ))}
        </ul>
      )}
      {reminders.length > 0 && (
        <>
          <h3>{t("Reminders")}</h3>
          <ul aria-label={t("Reminders")}>
            {reminders.map((r) => (
              <ReminderItem key={r.reminder_id} reminder={r} />
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
