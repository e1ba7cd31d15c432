// The message formats every git-hosting integration shares (Zulip's
// zerver/lib/webhooks/git.py): pushes, branches, tags, pull/merge requests,
// issues, commit comments, releases, and the topics they go to. The strings
// match Zulip's byte for byte; integrations fill them from their payloads.

import { compareCodePoints, pythonStrip } from "../domain/text.ts";
import { endsWithPunctuation, pyRstrip, pyStr } from "./payload.ts";

export const EMPTY_SHA = "0000000000000000000000000000000000000000";

/** How many commits a push message lists before "[and N more commit(s)]". */
export const COMMITS_LIMIT = 20;
/** How many committers a push message names before "others". */
export const PUSH_COMMITTERS_LIMIT = 3;

/** `{repo} / {branch}`. */
export function topicWithBranch(repo: string, branch: string): string {
  return `${repo} / ${branch}`;
}

/** `{repo} / {type} #{id} {title}`, e.g. "zulip / PR #12 Fix the thing". */
export function topicWithPrOrIssueInfo(repo: string, type: string, id: number | string, title: string): string {
  return `${repo} / ${type} #${id} ${title}`;
}

/** `{repo} / {tag} {title}`. */
export function topicWithRelease(repo: string, tag: string, title: string): string {
  return `${repo} / ${tag} ${title}`;
}

/** A quoted block, as Zulip puts a description or comment under the first line. */
export function quoteBlock(message: string): string {
  return `\n~~~ quote\n${message}\n~~~`;
}

export function getShortSha(sha: string): string {
  return sha.slice(0, 11);
}

export interface CommitData {
  /** Who made the commit (name or username, as the integration chooses). */
  name: string;
  sha: string;
  url: string | null;
  message: string;
}

export interface Assignee {
  username: string;
}

