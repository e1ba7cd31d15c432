// What the compose box suggests while you type: people after @, channels
// after #, emoji after :, topics in the Topic field, people in the To field.
// Pure functions over the stores' current state.
import type { User } from "../api/types.ts";
import { useChannels } from "./channels.ts";
import { searchEmoji } from "./emoji.ts";
import { useTopics } from "./topics.ts";
import { shownEmail, useUsers } from "./users.ts";

const LIMIT = 8;

export interface PersonMatch {
  user: User;
  /** The mention syntax that names exactly this person. */
  mention: string;
}

function activeHumans(): User[] {
  return Object.values(useUsers.getState().byId).filter((u) => u.is_active !== false);
}

/** People whose name (any word of it) or shown email (the real one where you may see it) starts with the query. */
export function matchPeople(query: string, exclude: number[] = []): User[] {
  const q = query.trim().toLowerCase();
  const people = activeHumans().filter((u) => !exclude.includes(u.user_id));
  const matches = people.filter((u) => {
    const name = u.full_name.toLowerCase();
    return q === "" || name.startsWith(q) || name.split(/\s+/).some((w) => w.startsWith(q)) || shownEmail(u).toLowerCase().startsWith(q);
  });
  matches.sort((a, b) => Number(b.full_name.toLowerCase().startsWith(q)) - Number(a.full_name.toLowerCase().startsWith(q)) || a.full_name.localeCompare(b.full_name));
  return matches.slice(0, LIMIT);
}

/** `@**Name**`, or `@**Name|id**` when another person has the same name (Zulip's syntax). */
export function mentionSyntax(user: User): string {
  const sameName = activeHumans().filter((u) => u.full_name.toLowerCase() === user.full_name.toLowerCase()).length > 1;
  return sameName ? `@**${user.full_name}|${user.user_id}**` : `@**${user.full_name}**`;
}

export const WILDCARDS = ["all", "everyone", "channel", "topic"] as const;

export function matchWildcards(query: string): string[] {
  const q = query.toLowerCase();
  return q === "" ? [] : WILDCARDS.filter((w) => w.startsWith(q));
}

export function matchChannels(query: string): { streamId: number; name: string }[] {
  const q = query.toLowerCase();
  return Object.values(useChannels.getState().subscriptions)
    .filter((s) => s.name.toLowerCase().includes(q))
    .sort((a, b) => Number(b.name.toLowerCase().startsWith(q)) - Number(a.name.toLowerCase().startsWith(q)) || a.name.localeCompare(b.name))
    .slice(0, LIMIT)
    .map((s) => ({ streamId: s.stream_id, name: s.name }));
}

export function matchTopics(streamId: number, query: string): string[] {
  const q = query.toLowerCase();
  return (useTopics.getState().byStream[streamId] ?? [])
    .map((t) => t.name)
    .filter((name) => name !== "" && name.toLowerCase().includes(q) && name.toLowerCase() !== q)
    .slice(0, LIMIT);
}

export { searchEmoji };

/** The token being typed at the caret: `@que`, `#que` or `:que`, or null. */
export function tokenAtCaret(before: string): { trigger: "@" | "#" | ":"; query: string; start: number } | null {
  const mention = /(?:^|[\s(])(@\**)([^@*\n]{0,40})$/.exec(before);
  if (mention) return { trigger: "@", query: mention[2]!, start: before.length - mention[1]!.length - mention[2]!.length };
  const channel = /(?:^|[\s(])(#\**)([^#*\n]{0,40})$/.exec(before);
  if (channel) return { trigger: "#", query: channel[2]!, start: before.length - channel[1]!.length - channel[2]!.length };
  const emoji = /(?:^|[\s(])(:)([a-z0-9_+-]{2,30})$/i.exec(before);
  if (emoji) return { trigger: ":", query: emoji[2]!, start: before.length - 1 - emoji[2]!.length };
  return null;
}
