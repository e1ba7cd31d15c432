// Link previews (Zulip's embed_links worker): after a message with links to
// other sites is stored, those pages are asked what they say of themselves
// (domain/link-preview.ts), the answers kept in link_previews for every
// message and process, and the message rendered again with Zulip's
// message_embed blocks; if that changed it, the new HTML is stored and sent to
// everyone who has the message as an update_message event with
// rendering_only: true (Zulip's do_update_embedded_data).
//
// Runs on the job queue (workers/link-previews.ts), queued with the message:
// the send's reply never waits for it, and a restart in between delays the
// previews rather than losing them. A few pages are read at once per process
// (the rest wait), and a page many messages link is read once.
import crypto from "node:crypto";
import { externalContentPath } from "../domain/external-content.ts";
import type { LinkPreviewData } from "../domain/link-preview.ts";
import { flagNames } from "../domain/message-flags.ts";
import { isMeMessage } from "../domain/messages.ts";
import { parseRealmSettings, type RealmSettings } from "../domain/realm-settings.ts";
import { parseUserSettings } from "../domain/user-settings.ts";
import type { ClientEvent, PendingEvents } from "../events/notifier.ts";
import { renderMarkdown } from "../markdown/render.ts";
import { fetchExternalPage } from "../outbound/external-content.ts";
import { outboundSettings, OutboundError } from "../outbound/request.ts";
import { compiledLinkifiersFor } from "../queries/linkifiers.ts";
import { markdownContextFor } from "../queries/markdown-context.ts";
import type { Services } from "../services.ts";
import type { User } from "../storage/schema.ts";
import { LINK_PREVIEWS_JOB, type LinkPreviewsJob } from "../jobs/names.ts";
import { enqueueJob } from "../jobs/queue.ts";
import { getRealm } from "../queries/users.ts";
import { externalContentKey } from "./external-content.ts";
import { inRealmTransaction, type Trx } from "./transaction.ts";

/** Whether a message from `sender` gets link previews: the server's INLINE_URL_EMBED_PREVIEW and the organization's inline_url_embed_preview; never for bots (as Zulip). */
export function linkPreviewsOn(services: Services, settings: Readonly<RealmSettings>, sender: Pick<User, "is_bot">): boolean {
  return services.config.inlineUrlEmbedPreview && settings.inline_url_embed_preview && !sender.is_bot;
}

const urlHash = (url: string) => crypto.createHash("sha256").update(url).digest("hex");

/** Pages read at once by this process; more wait their turn. */
const MAX_PAGES_IN_FLIGHT = 4;
let pagesInFlight = 0;
const waiting: (() => void)[] = [];
/** Pages being read now, so many messages linking one page read it once. */
const reading = new Map<string, Promise<LinkPreviewData | null>>();

async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (pagesInFlight >= MAX_PAGES_IN_FLIGHT) await new Promise<void>((resolve) => waiting.push(resolve));
  pagesInFlight += 1;
  try {
    return await work();
  } finally {
    pagesInFlight -= 1;
    waiting.shift()?.();
  }
}

/** A page's preview: from link_previews while fresh, else asked of the page (once, however many messages wait for it). */
function previewFor(services: Services, url: string): Promise<LinkPreviewData | null> {
  let pending = reading.get(url);
  if (!pending) {
    pending = inTurn(() => storedOrFetchedPreview(services, url)).finally(() => reading.delete(url));
    reading.set(url, pending);
  }
  return pending;
}

