// A one-line editor in place of a heading (a topic's name, a poll's question):
// Enter or Save saves, Escape or Cancel leaves it as it was.
import { useState } from "react";
import { t } from "../i18n.ts";

export function InlineEditForm({
  initial,
  label,
  className,
  maxLength,
  error,
  onSave,
  onCancel,
}: {
  initial: string;
  /** The field's accessible name. */
  label: string;
  className: string;
  maxLength: number;
  /** Why the last save failed, shown beside the field. */
  error?: string | null;
  onSave: (value: string) => void;
  onCancel: () => void;
}) {
  const [value, setValue] = useState(initial);
  return (
    <form
      className={className}
      onSubmit={(e) => {
        e.preventDefault();
        onSave(value);
      }}
    >
      <input
        value={value}
        onChange={(e) => setValue(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            // Not the page's Escape (which leaves the message list's selection).
            e.stopPropagation();
            onCancel();
          }
        }}
        aria-label={label}
        maxLength={maxLength}
        autoFocus
      />
      <button type="submit" disabled={!value.trim()}>
        {t("Save")}
      </button>
      <button type="button" onClick={onCancel}>
        {t("Cancel")}
      </button>
      {error && (
        <span className="inline-edit-error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}
