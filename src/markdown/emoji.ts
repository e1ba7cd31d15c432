// Unicode emoji names as Zulip uses them.
//
// Data: `emojibase-data` (CLDR labels and keywords, Unicode versions, groups),
// with Zulip's naming rules applied on top (see docs/markdown.md):
//   1. a hand-curated name list (CURATED below) wins outright for its codes:
//      these are the short Google-style names Zulip users type (`smile`,
//      `+1`, `heart`, `tada`, `octopus`, ...);
//   2. every other emoji gets its CLDR label as canonical name
//      ("kiwi fruit" -> `kiwi_fruit`);
//   3. emoji newer than Unicode 11 also get their CLDR keywords as aliases,
//      but only keywords claimed by exactly one emoji and not equal to any
//      canonical name;
//   4. skin-tone variants and components are not emoji of their own.
// Emoji codes are dash-separated lowercase hex with every U+FE0F removed
// (`2764`, `0023-20e3`, `1f937-200d-2640`), exactly Zulip's `emoji_code`.

import { createRequire } from "node:module";

interface EmojibaseEntry {
  label: string;
  hexcode: string;
  tags?: string[];
  group?: number;
  version: number;
}

// Zulip's emoji set in the reference fixtures stops at Unicode 15.0
// (15.1 sequences such as the phoenix are rendered as plain text).
const MAX_EMOJI_VERSION = 15.0;
const COMPONENT_GROUP = 2;
const KEYWORD_ALIAS_MIN_VERSION = 11;

