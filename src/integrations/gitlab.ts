// GitLab (Zulip's zerver/webhooks/gitlab/view.py): the X-Gitlab-Event header
// ("Push Hook", "Merge Request Hook", …), refined by the payload's action or
// noteable type, picks the message; topics name the branch, merge request,
// issue, snippet or design. Query parameters: `branches` (pushes only),
// `use_merge_request_title` (JSON bool, default true) and the generic
// `topic`, which puts titles in messages and a link to the project in front.

import {
  EMPTY_SHA,
  getCommitsCommentActionMessage,
  getIssueEventMessage,
  getPullRequestEventMessage,
  getPushCommitsEventMessage,
  getPushTagEventMessage,
  getReleaseWithoutUserMessage,
  getRemoveBranchEventMessage,
  isBranchNameNotifiable,
  quoteBlock,
  topicWithPrOrIssueInfo,
  type Assignee,
  type CommitData,
} from "./git.ts";
import type { Integration, WebhookRequest, WebhookResult } from "./integration.ts";
import {
  jsonBoolParam,
  jsonPayload,
  missingHeaderResult,
  PayloadError,
  pyRstrip,
  pyTitle,
  runHandler,
  UnsupportedEventError,
  type Wild,
} from "./payload.ts";

const EVENT_HEADER = "X-Gitlab-Event";

type EventFunction = (p: Wild, includeTitle: boolean) => string;

/** The project's name: Job Hook payloads have no `project`, only `repository`. */
function repoName(p: Wild): string {
  if (p.has("project")) return p.at("project").at("name").str();
  return p.at("repository").at("name").str();
}

function projectHomepage(p: Wild): string {
  if (p.has("project")) return p.at("project").at("web_url").str();
  return p.at("repository").at("homepage").str();
}

const userName = (p: Wild): string => p.at("user_name").str();
const issueUserName = (p: Wild): string => p.at("user").at("name").str();
const branchName = (p: Wild): string => p.at("ref").str().replaceAll("refs/heads/", "");
const tagName = (p: Wild): string => p.at("ref").str().replaceAll("refs/tags/", "");
const objectUrl = (p: Wild): string => p.at("object_attributes").at("url").str();

function pushBody(p: Wild): string {
  const after = p.get("after");
  if (after.truthy && after.str() === EMPTY_SHA) {
    return getRemoveBranchEventMessage(userName(p), branchName(p));
  }
  const compareUrl = `${projectHomepage(p)}/-/compare/${p.at("before").str()}...${p.at("after").str()}`;
  const commits: CommitData[] = p
    .at("commits")
    .items()
    .map((commit) => ({
      name: commit.at("author").at("name").str(),
      sha: commit.at("id").str(),
      message: commit.at("message").str(),
      url: commit.at("url").str(),
    }));
  return getPushCommitsEventMessage(userName(p), compareUrl, branchName(p), commits);
}

function tagPushBody(p: Wild): string {
  return getPushTagEventMessage(userName(p), tagName(p), null, p.get("checkout_sha").truthy ? "pushed" : "removed");
}

/** The assignees as "name"s: the `assignees` list, else the single `assignee`. */
function assignees(p: Wild): Assignee[] {
  let list: Wild[];
  const many = p.get("assignees");
  if (many.truthy) {
    list = many.items();
  } else {
    const single = p.get("assignee");
    list = single.truthy ? [single] : [];
  }
  return list.map((assignee) => ({ username: assignee.at("name").str() }));
}

function issueCreatedBody(p: Wild, includeTitle: boolean): string {
  const attributes = p.at("object_attributes");
  const description = attributes.get("description");
  let message: string | null = null;
  if (description.truthy) {
    // Hidden (HTML comment) parts of the description stay hidden.
    message = pyRstrip(description.str().replace(/<!--[\s\S]*?-->/g, ""));
  }
  return getIssueEventMessage({
    userName: issueUserName(p),
    action: "created",
    url: objectUrl(p),
    number: attributes.at("iid").int(),
    message,
    assignees: assignees(p),
    title: includeTitle ? attributes.at("title").str() : null,
  });
}

function issueBody(action: string): EventFunction {
  return (p, includeTitle) =>
    getIssueEventMessage({
      userName: issueUserName(p),
      action,
      url: objectUrl(p),
      number: p.at("object_attributes").at("iid").int(),
      title: includeTitle ? p.at("object_attributes").at("title").str() : null,
    });
}

