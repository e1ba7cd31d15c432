// The Markdown renderer (src/markdown/): Zulip's own Markdown test table as a
// ratchet, then our own table of inputs -> exact HTML and RenderedMessage
// flags (mentions, wildcards, uploads, /me, links, XSS), then the helpers
// (referencedNames, topicLinks) and a speed sanity check.
//
// Code blocks are compared with their highlighting <span>s removed: Zulip
// highlights with Pygments, we use highlight.js (mapped onto Pygments' class
// names), and token boundaries differ between the two.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  referencedNames,
  renderMarkdown,
  topicLinks,
  type MarkdownContext,
  type MentionUser,
  type RenderedMessage,
} from "../src/markdown/render.ts";

// ---------------------------------------------------------------------------
// Helpers

const CODE_BLOCK_RE = /(<div class="codehilite"[^>]*><pre><span><\/span><code>)([\s\S]*?)(<\/code><\/pre><\/div>)/g;
function stripHighlighting(html: string): string {
  return html.replace(CODE_BLOCK_RE, (_m, open: string, body: string, close: string) => open + body.replace(/<\/?span[^>]*>/g, "") + close);
}

interface ContextOptions {
  realmUrl?: string;
  users?: MentionUser[];
  groups?: { id: number; name: string; deactivated?: boolean }[];
  channels?: { id: number; name: string }[];
  translateEmoticons?: boolean;
  inlineImagePreview?: boolean;
  thumbnailImages?: boolean;
  realmEmoji?: Record<string, string>;
}

function makeContext(o: ContextOptions = {}): MarkdownContext {
  const users = o.users ?? [];
  const groups = o.groups ?? [];
  const channels = o.channels ?? [];
  return {
    realmUrl: o.realmUrl ?? "http://127.0.0.1:9991",
    usersByName: (name) => users.filter((u) => u.fullName.toLowerCase() === name.toLowerCase()),
    userById: (id) => users.find((u) => u.id === id),
    groupByName: (name) => groups.find((g) => g.name.toLowerCase() === name.toLowerCase()),
    channelByName: (name) => channels.find((c) => c.name.toLowerCase() === name.toLowerCase()),
    realmEmojiByName: (name) => (o.realmEmoji?.[name] ? { sourceUrl: o.realmEmoji[name]! } : undefined),
    ...(o.translateEmoticons !== undefined ? { translateEmoticons: o.translateEmoticons } : {}),
    ...(o.inlineImagePreview !== undefined ? { inlineImagePreview: o.inlineImagePreview } : {}),
    ...(o.thumbnailImages !== undefined ? { thumbnailImages: o.thumbnailImages } : {}),
  };
}

// ---------------------------------------------------------------------------
// Zulip's test table (test/fixtures/zulip-markdown-test-cases.json, a copy of shared/fixtures/…)

interface FixtureCase {
  name: string;
  input: string;
  expected_output: string;
  translate_emoticons?: boolean;
}
interface Fixture {
  regular_tests: FixtureCase[];
  linkify_tests: [string, string, string][];
}

const FIXTURE_PATH = fileURLToPath(new URL("./fixtures/zulip-markdown-test-cases.json", import.meta.url));
// Ratchet: raise these when more cases pass; a regression fails the suite.
const FIXTURE_MIN_PASSING = 175;
const LINKIFY_MIN_PASSING = 73;
// Cases known to fail (kept in sync with docs/markdown.md); any other failure is a regression.
const KNOWN_FIXTURE_FAILURES: readonly string[] = [];

// The fixture's messages name no users, groups or channels; its realm is Zulip's test server.
const fixtureContext = (o: ContextOptions = {}) => makeContext({ realmUrl: "http://zulip.testserver", ...o });