// code:canonical,alias,alias;...
const CURATED = [
  // faces
  "1f600:grinning,happy", "1f603:smiley", "1f604:big_smile",
  "1f601:grinning_face_with_smiling_eyes", "1f606:laughing,lol", "1f605:sweat_smile",
  "1f602:joy,tears,laughter_tears", "1f923:rolling_on_the_floor_laughing,rofl",
  "263a:smiling_face,relaxed", "1f60a:blush", "1f607:innocent,halo", "1f642:smile,slight_smile",
  "1f643:upside_down,oops", "1f609:wink", "1f60c:relieved", "1f60d:heart_eyes,in_love",
  "1f618:heart_kiss,blow_a_kiss", "1f617:kiss", "1f619:kiss_smiling_eyes",
  "1f61a:kiss_with_blush", "1f60b:yum", "1f61c:stuck_out_tongue_wink,joking,crazy",
  "1f61d:stuck_out_tongue", "1f61b:mischievous", "1f911:money_face,kaching",
  "1f917:hug,arms_open", "1f913:nerd,geek", "1f60e:sunglasses", "1f921:clown",
  "1f920:cowboy", "1f60f:smirk,smug", "1f612:unamused", "1f61e:disappointed",
  "1f614:pensive,tired", "1f61f:worried", "1f615:oh_no,half_frown,concerned,confused",
  "1f641:frown,slight_frown", "2639:sad,big_frown", "1f623:persevere,helpless",
  "1f616:confounded,agony", "1f62b:anguish", "1f629:weary,distraught", "1f624:triumph",
  "1f620:angry", "1f621:rage,mad,grumpy,very_angry",
  "1f636:speechless,no_mouth,blank,poker_face", "1f610:neutral", "1f611:expressionless",
  "1f62f:hushed", "1f626:frowning", "1f627:anguished,pained", "1f62e:open_mouth,surprise",
  "1f632:astonished", "1f635:dizzy", "1f633:flushed,embarrassed,blushing", "1f631:scream",
  "1f628:fear,scared,shock", "1f630:cold_sweat", "1f622:cry",
  "1f625:exhausted,disappointed_relieved,stressed", "1f924:drooling", "1f62d:sob",
  "1f613:sweat", "1f62a:sleepy", "1f634:sleeping", "1f644:rolling_eyes", "1f914:thinking",
  "1f925:lying", "1f62c:grimacing,nervous,anxious",
  "1f910:silence,quiet,hush,zip_it,lips_are_sealed", "1f922:nauseated,queasy",
  "1f927:sneezing", "1f637:cant_talk,mask", "1f912:sick,flu,face_with_thermometer,ill,fever",
  "1f915:hurt,head_bandage,injured", "1f608:smiling_devil,smiling_imp,smiling_face_with_horns",
  "1f47f:devil,imp,angry_devil", "1f479:ogre", "1f47a:goblin", "1f4a9:poop,pile_of_poo",
  "1f47b:ghost,boo,spooky,haunted", "1f480:skull",
  "2620:skull_and_crossbones,pirate,death,hazard,toxic,poison", "1f47d:alien,ufo",
  "1f47e:space_invader", "1f916:robot", "1f383:jack-o-lantern,pumpkin",
  "1f63a:smiley_cat", "1f638:smile_cat", "1f639:joy_cat", "1f63b:heart_eyes_cat",
  "1f63c:smirk_cat,smug_cat", "1f63d:kissing_cat", "1f640:scream_cat,weary_cat",
  "1f63f:crying_cat", "1f63e:angry_cat,pouting_cat",
  // hands and people
  "1f450:open_hands", "1f64c:raised_hands,praise", "1f44f:clap,applause",
  "1f64f:pray,welcome,thank_you,namaste", "1f91d:handshake,done_deal",
  "1f44d:+1,thumbs_up,like", "1f44e:-1,thumbs_down", "1f44a:fist_bump,punch",
  "270a:fist,power", "1f91b:left_fist", "1f91c:right_fist", "1f91e:fingers_crossed",
  "270c:peace_sign,victory", "1f918:rock_on,sign_of_the_horns", "1f44c:ok,got_it",
  "1f448:point_left", "1f449:point_right", "1f446:point_up,this", "1f447:point_down",
  "270b:hand,raised_hand", "1f91a:stop", "1f590:high_five,palm",
  "1f596:spock,live_long_and_prosper", "1f44b:wave,hello,hi", "1f919:call_me",
  "1f4aa:muscle", "1f595:middle_finger", "270d:writing", "1f933:selfie",
  "1f485:nail_polish,nail_care", "1f440:eyes,looking", "1f937:shrug", "1f926:facepalm",
  // hearts and symbols
  "2764:heart,love,love_you", "1f49b:yellow_heart,heart_of_gold", "1f49a:green_heart,envy",
  "1f499:blue_heart", "1f49c:purple_heart,bravery", "1f5a4:black_heart",
  "1f494:broken_heart,heartache", "2763:heart_exclamation", "1f495:two_hearts",
  "1f49e:revolving_hearts", "1f493:heartbeat", "1f497:heart_pulse,growing_heart",
  "1f496:sparkling_heart", "1f498:cupid,smitten,heart_arrow", "1f49d:gift_heart",
  "1f49f:heart_box", "1f4af:100,hundred", "2705:check,all_good,approved",
  "274c:cross_mark,incorrect,wrong", "2753:question", "2757:exclamation",
  "26a0:warning,caution,danger", "2b50:star", "1f31f:glowing_star", "2728:sparkles,glamour",
  "26a1:high_voltage,zap", "2797:division", "2b06:up,north", "2b07:down,south",
  "2b05:left,west", "27a1:right,east",
  "0023-20e3:hash", "002a-20e3:asterisk", "0030-20e3:zero", "0031-20e3:one",
  "0032-20e3:two", "0033-20e3:three", "0034-20e3:four", "0035-20e3:five", "0036-20e3:six",
  "0037-20e3:seven", "0038-20e3:eight", "0039-20e3:nine", "1f51f:ten",
  // objects, food, nature
  "1f389:tada", "1f38a:confetti,party_ball", "1f525:fire,lit,hot,flame", "1f680:rocket",
  "2615:coffee", "1f37a:beer", "1f37b:beers", "1f355:pizza", "1f382:birthday",
  "1f381:gift,present", "1f3c6:trophy,winner", "1f947:gold,number_one", "1f948:silver",
  "1f949:bronze", "1f4a1:light_bulb,bulb,idea", "1f6e0:working_on_it,hammer_and_wrench,tools",
  "1f419:octopus", "1f408:cat,meow", "1f415:dog,woof", "1f407:rabbit", "1f384:holiday_tree",
  "1f95d:kiwi", "1f308:rainbow", "2600:sunny", "1f370:cake", "1f34e:apple", "1f648:see_no_evil",
  "1f649:hear_no_evil", "1f64a:speak_no_evil",
];

export const ZULIP_EXTRA_EMOJI_URL = "/static/generated/emoji/images/emoji/unicode/zulip.png";

/** Every accepted `:name:` (canonical names and aliases) -> emoji code. */
export const nameToCode = new Map<string, string>();
/** Emoji code -> canonical name (used for Unicode emoji typed directly). */
export const codeToName = new Map<string, string>();

function zulipCode(hexcode: string): string {
  return hexcode
    .toLowerCase()
    .split("-")
    .filter((part) => part !== "fe0f")
    .join("-");
}

