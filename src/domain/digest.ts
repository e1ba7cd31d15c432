// Weekly digest emails, pure (Zulip's zerver/lib/digest.py and the
// zerver/emails/digest templates): when the daily check runs, which topics
// are "hot", and what the email says in HTML and plain text.
// docs/zulip-behaviour/email-notifications.md describes the whole feature.
import { plainTextOf } from "./push.ts";
import { absoluteUrls } from "./email-notifications.ts";
import { escapeHtml } from "./text.ts";

/** Zulip's DIGEST_CUTOFF: a digest covers the last 5 days, and goes to people not active in them. */
export const DIGEST_CUTOFF_DAYS = 5;
/** Zulip's MAX_HOT_TOPICS_TO_BE_INCLUDED_IN_DIGEST. */
export const MAX_HOT_TOPICS = 4;
/** Messages shown of each hot topic (Zulip's DigestTopic keeps its first 2). */
export const SAMPLE_MESSAGES = 2;
/** Users per digest job (Zulip queues them 30 an event: work shared, no job too long). */
export const DIGEST_USERS_PER_JOB = 30;
/** The daily check's hour (UTC): Zulip's cron runs it once a day; Parley's choice: evening in Europe, midday in the Americas. */
export const DIGEST_CHECK_HOUR_UTC = 17;

const DAY_MS = 86_400_000;

/** The UTC day of `ms` as YYYY-MM-DD. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Zulip's weekday numbering (Python's weekday()): 0 Monday … 6 Sunday, of the UTC day of `ms`. */
export function digestWeekday(ms: number): number {
  return (new Date(ms).getUTCDay() + 6) % 7;
}

function checkTimeOfDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS + DIGEST_CHECK_HOUR_UTC * 3_600_000;
}

/**
 * When a chain seeded at `nowMs` first runs: the next check time. Seeding
 * happens only when no check is queued at all (the first start, or after one
 * failed for good), so at most that day is skipped.
 */
export function firstCheckAt(nowMs: number): number {
  const today = checkTimeOfDay(nowMs);
  return nowMs < today ? today : nextCheckAt(nowMs);
}

/** When the check after one running at `nowMs` runs: the next UTC day's check time. */
export function nextCheckAt(nowMs: number): number {
  return checkTimeOfDay(nowMs + DAY_MS);
}

/** One topic's traffic since the cutoff (Zulip's DigestTopic), messages in send order. */
export interface DigestTopic {
  channelId: number;
  channelName: string;
  topic: string;
  /** The topic's first messages (any sender). */
  sampleIds: number[];
  /** Names of the people (not bots) who wrote in it. */
  humanSenders: Set<string>;
  humanMessages: number;
}

/** Zulip's get_hot_topics: the two topics with the most people in them, then the longest, up to 4. Ties keep the order of their first message. */
export function hotTopics(topics: readonly DigestTopic[]): DigestTopic[] {
  const byDiversity = [...topics].sort((a, b) => b.humanSenders.size - a.humanSenders.size);
  const byLength = [...topics].sort((a, b) => b.humanMessages - a.humanMessages);
  const hot = byDiversity.slice(0, 2);
  for (const topic of byLength) {
    if (hot.length >= MAX_HOT_TOPICS) break;
    if (!hot.includes(topic)) hot.push(topic);
  }
  return hot;
}

/** Zulip's display_list: "A", "A and B", "A, B and C", or the first `limit` and "and N others". */
export function displayList(values: readonly string[], limit: number): string {
  if (values.length <= 1) return values[0] ?? "";
  if (values.length <= limit) return `${values.slice(0, -1).join(", ")} and ${values[values.length - 1]}`;
  const extra = values.length - limit;
  return `${values.slice(0, limit).join(", ")} and ${extra === 1 ? "1 other" : `${extra} others`}`;
}

export interface DigestConversation {
  channelName: string;
  topic: string;
  /** The topic in the web client. */
  url: string;
  messages: readonly { senderName: string; html: string }[];
  /** Messages by people beyond those shown. */
  moreCount: number;
  participants: readonly string[];
}

export interface DigestInput {
  realmName: string;
  externalUrl: string;
  /** False when the organization or the user keeps message content out of emails: counts instead of conversations. */
  showContent: boolean;
  hiddenBy?: "user" | "realm";
  conversations: readonly DigestConversation[];
  /** Messages received since the cutoff, shown when content is hidden. */
  newMessagesCount: number;
  newChannels: readonly { name: string; url: string }[];
  newUsers: readonly string[];
  unsubscribeUrl: string;
  settingsUrl: string;
}