function mergeRequestBody(action: string): EventFunction {
  return (p, includeTitle) => {
    const mr = p.at("object_attributes");
    const merged = action === "merged";
    return getPullRequestEventMessage({
      userName: issueUserName(p),
      action,
      url: mr.at("url").str(),
      number: mr.at("iid").int(),
      targetBranch: merged ? mr.at("source_branch").str() : null,
      baseBranch: merged ? mr.at("target_branch").str() : null,
      type: "MR",
      title: includeTitle ? mr.at("title").str() : null,
    });
  };
}

function mergeRequestOpenOrUpdatedBody(action: string): EventFunction {
  return (p, includeTitle) => {
    const mr = p.at("object_attributes");
    const created = action === "created";
    return getPullRequestEventMessage({
      userName: issueUserName(p),
      action,
      url: mr.at("url").str(),
      number: mr.at("iid").int(),
      targetBranch: created ? mr.at("source_branch").str() : null,
      baseBranch: created ? mr.at("target_branch").str() : null,
      message: mr.at("description").strOrNull(),
      assignees: assignees(p),
      type: "MR",
      title: includeTitle ? mr.at("title").str() : null,
    });
  };
}

function mergeRequestUpdatedBody(p: Wild, includeTitle: boolean): string {
  if (p.at("object_attributes").get("oldrev").truthy) {
    return mergeRequestBody("added commit(s) to")(p, includeTitle);
  }
  return mergeRequestOpenOrUpdatedBody("updated")(p, includeTitle);
}

function commentedCommitBody(p: Wild): string {
  const comment = p.at("object_attributes");
  return getCommitsCommentActionMessage(
    issueUserName(p),
    `[commented](${comment.at("url").str()})`,
    p.at("commit").at("url").str(),
    p.at("commit").at("id").str(),
    comment.at("note").str(),
  );
}

function commentedMergeRequestBody(p: Wild, includeTitle: boolean): string {
  const comment = p.at("object_attributes");
  const mr = p.at("merge_request");
  return getPullRequestEventMessage({
    userName: issueUserName(p),
    action: `[commented](${comment.at("url").str()}) on`,
    url: mr.at("url").str(),
    number: mr.at("iid").int(),
    message: comment.at("note").str(),
    type: "MR",
    title: includeTitle ? mr.at("title").str() : null,
  });
}

function commentedIssueBody(p: Wild, includeTitle: boolean): string {
  const comment = p.at("object_attributes");
  const issue = p.at("issue");
  return getPullRequestEventMessage({
    userName: issueUserName(p),
    action: `[commented](${comment.at("url").str()}) on`,
    url: issue.at("url").str(),
    number: issue.at("iid").int(),
    message: comment.at("note").str(),
    type: "issue",
    title: includeTitle ? issue.at("title").str() : null,
  });
}

/** A design's path is "designs/issue-<n>/<file>": the issue number and file name come from it. */
function designPath(comment: Wild): { issueNumber: string; designName: string } {
  const path = comment.at("position").at("new_path");
  const parts = path.str().split("/");
  if (parts.length !== 3) throw new PayloadError(`${path.varName} is not a design path`);
  const issueParts = parts[1]!.split("-");
  return { issueNumber: issueParts[issueParts.length - 1]!, designName: parts[2]! };
}

function commentedDesignBody(p: Wild): string {
  const comment = p.at("object_attributes");
  const repositoryUrl = p.at("repository").at("homepage").str();
  const noteId = comment.at("id").int();
  const { issueNumber, designName } = designPath(comment);
  const designUrl = `${repositoryUrl}/-/issues/${issueNumber}/designs/${designName}`;
  const commentUrl = `${designUrl}#note_${noteId}`;
  return (
    `${issueUserName(p)} [commented](${commentUrl}) on design [${designName}](${designUrl}):\n` +
    quoteBlock(comment.at("note").str())
  );
}

function commentedSnippetBody(p: Wild, includeTitle: boolean): string {
  const comment = p.at("object_attributes");
  const snippet = p.at("snippet");
  // The snippet's URL is only in GitLab 16.1+ payloads.
  const url = snippet.has("url")
    ? snippet.at("url").str()
    : `${p.at("project").at("web_url").str()}/-/snippets/${snippet.at("id").int()}`;
  return getPullRequestEventMessage({
    userName: issueUserName(p),
    action: `[commented](${comment.at("url").str()}) on`,
    url,
    number: snippet.at("id").int(),
    message: comment.at("note").str(),
    type: "snippet",
    title: includeTitle ? snippet.at("title").str() : null,
  });
}

