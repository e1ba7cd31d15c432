// The compose box under the message list: Topic (for channel narrows), To
// (for a new direct message) and Message; Enter sends, Shift+Enter starts a
// new line. Sending echoes the message at once (see messagesStore.send) and
// tells others you are typing. Typeahead for @people, #channels, :emoji: and
// topics; files by button, paste or drag-and-drop; a Markdown preview
// rendered by the server; the unsent text kept per conversation (drafts.ts).
import { lazy, Suspense, useCallback, useEffect, useLayoutEffect, useRef, useState, type ClipboardEvent, type DragEvent, type FormEvent, type KeyboardEvent } from "react";
import { flushSync } from "react-dom";
import { api, uploadFileWithProgress } from "../api/client.ts";
import { t } from "../i18n.ts";
import { applyFormat, insertAt, type Edit, type FormatKind } from "../model/compose-format.ts";
import { useChannels } from "../model/channels.ts";
import { useConnection } from "../model/connection.ts";
import { draftsStore } from "../model/drafts.ts";
import { emojiStore, useEmoji } from "../model/emoji.ts";
import { messagesStore } from "../model/messages.ts";
import { narrowKey, type Narrow } from "../model/narrow.ts";
import { useRealm } from "../model/realm.ts";
import { matchChannels, matchPeople, matchTopics, matchWildcards, mentionSyntax, searchEmoji, tokenAtCaret } from "../model/suggestions.ts";
import { topicsStore, useTopics } from "../model/topics.ts";
import { shownEmail, userName, useUsers } from "../model/users.ts";
import { SuggestionList, useAutocomplete, type SuggestionSet } from "./Autocomplete.tsx";
import { prepareHtml } from "./rendered.ts";
import { useComposeRequestsFor } from "./useComposeRequests.ts";
import { Popover } from "./Popover.tsx";
import { SnippetPicker } from "./SnippetPicker.tsx";
import { formatWhen, TimePicker } from "./TimePicker.tsx";
import "../styles/compose-features.css";
import { ErrorLine } from "./StatusLine.tsx";

const EmojiPicker = lazy(() => import("./EmojiPicker.tsx"));

/** A file on its way up: its placeholder in the text, how much is sent, and how to stop it. */
interface Upload {
  id: number;
  /** The conversation (draft key) it goes into. */
  key: string;
  name: string;
  placeholder: string;
  progress: number;
  controller: AbortController;
}

/** The formatting buttons, in Zulip's order, with the names a screen reader reads. */
function formats(): { kind: FormatKind; label: string; icon: string }[] {
  return [
    { kind: "bold", label: t("Bold"), icon: "B" },
    { kind: "italic", label: t("Italic"), icon: "I" },
    { kind: "link", label: t("Link"), icon: "🔗" },
    { kind: "code", label: t("Code"), icon: "</>" },
    { kind: "quote", label: t("Quote"), icon: "❝" },
    { kind: "math", label: t("Math"), icon: "∑" },
    { kind: "spoiler", label: t("Spoiler"), icon: "⊘" },
    { kind: "poll", label: t("Poll"), icon: "📊" },
    { kind: "todo", label: t("To-do list"), icon: "☑" },
  ];
}

type PopupKind = "emoji" | "snippets";

/** The toolbar's buttons that open a picker beside them. */
function pickers(): { kind: PopupKind; label: string; icon: string }[] {
  return [
    { kind: "emoji", label: t("Add emoji"), icon: "🙂" },
    { kind: "snippets", label: t("Saved snippets"), icon: "📋" },
  ];
}

