// Display settings (Zulip's "Preferences"): the interface's language, 12- or
// 24-hour time, the home view, the theme and your time zone, saved through
// PATCH /settings. The language switches at once (i18n.ts, followed from the
// user_settings event by model/settings.ts).
import { useMemo } from "react";
import { SUPPORTED_LANGUAGES, t } from "../../i18n.ts";
import { useSettings } from "../../model/settings.ts";
import { COLOR_SCHEME } from "../../model/theme.ts";
import { saved, saveSetting, Section, useStatus } from "./shared.tsx";

/** A language's name in that language ("Deutsch"), as Zulip's language menu shows them. */
function languageName(code: string): string {
  try {
    const name = new Intl.DisplayNames([code], { type: "language" }).of(code);
    return name ? name.charAt(0).toLocaleUpperCase(code) + name.slice(1) : code;
  } catch {
    return code;
  }
}

export function Display() {
  const settings = useSettings((s) => s.settings);
  const status = useStatus();
  const zones = useMemo(() => (typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : ["UTC"]), []);
  const set = (label: string, property: string, value: unknown) => void status.run(saved(label), () => saveSetting(property, value));
  const scheme = settings.color_scheme ?? COLOR_SCHEME.automatic;
  const language = typeof settings.default_language === "string" && SUPPORTED_LANGUAGES.includes(settings.default_language) ? settings.default_language : "en";
  const homeView = typeof settings.web_home_view === "string" ? settings.web_home_view : "inbox";
  return (
    <Section id="display-settings" title={t("Preferences")}>
      <div className="page-form">
        <label>
          {t("Language")}
          <select value={language} onChange={(e) => set(t("Language"), "default_language", e.target.value)}>
            {SUPPORTED_LANGUAGES.map((code) => (
              <option key={code} value={code} lang={code}>
                {languageName(code)}
              </option>
            ))}
          </select>
        </label>
        <label>
          {t("Time format")}
          <select value={settings.twenty_four_hour_time === true ? "24" : "12"} onChange={(e) => set(t("Time format"), "twenty_four_hour_time", e.target.value === "24")}>
            <option value="12">{t("12-hour clock (5:00 PM)")}</option>
            <option value="24">{t("24-hour clock (17:00)")}</option>
          </select>
        </label>
        <label>
          {t("Home view")}
          <select value={homeView} onChange={(e) => set(t("Home view"), "web_home_view", e.target.value)}>
            <option value="inbox">{t("Inbox")}</option>
            <option value="recent_topics">{t("Recent conversations")}</option>
            <option value="all_messages">{t("Combined feed")}</option>
          </select>
        </label>
        <fieldset>
          <legend>{t("Theme")}</legend>
          {(
            [
              [COLOR_SCHEME.automatic, t("Automatic (follow the system)")],
              [COLOR_SCHEME.light, t("Light")],
              [COLOR_SCHEME.dark, t("Dark")],
            ] as const
          ).map(([value, label]) => (
            <label key={value} className="checkbox">
              <input type="radio" name="color_scheme" checked={scheme === value} onChange={() => set(t("Theme"), "color_scheme", value)} />
              {label}
            </label>
          ))}
        </fieldset>
        <label>
          {t("Time zone")}
          <select value={settings.timezone ?? ""} onChange={(e) => set(t("Time zone"), "timezone", e.target.value)}>
            <option value="">{t("Not set")}</option>
            {zones.map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        </label>
      </div>
      {status.status}
    </Section>
  );
}
