// The lookups the Markdown renderer needs, loaded for one message: only the
// users, groups and channels its text names (markdown/render.ts pre-scans);
// and the rendering of descriptions, which needs the same lookups.
import type { Kysely, Transaction } from "kysely";
import type { Config } from "../config.ts";
import { referencedNames, renderMarkdown, type CompiledLinkifiers, type MarkdownContext, type MentionUser } from "../markdown/render.ts";
import type { Database } from "../storage/schema.ts";
import { isStorableId } from "../storage/database.ts";
import { activeRealmEmojiByName } from "./realm-emoji.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Rendering choices of the sender and the organization. */
export interface RenderOptions extends Pick<MarkdownContext, "urlEmbedPreview" | "linkPreview" | "externalImageUrl"> {
  translateEmoticons?: boolean;
  inlineImagePreview?: boolean;
  /** The organization's linkifiers (queries/linkifiers.ts compiledLinkifiersFor). */
  linkifiers?: CompiledLinkifiers;
}

export async function markdownContextFor(db: Db, config: Pick<Config, "externalUrl">, realmId: number, content: string, options: RenderOptions = {}): Promise<MarkdownContext> {
  const names = referencedNames(content);
  const userNames = [...new Set(names.userNames.map((n) => n.toLowerCase()))];
  const userIds = names.userIds.filter(isStorableId);
  const groupNames = [...new Set(names.groupNames.map((n) => n.toLowerCase()))];
  const channelNames = [...new Set(names.channelNames.map((n) => n.toLowerCase()))];

  // Custom emoji names are lowercase ASCII (domain/emoji.ts); colons may be shared (":a:b:"), hence the lookahead.
  const emojiNames = content.includes(":") ? [...new Set([...content.matchAll(/:([0-9a-z_-]+)(?=:)/g)].map((m) => m[1]!))] : [];

  const activeUsers = db.selectFrom("users").select(["id", "full_name", "bot_type"]).where("realm_id", "=", realmId).where("is_active", "=", true);
  const [usersByLowerName, usersByNameAsWritten, usersById, groups, channels, realmEmoji] = await Promise.all([
    // Two lookups, each on its own index, rather than one OR the planners answer by reading every user.
    userNames.length === 0 ? [] : activeUsers.where((eb) => eb.fn("lower", ["full_name"]), "in", userNames).execute(),
    // SQLite's lower() folds only ASCII, so the names as written are matched too.
    userNames.length === 0 ? [] : activeUsers.where("full_name", "in", names.userNames).execute(),
    userIds.length === 0
      ? []
      : db.selectFrom("users").select(["id", "full_name", "bot_type"]).where("realm_id", "=", realmId).where("is_active", "=", true).where("id", "in", userIds).execute(),
    groupNames.length === 0
      ? []
      : db
          .selectFrom("user_groups")
          .select(["id", "name"])
          .where("realm_id", "=", realmId)
          .where("deactivated", "=", false)
          .where((eb) => eb.fn("lower", ["name"]), "in", groupNames)
          .execute(),
    channelNames.length === 0
      ? []
      : db.selectFrom("channels").select(["id", "name"]).where("realm_id", "=", realmId).where("name_key", "in", channelNames).execute(),
    activeRealmEmojiByName(db, realmId, emojiNames),
  ]);

  const usersByName = [...new Map([...usersByLowerName, ...usersByNameAsWritten].map((u) => [u.id, u])).values()];
  const byName = new Map<string, MentionUser[]>();
  for (const u of usersByName) {
    const key = u.full_name.toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), { id: u.id, fullName: u.full_name, botType: u.bot_type }]);
  }
  const byId = new Map<number, MentionUser>([...usersByName, ...usersById].map((u) => [u.id, { id: u.id, fullName: u.full_name, botType: u.bot_type }]));
  const groupByName = new Map(groups.map((g) => [g.name.toLowerCase(), g]));
  const channelByName = new Map(channels.map((c) => [c.name.toLowerCase(), c]));
  return {
    ...options,
    realmUrl: config.externalUrl,
    usersByName: (name) => byName.get(name.toLowerCase()) ?? [],
    userById: (id) => byId.get(id),
    groupByName: (name) => groupByName.get(name.toLowerCase()),
    channelByName: (name) => channelByName.get(name.toLowerCase()),
    realmEmojiByName: (name) => realmEmoji.get(name),
  };
}

/**
 * HTML of a channel, channel folder or organization description: the message
 * renderer without previews (Zulip's render_stream_description,
 * render_channel_folder_description and the realm's rendered description
 * all call markdown_convert with no_previews=True). Mentions, channel links,
 * emoji, the organization's linkifiers (when given: the migration that first
 * rendered descriptions ran before linkifiers existed) and the rest render as
 * in messages; an empty description is "".
 */
export async function renderDescription(db: Db, config: Pick<Config, "externalUrl">, realmId: number, description: string, linkifiers?: CompiledLinkifiers): Promise<string> {
  if (description.trim() === "") return "";
  return renderMarkdown(description, await markdownContextFor(db, config, realmId, description, { inlineImagePreview: false, linkifiers })).html;
}
