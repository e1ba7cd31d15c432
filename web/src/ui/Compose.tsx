// The compose box under the message list: Topic (for channel narrows), To
// (for a new direct message) and Message; Enter sends, Shift+Enter starts a
// new line. Sending echoes the message at once (see messagesStore.send) and
// tells others you are typing. Typeahead for @people, #channels, :emoji: and
// topics; files by button, paste or drag-and-drop; a Markdown preview
// rendered by the server; the unsent text kept per conversation (drafts.ts).
import { useCallback, useEffect, useRef, useState, type ClipboardEvent, type DragEvent, type FormEvent, type KeyboardEvent } from "react";
import { flushSync } from "react-dom";
import { api, uploadFile } from "../api/client.ts";
import { useChannels } from "../model/channels.ts";
import { useConnection } from "../model/connection.ts";
import { draftsStore } from "../model/drafts.ts";
import { emojiStore, useEmoji } from "../model/emoji.ts";
import { messagesStore } from "../model/messages.ts";
import { narrowKey, type Narrow } from "../model/narrow.ts";
import { useRealm } from "../model/realm.ts";
import { matchChannels, matchPeople, matchTopics, matchWildcards, mentionSyntax, searchEmoji, tokenAtCaret } from "../model/suggestions.ts";
import { topicsStore } from "../model/topics.ts";
import { userName, useUsers } from "../model/users.ts";
import { SuggestionList, useAutocomplete, type SuggestionSet } from "./Autocomplete.tsx";
import { prepareHtml } from "./rendered.ts";
import { useComposeRequestsFor } from "./useComposeRequests.ts";

type Target = { type: "stream"; streamId: number; topic: string } | { type: "private"; userIds: number[] };

function typingParams(target: Target, op: "start" | "stop") {
  return target.type === "stream" ? { op, type: "stream", stream_id: target.streamId, topic: target.topic } : { op, type: "direct", to: target.userIds };
}

/** The drafts key of a narrow's compose box: a channel's box keeps one draft whatever the topic, as Zulip's does per conversation. */
function draftKey(narrow: Narrow): string {
  return narrowKey(narrow);
}

