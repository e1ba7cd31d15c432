// The emoji picker (loaded on first use: its data is not part of the first
// load): a search field, the categories, and a grid of emoji buttons named by
// their emoji name. Arrow keys move through the grid; Enter or a click picks.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import { customEmoji, loadEmojiCatalog, type CatalogEmoji, type Category } from "../model/emoji-catalog.ts";
import type { EmojiChoice } from "../model/message-actions.ts";
import { useEmoji } from "../model/emoji.ts";
import { t } from "../i18n.ts";
import { ErrorLine } from "./StatusLine.tsx";

const COLUMNS = 8;

export default function EmojiPicker({ onPick, isChosen }: { onPick: (emoji: EmojiChoice) => void; isChosen: (emoji: EmojiChoice) => boolean }) {
  const [categories, setCategories] = useState<Category[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [query, setQuery] = useState("");
  const realmEmoji = useEmoji((s) => s.realm);
  const gridRef = useRef<HTMLDivElement>(null);
  const searchRef = useRef<HTMLInputElement>(null);

  useEffect(() => {
    let live = true;
    loadEmojiCatalog().then(
      (c) => live && setCategories(c),
      (e: unknown) => live && setError(e instanceof Error ? e.message : String(e)),
    );
    searchRef.current?.focus();
    return () => {
      live = false;
    };
  }, []);

  const all = useMemo(() => {
    if (!categories) return [];
    const custom = customEmoji(realmEmoji);
    const [popular, ...rest] = categories;
    return [...(popular ? [popular] : []), ...(custom.length > 0 ? [{ id: "custom", label: t("Custom"), emoji: custom }] : []), ...rest];
  }, [categories, realmEmoji]);

  const shown: Category[] = useMemo(() => {
    const q = query.trim().toLowerCase().replace(/^:|:$/g, "").replace(/_/g, " ");
    if (q === "") return all;
    const seen = new Set<string>();
    const hits: CatalogEmoji[] = [];
    const starts: CatalogEmoji[] = [];
    for (const c of all) {
      if (c.id === "popular") continue;
      for (const e of c.emoji) {
        const key = `${e.type}:${e.code}`;
        if (seen.has(key) || !e.search.includes(q)) continue;
        seen.add(key);
        (e.name.replace(/_/g, " ").startsWith(q) ? starts : hits).push(e);
      }
    }
    return [{ id: "results", label: t("Search results"), emoji: [...starts, ...hits].slice(0, 200) }];
  }, [all, query]);

  const choice = (e: CatalogEmoji): EmojiChoice => ({ emoji_name: e.name, emoji_code: e.code, reaction_type: e.type });

  const buttons = () => [...(gridRef.current?.querySelectorAll<HTMLButtonElement>("button.emoji-choice") ?? [])];
  const onGridKey = (e: KeyboardEvent) => {
    const list = buttons();
    const index = list.indexOf(document.activeElement as HTMLButtonElement);
    if (index < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: COLUMNS, ArrowUp: -COLUMNS }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    const next = index + step;
    if (next < 0) searchRef.current?.focus();
    else list[Math.min(next, list.length - 1)]?.focus();
  };
  const onSearchKey = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      buttons()[0]?.focus();
    } else if (e.key === "Enter") {
      e.preventDefault();
      const first = shown[0]?.emoji[0];
      if (first) onPick(choice(first));
    }
  };

  const jump = (id: string) => {
    setQuery("");
    requestAnimationFrame(() => gridRef.current?.querySelector(`[data-category="${id}"]`)?.scrollIntoView({ block: "start" }));
  };

  return (
    <div className="emoji-picker">
      <label className="visually-hidden" htmlFor="emoji-search">
        {t("Search emoji")}
      </label>
      <input id="emoji-search" ref={searchRef} className="emoji-search" type="search" placeholder={t("Search emoji")} value={query} onChange={(e) => setQuery(e.target.value)} onKeyDown={onSearchKey} autoComplete="off" />
      {categories && query === "" && (
        <div className="emoji-tabs" role="toolbar" aria-label={t("Emoji categories")}>
          {all.map((c) => (
            <button key={c.id} type="button" className="emoji-tab" title={c.label} aria-label={c.label} onClick={() => jump(c.id)}>
              {c.emoji[0] && (c.emoji[0].type === "realm_emoji" ? <img src={c.emoji[0].glyph} alt="" /> : c.emoji[0].glyph)}
            </button>
          ))}
        </div>
      )}
      <div className="emoji-grid" ref={gridRef} onKeyDown={onGridKey}>
        <ErrorLine error={error && t("Could not load emoji: {{error}}", { error })} />
        {!categories && !error && <p className="emoji-loading">{t("Loading emoji…")}</p>}
        {shown.map((c) => (
          <section key={c.id} data-category={c.id} aria-label={c.label}>
            <h3 className="emoji-category">{c.label}</h3>
            {c.emoji.length === 0 && <p className="emoji-none">{t("No emoji match.")}</p>}
            <div className="emoji-row">
              {c.emoji.map((e) => {
                const ch = choice(e);
                const chosen = isChosen(ch);
                return (
                  <button key={`${e.type}:${e.code}`} type="button" className={chosen ? "emoji-choice chosen" : "emoji-choice"} aria-label={e.name} aria-pressed={chosen} title={`:${e.name}:`} onClick={() => onPick(ch)}>
                    {e.type === "realm_emoji" ? <img src={e.glyph} alt="" /> : <span aria-hidden="true">{e.glyph}</span>}
                  </button>
                );
              })}
            </div>
          </section>
        ))}
      </div>
    </div>
  );
}
