// Polls, todo lists and bots' zforms drawn from a message's submessages
// (model/widgets.ts), as Zulip's web app shows them in place of the message's
// text: votes, new options, ticks, new tasks and the author's new question or
// title go to the server with POST /submessage and come back to everyone in
// `submessage` events; a zform's button sends its reply to the conversation.
import { useMemo, useState } from "react";
import { api } from "../api/client.ts";
import type { Message } from "../api/types.ts";
import { useConnection } from "../model/connection.ts";
import { messagesStore } from "../model/messages.ts";
import { dmParticipants } from "../model/narrow.ts";
import { allSubmessages, useWidgets, widgetState, type Poll, type TodoList, type ZForm } from "../model/widgets.ts";
import { userName } from "../model/users.ts";
import { InlineEditForm } from "./InlineEdit.tsx";
import { t } from "../i18n.ts";

function send(messageId: number, data: Record<string, unknown>, onError: (msg: string) => void): void {
  api.post("/submessage", { message_id: messageId, msg_type: "widget", content: JSON.stringify(data) }).catch((e: Error) => onError(e.message));
}

/** The widget of a message, or null (then the message's text shows). */
export function useWidget(message: Message, selfId: number) {
  const live = useWidgets((s) => s.live[message.id]);
  return useMemo(() => (message.submessages?.length || live ? widgetState(allSubmessages(message.submessages, live), selfId) : null), [message.submessages, live, selfId]);
}

/** The message's widget in place of its text (children) when it has one. */
export function MessageWidget({ message, selfId, children }: { message: Message; selfId: number; children: React.ReactNode }) {
  const widget = useWidget(message, selfId);
  if (!widget) return children;
  if (widget.kind === "poll") return <PollWidget messageId={message.id} poll={widget} selfId={selfId} />;
  if (widget.kind === "todo") return <TodoWidget messageId={message.id} todo={widget} selfId={selfId} />;
  return <ZFormWidget message={message} form={widget} selfId={selfId} />;
}

/** The author's heading (a poll's question, a list's title), editable in place by the author alone. */
/** `label` names the field, `editLabel` the button that opens it. */
function EditableHeading({ text, placeholder, label, editLabel, canEdit, onSave, className }: { text: string; placeholder: string; label: string; editLabel: string; canEdit: boolean; onSave: (text: string) => void; className: string }) {
  const [editing, setEditing] = useState(false);
  if (!editing) {
    return (
      <div className="widget-heading">
        <h4 className={className}>{text || <span className="widget-placeholder">{placeholder}</span>}</h4>
        {canEdit && (
          <button type="button" className="widget-edit" aria-label={editLabel} title={editLabel} onClick={() => setEditing(true)}>
            ✎
          </button>
        )}
      </div>
    );
  }
  const save = (value: string) => {
    const next = value.trim();
    if (next && next !== text) onSave(next);
    setEditing(false);
  };
  return <InlineEditForm className="widget-heading editing" initial={text} label={label} maxLength={200} onSave={save} onCancel={() => setEditing(false)} />;
}

/** Zulip's zform: a heading and a button per choice; a click sends the choice's reply where the message is. */
function ZFormWidget({ message, form, selfId }: { message: Message; form: ZForm; selfId: number }) {
  const choose = (reply: string) => {
    const queueId = useConnection.getState().queueId;
    if (message.type === "stream" && message.stream_id !== undefined) {
      const streamName = typeof message.display_recipient === "string" ? message.display_recipient : "";
      // As Zulip's reply_message: in a channel the reply mentions the bot, which is what makes it answer.
      const content = `@**${message.sender_full_name}|${message.sender_id}** ${reply}`;
      void messagesStore.send({ type: "stream", streamId: message.stream_id, streamName, topic: message.subject }, content, queueId);
    } else {
      void messagesStore.send({ type: "private", userIds: dmParticipants(message, selfId) }, reply, queueId);
    }
  };
  return (
    <div className="widget zform-widget">
      {form.heading && <h4 className="zform-heading">{form.heading}</h4>}
      <div className="zform-choices">
        {form.choices.map((c, i) => (
          <button type="button" key={i} className="zform-choice" onClick={() => choose(c.reply)}>
            <span className="zform-short">{c.shortName}</span> {c.longName}
          </button>
        ))}
      </div>
    </div>
  );
}

