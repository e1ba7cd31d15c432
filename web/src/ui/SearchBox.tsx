// The search box in the header: Zulip's search syntax, e.g.
// `channel:design topic:logo sender:ada@example.com colour`. Opened with /,
// it holds the open narrow's operators, so typed words search within it (as
// Zulip's search does); clicked, it starts empty and searches everything.
// Enter opens the search narrow (its hash written the way Zulip writes
// narrows), Escape leaves.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { flushSync } from "react-dom";
import { useNavigation } from "../model/navigation.ts";
import { narrowSearchText, searchHash } from "../model/search.ts";

const OPEN_SEARCH_EVENT = "parley:open-search";

/** Opens the search box with the open narrow's operators (the / shortcut). */
export function openSearch(): void {
  window.dispatchEvent(new Event(OPEN_SEARCH_EVENT));
}

export function SearchBox() {
  const view = useNavigation((s) => s.view);
  const current = view.kind === "messages" && view.narrow.kind === "search" ? view.narrow.query : "";
  const [text, setText] = useState(current);
  useEffect(() => setText(current), [current]);
  const input = useRef<HTMLInputElement>(null);

  // The / shortcut.
  useEffect(() => {
    const open = () => {
      const field = input.current;
      if (!field) return;
      const { view: now } = useNavigation.getState();
      const start = now.kind === "messages" && now.narrow.kind === "search" ? now.narrow.query : narrowSearchText(now.kind === "messages" ? now.narrow : null);
      // Rendered now, not on React's next tick: the box is focused holding its text, with the caret at the end.
      flushSync(() => setText(start));
      field.focus();
      field.setSelectionRange(field.value.length, field.value.length);
    };
    window.addEventListener(OPEN_SEARCH_EVENT, open);
    return () => window.removeEventListener(OPEN_SEARCH_EVENT, open);
  }, []);

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const query = text.trim();
    if (query === "") return;
    window.location.hash = searchHash(query);
    (document.activeElement as HTMLElement | null)?.blur();
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === "Escape") {
      e.preventDefault();
      setText(current);
      e.currentTarget.blur();
    }
  };
  return (
    <form className="search-box" role="search" onSubmit={onSubmit}>
      <label htmlFor="search-query" className="visually-hidden">
        Search
      </label>
      <input
        id="search-query"
        ref={input}
        type="search"
        placeholder="Search (/)"
        title="Search messages: words, and operators like channel:, topic:, sender:, has:link, is:starred"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={onKeyDown}
        autoComplete="off"
        spellCheck={false}
      />
    </form>
  );
}
