// What the settings and administration panels share: a status line fed by
// one action at a time, and a confirmation dialog for what cannot be undone
// lightly (deactivations, role changes, regenerated keys).
import { useState, type ReactNode } from "react";
import { api } from "../../api/client.ts";
import { t } from "../../i18n.ts";
import { settingsStore, useSettings } from "../../model/settings.ts";
import { Dialog, DialogFooter } from "../Dialog.tsx";
import { StatusLine, type Status } from "../StatusLine.tsx";

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Runs actions, saying "… saved." or the server's refusal under the panel. */
export function useStatus(): { status: ReactNode; run: (done: string, action: () => Promise<unknown>) => Promise<boolean>; set: (s: Status | null) => void } {
  const [status, setStatus] = useState<Status | null>(null);
  return {
    status: <StatusLine status={status} />,
    set: setStatus,
    async run(done, action) {
      try {
        await action();
        setStatus({ ok: true, text: done });
        return true;
      } catch (e) {
        setStatus({ ok: false, text: errorText(e) });
        return false;
      }
    },
  };
}

export interface Confirmation {
  title: string;
  text: string;
  action: string;
  danger?: boolean;
  run: () => Promise<unknown>;
}

/** A pending confirmation and the dialog that asks it; the dialog stays open with the error when the action fails. */
export function useConfirm(): { ask: (c: Confirmation) => void; dialog: ReactNode } {
  const [pending, setPending] = useState<Confirmation | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const close = () => {
    setPending(null);
    setError(null);
  };
  const dialog = pending && (
    <Dialog title={pending.title} onClose={close}>
      <p>{pending.text}</p>
      <DialogFooter
        error={error}
        onCancel={close}
        action={{
          label: pending.action,
          danger: pending.danger,
          disabled: busy,
          onClick: () => {
            setBusy(true);
            pending
              .run()
              .then(close, (e: unknown) => setError(errorText(e)))
              .finally(() => setBusy(false));
          },
        }}
      />
    </Dialog>
  );
  return {
    ask: (c) => {
      setError(null);
      setPending(c);
    },
    dialog,
  };
}

/**
 * The panels' table: a caption for screen readers, column headers (with
 * `actions`, a last column of buttons headed "Actions" for screen readers
 * only) and the rows, in a box that scrolls sideways on narrow screens.
 */
export function AdminTable({ label, columns, actions = false, className, children }: { label: string; columns?: string[]; actions?: boolean; className?: string; children: ReactNode }) {
  return (
    <div className="table-scroll">
      <table className={className ? `admin-table ${className}` : "admin-table"} aria-label={label}>
        {columns && (
          <thead>
            <tr>
              {columns.map((c, i) => (
                <th key={i} scope="col">
                  {c}
                </th>
              ))}
              {actions && (
                <th scope="col">
                  <span className="visually-hidden">{t("Actions")}</span>
                </th>
              )}
            </tr>
          </thead>
        )}
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** Asks before something that cannot be undone lightly: `confirm.ask` with the action marked dangerous. */
export function DangerButton({ confirm, label, children, ...question }: Omit<Confirmation, "danger"> & { confirm: { ask: (c: Confirmation) => void }; label?: string; children: ReactNode }) {
  return (
    <button type="button" aria-label={label} onClick={() => confirm.ask({ ...question, danger: true })}>
      {children}
    </button>
  );
}

export function Section({ id, title, children }: { id: string; title: string; children: ReactNode }) {
  return (
    <section className="settings-section" aria-labelledby={`${id}-heading`} id={id}>
      <h3 id={`${id}-heading`}>{title}</h3>
      {children}
    </section>
  );
}

/** "saved." after a label, translated. */
export function saved(label: string): string {
  return t("{{label}}: saved.", { label });
}

/** Shows a personal setting's new value at once; the server's event confirms it, a failure puts the old one back. */
export async function saveSetting(property: string, value: unknown): Promise<void> {
  const old = useSettings.getState().settings[property];
  settingsStore.apply(property, value);
  try {
    await api.patch("/settings", { [property]: value });
  } catch (e) {
    settingsStore.apply(property, old);
    throw e;
  }
}

/**
 * The page's sections as a row of buttons at its top (Zulip's settings list
 * its sections beside them); a button scrolls to its section and moves
 * focus to the heading. Buttons, not links: the location hash names views.
 */
export function SectionNav({ label, sections }: { label: string; sections: [id: string, title: string][] }) {
  return (
    <nav className="section-nav" aria-label={label}>
      {sections.map(([id, title]) => (
        <button
          key={id}
          type="button"
          className="link-button"
          onClick={() => {
            const heading = document.getElementById(`${id}-heading`);
            if (!heading) return;
            heading.tabIndex = -1;
            heading.scrollIntoView({ block: "start" });
            heading.focus({ preventScroll: true });
          }}
        >
          {title}
        </button>
      ))}
    </nav>
  );
}
