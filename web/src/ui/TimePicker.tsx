// Picking a time to send a message later or to be reminded of one: Zulip's
// presets (today or tomorrow at 9 AM or 4 PM, Monday at 9 AM; for reminders
// also in 20 minutes, in 1 hour and in 3 hours), or a custom date and time.
import { useState, type FormEvent, type ReactNode } from "react";
import { formatDate, formatTime, t } from "../i18n.ts";
import { Dialog, DialogFooter } from "./Dialog.tsx";

export interface Preset {
  label: string;
  at: Date;
}

function at(day: Date, hour: number): Date {
  const d = new Date(day);
  d.setHours(hour, 0, 0, 0);
  return d;
}

function addDays(day: Date, days: number): Date {
  const d = new Date(day);
  d.setDate(d.getDate() + days);
  return d;
}

/** The presets offered at `now`: "send" for send later, "remind" for reminders. */
export function presets(kind: "send" | "remind", now: Date = new Date()): Preset[] {
  const list: Preset[] = [];
  if (kind === "remind") {
    list.push({ label: t("In 20 minutes"), at: new Date(now.getTime() + 20 * 60_000) });
    list.push({ label: t("In 1 hour"), at: new Date(now.getTime() + 3600_000) });
    list.push({ label: t("In 3 hours"), at: new Date(now.getTime() + 3 * 3600_000) });
  }
  for (const hour of [9, 16]) {
    const today = at(now, hour);
    if (today.getTime() > now.getTime()) list.push({ label: t("Today at {{time}}", { time: formatTime(today) }), at: today });
  }
  const tomorrow = addDays(now, 1);
  list.push({ label: t("Tomorrow at {{time}}", { time: formatTime(at(tomorrow, 9)) }), at: at(tomorrow, 9) });
  if (kind === "send") list.push({ label: t("Tomorrow at {{time}}", { time: formatTime(at(tomorrow, 16)) }), at: at(tomorrow, 16) });
  // The next Monday (a week on, when today is Monday); not when it is tomorrow, already offered.
  const toMonday = ((8 - now.getDay()) % 7) || 7;
  if (toMonday !== 1) list.push({ label: t("Monday at {{time}}", { time: formatTime(at(addDays(now, toMonday), 9)) }), at: at(addDays(now, toMonday), 9) });
  return list;
}

/** A datetime-local input's value for `date`, in local time. */
function localInputValue(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** "Tue, Dec 1 at 9:00 AM": when a scheduled message goes, in the user's language. */
export function formatWhen(date: Date): string {
  return t("{{date}} at {{time}}", { date: formatDate(date), time: formatTime(date) });
}

/**
 * A dialog titled `title`: one button per preset, which picks at once, and a
 * custom date and time confirmed with `actionLabel`. `onPick` gets Unix
 * seconds; a rejection's message shows in the dialog.
 */
export function TimePicker({
  title,
  kind,
  actionLabel,
  onPick,
  onClose,
  children,
}: {
  title: string;
  kind: "send" | "remind";
  actionLabel: string;
  onPick: (timestamp: number) => Promise<void>;
  onClose: () => void;
  children?: ReactNode;
}) {
  const [now] = useState(() => new Date());
  const [custom, setCustom] = useState(() => localInputValue(new Date(now.getTime() + 3600_000)));
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const pick = async (date: Date) => {
    if (Number.isNaN(date.getTime()) || date.getTime() <= Date.now()) {
      setError(t("Pick a time in the future."));
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await onPick(Math.floor(date.getTime() / 1000));
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    void pick(new Date(custom));
  };

  return (
    <Dialog title={title} onClose={onClose} className="time-picker">
      <form onSubmit={onSubmit}>
        {children}
        <ul className="time-presets" aria-label={t("Suggested times")}>
          {presets(kind, now).map((p) => (
            <li key={p.label}>
              <button type="button" disabled={busy} onClick={() => void pick(p.at)}>
                {p.label}
              </button>
            </li>
          ))}
        </ul>
        <label className="time-custom">
          {t("Custom date and time")}
          <input type="datetime-local" value={custom} min={localInputValue(now)} onChange={(e) => setCustom(e.target.value)} required />
        </label>
        <DialogFooter error={error} onCancel={onClose} action={{ label: actionLabel, disabled: busy }} />
      </form>
    </Dialog>
  );
}
