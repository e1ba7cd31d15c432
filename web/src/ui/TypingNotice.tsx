import { narrowKey, type Narrow } from "../model/narrow.ts";
import { useTyping } from "../model/typing.ts";
import { userName } from "../model/users.ts";

/** "Alice is typing…" under the list, for the conversation the narrow is. */
export function TypingNotice({ narrow }: { narrow: Narrow }) {
  const key = narrow.kind === "topic" || narrow.kind === "dm" ? narrowKey(narrow) : null;
  const typists = useTyping((s) => (key === null ? undefined : s.byConversation[key]));
  const names = (typists ?? []).map(userName);
  const text =
    names.length === 0 ? "" : names.length === 1 ? `${names[0]} is typing…` : names.length <= 3 ? `${names.join(", ")} are typing…` : "Several people are typing…";
  return (
    <div className="typing-notice" aria-live="polite">
      {text}
    </div>
  );
}
