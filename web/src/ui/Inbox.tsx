// The inbox: every conversation with unread messages, direct ones first,
// then by channel and topic, each a link to its narrow.
import { useChannels } from "../model/channels.ts";
import { hrefFor } from "../model/navigation.ts";
import type { Narrow } from "../model/narrow.ts";
import { topicDisplayName } from "../model/realm.ts";
import { useUnreads } from "../model/unreads.ts";
import { userName, useUsers } from "../model/users.ts";

export function Inbox() {
  const counts = useUnreads((s) => s.counts);
  const subscriptions = useChannels((s) => s.subscriptions);
  useUsers((s) => s.byId);
  const dms = Object.entries(counts.byDm).filter(([, n]) => n > 0);
  const channels = Object.entries(counts.byTopic)
    .map(([id, topics]) => ({ streamId: Number(id), topics: Object.values(topics).filter((t) => t.count > 0) }))
    .filter((c) => c.topics.length > 0 && subscriptions[c.streamId])
    .sort((a, b) => subscriptions[a.streamId]!.name.localeCompare(subscriptions[b.streamId]!.name));

  if (dms.length === 0 && channels.length === 0) {
    return (
      <section className="inbox empty" aria-label="Inbox">
        <p>You have no unread messages.</p>
        <p>
          <a href="#feed">View all messages</a>
        </p>
      </section>
    );
  }
  return (
    <section className="inbox" aria-label="Inbox">
      {dms.length > 0 && (
        <div className="inbox-group">
          <h3>Direct messages</h3>
          <ul>
            {dms.map(([key, n]) => {
              const narrow: Narrow = { kind: "dm", userIds: key.split(",").map(Number) };
              return (
                <li key={key}>
                  <a href={hrefFor({ kind: "messages", narrow })}>{narrow.userIds.map(userName).join(", ")}</a>
                  <span className="unread-count">{n}</span>
                </li>
              );
            })}
          </ul>
        </div>
      )}
      {channels.map(({ streamId, topics }) => {
        const sub = subscriptions[streamId]!;
        return (
          <div className="inbox-group" key={streamId}>
            <h3>
              <span className="channel-swatch" style={{ background: sub.color }} aria-hidden="true">
                #
              </span>
              <a href={hrefFor({ kind: "messages", narrow: { kind: "channel", streamId } })}>{sub.name}</a>
            </h3>
            <ul>
              {topics.map((t) => (
                <li key={t.topic}>
                  <a href={hrefFor({ kind: "messages", narrow: { kind: "topic", streamId, topic: t.topic } })}>{topicDisplayName(t.topic)}</a>
                  <span className="unread-count">{t.count}</span>
                </li>
              ))}
            </ul>
          </div>
        );
      })}
    </section>
  );
}
