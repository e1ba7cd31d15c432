// Link previews on the job queue (Zulip's embed_links queue): the pages a
// message links to are read after its commit and the message rendered again
// with their previews (actions/link-previews.ts). A page that cannot be read
// is not an error (the message stands without its preview); a database error
// is retried.
import { addLinkPreviews } from "../actions/link-previews.ts";
import type { LinkPreviewsJob } from "../jobs/names.ts";
import type { Worker } from "../jobs/runner.ts";
import type { Services } from "../services.ts";

export function linkPreviewsWorker(services: Services): Worker<LinkPreviewsJob> {
  return {
    run: ({ realm_id, message_id, content, urls }) => addLinkPreviews(services, realm_id, message_id, content, urls),
    // As many pages as the action reads at once; each job reads at most three, each within the fetch's time limit.
    concurrency: 4,
    leaseMs: 5 * 60_000,
  };
}