/** Zulip's enough_traffic: new channels, or else hot conversations (message counts when content is hidden). New people alone are not worth an email. */
export function enoughTraffic(input: Pick<DigestInput, "showContent" | "conversations" | "newMessagesCount" | "newChannels">): boolean {
  if (input.newChannels.length > 0) return true;
  return input.showContent ? input.conversations.length > 0 : input.newMessagesCount > 0;
}

const HIDDEN_BY = {
  user: "This email does not include message content because you have chosen to hide message content in email notifications.",
  realm: "This email does not include message content because your organization hides message content in email notifications.",
};

/** The digest email: subject, plain text and HTML (Zulip's digest.subject.txt, digest.txt, digest.html). */
export function digestEmail(input: DigestInput): { subject: string; text: string; html: string } {
  const e = escapeHtml;
  const text: string[] = [];
  const html: string[] = [];
  if (input.showContent) {
    if (input.conversations.length > 0) html.push(`<h2 style="font-size:16px">Hot conversations</h2>`);
    for (const c of input.conversations) {
      const header = `#${c.channelName} > ${c.topic}`;
      text.push(header);
      html.push(`<div style="margin:12px 0;border-left:3px solid #ccc;padding-left:8px"><div><a href="${e(c.url)}" style="font-weight:bold">${e(header)}</a></div>`);
      for (const m of c.messages) {
        text.push(`${m.senderName}: ${plainTextOf(m.html)}`);
        html.push(`<div style="margin:6px 0"><div style="font-weight:bold">${e(m.senderName)}</div><div>${absoluteUrls(m.html, input.externalUrl)}</div></div>`);
      }
      if (c.moreCount > 0) {
        const more = `+ ${c.moreCount} more message${c.moreCount === 1 ? "" : "s"} by ${displayList(c.participants, 4)}.`;
        text.push(more);
        html.push(`<div><a href="${e(c.url)}">${e(more)}</a></div>`);
      }
      text.push("");
      html.push(`</div>`);
    }
  } else {
    const channels = input.newChannels.length;
    const line =
      input.newMessagesCount > 0 && channels > 0
        ? `You have ${input.newMessagesCount} new messages, and there are ${channels} new channels in ${input.realmName}.`
        : input.newMessagesCount > 0
          ? `You have ${input.newMessagesCount} new messages in ${input.realmName}.`
          : `There are ${channels} new channels in ${input.realmName}.`;
    const why = HIDDEN_BY[input.hiddenBy ?? "user"];
    text.push(line, "", why, "");
    html.push(`<p>${e(line)}</p><p>${e(why)}</p>`);
  }
  // Channel names are not message content: Zulip lists them only with content shown; the count above says it otherwise.
  if (input.showContent && input.newChannels.length > 0) {
    text.push("** New channels **", `    ${input.newChannels.map((c) => c.name).join(", ")}.`, "");
    html.push(`<h2 style="font-size:16px">New channels</h2><p>${input.newChannels.map((c) => `<a href="${e(c.url)}">#${e(c.name)}</a>`).join(", ")}</p>`);
  }
  if (input.newUsers.length > 0) {
    const who = `${displayList(input.newUsers, 10)} joined ${input.realmName}.`;
    text.push("** New users **", `    ${who}`, "");
    html.push(`<h2 style="font-size:16px">New users</h2><p>${e(who)}</p>`);
  }
  const catchUp = `Log in to ${input.realmName} to catch up: ${input.externalUrl}`;
  text.push(catchUp, "", "--", `Manage email preferences: ${input.settingsUrl}`, `Unsubscribe from digest emails: ${input.unsubscribeUrl}`);
  html.push(
    `<p><a href="${e(input.externalUrl)}">Log in to ${e(input.realmName)} to catch up</a></p>`,
    `<p style="color:#666;font-size:12px"><a href="${e(input.settingsUrl)}">Manage email preferences</a> · <a href="${e(input.unsubscribeUrl)}">Unsubscribe from digest emails</a></p>`,
  );
  return {
    subject: `Parley digest for ${input.realmName}`,
    text: `${text.join("\n")}\n`,
    html: `<!doctype html><html><body>${html.join("")}</body></html>`,
  };
}
