// Extracts the interface's strings from web/src: every t("…") call's key
// (with i18next's _one/_other forms when it passes a count) is written to
// web/locales/en.json, the catalog translators work from. It also finds text
// that bypasses t() — JSX text and the user-facing attributes (aria-label,
// title, placeholder, alt) written as plain literals — and the keys each
// other language's catalog lacks or no longer uses.
//
//   node --import tsx web/i18n-extract.ts           write en.json, report
//   node --import tsx web/i18n-extract.ts --check   report only; exit 1 on any finding
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const WEB = path.dirname(fileURLToPath(import.meta.url));
const SOURCES = path.join(WEB, "src");
const LOCALES = path.join(WEB, "locales");
/** Attributes a person reads (or a screen reader speaks). */
const TEXT_ATTRIBUTES = new Set(["aria-label", "title", "placeholder", "alt", "aria-description", "label"]);
/** Text with a letter in it needs translating; punctuation, digits and emoji alone do not. */
const HAS_WORD = /\p{L}{2,}/u;

export interface Extraction {
  /** Catalog keys, sorted: plain keys and the plural forms of counted ones. */
  keys: string[];
  /** Literal user-facing text outside t(), as "file:line: text". */
  hardCoded: string[];
  /** English text of keys whose English differs from the key (a counted key's singular). */
  english: Record<string, string>;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [full] : [];
  });
}

function literalText(node: ts.Node | undefined): string | undefined {
  if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))) return node.text;
  return undefined;
}

function property(call: ts.CallExpression, name: string): ts.ObjectLiteralElementLike | undefined {
  const vars = call.arguments[1];
  return vars && ts.isObjectLiteralExpression(vars) ? vars.properties.find((p) => p.name && ts.isIdentifier(p.name) && p.name.text === name) : undefined;
}

function passesCount(call: ts.CallExpression): boolean {
  return property(call, "count") !== undefined;
}

/** The English singular of a counted key: its `defaultValue_one`, when the call gives one as a literal. */
function englishOne(call: ts.CallExpression): string | undefined {
  const p = property(call, "defaultValue_one");
  return p && ts.isPropertyAssignment(p) ? literalText(p.initializer) : undefined;
}

/** A literal that is what a JSX child shows: `{cond ? "Save" : "Edit"}`, `{name ?? "Unknown"}`. */
function shownInJsx(node: ts.Node): boolean {
  let parent = node.parent;
  while (parent && (ts.isConditionalExpression(parent) || ts.isParenthesizedExpression(parent) || (ts.isBinaryExpression(parent) && parent.left !== node))) {
    if (ts.isConditionalExpression(parent) && parent.condition === node) return false;
    node = parent;
    parent = parent.parent;
  }
  return !!parent && ts.isJsxExpression(parent) && !ts.isJsxAttribute(parent.parent);
}

export function extract(): Extraction {
  const keys = new Set<string>();
  const hardCoded: string[] = [];
  const english: Record<string, string> = {};
  for (const file of sourceFiles(SOURCES)) {
    const text = fs.readFileSync(file, "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
    const where = (node: ts.Node) => `${path.relative(WEB, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "t") {
        const key = literalText(node.arguments[0]);
        if (key === undefined) hardCoded.push(`${where(node)}: t() with a key that is not a literal`);
        else if (passesCount(node)) {
          keys.add(`${key}_one`);
          keys.add(`${key}_other`);
          const one = englishOne(node);
          if (one !== undefined) english[`${key}_one`] = one;
          else if (property(node, "defaultValue_one")) hardCoded.push(`${where(node)}: defaultValue_one that is not a literal`);
        } else keys.add(key);
      } else if (ts.isJsxText(node)) {
        const words = node.text.trim();
        if (HAS_WORD.test(words)) hardCoded.push(`${where(node)}: ${words}`);
      } else if (ts.isJsxAttribute(node) && TEXT_ATTRIBUTES.has(node.name.getText(source))) {
        const value = node.initializer;
        const literal = value && ts.isStringLiteral(value) ? value.text : value && ts.isJsxExpression(value) ? literalText(value.expression) : undefined;
        if (literal !== undefined && HAS_WORD.test(literal)) hardCoded.push(`${where(node)}: ${node.name.getText(source)}="${literal}"`);
        // A template's own words (`Message from ${name}`) bypass t() as much as a literal does.
        const template = value && ts.isJsxExpression(value) && value.expression && ts.isTemplateExpression(value.expression) ? value.expression : undefined;
        if (template && [template.head.text, ...template.templateSpans.map((span) => span.literal.text)].some((part) => HAS_WORD.test(part))) {
          hardCoded.push(`${where(node)}: ${node.name.getText(source)}={${template.getText(source)}}`);
        }
      }
      else if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && HAS_WORD.test(node.text) && shownInJsx(node)) {
        hardCoded.push(`${where(node)}: "${node.text}"`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { keys: [...keys].sort(), hardCoded, english };
}

/** The other languages' catalogs: code → translations. */
export function catalogs(): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const name of fs.readdirSync(LOCALES)) {
    if (!name.endsWith(".json") || name === "en.json") continue;
    out.set(name.slice(0, -5), JSON.parse(fs.readFileSync(path.join(LOCALES, name), "utf8")) as Record<string, string>);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes("--check");
  const { keys, hardCoded, english } = extract();
  let findings = hardCoded.length;
  if (!check) fs.writeFileSync(path.join(LOCALES, "en.json"), `${JSON.stringify(Object.fromEntries(keys.map((k) => [k, english[k] ?? k.replace(/_(one|other)$/, "")])), null, 2)}\n`);
  for (const line of hardCoded) console.log(`not through t(): ${line}`);
  for (const [code, catalog] of catalogs()) {
    const missing = keys.filter((k) => !catalog[k]);
    const unused = Object.keys(catalog).filter((k) => !keys.includes(k));
    findings += missing.length + unused.length;
    for (const k of missing) console.log(`${code}: missing ${JSON.stringify(k)}`);
    for (const k of unused) console.log(`${code}: unused ${JSON.stringify(k)}`);
  }
  console.log(`${keys.length} keys, ${findings} findings`);
  if (check && findings > 0) process.exitCode = 1;
}
