// A modal dialog: the browser's <dialog> shown modally (focus stays inside,
// Escape closes, the page behind is inert), named by its heading.
import { useEffect, useId, useRef, type ReactNode } from "react";
import { t } from "../i18n.ts";
import { ErrorLine } from "./StatusLine.tsx";

export function Dialog({ title, onClose, children, className }: { title: string; onClose: () => void; children: ReactNode; className?: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={`dialog ${className ?? ""}`}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onClick={(e) => {
        // A click on the backdrop (the dialog element itself, outside its content) closes.
        if (e.target === ref.current) onClose();
      }}
    >
      <div className="dialog-body">
        <h2 id={titleId} className="dialog-title">
          {title}
        </h2>
        {children}
      </div>
    </dialog>
  );
}

/**
 * A dialog's last lines: the error of its last try, if any, then Cancel and
 * the action (a form's submit button, or `onClick` for a dialog without a
 * form; a dangerous action starts with Cancel focused).
 */
export function DialogFooter({
  error,
  onCancel,
  action,
}: {
  error?: string | null;
  onCancel: () => void;
  action: { label: string; disabled?: boolean; danger?: boolean; onClick?: () => void };
}) {
  return (
    <>
      <ErrorLine error={error} />
      <div className="dialog-buttons">
        <button type="button" onClick={onCancel} autoFocus={action.danger}>
          {t("Cancel")}
        </button>
        <button
          type={action.onClick ? "button" : "submit"}
          className={action.danger ? "primary danger" : "primary"}
          onClick={action.onClick}
          disabled={action.disabled}
        >
          {action.label}
        </button>
      </div>
    </>
  );
}
