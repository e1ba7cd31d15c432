// What a message list says beside its messages: a failed send's Retry and
// Cancel (Zulip's failed local echo), and, when a view holds no message,
// what that view is (Zulip's empty narrow messages).
import { t } from "../i18n.ts";
import { channelName } from "../model/channels.ts";
import { cancelFailed, retryFailed } from "../model/failed-sends.ts";
import type { OutboxMessage } from "../model/messages.ts";
import type { Narrow } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { parseSearch } from "../model/search.ts";
import { userName } from "../model/users.ts";
import "../styles/conversation-states.css";

export function FailedSend({ local }: { local: OutboxMessage }) {
  return (
    <div className="send-state failed" role="alert">
      {t("Not sent: {{error}}", { error: local.error ?? "" })}{" "}
      <button type="button" className="send-retry" onClick={() => retryFailed(local.localId)}>
        {t("Retry")}
      </button>{" "}
      <button type="button" className="send-cancel" onClick={() => cancelFailed(local.localId)}>
        {t("Cancel")}
      </button>
    </div>
  );
}

function emptyText(narrow: Narrow, selfId: number): { title: string; hint?: string } {
  switch (narrow.kind) {
    case "all":
      return { title: t("There are no messages here yet."), hint: t("Messages in your channels and your direct messages show here.") };
    case "channel":
      return { title: t("There are no messages in #{{channel}} yet.", { channel: channelName(narrow.streamId) ?? t("unknown channel") }), hint: t("Why not start a new topic?") };
    case "topic":
      return { title: t("There are no messages in {{topic}} yet.", { topic: topicDisplayName(narrow.topic) }), hint: t("Start a new topic: the first message you send here starts it.") };
    case "dm":
      if (narrow.userIds.length === 1 && narrow.userIds[0] === selfId) {
        return { title: t("You have not sent any direct messages to yourself yet!"), hint: t("Use this space for personal notes, or to try out Parley's features.") };
      }
      if (narrow.userIds.length === 1) return { title: t("You have no direct messages with {{name}} yet.", { name: userName(narrow.userIds[0]!) }), hint: t("Why not start the conversation?") };
      return { title: t("You have no direct messages with these users yet."), hint: t("Why not start the conversation?") };
    case "all-dms":
      return { title: t("You have no direct messages yet!"), hint: t("Why not start the conversation?") };
    case "mentions":
      return { title: t("You haven't been mentioned yet!"), hint: t("Messages that mention you, or a group you are in, show here.") };
    case "starred":
      return { title: t("You have no starred messages."), hint: t("Star a message to keep it here for later.") };
    case "search":
      return { title: t("No search results."), hint: t("Try other words, or fewer search terms.") };
  }
}

/** What an empty search looked for, term by term (Zulip's "You searched for"). */
function SearchedFor({ query }: { query: string }) {
  const terms = parseSearch(query);
  return (
    <p className="empty-narrow-searched">
      {t("You searched for:")}{" "}
      {terms.map((term, i) => (
        <span key={i} className="searched-term">
          {term.operator === "search" ? term.operand : `${term.negated ? "-" : ""}${term.operator}:${term.operand}`}
        </span>
      ))}
    </p>
  );
}

/** The empty view's words: what it would show, and how to fill it. */
export function EmptyNarrow({ narrow, selfId }: { narrow: Narrow; selfId: number }) {
  const { title, hint } = emptyText(narrow, selfId);
  return (
    <div className="list-empty empty-narrow" role="status">
      <p className="empty-narrow-title">{title}</p>
      {narrow.kind === "search" && <SearchedFor query={narrow.query} />}
      {hint && <p className="empty-narrow-hint">{hint}</p>}
    </div>
  );
}