function wikiPageBody(action: string): EventFunction {
  return (p) => {
    const attributes = p.at("object_attributes");
    return `${issueUserName(p)} ${action} [wiki page "${attributes.at("title").str()}"](${attributes.at("url").str()}).`;
  };
}

function buildBody(p: Wild): string {
  const status = p.at("build_status").str();
  const action = status === "created" ? "was created" : status === "running" ? "started" : `changed status to ${status}`;
  return `Build ${p.at("build_name").str()} from ${p.at("build_stage").str()} stage ${action}.`;
}

function testBody(p: Wild): string {
  return `Webhook for **${repoName(p)}** has been configured successfully! :tada:`;
}

function pipelineBody(p: Wild): string {
  const attributes = p.at("object_attributes");
  const status = attributes.at("status").str();
  const action = status === "pending" ? "was created" : status === "running" ? "started" : `changed status to ${status}`;
  const homepage = projectHomepage(p);
  const pipelineId = attributes.at("id").int();
  let builds = "";
  for (const build of p.at("builds").items()) {
    const buildUrl = `${homepage}/-/jobs/${build.at("id").int()}`;
    const artifact = build.get("artifacts_file", {}).get("filename");
    const artifactLine = artifact.truthy
      ? `  * built artifact: *${artifact.str()}* [[Browse](${buildUrl}/artifacts/browse)|[Download](${buildUrl}/artifacts/download)]\n`
      : "";
    builds += `* [${build.at("name").str()}](${buildUrl}) - ${build.at("status").str()}\n${artifactLine}`;
  }
  return `[Pipeline (${pipelineId})](${homepage}/-/pipelines/${pipelineId}) ${action} with build(s):\n${builds.slice(0, -1)}.`;
}

function releaseBody(p: Wild): string {
  const action = p.at("action").str();
  const name = p.at("name").str();
  const tag = p.at("tag").str();
  if (action === "delete") return getReleaseWithoutUserMessage(name, null, tag, `${action}d`);
  let body = getReleaseWithoutUserMessage(name, p.at("url").str(), tag, `${action}d`);
  if (p.has("description")) body += quoteBlock(p.at("description").str());
  return body;
}

const EVENT_FUNCTIONS: Record<string, EventFunction> = {
  "Push Hook": pushBody,
  "Tag Push Hook": tagPushBody,
  "Test Hook": testBody,
  "Issue Hook open": issueCreatedBody,
  "Issue Hook close": issueBody("closed"),
  "Issue Hook reopen": issueBody("reopened"),
  "Issue Hook update": issueBody("updated"),
  "Confidential Issue Hook open": issueCreatedBody,
  "Confidential Issue Hook close": issueBody("closed"),
  "Confidential Issue Hook reopen": issueBody("reopened"),
  "Confidential Issue Hook update": issueBody("updated"),
  "Note Hook Commit": commentedCommitBody,
  "Note Hook MergeRequest": commentedMergeRequestBody,
  "Note Hook Issue": commentedIssueBody,
  "Confidential Note Hook Issue": commentedIssueBody,
  "Note Hook DesignManagement::Design": commentedDesignBody,
  "Confidential Note Hook DesignManagement::Design": commentedDesignBody,
  "Note Hook Snippet": commentedSnippetBody,
  "Merge Request Hook approved": mergeRequestBody("approved"),
  "Merge Request Hook unapproved": mergeRequestBody("unapproved"),
  "Merge Request Hook open": mergeRequestOpenOrUpdatedBody("created"),
  "Merge Request Hook update": mergeRequestUpdatedBody,
  "Merge Request Hook merge": mergeRequestBody("merged"),
  "Merge Request Hook close": mergeRequestBody("closed"),
  "Merge Request Hook reopen": mergeRequestBody("reopened"),
  "Wiki Page Hook create": wikiPageBody("created"),
  "Wiki Page Hook update": wikiPageBody("updated"),
  "Job Hook": buildBody,
  "Build Hook": buildBody,
  "Pipeline Hook": pipelineBody,
  "Release Hook": releaseBody,
};

