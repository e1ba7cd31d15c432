// The compose box's saved snippets: pick one to insert its text, filter them
// by title, create one (from what is in the box, or typed here) and delete
// them, as in Zulip's saved snippets dropdown. The list follows
// saved_snippets events, so every open tab sees the same snippets.
import { useState, type FormEvent } from "react";
import { api } from "../api/client.ts";
import { t } from "../i18n.ts";
import { useSnippets } from "../model/snippets.ts";
import { ErrorLine } from "./StatusLine.tsx";

export function SnippetPicker({ onPick, initialContent }: { onPick: (content: string) => void; initialContent: string }) {
  const snippets = useSnippets((s) => s.snippets);
  const [filter, setFilter] = useState("");
  const [creating, setCreating] = useState(false);
  const [title, setTitle] = useState("");
  const [content, setContent] = useState(initialContent);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const shown = snippets.filter((s) => s.title.toLowerCase().includes(filter.trim().toLowerCase()));

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api.post("/saved_snippets", { title: title.trim(), content: content.trim() });
      setCreating(false);
      setTitle("");
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const remove = async (id: number) => {
    setError(null);
    try {
      await api.delete(`/saved_snippets/${id}`);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  if (creating) {
    return (
      <form className="snippet-form" onSubmit={(e) => void create(e)} aria-label={t("New saved snippet")}>
        <label>
          {t("Title")}
          <input value={title} onChange={(e) => setTitle(e.target.value)} required maxLength={60} autoFocus />
        </label>
        <label>
          {t("Content")}
          <textarea value={content} onChange={(e) => setContent(e.target.value)} required rows={4} />
        </label>
        <ErrorLine error={error} />
        <div className="dialog-buttons">
          <button type="button" onClick={() => setCreating(false)}>
            {t("Cancel")}
          </button>
          <button type="submit" className="primary" disabled={busy || title.trim() === "" || content.trim() === ""}>
            {t("Save snippet")}
          </button>
        </div>
      </form>
    );
  }
  return (
    <div className="snippet-picker">
      {snippets.length > 0 && <input type="search" aria-label={t("Filter snippets")} placeholder={t("Filter snippets")} value={filter} onChange={(e) => setFilter(e.target.value)} autoFocus />}
      {snippets.length === 0 ? (
        <p className="snippet-empty">{t("You have no saved snippets.")}</p>
      ) : (
        <ul aria-label={t("Saved snippets")}>
          {shown.map((s) => (
            <li key={s.id}>
              <button type="button" className="snippet-insert" title={s.content} onClick={() => onPick(s.content)}>
                <strong>{s.title}</strong>
                <small>{s.content}</small>
              </button>
              <button type="button" className="snippet-delete" aria-label={t("Delete snippet {{title}}", { title: s.title })} title={t("Delete")} onClick={() => void remove(s.id)}>
                🗑
              </button>
            </li>
          ))}
        </ul>
      )}
      <ErrorLine error={error} />
      <button type="button" className="snippet-new" onClick={() => setCreating(true)}>
        {t("Add a new saved snippet")}
      </button>
    </div>
  );
}
