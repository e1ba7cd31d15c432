// Adversarial Markdown texts: each function makes a text of about n
// characters built to hit a rule where it could look ahead (rescans from
// every comma, backtick, "<time:", nested brackets or fences…). Used by
// test/markdown-linear.test.ts and bench/render.ts.

/** `unit` repeated to exactly n characters. */
export function repeat(unit: string, n: number): string {
  return unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
}

/** Pieces joined until the text is n characters long (cut at n). */
function build(n: number, piece: (i: number) => string): string {
  let out = "";
  for (let i = 0; out.length < n; i++) out += piece(i);
  return out.slice(0, n);
}

// Each makes a text of n characters (a few add a short tail).
export const ADVERSARIAL: Record<string, (n: number) => string> = {
  "commas": (n) => repeat("a,", n),
  "words and commas": (n) => repeat("word,", n),
  "commas around domains": (n) => repeat("a.b,", n),
  "commas around scheme fragments": (n) => repeat("x,http:", n),
  "commas and spaces": (n) => repeat("a, ", n),
  "http:// repeated": (n) => repeat("http://", n),
  "long URL host": (n) => "https://" + repeat("a", n - 12) + ".com",
  "long URL path of dots": (n) => "http://a.com/" + repeat(".", n - 14) + "x",
  "long URL path of punctuation": (n) => "http://a.com/" + repeat("!,.;:'?", n - 14) + "x",
  "URL with open parentheses": (n) => "http://a.com/" + repeat("(", n - 13),
  "URLs with unbalanced paths": (n) => repeat("http://a.com/(x ", n),
  "e-mail fragments": (n) => repeat("a.b@", n),
  "nested [": (n) => repeat("[", n),
  "nested [ with a link at the end": (n) => repeat("[", n - 4) + "](x)",
  "unfinished links": (n) => repeat("[a](", n),
  "images": (n) => repeat("![a](", n),
  "nested (": (n) => repeat("(", n),
  "backtick runs of growing length": (n) => build(n, (i) => "`".repeat(i + 1) + " "),
  "backtick runs of varying length": (n) => build(n, (i) => "`".repeat((i % 60) + 1) + "a"),
  "escaped backticks": (n) => repeat("\\`a", n),
  "unclosed code spans": (n) => repeat("`a ", n),
  "* emphasis": (n) => repeat("*a ", n),
  "** emphasis": (n) => repeat("**a ", n),
  "*** emphasis": (n) => repeat("***a ", n / 2) + repeat(" a***", n / 2),
  "nested emphasis over a line break": (n) => repeat("*a ", n / 2) + "\n" + repeat("a* ", n / 2),
  "star runs": (n) => repeat("*", n / 2) + "a" + repeat("*", n / 2),
  "_ emphasis": (n) => repeat("_a ", n),
  "~~ strikethrough": (n) => repeat("~~a ", n),
  "~ runs": (n) => repeat("~", n),
  "$$ TeX fragments": (n) => repeat("$$a ", n),
  "unclosed $$": (n) => "$$" + repeat("a\\$", n - 2),
  "$ runs": (n) => repeat("$", n),
  ":emoji fragments": (n) => repeat(":smile", n),
  ":emoji: names": (n) => repeat(":a", n),
  "emoticons": (n) => repeat(":) ", n),
  "Unicode emoji": (n) => repeat("😀", n),
  "ZWJ sequences": (n) => repeat("👨\u200d", n),
  "many mentions": (n) => repeat("@**King Hamlet** ", n),
  "unclosed mentions": (n) => repeat("@**a ", n),
  "@* runs": (n) => repeat("@*", n),
  "many channel links": (n) => repeat("#**Denmark** ", n),
  "unclosed topic links": (n) => repeat("#**a>", n),
  "<time: fragments": (n) => repeat("<time:", n),
  "<time: with words": (n) => repeat("<time:a ", n),
  "times": (n) => repeat("<time:2024-05-01T10:00:00Z> ", n),
  "> nesting on one line": (n) => repeat("> ", n - 1) + "x",
  "> lines": (n) => repeat(">\n", n),
  "quote fences nested": (n) => repeat("```quote\n", n),
  "spoiler fences nested": (n) => repeat("```spoiler h\n", n),
  "fence line with a stray backtick": (n) => "```" + repeat("a", n - 4) + "`",
  "code block of blank lines": (n) => "```\na" + repeat("\n", n - 10) + "a\n```",
  "list nesting": (n) => build(n, (i) => " ".repeat(2 * (i % 100)) + "* a\n"),
  "ordered list": (n) => repeat("1. a\n", n),
  "headings": (n) => repeat("# a\n", n),
  "table": (n) => "a|b\n-|-\n" + repeat("|a|b\n", n - 8),
  "&": (n) => repeat("&", n),
  "mixed markup": (n) => repeat("a,[*`~~$$:@**#**<time:(http://", n),
};
