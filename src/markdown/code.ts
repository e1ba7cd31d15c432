// Code blocks: Zulip's `<div class="codehilite" data-code-language="…"><pre>` markup,
// highlighted with highlight.js. Zulip uses Pygments; we map highlight.js
// scopes onto Pygments' short token classes (k, s, nf, …) so that the
// `.codehilite` styles of Zulip clients apply. `data-code-language` carries
// the Pygments lexer name ("Python", "JavaScript", "TeX", …) because clients
// match realm code playgrounds on it.

import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import type { HLJSApi } from "highlight.js";

const require = createRequire(import.meta.url);
const HLJS_LANGUAGE_DIR = dirname(require.resolve("highlight.js/lib/languages/python"));
const HLJS_MODULES = new Set(
  readdirSync(HLJS_LANGUAGE_DIR)
    .filter((f) => f.endsWith(".js") && !f.endsWith(".js.js"))
    .map((f) => f.slice(0, -3)),
);

// Alias (lowercase, as typed after the fence) -> [Pygments lexer name, highlight.js module].
const LANGUAGES: Record<string, readonly [string, string | null]> = {};
function lang(pygments: string, hljsModule: string | null, aliases: string[]): void {
  for (const a of aliases) LANGUAGES[a] = [pygments, hljsModule];
}
lang("Python", "python", ["python", "py", "py3", "python3", "sage", "bazel", "starlark", "pyw", "pyi"]);
lang("Python 2.x", "python", ["python2", "py2"]);
lang("Python console session", "python-repl", ["pycon", "python-console"]);
lang("JavaScript", "javascript", ["javascript", "js", "mjs", "cjs"]);
lang("TypeScript", "typescript", ["typescript", "ts"]);
lang("JSX", "javascript", ["jsx", "react"]);
lang("TSX", "typescript", ["tsx"]);
lang("JSON", "json", ["json", "json-object"]);
lang("YAML", "yaml", ["yaml", "yml"]);
lang("TOML", "ini", ["toml"]);
lang("INI", "ini", ["ini", "cfg", "dosini"]);
lang("HTML", "xml", ["html", "htm", "xhtml"]);
lang("XML", "xml", ["xml", "xsl", "rss"]);
lang("CSS", "css", ["css"]);
lang("SCSS", "scss", ["scss"]);
lang("Sass", "scss", ["sass"]);
lang("LessCss", "less", ["less"]);
lang("Bash", "bash", ["bash", "sh", "ksh", "zsh", "shell", "openrc"]);
lang("Bash Session", "shell", ["console", "shell-session"]);
lang("PowerShell", "powershell", ["powershell", "pwsh", "posh", "ps1", "psm1"]);
lang("Batchfile", "dos", ["batch", "bat", "dosbatch", "winbatch", "cmd"]);
lang("C", "c", ["c", "h"]);
lang("C++", "cpp", ["c++", "cpp", "hpp", "cxx"]);
lang("C#", "csharp", ["csharp", "c#", "cs"]);
lang("Objective-C", "objectivec", ["objective-c", "objectivec", "obj-c", "objc"]);
lang("Java", "java", ["java"]);
lang("Kotlin", "kotlin", ["kotlin", "kt"]);
lang("Scala", "scala", ["scala"]);
lang("Groovy", "groovy", ["groovy"]);
lang("Go", "go", ["go", "golang"]);
lang("Rust", "rust", ["rust", "rs"]);
lang("Swift", "swift", ["swift"]);
lang("Ruby", "ruby", ["ruby", "rb", "duby"]);
lang("PHP", "php", ["php", "php3", "php4", "php5"]);
lang("Perl", "perl", ["perl", "pl"]);
lang("Lua", "lua", ["lua"]);
lang("R", "r", ["splus", "s", "r"]);
lang("Haskell", "haskell", ["haskell", "hs"]);
lang("Elixir", "elixir", ["elixir", "ex", "exs"]);
lang("Erlang", "erlang", ["erlang"]);
lang("Clojure", "clojure", ["clojure", "clj"]);
lang("OCaml", "ocaml", ["ocaml"]);
lang("F#", "fsharp", ["fsharp", "f#"]);
lang("Dart", "dart", ["dart"]);
lang("Julia", "julia", ["julia", "jl"]);
lang("Matlab", "matlab", ["matlab"]);
lang("Fortran", "fortran", ["fortran", "f90"]);
lang("Elm", "elm", ["elm"]);
lang("Nix", "nix", ["nixos", "nix"]);
lang("Scheme", "scheme", ["scheme", "scm"]);
lang("Common Lisp", "lisp", ["common-lisp", "cl", "lisp"]);
lang("Racket", "scheme", ["racket", "rkt"]);
lang("SQL", "sql", ["sql"]);
lang("PostgreSQL SQL dialect", "pgsql", ["postgresql", "postgres"]);
lang("MySQL", "sql", ["mysql"]);
lang("GraphQL", "graphql", ["graphql"]);
lang("Protocol Buffer", "protobuf", ["protobuf", "proto"]);
lang("Docker", "dockerfile", ["docker", "dockerfile"]);
lang("Makefile", "makefile", ["make", "makefile", "mf", "bsdmake"]);
lang("CMake", "cmake", ["cmake"]);
lang("Nginx configuration file", "nginx", ["nginx"]);
lang("Diff", "diff", ["diff", "udiff", "patch"]);
lang("Markdown", "markdown", ["markdown", "md"]);
lang("reStructuredText", null, ["restructuredtext", "rst", "rest"]);
lang("TeX", "latex", ["tex", "latex"]);
lang("Text only", null, ["text"]);
lang("VB.net", "vbnet", ["vb.net", "vbnet", "lobas", "oobas", "sobas"]);
lang("Verilog", "verilog", ["verilog", "v"]);
lang("VHDL", "vhdl", ["vhdl"]);
lang("Prolog", "prolog", ["prolog"]);
lang("CoffeeScript", "coffeescript", ["coffeescript", "coffee-script", "coffee"]);
lang("Vim Script", "vim", ["vim"]);
lang("Zig", null, ["zig"]);
lang("Solidity", null, ["solidity"]);
lang("Terraform", null, ["terraform", "tf", "hcl"]);
lang("HTTP", "http", ["http"]);
lang("Awk", "awk", ["awk", "gawk", "mawk", "nawk"]);
lang("Tcl", "tcl", ["tcl"]);
lang("Crystal", "crystal", ["cr", "crystal"]);
lang("D", "d", ["d"]);
lang("Delphi", "delphi", ["delphi", "pas", "pascal", "objectpascal"]);
lang("Gradle", "gradle", ["gradle"]);
lang("Smalltalk", "smalltalk", ["smalltalk", "squeak", "st"]);
lang("Standard ML", "sml", ["sml"]);
lang("Nim", "nim", ["nimrod", "nim"]);

