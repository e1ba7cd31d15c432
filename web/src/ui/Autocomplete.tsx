// Typeahead for a text field: suggestions computed from the text before the
// caret, shown as a listbox under the field. Up/Down move, Enter or Tab
// picks, Escape closes. The field's own key handler asks `handleKey` first,
// so Enter picks a suggestion instead of sending while the list is open.
import { useCallback, useMemo, useState, type KeyboardEvent, type ReactNode } from "react";

export interface Suggestion {
  key: string;
  label: ReactNode;
  /** Text for screen readers and tests. */
  text: string;
  /** What replaces the typed token (from `start` to the caret). */
  insert: string;
  /** Suggest again once picked, for what the inserted text starts (e.g. an operator's operands), instead of closing. */
  reopen?: boolean;
}

export interface SuggestionSet {
  /** Where the token being completed starts in the value. */
  start: number;
  items: Suggestion[];
}

export interface AutocompleteState {
  /** The list to show (null: nothing to suggest, or closed). */
  set: SuggestionSet | null;
  active: number;
  /** Call from the field's onKeyDown first; true when the key was used. */
  handleKey(e: KeyboardEvent<HTMLInputElement | HTMLTextAreaElement>): boolean;
  /** Call after the value or caret changed. */
  update(value: string, caret: number): void;
  pick(index: number): void;
  close(): void;
}

export function useAutocomplete(
  suggest: (before: string) => SuggestionSet | null,
  apply: (value: string, caret: number, picked: Suggestion) => void,
  getValue: () => { value: string; caret: number },
): AutocompleteState {
  const [set, setSet] = useState<SuggestionSet | null>(null);
  const [active, setActive] = useState(0);
  const update = useCallback(
    (value: string, caret: number) => {
      const next = suggest(value.slice(0, caret));
      setSet(next && next.items.length > 0 ? next : null);
      setActive(0);
    },
    [suggest],
  );
  const pick = useCallback(
    (index: number) => {
      if (!set) return;
      const item = set.items[index];
      if (!item) return;
      const { value, caret } = getValue();
      const before = value.slice(0, set.start) + item.insert;
      apply(before + value.slice(caret), before.length, item);
      const next = item.reopen ? suggest(before) : null;
      setSet(next && next.items.length > 0 ? next : null);
      setActive(0);
    },
    [set, suggest, apply, getValue],
  );
  const close = useCallback(() => setSet(null), []);
  return useMemo(
    () => ({
      set,
      active,
      update,
      pick,
      close,
      handleKey(e) {
        if (!set) return false;
        if (e.key === "ArrowDown" || e.key === "ArrowUp") {
          e.preventDefault();
          const n = set.items.length;
          setActive((a) => (a + (e.key === "ArrowDown" ? 1 : n - 1)) % n);
          return true;
        }
        if ((e.key === "Enter" && !e.shiftKey) || e.key === "Tab") {
          e.preventDefault();
          pick(active);
          return true;
        }
        if (e.key === "Escape") {
          e.preventDefault();
          e.stopPropagation();
          setSet(null);
          return true;
        }
        return false;
      },
    }),
    [set, active, update, pick, close],
  );
}

export function SuggestionList({ id, state, label }: { id: string; state: AutocompleteState; label: string }) {
  if (!state.set) return null;
  return (
    <ul className="autocomplete" id={id} role="listbox" aria-label={label}>
      {state.set.items.map((item, i) => (
        <li
          key={item.key}
          id={`${id}-${i}`}
          role="option"
          aria-selected={i === state.active}
          className={i === state.active ? "active" : undefined}
          // mousedown, not click: the field keeps its focus.
          onMouseDown={(e) => {
            e.preventDefault();
            state.pick(i);
          }}
        >
          {item.label}
        </li>
      ))}
    </ul>
  );
}
