// The Drafts view (#drafts), loaded on demand: your unsent messages, newest
// first; one opens in its conversation's compose box, or is deleted. They are
// the server's drafts when your enable_drafts_synchronization setting is on
// (the same on every device, following drafts events), this browser's otherwise.
import { useState } from "react";
import { formatDate, formatTime, t } from "../i18n.ts";
import { channelName } from "../model/channels.ts";
import { requestCompose } from "../model/compose-requests.ts";
import { draftsStore, useDrafts, type DraftEntry } from "../model/drafts.ts";
import { navigate } from "../model/navigation.ts";
import { topicDisplayName } from "../model/realm.ts";
import { useSettings } from "../model/settings.ts";
import { userName, useUsers } from "../model/users.ts";
import "../styles/compose-features.css";
import { ErrorLine } from "./StatusLine.tsx";

function conversationLabel(entry: DraftEntry): string {
  const narrow = entry.narrow;
  if (!narrow) return t("No recipient");
  if (narrow.kind === "channel" || narrow.kind === "topic") {
    const topic = narrow.kind === "topic" ? narrow.topic : entry.topic;
    return `#${channelName(narrow.streamId) ?? t("unknown channel")}${topic !== "" ? ` > ${topicDisplayName(topic)}` : ""}`;
  }
  if (narrow.kind === "dm") return narrow.userIds.map(userName).join(", ");
  return t("No recipient");
}

export default function DraftsView() {
  const selfId = useUsers((s) => s.selfId);
  const synced = useSettings((s) => s.settings.enable_drafts_synchronization === true);
  // Re-read when the server's list or this browser's copy changes.
  useDrafts((s) => s.server);
  useDrafts((s) => s.local);
  const [error, setError] = useState<string | null>(null);
  const drafts = draftsStore.list(selfId);

  const open = (entry: DraftEntry) => {
    const key = draftsStore.restore(selfId, entry);
    if (!key || !entry.narrow) return;
    navigate({ kind: "messages", narrow: entry.narrow });
    requestCompose({ key, focus: "message" });
  };

  return (
    <section className="compose-page" aria-label={t("Drafts")}>
      <p className="empty">{synced ? t("Drafts are saved on the server, and shown on all your devices.") : t("Drafts are saved in this browser only.")}</p>
      {drafts.length === 0 ? (
        <p className="empty">{t("You have no drafts. Text you type in the compose box and do not send is kept here.")}</p>
      ) : (
        <ul aria-label={t("Drafts")}>
          {drafts.map((d) => {
            const label = conversationLabel(d);
            const at = new Date(d.at);
            return (
              <li key={d.key} className="compose-item" aria-label={t("Draft to {{recipient}}", { recipient: label })}>
                <header>
                  <span>{label}</span>
                  <time dateTime={at.toISOString()}>{`${formatDate(at)} ${formatTime(at)}`}</time>
                </header>
                <div className="item-content draft-text">{d.content}</div>
                <div className="item-actions">
                  <button type="button" disabled={!d.narrow} onClick={() => open(d)}>
                    {t("Restore draft")}
                  </button>
                  <button
                    type="button"
                    onClick={() => {
                      setError(null);
                      draftsStore.remove(selfId, d).catch((e: unknown) => setError((e as Error).message));
                    }}
                  >
                    {t("Delete draft")}
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      <ErrorLine error={error} />
    </section>
  );
}
