// Setting your own status (loaded on first use): an emoji and a short text,
// Zulip's common suggestions to start from, and clearing it. Saved with POST
// /users/me/status; everyone's client (this one too) learns it from the
// user_status event.
import { lazy, Suspense, useState, type FormEvent } from "react";
import { api, ApiError } from "../api/client.ts";
import { t } from "../i18n.ts";
import type { EmojiChoice } from "../model/message-actions.ts";
import { closeStatusDialog } from "../model/status-dialog.ts";
import { useUserStatus } from "../model/user-status.ts";
import { useUsers } from "../model/users.ts";
import { Dialog, DialogFooter } from "./Dialog.tsx";
import { StatusEmoji } from "./StatusEmoji.tsx";

const EmojiPicker = lazy(() => import("./EmojiPicker.tsx"));

/** Zulip's default status suggestions (user_status_ui.ts), with Zulip's emoji names. */
const SUGGESTIONS: { text: () => string; emoji: EmojiChoice }[] = [
  { text: () => t("Busy"), emoji: { emoji_name: "working_on_it", emoji_code: "1f6e0", reaction_type: "unicode_emoji" } },
  { text: () => t("In a meeting"), emoji: { emoji_name: "calendar", emoji_code: "1f4c5", reaction_type: "unicode_emoji" } },
  { text: () => t("Commuting"), emoji: { emoji_name: "bus", emoji_code: "1f68c", reaction_type: "unicode_emoji" } },
  { text: () => t("Out sick"), emoji: { emoji_name: "hurt", emoji_code: "1f915", reaction_type: "unicode_emoji" } },
  { text: () => t("Vacationing"), emoji: { emoji_name: "palm_tree", emoji_code: "1f334", reaction_type: "unicode_emoji" } },
  { text: () => t("Working remotely"), emoji: { emoji_name: "house", emoji_code: "1f3e0", reaction_type: "unicode_emoji" } },
  { text: () => t("At the office"), emoji: { emoji_name: "office", emoji_code: "1f3e2", reaction_type: "unicode_emoji" } },
];

/** The most a status text may hold (Zulip's limit). */
const MAX_STATUS_TEXT = 60;

export default function StatusDialog() {
  const current = useUserStatus((s) => s.byUser[useUsers.getState().selfId]);
  const [text, setText] = useState(current?.status_text ?? "");
  const [emoji, setEmoji] = useState<EmojiChoice | null>(
    current?.emoji_name && current.emoji_code ? { emoji_name: current.emoji_name, emoji_code: current.emoji_code, reaction_type: (current.reaction_type ?? "unicode_emoji") as EmojiChoice["reaction_type"] } : null,
  );
  const [picking, setPicking] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const hadStatus = Boolean(current?.status_text || current?.emoji_name);

  const save = async (status: { text: string; emoji: EmojiChoice | null }) => {
    setBusy(true);
    setError(null);
    try {
      await api.post("/users/me/status", {
        status_text: status.text.trim(),
        ...(status.emoji ? status.emoji : { emoji_name: "" }),
      });
      closeStatusDialog();
    } catch (e) {
      setBusy(false);
      setError(e instanceof ApiError || e instanceof Error ? e.message : String(e));
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save({ text, emoji });
  };

  return (
    <Dialog title={t("Set status")} onClose={closeStatusDialog} className="status-dialog">
      <form onSubmit={submit} aria-label={t("Set status")}>
        <div className="status-input-row">
          <button type="button" className="status-emoji-button" aria-label={emoji ? t("Emoji: {{name}}", { name: emoji.emoji_name }) : t("Choose an emoji")} aria-expanded={picking} onClick={() => setPicking(!picking)}>
            {emoji ? <StatusEmoji status={emoji} decorative /> : <span aria-hidden="true">☺</span>}
          </button>
          <label className="visually-hidden" htmlFor="status-text">
            {t("Status message")}
          </label>
          <input id="status-text" value={text} maxLength={MAX_STATUS_TEXT} placeholder={t("What's your status?")} onChange={(e) => setText(e.target.value)} autoFocus autoComplete="off" />
          {(text !== "" || emoji) && (
            <button
              type="button"
              className="status-clear-input"
              aria-label={t("Clear status")}
              title={t("Clear status")}
              onClick={() => {
                setText("");
                setEmoji(null);
              }}
            >
              ×
            </button>
          )}
        </div>
        {picking && (
          <div className="status-emoji-picker">
            <Suspense fallback={<p className="emoji-loading">{t("Loading emoji…")}</p>}>
              <EmojiPicker
                isChosen={(e) => emoji?.emoji_code === e.emoji_code && emoji.reaction_type === e.reaction_type}
                onPick={(e) => {
                  setEmoji(e);
                  setPicking(false);
                }}
              />
            </Suspense>
          </div>
        )}
        <ul className="status-suggestions" aria-label={t("Suggestions")}>
          {SUGGESTIONS.map((s) => (
            <li key={s.emoji.emoji_name}>
              <button
                type="button"
                onClick={() => {
                  setText(s.text());
                  setEmoji(s.emoji);
                }}
              >
                <StatusEmoji status={s.emoji} decorative /> {s.text()}
              </button>
            </li>
          ))}
        </ul>
        {hadStatus && (
          <p>
            <button type="button" className="link-button" disabled={busy} onClick={() => void save({ text: "", emoji: null })}>
              {t("Clear your status")}
            </button>
          </p>
        )}
        <DialogFooter error={error} onCancel={closeStatusDialog} action={{ label: t("Save"), disabled: busy }} />
      </form>
    </Dialog>
  );
}