/** From link_previews while fresh, else asked of the page and stored (a failure as null). */
async function storedOrFetchedPreview(services: Services, url: string): Promise<LinkPreviewData | null> {
  // The page reader (and its HTML parser) is loaded with the first preview asked for.
  const { extractLinkPreview, MAX_PREVIEW_PAGE_BYTES, PREVIEW_CACHE_SECONDS } = await import("../domain/link-preview.ts");
  const db = services.storage.db;
  const hash = urlHash(url);
  const cached = await db.selectFrom("link_previews").select(["data", "fetched_at"]).where("url_hash", "=", hash).executeTakeFirst();
  const now = services.now();
  if (cached && now - cached.fetched_at < PREVIEW_CACHE_SECONDS) return cached.data === null ? null : (JSON.parse(cached.data) as LinkPreviewData);
  let data: LinkPreviewData | null = null;
  try {
    const page = await fetchExternalPage(url, {
      ...outboundSettings(services.config),
      timeoutMs: services.config.externalContentTimeoutMs,
      firstByteTimeoutMs: services.config.externalContentFirstByteTimeoutMs,
      idleTimeoutMs: services.config.externalContentIdleTimeoutMs,
      maxBytes: MAX_PREVIEW_PAGE_BYTES,
    });
    data = extractLinkPreview(page.html, page.url);
  } catch (error) {
    if (!(error instanceof OutboundError)) throw error;
  }
  const row = { url_hash: hash, url, data: data === null ? null : JSON.stringify(data), fetched_at: now };
  await db
    .insertInto("link_previews")
    .values(row)
    .onConflict((oc) => oc.column("url_hash").doUpdateSet({ data: row.data, fetched_at: row.fetched_at }))
    .execute();
  return data;
}

/**
 * Fetches the previews of a stored message's links and renders it again with
 * them. `content` is the text the links were found in: a message edited since
 * is left to the edit's own previews.
 */
export async function addLinkPreviews(services: Services, realmId: number, messageId: number, content: string, urls: readonly string[]): Promise<void> {
  const realm = await getRealm(services.storage.db, realmId);
  if (!realm || realm.deactivated) return;
  const previews = new Map<string, LinkPreviewData>();
  for (const url of urls) {
    const data = await previewFor(services, url);
    if (data?.image) previews.set(url, data);
  }
  if (previews.size === 0) return;
  const db = services.storage.db;
  const message = await db.selectFrom("messages").select(["id", "sender_id", "content", "rendered_content"]).where("id", "=", messageId).executeTakeFirst();
  if (!message || message.content !== content) return;
  const sender = await db.selectFrom("users").select(["settings", "is_bot"]).where("id", "=", message.sender_id).executeTakeFirst();
  const settings = parseRealmSettings(realm.settings);
  const key = await externalContentKey(services.files);
  const rendered = renderMarkdown(
    content,
    await markdownContextFor(db, services.config, realm.id, content, {
      translateEmoticons: sender ? parseUserSettings(sender.settings).translate_emoticons : false,
      inlineImagePreview: settings.inline_image_preview,
      linkifiers: await compiledLinkifiersFor(services.storage, db, realm),
      urlEmbedPreview: true,
      linkPreview: (url) => previews.get(url),
      externalImageUrl: (url) => externalContentPath(url, key),
    }),
  );
  if (rendered.html === message.rendered_content) return;
  await inRealmTransaction(services, realm.id, async (trx, pending) => {
    // Only if the message is still as it was read (not edited or deleted meanwhile).
    const updated = await trx.updateTable("messages").set({ rendered_content: rendered.html }).where("id", "=", messageId).where("content", "=", content).executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) return;
    // Its readers, as for an edit: deactivated accounts have no queues to tell.
    const holders = await trx
      .selectFrom("user_messages as um")
      .innerJoin("users as u", "u.id", "um.user_id")
      .select(["um.user_id", "um.flags"])
      .where("um.message_id", "=", messageId)
      .where("u.is_active", "=", true)
      .execute();
    const byFlags = new Map<number, number[]>();
    for (const h of holders) byFlags.set(h.flags, [...(byFlags.get(h.flags) ?? []), h.user_id]);
    const event: ClientEvent = {
      type: "update_message",
      user_id: null,
      edit_timestamp: services.now(),
      message_id: messageId,
      message_ids: [messageId],
      rendering_only: true,
      content,
      rendered_content: rendered.html,
      is_me_message: isMeMessage(content, rendered.html),
    };
    for (const [bits, userIds] of byFlags) pending.add(realm.id, { ...event, flags: flagNames(bits) }, userIds.sort((a, b) => a - b));
  });
}

/** Queues a message's link previews with its write: the job queue reads the pages once the transaction has committed. */
export async function enqueueLinkPreviews(services: Services, trx: Trx, pending: PendingEvents, realmId: number, messageId: number, content: string, urls: readonly string[]): Promise<void> {
  if (urls.length === 0) return;
  const job: LinkPreviewsJob = { realm_id: realmId, message_id: messageId, content, urls: [...urls] };
  await enqueueJob(trx, pending, services, LINK_PREVIEWS_JOB, job);
}