export function Compose({ narrow }: { narrow: Narrow }) {
  const streamId = narrow.kind === "channel" || narrow.kind === "topic" ? narrow.streamId : null;
  const sub = useChannels((s) => (streamId === null ? undefined : s.subscriptions[streamId]));
  const emptyTopicName = useRealm((s) => s.emptyTopicName);
  const maxTopic = useRealm((s) => s.maxTopicLength);
  const maxLength = useRealm((s) => s.maxMessageLength);
  const selfId = useUsers((s) => s.selfId);
  const unicodeEmoji = useEmoji((s) => s.unicode);
  const key = draftKey(narrow);
  const [topic, setTopic] = useState(narrow.kind === "topic" ? narrow.topic : "");
  const [content, setContent] = useState("");
  const [recipients, setRecipients] = useState<number[]>([]);
  const [recipientQuery, setRecipientQuery] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [preview, setPreview] = useState<string | null>(null);
  const [uploading, setUploading] = useState(0);
  const [dragging, setDragging] = useState(false);
  const typingSince = useRef<{ key: string; at: number } | null>(null);
  const messageRef = useRef<HTMLTextAreaElement>(null);
  const topicRef = useRef<HTMLInputElement>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const contentRef = useRef(content);
  contentRef.current = content;

  // A new conversation: its draft comes back.
  useEffect(() => {
    const draft = draftsStore.get(selfId, key);
    setContent(draft?.text ?? "");
    setTopic(narrow.kind === "topic" ? narrow.topic : (draft?.topic ?? ""));
    setRecipients([]);
    setPreview(null);
    setError(null);
  }, [key, selfId]); // eslint-disable-line react-hooks/exhaustive-deps

  useEffect(() => {
    if (streamId !== null) void topicsStore.fetch(streamId);
  }, [streamId]);

  const saveDraft = (text: string, topicText = topic) => draftsStore.save(selfId, key, text, narrow.kind === "channel" ? topicText : undefined);

  // Requests from elsewhere: reply, quote and reply, "c" for a new topic.
  useComposeRequestsFor(key, setTopic, setContent);

  const target: Target | null =
    streamId !== null
      ? { type: "stream", streamId, topic: topic.trim() }
      : narrow.kind === "dm"
        ? { type: "private", userIds: narrow.userIds }
        : narrow.kind === "all-dms" && recipients.length > 0
          ? { type: "private", userIds: recipients }
          : null;

  const stopTyping = () => {
    if (typingSince.current && target) void api.post("/typing", typingParams(target, "stop")).catch(() => undefined);
    typingSince.current = null;
  };

  // Leaving the conversation ends "is typing" there.
  useEffect(() => () => stopTyping(), [key]); // eslint-disable-line react-hooks/exhaustive-deps

  const messageSuggest = useCallback((before: string): SuggestionSet | null => {
    const token = tokenAtCaret(before);
    if (!token) return null;
    if (token.trigger === "@") {
      const wild = matchWildcards(token.query).map((w) => ({ key: `w:${w}`, label: <span>@{w} <small>notify everyone</small></span>, text: `@${w}`, insert: `@**${w}** ` }));
      const people = matchPeople(token.query).map((u) => ({
        key: `u:${u.user_id}`,
        label: (
          <span>
            {u.full_name} <small>{u.email}</small>
          </span>
        ),
        text: u.full_name,
        insert: `${mentionSyntax(u)} `,
      }));
      return { start: token.start, items: [...people, ...wild].slice(0, 8) };
    }
    if (token.trigger === "#") {
      return { start: token.start, items: matchChannels(token.query).map((c) => ({ key: `c:${c.streamId}`, label: <span>#{c.name}</span>, text: c.name, insert: `#**${c.name}** ` })) };
    }
    void emojiStore.ensureUnicode();
    return {
      start: token.start,
      items: searchEmoji(token.query).map((e) => ({
        key: `e:${e.type}:${e.code}:${e.name}`,
        label: (
          <span>
            {e.type === "realm_emoji" ? <img src={e.url} alt="" className="emoji-small" /> : String.fromCodePoint(...e.code.split("-").map((p) => Number.parseInt(p, 16)))} :{e.name}:
          </span>
        ),
        text: e.name,
        insert: `:${e.name}: `,
      })),
    };
  }, []);

  const messageAc = useAutocomplete(
    messageSuggest,
    (value, caret) => {
      // The new text is put in the box at once, so the caret lands after the completion before the next keystroke.
      flushSync(() => setContent(value));
      saveDraft(value);
      messageRef.current?.setSelectionRange(caret, caret);
    },
    () => ({ value: messageRef.current?.value ?? "", caret: messageRef.current?.selectionStart ?? 0 }),
  );

  // The emoji names arrive after the first ":" typed: suggest again for what is in the box now.
  useEffect(() => {
    const field = messageRef.current;
    if (unicodeEmoji !== null && field !== null && document.activeElement === field) messageAc.update(field.value, field.selectionStart);
  }, [unicodeEmoji]); // eslint-disable-line react-hooks/exhaustive-deps

  const topicSuggest = useCallback(
    (before: string): SuggestionSet | null =>
      streamId === null ? null : { start: 0, items: matchTopics(streamId, before).map((t) => ({ key: t, label: <span>{t}</span>, text: t, insert: t })) },
    [streamId],
  );
  const topicAc = useAutocomplete(
    topicSuggest,
    (value) => {
      setTopic(value);
      saveDraft(content, value);
    },
    () => ({ value: topicRef.current?.value ?? "", caret: topicRef.current?.selectionStart ?? 0 }),
  );

  const recipientSuggest = useCallback(
    (before: string): SuggestionSet | null =>
      before.trim() === ""
        ? null
        : { start: 0, items: matchPeople(before, recipients).map((u) => ({ key: String(u.user_id), label: <span>{u.full_name} <small>{u.email}</small></span>, text: u.full_name, insert: String(u.user_id) })) },
    [recipients],
  );
  const recipientAc = useAutocomplete(
    recipientSuggest,
    (value) => {
      const id = Number(value);
      if (Number.isInteger(id) && id > 0) setRecipients((r) => (r.includes(id) ? r : [...r, id]));
      setRecipientQuery("");
    },
    () => ({ value: recipientQuery, caret: recipientQuery.length }),
  );

  if (target === null && narrow.kind !== "all-dms") {
    return <div className="compose-hint">Open a channel, topic or direct conversation to write a message.</div>;
  }

  const noteTyping = (text: string) => {
    if (!target) return;
    const conversation = JSON.stringify(typingParams(target, "start"));
    if (text.trim() === "") return stopTyping();
    const now = Date.now();
    if (typingSince.current?.key === conversation && now - typingSince.current.at < useRealm.getState().typingStartedWaitMs) return;
    typingSince.current = { key: conversation, at: now };
    void api.post("/typing", typingParams(target, "start")).catch(() => undefined);
  };

  const insertText = (text: string) => {
    const field = messageRef.current;
    const value = contentRef.current;
    const at = field ? field.selectionStart : value.length;
    const next = value.slice(0, at) + text + value.slice(at);
    setContent(next);
    saveDraft(next);
  };

  const upload = async (files: File[]) => {
    for (const file of files) {
      setUploading((n) => n + 1);
      const placeholder = `[Uploading ${file.name}…]()`;
      insertText(placeholder);
      try {
        const { url, filename } = await uploadFile(file);
        setContent((value) => {
          const next = value.replace(placeholder, `[${filename}](${url})`);
          saveDraft(next);
          return next;
        });
      } catch (e) {
        setContent((value) => value.replace(placeholder, ""));
        setError(`Could not upload ${file.name}: ${(e as Error).message}`);
      } finally {
        setUploading((n) => n - 1);
      }
    }
  };

  const send = () => {
    const text = content.trim();
    if (text === "" || uploading > 0 || !target) return;
    if (target.type === "stream" && !sub) {
      setError("You are not subscribed to this channel.");
      return;
    }
    if (text.length > maxLength) {
      setError(`Message too long: ${text.length} characters, the limit is ${maxLength}.`);
      return;
    }
    stopTyping();
    setError(null);
    setPreview(null);
    const queueId = useConnection.getState().queueId;
    void messagesStore.send(target.type === "stream" ? { ...target, streamName: sub!.name } : target, text, queueId);
    setContent("");
    draftsStore.clear(selfId, key);
  };

  const togglePreview = async () => {
    if (preview !== null) {
      setPreview(null);
      return;
    }
    if (content.trim() === "") return;
    try {
      const reply = await api.post<{ rendered: string }>("/messages/render", { content });
      setPreview(prepareHtml(reply.rendered, selfId, false));
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    send();
  };
  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (messageAc.handleKey(e)) return;
    if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
      e.preventDefault();
      send();
    }
  };
  const onPaste = (e: ClipboardEvent<HTMLTextAreaElement>) => {
    const files = [...e.clipboardData.files];
    if (files.length === 0) return;
    e.preventDefault();
    void upload(files);
  };
  const onDrop = (e: DragEvent<HTMLFormElement>) => {
    setDragging(false);
    const files = [...e.dataTransfer.files];
    if (files.length === 0) return;
    e.preventDefault();
    void upload(files);
  };

  return (
    <form
      className={`compose${dragging ? " dragging" : ""}`}
      onSubmit={onSubmit}
      aria-label="Compose"
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes("Files")) {
          e.preventDefault();
          setDragging(true);
        }
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
    >
      {target?.type === "stream" && (
        <div className="compose-topic-row">
          <span className="compose-channel" style={{ background: sub?.color }}>
            #{sub?.name ?? "unknown channel"}
          </span>
          <label htmlFor="compose-topic" className="visually-hidden">
            Topic
          </label>
          <div className="autocomplete-anchor">
            <input
              id="compose-topic"
              ref={topicRef}
              className="compose-topic"
              placeholder={emptyTopicName}
              maxLength={maxTopic}
              value={topic}
              aria-controls="topic-suggestions"
              aria-autocomplete="list"
              onChange={(e) => {
                setTopic(e.target.value);
                saveDraft(content, e.target.value);
                topicAc.update(e.target.value, e.target.value.length);
              }}
              onKeyDown={(e) => void topicAc.handleKey(e)}
              onBlur={() => topicAc.close()}
              autoComplete="off"
            />
            <SuggestionList id="topic-suggestions" state={topicAc} label="Topics" />
          </div>
        </div>
      )}
      {narrow.kind === "all-dms" && (
        <div className="compose-to-row">
          <label htmlFor="compose-to">To</label>
          <ul className="recipient-chips" aria-label="Recipients">
            {recipients.map((id) => (
              <li key={id}>
                {userName(id)}
                <button type="button" aria-label={`Remove ${userName(id)}`} onClick={() => setRecipients((r) => r.filter((x) => x !== id))}>
                  ×
                </button>
              </li>
            ))}
          </ul>
          <div className="autocomplete-anchor">
            <input
              id="compose-to"
              value={recipientQuery}
              placeholder="Add one or more people"
              role="combobox"
              aria-expanded={recipientAc.set !== null}
              aria-controls="to-suggestions"
              aria-autocomplete="list"
              autoComplete="off"
              onChange={(e) => {
                setRecipientQuery(e.target.value);
                recipientAc.update(e.target.value, e.target.value.length);
              }}
              onKeyDown={(e) => {
                if (recipientAc.handleKey(e)) return;
                if (e.key === "Backspace" && recipientQuery === "") setRecipients((r) => r.slice(0, -1));
              }}
              onBlur={() => recipientAc.close()}
            />
            <SuggestionList id="to-suggestions" state={recipientAc} label="People" />
          </div>
        </div>
      )}
      <div className="compose-body">
        <label htmlFor="compose-message" className="visually-hidden">
          Message
        </label>
        <div className="autocomplete-anchor grow">
          {preview !== null ? (
            <div className="compose-preview rendered-markdown" aria-label="Preview" dangerouslySetInnerHTML={{ __html: preview }} />
          ) : (
            <textarea
              id="compose-message"
              ref={messageRef}
              className="compose-message"
              rows={2}
              placeholder={target?.type === "stream" ? `Message #${sub?.name ?? ""}` : "Message"}
              value={content}
              aria-controls="message-suggestions"
              aria-autocomplete="list"
              onChange={(e) => {
                setContent(e.target.value);
                saveDraft(e.target.value);
                noteTyping(e.target.value);
                messageAc.update(e.target.value, e.target.selectionStart);
              }}
              onKeyDown={onKeyDown}
              onPaste={onPaste}
              onBlur={() => {
                stopTyping();
                messageAc.close();
              }}
            />
          )}
          <SuggestionList id="message-suggestions" state={messageAc} label="Suggestions" />
        </div>
        <div className="compose-buttons">
          <input
            ref={fileRef}
            type="file"
            multiple
            className="visually-hidden"
            aria-hidden="true"
            tabIndex={-1}
            onChange={(e) => {
              void upload([...(e.target.files ?? [])]);
              e.target.value = "";
            }}
          />
          <button type="button" className="icon-button" aria-label="Upload files" title="Upload files" onClick={() => fileRef.current?.click()}>
            📎
          </button>
          <button type="button" className="icon-button" aria-pressed={preview !== null} aria-label="Preview" title="Preview" onClick={() => void togglePreview()}>
            👁
          </button>
          <button type="submit" className="primary" disabled={content.trim() === "" || uploading > 0 || !target}>
            Send
          </button>
        </div>
      </div>
      {uploading > 0 && <p className="compose-status" role="status">Uploading…</p>}
      {error !== null && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}
