// Your saved snippets (/register's saved_snippets, kept by saved_snippets events).
import { create } from "zustand";

export interface SavedSnippet {
  id: number;
  title: string;
  content: string;
  date_created: number;
}

export const useSnippets = create<{ snippets: SavedSnippet[] }>(() => ({ snippets: [] }));

export const snippetsStore = {
  load(snippets: SavedSnippet[] | undefined): void {
    useSnippets.setState({ snippets: snippets ?? [] });
  },
  apply(event: { op: string; saved_snippet?: SavedSnippet; saved_snippet_id?: number }): void {
    const { snippets } = useSnippets.getState();
    const snippet = event.saved_snippet;
    if (event.op === "add" && snippet) useSnippets.setState({ snippets: [...snippets.filter((s) => s.id !== snippet.id), snippet] });
    else if (event.op === "update" && snippet) useSnippets.setState({ snippets: snippets.map((s) => (s.id === snippet.id ? { ...s, ...snippet } : s)) });
    else if (event.op === "remove") useSnippets.setState({ snippets: snippets.filter((s) => s.id !== event.saved_snippet_id) });
  },
};
