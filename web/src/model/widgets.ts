// Polls and todo lists (Zulip's widgets): the state of a widget is the
// replay, in ID order, of its message's submessages — the first one, from the
// message's sender, says what the widget is ({widget_type, extra_data}); the
// later ones are votes, new options, new tasks, ticks, as Zulip's web app
// sends them (its poll_data / todo_widget protocol). Submessages come with the
// message object and then one by one in `submessage` events, kept here.
import { create } from "zustand";
import type { Submessage } from "../api/types.ts";

interface WidgetsState {
  /** Submessages that arrived by event, by message ID. */
  live: Record<number, Submessage[]>;
}

export const useWidgets = create<WidgetsState>(() => ({ live: {} }));

export const widgetsStore = {
  /** A new event queue: the messages fetched again carry their submessages. */
  reset(): void {
    useWidgets.setState({ live: {} });
  },
  add(sub: Submessage): void {
    useWidgets.setState((s) => {
      const list = s.live[sub.message_id] ?? [];
      if (list.some((x) => x.id === sub.id)) return s;
      return { live: { ...s.live, [sub.message_id]: [...list, sub] } };
    });
  },
};

/** The message's submessages and the live ones, without duplicates, in ID order. */
export function allSubmessages(fromMessage: Submessage[] | undefined, live: Submessage[] | undefined): Submessage[] {
  const byId = new Map<number, Submessage>();
  for (const s of fromMessage ?? []) byId.set(s.id, s);
  for (const s of live ?? []) byId.set(s.id, s);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

function parse(content: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(content);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export interface PollOption {
  key: string;
  option: string;
  voters: number[];
}
export interface Poll {
  kind: "poll";
  authorId: number;
  question: string;
  options: PollOption[];
  /** The idx the next option this user adds takes. */
  nextIdx: number;
}
export interface Task {
  key: string;
  task: string;
  desc: string;
  completed: boolean;
}
export interface TodoList {
  kind: "todo";
  authorId: number;
  title: string;
  tasks: Task[];
  nextIdx: number;
}
/** Zulip's zform (sent by bots in widget_content): buttons, each sending its reply to the conversation. */
export interface ZFormChoice {
  shortName: string;
  longName: string;
  reply: string;
}
export interface ZForm {
  kind: "zform";
  heading: string;
  choices: ZFormChoice[];
}
export type Widget = Poll | TodoList | ZForm;

/** The widget the submessages describe, or null when they describe none this client knows. */
export function widgetState(subs: Submessage[], selfId: number): Widget | null {
  const first = subs[0];
  if (!first || first.msg_type !== "widget") return null;
  const head = parse(first.content);
  const extra = head?.extra_data as Record<string, unknown> | undefined;
  if (!head || !extra) return null;
  const authorId = first.sender_id;
  if (head.widget_type === "poll") {
    const poll: Poll = { kind: "poll", authorId, question: typeof extra.question === "string" ? extra.question : "", options: [], nextIdx: 1 };
    const byKey = new Map<string, PollOption>();
    const addOption = (key: string, option: string) => {
      if (byKey.has(key)) return;
      const o = { key, option, voters: [] };
      byKey.set(key, o);
      poll.options.push(o);
    };
    (Array.isArray(extra.options) ? extra.options : []).forEach((o, i) => typeof o === "string" && addOption(`canned,${i}`, o));
    for (const sub of subs.slice(1)) {
      const d = parse(sub.content);
      if (!d || sub.msg_type !== "widget") continue;
      if (d.type === "new_option" && typeof d.option === "string" && Number.isInteger(d.idx)) {
        const idx = d.idx as number;
        addOption(`${sub.sender_id},${idx}`, d.option);
        if (sub.sender_id === selfId && poll.nextIdx <= idx) poll.nextIdx = idx + 1;
      } else if (d.type === "question" && typeof d.question === "string" && sub.sender_id === authorId) {
        poll.question = d.question;
      } else if (d.type === "vote" && typeof d.key === "string") {
        const o = byKey.get(d.key);
        if (!o) continue;
        o.voters = o.voters.filter((id) => id !== sub.sender_id);
        if (d.vote === 1) o.voters.push(sub.sender_id);
      }
    }
    return poll;
  }
  if (head.widget_type === "todo") {
    const todo: TodoList = { kind: "todo", authorId, title: typeof extra.task_list_title === "string" ? extra.task_list_title : "", tasks: [], nextIdx: 1 };
    const byKey = new Map<string, Task>();
    const addTask = (key: string, task: string, desc: string, completed: boolean) => {
      if (byKey.has(key) || todo.tasks.some((t) => t.task === task)) return;
      const t = { key, task, desc, completed };
      byKey.set(key, t);
      todo.tasks.push(t);
    };
    (Array.isArray(extra.tasks) ? extra.tasks : []).forEach((t: { task?: unknown; desc?: unknown }, i) => {
      if (t && typeof t.task === "string") addTask(`${i},canned`, t.task, typeof t.desc === "string" ? t.desc : "", false);
    });
    for (const sub of subs.slice(1)) {
      const d = parse(sub.content);
      if (!d || sub.msg_type !== "widget") continue;
      if (d.type === "new_task" && Number.isInteger(d.key) && typeof d.task === "string") {
        const idx = d.key as number;
        addTask(`${idx},${sub.sender_id}`, d.task, typeof d.desc === "string" ? d.desc : "", d.completed === true);
        if (sub.sender_id === selfId && todo.nextIdx <= idx) todo.nextIdx = idx + 1;
      } else if (d.type === "strike" && typeof d.key === "string") {
        const t = byKey.get(d.key);
        if (t) t.completed = !t.completed;
      } else if (d.type === "new_task_list_title" && typeof d.title === "string" && sub.sender_id === authorId) {
        todo.title = d.title;
      }
    }
    return todo;
  }
  if (head.widget_type === "zform" && extra.type === "choices" && Array.isArray(extra.choices)) {
    const choices: ZFormChoice[] = [];
    for (const c of extra.choices as Record<string, unknown>[]) {
      if (c && typeof c.short_name === "string" && typeof c.long_name === "string" && typeof c.reply === "string") {
        choices.push({ shortName: c.short_name, longName: c.long_name, reply: c.reply });
      }
    }
    return { kind: "zform", heading: typeof extra.heading === "string" ? extra.heading : "", choices };
  }
  return null;
}
