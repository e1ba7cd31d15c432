// The organization's code playgrounds (realm_playgrounds of /register, kept
// by realm_playgrounds events): a code block whose language has one offers
// "View in playground", which opens the playground's url_template with the
// code, as Zulip's web app does.
import { create } from "zustand";

export interface Playground {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

export const usePlaygrounds = create<{ list: Playground[] }>(() => ({ list: [] }));

export const playgroundsStore = {
  load(list: Playground[] | undefined): void {
    usePlaygrounds.setState({ list: list ?? [] });
  },
};

/** The playgrounds for a code block's language (its data-code-language, Pygments' name), case-insensitively as Zulip matches them. */
export function playgroundsFor(language: string): Playground[] {
  const lang = language.toLowerCase();
  return usePlaygrounds.getState().list.filter((p) => p.pygments_language.toLowerCase() === lang);
}

/** The playground's address for `code`: url_template's {code} (RFC 6570 simple expansion, as Zulip's url-template does). */
export function playgroundUrl(playground: Playground, code: string): string {
  return playground.url_template.replace(/\{code\}/g, encodeURIComponent(code));
}