// highlight.js scope -> Pygments short class.
const SCOPE_TO_PYGMENTS: Record<string, string> = {
  keyword: "k", built_in: "nb", type: "kt", literal: "kc", number: "m", operator: "o",
  punctuation: "p", property: "py", regexp: "sr", string: "s", "char.escape": "se",
  subst: "si", symbol: "ss", variable: "nv", "variable.language": "bp",
  "variable.constant": "no", title: "nx", "title.class": "nc", "title.class.inherited": "nc",
  "title.function": "nf", "title.function.invoke": "nf", params: "n", comment: "c1",
  doctag: "sd", meta: "cp", "meta.keyword": "cp", "meta.string": "cpf", section: "gh",
  tag: "nt", name: "nt", attr: "na", attribute: "na", "selector-tag": "nt",
  "selector-id": "nn", "selector-class": "nc", "selector-attr": "na",
  "selector-pseudo": "nd", addition: "gi", deletion: "gd", emphasis: "ge", strong: "gs",
  bullet: "m", code: "s", link: "nl", quote: "c1", "template-tag": "k",
  "template-variable": "nv",
};

let hljs: HLJSApi | null = null;
const loaded = new Map<string, boolean>();

function highlighter(module: string): HLJSApi | null {
  if (!HLJS_MODULES.has(module)) return null;
  let ok = loaded.get(module);
  if (ok === undefined) {
    hljs ??= require("highlight.js/lib/core") as HLJSApi;
    try {
      // Languages are loaded on first use: importing all of highlight.js costs ~100 ms.
      hljs.registerLanguage(module, require(`${HLJS_LANGUAGE_DIR}/${module}.js`));
      ok = true;
    } catch {
      ok = false;
    }
    loaded.set(module, ok);
  }
  return ok ? hljs : null;
}