function cleanupName(label: string): string {
  return label
    .toLowerCase()
    .replace(/&/g, "and")
    .replace(/[\s\-]+/g, "_")
    .replace(/[^\p{L}\p{N}_]/gu, "")
    .replace(/_+/g, "_")
    .replace(/^_|_$/g, "");
}

function asciiFold(name: string): string {
  return name.normalize("NFKD").replace(/\p{M}/gu, "");
}

function buildTables(): void {
  const require = createRequire(import.meta.url);
  const data = require("emojibase-data/en/data.json") as EmojibaseEntry[];

  for (const entry of CURATED) {
    const colon = entry.indexOf(":");
    const code = entry.slice(0, colon);
    const names = entry.slice(colon + 1).split(",");
    codeToName.set(code, names[0]!);
    for (const name of names) nameToCode.set(name, code);
  }

  const candidates: { code: string; canonical: string; keywords: string[]; aliases: boolean }[] = [];
  for (const e of data) {
    if (e.group === undefined || e.group === COMPONENT_GROUP) continue;
    if (e.version > MAX_EMOJI_VERSION) continue;
    const code = zulipCode(e.hexcode);
    if (codeToName.has(code)) continue;
    const canonical = cleanupName(e.label);
    if (!canonical || nameToCode.has(canonical)) continue;
    const keywords = e.tags ? e.tags.map(cleanupName).filter(Boolean) : [];
    candidates.push({ code, canonical, keywords, aliases: e.version >= KEYWORD_ALIAS_MIN_VERSION });
    codeToName.set(code, canonical);
    nameToCode.set(canonical, code);
  }

  // Keyword aliases (newer emoji only): only keywords claimed by exactly one
  // emoji and not colliding with any canonical name.
  const claims = new Map<string, number>();
  for (const c of candidates) {
    for (const k of new Set(c.keywords)) claims.set(k, (claims.get(k) ?? 0) + 1);
  }
  for (const c of candidates) {
    if (!c.aliases) continue;
    for (const k of c.keywords) {
      if (claims.get(k) === 1 && !nameToCode.has(k)) nameToCode.set(k, c.code);
    }
  }

  // Non-ASCII names also get an ASCII spelling (`flag_türkiye` -> `flag_turkiye`).
  for (const [name, code] of [...nameToCode]) {
    const folded = asciiFold(name);
    if (folded !== name && !nameToCode.has(folded)) nameToCode.set(folded, code);
  }
}

buildTables();

/**
 * Every emoji code with all the names that mean it, the canonical one first:
 * the `code_to_names` of Zulip's emoji_api.json (server_emoji_data_url), which
 * clients use for their emoji picker and autocomplete.
 */
export function emojiCodeToNames(): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  for (const [code, canonical] of codeToName) result[code] = [canonical];
  for (const [name, code] of nameToCode) {
    const names = result[code];
    if (names && names[0] !== name) names.push(name);
  }
  return result;
}

/** Emoji code of an emoji character sequence: hex code points, U+FE0F dropped. */
export function emojiCodeOf(sequence: string): string {
  const parts: string[] = [];
  for (const ch of sequence) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0xfe0f) continue;
    parts.push(cp.toString(16).padStart(4, "0"));
  }
  return parts.join("-");
}

// Possible emoji sequences (UTS #51 EBNF), as Zulip's POSSIBLE_EMOJI_RE.
const EMOJI_ELEMENT =
  String.raw`\p{RI}\p{RI}|\p{Emoji}(?:\p{Emoji_Modifier}|\uFE0F\u20E3?|[\u{E0020}-\u{E007E}]+\u{E007F})?`;
export const POSSIBLE_EMOJI_RE = new RegExp(`(?:${EMOJI_ELEMENT})(?:\\u200D(?:${EMOJI_ELEMENT}))*`, "uy");
// Things like ↔ or a bare digit are emoji with text presentation: not emoji here.
export const TEXT_PRESENTATION_RE = /^\P{Emoji_Presentation}\u20E3?$/u;

// Zulip's emoticon translations (user setting translate_emoticons).
export const EMOTICONS: Readonly<Record<string, string>> = {
  ":)": "smile",
  "(:": "smile",
  ":(": "frown",
  "<3": "heart",
  ":|": "neutral",
  ":/": "confused",
  ";)": "wink",
  ":D": "big_smile",
  ":o": "open_mouth",
  ":O": "open_mouth",
  ":p": "stuck_out_tongue",
  ":P": "stuck_out_tongue",
};
