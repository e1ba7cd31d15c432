// Zulip's only_events / exclude_events filters match event types with
// Python's fnmatch.fnmatch (case-sensitive on the Linux servers Zulip runs
// on). This is CPython's fnmatch.translate (3.12's; 3.11's builds the same
// sets) read token by token: `*`, `?`, `[seq]`, `[!seq]`, a `]` first in a
// set is literal, an unclosed `[` is a literal `[`, a range whose ends are
// out of order (`z-a`) is dropped, a set left empty never matches, and a
// negated one left empty (`[!z-a]`) matches any character. No regular
// expression is built: Python joins the pieces between stars with atomic
// groups, `(?>.*?piece)`, which JavaScript lacks, and a plain `.*` per star
// backtracks polynomially on an attacker's `*a*a*a*…*b`. Each piece has a
// fixed length (one character per token), so taking its earliest occurrence,
// as the atomic group does, is also what a full search would find; matching
// costs at most (name length × pattern length) steps, with no backtracking.

type Token =
  /** One given code point. */
  | { kind: "char"; codePoint: number }
  /** `?`, and a negated set left empty: any code point. */
  | { kind: "any" }
  /** `[…]`: code point ranges, inclusive, or anything but them. */
  | { kind: "set"; negate: boolean; ranges: [number, number][] }
  /** A set left empty (`[z-a]`): Python's `(?!)`, which nothing matches. */
  | { kind: "never" };

const STAR = "star";
type Part = Token | typeof STAR;

const cp = (ch: string): number => ch.codePointAt(0)!;

/**
 * The set body `stuff` exactly as fnmatch.translate writes it between `[` and
 * `]` (backslashes, set-operation characters and non-range hyphens escaped),
 * from the pattern's code points `pat[i:j]`.
 */
function pythonSetBody(pat: string[], start: number, j: number): string {
  let i = start;
  let stuff: string;
  const inner = pat.slice(i, j);
  if (!inner.includes("-")) {
    stuff = inner.join("").replace(/\\/g, "\\\\");
  } else {
    const chunks: string[][] = [];
    let k = pat[i] === "!" ? i + 2 : i + 1;
    for (;;) {
      k = indexIn(pat, "-", k, j);
      if (k < 0) break;
      chunks.push(pat.slice(i, k));
      i = k + 1;
      k = k + 3;
    }
    const chunk = pat.slice(i, j);
    if (chunk.length > 0) chunks.push(chunk);
    else chunks[chunks.length - 1]!.push("-");
    // Remove empty ranges -- invalid in RE (CPython's comment).
    for (let m = chunks.length - 1; m > 0; m--) {
      const before = chunks[m - 1]!;
      const after = chunks[m]!;
      if (cp(before[before.length - 1]!) > cp(after[0]!)) {
        chunks[m - 1] = [...before.slice(0, -1), ...after.slice(1)];
        chunks.splice(m, 1);
      }
    }
    stuff = chunks.map((c) => c.join("").replace(/\\/g, "\\\\").replace(/-/g, "\\-")).join("-");
  }
  return stuff.replace(/[&~|]/g, "\\$&");
}

/** Python's str.find(sub, start, end) over code points. */
function indexIn(pat: string[], ch: string, start: number, end: number): number {
  for (let k = Math.max(start, 0); k < end; k++) if (pat[k] === ch) return k;
  return -1;
}

/**
 * How Python's regular-expression parser reads `[stuff]` as translate emits
 * it: escaped characters are literal, `a-b` a range. translate has already
 * dropped out-of-order ranges, so re.compile never refuses what it emits
 * (nothing fnmatch accepts fails to compile), and neither does this.
 */
function setToken(stuff: string): Token {
  if (stuff === "") return { kind: "never" };
  if (stuff === "!") return { kind: "any" };
  const negate = stuff.startsWith("!");
  // A leading `^` or `[` is escaped by translate; here every character is read as a literal anyway.
  const chars = [...(negate ? stuff.slice(1) : stuff)];
  const atoms: { codePoint: number; hyphen: boolean }[] = [];
  for (let i = 0; i < chars.length; i++) {
    if (chars[i] === "\\") atoms.push({ codePoint: cp(chars[++i]!), hyphen: false });
    else atoms.push({ codePoint: cp(chars[i]!), hyphen: chars[i] === "-" });
  }
  const ranges: [number, number][] = [];
  for (let a = 0; a < atoms.length; a++) {
    const low = atoms[a]!.codePoint;
    const dash = atoms[a + 1];
    const high = atoms[a + 2];
    if (dash?.hyphen && high !== undefined) {
      ranges.push([low, high.codePoint]);
      a += 2;
    } else ranges.push([low, low]);
  }
  return { kind: "set", negate, ranges };
}

/** fnmatch._translate: the pattern's tokens, with consecutive stars as one. */
function translate(pattern: string): Part[] {
  const pat = [...pattern];
  const n = pat.length;
  const parts: Part[] = [];
  let i = 0;
  while (i < n) {
    const c = pat[i]!;
    i += 1;
    if (c === "*") {
      if (parts[parts.length - 1] !== STAR) parts.push(STAR);
    } else if (c === "?") {
      parts.push({ kind: "any" });
    } else if (c === "[") {
      let j = i;
      if (j < n && pat[j] === "!") j += 1;
      if (j < n && pat[j] === "]") j += 1;
      while (j < n && pat[j] !== "]") j += 1;
      if (j >= n) parts.push({ kind: "char", codePoint: cp("[") });
      else {
        parts.push(setToken(pythonSetBody(pat, i, j)));
        i = j + 1;
      }
    } else parts.push({ kind: "char", codePoint: cp(c) });
  }
  return parts;
}

function tokenMatches(token: Token, codePoint: number): boolean {
  switch (token.kind) {
    case "char":
      return token.codePoint === codePoint;
    case "any":
      return true;
    case "never":
      return false;
    case "set":
      return token.ranges.some(([low, high]) => codePoint >= low && codePoint <= high) !== token.negate;
  }
}

/** A compiled fnmatch pattern. */
export class FnmatchPattern {
  /** The tokens between stars: the first and last are anchored at the name's start and end. */
  readonly #pieces: Token[][];
  readonly #starred: boolean;

  constructor(readonly pattern: string) {
    const parts = translate(pattern);
    this.#starred = parts.includes(STAR);
    this.#pieces = [[]];
    for (const part of parts) {
      if (part === STAR) this.#pieces.push([]);
      else this.#pieces[this.#pieces.length - 1]!.push(part);
    }
  }

  /** fnmatch.fnmatchcase(name, pattern). */
  matches(name: string): boolean {
    const text = Array.from(name, cp);
    const at = (piece: Token[], start: number) => piece.every((token, k) => tokenMatches(token, text[start + k]!));
    const first = this.#pieces[0]!;
    if (first.length > text.length || !at(first, 0)) return false;
    if (!this.#starred) return first.length === text.length;
    let position = first.length;
    // Between stars: the earliest place each piece fits (Python's `(?>.*?piece)`).
    for (const piece of this.#pieces.slice(1, -1)) {
      let found = -1;
      for (let start = position; start + piece.length <= text.length; start++) {
        if (at(piece, start)) {
          found = start;
          break;
        }
      }
      if (found < 0) return false;
      position = found + piece.length;
    }
    // After the last star: `.*piece\Z`.
    const last = this.#pieces[this.#pieces.length - 1]!;
    const start = text.length - last.length;
    return start >= position && at(last, start);
  }
}