function assigneeString(assignees: readonly Assignee[]): string {
  if (assignees.length === 1) return assignees[0]!.username;
  const names = assignees.map((a) => a.username);
  return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

/** Committers by number of commits (ties by name), the fourth and later folded into "others". */
export function getAllCommitters(commits: readonly CommitData[]): Array<[string, number]> {
  const counts = new Map<string, number>();
  for (const commit of commits) counts.set(commit.name, (counts.get(commit.name) ?? 0) + 1);
  let items = [...counts.entries()].sort((a, b) => b[1] - a[1] || compareCodePoints(a[0], b[0]));
  if (items.length > PUSH_COMMITTERS_LIMIT) {
    const others = items.slice(PUSH_COMMITTERS_LIMIT).reduce((sum, [, n]) => sum + n, 0);
    items = items.slice(0, PUSH_COMMITTERS_LIMIT);
    items.push(["others", others]);
  }
  return items;
}

/** The bullet list of commits of a push. */
export function getCommitsContent(commits: readonly CommitData[], isTruncated = false): string {
  let content = "";
  for (const commit of commits.slice(0, COMMITS_LIMIT)) {
    const firstLine = commit.message.split("\n", 1)[0];
    content += `* ${firstLine} ([${getShortSha(commit.sha)}](${pyStr(commit.url)}))\n`;
  }
  if (commits.length > COMMITS_LIMIT) {
    content += `[and ${commits.length - COMMITS_LIMIT} more commit(s)]`;
  } else if (isTruncated) {
    content += "[and more commit(s)]";
  }
  return pyRstrip(content);
}

export interface PushCommitsOptions {
  isTruncated?: boolean;
  deleted?: boolean;
  forcePush?: boolean;
}

/** "X [pushed](compare) 2 commits to branch main. …" with the commit list. */
export function getPushCommitsEventMessage(
  userName: string,
  compareUrl: string | null,
  branchName: string,
  commits: readonly CommitData[],
  options: PushCommitsOptions = {},
): string {
  if (commits.length === 0 && options.deleted) {
    return `${userName} [deleted](${pyStr(compareUrl)}) the branch ${branchName}.`;
  }
  const pushType = options.forcePush ? "force pushed" : "pushed";
  if (commits.length === 0) {
    if (compareUrl) return `${userName} [${pushType}](${compareUrl}) the branch ${branchName}.`;
    return `${userName} ${pushType} the branch ${branchName}.`;
  }
  const count = `${commits.length} commit${commits.length > 1 ? "s" : ""}`;
  const pushedText = compareUrl ? `[${pushType}](${compareUrl}) ${count}` : `${pushType} ${count}`;
  const base = `${userName} ${pushedText} to branch ${branchName}.`;
  const commitsData = getCommitsContent(commits, options.isTruncated ?? false);

  const committers = getAllCommitters(commits);
  if (committers.length === 1 && userName === committers[0]![0]) {
    return pyRstrip(`${base}\n\n${commitsData}\n`);
  }
  let details = `${committers[0]![0]} (${committers[0]![1]})`;
  for (const [name, n] of committers.slice(1, -1)) details = `${details}, ${name} (${n})`;
  if (committers.length > 1) {
    const [name, n] = committers[committers.length - 1]!;
    details = `${details} and ${name} (${n})`;
  }
  return pyRstrip(`${base} Commits by ${details}.\n\n${commitsData}\n`);
}

export function getForcePushCommitsEventMessage(userName: string, url: string, branchName: string, head: string): string {
  return `${userName} [force pushed](${url}) to branch ${branchName}. Head is now ${head}.`;
}

export function getCreateBranchEventMessage(userName: string, url: string | null, branchName: string): string {
  if (url === null) return `${userName} created ${branchName} branch.`;
  return `${userName} created [${branchName}](${url}) branch.`;
}

export function getRemoveBranchEventMessage(userName: string, branchName: string): string {
  return `${userName} deleted branch ${branchName}.`;
}

export interface PullRequestMessage {
  userName: string;
  action: string;
  url: string | null;
  number?: number | null;
  targetBranch?: string | null;
  baseBranch?: string | null;
  /** A description or comment, quoted under the first line. */
  message?: string | null;
  assignee?: string | null;
  assignees?: readonly Assignee[] | null;
  /** For "assigned"/"unassigned": who was (un)assigned. */
  assigneeUpdated?: string | null;
  reviewer?: string | null;
  /** "PR", "MR", "issue", "PR review", …; default "PR". */
  type?: string;
  /** Shown inside the link when the user chose the topic (so the topic no longer carries it). */
  title?: string | null;
}

/** "X opened [PR #12](url) from `a` to `b`:\n\n~~~ quote\n…" and its many variants. */
export function getPullRequestEventMessage(m: PullRequestMessage): string {
  const type = m.type ?? "PR";
  const id = m.number !== undefined && m.number !== null ? ` #${m.number}` : "";
  const title = m.title !== undefined && m.title !== null ? ` ${m.title}` : "";
  let assigneeUpdated = "";
  if (m.action === "assigned") assigneeUpdated = ` ${pyStr(m.assigneeUpdated ?? null)} to`;
  else if (m.action === "unassigned") assigneeUpdated = ` ${pyStr(m.assigneeUpdated ?? null)} from`;

  let main = `${m.userName} ${m.action}${assigneeUpdated} [${type}${id}${title}](${pyStr(m.url)})`;

  const hasBranches = Boolean(m.targetBranch) && Boolean(m.baseBranch);
  if (hasBranches) main = `${main} from \`${m.targetBranch}\` to \`${m.baseBranch}\``;

  const hasAssignees = Boolean(m.assignees && m.assignees.length > 0);
  if (hasAssignees) main = `${main} (assigned to ${assigneeString(m.assignees!)})`;
  else if (m.assignee) main = `${main} (assigned to ${m.assignee})`;
  else if (m.reviewer) main = `${main} (assigned reviewers: ${m.reviewer})`;

  const punctuation = m.message ? ":" : ".";
  if (
    hasAssignees ||
    m.assignee ||
    hasBranches ||
    m.title === undefined ||
    m.title === null ||
    // The message ends with the title, which may carry its own punctuation.
    !endsWithPunctuation(m.title)
  ) {
    main = `${main}${punctuation}`;
  }
  if (m.message) main += "\n" + quoteBlock(m.message);
  return pyRstrip(main);
}

export interface IssueMessage {
  userName: string;
  action: string;
  url: string | null;
  number?: number | null;
  message?: string | null;
  assignee?: string | null;
  assignees?: readonly Assignee[] | null;
  assigneeUpdated?: string | null;
  title?: string | null;
}

export function getIssueEventMessage(m: IssueMessage): string {
  return getPullRequestEventMessage({ ...m, type: "issue" });
}

export interface IssueLabelMessage {
  userName: string;
  /** "added" or "removed". */
  action: string;
  url: string;
  number: number;
  labelName: string;
  userUrl: string;
  title?: string | null;
}

export function getIssueLabeledOrUnlabeledEventMessage(m: IssueLabelMessage): string {
  const preposition = m.action === "added" ? "to" : "from";
  const issue = m.title !== undefined && m.title !== null ? `Issue #${m.number} ${m.title}` : `Issue #${m.number}`;
  return `[${m.userName}](${m.userUrl}) ${m.action} the ${m.labelName} label ${preposition} [${issue}](${m.url}).`;
}

export interface IssueMilestoneMessage {
  userName: string;
  /** "added" or "removed". */
  action: string;
  url: string;
  number: number;
  milestoneName: string;
  milestoneUrl: string;
  userUrl: string;
  title?: string | null;
}

export function getIssueMilestonedOrDemilestonedEventMessage(m: IssueMilestoneMessage): string {
  const preposition = m.action === "added" ? "to" : "from";
  const issue = m.title !== undefined && m.title !== null ? `issue #${m.number} ${m.title}` : `issue #${m.number}`;
  return (
    `[${m.userName}](${m.userUrl}) ${m.action} milestone [${m.milestoneName}](${m.milestoneUrl}) ` +
    `${preposition} [${issue}](${m.url}).`
  );
}

/** "X pushed tag [v1](url)." (no final period when the tag already ends with punctuation). */
export function getPushTagEventMessage(userName: string, tagName: string, tagUrl: string | null = null, action = "pushed"): string {
  const tag = tagUrl ? `[${tagName}](${tagUrl})` : tagName;
  const message = `${userName} ${action} tag ${tag}`;
  return endsWithPunctuation(tagName) ? message : `${message}.`;
}

/** "X [commented](url) on [abc1234](commit url):\n~~~ quote\n…". */
export function getCommitsCommentActionMessage(
  userName: string,
  action: string,
  commitUrl: string,
  sha: string,
  message: string | null = null,
): string {
  let content = `${userName} ${action} on [${getShortSha(sha)}](${commitUrl})`;
  content += message ? ":" : ".";
  if (message) content += quoteBlock(message);
  return content;
}

export function getReleaseEventMessage(userName: string, action: string, tagName: string, releaseName: string, url: string): string {
  return `${userName} ${action} release [${releaseName}](${url}) for tag ${tagName}.`;
}

/** "Release [name](url) for tag v1 was created." (GitLab's releases carry no actor). */
export function getReleaseWithoutUserMessage(releaseName: string, url: string | null, tagName: string, action: string): string {
  if (url === null) return `Release ${releaseName} for tag ${tagName} was ${action}.`;
  return `Release [${releaseName}](${url}) for tag ${tagName} was ${action}.`;
}

/** The `branches` filter every git integration accepts: a comma-separated list; absent means all. */
export function isBranchNameNotifiable(branch: string, branches: string | undefined): boolean {
  if (branches === undefined) return true;
  return branches.split(",").some((name) => pythonStrip(name) === branch);
}

/** "GitHub webhook has been successfully configured by X." */
export function getSetupWebhookMessage(integration: string, userName: string | null = null): string {
  let content = `${integration} webhook has been successfully configured`;
  if (userName) content += ` by ${userName}`;
  return `${content}.`;
}