describe("Zulip's Markdown test table", () => {
  assert.ok(existsSync(FIXTURE_PATH), `fixture not found at ${FIXTURE_PATH}`);
  const fixture = JSON.parse(readFileSync(FIXTURE_PATH, "utf8")) as Fixture;

  test(`regular_tests: at least ${FIXTURE_MIN_PASSING} of ${fixture.regular_tests.length} render exactly as Zulip`, () => {
    const failures: string[] = [];
    for (const c of fixture.regular_tests) {
      const ctx = fixtureContext({ translateEmoticons: c.translate_emoticons === true });
      const html = renderMarkdown(c.input, ctx).html;
      if (stripHighlighting(html) !== stripHighlighting(c.expected_output)) failures.push(c.name);
    }
    const passing = fixture.regular_tests.length - failures.length;
    const unexpected = failures.filter((name) => !KNOWN_FIXTURE_FAILURES.includes(name));
    assert.deepEqual(unexpected, [], `regressions: ${unexpected.join(", ")}`);
    assert.ok(passing >= FIXTURE_MIN_PASSING, `${passing} passing < ${FIXTURE_MIN_PASSING}; failing: ${failures.join(", ")}`);
  });

  test(`linkify_tests: at least ${LINKIFY_MIN_PASSING} of ${fixture.linkify_tests.length} auto-link as Zulip`, () => {
    const failures: string[] = [];
    for (const [input, template, url] of fixture.linkify_tests) {
      // As Zulip's test: "%s" is the link; scheme-less URLs get http://, addresses mailto:.
      const href = url.startsWith("http") ? url : url.includes("@") ? `mailto:${url}` : `http://${url}`;
      const expected = url === "" ? template : template.replace("%s", `<a href="${href}">${url}</a>`);
      if (renderMarkdown(input, fixtureContext()).html !== expected) failures.push(input);
    }
    const passing = fixture.linkify_tests.length - failures.length;
    assert.ok(passing >= LINKIFY_MIN_PASSING, `${passing} passing < ${LINKIFY_MIN_PASSING}; failing: ${failures.join(" | ")}`);
  });
});

// ---------------------------------------------------------------------------
// Our own table

const HAMLET: MentionUser = { id: 10, fullName: "King Hamlet" };
const OTHELLO: MentionUser = { id: 11, fullName: "Othello, the Moor of Venice" };
const ZOE_A: MentionUser = { id: 20, fullName: "Zoe" };
const ZOE_B: MentionUser = { id: 21, fullName: "Zoe" };
const GHOST: MentionUser = { id: 30, fullName: "Old Ghost", isActive: false };
const CTX: ContextOptions = {
  users: [HAMLET, OTHELLO, ZOE_A, ZOE_B, GHOST],
  groups: [{ id: 5, name: "hamletcharacters" }, { id: 6, name: "retired", deactivated: true }],
  channels: [{ id: 1, name: "Denmark" }, { id: 3, name: "Scotland Yard" }],
  realmEmoji: { green_tick: "/user_avatars/2/emoji/images/1.png" },
};

interface Case {
  name: string;
  input: string;
  /** Exact rendered_content (code blocks compared without highlighting spans). */
  html?: string;
  /** Alternatively: a pattern the HTML must match (KaTeX output is long). */
  matches?: RegExp;
  /** RenderedMessage fields to check; unspecified flags must be false/empty. */
  flags?: Partial<Omit<RenderedMessage, "html">>;
  ctx?: ContextOptions;
}

const NO_FLAGS: Omit<RenderedMessage, "html"> = {
  mentionedUserIds: [],
  mentionedGroupIds: [],
  channelWildcard: false,
  topicWildcard: false,
  isMeMessage: false,
  hasLink: false,
  hasImage: false,
  hasAttachment: false,
  uploadPathIds: [],
  linksForPreview: [],
};

const thumb = (url: string, size: string) => `/thumbnail?url=${encodeURIComponent(url.replace(/^\//, ""))}&amp;size=${size}`;

