// GitHub (Zulip's zerver/webhooks/github/view.py): the X-GitHub-Event header,
// refined by the payload's action, picks a Zulip event; each event has a
// topic and a message in Zulip's exact words. Also served as `githubsponsors`
// (GitHub Sponsors webhooks; their tests send the action as the header).
// Query parameters: `branches` (pushes to other branches are ignored),
// `ignore_private_repositories` (JSON bool), and the generic `topic`, which
// makes messages name the PR or issue title since the topic no longer does.

import {
  getCommitsCommentActionMessage,
  getIssueEventMessage,
  getIssueLabeledOrUnlabeledEventMessage,
  getIssueMilestonedOrDemilestonedEventMessage,
  getPullRequestEventMessage,
  getPushCommitsEventMessage,
  getPushTagEventMessage,
  getReleaseEventMessage,
  getSetupWebhookMessage,
  getShortSha,
  isBranchNameNotifiable,
  quoteBlock,
  topicWithBranch,
  topicWithPrOrIssueInfo,
  type CommitData,
} from "./git.ts";
import type { Integration, WebhookRequest, WebhookResult } from "./integration.ts";
import {
  jsonBoolParam,
  jsonPayload,
  missingHeaderResult,
  PayloadError,
  pyRstrip,
  pyStr,
  runHandler,
  UnsupportedEventError,
  type Wild,
} from "./payload.ts";

const EVENT_HEADER = "X-GitHub-Event";

interface Helper {
  payload: Wild;
  includeTitle: boolean;
}

