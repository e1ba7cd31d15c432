// Your personal settings (/register's user_settings, kept by user_settings
// events), and what follows from them in the page: the theme, desktop notifications.
import { create } from "zustand";
import { setLanguage, setTwentyFourHour } from "../i18n.ts";
import { notificationsStore } from "./notifications.ts";
import { themeStore } from "./theme.ts";

export interface UserSettings {
  color_scheme?: number;
  timezone?: string;
  enable_desktop_notifications?: boolean;
  enable_sounds?: boolean;
  enable_offline_email_notifications?: boolean;
  enable_offline_push_notifications?: boolean;
  pm_content_in_desktop_notifications?: boolean;
  [key: string]: unknown;
}

export const useSettings = create<{ settings: UserSettings }>(() => ({ settings: {} }));

function follow(settings: UserSettings): void {
  themeStore.setScheme(settings.color_scheme);
  notificationsStore.setEnabled(settings.enable_desktop_notifications ?? true);
  void setLanguage(settings.default_language as string | undefined);
  setTwentyFourHour(settings.twenty_four_hour_time === true);
}

export const settingsStore = {
  load(settings: UserSettings | undefined): void {
    useSettings.setState({ settings: settings ?? {} });
    follow(settings ?? {});
  },
  apply(property: string, value: unknown): void {
    const settings = { ...useSettings.getState().settings, [property]: value };
    useSettings.setState({ settings });
    follow(settings);
  },
};
