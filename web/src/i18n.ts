// The interface's language: every user-facing string goes through t(), whose
// key is the English text itself (so English needs no catalog and a missing
// translation falls back to English). Other languages' catalogs live in
// web/locales/<code>.json and load on demand when the user's
// default_language asks for one. Dates and times go through Intl in the same
// language (formatTime/formatDate below), with the user's 12/24-hour setting.
import i18next from "i18next";
import { create } from "zustand";

/** Catalogs the client ships, loaded on first use (English is the keys themselves). */
const CATALOGS: Record<string, () => Promise<{ default: Record<string, string> }>> = {
  de: () => import("../locales/de.json"),
};

export const SUPPORTED_LANGUAGES = ["en", ...Object.keys(CATALOGS)];

void i18next.init({
  lng: "en",
  fallbackLng: "en",
  resources: { en: { translation: {} } },
  // Keys are English sentences, which contain ":" and ".".
  keySeparator: false,
  nsSeparator: false,
  // React escapes what it renders; t()'s results are never put into HTML unescaped.
  interpolation: { escapeValue: false },
  returnNull: false,
  initAsync: false,
});

/** The language the interface is in; views that show text re-render when it changes. */
export const useLanguage = create<{ language: string; twentyFourHour: boolean }>(() => ({ language: "en", twentyFourHour: false }));

/**
 * Translates `key` (the English text), filling `{{name}}` placeholders from `vars`.
 * Counted text passes `count` (catalogs then hold `key_one`, `key_other`… as the
 * language needs): the key is the English plural, and `defaultValue_one` the
 * English singular where it differs — t("{{count}} votes", { count, defaultValue_one: "{{count}} vote" }).
 */
export function t(key: string, vars?: Record<string, string | number>): string {
  return i18next.t(key, vars ?? {}) as string;
}

/** Switches the interface to `language` (a user's default_language), loading its catalog first. */
export async function setLanguage(language: string | undefined): Promise<void> {
  const code = language && (language === "en" || language in CATALOGS) ? language : "en";
  if (code !== "en" && !i18next.hasResourceBundle(code, "translation")) {
    const catalog = await CATALOGS[code]!();
    i18next.addResourceBundle(code, "translation", catalog.default);
  }
  await i18next.changeLanguage(code);
  document.documentElement.lang = code;
  useLanguage.setState({ language: code });
}

/** The first of the browser's languages the client has a catalog for (for the sign-in page, before the user's setting is known). */
export function browserLanguage(): string {
  for (const tag of navigator.languages ?? [navigator.language]) {
    const code = tag.toLowerCase().split("-")[0]!;
    if (SUPPORTED_LANGUAGES.includes(code)) return code;
  }
  return "en";
}

export function setTwentyFourHour(twentyFourHour: boolean): void {
  useLanguage.setState({ twentyFourHour });
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(kind: string, options: Intl.DateTimeFormatOptions): Intl.DateTimeFormat {
  const { language, twentyFourHour } = useLanguage.getState();
  const key = `${language}|${twentyFourHour}|${kind}`;
  let f = formatters.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(language, { ...options, ...("hour" in options || "timeStyle" in options ? { hour12: !twentyFourHour } : {}) });
    formatters.set(key, f);
  }
  return f;
}

/** "3:04 PM" / "15:04" in the user's language and 12/24-hour setting. */
export function formatTime(date: Date): string {
  return formatter("time", { hour: "numeric", minute: "2-digit" }).format(date);
}

/** "Mon, Nov 28" (this year) or "Nov 28, 2025" in the user's language. */
export function formatDate(date: Date, now: Date = new Date()): string {
  return date.getFullYear() === now.getFullYear()
    ? formatter("date", { weekday: "short", month: "short", day: "numeric" }).format(date)
    : formatter("date-year", { month: "short", day: "numeric", year: "numeric" }).format(date);
}

/** "Sat, Nov 28, 2026, 3:04 PM" / "Sa., 28. Nov. 2026, 15:04": date and time together, for tooltips, edit history and <time> in messages. */
export function formatDateTime(date: Date): string {
  return formatter("datetime", { weekday: "short", year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit" }).format(date);
}
