// The search box in the header (/ focuses it): Zulip's search syntax, e.g.
// `channel:design topic:logo sender:ada@example.com colour`. On focus it
// holds the open narrow's operators, so typed words search within it; Enter
// opens the search narrow (its hash written the way Zulip writes narrows),
// Escape leaves.
import { useEffect, useState, type FormEvent, type KeyboardEvent } from "react";
import { useNavigation } from "../model/navigation.ts";
import { narrowSearchText, searchHash } from "../model/search.ts";

export function SearchBox() {
  const view = useNavigation((s) => s.view);
  const current = view.kind === "messages" && view.narrow.kind === "search" ? view.narrow.query : "";
  const [text, setText] = useState(current);
  useEffect(() => setText(current), [current]);

  const onFocus = () => {
    if (text === "") setText(narrowSearchText(view.kind === "messages" ? view.narrow : null));
  };
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
        type="search"
        placeholder="Search (/)"
        title="Search messages: words, and operators like channel:, topic:, sender:, has:link, is:starred"
        value={text}
        onChange={(e) => setText(e.target.value)}
        onFocus={onFocus}
        onKeyDown={onKeyDown}
        autoComplete="off"
        spellCheck={false}
      />
    </form>
  );
}
