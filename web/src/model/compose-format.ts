// The compose box's formatting buttons, as Zulip's compose_format: each wraps
// the selection in its syntax, or inserts the syntax with the caret (or a
// placeholder, selected) where the text goes. Pure: text and selection in,
// text and selection out.

export type FormatKind = "bold" | "italic" | "link" | "code" | "quote" | "math" | "spoiler" | "poll" | "todo";

export interface Edit {
  value: string;
  start: number;
  end: number;
}

/** `before` + selection + `after` in place of the selection; the selection stays on the wrapped text (or `placeholder`, put there when nothing was selected). */
function wrap(edit: Edit, before: string, after: string, placeholder = ""): Edit {
  const selected = edit.value.slice(edit.start, edit.end);
  // A selection already wrapped in this syntax is unwrapped, as Zulip's buttons toggle.
  if (selected !== "" && edit.value.slice(edit.start - before.length, edit.start) === before && edit.value.slice(edit.end, edit.end + after.length) === after && !boldNotItalic(edit, before)) {
    const value = edit.value.slice(0, edit.start - before.length) + selected + edit.value.slice(edit.end + after.length);
    return { value, start: edit.start - before.length, end: edit.end - before.length };
  }
  const inner = selected === "" ? placeholder : selected;
  const value = edit.value.slice(0, edit.start) + before + inner + after + edit.value.slice(edit.end);
  const start = edit.start + before.length;
  return { value, start, end: start + inner.length };
}

/** Italic's "*" next to the selection is part of bold's "**" (and not of "***", bold and italic): not italic to remove. */
function boldNotItalic(edit: Edit, marker: string): boolean {
  if (marker !== "*") return false;
  let run = 0;
  while (edit.value[edit.start - 1 - run] === "*") run += 1;
  return run % 2 === 0;
}

/** A block on lines of its own: a newline is added before and after where the text does not already break there. */
function block(edit: Edit, before: string, after: string, placeholder = ""): Edit {
  const lead = edit.start > 0 && edit.value[edit.start - 1] !== "\n" ? "\n" : "";
  const trail = edit.end < edit.value.length && edit.value[edit.end] !== "\n" ? "\n" : "";
  return wrap(edit, lead + before, after + trail, placeholder);
}

export function applyFormat(kind: FormatKind, edit: Edit): Edit {
  const selected = edit.value.slice(edit.start, edit.end);
  const multiline = selected.includes("\n");
  switch (kind) {
    case "bold":
      return wrap(edit, "**", "**");
    case "italic":
      return wrap(edit, "*", "*");
    case "link": {
      // The selection becomes the link's text and "url" is selected, to be typed over.
      const text = selected;
      const value = `${edit.value.slice(0, edit.start)}[${text}](url)${edit.value.slice(edit.end)}`;
      const start = edit.start + text.length + 3;
      return { value, start, end: start + 3 };
    }
    case "code":
      return multiline ? block(edit, "```\n", "\n```") : wrap(edit, "`", "`");
    case "quote":
      return block(edit, "```quote\n", "\n```");
    case "math":
      return multiline ? block(edit, "```math\n", "\n```") : wrap(edit, "$$", "$$");
    case "spoiler":
      return block(edit, "```spoiler Header\n", "\n```");
    case "poll":
      return block(edit, "/poll ", "\nOption 1\nOption 2", "Question");
    case "todo":
      return block(edit, "/todo ", "\nTask 1: description\nTask 2: description", "Task list");
  }
}

/** `text` put in place of the selection; the caret after it. */
export function insertAt(edit: Edit, text: string): Edit {
  const value = edit.value.slice(0, edit.start) + text + edit.value.slice(edit.end);
  const caret = edit.start + text.length;
  return { value, start: caret, end: caret };
}