/** Zulip's event names for GitLab, for the generic only_events/exclude_events filters. */
export const GITLAB_EVENT_TYPES: readonly string[] = Object.keys(EVENT_FUNCTIONS);

function topicFor(event: string, p: Wild, useMergeRequestTitle: boolean): string {
  if (event === "Push Hook") return `${repoName(p)} / ${branchName(p)}`;
  if (event === "Job Hook" || event === "Build Hook") return `${p.at("repository").at("name").str()} / ${branchName(p)}`;
  if (event === "Pipeline Hook") {
    return `${repoName(p)} / ${p.at("object_attributes").at("ref").str().replaceAll("refs/heads/", "")}`;
  }
  if (event.startsWith("Merge Request Hook")) {
    const mr = p.at("object_attributes");
    return topicWithPrOrIssueInfo(repoName(p), "MR", mr.at("iid").int(), useMergeRequestTitle ? mr.at("title").str() : "");
  }
  if (event.startsWith("Issue Hook") || event.startsWith("Confidential Issue Hook")) {
    const issue = p.at("object_attributes");
    return topicWithPrOrIssueInfo(repoName(p), "issue", issue.at("iid").int(), issue.at("title").str());
  }
  if (event === "Note Hook Issue" || event === "Confidential Note Hook Issue") {
    const issue = p.at("issue");
    return topicWithPrOrIssueInfo(repoName(p), "issue", issue.at("iid").int(), issue.at("title").str());
  }
  if (event === "Note Hook DesignManagement::Design" || event === "Confidential Note Hook DesignManagement::Design") {
    const path = p.at("object_attributes").at("position").at("new_path").str().split("/");
    return `${repoName(p)} / design ${path[path.length - 1]}`;
  }
  if (event === "Note Hook MergeRequest") {
    const mr = p.at("merge_request");
    return topicWithPrOrIssueInfo(repoName(p), "MR", mr.at("iid").int(), useMergeRequestTitle ? mr.at("title").str() : "");
  }
  if (event === "Note Hook Snippet") {
    const snippet = p.at("snippet");
    return topicWithPrOrIssueInfo(repoName(p), "snippet", snippet.at("id").int(), snippet.at("title").str());
  }
  return repoName(p);
}

/** The Zulip event for the header and payload; null for a push to a branch the `branches` filter leaves out. */
function zulipEventName(header: string, p: Wild, branches: string | undefined): string | null {
  let event = header;
  if (event === "System Hook") {
    // System hooks name the event in the payload: "merge_request" becomes "Merge Request Hook".
    const name = p.has("event_name") ? p.at("event_name").str() : p.at("object_kind").str();
    event = `${pyTitle(name.split("__")[0]!.replaceAll("_", " "))} Hook`;
  }
  if (["Confidential Issue Hook", "Issue Hook", "Merge Request Hook", "Wiki Page Hook"].includes(event)) {
    event = `${event} ${p.at("object_attributes").get("action", "open").str()}`;
  } else if (event === "Confidential Note Hook" || event === "Note Hook") {
    event = `${event} ${p.at("object_attributes").at("noteable_type").str()}`;
  } else if (event === "Push Hook" && branches !== undefined) {
    if (!isBranchNameNotifiable(branchName(p), branches)) return null;
  }
  if (Object.hasOwn(EVENT_FUNCTIONS, event)) return event;
  throw new UnsupportedEventError(event);
}

function handleGitLab(request: WebhookRequest): WebhookResult {
  return runHandler(() => {
    const payload = jsonPayload(request.payload);
    const useMergeRequestTitle = jsonBoolParam("use_merge_request_title", request.query["use_merge_request_title"], true);
    const header = request.headers[EVENT_HEADER.toLowerCase()];
    if (header === undefined) return missingHeaderResult("X-GitLab-Event");

    const event = zulipEventName(header, payload, request.query["branches"]);
    if (event === null) return { kind: "ignore" };
    const userTopic = request.userTopic;
    let content = EVENT_FUNCTIONS[event]!(payload, userTopic !== undefined);
    // With a topic of the user's choosing, the message names the project itself.
    if (userTopic) content = `[[${repoName(payload)}](${projectHomepage(payload)})] ${content}`;
    const topic = topicFor(event, payload, useMergeRequestTitle);
    return { kind: "messages", messages: [{ topic, content, eventType: event }] };
  });
}

export const gitlab: Integration = { name: "gitlab", displayName: "GitLab", handle: handleGitLab };
