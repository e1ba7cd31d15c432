import { useState, type FormEvent } from "react";
import { navigate, useNavigation } from "../model/navigation.ts";

/** Full-text search: opens the server's search narrow (#narrow/search/…). */
export function SearchBox() {
  const current = useNavigation((s) => (s.view.kind === "messages" && s.view.narrow.kind === "search" ? s.view.narrow.query : ""));
  const [query, setQuery] = useState(current);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = query.trim();
    if (q !== "") navigate({ kind: "messages", narrow: { kind: "search", query: q } });
  };
  return (
    <form className="search-box" role="search" onSubmit={submit}>
      <label htmlFor="search-input" className="visually-hidden">
        Search
      </label>
      <input id="search-input" type="search" placeholder="Search messages" value={query} onChange={(e) => setQuery(e.target.value)} />
    </form>
  );
}