const CASES: Case[] = [
  // --- blocks and inline basics
  { name: "paragraph", input: "hello world", html: "<p>hello world</p>" },
  { name: "paragraphs", input: "one\n\n\ntwo", html: "<p>one</p>\n<p>two</p>" },
  { name: "single newline is <br>", input: "one\ntwo", html: "<p>one<br>\ntwo</p>" },
  { name: "trailing spaces kept", input: "one  \ntwo", html: "<p>one  <br>\ntwo</p>" },
  { name: "strong and emphasis", input: "**bold** and *italic*", html: "<p><strong>bold</strong> and <em>italic</em></p>" },
  { name: "underscores never emphasise", input: "_a_ __b__ snake_case_name", html: "<p>_a_ __b__ snake_case_name</p>" },
  { name: "strong emphasis nests strong outside", input: "***x***", html: "<p><strong><em>x</em></strong></p>" },
  { name: "emphasis does not span lines", input: "*a\nb*", html: "<p>*a<br>\nb*</p>" },
  { name: "strikethrough", input: "~~gone~~ and ~~ spaced ~~", html: "<p><del>gone</del> and <del> spaced </del></p>" },
  { name: "inline code keeps spaces and escapes", input: "` <b> & `", html: "<p><code> &lt;b&gt; &amp; </code></p>" },
  {
    name: "inline code protects markup",
    input: "`**x** @**King Hamlet** :smile: https://a.com`",
    html: "<p><code>**x** @**King Hamlet** :smile: https://a.com</code></p>",
  },
  { name: "backslashes are literal", input: "a\\*b\\*", html: "<p>a\\<em>b\\</em></p>" },
  { name: "heading", input: "## Title ##", html: "<h2>Title</h2>" },
  { name: "heading needs a space", input: "#hashtag", html: "<p>#hashtag</p>" },
  { name: "setext headings are off", input: "Title\n===", html: "<p>Title<br>\n===</p>" },
  { name: "horizontal rule", input: "a\n\n---\n\nb", html: "<p>a</p>\n<hr>\n<p>b</p>" },
  { name: "reference links are off", input: "[a]\n\n[a]: https://x.org", html: '<p>[a]</p>\n<p>[a]: <a href="https://x.org">https://x.org</a></p>', flags: { hasLink: true } },
  { name: "entities kept as written", input: "&lt;b&gt; &amp; &copy; & <", html: "<p>&lt;b&gt; &amp; &copy; &amp; &lt;</p>" },
  // --- lists and quotes
  { name: "bullet list", input: "* a\n- b\n+ c", html: "<ul>\n<li>a</li>\n<li>b</li>\n<li>c</li>\n</ul>" },
  { name: "ordered list keeps its start", input: "3. a\n4. b", html: '<ol start="3">\n<li>a</li>\n<li>b</li>\n</ol>' },
  { name: "two-space nesting under a number", input: "1. a\n  - b\n2. c", html: "<ol>\n<li>a<ul>\n<li>b</li>\n</ul>\n</li>\n<li>c</li>\n</ol>" },
  { name: "list hanging off a paragraph", input: "Items:\n- x\n- y", html: "<p>Items:</p>\n<ul>\n<li>x</li>\n<li>y</li>\n</ul>" },
  { name: "numbered list hanging off a paragraph", input: "Steps:\n2. x", html: '<p>Steps:</p>\n<ol start="2">\n<li>x</li>\n</ol>' },
  { name: "block quote", input: "> quoted\nlazy", html: "<blockquote>\n<p>quoted<br>\nlazy</p>\n</blockquote>" },
  { name: "a lone > is text", input: ">", html: "<p>&gt;</p>" },
  {
    name: "table with alignment",
    input: "| a | b |\n|:--|--:|\n| 1 | 2 |",
    html:
      '<table>\n<thead>\n<tr>\n<th style="text-align: left;">a</th>\n<th style="text-align: right;">b</th>\n</tr>\n</thead>\n' +
      '<tbody>\n<tr>\n<td style="text-align: left;">1</td>\n<td style="text-align: right;">2</td>\n</tr>\n</tbody>\n</table>',
  },
  // --- code, quote, spoiler and math fences
  {
    name: "fenced code with language",
    input: "```python\ndef f(x):\n    return 'a' < \"b\"\n```",
    html: '<div class="codehilite" data-code-language="Python"><pre><span></span><code>def f(x):\n    return \'a\' &lt; "b"\n</code></pre></div>',
  },
  { name: "language aliases canonicalise", input: "```js\nx\n```", html: '<div class="codehilite" data-code-language="JavaScript"><pre><span></span><code>x\n</code></pre></div>' },
  { name: "unknown language kept", input: "~~~ Foo-Lang\nx\n~~~", html: '<div class="codehilite" data-code-language="foo-lang"><pre><span></span><code>x\n</code></pre></div>' },
  {
    name: "code without language escapes quotes",
    input: "```\n<a href=\"x\">'q'</a>\n```",
    html: '<div class="codehilite"><pre><span></span><code>&lt;a href=&quot;x&quot;&gt;&#39;q&#39;&lt;/a&gt;\n</code></pre></div>',
  },
  { name: "unclosed fence runs to the end", input: "~~~\ncode\n\nmore", html: '<div class="codehilite"><pre><span></span><code>code\n\nmore\n</code></pre></div>' },
  { name: "indented code", input: "    four spaces", html: '<div class="codehilite"><pre><span></span><code>four spaces\n</code></pre></div>' },
  { name: "mentions in code are not mentions", input: "```\n@**King Hamlet**\n```", html: '<div class="codehilite"><pre><span></span><code>@**King Hamlet**\n</code></pre></div>', ctx: CTX },
  { name: "quote fence", input: "```quote\nhi **there**\n```", html: "<blockquote>\n<p>hi <strong>there</strong></p>\n</blockquote>" },
  {
    name: "spoiler",
    input: "```spoiler Title\nsecret\n```",
    html: '<div class="spoiler-block"><div class="spoiler-header">\n<p>Title</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>secret</p>\n</div></div>',
  },
  {
    name: "math fence",
    input: "```math\nx\n```",
    matches:
      /^<p><span class="katex-display"><span class="katex"><span class="katex-mathml"><math xmlns="http:\/\/www\.w3\.org\/1998\/Math\/MathML" display="block"><semantics><mrow><mi>x<\/mi><\/mrow><annotation encoding="application\/x-tex">x<\/annotation><\/semantics><\/math><\/span><span class="katex-html" aria-hidden="true">.*<\/span><\/span><\/p>$/s,
  },
  {
    name: "inline TeX",
    input: "area $$\\pi r^2$$ here",
    matches: /^<p>area <span class="katex"><span class="katex-mathml"><math xmlns="[^"]+"><semantics>.*<annotation encoding="application\/x-tex">\\pi r\^2<\/annotation>.*<\/span> here<\/p>$/s,
  },
  { name: "TeX error", input: "$$\\nosuchmacro$$", html: '<p><span class="tex-error">$$\\nosuchmacro$$</span></p>' },
  { name: "dollars inside words are not TeX", input: "a$$x$$b costs $5", html: "<p>a$$x$$b costs $5</p>" },
  // --- links
  { name: "link", input: "[Zulip](https://zulip.com)", html: '<p><a href="https://zulip.com">Zulip</a></p>', flags: { hasLink: true } },
  { name: "link title", input: '[a](https://a.com "T")', html: '<p><a href="https://a.com" title="T">a</a></p>', flags: { hasLink: true } },
  { name: "link text stays literal", input: "[**x** :smile:](https://a.com)", html: '<p><a href="https://a.com">**x** :smile:</a></p>', flags: { hasLink: true } },
  { name: "empty link text shows the URL", input: "[](https://a.com)", html: '<p><a href="https://a.com">https://a.com</a></p>', flags: { hasLink: true } },
  { name: "scheme-less link gets http", input: "[x](example.com)", html: '<p><a href="http://example.com">x</a></p>', flags: { hasLink: true } },
  { name: "tel links allowed", input: "[call](tel:+123)", html: '<p><a href="tel:+123">call</a></p>', flags: { hasLink: true } },
  {
    name: "bare URL, punctuation left out",
    input: "see https://example.com/x?a=1&b=2.",
    html: '<p>see <a href="https://example.com/x?a=1&amp;b=2">https://example.com/x?a=1&amp;b=2</a>.</p>',
    flags: { hasLink: true },
  },
  { name: "bare domain", input: "go to zulip.com now", html: '<p>go to <a href="http://zulip.com">zulip.com</a> now</p>', flags: { hasLink: true } },
  { name: "file names are not domains", input: "file.py and readme.md", html: "<p>file.py and readme.md</p>" },
  { name: "e-mail address", input: "mail a@b.co", html: '<p>mail <a href="mailto:a@b.co">a@b.co</a></p>', flags: { hasLink: true } },
  {
    name: "realm links become relative",
    input: "[x](http://127.0.0.1:9991/#narrow/channel/1-Denmark)",
    html: '<p><a href="#narrow/channel/1-Denmark">x</a></p>',
    flags: { hasLink: true },
  },
  { name: "image syntax is not supported", input: "![x](https://a.com/b)", html: '<p>![x](<a href="https://a.com/b">https://a.com/b</a>)</p>', flags: { hasLink: true } },
  // --- XSS and unsafe input
  { name: "script tag escaped", input: "<script>alert(1)</script>", html: "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>" },
  { name: "raw HTML attributes escaped", input: '<img src=x onerror="alert(1)">', html: '<p>&lt;img src=x onerror="alert(1)"&gt;</p>' },
  { name: "raw anchor escaped", input: '<a href="javascript:x">y</a>', html: '<p>&lt;a href="javascript:x"&gt;y&lt;/a&gt;</p>' },
  { name: "javascript: link refused", input: "[x](javascript:alert(1))", html: "<p>[x](javascript:alert(1))</p>" },
  { name: "JAVASCRIPT: link refused", input: "[x](  JaVaScRiPt:alert(1))", html: "<p>[x](  JaVaScRiPt:alert(1))</p>" },
  { name: "entity-encoded javascript: refused", input: "[x](javascript&#58;alert(1))", html: "<p>[x](javascript&#58;alert(1))</p>" },
  { name: "data: link refused", input: "[x](data:text/html;base64,PHNjcmlwdD4=)", html: "<p>[x](data:text/html;base64,PHNjcmlwdD4=)</p>" },
  { name: "bare javascript: not linked", input: "javascript:alert(1)", html: "<p>javascript:alert(1)</p>" },
  {
    name: "title cannot break out of the attribute",
    input: '[a](https://a.com "x\\" onmouseover=\\"alert(1)")',
    html: '<p><a href="https://a.com" title="x&quot; onmouseover=&quot;alert(1)">a</a></p>',
    flags: { hasLink: true },
  },
  {
    name: "href cannot break out of the attribute",
    input: '[a](https://a.com/"onmouseover="x)',
    html: '<p><a href="https://a.com/&quot;onmouseover=&quot;x">a</a></p>',
    flags: { hasLink: true },
  },
  // Not a fence (quotes are no language); the last line opens an empty fence, which renders nothing.
  { name: "fence language cannot inject", input: '```"><script>\nx\n```', html: '<p>```"&gt;&lt;script&gt;<br>\nx</p>' },
  // --- mentions
  {
    name: "user mention",
    input: "hi @**King Hamlet**!",
    html: '<p>hi <span class="user-mention" data-user-id="10">@King Hamlet</span>!</p>',
    flags: { mentionedUserIds: [10] },
    ctx: CTX,
  },
  {
    name: "mention names match case-insensitively",
    input: "@**king hamlet**",
    html: '<p><span class="user-mention" data-user-id="10">@King Hamlet</span></p>',
    flags: { mentionedUserIds: [10] },
    ctx: CTX,
  },
  {
    name: "silent mention does not notify",
    input: "@_**King Hamlet**",
    html: '<p><span class="user-mention silent" data-user-id="10">King Hamlet</span></p>',
    ctx: CTX,
  },
  {
    name: "name|id and |id mentions",
    input: "@**Zoe|21** @**|11**",
    html:
      '<p><span class="user-mention" data-user-id="21">@Zoe</span> ' +
      '<span class="user-mention" data-user-id="11">@Othello, the Moor of Venice</span></p>',
    flags: { mentionedUserIds: [21, 11] },
    ctx: CTX,
  },
  { name: "name|id with the wrong name is not a mention", input: "@**King Hamlet|11**", html: "<p>@<strong>King Hamlet|11</strong></p>", ctx: CTX },
  { name: "unknown user stays text", input: "@**Nobody Here**", html: "<p>@<strong>Nobody Here</strong></p>", ctx: CTX },
  { name: "deactivated user mention is silent", input: "@**Old Ghost**", html: '<p><span class="user-mention silent" data-user-id="30">Old Ghost</span></p>', ctx: CTX },
  { name: "no mention inside a word", input: "email@**King Hamlet**", html: "<p>email@<strong>King Hamlet</strong></p>", ctx: CTX },
  {
    name: "channel wildcards",
    input: "@**all** @**everyone** @**channel** @**stream**",
    html:
      '<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span> ' +
      '<span class="user-mention channel-wildcard-mention" data-user-id="*">@everyone</span> ' +
      '<span class="user-mention channel-wildcard-mention" data-user-id="*">@channel</span> ' +
      '<span class="user-mention channel-wildcard-mention" data-user-id="*">@stream</span></p>',
    flags: { channelWildcard: true },
  },
  { name: "topic wildcard", input: "@**topic**", html: '<p><span class="topic-mention">@topic</span></p>', flags: { topicWildcard: true } },
  {
    name: "silent wildcards do not notify",
    input: "@_**all** @_**topic**",
    html: '<p><span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> <span class="topic-mention silent">topic</span></p>',
  },
  {
    name: "group mentions",
    input: "@*hamletcharacters* @_*HamletCharacters* @*retired*",
    html:
      '<p><span class="user-group-mention" data-user-group-id="5">@hamletcharacters</span> ' +
      '<span class="user-group-mention silent" data-user-group-id="5">hamletcharacters</span> ' +
      '<span class="user-group-mention silent" data-user-group-id="6">retired</span></p>',
    flags: { mentionedGroupIds: [5] },
    ctx: CTX,
  },
  { name: "unknown group stays text", input: "@*nope*", html: "<p>@<em>nope</em></p>", ctx: CTX },
  {
    name: "mentions in quotes are silent",
    input: "> @**King Hamlet** @*hamletcharacters* @**all**",
    html:
      '<blockquote>\n<p><span class="user-mention silent" data-user-id="10">King Hamlet</span> ' +
      '<span class="user-group-mention silent" data-user-group-id="5">hamletcharacters</span> ' +
      '<span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span></p>\n</blockquote>',
    ctx: CTX,
  },
  {
    name: "mentions in quote fences are silent",
    input: "```quote\n@**King Hamlet**\n```\n@**King Hamlet**",
    html:
      '<blockquote>\n<p><span class="user-mention silent" data-user-id="10">King Hamlet</span></p>\n</blockquote>\n' +
      '<p><span class="user-mention" data-user-id="10">@King Hamlet</span></p>',
    flags: { mentionedUserIds: [10] },
    ctx: CTX,
  },
  // --- channel and topic links
  {
    name: "channel link",
    input: "#**Scotland Yard**",
    html: '<p><a class="stream" data-stream-id="3" href="/#narrow/channel/3-Scotland-Yard">#Scotland Yard</a></p>',
    flags: { hasLink: true },
    ctx: CTX,
  },
  {
    name: "topic link",
    input: "#**Denmark>my topic.x**",
    html: '<p><a class="stream-topic" data-stream-id="1" href="/#narrow/channel/1-Denmark/topic/my.20topic.2Ex">#Denmark &gt; my topic.x</a></p>',
    flags: { hasLink: true },
    ctx: CTX,
  },
  {
    name: "message link",
    input: "#**Denmark>castle@42**",
    html: '<p><a class="message-link" href="/#narrow/channel/1-Denmark/topic/castle/near/42">#Denmark &gt; castle @ 💬</a></p>',
    flags: { hasLink: true },
    ctx: CTX,
  },
  { name: "unknown channel stays text", input: "#**Atlantis**", html: "<p>#<strong>Atlantis</strong></p>", ctx: CTX },
  // --- emoji
  {
    name: "emoji names",
    input: ":smile: :+1: :heart: :octopus:",
    html:
      '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> ' +
      '<span aria-label="+1" class="emoji emoji-1f44d" role="img" title="+1">:+1:</span> ' +
      '<span aria-label="heart" class="emoji emoji-2764" role="img" title="heart">:heart:</span> ' +
      '<span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">:octopus:</span></p>',
  },
  { name: "emoji alias keeps the typed name", input: ":thumbs_up:", html: '<p><span aria-label="thumbs up" class="emoji emoji-1f44d" role="img" title="thumbs up">:thumbs_up:</span></p>' },
  { name: "Unicode emoji", input: "ok 👍", html: '<p>ok <span aria-label="+1" class="emoji emoji-1f44d" role="img" title="+1">:+1:</span></p>' },
  {
    name: "Unicode emoji with variation selector",
    input: "❤️🎉",
    html:
      '<p><span aria-label="heart" class="emoji emoji-2764" role="img" title="heart">:heart:</span>' +
      '<span aria-label="tada" class="emoji emoji-1f389" role="img" title="tada">:tada:</span></p>',
  },
  { name: "unknown emoji names stay text", input: ":notanemoji: a:zz:c", html: "<p>:notanemoji: a:zz:c</p>" },
  { name: "zulip emoji", input: ":zulip:", html: '<p><img alt=":zulip:" class="emoji" src="/static/generated/emoji/images/emoji/unicode/zulip.png" title="zulip"></p>' },
  {
    name: "realm emoji",
    input: ":green_tick:",
    html: '<p><img alt=":green_tick:" class="emoji" src="/user_avatars/2/emoji/images/1.png" title="green tick"></p>',
    ctx: CTX,
  },
  {
    name: "emoticons when the sender translates them",
    input: ":) <3",
    html:
      '<p><span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> ' +
      '<span aria-label="heart" class="emoji emoji-2764" role="img" title="heart">:heart:</span></p>',
    ctx: { translateEmoticons: true },
  },
  { name: "emoticons left alone by default", input: ":) <3", html: "<p>:) &lt;3</p>" },
  // --- /me and times
  { name: "/me message", input: "/me dances", html: "<p>/me dances</p>", flags: { isMeMessage: true } },
  { name: "/me with more paragraphs is not", input: "/me dances\n\nand sings", html: "<p>/me dances</p>\n<p>and sings</p>" },
  { name: "/me later in the text is not", input: "I /me dance", html: "<p>I /me dance</p>" },
  { name: "global time", input: "<time:2024-01-02T03:04:05+01:00>", html: '<p><time datetime="2024-01-02T02:04:05Z">2024-01-02T03:04:05+01:00</time></p>' },
  { name: "invalid time", input: "<time:whenever>", html: '<p><span class="timestamp-error">Invalid time format: whenever</span></p>' },
  // --- uploads and image previews
  {
    name: "uploaded file",
    input: "[doc.pdf](/user_uploads/2/ab/xyz/doc.pdf)",
    html: '<p><a href="/user_uploads/2/ab/xyz/doc.pdf">doc.pdf</a></p>',
    flags: { hasLink: true, hasAttachment: true, uploadPathIds: ["2/ab/xyz/doc.pdf"] },
  },
  {
    name: "uploaded image gets a preview",
    input: "[pic.png](/user_uploads/2/ab/xyz/pic.png)",
    html:
      '<p><a href="/user_uploads/2/ab/xyz/pic.png">pic.png</a></p>\n' +
      '<div class="message_inline_image"><a href="/user_uploads/2/ab/xyz/pic.png" title="pic.png">' +
      `<img data-src-fullsize="${thumb("/user_uploads/2/ab/xyz/pic.png", "full")}" src="${thumb("/user_uploads/2/ab/xyz/pic.png", "thumbnail")}"></a></div>`,
    flags: { hasLink: true, hasImage: true, hasAttachment: true, uploadPathIds: ["2/ab/xyz/pic.png"] },
  },
  {
    name: "realm-absolute upload URL",
    input: "see http://127.0.0.1:9991/user_uploads/2/c/d/x.txt and [again](/user_uploads/2/c/d/x.txt)",
    html:
      '<p>see <a href="user_uploads/2/c/d/x.txt">http://127.0.0.1:9991/user_uploads/2/c/d/x.txt</a> ' +
      'and <a href="/user_uploads/2/c/d/x.txt">again</a></p>',
    flags: { hasLink: true, hasAttachment: true, uploadPathIds: ["2/c/d/x.txt"] },
  },
  {
    name: "user_uploads on another host is no upload",
    input: "https://other.example/user_uploads/1/a/b.txt",
    html: '<p><a href="https://other.example/user_uploads/1/a/b.txt">https://other.example/user_uploads/1/a/b.txt</a></p>',
    flags: { hasLink: true },
  },
  {
    name: "bare image URL is replaced by its preview",
    input: "https://example.com/cat.jpg",
    html:
      '<div class="message_inline_image"><a href="https://example.com/cat.jpg">' +
      `<img data-src-fullsize="${thumb("https://example.com/cat.jpg", "full")}" src="${thumb("https://example.com/cat.jpg", "thumbnail")}"></a></div>`,
    flags: { hasLink: true, hasImage: true },
  },
  {
    name: "no previews inside quotes",
    input: "> https://example.com/cat.jpg",
    html: '<blockquote>\n<p><a href="https://example.com/cat.jpg">https://example.com/cat.jpg</a></p>\n</blockquote>',
    flags: { hasLink: true },
  },
  {
    name: "previews can be turned off",
    input: "https://example.com/cat.jpg",
    html: '<p><a href="https://example.com/cat.jpg">https://example.com/cat.jpg</a></p>',
    flags: { hasLink: true },
    ctx: { inlineImagePreview: false },
  },
  {
    name: "previews without /thumbnail",
    input: "https://example.com/cat.jpg",
    html: '<div class="message_inline_image"><a href="https://example.com/cat.jpg"><img src="https://example.com/cat.jpg"></a></div>',
    flags: { hasLink: true, hasImage: true },
    ctx: { thumbnailImages: false },
  },
  {
    name: "YouTube preview",
    input: "https://youtu.be/dQw4w9WgXcQ",
    html:
      '<p><a href="https://youtu.be/dQw4w9WgXcQ">https://youtu.be/dQw4w9WgXcQ</a></p>\n' +
      '<div class="youtube-video message_inline_image"><a data-id="dQw4w9WgXcQ" href="https://youtu.be/dQw4w9WgXcQ">' +
      '<img src="https://i.ytimg.com/vi/dQw4w9WgXcQ/default.jpg"></a></div>',
    flags: { hasLink: true, hasImage: true },
  },
  { name: "empty message", input: "  \n\n ", html: "" },
];