/** Why a vote, option or task did not go through. */
function WidgetError({ error }: { error: string | null }) {
  return error ? (
    <div className="widget-error" role="alert">
      {error}
    </div>
  ) : null;
}

function PollWidget({ messageId, poll, selfId }: { messageId: number; poll: Poll; selfId: number }) {
  const [option, setOption] = useState("");
  const [error, setError] = useState<string | null>(null);
  const add = (e: React.FormEvent) => {
    e.preventDefault();
    const text = option.trim();
    if (!text || poll.options.some((o) => o.option === text)) return;
    send(messageId, { type: "new_option", idx: poll.nextIdx, option: text }, setError);
    setOption("");
  };
  return (
    <div className="widget poll-widget">
      <EditableHeading
        className="poll-question"
        text={poll.question}
        placeholder={t("No question")}
        label={t("Poll question")}
        editLabel={t("Edit poll question")}
        canEdit={poll.authorId === selfId}
        onSave={(question) => send(messageId, { type: "question", question }, setError)}
      />
      <ul className="poll-options">
        {poll.options.map((o) => {
          const mine = o.voters.includes(selfId);
          return (
            <li key={o.key}>
              <button
                type="button"
                className={mine ? "poll-vote mine" : "poll-vote"}
                aria-pressed={mine}
                aria-label={mine ? t("Remove vote for {{option}} ({{count}} votes)", { option: o.option, count: o.voters.length, defaultValue_one: "Remove vote for {{option}} ({{count}} vote)" }) : t("Vote for {{option}} ({{count}} votes)", { option: o.option, count: o.voters.length, defaultValue_one: "Vote for {{option}} ({{count}} vote)" })}
                onClick={() => send(messageId, { type: "vote", key: o.key, vote: mine ? -1 : 1 }, setError)}
              >
                {o.voters.length}
              </button>
              <span className="poll-option">{o.option}</span>
              {o.voters.length > 0 && <span className="poll-voters">({o.voters.map(userName).join(", ")})</span>}
            </li>
          );
        })}
      </ul>
      <form className="widget-add" onSubmit={add}>
        <input value={option} onChange={(e) => setOption(e.target.value)} placeholder={t("New option")} aria-label={t("New poll option")} maxLength={200} />
        <button type="submit" disabled={!option.trim()}>
          {t("Add option")}
        </button>
      </form>
      <WidgetError error={error} />
    </div>
  );
}

function TodoWidget({ messageId, todo, selfId }: { messageId: number; todo: TodoList; selfId: number }) {
  const [task, setTask] = useState("");
  const [desc, setDesc] = useState("");
  const [error, setError] = useState<string | null>(null);
  const add = (e: React.FormEvent) => {
    e.preventDefault();
    const text = task.trim();
    if (!text) return;
    if (todo.tasks.some((t) => t.task === text)) {
      setError(t("“{{task}}” is already on the list.", { task: text }));
      return;
    }
    setError(null);
    send(messageId, { type: "new_task", key: todo.nextIdx, task: text, desc: desc.trim(), completed: false }, setError);
    setTask("");
    setDesc("");
  };
  return (
    <div className="widget todo-widget">
      <EditableHeading
        className="todo-title"
        text={todo.title}
        placeholder={t("Task list")}
        label={t("Task list title")}
        editLabel={t("Edit task list title")}
        canEdit={todo.authorId === selfId}
        onSave={(title) => send(messageId, { type: "new_task_list_title", title }, setError)}
      />
      <ul className="todo-tasks">
        {todo.tasks.map((t) => (
          <li key={t.key} className={t.completed ? "done" : undefined}>
            <label>
              <input type="checkbox" checked={t.completed} onChange={() => send(messageId, { type: "strike", key: t.key }, setError)} />
              <span className="todo-task">
                <strong>{t.task}</strong>
                {t.desc && <span className="todo-desc">: {t.desc}</span>}
              </span>
            </label>
          </li>
        ))}
      </ul>
      <form className="widget-add" onSubmit={add}>
        <input value={task} onChange={(e) => setTask(e.target.value)} placeholder={t("New task")} aria-label={t("New task")} maxLength={200} />
        <input value={desc} onChange={(e) => setDesc(e.target.value)} placeholder={t("Description")} aria-label={t("New task description")} maxLength={200} />
        <button type="submit" disabled={!task.trim()}>
          {t("Add task")}
        </button>
      </form>
      <WidgetError error={error} />
    </div>
  );
}
