// The lookups the Markdown renderer needs, loaded for one message: only the
// users, groups and channels its text names (markdown/render.ts pre-scans);
// and the rendering of descriptions, which needs the same lookups.
import { sql, type Kysely, type RawBuilder, type Transaction } from "kysely";
import type { Config } from "../config.ts";
import { referencedNames, renderMarkdown, type CompiledLinkifiers, type MarkdownContext, type MentionUser } from "../markdown/render.ts";
import type { Database } from "../storage/schema.ts";
import { isStorableId } from "../storage/database.ts";
import { copyRows, type RowCache } from "../storage/row-cache.ts";
import { activeRealmEmojiByName } from "./realm-emoji.ts";

type Db = Kysely<Database> | Transaction<Database>;

/** Rendering choices of the sender and the organization. */
export interface RenderOptions extends Pick<MarkdownContext, "urlEmbedPreview" | "linkPreview" | "externalImageUrl"> {
  translateEmoticons?: boolean;
  inlineImagePreview?: boolean;
  /** The organization's linkifiers (queries/linkifiers.ts compiledLinkifiersFor). */
  linkifiers?: CompiledLinkifiers;
}

/** A user a message names, and how: by_name 1 (their name lowercased), 2 (as written) or 0 (by ID); `matched` is the name or ID (as text) that found them. */
interface NamedUser {
  by_name: number;
  matched: string;
  id: number;
  full_name: string;
  bot_type: number | null;
}

interface Names {
  lower: string[];
  asWritten: string[];
  ids: number[];
}

/**
 * The active users `names` mention by name (lowercased, and as written:
 * SQLite's lower() folds only ASCII) or by ID: one statement, each branch on
 * its own index (an OR of them the planners answer by reading every user).
 */
function namedUsers(db: Db, realmId: number, names: Names): Promise<NamedUser[]> {
  const active = (byName: number, matched: RawBuilder<string>) =>
    db
      .selectFrom("users")
      .select([sql.lit(byName).as("by_name"), matched.as("matched"), "id", "full_name", "bot_type"])
      .where("realm_id", "=", realmId)
      .where("is_active", "=", true);
  const branches = [
    ...(names.lower.length > 0 ? [active(1, sql<string>`lower(full_name)`).where((eb) => eb.fn("lower", ["full_name"]), "in", names.lower)] : []),
    ...(names.asWritten.length > 0 ? [active(2, sql<string>`full_name`).where("full_name", "in", names.asWritten)] : []),
    ...(names.ids.length > 0 ? [active(0, sql<string>`CAST(id AS text)`).where("id", "in", names.ids)] : []),
  ];
  if (branches.length === 0) return Promise.resolve([]);
  return branches.slice(1).reduce((query, branch) => query.unionAll(branch), branches[0]!).execute() as Promise<NamedUser[]>;
}

/**
 * The same from the row cache, one entry per name and per ID: an
 * organization's messages name the same people in ever new combinations,
 * and an entry per combination would fill the cache (which then starts again
 * empty). Any name or ID not there sends one statement for all of them.
 */
async function cachedNamedUsers(rows: RowCache, db: Db, realmId: number, names: Names): Promise<NamedUser[]> {
  const wanted = [
    ...names.lower.map((name) => ({ byName: 1, matched: name })),
    ...names.asWritten.map((name) => ({ byName: 2, matched: name })),
    ...names.ids.map((id) => ({ byName: 0, matched: String(id) })),
  ];
  let all: Promise<Map<string, NamedUser[]>> | undefined;
  const loadAll = () =>
    (all ??= namedUsers(db, realmId, names).then((found) => {
      const byKey = new Map<string, NamedUser[]>();
      for (const user of found) {
        const key = `${Number(user.by_name)} ${user.matched}`;
        byKey.set(key, [...(byKey.get(key) ?? []), user]);
      }
      return byKey;
    }));
  const parts = await Promise.all(
    wanted.map(({ byName, matched }) =>
      rows.read(`named-user ${realmId} ${byName} ${matched}`, ["users"], async () => (await loadAll()).get(`${byName} ${matched}`) ?? [], copyRows),
    ),
  );
  return parts.flatMap((part) => part!);
}

/**
 * `rows`: the process's row cache, for the named users outside a transaction
 * (a message mentions the same people again and again); dropped by any
 * committed change to users.
 */
export async function markdownContextFor(
  db: Db,
  config: Pick<Config, "externalUrl">,
  realmId: number,
  content: string,
  options: RenderOptions = {},
  rows?: RowCache,
): Promise<MarkdownContext> {
  const names = referencedNames(content);
  const userNames = [...new Set(names.userNames.map((n) => n.toLowerCase()))];
  const userIds = names.userIds.filter(isStorableId);
  const groupNames = [...new Set(names.groupNames.map((n) => n.toLowerCase()))];
  const channelNames = [...new Set(names.channelNames.map((n) => n.toLowerCase()))];

  // Custom emoji names are lowercase ASCII (domain/emoji.ts); colons may be shared (":a:b:"), hence the lookahead.
  const emojiNames = content.includes(":") ? [...new Set([...content.matchAll(/:([0-9a-z_-]+)(?=:)/g)].map((m) => m[1]!))] : [];

  const named = { lower: userNames, asWritten: [...new Set(names.userNames)], ids: [...new Set(userIds)] };
  const [users, groups, channels, realmEmoji] = await Promise.all([
    named.lower.length + named.ids.length === 0 ? [] : rows && !db.isTransaction ? cachedNamedUsers(rows, db, realmId, named) : namedUsers(db, realmId, named),
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

  // By ID: of two people a name fits, the same one is named whatever order the names were found in (cached or not).
  const usersByName = [...new Map(users.filter((u) => Number(u.by_name) !== 0).map((u) => [u.id, u])).values()].sort((a, b) => a.id - b.id);
  const usersById = users.filter((u) => Number(u.by_name) === 0);
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
