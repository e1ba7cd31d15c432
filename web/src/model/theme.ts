// Light or dark: the user's color_scheme setting (Zulip's values: 1
// automatic, 2 dark, 3 light), following the system while it is automatic.
// Shown by the data-theme attribute the style sheets key their palettes on.

export const COLOR_SCHEME = { automatic: 1, dark: 2, light: 3 } as const;

let scheme: number = COLOR_SCHEME.automatic;
const systemDark = typeof window !== "undefined" ? window.matchMedia("(prefers-color-scheme: dark)") : null;

function apply(): void {
  const dark = scheme === COLOR_SCHEME.dark || (scheme !== COLOR_SCHEME.light && systemDark?.matches === true);
  document.documentElement.dataset.theme = dark ? "dark" : "light";
}

systemDark?.addEventListener("change", apply);

export const themeStore = {
  /** From user_settings.color_scheme (register and user_settings events); also before sign-in (automatic). */
  setScheme(value: number | undefined): void {
    scheme = value ?? COLOR_SCHEME.automatic;
    apply();
  },
};