const senderName = (p: Wild): string => p.at("sender").at("login").str();
const senderUrl = (p: Wild): string => p.at("sender").at("html_url").str();
const repositoryName = (p: Wild): string => p.at("repository").at("name").str();
const repositoryFullName = (p: Wild): string => p.at("repository").at("full_name").str();
const branchNameFromRef = (ref: string): string => ref.replace(/^refs\/heads\//, "");
const tagNameFromRef = (ref: string): string => ref.replace(/^refs\/tags\//, "");

/** A comment on a pull request arrives as issue_comment with `issue.pull_request` set. */
function isPullRequestComment(p: Wild): boolean {
  return p.at("issue").has("pull_request");
}

function commentAction(p: Wild): string {
  const action = p.at("action").str();
  const verb = action === "created" ? "[commented]" : `${action} a [comment]`;
  return `${verb}(${p.at("comment").at("html_url").str()}) on`;
}

function openedOrUpdatedPullRequestBody({ payload: p, includeTitle }: Helper): string {
  const pr = p.at("pull_request");
  let action = p.at("action").str();
  if (action === "synchronize") action = "updated";
  const assignee = pr.get("assignee").truthy ? pr.at("assignee").at("login").str() : null;
  const changes = p.get("changes", {});
  const description = changes.has("body") || action === "opened" ? pr.at("body").strOrNull() : null;
  const withBranches = action === "opened" || action === "merged";
  return getPullRequestEventMessage({
    userName: senderName(p),
    action,
    url: pr.at("html_url").str(),
    targetBranch: withBranches ? pr.at("head").at("label").str() : null,
    baseBranch: withBranches ? pr.at("base").at("label").str() : null,
    message: description,
    assignee,
    number: pr.at("number").int(),
    title: includeTitle ? pr.at("title").str() : null,
  });
}

function assignedOrUnassignedPullRequestBody({ payload: p, includeTitle }: Helper): string {
  const pr = p.at("pull_request");
  const assignee = p.at("assignee").at("login").str();
  return getPullRequestEventMessage({
    userName: senderName(p),
    action: p.at("action").str(),
    url: pr.at("html_url").str(),
    number: pr.at("number").int(),
    title: includeTitle ? pr.at("title").str() : null,
    assigneeUpdated: assignee,
  });
}

function closedPullRequestBody({ payload: p, includeTitle }: Helper): string {
  const pr = p.at("pull_request");
  return getPullRequestEventMessage({
    userName: senderName(p),
    action: pr.at("merged").bool() ? "merged" : "closed without merge",
    url: pr.at("html_url").str(),
    number: pr.at("number").int(),
    title: includeTitle ? pr.at("title").str() : null,
  });
}

function membershipBody({ payload: p }: Helper): string {
  const action = p.at("action").str();
  const member = p.at("member");
  const teamName = p.at("team").at("name").str();
  const preposition = action === "removed" ? "from" : "to";
  return (
    `${senderName(p)} ${action} [${member.at("login").str()}](${member.at("html_url").str()}) ` +
    `${preposition} the ${teamName} team.`
  );
}

function memberBody({ payload: p }: Helper): string {
  return (
    `${senderName(p)} ${p.at("action").str()} ` +
    `[${p.at("member").at("login").str()}](${p.at("member").at("html_url").str()}) ` +
    `to [${repositoryName(p)}](${p.at("repository").at("html_url").str()}).`
  );
}

function issueBody({ payload: p, includeTitle }: Helper): string {
  const action = p.at("action").str();
  const issue = p.at("issue");
  return getIssueEventMessage({
    userName: senderName(p),
    action,
    url: issue.at("html_url").str(),
    number: issue.at("number").int(),
    message: action === "assigned" || action === "unassigned" ? null : issue.at("body").strOrNull(),
    title: includeTitle ? issue.at("title").str() : null,
    assigneeUpdated: p.has("assignee") ? p.at("assignee").at("login").str() : null,
  });
}

function issueCommentBody({ payload: p, includeTitle }: Helper): string {
  const issue = p.at("issue");
  return getPullRequestEventMessage({
    userName: senderName(p),
    action: commentAction(p),
    url: issue.at("html_url").str(),
    number: issue.at("number").int(),
    message: p.at("comment").at("body").str(),
    title: includeTitle ? issue.at("title").str() : null,
    type: isPullRequestComment(p) ? "PR" : "issue",
  });
}

function issueLabeledOrUnlabeledBody({ payload: p, includeTitle }: Helper): string {
  const issue = p.at("issue");
  return getIssueLabeledOrUnlabeledEventMessage({
    userName: senderName(p),
    action: p.at("action").str() === "labeled" ? "added" : "removed",
    url: issue.at("html_url").str(),
    number: issue.at("number").int(),
    labelName: p.at("label").at("name").str(),
    userUrl: senderUrl(p),
    title: includeTitle ? issue.at("title").str() : null,
  });
}

function issueMilestonedOrDemilestonedBody({ payload: p, includeTitle }: Helper): string {
  const issue = p.at("issue");
  return getIssueMilestonedOrDemilestonedEventMessage({
    userName: senderName(p),
    action: p.at("action").str() === "milestoned" ? "added" : "removed",
    url: issue.at("html_url").str(),
    number: issue.at("number").int(),
    milestoneName: p.at("milestone").at("title").str(),
    milestoneUrl: p.at("milestone").at("html_url").str(),
    userUrl: senderUrl(p),
    title: includeTitle ? issue.at("title").str() : null,
  });
}

function issueTransferredBody({ payload: p }: Helper): string {
  const issue = p.at("issue");
  const changes = p.at("changes");
  return (
    `${senderName(p)} transferred [issue #${issue.at("number").int()} ${issue.at("title").str()}]` +
    `(${issue.at("html_url").str()}) to ` +
    `[${changes.at("new_repository").at("full_name").str()}/#${changes.at("new_issue").at("number").int()}]` +
    `(${changes.at("new_issue").at("html_url").str()}).`
  );
}

function issueOpenedViaTransferBody({ payload: p }: Helper): string {
  const issue = p.at("issue");
  const changes = p.at("changes");
  return (
    `[Issue #${issue.at("number").int()} ${issue.at("title").str()}](${issue.at("html_url").str()}) ` +
    `was transferred from [${changes.at("old_repository").at("full_name").str()}#` +
    `${changes.at("old_issue").at("number").int()}](${changes.at("old_issue").at("html_url").str()}).`
  );
}

function forkBody({ payload: p }: Helper): string {
  const forkee = p.at("forkee");
  return `${senderName(p)} forked [${forkee.at("name").str()}](${forkee.at("html_url").str()}).`;
}

function deploymentBody({ payload: p }: Helper): string {
  return `${senderName(p)} created new deployment.`;
}

function deploymentStatusBody({ payload: p }: Helper): string {
  return `Deployment changed status to ${p.at("deployment_status").at("state").str()}.`;
}

function createOrDeleteBody(action: string): (h: Helper) => string {
  return ({ payload: p }) =>
    pyRstrip(
      `${senderName(p)} ${action} ${p.at("ref_type").str()} ${p.at("ref").str()}.`,
    );
}

function commitCommentBody({ payload: p }: Helper): string {
  const comment = p.at("comment");
  const commentUrl = comment.at("html_url").str();
  const hash = commentUrl.indexOf("#");
  const commitUrl = hash === -1 ? commentUrl : commentUrl.slice(0, hash);
  return getCommitsCommentActionMessage(
    senderName(p),
    `[commented](${commentUrl})`,
    commitUrl,
    comment.at("commit_id").str(),
    comment.at("body").str(),
  );
}

function pushTagsBody({ payload: p }: Helper): string {
  return getPushTagEventMessage(
    senderName(p),
    tagNameFromRef(p.at("ref").str()),
    null,
    p.at("created").bool() ? "pushed" : "removed",
  );
}

function pushCommitsBody({ payload: p }: Helper): string {
  const commits: CommitData[] = p
    .at("commits")
    .items()
    .map((commit) => {
      const author = commit.at("author");
      return {
        name: author.get("username").truthy ? author.at("username").str() : author.at("name").str(),
        sha: commit.at("id").str(),
        url: commit.at("url").str(),
        message: commit.at("message").str(),
      };
    });
  return getPushCommitsEventMessage(senderName(p), p.at("compare").str(), branchNameFromRef(p.at("ref").str()), commits, {
    deleted: p.at("deleted").bool(),
    forcePush: p.at("forced").bool(),
  });
}

function discussionBody({ payload: p }: Helper): string {
  const discussion = p.at("discussion");
  return (
    `${senderName(p)} created [discussion #${discussion.at("number").int()}](${discussion.at("html_url").str()}) ` +
    `in ${discussion.at("category").at("name").str()}:\n\n~~~ quote\n### ${discussion.at("title").str()}\n` +
    `${discussion.at("body").str()}\n~~~`
  );
}

function discussionCommentBody({ payload: p, includeTitle }: Helper): string {
  const discussion = p.at("discussion");
  return getPullRequestEventMessage({
    userName: senderName(p),
    action: commentAction(p),
    url: discussion.at("html_url").str(),
    number: discussion.at("number").int(),
    message: p.at("comment").at("body").str(),
    title: includeTitle ? discussion.at("title").str() : null,
    type: "discussion",
  });
}

function publicBody({ payload: p }: Helper): string {
  return `${senderName(p)} made the repository [${repositoryFullName(p)}](${p.at("repository").at("html_url").str()}) public.`;
}

function wikiPagesBody({ payload: p }: Helper): string {
  let info = "";
  for (const page of p.at("pages").items()) {
    info += `* ${page.at("action").str()} [${page.at("title").str()}](${page.at("html_url").str()})\n`;
  }
  return `${senderName(p)}:\n${pyRstrip(info)}`;
}

function watchBody({ payload: p }: Helper): string {
  return `${senderName(p)} starred the repository [${repositoryFullName(p)}](${p.at("repository").at("html_url").str()}).`;
}

function repositoryBody({ payload: p }: Helper): string {
  return (
    `${senderName(p)} ${p.at("action").str()} the repository ` +
    `[${repositoryFullName(p)}](${p.at("repository").at("html_url").str()}).`
  );
}

function teamAddBody({ payload: p }: Helper): string {
  return (
    `The repository [${repositoryFullName(p)}](${p.at("repository").at("html_url").str()}) ` +
    `was added to team ${p.at("team").at("name").str()}.`
  );
}

function teamBody({ payload: p }: Helper): string {
  const changes = p.at("changes");
  if (changes.has("description")) {
    return `**${senderName(p)}** changed the team description to:\n\n~~~ quote\n${p.at("team").at("description").str()}\n~~~`;
  }
  if (changes.has("name")) {
    return `Team \`${changes.at("name").at("from").str()}\` was renamed to \`${p.at("team").at("name").str()}\`.`;
  }
  if (changes.has("privacy")) {
    return `Team visibility changed to \`${p.at("team").at("privacy").str()}\``;
  }
  // Zulip logs these as unsupported but still tells the channel something changed.
  const keys = changes.keys().sort().join("/");
  return `Team has changes to \`${keys}\` data.`;
}

function releaseBody({ payload: p }: Helper): string {
  const release = p.at("release");
  // Not every release has a name; the tag name stands in.
  const name = release.at("name").truthy ? release.at("name").str() : release.at("tag_name").str();
  return getReleaseEventMessage(
    senderName(p),
    p.at("action").str(),
    release.at("tag_name").str(),
    name,
    release.at("html_url").str(),
  );
}

function pageBuildBody({ payload: p }: Helper): string {
  const build = p.at("build");
  const status = build.at("status").str();
  const actions: Record<string, string> = {
    null: "has yet to be built",
    building: "is being built",
    errored: "has failed: {}",
    built: "has finished building",
  };
  let action = Object.hasOwn(actions, status) ? actions[status]! : `is ${status}`;
  if (build.at("error").at("message").truthy) {
    action = action.replace("{}", quoteBlock(build.at("error").at("message").str()));
  }
  return `GitHub Pages build, triggered by ${build.at("pusher").at("login").str()}, ${action}.`;
}

function statusBody({ payload: p }: Helper): string {
  const state = p.at("state").str();
  const status = p.at("target_url").truthy ? `[${state}](${p.at("target_url").str()})` : state;
  return `[${getShortSha(p.at("sha").str())}](${p.at("commit").at("html_url").str()}) changed its status to ${status}.`;
}

function lockedOrUnlockedPullRequestBody({ payload: p }: Helper): string {
  const pr = p.at("pull_request");
  const number = pr.at("number").int();
  const url = pr.at("html_url").str();
  if (p.at("action").str() === "unlocked") return `${senderName(p)} has unlocked [PR #${number}](${url}).`;
  const reason = pr.at("active_lock_reason").truthy ? pr.at("active_lock_reason").str() : null;
  return `${senderName(p)} has locked [PR #${number}](${url}) as ${pyStr(reason)} and limited conversation to collaborators.`;
}

function pullRequestAutoMergeBody({ payload: p }: Helper): string {
  const pr = p.at("pull_request");
  const verb = p.at("action").str() === "auto_merge_disabled" ? "disabled" : "enabled";
  return `${senderName(p)} has ${verb} auto merge for [PR #${pr.at("number").int()}](${pr.at("html_url").str()}).`;
}

function pullRequestReadyForReviewBody({ payload: p }: Helper): string {
  const pr = p.at("pull_request");
  return `**${senderName(p)}** has marked [PR #${pr.at("number").int()}](${pr.at("html_url").str()}) as ready for review.`;
}

function pullRequestReviewBody({ payload: p, includeTitle }: Helper): string {
  const pr = p.at("pull_request");
  const title = `for #${pr.at("number").int()} ${pr.at("title").str()}`;
  return getPullRequestEventMessage({
    userName: senderName(p),
    action: "submitted",
    url: p.at("review").at("html_url").str(),
    type: "PR review",
    title: includeTitle ? title : null,
    message: p.at("review").at("body").strOrNull(),
  });
}

function pullRequestReviewCommentBody({ payload: p, includeTitle }: Helper): string {
  const action = p.at("action").str();
  const message = action === "created" ? p.at("comment").at("body").str() : null;
  const pr = p.at("pull_request");
  const title = `on #${pr.at("number").int()} ${pr.at("title").str()}`;
  return getPullRequestEventMessage({
    userName: senderName(p),
    action,
    url: p.at("comment").at("html_url").str(),
    message,
    type: "PR review comment",
    title: includeTitle ? title : null,
  });
}

function pullRequestReviewRequestedBody({ payload: p, includeTitle }: Helper): string {
  const sender = senderName(p);
  const pr = p.at("pull_request");
  const number = pr.at("number").int();
  const url = pr.at("html_url").str();
  let reviewers: string;
  if (p.has("requested_reviewer")) {
    const reviewer = p.at("requested_reviewer");
    reviewers = `[${reviewer.at("login").str()}](${reviewer.at("html_url").str()})`;
  } else {
    const team = p.at("requested_team");
    reviewers = `[${team.at("name").str()}](${team.at("html_url").str()})`;
  }
  const link = includeTitle ? `PR #${number} ${pr.at("title").str()}` : `PR #${number}`;
  return `**${sender}** requested ${reviewers} for a review on [${link}](${url}).`;
}

function checkRunBody({ payload: p }: Helper): string {
  const run = p.at("check_run");
  const headSha = run.at("head_sha").str();
  const commitUrl = `${p.at("repository").at("html_url").str()}/commit/${headSha}`;
  return (
    `Check [${run.at("name").str()}](${run.at("html_url").str()}) ${run.at("status").str()} ` +
    `(${run.at("conclusion").str()}). ([${getShortSha(headSha)}](${commitUrl}))`
  );
}

function starBody({ payload: p }: Helper): string {
  const action = p.at("action").str() === "created" ? "starred" : "unstarred";
  return (
    `[${senderName(p)}](${senderUrl(p)}) ${action} the repository ` +
    `[${repositoryFullName(p)}](${p.at("repository").at("html_url").str()}).`
  );
}

function pingBody({ payload: p }: Helper): string {
  return getSetupWebhookMessage("GitHub", senderName(p));
}

// GitHub Sponsors ---------------------------------------------------------------

const subscription = (p: Wild): string => p.at("sponsorship").at("tier").at("name").str();
const priorSubscription = (p: Wild): string => p.at("changes").at("tier").at("from").at("name").str();

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

/** The effective date's YYYY-MM-DD as "January 05, 2020" (Python's "%B %d, %Y"). */
function effectiveDate(p: Wild): string {
  const raw = p.at("effective_date").str().slice(0, 10);
  const match = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(raw);
  const fail = (): never => {
    throw new PayloadError(`${p.at("effective_date").varName} is not a date`);
  };
  if (!match) return fail();
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const date = new Date(Date.UTC(year, month - 1, day));
  if (year < 1 || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return fail();
  return `${MONTHS[month - 1]} ${String(day).padStart(2, "0")}, ${String(year).padStart(4, "0")}`;
}

function cancelledBody({ payload: p }: Helper): string {
  return `${senderName(p)} cancelled their ${subscription(p)} subscription.`;
}

function createdBody({ payload: p }: Helper): string {
  return `${senderName(p)} subscribed for ${subscription(p)}.`;
}

function editedBody({ payload: p }: Helper): string {
  const from = p.at("changes").at("privacy_level").at("from").str();
  const to = p.at("sponsorship").at("privacy_level").str();
  return `${senderName(p)} changed who can see their sponsorship from ${from} to ${to}.`;
}

function pendingCancellationBody({ payload: p }: Helper): string {
  return `${senderName(p)}'s ${subscription(p)} subscription will be cancelled on ${effectiveDate(p)}.`;
}

function pendingTierChangeBody({ payload: p }: Helper): string {
  return (
    `${senderName(p)}'s subscription will change from ${priorSubscription(p)} to ${subscription(p)} ` +
    `on ${effectiveDate(p)}.`
  );
}

function tierChangedBody({ payload: p }: Helper): string {
  return `${senderName(p)} changed their subscription from ${priorSubscription(p)} to ${subscription(p)}.`;
}

// Dispatch -----------------------------------------------------------------------

const EVENT_FUNCTIONS: Record<string, (h: Helper) => string> = {
  commit_comment: commitCommentBody,
  closed_pull_request: closedPullRequestBody,
  create: createOrDeleteBody("created"),
  check_run: checkRunBody,
  delete: createOrDeleteBody("deleted"),
  deployment: deploymentBody,
  deployment_status: deploymentStatusBody,
  discussion: discussionBody,
  discussion_comment: discussionCommentBody,
  fork: forkBody,
  gollum: wikiPagesBody,
  issue_comment: issueCommentBody,
  issue_labeled_or_unlabeled: issueLabeledOrUnlabeledBody,
  issue_milestoned_or_demilestoned: issueMilestonedOrDemilestonedBody,
  issues_opened_via_transfer: issueOpenedViaTransferBody,
  issues_transferred: issueTransferredBody,
  issues: issueBody,
  member: memberBody,
  membership: membershipBody,
  opened_pull_request: openedOrUpdatedPullRequestBody,
  updated_pull_request: openedOrUpdatedPullRequestBody,
  assigned_or_unassigned_pull_request: assignedOrUnassignedPullRequestBody,
  page_build: pageBuildBody,
  ping: pingBody,
  public: publicBody,
  pull_request_ready_for_review: pullRequestReadyForReviewBody,
  pull_request_review: pullRequestReviewBody,
  pull_request_review_comment: pullRequestReviewCommentBody,
  pull_request_review_requested: pullRequestReviewRequestedBody,
  pull_request_auto_merge: pullRequestAutoMergeBody,
  locked_or_unlocked_pull_request: lockedOrUnlockedPullRequestBody,
  push_commits: pushCommitsBody,
  push_tags: pushTagsBody,
  release: releaseBody,
  repository: repositoryBody,
  star: starBody,
  status: statusBody,
  team: teamBody,
  team_add: teamAddBody,
  watch: watchBody,
  cancelled: cancelledBody,
  created: createdBody,
  edited: editedBody,
  pending_cancellation: pendingCancellationBody,
  pending_tier_change: pendingTierChangeBody,
  tier_changed: tierChangedBody,
};

/** Zulip's event names for GitHub, for the generic only_events/exclude_events filters. */
export const GITHUB_EVENT_TYPES: readonly string[] = Object.keys(EVENT_FUNCTIONS);

const SPONSORS_EVENTS = new Set(["cancelled", "created", "edited", "pending_cancellation", "pending_tier_change", "tier_changed"]);

/** Events GitHub sends that Zulip deliberately posts nothing for. */
const IGNORED_EVENTS = new Set([
  "check_suite",
  "label",
  "meta",
  "milestone",
  "organization",
  "project_card",
  "push__merge_queue",
  "repository_vulnerability_alert",
]);

const IGNORED_PULL_REQUEST_ACTIONS = new Set(["approved", "converted_to_draft", "labeled", "review_request_removed", "unlabeled"]);

/** Team actions GitHub documents that Zulip does not post (yet). */
const IGNORED_TEAM_ACTIONS = new Set(["added_to_repository", "created", "deleted", "removed_from_repository"]);

function topicFor(p: Wild, event: string): string {
  if (event.includes("pull_request")) {
    const pr = p.at("pull_request");
    return topicWithPrOrIssueInfo(repositoryName(p), "PR", pr.at("number").int(), pr.at("title").str());
  }
  if (event.startsWith("issue")) {
    const issue = p.at("issue");
    const type = isPullRequestComment(p) ? "PR" : "issue";
    return topicWithPrOrIssueInfo(repositoryName(p), type, issue.at("number").int(), issue.at("title").str());
  }
  if (event.startsWith("deployment")) {
    return `${repositoryName(p)} / Deployment on ${p.at("deployment").at("environment").str()}`;
  }
  if (event === "membership") return `${p.at("organization").at("login").str()} organization`;
  if (event === "team") return `team ${p.at("team").at("name").str()}`;
  if (event === "push_commits") return topicWithBranch(repositoryName(p), branchNameFromRef(p.at("ref").str()));
  if (event === "gollum") return topicWithBranch(repositoryName(p), "wiki pages");
  if (event === "ping") {
    if (!p.get("repository").truthy) return p.at("organization").at("login").str();
  } else if (event === "check_run") {
    return `${repositoryName(p)} / checks`;
  } else if (event.startsWith("discussion")) {
    const discussion = p.at("discussion");
    return `${repositoryName(p)} discussion #${discussion.at("number").int()}: ${discussion.at("title").str()}`;
  } else if (SPONSORS_EVENTS.has(event)) {
    return "sponsors";
  }
  return repositoryName(p);
}

/** The Zulip event for a header and payload, or null for an event deliberately ignored. */
function zulipEventName(header: string, p: Wild, branches: string | undefined): string | null {
  if (header === "pull_request") {
    const action = p.at("action").str();
    if (action === "opened" || action === "reopened") return "opened_pull_request";
    if (action === "synchronize" || action === "edited") return "updated_pull_request";
    if (action === "assigned" || action === "unassigned") return "assigned_or_unassigned_pull_request";
    if (action === "closed") return "closed_pull_request";
    if (action === "review_requested") return "pull_request_review_requested";
    if (action === "ready_for_review") return "pull_request_ready_for_review";
    if (action === "locked" || action === "unlocked") return "locked_or_unlocked_pull_request";
    if (action === "auto_merge_enabled" || action === "auto_merge_disabled") return "pull_request_auto_merge";
    if (IGNORED_PULL_REQUEST_ACTIONS.has(action)) return null;
  } else if (header === "pull_request_review") {
    // GitHub sends a duplicate, empty "edited" event for a review's body when it is submitted.
    if (p.at("action").str() === "edited" && p.get("changes", {}).length === 0) return null;
    return "pull_request_review";
  } else if (header === "push") {
    const ref = p.at("ref").str();
    if (ref.startsWith("refs/heads/gh-readonly-queue/")) return null;
    if (ref.startsWith("refs/heads/")) {
      if (branches !== undefined && !isBranchNameNotifiable(branchNameFromRef(ref), branches)) return null;
      return "push_commits";
    }
    return "push_tags";
  } else if (header === "check_run") {
    if (p.at("check_run").at("status").str() !== "completed") return null;
    return header;
  } else if (header === "team") {
    const action = p.at("action").str();
    if (action === "edited") return "team";
    if (IGNORED_TEAM_ACTIONS.has(action)) return null;
    throw new UnsupportedEventError(`unsupported team action ${action}`);
  } else if (header === "issues") {
    const action = p.at("action").str();
    if (action === "labeled" || action === "unlabeled") return "issue_labeled_or_unlabeled";
    if (action === "milestoned" || action === "demilestoned") return "issue_milestoned_or_demilestoned";
    if (action === "transferred") return "issues_transferred";
    if (action === "opened" && p.get("changes", {}).get("old_issue").truthy) return "issues_opened_via_transfer";
    return "issues";
  } else if (Object.hasOwn(EVENT_FUNCTIONS, header)) {
    return header;
  } else if (IGNORED_EVENTS.has(header)) {
    return null;
  }
  throw new UnsupportedEventError(`${header}:${p.get("action", "???").str()}`);
}

function handleGitHub(request: WebhookRequest): WebhookResult {
  return runHandler(() => {
    const payload = jsonPayload(request.payload);
    const ignorePrivate = jsonBoolParam("ignore_private_repositories", request.query["ignore_private_repositories"], false);
    const header = request.headers[EVENT_HEADER.toLowerCase()];
    if (header === undefined) return missingHeaderResult(EVENT_HEADER);

    if (payload.has("repository") && payload.at("repository").at("private").bool() && ignorePrivate) {
      return { kind: "ignore" };
    }

    // An edited comment (except on a discussion) whose body did not change says nothing new.
    if (
      header.includes("comment") &&
      !header.includes("discussion") &&
      payload.get("action", "").str() === "edited" &&
      payload.at("changes").at("body").at("from").str() === payload.at("comment").at("body").str()
    ) {
      return { kind: "ignore" };
    }

    const event = zulipEventName(header, payload, request.query["branches"]);
    if (event === null) return { kind: "ignore" };
    const topic = topicFor(payload, event);
    const content = EVENT_FUNCTIONS[event]!({ payload, includeTitle: request.userTopic !== undefined });
    return { kind: "messages", messages: [{ topic, content, eventType: event }] };
  });
}

export const github: Integration = { name: "github", displayName: "GitHub", handle: handleGitHub };

/** GitHub Sponsors webhooks: the same handler under its own URL name. */
export const githubSponsors: Integration = { name: "githubsponsors", displayName: "GitHub", handle: handleGitHub };
