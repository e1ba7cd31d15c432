// Polls and todo lists drawn from a message's submessages (model/widgets.ts),
// as Zulip's web app shows them in place of the message's text: votes, new
// options, ticks and new tasks go to the server with POST /submessage and
// come back to everyone in `submessage` events.
import { useMemo, useState } from "react";
import { api } from "../api/client.ts";
import type { Message } from "../api/types.ts";
import { allSubmessages, useWidgets, widgetState, type Poll, type TodoList } from "../model/widgets.ts";
import { userName } from "../model/users.ts";

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
  return widget.kind === "poll" ? <PollWidget messageId={message.id} poll={widget} selfId={selfId} /> : <TodoWidget messageId={message.id} todo={widget} />;
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
      <h4 className="poll-question">{poll.question || <span className="widget-placeholder">No question</span>}</h4>
      <ul className="poll-options">
        {poll.options.map((o) => {
          const mine = o.voters.includes(selfId);
          return (
            <li key={o.key}>
              <button
                type="button"
                className={mine ? "poll-vote mine" : "poll-vote"}
                aria-pressed={mine}
                aria-label={`${mine ? "Remove vote for" : "Vote for"} ${o.option} (${o.voters.length} ${o.voters.length === 1 ? "vote" : "votes"})`}
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
        <input value={option} onChange={(e) => setOption(e.target.value)} placeholder="New option" aria-label="New poll option" maxLength={200} />
        <button type="submit" disabled={!option.trim()}>
          Add option
        </button>
      </form>
      {error && (
        <div className="widget-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}

function TodoWidget({ messageId, todo }: { messageId: number; todo: TodoList }) {
  const [task, setTask] = useState("");
  const [desc, setDesc] = useState("");
  const [error, setError] = useState<string | null>(null);
  const add = (e: React.FormEvent) => {
    e.preventDefault();
    const text = task.trim();
    if (!text) return;
    if (todo.tasks.some((t) => t.task === text)) {
      setError(`"${text}" is already on the list.`);
      return;
    }
    setError(null);
    send(messageId, { type: "new_task", key: todo.nextIdx, task: text, desc: desc.trim(), completed: false }, setError);
    setTask("");
    setDesc("");
  };
  return (
    <div className="widget todo-widget">
      <h4 className="todo-title">{todo.title || "Task list"}</h4>
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
        <input value={task} onChange={(e) => setTask(e.target.value)} placeholder="New task" aria-label="New task" maxLength={200} />
        <input value={desc} onChange={(e) => setDesc(e.target.value)} placeholder="Description" aria-label="New task description" maxLength={200} />
        <button type="submit" disabled={!task.trim()}>
          Add task
        </button>
      </form>
      {error && (
        <div className="widget-error" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