export function escapeCode(text: string, escapeQuotes: boolean): string {
  let out = text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  if (escapeQuotes) out = out.replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  return out;
}

function pygmentsSpans(html: string, escapeQuotes: boolean): string {
  let out = html.replace(/<span class="hljs-([^"]*)">/g, (_m, scope: string) => {
    const key = scope.replace(/_+/g, "").split(" ").join(".");
    const cls = SCOPE_TO_PYGMENTS[key] ?? SCOPE_TO_PYGMENTS[key.split(".")[0]!] ?? "n";
    return `<span class="${cls}">`;
  });
  out = escapeQuotes
    ? out.replace(/&#x27;/g, "&#39;")
    : out.replace(/&quot;/g, '"').replace(/&#x27;/g, "'");
  return out;
}

// First line like `#!python` or `:::python` names the language of a block
// without one (Python-Markdown's CodeHilite header; the line is kept).
const SHEBANG_RE = /^(?:(?:::+)|#!)((?:\/\w+)*[/ ])?([\w#.+-]*)/;

// Leading and trailing newlines dropped. (/\n+$/ retries from every newline
// of a long run inside the code: quadratic.)
function trimNewlines(code: string): string {
  let start = 0;
  let end = code.length;
  while (start < end && code.charCodeAt(start) === 0x0a) start++;
  while (end > start && code.charCodeAt(end - 1) === 0x0a) end--;
  return start === 0 && end === code.length ? code : code.slice(start, end);
}

/**
 * Render a code block. `lang` is the lowercased word after the fence, or
 * null. Returns the `<div class="codehilite">…</div>` HTML (no trailing newline).
 */
export function renderCodeBlock(code: string, lang: string | null): string {
  const text = trimNewlines(code);
  let highlightLang = lang;
  if (!lang) {
    const m = SHEBANG_RE.exec(text);
    if (m && m[2]) highlightLang = m[2].toLowerCase();
  }
  // Pygments escapes quotes; a block with a language is re-serialized by
  // lxml in Zulip, which leaves quotes bare.
  const escapeQuotes = !lang;
  let body: string | null = null;
  if (highlightLang) {
    const entry = LANGUAGES[highlightLang];
    const module = entry ? entry[1] : highlightLang;
    const hl = module ? highlighter(module) : null;
    if (hl && hl.getLanguage(module!)) {
      try {
        body = pygmentsSpans(hl.highlight(text, { language: module!, ignoreIllegals: true }).value, escapeQuotes);
      } catch {
        body = null;
      }
    }
  }
  body ??= escapeCode(text, escapeQuotes);
  let attrs = ' class="codehilite"';
  if (lang) {
    const name = LANGUAGES[lang]?.[0] ?? lang;
    attrs += ` data-code-language="${escapeCode(name, true).replace(/&#39;/g, "'")}"`;
  }
  return `<div${attrs}><pre><span></span><code>${body}\n</code></pre></div>`;
}
