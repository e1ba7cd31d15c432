import type { CompiledLinkifiers } from "./linkifiers.ts";

export interface MentionUser {
  id: number;
  fullName: string;
  /** Deactivated users can still be named; their mentions render silent. Default true. */
  isActive?: boolean;
  /** users.bot_type, when the lookup knows it (the send path uses it to spot outgoing-webhook bots). */
  botType?: number | null;
}

export interface MarkdownContext {
  /** e.g. "http://127.0.0.1:9991": links to it become relative, /user_uploads/ links are uploads. */
  realmUrl: string;
  /** Case-insensitive full-name match among the realm's users (several may share a name). */
  usersByName(name: string): MentionUser[];
  userById(id: number): MentionUser | undefined;
  /** Case-insensitive group name match. */
  groupByName(name: string): { id: number; name: string; deactivated?: boolean } | undefined;
  /** Channel by name (Zulip matches exactly). */
  channelByName(name: string): { id: number; name: string } | undefined;
  /** Realm custom emoji by name; rendered as <img class="emoji">. */
  realmEmojiByName?(name: string): { sourceUrl: string } | undefined;
  /** The sender's translate_emoticons setting: ":)" -> :smile:. Default false. */
  translateEmoticons?: boolean;
  /** The realm's inline_image_preview setting. Default true. */
  inlineImagePreview?: boolean;
  /**
   * true (default): image previews use Zulip's `/thumbnail?url=…&size=thumbnail|full`
   * URLs (the server must serve GET /thumbnail); false: `<img src>` is the image URL.
   */
  thumbnailImages?: boolean;
  /** The organization's linkifiers, in order (markdown/linkifiers.ts compileLinkifiers). Default none. */
  linkifiers?: CompiledLinkifiers;
  /** Link previews on (the server's INLINE_URL_EMBED_PREVIEW and the realm's inline_url_embed_preview): links are noted in linksForPreview. */
  urlEmbedPreview?: boolean;
  /** A link's known preview (title, description, image), once fetched; undefined or null: none yet, or none at all. */
  linkPreview?(url: string): { title: string | null; description: string | null; image: string | null } | null | undefined;
  /** Where the page loads another site's image from (the image proxy); default: the image's own URL. */
  externalImageUrl?(url: string): string;
}

export interface RenderedMessage {
  /** Zulip's rendered_content. */
  html: string;
  /** Non-silent user mentions (not @_**x**, not inside quotes). */
  mentionedUserIds: number[];
  /** Non-silent group mentions @*group*. */
  mentionedGroupIds: number[];
  /** @**all**, @**everyone**, @**channel**, @**stream** (non-silent). */
  channelWildcard: boolean;
  /** @**topic** (non-silent). */
  topicWildcard: boolean;
  /** Content starts with "/me " and renders as a single paragraph. */
  isMeMessage: boolean;
  /** The rendered HTML contains a link (including channel/topic links). */
  hasLink: boolean;
  /** An inline image (or video thumbnail) preview was added. */
  hasImage: boolean;
  /**
   * The message links to uploads (uploadPathIds non-empty). Zulip sets
   * has_attachment only for path_ids that are real attachments of the sender:
   * the caller should confirm them against its attachment table.
   */
  hasAttachment: boolean;
  /** path_ids of /user_uploads/<path_id> links (relative or realmUrl-absolute), unique, in order. */
  uploadPathIds: string[];
  /** With ctx.urlEmbedPreview: the links on other sites a preview may be made for (at most 3, in order). */
  linksForPreview: string[];
}
