// The compose box under the message list: Topic (for channel narrows) and
// Message; Enter sends, Shift+Enter starts a new line. Sending echoes the
// message at once (see messagesStore.send) and tells others you are typing.
import { useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import { api } from "../api/client.ts";
import { useChannels } from "../model/channels.ts";
import { useConnection } from "../model/connection.ts";
import { messagesStore } from "../model/messages.ts";
import { narrowKey, type Narrow } from "../model/narrow.ts";
import { useRealm } from "../model/realm.ts";
import { useComposeRequestsFor } from "./useComposeRequests.ts";

type Target = { type: "stream"; streamId: number; topic: string } | { type: "private"; userIds: number[] };

function typingParams(target: Target, op: "start" | "stop") {
  return target.type === "stream" ? { op, type: "stream", stream_id: target.streamId, topic: target.topic } : { op, type: "direct", to: target.userIds };
}

export function Compose({ narrow }: { narrow: Narrow }) {
  const streamId = narrow.kind === "channel" || narrow.kind === "topic" ? narrow.streamId : null;
  const sub = useChannels((s) => (streamId === null ? undefined : s.subscriptions[streamId]));
  const emptyTopicName = useRealm((s) => s.emptyTopicName);
  const maxTopic = useRealm((s) => s.maxTopicLength);
  const [topic, setTopic] = useState(narrow.kind === "topic" ? narrow.topic : "");
  const [content, setContent] = useState("");
  const [error, setError] = useState<string | null>(null);
  const typingSince = useRef<{ key: string; at: number } | null>(null);
  const key = narrowKey(narrow);

  useEffect(() => {
    setTopic(narrow.kind === "topic" ? narrow.topic : "");
    setError(null);
  }, [key]); // eslint-disable-line react-hooks/exhaustive-deps
  useComposeRequestsFor(key, setTopic, setContent);

  const target: Target | null =
    streamId !== null ? { type: "stream", streamId, topic: topic.trim() } : narrow.kind === "dm" ? { type: "private", userIds: narrow.userIds } : null;

  const stopTyping = () => {
    if (typingSince.current && target) void api.post("/typing", typingParams(target, "stop")).catch(() => undefined);
    typingSince.current = null;
  };

  // Leaving the conversation ends "is typing" there.
  useEffect(() => () => stopTyping(), [key]); // eslint-disable-line react-hooks/exhaustive-deps

  if (target === null) {
    return <div className="compose-hint">Open a channel, topic or direct conversation to write a message.</div>;
  }

  const noteTyping = (text: string) => {
    const conversation = JSON.stringify(typingParams(target, "start"));
    if (text.trim() === "") return stopTyping();
    const now = Date.now();
    if (typingSince.current?.key === conversation && now - typingSince.current.at < useRealm.getState().typingStartedWaitMs) return;
    typingSince.current = { key: conversation, at: now };
    void api.post("/typing", typingParams(target, "start")).catch(() => undefined);
  };

  const send = () => {
    const text = content.trim();
    if (text === "") return;
    if (target.type === "stream" && !sub) {
      setError("You are not subscribed to this channel.");
      return;
    }
    stopTyping();
    setError(null);
    const queueId = useConnection.getState().queueId;
    void messagesStore.send(target.type === "stream" ? { ...target, streamName: sub!.name } : target, text, queueId);
    setContent("");
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    send();
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };

  return (
    <form className="compose" onSubmit={onSubmit} aria-label="Compose">
      {target.type === "stream" && (
        <div className="compose-topic-row">
          <span className="compose-channel" style={{ background: sub?.color }}>
            #{sub?.name ?? "unknown channel"}
          </span>
          <label htmlFor="compose-topic" className="visually-hidden">
            Topic
          </label>
          <input
            id="compose-topic"
            className="compose-topic"
            placeholder={emptyTopicName}
            maxLength={maxTopic}
            value={topic}
            onChange={(e) => setTopic(e.target.value)}
            autoComplete="off"
          />
        </div>
      )}
      <div className="compose-body">
        <label htmlFor="compose-message" className="visually-hidden">
          Message
        </label>
        <textarea
          id="compose-message"
          className="compose-message"
          rows={2}
          placeholder={target.type === "stream" ? `Message #${sub?.name ?? ""}` : "Message"}
          value={content}
          onChange={(e) => {
            setContent(e.target.value);
            noteTyping(e.target.value);
          }}
          onKeyDown={onKeyDown}
          onBlur={stopTyping}
        />
        <button type="submit" className="primary" disabled={content.trim() === ""}>
          Send
        </button>
      </div>
      {error !== null && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