/** A toolbar button; `expanded` (open or not) only for those that open a picker. */
interface Tool {
  key: string;
  className: string;
  label: string;
  icon: string;
  expanded?: boolean;
  onClick: (button: HTMLElement) => void;
}

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
  const [uploads, setUploads] = useState<Upload[]>([]);
  const uploading = uploads.filter((u) => u.key === key).length;
  const uploadSeq = useRef(0);
  const [popup, setPopup] = useState<{ kind: PopupKind; anchor: HTMLElement } | null>(null);
  const [scheduling, setScheduling] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const [dragging, setDragging] = useState(false);
  const typingSince = useRef<{ key: string; at: number } | null>(null);
  const messageRef = useRef<HTMLTextAreaElement>(null);
  const topicRef = useRef<HTMLInputElement>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const contentRef = useRef(content);
  contentRef.current = content;
  const keyRef = useRef(key);
  keyRef.current = key;

  // A new conversation: its draft comes back.
  useEffect(() => {
    const draft = draftsStore.get(selfId, key);
    setContent(draft?.text ?? "");
    setTopic(narrow.kind === "topic" ? narrow.topic : (draft?.topic ?? ""));
    setRecipients([]);
    setPreview(null);
    setError(null);
    setNotice(null);
  }, [key, selfId]); // eslint-disable-line react-hooks/exhaustive-deps

  useEffect(() => {
    if (streamId !== null) void topicsStore.fetch(streamId);
  }, [streamId]);

  const saveDraft = (text: string, topicText = topic) => draftsStore.save(selfId, key, text, narrow.kind === "channel" ? topicText : undefined, narrow);

  // The box grows with its text up to its maximum height (CSS), then scrolls.
  useLayoutEffect(() => {
    const field = messageRef.current;
    if (!field) return;
    field.style.height = "auto";
    field.style.height = `${field.scrollHeight + field.offsetHeight - field.clientHeight}px`;
  }, [content, preview]);

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
      const wild = matchWildcards(token.query).map((w) => ({ key: `w:${w}`, label: <span>@{w} <small>{t("notify everyone")}</small></span>, text: `@${w}`, insert: `@**${w}** ` }));
      const people = matchPeople(token.query).map((u) => ({
        key: `u:${u.user_id}`,
        label: (
          <span>
            {u.full_name} <small>{shownEmail(u)}</small>
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

  // The channel's topics can arrive after the first letters typed: suggest for them once they are here.
  // Only then (not when a topic move makes them load again, which would reopen a list the user closed).
  const typedBeforeTopics = useRef(false);
  const topicsLoaded = useTopics((s) => streamId !== null && s.byStream[streamId] !== undefined);
  useEffect(() => {
    typedBeforeTopics.current = false;
  }, [streamId]);
  useEffect(() => {
    const field = topicRef.current;
    if (!topicsLoaded || !typedBeforeTopics.current) return;
    typedBeforeTopics.current = false;
    if (field !== null && field.value !== "" && document.activeElement === field) topicAc.update(field.value, field.selectionStart ?? field.value.length);
  }, [topicsLoaded]); // eslint-disable-line react-hooks/exhaustive-deps

  const recipientSuggest = useCallback(
    (before: string): SuggestionSet | null =>
      before.trim() === ""
        ? null
        : { start: 0, items: matchPeople(before, recipients).map((u) => ({ key: String(u.user_id), label: <span>{u.full_name} <small>{shownEmail(u)}</small></span>, text: u.full_name, insert: String(u.user_id) })) },
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
    return <div className="compose-hint">{t("Open a channel, topic or direct conversation to write a message.")}</div>;
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

  /** The text and selection of the message box now. */
  const currentEdit = (): Edit => {
    const field = messageRef.current;
    const value = contentRef.current;
    return { value, start: field ? field.selectionStart : value.length, end: field ? field.selectionEnd : value.length };
  };

  /** Puts an edit in the box at once (later edits in the same event see it) and selects what it says. */
  const applyEdit = (edit: Edit, focus = true) => {
    contentRef.current = edit.value;
    flushSync(() => setContent(edit.value));
    saveDraft(edit.value);
    const field = messageRef.current;
    if (field && focus) {
      field.focus();
      field.setSelectionRange(edit.start, edit.end);
    }
  };

  /** Replaces `placeholder` (with the line break after it, when it is to go) in the text as it is now. */
  const replacePlaceholder = (placeholder: string, replacement: string, originKey: string, saveOrigin: (text: string) => void) => {
    if (keyRef.current !== originKey) {
      // The box has moved to another conversation meanwhile: the upload lands in its own conversation's draft.
      const draft = draftsStore.get(selfId, originKey);
      if (draft?.text.includes(placeholder)) saveOrigin(draft.text.replace(replacement === "" && draft.text.includes(`${placeholder}\n`) ? `${placeholder}\n` : placeholder, replacement));
      return;
    }
    const value = contentRef.current;
    const target = replacement === "" && value.includes(`${placeholder}\n`) ? `${placeholder}\n` : placeholder;
    if (!value.includes(target)) return;
    const next = value.replace(target, replacement);
    contentRef.current = next;
    setContent(next);
    saveDraft(next);
  };

  // Each file uploads at once, side by side, on a line of its own: "[Uploading name…]()" until its link is in.
  const upload = (files: File[]) => {
    if (files.length === 0) return;
    const taken = new Set([...uploads.map((u) => u.placeholder)]);
    const started: Upload[] = files.map((file) => {
      uploadSeq.current += 1;
      let placeholder = `[${t("Uploading {{name}}…", { name: file.name })}]()`;
      for (let n = 2; taken.has(placeholder) || contentRef.current.includes(placeholder); n += 1) placeholder = `[${t("Uploading {{name}}…", { name: `${file.name} (${n})` })}]()`;
      taken.add(placeholder);
      return { id: uploadSeq.current, key, name: file.name, placeholder, progress: 0, controller: new AbortController() };
    });
    const edit = currentEdit();
    const lead = edit.start > 0 && edit.value[edit.start - 1] !== "\n" ? "\n" : "";
    const trail = edit.value[edit.end] === "\n" ? "" : "\n";
    applyEdit(insertAt(edit, lead + started.map((u) => u.placeholder).join("\n") + trail), document.activeElement === messageRef.current);
    setUploads((list) => [...list, ...started]);
    setError(null);
    const saveOrigin = (text: string) => saveDraft(text);
    started.forEach((u, i) => {
      const file = files[i]!;
      uploadFileWithProgress(file, (progress) => setUploads((list) => list.map((x) => (x.id === u.id ? { ...x, progress } : x))), u.controller.signal)
        .then(({ url, filename }) => replacePlaceholder(u.placeholder, `[${filename}](${url})`, u.key, saveOrigin))
        .catch((e: unknown) => {
          replacePlaceholder(u.placeholder, "", u.key, saveOrigin);
          if (!u.controller.signal.aborted) setError(t("Could not upload {{name}}: {{error}}", { name: file.name, error: (e as Error).message }));
        })
        .finally(() => setUploads((list) => list.filter((x) => x.id !== u.id)));
    });
  };

  const format = (kind: FormatKind) => {
    if (preview !== null) setPreview(null);
    applyEdit(applyFormat(kind, currentEdit()));
  };

  /** Inserts text at the caret (a snippet, an emoji, "@" to start a mention) and puts the focus back in the box. */
  const insertFromToolbar = (text: string, suggest = false) => {
    setPopup(null);
    const edit = insertAt(currentEdit(), text);
    applyEdit(edit);
    if (suggest) messageAc.update(edit.value, edit.start);
  };

  const tools: Tool[] = [
    ...formats().map((f) => ({ key: f.kind, className: `format-button format-${f.kind}`, label: f.label, icon: f.icon, onClick: () => format(f.kind) })),
    { key: "mention", className: "format-button", label: t("Mention a person"), icon: "@", onClick: () => insertFromToolbar("@", true) },
    ...pickers().map((p) => ({
      key: p.kind,
      className: "format-button",
      label: p.label,
      icon: p.icon,
      expanded: popup?.kind === p.kind,
      onClick: (anchor: HTMLElement) => setPopup(popup?.kind === p.kind ? null : { kind: p.kind, anchor }),
    })),
  ];

  /** POST /scheduled_messages with what is in the box; it is then emptied, as a sent message's is. */
  const scheduleAt = async (timestamp: number) => {
    const text = content.trim();
    if (!target) return;
    await api.post("/scheduled_messages", {
      type: target.type === "stream" ? "stream" : "direct",
      to: target.type === "stream" ? target.streamId : target.userIds,
      topic: target.type === "stream" ? target.topic : undefined,
      content: text,
      scheduled_delivery_timestamp: timestamp,
    });
    setScheduling(false);
    stopTyping();
    setContent("");
    contentRef.current = "";
    draftsStore.clear(selfId, key);
    setNotice(t("Your message is scheduled for {{when}}.", { when: formatWhen(new Date(timestamp * 1000)) }));
  };

  const send = () => {
    const text = content.trim();
    if (text === "" || uploading > 0 || !target) return;
    if (target.type === "stream" && !sub) {
      setError(t("You are not subscribed to this channel."));
      return;
    }
    if (text.length > maxLength) {
      setError(t("Message too long: {{length}} characters, the limit is {{max}}.", { length: text.length, max: maxLength }));
      return;
    }
    stopTyping();
    setError(null);
    setNotice(null);
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
    // Zulip's formatting keys: Ctrl+B bold, Ctrl+I italic, Ctrl+Shift+L link (Cmd on a Mac).
    const mod = e.ctrlKey || e.metaKey;
    const shortcut: FormatKind | null = !mod || e.altKey ? null : e.key.toLowerCase() === "b" && !e.shiftKey ? "bold" : e.key.toLowerCase() === "i" && !e.shiftKey ? "italic" : e.key.toLowerCase() === "l" && e.shiftKey ? "link" : null;
    if (shortcut) {
      e.preventDefault();
      format(shortcut);
      return;
    }
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
      aria-label={t("Compose")}
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
            #{sub?.name ?? t("unknown channel")}
          </span>
          <label htmlFor="compose-topic" className="visually-hidden">
            {t("Topic")}
          </label>
          <div className="autocomplete-anchor">
            <input
              id="compose-topic"
              ref={topicRef}
              className="compose-topic"
              placeholder={emptyTopicName}
              maxLength={maxTopic}
              value={topic}
              aria-controls={topicAc.set !== null ? "topic-suggestions" : undefined}
              aria-autocomplete="list"
              onChange={(e) => {
                setTopic(e.target.value);
                saveDraft(content, e.target.value);
                topicAc.update(e.target.value, e.target.value.length);
                typedBeforeTopics.current = !topicsLoaded && e.target.value !== "";
              }}
              onKeyDown={(e) => {
                if (e.key === "Escape") typedBeforeTopics.current = false;
                void topicAc.handleKey(e);
              }}
              onBlur={() => {
                typedBeforeTopics.current = false;
                topicAc.close();
              }}
              autoComplete="off"
            />
            <SuggestionList id="topic-suggestions" state={topicAc} label={t("Topics")} />
          </div>
        </div>
      )}
      {narrow.kind === "all-dms" && (
        <div className="compose-to-row">
          <label htmlFor="compose-to">{t("To")}</label>
          <ul className="recipient-chips" aria-label={t("Recipients")}>
            {recipients.map((id) => (
              <li key={id}>
                {userName(id)}
                <button type="button" aria-label={t("Remove {{name}}", { name: userName(id) })} onClick={() => setRecipients((r) => r.filter((x) => x !== id))}>
                  ×
                </button>
              </li>
            ))}
          </ul>
          <div className="autocomplete-anchor">
            <input
              id="compose-to"
              value={recipientQuery}
              placeholder={t("Add one or more people")}
              role="combobox"
              aria-expanded={recipientAc.set !== null}
              aria-controls={recipientAc.set !== null ? "to-suggestions" : undefined}
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
            <SuggestionList id="to-suggestions" state={recipientAc} label={t("People")} />
          </div>
        </div>
      )}
      <div className="compose-body">
        <label htmlFor="compose-message" className="visually-hidden">
          {t("Message")}
        </label>
        <div className="autocomplete-anchor grow">
          {preview !== null ? (
            <div className="compose-preview rendered_markdown" aria-label={t("Preview")} dangerouslySetInnerHTML={{ __html: preview }} />
          ) : (
            <textarea
              id="compose-message"
              ref={messageRef}
              className="compose-message"
              rows={1}
              placeholder={target?.type === "stream" ? t("Message #{{channel}}", { channel: sub?.name ?? "" }) : t("Message")}
              value={content}
              aria-controls={messageAc.set !== null ? "message-suggestions" : undefined}
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
          <SuggestionList id="message-suggestions" state={messageAc} label={t("Suggestions")} />
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
          <button type="button" className="icon-button" aria-label={t("Upload files")} title={t("Upload files")} onClick={() => fileRef.current?.click()}>
            📎
          </button>
          <button type="button" className="icon-button" aria-pressed={preview !== null} aria-label={t("Preview")} title={t("Preview")} onClick={() => void togglePreview()}>
            👁
          </button>
          <button type="submit" className="primary" disabled={content.trim() === "" || uploading > 0 || !target}>
            {t("Send")}
          </button>
          <button
            type="button"
            className="icon-button"
            aria-label={t("Send later")}
            title={t("Send later")}
            disabled={content.trim() === "" || uploading > 0 || !target}
            onClick={() => {
              if (target?.type === "stream" && !sub) setError(t("You are not subscribed to this channel."));
              else setScheduling(true);
            }}
          >
            ⏰
          </button>
        </div>
      </div>
      <div className="compose-toolbar" role="toolbar" aria-label={t("Formatting")} aria-controls="compose-message">
        {tools.map((tool) => (
          <button
            key={tool.key}
            type="button"
            className={tool.className}
            aria-label={tool.label}
            title={tool.label}
            aria-haspopup={tool.expanded === undefined ? undefined : "dialog"}
            aria-expanded={tool.expanded}
            onMouseDown={(e) => e.preventDefault()}
            onClick={(e) => tool.onClick(e.currentTarget)}
          >
            {tool.icon}
          </button>
        ))}
      </div>
      {popup?.kind === "emoji" && (
        <Popover anchor={popup.anchor} onClose={() => setPopup(null)} label={t("Emoji picker")} role="dialog" className="emoji-popover">
          <Suspense fallback={<p className="emoji-loading">{t("Loading emoji…")}</p>}>
            <EmojiPicker isChosen={() => false} onPick={(emoji) => insertFromToolbar(`:${emoji.emoji_name}: `)} />
          </Suspense>
        </Popover>
      )}
      {popup?.kind === "snippets" && (
        <Popover anchor={popup.anchor} onClose={() => setPopup(null)} label={t("Saved snippets")} role="dialog" className="snippet-popover">
          <SnippetPicker onPick={(text) => insertFromToolbar(text)} initialContent={content.trim()} />
        </Popover>
      )}
      {scheduling && (
        <TimePicker title={t("Schedule message")} kind="send" actionLabel={t("Schedule")} onPick={scheduleAt} onClose={() => setScheduling(false)} />
      )}
      {uploads.some((u) => u.key === key) && (
        <ul className="compose-uploads" aria-label={t("Uploads")}>
          {uploads.filter((u) => u.key === key).map((u) => (
            <li key={u.id}>
              <span className="upload-name">{u.name}</span>
              <progress max={1} value={u.progress} aria-label={t("Uploading {{name}}", { name: u.name })} />
              <button type="button" aria-label={t("Cancel upload of {{name}}", { name: u.name })} onClick={() => u.controller.abort()}>
                {t("Cancel")}
              </button>
            </li>
          ))}
        </ul>
      )}
      {notice !== null && (
        <p className="compose-status" role="status">
          {notice} <a href="#scheduled">{t("View scheduled messages")}</a>
        </p>
      )}
      <ErrorLine error={error} />
    </form>
  );
}
