import { narrowKey, type Narrow } from "../model/narrow.ts";
import { useTyping } from "../model/typing.ts";
import { userName } from "../model/users.ts";
import { t, useLanguage } from "../i18n.ts";

/** "Alice is typing…" under the list, for the conversation the narrow is. */
export function TypingNotice({ narrow }: { narrow: Narrow }) {
  const key = narrow.kind === "topic" || narrow.kind === "dm" ? narrowKey(narrow) : null;
  const typists = useTyping((s) => (key === null ? undefined : s.byConversation[key]));
  const names = (typists ?? []).map(userName);
  const language = useLanguage((s) => s.language);
  const text =
    names.length === 0
      ? ""
      : names.length === 1
        ? t("{{name}} is typing…", { name: names[0]! })
        : names.length <= 3
          ? t("{{names}} are typing…", { names: new Intl.ListFormat(language, { type: "conjunction" }).format(names) })
          : t("Several people are typing…");
  return (
    <div className="typing-notice" aria-live="polite">
      {text}
    </div>
  );
}
