// The search box in the header: Zulip's search syntax, e.g.
// `channel:design topic:logo sender:ada@example.com colour`. Opened with /,
// it holds the open narrow's operators, so typed words search within it (as
// Zulip's search does); clicked, it starts empty and searches everything.
// Enter opens the search narrow (its hash written the way Zulip writes
// narrows), Escape leaves. While typing, a combobox suggests what the word
// may be (Zulip's search typeahead): the text as typed (picked, it searches),
// operators, people, channels and the chosen channel's topics; a suggestion
// picked goes into the text, and Enter then searches.
import { useCallback, useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { flushSync } from "react-dom";
import { channelName } from "../model/channels.ts";
import { useNavigation } from "../model/navigation.ts";
import { narrowSearchText, searchChannel, searchHash, searchSuggestions, type SearchSuggestion } from "../model/search.ts";
import { topicsStore, useTopics } from "../model/topics.ts";
import { useUsers } from "../model/users.ts";
import { t } from "../i18n.ts";
import { SuggestionList, useAutocomplete, type Suggestion, type SuggestionSet } from "./Autocomplete.tsx";
import "../styles/search.css";

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

  const search = (value: string) => {
    const query = value.trim();
    if (query === "") return;
    window.location.hash = searchHash(query);
    (document.activeElement as HTMLElement | null)?.blur();
  };
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    search(text);
  };

  const suggest = useCallback((before: string): SuggestionSet | null => {
    // The chosen channel's topics are fetched once; the list is suggested again when they arrive (below).
    const streamId = searchChannel(before);
    if (streamId !== undefined && !useTopics.getState().byStream[streamId]) void topicsStore.fetch(streamId);
    const found = searchSuggestions(before);
    if (!found) return null;
    const value = input.current?.value ?? before;
    return { start: found.start, items: found.items.map((item) => suggestionItem(item, value)) };
  }, []);
  const ac = useAutocomplete(
    suggest,
    (value, caret, picked) => {
      flushSync(() => setText(value));
      input.current?.setSelectionRange(caret, caret);
      if (picked.key === "typed") search(value);
    },
    () => ({ value: input.current?.value ?? "", caret: input.current?.selectionStart ?? 0 }),
  );
  // A channel's topics arrive after "topic:" was typed: suggest again for what is in the box now.
  const topics = useTopics((s) => s.byStream);
  useEffect(() => {
    const field = input.current;
    if (field && document.activeElement === field && searchChannel(field.value) !== undefined) ac.update(field.value, field.selectionStart ?? field.value.length);
  }, [topics]); // eslint-disable-line react-hooks/exhaustive-deps

  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (ac.handleKey(e)) return;
    if (e.key === "Escape") {
      e.preventDefault();
      setText(current);
      e.currentTarget.blur();
    }
  };
  return (
    <form className="search-box" role="search" onSubmit={onSubmit}>
      <label htmlFor="search-query" className="visually-hidden">
        {t("Search")}
      </label>
      <div className="autocomplete-anchor">
        <input
          id="search-query"
          ref={input}
          type="search"
          role="combobox"
          aria-expanded={ac.set !== null}
          aria-controls={ac.set !== null ? "search-suggestions" : undefined}
          aria-activedescendant={ac.set !== null ? `search-suggestions-${ac.active}` : undefined}
          aria-autocomplete="list"
          placeholder={t("Search (/)")}
          title={t("Search messages: words, and operators like channel:, topic:, sender:, has:link, is:starred")}
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            ac.update(e.target.value, e.target.selectionStart ?? e.target.value.length);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => ac.close()}
          autoComplete="off"
          spellCheck={false}
        />
        <SuggestionList id="search-suggestions" state={ac} label={t("Search suggestions")} />
      </div>
    </form>
  );
}

/** What a suggestion shows: the term it puts in the box and, beside it, what the term means. */
function suggestionItem(item: SearchSuggestion, value: string): Suggestion {
  const [term, meaning] = describe(item, value);
  const text = meaning === "" ? term : `${term} ${meaning}`;
  const label =
    item.kind === "typed" ? (
      <span className="search-suggestion">{meaning}</span>
    ) : (
      <span className="search-suggestion">
        <code>{term}</code>
        {meaning !== "" && (
          <>
            {" "}
            <small>{meaning}</small>
          </>
        )}
      </span>
    );
  return { key: item.kind === "typed" ? "typed" : item.insert, label, text, insert: item.insert, reopen: item.kind === "operator" && item.insert.endsWith(":") };
}

function operatorMeaning(term: string): string {
  switch (term) {
    case "channel:":
      return t("Messages in a channel");
    case "topic:":
      return t("Messages in a topic");
    case "sender:":
      return t("Messages sent by someone");
    case "dm:":
      return t("Direct messages with someone");
    case "dm-including:":
      return t("Direct messages including someone");
    case "is:starred":
      return t("Starred messages");
    case "is:mentioned":
      return t("Messages that mention you");
    case "is:dm":
      return t("Direct messages");
    case "is:unread":
      return t("Unread messages");
    case "is:resolved":
      return t("Resolved topics");
    case "is:followed":
      return t("Followed topics");
    case "has:link":
      return t("Messages with links");
    case "has:image":
      return t("Messages with images");
    case "has:attachment":
      return t("Messages with attachments");
    case "has:reaction":
      return t("Messages with reactions");
    default:
      return "";
  }
}

function describe(item: SearchSuggestion, value: string): [term: string, meaning: string] {
  const term = item.insert.trim();
  let meaning: string;
  switch (item.kind) {
    case "typed":
      return [term, t("Search for {{query}}", { query: value.trim() })];
    case "operator":
      meaning = operatorMeaning(item.term);
      break;
    case "person": {
      const name = useUsers.getState().byId[item.userId]?.full_name ?? "";
      meaning =
        item.operator === "sender"
          ? t("Sent by {{name}}", { name })
          : item.operator === "dm"
            ? t("Direct messages with {{name}}", { name })
            : t("Direct messages including {{name}}", { name });
      break;
    }
    case "channel":
      meaning = t("Messages in #{{channel}}", { channel: channelName(item.streamId) ?? "" });
      break;
    case "topic":
      meaning = t("Topic {{topic}} in #{{channel}}", { topic: item.topic, channel: channelName(item.streamId) ?? "" });
      break;
  }
  return [term, item.negated && meaning !== "" ? t("Exclude: {{what}}", { what: meaning }) : meaning];
}