describe("our Markdown table", () => {
  test("has at least 60 cases", () => {
    assert.ok(CASES.length >= 60, `${CASES.length} cases`);
  });
  for (const c of CASES) {
    test(c.name, () => {
      const rendered = renderMarkdown(c.input, makeContext(c.ctx ?? {}));
      if (c.html !== undefined) assert.equal(stripHighlighting(rendered.html), c.html);
      if (c.matches !== undefined) assert.match(rendered.html, c.matches);
      const { html: _html, ...flags } = rendered;
      assert.deepEqual(flags, { ...NO_FLAGS, ...c.flags });
    });
  }
});

describe("rendering details", () => {
  test("code is highlighted with Pygments class names", () => {
    const html = renderMarkdown("```python\ndef f():\n    return 'x'\n```", makeContext()).html;
    assert.match(html, /<span class="k">def<\/span> <span class="nf">f<\/span>/);
    assert.match(html, /<span class="s">'x'<\/span>/);
  });

  test("per-message state does not leak between renders", () => {
    const ctx = makeContext(CTX);
    assert.deepEqual(renderMarkdown("@**King Hamlet** @**all** #**Denmark**", ctx).mentionedUserIds, [10]);
    const plain = renderMarkdown("nothing here", ctx);
    assert.deepEqual(plain.mentionedUserIds, []);
    assert.equal(plain.channelWildcard, false);
    assert.equal(plain.hasLink, false);
  });

  test("pathological inputs render quickly", () => {
    const inputs = ["[".repeat(10000), "*a ".repeat(3300), "`a ".repeat(3300), "~~a ".repeat(2500), "$$a ".repeat(2500), "@**a ".repeat(2000), "```quote\n".repeat(1000), "> ".repeat(1000) + "x", "(".repeat(10000) + "http://a.com"];
    for (const input of inputs) {
      const start = performance.now();
      renderMarkdown(input, makeContext(CTX));
      assert.ok(performance.now() - start < 2000, `slow on ${JSON.stringify(input.slice(0, 20))}`);
    }
  });
});

