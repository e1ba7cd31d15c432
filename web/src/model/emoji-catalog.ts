// The emoji the picker offers: the server's names for each code point
// (server_emoji_data_url, the names the server accepts for reactions), put in
// Unicode's categories and order with emojibase's data (only loaded with the
// picker), plus the organization's custom emoji.
import compact from "emojibase-data/en/compact.json";
import { emojiStore, type RealmEmoji } from "./emoji.ts";
import { t } from "../i18n.ts";

export interface CatalogEmoji {
  /** The server's first name for it. */
  name: string;
  /** Every name and keyword to search by, lowercase. */
  search: string;
  code: string;
  type: "unicode_emoji" | "realm_emoji";
  /** The character (unicode) or the image address (custom). */
  glyph: string;
}

export interface Category {
  id: string;
  label: string;
  emoji: CatalogEmoji[];
}

/** The groups' names, read when shown (in the interface's language of the moment). */
const GROUP_LABELS = [
  () => t("Smileys & emotion"),
  () => t("People & body"),
  () => t("Components"),
  () => t("Animals & nature"),
  () => t("Food & drink"),
  () => t("Travel & places"),
  () => t("Activities"),
  () => t("Objects"),
  () => t("Symbols"),
  () => t("Flags"),
];

/** Zulip's default popular reactions. */
const POPULAR = ["1f44d", "1f389", "1f642", "2764", "1f6e0", "1f419"];

function normalize(hexcode: string): string {
  return hexcode.toLowerCase().replace(/-fe0f/g, "");
}

function glyphOf(code: string): string {
  try {
    return String.fromCodePoint(...code.split("-").map((p) => Number.parseInt(p, 16)));
  } catch {
    return "";
  }
}

let loaded: Promise<Category[]> | null = null;

async function build(): Promise<Category[]> {
  const code_to_names = await emojiStore.codeToNames();
  const meta = new Map<string, { group: number; order: number; tags: string }>();
  for (const e of compact as { hexcode: string; group?: number; order?: number; label: string; tags?: string[] }[]) {
    meta.set(normalize(e.hexcode), { group: e.group ?? 9, order: e.order ?? 1e6, tags: `${e.label} ${(e.tags ?? []).join(" ")}`.toLowerCase() });
  }
  const groups: { emoji: CatalogEmoji; order: number }[][] = GROUP_LABELS.map(() => []);
  const byCode = new Map<string, CatalogEmoji>();
  for (const [code, names] of Object.entries(code_to_names)) {
    const name = names[0];
    if (!name) continue;
    const m = meta.get(code);
    const emoji: CatalogEmoji = { name, code, type: "unicode_emoji", glyph: glyphOf(code), search: `${names.join(" ")} ${m?.tags ?? ""}`.replace(/_/g, " ") };
    byCode.set(code, emoji);
    groups[m ? m.group : 8]!.push({ emoji, order: m?.order ?? 1e6 });
  }
  const categories: Category[] = [];
  const popular = POPULAR.map((c) => byCode.get(c)).filter((e): e is CatalogEmoji => e !== undefined);
  if (popular.length > 0) categories.push({ id: "popular", get label() { return t("Popular"); }, emoji: popular });
  groups.forEach((list, i) => {
    // Skin-tone swatches and hair components are not reactions.
    if (i === 2 || list.length === 0) return;
    const label = GROUP_LABELS[i]!;
    categories.push({ id: `g${i}`, get label() { return label(); }, emoji: list.sort((a, b) => a.order - b.order).map((x) => x.emoji) });
  });
  return categories;
}

/** The organization's active custom emoji, as they are now (realm_emoji events change them). */
export function customEmoji(realmEmoji: Record<string, RealmEmoji>): CatalogEmoji[] {
  return Object.values(realmEmoji)
    .filter((e) => !e.deactivated)
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((e) => ({ name: e.name, code: e.id, type: "realm_emoji", glyph: e.source_url, search: e.name.replace(/_/g, " ") }));
}

/** The Unicode emoji by category (loaded once). */
export function loadEmojiCatalog(): Promise<Category[]> {
  loaded ??= build().catch((error: unknown) => {
    loaded = null;
    throw error;
  });
  return loaded;
}
