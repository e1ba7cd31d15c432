// Editing a message in place: its Markdown source (fetched from the server)
// in a text box; Enter saves (Shift+Enter is a new line), Escape or Cancel
// leaves it as it was. The edited message comes back as an update_message
// event, to everyone.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { flushSync } from "react-dom";
import type { Message } from "../api/types.ts";
import { editContent, fetchRawContent } from "../model/message-actions.ts";
import { messageUi } from "../model/message-ui.ts";
import { useRealm } from "../model/realm.ts";
import { t } from "../i18n.ts";
import { ErrorLine } from "./StatusLine.tsx";

export function MessageEditor({ message }: { message: Message }) {
  const [content, setContent] = useState<string | null>(null);
  const [original, setOriginal] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const maxLength = useRealm((s) => s.maxMessageLength);
  const ref = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    let live = true;
    fetchRawContent(message.id).then(
      (raw) => {
        if (!live) return;
        // Drawn now, then focused with the caret at the end: nothing typed or selected meanwhile is moved later.
        flushSync(() => {
          setOriginal(raw);
          setContent(raw);
        });
        const area = ref.current;
        if (!area) return;
        area.focus();
        area.setSelectionRange(raw.length, raw.length);
      },
      (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
    );
    return () => {
      live = false;
    };
  }, [message.id]);

  const cancel = () => {
    messageUi.edit(null);
    requestAnimationFrame(() => document.querySelector<HTMLElement>(`[data-message-id="${message.id}"] .message-actions-button`)?.focus());
  };
  const save = () => {
    if (content === null) return;
    if (content === original) return cancel();
    if (content.trim() === "") {
      setError(t("A message cannot be empty; delete it instead."));
      return;
    }
    setBusy(true);
    setError(null);
    editContent(message, content).then(cancel, (e: unknown) => {
      setBusy(false);
      setError(e instanceof Error ? e.message : String(e));
    });
  };
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    save();
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      save();
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      cancel();
    }
  };

  return (
    <form className="message-editor" onSubmit={onSubmit} aria-label={t("Edit message")}>
      <label className="visually-hidden" htmlFor={`edit-${message.id}`}>
        {t("Edit message content")}
      </label>
      <textarea
        id={`edit-${message.id}`}
        ref={ref}
        className="message-editor-text"
        rows={Math.min(12, Math.max(2, (content ?? "").split("\n").length + 1))}
        value={content ?? ""}
        placeholder={content === null && !error ? t("Loading…") : undefined}
        disabled={content === null}
        maxLength={maxLength}
        onChange={(e) => setContent(e.target.value)}
        onKeyDown={onKeyDown}
      />
      <ErrorLine error={error} />
      <div className="message-editor-buttons">
        <button type="submit" className="primary" disabled={busy || content === null}>
          {t("Save")}
        </button>
        <button type="button" onClick={cancel}>
          {t("Cancel")}
        </button>
      </div>
    </form>
  );
}