describe("referencedNames", () => {
  test("finds users, ids, groups and channels, skipping wildcards", () => {
    const names = referencedNames("@**King Hamlet** @_**Zoe|21** @**|11** @**all** @*hamletcharacters* @_*admins* #**Denmark** #**Scotland Yard>a topic** x@**no**");
    assert.deepEqual(names.userNames, ["King Hamlet", "Zoe"]);
    assert.deepEqual(names.userIds, [21, 11]);
    assert.deepEqual(names.groupNames, ["hamletcharacters", "admins"]);
    assert.deepEqual(names.channelNames, ["Denmark", "Scotland Yard>a topic", "Scotland Yard"]);
  });

  test("plain text references nothing", () => {
    assert.deepEqual(referencedNames("just words, a@b.com"), { userNames: [], userIds: [], groupNames: [], channelNames: [] });
  });
});

describe("topicLinks", () => {
  test("finds URLs in a topic name", () => {
    assert.deepEqual(topicLinks("release https://zulip.com/x and zulip.org, plus (www.a.io)"), [
      { text: "https://zulip.com/x", url: "https://zulip.com/x" },
      { text: "zulip.org", url: "https://zulip.org" },
      { text: "www.a.io", url: "https://www.a.io" },
    ]);
  });

  test("a topic without URLs has none", () => {
    assert.deepEqual(topicLinks("lunch plans: 12:30?"), []);
  });
});
