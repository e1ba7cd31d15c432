// The incoming-webhook integrations Parley serves at
// /api/v1/external/<name>: one module each (see integration.ts). A name not
// listed here is an unknown integration (404, as Zulip answers for a webhook
// URL it has no view for).
import { alertmanager } from "./alertmanager.ts";
import { github, githubSponsors } from "./github.ts";
import { gitlab } from "./gitlab.ts";
import { grafana } from "./grafana.ts";
import type { Integration } from "./integration.ts";
import { json } from "./json.ts";
import { sentry } from "./sentry.ts";
import { slackIncoming } from "./slack-incoming.ts";

export const INTEGRATIONS: readonly Integration[] = [
  alertmanager,
  github,
  githubSponsors,
  gitlab,
  grafana,
  json,
  sentry,
  slackIncoming,
];

const BY_NAME: ReadonlyMap<string, Integration> = new Map(INTEGRATIONS.map((integration) => [integration.name, integration]));

/** The integration served at /api/v1/external/<name>, if any. Names are matched exactly, as Zulip's URL patterns do. */
export function integrationNamed(name: string): Integration | undefined {
  return BY_NAME.get(name);
}
