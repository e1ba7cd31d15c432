// "Remind me about this" on a message: a time (Zulip's presets or a custom
// one) and an optional note; POST /reminders, after which the Notification
// Bot sends you a direct message quoting it at that time. Your pending
// reminders are listed in the Scheduled messages view.
import { useState } from "react";
import type { Message } from "../api/types.ts";
import { api } from "../api/client.ts";
import { t } from "../i18n.ts";
import { messageUi } from "../model/message-ui.ts";
import { formatWhen, TimePicker } from "./TimePicker.tsx";

export function RemindDialog({ message, onDone }: { message: Message; onDone: (notice: string) => void }) {
  const [note, setNote] = useState("");
  return (
    <TimePicker
      title={t("Remind me about this")}
      kind="remind"
      actionLabel={t("Set reminder")}
      onClose={() => messageUi.closeDialog()}
      onPick={async (timestamp) => {
        await api.post("/reminders", { message_id: message.id, scheduled_delivery_timestamp: timestamp, note: note.trim() === "" ? undefined : note.trim() });
        messageUi.closeDialog();
        onDone(t("Reminder set for {{when}}.", { when: formatWhen(new Date(timestamp * 1000)) }));
      }}
    >
      <label className="time-note">
        {t("Note (optional)")}
        <textarea value={note} onChange={(e) => setNote(e.target.value)} rows={2} maxLength={1000} />
      </label>
    </TimePicker>
  );
}
